#!/usr/bin/env bash
# Re-captures the agent fixtures: drives each pinned CLI (scripts/install-agents.sh)
# against the scripted model server (crates/scripted-model) and stores its stdout.
#
#   tests/agents/capture.sh [OUT_DIR] [CLI...]     (CLI: claude codex opencode qwen;
#                                                   qwen-edit re-runs only the qwen auto-edit pair)
#
# OUT_DIR defaults to crates/core/tests/fixtures/agents. Every run gets a fresh
# HOME and a fresh one-commit git repo as its work dir; stdin is /dev/null.
# Absolute temp paths in stdout become /WORKDIR (the work dir) and /HOMEDIR.
# A summary (file, exit code, whether hello.txt appeared and its text, seconds)
# goes to OUT_DIR/capture-summary.tsv. Stderr is not kept (noisy, machine
# specific); its last lines are printed per run.
set -uo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${1:-$repo/crates/core/tests/fixtures/agents}"
shift || true
clis=("$@")
[ ${#clis[@]} -gt 0 ] || clis=(claude codex opencode qwen)
mkdir -p "$out"

bin="$("$repo/scripts/install-agents.sh" | tail -n1)" || { echo "capture: install failed" >&2; exit 1; }
export PATH="$bin:$PATH"
(cd "$repo" && cargo build -q -p coderig-scripted-model) || exit 1
server_bin="$repo/target/debug/coderig-scripted-model"

scratch="$(mktemp -d)"
"$server_bin" >"$scratch/server.out" 2>"$scratch/server.err" &
server_pid=$!
trap 'kill "$server_pid" 2>/dev/null; rm -rf "$scratch"' EXIT
for _ in $(seq 50); do grep -q listening "$scratch/server.out" && break; sleep 0.1; done
port="$(sed -n 's/^listening on http:\/\/127.0.0.1:\([0-9]*\)$/\1/p' "$scratch/server.out")"
[ -n "$port" ] || { echo "capture: scripted model server did not start" >&2; exit 1; }
echo "capture: scripted model on 127.0.0.1:$port, CLIs from $bin" >&2

summary="$out/capture-summary.tsv"
[ -f "$summary" ] || printf 'file\texit\thello_txt\tseconds\n' >"$summary"

WRITE="Create hello.txt containing hi"
SHELL_PROMPT="Create hello.txt containing hi using the shell"

# fresh_case NAME: sets H (home) and W (work dir, a one-commit git repo).
fresh_case() {
  H="$scratch/$1/home"
  W="$scratch/$1/work"
  mkdir -p "$H" "$W"
  git -C "$W" init -q
  git -C "$W" -c user.name=t -c user.email=t@t commit -q --allow-empty -m init
}

# finish NAME RC SECONDS: normalizes stdout, records the summary line.
finish() {
  local name="$1" rc="$2" secs="$3" file="$out/$1.jsonl" seen=no
  [ -f "$W/hello.txt" ] && seen="yes:$(tr -d '\n' <"$W/hello.txt")"
  sed -e "s#$W#/WORKDIR#g" -e "s#$H#/HOMEDIR#g" -e "s#$scratch#/SCRATCH#g" "$scratch/$name.stdout" >"$file"
  grep -v "^$name.jsonl	" "$summary" >"$summary.tmp" || true
  printf '%s\t%s\t%s\t%s\n' "$name.jsonl" "$rc" "$seen" "$secs" >>"$summary.tmp"
  mv "$summary.tmp" "$summary"
  echo "== $name: exit $rc, hello.txt $seen, ${secs}s; stderr tail:" >&2
  tail -n 3 "$scratch/$name.stderr" | cut -c1-300 >&2
}

# run NAME CMD...: runs CMD in $W with stdin /dev/null and a 180 s cap.
run() {
  local name="$1"; shift
  local start end rc
  start=$(date +%s)
  (cd "$W" && timeout 180 "$@" </dev/null >"$scratch/$name.stdout" 2>"$scratch/$name.stderr")
  rc=$?
  end=$(date +%s)
  finish "$name" "$rc" "$((end - start))"
}

claude_case() { # scenario model prompt permission-flags...
  local scenario="$1" model="$2" prompt="$3"; shift 3
  fresh_case "claude-$scenario"
  run "claude-$scenario" env HOME="$H" CLAUDE_CONFIG_DIR="$H/.claude" \
    XDG_CONFIG_HOME="$H/.config" XDG_DATA_HOME="$H/.local/share" XDG_CACHE_HOME="$H/.cache" XDG_STATE_HOME="$H/.local/state" \
    ANTHROPIC_BASE_URL="http://127.0.0.1:$port" ANTHROPIC_API_KEY=sk-ant-dummy ANTHROPIC_MODEL="$model" IS_SANDBOX=1 \
    DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1 \
    CLAUDE_CODE_MAX_RETRIES=0 \
    claude -p "$prompt" --output-format stream-json --verbose --model "$model" "$@"
}

qwen_case() { # scenario model prompt approval-flags...
  local scenario="$1" model="$2" prompt="$3"; shift 3
  fresh_case "qwen-$scenario"
  mkdir -p "$H/.qwen"
  echo '{"general":{"enableAutoUpdate":false},"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false},"security":{"auth":{"selectedType":"openai"}}}' >"$H/.qwen/settings.json"
  run "qwen-$scenario" env HOME="$H" \
    XDG_CONFIG_HOME="$H/.config" XDG_DATA_HOME="$H/.local/share" XDG_CACHE_HOME="$H/.cache" XDG_STATE_HOME="$H/.local/state" \
    OPENAI_API_KEY=dummy OPENAI_BASE_URL="http://127.0.0.1:$port/v1" OPENAI_MODEL="$model" \
    QWEN_CODE_SUPPRESS_YOLO_WARNING=1 \
    qwen --auth-type openai -m "$model" --output-format stream-json "$@" "$prompt"
}

codex_case() { # scenario model prompt sandbox-flags...
  local scenario="$1" model="$2" prompt="$3"; shift 3
  fresh_case "codex-$scenario"
  mkdir -p "$H/.codex"
  cat >"$H/catalog.json" <<EOF
{"models":[{"slug":"$model","display_name":"$model","description":"x",
 "supports_reasoning_summaries":false,"support_verbosity":false,"default_verbosity":null,
 "apply_patch_tool_type":"freeform","input_modalities":["text"],
 "truncation_policy":{"mode":"tokens","limit":10000},"supports_parallel_tool_calls":false,
 "context_window":128000,"default_reasoning_level":"medium",
 "supported_reasoning_levels":[{"effort":"medium","description":"medium"}],
 "shell_type":"shell_command","visibility":"list","minimal_client_version":"0.0.1",
 "supported_in_api":true,"upgrade":null,"priority":0,
 "base_instructions":"You are a scripted test agent.","experimental_supported_tools":[]}]}
EOF
  run "codex-$scenario" env HOME="$H" CODEX_HOME="$H/.codex" LOCAL_API_KEY=dummy \
    XDG_CONFIG_HOME="$H/.config" XDG_DATA_HOME="$H/.local/share" XDG_CACHE_HOME="$H/.cache" XDG_STATE_HOME="$H/.local/state" \
    codex exec --json --ephemeral --strict-config --skip-git-repo-check -C "$W" "$@" \
    -c model="$model" -c model_provider=local -c model_catalog_json="$H/catalog.json" \
    -c model_providers.local.name=local \
    -c model_providers.local.base_url="http://127.0.0.1:$port/v1" \
    -c model_providers.local.wire_api=responses \
    -c model_providers.local.env_key=LOCAL_API_KEY \
    -c model_providers.local.request_max_retries=0 \
    -c model_providers.local.stream_max_retries=0 \
    -c model_providers.local.stream_idle_timeout_ms=20000 \
    -c check_for_update_on_startup=false -c analytics.enabled=false \
    "$prompt"
}

opencode_case() { # scenario model prompt permission-json
  local scenario="$1" model="$2" prompt="$3" permission="$4"
  fresh_case "opencode-$scenario"
  cat >"$H/opencode.json" <<EOF
{"\$schema":"https://opencode.ai/config.json",
 "provider":{"local":{"npm":"@ai-sdk/openai-compatible","name":"Local scripted",
   "options":{"baseURL":"http://127.0.0.1:$port/v1","apiKey":"dummy"},
   "models":{"$model":{"name":"Scripted","tool_call":true}}}},
 "model":"local/$model","small_model":"local/$model",
 "autoupdate":false,"share":"disabled",
 "permission":$permission}
EOF
  run "opencode-$scenario" env HOME="$H" PWD="$W" \
    XDG_CONFIG_HOME="$H/.config" XDG_DATA_HOME="$H/.local/share" XDG_CACHE_HOME="$H/.cache" XDG_STATE_HOME="$H/.local/state" \
    OPENCODE_CONFIG="$H/opencode.json" OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_MODELS_FETCH=1 \
    OPENCODE_DISABLE_LSP_DOWNLOAD=1 OPENCODE_DISABLE_SHARE=1 OPENCODE_DISABLE_DEFAULT_PLUGINS=1 \
    NPM_CONFIG_REGISTRY=http://127.0.0.1:9/ \
    opencode run --pure --format json --dir "$W" -m "local/$model" "$prompt"
}

M=scripted-model
ERR=scripted-model+status_500
ALLOW='{"edit":"allow","bash":"allow","webfetch":"allow"}'
DENY='{"edit":"deny","bash":"deny","webfetch":"deny"}'
for cli in "${clis[@]}"; do
  case "$cli" in
    claude)
      claude_case write "$M" "$WRITE" --dangerously-skip-permissions
      claude_case shell "$M" "$SHELL_PROMPT" --dangerously-skip-permissions
      claude_case error "$ERR" "$WRITE" --dangerously-skip-permissions
      claude_case readonly "$M" "$WRITE" --permission-mode default
      claude_case readonly-shell "$M" "$SHELL_PROMPT" --permission-mode default
      claude_case plan "$M" "$WRITE" --permission-mode plan
      claude_case edit "$M" "$WRITE" --permission-mode acceptEdits
      claude_case edit-shell "$M" "$SHELL_PROMPT" --permission-mode acceptEdits
      ;;
    qwen-edit)
      qwen_case edit "$M" "$WRITE" --approval-mode auto-edit
      qwen_case edit-shell "$M" "$SHELL_PROMPT" --approval-mode auto-edit
      ;;
    qwen)
      qwen_case write "$M" "$WRITE" --yolo
      qwen_case shell "$M" "$SHELL_PROMPT" --yolo
      qwen_case error "$ERR" "$WRITE" --yolo
      qwen_case readonly "$M" "$WRITE" --approval-mode default
      qwen_case readonly-shell "$M" "$SHELL_PROMPT" --approval-mode default
      qwen_case plan "$M" "$WRITE" --approval-mode plan
      qwen_case edit "$M" "$WRITE" --approval-mode auto-edit
      qwen_case edit-shell "$M" "$SHELL_PROMPT" --approval-mode auto-edit
      ;;
    codex)
      codex_case write "$M" "$WRITE" --dangerously-bypass-approvals-and-sandbox
      codex_case shell "$M" "$SHELL_PROMPT" --dangerously-bypass-approvals-and-sandbox
      codex_case error "$ERR" "$WRITE" --dangerously-bypass-approvals-and-sandbox
      codex_case readonly "$M" "$WRITE" --sandbox read-only -c approval_policy=never
      codex_case readonly-shell "$M" "$SHELL_PROMPT" --sandbox read-only -c approval_policy=never
      codex_case edit "$M" "$WRITE" --sandbox workspace-write -c approval_policy=never
      codex_case edit-shell "$M" "$SHELL_PROMPT" --sandbox workspace-write -c approval_policy=never
      ;;
    opencode)
      opencode_case write "$M" "$WRITE" "$ALLOW"
      opencode_case shell "$M" "$SHELL_PROMPT" "$ALLOW"
      opencode_case error "$ERR" "$WRITE" "$ALLOW"
      opencode_case readonly "$M" "$WRITE" "$DENY"
      opencode_case readonly-shell "$M" "$SHELL_PROMPT" "$DENY"
      opencode_case edit "$M" "$WRITE" '{"edit":"allow","bash":"deny","webfetch":"deny"}'
      ;;
    *) echo "capture: unknown CLI $cli" >&2; exit 2 ;;
  esac
done
echo "capture: wrote $out (summary: $summary)" >&2
