//! The reference runner of the shared vectors (`tests/vectors/*.json`).
//!
//! Every face runs the same files (`tests/vectors/README.md` gives the
//! format and the op table); this runner is the one the Python, Node and
//! HTTP runners mirror, so it runs each op exactly as a face does: values a
//! face passes through the core's `coderig::json` decoders go through them
//! here too, plain arguments (strings, numbers, names) are converted the way
//! a binding converts its native arguments, and every error is compared as
//! the face-neutral [`coderig::Error`].
//!
//! A vector that this runner cannot read (unknown op, unknown field in a
//! case or an input, a plain argument of the wrong type) is a bug in the
//! vector, reported as a failure, never skipped.

use coderig::arena::{self, BattleType, ContestantStatus, Lane};
use coderig::edit::hashline;
use coderig::flow::{self, Scheduler, StepStatus, TriggerRule};
use coderig::json::{self, EditRequest, EditResponse};
use coderig::model;
use coderig::task::TaskState;
use coderig::{ApplyOptions, Error};
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The files of the common format (`hashline.json` keeps its own layout and
/// its own runner, `hashline_vectors.rs`).
const FILES: &[&str] = &[
    "edit.json",
    "locate.json",
    "guards.json",
    "hashline_ops.json",
    "flow.json",
    "arena.json",
    "model.json",
    "errors.json",
];

/// Absolute tolerance of every number compared (`score`,
/// `tokens_per_sec`; integers are exact well within it).
const TOLERANCE: f64 = 1e-9;

fn vectors_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors")
}

/// Why a case did not give an answer: the core refused (compared with the
/// case's `error`), or the vector itself is unreadable (always a failure).
enum Failure {
    Core(Error),
    Bug(String),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Core(e)
    }
}

impl From<coderig::EditError> for Failure {
    fn from(e: coderig::EditError) -> Self {
        Failure::Core(e.into())
    }
}

impl From<flow::FlowError> for Failure {
    fn from(e: flow::FlowError) -> Self {
        Failure::Core(e.into())
    }
}

impl From<arena::ArenaError> for Failure {
    fn from(e: arena::ArenaError) -> Self {
        Failure::Core(e.into())
    }
}

fn bug<T>(message: impl Into<String>) -> Result<T, Failure> {
    Err(Failure::Bug(message.into()))
}

/// The input object of one case, read field by field. Every field must be
/// one the op's row in the README lists; each is taken at most once.
struct Args {
    op: String,
    map: Map<String, Value>,
}

impl Args {
    fn new(op: &str, input: &Value, allowed: &[&str]) -> Result<Args, Failure> {
        let Value::Object(map) = input else {
            return bug(format!("{op}: `input` must be an object"));
        };
        if let Some(unknown) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
            return bug(format!(
                "{op}: unknown input field `{unknown}` (the op takes {allowed:?})"
            ));
        }
        Ok(Args {
            op: op.to_owned(),
            map: map.clone(),
        })
    }

    /// A field that may be absent; JSON `null` counts as absent (Python's
    /// `None`, JS `undefined`/`null`).
    fn opt(&mut self, key: &str) -> Option<Value> {
        self.map.remove(key).filter(|v| !v.is_null())
    }

    fn value(&mut self, key: &str) -> Result<Value, Failure> {
        match self.map.remove(key) {
            Some(v) => Ok(v),
            None => bug(format!("{}: missing input field `{key}`", self.op)),
        }
    }

    fn typed<T: serde::de::DeserializeOwned>(
        &self,
        key: &str,
        value: Value,
        what: &str,
    ) -> Result<T, Failure> {
        serde_json::from_value(value.clone()).or_else(|_| {
            bug(format!(
                "{}: input field `{key}` must be {what}, got {value}",
                self.op
            ))
        })
    }

    fn string(&mut self, key: &str) -> Result<String, Failure> {
        let v = self.value(key)?;
        self.typed(key, v, "a string")
    }

    fn opt_string(&mut self, key: &str) -> Result<Option<String>, Failure> {
        match self.opt(key) {
            Some(v) => self.typed(key, v, "a string or null").map(Some),
            None => Ok(None),
        }
    }

    fn strings(&mut self, key: &str) -> Result<Vec<String>, Failure> {
        let v = self.value(key)?;
        self.typed(key, v, "a list of strings")
    }

    fn opt_bool(&mut self, key: &str) -> Result<Option<bool>, Failure> {
        match self.opt(key) {
            Some(v) => self.typed(key, v, "a boolean").map(Some),
            None => Ok(None),
        }
    }

    fn int<T: serde::de::DeserializeOwned>(&mut self, key: &str) -> Result<T, Failure> {
        let v = self.value(key)?;
        self.typed(key, v, "an integer in range")
    }

    fn opt_int<T: serde::de::DeserializeOwned>(&mut self, key: &str) -> Result<Option<T>, Failure> {
        match self.opt(key) {
            Some(v) => self.typed(key, v, "an integer in range or null").map(Some),
            None => Ok(None),
        }
    }
}

