//! How a CLI turn ends (pure): the process's ending and the turn's events
//! in, the outcome or the error out.

use crate::agent::process::{Ended, ProcessExit};
use crate::agent::{AgentError, AgentErrorKind, AgentEvent, OutcomeBuilder, TurnOutcome};
use std::time::Duration;

/// The limits that applied, for the messages of `Timeout` and `Idle`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Applied {
    pub timeout: Duration,
    pub idle_timeout: Duration,
}

/// The end of a turn whose process ended as `exit`, after the events that
/// `events` folded:
///
/// | process | events | result |
/// |---|---|---|
/// | cancelled, timed out, idle | any | error of that kind, with the stderr tail |
/// | exit ≠ 0 or killed by a signal | an `Error` | `Provider` error: its message, class and status |
/// | exit ≠ 0 or killed by a signal | no `Error` | `Exit` error classified from stderr |
/// | exit 0 | an `Error`, no `Finished` | `Provider` error |
/// | exit 0 | no `Finished`, no text | `Protocol` error: "exited without a result" |
/// | exit 0 | otherwise | the outcome |
///
/// An `Error` before a `Finished` in a clean exit is not a failure: codex,
/// for one, reports the transient errors it retried past.
pub(crate) fn end_turn(
    program: &str,
    exit: &ProcessExit,
    events: OutcomeBuilder,
    duration_ms: u64,
    applied: Applied,
) -> Result<TurnOutcome, AgentError> {
    let with_evidence = |mut e: AgentError| {
        e.stderr_tail = exit.stderr_tail.clone();
        e.exit_code = exit.exit_code;
        e
    };
    let killed = |kind, msg: String| Err(with_evidence(AgentError::new(kind, msg)));
    match exit.ended {
        Ended::Cancelled => {
            return killed(AgentErrorKind::Cancelled, format!("{program}: cancelled"))
        }
        Ended::Timeout => {
            return killed(
                AgentErrorKind::Timeout,
                format!("{program}: still running after {}", human(applied.timeout)),
            )
        }
        Ended::Idle => {
            return killed(
                AgentErrorKind::Idle,
                format!(
                    "{program}: no output for {}; killed as hung",
                    human(applied.idle_timeout)
                ),
            )
        }
        Ended::Exited => {}
    }
    let provider = |e: &AgentEvent| match e {
        AgentEvent::Error {
            message,
            class,
            http_status,
        } => Some(with_evidence(AgentError {
            class: *class,
            http_status: *http_status,
            ..AgentError::new(AgentErrorKind::Provider, message.clone())
        })),
        _ => None,
    };
    if exit.exit_code != Some(0) {
        if let Some(e) = events.error().and_then(provider) {
            return Err(e);
        }
        let how = match (exit.exit_code, exit.signal) {
            (Some(code), _) => format!("exited with code {code}"),
            (None, Some(sig)) => format!("was killed by signal {sig}"),
            (None, None) => "ended without an exit status".to_string(),
        };
        let last = exit
            .stderr_tail
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| format!(": {}", l.trim()))
            .unwrap_or_default();
        let mut e =
            AgentError::classified(AgentErrorKind::Exit, format!("{program} {how}{last}"), None);
        if !last.is_empty() {
            // The whole tail says more than its last line ("429" may be
            // a few lines up).
            e.class = crate::model::classify_error(None, Some(&exit.stderr_tail), None);
        }
        return Err(with_evidence(e));
    }
    if !events.finished() {
        if let Some(e) = events.error().and_then(provider) {
            return Err(e);
        }
        if !events.has_text() {
            return Err(with_evidence(AgentError::new(
                AgentErrorKind::Protocol,
                format!("{program} exited without a result"),
            )));
        }
    }
    Ok(events.finish(duration_ms, exit.exit_code))
}

