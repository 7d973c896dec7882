//! `match_model` against tables: every difference from the seed's
//! `fuzzyMatchModel` (what the seed said, what we say, and why), and the
//! ranking rules.

use coderig::model::{match_model, normalize_model};

/// The seed's `fuzzyMatchModel` as SEED-RUNTIME 7.1 documents it: the
/// Claude rewrite with any number of digits, a case-sensitive provider
/// filter, raw substring containment, and the first of the shortest in the
/// set's iteration order.
fn seed(target: &str, available: &[&str], providers: &[&str]) -> Option<String> {
    fn norm(s: &str) -> String {
        let s = s.to_lowercase();
        // claude-(opus|sonnet|haiku)-N[.-]M -> claude-x-N.M, M any digits.
        let mut out = s.clone();
        for family in ["opus", "sonnet", "haiku"] {
            let head = format!("claude-{family}-");
            if let Some(at) = s.find(&head) {
                let rest = &s[at + head.len()..];
                let n = rest.bytes().take_while(u8::is_ascii_digit).count();
                let after = &rest[n..];
                if n > 0
                    && (after.starts_with('-') || after.starts_with('.'))
                    && after[1..]
                        .bytes()
                        .next()
                        .is_some_and(|b| b.is_ascii_digit())
                {
                    out = format!("{}{}{}.{}", &s[..at], head, &rest[..n], &after[1..]);
                }
            }
        }
        out
    }
    let t = norm(target);
    let candidates: Vec<&str> = available
        .iter()
        .copied()
        .filter(|m| providers.is_empty() || providers.contains(&m.split('/').next().unwrap()))
        .filter(|m| norm(m).contains(&t))
        .collect();
    if let Some(exact) = candidates.iter().find(|m| norm(m) == t) {
        return Some(exact.to_string());
    }
    let shortest = |ms: Vec<&str>| {
        let mut best: Option<&str> = None;
        for m in ms {
            if best.is_none_or(|b| m.len() < b.len()) {
                best = Some(m);
            }
        }
        best.map(str::to_string)
    };
    let part: Vec<&str> = candidates
        .iter()
        .copied()
        .filter(|m| m.split_once('/').is_some_and(|(_, p)| norm(p) == t))
        .collect();
    if !part.is_empty() {
        return shortest(part);
    }
    shortest(candidates)
}

type Row = (
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
    Option<&'static str>,
    Option<&'static str>,
    &'static str,
);

/// (target, available, providers, seed said, we say, why)
const DIFFERENCES: &[Row] = &[
    (
        "gpt-4",
        &["openai/gpt-40-mini"],
        &[],
        Some("openai/gpt-40-mini"),
        None,
        "`gpt-40` is not `gpt-4`: containment stops at token boundaries",
    ),
    (
        "gpt-4",
        &["openai/gpt-4o", "openai/gpt-4-turbo"],
        &[],
        Some("openai/gpt-4o"),
        Some("openai/gpt-4-turbo"),
        "`gpt-4o` is another model; `gpt-4-turbo` is a gpt-4",
    ),
    (
        "qwen",
        &["qwen3-coder"],
        &[],
        Some("qwen3-coder"),
        None,
        "the digit belongs to the token: `qwen3` is not a `qwen` (name the family as written)",
    ),
    (
        "o1",
        &["openai/gpt-4o1-preview", "openai/o1"],
        &[],
        Some("openai/o1"),
        Some("openai/o1"),
        "(agreement kept as a guard: the model part wins)",
    ),
    (
        "claude-opus-4-2",
        &["anthropic/claude-opus-4-20250514"],
        &[],
        Some("anthropic/claude-opus-4-20250514"),
        None,
        "a date is not a minor version: 4-2 (not released) is not 4 of 2025-05-14",
    ),
    (
        "",
        &["b/x", "a"],
        &[],
        Some("a"),
        None,
        "an empty target names no model (every id contains the empty string)",
    ),
    (
        "gpt-5",
        &["zeta/gpt-5", "beta/gpt-5"],
        &[],
        Some("zeta/gpt-5"),
        Some("beta/gpt-5"),
        "ties break by name, so the answer does not depend on a set's order",
    ),
    (
        "gpt-4",
        &["OpenAI/gpt-4"],
        &["openai"],
        None,
        Some("OpenAI/gpt-4"),
        "providers compare like the ids: case-insensitively",
    ),
    (
        "sonnet-4",
        &["claude-sonnet-40"],
        &[],
        Some("claude-sonnet-40"),
        None,
        "whole tokens",
    ),
];

