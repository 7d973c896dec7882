//! The loop's control (pure): hard limits, the doom-loop and format-error
//! rules, and why a turn stopped.
//!
//! The rules, all counted "in a row" (anything else in between resets):
//! - a limit reached before a request (`max_steps`, `max_wall`,
//!   `max_tokens`, `max_cost`) stops the turn; the last request
//!   `max_steps` allows tells the model to finish;
//! - three unreadable calls in a row (broken beyond repair, cut by the
//!   length limit, an unknown tool) stop it (`format_errors`);
//! - the same call (name + canonical arguments) a third and fourth time
//!   is not run: its result is a warning; a fifth stops the turn
//!   (`doom_loop`);
//! - the same error result three times in a row stops it (`doom_loop`).

use super::ToolCall;
use crate::agent::Usage;
use crate::names::macros::named_enum;
use std::time::Duration;

/// Why a native turn stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StopReason {
    /// The model called `finish`.
    Finished,
    /// The model answered without a tool call.
    NoToolCall,
    /// `max_steps` requests were made.
    MaxSteps,
    /// `max_tokens` were spent.
    MaxTokens,
    /// `max_wall` passed.
    MaxWall,
    /// `max_cost_usd` was spent.
    MaxCost,
    /// The same call five times in a row, or the same error three times.
    DoomLoop,
    /// Three unreadable calls in a row.
    FormatErrors,
    /// The caller cancelled the turn.
    Cancelled,
}
named_enum!(StopReason, "native stop reason", {
    Finished => "finished",
    NoToolCall => "no_tool_call",
    MaxSteps => "max_steps",
    MaxTokens => "max_tokens",
    MaxWall => "max_wall",
    MaxCost => "max_cost",
    DoomLoop => "doom_loop",
    FormatErrors => "format_errors",
    Cancelled => "cancelled",
});

/// How many unreadable calls in a row stop the turn.
pub const FORMAT_ERRORS_TO_STOP: u32 = 3;
/// The repetition of one call that gets a warning instead of a run.
pub const SAME_CALL_TO_WARN: u32 = 3;
/// The repetition of one call that stops the turn.
pub const SAME_CALL_TO_STOP: u32 = 5;
/// How many equal errors in a row stop the turn.
pub const SAME_ERROR_TO_STOP: u32 = 3;

/// What to do with one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallVerdict {
    /// Run it.
    Run,
    /// Do not run it; answer with this warning.
    Warn(String),
    /// Do not run it; stop the turn.
    Stop(StopReason),
}

/// The state of the rules over one turn.
#[derive(Debug, Clone, Default)]
pub struct Control {
    limits: super::config::Limits,
    cost_known: bool,
    steps: u32,
    format_errors: u32,
    last_call: Option<String>,
    same_call: u32,
    last_error: Option<String>,
    same_error: u32,
}

impl Control {
    /// Rules for a turn with `limits`; `cost_known` says whether a cost
    /// can be counted (prices configured or reported).
    pub fn new(limits: super::config::Limits, cost_known: bool) -> Self {
        Control {
            limits,
            cost_known,
            ..Self::default()
        }
    }

    /// Requests made so far.
    pub fn steps(&self) -> u32 {
        self.steps
    }

    /// Whether another request may be made after `elapsed` with `usage`
    /// spent: `Some(reason)` when a limit is reached. Counts the request
    /// when it may.
    pub fn before_request(&mut self, elapsed: Duration, usage: &Usage) -> Option<StopReason> {
        if self.steps >= self.limits.max_steps {
            return Some(StopReason::MaxSteps);
        }
        if self.limits.max_wall.is_some_and(|w| elapsed >= w) {
            return Some(StopReason::MaxWall);
        }
        let spent = usage.input + usage.cache_read + usage.output;
        if self.limits.max_tokens.is_some_and(|m| spent >= m) {
            return Some(StopReason::MaxTokens);
        }
        if let (Some(max), Some(cost), true) =
            (self.limits.max_cost_usd, usage.cost_usd, self.cost_known)
        {
            if cost >= max {
                return Some(StopReason::MaxCost);
            }
        }
        self.steps += 1;
        None
    }

    /// The nudge to add to the last allowed request, if the request just
    /// counted by [`before_request`](Self::before_request) is it.
    pub fn nudge(&self) -> Option<String> {
        (self.steps == self.limits.max_steps).then(|| {
            "This is your last step: call finish now with a summary of what you did and what is left.".to_string()
        })
    }

    /// Takes a reply's reading: `readable` calls and `unreadable` ones
    /// (in the order the reply had them: every unreadable call adds to the
    /// run, a readable one resets it).
    pub fn after_reply(&mut self, readable: usize, unreadable: usize) -> Option<StopReason> {
        if readable > 0 {
            self.format_errors = 0;
        }
        self.format_errors += unreadable as u32;
        (self.format_errors >= FORMAT_ERRORS_TO_STOP).then_some(StopReason::FormatErrors)
    }

    /// Decides whether `call` runs (the doom-loop rule).
    pub fn on_call(&mut self, call: &ToolCall) -> CallVerdict {
        let key = call_key(call);
        if self.last_call.as_deref() == Some(key.as_str()) {
            self.same_call += 1;
        } else {
            self.last_call = Some(key);
            self.same_call = 1;
        }
        if self.same_call >= SAME_CALL_TO_STOP {
            CallVerdict::Stop(StopReason::DoomLoop)
        } else if self.same_call >= SAME_CALL_TO_WARN {
            CallVerdict::Warn(format!(
                "Not run: this is the same {} call {} times in a row, and it will answer the same. \
                 Do something different (read the file again, change the arguments, or finish); \
                 the {} repetition stops the turn.",
                call.name,
                self.same_call,
                ordinal(SAME_CALL_TO_STOP)
            ))
        } else {
            CallVerdict::Run
        }
    }

