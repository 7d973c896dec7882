//! What the model sees of the transcript (pure).
//!
//! The whole transcript is kept (and written to the turn's artifacts);
//! each request gets a view of it, shaped in three moves, each only when
//! the previous one is not enough:
//! 1. **Elide old outputs.** A tool output more than [`KEEP_OUTPUTS`]
//!    steps old, and the long arguments of old calls (a `write_file`'s
//!    content), become a one-line marker. Always done: the SWE-agent
//!    ablation found keeping only the last few outputs better than all.
//! 2. **Summarize old steps.** When the estimated prompt passes 80 % of
//!    the context window, every step but the last few is replaced by one
//!    digest message, a line per call: what was called and what it
//!    answered. coderig writes the digest itself — no extra model request,
//!    nothing a small model can get wrong.
//! 3. **Make it fit.** While the prompt would not leave room for the
//!    reply, the digest loses its oldest lines, fewer recent steps are
//!    kept whole, and the last outputs are cut (head and tail).
//!
//! No request is shaped that the estimate says the window cannot hold:
//! [`shape`] answers an error instead, and the loop stops with it.
//!
//! Token counts are estimated as bytes ÷ 3 (+4 per message): more than
//! real tokenizers give for code and English (≈ 3.5–4 bytes a token), so
//! the estimate errs on the side of a request that fits.

use super::{Message, ToolCall, ToolSpec};
use serde_json::Value;

/// Tool outputs of this many most recent steps are shown whole.
pub const KEEP_OUTPUTS: usize = 3;
/// The share of the window past which old steps are summarized.
pub const SUMMARY_THRESHOLD: f64 = 0.8;
/// Outputs and argument strings shorter than this are never elided.
const ELIDE_OVER_CHARS: usize = 400;
/// One digest line is at most this long.
const DIGEST_LINE_CHARS: usize = 160;

/// The estimated tokens of `text`.
pub fn estimate_tokens(text: &str) -> u32 {
    u32::try_from(text.len().div_ceil(3)).unwrap_or(u32::MAX)
}

/// The estimated tokens of one message (its texts, its calls' names and
/// arguments, and a per-message overhead).
pub fn message_tokens(m: &Message) -> u32 {
    4 + match m {
        Message::User { text } => estimate_tokens(text),
        Message::Assistant { text, calls, .. } => {
            estimate_tokens(text)
                + calls
                    .iter()
                    .map(|c| {
                        8 + estimate_tokens(&c.name) + estimate_tokens(&c.arguments.to_string())
                    })
                    .sum::<u32>()
        }
        Message::Tool { output, .. } => 8 + estimate_tokens(output),
    }
}

/// The estimated tokens of what every request carries besides the
/// messages: the system prompt and the tools' schemas.
pub fn fixed_tokens(system: &str, tools: &[ToolSpec]) -> u32 {
    estimate_tokens(system)
        + tools
            .iter()
            .map(|t| {
                8 + estimate_tokens(&t.name)
                    + estimate_tokens(&t.description)
                    + estimate_tokens(&t.parameters.to_string())
            })
            .sum::<u32>()
}

/// The room a request has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// The context window, in tokens.
    pub window: u32,
    /// The output tokens reserved for the reply.
    pub reply: u32,
}

impl Budget {
    /// The budget of a window: the reply gets `max_output` tokens, but
    /// never more than a quarter of the window.
    pub fn new(window: u32, max_output: u32) -> Self {
        Budget {
            window,
            reply: max_output.min(window / 4).max(1),
        }
    }

    /// The most prompt tokens a request may carry.
    pub fn hard(&self) -> u32 {
        self.window.saturating_sub(self.reply)
    }

    /// The prompt size past which old steps are summarized.
    pub fn soft(&self) -> u32 {
        ((self.window as f64 * SUMMARY_THRESHOLD) as u32).min(self.hard())
    }
}

/// Whether `err` is a server refusing a request for its length (llama.cpp
/// `exceed_context_size_error`, vLLM's and OpenAI's "maximum context
/// length", Anthropic's "prompt is too long", Ollama's "context length").
/// Only a 400 / 413 / 422 answer counts: a 429 "rate limit exceeded" is
/// no context problem.
pub fn is_context_overflow(err: &crate::agent::AgentError) -> bool {
    if !matches!(err.http_status, Some(400 | 413 | 422)) {
        return false;
    }
    let m = err.message.to_ascii_lowercase();
    [
        "context size",
        "context length",
        "context window",
        "maximum context",
        "context_length",
        "exceed_context",
        "prompt is too long",
        "too many tokens",
        "n_ctx",
    ]
    .iter()
    .any(|needle| m.contains(needle))
}

