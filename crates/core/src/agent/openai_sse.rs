//! Server-sent events framing (pure): bytes in, events out, whatever the
//! chunking of the bytes.
//!
//! Follows the WHATWG event-stream rules a chat-completions client needs:
//! lines end with `\r\n`, `\n` or `\r`; `data:` lines of one event are
//! joined with `\n`; one space after the colon is dropped; `event:` names
//! the event; `id:` and `retry:` are ignored; lines starting with `:` are
//! comments (keep-alives); a blank line ends an event, and an event without
//! `data` is not dispatched.

/// One dispatched server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` name, when the server gave one.
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

/// The decoder's input broke a bound.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("server-sent event larger than {limit} bytes")]
pub struct SseTooLarge {
    /// The bound that was passed, in bytes.
    pub limit: usize,
}

/// An incremental event-stream decoder: [`SseDecoder::push`] takes the
/// bytes as they arrive (split anywhere, even inside a UTF-8 sequence or
/// between `\r` and `\n`) and returns the events they complete.
///
/// Guarantees: splitting an input at any positions yields the same events
/// as pushing it whole; never panics; memory is bounded by the limit (an
/// event or line larger than it is an error, not an allocation spree).
#[derive(Debug, Clone)]
pub struct SseDecoder {
    line: Vec<u8>,
    data: String,
    has_data: bool,
    event: Option<String>,
    /// The previous byte ended a line with `\r`: a `\n` next belongs to it.
    after_cr: bool,
    limit: usize,
}

