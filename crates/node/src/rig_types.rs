//! The TypeScript shape of what a runtime call takes that the core has no
//! schema of: the options of `rig.runFlow` (its code steps' callables,
//! JavaScript functions).
//!
//! Types only (`object_to_js` / `object_from_js` off). Every other input
//! — the battle and flow specs, the filters of `rig.battles`, `rig.runs`
//! and `rig.leaderboard`, the options of `new Rig` and `rig.agents`, an
//! agent's table, a turn's options, an approval's decision — and what the
//! calls return, stream or pass (`TurnOutcome`, `BattleView`, `RunEvent`,
//! a code step's `CodeContext`, a failed turn's `TurnErrorDetails`, ...)
//! is generated from the core's schemas into `types/views.d.ts`
//! (`scripts/views-dts.mjs`), which heads `index.d.ts`.
//! `test/types.test.mjs` compiles them against real values.

use napi_derive::napi;

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
