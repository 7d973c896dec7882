//! The TypeScript shapes of the runtime's plain objects: what `new Rig`,
//! `rig.runTurn` and `rig.agents` take, and what turns stream and return.
//!
//! Types only (`object_to_js` / `object_from_js` off): inputs are decoded
//! by the core's decoders and outputs are the core's serde JSON, so the
//! values are exactly what every other face sees (snake_case keys, absent
//! optional fields left out). These declarations mirror the core's types
//! (`coderig::agent::{AgentEvent, TurnOutcome, Usage, AgentInfo}`);
//! `test/rig.test.mjs` checks real events and outcomes against them, and
//! `test/names.test.mjs` every string union against the core's lists.

use napi_derive::napi;

/// What `new Rig(options)` takes. Every field may be absent or `null`.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct RigOptions {
    /// Where the rig keeps its data: the SQLite store (without `db`) and
    /// the battles' worktrees (default `./.coderig`).
    #[napi(ts_type = "string | null")]
    pub data_dir: Option<String>,
    /// The store's URL (`postgres://...`, `sqlite://PATH` or a file path;
    /// default SQLite in `dataDir`), opened by the first battle or run call.
    #[napi(ts_type = "string | null")]
    pub db: Option<String>,
    /// Coding battles' projects and flow steps' `cwd` / `workdir` must lie
    /// under one of these directories, each resolved when the `Rig` is
    /// built (default: the current directory then).
    #[napi(ts_type = "string[] | null")]
    pub project_roots: Option<String>,
    /// The path of a `coderig.toml` (not with `agents`).
    #[napi(ts_type = "string | null")]
    pub config: Option<String>,
    /// The agents, in the JSON form of `coderig.toml`'s `[agents]` table:
    /// `{alice: {kind: 'scripted', script: [{text: 'hi'}]}}` (snake_case
    /// keys, as in the file; not with `config`).
    #[napi(ts_type = "Record<string, AgentSpec> | null")]
    pub agents: Option<String>,
    /// The mode every process the rig starts runs under: `'enforce'`
    /// (default: refuse what the kernel cannot confine), `'auto'` or
    /// `'off'`, or the `[sandbox]` table (`{mode: 'auto'}`); it replaces
    /// the config file's.
    #[napi(ts_type = "'enforce' | 'auto' | 'off' | { mode?: 'enforce' | 'auto' | 'off' } | null")]
    pub sandbox: Option<String>,
}

