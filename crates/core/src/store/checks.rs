//! The store's pure decisions on what a write may do, shared by every
//! backend: how ending an attempt settles its task ([`settle`]), and the
//! checks that refuse a bad task spec, work, owner, claim or lane capacity
//! as `invalid_input` before anything is written.

use super::*;

/// What ending an attempt does to its task: the pure part of
/// `Store::complete`, shared by every backend.
#[derive(Debug, Clone, PartialEq)]
pub struct Settlement {
    /// The task's new state: `completed`, `failed`, `cancelled`, or
    /// `pending` when a retry is scheduled.
    pub state: TaskState,
    /// Reported failures after this attempt.
    pub failures: u32,
    /// For a retry: the wait before the next attempt.
    pub retry_in_ms: Option<u64>,
    /// The result to store (completed only).
    pub result: Option<serde_json::Value>,
    /// The error to store (failed, cancelled, retried).
    pub error: Option<String>,
}

/// The settlement of `task`'s attempt ending with `outcome`: a retryable
/// failure goes back to `pending` with the policy's backoff while
/// [`RetryPolicy::retries_after`] allows it; everything else finishes.
pub fn settle(task: &Task, outcome: &Outcome) -> Settlement {
    match outcome {
        Outcome::Completed { result } => Settlement {
            state: TaskState::Completed,
            failures: task.failures,
            retry_in_ms: None,
            result: Some(result.clone()),
            error: None,
        },
        Outcome::Failed { error, retryable } => {
            let failures = task.failures.saturating_add(1);
            let retry = *retryable && task.retry.retries_after(failures);
            Settlement {
                state: if retry {
                    TaskState::Pending
                } else {
                    TaskState::Failed
                },
                failures,
                retry_in_ms: retry.then(|| task.retry.delay_ms(failures)),
                result: None,
                error: Some(error.clone()),
            }
        }
        Outcome::Cancelled { reason } => Settlement {
            state: TaskState::Cancelled,
            failures: task.failures,
            retry_in_ms: None,
            result: None,
            error: Some(reason.clone()),
        },
    }
}

pub(super) fn check_id(what: &str, id: &str) -> Result<(), Error> {
    if id.is_empty() || id.len() > 200 || id.chars().any(char::is_control) {
        return Err(Error::invalid_input(format!(
            "a {what} id must be 1 to 200 characters without control characters, not {id:?}"
        )));
    }
    Ok(())
}

/// Checks a task spec's fields (not its owner's existence): the check every
/// backend runs before it touches the database (`invalid_input`).
pub fn check_task_spec(spec: &TaskSpec) -> Result<(), Error> {
    check_id("task", &spec.id)?;
    check_id(spec.owner.kind.as_str(), &spec.owner.id)?;
    if spec.retry.max_attempts == 0 {
        return Err(Error::invalid_input(format!(
            "task {:?}: retry.max_attempts must be at least 1 (1 = no retry)",
            spec.id
        )));
    }
    Ok(())
}

/// Checks a new work as every backend does before it touches the database
/// (`invalid_input`): ids, owner kinds that belong to the work's kind,
/// unique ids, and tasks that each name one of the new owners. A face may
/// call it to refuse a bad request early.
pub fn check_new_work(work: &NewWork) -> Result<(), Error> {
    check_id(work.kind.as_str(), &work.id)?;
    let mut owners = HashSet::new();
    for owner in &work.owners {
        check_id(owner.kind.as_str(), &owner.id)?;
        check_owner_kind(work.kind, owner)?;
        if !owners.insert((owner.kind, owner.id.as_str())) {
            return Err(Error::invalid_input(format!(
                "{} {:?} is listed twice",
                owner.kind, owner.id
            )));
        }
    }
    check_tasks(&work.tasks)?;
    for task in &work.tasks {
        if !owners.contains(&(task.owner.kind, task.owner.id.as_str())) {
            return Err(Error::invalid_input(format!(
                "task {:?} names {} {:?}, which is not one of this {}'s",
                task.id, task.owner.kind, task.owner.id, work.kind
            )));
        }
    }
    Ok(())
}

/// Checks an enqueue as every backend does before it touches the database
/// (`invalid_input`): the task specs, and an event only with a task (the
/// event belongs to the first task's work).
pub fn check_enqueue(tasks: &[TaskSpec], event: Option<&NewEvent>) -> Result<(), Error> {
    check_tasks(tasks)?;
    if tasks.is_empty() && event.is_some() {
        return Err(Error::invalid_input(
            "an enqueue with an event needs at least one task (the event's work)",
        ));
    }
    Ok(())
}

/// [`check_new_owner`] and the event's own check, as `Store::add_owner`
/// does before it touches the database.
pub fn check_add_owner(
    work_id: &str,
    owner: &NewOwner,
    tasks: &[TaskSpec],
    event: Option<&NewEvent>,
) -> Result<(), Error> {
    check_new_owner(work_id, owner, tasks)?;
    if let Some(event) = event {
        event.check()?;
    }
    Ok(())
}

/// Checks an owner to add to the work `work_id` with its tasks
/// (`invalid_input`), as `Store::add_owner` does before it touches the
/// database: ids, task specs, and every task naming this owner. (That the
/// owner's kind belongs to the work's kind needs the stored work.)
pub fn check_new_owner(work_id: &str, owner: &NewOwner, tasks: &[TaskSpec]) -> Result<(), Error> {
    check_id("work", work_id)?;
    check_id(owner.kind.as_str(), &owner.id)?;
    check_tasks(tasks)?;
    for task in tasks {
        if task.owner.kind != owner.kind || task.owner.id != owner.id {
            return Err(Error::invalid_input(format!(
                "task {:?} names {} {:?}, not the {} {:?} being added",
                task.id, task.owner.kind, task.owner.id, owner.kind, owner.id
            )));
        }
    }
    Ok(())
}

