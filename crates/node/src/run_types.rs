//! The TypeScript shapes of what the flow-run API takes: the runtime flow
//! spec of `rig.runFlow`, its options, the filter of `rig.runs`.
//!
//! Types only (`object_to_js` / `object_from_js` off), as in
//! [`crate::battle_types`]: specs are decoded by the core's
//! `FlowSpec::from_json` (or read from YAML/JSON text or a file). What runs
//! resolve to and stream (`RunView`, `StepView`, `RunPage`, `RunEvent`, ...)
//! is not declared here: `types/views.d.ts` is generated from the core's
//! schemas of its views (`scripts/views-dts.mjs`) and heads `index.d.ts`.
//! `test/flow_runtime.test.mjs` checks real objects against the types, and
//! `test/names.test.mjs` every string union against the core's lists.

use napi_derive::napi;

/// A step's retry policy (`retry` of a step).
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct RetrySpec {
    /// Attempts in all, 1 to 100 (default 1: no retry).
    #[napi(js_name = "max_attempts", ts_type = "number | null")]
    pub max_attempts: Option<u32>,
    /// The wait before the first retry (seconds or `'1s'`; default 1 s).
    #[napi(ts_type = "number | string | null")]
    pub initial: Option<String>,
    /// Each next wait is the last one times this, at least 1 (default 2).
    #[napi(ts_type = "number | null")]
    pub multiplier: Option<f64>,
    /// The longest wait (default 5 min).
    #[napi(ts_type = "number | string | null")]
    pub max: Option<String>,
    /// Which endings are retried (default both).
    #[napi(ts_type = "Array<'failure' | 'timeout'> | null")]
    pub on: Option<String>,
}

/// One case of a switch step.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct RunCaseSpec {
    /// The case's name (the switch's result when it is taken).
    pub label: String,
    /// When it is taken: a CEL expression over `{input, results, steps,
    /// iteration}` (`results["check"].ok`).
    pub condition: String,
    /// Every step of its branch.
    pub steps: Vec<String>,
}

/// One step of a runtime flow spec (DESIGN "flow runtime"): the common
/// fields, then the fields of its `kind`. A field of another kind is
/// refused (`INVALID_INPUT` naming the kind that has it).
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct RunStepSpec {
    /// Unique id (`[A-Za-z0-9_-]`, hyphens allowed).
    pub id: String,
    /// What the step does.
    #[napi(ts_type = "'agent' | 'command' | 'code' | 'approval' | 'switch' | 'do_while'")]
    pub kind: String,
    /// The steps it waits for.
    #[napi(ts_type = "string[] | null")]
    pub deps: Option<String>,
    /// How its dependencies' outcomes decide whether it runs (default
    /// `'all_success'`).
    #[napi(
        js_name = "trigger_rule",
        ts_type = "'all_success' | 'all_failed' | 'all_done' | 'all_skipped' | 'one_success' | 'one_failed' | 'one_done' | 'none_failed' | 'none_failed_min_one_success' | 'none_skipped' | 'always' | null"
    )]
    pub trigger_rule: Option<String>,
    /// The batch group it belongs to (see `batch_config`).
    #[napi(ts_type = "string | null")]
    pub batch: Option<String>,
    /// Time limit per attempt (seconds or `'5m'`).
    #[napi(ts_type = "number | string | null")]
    pub timeout: Option<String>,
    /// The retry policy.
    #[napi(ts_type = "RetrySpec | null")]
    pub retry: Option<String>,
    /// A CEL launch guard: the step is skipped (`condition_false`) when false.
    #[napi(ts_type = "string | null")]
    pub when: Option<String>,
    /// agent: the configured agent's identity.
    #[napi(ts_type = "string | null")]
    pub agent: Option<String>,
    /// agent: the model (default: the agent's).
    #[napi(ts_type = "string | null")]
    pub model: Option<String>,
    /// agent: the prompt, a minijinja template (`{{ results["plan"] }}`).
    #[napi(ts_type = "string | null")]
    pub prompt: Option<String>,
    /// agent: what it may do (default `'read_only'`).
    #[napi(ts_type = "'read_only' | 'edit' | 'full' | null")]
    pub access: Option<String>,
    /// agent: its working directory, a template.
    #[napi(ts_type = "string | null")]
    pub workdir: Option<String>,
    /// command: the program and its arguments (no shell), each a template.
    #[napi(ts_type = "string[] | null")]
    pub argv: Option<String>,
    /// command: a `sh -c` command line, a template (not with `argv`).
    #[napi(ts_type = "string | null")]
    pub shell: Option<String>,
    /// command: the working directory, a template (under the rig's
    /// `projectRoots` when it has some).
    #[napi(ts_type = "string | null")]
    pub cwd: Option<String>,
    /// command: extra environment variables; the values are templates.
    #[napi(ts_type = "Record<string, string> | null")]
    pub env: Option<String>,
    /// command: what the step states about its sandbox (default: it writes
    /// only its `cwd` and a private TMPDIR, no network but its own
    /// loopback, under the rig's sandbox mode): `mode`, `network` (`allow`,
    /// `deny`, `loopback:PORT[,PORT...]`), extra `writable` and `readable`
    /// absolute paths (existing; writable ones under the rig's
    /// `projectRoots` when it has some), `limits`. Not templates.
    #[napi(
        ts_type = "{ mode?: 'enforce' | 'auto' | 'off' | null; network?: string | null; writable?: string[] | null; readable?: string[] | null; limits?: { open_files?: number | null; processes?: number | null; file_size?: number | null; address_space?: number | null; tmp_size?: number | null } | null } | null"
    )]
    pub sandbox: Option<String>,
    /// approval: what the approver is asked, a template.
    #[napi(ts_type = "string | null")]
    pub message: Option<String>,
    /// switch: the cases, tried in order.
    #[napi(ts_type = "Array<RunCaseSpec> | null")]
    pub cases: Option<String>,
    /// switch: the steps run when no case is taken.
    #[napi(ts_type = "string[] | null")]
    pub default: Option<String>,
    /// do_while: the steps of each iteration.
    #[napi(ts_type = "string[] | null")]
    pub body: Option<String>,
    /// do_while: CEL, iterate again while it is true.
    #[napi(ts_type = "string | null")]
    pub condition: Option<String>,
    /// do_while: the iteration cap (1 to 10,000).
    #[napi(js_name = "max_iterations", ts_type = "number | null")]
    pub max_iterations: Option<u32>,
}

