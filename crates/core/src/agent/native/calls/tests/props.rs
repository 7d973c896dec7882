//! The call reader's tests: properties.

use super::*;
use proptest::prelude::*;
use serde_json::json;

/// Byte offsets of `s` on char boundaries, from arbitrary numbers.
fn cuts(s: &str, raw: &[usize]) -> Vec<usize> {
    let mut at: Vec<usize> = raw
        .iter()
        .map(|r| {
            let mut i = r % (s.len() + 1);
            while !s.is_char_boundary(i) {
                i -= 1;
            }
            i
        })
        .collect();
    at.sort_unstable();
    at.dedup();
    at
}

/// Pieces of text for arbitrary replies: markup, JSON, and noise.
fn snippet() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("<tool_call>".to_string()),
        Just("</tool_call>".to_string()),
        Just("<function=read_file>".to_string()),
        Just("<function=nope>".to_string()),
        Just("<parameter=path>".to_string()),
        Just("<parameter=limit>\n5\n".to_string()),
        Just("</parameter>".to_string()),
        Just("</function>".to_string()),
        Just("```json\n".to_string()),
        Just("```".to_string()),
        Just("{\"name\": \"grep\", \"arguments\": {\"pattern\": ".to_string()),
        Just("{'name': 'Read', 'parameters': ".to_string()),
        Just("\"x\"".to_string()),
        Just("[{".to_string()),
        Just("}".to_string()),
        Just("]".to_string()),
        Just("\\".to_string()),
        Just("\n".to_string()),
        ".{0,8}",
    ]
}

fn finish_reason() -> impl Strategy<Value = Option<FinishReason>> {
    prop_oneof![
        Just(None),
        Just(Some(FinishReason::Stop)),
        Just(Some(FinishReason::Length)),
        Just(Some(FinishReason::ToolCalls)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any split of a valid call's arguments into fragments reads back the
    /// same call.
    #[test]
    fn any_fragment_split_reads_back(
        path in "[a-z/._-]{1,20}",
        content in any::<String>(),
        raw_cuts in proptest::collection::vec(any::<usize>(), 0..8),
        indexed in any::<bool>(),
        finish in finish_reason(),
    ) {
        let args = json!({"path": path, "content": content});
        let text = args.to_string();
        let at = cuts(&text, &raw_cuts);
        let mut bounds = vec![0];
        bounds.extend(at);
        bounds.push(text.len());
        let index = indexed.then_some(3);
        let mut frags = vec![frag(index, Some("call_w"), Some("write_file"), "")];
        for w in bounds.windows(2) {
            frags.push(frag(index, None, None, &text[w[0]..w[1]]));
        }
        let r = read(frags, "", finish);
        prop_assert!(r.rejected.is_empty());
        prop_assert_eq!(r.calls.len(), 1);
        prop_assert_eq!(&r.calls[0].call, &ToolCall { id: "call_w".into(), name: "write_file".into(), arguments: args });
        prop_assert_eq!(r.calls[0].source, CallSource::Structured);
    }

    /// An XML call written with any path and content reads back the same.
    #[test]
    fn xml_calls_read_back(path in "[a-z/._-]{1,20}", content in "[^<]{0,80}", finish in finish_reason()) {
        let text = format!("ok\n<tool_call>\n<function=write_file>\n<parameter=path>\n{path}\n</parameter>\n<parameter=content>\n{content}\n</parameter>\n</function>\n</tool_call>");
        let r = text_only(&text, finish);
        prop_assert_eq!(r.calls.len(), 1);
        prop_assert_eq!(&r.calls[0].call.arguments, &json!({"path": path, "content": content}));
        prop_assert_eq!(r.text, "ok");
    }

    /// Arbitrary text never panics and never yields a call to a tool not
    /// offered.
    #[test]
    fn arbitrary_text_keeps_the_invariants(
        parts in proptest::collection::vec(snippet(), 0..24),
        finish in finish_reason(),
    ) {
        let text = parts.concat();
        let r = text_only(&text, finish.clone());
        check_invariants(&r, &tools());
        if finish == Some(FinishReason::Length) {
            prop_assert!(r.calls.iter().all(|c| c.source == CallSource::FromText));
        }
    }

    /// Arbitrary fragments never panic and keep the invariants; the counts
    /// add up to the calls read.
    #[test]
    fn arbitrary_fragments_keep_the_invariants(
        frags in proptest::collection::vec(
            (
                proptest::option::of(0u64..3),
                proptest::option::of(prop_oneof![Just("a"), Just("b"), Just("")]),
                proptest::option::of(prop_oneof![Just("read_file"), Just("ReadFile"), Just("edit"), Just("nope"), Just("")]),
                snippet(),
            ),
            0..12,
        ),
        text in ".{0,40}",
        finish in finish_reason(),
    ) {
        let frags = frags
            .into_iter()
            .map(|(index, id, name, args)| frag(index, id, name, &args))
            .collect();
        let r = read(frags, &text, finish);
        check_invariants(&r, &tools());
        let mut counts = CallsRead::default();
        r.count_into(&mut counts);
        let total = counts.structured + counts.repaired + counts.from_text + counts.malformed + counts.cut;
        prop_assert_eq!(total as usize, r.calls.len() + r.rejected.len());
    }

    /// The repair never panics and, when it answers, answers JSON.
    #[test]
    fn repair_never_panics(parts in proptest::collection::vec(snippet(), 0..24)) {
        let text = parts.concat();
        let _ = super::json::repair(&text);
        let _ = super::json::is_complete(&text);
        if let Some(fixed) = super::json::fix_escapes(&text) {
            prop_assert!(fixed.len() >= text.len());
        }
    }
}

#[test]
fn large_adversarial_replies_are_read_in_linear_time() {
    // Each about 200 KB; a quadratic scan would take minutes here.
    let texts = [
        "<function=x".repeat(20_000),
        "<tool_call>{".repeat(20_000),
        "<tool_call><function=run>".repeat(8_000),
        "<parameter=a>".repeat(15_000),
        "```json\n".repeat(25_000),
        format!(
            "<tool_call>{{'name': 'run', 'arguments': {{'command': x{}y}}",
            " ".repeat(200_000)
        ),
        format!(
            "<function=write_file>\n<parameter=content>{}",
            "<".repeat(200_000)
        ),
    ];
    let start = std::time::Instant::now();
    for text in &texts {
        for finish in [None, Some(FinishReason::Length)] {
            let r = text_only(text, finish);
            check_invariants(&r, &tools());
        }
    }
    let args = format!("{{'command': x{}y", " ".repeat(200_000));
    let r = one("run", &args);
    check_invariants(&r, &tools());
    assert!(
        start.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
}
