//! `FlowSpec::compile`: CEL conditions and minijinja templates compiled,
//! the scheduler's `Flow` built and validated, every problem with its path.

use super::*;
use crate::error::Error;
use crate::flow::Flow;
use serde_json::Value;
use std::sync::Arc;

/// A [`FlowSpec`] whose conditions and templates compiled and whose
/// scheduler [`Flow`] validated ([`FlowSpec::compile`]).
///
/// Cheap to clone (one `Arc`), `Send + Sync`.
#[derive(Clone)]
pub struct CompiledFlow {
    inner: Arc<Inner>,
}

struct Inner {
    spec: FlowSpec,
    flow: Flow,
}

impl std::fmt::Debug for CompiledFlow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledFlow")
            .field("name", &self.inner.spec.name)
            .field("steps", &self.inner.spec.steps.len())
            .finish_non_exhaustive()
    }
}

/// A step's action with every template rendered ([`CompiledFlow::render_action`]).
#[derive(Debug, Clone, PartialEq)]
pub enum RenderedAction {
    /// An agent turn to run.
    Agent {
        /// The agent's identity.
        agent: String,
        /// The model, when given.
        model: Option<String>,
        /// The rendered prompt.
        prompt: String,
        /// What the agent may do.
        access: Access,
        /// The rendered work dir.
        workdir: Option<String>,
    },
    /// A process to run.
    Command {
        /// The rendered argv or shell line.
        program: CommandProgram,
        /// The rendered working directory.
        cwd: Option<String>,
        /// The rendered environment.
        env: BTreeMap<String, String>,
    },
    /// A native callable (nothing to render).
    Code,
    /// An approval to wait for.
    Approval {
        /// The rendered message.
        message: Option<String>,
    },
    /// A switch (decided by [`CompiledFlow::switch_choice`]).
    Switch,
    /// A do-while (iterated by [`CompiledFlow::loop_continues`]).
    DoWhile,
}

impl FlowSpec {
    /// Compiles every condition and template and builds the scheduler's
    /// [`Flow`]; every problem of the whole spec with its path, in one
    /// `invalid_input` error.
    pub fn compile(&self) -> Result<CompiledFlow, Error> {
        Err(Error::internal("FlowSpec::compile is not built yet"))
    }
}

impl CompiledFlow {
    /// The spec it was compiled from.
    pub fn spec(&self) -> &FlowSpec {
        &self.inner.spec
    }

    /// The scheduler's flow, conditions attached.
    pub fn flow(&self) -> &Flow {
        &self.inner.flow
    }

    /// The step with this id.
    pub fn step(&self, id: &str) -> Option<&StepSpec> {
        self.inner.spec.steps.iter().find(|s| s.id == id)
    }

    /// The step's `when` over `ctx`; true when it has none.
    pub fn when(&self, step: &str, ctx: &Value) -> Result<bool, Error> {
        let _ = (step, ctx);
        Err(Error::internal("not built yet"))
    }

    /// The label of the switch's first true case, `None` when none is.
    pub fn switch_choice(&self, step: &str, ctx: &Value) -> Result<Option<String>, Error> {
        let _ = (step, ctx);
        Err(Error::internal("not built yet"))
    }

    /// The do-while's condition over `ctx`: true to iterate again.
    pub fn loop_continues(&self, step: &str, ctx: &Value) -> Result<bool, Error> {
        let _ = (step, ctx);
        Err(Error::internal("not built yet"))
    }

    /// Every template of the step rendered over `ctx`.
    pub fn render_action(&self, step: &str, ctx: &Value) -> Result<RenderedAction, Error> {
        let _ = (step, ctx);
        Err(Error::internal("not built yet"))
    }

    /// The report template rendered over `ctx`; `None` when the spec has none.
    pub fn render_report(&self, ctx: &Value) -> Result<Option<String>, Error> {
        let _ = ctx;
        Err(Error::internal("not built yet"))
    }
}
