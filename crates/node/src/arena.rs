//! `arena.*`: the arena decisions of [`coderig::arena`] for JavaScript.
//!
//! Conventions (every function converts and calls the core, nothing more):
//! - Rows are objects, not tuples: contestants `{id, lane, status}`,
//!   resume rows `{id, taskId, status}` → `{id, action}`, digests
//!   `{identity, model, digest, benchmarkLine}`, battles `{winner, losers}`.
//! - Prompts are returned as `{system, user}`; a parsed decision line as
//!   `{identity, model}` or `null`.
//! - Names (battle type, lane, status, task state) are the core's
//!   lowercase names (parsed case-insensitively, as the core does). A bad
//!   name, a count that is not a non-negative integer, a timestamp that is
//!   not an integer, or an invalid `Date` throws an `Error` with
//!   `code: 'INVALID_INPUT'`.

use crate::errors::to_js_error;
use coderig::arena::{self, BattleType, ContestantStatus, Lane, TaskState};
use coderig::EditError;
use napi::bindgen_prelude::{Either, Null};
use napi::Env;
use napi::JsDate;
use napi_derive::napi;
use std::collections::{BTreeSet, HashMap};
use std::str::FromStr;

/// An `INVALID_INPUT` JS error with `message`.
pub(crate) fn invalid(env: &Env, message: impl Into<String>) -> napi::Error {
    to_js_error(env, EditError::invalid(message.into()))
}

/// Parses one of the core's enum names, refusing with `INVALID_INPUT`.
fn parse<T: FromStr<Err = coderig::names::ParseNameError>>(env: &Env, s: &str) -> napi::Result<T> {
    s.parse()
        .map_err(|e: coderig::names::ParseNameError| invalid(env, e.to_string()))
}

/// A JS number that must be a whole number in `0..=max` (safe-integer range
/// at most), as a `u64`; anything else is refused instead of truncated.
pub(crate) fn whole_number(env: &Env, what: &str, value: f64, max: u64) -> napi::Result<u64> {
    checked_whole(what, value, max).map_err(|m| invalid(env, m))
}

fn checked_whole(what: &str, value: f64, max: u64) -> Result<u64, String> {
    let max = max.min(MAX_SAFE_INTEGER);
    if value.fract() == 0.0 && value >= 0.0 && value <= max as f64 {
        // Integral and within range, so the cast is exact.
        Ok(value as u64)
    } else {
        Err(format!(
            "{what} must be an integer in 0..={max}, got {value}"
        ))
    }
}

/// `Number.MAX_SAFE_INTEGER`: every integer up to it is exact in an `f64`.
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// A JS number that must be an integer within the safe-integer range, as an `i64`.
fn integer(env: &Env, what: &str, value: f64) -> napi::Result<i64> {
    checked_integer(what, value).map_err(|m| invalid(env, m))
}

fn checked_integer(what: &str, value: f64) -> Result<i64, String> {
    let limit = MAX_SAFE_INTEGER as f64;
    if value.fract() == 0.0 && (-limit..=limit).contains(&value) {
        // Integral and within ±2^53, so the cast is exact.
        Ok(value as i64)
    } else {
        Err(format!("{what} must be a safe integer, got {value}"))
    }
}

/// An optional object field that may also be `null` (napi maps only
/// `undefined` to `None`).
pub(crate) fn nullable<T>(value: Option<Either<T, Null>>) -> Option<T> {
    match value {
        Some(Either::A(v)) => Some(v),
        Some(Either::B(Null)) | None => None,
    }
}

fn count(env: &Env, what: &str, value: f64) -> napi::Result<usize> {
    // usize is 64-bit on every target this addon is built for.
    whole_number(env, what, value, u64::MAX).map(|n| n as usize)
}

/// One contestant as `nextLocalContestant` / `dispatchNow` read it.
#[napi(object, namespace = "arena")]
pub struct ContestantRow {
    /// The contestant's id (returned as given).
    pub id: String,
    /// `'local'` or `'cloud'` (see `classifyLane`).
    #[napi(ts_type = "'local' | 'cloud'")]
    pub lane: String,
    /// Where the contestant stands.
    #[napi(ts_type = "'queued' | 'running' | 'done' | 'error' | 'cancelled'")]
    pub status: String,
}

