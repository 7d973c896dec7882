#!/usr/bin/env bash
# Runs every test of coderig: Rust (fmt, clippy, unit, property, server
# end-to-end, examples, benches compile), Python (wheel + pytest) and Node
# (addon + node --test). The one test command of README and .ci/run.
#
# Needs only the toolchains: Rust (cargo), python3 (>= 3.9, with venv + pip)
# and node >= 20.17 with npm. Everything else (maturin, pytest,
# @napi-rs/cli) is installed from the registries into .venv/ and
# crates/node/node_modules/, which later runs reuse, as they reuse target/.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

VENV="$ROOT/.venv"
STAGE_NAMES=()
STAGE_TIMES=()
CURRENT_STAGE=""
STAGE_STARTED=0
TOTAL_STARTED=$SECONDS

stage() {
    finish_stage
    CURRENT_STAGE="$1"
    STAGE_STARTED=$SECONDS
    printf '\n\033[1m==> %s\033[0m\n' "$CURRENT_STAGE"
}

finish_stage() {
    if [[ -n "$CURRENT_STAGE" ]]; then
        STAGE_NAMES+=("$CURRENT_STAGE")
        STAGE_TIMES+=($((SECONDS - STAGE_STARTED)))
        CURRENT_STAGE=""
    fi
}

summary() {
    local status=$1
    local failed="$CURRENT_STAGE"
    finish_stage
    printf '\n\033[1m==> Summary\033[0m\n'
    local i
    for i in "${!STAGE_NAMES[@]}"; do
        local mark="ok"
        if [[ $status -ne 0 && "${STAGE_NAMES[$i]}" == "$failed" ]]; then mark="FAILED"; fi
        printf '  %-7s %4ss  %s\n' "$mark" "${STAGE_TIMES[$i]}" "${STAGE_NAMES[$i]}"
    done
    if [[ $status -eq 0 ]]; then
        printf 'All tests passed in %ss.\n' $((SECONDS - TOTAL_STARTED))
    else
        printf 'FAILED in stage "%s" (exit %s) after %ss.\n' "$failed" "$status" $((SECONDS - TOTAL_STARTED))
    fi
}
# A server a stage started (the schema fuzzing stage): stopped on any exit.
SERVER_PID=""
SERVER_LOG=""
SERVER_DATA=""
stop_server() {
    if [[ -n "$SERVER_PID" ]]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
        SERVER_PID=""
    fi
    if [[ -n "$SERVER_LOG" ]]; then
        rm -f "$SERVER_LOG"
        SERVER_LOG=""
    fi
    if [[ -n "$SERVER_DATA" ]]; then
        rm -rf "$SERVER_DATA"
        SERVER_DATA=""
    fi
}
trap 'status=$?; stop_server; summary $status' EXIT
# Killed or interrupted is a failure: without these the EXIT trap saw the
# status of the last finished command and could print "All tests passed".
trap 'exit 143' TERM
trap 'exit 130' INT

stage "Toolchains"
cargo --version
python3 --version
node --version
echo "npm $(npm --version)"
# rustup installs may lack the components; add them when rustup is there.
if command -v rustup >/dev/null 2>&1; then
    cargo fmt --version >/dev/null 2>&1 || rustup component add rustfmt
    cargo clippy --version >/dev/null 2>&1 || rustup component add clippy
fi

stage "Python tools (.venv: maturin, pytest)"
if [[ ! -x "$VENV/bin/python" ]]; then
    python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "maturin>=1.16,<2" "pytest>=7"
"$VENV/bin/python" -m pytest --version

# Debian's chromium and the pinned playwright-core (tests/dashboard) for the
# dashboard's browser tests: installed beside the build, which they do not
# need; awaited at their stage. A missing browser there is a failure.
BROWSER_LOG=$(mktemp)
(
    set -e
    if ! [[ -x /usr/lib/chromium/chromium || -x /usr/bin/chromium ]]; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get -o DPkg::Lock::Timeout=600 update -qq
        apt-get -o DPkg::Lock::Timeout=600 install -y -qq chromium
    fi
    cd tests/dashboard
    if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
        npm ci --no-audit --no-fund
    fi
) >"$BROWSER_LOG" 2>&1 &
BROWSER_PID=$!