/// A name argument (trigger rule, lane, status, ...), parsed as every face
/// parses a plain string: the core's `FromStr`, whose error is an
/// `invalid_input` listing the valid names.
fn name<T>(text: &str) -> Result<T, Failure>
where
    T: FromStr<Err = coderig::names::ParseNameError>,
{
    text.parse::<T>().map_err(|e| Failure::Core(e.into()))
}

fn opt_name<T>(text: Option<String>) -> Result<Option<T>, Failure>
where
    T: FromStr<Err = coderig::names::ParseNameError>,
{
    text.as_deref().map(name).transpose()
}

/// A flow spec, decoded as every face decodes one. Conditions have no face-
/// neutral form (callables in the bindings, a small language in the server),
/// so a vector must not hold any.
fn decode_flow(spec: Value) -> Result<flow::Flow, Failure> {
    let decoded = json::flow(spec)?;
    if !decoded.conditions.is_empty() {
        return bug(format!(
            "a vector flow must hold no conditions, found {:?}",
            decoded.conditions
        ));
    }
    Ok(decoded.flow)
}

fn to_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("the core's answers serialize")
}

fn edit_response(applied: coderig::Applied) -> Value {
    to_json(&EditResponse::from(applied))
}

/// Runs one op. The answer is an object holding every field the op's row
/// in the README lists (a case compares the ones it names).
fn run_op(op: &str, input: &Value) -> Result<Value, Failure> {
    match op {
        "apply_edit" => {
            Args::new(
                op,
                input,
                &["content", "old", "new", "replace_all", "path", "guards"],
            )?;
            let request: EditRequest = json::decode_object(input.clone())?;
            Ok(to_json(&request.apply()?))
        }
        "apply_edits" => {
            let mut a = Args::new(op, input, &["content", "edits", "path", "guards"])?;
            let content = a.string("content")?;
            let edits = json::edits(a.value("edits")?)?;
            let opts = ApplyOptions {
                path: a.opt_string("path")?,
                guards: a.opt_bool("guards")?.unwrap_or(true),
            };
            Ok(edit_response(coderig::apply_edits(
                &content, &edits, &opts,
            )?))
        }
        "locate" => {
            let mut a = Args::new(op, input, &["content", "needle"])?;
            let content = a.string("content")?;
            let needle = a.string("needle")?;
            let m = coderig::try_locate(&content, &needle)?;
            let text = m.span.clone().map(|span| content[span].to_owned());
            Ok(json!({
                "kind": m.kind.as_str(),
                "text": text,
                "count": m.count,
                "nearest": m.nearest.map(|n| json!([n.first_line, n.last_line])),
                "score": m.score,
                "start": m.span.as_ref().map(|s| s.start),
                "end": m.span.as_ref().map(|s| s.end),
                "candidates": m.candidates,
            }))
        }
        "check_guards" => {
            let mut a = Args::new(op, input, &["original", "updated", "path"])?;
            let original = a.string("original")?;
            let updated = a.string("updated")?;
            let path = a.opt_string("path")?;
            let violations = coderig::check_guards(&original, &updated, path.as_deref());
            let kinds: Vec<&str> = violations.iter().map(|v| v.kind.as_str()).collect();
            Ok(json!({ "violations": kinds }))
        }
        "hashline_format" => {
            let mut a = Args::new(op, input, &["content"])?;
            Ok(json!({ "formatted": hashline::format(&a.string("content")?) }))
        }
        "hashline_apply" => {
            let mut a = Args::new(op, input, &["content", "edits"])?;
            let content = a.string("content")?;
            let edits = json::hashline_edits(a.value("edits")?)?;
            Ok(json!({ "content": hashline::apply(&content, &edits)? }))
        }
        "hashline_validate" => {
            let mut a = Args::new(op, input, &["content", "refs"])?;
            let content = a.string("content")?;
            let refs = a.strings("refs")?;
            let refs: Vec<&str> = refs.iter().map(String::as_str).collect();
            hashline::validate_strs(&content, &refs)?;
            Ok(json!({}))
        }
        "hashline_parse_ref" => {
            let mut a = Args::new(op, input, &["ref"])?;
            let r = hashline::parse_ref(&a.string("ref")?)?;
            Ok(json!({ "line": r.line, "hash": r.hash }))
        }
        "xxhash32" => {
            let mut a = Args::new(op, input, &["data", "seed"])?;
            let data = a.string("data")?;
            let seed = a.opt_int::<u32>("seed")?.unwrap_or(0);
            Ok(json!({ "hash": coderig::xxhash32(data.as_bytes(), seed) }))
        }
        "flow_validate" => {
            let mut a = Args::new(op, input, &["spec"])?;
            let f = decode_flow(a.value("spec")?)?;
            let codes: Vec<&str> = flow::validate(&f).iter().map(|e| e.code()).collect();
            Ok(json!({ "valid": codes.is_empty(), "codes": codes }))
        }
        "flow_ready_steps" => {
            let mut a = Args::new(op, input, &["spec", "state"])?;
            let f = decode_flow(a.value("spec")?)?;
            let st = json::state(a.value("state")?)?;
            Ok(json!({ "ready": flow::ready_steps(&f, &st) }))
        }
        "flow_evaluate_trigger_rule" => {
            let mut a = Args::new(op, input, &["deps", "state", "rule"])?;
            let deps = a.strings("deps")?;
            let st = json::state(a.value("state")?)?;
            let rule: TriggerRule = name(&a.string("rule")?)?;
            Ok(json!({ "result": flow::evaluate_trigger_rule(&deps, &st, rule) }))
        }
        "flow_is_run_complete" | "flow_is_stuck" => {
            let mut a = Args::new(op, input, &["spec", "state"])?;
            let f = decode_flow(a.value("spec")?)?;
            let st = json::state(a.value("state")?)?;
            let result = if op == "flow_is_run_complete" {
                flow::is_run_complete(&f, &st)
            } else {
                flow::is_stuck(&f, &st)
            };
            Ok(json!({ "result": result }))
        }
        "flow_scheduler" => bug("flow_scheduler is run by run_scheduler"),
        "match_model" => {
            let mut a = Args::new(op, input, &["target", "available", "providers"])?;
            let target = a.string("target")?;
            let available = a.strings("available")?;
            let providers: Vec<String> = match a.opt("providers") {
                Some(v) => a.typed("providers", v, "a list of strings or null")?,
                None => vec![],
            };
            let providers: Vec<&str> = providers.iter().map(String::as_str).collect();
            Ok(json!({ "model": model::match_model(&target, &available, &providers) }))
        }
        "classify_error" => {
            let mut a = Args::new(op, input, &["name", "message", "http_status"])?;
            let name = a.opt_string("name")?;
            let message = a.opt_string("message")?;
            let status = a.opt_int::<u16>("http_status")?;
            let class = model::classify_error(name.as_deref(), message.as_deref(), status);
            Ok(json!({ "class": class.as_str() }))
        }
        "flow_should_retry" => {
            let mut a = Args::new(op, input, &["max_retries", "retry_count"])?;
            if !a.map.contains_key("max_retries") {
                return bug("flow_should_retry: give `max_retries` (an integer or null)");
            }
            let max_retries = a.opt_int::<u32>("max_retries")?;
            let retry_count = a.int::<u32>("retry_count")?;
            Ok(json!({ "result": flow::should_retry(max_retries, retry_count) }))
        }
        "flow_reconcile_resume_step" => {
            let mut a = Args::new(
                op,
                input,
                &[
                    "status",
                    "task_id",
                    "task_state",
                    "retry_count",
                    "max_retries",
                ],
            )?;
            let status: StepStatus = name(&a.string("status")?)?;
            let task_id = a.opt_string("task_id")?;
            let task_state: Option<TaskState> = opt_name(a.opt_string("task_state")?)?;
            let retry_count = a.opt_int::<u32>("retry_count")?.unwrap_or(0);
            let max_retries = a.opt_int::<u32>("max_retries")?;
            let action = flow::reconcile_resume_step(
                status,
                task_id.as_deref(),
                task_state,
                retry_count,
                max_retries,
            );
            Ok(json!({ "action": action.as_str() }))
        }
        "arena_classify_lane" => {
            let mut a = Args::new(
                op,
                input,
                &["battle_type", "identity", "model", "local_models"],
            )?;
            let battle_type: BattleType = name(&a.string("battle_type")?)?;
            let identity = a.string("identity")?;
            let model = a.string("model")?;
            let local_models = a.strings("local_models")?;
            let lane = arena::classify_lane(battle_type, &identity, &model, &local_models);
            Ok(json!({ "lane": lane.as_str() }))
        }
        "arena_dispatch_now" => {
            let mut a = Args::new(op, input, &["rows", "local_capacity", "cloud_capacity"])?;
            let rows: Vec<(String, String, String)> = {
                let v = a.value("rows")?;
                a.typed("rows", v, "a list of [id, lane, status]")?
            };
            let mut contestants = Vec::with_capacity(rows.len());
            for (id, lane, status) in rows {
                let lane: Lane = name(&lane)?;
                let status: ContestantStatus = name(&status)?;
                contestants.push((id, lane, status));
            }
            let local_capacity = a.opt_int::<usize>("local_capacity")?.unwrap_or(1);
            let cloud_capacity = a.opt_int::<usize>("cloud_capacity")?;
            Ok(json!({ "ids": arena::dispatch_now(&contestants, local_capacity, cloud_capacity) }))
        }
        "arena_is_battle_complete" => {
            let mut a = Args::new(op, input, &["statuses"])?;
            let statuses = a
                .strings("statuses")?
                .iter()
                .map(|s| name::<ContestantStatus>(s))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(json!({ "result": arena::is_battle_complete(&statuses) }))
        }
        "arena_compute_benchmark" => {
            let mut a = Args::new(
                op,
                input,
                &["started_ms", "ended_ms", "cost_tokens", "lane"],
            )?;
            let started_ms = a.int::<i64>("started_ms")?;
            let ended_ms = a.int::<i64>("ended_ms")?;
            let cost_tokens = a.opt_int::<u64>("cost_tokens")?;
            let lane: Lane = name(&a.string("lane")?)?;
            let b = arena::compute_benchmark(started_ms, ended_ms, cost_tokens, lane);
            Ok(json!({ "duration_ms": b.duration_ms, "tokens_per_sec": b.tokens_per_sec }))
        }
        "arena_sanitize_slug" => {
            let mut a = Args::new(op, input, &["text"])?;
            Ok(json!({ "slug": arena::sanitize_slug(&a.string("text")?) }))
        }
        "arena_contestant_dir" => {
            let mut a = Args::new(op, input, &["identity", "model"])?;
            let identity = a.string("identity")?;
            let model = a.string("model")?;
            Ok(json!({ "dir": arena::contestant_dir(&identity, &model)? }))
        }
        "arena_reconcile_contestant_resume" => {
            let mut a = Args::new(op, input, &["status", "task_id", "task_state"])?;
            let status: ContestantStatus = name(&a.string("status")?)?;
            let task_id = a.opt_string("task_id")?;
            let task_state: Option<TaskState> = opt_name(a.opt_string("task_state")?)?;
            let action = arena::reconcile_contestant_resume(status, task_id.as_deref(), task_state);
            Ok(json!({ "action": action.as_str() }))
        }
        "arena_extract_winner" | "arena_extract_verdict" => {
            let mut a = Args::new(op, input, &["text"])?;
            let text = a.string("text")?;
            let pair = if op == "arena_extract_winner" {
                arena::extract_winner(&text)
            } else {
                arena::extract_verdict(&text)
            };
            let pair = pair.map(|(identity, model)| json!([identity, model]));
            let key = if op == "arena_extract_winner" {
                "winner"
            } else {
                "verdict"
            };
            Ok(json!({ key: pair }))
        }
        "arena_should_name_winner" => {
            let mut a = Args::new(op, input, &["succeeded"])?;
            let succeeded = a.int::<usize>("succeeded")?;
            Ok(json!({ "result": arena::should_name_winner(succeeded) }))
        }
        other => bug(format!("unknown op {other:?}")),
    }
}

