//! `arena.*`: the arena decisions of [`coderig::arena`] for JavaScript.
//!
//! Conventions (every function converts and calls the core, nothing more):
//! - Rows are objects, not tuples: contestants `{id, lane, status}`,
//!   resume rows `{id, taskId, status}` → `{id, action}`, digests
//!   `{identity, model, digest, benchmarkLine}`, battles `{winner, losers}`.
//!   Keys may be camelCase or the core's snake_case.
//! - Prompts are returned as `{system, user}`; a parsed decision line as
//!   `{identity, model}` or `null`.
//! - Names (battle type, lane, status, task state) are the core's names,
//!   parsed by the core. A bad name, a count that is not a non-negative
//!   integer, a timestamp that is not an integer, an invalid `Date` or a
//!   value of the wrong type throws `INVALID_INPUT`.

use crate::helpers::{
    arg, decode_named, js, name_arg, number, opt_name_arg, options, parse_name, records,
    require_object, snake_keys, to_json, Count, Int, Res,
};
use coderig::arena::{self, ContestantStatus, Lane, TaskState};
use napi::bindgen_prelude::{FromNapiValue, Unknown};
use napi::{Env, JsDate, JsValue};
use napi_derive::napi;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// An options object decoded strictly as a `T` (paths read
/// `options.local_capacity`).
fn options_of<T: DeserializeOwned>(env: &Env, value: Option<Unknown>) -> Res<T> {
    decode_named("options", Value::Object(options(env, value, "options")?))
}

/// One contestant as `nextLocalContestant` / `dispatchNow` read it.
#[napi(
    object,
    namespace = "arena",
    object_to_js = false,
    object_from_js = false
)]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContestantRow {
    /// The contestant's id (returned as given).
    pub id: String,
    /// `'local'` or `'cloud'` (see `classifyLane`).
    #[napi(ts_type = "'local' | 'cloud'")]
    pub lane: String,
    /// Where the contestant stands.
    #[napi(ts_type = "ContestantStatus")]
    pub status: String,
}

fn contestants(env: &Env, value: Unknown) -> Res<Vec<(String, Lane, ContestantStatus)>> {
    records::<ContestantRow>(env, "contestants", value)?
        .into_iter()
        .map(|r| Ok((r.id, parse_name(&r.lane)?, parse_name(&r.status)?)))
        .collect()
}

/// Lane capacities of `dispatchNow`; each caps the number of *running*
/// contestants of its lane.
#[napi(
    object,
    namespace = "arena",
    object_to_js = false,
    object_from_js = false
)]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DispatchOptions {
    /// Local lane cap (default 1; 0 admits none).
    #[napi(ts_type = "number | null")]
    pub local_capacity: Option<Count>,
    /// Cloud lane cap (default `null`: unbounded).
    #[napi(ts_type = "number | null")]
    pub cloud_capacity: Option<Count>,
}

/// The lane of one contestant: Q&A contestants are always `'local'`; a
/// coding contestant is `'local'` when `localModels` contains its `model`
/// (or `"<identity>/<model>"`), else `'cloud'`.
#[napi(namespace = "arena", ts_return_type = "'local' | 'cloud'")]
pub fn classify_lane(
    env: Env,
    #[napi(ts_arg_type = "BattleType")] battle_type: Unknown,
    #[napi(ts_arg_type = "string")] identity: Unknown,
    #[napi(ts_arg_type = "string")] model: Unknown,
    #[napi(ts_arg_type = "string[] | Set<string>")] local_models: Unknown,
) -> napi::Result<&'static str> {
    js(&env, || {
        let battle_type = name_arg(&env, "battle_type", battle_type)?;
        let identity: String = arg(&env, "identity", identity)?;
        let model: String = arg(&env, "model", model)?;
        let local_models: Vec<String> = arg(&env, "local_models", local_models)?;
        Ok(arena::classify_lane(battle_type, &identity, &model, &local_models).as_str())
    })
}

