//! What `coderig run` checks before its rig opens: the spec (decoded and
//! compiled by the core), the input of `--input` / `--input-json`, who
//! decides the approval steps, and the rig's options.

use super::{Approvals, Args};
use crate::cmd::rig::RigArgs;
use coderig::flow::runspec::{FlowSpec, StepAction};
use coderig::rig::RigConfig;
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::io::IsTerminal;
use std::time::Duration;

/// What `run` checked before any store is opened, and the rig it opens.
pub(super) struct Prepared {
    pub(super) spec: FlowSpec,
    /// The spec's file, as given (its problems are said of it).
    pub(super) file: String,
    pub(super) input: Value,
    pub(super) config: RigConfig,
    pub(super) approvals: Approvals,
}

/// The run's input: `--input-json`'s object with every `--input KEY=VALUE`
/// added. `invalid_input` for JSON that is not an object, a pair without
/// `=` or with an empty key, and a key given twice (by two `--input`s, or
/// by `--input` and `--input-json`).
fn parse_input(input_json: Option<&str>, pairs: &[String]) -> Result<Value, coderig::Error> {
    let mut map = match input_json {
        None => Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => map,
            Ok(other) => {
                return Err(coderig::Error::invalid_at(
                    "input-json",
                    format!("--input-json must be a JSON object, got {other}"),
                ))
            }
            Err(e) => {
                return Err(coderig::Error::invalid_at(
                    "input-json",
                    format!("--input-json is not JSON: {e}"),
                ))
            }
        },
    };
    let from_json: BTreeSet<String> = map.keys().cloned().collect();
    let mut given = BTreeSet::new();
    for pair in pairs {
        let Some((key, raw)) = pair.split_once('=') else {
            return Err(coderig::Error::invalid_at(
                "input",
                format!("--input {pair:?}: expected KEY=VALUE"),
            ));
        };
        let key = key.trim();
        if key.is_empty() {
            return Err(coderig::Error::invalid_at(
                "input",
                format!("--input {pair:?}: the key is empty (expected KEY=VALUE)"),
            ));
        }
        if !given.insert(key.to_string()) {
            return Err(coderig::Error::invalid_at(
                &format!("input.{key}"),
                format!("--input {key} is given twice"),
            ));
        }
        if from_json.contains(key) {
            return Err(coderig::Error::invalid_at(
                &format!("input.{key}"),
                format!("--input {key} repeats a key of --input-json"),
            ));
        }
        // JSON when it is JSON (numbers, booleans, objects, quoted
        // strings), the text itself otherwise: `--input q=What is X?`.
        let value =
            serde_json::from_str::<Value>(raw).unwrap_or_else(|_| Value::String(raw.to_string()));
        map.insert(key.to_string(), value);
    }
    Ok(Value::Object(map))
}

/// Every check that needs no store: the spec (decoded and compiled, every
/// problem with its path), the input, the approval mode, the config, the
/// project roots. A failure here leaves nothing behind.
pub(super) fn prepare(args: &Args, rig: &RigArgs) -> Result<Prepared, coderig::Error> {
    if !args.flow.exists() {
        return Err(coderig::Error::invalid_input(format!(
            "{}: no such file (give a flow spec: .yaml, .yml or .json)",
            args.flow.display()
        ))
        .with_detail("path", "FLOW"));
    }
    let spec = FlowSpec::load(&args.flow)?;
    // The compiler's problems name paths inside the spec; say which file.
    let file = args.flow.display().to_string();
    spec.compile().map_err(|e| e.in_file(&file))?;
    let input = parse_input(args.input_json.as_deref(), &args.inputs)?;
    let approval_steps: Vec<&str> = spec
        .steps
        .iter()
        .filter(|s| matches!(s.action, StepAction::Approval(_)))
        .map(|s| s.id.as_str())
        .collect();
    let approvals = match (args.approve, args.reject) {
        (true, _) => Approvals::Auto(true),
        (_, true) => Approvals::Auto(false),
        _ => Approvals::Ask,
    };
    if approvals == Approvals::Ask && !approval_steps.is_empty() && !std::io::stdin().is_terminal()
    {
        return Err(coderig::Error::invalid_input(format!(
            "the flow has approval steps ({}) and stdin is not a terminal, so nobody could \
             answer them: pass --approve or --reject, run it on a terminal, or start it on a \
             server (coderig serve; POST /api/runs) and decide with \
             POST /api/runs/RUN_ID/steps/STEP/approve (or /reject)",
            approval_steps.join(", ")
        ))
        .with_detail("path", "approve"));
    }
    let mut config = rig.config()?;
    // Its own battle or run only: beside a server on the same store, the
    // server's work stays the server's.
    config.only_own_work = true;
    // The current directory by default; the rig resolves them (a root that
    // is not a directory is refused there, naming it).
    config.project_roots = args.project_roots.clone();
    // A person watches: notice the next step sooner than a server would.
    config.poll = Some(Duration::from_millis(200));
    Ok(Prepared {
        spec,
        file,
        input,
        config,
        approvals,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn inputs_are_json_when_they_parse_and_text_otherwise() {
        let pairs: Vec<String> = [
            "n=3",
            "ok=true",
            "obj={\"a\":1}",
            "q=What is X?",
            "quoted=\"7\"",
            "empty=",
            "eq=a=b",
            "zero=007",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let input = parse_input(Some(r#"{"base": [1]}"#), &pairs).unwrap();
        assert_eq!(
            input,
            json!({"base": [1], "n": 3, "ok": true, "obj": {"a": 1}, "q": "What is X?",
                   "quoted": "7", "empty": "", "eq": "a=b", "zero": "007"})
        );
    }

    #[test]
    fn bad_inputs_are_invalid_input() {
        let cases: Vec<(Option<&str>, Vec<&str>, &str)> = vec![
            (None, vec!["a=1", "a=2"], "given twice"),
            (Some(r#"{"a": 1}"#), vec!["a=2"], "repeats a key"),
            (None, vec!["novalue"], "KEY=VALUE"),
            (None, vec!["=1"], "key is empty"),
            (Some("[1]"), vec![], "JSON object"),
            (Some("{"), vec![], "not JSON"),
        ];
        for (json_arg, pairs, says) in cases {
            let pairs: Vec<String> = pairs.iter().map(|s| s.to_string()).collect();
            let e = parse_input(json_arg, &pairs).unwrap_err();
            assert_eq!(e.kind(), coderig::ErrorKind::InvalidInput, "{pairs:?}");
            assert!(e.message().contains(says), "{}", e.message());
        }
    }
}
