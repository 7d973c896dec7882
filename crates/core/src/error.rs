//! The one error taxonomy of every face.
//!
//! Each capability keeps its own typed error ([`crate::edit::error::EditError`],
//! [`crate::flow::FlowError`], [`crate::arena::ArenaError`],
//! [`ParseNameError`]); every one of them converts into the
//! face-neutral [`Error`]: a stable [`ErrorKind`] (snake_case `kind`,
//! UPPER_SNAKE `code`), a message written for a person or a model to act
//! on, and a JSON object of details. Python raises a `coderig.Error`
//! subclass per kind, Node an `Error` with `code` and `details`, HTTP and
//! the CLI's `--json` answer [`Error::body`] — all built from this one value,
//! so the faces cannot disagree on a kind, a code, a message or a detail.
//! The conversions live with the capabilities' errors, so this module, which
//! every capability imports, imports none of them.

use crate::names::macros::{named_enum, ParseNameError};
use serde_json::{json, Map, Value};

/// What went wrong, as every face names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorKind {
    /// An edit's `old` text is nowhere in the content (details: `nearest`).
    NotFound,
    /// An edit's `old` text has several locations (details: `count`, `lines`).
    Ambiguous,
    /// An edit's result tripped a guard (details: `violations`).
    Guard,
    /// An edit would change nothing.
    NoOp,
    /// Hashline references are stale (details: `remaps`).
    HashlineMismatch,
    /// The request is malformed (details: `path` of the bad field, when known).
    InvalidInput,
    /// The state of the thing does not allow the operation (e.g. stopping a
    /// finished battle, completing a step that was never dispatched).
    Conflict,
    /// No battle, run, step, contestant, ... has this id (details: `what`, `id`).
    NotFoundId,
    /// Something the operation needs is not there: an agent binary, a
    /// server, a capability the agent cannot enforce.
    Unavailable,
    /// An agent turn failed (details: `reason`, `class`, `http_status`,
    /// `retry_after`, `stderr_tail`).
    Agent,
    /// Reading or writing a file (or the store) failed.
    Io,
    /// A bug in coderig; the message says where.
    Internal,
}
named_enum!(ErrorKind, "error kind", {
    NotFound => "not_found",
    Ambiguous => "ambiguous",
    Guard => "guard",
    NoOp => "no_op",
    HashlineMismatch => "hashline_mismatch",
    InvalidInput => "invalid_input",
    Conflict => "conflict",
    NotFoundId => "not_found_id",
    Unavailable => "unavailable",
    Agent => "agent",
    Io => "io",
    Internal => "internal",
});

impl ErrorKind {
    /// Every code, in the order of [`ErrorKind::ALL`].
    pub const CODES: &'static [&'static str] = &[
        "NOT_FOUND",
        "AMBIGUOUS",
        "GUARD",
        "NO_OP",
        "HASHLINE_MISMATCH",
        "INVALID_INPUT",
        "CONFLICT",
        "NOT_FOUND_ID",
        "UNAVAILABLE",
        "AGENT",
        "IO",
        "INTERNAL",
    ];

    /// The stable UPPER_SNAKE code (`kind` in upper case): what Python's
    /// `.code` and Node's `error.code` hold.
    pub fn code(self) -> &'static str {
        Self::CODES[self as usize]
    }

    /// True for the refusals of an edit: the request was well-formed but the
    /// edit cannot be applied with certainty (`not_found`, `ambiguous`,
    /// `guard`, `no_op`, `hashline_mismatch`).
    pub fn is_edit_refusal(self) -> bool {
        matches!(
            self,
            ErrorKind::NotFound
                | ErrorKind::Ambiguous
                | ErrorKind::Guard
                | ErrorKind::NoOp
                | ErrorKind::HashlineMismatch
        )
    }

    /// The HTTP status the server answers this kind with: 400
    /// `invalid_input`, 422 edit refusals, 409 `conflict`, 404
    /// `not_found_id`, 503 `unavailable`, 502 `agent`, 500 `io` and
    /// `internal`.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorKind::InvalidInput => 400,
            ErrorKind::NotFound
            | ErrorKind::Ambiguous
            | ErrorKind::Guard
            | ErrorKind::NoOp
            | ErrorKind::HashlineMismatch => 422,
            ErrorKind::Conflict => 409,
            ErrorKind::NotFoundId => 404,
            ErrorKind::Unavailable => 503,
            ErrorKind::Agent => 502,
            ErrorKind::Io | ErrorKind::Internal => 500,
        }
    }

    /// The CLI's exit code: 1 refused (edit refusals, `conflict`,
    /// `not_found_id`, `agent`, `unavailable`), 2 bad input, 3 `io`, 4
    /// `internal`.
    pub fn exit_code(self) -> i32 {
        match self {
            ErrorKind::InvalidInput => 2,
            ErrorKind::Io => 3,
            ErrorKind::Internal => 4,
            _ => 1,
        }
    }
}