/// The id of the first queued local contestant, in the given (creation)
/// order, or `null`.
#[napi(namespace = "arena")]
pub fn next_local_contestant(
    env: Env,
    #[napi(ts_arg_type = "Array<arena.ContestantRow>")] contestants: Unknown,
) -> napi::Result<Option<String>> {
    js(&env, || {
        Ok(arena::next_local_contestant(&self::contestants(
            &env,
            contestants,
        )?))
    })
}

/// The ids of the contestants to start now, in the given order: queued
/// local ones while fewer than `localCapacity` (default 1) local ones run,
/// queued cloud ones up to `cloudCapacity` (default unbounded) running.
#[napi(namespace = "arena")]
pub fn dispatch_now(
    env: Env,
    #[napi(ts_arg_type = "Array<arena.ContestantRow>")] contestants: Unknown,
    #[napi(ts_arg_type = "arena.DispatchOptions | null")] options: Option<Unknown>,
) -> napi::Result<Vec<String>> {
    js(&env, || {
        let rows = self::contestants(&env, contestants)?;
        let o: DispatchOptions = options_of(&env, options)?;
        Ok(arena::dispatch_now(
            &rows,
            o.local_capacity.map_or(1, Count::as_usize),
            o.cloud_capacity.map(Count::as_usize),
        ))
    })
}

/// True when there is at least one contestant and every one is `'done'` or
/// `'error'`.
#[napi(namespace = "arena")]
pub fn is_battle_complete(
    env: Env,
    #[napi(ts_arg_type = "Array<ContestantStatus>")] statuses: Unknown,
) -> napi::Result<bool> {
    js(&env, || {
        let statuses = arg::<Vec<String>>(&env, "statuses", statuses)?
            .iter()
            .map(|s| parse_name(s))
            .collect::<Res<Vec<ContestantStatus>>>()?;
        Ok(arena::is_battle_complete(&statuses))
    })
}

/// Duration and throughput of one finished contestant.
#[napi(object, namespace = "arena", use_nullable = true)]
pub struct Benchmark {
    /// `endedMs - startedMs`, never negative.
    pub duration_ms: f64,
    /// Output tokens per second; only for the local lane with known tokens
    /// and a duration above 0, else `null`.
    pub tokens_per_sec: Option<f64>,
}

/// The benchmark of a contestant that ran from `startedMs` to `endedMs`
/// (integers, any epoch) and produced `costTokens` tokens (`null`: unknown).
#[napi(namespace = "arena")]
pub fn compute_benchmark(
    env: Env,
    #[napi(ts_arg_type = "number")] started_ms: Unknown,
    #[napi(ts_arg_type = "number")] ended_ms: Unknown,
    #[napi(ts_arg_type = "number | null")] cost_tokens: Option<Unknown>,
    #[napi(ts_arg_type = "'local' | 'cloud'")] lane: Unknown,
) -> napi::Result<Benchmark> {
    js(&env, || {
        let started: Int = arg(&env, "started_ms", started_ms)?;
        let ended: Int = arg(&env, "ended_ms", ended_ms)?;
        let tokens: Option<Count> = arg(&env, "cost_tokens", cost_tokens)?;
        let lane = name_arg(&env, "lane", lane)?;
        let b = arena::compute_benchmark(started.0, ended.0, tokens.map(|t| t.0), lane);
        Ok(Benchmark {
            // Both ends are safe integers, so the duration is below 2^54,
            // exact below 2^53.
            duration_ms: b.duration_ms as f64,
            tokens_per_sec: b.tokens_per_sec,
        })
    })
}

/// `benchmark` as `benchmarkLine` reads it back.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BenchmarkInput {
    duration_ms: Count,
    tokens_per_sec: Option<f64>,
}