/// Lane capacities of `dispatchNow`; each caps the number of *running*
/// contestants of its lane.
#[napi(object, namespace = "arena")]
pub struct DispatchOptions {
    /// Local lane cap (default 1; 0 admits none).
    pub local_capacity: Option<f64>,
    /// Cloud lane cap (default `null`: unbounded).
    pub cloud_capacity: Option<Either<f64, Null>>,
}

fn rows(env: &Env, rows: &[ContestantRow]) -> napi::Result<Vec<(String, Lane, ContestantStatus)>> {
    rows.iter()
        .map(|r| Ok((r.id.clone(), parse(env, &r.lane)?, parse(env, &r.status)?)))
        .collect()
}

/// The lane of one contestant: Q&A contestants are always `'local'`; a
/// coding contestant is `'local'` when `localModels` contains its `model`
/// (or `"<identity>/<model>"`), else `'cloud'`.
#[napi(namespace = "arena", ts_return_type = "'local' | 'cloud'")]
pub fn classify_lane(
    env: Env,
    #[napi(ts_arg_type = "'qa' | 'coding'")] battle_type: String,
    identity: String,
    model: String,
    local_models: Either<Vec<String>, BTreeSet<String>>,
) -> napi::Result<&'static str> {
    let battle_type: BattleType = parse(&env, &battle_type)?;
    let local_models: Vec<String> = match local_models {
        Either::A(list) => list,
        Either::B(set) => set.into_iter().collect(),
    };
    Ok(arena::classify_lane(battle_type, &identity, &model, &local_models).as_str())
}

/// The id of the first queued local contestant, in the given (creation)
/// order, or `null`.
#[napi(namespace = "arena")]
pub fn next_local_contestant(
    env: Env,
    contestants: Vec<ContestantRow>,
) -> napi::Result<Option<String>> {
    Ok(arena::next_local_contestant(&rows(&env, &contestants)?))
}

/// The ids of the contestants to start now, in the given order: queued
/// local ones while fewer than `localCapacity` (default 1) local ones run,
/// queued cloud ones up to `cloudCapacity` (default unbounded) running.
#[napi(namespace = "arena")]
pub fn dispatch_now(
    env: Env,
    contestants: Vec<ContestantRow>,
    options: Option<DispatchOptions>,
) -> napi::Result<Vec<String>> {
    let (local, cloud) = options.map_or((None, None), |o| (o.local_capacity, o.cloud_capacity));
    let local = local.map_or(Ok(1), |n| count(&env, "localCapacity", n))?;
    let cloud = nullable(cloud)
        .map(|n| count(&env, "cloudCapacity", n))
        .transpose()?;
    Ok(arena::dispatch_now(
        &rows(&env, &contestants)?,
        local,
        cloud,
    ))
}

/// True when there is at least one contestant and every one is `'done'` or
/// `'error'`.
#[napi(namespace = "arena")]
pub fn is_battle_complete(
    env: Env,
    #[napi(ts_arg_type = "Array<'queued' | 'running' | 'done' | 'error' | 'cancelled'>")]
    statuses: Vec<String>,
) -> napi::Result<bool> {
    let statuses = statuses
        .iter()
        .map(|s| parse(&env, s))
        .collect::<napi::Result<Vec<ContestantStatus>>>()?;
    Ok(arena::is_battle_complete(&statuses))
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
    started_ms: f64,
    ended_ms: f64,
    cost_tokens: Option<f64>,
    #[napi(ts_arg_type = "'local' | 'cloud'")] lane: String,
) -> napi::Result<Benchmark> {
    let started = integer(&env, "startedMs", started_ms)?;
    let ended = integer(&env, "endedMs", ended_ms)?;
    let tokens = cost_tokens
        .map(|t| whole_number(&env, "costTokens", t, u64::MAX))
        .transpose()?;
    let b = arena::compute_benchmark(started, ended, tokens, parse(&env, &lane)?);
    Ok(Benchmark {
        // Bounded by 2^54 since both ends are safe integers; exact below 2^53.
        duration_ms: b.duration_ms as f64,
        tokens_per_sec: b.tokens_per_sec,
    })
}

