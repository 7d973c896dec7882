//! What people read of a run: the summary table (step, kind, status,
//! attempt, duration, note), its error, the report and where the
//! artifacts are.

use crate::cmd::table::{self, millis, short};
use coderig::flow::engine::{RunView, StepView};
use serde_json::Value;
use std::path::Path;

/// A settled step's duration (its last attempt's start to its end).
pub(super) fn duration(s: &StepView) -> String {
    s.started_at
        .zip(s.finished_at)
        .and_then(|(start, end)| u64::try_from(end - start).ok())
        .map(millis)
        .unwrap_or_else(|| "-".to_owned())
}

/// The message of an error object, on one line, cut to `max` characters.
fn error_text(error: &Value, max: usize) -> String {
    let text = error
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| error.to_string());
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    short(&one_line, max)
}

/// The summary table's last cell: why it was skipped, its error, a
/// decision.
pub(super) fn note(s: &StepView) -> String {
    if let Some(reason) = s.skip_reason {
        return reason.as_str().to_owned();
    }
    if let Some(error) = &s.error {
        return error_text(error, 100);
    }
    if let Some(a) = &s.approval {
        let who = a.by.as_deref().unwrap_or("someone");
        return format!(
            "{} by {who}",
            if a.approved { "approved" } else { "rejected" }
        );
    }
    String::new()
}

/// What `run` prints at the end (without `--json`).
pub(super) fn summary(view: &RunView, data_dir: &Path) -> String {
    let took = view
        .finished_at
        .and_then(|e| u64::try_from(e - view.created_at).ok())
        .map(|ms| format!(" in {}", millis(ms)))
        .unwrap_or_default();
    let name = view
        .name
        .as_deref()
        .map(|n| format!(" ({n})"))
        .unwrap_or_default();
    let rows: Vec<Vec<String>> = view
        .steps
        .iter()
        .map(|s| {
            vec![
                s.id.clone(),
                s.kind.clone(),
                s.status.as_str().to_owned(),
                s.attempt.to_string(),
                duration(s),
                note(s),
            ]
        })
        .collect();
    let mut out = format!("run {}{name} {}{took}\n", view.id, view.status);
    out.push_str(&table::render(
        &["STEP", "KIND", "STATUS", "ATTEMPT", "DURATION", "NOTE"],
        &rows,
    ));
    if let Some(error) = &view.error {
        out.push_str(&format!("error: {}\n", error_text(error, 400)));
    }
    let dir = data_dir.join("runs").join(&view.id);
    if let Some(report) = view.report.as_deref().filter(|r| !r.trim().is_empty()) {
        out.push_str(&format!(
            "\nreport ({}):\n{}\n",
            dir.join("report.md").display(),
            report.trim_end()
        ));
        out.push('\n');
    }
    out.push_str(&format!("artifacts: {}\n", dir.display()));
    out
}
