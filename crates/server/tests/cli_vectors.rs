//! The CLI face of the shared vectors: every `apply_edit` / `apply_edits`
//! case of `tests/vectors/{edit,errors}.json`, piped as its request to
//! `coderig edit --json`, must give the answer (or the error's kind, code,
//! message and details) the vector pins — the same body as the HTTP API.

use serde_json::Value;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn vectors(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/vectors")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).expect("vector file"))
        .expect("vector JSON")
}

/// `coderig edit --json` on `request`: (exit code, the JSON on stdout).
fn edit_json(request: &Value) -> (i32, Value) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_coderig"))
        .args(["edit", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn coderig");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(request.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let body = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    (out.status.code().unwrap_or(-1), body)
}

/// Runs every edit case of `file`; returns how many ran.
fn run_file(file: &str) -> usize {
    let doc = vectors(file);
    let mut ran = 0;
    let mut failures = Vec::new();
    for case in doc["cases"].as_array().expect("cases") {
        let op = case["op"].as_str().unwrap_or_default();
        if op != "apply_edit" && op != "apply_edits" {
            continue;
        }
        ran += 1;
        let name = case["name"].as_str().unwrap_or("?");
        let (code, body) = edit_json(&case["input"]);
        if let Some(expect) = case.get("expect") {
            if code != 0 || body["ok"] != true {
                failures.push(format!("{name}: expected success, got exit {code}: {body}"));
                continue;
            }
            for (key, want) in expect.as_object().unwrap() {
                if &body[key] != want {
                    failures.push(format!("{name}: {key} = {}, expected {want}", body[key]));
                }
            }
        } else {
            let want = &case["error"];
            let got = &body["error"];
            if body["ok"] != false || code == 0 {
                failures.push(format!(
                    "{name}: expected an error, got exit {code}: {body}"
                ));
                continue;
            }
            for key in ["kind", "code", "message"] {
                if want.get(key).is_some() && got[key] != want[key] {
                    failures.push(format!(
                        "{name}: {key} = {}, expected {}",
                        got[key], want[key]
                    ));
                }
            }
            if let Some(details) = want.get("details").and_then(Value::as_object) {
                for (key, value) in details {
                    if &got[key] != value {
                        failures.push(format!(
                            "{name}: details.{key} = {}, expected {value}",
                            got[key]
                        ));
                    }
                }
            }
            let kind: coderig::ErrorKind =
                got["kind"].as_str().unwrap_or_default().parse().unwrap();
            if code != kind.exit_code() {
                failures.push(format!(
                    "{name}: exit {code}, expected {} for {kind}",
                    kind.exit_code()
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{file}: {} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    ran
}

#[test]
fn edit_vectors_through_the_cli() {
    assert!(run_file("edit.json") > 10);
}

#[test]
fn error_vectors_through_the_cli() {
    assert!(run_file("errors.json") > 3);
}
