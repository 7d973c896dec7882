//! `FlowSpec`: the runtime flow spec, written in YAML or JSON, with CEL
//! conditions and minijinja templates (feature `flows`).
//!
//! ```yaml
//! name: fix-until-green
//! steps:
//!   - id: plan
//!     kind: agent
//!     agent: claude
//!     prompt: "Plan a fix for: {{ input.issue }}"
//!   - id: tests
//!     kind: command
//!     deps: [plan]
//!     shell: "python3 -m pytest -q"
//!     timeout: 5m
//!     retry: {max_attempts: 3, initial: 1s, multiplier: 2, on: [timeout]}
//!   - id: route
//!     kind: switch
//!     deps: [tests]
//!     cases: [{label: green, condition: 'results["tests"].contains("passed")', steps: [ship]}]
//!     default: [review]
//!   - {id: ship, kind: approval, deps: [route], message: "Ship it?"}
//!   - {id: review, kind: agent, deps: [route], agent: claude, prompt: "{{ results.tests }}"}
//! report: "{{ results.plan }}"
//! ```
//!
//! Guarantees of [`FlowSpec::from_json`] (and so of every text form):
//! - every problem of the spec is reported at once, in one `invalid_input`
//!   error: its message joins them (`` `path`: problem``, `; `-separated,
//!   in a stable order: per step, its id, kind and keys, then its fields), `details.problems` lists them as `{path, message}`
//!   and `details.path` is the first one's path (`steps[2].retry.multiplier`);
//! - unknown keys are refused at every level, naming the expected ones; a key
//!   of another step kind is refused naming the kind that has it
//!   (`` `steps[1].shell`: only a command step has `shell` ``); `null` is "not
//!   given";
//! - `name` is 1 to 100 of `[A-Za-z0-9_.-]`, a step `id` 1 to 100 of
//!   `[A-Za-z0-9_-]` (hyphens allowed); 1 to [`MAX_FLOW_STEPS`] steps;
//! - strings that are read (prompts, commands, ids, conditions) are not
//!   blank; durations are seconds (a number) or strings such as `"90s"`,
//!   `"20m"`, `"500ms"`.
//!
//! Cross-step rules (unknown dependencies, duplicate ids, cycles, case steps
//! that do not exist) and the syntax of conditions and templates are checked
//! by [`FlowSpec::compile`], which again reports every problem with its path.
//!
//! # Evaluation context
//!
//! Conditions (CEL) and templates (minijinja) are evaluated over the JSON
//! value the engine builds: `{"input": {...}, "results": {step_id: value},
//! "steps": {step_id: {"status", "attempt", "exit_code"?, "error"?}},
//! "iteration": N}`. Hyphenated ids are reached by index:
//! `results["angle-web"]` in both languages.

mod canonical;
mod compile;
mod decode;
mod expr;
#[cfg(feature = "openapi")]
mod schema;
mod text;

pub use compile::{CompiledFlow, RenderedAction};

use crate::agent::Access;
use crate::flow::{BatchConfig, TriggerRule};
use crate::names::macros::named_enum;
use crate::sandbox::SandboxOverrides;
use std::collections::BTreeMap;
use std::time::Duration;

/// The most steps a flow spec may have.
pub const MAX_FLOW_STEPS: usize = 20_000;

/// A runtime flow spec, decoded strictly ([`FlowSpec::from_json`]).
///
/// Guarantees: every field passed the per-field checks of the module docs;
/// `steps` is non-empty and at most [`MAX_FLOW_STEPS`] long. Cross-step
/// consistency is what [`FlowSpec::compile`] checks.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowSpec {
    /// The flow's name (`[A-Za-z0-9_.-]`, 1 to 100 characters).
    pub name: Option<String>,
    /// What the flow is for.
    pub description: Option<String>,
    /// The steps, in flow order.
    pub steps: Vec<StepSpec>,
    /// A minijinja template rendered into the run's report.
    pub report: Option<String>,
    /// Concurrency limits of the batch groups.
    pub batch_config: BatchConfig,
}

/// One step of a [`FlowSpec`].
#[derive(Debug, Clone, PartialEq)]
pub struct StepSpec {
    /// Unique id (`[A-Za-z0-9_-]`, 1 to 100 characters).
    pub id: String,
    /// The steps this one waits for.
    pub deps: Vec<String>,
    /// How the dependencies' outcomes decide whether it runs (default `all_success`).
    pub trigger_rule: TriggerRule,
    /// The batch group it belongs to.
    pub batch: Option<String>,
    /// Time limit per attempt (more than zero when given).
    pub timeout: Option<Duration>,
    /// The retry policy (default: one attempt).
    pub retry: RetrySpec,
    /// A CEL launch guard: the step is excluded when it is false.
    pub when: Option<String>,
    /// What the step does.
    pub action: StepAction,
}

/// What a step does, with the fields of its kind.
#[derive(Debug, Clone, PartialEq)]
pub enum StepAction {
    /// An agent turn.
    Agent(AgentAction),
    /// A process (argv or shell); its stdout is the result, a non-zero exit fails.
    Command(CommandAction),
    /// A native callable registered by the caller (Rust, Python or Node API only).
    Code,
    /// Waits for a human's approve or reject.
    Approval(ApprovalAction),
    /// Chooses one branch.
    Switch(SwitchAction),
    /// Runs its body while its condition holds (at least once).
    DoWhile(DoWhileAction),
}