fn human(d: Duration) -> String {
    let ms = d.as_millis();
    match ms {
        _ if ms.is_multiple_of(60_000) && ms > 0 => format!("{} min", ms / 60_000),
        _ if ms.is_multiple_of(1000) => format!("{} s", ms / 1000),
        _ => format!("{ms} ms"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ErrorClass;

    fn exit(ended: Ended, code: Option<i32>, signal: Option<i32>, stderr: &str) -> ProcessExit {
        ProcessExit {
            ended,
            exit_code: code,
            signal,
            stderr_tail: stderr.into(),
            pid: 1,
            truncated_lines: 0,
        }
    }

    fn text(t: &str) -> AgentEvent {
        AgentEvent::TextDelta { text: t.into() }
    }

    fn finished() -> AgentEvent {
        AgentEvent::Finished {
            stop_reason: Some("success".into()),
            final_text: None,
            num_turns: None,
        }
    }

    fn error(msg: &str, class: ErrorClass, status: Option<u16>) -> AgentEvent {
        AgentEvent::Error {
            message: msg.into(),
            class,
            http_status: status,
        }
    }

    #[test]
    fn turns_end_by_table() {
        use AgentErrorKind::*;
        let applied = Applied {
            timeout: Duration::from_secs(1200),
            idle_timeout: Duration::from_millis(1500),
        };
        let overloaded = || error("overloaded", ErrorClass::Retry, Some(529));
        // (process ending, events, Ok(final text) | Err((kind, class, message part)))
        type Case = (
            ProcessExit,
            Vec<AgentEvent>,
            Result<&'static str, (AgentErrorKind, ErrorClass, &'static str)>,
        );
        let cases: Vec<Case> = vec![
            (
                exit(Ended::Exited, Some(0), None, ""),
                vec![text("hi"), finished()],
                Ok("hi"),
            ),
            (
                exit(Ended::Exited, Some(0), None, ""),
                vec![text("hi")],
                Ok("hi"),
            ),
            (
                exit(Ended::Exited, Some(0), None, ""),
                vec![finished()],
                Ok(""),
            ),
            // A retried error, then success.
            (
                exit(Ended::Exited, Some(0), None, ""),
                vec![overloaded(), text("ok"), finished()],
                Ok("ok"),
            ),
            (
                exit(Ended::Exited, Some(0), None, "warn"),
                vec![],
                Err((Protocol, ErrorClass::Retry, "exited without a result")),
            ),
            (
                exit(Ended::Exited, Some(0), None, ""),
                vec![overloaded()],
                Err((Provider, ErrorClass::Retry, "overloaded")),
            ),
            (
                exit(Ended::Exited, Some(1), None, "boom"),
                vec![text("partial"), overloaded(), finished()],
                Err((Provider, ErrorClass::Retry, "overloaded")),
            ),
            (
                exit(
                    Ended::Exited,
                    Some(2),
                    None,
                    "x\nError: invalid api key\n\n",
                ),
                vec![],
                Err((
                    Exit,
                    ErrorClass::Fatal,
                    "exited with code 2: Error: invalid api key",
                )),
            ),
            (
                exit(
                    Ended::Exited,
                    Some(1),
                    None,
                    "HTTP 429 Too Many Requests\nbye",
                ),
                vec![],
                Err((Exit, ErrorClass::Retry, "exited with code 1: bye")),
            ),
            (
                exit(Ended::Exited, None, Some(11), ""),
                vec![text("hi"), finished()],
                Err((Exit, ErrorClass::Fatal, "killed by signal 11")),
            ),
            (
                exit(Ended::Cancelled, None, Some(15), "t"),
                vec![finished()],
                Err((Cancelled, ErrorClass::Fatal, "cancelled")),
            ),
            (
                exit(Ended::Timeout, None, Some(9), ""),
                vec![],
                Err((Timeout, ErrorClass::Retry, "after 20 min")),
            ),
            (
                exit(Ended::Idle, None, Some(15), ""),
                vec![],
                Err((Idle, ErrorClass::Retry, "no output for 1500 ms")),
            ),
        ];
        for (i, (process, events, want)) in cases.into_iter().enumerate() {
            let mut b = OutcomeBuilder::new();
            for e in &events {
                b.observe(e, 1);
            }
            let got = end_turn("agent", &process, b, 7, applied);
            match (got, want) {
                (Ok(o), Ok(text)) => {
                    assert_eq!(o.final_text, text, "case {i}");
                    assert_eq!(o.exit_code, Some(0), "case {i}");
                    assert_eq!(o.duration_ms, 7, "case {i}");
                }
                (Err(e), Err((kind, class, part))) => {
                    assert_eq!((e.kind, e.class), (kind, class), "case {i}: {e:?}");
                    assert!(e.message.contains(part), "case {i}: {e:?}");
                    assert_eq!(e.stderr_tail, process.stderr_tail, "case {i}");
                    assert_eq!(e.exit_code, process.exit_code, "case {i}");
                }
                (got, want) => panic!("case {i}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn a_provider_error_keeps_its_status() {
        let mut b = OutcomeBuilder::new();
        b.observe(&error("rate limited", ErrorClass::Retry, Some(429)), 1);
        let e = end_turn(
            "claude",
            &exit(Ended::Exited, Some(1), None, ""),
            b,
            1,
            Applied {
                timeout: Duration::from_secs(1),
                idle_timeout: Duration::from_secs(1),
            },
        )
        .unwrap_err();
        assert_eq!(e.http_status, Some(429));
        assert_eq!(e.kind, AgentErrorKind::Provider);
    }
}
