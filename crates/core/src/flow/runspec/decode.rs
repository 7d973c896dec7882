//! The strict hand decoder of [`FlowSpec`] from a JSON value (the text
//! forms are in `text.rs`, the canonical JSON form in `canonical.rs`).
//!
//! A hand decoder rather than serde: serde stops at the first problem, and
//! the contract is every problem of the spec at once, each with its path.

use super::*;
use crate::error::Error;
use crate::flow::DEFAULT_LOOP_MAX_ITERATIONS;
use crate::json::describe;
use crate::json::problems::{join, listed, Problems, NUL_PROBLEM};
use crate::names::macros::ParseNameError;
use crate::sandbox::{NetworkPolicy, ResourceLimits, SandboxMode, SandboxOverrides};
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::str::FromStr;

const TOP_KEYS: &[&str] = &["name", "description", "steps", "report", "batch_config"];
const COMMON_KEYS: &[&str] = &[
    "id",
    "kind",
    "deps",
    "trigger_rule",
    "batch",
    "timeout",
    "retry",
    "when",
];
/// Each kind's own keys; a key belongs to one kind only.
pub(super) const KIND_KEYS: &[(&str, &[&str])] = &[
    ("agent", &["agent", "model", "prompt", "access", "workdir"]),
    ("command", &["argv", "shell", "cwd", "env", "sandbox"]),
    ("code", &[]),
    ("approval", &["message"]),
    ("switch", &["cases", "default"]),
    ("do_while", &["body", "condition", "max_iterations"]),
];
const KINDS: &[&str] = RunStepKind::NAMES;
const RETRY_KEYS: &[&str] = &["max_attempts", "initial", "multiplier", "max", "on"];
const CASE_KEYS: &[&str] = &["label", "condition", "steps"];
const BATCH_KEYS: &[&str] = &["max_concurrent", "join_rule"];
pub(super) const SANDBOX_KEYS: &[&str] = &["mode", "network", "writable", "readable", "limits"];
pub(super) const LIMIT_KEYS: &[&str] = &[
    "open_files",
    "processes",
    "file_size",
    "address_space",
    "tmp_size",
];
const MAX_NAME: usize = 100;

/// Why `id` is no step id, if it is not.
pub(super) fn bad_id(id: &str) -> Option<String> {
    let ok = (1..=MAX_NAME).contains(&id.chars().count())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    (!ok).then(|| format!("{id:?} is no step id: 1 to {MAX_NAME} of A-Z, a-z, 0-9, `_` and `-`"))
}

fn bad_flow_name(name: &str) -> Option<String> {
    let ok = (1..=MAX_NAME).contains(&name.chars().count())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    (!ok).then(|| {
        format!("{name:?} is no flow name: 1 to {MAX_NAME} of A-Z, a-z, 0-9, `_`, `-` and `.`")
    })
}

fn given<'a>(object: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    object.get(key).filter(|v| !v.is_null())
}

/// Readers of the field types a flow spec has; each adds its problems.
impl Problems {
    fn required_text(
        &mut self,
        object: &Map<String, Value>,
        key: &str,
        at: &str,
        what: &str,
    ) -> String {
        let path = join(at, key);
        match given(object, key) {
            None => {
                self.add(path, format!("required: {what}"));
                String::new()
            }
            v => self.text(v, &path).unwrap_or_default(),
        }
    }

