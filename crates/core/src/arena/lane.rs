//! Lanes and dispatch: which contestants run where, and which start now.
//!
//! Contestants served by the one local GPU server share a *local lane* that
//! runs a few at a time (by default one: two models loaded at once would
//! thrash the GPU and spoil the benchmark); everything else goes to the
//! *cloud lane*, which runs in parallel up to an optional cap.

use crate::names::macros::named_enum;

/// The kind of battle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BattleType {
    /// Question and answer: contestants answer in text, no workspace.
    Qa,
    /// Coding: each contestant works in its own git worktree.
    Coding,
}
named_enum!(BattleType, "battle type", { Qa => "qa" | "q&a" | "q_a", Coding => "coding" | "code" });

/// The lane a contestant runs in: `Local` or `Cloud` (the store's lane
/// type, declared in [`crate::task`] so the store and the task worker share
/// it without depending on the arena; `Driver` belongs to the flow
/// engine's run drivers and is never a contestant's).
pub use crate::task::Lane;

/// Where a contestant stands. `Done` and `Error` are the finished states
/// [`is_battle_complete`] waits for; `Cancelled` is what a stopped battle or a
/// cancelled task leaves behind (see [`crate::arena::resume`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ContestantStatus {
    /// Created, waiting for a lane slot.
    Queued,
    /// Dispatched to its backend.
    Running,
    /// Finished with a result.
    Done,
    /// Finished without a usable result.
    Error,
    /// Stopped before finishing.
    Cancelled,
}
named_enum!(ContestantStatus, "contestant status", {
    Queued => "queued",
    Running => "running",
    Done => "done",
    Error => "error",
    Cancelled => "cancelled" | "canceled",
});

/// The lane of one contestant.
///
/// Q&A contestants are always local (Q&A battles exist to compare local
/// models on one GPU). A coding contestant is local when `local_models`
/// contains its `model`, or `"<identity>/<model>"` to pin a single backend;
/// names compare exactly (model names are case-sensitive on most servers).
/// Otherwise it is cloud.
pub fn classify_lane<S: AsRef<str>>(
    battle_type: BattleType,
    identity: &str,
    model: &str,
    local_models: &[S],
) -> Lane {
    match battle_type {
        BattleType::Qa => Lane::Local,
        BattleType::Coding => {
            let is_local = local_models.iter().any(|entry| {
                let entry = entry.as_ref();
                entry == model
                    || entry
                        .split_once('/')
                        .is_some_and(|(who, what)| who == identity && what == model)
            });
            if is_local {
                Lane::Local
            } else {
                Lane::Cloud
            }
        }
    }
}

/// The first queued local contestant in the given (creation) order, if any.
pub fn next_local_contestant<Id: Clone>(
    contestants: &[(Id, Lane, ContestantStatus)],
) -> Option<Id> {
    contestants
        .iter()
        .find(|(_, lane, status)| *lane == Lane::Local && *status == ContestantStatus::Queued)
        .map(|(id, _, _)| id.clone())
}

/// The contestants to start now, in the given (creation) order.
///
/// Capacities cap the number of *running* contestants per lane: the local
/// lane admits queued local contestants while fewer than `local_capacity`
/// run (the usual value is 1; 0 admits none), the cloud lane admits queued
/// cloud contestants up to `cloud_capacity` minus those running (`None` =
/// unbounded). Earlier contestants are admitted first, so the result is
/// deterministic. A row in the `driver` lane (no contestant's, but the type
/// allows it) is never held back: that lane has no capacity.
pub fn dispatch_now<Id: Clone>(
    contestants: &[(Id, Lane, ContestantStatus)],
    local_capacity: usize,
    cloud_capacity: Option<usize>,
) -> Vec<Id> {
    let running = |lane: Lane| {
        contestants
            .iter()
            .filter(|(_, l, s)| *l == lane && *s == ContestantStatus::Running)
            .count()
    };
    let mut local_slots = local_capacity.saturating_sub(running(Lane::Local));
    let mut cloud_slots = cloud_capacity.map(|cap| cap.saturating_sub(running(Lane::Cloud)));

    let mut admitted = Vec::new();
    for (id, lane, status) in contestants {
        if *status != ContestantStatus::Queued {
            continue;
        }
        let slots = match lane {
            Lane::Local => Some(&mut local_slots),
            Lane::Cloud => cloud_slots.as_mut(),
            Lane::Driver => None,
        };
        match slots {
            Some(0) => {}
            Some(n) => {
                *n -= 1;
                admitted.push(id.clone());
            }
            None => admitted.push(id.clone()),
        }
    }
    admitted
}

/// True when the battle has at least one contestant and every one of them is
/// `Done` or `Error`. A `Cancelled` contestant keeps the battle incomplete:
/// cancellation belongs to a stopped battle, which the runner records as
/// stopped rather than complete.
pub fn is_battle_complete(statuses: &[ContestantStatus]) -> bool {
    !statuses.is_empty()
        && statuses
            .iter()
            .all(|s| matches!(s, ContestantStatus::Done | ContestantStatus::Error))
}
