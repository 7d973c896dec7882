//! A model writes line refs by hand: `parse_ref` must reject garbage with a
//! typed error, never panic, and anything it accepts must round-trip.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(r) = coderig::hashline::parse_ref(text) {
        let again = coderig::hashline::parse_ref(&format!("{}#{}", r.line, r.hash))
            .expect("a canonical ref must parse");
        assert_eq!(again, r);
    }
});
