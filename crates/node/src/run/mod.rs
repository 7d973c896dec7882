//! Flow runs for JavaScript: `rig.runFlow(spec, input, {code})` → `Run`,
//! `rig.run(id)`, `rig.runs(filter)`.
//!
//! A thin face of the core rig's flow [`Engine`]: the first battle or run
//! call opens the rig's core [`coderig::rig::Rig`] ([`crate::rig`]), whose
//! engine drives the runs (its own, and any run of the store it claims, as
//! a server's does), and a `Run` holds that core rig and its id. The
//! process `exit` listener (`exit.rs`) shuts the core rig down,
//! leaving live runs to be resumed by lease. `run.events()` and
//! `run.wait()` follow the run with the core's `Watch`
//! (`events.rs`).
//!
//! - A spec is a [`FlowSpec`]: an object (the JSON form of a flow file,
//!   snake_case keys), YAML or JSON text, or the path of a `.yaml`, `.yml`
//!   or `.json` file (a one-line string with that ending). A bad spec
//!   rejects with `INVALID_INPUT`, `details.path` its first problem's path
//!   and `details.problems` every `{path, message}`; nothing is created.
//! - `code` steps run JS functions, `{stepId: (ctx) => value}`
//!   (the `code` room).
//! - Results are the core's serde JSON (`RunView`, `StepView`, `RunPage`,
//!   events), the objects the server, the CLI and Python show. Every
//!   method returns a Promise rejected with the one JS form of a
//!   [`coderig::Error`]: `CONFLICT` for a state that does not allow the
//!   call (cancelling an ended run, approving a step that is not
//!   waiting), `NOT_FOUND_ID` for an unknown run or step.

mod code;

use crate::events::WatchEvents;
use crate::helpers::{arg, promise, to_json, with_args, Res};
use crate::rig::{options_json, to_value, Rig};
use code::decode_code;
use coderig::flow::engine::{Decision, Engine, FlowSource, NewRun, RunFilter};
use coderig::flow::FlowSpec;
use coderig::rig::{Rig as CoreRig, Subject};
use coderig::Error;
use napi::bindgen_prelude::{FromNapiValue, PromiseRaw, Unknown};
use napi::{Env, ValueType};
use napi_derive::napi;
use serde_json::Value;
use std::future::Future;
use std::path::Path;

// ---------------------------------------------------------------------------
// Arguments
// ---------------------------------------------------------------------------

/// A one-line string ending in `.yaml`, `.yml` or `.json` names a file;
/// any other string is the spec's text.
fn spec_path(text: &str) -> Option<&Path> {
    let lower = text.to_ascii_lowercase();
    let is_file = !text.contains('\n')
        && [".yaml", ".yml", ".json"]
            .iter()
            .any(|ext| lower.ends_with(ext));
    is_file.then(|| Path::new(text))
}

/// `spec` as the core's `FlowSpec`: an object, YAML/JSON text or a path.
fn decode_spec(env: &Env, spec: Unknown) -> Res<FlowSpec> {
    if spec.get_type()? == ValueType::String {
        let text = String::from_unknown(spec)?;
        return Ok(match spec_path(&text) {
            Some(path) => FlowSpec::load(path)?,
            None => FlowSpec::parse(&text)?,
        });
    }
    // The spec's own paths (`steps[0].kind`), as the server reports them.
    Ok(FlowSpec::from_json(&to_json(env, spec, "")?)?)
}

// ---------------------------------------------------------------------------
// Rig
// ---------------------------------------------------------------------------

