//! The TypeScript shapes of the battle API's plain objects: what
//! `rig.startBattle`, `rig.battles` and `rig.leaderboard` take, and the
//! views, events and boards they resolve to.
//!
//! Types only (`object_to_js` / `object_from_js` off), as in
//! [`crate::rig_types`]: specs are decoded by the core's
//! `BattleSpec::from_json` and results are the core's serde JSON, so the
//! values are exactly what the server and Python show (snake_case keys;
//! optional fields `null` in views, absent in events). These declarations
//! mirror `coderig::arena::runner::{BattleView, ContestantView,
//! CrossExamView, BattlePage, Leaderboard, LeaderboardEntry, Applied}`,
//! `coderig::arena::{BattleSpec, Evidence, BaseRun}` and the battle events
//! of `coderig::event`; `test/battle.test.mjs` checks real objects against
//! them, and `test/names.test.mjs` every string union against the core's
//! lists.

use napi_derive::napi;

/// A configured agent and a model (`{identity: 'claude', model: 'sonnet'}`).
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct AgentRef {
    /// A configured agent's identity.
    pub identity: String,
    /// The model.
    pub model: String,
}

/// A contestant of `rig.startBattle`: an agent, its model and optionally
/// its own instruction (`{identity: 'qwen', model: 'qwen3-coder',
/// instruction: 'Add a regression test.'}`). Its agent receives
/// `prompt + '\n\n' + instruction`; the other contestants do not see it.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct ContestantSpec {
    /// A configured agent's identity.
    pub identity: String,
    /// The model.
    pub model: String,
    /// This contestant's own instruction: a non-blank string of at most
    /// 16384 characters.
    #[napi(ts_type = "string | null")]
    pub instruction: Option<String>,
}

/// The oracle of a coding battle: commands run on a fresh checkout of the
/// base with each contestant's patch.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct OracleSpec {
    /// Fails on the base and passes once the task is done.
    #[napi(ts_type = "string | null")]
    pub repro: Option<String>,
    /// The project's test suite.
    #[napi(ts_type = "string | null")]
    pub suite: Option<String>,
    /// Each command's timeout (seconds or `'5m'`).
    #[napi(ts_type = "number | string | null")]
    pub timeout: Option<String>,
    /// What the commands may reach: `'deny'` (the default: no network),
    /// `'allow'`, or `'loopback:PORT[,PORT...]'`.
    #[napi(ts_type = "string | null")]
    pub network: Option<String>,
}

/// What `rig.startBattle(spec)` takes: DESIGN's `BattleSpec`, snake_case
/// keys as in the JSON of `POST /api/battles`.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct BattleSpec {
    /// `'coding'` (needs a `project`) or `'qa'`.
    #[napi(js_name = "battle_type", ts_type = "'qa' | 'coding'")]
    pub battle_type: String,
    /// The task every contestant gets.
    pub prompt: String,
    /// The git repository a coding battle works on.
    #[napi(ts_type = "string | null")]
    pub project: Option<String>,
    /// A ref (default `'HEAD'`) or `'snapshot'` (the working tree as it is).
    #[napi(ts_type = "string | null")]
    pub base: Option<String>,
    /// 2–6 unique (identity, model) pairs, each with an optional
    /// instruction of its own.
    #[napi(ts_type = "Array<ContestantSpec>")]
    pub contestants: Vec<String>,
    /// The judge.
    #[napi(ts_type = "AgentRef")]
    pub judge: String,
    /// The oracle (coding).
    #[napi(ts_type = "OracleSpec | null")]
    pub oracle: Option<String>,
    /// Each contestant's wall-clock limit (seconds or `'20m'`, the default).
    #[napi(js_name = "contestant_timeout", ts_type = "number | string | null")]
    pub contestant_timeout: Option<String>,
    /// Keep the contestants' worktrees after the battle (default false).
    #[napi(js_name = "keep_worktrees", ts_type = "boolean | null")]
    pub keep_worktrees: Option<bool>,
}

/// One oracle command's record.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct CommandEvidence {
    /// The exit code; `null` when it was killed or could not start.
    #[napi(js_name = "exit_code", ts_type = "number | null")]
    pub exit_code: Option<i32>,
    /// How long it ran.
    #[napi(js_name = "duration_ms")]
    pub duration_ms: f64,
    /// Killed at the oracle's timeout.
    #[napi(js_name = "timed_out")]
    pub timed_out: bool,
    /// The end of its combined stdout and stderr.
    #[napi(js_name = "output_tail")]
    pub output_tail: String,
    /// The sandbox it ran in, as enforced (absent in records made before
    /// oracle commands were sandboxed); `SandboxReport` is declared with
    /// the turn types ([`crate::rig_types`]).
    #[napi(ts_type = "SandboxReport")]
    pub sandbox: Option<String>,
}