/// The face-neutral error: a kind, a message and a JSON object of details.
///
/// Guarantees: `code()` is `kind().code()`; [`Error::to_json`] is
/// `{"kind", "code", "message", ...details}` with the details flattened next
/// to the three (a detail never overrides them); converting a capability's
/// error keeps its message verbatim.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    kind: ErrorKind,
    message: String,
    details: Map<String, Value>,
}

impl Error {
    /// An error without details.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            details: Map::new(),
        }
    }

    /// Adds (or replaces) one detail; `kind`, `code` and `message` are
    /// reserved and ignored here.
    pub fn with_detail(mut self, key: &str, value: impl Into<Value>) -> Self {
        if !matches!(key, "kind" | "code" | "message") {
            self.details.insert(key.to_owned(), value.into());
        }
        self
    }

    /// The same error said of the file `file` (a spec or config file the
    /// user named): the message starts with `file: `, and `file` is among
    /// the details; the other details (the `path` inside the file, its
    /// `problems`) are kept. Said once: an error already of `file` is
    /// returned as it is.
    pub fn in_file(mut self, file: &str) -> Self {
        if self.details.get("file").and_then(Value::as_str) == Some(file) {
            return self;
        }
        self.message = format!("{file}: {}", self.message);
        self.with_detail("file", file)
    }

    /// Replaces every detail at once, as a capability's error gives them
    /// (the conversions of the capabilities' errors).
    pub(crate) fn with_details(mut self, details: Map<String, Value>) -> Self {
        self.details = details;
        self
    }

    /// An `invalid_input` error.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidInput, message)
    }

    /// An `invalid_input` error about the field at the JSON `path`
    /// (`edits[1].old`); the message starts with the path.
    pub fn invalid_at(path: &str, message: impl std::fmt::Display) -> Self {
        let message = if path.is_empty() || path == "." {
            message.to_string()
        } else {
            format!("`{path}`: {message}")
        };
        Error::invalid_input(message).with_detail("path", path)
    }

    /// A `conflict` error: the thing's state does not allow the operation.
    pub fn conflict(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Conflict, message)
    }

    /// A `not_found_id` error: no `what` (battle, run, step, ...) has `id`.
    pub fn not_found_id(what: &str, id: &str) -> Self {
        Error::new(ErrorKind::NotFoundId, format!("no {what} with id {id:?}"))
            .with_detail("what", what)
            .with_detail("id", id)
    }

    /// An `unavailable` error.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Unavailable, message)
    }

    /// An `io` error.
    pub fn io(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Io, message)
    }

    /// An `internal` error (a bug).
    pub fn internal(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Internal, message)
    }

    /// The kind.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The stable UPPER_SNAKE code.
    pub fn code(&self) -> &'static str {
        self.kind.code()
    }

    /// The message (same as `Display`).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The details: the fields of the error object besides kind, code and
    /// message.
    pub fn details(&self) -> &Map<String, Value> {
        &self.details
    }

    /// `{"kind", "code", "message", ...details}`.
    pub fn to_json(&self) -> Value {
        let mut error = Map::new();
        error.insert("kind".into(), json!(self.kind.as_str()));
        error.insert("code".into(), json!(self.code()));
        error.insert("message".into(), json!(self.message));
        for (key, value) in &self.details {
            error.insert(key.clone(), value.clone());
        }
        Value::Object(error)
    }

    /// `{"ok": false, "error": {...}}`: the body of an HTTP error and of the
    /// CLI's `--json` answer.
    pub fn body(&self) -> Value {
        json!({"ok": false, "error": self.to_json()})
    }
}