/// The one-line benchmark summary the analysis prompts show, e.g.
/// `lane=local duration=12.35s tokens=4567 tokens_per_sec=369.8`
/// (`benchmark` as `computeBenchmark` returns it).
#[napi(namespace = "arena")]
pub fn benchmark_line(
    env: Env,
    benchmark: Benchmark,
    cost_tokens: Option<f64>,
    #[napi(ts_arg_type = "'local' | 'cloud'")] lane: String,
) -> napi::Result<String> {
    let core_benchmark = arena::Benchmark {
        duration_ms: whole_number(
            &env,
            "benchmark.durationMs",
            benchmark.duration_ms,
            u64::MAX,
        )?,
        tokens_per_sec: benchmark.tokens_per_sec,
    };
    let tokens = cost_tokens
        .map(|t| whole_number(&env, "costTokens", t, u64::MAX))
        .transpose()?;
    Ok(arena::benchmark_line(
        &core_benchmark,
        tokens,
        parse(&env, &lane)?,
    ))
}

/// A file-system- and URL-safe slug: lowercase ASCII letters and digits,
/// runs of anything else as one `-`, trimmed, at most 64 characters.
#[napi(namespace = "arena")]
pub fn sanitize_slug(s: String) -> String {
    arena::sanitize_slug(&s)
}

/// The folder name of a battle, `YYYY-MM-DD-<type>-<first 8 hex of the id>`,
/// dated in UTC. `createdAt` is a `Date` or milliseconds since the epoch.
#[napi(namespace = "arena")]
pub fn battle_slug(
    env: Env,
    battle_id: String,
    #[napi(ts_arg_type = "'qa' | 'coding'")] battle_type: String,
    created_at: Either<f64, JsDate>,
) -> napi::Result<String> {
    let ms = match created_at {
        Either::A(ms) => ms,
        Either::B(date) => date.value_of()?,
    };
    let ms = integer(&env, "createdAt (ms since the epoch)", ms)?;
    arena::battle_slug(&battle_id, parse(&env, &battle_type)?, ms)
        .map_err(|e| invalid(&env, e.to_string()))
}

/// The folder name of a contestant: the slug of `"<identity>-<model>"`.
/// Throws `INVALID_INPUT` when neither has an ASCII letter or digit.
#[napi(namespace = "arena")]
pub fn contestant_dir(env: Env, identity: String, model: String) -> napi::Result<String> {
    arena::contestant_dir(&identity, &model).map_err(|e| invalid(&env, e.to_string()))
}

/// What to do with one contestant after a crash (see the core's table):
/// `'keep' | 're-dispatch' | 'mark-done' | 'mark-error' | 'mark-cancelled'`.
/// `taskState` is `null` when the task row is missing.
#[napi(
    namespace = "arena",
    ts_return_type = "'keep' | 're-dispatch' | 'mark-done' | 'mark-error' | 'mark-cancelled'"
)]
pub fn reconcile_contestant_resume(
    env: Env,
    #[napi(ts_arg_type = "'queued' | 'running' | 'done' | 'error' | 'cancelled'")] status: String,
    task_id: Option<String>,
    #[napi(
        ts_arg_type = "'pending' | 'running' | 'blocked' | 'completed' | 'failed' | 'cancelled' | null"
    )]
    task_state: Option<String>,
) -> napi::Result<&'static str> {
    let task_state = task_state
        .map(|s| parse::<TaskState>(&env, &s))
        .transpose()?;
    Ok(
        arena::reconcile_contestant_resume(parse(&env, &status)?, task_id.as_deref(), task_state)
            .as_str(),
    )
}

