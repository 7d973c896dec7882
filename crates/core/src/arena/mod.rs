//! Arena decisions: the same prompt to several contestants, then a verdict.
//!
//! Every function here is pure (no IO, no clock, no unseeded randomness) so
//! the async runner, the bindings and harness authors can call it directly.
//!
//! - [`lane`]: which lane a contestant runs in and which contestants to
//!   start now (serial local GPU lane, parallel cloud lane).
//! - [`bench`](mod@bench): duration and tokens/second of a finished contestant.
//! - [`paths`]: slugs and folder names of the results tree
//!   `<project>/Arena/<YYYY-MM-DD>-<type>-<8 hex>/<identity>-<model>/`.
//! - [`spec`]: the strict decoder of `BattleSpec`, what starting a battle
//!   asks for.
//! - [`resume`]: what to do with each contestant after a crash.
//! - [`evidence`]: evidence tiers of the oracle's runs and the winner by
//!   evidence, then pairwise judging.
//! - [`analysis`]: digest, judge and cross-examination prompts, and parsing
//!   of the `WINNER:` / `VERDICT:` lines they ask for.
//! - [`report`]: `manifest.json`, `result.md` and `analysis.md` of the
//!   results folder.
//! - [`rating`]: Bradley–Terry ratings over many battles with bootstrap
//!   confidence intervals.
//!
//! Not pure, behind the `runtime` feature (Unix):
//!
//! - `oracle`: a contestant's patch applied to a fresh checkout of the
//!   base, its repro and suite commands run there, the evidence recorded.
//! - `runner` (also `git`): the arena runtime, `runner::Arena` — battles
//!   dispatched through the store's leased claims, judged, resumed.
//!
//! [`lifecycle`] (pure) is what the runner's reconcile pass decides for a
//! battle from what the store says of it.

pub mod analysis;
pub mod bench;
pub mod error;
pub mod evidence;
pub mod lane;
pub mod lifecycle;
#[cfg(all(feature = "runtime", unix))]
pub mod oracle;
pub mod paths;
pub mod rating;
pub mod report;
pub mod resume;
#[cfg(all(feature = "runtime", feature = "git", unix))]
pub mod runner;
pub mod spec;
#[cfg(feature = "openapi")]
mod spec_schema;

pub use analysis::{
    build_cross_exam_prompt, build_digest_prompt, build_judge_prompt, extract_verdict,
    extract_winner, should_name_winner, ANALYSIS_CAP_CHARS, DIFF_CAP_CHARS,
    ORIGINAL_PROMPT_CAP_CHARS, RESULT_CAP_CHARS,
};
pub use bench::{benchmark_line, compute_benchmark, Benchmark};
pub use error::ArenaError;
pub use evidence::{
    apply_analysis, decide_winner, judge_field, pair_verdict, plan_judging, tier, BaseRun,
    CommandEvidence, Evidence, EvidenceTier, OracleCommands, Verdict, WinnerDecision, WinnerSource,
};
pub use lane::{
    classify_lane, dispatch_now, is_battle_complete, next_local_contestant, BattleType,
    ContestantStatus, Lane,
};
pub use paths::{battle_slug, contestant_dir, sanitize_slug};
pub use rating::{bradley_terry, Rating};
pub use report::{
    analysis_md, evidence_table, manifest_json, result_md, AnalysisReport, BattleReport,
    ContestantReport,
};
pub use resume::{reconcile_contestant_resume, reconcile_contestants, ContestantAction, TaskState};
pub use spec::{
    contestant_prompt, AgentRef, Base, BattleSpec, ContestantSpec, OracleSpec,
    MAX_INSTRUCTION_CHARS,
};