/// The one-line benchmark summary the analysis prompts show, e.g.
/// `lane=local duration=12.35s tokens=4567 tokens_per_sec=369.8`
/// (`benchmark` as `computeBenchmark` returns it).
#[napi(namespace = "arena")]
pub fn benchmark_line(
    env: Env,
    #[napi(ts_arg_type = "arena.Benchmark")] benchmark: Unknown,
    #[napi(ts_arg_type = "number | null")] cost_tokens: Option<Unknown>,
    #[napi(ts_arg_type = "'local' | 'cloud'")] lane: Unknown,
) -> napi::Result<String> {
    js(&env, || {
        let mut value = to_json(&env, benchmark, "benchmark")?;
        require_object("benchmark", &value)?;
        snake_keys(&mut value, false);
        let b: BenchmarkInput = decode_named("benchmark", value)?;
        let tokens: Option<Count> = arg(&env, "cost_tokens", cost_tokens)?;
        let core = arena::Benchmark {
            duration_ms: b.duration_ms.0,
            tokens_per_sec: b.tokens_per_sec,
        };
        Ok(arena::benchmark_line(
            &core,
            tokens.map(|t| t.0),
            name_arg(&env, "lane", lane)?,
        ))
    })
}

/// A file-system- and URL-safe slug: lowercase ASCII letters and digits,
/// runs of anything else as one `-`, trimmed, at most 64 characters.
#[napi(namespace = "arena")]
pub fn sanitize_slug(
    env: Env,
    #[napi(ts_arg_type = "string")] text: Unknown,
) -> napi::Result<String> {
    js(&env, || {
        Ok(arena::sanitize_slug(&arg::<String>(&env, "text", text)?))
    })
}

/// The folder name of a battle, `YYYY-MM-DD-<type>-<first 8 hex of the id>`,
/// dated in UTC. `createdAt` is a `Date` or milliseconds since the epoch.
#[napi(namespace = "arena")]
pub fn battle_slug(
    env: Env,
    #[napi(ts_arg_type = "string")] battle_id: Unknown,
    #[napi(ts_arg_type = "BattleType")] battle_type: Unknown,
    #[napi(ts_arg_type = "Date | number")] created_at: Unknown,
) -> napi::Result<String> {
    js(&env, || {
        let battle_id: String = arg(&env, "battle_id", battle_id)?;
        let battle_type = name_arg(&env, "battle_type", battle_type)?;
        let ms: Int = if created_at.is_date()? {
            // An invalid Date is NaN, refused like any non-integer.
            let ms = JsDate::from_unknown(created_at)?.value_of()?;
            decode_named("created_at", number(ms, "created_at")?)?
        } else {
            arg(&env, "created_at", created_at)?
        };
        Ok(arena::battle_slug(&battle_id, battle_type, ms.0)?)
    })
}

/// The folder name of a contestant: the slug of `"<identity>-<model>"`.
/// Throws `INVALID_INPUT` when neither has an ASCII letter or digit.
#[napi(namespace = "arena")]
pub fn contestant_dir(
    env: Env,
    #[napi(ts_arg_type = "string")] identity: Unknown,
    #[napi(ts_arg_type = "string")] model: Unknown,
) -> napi::Result<String> {
    js(&env, || {
        let identity: String = arg(&env, "identity", identity)?;
        let model: String = arg(&env, "model", model)?;
        Ok(arena::contestant_dir(&identity, &model)?)
    })
}

/// What to do with one contestant after a crash (see the core's table):
/// `'keep' | 're-dispatch' | 'mark-done' | 'mark-error' | 'mark-cancelled'`.
/// `taskState` is `null` when the task row is missing.
#[napi(namespace = "arena", ts_return_type = "ContestantAction")]
pub fn reconcile_contestant_resume(
    env: Env,
    #[napi(ts_arg_type = "ContestantStatus")] status: Unknown,
    #[napi(ts_arg_type = "string | null")] task_id: Option<Unknown>,
    #[napi(ts_arg_type = "TaskState | null")] task_state: Option<Unknown>,
) -> napi::Result<&'static str> {
    js(&env, || {
        let status = name_arg(&env, "status", status)?;
        let task_id: Option<String> = arg(&env, "task_id", task_id)?;
        let task_state = opt_name_arg(&env, "task_state", task_state)?;
        Ok(arena::reconcile_contestant_resume(status, task_id.as_deref(), task_state).as_str())
    })
}

