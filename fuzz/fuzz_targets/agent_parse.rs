//! Agent CLIs print whatever they like on stdout (banners, warnings, cut
//! lines, new event types): every stream parser must take any line without
//! panicking, and the stream parser must agree with the line parser on
//! everything but repeated session announcements.
#![no_main]
use coderig::agent::parse::{parse_line, StreamFormat, StreamParser};
use coderig::agent::AgentEvent;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for format in StreamFormat::ALL {
        let mut stream = StreamParser::new(*format);
        for line in text.split('\n') {
            let all = parse_line(*format, line);
            let kept = stream.line(line);
            let others = |events: &[AgentEvent]| {
                events
                    .iter()
                    .filter(|e| !matches!(e, AgentEvent::SessionStarted { .. }))
                    .cloned()
                    .collect::<Vec<_>>()
            };
            assert_eq!(others(&all), others(&kept));
        }
    }
});
