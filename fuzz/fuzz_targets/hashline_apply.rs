//! Untrusted content and untrusted edit JSON: `hashline::apply` must answer
//! with a result or a typed error, never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (content, edits_json) = text.split_once('\0').unwrap_or((text, "[]"));
    let Ok(edits) = serde_json::from_str::<Vec<coderig::hashline::HashlineEdit>>(edits_json) else {
        // Still exercise the formatter on arbitrary content.
        let _ = coderig::hashline::format(content);
        return;
    };
    let _ = coderig::hashline::apply(content, &edits);
});
