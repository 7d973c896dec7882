//! The worker loop: claim, run, heartbeat, rescue, reconcile.
//!
//! One loop per [`super::Arena`]. Each pass rescues expired leases (any
//! server's), reconciles live battles (on a timer, and at once after a
//! rescue or a finished task), and claims as many tasks as it has room for
//! — contestants, judge analyses and cross-examinations only (the flow
//! runtime claims its own steps). Every claimed task runs in its own tokio
//! task with a heartbeat beside it; a lost lease or a stopped battle
//! cancels it.

use super::data::{decode, encode, ContestantData, JudgeData};
use super::{battle_event, contestant, judge, Inner, RunningTask};
use crate::arena::lifecycle::{
    next_battle_actions, BattleAction, BattleFacts, ContestantFacts, JudgeStatus,
};
use crate::arena::ContestantStatus;
use crate::error::Error;
use crate::event::{BattleStatus, ContestantUpdated, Event};
use crate::store::{
    Claim, ClaimRequest, NewEvent, OwnerKind, OwnerRef, OwnerUpdate, Target, TaskSpec, Transition,
    Update, WorkFilter, WorkKind, WorkSnapshot,
};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Why a running task was stopped (what its holder may still write).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopReason {
    /// The lease is gone (expired and rescued, or the task cancelled in the
    /// store): write nothing.
    LeaseLost,
    /// This process shuts down: write nothing, the lease expires and
    /// another worker finishes the task.
    Shutdown,
}

/// A claimed task's context: the claim, its cancellation, why it stopped.
pub(crate) struct Held {
    pub claim: Claim,
    pub cancel: CancellationToken,
    pub reason: Arc<std::sync::Mutex<Option<StopReason>>>,
}

impl Held {
    pub fn stopped(&self) -> Option<StopReason> {
        *self.reason.lock().unwrap_or_else(|e| e.into_inner())
    }
}

pub(crate) async fn run_loop(inner: Arc<Inner>) {
    let mut last_reconcile: Option<Instant> = None;
    let mut first = true;
    loop {
        if inner.shutdown.is_cancelled() {
            break;
        }
        let mut reconcile_now =
            last_reconcile.is_none_or(|t| t.elapsed() >= inner.config.reconcile_every);
        match inner.store.rescue_expired(100).await {
            Ok(rescued) if !rescued.is_empty() => {
                reconcile_now = true;
                inner.bus.notify();
            }
            Ok(_) => {}
            Err(e) => eprintln!("coderig arena: rescue failed: {e}"),
        }
        if reconcile_now {
            if let Err(e) = reconcile_all(&inner, first).await {
                eprintln!("coderig arena: reconcile failed: {e}");
            }
            first = false;
            last_reconcile = Some(Instant::now());
        }
        let running = inner.running.lock().map(|m| m.len()).unwrap_or(0) as u32;
        let free = inner.config.max_concurrent.saturating_sub(running);
        if free > 0 {
            let request = ClaimRequest::new(inner.config.worker.clone())
                .limit(free)
                .lease_ttl(inner.config.lease_ttl)
                .owner_kinds(&[
                    OwnerKind::Contestant,
                    OwnerKind::Judge,
                    OwnerKind::CrossExam,
                ]);
            match inner.store.claim(&request).await {
                Ok(claims) => {
                    for claim in claims {
                        spawn_task(&inner, claim);
                    }
                }
                Err(e) => eprintln!("coderig arena: claim failed: {e}"),
            }
        }
        tokio::select! {
            _ = inner.wake.notified() => {}
            _ = tokio::time::sleep(inner.config.poll) => {}
            _ = inner.shutdown.cancelled() => break,
        }
    }
}

