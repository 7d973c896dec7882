//! The TypeScript shapes of what the battle API takes: the spec of
//! `rig.startBattle`, the filter of `rig.battles`, the options of
//! `rig.leaderboard` — and, until the core has schemas of its events, the
//! battle events.
//!
//! Types only (`object_to_js` / `object_from_js` off), as in
//! [`crate::rig_types`]: specs are decoded by the core's
//! `BattleSpec::from_json`. What the calls resolve to (`BattleView`,
//! `BattlePage`, `Leaderboard`, `AppliedPatch`, ...) is not declared here:
//! `types/views.d.ts` is generated from the core's schemas of its views
//! (`scripts/views-dts.mjs`) and heads `index.d.ts`. `test/battle.test.mjs`
//! checks real objects against the types, and `test/names.test.mjs` every
//! string union against the core's lists.

use napi_derive::napi;

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
