//! Every row of the crash-resume table, and `reconcile_run` over rows.

use coderig::flow::{
    reconcile_resume_step, reconcile_run, ResumeAction, ResumeRow, StepStatus, TaskState,
};
use std::collections::HashMap;
use std::str::FromStr;

/// status, task id, task state, retry count, max retries, expected action
type Row = (
    StepStatus,
    Option<&'static str>,
    Option<TaskState>,
    u32,
    Option<u32>,
    &'static str,
);

#[test]
fn every_resume_row() {
    use StepStatus as S;
    use TaskState as T;
    #[rustfmt::skip]
    let rows: &[Row] = &[
        // timed out: retries left -> retry, else mark-failed (task state irrelevant)
        (S::TimedOut, Some("t1"), Some(T::Running), 0, Some(2), "retry"),
        (S::TimedOut, None, None, 1, Some(2), "retry"),
        (S::TimedOut, Some("t1"), None, 2, Some(2), "mark-failed"),
        (S::TimedOut, Some("t1"), Some(T::Failed), 0, None, "mark-failed"),
        (S::TimedOut, None, None, 0, Some(0), "mark-failed"),
        // not running -> keep, whatever the task says
        (S::Pending, None, None, 0, None, "keep"),
        (S::Done, Some("t1"), Some(T::Running), 0, None, "keep"),
        (S::Failed, Some("t1"), Some(T::Completed), 0, Some(3), "keep"),
        (S::Skipped, None, None, 0, None, "keep"),
        (S::Cancelled, Some("t1"), Some(T::Pending), 0, None, "keep"),
        // running with no task or a missing task row -> re-dispatch
        (S::Running, None, None, 0, None, "re-dispatch"),
        (S::Running, None, Some(T::Completed), 0, None, "re-dispatch"),
        (S::Running, Some("t1"), None, 0, None, "re-dispatch"),
        // running, task says:
        (S::Running, Some("t1"), Some(T::Completed), 0, None, "mark-done"),
        (S::Running, Some("t1"), Some(T::Failed), 0, Some(5), "mark-failed"),
        (S::Running, Some("t1"), Some(T::Cancelled), 0, None, "mark-cancelled"),
        (S::Running, Some("t1"), Some(T::Pending), 0, None, "keep"),
        (S::Running, Some("t1"), Some(T::Running), 0, None, "re-dispatch"),
        (S::Running, Some("t1"), Some(T::Blocked), 0, None, "re-dispatch"),
    ];
    for &(status, task_id, task_state, retry_count, max_retries, expected) in rows {
        let action = reconcile_resume_step(status, task_id, task_state, retry_count, max_retries);
        assert_eq!(
            action.as_str(),
            expected,
            "{status} task={task_id:?} state={task_state:?} retries={retry_count}/{max_retries:?}"
        );
        assert_eq!(ResumeAction::from_str(expected).unwrap(), action);
    }
}

#[test]
fn reconcile_run_reads_task_states_by_id_in_row_order() {
    let row = |step: &str, task: Option<&str>, status, retry_count, max_retries| ResumeRow {
        step_id: step.into(),
        task_id: task.map(Into::into),
        status,
        retry_count,
        max_retries,
    };
    let rows = vec![
        row("fetch", Some("t1"), StepStatus::Running, 0, None),
        row("build", Some("t2"), StepStatus::Running, 0, None),
        row("lint", Some("gone"), StepStatus::Running, 0, None),
        row("test", Some("t3"), StepStatus::TimedOut, 1, Some(3)),
        row("ship", None, StepStatus::Pending, 0, None),
    ];
    let tasks: HashMap<String, TaskState> = [
        ("t1".to_string(), TaskState::Completed),
        ("t2".to_string(), TaskState::Blocked),
    ]
    .into();
    let got: Vec<(String, &str)> = reconcile_run(&rows, &tasks)
        .into_iter()
        .map(|(s, a)| (s, a.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("fetch".to_string(), "mark-done"),
            ("build".to_string(), "re-dispatch"),
            ("lint".to_string(), "re-dispatch"),
            ("test".to_string(), "retry"),
            ("ship".to_string(), "keep"),
        ]
    );
}

#[test]
fn statuses_parse_from_their_persisted_names() {
    assert_eq!(
        StepStatus::from_str("timed_out").unwrap(),
        StepStatus::TimedOut
    );
    assert_eq!(TaskState::from_str("blocked").unwrap(), TaskState::Blocked);
    let msg = TaskState::from_str("done").unwrap_err().to_string();
    assert!(
        msg.contains("completed") && msg.contains("\"done\""),
        "{msg}"
    );
    let row: ResumeRow =
        serde_json::from_str(r#"{"step_id":"a","task_id":null,"status":"running"}"#).unwrap();
    assert_eq!((row.retry_count, row.max_retries), (0, None));
}
