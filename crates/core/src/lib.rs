//! # coderig — the engine room of AI coding-agent harnesses
//!
//! One Rust core, used as a crate, a Python module, a Node addon and an HTTP
//! server. Every capability is a folder with a pure *decisions* part (no IO,
//! no clock, no randomness that the caller did not seed):
//!
//! - [`edit`]: locate the text a model wants to replace (tiered, refusing when
//!   unsure), apply edits with faithful bytes, guards, hashline anchors.
//! - [`flow`]: DAG scheduling decisions with Airflow-grade trigger rules.
//! - [`arena`]: lanes, benchmarks, analysis prompts and ratings for battles
//!   between coding agents.
//! - `model`: model-name matching, fallback chains, error classification.
//! - `conflict`: collision detection across worktrees.
//! - `event`: the events of battles and runs, and the SSE replay decision;
//!   `bus` (feature `runtime`): their in-process fan-out to every subscriber.
//!
//! The contract every face shares: [`json`] (strict decoders of every shape
//! a face takes from dynamic input), [`error`] (the one error taxonomy),
//! [`names`] (the names of every enum that crosses a face). The runtime's
//! backends sit behind features: `store` (`sqlite`, `postgres`) and
//! `workspace` (the git implementation under `git`).
// `deny`, not `forbid`: audited blocks only — agent/process.rs
// (`die_with_parent`) and sandbox/{child,kernel,confine}.rs (the system calls
// between fork and exec that confine a process).
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod agent;
pub mod arena;
#[cfg(feature = "runtime")]
pub mod bus;
pub mod conflict;
pub mod edit;
pub mod error;
pub mod event;
pub mod flow;
pub mod json;
pub mod model;
pub mod names;
#[cfg(all(
    feature = "runtime",
    feature = "git",
    any(feature = "sqlite", feature = "postgres"),
    unix
))]
pub mod rig;
pub mod sandbox;
pub mod store;
pub mod task;
#[cfg(feature = "runtime")]
pub mod watch;
#[cfg(feature = "runtime")]
pub mod worker;
pub mod workspace;

pub use edit::apply::{apply_edit, apply_edit_with, apply_edits};
pub use edit::apply::{Applied, ApplyOptions, Edit};
pub use edit::error::EditError;
pub use edit::file::{edit_file, edits_file, hashline_edit_file, write_atomic};
pub use edit::guards::check as check_guards;
pub use edit::guards::{GuardViolation, ViolationKind};
pub use edit::hashline;
pub use edit::locate::locate;
pub use edit::locate::{Match, MatchKind, Nearest, Tier};
pub use edit::try_locate;
pub use error::{Error, ErrorKind};

/// xxHash32 of `data` with `seed` (the reference algorithm, via `xxhash-rust`).
///
/// Guarantees bit-for-bit agreement with the reference implementation; the
/// shared vectors in `shared/vectors/hashline.json` pin it.
pub fn xxhash32(data: &[u8], seed: u32) -> u32 {
    xxhash_rust::xxh32::xxh32(data, seed)
}
