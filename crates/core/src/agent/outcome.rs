//! Folding a turn's events into its outcome (pure): the one place that
//! decides what `final_text`, `ttft_ms` and the usage of a turn are, for
//! every agent.

use super::{AgentEvent, TurnOutcome, Usage};

/// Accumulates a turn's events; [`OutcomeBuilder::finish`] gives the outcome.
///
/// Rules: usage is the sum of the `Usage` events; the session id and model
/// are the first reported; `ttft_ms` is the elapsed time of the first text,
/// reasoning or tool call; `final_text` is the last `Finished.final_text`
/// when one was given, else the concatenated text deltas; `stop_reason` and
/// `num_turns` are the last reported.
#[derive(Debug, Clone, Default)]
pub struct OutcomeBuilder {
    text: String,
    final_text: Option<String>,
    usage: Usage,
    session_id: Option<String>,
    model: Option<String>,
    num_turns: Option<u32>,
    ttft_ms: Option<u64>,
    first_token_ms: Option<u64>,
    last_token_ms: Option<u64>,
    generation_ms: Option<u64>,
    stop_reason: Option<String>,
    finished: bool,
    error: Option<AgentEvent>,
    events: usize,
}

impl OutcomeBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one event that came `elapsed_ms` after the turn started.
    pub fn observe(&mut self, event: &AgentEvent, elapsed_ms: u64) {
        self.events += 1;
        match event {
            AgentEvent::SessionStarted { session_id, model } => {
                self.session_id.get_or_insert_with(|| session_id.clone());
                if self.model.is_none() {
                    self.model = model.clone();
                }
            }
            AgentEvent::TextDelta { text } => {
                self.token_at(elapsed_ms);
                self.text.push_str(text);
            }
            AgentEvent::ReasoningDelta { .. } => self.token_at(elapsed_ms),
            AgentEvent::ToolCall { .. } => {
                self.ttft_ms.get_or_insert(elapsed_ms);
            }
            AgentEvent::ToolResult { .. } => {}
            AgentEvent::Usage(u) => self.usage.add(u),
            AgentEvent::Finished {
                stop_reason,
                final_text,
                num_turns,
            } => {
                self.finished = true;
                if stop_reason.is_some() {
                    self.stop_reason = stop_reason.clone();
                }
                if final_text.is_some() {
                    self.final_text = final_text.clone();
                }
                if num_turns.is_some() {
                    self.num_turns = *num_turns;
                }
            }
            AgentEvent::Error { .. } => self.error = Some(event.clone()),
        }
    }

    fn token_at(&mut self, elapsed_ms: u64) {
        self.ttft_ms.get_or_insert(elapsed_ms);
        self.first_token_ms.get_or_insert(elapsed_ms);
        self.last_token_ms = Some(elapsed_ms);
    }

    /// Sets the generation time the backend reported (llama.cpp
    /// `timings.predicted_ms`), which wins over the measured one.
    pub fn set_generation_ms(&mut self, ms: u64) {
        self.generation_ms = Some(ms);
    }

    /// Whether a `Finished` event came.
    pub fn finished(&self) -> bool {
        self.finished
    }

    /// Whether any text came (deltas or a final text).
    pub fn has_text(&self) -> bool {
        !self.text.is_empty() || self.final_text.as_deref().is_some_and(|t| !t.is_empty())
    }

    /// The last `Error` event, if any.
    pub fn error(&self) -> Option<&AgentEvent> {
        self.error.as_ref()
    }

    /// How many events were observed.
    pub fn event_count(&self) -> usize {
        self.events
    }

    /// The session id reported so far.
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// The outcome of a turn that took `duration_ms` and (for CLIs) exited
    /// with `exit_code`. The measured generation time (first to last text
    /// or reasoning delta) is used when the backend reported none and
    /// there were at least two deltas apart in time.
    pub fn finish(self, duration_ms: u64, exit_code: Option<i32>) -> TurnOutcome {
        let measured = match (self.first_token_ms, self.last_token_ms) {
            (Some(a), Some(b)) if b > a => Some(b - a),
            _ => None,
        };
        TurnOutcome {
            final_text: self.final_text.unwrap_or(self.text),
            usage: self.usage,
            session_id: self.session_id,
            model: self.model,
            num_turns: self.num_turns,
            ttft_ms: self.ttft_ms,
            duration_ms,
            generation_ms: self.generation_ms.or(measured),
            stop_reason: self.stop_reason,
            exit_code,
            ..TurnOutcome::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ErrorClass;

    fn text(t: &str) -> AgentEvent {
        AgentEvent::TextDelta { text: t.into() }
    }

    #[test]
    fn events_fold_into_one_outcome() {
        let u = |i, o| {
            AgentEvent::Usage(Usage {
                input: i,
                output: o,
                ..Usage::default()
            })
        };
        // (events with their elapsed ms, expected final text, ttft, generation, usage out)
        type Case = (
            Vec<(AgentEvent, u64)>,
            &'static str,
            Option<u64>,
            Option<u64>,
            u64,
        );
        let cases: Vec<Case> = vec![
            (vec![], "", None, None, 0),
            (
                vec![(text("a"), 5), (text("b"), 9)],
                "ab",
                Some(5),
                Some(4),
                0,
            ),
            (
                vec![
                    (
                        AgentEvent::ToolCall {
                            id: "1".into(),
                            name: "Bash".into(),
                            input: serde_json::json!({}),
                        },
                        3,
                    ),
                    (text("done"), 8),
                    (u(10, 2), 9),
                    (u(5, 1), 9),
                    (
                        AgentEvent::Finished {
                            stop_reason: Some("success".into()),
                            final_text: Some("DONE".into()),
                            num_turns: Some(2),
                        },
                        10,
                    ),
                ],
                "DONE",
                Some(3),
                None,
                3,
            ),
        ];
        for (events, final_text, ttft, generation, output) in cases {
            let mut b = OutcomeBuilder::new();
            for (e, ms) in &events {
                b.observe(e, *ms);
            }
            let o = b.finish(100, Some(0));
            assert_eq!(o.final_text, final_text);
            assert_eq!(o.ttft_ms, ttft);
            assert_eq!(o.generation_ms, generation);
            assert_eq!(o.usage.output, output);
            assert_eq!(o.duration_ms, 100);
        }
    }

    #[test]
    fn the_first_session_and_the_last_error_are_kept_and_reported_generation_wins() {
        let mut b = OutcomeBuilder::new();
        for id in ["s1", "s2"] {
            b.observe(
                &AgentEvent::SessionStarted {
                    session_id: id.into(),
                    model: Some("m".into()),
                },
                0,
            );
        }
        b.observe(&text("x"), 1);
        b.observe(&text("y"), 50);
        let err = AgentEvent::Error {
            message: "boom".into(),
            class: ErrorClass::Retry,
            http_status: Some(503),
        };
        b.observe(&err, 60);
        b.set_generation_ms(7);
        assert_eq!(b.error(), Some(&err));
        assert!(!b.finished());
        assert!(b.has_text());
        let o = b.finish(70, None);
        assert_eq!(o.session_id.as_deref(), Some("s1"));
        assert_eq!(o.model.as_deref(), Some("m"));
        assert_eq!(o.generation_ms, Some(7));
    }
}