/// One persisted contestant for `reconcileContestants`.
#[napi(
    object,
    namespace = "arena",
    object_to_js = false,
    object_from_js = false
)]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContestantResumeRow {
    /// The contestant's id.
    pub id: String,
    /// Its task, if it was dispatched (`null` or absent: none).
    #[napi(ts_type = "string | null")]
    #[serde(default)]
    pub task_id: Option<String>,
    /// Its persisted status.
    #[napi(ts_type = "ContestantStatus")]
    pub status: String,
}

/// The resume decision for one contestant.
#[napi(object, namespace = "arena")]
pub struct ContestantResumeAction {
    /// The contestant's id.
    pub id: String,
    /// What to do with it.
    #[napi(ts_type = "ContestantAction")]
    pub action: String,
}

/// Task ids mapped to their state, the names parsed by the core.
pub(crate) fn task_states(env: &Env, value: Unknown) -> Res<HashMap<String, TaskState>> {
    arg::<BTreeMap<String, String>>(env, "task_states", value)?
        .into_iter()
        .map(|(id, state)| Ok((id, parse_name(&state)?)))
        .collect()
}

/// `reconcileContestantResume` for every row, in row order; `taskStates`
/// maps task ids to their state (an absent id is a missing task row).
#[napi(namespace = "arena")]
pub fn reconcile_contestants(
    env: Env,
    #[napi(ts_arg_type = "Array<arena.ContestantResumeRow>")] rows: Unknown,
    #[napi(ts_arg_type = "Record<string, TaskState>")] task_states: Unknown,
) -> napi::Result<Vec<ContestantResumeAction>> {
    js(&env, || {
        let rows = records::<ContestantResumeRow>(&env, "rows", rows)?
            .into_iter()
            .map(|r| Ok((r.id, r.task_id, parse_name(&r.status)?)))
            .collect::<Res<Vec<(String, Option<String>, ContestantStatus)>>>()?;
        let states = self::task_states(&env, task_states)?;
        Ok(arena::reconcile_contestants(&rows, &states)
            .into_iter()
            .map(|(id, action)| ContestantResumeAction {
                id,
                action: action.as_str().to_owned(),
            })
            .collect())
    })
}

/// A prompt as the two messages of a chat request.
#[napi(object, namespace = "arena")]
pub struct Prompt {
    /// The system message.
    pub system: String,
    /// The user message.
    pub user: String,
}

impl From<(String, String)> for Prompt {
    fn from((system, user): (String, String)) -> Self {
        Prompt { system, user }
    }
}

/// One contestant's digest, as the judge and the cross-examiner see it.
#[napi(
    object,
    namespace = "arena",
    object_to_js = false,
    object_from_js = false
)]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Digest {
    /// The contestant's identity (backend).
    pub identity: String,
    /// The contestant's model.
    pub model: String,
    /// The digest written by `buildDigestPrompt`'s model.
    pub digest: String,
    /// The benchmark line shown next to it.
    pub benchmark_line: String,
}

fn digests(env: &Env, value: Unknown) -> Res<Vec<(String, String, String, String)>> {
    Ok(records::<Digest>(env, "digests", value)?
        .into_iter()
        .map(|d| (d.identity, d.model, d.digest, d.benchmark_line))
        .collect())
}

/// A contestant named on a decision line.
#[napi(object, namespace = "arena")]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Contestant {
    /// The identity (backend), before the first `/`.
    pub identity: String,
    /// The model, after the first `/` (it may contain `/` itself).
    pub model: String,
}

