//! Plain text output: every line is text.

use crate::agent::AgentEvent;

/// One `TextDelta` of `line` plus its newline: a trailing `\n` or `\r\n`
/// is normalized to one `\n`, and one is added when the line has none, so
/// the deltas of a stream's lines concatenate back to its text. Empty lines
/// give `"\n"` too: a blank line separates paragraphs of the answer.
pub fn parse_text_line(line: &str) -> Vec<AgentEvent> {
    let body = line
        .strip_suffix('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .unwrap_or(line);
    let mut text = String::with_capacity(body.len() + 1);
    text.push_str(body);
    text.push('\n');
    vec![AgentEvent::TextDelta { text }]
}
