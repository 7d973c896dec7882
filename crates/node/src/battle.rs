//! Battles for JavaScript: `rig.startBattle(spec)` → `Battle`,
//! `rig.battle(id)`, `rig.battles(filter)`, `rig.leaderboard(options)`.
//!
//! A thin face of the core rig's [`Arena`]: the first battle or run call
//! opens the rig's core [`coderig::rig::Rig`] (store, bus, arena, flow
//! engine; [`crate::rig`]), and a `Battle` holds that core rig and its id.
//! The process `exit` listener (`exit.rs`) shuts the core rig down.
//!
//! Specs are the core's `BattleSpec` JSON with DESIGN's snake_case keys,
//! decoded by `BattleSpec::from_json` (so a bad spec rejects with
//! `INVALID_INPUT` and its `path`, before anything is opened or created);
//! results are the core's serde JSON (`BattleView`, `Leaderboard`, ...),
//! the same objects the server, the CLI and Python show. Every method
//! returns a Promise rejected with the one JS form of a [`coderig::Error`]:
//! `CONFLICT` for a state that does not allow the call (stopping a finished
//! battle), `NOT_FOUND_ID` for an unknown battle or contestant.
//!
//! `battle.events()` and `battle.wait()` follow the battle with the core's
//! `Watch` (`events.rs`): its end rule is the one of every face.

use crate::events::WatchEvents;
use crate::helpers::{arg, promise, to_json, with_args};
use crate::rig::{options_json, to_value, Rig};
use coderig::arena::runner::{Arena, BattleFilter, LeaderboardFilter};
use coderig::arena::{AgentRef, BattleSpec};
use coderig::rig::{Rig as CoreRig, Subject};
use coderig::Error;
use napi::bindgen_prelude::{PromiseRaw, Unknown};
use napi::Env;
use napi_derive::napi;
use serde_json::Value;
use std::future::Future;

#[napi]
impl Rig {
    /// Checks and starts a battle (a `BattleSpec` with DESIGN's snake_case
    /// keys: `battle_type`, `prompt`, `project`, `contestants`, `judge`,
    /// `oracle`, ...) and resolves to its `Battle`, `running`. Opens the
    /// rig's core rig on first use. Rejects with `INVALID_INPUT`
    /// (`path` names the field: `contestants[1].model`, ...) for a spec the
    /// core refuses — an unknown identity, fewer than 2 contestants, a
    /// project that is not a git repository or lies outside
    /// `projectRoots` — and then nothing is created.
    #[napi(ts_return_type = "Promise<Battle>")]
    pub fn start_battle<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "BattleSpec")] spec: Unknown,
    ) -> napi::Result<PromiseRaw<'env, Battle>> {
        with_args(
            env,
            || {
                // The spec's own paths (`contestants[0].model`), as the
                // server reports them for the same body.
                let value = to_json(env, spec, "")?;
                Ok(BattleSpec::from_json(&value)?)
            },
            |spec| {
                let open = self.open();
                promise(
                    env,
                    async move {
                        let rig = open.await?;
                        let view = rig.arena().start_battle(spec).await?;
                        Ok(Battle { id: view.id, rig })
                    },
                    |battle| battle,
                )
            },
        )
    }

    /// The battle `id` (rejects with `NOT_FOUND_ID` when there is none).
    #[napi(ts_return_type = "Promise<Battle>")]
    pub fn battle<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "string")] id: Unknown,
    ) -> napi::Result<PromiseRaw<'env, Battle>> {
        with_args(
            env,
            || arg::<String>(env, "id", id),
            |id| {
                let open = self.open();
                promise(
                    env,
                    async move {
                        let rig = open.await?;
                        let view = rig.arena().battle(&id).await?;
                        Ok(Battle { id: view.id, rig })
                    },
                    |battle| battle,
                )
            },
        )
    }

    /// Battles, newest first, one page at a time: `filter.project` (a
    /// path), `filter.status`, `filter.limit` (1–500, default 50),
    /// `filter.cursor` (the previous page's `next_cursor`).
    #[napi(ts_return_type = "Promise<BattlePage>")]
    pub fn battles<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "BattleFilter | null")] filter: Option<Unknown>,
    ) -> napi::Result<PromiseRaw<'env, Value>> {
        with_args(
            env,
            || {
                let filter: BattleFilter =
                    coderig::json::decode_object(options_json(env, filter)?)?;
                Ok(filter)
            },
            |filter| {
                let open = self.open();
                promise(
                    env,
                    async move { open.await?.arena().list_battles(&filter).await },
                    |page| to_value(&page),
                )
            },
        )
    }

    /// Bradley–Terry ratings over completed battles with a winner: one
    /// board per battle type (only `options.battleType`'s when given), of
    /// one project when `options.project` is given.
    #[napi(ts_return_type = "Promise<Array<Leaderboard>>")]
    pub fn leaderboard<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "LeaderboardOptions | null")] options: Option<Unknown>,
    ) -> napi::Result<PromiseRaw<'env, Value>> {
        with_args(
            env,
            || {
                let args: LeaderboardFilter =
                    coderig::json::decode_object(options_json(env, options)?)?;
                Ok(args)
            },
            |args| {
                let open = self.open();
                promise(
                    env,
                    async move {
                        open.await?
                            .arena()
                            .leaderboard(args.battle_type, args.project.as_deref())
                            .await
                    },
                    |boards| to_value(&boards),
                )
            },
        )
    }
}