/// What the oracle recorded for one contestant.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct Evidence {
    /// The repro command's record, when it ran.
    #[napi(ts_type = "CommandEvidence | null")]
    pub repro: Option<String>,
    /// The suite's record, when it ran.
    #[napi(ts_type = "CommandEvidence | null")]
    pub suite: Option<String>,
    /// The patch applied to the fresh checkout.
    #[napi(js_name = "patch_applied")]
    pub patch_applied: bool,
    /// Why the oracle could not run for this contestant.
    #[napi(ts_type = "string | null")]
    pub error: Option<String>,
}

/// The oracle's run on the base itself, once per battle.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct BaseRun {
    /// The repro command on the base.
    #[napi(ts_type = "CommandEvidence | null")]
    pub repro: Option<String>,
    /// The suite on the base.
    #[napi(ts_type = "CommandEvidence | null")]
    pub suite: Option<String>,
    /// Why the base run failed.
    #[napi(ts_type = "string | null")]
    pub error: Option<String>,
}

/// One contestant of a battle.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct ContestantView {
    /// Its id (unique in the store).
    pub id: String,
    /// Its agent.
    pub identity: String,
    /// Its model.
    pub model: String,
    /// Its own instruction, appended to the prompt for it alone; `null`
    /// without one.
    #[napi(ts_type = "string | null")]
    pub instruction: Option<String>,
    /// The lane it runs in.
    #[napi(ts_type = "'local' | 'cloud'")]
    pub lane: String,
    /// Where it stands.
    #[napi(ts_type = "'queued' | 'running' | 'done' | 'error' | 'cancelled'")]
    pub status: String,
    /// Its folder in the results folder.
    pub dir: String,
    /// When its agent started (Unix ms).
    #[napi(js_name = "started_at_ms", ts_type = "number | null")]
    pub started_at_ms: Option<f64>,
    /// When its agent ended (Unix ms).
    #[napi(js_name = "ended_at_ms", ts_type = "number | null")]
    pub ended_at_ms: Option<f64>,
    /// The turn's wall-clock time.
    #[napi(js_name = "duration_ms", ts_type = "number | null")]
    pub duration_ms: Option<f64>,
    /// Time to the first token.
    #[napi(js_name = "ttft_ms", ts_type = "number | null")]
    pub ttft_ms: Option<f64>,
    /// Token usage, where the backend reported it.
    #[napi(ts_type = "Usage | null")]
    pub usage: Option<String>,
    /// Generated tokens per second (local lane, where measurable).
    #[napi(js_name = "tokens_per_sec", ts_type = "number | null")]
    pub tokens_per_sec: Option<f64>,
    /// Size of its `diff.patch` in bytes (coding; 0 = no change).
    #[napi(js_name = "patch_bytes", ts_type = "number | null")]
    pub patch_bytes: Option<f64>,
    /// The oracle's evidence.
    #[napi(ts_type = "Evidence | null")]
    pub evidence: Option<String>,
    /// The tier of that evidence (`'none'` without).
    #[napi(ts_type = "'full' | 'partial' | 'none'")]
    pub tier: String,
    /// Why it failed.
    #[napi(ts_type = "string | null")]
    pub error: Option<String>,
}

/// One cross-examination of a battle's analysis.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct CrossExamView {
    /// Its id (what `battle.crossExamine` resolved to).
    pub id: String,
    /// The examiner.
    pub identity: String,
    /// Its model.
    pub model: String,
    /// Where it stands.
    #[napi(ts_type = "'pending' | 'running' | 'done' | 'error'")]
    pub status: String,
    /// The examiner's text.
    #[napi(ts_type = "string | null")]
    pub text: Option<String>,
    /// Its parsed `VERDICT:` (`identity/model`); `null` for `NO_WINNER` or
    /// none.
    #[napi(ts_type = "string | null")]
    pub verdict: Option<String>,
    /// Why it failed.
    #[napi(ts_type = "string | null")]
    pub error: Option<String>,
}