/// One entry of `coderig.toml`'s `[agents]` table, as `new Rig({agents})`
/// takes it (snake_case keys, as in the file). Which keys a kind takes is
/// checked by the core: a key of another kind is `INVALID_INPUT`.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct AgentSpec {
    /// What the agent is.
    #[napi(ts_type = "'cli' | 'openai' | 'scripted' | 'native'")]
    pub kind: String,
    /// Its lane (default `'cloud'`).
    #[napi(ts_type = "'local' | 'cloud' | null")]
    pub lane: Option<String>,
    /// Default wall-clock limit of a turn (seconds or `'20m'`).
    #[napi(ts_type = "number | string | null")]
    pub timeout: Option<String>,
    /// Default idle limit of a turn.
    #[napi(ts_type = "number | string | null")]
    pub idle_timeout: Option<String>,
    /// Environment added to a CLI's process.
    #[napi(ts_type = "Record<string, string> | null")]
    pub env: Option<String>,
    /// Models the agent is known to serve.
    #[napi(ts_type = "string[] | null")]
    pub models: Option<String>,
    /// cli: which CLI.
    #[napi(ts_type = "'claude' | 'qwen' | 'codex' | 'opencode' | 'custom' | null")]
    pub preset: Option<String>,
    /// cli: the binary (default: the preset's on `PATH`).
    #[napi(ts_type = "string | null")]
    pub command: Option<String>,
    /// cli `custom`: its arguments, with `{prompt}`, `{model}`, `{workdir}`.
    #[napi(ts_type = "string[] | null")]
    pub args: Option<String>,
    /// cli: arguments appended to the preset's own.
    #[napi(ts_type = "string[] | null")]
    pub extra_args: Option<String>,
    /// cli `custom`: the stdout format.
    #[napi(ts_type = "'claude-stream-json' | 'codex-json' | 'opencode-json' | 'text' | null")]
    pub format: Option<String>,
    /// cli `custom`: its arguments really keep a read-only turn from writing.
    #[napi(ts_type = "boolean | null")]
    pub enforces_read_only: Option<String>,
    /// cli: extra directories the CLI keeps state in, writable inside its
    /// sandbox (absolute or `~/...`; each preset declares its own).
    #[napi(ts_type = "string[] | null")]
    pub state_dirs: Option<String>,
    /// cli: the network of its sandbox (`allow`, `deny`, `loopback:PORT`;
    /// default: the loopback ports of its model-server URLs, else `allow`).
    #[napi(ts_type = "string | null")]
    pub network: Option<String>,
    /// openai: the base URL, ending in `/v1`.
    #[napi(ts_type = "string | null")]
    pub base_url: Option<String>,
    /// openai: the API key (prefer `api_key_env`).
    #[napi(ts_type = "string | null")]
    pub api_key: Option<String>,
    /// openai: the environment variable holding the API key.
    #[napi(ts_type = "string | null")]
    pub api_key_env: Option<String>,
    /// openai: the model when a turn names none.
    #[napi(ts_type = "string | null")]
    pub model: Option<String>,
    /// openai: extra HTTP headers.
    #[napi(ts_type = "Record<string, string> | null")]
    pub headers: Option<String>,
    /// scripted: the script played for every model without its own.
    #[napi(ts_type = "Array<Record<string, unknown>> | null")]
    pub script: Option<String>,
    /// scripted: scripts by model name.
    #[napi(ts_type = "Record<string, Array<Record<string, unknown>>> | null")]
    pub scripts: Option<String>,
}

/// What `rig.runTurn(identity, model, prompt, options)` takes besides the
/// prompt. Durations are seconds (a number) or strings with a unit
/// (`'500ms'`, `'90s'`, `'20m'`, `'2h'`).
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct TurnOptions {
    /// The directory the agent works in.
    #[napi(ts_type = "string | null")]
    pub workdir: Option<String>,
    /// What the agent may do (default `'read_only'`).
    #[napi(ts_type = "'read_only' | 'edit' | 'full' | null")]
    pub access: Option<String>,
    /// Wall-clock limit of the turn (default: the agent's).
    #[napi(ts_type = "number | string | null")]
    pub timeout: Option<String>,
    /// The turn fails as hung when no event came for this long (default:
    /// the agent's).
    #[napi(ts_type = "number | string | null")]
    pub idle_timeout: Option<String>,
    /// A system prompt.
    #[napi(ts_type = "string | null")]
    pub system: Option<String>,
    /// Environment variables added for this turn.
    #[napi(ts_type = "Record<string, string> | null")]
    pub env: Option<String>,
    /// A directory for the turn's records (the native agent's transcript
    /// and cut tool outputs).
    #[napi(ts_type = "string | null")]
    pub artifacts: Option<String>,
}

/// What `rig.agents(options)` takes.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct AgentsOptions {
    /// How long an HTTP agent may take to list its models (seconds or a
    /// duration string; default 2 s).
    #[napi(ts_type = "number | string | null")]
    pub probe_timeout: Option<String>,
}

/// One agent as `rig.agents()` reports it.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct AgentInfo {
    /// The identity (`claude`, `local`, ...).
    pub identity: String,
    /// What it is.
    #[napi(ts_type = "'cli' | 'openai' | 'scripted' | 'native'")]
    pub kind: String,
    /// The CLI preset, for kind `cli`.
    pub preset: Option<String>,
    /// The lane its turns run in.
    #[napi(ts_type = "'local' | 'cloud'")]
    pub lane: String,
    /// The binary as found on `PATH` (CLI agents).
    pub command: Option<String>,
    /// Whether the agent can be started.
    pub installed: bool,
    /// Whether the backend answered just now; `null` when that cannot be
    /// known without a turn (CLIs).
    #[napi(ts_type = "boolean | null")]
    pub reachable: Option<bool>,
    /// The models it serves.
    pub models: Vec<String>,
    /// Why it is not installed or not reachable.
    pub error: Option<String>,
}