/// The limits of a flow's batch groups.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct RunBatchConfig {
    /// At most this many steps of a group run at once.
    #[napi(js_name = "max_concurrent", ts_type = "number | null")]
    pub max_concurrent: Option<u32>,
    /// When a group as a whole has succeeded (a trigger rule).
    #[napi(
        js_name = "join_rule",
        ts_type = "'all_success' | 'all_failed' | 'all_done' | 'all_skipped' | 'one_success' | 'one_failed' | 'one_done' | 'none_failed' | 'none_failed_min_one_success' | 'none_skipped' | 'always' | null"
    )]
    pub join_rule: Option<String>,
}

/// A runtime flow spec as `rig.runFlow` takes it as an object: the JSON
/// form of a flow YAML file (snake_case keys, as in the file).
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct RunSpec {
    /// The flow's name (`[A-Za-z0-9_.-]`).
    #[napi(ts_type = "string | null")]
    pub name: Option<String>,
    /// What it is for.
    #[napi(ts_type = "string | null")]
    pub description: Option<String>,
    /// The steps, in flow order.
    #[napi(ts_type = "Array<RunStepSpec>")]
    pub steps: Vec<String>,
    /// A minijinja template rendered into the run's report when it ends.
    #[napi(ts_type = "string | null")]
    pub report: Option<String>,
    /// The batch groups' limits.
    #[napi(js_name = "batch_config", ts_type = "RunBatchConfig | null")]
    pub batch_config: Option<String>,
}

/// What a code step's callable gets: the run's input and its own
/// dependencies' results and states (a JSON copy).
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct CodeContext {
    /// The run's input.
    #[napi(ts_type = "Record<string, unknown>")]
    pub input: String,
    /// The results of its dependencies, by step id.
    #[napi(ts_type = "Record<string, unknown>")]
    pub results: String,
    /// The states of its dependencies, by step id: `{status, attempt,
    /// exit_code?, error?}`.
    #[napi(ts_type = "Record<string, Record<string, unknown>>")]
    pub steps: String,
    /// The loop iteration (0 outside loops).
    pub iteration: u32,
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

/// Who decides an approval, and why (`run.approve(step, decision)`).
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct Decision {
    /// Who (free text).
    #[napi(ts_type = "string | null")]
    pub by: Option<String>,
    /// A comment.
    #[napi(ts_type = "string | null")]
    pub comment: Option<String>,
}

/// Which runs `rig.runs(filter)` lists.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct RunFilter {
    /// Only runs in this status.
    #[napi(ts_type = "'running' | 'waiting' | 'completed' | 'failed' | 'cancelled' | null")]
    pub status: Option<String>,
    /// At most this many (1–500, default 50).
    #[napi(ts_type = "number | null")]
    pub limit: Option<u32>,
    /// The previous page's `next_cursor`.
    #[napi(ts_type = "string | null")]
    pub cursor: Option<String>,
}