fn spawn_task(inner: &Arc<Inner>, claim: Claim) {
    let cancel = inner.shutdown.child_token();
    let battle_id = claim.task.work_id.clone();
    let task_id = claim.task.id.clone();
    inner
        .running
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(
            task_id.clone(),
            RunningTask {
                battle_id,
                cancel: cancel.clone(),
            },
        );
    let held = Held {
        claim,
        cancel,
        reason: Arc::new(std::sync::Mutex::new(None)),
    };
    let inner2 = inner.clone();
    inner.tracker.spawn(async move {
        let heartbeat = spawn_heartbeat(&inner2, &held);
        let kind = held.claim.task.owner.kind;
        let result = match kind {
            OwnerKind::Contestant => contestant::run(&inner2, &held).await,
            OwnerKind::Judge => judge::run_analysis(&inner2, &held).await,
            OwnerKind::CrossExam => judge::run_cross_exam(&inner2, &held).await,
            OwnerKind::Step => Err(Error::internal("the arena claimed a flow step")),
        };
        heartbeat.cancel();
        if let Err(e) = result {
            if held.stopped().is_none() {
                eprintln!(
                    "coderig arena: task {} ({}) failed: {e}",
                    held.claim.task.id, kind
                );
                // The attempt could not record its ending: fail it (fenced)
                // so the battle does not wait for a lease to expire.
                let completion = crate::store::Completion::failed(e.to_string(), false);
                let _ = inner2.store.complete(&held.claim.fence(), completion).await;
            }
        }
        inner2
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&held.claim.task.id);
        inner2.bus.notify();
        // What the battle needs next (judging after its last contestant,
        // the final status after its judge) is decided now, not at the
        // next reconcile tick.
        if !inner2.shutdown.is_cancelled() {
            if let Err(e) = reconcile_battle(&inner2, &held.claim.task.work_id).await {
                eprintln!("coderig arena: battle {}: {e}", held.claim.task.work_id);
            }
        }
        inner2.wake.notify_one();
    });
}

/// Heartbeats the lease every third of its length; a lost lease stops the
/// task. Returns the token that ends the heartbeat.
fn spawn_heartbeat(inner: &Arc<Inner>, held: &Held) -> CancellationToken {
    let done = CancellationToken::new();
    let stop = done.clone();
    let store = inner.store.clone();
    let fence = held.claim.fence();
    let ttl = inner.config.lease_ttl;
    let cancel = held.cancel.clone();
    let reason = held.reason.clone();
    let shutdown = inner.shutdown.clone();
    tokio::spawn(async move {
        let every = (ttl / 3).max(Duration::from_millis(100));
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(every) => {}
            }
            if shutdown.is_cancelled() {
                reason
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get_or_insert(StopReason::Shutdown);
                cancel.cancel();
                return;
            }
            match store.heartbeat(&fence, ttl).await {
                Ok(_) => {}
                Err(e)
                    if e.kind() == crate::ErrorKind::Conflict
                        || e.kind() == crate::ErrorKind::NotFoundId =>
                {
                    reason
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .get_or_insert(StopReason::LeaseLost);
                    cancel.cancel();
                    return;
                }
                // A database hiccup: try again at the next beat; the lease
                // has two more beats before it expires.
                Err(_) => {}
            }
        }
    });
    // Shutdown also reaches the task directly.
    let reason = held.reason.clone();
    let cancel = held.cancel.clone();
    let shutdown = inner.shutdown.clone();
    let done2 = done.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = done2.cancelled() => {}
            _ = shutdown.cancelled() => {
                reason.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(StopReason::Shutdown);
                cancel.cancel();
            }
        }
    });
    done
}

/// Cancels this process's running tasks of a battle (a stop).
pub(crate) fn cancel_local(inner: &Inner, battle_id: &str) {
    for task in inner
        .running
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .values()
        .filter(|t| t.battle_id == battle_id)
    {
        task.cancel.cancel();
    }
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
    cancel_local(inner, battle_id);
    Ok(())
}

/// `contestant_updated` with the contestant's benchmark and evidence.
pub(crate) fn contestant_event(
    battle_id: &str,
    contestant_id: &str,
    status: ContestantStatus,
    data: Option<&ContestantData>,
    error: Option<&str>,
) -> Result<NewEvent, Error> {
    NewEvent::from_event(&Event::ContestantUpdated(ContestantUpdated {
        battle_id: battle_id.to_owned(),
        contestant_id: contestant_id.to_owned(),
        status,
        duration_ms: data.and_then(|d| d.duration_ms),
        ttft_ms: data.and_then(|d| d.ttft_ms),
        usage: data.and_then(|d| d.usage.as_ref()).map(encode),
        tokens_per_sec: data.and_then(|d| d.tokens_per_sec),
        evidence: data.and_then(|d| d.evidence.as_ref()).map(encode),
        error: error
            .map(str::to_owned)
            .or_else(|| data.and_then(|d| d.error.clone()))
            .map(serde_json::Value::String),
    }))
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

async fn reconcile_all(inner: &Arc<Inner>, startup: bool) -> Result<(), Error> {
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
        inner.wake.notify_one();
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
            let lane = data.lane.unwrap_or(crate::arena::Lane::Cloud);
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

/// At start: oracle checkouts a crash left behind are removed (they are
/// never anyone's work); other live worktrees are the battles' own and are
/// cleaned up as their contestants settle.
pub(crate) async fn sweep_checkouts(inner: &Arc<Inner>) {
    let workspace = inner.workspace.clone();
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
