//! Each vectors file run in full, the directory and case names checked, and the runner checked to fail what it must.

use super::*;

/// Runs one case; `Err` says why it failed.
fn run_case(case: &Value) -> Result<(), String> {
    let Value::Object(fields) = case else {
        return Err("a case must be an object".into());
    };
    if let Some(unknown) = fields
        .keys()
        .find(|k| !["name", "op", "input", "expect", "error"].contains(&k.as_str()))
    {
        return Err(format!("unknown case field `{unknown}`"));
    }
    let op = case["op"].as_str().ok_or("a case needs a string `op`")?;
    let input = fields.get("input").ok_or("a case needs an `input`")?;
    let (expect, error) = (fields.get("expect"), fields.get("error"));

    if op == "flow_scheduler" {
        // `ready` lines up with the events that succeeded: with an `error`
        // (from the last event), one list fewer than there are events.
        if expect.is_none() && error.is_none() {
            return Err("a case needs `expect` or `error`".into());
        }
        let (ready, got_error) = run_scheduler(input)?;
        match (error, got_error) {
            (Some(e), Some(got)) => compare_error(e, &got)?,
            (Some(_), None) => return Err(format!("expected an error, got ready {ready:?}")),
            (None, Some(got)) => {
                return Err(format!(
                    "unexpected error {} after ready {ready:?}",
                    got.to_json()
                ))
            }
            (None, None) => {}
        }
        if let Some(expect) = expect {
            compare_expect(expect, &json!({ "ready": ready }))?;
        }
        return Ok(());
    }

    let outcome = run_op(op, input);
    match (expect, error, outcome) {
        (Some(_), Some(_), _) => Err("a case has `expect` or `error`, not both".into()),
        (None, None, _) => Err("a case needs `expect` or `error`".into()),
        (_, _, Err(Failure::Bug(b))) => Err(format!("bad vector: {b}")),
        (Some(expect), None, Ok(answer)) => compare_expect(expect, &answer),
        (Some(_), None, Err(Failure::Core(e))) => Err(format!("unexpected error {}", e.to_json())),
        (None, Some(_), Ok(answer)) => Err(format!("expected an error, got {answer}")),
        (None, Some(error), Err(Failure::Core(e))) => compare_error(error, &e),
    }
}

fn load(file: &str) -> Value {
    let path = vectors_dir().join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{file} is not JSON: {e}"))
}

fn cases(file: &str) -> Vec<Value> {
    let v = load(file);
    let Value::Object(top) = &v else {
        panic!("{file}: the top level must be an object");
    };
    if let Some(unknown) = top
        .keys()
        .find(|k| !["description", "cases"].contains(&k.as_str()))
    {
        panic!("{file}: unknown top-level field `{unknown}`");
    }
    assert!(
        top.get("description").is_some_and(Value::is_string),
        "{file}: needs a `description`"
    );
    let cases = top
        .get("cases")
        .and_then(Value::as_array)
        .unwrap_or_else(|| panic!("{file}: needs a list of `cases`"))
        .clone();
    assert!(!cases.is_empty(), "{file}: has no case");
    cases
}