/// A battle with its contestants and cross-examinations: what
/// `battle.info()`, `battle.wait()` and the other calls resolve to.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct BattleView {
    /// The battle's id.
    pub id: String,
    /// Where it stands.
    #[napi(ts_type = "'running' | 'judging' | 'completed' | 'failed' | 'cancelled'")]
    pub status: String,
    /// `'coding'` or `'qa'`.
    #[napi(js_name = "battle_type", ts_type = "'qa' | 'coding'")]
    pub battle_type: String,
    /// The task.
    pub prompt: String,
    /// The project (canonical path), when there is one.
    #[napi(ts_type = "string | null")]
    pub project: Option<String>,
    /// `'HEAD'`, another ref, or `'snapshot'`.
    pub base: String,
    /// The commit the contestants started from (coding).
    #[napi(js_name = "base_commit", ts_type = "string | null")]
    pub base_commit: Option<String>,
    /// The judge.
    #[napi(ts_type = "AgentRef")]
    pub judge: String,
    /// The spec as given, normalized (durations in seconds).
    #[napi(ts_type = "BattleSpec")]
    pub spec: String,
    /// The results folder (`<project>/Arena/<date>-<type>-<8 hex>`).
    #[napi(js_name = "results_dir")]
    pub results_dir: String,
    /// When it was created (Unix ms).
    #[napi(js_name = "created_at_ms")]
    pub created_at_ms: f64,
    /// When it reached a final status.
    #[napi(js_name = "ended_at_ms", ts_type = "number | null")]
    pub ended_at_ms: Option<f64>,
    /// The winner's contestant id.
    #[napi(js_name = "winner_contestant_id", ts_type = "string | null")]
    pub winner_contestant_id: Option<String>,
    /// Who named it.
    #[napi(
        js_name = "winner_source",
        ts_type = "'oracle' | 'judge' | 'human' | null"
    )]
    pub winner_source: Option<String>,
    /// `battle.analysis()` has a text.
    #[napi(js_name = "analysis_ready")]
    pub analysis_ready: bool,
    /// The analysis' reason for its decision.
    #[napi(ts_type = "string | null")]
    pub reason: Option<String>,
    /// The oracle's run on the base.
    #[napi(js_name = "base_run", ts_type = "BaseRun | null")]
    pub base_run: Option<String>,
    /// Why the battle or its analysis failed.
    #[napi(ts_type = "string | null")]
    pub error: Option<String>,
    /// Contestants in spec order.
    pub contestants: Vec<ContestantView>,
    /// Cross-examinations, oldest first.
    #[napi(js_name = "cross_exams")]
    pub cross_exams: Vec<CrossExamView>,
}

/// One page of `rig.battles()`, newest first.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct BattlePage {
    /// The battles.
    pub battles: Vec<BattleView>,
    /// The cursor of the next page, `null` on the last.
    #[napi(js_name = "next_cursor", ts_type = "string | null")]
    pub next_cursor: Option<String>,
}

/// What `rig.battles(filter)` takes. Every field may be absent or `null`.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct BattleFilter {
    /// Only battles of this project (a path).
    #[napi(ts_type = "string | null")]
    pub project: Option<String>,
    /// Only battles in this status.
    #[napi(ts_type = "'running' | 'judging' | 'completed' | 'failed' | 'cancelled' | null")]
    pub status: Option<String>,
    /// At most this many (1–500, default 50).
    #[napi(ts_type = "number | null")]
    pub limit: Option<u32>,
    /// The `next_cursor` of the previous page.
    #[napi(ts_type = "string | null")]
    pub cursor: Option<String>,
}

/// What `rig.leaderboard(options)` takes.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct LeaderboardOptions {
    /// Only this battle type's board.
    #[napi(ts_type = "'qa' | 'coding' | null")]
    pub battle_type: Option<String>,
    /// Only battles of this project.
    #[napi(ts_type = "string | null")]
    pub project: Option<String>,
}

/// One contestant (`identity/model`) on a leaderboard.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct LeaderboardEntry {
    /// `identity/model`.
    pub name: String,
    /// Bradley–Terry score on the Elo scale.
    pub score: f64,
    /// Lower end of the 95 % bootstrap interval.
    #[napi(js_name = "ci_low")]
    pub ci_low: f64,
    /// Upper end of the 95 % bootstrap interval.
    #[napi(js_name = "ci_high")]
    pub ci_high: f64,
    /// Completed battles with a winner it took part in.
    #[napi(js_name = "n_battles")]
    pub n_battles: u32,
}

/// The ratings of one battle type.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct Leaderboard {
    /// `'coding'` or `'qa'`.
    #[napi(js_name = "battle_type", ts_type = "'qa' | 'coding'")]
    pub battle_type: String,
    /// Completed battles with a winner counted.
    #[napi(js_name = "n_battles")]
    pub n_battles: u32,
    /// Best first.
    pub entries: Vec<LeaderboardEntry>,
}