/// One persisted contestant for `reconcileContestants`.
#[napi(object, namespace = "arena")]
pub struct ContestantResumeRow {
    /// The contestant's id.
    pub id: String,
    /// Its task, if it was dispatched (`null` or absent: none).
    pub task_id: Option<Either<String, Null>>,
    /// Its persisted status.
    #[napi(ts_type = "'queued' | 'running' | 'done' | 'error' | 'cancelled'")]
    pub status: String,
}

/// The resume decision for one contestant.
#[napi(object, namespace = "arena")]
pub struct ContestantResumeAction {
    /// The contestant's id.
    pub id: String,
    /// What to do with it.
    #[napi(ts_type = "'keep' | 're-dispatch' | 'mark-done' | 'mark-error' | 'mark-cancelled'")]
    pub action: String,
}

/// `reconcileContestantResume` for every row, in row order; `taskStates`
/// maps task ids to their state (an absent id is a missing task row).
#[napi(namespace = "arena")]
pub fn reconcile_contestants(
    env: Env,
    rows: Vec<ContestantResumeRow>,
    #[napi(
        ts_arg_type = "Record<string, 'pending' | 'running' | 'blocked' | 'completed' | 'failed' | 'cancelled'>"
    )]
    task_states: HashMap<String, String>,
) -> napi::Result<Vec<ContestantResumeAction>> {
    let task_states = task_states
        .into_iter()
        .map(|(k, v)| Ok((k, parse::<TaskState>(&env, &v)?)))
        .collect::<napi::Result<HashMap<_, _>>>()?;
    let rows = rows
        .into_iter()
        .map(|r| Ok((r.id, nullable(r.task_id), parse(&env, &r.status)?)))
        .collect::<napi::Result<Vec<(String, Option<String>, ContestantStatus)>>>()?;
    Ok(arena::reconcile_contestants(&rows, &task_states)
        .into_iter()
        .map(|(id, action)| ContestantResumeAction {
            id,
            action: action.as_str().to_owned(),
        })
        .collect())
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
#[napi(object, namespace = "arena")]
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

fn digest_tuples(digests: Vec<Digest>) -> Vec<(String, String, String, String)> {
    digests
        .into_iter()
        .map(|d| (d.identity, d.model, d.digest, d.benchmark_line))
        .collect()
}

/// A contestant named on a decision line.
#[napi(object, namespace = "arena")]
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
    identity: String,
    model: String,
    result_md: String,
    benchmark_line: String,
    diff_patch: Option<String>,
) -> Prompt {
    arena::build_digest_prompt(
        &identity,
        &model,
        &result_md,
        &benchmark_line,
        diff_patch.as_deref(),
    )
    .into()
}

/// The judge's prompt over the digests (original prompt capped at 2,000
/// characters); it asks for `WINNER: <identity>/<model>` or `NO_WINNER`.
#[napi(namespace = "arena")]
pub fn build_judge_prompt(original_prompt: String, digests: Vec<Digest>) -> Prompt {
    arena::build_judge_prompt(&original_prompt, &digest_tuples(digests)).into()
}

/// True when `succeededCount` (≥ 2) successes make a contest worth a winner.
#[napi(namespace = "arena")]
pub fn should_name_winner(env: Env, succeeded_count: f64) -> napi::Result<bool> {
    Ok(arena::should_name_winner(count(
        &env,
        "succeededCount",
        succeeded_count,
    )?))
}

/// The winner named on the judge's last `WINNER:` line, or `null`
/// (`NO_WINNER`, no decision line, or a value that is not `identity/model`).
#[napi(namespace = "arena")]
pub fn extract_winner(judge_output: String) -> Option<Contestant> {
    arena::extract_winner(&judge_output).map(Contestant::from)
}

