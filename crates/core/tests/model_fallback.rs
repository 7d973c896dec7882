//! Fallback chains: parsing (`provider/model(variant)`), typed errors,
//! walking, and the most specific entry for a model id.

use coderig::model::{ErrorClass, FallbackChain, FallbackEntry, FallbackErrorReason};

fn entry(s: &str) -> FallbackEntry {
    s.parse().unwrap_or_else(|e| panic!("{s:?}: {e}"))
}

/// (text, provider, model, variant, canonical)
type Parsed = (
    &'static str,
    Option<&'static str>,
    &'static str,
    Option<&'static str>,
    &'static str,
);

#[test]
fn entries_parse() {
    let cases: &[Parsed] = &[
        (
            "openai/gpt-5",
            Some("openai"),
            "gpt-5",
            None,
            "openai/gpt-5",
        ),
        ("gpt-5", None, "gpt-5", None, "gpt-5"),
        (
            "openai/gpt-5(high)",
            Some("openai"),
            "gpt-5",
            Some("high"),
            "openai/gpt-5(high)",
        ),
        (
            "  openai/gpt-5 ( high )  ",
            Some("openai"),
            "gpt-5",
            Some("high"),
            "openai/gpt-5(high)",
        ),
        (
            "openai/gpt-5 high",
            Some("openai"),
            "gpt-5",
            Some("high"),
            "openai/gpt-5(high)",
        ),
        (
            "openai/gpt-5 XHIGH",
            Some("openai"),
            "gpt-5",
            Some("xhigh"),
            "openai/gpt-5(xhigh)",
        ),
        (
            "gpt-5(custom-budget_2)",
            None,
            "gpt-5",
            Some("custom-budget_2"),
            "gpt-5(custom-budget_2)",
        ),
        (
            "openrouter/qwen/qwen3-coder",
            Some("openrouter"),
            "qwen/qwen3-coder",
            None,
            "openrouter/qwen/qwen3-coder",
        ),
        (
            "ollama/qwen3-coder:30b",
            Some("ollama"),
            "qwen3-coder:30b",
            None,
            "ollama/qwen3-coder:30b",
        ),
        (
            "anthropic/claude-sonnet-4-5 thinking",
            Some("anthropic"),
            "claude-sonnet-4-5",
            Some("thinking"),
            "anthropic/claude-sonnet-4-5(thinking)",
        ),
    ];
    for &(text, provider, model, variant, canonical) in cases {
        let e = entry(text);
        assert_eq!(
            (e.provider(), e.model(), e.variant()),
            (provider, model, variant),
            "{text:?}"
        );
        assert_eq!(e.to_string(), canonical);
        assert_eq!(entry(canonical), e, "canonical form parses back");
    }
    assert_eq!(entry("openai/gpt-5(high)").id(), "openai/gpt-5");
    assert_eq!(entry("gpt-5").id(), "gpt-5");
}

#[test]
fn bad_entries_are_typed_errors() {
    use FallbackErrorReason::*;
    let cases: &[(&str, FallbackErrorReason)] = &[
        ("", Empty),
        ("   ", Empty),
        ("/gpt-5", EmptyProvider),
        ("openai/", EmptyModel),
        ("openai//gpt-5", EmptyModel),
        ("openai/gpt-5/", EmptyModel),
        ("(high)", EmptyModel),
        ("openai/(high)", EmptyModel),
        ("gpt-5(high", UnclosedVariant),
        ("gpt-5()", EmptyVariant),
        ("gpt-5( )", EmptyVariant),
        ("gpt-5(high)x", TextAfterVariant),
        ("gpt-5(high) low", TextAfterVariant),
        ("gpt-5(a)(b)", TextAfterVariant),
        ("gpt-5 ultra", UnknownVariant),
        ("gpt 5", UnknownVariant),
        ("gpt 5 high", BadCharacter),
        ("gpt-5)", BadCharacter),
        ("gpt-5(hi gh)", BadCharacter),
        ("gpt\t-5(high)", BadCharacter),
        ("open ai/gpt-5(high)", BadCharacter),
    ];
    for &(text, reason) in cases {
        let err = FallbackChain::parse(["ok/model", text]).unwrap_err();
        assert_eq!((err.index, err.reason), (1, reason), "{text:?}: {err}");
        assert_eq!(err.entry, text);
        assert!(err.to_string().starts_with("fallback entry [1] "), "{err}");
    }
    let err = FallbackChain::parse(["gpt 5"]).unwrap_err();
    assert!(err.message().contains("low, medium, high"), "{err}");
}