    /// An array of strings; each non-blank, `nonempty`: at least one.
    fn strings(&mut self, value: Option<&Value>, at: &str, nonempty: bool) -> Vec<String> {
        match value {
            None | Some(Value::Null) => {
                if nonempty {
                    self.add(at, "required: a non-empty list");
                }
                Vec::new()
            }
            Some(Value::Array(items)) => {
                if nonempty && items.is_empty() {
                    self.add(at, "must not be empty");
                }
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let path = format!("{at}[{i}]");
                    if item.is_null() {
                        self.add(path, "expected a string, got null");
                    } else if let Some(s) = self.text(Some(item), &path) {
                        out.push(s);
                    }
                }
                out
            }
            Some(other) => {
                self.add(
                    at,
                    format!("expected an array of strings, got {}", describe(other)),
                );
                Vec::new()
            }
        }
    }

    /// An integer in `range` (an integral float is accepted).
    fn uint(&mut self, value: Option<&Value>, at: &str, min: u64, max: u64) -> Option<u64> {
        let v = value.filter(|v| !v.is_null())?;
        let n = match v {
            Value::Number(n) => n.as_u64().or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= u64::MAX as f64)
                    .map(|f| f as u64)
            }),
            _ => {
                self.add(at, format!("expected an integer, got {}", describe(v)));
                return None;
            }
        };
        match n {
            Some(n) if (min..=max).contains(&n) => Some(n),
            _ => {
                self.add(
                    at,
                    format!("must be an integer from {min} to {max}, got {v}"),
                );
                None
            }
        }
    }

    /// One of a named enum's names.
    fn name<T: FromStr<Err = ParseNameError>>(
        &mut self,
        value: Option<&Value>,
        at: &str,
    ) -> Option<T> {
        match value.filter(|v| !v.is_null())? {
            Value::String(s) => match s.parse::<T>() {
                Ok(t) => Some(t),
                Err(e) => {
                    self.add(at, e.to_string());
                    None
                }
            },
            other => {
                self.add(at, format!("expected a string, got {}", describe(other)));
                None
            }
        }
    }

    fn object<'a>(
        &mut self,
        value: &'a Value,
        at: &str,
        keys: &[&str],
    ) -> Option<&'a Map<String, Value>> {
        match value {
            Value::Object(o) => Some(o),
            other => {
                self.add(
                    at,
                    format!(
                        "expected an object {{{}}}, got {}",
                        keys.join(", "),
                        describe(other)
                    ),
                );
                None
            }
        }
    }
}

impl FlowSpec {
    /// Decodes and checks a flow spec, with the guarantees of the module
    /// docs. Nothing is returned unless all of it is sound.
    pub fn from_json(value: &Value) -> Result<FlowSpec, Error> {
        let mut p = Problems::default();
        let Value::Object(root) = value else {
            p.add(
                ".",
                format!("a flow spec must be an object, got {}", describe(value)),
            );
            return Err(p.into_error().expect("one problem"));
        };
        p.unknown_keys(root, "", TOP_KEYS);
        let name = p.text(given(root, "name"), "name");
        if let Some(why) = name.as_deref().and_then(bad_flow_name) {
            p.add("name", why);
        }
        let description = p.text(given(root, "description"), "description");
        let report = p.text(given(root, "report"), "report");
        let batch_config = batch_config(&mut p, given(root, "batch_config"));
        let mut steps = Vec::new();
        match given(root, "steps") {
            None => p.add("steps", "required: a list of 1 to 20000 steps"),
            Some(Value::Array(items)) => {
                if items.is_empty() || items.len() > MAX_FLOW_STEPS {
                    p.add(
                        "steps",
                        format!("{} steps: a flow has 1 to {MAX_FLOW_STEPS}", items.len()),
                    );
                }
                steps.reserve(items.len().min(MAX_FLOW_STEPS));
                for (i, item) in items.iter().enumerate().take(MAX_FLOW_STEPS) {
                    if let Some(s) = step(&mut p, item, &format!("steps[{i}]")) {
                        steps.push(s);
                    }
                }
            }
            Some(other) => p.add(
                "steps",
                format!("expected an array, got {}", describe(other)),
            ),
        }
        p.into_result()?;
        Ok(FlowSpec {
            name,
            description,
            steps,
            report,
            batch_config,
        })
    }
}

fn batch_config(p: &mut Problems, value: Option<&Value>) -> BatchConfig {
    let mut config = BatchConfig::default();
    let Some(o) = value.and_then(|v| p.object(v, "batch_config", BATCH_KEYS)) else {
        return config;
    };
    p.unknown_keys(o, "batch_config", BATCH_KEYS);
    config.max_concurrent = p
        .uint(
            o.get("max_concurrent"),
            "batch_config.max_concurrent",
            0,
            u32::MAX as u64,
        )
        .map(|n| n as usize);
    if let Some(rule) = p.name(o.get("join_rule"), "batch_config.join_rule") {
        config.join_rule = rule;
    }
    config
}