/// `flow_scheduler`: builds a scheduler from `spec` and feeds it `events`.
/// Returns the newly ready ids of every event that succeeded, and the error
/// that stopped the sequence (building the scheduler counts as the step
/// before the first event).
fn run_scheduler(input: &Value) -> Result<(Vec<Value>, Option<Error>), String> {
    let mut a = Args::new("flow_scheduler", input, &["spec", "events"]).map_err(bug_text)?;
    let spec = a.value("spec").map_err(bug_text)?;
    let events = a.value("events").map_err(bug_text)?;
    let Value::Array(events) = events else {
        return Err("flow_scheduler: `events` must be a list".into());
    };
    let mut ready = Vec::new();
    // A flow that cannot be built stops the case before its first event, so
    // such a case lists no event (none would run).
    let built = match decode_flow(spec) {
        Ok(f) => Scheduler::new(f).map_err(Error::from),
        Err(Failure::Core(e)) => Err(e),
        Err(Failure::Bug(b)) => return Err(b),
    };
    let mut scheduler = match built {
        Ok(s) => s,
        Err(e) if events.is_empty() => return Ok((ready, Some(e))),
        Err(e) => {
            return Err(format!(
                "building the scheduler failed ({}: {}), so `events` must be []",
                e.kind().as_str(),
                e.message()
            ))
        }
    };
    for (k, event) in events.iter().enumerate() {
        let parts: Vec<String> = serde_json::from_value(event.clone())
            .map_err(|_| format!("flow_scheduler: events[{k}] must be a list of strings"))?;
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        let result = match parts.as_slice() {
            ["start"] => scheduler.start(),
            ["complete", id] => scheduler.complete(id),
            ["fail", id] => scheduler.fail(id),
            ["skip", id] => scheduler.skip(id),
            _ => {
                return Err(format!(
                    "flow_scheduler: events[{k}] is {event}; an event is [\"start\"], \
                     [\"complete\", id], [\"fail\", id] or [\"skip\", id]"
                ))
            }
        };
        match result {
            Ok(ids) => ready.push(json!(ids)),
            Err(e) if k + 1 == events.len() => return Ok((ready, Some(e.into()))),
            Err(e) => {
                let e = Error::from(e);
                return Err(format!(
                    "events[{k}] failed ({}: {}), but an error may only come from the last event",
                    e.kind().as_str(),
                    e.message()
                ));
            }
        }
    }
    Ok((ready, None))
}

