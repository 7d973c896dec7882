//! The arena as a task handler: contestants, judge analyses and
//! cross-examinations run by a [`crate::worker::TaskWorker`] — the arena's
//! own ([`super::Arena::start`]) or one shared with the flow engine — and
//! the reconcile of live battles, on the worker's tick (every
//! `reconcile_every`, at once after a rescue of an arena task) and at once
//! after each of its tasks ends. Claiming, heartbeats, lease loss, rescue
//! and shutdown are the worker's; a lost lease or a shutdown reaches a
//! holder through [`Held`], a stopped battle through
//! [`TaskSet::cancel_work`](crate::worker::TaskSet::cancel_work).

use super::data::{decode, encode, ContestantData, JudgeData};
use super::events::{battle_event, contestant_event};
use super::{contestant, judge, Inner};
use crate::arena::lifecycle::{
    next_battle_actions, BattleAction, BattleFacts, ContestantFacts, JudgeStatus,
};
use crate::arena::{ContestantStatus, Lane};
use crate::error::Error;
use crate::event::BattleStatus;
use crate::store::{
    OwnerKind, OwnerRef, OwnerUpdate, Target, TaskSpec, Transition, Update, WorkFilter, WorkKind,
    WorkSnapshot,
};
use crate::worker::{Held, TaskHandler, TaskSet};
use crate::workspace::Workspace;
use std::sync::Arc;
use std::time::Duration;

/// The owner kinds the arena runs.
const OWNER_KINDS: &[OwnerKind] = &[
    OwnerKind::Contestant,
    OwnerKind::Judge,
    OwnerKind::CrossExam,
];

/// The lanes they run in (the flow engine's drivers have their own).
const LANES: &[Lane] = &[Lane::Local, Lane::Cloud];

/// The arena's [`TaskHandler`] (what [`super::Arena::handler`] returns).
pub(crate) struct ArenaHandler(pub(crate) Arc<Inner>);

#[async_trait::async_trait]
impl TaskHandler for ArenaHandler {
    fn name(&self) -> &str {
        "arena"
    }

    fn owner_kinds(&self) -> &[OwnerKind] {
        OWNER_KINDS
    }

    fn lanes(&self) -> &[Lane] {
        LANES
    }

    fn max_concurrent(&self) -> u32 {
        self.0.config.max_concurrent
    }

    fn tasks(&self) -> &TaskSet {
        &self.0.tasks
    }

    fn tick_every(&self) -> Option<Duration> {
        Some(self.0.config.reconcile_every)
    }

    /// Reconciles the live battles (at start the cancelled ones too, and
    /// every page of them).
    async fn tick(&self, first: bool) -> Result<(), Error> {
        reconcile_all(&self.0, first).await
    }

    async fn run(&self, held: &Held) -> Result<(), Error> {
        run_task(&self.0, held).await
    }
}

async fn run_task(inner: &Arc<Inner>, held: &Held) -> Result<(), Error> {
    let result = match held.claim.task.owner.kind {
        OwnerKind::Contestant => contestant::run(inner, held).await,
        OwnerKind::Judge => judge::run_analysis(inner, held).await,
        OwnerKind::CrossExam => judge::run_cross_exam(inner, held).await,
        OwnerKind::Step => Err(Error::internal("the arena claimed a flow step")),
    };
    if let Err(e) = &result {
        if held.stopped().is_none() {
            // The attempt could not record its ending: fail it (fenced) so
            // the battle does not wait for a lease to expire.
            let completion = crate::store::Completion::failed(e.to_string(), false);
            let _ = inner.store.complete(&held.fence(), completion).await;
        }
    }
    inner.bus.notify();
    // What the battle needs next (judging after its last contestant, the
    // final status after its judge) is decided now, not at the next tick.
    if !inner.tasks.is_shut_down() {
        if let Err(e) = reconcile_battle(inner, &held.claim.task.work_id).await {
            eprintln!("coderig arena: battle {}: {e}", held.claim.task.work_id);
        }
    }
    result
}