/// What `battle.apply()` applied (the core's `Applied` of the arena).
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct AppliedPatch {
    /// The battle.
    #[napi(js_name = "battle_id")]
    pub battle_id: String,
    /// The contestant whose patch was applied.
    #[napi(js_name = "contestant_id")]
    pub contestant_id: String,
    /// The project it was applied to.
    pub project: String,
    /// The patch's size in bytes (0: nothing to apply).
    #[napi(js_name = "patch_bytes")]
    pub patch_bytes: f64,
}

/// One contestant as `battle_started` lists it.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct ContestantInfo {
    /// The contestant's id.
    pub id: String,
    /// Its agent.
    pub identity: String,
    /// Its model.
    pub model: String,
    /// Its lane.
    #[napi(ts_type = "'local' | 'cloud'")]
    pub lane: String,
}

/// One event of a battle, as `battle.events()` yields it: a union on
/// `type`. Stored events carry their `seq` in the store's log and the
/// store's `epoch`; `agent_output` is live only and has neither. Optional
/// fields are absent when unset.
#[napi(
    discriminant_case = "snake_case",
    object_to_js = false,
    object_from_js = false
)]
pub enum BattleEvent {
    /// The battle was created.
    BattleStarted {
        /// Position in the store's event log.
        seq: f64,
        /// The store's instance id.
        epoch: Option<String>,
        /// The battle.
        #[napi(js_name = "battle_id")]
        battle_id: String,
        /// Its type.
        #[napi(js_name = "battle_type", ts_type = "'qa' | 'coding'")]
        battle_type: String,
        /// The prompt every contestant gets.
        prompt: String,
        /// The contestants, in the battle's order.
        contestants: Vec<ContestantInfo>,
    },
    /// A contestant moved on (started, finished, failed, got evidence).
    ContestantUpdated {
        /// Position in the store's event log.
        seq: f64,
        /// The store's instance id.
        epoch: Option<String>,
        /// The battle.
        #[napi(js_name = "battle_id")]
        battle_id: String,
        /// The contestant.
        #[napi(js_name = "contestant_id")]
        contestant_id: String,
        /// Its status now.
        #[napi(ts_type = "'queued' | 'running' | 'done' | 'error' | 'cancelled'")]
        status: String,
        /// Wall time of its turn.
        #[napi(js_name = "duration_ms")]
        duration_ms: Option<f64>,
        /// Time to the first token.
        #[napi(js_name = "ttft_ms")]
        ttft_ms: Option<f64>,
        /// Token usage.
        #[napi(ts_type = "Usage")]
        usage: Option<String>,
        /// Generated tokens per second (local lane).
        #[napi(js_name = "tokens_per_sec")]
        tokens_per_sec: Option<f64>,
        /// The oracle's evidence.
        #[napi(ts_type = "Evidence")]
        evidence: Option<String>,
        /// Why it failed (the error object: `kind`, `code`, `message`, ...).
        #[napi(ts_type = "Record<string, unknown>")]
        error: Option<String>,
    },
    /// The battle moved on (judging, completed with a winner or not, a
    /// human's winner, a cross-examination's end).
    BattleUpdated {
        /// Position in the store's event log.
        seq: f64,
        /// The store's instance id.
        epoch: Option<String>,
        /// The battle.
        #[napi(js_name = "battle_id")]
        battle_id: String,
        /// Its status now.
        #[napi(ts_type = "'running' | 'judging' | 'completed' | 'failed' | 'cancelled'")]
        status: String,
        /// The winner, when one is named.
        #[napi(js_name = "winner_contestant_id")]
        winner_contestant_id: Option<String>,
        /// Who named it.
        #[napi(js_name = "winner_source", ts_type = "'oracle' | 'judge' | 'human'")]
        winner_source: Option<String>,
        /// `analysis.md` can be read.
        #[napi(js_name = "analysis_ready")]
        analysis_ready: Option<bool>,
        /// The cross-examination this update is about.
        #[napi(js_name = "cross_exam_id")]
        cross_exam_id: Option<String>,
        /// Why it failed (the error object).
        #[napi(ts_type = "unknown")]
        error: Option<String>,
    },
    /// A contestant's agent's output as it comes (live only, no `seq`).
    AgentOutput {
        /// The battle.
        #[napi(js_name = "battle_id")]
        battle_id: String,
        /// The contestant.
        #[napi(js_name = "contestant_id")]
        contestant_id: String,
        /// What the text is.
        #[napi(ts_type = "'text' | 'reasoning' | 'tool_call' | 'tool_result'")]
        kind: String,
        /// The text (a delta: concatenate in order).
        text: String,
    },
}