/// One step; `None` only when it is no object (the problem is recorded).
fn step(p: &mut Problems, value: &Value, at: &str) -> Option<StepSpec> {
    let o = p.object(value, at, &["id", "kind", "..."])?;
    let kind = match given(o, "kind") {
        None => {
            p.add(
                join(at, "kind"),
                format!("required: one of {}", listed(KINDS)),
            );
            None
        }
        Some(Value::String(k)) if KINDS.contains(&k.as_str()) => Some(k.as_str()),
        Some(Value::String(k)) => {
            p.add(
                join(at, "kind"),
                format!(
                    "unknown step kind {k:?}; expected one of: {}",
                    KINDS.join(", ")
                ),
            );
            None
        }
        Some(other) => {
            p.add(
                join(at, "kind"),
                format!("expected a string, got {}", describe(other)),
            );
            None
        }
    };

    let id = p.required_text(o, "id", at, "the step's unique id");
    if !id.is_empty() {
        if let Some(why) = bad_id(&id) {
            p.add(join(at, "id"), why);
        }
    }
    keys(p, o, at, kind);
    let deps = p.strings(o.get("deps"), &join(at, "deps"), false);
    let trigger_rule = p
        .name(o.get("trigger_rule"), &join(at, "trigger_rule"))
        .unwrap_or_default();
    let batch = p.text(o.get("batch"), &join(at, "batch"));
    let timeout = p.opt_duration(o.get("timeout"), &join(at, "timeout"), false);
    let retry = match given(o, "retry") {
        None => RetrySpec::default(),
        Some(v) => retry(p, v, &join(at, "retry")),
    };
    let when = p.text(o.get("when"), &join(at, "when"));
    let action = match kind {
        Some("agent") => StepAction::Agent(AgentAction {
            agent: p.required_text(o, "agent", at, "the configured agent's identity"),
            model: p.text(o.get("model"), &join(at, "model")),
            prompt: p.required_text(o, "prompt", at, "the prompt template"),
            access: p
                .name(o.get("access"), &join(at, "access"))
                .unwrap_or_default(),
            workdir: p.os_text(o.get("workdir"), &join(at, "workdir")),
        }),
        Some("command") => StepAction::Command(command(p, o, at)),
        Some("approval") => StepAction::Approval(ApprovalAction {
            message: p.text(o.get("message"), &join(at, "message")),
        }),
        Some("switch") => StepAction::Switch(switch(p, o, at)),
        Some("do_while") => StepAction::DoWhile(DoWhileAction {
            body: p.strings(o.get("body"), &join(at, "body"), true),
            condition: p.required_text(
                o,
                "condition",
                at,
                "a CEL condition: iterate again while it is true",
            ),
            max_iterations: p
                .uint(
                    o.get("max_iterations"),
                    &join(at, "max_iterations"),
                    1,
                    MAX_LOOP_ITERATIONS as u64,
                )
                .map_or(DEFAULT_LOOP_MAX_ITERATIONS, |n| n as u32),
        }),
        // `code`, or an unknown kind (already a problem).
        _ => StepAction::Code,
    };
    Some(StepSpec {
        id,
        deps,
        trigger_rule,
        batch,
        timeout,
        retry,
        when,
        action,
    })
}

/// Refuses unknown keys and keys of another kind. Without a known kind only
/// keys of no kind at all are refused (the kind's problem is reported).
fn keys(p: &mut Problems, o: &Map<String, Value>, at: &str, kind: Option<&str>) {
    let own: &[&str] = kind
        .and_then(|k| KIND_KEYS.iter().find(|(n, _)| *n == k))
        .map_or(&[], |(_, keys)| keys);
    for key in o.keys() {
        let key = key.as_str();
        if COMMON_KEYS.contains(&key) || own.contains(&key) {
            continue;
        }
        match KIND_KEYS.iter().find(|(_, keys)| keys.contains(&key)) {
            Some(_) if kind.is_none() => {}
            Some((owner, _)) => p.add(join(at, key), format!("only a {owner} step has `{key}`")),
            None => {
                let mut expected: Vec<&str> = COMMON_KEYS.to_vec();
                expected.extend_from_slice(own);
                p.add(
                    join(at, key),
                    format!(
                        "unknown field `{key}`, expected one of {}",
                        listed(&expected)
                    ),
                );
            }
        }
    }
}

