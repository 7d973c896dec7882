//! The `coderig` binary's edit and hashline subcommands, run as a process on
//! temporary files: outputs, exit codes (0 ok, 1 refusal, 2 bad input or
//! usage, 3 IO) and files left untouched on refusal.

use coderig::hashline::line_hash;
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Runs `coderig ARGS` with `stdin` piped in.
fn coderig(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_coderig"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn stdout_of(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr_of(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

/// `coderig edit --json` with `request` on stdin: exit code and the stdout document.
fn edit_json(request: &str) -> (i32, Value) {
    let output = coderig(&["edit", "--json"], request);
    let document = serde_json::from_str(&stdout_of(&output))
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {output:?}"));
    (output.status.code().unwrap(), document)
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn edit_json_applies_and_answers_on_stdout() {
    let cases = [
        (
            json!({"content": "a\nb\n", "old": "b", "new": "c"}),
            json!({"ok": true, "content": "a\nc\n", "tier": "exact", "replacements": 1}),
        ),
        (
            json!({"content": "b b", "old": "b", "new": "$0", "replace_all": true}),
            json!({"ok": true, "content": "$0 $0", "tier": "exact", "replacements": 2}),
        ),
        (
            json!({"content": "a b", "edits": [{"old": "a", "new": "x"}, {"old": "b", "new": "y"}]}),
            json!({"ok": true, "content": "x y", "tier": "exact", "replacements": 2}),
        ),
    ];
    for (request, expected) in cases {
        let output = coderig(&["edit", "--json"], &request.to_string());
        assert!(
            stdout_of(&output).starts_with("{\"ok\":true,"),
            "{output:?}"
        );
        let (code, document) = edit_json(&request.to_string());
        assert_eq!(code, 0, "{request}: {document}");
        assert_eq!(document, expected);
    }
}

#[test]
fn edit_json_refusals_and_bad_input_have_kinds_and_exit_codes() {
    let python = "import os\nimport sys\n\nprint(os.name, sys.path)\n";
    let cases = [
        (
            json!({"content": "alpha\n", "old": "omega", "new": "x"}).to_string(),
            1,
            "not_found",
        ),
        (
            json!({"content": "x\nx\n", "old": "x", "new": "y"}).to_string(),
            1,
            "ambiguous",
        ),
        (
            json!({"content": python, "old": "import os\nimport sys\n", "new": "", "path": "m.py"})
                .to_string(),
            1,
            "guard",
        ),
        (
            json!({"content": "a", "old": "a", "new": "a"}).to_string(),
            1,
            "no_op",
        ),
        (
            json!({"content": "a", "old": "", "new": "b"}).to_string(),
            2,
            "invalid_input",
        ),
        (
            json!({"content": "a", "old": "a", "new": "b", "bogus": true}).to_string(),
            2,
            "invalid_input",
        ),
        ("{\"content\": ".to_owned(), 2, "invalid_input"),
        (String::new(), 2, "invalid_input"),
    ];
    for (request, expected_code, kind) in cases {
        let (code, document) = edit_json(&request);
        assert_eq!(code, expected_code, "{request}: {document}");
        assert_eq!(document["ok"], false, "{document}");
        assert_eq!(document["error"]["kind"], kind, "{request}: {document}");
        assert_eq!(document["error"]["code"], kind.to_ascii_uppercase());
        assert!(!document["error"]["message"].as_str().unwrap().is_empty());
    }
    // guards can be turned off in the request
    let (code, document) = edit_json(
        &json!({"content": python, "old": "import os\nimport sys\n", "new": "", "path": "m.py", "guards": false})
            .to_string(),
    );
    assert_eq!(code, 0, "{document}");
    assert_eq!(document["content"], "\nprint(os.name, sys.path)\n");
}

#[test]
fn edit_file_in_place_with_old_and_new_files() {
    let dir = tempfile::tempdir().unwrap();
    let target = write(dir.path(), "main.rs", "fn main() {\r\n    old();\r\n}\r\n");
    let old = write(dir.path(), "old.txt", "old();");
    let new = write(dir.path(), "new.txt", "new();");
    let output = coderig(
        &["edit", &target, "--old-file", &old, "--new-file", &new],
        "",
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert_eq!(read(&target), "fn main() {\r\n    new();\r\n}\r\n");
    assert!(
        stdout_of(&output).contains("1 replacement (exact tier)"),
        "{output:?}"
    );
}

#[test]
fn edit_file_with_inline_text_and_replace_all() {
    let dir = tempfile::tempdir().unwrap();
    let target = write(dir.path(), "a.txt", "x x x\n");
    let output = coderig(
        &["edit", &target, "--old", "x", "--new", "y", "--replace-all"],
        "",
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert_eq!(read(&target), "y y y\n");
    assert!(stdout_of(&output).contains("3 replacements"), "{output:?}");
}

#[test]
fn edit_file_refusals_leave_the_file_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let python = "import os\nimport sys\n\nprint(os.name, sys.path)\n";
    let cases: [(&str, &[&str], i32, &str); 5] = [
        ("x\nx\n", &["--old", "x", "--new", "y"], 1, "ambiguous"),
        ("abc\n", &["--old", "zzz", "--new", "y"], 1, "not_found"),
        ("abc\n", &["--old", "abc", "--new", "abc"], 1, "no_op"),
        (
            python,
            &["--old", "import os\nimport sys\n", "--new", ""],
            1,
            "guard",
        ),
        ("abc\n", &["--old", "", "--new", "y"], 2, "invalid_input"),
    ];
    for (content, flags, expected, kind) in cases {
        let target = write(dir.path(), "t.py", content);
        let mut args = vec!["edit", target.as_str()];
        args.extend_from_slice(flags);
        let output = coderig(&args, "");
        assert_eq!(output.status.code(), Some(expected), "{kind}: {output:?}");
        assert!(
            stderr_of(&output).contains(&format!("{kind}: ")),
            "{output:?}"
        );
        assert_eq!(read(&target), content, "{kind}: file must be untouched");
    }
    // --no-guards lets the import removal through
    let target = write(dir.path(), "t.py", python);
    let output = coderig(
        &[
            "edit",
            &target,
            "--old",
            "import os\nimport sys\n",
            "--new",
            "",
            "--no-guards",
        ],
        "",
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(read(&target), "\nprint(os.name, sys.path)\n");
}

#[test]
fn edit_usage_and_io_errors() {
    let dir = tempfile::tempdir().unwrap();
    let target = write(dir.path(), "a.txt", "abc\n");
    let missing = dir.path().join("missing.txt");
    let missing = missing.to_str().unwrap();
    let cases: [(Vec<&str>, i32); 5] = [
        // usage: no FILE, no --old, both --old and --old-file, --json with a FILE
        (vec!["edit"], 2),
        (vec!["edit", &target, "--new", "x"], 2),
        (
            vec![
                "edit",
                &target,
                "--old",
                "a",
                "--old-file",
                &target,
                "--new",
                "x",
            ],
            2,
        ),
        (vec!["edit", "--json", &target], 2),
        // the file to edit does not exist
        (vec!["edit", missing, "--old", "a", "--new", "b"], 3),
    ];
    for (args, expected) in cases {
        let output = coderig(&args, "");
        assert_eq!(output.status.code(), Some(expected), "{args:?}: {output:?}");
        if args.contains(&"--json") {
            // --json answers bad usage as JSON too, on stdout.
            let body: Value = serde_json::from_str(&stdout_of(&output)).unwrap();
            assert_eq!(body["error"]["kind"], "invalid_input", "{args:?}");
        } else {
            assert!(!stderr_of(&output).is_empty(), "{args:?}");
        }
    }
    assert_eq!(read(&target), "abc\n");
}

#[test]
fn hashline_format_prints_the_anchored_file() {
    let dir = tempfile::tempdir().unwrap();
    let target = write(dir.path(), "a.txt", "one\ntwo\n");
    let output = coderig(&["hashline", "format", &target], "");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(
        stdout_of(&output),
        format!("{}\n", coderig::hashline::format("one\ntwo\n"))
    );
    assert!(stdout_of(&output).starts_with(&format!("1#{}|one\n", line_hash(1, "one"))));
    // `-` reads stdin
    let output = coderig(&["hashline", "format", "-"], "one\ntwo\n");
    assert_eq!(
        stdout_of(&output),
        format!("{}\n", coderig::hashline::format("one\ntwo\n"))
    );
}

#[test]
fn hashline_apply_edits_in_place_from_a_file_or_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let target = write(dir.path(), "a.txt", "one\ntwo\nthree\n");
    let edits =
        json!([{"op": "replace", "pos": format!("2#{}", line_hash(2, "two")), "lines": ["TWO"]}]);
    let edits_file = write(dir.path(), "edits.json", &edits.to_string());
    let output = coderig(&["hashline", "apply", &target, &edits_file], "");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(read(&target), "one\nTWO\nthree\n");
    assert!(stdout_of(&output).contains("1 hashline edit applied"));

    let edits =
        json!([{"op": "append", "pos": format!("3#{}", line_hash(3, "three")), "lines": "four"}]);
    let output = coderig(&["hashline", "apply", &target, "-"], &edits.to_string());
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(read(&target), "one\nTWO\nthree\nfour\n");
}

#[test]
fn hashline_apply_refusals_leave_the_file_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let content = "one\ntwo\n";
    let real = line_hash(2, "two");
    let stale = if real == "ZZ" { "PP" } else { "ZZ" };
    let cases = [
        (
            json!([{"op": "replace", "pos": format!("2#{stale}"), "lines": ["x"]}]).to_string(),
            1,
            "hashline_mismatch",
        ),
        (
            json!([{"op": "replace", "pos": "9#ZZ", "lines": ["x"]}]).to_string(),
            2,
            "invalid_input",
        ),
        (
            json!([{"op": "explode", "pos": "1#ZZ"}]).to_string(),
            2,
            "invalid_input",
        ),
        ("not json".to_owned(), 2, "invalid_input"),
    ];
    for (edits, expected, kind) in cases {
        let target = write(dir.path(), "a.txt", content);
        let output = coderig(&["hashline", "apply", &target, "-"], &edits);
        assert_eq!(output.status.code(), Some(expected), "{kind}: {output:?}");
        assert!(
            stderr_of(&output).contains(&format!("{kind}: ")),
            "{output:?}"
        );
        assert_eq!(read(&target), content, "{kind}: file must be untouched");
    }
}

/// `edit --json` answers exactly the core's error body for a bad request,
/// and `hashline apply` prints the core decoder's message: the same words
/// as `POST /api/edit` and the Python and Node faces.
#[test]
fn bad_input_gets_the_core_decoders_message() {
    for request in [
        json!({"content": "a", "edits": [{"old": 1, "new": "b"}]}),
        json!({"content": "a", "old": "a", "new": "b", "bogus": true}),
        json!(["not", "an", "object"]),
        json!({"content": "a", "old": "a", "new": "b", "edits": [["a", "b"]]}),
    ] {
        let (code, document) = edit_json(&request.to_string());
        let expected =
            coderig::json::decode_str::<coderig::json::EditRequest>(&request.to_string())
                .and_then(|r| r.apply())
                .unwrap_err();
        assert_eq!(document, expected.body(), "{request}");
        assert_eq!(code, 2, "{request}");
    }
    let dir = tempfile::tempdir().unwrap();
    let target = write(dir.path(), "a.txt", "one\n");
    let edits = json!([{"op": "replace", "pos": "1#ZZ", "lines": [], "extra": 1}]);
    let output = coderig(&["hashline", "apply", &target, "-"], &edits.to_string());
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let expected = coderig::json::hashline_edits(edits).unwrap_err();
    assert_eq!(
        stderr_of(&output).trim_end(),
        format!("coderig hashline: invalid_input: {}", expected.message())
    );
}