/// Token counts and cost (`input` is uncached input).
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct Usage {
    /// Uncached input tokens.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Input tokens read from the provider's cache.
    #[napi(js_name = "cache_read")]
    pub cache_read: f64,
    /// Input tokens written to the provider's cache.
    #[napi(js_name = "cache_write")]
    pub cache_write: f64,
    /// Reasoning tokens, where reported apart.
    pub reasoning: f64,
    /// Cost in US dollars, where the backend reports one.
    #[napi(js_name = "cost_usd")]
    pub cost_usd: Option<f64>,
}

/// How a turn ended when it ended well: what `turn.wait()` resolves to.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct TurnOutcome {
    /// The final answer: the agent's reported result, else its text.
    #[napi(js_name = "final_text")]
    pub final_text: String,
    /// The sum of the turn's `usage` events.
    pub usage: Usage,
    /// The session id, where the agent has one.
    #[napi(js_name = "session_id")]
    pub session_id: Option<String>,
    /// The model the agent reported.
    pub model: Option<String>,
    /// Model round trips, where counted.
    #[napi(js_name = "num_turns")]
    pub num_turns: Option<u32>,
    /// Milliseconds to the first text or reasoning.
    #[napi(js_name = "ttft_ms")]
    pub ttft_ms: Option<f64>,
    /// Milliseconds from start to end.
    #[napi(js_name = "duration_ms")]
    pub duration_ms: f64,
    /// Milliseconds spent generating, where reported or measured.
    #[napi(js_name = "generation_ms")]
    pub generation_ms: Option<f64>,
    /// Why the agent stopped.
    #[napi(js_name = "stop_reason")]
    pub stop_reason: Option<String>,
    /// The CLI's exit code (CLI agents).
    #[napi(js_name = "exit_code")]
    pub exit_code: Option<i32>,
    /// The sandbox the CLI ran under, as enforced (CLI agents).
    pub sandbox: Option<SandboxReport>,
    /// Model requests made (native agent).
    pub requests: Option<u32>,
    /// Tool calls the model made, run or not (native agent).
    #[napi(js_name = "tool_calls")]
    pub tool_calls: Option<u32>,
    /// How the tool calls were read (native agent).
    #[napi(js_name = "calls_read")]
    pub calls_read: Option<CallsRead>,
    /// The context window the turn was shaped for, in tokens (native agent).
    #[napi(js_name = "context_window")]
    pub context_window: Option<u32>,
}

/// How a native turn's tool calls were read (the core's
/// `coderig::agent::native::CallsRead`).
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct CallsRead {
    /// Structured calls whose arguments parsed as they came.
    pub structured: u32,
    /// Structured calls repaired or coerced to the tool's schema.
    pub repaired: u32,
    /// Calls recognized in the reply's text (XML, Hermes, fenced JSON).
    #[napi(js_name = "from_text")]
    pub from_text: u32,
    /// Calls that could not be read: answered with an error, never run.
    pub malformed: u32,
    /// Calls cut by the output-token limit: answered with an error, never run.
    pub cut: u32,
}

/// What was enforced on a process tree (the core's
/// `coderig::sandbox::SandboxReport`): recorded with every CLI turn,
/// command step attempt and oracle run.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct SandboxReport {
    /// The mode it ran under.
    #[napi(ts_type = "'enforce' | 'auto' | 'off'")]
    pub mode: String,
    /// Whether every part of the policy was enforced by the kernel.
    pub confined: bool,
    /// The Landlock ABI the kernel offered, when Landlock was used.
    #[napi(js_name = "landlock_abi")]
    pub landlock_abi: Option<u32>,
    /// How writes (and reads of hidden paths) were confined.
    #[napi(ts_type = "'landlock' | 'namespace' | 'none'")]
    pub filesystem: String,
    /// The writable paths, the private temp dir included.
    pub writable: Vec<String>,
    /// The hidden paths that exist (credential stores).
    pub hidden: Vec<String>,
    /// `allow`, `deny` or `loopback:PORT,...`.
    pub network: String,
    /// How the network policy was enforced.
    #[napi(
        js_name = "network_enforced_by",
        ts_type = "'landlock' | 'namespace' | 'none'"
    )]
    pub network_enforced_by: String,
    /// How the process tree is kept from outliving its use.
    #[napi(ts_type = "'landlock' | 'namespace' | 'none'")]
    pub processes: String,
    /// The limits applied (absent ones are inherited).
    #[napi(
        ts_type = "{ open_files?: number, processes?: number, file_size?: number, address_space?: number, tmp_size?: number }"
    )]
    pub limits: String,
    /// What `auto` could not enforce, each with why.
    pub unenforced: Vec<String>,
}