#[test]
fn duplicates_are_refused_and_errors_convert() {
    let err =
        FallbackChain::parse(["openai/gpt-5(high)", "qwen3", "OpenAI/GPT-5 HIGH"]).unwrap_err();
    assert_eq!((err.index, err.reason), (2, FallbackErrorReason::Duplicate));
    assert!(err.message().contains("[0] openai/gpt-5(high)"), "{err}");
    // The same model with another variant is another entry.
    assert!(
        FallbackChain::parse(["openai/gpt-5(high)", "openai/gpt-5(low)", "openai/gpt-5"]).is_ok()
    );

    let e = coderig::Error::from(err);
    assert_eq!(e.code(), "INVALID_INPUT");
    assert_eq!(e.details()["index"], 2);
    assert_eq!(e.details()["reason"], "duplicate");
    assert_eq!(e.details()["entry"], "OpenAI/GPT-5 HIGH");
}

#[test]
fn walking_the_chain() {
    let chain = FallbackChain::parse([
        "anthropic/claude-sonnet-4-5",
        "openai/gpt-5(high)",
        "qwen3-coder",
    ])
    .unwrap();
    assert_eq!(chain.len(), 3);
    // (current, class, next)
    let cases: &[(usize, ErrorClass, Option<usize>)] = &[
        (0, ErrorClass::Retry, Some(0)),
        (0, ErrorClass::Fallback, Some(1)),
        (1, ErrorClass::Fallback, Some(2)),
        (2, ErrorClass::Fallback, None), // exhausted
        (2, ErrorClass::Retry, Some(2)),
        (0, ErrorClass::Stop, None),
        (1, ErrorClass::Fatal, None),
        (3, ErrorClass::Retry, None), // not an index
        (usize::MAX, ErrorClass::Fallback, None),
    ];
    for &(current, class, next) in cases {
        assert_eq!(chain.next(current, class), next, "{current} after {class}");
    }
    let empty = FallbackChain::parse(Vec::<String>::new()).unwrap();
    assert!(empty.is_empty());
    assert_eq!(empty.next(0, ErrorClass::Retry), None);
}

#[test]
fn most_specific_entry_stops_at_token_boundaries() {
    let chain = FallbackChain::parse([
        "openai/gpt-5",
        "openai/gpt-5-mini",
        "gpt-4o",
        "anthropic/claude-opus-4-1",
    ])
    .unwrap();
    // (model id, index) — seed column: its prefix test had no boundary.
    let cases: &[(&str, Option<usize>)] = &[
        ("openai/gpt-5", Some(0)),
        ("openai/gpt-5:latest", Some(0)),
        ("openai/gpt-5-mini-2025", Some(1)), // the longer prefix
        ("openai/gpt-50", None),             // the seed: openai/gpt-5
        ("OpenAI/GPT-5", Some(0)),
        ("azure/gpt-4o-2024", Some(2)), // a bare entry matches the model part
        ("gpt-4o", Some(2)),
        ("gpt-4omni", None),
        ("anthropic/claude-opus-4.1-20250805", Some(3)), // normalized minor version
        ("anthropic/claude-opus-4-20250514", None),
    ];
    for &(id, expected) in cases {
        assert_eq!(chain.most_specific(id), expected, "{id}");
    }
}

#[test]
fn serde_is_a_list_of_strings() {
    let chain: FallbackChain = serde_json::from_str(r#"["openai/gpt-5 high", "qwen3"]"#).unwrap();
    assert_eq!(
        serde_json::to_string(&chain).unwrap(),
        r#"["openai/gpt-5(high)","qwen3"]"#
    );
    let err = serde_json::from_str::<FallbackChain>(r#"["ok", "/x"]"#).unwrap_err();
    assert!(
        err.to_string().contains("fallback entry [1] \"/x\""),
        "{err}"
    );
    let one: FallbackEntry = serde_json::from_str(r#""a/b(c)""#).unwrap();
    assert_eq!(one.variant(), Some("c"));
}
