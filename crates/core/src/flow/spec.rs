//! The declarative flow: steps, their kinds, trigger rules, batches, cases.
//!
//! Everything here is plain data plus [`Condition`] closures. The data part is
//! serde-serializable; conditions are skipped by serde (a deserialized flow
//! has none until the caller attaches them, e.g. the server's small condition
//! language or a binding's callables).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::sync::Arc;

use crate::names::macros::named_enum;
pub use crate::names::macros::ParseNameError;

/// What a step does; the scheduler treats `switch` and `do_while` specially.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StepKind {
    /// Runs an agent (model) turn.
    Agent,
    /// Runs code (a function, a command).
    Code,
    /// Waits for a human approval.
    Approval,
    /// Chooses one of its [`Case`]s; the others' steps are excluded.
    Switch,
    /// Runs its loop body repeatedly until its condition is false or the cap is hit.
    DoWhile,
}
named_enum!(StepKind, "step kind", {
    Agent => "agent",
    Code => "code",
    Approval => "approval",
    Switch => "switch",
    DoWhile => "do_while",
});

/// When a step may run, judged from the outcomes of its dependencies.
///
/// All eleven of Airflow's rules; the table in the [`crate::flow`] module
/// docs gives each one's exact meaning, including skip reasons.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum TriggerRule {
    /// Every dependency done or deliberately skipped (the default).
    #[default]
    AllSuccess,
    /// Every dependency failed (or skipped because of an upstream failure).
    AllFailed,
    /// Every dependency settled, whatever the outcome.
    AllDone,
    /// Every dependency skipped.
    AllSkipped,
    /// At least one dependency done.
    OneSuccess,
    /// At least one dependency failed.
    OneFailed,
    /// At least one dependency done or failed.
    OneDone,
    /// Every dependency settled and none failed.
    NoneFailed,
    /// Like `none_failed`, plus at least one dependency done.
    NoneFailedMinOneSuccess,
    /// Every dependency settled and none skipped.
    NoneSkipped,
    /// Runs at once, whatever its dependencies do.
    Always,
}
named_enum!(TriggerRule, "trigger rule", {
    AllSuccess => "all_success",
    AllFailed => "all_failed",
    AllDone => "all_done",
    AllSkipped => "all_skipped",
    OneSuccess => "one_success",
    OneFailed => "one_failed",
    OneDone => "one_done",
    NoneFailed => "none_failed",
    NoneFailedMinOneSuccess => "none_failed_min_one_success",
    NoneSkipped => "none_skipped",
    Always => "always",
});

/// A predicate over the run context `{"input": ..., "results": {step_id: ...}}`.
///
/// Cheap to clone (an `Arc`); `Send + Sync` so flows can cross threads and be
/// wrapped by bindings (a Python callable or a JS function behind the closure).
#[derive(Clone)]
pub struct Condition(Arc<dyn Fn(&Value) -> bool + Send + Sync>);

impl Condition {
    /// Wraps a closure.
    pub fn new(f: impl Fn(&Value) -> bool + Send + Sync + 'static) -> Self {
        Condition(Arc::new(f))
    }

    /// Evaluates the predicate on `ctx`.
    pub fn eval(&self, ctx: &Value) -> bool {
        (self.0)(ctx)
    }
}

impl fmt::Debug for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Condition(<closure>)")
    }
}

/// One branch of a `switch` step.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// The name reported as the switch's chosen case.
    pub label: String,
    /// Every step of this branch; they are excluded when another branch is taken.
    pub steps: Vec<String>,
    /// When the case matches. A case without a condition never matches
    /// (fail closed: a deserialized flow must get its conditions attached).
    #[serde(skip)]
    pub condition: Option<Condition>,
}

impl Case {
    /// A case with a condition.
    pub fn new(
        label: impl Into<String>,
        steps: impl IntoIterator<Item = impl Into<String>>,
        condition: impl Fn(&Value) -> bool + Send + Sync + 'static,
    ) -> Self {
        Case {
            label: label.into(),
            steps: steps.into_iter().map(Into::into).collect(),
            condition: Some(Condition::new(condition)),
        }
    }
}

/// Concurrency limits shared by every batch group of a flow.
///
/// A step joins a group by naming it in [`Step::batch`]; each group runs at
/// most `max_concurrent` of its steps at once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchConfig {
    /// Cap on running steps per batch group; `None` means unbounded.
    #[serde(default, deserialize_with = "crate::json::int::opt_usize")]
    pub max_concurrent: Option<usize>,
    /// The rule by which a batch group as a whole has succeeded
    /// (see [`crate::flow::is_batch_joined`]).
    #[serde(default)]
    pub join_rule: TriggerRule,
}

impl Default for BatchConfig {
    fn default() -> Self {
        BatchConfig {
            max_concurrent: None,
            join_rule: TriggerRule::AllSuccess,
        }
    }
}

/// A do-while's iteration cap when the spec gives none.
pub const DEFAULT_LOOP_MAX_ITERATIONS: u32 = 100;

/// A do-while's iteration cap; `null` means "not given": the default.
fn loop_cap<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    crate::json::int::opt_u32(d).map(|n| n.unwrap_or(DEFAULT_LOOP_MAX_ITERATIONS))
}

fn default_loop_max_iterations() -> u32 {
    DEFAULT_LOOP_MAX_ITERATIONS
}