/// The kind of a step of a runtime flow: the scheduler's step kinds
/// ([`crate::flow::StepKind`]) and `command`. What a spec's `kind` names and
/// what a run's `StepView.kind` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RunStepKind {
    /// An agent turn.
    Agent,
    /// A process.
    Command,
    /// A native callable of the caller.
    Code,
    /// A human's approve or reject.
    Approval,
    /// One branch chosen.
    Switch,
    /// A loop.
    DoWhile,
}
named_enum!(RunStepKind, "run step kind", {
    Agent => "agent",
    Command => "command",
    Code => "code",
    Approval => "approval",
    Switch => "switch",
    DoWhile => "do_while",
});

impl StepAction {
    /// The step's kind.
    pub fn run_step_kind(&self) -> RunStepKind {
        match self {
            StepAction::Agent(_) => RunStepKind::Agent,
            StepAction::Command(_) => RunStepKind::Command,
            StepAction::Code => RunStepKind::Code,
            StepAction::Approval(_) => RunStepKind::Approval,
            StepAction::Switch(_) => RunStepKind::Switch,
            StepAction::DoWhile(_) => RunStepKind::DoWhile,
        }
    }

    /// The wire name of the kind: `"agent"`, `"command"`, `"code"`,
    /// `"approval"`, `"switch"` or `"do_while"` ([`RunStepKind::as_str`]).
    pub fn kind(&self) -> &'static str {
        self.run_step_kind().as_str()
    }
}

/// An agent step.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentAction {
    /// The configured agent's identity (not blank).
    pub agent: String,
    /// The model, when not the agent's default.
    pub model: Option<String>,
    /// The prompt, a template (not blank).
    pub prompt: String,
    /// What the agent may do (default read-only).
    pub access: Access,
    /// The work dir, a template.
    pub workdir: Option<String>,
}

/// A command step.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandAction {
    /// What to run.
    pub program: CommandProgram,
    /// The working directory, a template.
    pub cwd: Option<String>,
    /// Extra environment variables; the values are templates.
    pub env: BTreeMap<String, String>,
    /// What the step states about its sandbox (default: nothing, so the
    /// command may write only in its `cwd` and its private `TMPDIR`, with
    /// no network but its own loopback, under the registry's mode): `mode`,
    /// `network`, extra `writable` and `readable` paths (absolute; whether
    /// they exist and lie under the project roots is checked when a run
    /// starts), `limits` (each 1 to [`MAX_SANDBOX_LIMIT`]). Not templates.
    pub sandbox: SandboxOverrides,
}

/// The process of a command step.
#[derive(Debug, Clone, PartialEq)]
pub enum CommandProgram {
    /// A program and its arguments, no shell; non-empty, each a template.
    Argv(Vec<String>),
    /// A `sh -c` command line, a template.
    Shell(String),
}

/// An approval step.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalAction {
    /// What the approver is asked, a template.
    pub message: Option<String>,
}

/// A switch step.
#[derive(Debug, Clone, PartialEq)]
pub struct SwitchAction {
    /// The cases, tried in order; the first true one is taken.
    pub cases: Vec<CaseSpec>,
    /// The steps run when no case is true.
    pub default: Vec<String>,
}

/// One case of a switch.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseSpec {
    /// The case's name (not blank).
    pub label: String,
    /// When it is taken, CEL.
    pub condition: String,
    /// Every step of its branch.
    pub steps: Vec<String>,
}

/// A do-while step.
#[derive(Debug, Clone, PartialEq)]
pub struct DoWhileAction {
    /// The steps of each iteration (non-empty).
    pub body: Vec<String>,
    /// CEL: iterate again while it is true (evaluated after each iteration).
    pub condition: String,
    /// The iteration cap, 1 to 10,000 (default [`crate::flow::DEFAULT_LOOP_MAX_ITERATIONS`]).
    pub max_iterations: u32,
}

/// When and how a failed or timed-out attempt is retried.
#[derive(Debug, Clone, PartialEq)]
pub struct RetrySpec {
    /// Attempts in all, 1 to 100 (1: no retry).
    pub max_attempts: u32,
    /// The wait before the first retry (default 1 s).
    pub initial: Duration,
    /// Each next wait is the last one times this, at least 1 (default 2).
    pub multiplier: f64,
    /// The longest wait (default 5 min), at least `initial`.
    pub max: Duration,
    /// Which endings are retried (default both; non-empty, no repeats).
    pub on: Vec<RetryOn>,
}

/// The retry policy's default wait before the first retry.
pub const DEFAULT_RETRY_INITIAL: Duration = Duration::from_secs(1);
/// The retry policy's default longest wait.
pub const DEFAULT_RETRY_MAX: Duration = Duration::from_secs(300);
/// The most attempts a retry policy may allow.
pub const MAX_RETRY_ATTEMPTS: u32 = 100;
/// The highest `max_iterations` of a do-while.
pub const MAX_LOOP_ITERATIONS: u32 = 10_000;
/// The highest value of each of a command step's `sandbox.limits`
/// (2^53 − 1: every integer up to it is exact as a JSON number, so the
/// decoder and the JSON schema agree on every value).
pub const MAX_SANDBOX_LIMIT: u64 = (1 << 53) - 1;

impl Default for RetrySpec {
    fn default() -> Self {
        RetrySpec {
            max_attempts: 1,
            initial: DEFAULT_RETRY_INITIAL,
            multiplier: 2.0,
            max: DEFAULT_RETRY_MAX,
            on: vec![RetryOn::Failure, RetryOn::Timeout],
        }
    }
}

/// An ending of an attempt that a retry policy may retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RetryOn {
    /// The attempt failed (an error, a non-zero exit).
    Failure,
    /// The attempt ran past its timeout.
    Timeout,
}
named_enum!(RetryOn, "retry ending", {
    Failure => "failure",
    Timeout => "timeout",
});