/// The window to shape for after the server refused a request of about
/// `sent` estimated tokens for its length: 70 % of what was sent, since
/// the server counts more tokens than the estimate did (never under
/// 1,024, never above the old window).
pub fn shrunk_window(window: u32, sent: u32) -> u32 {
    ((sent as f64 * 0.7) as u32).clamp(1024, window.max(1024))
}

/// A shaped view and what shaping did.
#[derive(Debug, Clone, PartialEq)]
pub struct Shaped {
    /// The messages to send.
    pub messages: Vec<Message>,
    /// The estimated prompt tokens (fixed part included).
    pub tokens: u32,
    /// Outputs or arguments elided to a marker.
    pub elided: usize,
    /// Steps replaced by the digest.
    pub summarized: usize,
}

/// The view of `transcript` for a request whose system prompt and tools
/// take `fixed` tokens, within `budget`. `transcript` starts with the
/// task (every message before the first reply is kept as is); a step is a
/// reply with the messages that follow it. Fails with a message when even
/// the task alone does not fit.
pub fn shape(transcript: &[Message], fixed: u32, budget: Budget) -> Result<Shaped, String> {
    let head_len = transcript
        .iter()
        .position(|m| matches!(m, Message::Assistant { .. }))
        .unwrap_or(transcript.len());
    let head = &transcript[..head_len];
    let mut steps: Vec<Vec<Message>> = vec![];
    for m in &transcript[head_len..] {
        match (m, steps.last_mut()) {
            (Message::Assistant { .. }, _) | (_, None) => steps.push(vec![m.clone()]),
            (_, Some(step)) => step.push(m.clone()),
        }
    }
    let mut elided = 0;
    let old = steps.len().saturating_sub(KEEP_OUTPUTS);
    for step in &mut steps[..old] {
        for m in step.iter_mut() {
            elided += elide(m);
        }
    }
    let count = |head: &[Message], digest: Option<&Message>, steps: &[Vec<Message>]| -> u32 {
        fixed
            + head.iter().map(message_tokens).sum::<u32>()
            + digest.map_or(0, message_tokens)
            + steps.iter().flatten().map(message_tokens).sum::<u32>()
    };
    let head_tokens = count(head, None, &[]);
    if head_tokens > budget.hard() {
        return Err(format!(
            "the context window of {} tokens cannot hold the system prompt, the tools and the task \
             (about {head_tokens} tokens, with {} kept for the reply): use a model server with a larger \
             context (llama.cpp -c, Ollama num_ctx) or a shorter task",
            budget.window, budget.reply
        ));
    }
    let mut tokens = count(head, None, &steps);
    let mut summarized = 0;
    let mut digest_lines: Vec<String> = vec![];
    if tokens > budget.soft() && steps.len() > 1 {
        let mut keep = KEEP_OUTPUTS.min(steps.len() - 1);
        let mut recent = steps.split_off(steps.len() - keep);
        summarized = steps.len();
        digest_lines = steps.iter().flat_map(|s| digest(s)).collect();
        let mut omitted = 0usize;
        loop {
            let d = digest_message(&digest_lines, omitted);
            tokens = count(head, d.as_ref(), &recent);
            if tokens <= budget.hard() {
                break;
            }
            if !digest_lines.is_empty() {
                digest_lines.remove(0);
                omitted += 1;
            } else if keep > 1 {
                keep -= 1;
                let step = recent.remove(0);
                summarized += 1;
                digest_lines.extend(digest(&step));
            } else {
                break;
            }
        }
        steps = recent;
        let d = digest_message(&digest_lines, omitted);
        let mut messages: Vec<Message> = head.to_vec();
        messages.extend(d);
        let messages = fit_outputs(messages, steps, fixed, budget)?;
        let tokens = fixed + messages.iter().map(message_tokens).sum::<u32>();
        return Ok(Shaped {
            messages,
            tokens,
            elided,
            summarized,
        });
    }
    let messages = fit_outputs(head.to_vec(), steps, fixed, budget)?;
    let tokens = fixed + messages.iter().map(message_tokens).sum::<u32>();
    Ok(Shaped {
        messages,
        tokens,
        elided,
        summarized,
    })
}

