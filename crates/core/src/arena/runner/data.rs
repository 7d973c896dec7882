//! The JSON the runner keeps in the store's `data` of a battle and of its
//! owners: the persistence format (every field a restarted server needs),
//! decoded leniently only in that unknown fields are kept out — a row
//! another version wrote is read, never guessed at.

use crate::agent::Usage;
use crate::arena::evidence::{BaseRun, EvidenceTier, Verdict};
use crate::arena::{Evidence, Lane, WinnerSource};
use crate::error::Error;
use crate::workspace::Worktree;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The battle row's data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BattleData {
    /// The spec as `BattleSpec::to_json` wrote it.
    pub spec: Value,
    /// The project, canonical (coding; qa when given).
    pub project: Option<String>,
    /// The commit the contestants start from (coding).
    pub base_commit: Option<String>,
    /// `<YYYY-MM-DD>-<type>-<8 hex>`.
    pub slug: String,
    /// The results folder.
    pub results_dir: String,
    /// Creation time (Unix ms, the creating server's clock).
    pub created_at_ms: i64,
    /// When it reached a final status.
    #[serde(default)]
    pub ended_at_ms: Option<i64>,
    /// The stored winner.
    #[serde(default)]
    pub winner: Option<WinnerRecord>,
    /// `analysis.md` is written.
    #[serde(default)]
    pub analysis_ready: bool,
    /// Why the battle (or its analysis) failed.
    #[serde(default)]
    pub error: Option<String>,
}

/// A stored winner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WinnerRecord {
    /// The contestant.
    pub contestant_id: String,
    /// Who named it.
    pub source: WinnerSource,
}

/// A contestant row's data.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ContestantData {
    /// Its position in the spec (0-based).
    pub index: usize,
    /// The agent's identity.
    pub identity: String,
    /// The model.
    pub model: String,
    /// Its own instruction, appended to the battle's prompt for it alone
    /// (rows written before instructions existed have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instruction: Option<String>,
    /// The lane it runs in.
    pub lane: Option<Lane>,
    /// Its folder under the battle's.
    pub dir: String,
    /// The worktree's name, recorded before the worktree is created.
    #[serde(default)]
    pub worktree_name: Option<String>,
    /// The worktree, once created (removed when `worktree_removed`).
    #[serde(default)]
    pub worktree: Option<Worktree>,
    /// The worktree is gone (archived and removed).
    #[serde(default)]
    pub worktree_removed: bool,
    /// When its agent started (Unix ms).
    #[serde(default)]
    pub started_at_ms: Option<i64>,
    /// When its agent ended.
    #[serde(default)]
    pub ended_at_ms: Option<i64>,
    /// The turn's wall-clock time.
    #[serde(default)]
    pub duration_ms: Option<u64>,
    /// Time to the first token.
    #[serde(default)]
    pub ttft_ms: Option<u64>,
    /// Token usage.
    #[serde(default)]
    pub usage: Option<Usage>,
    /// Generated tokens per second of generation (local lane).
    #[serde(default)]
    pub tokens_per_sec: Option<f64>,
    /// The final answer.
    #[serde(default)]
    pub answer: Option<String>,
    /// Size of `diff.patch` (coding), 0 for no change.
    #[serde(default)]
    pub patch_bytes: Option<u64>,
    /// The oracle's evidence.
    #[serde(default)]
    pub evidence: Option<Evidence>,
    /// Why it failed.
    #[serde(default)]
    pub error: Option<String>,
}

/// A digest the judge wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DigestRecord {
    /// The contestant.
    pub contestant_id: String,
    /// `identity/model`.
    pub label: String,
    /// The digest.
    pub text: String,
}

/// One pairwise judging.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerdictRecord {
    /// The contestant shown first.
    pub first: String,
    /// The contestant shown second.
    pub second: String,
    /// The verdict.
    pub verdict: Verdict,
}

/// The decision of an analysis.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionRecord {
    /// The winner the decision names.
    pub winner: Option<String>,
    /// `oracle` or `judge` with a winner.
    pub source: Option<WinnerSource>,
    /// The best tier among results.
    pub tier: Option<EvidenceTier>,
    /// Why.
    pub reason: String,
    /// Pairwise wins by contestant id.
    pub wins: Vec<(String, u32)>,
}

/// The judge row's data.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct JudgeData {
    /// The judge agent.
    pub identity: String,
    /// Its model.
    pub model: String,
    /// The lane its calls run in.
    pub lane: Option<Lane>,
    /// The next analysis may replace a human's winner.
    #[serde(default)]
    pub force: bool,
    /// The oracle's run on the base (once per battle).
    #[serde(default)]
    pub base_run: Option<BaseRun>,
    /// The digests of the last analysis.
    #[serde(default)]
    pub digests: Vec<DigestRecord>,
    /// Its pairwise verdicts.
    #[serde(default)]
    pub verdicts: Vec<VerdictRecord>,
    /// Its decision.
    #[serde(default)]
    pub decision: Option<DecisionRecord>,
    /// Why it failed.
    #[serde(default)]
    pub error: Option<String>,
    /// Analyses run so far.
    #[serde(default)]
    pub rounds: u32,
}

/// A cross-examination row's data.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CrossExamData {
    /// The examiner.
    pub identity: String,
    /// Its model.
    pub model: String,
    /// The lane it runs in.
    pub lane: Option<Lane>,
    /// The examiner's text.
    #[serde(default)]
    pub text: Option<String>,
    /// The parsed `VERDICT:` (`identity/model`), `NO_WINNER` as `None`.
    #[serde(default)]
    pub verdict: Option<String>,
    /// Why it failed.
    #[serde(default)]
    pub error: Option<String>,
    /// When it was asked for (Unix ms).
    #[serde(default)]
    pub created_at_ms: i64,
}

/// Decodes a row's data; a row that does not decode is `internal` (the
/// store holds what the runner wrote, so this is corruption, not input).
pub fn decode<T: DeserializeOwned>(what: &str, id: &str, data: &Value) -> Result<T, Error> {
    serde_json::from_value(data.clone())
        .map_err(|e| Error::internal(format!("the stored {what} {id:?} cannot be read: {e}")))
}

/// Encodes a row's data.
pub fn encode<T: Serialize>(value: &T) -> Value {
    // Serializing these plain structs cannot fail (string keys, no maps
    // with non-string keys).
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// Now, Unix milliseconds (this server's clock: for display and
/// benchmarks; leases use the database's).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