/// Cancels every live task of a (stopped) battle in the store, settling
/// its owner, and stops this process's holders at once.
pub(crate) async fn cancel_live_tasks(inner: &Arc<Inner>, battle_id: &str) -> Result<(), Error> {
    let snapshot = inner.store.work(battle_id).await?;
    for task in snapshot.tasks.iter().filter(|t| !t.is_finished()) {
        let update = match task.owner.kind {
            OwnerKind::Contestant => Update {
                owner: Some(OwnerUpdate {
                    status: Some(ContestantStatus::Cancelled.as_str().into()),
                    data: None,
                }),
                event: Some(contestant_event(
                    battle_id,
                    &task.owner.id,
                    ContestantStatus::Cancelled,
                    None,
                    Some("the battle was stopped"),
                )?),
            },
            OwnerKind::Judge | OwnerKind::CrossExam => Update {
                owner: Some(OwnerUpdate {
                    status: Some("error".into()),
                    data: None,
                }),
                event: None,
            },
            OwnerKind::Step => continue,
        };
        match inner
            .store
            .cancel(&task.id, "the battle was stopped", update)
            .await
        {
            Ok(_) => {}
            // Finished meanwhile.
            Err(e) if e.kind() == crate::ErrorKind::Conflict => {}
            Err(e) => return Err(e),
        }
    }
    inner.tasks.cancel_work(battle_id);
    Ok(())
}

/// The facts of the lifecycle decision from a snapshot.
pub(crate) fn facts(snapshot: &WorkSnapshot) -> Result<BattleFacts, Error> {
    let status = snapshot
        .work
        .status
        .parse::<BattleStatus>()
        .map_err(|e| Error::internal(format!("battle {:?}: {e}", snapshot.work.id)))?;
    let latest_task = |owner: &str| {
        snapshot
            .tasks
            .iter()
            .filter(|t| t.owner.id == owner)
            .max_by_key(|t| (t.created_at, t.id.clone()))
    };
    let mut contestants = Vec::new();
    let mut judge = JudgeStatus::Idle;
    for owner in &snapshot.owners {
        match owner.kind {
            OwnerKind::Contestant => contestants.push(ContestantFacts {
                id: owner.id.clone(),
                status: owner
                    .status
                    .parse::<ContestantStatus>()
                    .map_err(|e| Error::internal(format!("contestant {:?}: {e}", owner.id)))?,
                task: latest_task(&owner.id).map(|t| (t.id.clone(), t.state, t.error.clone())),
            }),
            OwnerKind::Judge => {
                judge = owner
                    .status
                    .parse::<JudgeStatus>()
                    .map_err(|e| Error::internal(format!("judge {:?}: {e}", owner.id)))?
            }
            _ => {}
        }
    }
    let live: Vec<_> = snapshot.tasks.iter().filter(|t| !t.is_finished()).collect();
    Ok(BattleFacts {
        status,
        contestants,
        judge,
        judge_tasks: snapshot
            .tasks
            .iter()
            .filter(|t| t.owner.kind == OwnerKind::Judge)
            .count() as u32,
        judge_task_live: live.iter().any(|t| t.owner.kind == OwnerKind::Judge),
        judge_failures: {
            let mut failed: Vec<_> = snapshot
                .tasks
                .iter()
                .filter(|t| {
                    t.owner.kind == OwnerKind::Judge && t.state == crate::task::TaskState::Failed
                })
                .collect();
            failed.sort_by_key(|t| t.finished_at);
            (
                failed.len() as u32,
                failed.last().and_then(|t| t.error.clone()),
            )
        },
        live_tasks: live.iter().map(|t| t.id.clone()).collect(),
    })
}

pub(crate) async fn reconcile_all(inner: &Arc<Inner>, startup: bool) -> Result<(), Error> {
    let mut statuses = vec!["running", "judging"];
    if startup {
        statuses.push("cancelled");
    }
    let mut cursor: Option<String> = None;
    loop {
        let mut filter = WorkFilter::new(WorkKind::Battle)
            .statuses(&statuses)
            .limit(200);
        if let Some(c) = &cursor {
            filter = filter.cursor(c);
        }
        let page = inner.store.list_works(&filter).await?;
        for work in &page.works {
            if let Err(e) = reconcile_battle(inner, &work.id).await {
                eprintln!("coderig arena: battle {}: {e}", work.id);
            }
        }
        match page.next_cursor {
            Some(c) if startup => cursor = Some(c),
            _ => return Ok(()),
        }
    }
}

