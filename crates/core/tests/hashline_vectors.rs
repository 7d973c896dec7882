//! The shared hashline vectors: every entry must pass.

use coderig::edit::hashline;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn load(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).expect("vectors are JSON")
}

fn vectors() -> Value {
    load(&repo_root().join("tests/vectors/hashline.json"))
}

fn entries<'a>(v: &'a Value, key: &str) -> &'a Vec<Value> {
    let list = v[key].as_array().expect("a list of vectors");
    assert!(!list.is_empty(), "no {key} vectors");
    list
}

#[test]
fn in_repo_copy_equals_shared_vectors_when_present() {
    let shared = repo_root().join("../shared/vectors/hashline.json");
    if shared.exists() {
        assert_eq!(
            vectors(),
            load(&shared),
            "tests/vectors/hashline.json differs from ../shared/vectors/hashline.json"
        );
    }
}

#[test]
fn xxhash32_vectors() {
    for v in entries(&vectors(), "xxhash32") {
        let input = v["input"].as_str().unwrap();
        let seed = u32::try_from(v["seed"].as_u64().unwrap()).unwrap();
        let want = v["hash"].as_u64().unwrap();
        assert_eq!(
            u64::from(coderig::xxhash32(input.as_bytes(), seed)),
            want,
            "xxhash32({input:?}, {seed})"
        );
    }
}

#[test]
fn line_hash_vectors() {
    for v in entries(&vectors(), "line_hash") {
        let line = usize::try_from(v["line"].as_u64().unwrap()).unwrap();
        let content = v["content"].as_str().unwrap();
        assert_eq!(
            hashline::line_hash(line, content),
            v["hash"].as_str().unwrap(),
            "line_hash({line}, {content:?})"
        );
        assert_eq!(
            hashline::legacy_line_hash(line, content),
            v["legacy"].as_str().unwrap(),
            "legacy_line_hash({line}, {content:?})"
        );
    }
}

#[test]
fn format_vectors() {
    for v in entries(&vectors(), "format") {
        let content = v["content"].as_str().unwrap();
        assert_eq!(
            hashline::format(content),
            v["formatted"].as_str().unwrap(),
            "format({content:?})"
        );
    }
}

#[test]
fn format_agrees_with_line_hash_on_every_line() {
    let content = "fn main() {\r\n    let x = 1;\r\n\r\n}\r\n  \n\u{2028}\nlast";
    let formatted = hashline::format(content);
    let shown: Vec<&str> = formatted.split('\n').collect();
    let raw: Vec<&str> = content.split('\n').collect();
    assert_eq!(shown.len(), raw.len());
    for (i, (s, r)) in shown.iter().zip(&raw).enumerate() {
        let text = r.strip_suffix('\r').unwrap_or(r);
        assert_eq!(
            *s,
            format!("{}#{}|{}", i + 1, hashline::line_hash(i + 1, r), text)
        );
    }
}

#[test]
fn format_numbers_lines_across_digit_boundaries() {
    let content = "x\n".repeat(1200);
    let formatted = hashline::format(&content);
    for (i, line) in formatted.split('\n').enumerate() {
        let n = i + 1;
        let text = if n == 1201 { "" } else { "x" };
        assert_eq!(line, format!("{n}#{}|{text}", hashline::line_hash(n, text)));
    }
}
