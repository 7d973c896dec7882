//! The hand decoders' problem list: every problem of a spec with its JSON
//! path, reported at once as one `invalid_input` error.
//!
//! Shared by [`crate::arena::BattleSpec`] and the runtime flow spec
//! (`crate::flow::runspec`), so both answer in one shape: the message joins
//! the problems (`` `path`: problem``, `; `-separated, in the order found),
//! `details.problems` lists them as `{path, message}` and `details.path` is
//! the first one's path.

use crate::agent::duration::{parse_duration, seconds};
use crate::error::Error;
use crate::json::describe;
use serde_json::{json, Map, Value};
use std::time::Duration;

/// The problem of a path, command or argument with a NUL character: the
/// operating system takes none (a file name, an `exec` argument and an
/// environment entry all end at the first NUL).
pub(crate) const NUL_PROBLEM: &str =
    "contains a NUL character, which no path, command or argument can hold";

/// Problems found so far, each `(path, message)`.
#[derive(Debug, Default)]
pub(crate) struct Problems(pub(crate) Vec<(String, String)>);

impl Problems {
    /// Records one problem at `path`.
    pub(crate) fn add(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.0.push((path.into(), message.into()));
    }

    /// `Ok` when nothing was found, else the one `invalid_input` error.
    pub(crate) fn into_result(self) -> Result<(), Error> {
        match self.into_error() {
            None => Ok(()),
            Some(e) => Err(e),
        }
    }

    /// The one `invalid_input` error listing every problem, if any.
    pub(crate) fn into_error(self) -> Option<Error> {
        let (first, _) = self.0.first()?;
        let message = self
            .0
            .iter()
            .map(|(p, m)| {
                if p.is_empty() || p == "." {
                    m.clone()
                } else {
                    format!("`{p}`: {m}")
                }
            })
            .collect::<Vec<_>>()
            .join("; ");
        let list: Vec<Value> = self
            .0
            .iter()
            .map(|(p, m)| json!({"path": p, "message": m}))
            .collect();
        Some(
            Error::invalid_input(message)
                .with_detail("path", first.as_str())
                .with_detail("problems", list),
        )
    }

    /// Refuses keys of `object` outside `allowed`.
    pub(crate) fn unknown_keys(&mut self, object: &Map<String, Value>, at: &str, allowed: &[&str]) {
        for key in object.keys().filter(|k| !allowed.contains(&k.as_str())) {
            self.add(
                join(at, key),
                format!("unknown field `{key}`, expected one of {}", listed(allowed)),
            );
        }
    }

    /// A non-blank string, or `None` (absent or `null`, or a problem).
    pub(crate) fn text(&mut self, value: Option<&Value>, at: &str) -> Option<String> {
        match value {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.trim().is_empty() => {
                self.add(at, "must not be blank");
                None
            }
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                self.add(at, format!("expected a string, got {}", describe(other)));
                None
            }
        }
    }

    /// A non-blank string that reaches the operating system — a path, a
    /// shell command, a program's argument — so without a NUL character,
    /// which none of them can hold; `None` when absent or `null`, or a
    /// problem ([`NUL_PROBLEM`]).
    pub(crate) fn os_text(&mut self, value: Option<&Value>, at: &str) -> Option<String> {
        let text = self.text(value, at)?;
        if text.contains('\0') {
            self.add(at, NUL_PROBLEM);
            return None;
        }
        Some(text)
    }

    /// A duration above zero (absent or `null`: `default`).
    pub(crate) fn duration(
        &mut self,
        value: Option<&Value>,
        at: &str,
        default: Duration,
    ) -> Duration {
        match self.opt_duration(value, at, false) {
            Some(d) => d,
            None => default,
        }
    }

    /// A duration, or `None` (absent or `null`, or a problem). Zero is a
    /// problem unless `zero_ok`.
    pub(crate) fn opt_duration(
        &mut self,
        value: Option<&Value>,
        at: &str,
        zero_ok: bool,
    ) -> Option<Duration> {
        let parsed = match value {
            None | Some(Value::Null) => return None,
            Some(v) => duration_value(v),
        };
        match parsed {
            Ok(d) if d.is_zero() && !zero_ok => {
                self.add(at, "must be more than zero");
                None
            }
            Ok(d) => Some(d),
            Err(message) => {
                self.add(at, message);
                None
            }
        }
    }
}

/// A duration written as a number of seconds or a string such as `"90s"`.
pub(crate) fn duration_value(value: &Value) -> Result<Duration, String> {
    match value {
        Value::Number(n) => n
            .as_f64()
            .and_then(seconds)
            .ok_or_else(|| format!("bad duration {n}: expected a non-negative number of seconds")),
        Value::String(s) => parse_duration(s),
        other => Err(format!(
            "expected a number of seconds or a duration string (\"90s\"), got {}",
            describe(other)
        )),
    }
}

/// `` `a`, `b`, `c` `` for messages naming the allowed keys or names.
pub(crate) fn listed(names: &[&str]) -> String {
    names
        .iter()
        .map(|a| format!("`{a}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The path of `key` inside the object at `at` (`""` is the root).
pub(crate) fn join(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_owned()
    } else {
        format!("{at}.{key}")
    }
}