/// The prompt that asks `examinerIdentity/examinerModel` to cross-examine
/// the judge's `analysis` (capped at 8,000 characters) and its
/// `proposedWinner`; it asks for `VERDICT: <identity>/<model>` or `NO_WINNER`.
#[napi(namespace = "arena")]
pub fn build_cross_exam_prompt(
    original_prompt: String,
    digests: Vec<Digest>,
    analysis: String,
    proposed_winner: Contestant,
    examiner_identity: String,
    examiner_model: String,
) -> Prompt {
    arena::build_cross_exam_prompt(
        &original_prompt,
        &digest_tuples(digests),
        &analysis,
        Some((
            proposed_winner.identity.as_str(),
            proposed_winner.model.as_str(),
        )),
        &examiner_identity,
        &examiner_model,
    )
    .into()
}

/// The contestant of the last `VERDICT:` line, or `null`; the rules of
/// `extractWinner`.
#[napi(namespace = "arena")]
pub fn extract_verdict(text: String) -> Option<Contestant> {
    arena::extract_verdict(&text).map(Contestant::from)
}

/// One battle for `bradleyTerry`: its winner beat each of its losers.
#[napi(object, namespace = "arena")]
pub struct Battle {
    /// The winner's name.
    pub winner: String,
    /// The other contestants of the battle.
    pub losers: Vec<String>,
}

/// Options of `bradleyTerry`.
#[napi(object, namespace = "arena")]
pub struct BradleyTerryOptions {
    /// Bootstrap resamples for the confidence intervals (default 1000; 0
    /// gives `ciLow = ciHigh = score`).
    pub bootstrap: Option<f64>,
    /// Seed of the resampling generator (default 0), an integer in
    /// `0..=2^53-1`; one seed gives identical results everywhere.
    pub seed: Option<f64>,
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
    battles: Vec<Battle>,
    options: Option<BradleyTerryOptions>,
) -> napi::Result<Vec<Rating>> {
    let (bootstrap, seed) = options.map_or((None, None), |o| (o.bootstrap, o.seed));
    let bootstrap = bootstrap.map_or(Ok(1000), |n| count(&env, "bootstrap", n))?;
    let seed = seed.map_or(Ok(0), |n| whole_number(&env, "seed", n, u64::MAX))?;
    let battles: Vec<(String, Vec<String>)> =
        battles.into_iter().map(|b| (b.winner, b.losers)).collect();
    Ok(arena::bradley_terry(&battles, bootstrap, seed)
        .into_iter()
        .map(|r| Rating {
            name: r.name,
            score: r.score,
            ci_low: r.ci_low,
            ci_high: r.ci_high,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_taken_exactly_or_refused() {
        for (value, max, expected) in [
            (0.0, u64::MAX, Some(0)),
            (-0.0, u64::MAX, Some(0)),
            (7.0, 7, Some(7)),
            (8.0, 7, None),
            (9007199254740991.0, u64::MAX, Some(MAX_SAFE_INTEGER)),
            (9007199254740992.0, u64::MAX, None),
            (-1.0, u64::MAX, None),
            (1.5, u64::MAX, None),
            (f64::NAN, u64::MAX, None),
            (f64::INFINITY, u64::MAX, None),
        ] {
            assert_eq!(
                checked_whole("n", value, max).ok(),
                expected,
                "{value} max {max}"
            );
        }
        for (value, expected) in [
            (-5.0, Some(-5)),
            (1_700_000_000_000.0, Some(1_700_000_000_000)),
            (-9007199254740991.0, Some(-9007199254740991)),
            (0.5, None),
            (f64::NAN, None),
            (f64::NEG_INFINITY, None),
            (1e300, None),
        ] {
            assert_eq!(checked_integer("n", value).ok(), expected, "{value}");
        }
        assert_eq!(
            checked_whole("seed", -1.0, u64::MAX).unwrap_err(),
            "seed must be an integer in 0..=9007199254740991, got -1"
        );
    }

    #[test]
    fn nullable_maps_null_and_undefined_to_none() {
        assert_eq!(nullable::<u8>(None), None);
        assert_eq!(nullable::<u8>(Some(Either::B(Null))), None);
        assert_eq!(nullable(Some(Either::<u8, Null>::A(3))), Some(3));
    }
}