impl From<(String, String)> for Contestant {
    fn from((identity, model): (String, String)) -> Self {
        Contestant { identity, model }
    }
}

/// The prompt that asks a model to digest one contestant's answer:
/// `resultMd` capped at 8,000 characters, `diffPatch` at 5,000 (omit it or
/// pass `null` for Q&A battles).
#[napi(namespace = "arena")]
pub fn build_digest_prompt(
    env: Env,
    #[napi(ts_arg_type = "string")] identity: Unknown,
    #[napi(ts_arg_type = "string")] model: Unknown,
    #[napi(ts_arg_type = "string")] result_md: Unknown,
    #[napi(ts_arg_type = "string")] benchmark_line: Unknown,
    #[napi(ts_arg_type = "string | null")] diff_patch: Option<Unknown>,
) -> napi::Result<Prompt> {
    js(&env, || {
        let identity: String = arg(&env, "identity", identity)?;
        let model: String = arg(&env, "model", model)?;
        let result_md: String = arg(&env, "result_md", result_md)?;
        let line: String = arg(&env, "benchmark_line", benchmark_line)?;
        let diff: Option<String> = arg(&env, "diff_patch", diff_patch)?;
        Ok(
            arena::build_digest_prompt(&identity, &model, &result_md, &line, diff.as_deref())
                .into(),
        )
    })
}

/// The judge's prompt over the digests (original prompt capped at 2,000
/// characters); it asks for `WINNER: <identity>/<model>` or `NO_WINNER`.
#[napi(namespace = "arena")]
pub fn build_judge_prompt(
    env: Env,
    #[napi(ts_arg_type = "string")] original_prompt: Unknown,
    #[napi(ts_arg_type = "Array<arena.Digest>")] digests: Unknown,
) -> napi::Result<Prompt> {
    js(&env, || {
        let prompt: String = arg(&env, "original_prompt", original_prompt)?;
        Ok(arena::build_judge_prompt(&prompt, &self::digests(&env, digests)?).into())
    })
}

/// True when `succeededCount` (≥ 2) successes make a contest worth a winner.
#[napi(namespace = "arena")]
pub fn should_name_winner(
    env: Env,
    #[napi(ts_arg_type = "number")] succeeded_count: Unknown,
) -> napi::Result<bool> {
    js(&env, || {
        let n: Count = arg(&env, "succeeded_count", succeeded_count)?;
        Ok(arena::should_name_winner(n.as_usize()))
    })
}

/// The winner named on the judge's last `WINNER:` line, or `null`
/// (`NO_WINNER`, no decision line, or a value that is not `identity/model`).
#[napi(namespace = "arena")]
pub fn extract_winner(
    env: Env,
    #[napi(ts_arg_type = "string")] judge_output: Unknown,
) -> napi::Result<Option<Contestant>> {
    js(&env, || {
        let text: String = arg(&env, "judge_output", judge_output)?;
        Ok(arena::extract_winner(&text).map(Contestant::from))
    })
}