stage "Agent CLIs (pinned: tests/agents/package-lock.json, into a cache dir)"
# The real claude, codex, opencode and qwen binaries the agent tests drive
# against the project's scripted model server. Installed once per lockfile
# into ${CODERIG_AGENTS_CACHE:-~/.cache/coderig/agents}/<lock hash>; later
# runs reuse it. Every agent test below must then run them: REQUIRE turns a
# missing binary into a failure instead of a skip.
CODERIG_AGENT_BIN="$(bash scripts/install-agents.sh | tail -n 1)"
export CODERIG_AGENT_BIN CODERIG_REQUIRE_AGENTS=1
for cli in claude codex opencode qwen; do
    printf '  %-9s %s\n' "$cli" "$("$CODERIG_AGENT_BIN/$cli" --version </dev/null 2>/dev/null | head -n 1)"
done

stage "cargo fmt --check; no import circles"
cargo fmt --all --check
# No module of a crate imports one that imports it back (issue 17).
python3 scripts/import_circles.py crates/*/src

# One feature set and one profile for every Rust build below: the whole
# workspace with every feature, dev profile, tests included. Cargo unifies
# features per invocation, so a stage that asked for `-p coderig` alone, or
# for the binaries without the tests, would resolve other features and
# rebuild the crates above them; this way the test run, the PostgreSQL half,
# the examples, the server the fuzzer drives and the benches reuse this one
# build. (The two cdylib faces are built by maturin and napi with their own
# feature sets: one rebuild of the core each, in the dev profile.)
RUST_ALL=(--workspace --all-features)
# The host triple, given explicitly: napi always builds with `--target`,
# which cargo keeps apart (target/<triple>/) from a build without one, so
# the Node addon reused nothing and rebuilt every dependency. With the
# triple set for every build here they share one directory of artifacts.
export CARGO_BUILD_TARGET
CARGO_BUILD_TARGET=$(rustc -vV | sed -n 's/^host: //p')
# A clean build gains nothing from incremental compilation's bookkeeping.
export CARGO_INCREMENTAL=0
# pyo3 configured as maturin configures it (no libpython linked): the
# workspace build's coderig-py is then the Python extension itself, and
# maturin's separate build with its own feature set (every dependency
# rebuilt) is not needed to test it.
export PYO3_BUILD_EXTENSION_MODULE=1
TARGET_DIR=$(cargo metadata --format-version 1 --no-deps | "$VENV/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')

stage "Build every target (workspace, every feature, dev profile: tests, examples, benches, binaries)"
cargo build "${RUST_ALL[@]}" --all-targets
BIN_DIR="$TARGET_DIR/$CARGO_BUILD_TARGET/debug"
# The scripted model server the Python and Node tests start: this build's,
# so no test runs cargo (and waits on its lock while the background builds).
export CODERIG_SCRIPTED_MODEL="$BIN_DIR/coderig-scripted-model"
if ! command -v cargo-nextest >/dev/null 2>&1; then
    echo "cargo-nextest is not installed: installing it (cargo install --locked cargo-nextest)"
    cargo install --locked cargo-nextest
fi
# What nextest and the PostgreSQL stage run, listed once: neither invokes
# cargo again, so the builds of the background below never hold them up
# on cargo's lock of target/.
RUN_META=$(mktemp -d)
cargo nextest list "${RUST_ALL[@]}" --list-type binaries-only --message-format json >"$RUN_META/binaries.json"
cargo metadata --format-version 1 --all-features >"$RUN_META/cargo.json"
NEXTEST_REUSE=(--binaries-metadata "$RUN_META/binaries.json" --cargo-metadata "$RUN_META/cargo.json")

# The compile-bound rest runs in the background, niced, while the tests
# below (which mostly wait on processes, servers and git) run in front:
# the Python module and the Node addon first (pytest and node --test wait
# for them), then the doc tests, clippy, rustdoc, the pure core and the fuzz
# targets. One after another, each timed; the first failure stops the
# chain and fails the run where the front next waits for it.
BG_DIR="$RUN_META/background"
mkdir -p "$BG_DIR"
background_step() {
    local name=$1 title=$2
    shift 2
    local started=$SECONDS
    echo "$title" >"$BG_DIR/$name.title"
    if "$@" >"$BG_DIR/$name.log" 2>&1; then
        echo $((SECONDS - started)) >"$BG_DIR/$name.done"
    else
        echo $((SECONDS - started)) >"$BG_DIR/$name.failed"
        return 1
    fi
}
BG_STEPS=(node sdist doc clippy rustdoc pure fuzz)
background_chain() {
    set -e
    # napi's cargo build with the workspace's selection and features: it
    # reuses the build above and compiles only the addon (and its types).
    background_step node "Node addon (npm ci, napi build, dev profile)" bash -c '
        cd crates/node
        if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
            npm ci --no-audit --no-fund
        fi
        npx napi build --platform -- --workspace --all-features --all-targets'
    # What `pip install ./crates/py` reads besides the Rust build:
    # pyproject.toml, the python/ sources, the Cargo metadata.
    background_step sdist "Python package (maturin sdist of crates/py)" \
        "$VENV/bin/maturin" sdist --manifest-path crates/py/Cargo.toml --out "$RUN_META/sdist"
    background_step doc "Doc tests (cargo test --doc)" cargo test "${RUST_ALL[@]}" --doc
    background_step clippy "cargo clippy (all targets, all features, -D warnings)" \
        cargo clippy --workspace --all-targets --all-features -- -D warnings
    background_step rustdoc "rustdoc of the core, every feature (broken doc links are errors)" \
        env RUSTDOCFLAGS="-D warnings" cargo doc -p coderig --no-deps --all-features
    background_step pure "Pure core: --no-default-features builds and pulls in no runtime" bash -c '
        cargo build -p coderig --no-default-features
        # DESIGN: the pure core has no async runtime, database, git or HTTP client.
        forbidden=$(cargo tree -p coderig --no-default-features -e normal --prefix none \
            | awk "{print \$1}" | grep -xE "tokio|sqlx|sqlx-core|git2|reqwest|hyper" | sort -u || true)
        if [[ -n "$forbidden" ]]; then echo "the pure core pulls in: $forbidden" >&2; exit 1; fi
        echo "pure core: no tokio, sqlx, git2, reqwest or hyper in its dependency tree"'
    # The workspace's target/ and its dev debuginfo (Cargo.toml): the dependencies the
    # fuzz targets share with the workspace are not built twice. A plain
    # build links every libFuzzer target; fuzzing is `cargo fuzz run`.
    background_step fuzz "Fuzz targets build (fuzz/, cargo-fuzz layout)" \
        env CARGO_PROFILE_DEV_DEBUG=line-tables-only cargo build --manifest-path fuzz/Cargo.toml --target-dir "$TARGET_DIR" \
            --config 'profile.dev.package."*".debug=false'
}
(
    # Niced: the tests in front keep their CPU when they need it.
    renice -n 10 -p "$BASHPID" >/dev/null 2>&1 || true
    background_chain
) &
BG_PID=$!
# Stopped with the run: the chain and whatever it started.
kill_tree() {
    local child
    for child in $(pgrep -P "$1" 2>/dev/null); do kill_tree "$child"; done
    kill "$1" 2>/dev/null || true
}
previous_exit_trap_bg=$(trap -p EXIT | sed -E "s/^trap -- '(.*)' EXIT$/\1/")
trap "status=\$?; kill_tree $BG_PID; set +e; (exit \$status); $previous_exit_trap_bg" EXIT

# Waits until the background step is done; fails the run with its log when
# it (or the chain before it) failed.
await_background() {
    local name=$1
    while [[ ! -f "$BG_DIR/$name.done" ]]; do
        local failed
        failed=$(ls "$BG_DIR"/*.failed 2>/dev/null | head -n 1 || true)
        if [[ -n "$failed" ]]; then
            local step
            step=$(basename "$failed" .failed)
            echo "background step failed: $(cat "$BG_DIR/$step.title")" >&2
            cat "$BG_DIR/$step.log" >&2
            exit 1
        fi
        if ! kill -0 "$BG_PID" 2>/dev/null && [[ ! -f "$BG_DIR/$name.done" ]]; then
            echo "the background build chain ended before step $name" >&2
            exit 1
        fi
        sleep 1
    done
}

stage "Rust tests (cargo nextest: unit, property, real git repositories, real agent CLIs, server end-to-end)"
TEST_LOG=$(mktemp)
# Every test its own process, every binary at once (profile `ci` in
# .config/nextest.toml): the slow end-to-end tests of different binaries
# overlap instead of waiting binary by binary as under `cargo test`.
cargo nextest run "${NEXTEST_REUSE[@]}" --profile ci 2>&1 | tee "$TEST_LOG"
# Each real-CLI agent test prints "real CLI agents: N of N turns passed";
# a run where one did not run in full fails here, whatever the runner said.
agent_reports=0
while read -r passed total; do
    agent_reports=$((agent_reports + 1))
    echo "real CLI agents: $passed of $total turns passed"
    if [[ $passed -eq 0 || $passed -ne $total ]]; then
        echo "the real CLI agent turns did not all run and pass" >&2
        exit 1
    fi
done < <(sed -nE 's/^[[:space:]]*real CLI agents: ([0-9]+) of ([0-9]+) turns passed.*/\1 \2/p' "$TEST_LOG")
rm -f "$TEST_LOG"
if [[ $agent_reports -lt 2 ]]; then
    echo "expected the reports of both real CLI agent tests (core and server), saw $agent_reports" >&2
    exit 1