/// `prefix` then `steps`, the steps' tool outputs cut (newest last) until
/// the whole fits the hard budget.
fn fit_outputs(
    mut prefix: Vec<Message>,
    steps: Vec<Vec<Message>>,
    fixed: u32,
    budget: Budget,
) -> Result<Vec<Message>, String> {
    let mut rest: Vec<Message> = steps.into_iter().flatten().collect();
    let total =
        |p: &[Message], r: &[Message]| fixed + p.iter().chain(r).map(message_tokens).sum::<u32>();
    let mut cap = 8000usize;
    while total(&prefix, &rest) > budget.hard() {
        if cap < 200 {
            return Err(format!(
                "the context window of {} tokens cannot hold the task and the latest step even with \
                 every output cut: use a model server with a larger context",
                budget.window
            ));
        }
        for m in rest.iter_mut() {
            match m {
                Message::Tool { output, .. } => cut_to(output, cap),
                Message::Assistant { calls, .. } => {
                    for c in calls.iter_mut() {
                        cut_strings(&mut c.arguments, cap);
                    }
                }
                Message::User { .. } => {}
            }
        }
        cap /= 2;
    }
    prefix.append(&mut rest);
    Ok(prefix)
}

fn cut_to(text: &mut String, cap: usize) {
    if let Some(cut) = super_cap(text, cap) {
        *text = cut;
    }
}

fn super_cap(text: &str, cap: usize) -> Option<String> {
    let total = text.chars().count();
    if total <= cap {
        return None;
    }
    let head: String = text.chars().take(cap / 2).collect();
    let tail: String = text.chars().skip(total - cap / 2).collect();
    Some(format!(
        "{head}\n[... {} characters cut to fit the context window ...]\n{tail}",
        total - cap
    ))
}

fn cut_strings(v: &mut Value, cap: usize) {
    match v {
        Value::String(s) => cut_to(s, cap),
        Value::Array(a) => a.iter_mut().for_each(|x| cut_strings(x, cap)),
        Value::Object(o) => o.values_mut().for_each(|x| cut_strings(x, cap)),
        _ => {}
    }
}

/// Elides a long output or long call arguments of an old step; how many
/// were elided.
fn elide(m: &mut Message) -> usize {
    match m {
        Message::Tool { name, output, .. } if output.chars().count() > ELIDE_OVER_CHARS => {
            let lines = output.lines().count();
            *output = format!(
                "[{name} output of {lines} lines elided: it is {} steps old; call the tool again if you need it]",
                KEEP_OUTPUTS
            );
            1
        }
        Message::Assistant { calls, .. } => calls
            .iter_mut()
            .map(|c| elide_arguments(&mut c.arguments))
            .sum(),
        _ => 0,
    }
}

fn elide_arguments(v: &mut Value) -> usize {
    match v {
        Value::String(s) if s.chars().count() > ELIDE_OVER_CHARS => {
            *s = format!("[{} characters elided]", s.chars().count());
            1
        }
        Value::Array(a) => a.iter_mut().map(elide_arguments).sum(),
        Value::Object(o) => o.values_mut().map(elide_arguments).sum(),
        _ => 0,
    }
}

/// The digest lines of one step: one per call, `- name(args) → first line
/// of its result`.
fn digest(step: &[Message]) -> Vec<String> {
    let Some(Message::Assistant { calls, text, .. }) = step.first() else {
        return vec![];
    };
    let result_of = |call: &ToolCall| {
        step.iter().find_map(|m| match m {
            Message::Tool {
                call_id, output, ..
            } if *call_id == call.id => Some(output.as_str()),
            _ => None,
        })
    };
    if calls.is_empty() {
        let said = first_line(text);
        return if said.is_empty() {
            vec![]
        } else {
            vec![clip(&format!("- said: {said}"))]
        };
    }
    calls
        .iter()
        .map(|c| {
            let answer = result_of(c).map(first_line).unwrap_or("(no result)");
            clip(&format!(
                "- {}({}) → {answer}",
                c.name,
                brief_arguments(&c.arguments)
            ))
        })
        .collect()
}