#[napi]
impl Rig {
    /// Checks and starts a run of `spec` with `input` (an object; `null`:
    /// `{}`) and resolves to its `Run`, `running`. `spec` is a `RunSpec`
    /// object, YAML or JSON text, or the path of a `.yaml` / `.yml` /
    /// `.json` file. `options.code` gives the function of every `code`
    /// step, `{stepId: (ctx) => value | Promise<value>}`. Opens the rig's
    /// core rig on first use. Rejects with `INVALID_INPUT` when the core
    /// refuses the spec (`details.problems`: every `{path, message}`, e.g.
    /// an unknown field, a cycle, a bad CEL condition), an agent step names
    /// an unknown identity, a code step has no function (or a function
    /// names no code step), or the input is not an object — and then
    /// nothing is created; `IO` for a spec file that cannot be read.
    #[napi(ts_return_type = "Promise<Run>")]
    pub fn run_flow<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "RunSpec | string")] spec: Unknown,
        #[napi(ts_arg_type = "Record<string, unknown> | null")] input: Option<Unknown>,
        #[napi(ts_arg_type = "RunFlowOptions | null")] options: Option<Unknown>,
    ) -> napi::Result<PromiseRaw<'env, Run>> {
        with_args(
            env,
            || {
                let spec = decode_spec(env, spec)?;
                let input = to_json(env, input, "input")?;
                let code = decode_code(options)?;
                Ok(NewRun {
                    flow: FlowSource::Spec(spec),
                    input,
                    code,
                })
            },
            |run| {
                let open = self.open();
                promise(
                    env,
                    async move {
                        let rig = open.await?;
                        let id = rig.engine().start_run(run).await?;
                        Ok(Run { id, rig })
                    },
                    |run| run,
                )
            },
        )
    }

    /// The run `id` (rejects with `NOT_FOUND_ID` when there is none). Its
    /// `code` steps run only in the process that started it.
    #[napi(ts_return_type = "Promise<Run>")]
    pub fn run<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "string")] id: Unknown,
    ) -> napi::Result<PromiseRaw<'env, Run>> {
        with_args(
            env,
            || arg::<String>(env, "id", id),
            |id| {
                let open = self.open();
                promise(
                    env,
                    async move {
                        let rig = open.await?;
                        let view = rig.engine().run(&id).await?;
                        Ok(Run { id: view.id, rig })
                    },
                    |run| run,
                )
            },
        )
    }

    /// Runs, newest first, one page at a time: `filter.status`,
    /// `filter.limit` (1–500, default 50), `filter.cursor` (the previous
    /// page's `next_cursor`).
    #[napi(ts_return_type = "Promise<RunPage>")]
    pub fn runs<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "RunFilter | null")] filter: Option<Unknown>,
    ) -> napi::Result<PromiseRaw<'env, Value>> {
        with_args(
            env,
            || {
                let filter: RunFilter = coderig::json::decode_object(options_json(env, filter)?)?;
                Ok(filter)
            },
            |filter| {
                let open = self.open();
                promise(
                    env,
                    async move { open.await?.engine().list_runs(&filter).await },
                    |page| to_value(&page),
                )
            },
        )
    }
}

// ---------------------------------------------------------------------------
// Run
// ---------------------------------------------------------------------------

/// One flow run: its id and the calls on it, on the core rig that holds
/// it.
#[napi]
pub struct Run {
    id: String,
    rig: CoreRig,
}

impl Run {
    /// A Promise of `call` on this run's engine, resolved with its JSON.
    fn call<'env, T, F>(
        &self,
        env: &'env Env,
        call: impl FnOnce(Engine, String) -> F,
    ) -> napi::Result<PromiseRaw<'env, Value>>
    where
        T: serde::Serialize + Send + 'static,
        F: Future<Output = Result<T, Error>> + Send + 'static,
    {
        let work = call(self.rig.engine().clone(), self.id.clone());
        promise(env, work, |value| to_value(&value))
    }

    /// `run.approve` / `run.reject`.
    fn decide<'env>(
        &self,
        env: &'env Env,
        approve: bool,
        step: Unknown,
        decision: Option<Unknown>,
    ) -> napi::Result<PromiseRaw<'env, Value>> {
        with_args(
            env,
            || {
                let step = arg::<String>(env, "step", step)?;
                let decision: Decision =
                    coderig::json::decode_object(options_json(env, decision)?)?;
                Ok((step, decision))
            },
            |(step, decision)| {
                self.call(env, move |engine, id| async move {
                    if approve {
                        engine.approve(&id, &step, decision).await
                    } else {
                        engine.reject(&id, &step, decision).await
                    }
                })
            },
        )
    }
}

