//! Untrusted content and needle: `locate` and `apply_edit` must never panic,
//! and a found span must lie on char boundaries inside the content.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // First NUL splits content from needle; second one splits off a replacement.
    let mut parts = text.splitn(3, '\0');
    let content = parts.next().unwrap_or("");
    let needle = parts.next().unwrap_or("");
    let new = parts.next().unwrap_or("x");
    let m = coderig::locate(content, needle);
    if let Some(span) = &m.span {
        assert!(span.start <= span.end && span.end <= content.len());
        assert!(content.is_char_boundary(span.start) && content.is_char_boundary(span.end));
    }
    let edit = coderig::Edit {
        old: needle.to_string(),
        new: new.to_string(),
        replace_all: data.len() % 2 == 0,
    };
    let _ = coderig::apply_edit(content, &edit);
});