fn bug_text(f: Failure) -> String {
    match f {
        Failure::Bug(b) => b,
        Failure::Core(e) => format!("unexpected core error {}", e.to_json()),
    }
}

/// Compares two JSON values: numbers within [`TOLERANCE`], everything else
/// exactly (objects key by key, both ways). Returns where they differ.
fn differs(expected: &Value, actual: &Value, at: &str) -> Option<String> {
    match (expected, actual) {
        (Value::Number(e), Value::Number(a)) => {
            let (e, a) = (e.as_f64()?, a.as_f64()?);
            ((e - a).abs() > TOLERANCE).then(|| format!("{at}: expected {e}, got {a}"))
        }
        (Value::Array(e), Value::Array(a)) => {
            if e.len() != a.len() {
                return Some(format!(
                    "{at}: expected {} items {expected}, got {} items {actual}",
                    e.len(),
                    a.len()
                ));
            }
            e.iter()
                .zip(a)
                .enumerate()
                .find_map(|(i, (e, a))| differs(e, a, &format!("{at}[{i}]")))
        }
        (Value::Object(e), Value::Object(a)) => {
            let keys: BTreeSet<&String> = e.keys().chain(a.keys()).collect();
            keys.into_iter().find_map(|k| match (e.get(k), a.get(k)) {
                (Some(ev), Some(av)) => differs(ev, av, &format!("{at}.{k}")),
                (Some(_), None) => Some(format!("{at}.{k}: expected, but absent")),
                (None, Some(av)) => Some(format!("{at}.{k}: unexpected {av}")),
                (None, None) => None,
            })
        }
        _ => (expected != actual).then(|| format!("{at}: expected {expected}, got {actual}")),
    }
}

