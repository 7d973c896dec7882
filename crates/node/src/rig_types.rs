//! The TypeScript shapes of what the runtime's calls take that the core
//! has no input schema of: the options of `rig.agents` and `rig.runFlow`
//! (its code steps' callables), and the details of a failed turn.
//!
//! Types only (`object_to_js` / `object_from_js` off): inputs are decoded
//! by the core's decoders. The battle and flow specs, the filters of
//! `rig.battles`, `rig.runs` and `rig.leaderboard`, the options of `new
//! Rig`, an agent's table, a turn's options and an approval's decision
//! (`BattleSpec`, `RunSpec`, `BattleFilter`, `RigOptions`, `AgentSpec`,
//! `TurnOptions`, `Decision`, ...) and what the calls return and stream
//! (`TurnOutcome`, `AgentEvent`, `BattleView`, `RunEvent`, a code step's
//! `CodeContext`, ...) are not declared here: `types/views.d.ts` is
//! generated from the core's schemas (`scripts/views-dts.mjs`) and heads
//! `index.d.ts`. `test/rig.test.mjs` and `test/flow_runtime.test.mjs`
//! check real values against the types, and `test/names.test.mjs` every
//! string union against the core's lists.

use napi_derive::napi;

/// What `rig.agents(options)` takes.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct AgentsOptions {
    /// How long an HTTP agent may take to list its models (seconds or a
    /// duration string; default 2 s).
    #[napi(ts_type = "number | string | null")]
    pub probe_timeout: Option<String>,
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

/// The options of `rig.runFlow(spec, input, options)`.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct RunFlowOptions {
    /// The callable of every `code` step, by step id: called on the JS
    /// thread with the step's context; its value (or what its Promise
    /// resolves to) is the step's result, a JSON value. A throw or a
    /// rejection fails the attempt with its message (retried by the
    /// step's `retry`).
    #[napi(ts_type = "Record<string, (ctx: CodeContext) => unknown | Promise<unknown>> | null")]
    pub code: Option<String>,
}