/// Runs every case of `file` and fails with the list of every failing case.
fn run_file(file: &str) {
    let mut failures = Vec::new();
    let mut names = BTreeSet::new();
    let cases = cases(file);
    for (i, case) in cases.iter().enumerate() {
        let name = case["name"].as_str().unwrap_or("<unnamed>");
        if !case["name"].is_string() {
            failures.push(format!("case {i}: needs a string `name`"));
        } else if !names.insert(name.to_owned()) {
            failures.push(format!("case {i} {name:?}: the name is not unique"));
        }
        if file == "errors.json" && case["error"]["message"].as_str().is_none() {
            failures.push(format!(
                "case {i} {name:?}: every case of errors.json is an `error` with a `message`"
            ));
        }
        if let Err(why) = run_case(case) {
            failures.push(format!("case {i} {name:?} ({}): {why}", case["op"]));
        }
    }
    assert!(
        failures.is_empty(),
        "{file}: {} of {} cases failed:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

#[test]
fn the_directory_holds_exactly_the_known_files() {
    let mut found: Vec<String> = std::fs::read_dir(vectors_dir())
        .expect("tests/vectors exists")
        .map(|e| {
            e.expect("a directory entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|n| n.ends_with(".json"))
        .collect();
    found.sort();
    let mut known: Vec<String> = FILES.iter().map(|f| f.to_string()).collect();
    known.push("hashline.json".into());
    known.sort();
    assert_eq!(
        found, known,
        "every vector file must be run here (add a new one to FILES)"
    );
}

#[test]
fn case_names_are_unique_across_files() {
    let mut seen = std::collections::BTreeMap::new();
    for file in FILES {
        for case in cases(file) {
            if let Some(name) = case["name"].as_str() {
                if let Some(other) = seen.insert(name.to_owned(), *file) {
                    panic!("case name {name:?} is in both {other} and {file}");
                }
            }
        }
    }
}

#[test]
fn edit_vectors() {
    run_file("edit.json");
}

#[test]
fn locate_vectors() {
    run_file("locate.json");
}

#[test]
fn guards_vectors() {
    run_file("guards.json");
}

#[test]
fn hashline_ops_vectors() {
    run_file("hashline_ops.json");
}

#[test]
fn flow_vectors() {
    run_file("flow.json");
}

#[test]
fn arena_vectors() {
    run_file("arena.json");
}

#[test]
fn model_vectors() {
    run_file("model.json");
}

#[test]
fn errors_vectors() {
    run_file("errors.json");
}

/// The runner itself: a wrong expectation, an unreadable vector or a
/// misplaced error must fail a case, so that a passing file means something.
#[test]
fn the_runner_fails_what_it_must() {
    let spec =
        json!({"steps": [{"id": "a", "kind": "code"}, {"id": "b", "kind": "code", "deps": ["a"]}]});
    let cases = [
        (
            "a right answer",
            json!({"name": "n", "op": "locate", "input": {"content": "ab", "needle": "b"},
                   "expect": {"kind": "exact", "start": 1, "score": 1.0000000001}}),
            true,
        ),
        (
            "a wrong answer",
            json!({"name": "n", "op": "locate", "input": {"content": "ab", "needle": "b"},
                   "expect": {"start": 0}}),
            false,
        ),
        (
            "a field the answer lacks",
            json!({"name": "n", "op": "locate", "input": {"content": "ab", "needle": "b"},
                   "expect": {"tier": "exact"}}),
            false,
        ),
        (
            "an unknown op",
            json!({"name": "n", "op": "apply_patch", "input": {}, "expect": {}}),
            false,
        ),
        (
            "an unknown input field",
            json!({"name": "n", "op": "locate", "input": {"content": "ab", "needle": "b", "path": "x"},
                   "expect": {}}),
            false,
        ),
        (
            "a plain argument of the wrong type",
            json!({"name": "n", "op": "locate", "input": {"content": 1, "needle": "b"}, "expect": {}}),
            false,
        ),
        (
            "an unknown case field",
            json!({"name": "n", "op": "locate", "input": {"content": "ab", "needle": "b"},
                   "expect": {}, "note": "x"}),
            false,
        ),
        (
            "both expect and error",
            json!({"name": "n", "op": "locate", "input": {"content": "ab", "needle": ""},
                   "expect": {}, "error": {"kind": "invalid_input", "code": "INVALID_INPUT"}}),
            false,
        ),
        (
            "the right error",
            json!({"name": "n", "op": "locate", "input": {"content": "ab", "needle": ""},
                   "error": {"kind": "invalid_input", "code": "INVALID_INPUT"}}),
            true,
        ),
        (
            "a wrong message",
            json!({"name": "n", "op": "locate", "input": {"content": "ab", "needle": ""},
                   "error": {"kind": "invalid_input", "code": "INVALID_INPUT", "message": "empty"}}),
            false,
        ),
        (
            "a detail that is absent",
            json!({"name": "n", "op": "locate", "input": {"content": "ab", "needle": ""},
                   "error": {"kind": "invalid_input", "code": "INVALID_INPUT", "details": {"path": "needle"}}}),
            false,
        ),
        (
            "an expected error that does not come",
            json!({"name": "n", "op": "locate", "input": {"content": "ab", "needle": "b"},
                   "error": {"kind": "invalid_input", "code": "INVALID_INPUT"}}),
            false,
        ),
        (
            "a scheduler error from the last event, with the ready lists before it",
            json!({"name": "n", "op": "flow_scheduler",
                   "input": {"spec": spec, "events": [["start"], ["complete", "b"]]},
                   "expect": {"ready": [["a"]]},
                   "error": {"kind": "conflict", "code": "CONFLICT"}}),
            true,
        ),
        (
            "a scheduler error from an earlier event",
            json!({"name": "n", "op": "flow_scheduler",
                   "input": {"spec": spec, "events": [["start"], ["complete", "b"], ["complete", "a"]]},
                   "error": {"kind": "conflict", "code": "CONFLICT"}}),
            false,
        ),
        (
            "an unknown scheduler event",
            json!({"name": "n", "op": "flow_scheduler",
                   "input": {"spec": spec, "events": [["start"], ["timeout", "a"]]},
                   "expect": {"ready": [["a"], []]}}),
            false,
        ),
        (
            "a flow with a condition",
            json!({"name": "n", "op": "flow_ready_steps",
                   "input": {"spec": {"steps": [{"id": "a", "kind": "code", "when": "true"}]}, "state": {}},
                   "expect": {"ready": ["a"]}}),
            false,
        ),
    ];
    for (what, case, passes) in cases {
        let outcome = run_case(&case);
        assert_eq!(outcome.is_ok(), passes, "{what}: {outcome:?}");
    }
}