fn retry(p: &mut Problems, value: &Value, at: &str) -> RetrySpec {
    let mut r = RetrySpec::default();
    let Some(o) = p.object(value, at, RETRY_KEYS) else {
        return r;
    };
    p.unknown_keys(o, at, RETRY_KEYS);
    if let Some(n) = p.uint(
        o.get("max_attempts"),
        &join(at, "max_attempts"),
        1,
        MAX_RETRY_ATTEMPTS as u64,
    ) {
        r.max_attempts = n as u32;
    }
    let initial = p.opt_duration(o.get("initial"), &join(at, "initial"), true);
    let max = p.opt_duration(o.get("max"), &join(at, "max"), false);
    r.initial = initial.unwrap_or(DEFAULT_RETRY_INITIAL);
    r.max = max.unwrap_or(DEFAULT_RETRY_MAX);
    if r.max < r.initial && (initial.is_some() || max.is_some()) {
        p.add(
            join(at, "max"),
            format!(
                "the longest wait ({:?}) is shorter than the first one (`initial`, {:?})",
                r.max, r.initial
            ),
        );
    }
    match given(o, "multiplier") {
        None => {}
        Some(Value::Number(n)) => match n.as_f64() {
            Some(m) if m.is_finite() && m >= 1.0 => r.multiplier = m,
            _ => p.add(
                join(at, "multiplier"),
                format!("must be a number of at least 1, got {n}"),
            ),
        },
        Some(other) => p.add(
            join(at, "multiplier"),
            format!("expected a number, got {}", describe(other)),
        ),
    }
    match given(o, "on") {
        None => {}
        Some(Value::Array(items)) => {
            let path = join(at, "on");
            if items.is_empty() {
                p.add(&path, "must name `failure`, `timeout` or both");
            }
            let mut on = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let at_i = format!("{path}[{i}]");
                if item.is_null() {
                    p.add(at_i, "expected a string, got null");
                } else if let Some(r) = p.name::<RetryOn>(Some(item), &at_i) {
                    if on.contains(&r) {
                        p.add(at_i, format!("`{r}` is listed twice"));
                    } else {
                        on.push(r);
                    }
                }
            }
            r.on = on;
        }
        Some(other) => p.add(
            join(at, "on"),
            format!(
                "expected an array of `failure`/`timeout`, got {}",
                describe(other)
            ),
        ),
    }
    r
}

fn command(p: &mut Problems, o: &Map<String, Value>, at: &str) -> CommandAction {
    let program = match (given(o, "argv"), given(o, "shell")) {
        (Some(_), Some(_)) => {
            p.add(join(at, "shell"), "give `argv` or `shell`, not both");
            CommandProgram::Shell(String::new())
        }
        (None, None) => {
            p.add(
                at,
                "a command step needs `argv` (a list) or `shell` (a string)",
            );
            CommandProgram::Shell(String::new())
        }
        (Some(argv), None) => {
            let path = join(at, "argv");
            let mut out = Vec::new();
            match argv {
                Value::Array(items) => {
                    if items.is_empty() {
                        p.add(&path, "must not be empty: the program and its arguments");
                    }
                    for (i, item) in items.iter().enumerate() {
                        match item {
                            // The program must be named; an argument may be empty.
                            Value::String(s) if i == 0 && s.trim().is_empty() => {
                                p.add(format!("{path}[0]"), "must not be blank: the program")
                            }
                            Value::String(s) if s.contains('\0') => {
                                p.add(format!("{path}[{i}]"), NUL_PROBLEM)
                            }
                            Value::String(s) => out.push(s.clone()),
                            other => p.add(
                                format!("{path}[{i}]"),
                                format!("expected a string, got {}", describe(other)),
                            ),
                        }
                    }
                }
                other => p.add(
                    &path,
                    format!("expected an array of strings, got {}", describe(other)),
                ),
            }
            CommandProgram::Argv(out)
        }
        (None, Some(shell)) => CommandProgram::Shell(
            p.os_text(Some(shell), &join(at, "shell"))
                .unwrap_or_default(),
        ),
    };
    let cwd = p.os_text(o.get("cwd"), &join(at, "cwd"));
    let mut env = BTreeMap::new();
    match given(o, "env") {
        None => {}
        Some(Value::Object(vars)) => {
            for (k, v) in vars {
                let path = join(&join(at, "env"), k);
                if k.is_empty() || k.contains(['=', '\0']) {
                    p.add(
                        &path,
                        "an environment variable's name is not empty and has no `=` or NUL",
                    );
                }
                match v {
                    Value::String(s) if s.contains('\0') => p.add(path, "must not contain NUL"),
                    Value::String(s) => {
                        env.insert(k.clone(), s.clone());
                    }
                    other => p.add(path, format!("expected a string, got {}", describe(other))),
                }
            }
        }
        Some(other) => p.add(
            join(at, "env"),
            format!("expected an object of strings, got {}", describe(other)),
        ),
    }
    let sandbox = match given(o, "sandbox") {
        None => SandboxOverrides::default(),
        Some(v) => sandbox(p, v, &join(at, "sandbox")),
    };
    CommandAction {
        program,
        cwd,
        env,
        sandbox,
    }
}