#[napi]
impl Run {
    /// The run's id.
    #[napi(getter)]
    pub fn id(&self) -> String {
        self.id.clone()
    }

    /// The run as it is now (`RunView`: status, input, every step with its
    /// status, attempt, skip reason, output, error and timings, the
    /// report once it ended).
    #[napi(ts_return_type = "Promise<RunView>")]
    pub fn info<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, Value>> {
        self.call(env, |engine, id| async move { engine.run(&id).await })
    }

    /// Resolves to the run once it ended (`completed`, `failed` or
    /// `cancelled`, every step final), as the core's `Watch` ends: the run
    /// is read a bounded number of times, not per event. With `timeoutMs`, rejects when it has not ended by
    /// then: a `TimeoutError` (`name`) of code `UNAVAILABLE` with `details`
    /// `{reason: 'timeout', run_id, status, timeout_ms}` (a run `waiting`
    /// on an approval waits until someone decides). Like any pending I/O,
    /// a pending `wait()` keeps Node running.
    #[napi(ts_return_type = "Promise<RunView>")]
    pub fn wait<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "number | null")] timeout_ms: Option<Unknown>,
    ) -> napi::Result<PromiseRaw<'env, Value>> {
        crate::events::wait(env, &self.rig, Subject::Run(self.id.clone()), timeout_ms)
    }

    /// The run's events as an async iterator (`for await (const e of
    /// run.events())`): first its stored history from the store
    /// (`run_updated` and `step_updated`, each with `seq` and `epoch`), then
    /// its events as they happen (the stored ones and agent steps' live
    /// `agent_output`, which has no `seq`). Ends right after the
    /// `run_updated` that ends the run, which comes after every step's
    /// final `step_updated` (a cancelled run's steps' `cancelled` too; for
    /// a run already ended: after its history). Each iterator is
    /// independent; leaving the loop early stops nothing.
    #[napi(ts_return_type = "AsyncIterable<RunEvent>")]
    pub fn events(&self) -> WatchEvents {
        WatchEvents::new(&self.rig, Subject::Run(self.id.clone()))
    }

    /// Cancels a live run: it is `cancelled` at once, its running steps
    /// are stopped (commands' process groups killed) and the rest marked
    /// `cancelled`. Resolves to the run. An ended run rejects with
    /// `CONFLICT`.
    #[napi(ts_return_type = "Promise<RunView>")]
    pub fn cancel<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, Value>> {
        self.call(env, |engine, id| async move { engine.cancel(&id).await })
    }

    /// Approves the approval step `step`, which must be `waiting`: it is
    /// `done` with the decision (`{by, comment}`, both optional) as its
    /// output, and the run goes on. Resolves to the step. Rejects with
    /// `CONFLICT` when the step is not waiting (or is no approval),
    /// `NOT_FOUND_ID` for an unknown step.
    #[napi(ts_return_type = "Promise<StepView>")]
    pub fn approve<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "string")] step: Unknown,
        #[napi(ts_arg_type = "Decision | null")] decision: Option<Unknown>,
    ) -> napi::Result<PromiseRaw<'env, Value>> {
        self.decide(env, true, step, decision)
    }

    /// Rejects the approval step `step`: it `failed` with the decision
    /// recorded, and the trigger rules decide what runs next. Refusals as
    /// `approve`.
    #[napi(ts_return_type = "Promise<StepView>")]
    pub fn reject<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "string")] step: Unknown,
        #[napi(ts_arg_type = "Decision | null")] decision: Option<Unknown>,
    ) -> napi::Result<PromiseRaw<'env, Value>> {
        self.decide(env, false, step, decision)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_strings_with_a_spec_extension_are_paths() {
        for (text, path) in [
            ("flows/a.yaml", true),
            ("A.YML", true),
            ("/tmp/x.json", true),
            ("steps:\n  - {id: a, kind: code}\n# a.yaml", false),
            ("{\"steps\": []}", false),
            ("name: x", false),
            ("flow.txt", false),
        ] {
            assert_eq!(spec_path(text).is_some(), path, "{text:?}");
        }
    }
}