/// One node of a flow.
///
/// Its serde form refuses unknown fields (a misspelt `deps` must not decode
/// as a step without dependencies); integers may be integral floats.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Unique id within the flow.
    pub id: String,
    /// What the step does.
    pub kind: StepKind,
    /// Ids of the steps this one waits for (duplicates are counted once).
    #[serde(default)]
    pub deps: Vec<String>,
    /// How the dependencies' outcomes decide whether this step runs.
    #[serde(default)]
    pub trigger_rule: TriggerRule,
    /// The batch group this step belongs to, if any.
    #[serde(default)]
    pub batch: Option<String>,
    /// Retries allowed after the first attempt (see [`crate::flow::should_retry`]).
    #[serde(default, deserialize_with = "crate::json::int::u32_or_zero")]
    pub max_retries: u32,
    /// Time limit per attempt, in seconds; `None` means none.
    #[serde(default, deserialize_with = "crate::json::int::opt_u64")]
    pub timeout: Option<u64>,
    /// Branches of a `switch` step, tried in order.
    #[serde(default)]
    pub cases: Vec<Case>,
    /// Steps of a `switch`'s default branch (run when no case matches).
    #[serde(default)]
    pub default_branch: Vec<String>,
    /// Steps of a `do_while`'s body.
    #[serde(default)]
    pub loop_body: Vec<String>,
    /// A `do_while` repeats while this holds; `None` means it runs once.
    #[serde(skip)]
    pub loop_condition: Option<Condition>,
    /// Iteration cap of a `do_while` (default 100).
    #[serde(default = "default_loop_max_iterations", deserialize_with = "loop_cap")]
    pub loop_max_iterations: u32,
    /// Launch-time guard: when it is false for the launch context the step
    /// is excluded from the run (see [`crate::flow::manifest_steps`]).
    #[serde(skip)]
    pub when: Option<Condition>,
}

impl Step {
    /// A step with no dependencies and every other field at its default.
    pub fn new(id: impl Into<String>, kind: StepKind) -> Self {
        Step {
            id: id.into(),
            kind,
            deps: Vec::new(),
            trigger_rule: TriggerRule::AllSuccess,
            batch: None,
            max_retries: 0,
            timeout: None,
            cases: Vec::new(),
            default_branch: Vec::new(),
            loop_body: Vec::new(),
            loop_condition: None,
            loop_max_iterations: default_loop_max_iterations(),
            when: None,
        }
    }

    /// Sets the dependencies.
    pub fn deps(mut self, deps: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.deps = deps.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the trigger rule.
    pub fn trigger_rule(mut self, rule: TriggerRule) -> Self {
        self.trigger_rule = rule;
        self
    }

    /// Puts the step in a batch group.
    pub fn batch(mut self, batch: impl Into<String>) -> Self {
        self.batch = Some(batch.into());
        self
    }

    /// Sets the number of retries.
    pub fn max_retries(mut self, n: u32) -> Self {
        self.max_retries = n;
        self
    }

    /// Sets the per-attempt timeout in seconds.
    pub fn timeout_secs(mut self, secs: u64) -> Self {
        self.timeout = Some(secs);
        self
    }

    /// Sets a switch's cases.
    pub fn cases(mut self, cases: Vec<Case>) -> Self {
        self.cases = cases;
        self
    }

    /// Sets a switch's default branch.
    pub fn default_branch(mut self, steps: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.default_branch = steps.into_iter().map(Into::into).collect();
        self
    }

    /// Sets a do-while's body.
    pub fn loop_body(mut self, steps: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.loop_body = steps.into_iter().map(Into::into).collect();
        self
    }

    /// Sets a do-while's condition.
    pub fn loop_condition(mut self, f: impl Fn(&Value) -> bool + Send + Sync + 'static) -> Self {
        self.loop_condition = Some(Condition::new(f));
        self
    }

    /// Sets a do-while's iteration cap.
    pub fn loop_max_iterations(mut self, n: u32) -> Self {
        self.loop_max_iterations = n;
        self
    }

    /// Sets the launch-time guard.
    pub fn when(mut self, f: impl Fn(&Value) -> bool + Send + Sync + 'static) -> Self {
        self.when = Some(Condition::new(f));
        self
    }

    /// Its timeout as a [`std::time::Duration`].
    pub fn timeout_duration(&self) -> Option<std::time::Duration> {
        self.timeout.map(std::time::Duration::from_secs)
    }
}

/// A declarative flow: steps in declaration order (the "flow order" in which
/// ready steps are reported) and the batch limits.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Flow {
    /// The steps, in flow order.
    pub steps: Vec<Step>,
    /// Limits shared by every batch group.
    #[serde(default)]
    pub batch_config: BatchConfig,
}

impl Flow {
    /// A flow with no batch limits.
    pub fn new(steps: Vec<Step>) -> Self {
        Flow {
            steps,
            batch_config: BatchConfig::default(),
        }
    }

    /// Sets the batch limits.
    pub fn with_batch_config(mut self, config: BatchConfig) -> Self {
        self.batch_config = config;
        self
    }

    /// The step with this id (the first one, if ids are duplicated).
    pub fn step(&self, id: &str) -> Option<&Step> {
        self.steps.iter().find(|s| s.id == id)
    }
}
