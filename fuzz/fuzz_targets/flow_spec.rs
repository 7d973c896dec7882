//! A flow spec is untrusted text (an HTTP body, a file in `--flows DIR`):
//! `FlowSpec::parse` and `compile` must refuse garbage with an error, never
//! panic, and whatever they accept must survive the canonical JSON round trip.
#![no_main]
use coderig::flow::FlowSpec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(spec) = FlowSpec::parse(text) else {
        return;
    };
    let again = FlowSpec::from_json(&spec.to_json()).expect("the canonical form decodes");
    assert_eq!(again, spec);
    let _ = spec.compile();
});