fn digest_message(lines: &[String], omitted: usize) -> Option<Message> {
    if lines.is_empty() && omitted == 0 {
        return None;
    }
    let mut text = String::from(
        "[Earlier steps, summarized by coderig to fit the context window; their outputs are gone, call a tool again if you need one]\n",
    );
    if omitted > 0 {
        text.push_str(&format!("- ... {omitted} earlier calls omitted\n"));
    }
    for l in lines {
        text.push_str(l);
        text.push('\n');
    }
    Some(Message::User { text })
}

fn brief_arguments(args: &Value) -> String {
    let Some(o) = args.as_object() else {
        return String::new();
    };
    o.iter()
        .map(|(k, v)| {
            let s = match v {
                Value::String(s) => first_line(s).to_string(),
                other => other.to_string(),
            };
            let s: String = s.chars().take(40).collect();
            format!("{k}={s}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn first_line(s: &str) -> &str {
    s.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
}

fn clip(s: &str) -> String {
    if s.chars().count() <= DIGEST_LINE_CHARS {
        s.to_string()
    } else {
        let mut c: String = s.chars().take(DIGEST_LINE_CHARS - 1).collect();
        c.push('…');
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user(t: &str) -> Message {
        Message::User { text: t.into() }
    }
    fn reply(id: &str, name: &str, args: Value) -> Message {
        Message::Assistant {
            text: String::new(),
            reasoning: String::new(),
            calls: vec![ToolCall {
                id: id.into(),
                name: name.into(),
                arguments: args,
            }],
        }
    }
    fn result(id: &str, name: &str, out: &str) -> Message {
        Message::Tool {
            call_id: id.into(),
            name: name.into(),
            output: out.into(),
            is_error: false,
        }
    }
    fn transcript(steps: usize, out_len: usize) -> Vec<Message> {
        let mut t = vec![user("Fix the bug in a.py")];
        for i in 0..steps {
            let id = format!("c{i}");
            t.push(reply(&id, "read_file", json!({"path": format!("f{i}.py")})));
            t.push(result(
                &id,
                "read_file",
                &format!("1|line of f{i}\n{}", "x".repeat(out_len)),
            ));
        }
        t
    }

    #[test]
    fn old_outputs_are_elided_and_recent_ones_kept() {
        let t = transcript(6, 1000);
        let s = shape(&t, 100, Budget::new(1_000_000, 4096)).unwrap();
        assert_eq!(s.elided, 3);
        assert_eq!(s.summarized, 0);
        assert_eq!(s.messages.len(), t.len());
        let outputs: Vec<bool> = s
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::Tool { output, .. } => Some(output.contains("elided")),
                _ => None,
            })
            .collect();
        assert_eq!(outputs, [true, true, true, false, false, false]);
        // Short outputs are never elided.
        let s = shape(&transcript(6, 10), 100, Budget::new(1_000_000, 4096)).unwrap();
        assert_eq!(s.elided, 0);
    }

    #[test]
    fn past_the_threshold_old_steps_become_a_digest_and_the_request_fits() {
        // (steps, output chars, window)
        for (steps, out, window) in [
            (20, 300, 4000),
            (40, 2000, 4000),
            (10, 5000, 2048),
            (3, 20_000, 4096),
        ] {
            let t = transcript(steps, out);
            let b = Budget::new(window, 4096);
            let s = shape(&t, 300, b).unwrap();
            assert!(
                s.tokens <= b.hard(),
                "{steps} {out} {window}: {} > {}",
                s.tokens,
                b.hard()
            );
            // The task comes first, the last step's call and result last.
            assert_eq!(s.messages[0], user("Fix the bug in a.py"));
            let last_id = format!("c{}", steps - 1);
            assert!(
                matches!(s.messages.last(), Some(Message::Tool { call_id, .. }) if *call_id == last_id)
            );
            // Every result follows its own call (no orphan tool message).
            let mut open: Vec<String> = vec![];
            for m in &s.messages {
                match m {
                    Message::Assistant { calls, .. } => {
                        open = calls.iter().map(|c| c.id.clone()).collect()
                    }
                    Message::Tool { call_id, .. } => assert!(open.contains(call_id)),
                    _ => {}
                }
            }
        }
        let s = shape(&transcript(20, 300), 300, Budget::new(4000, 4096)).unwrap();
        assert!(s.summarized > 0);
        assert!(s.messages.iter().any(|m| matches!(m, Message::User { text } if text.contains("read_file(path=f0.py) → 1|line of f0"))));
    }

    #[test]
    fn a_task_too_big_for_the_window_is_an_error() {
        let t = vec![user(&"x".repeat(30_000))];
        let e = shape(&t, 100, Budget::new(4096, 1024)).unwrap_err();
        assert!(e.contains("4096 tokens"), "{e}");
    }

    proptest::proptest! {
        /// Any transcript of parallel and single calls with outputs of any
        /// size, in any window: the view fits the hard budget (or the
        /// shaping refuses), starts with the task, pairs every result with
        /// a call of the reply before it, and ends with the last result.
        #[test]
        fn every_view_fits_and_keeps_calls_and_results_paired(
            steps in proptest::collection::vec((1usize..4, 0usize..6000, 0usize..600), 0..40),
            window in 1024u32..40_000,
            fixed in 0u32..900,
        ) {
            let mut t = vec![user("the task")];
            for (i, (calls, out, args)) in steps.iter().enumerate() {
                let ids: Vec<String> = (0..*calls).map(|c| format!("c{i}-{c}")).collect();
                t.push(Message::Assistant {
                    text: "x".repeat(*args / 10),
                    reasoning: String::new(),
                    calls: ids.iter().map(|id| ToolCall { id: id.clone(), name: "run".into(),
                        arguments: json!({"command": "y".repeat(*args)}) }).collect(),
                });
                for id in &ids {
                    t.push(result(id, "run", &"z\n".repeat(out / 2)));
                }
            }
            let b = Budget::new(window, 4096);
            match shape(&t, fixed, b) {
                Err(_) => {}
                Ok(s) => {
                    proptest::prop_assert!(s.tokens <= b.hard(), "{} > {}", s.tokens, b.hard());
                    proptest::prop_assert_eq!(&s.messages[0], &user("the task"));
                    let mut open: Vec<String> = vec![];
                    for m in &s.messages {
                        match m {
                            Message::Assistant { calls, .. } => open = calls.iter().map(|c| c.id.clone()).collect(),
                            Message::Tool { call_id, .. } => proptest::prop_assert!(open.contains(call_id)),
                            Message::User { .. } => {}
                        }
                    }
                    if let Some(Message::Tool { call_id, .. }) = t.last() {
                        let last_is_it = matches!(s.messages.last(), Some(Message::Tool { call_id: c, .. }) if c == call_id);
                        proptest::prop_assert!(last_is_it, "the last result is kept");
                    }
                }
            }
        }
    }

    #[test]
    fn context_overflow_refusals_are_recognized_by_status_and_words() {
        use crate::agent::{AgentError, AgentErrorKind};
        let err = |status, m: &str| {
            let mut e = AgentError::new(AgentErrorKind::Provider, m);
            e.http_status = status;
            e
        };
        for (status, message, want) in [
            (
                Some(400),
                "the request exceeds the available context size, try increasing it",
                true,
            ),
            (
                Some(400),
                "This model's maximum context length is 8192 tokens",
                true,
            ),
            (
                Some(400),
                "prompt is too long: 5000 tokens > 4096 maximum",
                true,
            ),
            (Some(413), "too many tokens", true),
            (Some(429), "rate limit exceeded for context", false),
            (Some(400), "invalid tool schema", false),
            (None, "maximum context length", false),
        ] {
            assert_eq!(
                is_context_overflow(&err(status, message)),
                want,
                "{status:?} {message}"
            );
        }
        assert_eq!(shrunk_window(8192, 8000), 5600);
        assert_eq!(shrunk_window(8192, 100), 1024);
        assert_eq!(shrunk_window(4096, 9000), 4096);
    }

    #[test]
    fn long_arguments_of_old_calls_are_elided() {
        let mut t = vec![user("write it")];
        for i in 0..5 {
            let id = format!("w{i}");
            t.push(reply(
                &id,
                "write_file",
                json!({"path": "a", "content": "y".repeat(2000)}),
            ));
            t.push(result(&id, "write_file", "Wrote a"));
        }
        let s = shape(&t, 10, Budget::new(1_000_000, 100)).unwrap();
        assert_eq!(s.elided, 2);
    }
}