/// The refusal of an owner whose kind does not belong to its work's kind.
pub(crate) fn check_owner_kind(work: WorkKind, owner: &NewOwner) -> Result<(), Error> {
    if owner.kind.work_kind() != work {
        return Err(Error::invalid_input(format!(
            "a {work} cannot own a {} ({:?})",
            owner.kind, owner.id
        )));
    }
    Ok(())
}

/// Checks task specs and that their ids are unique among themselves
/// (`invalid_input`).
pub fn check_tasks(tasks: &[TaskSpec]) -> Result<(), Error> {
    let mut ids = HashSet::new();
    for task in tasks {
        check_task_spec(task)?;
        if !ids.insert(task.id.as_str()) {
            return Err(Error::invalid_input(format!(
                "task {:?} is listed twice",
                task.id
            )));
        }
    }
    Ok(())
}

/// Checks a lane capacity as every backend does before it touches the
/// database (`invalid_input`): only `local` and `cloud` take one — the
/// run drivers' lane is never limited, whatever a config says.
pub fn check_lane_capacity(lane: crate::task::Lane, capacity: Option<u32>) -> Result<(), Error> {
    if capacity.is_some() && !lane.takes_capacity() {
        return Err(Error::invalid_input(format!(
            "the {lane} lane takes no capacity: run drivers are never limited (only local and cloud are)"
        ))
        .with_detail("path", format!("lanes.{lane}")));
    }
    Ok(())
}

/// Checks a claim request (`invalid_input`): a limit of at least 1, a
/// positive lease, a worker name.
pub fn check_claim(request: &ClaimRequest) -> Result<(), Error> {
    if request.limit == 0 {
        return Err(Error::invalid_input("a claim's limit must be at least 1"));
    }
    if request.lease_ttl.is_zero() {
        return Err(Error::invalid_input("a claim's lease_ttl must be positive"));
    }
    if request.worker.is_empty() {
        return Err(Error::invalid_input("a claim must name its worker"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::Lane;
    use serde_json::json;

    fn task(failures: u32, retry: RetryPolicy) -> Task {
        Task {
            id: "t".into(),
            work_id: "w".into(),
            owner: OwnerRef {
                kind: OwnerKind::Step,
                id: "s".into(),
            },
            lane: Lane::Cloud,
            state: TaskState::Running,
            payload: json!({}),
            attempt: failures + 1,
            failures,
            rescues: 0,
            retry,
            max_rescues: 3,
            available_at: 0,
            worker: None,
            lease_expires_at: Some(1),
            heartbeat_at: Some(0),
            result: None,
            error: None,
            created_at: 0,
            started_at: Some(0),
            finished_at: None,
        }
    }

    #[test]
    fn retryable_failures_go_back_with_backoff_until_the_policy_is_spent() {
        let policy = RetryPolicy::exponential(3, 100, 2.0, 1000);
        let failed = Outcome::Failed {
            error: "boom".into(),
            retryable: true,
        };
        let first = settle(&task(0, policy), &failed);
        assert_eq!(
            (first.state, first.failures, first.retry_in_ms),
            (TaskState::Pending, 1, Some(100))
        );
        let second = settle(&task(1, policy), &failed);
        assert_eq!(
            (second.state, second.retry_in_ms),
            (TaskState::Pending, Some(200))
        );
        let last = settle(&task(2, policy), &failed);
        assert_eq!(
            (last.state, last.failures, last.retry_in_ms),
            (TaskState::Failed, 3, None)
        );
        let fatal = Outcome::Failed {
            error: "bad request".into(),
            retryable: false,
        };
        assert_eq!(settle(&task(0, policy), &fatal).state, TaskState::Failed);
        let done = settle(&task(0, policy), &Outcome::Completed { result: json!(1) });
        assert_eq!(
            (done.state, done.result),
            (TaskState::Completed, Some(json!(1)))
        );
    }

    #[test]
    fn new_work_is_checked_before_it_reaches_a_database() {
        let owner = |id: &str, kind| NewOwner {
            id: id.into(),
            kind,
            status: "queued".into(),
            data: json!({}),
        };
        let spec = |id: &str, owner: &str| {
            TaskSpec::new(
                id,
                OwnerRef {
                    kind: OwnerKind::Contestant,
                    id: owner.into(),
                },
                Lane::Local,
            )
        };
        let mut work = NewWork {
            id: "b1".into(),
            kind: WorkKind::Battle,
            status: "running".into(),
            data: json!({}),
            owners: vec![owner("c1", OwnerKind::Contestant)],
            tasks: vec![spec("t1", "c1")],
            event: NewEvent::new(EventType::BattleStarted, json!({})),
        };
        assert!(check_new_work(&work).is_ok());
        work.tasks.push(spec("t2", "c9"));
        assert!(check_new_work(&work)
            .unwrap_err()
            .message()
            .contains("not one of"));
        work.tasks.pop();
        work.owners.push(owner("s1", OwnerKind::Step));
        assert!(check_new_work(&work)
            .unwrap_err()
            .message()
            .contains("cannot own"));
        work.owners.pop();
        work.tasks.push(spec("t1", "c1"));
        assert!(check_new_work(&work)
            .unwrap_err()
            .message()
            .contains("twice"));
        work.tasks.pop();
        work.id = String::new();
        assert!(check_new_work(&work).is_err());
        assert!(check_claim(&ClaimRequest::new("w").limit(0)).is_err());
        assert!(check_claim(&ClaimRequest::new("w")).is_ok());
    }
}