    /// Takes a call's result: `error` is `Some(code + text)` for a failed
    /// call, `None` for a success. Three equal errors in a row stop the
    /// turn.
    pub fn on_result(&mut self, error: Option<&str>) -> Option<StopReason> {
        match error {
            None => {
                self.last_error = None;
                self.same_error = 0;
                None
            }
            Some(e) => {
                if self.last_error.as_deref() == Some(e) {
                    self.same_error += 1;
                } else {
                    self.last_error = Some(e.to_string());
                    self.same_error = 1;
                }
                (self.same_error >= SAME_ERROR_TO_STOP).then_some(StopReason::DoomLoop)
            }
        }
    }
}

/// A call's identity for the doom-loop rule: its name and its arguments
/// with object keys sorted (the order a model writes them in does not
/// make a different call).
pub fn call_key(call: &ToolCall) -> String {
    format!("{}:{}", call.name, canonical(&call.arguments))
}

fn canonical(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), canonical(&m[k])))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(canonical).collect::<Vec<_>>().join(",")
        ),
        other => other.to_string(),
    }
}

fn ordinal(n: u32) -> String {
    match n {
        1 => "1st".into(),
        2 => "2nd".into(),
        3 => "3rd".into(),
        n => format!("{n}th"),
    }
}

#[cfg(test)]
mod tests {
    use super::super::config::Limits;
    use super::*;
    use serde_json::json;

    fn call(name: &str, args: serde_json::Value) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: args,
        }
    }

    #[test]
    fn limits_stop_before_a_request() {
        let usage = |i, o, cost| Usage {
            input: i,
            output: o,
            cost_usd: cost,
            ..Usage::default()
        };
        let lim = Limits {
            max_steps: 2,
            max_wall: Some(Duration::from_secs(10)),
            max_tokens: Some(100),
            max_cost_usd: Some(1.0),
            max_output_tokens: 10,
        };
        // (elapsed s, usage, steps already made, expected)
        let cases = [
            (0, usage(0, 0, None), 0, None),
            (0, usage(0, 0, None), 2, Some(StopReason::MaxSteps)),
            (10, usage(0, 0, None), 0, Some(StopReason::MaxWall)),
            (0, usage(60, 40, None), 0, Some(StopReason::MaxTokens)),
            (0, usage(1, 1, Some(1.5)), 0, Some(StopReason::MaxCost)),
            (0, usage(1, 1, Some(0.5)), 1, None),
        ];
        for (secs, u, made, want) in cases {
            let mut c = Control::new(lim, true);
            for _ in 0..made {
                assert_eq!(c.before_request(Duration::ZERO, &Usage::default()), None);
            }
            assert_eq!(
                c.before_request(Duration::from_secs(secs), &u),
                want,
                "{secs} {u:?} {made}"
            );
        }
    }

    #[test]
    fn the_nudge_goes_with_the_last_allowed_request() {
        let mut c = Control::new(
            Limits {
                max_steps: 3,
                ..Limits::default()
            },
            false,
        );
        let mut nudges = vec![];
        while c
            .before_request(Duration::ZERO, &Usage::default())
            .is_none()
        {
            nudges.push(c.nudge().is_some());
        }
        // Requests 1, 2, 3 are made; the nudge goes with the 3rd, the last.
        assert_eq!(nudges, [false, false, true]);
    }

    #[test]
    fn three_unreadable_calls_in_a_row_stop_and_a_readable_one_resets() {
        let mut c = Control::default();
        assert_eq!(c.after_reply(0, 2), None);
        assert_eq!(c.after_reply(1, 0), None);
        assert_eq!(c.after_reply(0, 1), None);
        assert_eq!(c.after_reply(0, 1), None);
        assert_eq!(c.after_reply(0, 1), Some(StopReason::FormatErrors));
    }

    #[test]
    fn the_same_call_warns_on_the_third_and_stops_on_the_fifth() {
        let mut c = Control::default();
        let a = call("read_file", json!({"path": "a", "offset": 1}));
        let same = call("read_file", json!({"offset": 1, "path": "a"}));
        let verdicts: Vec<_> = [&a, &same, &a, &same, &a]
            .iter()
            .map(|x| c.on_call(x))
            .collect();
        assert_eq!(verdicts[..2], [CallVerdict::Run, CallVerdict::Run]);
        assert!(matches!(verdicts[2], CallVerdict::Warn(ref w) if w.contains("3 times")));
        assert!(matches!(verdicts[3], CallVerdict::Warn(_)));
        assert_eq!(verdicts[4], CallVerdict::Stop(StopReason::DoomLoop));
        // Another call in between resets the run.
        let mut c = Control::default();
        for x in [&a, &a, &call("grep", json!({"pattern": "x"})), &a, &a] {
            assert_eq!(c.on_call(x), CallVerdict::Run);
        }
    }

    #[test]
    fn the_same_error_three_times_stops() {
        let mut c = Control::default();
        assert_eq!(c.on_result(Some("NOT_FOUND x")), None);
        assert_eq!(c.on_result(Some("NOT_FOUND x")), None);
        assert_eq!(c.on_result(None), None);
        assert_eq!(c.on_result(Some("NOT_FOUND x")), None);
        assert_eq!(c.on_result(Some("NOT_FOUND y")), None);
        assert_eq!(c.on_result(Some("NOT_FOUND y")), None);
        assert_eq!(c.on_result(Some("NOT_FOUND y")), Some(StopReason::DoomLoop));
    }
}
