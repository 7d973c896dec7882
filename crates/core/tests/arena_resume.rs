//! Crash-resume reconciliation of arena contestants.

use coderig::arena::{
    reconcile_contestant_resume, reconcile_contestants, ContestantAction, ContestantStatus,
    TaskState,
};
use std::collections::HashMap;

use ContestantAction::{Keep, MarkCancelled, MarkDone, MarkError, ReDispatch};

#[test]
fn every_row_of_the_resume_table() {
    // (status, task id, task state, action)
    let mut cases: Vec<(
        ContestantStatus,
        Option<&str>,
        Option<TaskState>,
        ContestantAction,
    )> = vec![
        (ContestantStatus::Running, None, None, ReDispatch),
        (
            ContestantStatus::Running,
            Some(""),
            Some(TaskState::Completed),
            ReDispatch,
        ), // empty id = none
        (ContestantStatus::Running, Some("t1"), None, ReDispatch), // missing row
        (
            ContestantStatus::Running,
            Some("t1"),
            Some(TaskState::Completed),
            MarkDone,
        ),
        (
            ContestantStatus::Running,
            Some("t1"),
            Some(TaskState::Failed),
            MarkError,
        ),
        (
            ContestantStatus::Running,
            Some("t1"),
            Some(TaskState::Cancelled),
            MarkCancelled,
        ),
        (
            ContestantStatus::Running,
            Some("t1"),
            Some(TaskState::Pending),
            Keep,
        ),
        (
            ContestantStatus::Running,
            Some("t1"),
            Some(TaskState::Running),
            ReDispatch,
        ),
        (
            ContestantStatus::Running,
            Some("t1"),
            Some(TaskState::Blocked),
            ReDispatch,
        ),
    ];
    // A contestant that is not running is kept whatever its task says.
    for status in [
        ContestantStatus::Queued,
        ContestantStatus::Done,
        ContestantStatus::Error,
        ContestantStatus::Cancelled,
    ] {
        cases.push((status, None, None, Keep));
        for state in TaskState::ALL {
            cases.push((status, Some("t1"), Some(*state), Keep));
        }
    }
    for (status, task_id, state, expected) in cases {
        assert_eq!(
            reconcile_contestant_resume(status, task_id, state),
            expected,
            "{status} {task_id:?} {state:?}"
        );
    }
}

#[test]
fn action_names_are_stable() {
    let names: Vec<&str> = ContestantAction::ALL.iter().map(|a| a.as_str()).collect();
    assert_eq!(
        names,
        [
            "keep",
            "re-dispatch",
            "mark-done",
            "mark-error",
            "mark-cancelled"
        ]
    );
    for action in ContestantAction::ALL {
        assert_eq!(action.as_str().parse::<ContestantAction>(), Ok(*action));
        assert_eq!(
            serde_json::to_string(action).unwrap(),
            format!("\"{}\"", action.as_str())
        );
    }
    for state in TaskState::ALL {
        assert_eq!(state.as_str().parse::<TaskState>(), Ok(*state));
    }
    assert_eq!("Canceled".parse::<TaskState>(), Ok(TaskState::Cancelled));
    assert_eq!(
        "done".parse::<TaskState>().unwrap_err().code(),
        "INVALID_INPUT"
    );
}

#[test]
fn reconcile_contestants_keeps_input_order() {
    let states: HashMap<String, TaskState> = [
        ("t-done", TaskState::Completed),
        ("t-fail", TaskState::Failed),
        ("t-wait", TaskState::Pending),
        ("t-dead", TaskState::Running),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let rows = [
        ("c1", Some("t-done"), ContestantStatus::Running),
        ("c2", Some("t-fail"), ContestantStatus::Running),
        ("c3", Some("t-wait"), ContestantStatus::Running),
        ("c4", Some("t-dead"), ContestantStatus::Running),
        ("c5", Some("t-gone"), ContestantStatus::Running),
        ("c6", None, ContestantStatus::Running),
        ("c7", Some("t-done"), ContestantStatus::Done),
        ("c8", None, ContestantStatus::Queued),
    ];
    assert_eq!(
        reconcile_contestants(&rows, &states),
        vec![
            ("c1", MarkDone),
            ("c2", MarkError),
            ("c3", Keep),
            ("c4", ReDispatch),
            ("c5", ReDispatch),
            ("c6", ReDispatch),
            ("c7", Keep),
            ("c8", Keep),
        ]
    );
    let owned: Vec<(String, Option<String>, ContestantStatus)> = Vec::new();
    assert!(reconcile_contestants(&owned, &states).is_empty());
}
