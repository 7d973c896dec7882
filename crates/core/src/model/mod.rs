//! Model resolution decisions (pure): which served model a name means,
//! which model to try next, and what a failed call means.
//!
//! - [`match_model`]: the model of a list that a user's model name means
//!   (normalization, provider filter, exact > model-part exact > shortest
//!   containing), with **whole-token** containment.
//! - [`FallbackChain`]: `provider/model(variant)` entries, parsed with typed
//!   errors ([`FallbackParseError`]) and walked by [`FallbackChain::next`].
//! - [`classify_error`] / [`explain_error`]: a failed call as one of four
//!   [`ErrorClass`]es, on word boundaries; [`parse_retry_after`] for the
//!   delay a `retry` should wait.
//!
//! Nothing here does IO, reads a clock or draws a random number.
//!
//! # Tokens and words
//!
//! Two notions of boundary, one per kind of input:
//!
//! - **Model ids** are split into *tokens* by [`MODEL_SEPARATORS`] (`-`
//!   `_` `.` `/` `:` `@`). A name matches an id when it is a run of whole
//!   tokens of it: `gpt-4` ⊂ `openai/gpt-4-turbo`, `gpt-4` ⊄ `gpt-40-mini`,
//!   `gpt-4` ⊄ `gpt-4o`, `qwen3` ⊂ `qwen3-coder:30b`, `qwen` ⊄
//!   `qwen3-coder`. A letter–digit change is not a boundary: `gpt-4o` is a
//!   different model from `gpt-4`, so `qwen3` is a different token from
//!   `qwen`.
//! - **Error messages** are split into *words*: maximal runs of letters and
//!   digits, lower-cased; every other character separates. A phrase matches
//!   where its words occur consecutively: `503` matches `HTTP 503` and
//!   `error_503`, never `line 5031`; `context length` matches
//!   `context_length_exceeded`. A phrase in a script without spaces (the
//!   Chinese ones) is matched as a substring.
//!
//! # match_model
//!
//! | step | rule |
//! |---|---|
//! | normalize | trim, lower-case, `claude-(opus\|sonnet\|haiku)-N-M` → `…-N.M` when `M` has 1–2 digits (never a date) |
//! | filter | with providers given: keep ids whose part before the first `/` (the whole id when bare) is one of them, case-insensitively |
//! | candidates | ids that contain the target as whole tokens |
//! | rank | exact id > model part (after the first `/`) exact > any candidate; shortest, then lexicographically smallest, within a rank |
//!
//! # classify_error
//!
//! | class | meaning | typical evidence |
//! |---|---|---|
//! | `retry` | same model, later (honour `Retry-After`) | 408, 409, 425, 429, 5xx, 529; rate limit, overloaded, timeout, connection reset; a per-minute quota |
//! | `fallback` | next model of the chain | 404, 501; model not found / not available; context length exceeded; "exhausted your capacity on this model" |
//! | `stop` | nothing else will work either | 402; insufficient quota, billing, credits, usage limit |
//! | `fatal` | the request is wrong | other 4xx; bad request, authentication, permission, validation; unknown errors |
//!
//! The order in which name, message and status are consulted is the table
//! of [`explain_error`].
//!
//! # Differences from the seed
//!
//! The seed's `fuzzyMatchModel` and `isRetryableModelError` are the model;
//! where they differ, this module is deliberately different:
//!
//! - containment is by whole tokens (the seed: raw substrings, so `gpt-4`
//!   matched `gpt-40-mini`);
//! - the Claude minor-version rewrite takes one or two digits (the seed took
//!   a date for a minor version: `claude-opus-4-2` matched
//!   `claude-opus-4-20250514`);
//! - ties are broken by name, not by the iteration order of a set; an empty
//!   target matches nothing; providers compare case-insensitively;
//! - four outcomes instead of a bool (the seed's `true` meant "next model",
//!   `false` meant stop *or* fatal), phrases on word boundaries, no
//!   "bad request" / "not found" / "unavailable" / "timeout" as reasons to
//!   switch models, timeouts and rate limits retried on the same model,
//!   authentication errors fatal, a too-long context a reason to fall back;
//! - `most_specific` prefix matching stops at token boundaries (the seed's
//!   `openai/gpt-5` prefixed `openai/gpt-50`).
//!
//! The tests in `crates/core/tests/model_*.rs` list every difference as a
//! row: what the seed said, what we say, and why.

mod classify;
mod fallback;
mod matching;
mod retry_after;
mod words;

pub use classify::{
    classify_error, classify_status, explain_error, Classification, ErrorClass, Evidence,
};
pub use fallback::{
    FallbackChain, FallbackEntry, FallbackErrorReason, FallbackParseError, KNOWN_VARIANTS,
};
pub use matching::{match_model, normalize_model, MODEL_SEPARATORS};
pub use retry_after::parse_retry_after;