fi

# A test binary of the build, run as cargo test would (libtest's own output,
# in its package's directory): test_binary coderig::store_conformance ARGS.
test_binary() {
    local id=$1
    shift
    local found
    found=$("$VENV/bin/python" - "$RUN_META/binaries.json" "$RUN_META/cargo.json" "$id" <<'PY'
import json, os, sys
binaries = json.load(open(sys.argv[1]))["rust-binaries"]
packages = {p["id"]: p for p in json.load(open(sys.argv[2]))["packages"]}
for binary in binaries.values():
    if binary["binary-id"] == sys.argv[3]:
        print(os.path.dirname(packages[binary["package-id"]]["manifest_path"]))
        print(binary["binary-path"])
        break
else:
    sys.exit(f"no test binary {sys.argv[3]}")
PY
)
    local dir=${found%%$'\n'*} path=${found#*$'\n'}
    (cd "$dir" && "$path" "$@")
}

stage "Store on a throwaway PostgreSQL (conformance + kill -9)"
# Starts its own PostgreSQL (initdb + pg_ctl on a free port, fsync off),
# exports DATABASE_URL, runs the PostgreSQL half of the store's conformance
# suite and kill -9 test (the SQLite half ran in `cargo test --all-features`,
# which skips this half without a database), and checks that it really ran. The
# server is stopped at the end of the stage and, on failure, by the EXIT
# trap (chained in front of the summary).
PG_BASE=""
stop_postgres() {
    if [[ -n "$PG_BASE" && -d "$PG_BASE" ]]; then
        as_postgres pg_ctl -D "$PG_BASE/data" -m fast -w stop >/dev/null 2>&1 || true
        rm -rf "$PG_BASE"
    fi
    PG_BASE=""
}
as_postgres() {
    # The server refuses to run as root: use the postgres user then.
    if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}
previous_exit_trap=$(trap -p EXIT | sed -E "s/^trap -- '(.*)' EXIT$/\1/")
trap "status=\$?; stop_postgres; set +e; (exit \$status); $previous_exit_trap" EXIT
if ! command -v initdb >/dev/null 2>&1; then
    for bin in /usr/lib/postgresql/*/bin; do [[ -x "$bin/initdb" ]] && PATH="$bin:$PATH"; done
fi
if ! command -v initdb >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq postgresql >/dev/null
    for bin in /usr/lib/postgresql/*/bin; do [[ -x "$bin/initdb" ]] && PATH="$bin:$PATH"; done
fi
PG_BASE=$(mktemp -d)
mkdir -p "$PG_BASE/sock"
if [[ $(id -u) -eq 0 ]]; then chown -R postgres:postgres "$PG_BASE"; fi
PG_PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
as_postgres initdb -D "$PG_BASE/data" -U postgres -A trust -E UTF8 --no-locale >/dev/null
as_postgres pg_ctl -D "$PG_BASE/data" -l "$PG_BASE/log" -w \
    -o "-k $PG_BASE/sock -h 127.0.0.1 -p $PG_PORT -c fsync=off -c max_connections=200" start >/dev/null
export DATABASE_URL="postgres://postgres@127.0.0.1:$PG_PORT/postgres"
echo "PostgreSQL $(as_postgres postgres --version | awk '{print $3}') at $DATABASE_URL"
# The binaries of the build stage, run directly: no rebuild, no cargo lock.
STORE_TESTS=(coderig::store_conformance coderig::store_kill)
pg_expected=$(for t in "${STORE_TESTS[@]}"; do test_binary "$t" postgres --list 2>/dev/null; done | grep -cE '^(postgres::|kill9_postgres).*: test$' || true)
for t in "${STORE_TESTS[@]}"; do
    CODERIG_REQUIRE_POSTGRES=1 test_binary "$t" postgres 2>&1
done | tee "$PG_BASE/store-tests.log"
pg_passed=$(grep -cE '^test (postgres::|kill9_postgres)[^ ]* \.\.\. ok$' "$PG_BASE/store-tests.log" || true)
echo "PostgreSQL half: $pg_passed of $pg_expected store tests passed against a real server"
if [[ $pg_expected -eq 0 || $pg_passed -ne $pg_expected ]]; then
    echo "the PostgreSQL half of the store tests did not run in full" >&2
    exit 1
fi
# The store's own unit tests against the server (the one-statement
# fenced batch: written at once, its refusals writing nothing).
unit_expected=$(test_binary coderig store::postgres:: --list 2>/dev/null | grep -c ': test$' || true)
CODERIG_REQUIRE_POSTGRES=1 test_binary coderig store::postgres:: 2>&1 | tee "$PG_BASE/unit-tests.log"
unit_passed=$(grep -cE '^test store::postgres::[a-z0-9_:]* \.\.\. ok$' "$PG_BASE/unit-tests.log" || true)
echo "the store's PostgreSQL unit tests: $unit_passed of $unit_expected passed"
if [[ $unit_expected -eq 0 || $unit_passed -ne $unit_expected ]]; then
    echo "the store's PostgreSQL unit tests did not run in full" >&2
    exit 1
fi
# The event bus and the task worker: the PostgreSQL halves of their
# suites (they skip without a database, as the nextest stage runs them),
# and the bus's commit feed — LISTEN across two handles, a listener whose
# connection is killed, a pooler that drops notifications.
for t in coderig::bus coderig::task_worker; do
    expected=$(test_binary "$t" postgres --list 2>/dev/null | grep -c ': test$' || true)
    CODERIG_REQUIRE_POSTGRES=1 test_binary "$t" postgres 2>&1 | tee "$PG_BASE/more-tests.log"
    passed=$(grep -cE '^test [a-z0-9_:]*postgres[a-z0-9_:]* \.\.\. ok$' "$PG_BASE/more-tests.log" || true)
    echo "$t on PostgreSQL: $passed of $expected tests passed"
    if [[ $expected -eq 0 || $passed -ne $expected ]]; then
        echo "$t: its PostgreSQL half did not run in full" >&2
        exit 1
    fi
done
# The arena's two-server test: two runtimes on one PostgreSQL, the local
# lane never doubled, no contestant run twice.
CODERIG_REQUIRE_POSTGRES=1 test_binary coderig::arena_runner two_servers --nocapture 2>&1 | tee "$PG_BASE/arena-tests.log"
if ! grep -q '^arena two-server test on postgres$' "$PG_BASE/arena-tests.log" \
    || ! grep -qE '^test two_servers[a-z_]* \.\.\. ok$' "$PG_BASE/arena-tests.log"; then
    echo "the arena's two-server test did not run on PostgreSQL" >&2
    exit 1
fi
# The flow engine on PostgreSQL: child engine processes SIGKILLed during a
# running command, a waiting approval, a do-while, a retry's backoff and
# before a cancel, each run finished by a new engine; and two engines
# sharing 50 runs of a 20-step flow, every step run once. Two test threads:
# libtest then prints each result as one line.
flow_expected=$(test_binary coderig::flow_engine_crash postgres --list 2>/dev/null | grep -cE '^(kills::)?kill9_[a-z0-9_]*_postgres: test$' || true)
CODERIG_REQUIRE_POSTGRES=1 test_binary coderig::flow_engine_crash postgres --nocapture --test-threads=2 2>&1 | tee "$PG_BASE/flow-tests.log"
flow_kills=$(grep -cE '^test (kills::)?kill9_[a-z0-9_]*_postgres \.\.\. ok$' "$PG_BASE/flow-tests.log" || true)
flow_marks=$(grep -c '^flow kill -9 test on postgres$' "$PG_BASE/flow-tests.log" || true)
echo "flow engine on PostgreSQL: $flow_kills of $flow_expected kill -9 tests passed"
if [[ $flow_expected -eq 0 || $flow_kills -ne $flow_expected || $flow_marks -ne $flow_expected ]] \
    || ! grep -q '^flow two-engine test on postgres$' "$PG_BASE/flow-tests.log" \
    || ! grep -qE '^test two_engines_postgres[a-z0-9_]* \.\.\. ok$' "$PG_BASE/flow-tests.log"; then
    echo "the flow engine's kill -9 and two-engine tests did not all run on PostgreSQL" >&2
    exit 1
fi
# The server half: `coderig serve --db $DATABASE_URL` opens, migrates and
# answers over HTTP (it skips without a database; here it must run).
CODERIG_REQUIRE_POSTGRES=1 test_binary coderig-server::serve postgres 2>&1 | tee "$PG_BASE/serve-tests.log"
if ! grep -qE '^test [a-z_]*postgres[a-z_]* \.\.\. ok$' "$PG_BASE/serve-tests.log"; then
    echo "the server's PostgreSQL test did not run" >&2
    exit 1
fi
# Two `coderig serve` processes on the one PostgreSQL finish battles
# together: the local lane never doubled, no contestant run twice.
CODERIG_REQUIRE_POSTGRES=1 test_binary coderig-server::battles_crash postgres --nocapture 2>&1 | tee "$PG_BASE/battles-tests.log"
if ! grep -q '^battles two-server test on postgres$' "$PG_BASE/battles-tests.log" \
    || ! grep -qE '^test two_servers_postgres[a-z_]* \.\.\. ok$' "$PG_BASE/battles-tests.log"; then
    echo "the server's two-server battle test did not run on PostgreSQL" >&2
    exit 1
fi
# Two `coderig serve` processes on the one PostgreSQL share flow runs
# posted alternately to each: every run completes, no step runs twice.
CODERIG_REQUIRE_POSTGRES=1 test_binary coderig-server::runs_crash postgres --nocapture 2>&1 | tee "$PG_BASE/runs-crash-tests.log"
if ! grep -q '^flow two-serve test on postgres$' "$PG_BASE/runs-crash-tests.log" \
    || ! grep -qE '^test two_servers_postgres[a-z_]* \.\.\. ok$' "$PG_BASE/runs-crash-tests.log"; then
    echo "the server's two-server flow run test did not run on PostgreSQL" >&2
    exit 1
fi
stop_postgres
unset DATABASE_URL

stage "Rust examples (every example of every package, the build stage's binaries)"
examples=$(cargo metadata --format-version 1 --no-deps | "$VENV/bin/python" -c '
import json, sys
for package in json.load(sys.stdin)["packages"]:
    for target in package["targets"]:
        if "example" in target["kind"]:
            print(target["name"])
')
if [[ -z "$examples" ]]; then
    echo "(no Rust examples)"
else
    while read -r example; do
        echo "--- $example"
        "$BIN_DIR/examples/$example"
    done <<<"$examples"
fi

stage "Python module (the workspace build's extension, installed into .venv)"
# What `maturin develop` does for this mixed project, without its rebuild:
# the extension beside the Python sources, and those on the venv's path.
"$VENV/bin/python" -m pip uninstall --quiet --yes coderig >/dev/null 2>&1 || true
cp "$BIN_DIR/libcoderig_py.so" crates/py/python/coderig/_native.abi3.so
"$VENV/bin/python" - "$ROOT/crates/py/python" <<'PY'
import pathlib, sys, sysconfig
pathlib.Path(sysconfig.get_paths()["purelib"], "coderig.pth").write_text(sys.argv[1] + "\n")
PY
"$VENV/bin/python" -c 'import coderig; print("coderig", coderig.__version__, "from", coderig.__file__)'

stage "pytest"
# pytest exits 5 when it collected no tests; set -e counts that as a failure.
"$VENV/bin/python" -m pytest crates/py/tests -q

stage "editbench quality gate (coderig via the Python binding)"
# The issue's targets, re-checked on two seeds: >= 99 % strictly correct,
# 0 CORRUPT, >= 99 % right-kind refusals. shared/ sits beside the checkout
# on developer machines and in CI; elsewhere the gate cannot run.
EDITBENCH="$ROOT/../shared/editbench"
if [[ -f "$EDITBENCH/gen.py" ]]; then
    "$VENV/bin/python" scripts/editbench_gate.py "$EDITBENCH" --seeds 1,2 --count 600
elif [[ "${CI:-}" == "true" ]]; then
    echo "shared/editbench not found beside the checkout ($EDITBENCH): CI must have it" >&2
    exit 1
else
    echo "SKIPPED: no shared/editbench beside the checkout ($EDITBENCH)"
fi

stage "HTTP API schema fuzzing (schemathesis against coderig serve)"
# Property-based: schemathesis generates requests from the server's own
# OpenAPI document, schema-valid and schema-breaking ones, and fails on any
# 5xx, any schema-valid request refused (only 200 or a 422 edit refusal may
# answer one), any schema-breaking one accepted, and any answer whose status
# or body breaks what the document declares. Config and generator hooks:
# crates/server/tests/schemathesis/. Bounded and seeded: ~20 s here.
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "schemathesis>=4.32,<5"
"$VENV/bin/schemathesis" --version
SERVER_LOG=$(mktemp)
# Its store in a temporary data dir (nothing left in the checkout), its
# agents the scripted ones of the fuzzing config (GET /api/agents answers them).
SERVER_DATA=$(mktemp -d)
# A git repository under its project root, so schema-valid battle specs
# (pointed at it by hooks.py) start real battles.
FUZZ_PROJECT="$SERVER_DATA/projects/fuzz"
mkdir -p "$FUZZ_PROJECT"
git -C "$FUZZ_PROJECT" init -q -b main
echo "x = 1" >"$FUZZ_PROJECT/x.txt"
git -C "$FUZZ_PROJECT" add -A
git -C "$FUZZ_PROJECT" -c user.name=fuzz -c user.email=fuzz@example.com commit -q -m fuzz
export CODERIG_FUZZ_PROJECT="$FUZZ_PROJECT"
# With a bearer token, which schemathesis.toml sends (and `ignored_auth` leaves out).
export CODERIG_FUZZ_TOKEN="fuzz-$$-$RANDOM"
env -u DATABASE_URL "$BIN_DIR/coderig" serve --host 127.0.0.1 --port 0 --token "$CODERIG_FUZZ_TOKEN" \
    --data-dir "$SERVER_DATA/data" --project-root "$SERVER_DATA/projects" \
    --config crates/server/tests/schemathesis/coderig.toml \
    --flows crates/server/tests/schemathesis/flows >"$SERVER_LOG" 2>&1 &
SERVER_PID=$!
SERVER_URL=""
for _ in $(seq 1 100); do
    SERVER_URL=$(sed -n 's/^coderig listening on //p' "$SERVER_LOG" | head -n 1)
    if [[ -n "$SERVER_URL" ]] || ! kill -0 "$SERVER_PID" 2>/dev/null; then break; fi
    sleep 0.1
done
if [[ -z "$SERVER_URL" ]]; then
    echo "coderig serve did not start:" >&2
    cat "$SERVER_LOG" >&2
    exit 1
fi
echo "coderig serve listening on $SERVER_URL (pid $SERVER_PID)"
# One completed battle for the routes that take a battle id (hooks.py).
CODERIG_FUZZ_BATTLE=$("$VENV/bin/python" - "$SERVER_URL" <<'PY'
import json, sys, time, urllib.request, os
url = sys.argv[1]
def call(method, path, body=None):
    request = urllib.request.Request(url + path, method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json",
                 "Authorization": "Bearer " + os.environ["CODERIG_FUZZ_TOKEN"]})
    with urllib.request.urlopen(request) as response:
        return json.load(response)
spec = {"battle_type": "coding", "prompt": "fuzz", "project": os.environ["CODERIG_FUZZ_PROJECT"],
        "contestants": [{"identity": "alice", "model": "m0"}, {"identity": "bob", "model": "m1"}],
        "judge": {"identity": "alice", "model": "j"}}
battle = call("POST", "/api/battles", spec)["battle_id"]
for _ in range(600):
    if call("GET", f"/api/battles/{battle}")["status"] == "completed":
        print(battle)
        break
    time.sleep(0.1)
else:
    sys.exit(f"the fuzz battle {battle} did not complete")
PY
)
export CODERIG_FUZZ_BATTLE
echo "a completed battle for the fuzzer: $CODERIG_FUZZ_BATTLE"
# One run waiting at its approval for the routes that take a run id (hooks.py).
CODERIG_FUZZ_RUN=$("$VENV/bin/python" - "$SERVER_URL" <<'PY'
import json, sys, time, urllib.request, os
url = sys.argv[1]
def call(method, path, body=None):
    request = urllib.request.Request(url + path, method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json",
                 "Authorization": "Bearer " + os.environ["CODERIG_FUZZ_TOKEN"]})
    with urllib.request.urlopen(request) as response:
        return json.load(response)
run = call("POST", "/api/runs", {"flow": "fuzz-gate"})["run_id"]
for _ in range(600):
    if call("GET", f"/api/runs/{run}")["status"] == "waiting":
        print(run)
        break
    time.sleep(0.1)
else:
    sys.exit(f"the fuzz run {run} did not reach its approval")
PY
)
export CODERIG_FUZZ_RUN
echo "a run waiting at its approval for the fuzzer: $CODERIG_FUZZ_RUN"
"$VENV/bin/schemathesis" --config-file crates/server/tests/schemathesis/schemathesis.toml \
    run "$SERVER_URL/api/openapi.json" --checks all --max-examples 100 --seed 6 \
    --generation-database none --no-color