/// Takes every action the battle needs now (at most a few rounds: one
/// action can enable the next, e.g. judging then the judge's task).
pub(crate) async fn reconcile_battle(inner: &Arc<Inner>, id: &str) -> Result<(), Error> {
    for _ in 0..4 {
        let snapshot = inner.store.work(id).await?;
        let actions = next_battle_actions(&facts(&snapshot)?);
        if actions.is_empty() {
            return Ok(());
        }
        for action in actions {
            let result = act(inner, &snapshot, action).await;
            match result {
                Ok(()) => {}
                // Another worker did it first.
                Err(e) if e.kind() == crate::ErrorKind::Conflict => {}
                Err(e) => return Err(e),
            }
        }
        inner.bus.notify();
        inner.tasks.wake();
    }
    Ok(())
}

async fn act(
    inner: &Arc<Inner>,
    snapshot: &WorkSnapshot,
    action: BattleAction,
) -> Result<(), Error> {
    let id = &snapshot.work.id;
    match action {
        BattleAction::MarkContestant {
            id: cid,
            status,
            error,
        } => {
            let owner = snapshot
                .owners
                .iter()
                .find(|o| o.id == cid)
                .ok_or_else(|| Error::not_found_id("contestant", &cid))?;
            let mut data: ContestantData = decode("contestant", &cid, &owner.data)?;
            if data.error.is_none() {
                data.error = error.clone();
            }
            inner
                .store
                .transition(Transition {
                    target: Target::Owner(cid.clone()),
                    from: vec!["queued".into(), "running".into()],
                    to: status.as_str().into(),
                    data: Some(encode(&data)),
                    event: Some(contestant_event(id, &cid, status, Some(&data), None)?),
                })
                .await?;
            // Its worktree (a holder that died) goes once archived.
            contestant::cleanup_after_crash(inner, snapshot, &cid, &data).await;
            Ok(())
        }
        BattleAction::StartJudging => {
            let data = decode("battle", id, &snapshot.work.data)?;
            inner
                .store
                .transition(Transition {
                    target: Target::Work(id.clone()),
                    from: vec!["running".into()],
                    to: "judging".into(),
                    data: None,
                    event: Some(battle_event(id, BattleStatus::Judging, &data, None)?),
                })
                .await?;
            Ok(())
        }
        BattleAction::EnqueueJudge { n } => {
            let judge = snapshot
                .owners
                .iter()
                .find(|o| o.kind == OwnerKind::Judge)
                .ok_or_else(|| Error::internal(format!("battle {id:?} has no judge row")))?;
            let data: JudgeData = decode("judge", &judge.id, &judge.data)?;
            let lane = data.lane.unwrap_or(Lane::Cloud);
            inner
                .store
                .enqueue(
                    vec![TaskSpec::new(
                        format!("{id}-judge-{n}"),
                        OwnerRef {
                            kind: OwnerKind::Judge,
                            id: judge.id.clone(),
                        },
                        lane,
                    )
                    .with_payload(serde_json::json!({"battle_id": id}))],
                    None,
                )
                .await?;
            Ok(())
        }
        BattleAction::FinishBattle => judge::finish_from_judge(inner, id).await,
        BattleAction::FailBattle { error } => {
            super::finish::fail_battle(inner, snapshot, error).await
        }
        BattleAction::CancelTask { task_id } => {
            let _ = task_id;
            cancel_live_tasks(inner, id).await
        }
    }
}

/// At start, when no other process works in the root: oracle checkouts a
/// crash left behind are removed (they are no live run's work then); other
/// live worktrees are the battles' own and are cleaned up as their
/// contestants settle.
pub(crate) async fn sweep_checkouts(workspace: &Arc<dyn Workspace>) {
    let workspace = workspace.clone();
    let _ = tokio::task::spawn_blocking(move || {
        let Ok(report) = workspace.sweep() else {
            return;
        };
        for wt in report.live {
            if crate::arena::oracle::is_oracle_checkout(&wt.name) {
                let _ = workspace.unlock(&wt);
                let _ = workspace.remove(&wt, &crate::workspace::RemoveProof::Discard);
            }
        }
    })
    .await;
}