impl From<ParseNameError> for Error {
    fn from(e: ParseNameError) -> Self {
        Error::invalid_input(e.to_string())
            .with_detail("what", e.what)
            .with_detail("given", e.given.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_is_said_of_its_file_once_with_its_details_kept() {
        let e = Error::invalid_at("steps[0].agent", "no agent \"x\"").in_file("flow.yaml");
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert_eq!(e.message(), "flow.yaml: `steps[0].agent`: no agent \"x\"");
        assert_eq!(e.details()["file"], "flow.yaml");
        assert_eq!(e.details()["path"], "steps[0].agent");
        let again = e.clone().in_file("flow.yaml");
        assert_eq!(again, e);
        let other = e.in_file("b.yaml");
        assert_eq!(
            other.message(),
            "b.yaml: flow.yaml: `steps[0].agent`: no agent \"x\""
        );
        assert_eq!(other.details()["file"], "b.yaml");
    }

    #[test]
    fn kinds_codes_statuses_and_exit_codes_form_one_table() {
        let table = [
            (ErrorKind::NotFound, "not_found", "NOT_FOUND", 422, 1),
            (ErrorKind::Ambiguous, "ambiguous", "AMBIGUOUS", 422, 1),
            (ErrorKind::Guard, "guard", "GUARD", 422, 1),
            (ErrorKind::NoOp, "no_op", "NO_OP", 422, 1),
            (
                ErrorKind::HashlineMismatch,
                "hashline_mismatch",
                "HASHLINE_MISMATCH",
                422,
                1,
            ),
            (
                ErrorKind::InvalidInput,
                "invalid_input",
                "INVALID_INPUT",
                400,
                2,
            ),
            (ErrorKind::Conflict, "conflict", "CONFLICT", 409, 1),
            (
                ErrorKind::NotFoundId,
                "not_found_id",
                "NOT_FOUND_ID",
                404,
                1,
            ),
            (ErrorKind::Unavailable, "unavailable", "UNAVAILABLE", 503, 1),
            (ErrorKind::Agent, "agent", "AGENT", 502, 1),
            (ErrorKind::Io, "io", "IO", 500, 3),
            (ErrorKind::Internal, "internal", "INTERNAL", 500, 4),
        ];
        assert_eq!(table.len(), ErrorKind::ALL.len());
        for (kind, name, code, status, exit) in table {
            assert_eq!(kind.as_str(), name);
            assert_eq!(kind.code(), code);
            assert_eq!(code, name.to_ascii_uppercase());
            assert_eq!(kind.http_status(), status, "{name}");
            assert_eq!(kind.exit_code(), exit, "{name}");
            assert_eq!(name.parse::<ErrorKind>().unwrap(), kind);
        }
    }

    #[test]
    fn details_sit_next_to_kind_code_and_message_and_never_override_them() {
        let e = Error::invalid_at(
            "edits[1].old",
            "invalid type: integer `1`, expected a string",
        )
        .with_detail("kind", "x")
        .with_detail("extra", 3);
        assert_eq!(
            e.body(),
            json!({"ok": false, "error": {
                "kind": "invalid_input", "code": "INVALID_INPUT",
                "message": "`edits[1].old`: invalid type: integer `1`, expected a string",
                "path": "edits[1].old", "extra": 3}})
        );
        assert_eq!(Error::invalid_at(".", "m").message(), "m");
        let id = Error::not_found_id("battle", "b-1");
        assert_eq!(id.message(), "no battle with id \"b-1\"");
        assert_eq!(id.details()["what"], "battle");
    }
}