stop_server

stage "Node addon (built in the background)"
await_background node

stage "node --test"
(cd crates/node && npm test)

stage "Dashboard in a real browser (Debian chromium, playwright-core)"
if ! wait "$BROWSER_PID"; then
    cat "$BROWSER_LOG" >&2
    echo "installing chromium or playwright-core failed (above)" >&2
    exit 1
fi
/usr/lib/chromium/chromium --version 2>/dev/null || /usr/bin/chromium --version
# Launch a battle and a flow from the forms and watch them live, a diff, a
# winner by hand, an approval, HTML output shown as text, the token prompt;
# screenshots of every page into target/dashboard-screenshots.
(cd tests/dashboard && CODERIG_BIN="$BIN_DIR/coderig" CODERIG_SCREENSHOTS="$TARGET_DIR/dashboard-screenshots" npm test)

stage "Faces agree (a run and a battle through HTTP+SSE, the CLI, Python and Node)"
# The same flow run and the same battle in every face, each on its own real
# store: the same events in the same order with the same end; a cancelled
# run and a stopped battle show every step or contestant final in the first
# read after the cancel and in every stream.
"$VENV/bin/python" tests/faces/agree.py "$BIN_DIR"

stage "Python and Node examples (examples/*.py, examples/*.mjs)"
shopt -s nullglob
scripts=(examples/*.py examples/*.mjs)
shopt -u nullglob
if [[ ${#scripts[@]} -eq 0 ]]; then
    echo "(no Python or Node examples)"
fi
for script in "${scripts[@]}"; do
    echo "--- $script"
    case "$script" in
        *.py) "$VENV/bin/python" "$script" ;;
        *.mjs) node "$script" ;;
    esac
done

stage "Background builds (waiting for the rest of the chain)"
for step in "${BG_STEPS[@]}"; do
    await_background "$step"
done
wait "$BG_PID"
finish_stage
# Each background step as a stage of its own in the summary (its time ran
# beside the stages above, not after them).
for step in "${BG_STEPS[@]}"; do
    STAGE_NAMES+=("(background) $(cat "$BG_DIR/$step.title")")
    STAGE_TIMES+=("$(cat "$BG_DIR/$step.done")")
    if [[ $step == doc || $step == pure ]]; then
        tail -n 3 "$BG_DIR/$step.log"
    fi
done
ls fuzz/fuzz_targets

finish_stage
echo "disk: target/ $(du -sh "$TARGET_DIR" 2>/dev/null | cut -f1), free $(df -h --output=avail "$ROOT" | tail -n 1 | tr -d ' ')"
