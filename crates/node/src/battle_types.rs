//! The TypeScript shapes of what the battle API takes: the spec of
//! `rig.startBattle`, the filter of `rig.battles`, the options of
//! `rig.leaderboard`.
//!
//! Types only (`object_to_js` / `object_from_js` off), as in
//! [`crate::rig_types`]: specs are decoded by the core's
//! `BattleSpec::from_json`. What the calls resolve to and the events
//! stream (`BattleView`, `BattlePage`, `Leaderboard`, `AppliedPatch`,
//! `BattleEvent`, ...) is not declared here:
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