/// The prompt that asks `examinerIdentity/examinerModel` to cross-examine
/// the judge's `analysis` (capped at 8,000 characters) and its
/// `proposedWinner` (`null` when the judge named none: the examiner is then
/// asked for an independent verdict); it asks for `VERDICT:
/// <identity>/<model>` or `NO_WINNER`.
#[napi(namespace = "arena")]
pub fn build_cross_exam_prompt(
    env: Env,
    #[napi(ts_arg_type = "string")] original_prompt: Unknown,
    #[napi(ts_arg_type = "Array<arena.Digest>")] digests: Unknown,
    #[napi(ts_arg_type = "string")] analysis: Unknown,
    #[napi(ts_arg_type = "arena.Contestant | null")] proposed_winner: Option<Unknown>,
    #[napi(ts_arg_type = "string")] examiner_identity: Unknown,
    #[napi(ts_arg_type = "string")] examiner_model: Unknown,
) -> napi::Result<Prompt> {
    js(&env, || {
        let prompt: String = arg(&env, "original_prompt", original_prompt)?;
        let digests = self::digests(&env, digests)?;
        let analysis: String = arg(&env, "analysis", analysis)?;
        let winner = to_json(&env, proposed_winner, "proposed_winner")?;
        if !winner.is_null() {
            require_object("proposed_winner", &winner)?;
        }
        let winner: Option<Contestant> = decode_named("proposed_winner", winner)?;
        let examiner: String = arg(&env, "examiner_identity", examiner_identity)?;
        let examiner_model: String = arg(&env, "examiner_model", examiner_model)?;
        Ok(arena::build_cross_exam_prompt(
            &prompt,
            &digests,
            &analysis,
            winner
                .as_ref()
                .map(|w| (w.identity.as_str(), w.model.as_str())),
            &examiner,
            &examiner_model,
        )
        .into())
    })
}

/// The contestant of the last `VERDICT:` line, or `null`; the rules of
/// `extractWinner`.
#[napi(namespace = "arena")]
pub fn extract_verdict(
    env: Env,
    #[napi(ts_arg_type = "string")] text: Unknown,
) -> napi::Result<Option<Contestant>> {
    js(&env, || {
        let text: String = arg(&env, "text", text)?;
        Ok(arena::extract_verdict(&text).map(Contestant::from))
    })
}

/// One battle for `bradleyTerry`: its winner beat each of its losers.
#[napi(
    object,
    namespace = "arena",
    object_to_js = false,
    object_from_js = false
)]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Battle {
    /// The winner's name.
    pub winner: String,
    /// The other contestants of the battle.
    pub losers: Vec<String>,
}

/// Options of `bradleyTerry`.
#[napi(
    object,
    namespace = "arena",
    object_to_js = false,
    object_from_js = false
)]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BradleyTerryOptions {
    /// Bootstrap resamples for the confidence intervals (default 1000; 0
    /// gives `ciLow = ciHigh = score`).
    #[napi(ts_type = "number | null")]
    pub bootstrap: Option<Count>,
    /// Seed of the resampling generator (default 0), an integer in
    /// `0..=2^53-1`; one seed gives identical results everywhere.
    #[napi(ts_type = "number | null")]
    pub seed: Option<Count>,
}

/// One contestant's rating.
#[napi(object, namespace = "arena")]
pub struct Rating {
    /// The contestant's name.
    pub name: String,
    /// Elo-scale score (`1000 + 400·log10(strength)`, mean log-strength 0).
    pub score: f64,
    /// 2.5th bootstrap percentile, `<= score`.
    pub ci_low: f64,
    /// 97.5th bootstrap percentile, `>= score`.
    pub ci_high: f64,
}

/// Bradley–Terry ratings of every contestant named in `battles`, best first.
#[napi(namespace = "arena")]
pub fn bradley_terry(
    env: Env,
    #[napi(ts_arg_type = "Array<arena.Battle>")] battles: Unknown,
    #[napi(ts_arg_type = "arena.BradleyTerryOptions | null")] options: Option<Unknown>,
) -> napi::Result<Vec<Rating>> {
    js(&env, || {
        let battles: Vec<(String, Vec<String>)> = records::<Battle>(&env, "battles", battles)?
            .into_iter()
            .map(|b| (b.winner, b.losers))
            .collect();
        let o: BradleyTerryOptions = options_of(&env, options)?;
        let bootstrap = o.bootstrap.map_or(1000, Count::as_usize);
        let seed = o.seed.map_or(0, |s| s.0);
        Ok(arena::bradley_terry(&battles, bootstrap, seed)
            .into_iter()
            .map(|r| Rating {
                name: r.name,
                score: r.score,
                ci_low: r.ci_low,
                ci_high: r.ci_high,
            })
            .collect())
    })
}