#[test]
fn every_difference_from_the_seed() {
    for &(target, available, providers, seed_said, ours, why) in DIFFERENCES {
        assert_eq!(
            seed(target, available, providers).as_deref(),
            seed_said,
            "the seed column is wrong for {target:?}"
        );
        if why.starts_with("(agreement") {
            assert_eq!(seed_said, ours);
        } else {
            assert_ne!(seed_said, ours, "not a difference: {target:?}");
        }
        assert_eq!(
            match_model(target, available, providers).as_deref(),
            ours,
            "{target:?} in {available:?} with {providers:?}: {why}"
        );
    }
}

#[test]
fn ranking_and_filters() {
    let served = [
        "openai/gpt-4o",
        "openai/gpt-4o-mini",
        "azure/gpt-4o",
        "gpt-4o",
        "anthropic/claude-sonnet-4-5-20250929",
        "anthropic/claude-opus-4-1",
        "anthropic/claude-opus-4-20250514",
        "vertex/claude-sonnet-4-5@20250929",
        "Qwen/Qwen3-Coder-30B-A3B-Instruct",
        "qwen3-coder:30b",
        "llama3.1:8b",
    ];
    // (target, providers, expected)
    let cases: &[(&str, &[&str], Option<&str>)] = &[
        ("gpt-4o", &[], Some("gpt-4o")), // exact beats model part
        ("GPT-4o", &["openai", "azure"], Some("azure/gpt-4o")), // model part, shortest, then by name
        ("gpt-4o", &["openai"], Some("openai/gpt-4o")),
        ("gpt-4o-mini", &[], Some("openai/gpt-4o-mini")),
        ("mini", &[], Some("openai/gpt-4o-mini")),
        ("gpt", &[], Some("gpt-4o")), // shortest containing
        ("gpt-4", &[], None),         // gpt-4o is not gpt-4
        (
            "claude-sonnet-4.5",
            &[],
            Some("vertex/claude-sonnet-4-5@20250929"),
        ),
        (
            "claude-sonnet-4-5",
            &["anthropic"],
            Some("anthropic/claude-sonnet-4-5-20250929"),
        ),
        ("claude-opus-4.1", &[], Some("anthropic/claude-opus-4-1")),
        ("claude-opus-4", &[], Some("anthropic/claude-opus-4-1")), // shortest containing
        (
            "claude-opus-4-20250514",
            &[],
            Some("anthropic/claude-opus-4-20250514"),
        ),
        ("qwen3-coder", &[], Some("qwen3-coder:30b")),
        (
            "qwen3-coder",
            &["qwen"],
            Some("Qwen/Qwen3-Coder-30B-A3B-Instruct"),
        ),
        ("qwen3", &[], Some("qwen3-coder:30b")),
        ("llama3.1", &[], Some("llama3.1:8b")),
        ("llama3", &[], Some("llama3.1:8b")), // `.` separates tokens
        ("llama", &[], None),
        ("30b", &[], Some("qwen3-coder:30b")),
        ("gpt-4o", &["mistral"], None),
        ("gpt-4o", &["  "], Some("gpt-4o")), // blank providers filter nothing
        ("gpt-4o", &["gpt-4o"], Some("gpt-4o")), // a bare id is its own provider
        ("-", &[], None),
        ("   ", &[], None),
    ];
    for &(target, providers, expected) in cases {
        assert_eq!(
            match_model(target, served, providers).as_deref(),
            expected,
            "{target:?} with {providers:?}"
        );
    }
    assert_eq!(match_model("gpt-4o", Vec::<String>::new(), &[]), None);
    let owned: Vec<String> = served.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        match_model("mini", &owned, &[]).as_deref(),
        Some("openai/gpt-4o-mini")
    );
}

#[test]
fn normalization() {
    assert_eq!(normalize_model(" Claude-Opus-4-1 "), "claude-opus-4.1");
    assert_eq!(
        normalize_model("claude-opus-4-20250514"),
        "claude-opus-4-20250514"
    );
}