/// The `details` of the error `turn.wait()` rejects with when the turn
/// failed (`code` `AGENT`, or `UNAVAILABLE` when the agent cannot do what
/// the turn asks).
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct TurnErrorDetails {
    /// What failed.
    #[napi(
        js_name = "agent_error",
        ts_type = "'spawn' | 'timeout' | 'idle' | 'cancelled' | 'protocol' | 'provider' | 'exit' | 'unavailable'"
    )]
    pub agent_error: String,
    /// What to do about it.
    #[napi(ts_type = "'retry' | 'fallback' | 'stop' | 'fatal'")]
    pub class: String,
    /// The provider's HTTP status.
    #[napi(js_name = "http_status")]
    pub http_status: Option<u32>,
    /// How long the provider asked to wait before a retry.
    #[napi(js_name = "retry_after_ms")]
    pub retry_after_ms: Option<f64>,
    /// The CLI's exit code.
    #[napi(js_name = "exit_code")]
    pub exit_code: Option<i32>,
    /// The last lines of the CLI's stderr.
    #[napi(js_name = "stderr_tail")]
    pub stderr_tail: Option<String>,
}

/// One event of a turn, whatever the agent: a union on `type`. `usage`
/// events add up to the outcome's usage.
#[napi(
    discriminant_case = "snake_case",
    object_to_js = false,
    object_from_js = false
)]
pub enum AgentEvent {
    /// The agent's session began.
    SessionStarted {
        /// The session / thread id.
        #[napi(js_name = "session_id")]
        session_id: String,
        /// The model the agent says it runs.
        model: Option<String>,
    },
    /// Assistant text.
    TextDelta {
        /// The text.
        text: String,
    },
    /// Reasoning text.
    ReasoningDelta {
        /// The text.
        text: String,
    },
    /// The agent called a tool.
    ToolCall {
        /// The call id (pairs with `tool_result`'s).
        id: String,
        /// The tool's name as the agent spells it.
        name: String,
        /// The tool's input.
        #[napi(ts_type = "unknown")]
        input: String,
    },
    /// A tool call's result.
    ToolResult {
        /// The call id.
        id: String,
        /// Whether the tool succeeded.
        ok: bool,
        /// Its output.
        output: String,
    },
    /// Tokens (and cost) spent since the previous `usage` event.
    Usage {
        /// Uncached input tokens.
        input: f64,
        /// Output tokens.
        output: f64,
        /// Input tokens read from the cache.
        #[napi(js_name = "cache_read")]
        cache_read: f64,
        /// Input tokens written to the cache.
        #[napi(js_name = "cache_write")]
        cache_write: f64,
        /// Reasoning tokens.
        reasoning: f64,
        /// Cost in US dollars.
        #[napi(js_name = "cost_usd")]
        cost_usd: Option<f64>,
    },
    /// The agent reported the end of its turn.
    Finished {
        /// Why it stopped.
        #[napi(js_name = "stop_reason")]
        stop_reason: Option<String>,
        /// The final answer, where reported apart from the text.
        #[napi(js_name = "final_text")]
        final_text: Option<String>,
        /// Model round trips.
        #[napi(js_name = "num_turns")]
        num_turns: Option<u32>,
    },
    /// The agent or its provider reported an error.
    Error {
        /// What went wrong.
        message: String,
        /// What to do about it.
        #[napi(ts_type = "'retry' | 'fallback' | 'stop' | 'fatal'")]
        class: String,
        /// The provider's HTTP status.
        #[napi(js_name = "http_status")]
        http_status: Option<u32>,
    },
}