/// One battle: its id and the calls on it, on the core rig that holds it.
#[napi]
pub struct Battle {
    id: String,
    rig: CoreRig,
}

impl Battle {
    /// A Promise of `call` on this battle's arena, resolved with its JSON.
    fn call<'env, T, F>(
        &self,
        env: &'env Env,
        call: impl FnOnce(Arena, String) -> F,
    ) -> napi::Result<PromiseRaw<'env, Value>>
    where
        T: serde::Serialize + Send + 'static,
        F: Future<Output = Result<T, Error>> + Send + 'static,
    {
        let work = call(self.rig.arena().clone(), self.id.clone());
        promise(env, work, |value| to_value(&value))
    }
}

#[napi]
impl Battle {
    /// The battle's id.
    #[napi(getter)]
    pub fn id(&self) -> String {
        self.id.clone()
    }

    /// The battle as it is now (`BattleView`: status, contestants with
    /// their evidence, winner, ...).
    #[napi(ts_return_type = "Promise<BattleView>")]
    pub fn info<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, Value>> {
        self.call(env, |arena, id| async move { arena.battle(&id).await })
    }

    /// Resolves to the battle once it is finished (`completed`, `failed`
    /// or `cancelled`, every contestant final), as the core's `Watch` ends:
    /// the battle is read a bounded number of times, not per event. With `timeoutMs`, rejects when it is not finished
    /// by then: a `TimeoutError` (`name`) of code `UNAVAILABLE` with
    /// `details` `{reason: 'timeout', battle_id, status, timeout_ms}`. Like
    /// any pending I/O, a pending `wait()` keeps Node running.
    #[napi(ts_return_type = "Promise<BattleView>")]
    pub fn wait<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "number | null")] timeout_ms: Option<Unknown>,
    ) -> napi::Result<PromiseRaw<'env, Value>> {
        crate::events::wait(env, &self.rig, Subject::Battle(self.id.clone()), timeout_ms)
    }

    /// The battle's events as an async iterator (`for await (const e of
    /// battle.events())`): first its stored history from the store (each
    /// event with `seq` and `epoch`), then its events as they happen (the
    /// stored ones and the live-only `agent_output`, which has no `seq`).
    /// Ends right after the `battle_updated` that finishes the battle,
    /// which comes after every contestant's final `contestant_updated` (for
    /// a battle already finished: after its history). Each iterator is
    /// independent; leaving the loop early stops nothing.
    #[napi(ts_return_type = "AsyncIterable<BattleEvent>")]
    pub fn events(&self) -> WatchEvents {
        WatchEvents::new(&self.rig, Subject::Battle(self.id.clone()))
    }

    /// Stops a running or judging battle (its agents stopped, it
    /// `cancelled`); resolves to the battle. A finished battle rejects with
    /// `CONFLICT` (`details.status`).
    #[napi(ts_return_type = "Promise<BattleView>")]
    pub fn stop<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, Value>> {
        self.call(env, |arena, id| async move { arena.stop(&id).await })
    }

    /// Runs the analysis of a completed battle again (it is `judging`
    /// until it ends; `wait()` for it). A human's winner is kept unless
    /// `force`. Rejects with `CONFLICT` unless the battle is completed.
    #[napi(ts_return_type = "Promise<BattleView>")]
    pub fn analyze<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "boolean | null")] force: Option<Unknown>,
    ) -> napi::Result<PromiseRaw<'env, Value>> {
        with_args(
            env,
            || Ok(arg::<Option<bool>>(env, "force", force)?.unwrap_or(false)),
            |force| {
                self.call(env, move |arena, id| async move {
                    arena.analyze(&id, force).await
                })
            },
        )
    }

    /// Names the winner of a completed battle (a contestant id, source
    /// `human`) or clears it (`null`); a later analysis keeps it unless
    /// forced. Rejects with `NOT_FOUND_ID` for an unknown contestant,
    /// `CONFLICT` for a battle not completed.
    #[napi(ts_return_type = "Promise<BattleView>")]
    pub fn set_winner<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "string | null")] contestant_id: Option<Unknown>,
    ) -> napi::Result<PromiseRaw<'env, Value>> {
        with_args(
            env,
            || arg::<Option<String>>(env, "contestantId", contestant_id),
            |cid| {
                self.call(env, move |arena, id| async move {
                    arena.set_winner(&id, cid.as_deref()).await
                })
            },
        )
    }

    /// Asks the agent `identity` with `model` to cross-examine the
    /// analysis; resolves to the cross-examination's id (it shows in
    /// `info().cross_exams`). Rejects with `CONFLICT` while the analysis is
    /// not written, `NOT_FOUND_ID` (`details.path` `identity`) for an
    /// unknown identity.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn cross_examine<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "string")] identity: Unknown,
        #[napi(ts_arg_type = "string")] model: Unknown,
    ) -> napi::Result<PromiseRaw<'env, Value>> {
        with_args(
            env,
            || {
                Ok(AgentRef {
                    identity: arg(env, "identity", identity)?,
                    model: arg(env, "model", model)?,
                })
            },
            |examiner| {
                self.call(env, move |arena, id| async move {
                    arena.cross_examine(&id, examiner).await
                })
            },
        )
    }

    /// The archived `diff.patch` of a coding contestant (text; lossy for
    /// bytes that are not UTF-8). Rejects with `NOT_FOUND_ID` for an
    /// unknown contestant or one without an archived patch yet.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn diff<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "string")] contestant_id: Unknown,
    ) -> napi::Result<PromiseRaw<'env, Value>> {
        with_args(
            env,
            || arg::<String>(env, "contestantId", contestant_id),
            |cid| {
                self.call(env, move |arena, id| async move {
                    let bytes = arena.diff(&id, &cid).await?;
                    Ok(String::from_utf8_lossy(&bytes).into_owned())
                })
            },
        )
    }

    /// A contestant's archived `result.md` (outcome, benchmark, usage,
    /// evidence and its answer). Rejects with `NOT_FOUND_ID` for an
    /// unknown contestant or one whose turn has not ended.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn result<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "string")] contestant_id: Unknown,
    ) -> napi::Result<PromiseRaw<'env, Value>> {
        with_args(
            env,
            || arg::<String>(env, "contestantId", contestant_id),
            |cid| {
                self.call(env, move |arena, id| async move {
                    arena.result(&id, &cid).await
                })
            },
        )
    }

    /// Applies the winner's patch (or `contestantId`'s) to the project's
    /// working tree. Rejects with `CONFLICT` when it does not apply cleanly
    /// (nothing changed) or when there is no winner and no contestant is
    /// named.
    #[napi(ts_return_type = "Promise<AppliedPatch>")]
    pub fn apply<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "string | null")] contestant_id: Option<Unknown>,
    ) -> napi::Result<PromiseRaw<'env, Value>> {
        with_args(
            env,
            || arg::<Option<String>>(env, "contestantId", contestant_id),
            |cid| {
                self.call(env, move |arena, id| async move {
                    arena.apply(&id, cid.as_deref()).await
                })
            },
        )
    }

    /// The text of the battle's `analysis.md`. Rejects with `NOT_FOUND_ID`
    /// until it is written.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn analysis<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, Value>> {
        self.call(env, |arena, id| async move { arena.analysis(&id).await })
    }
}