/// A command step's `sandbox:`, each problem at its path. Paths must be
/// absolute here; whether they exist and lie under the project roots is
/// the engine's check when a run starts (it knows the roots).
fn sandbox(p: &mut Problems, value: &Value, at: &str) -> SandboxOverrides {
    let mut out = SandboxOverrides::default();
    let Some(o) = p.object(value, at, SANDBOX_KEYS) else {
        return out;
    };
    p.unknown_keys(o, at, SANDBOX_KEYS);
    out.mode = parsed::<SandboxMode>(p, given(o, "mode"), &join(at, "mode"));
    out.network = parsed::<NetworkPolicy>(p, given(o, "network"), &join(at, "network"));
    out.writable = absolute_paths(p, given(o, "writable"), &join(at, "writable"));
    out.readable = absolute_paths(p, given(o, "readable"), &join(at, "readable"));
    if let Some(v) = given(o, "limits") {
        let limits_at = join(at, "limits");
        if let Some(l) = p.object(v, &limits_at, LIMIT_KEYS) {
            p.unknown_keys(l, &limits_at, LIMIT_KEYS);
            let mut limit =
                |key: &str| p.uint(l.get(key), &join(&limits_at, key), 1, MAX_SANDBOX_LIMIT);
            out.limits = ResourceLimits {
                open_files: limit("open_files"),
                processes: limit("processes"),
                file_size: limit("file_size"),
                address_space: limit("address_space"),
                tmp_size: limit("tmp_size"),
            };
        }
    }
    out
}

/// A string read by `T`'s `FromStr` (the sandbox's mode and network), its
/// error message at `at`.
fn parsed<T: FromStr<Err = Error>>(p: &mut Problems, value: Option<&Value>, at: &str) -> Option<T> {
    match value? {
        Value::String(s) => match s.parse::<T>() {
            Ok(t) => Some(t),
            Err(e) => {
                p.add(at, e.message());
                None
            }
        },
        other => {
            p.add(at, format!("expected a string, got {}", describe(other)));
            None
        }
    }
}

/// An array of absolute paths.
fn absolute_paths(p: &mut Problems, value: Option<&Value>, at: &str) -> Vec<PathBuf> {
    let items = match value {
        None => return Vec::new(),
        Some(Value::Array(items)) => items,
        Some(other) => {
            p.add(
                at,
                format!(
                    "expected an array of absolute paths, got {}",
                    describe(other)
                ),
            );
            return Vec::new();
        }
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let path = format!("{at}[{i}]");
        match item {
            Value::String(s) if s.contains('\0') => p.add(path, NUL_PROBLEM),
            Value::String(s) if PathBuf::from(s).is_absolute() => out.push(PathBuf::from(s)),
            Value::String(s) => p.add(
                path,
                format!("{s:?} is a relative path: give an absolute one"),
            ),
            other => p.add(
                path,
                format!("expected an absolute path, got {}", describe(other)),
            ),
        }
    }
    out
}

fn switch(p: &mut Problems, o: &Map<String, Value>, at: &str) -> SwitchAction {
    let mut cases = Vec::new();
    let cases_at = join(at, "cases");
    match given(o, "cases") {
        None => {}
        Some(Value::Array(items)) => {
            for (k, item) in items.iter().enumerate() {
                let case_at = format!("{cases_at}[{k}]");
                let Some(c) = p.object(item, &case_at, CASE_KEYS) else {
                    continue;
                };
                p.unknown_keys(c, &case_at, CASE_KEYS);
                cases.push(CaseSpec {
                    label: p.required_text(c, "label", &case_at, "the case's name"),
                    condition: p.required_text(c, "condition", &case_at, "a CEL condition"),
                    steps: p.strings(c.get("steps"), &join(&case_at, "steps"), false),
                });
            }
        }
        Some(other) => p.add(
            cases_at,
            format!("expected an array, got {}", describe(other)),
        ),
    }
    let default = p.strings(o.get("default"), &join(at, "default"), false);
    SwitchAction { cases, default }
}