/// Compares the fields of `expect` with the same fields of `answer`.
fn compare_expect(expect: &Value, answer: &Value) -> Result<(), String> {
    let Value::Object(fields) = expect else {
        return Err("`expect` must be an object".into());
    };
    for (key, expected) in fields {
        let Some(actual) = answer.get(key) else {
            return Err(format!(
                "`expect.{key}` is not a field of this op's answer {answer}"
            ));
        };
        if let Some(d) = differs(expected, actual, key) {
            return Err(format!("{d}\n  answer: {answer}"));
        }
    }
    Ok(())
}

/// Compares a case's `error` with the core's error: kind and code always,
/// message when given, each given detail.
fn compare_error(expected: &Value, actual: &Error) -> Result<(), String> {
    let Value::Object(fields) = expected else {
        return Err("`error` must be an object".into());
    };
    if let Some(unknown) = fields
        .keys()
        .find(|k| !["kind", "code", "message", "details"].contains(&k.as_str()))
    {
        return Err(format!("unknown field `error.{unknown}`"));
    }
    let (Some(kind), Some(code)) = (fields.get("kind"), fields.get("code")) else {
        return Err("`error` needs `kind` and `code`".into());
    };
    let shown = actual.to_json();
    let mismatch = |what: String| Err(format!("{what}\n  error: {shown}"));
    if kind != actual.kind().as_str() || code != actual.code() {
        return mismatch(format!(
            "expected {kind}/{code}, got {}/{}",
            actual.kind().as_str(),
            actual.code()
        ));
    }
    if let Some(message) = fields.get("message") {
        if message != actual.message() {
            return mismatch(format!(
                "message differs:\n  expected {message}\n  got      {}",
                json!(actual.message())
            ));
        }
    }
    if let Some(details) = fields.get("details") {
        let Value::Object(details) = details else {
            return Err("`error.details` must be an object".into());
        };
        for (key, expected) in details {
            let Some(got) = actual.details().get(key) else {
                return mismatch(format!("detail `{key}` is absent"));
            };
            if let Some(d) = differs(expected, got, &format!("details.{key}")) {
                return mismatch(d);
            }
        }
    }
    Ok(())
}

mod files;