/// The default bound on one line or event: 16 MiB, far above any chunk a
/// model server sends, far below what would hurt the process.
pub const DEFAULT_SSE_LIMIT: usize = 16 << 20;

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl SseDecoder {
    /// A decoder bounded by [`DEFAULT_SSE_LIMIT`].
    pub fn new() -> Self {
        Self::with_limit(DEFAULT_SSE_LIMIT)
    }

    /// A decoder whose lines and events may not exceed `limit` bytes.
    pub fn with_limit(limit: usize) -> Self {
        SseDecoder {
            line: Vec::new(),
            data: String::new(),
            has_data: false,
            event: None,
            after_cr: false,
            limit,
        }
    }

    /// Decodes `bytes`, returning the events they complete, in order.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, SseTooLarge> {
        let mut out = Vec::new();
        let mut rest = bytes;
        while !rest.is_empty() {
            if self.after_cr {
                self.after_cr = false;
                if rest[0] == b'\n' {
                    rest = &rest[1..];
                    continue;
                }
            }
            match memchr::memchr2(b'\n', b'\r', rest) {
                Some(i) => {
                    self.extend_line(&rest[..i])?;
                    self.after_cr = rest[i] == b'\r';
                    rest = &rest[i + 1..];
                    let line = std::mem::take(&mut self.line);
                    if let Some(ev) = self.take_line(&line)? {
                        out.push(ev);
                    }
                }
                None => {
                    self.extend_line(rest)?;
                    rest = &[];
                }
            }
        }
        Ok(out)
    }

    /// Ends the stream: an event whose blank line never came (the server
    /// closed right after its last `data:` line) is dispatched rather than
    /// lost, so a final `data: [DONE]` without a blank line still counts.
    pub fn finish(&mut self) -> Result<Option<SseEvent>, SseTooLarge> {
        let line = std::mem::take(&mut self.line);
        if !line.is_empty() {
            self.take_line(&line)?;
        }
        Ok(self.dispatch())
    }

    fn extend_line(&mut self, bytes: &[u8]) -> Result<(), SseTooLarge> {
        if self.line.len() + bytes.len() > self.limit {
            return Err(SseTooLarge { limit: self.limit });
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    /// Takes one complete line (without its terminator).
    fn take_line(&mut self, line: &[u8]) -> Result<Option<SseEvent>, SseTooLarge> {
        if line.is_empty() {
            return Ok(self.dispatch());
        }
        if line[0] == b':' {
            return Ok(None);
        }
        let (name, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &[][..]),
        };
        match name {
            b"data" => {
                if self.data.len() + value.len() + 1 > self.limit {
                    return Err(SseTooLarge { limit: self.limit });
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&String::from_utf8_lossy(value));
                self.has_data = true;
            }
            b"event" => self.event = Some(String::from_utf8_lossy(value).into_owned()),
            _ => {}
        }
        Ok(None)
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        if !std::mem::take(&mut self.has_data) {
            return None;
        }
        Some(SseEvent {
            event,
            data: std::mem::take(&mut self.data),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn decode_whole(input: &[u8]) -> Vec<SseEvent> {
        let mut d = SseDecoder::new();
        let mut out = d.push(input).unwrap();
        out.extend(d.finish().unwrap());
        out
    }

    fn decode_split(input: &[u8], cuts: &[usize]) -> Vec<SseEvent> {
        let mut d = SseDecoder::new();
        let mut out = Vec::new();
        let mut start = 0;
        for &cut in cuts {
            out.extend(d.push(&input[start..cut]).unwrap());
            start = cut;
        }
        out.extend(d.push(&input[start..]).unwrap());
        out.extend(d.finish().unwrap());
        out
    }

    fn data(s: &str) -> SseEvent {
        SseEvent {
            event: None,
            data: s.into(),
        }
    }

    #[test]
    fn framing_table() {
        let named = |e: &str, s: &str| SseEvent {
            event: Some(e.into()),
            data: s.into(),
        };
        let cases: &[(&str, &[u8], Vec<SseEvent>)] = &[
            ("one event", b"data: {\"a\":1}\n\n", vec![data("{\"a\":1}")]),
            (
                "crlf",
                b"data: x\r\n\r\ndata: y\r\n\r\n",
                vec![data("x"), data("y")],
            ),
            (
                "lone cr",
                b"data: x\r\rdata: y\r\r",
                vec![data("x"), data("y")],
            ),
            (
                "multi-line data",
                b"data: a\ndata: b\n\n",
                vec![data("a\nb")],
            ),
            ("no space after colon", b"data:x\n\n", vec![data("x")]),
            ("only one space dropped", b"data:  x\n\n", vec![data(" x")]),
            ("comment", b": keep-alive\n\ndata: x\n\n", vec![data("x")]),
            (
                "event name",
                b"event: error\ndata: {}\n\n",
                vec![named("error", "{}")],
            ),
            (
                "id and retry ignored",
                b"id: 7\nretry: 10\ndata: x\n\n",
                vec![data("x")],
            ),
            (
                "event without data",
                b"event: ping\n\ndata: x\n\n",
                vec![data("x")],
            ),
            ("empty data line", b"data\n\n", vec![data("")]),
            ("blank lines alone", b"\n\n\r\n", vec![]),
            ("unknown field", b"foo: bar\ndata: x\n\n", vec![data("x")]),
            (
                "no final blank line",
                b"data: [DONE]\n",
                vec![data("[DONE]")],
            ),
            ("no final newline", b"data: [DONE]", vec![data("[DONE]")]),
            (
                "utf-8",
                "data: héllo ✓\n\n".as_bytes(),
                vec![data("héllo ✓")],
            ),
            (
                "bad utf-8 replaced",
                b"data: \xff\n\n",
                vec![data("\u{fffd}")],
            ),
        ];
        for (name, input, want) in cases {
            assert_eq!(&decode_whole(input), want, "{name}");
        }
    }

    #[test]
    fn a_line_over_the_limit_is_an_error() {
        let mut d = SseDecoder::with_limit(8);
        assert_eq!(d.push(b"data: 12"), Ok(vec![]));
        assert_eq!(d.push(b"3"), Err(SseTooLarge { limit: 8 }));
        let mut d = SseDecoder::with_limit(8);
        assert!(d.push(b"data: 1234\ndata: 1234\n").is_err());
    }

    const STREAM: &[u8] = b": hello\r\n\
        data: {\"choices\":[{\"delta\":{\"content\":\"h\xc3\xa9\"}}]}\r\n\r\n\
        event: message\ndata: a\ndata: b\n\n\
        data: c\r\rdata:d\r\n\
        \n\
        data: [DONE]\n\n";

    #[test]
    fn every_single_split_gives_the_same_events() {
        let whole = decode_whole(STREAM);
        assert_eq!(whole.len(), 5);
        for cut in 0..=STREAM.len() {
            assert_eq!(decode_split(STREAM, &[cut]), whole, "cut at {cut}");
        }
        let bytewise: Vec<usize> = (1..STREAM.len()).collect();
        assert_eq!(decode_split(STREAM, &bytewise), whole);
    }

    proptest! {
        #[test]
        fn any_splits_give_the_same_events(
            parts in proptest::collection::vec(
                prop_oneof![
                    Just("data: x\n".to_string()),
                    Just("data: é\r\n".to_string()),
                    Just("\r".to_string()),
                    Just("\n".to_string()),
                    Just("\r\n".to_string()),
                    Just(": c\n".to_string()),
                    Just("event: e\n".to_string()),
                    "[a-z: ]{0,6}",
                ],
                0..20,
            ),
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..6),
        ) {
            let input = parts.concat().into_bytes();
            let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(input.len() + 1)).collect();
            cuts.sort_unstable();
            prop_assert_eq!(decode_split(&input, &cuts), decode_whole(&input));
        }
    }
}
