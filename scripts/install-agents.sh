#!/usr/bin/env bash
# Installs the pinned agent CLIs (tests/agents/package.json + package-lock.json)
# into a cache directory keyed by the lockfile's hash, so that every test run and
# every worktree shares one ~1.1 GB install and a changed pin gets a fresh one.
# Prints the node_modules/.bin directory as the last line of stdout.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="$repo/tests/agents"
lock="$src/package-lock.json"
[ -f "$src/package.json" ] && [ -f "$lock" ] || { echo "install-agents: $src/package.json or package-lock.json missing" >&2; exit 1; }

key="$(sha256sum "$lock" | cut -c1-16)"
root="${CODERIG_AGENTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/coderig/agents}"
dir="$root/$key"
bin="$dir/node_modules/.bin"
stamp="$dir/.installed"

# name:version per binary; the version each must print for `--version`.
bins=(claude:2.1.197 codex:0.169.0 opencode:1.18.33 qwen:0.24.4)

if [ ! -f "$stamp" ]; then
  command -v npm >/dev/null || { echo "install-agents: npm is not on PATH" >&2; exit 1; }
  mkdir -p "$dir"
  cp "$src/package.json" "$lock" "$dir/"
  echo "install-agents: npm ci into $dir (about 2 min and 1.1 GB the first time)" >&2
  # stdout of npm goes to stderr: this script's stdout is reserved for the .bin path.
  # npm ci is the pinned path. It refuses a lock that lacks the other platforms'
  # optional binaries (opencode-darwin-*, @teddyzhu/clipboard-*), which is what a
  # registry mirror that 404s them produces; npm install then keeps every locked
  # version that is present and skips the unreachable optional ones.
  if ! (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error 1>&2); then
    echo "install-agents: npm ci refused; retrying with npm install on the same lock" >&2
    (cd "$dir" && npm install --no-audit --no-fund --loglevel=error 1>&2)
  fi
  missing=0
  for entry in "${bins[@]}"; do
    name="${entry%%:*}"
    want="${entry#*:}"
    if [ ! -x "$bin/$name" ]; then
      echo "install-agents: $bin/$name is missing after npm ci" >&2
      missing=1
      continue
    fi
    got="$("$bin/$name" --version </dev/null 2>/dev/null || true)"
    case "$got" in
      *"$want"*) ;;
      *) echo "install-agents: $name --version printed '$got', expected $want" >&2; missing=1 ;;
    esac
  done
  [ "$missing" = 0 ] || { echo "install-agents: install in $dir is incomplete" >&2; exit 1; }
  date -u +%Y-%m-%dT%H:%M:%SZ > "$stamp"
fi

echo "$bin"
