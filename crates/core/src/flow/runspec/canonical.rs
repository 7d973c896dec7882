//! The canonical JSON form of a flow spec ([`FlowSpec::to_json`]).

use super::*;
use serde_json::{json, Map, Number, Value};

impl FlowSpec {
    /// The canonical JSON form: absent options omitted, defaults filled in
    /// (`deps`, `trigger_rule`, `retry`, `access`, `max_iterations`,
    /// `batch_config`), durations in seconds (an integer when whole), a
    /// command's `sandbox` only when it states something (its network by
    /// name, e.g. `loopback:80,8080`).
    /// [`FlowSpec::from_json`] reads it back as `self`.
    pub fn to_json(&self) -> Value {
        let mut root = Map::new();
        put(&mut root, "name", self.name.as_deref());
        put(&mut root, "description", self.description.as_deref());
        root.insert(
            "steps".into(),
            Value::Array(self.steps.iter().map(step_json).collect()),
        );
        put(&mut root, "report", self.report.as_deref());
        root.insert(
            "batch_config".into(),
            json!({
                "max_concurrent": self.batch_config.max_concurrent,
                "join_rule": self.batch_config.join_rule.as_str(),
            }),
        );
        Value::Object(root)
    }
}

fn put(object: &mut Map<String, Value>, key: &str, value: Option<&str>) {
    if let Some(v) = value {
        object.insert(key.into(), Value::String(v.to_owned()));
    }
}

/// Whole seconds as an integer (exact at any size), else fractional seconds.
pub(super) fn duration_json(d: Duration) -> Value {
    if d.subsec_nanos() == 0 {
        Value::from(d.as_secs())
    } else {
        Number::from_f64(d.as_secs_f64()).map_or(Value::Null, Value::Number)
    }
}

fn step_json(s: &StepSpec) -> Value {
    let mut o = Map::new();
    o.insert("id".into(), json!(s.id));
    o.insert("kind".into(), json!(s.action.kind()));
    o.insert("deps".into(), json!(s.deps));
    o.insert("trigger_rule".into(), json!(s.trigger_rule.as_str()));
    put(&mut o, "batch", s.batch.as_deref());
    if let Some(t) = s.timeout {
        o.insert("timeout".into(), duration_json(t));
    }
    o.insert(
        "retry".into(),
        json!({
            "max_attempts": s.retry.max_attempts,
            "initial": duration_json(s.retry.initial),
            "multiplier": s.retry.multiplier,
            "max": duration_json(s.retry.max),
            "on": s.retry.on.iter().map(|r| r.as_str()).collect::<Vec<_>>(),
        }),
    );
    put(&mut o, "when", s.when.as_deref());
    match &s.action {
        StepAction::Agent(a) => {
            o.insert("agent".into(), json!(a.agent));
            put(&mut o, "model", a.model.as_deref());
            o.insert("prompt".into(), json!(a.prompt));
            o.insert("access".into(), json!(a.access.as_str()));
            put(&mut o, "workdir", a.workdir.as_deref());
        }
        StepAction::Command(c) => {
            match &c.program {
                CommandProgram::Argv(argv) => o.insert("argv".into(), json!(argv)),
                CommandProgram::Shell(sh) => o.insert("shell".into(), json!(sh)),
            };
            put(&mut o, "cwd", c.cwd.as_deref());
            if !c.env.is_empty() {
                o.insert("env".into(), json!(c.env));
            }
            if c.sandbox != SandboxOverrides::default() {
                o.insert("sandbox".into(), json!(c.sandbox));
            }
        }
        StepAction::Code => {}
        StepAction::Approval(a) => put(&mut o, "message", a.message.as_deref()),
        StepAction::Switch(sw) => {
            let cases: Vec<Value> = sw
                .cases
                .iter()
                .map(|c| json!({"label": c.label, "condition": c.condition, "steps": c.steps}))
                .collect();
            o.insert("cases".into(), Value::Array(cases));
            o.insert("default".into(), json!(sw.default));
        }
        StepAction::DoWhile(d) => {
            o.insert("body".into(), json!(d.body));
            o.insert("condition".into(), json!(d.condition));
            o.insert("max_iterations".into(), json!(d.max_iterations));
        }
    }
    Value::Object(o)
}
