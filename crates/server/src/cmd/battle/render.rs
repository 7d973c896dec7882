//! What people read of a battle: the contestants' table (status, tier,
//! the oracle's exit codes, duration, tokens, the winner's mark), the
//! verdict, the evidence, and `battle run`'s summary.

use crate::cmd::table::{self, millis};
use coderig::arena::runner::{BattleView, ContestantView};
use coderig::arena::{CommandEvidence, EvidenceTier};
use coderig::event::BattleStatus;

/// `identity/model`.
pub(super) fn label(c: &ContestantView) -> String {
    format!("{}/{}", c.identity, c.model)
}

/// A settled contestant's duration (`-` when unknown).
pub(super) fn finished_duration(c: &ContestantView) -> String {
    let ms = c.duration_ms.or_else(|| {
        c.started_at_ms
            .zip(c.ended_at_ms)
            .and_then(|(s, e)| u64::try_from(e - s).ok())
    });
    ms.map(millis).unwrap_or_else(|| "-".to_owned())
}

/// `IN in / OUT out` tokens (`-` before the usage is known).
pub(super) fn tokens(c: &ContestantView) -> String {
    match &c.usage {
        Some(u) => format!("{} in / {} out", u.input, u.output),
        None => "-".to_owned(),
    }
}

/// An oracle command's cell: its exit code, `timeout`, `killed` (no exit
/// code), or `-` when it did not run.
pub(super) fn exit_cell(command: Option<&CommandEvidence>) -> String {
    match command {
        None => "-".to_owned(),
        Some(c) if c.timed_out => "timeout".to_owned(),
        Some(c) => c
            .exit_code
            .map(|code| code.to_string())
            .unwrap_or_else(|| "killed".to_owned()),
    }
}

/// The contestants' table: status, tier, oracle exit codes, duration,
/// tokens and the winner's mark.
pub(super) fn contestants_table(view: &BattleView) -> String {
    let rows: Vec<Vec<String>> = view
        .contestants
        .iter()
        .map(|c| {
            let evidence = c.evidence.as_ref();
            let winner = view.winner_contestant_id.as_deref() == Some(c.id.as_str());
            vec![
                label(c),
                c.id.clone(),
                c.lane.as_str().to_owned(),
                c.status.as_str().to_owned(),
                if c.evidence.is_some() || c.tier != EvidenceTier::None {
                    c.tier.as_str().to_owned()
                } else {
                    "-".to_owned()
                },
                exit_cell(evidence.and_then(|e| e.repro.as_ref())),
                exit_cell(evidence.and_then(|e| e.suite.as_ref())),
                finished_duration(c),
                tokens(c),
                if winner { "★ winner" } else { "" }.to_owned(),
            ]
        })
        .collect();
    table::render(
        &[
            "CONTESTANT",
            "ID",
            "LANE",
            "STATUS",
            "TIER",
            "REPRO",
            "SUITE",
            "DURATION",
            "TOKENS",
            "WINNER",
        ],
        &rows,
    )
}

/// The verdict lines: the winner and why, or why there is none; the
/// results folder.
pub(super) fn verdict(view: &BattleView) -> String {
    let mut out = String::new();
    let winner = view
        .winner_contestant_id
        .as_deref()
        .and_then(|id| view.contestant(id));
    match (view.status, winner) {
        (_, Some(c)) => {
            let source = view
                .winner_source
                .map(|s| format!(" (by the {s})"))
                .unwrap_or_default();
            out.push_str(&format!("winner: {}{source}\n", label(c)));
        }
        (BattleStatus::Completed, None) => out.push_str("winner: none\n"),
        (BattleStatus::Failed, None) => out.push_str("the battle failed\n"),
        (BattleStatus::Cancelled, None) => out.push_str("the battle was cancelled\n"),
        (status, None) => out.push_str(&format!("the battle is {status}\n")),
    }
    if let Some(reason) = view.reason.as_deref().filter(|r| !r.trim().is_empty()) {
        out.push_str(&format!("reason: {}\n", reason.trim()));
    }
    if let Some(error) = &view.error {
        out.push_str(&format!("error: {error}\n"));
    }
    if view
        .base_run
        .as_ref()
        .is_some_and(|b| b.base_repro_passes())
    {
        out.push_str("note: the repro already passes on the base, so it proves nothing\n");
    }
    for c in &view.contestants {
        if let Some(error) = &c.error {
            out.push_str(&format!("{} {}: {error}\n", label(c), c.status));
        }
    }
    out.push_str(&format!("results: {}\n", view.results_dir));
    out
}

/// What `battle run` prints at the end (without `--json`).
pub(super) fn summary(view: &BattleView) -> String {
    let took = view
        .ended_at_ms
        .and_then(|e| u64::try_from(e - view.created_at_ms).ok())
        .map(|ms| format!(" in {}", millis(ms)))
        .unwrap_or_default();
    format!(
        "battle {} {}{took}\n{}{}",
        view.id,
        view.status,
        contestants_table(view),
        verdict(view)
    )
}

/// The oracle's evidence, one line per run (the base's, each
/// contestant's) and the last lines of a failed command's output.
pub(super) fn evidence_lines(view: &BattleView) -> String {
    let describe = |name: &str, c: Option<&CommandEvidence>| {
        c.map(|c| {
            format!(
                "{name} {} in {}",
                match exit_cell(Some(c)).as_str() {
                    "timeout" => "timed out".to_owned(),
                    "killed" => "killed".to_owned(),
                    code => format!("exit {code}"),
                },
                millis(c.duration_ms)
            )
        })
    };
    let mut out = String::new();
    if let Some(base) = &view.base_run {
        let parts: Vec<String> = [
            describe("repro", base.repro.as_ref()),
            describe("suite", base.suite.as_ref()),
        ]
        .into_iter()
        .flatten()
        .chain(base.error.iter().map(|e| format!("error: {e}")))
        .collect();
        out.push_str(&format!("  base: {}\n", parts.join("; ")));
    }
    for c in &view.contestants {
        let Some(e) = &c.evidence else { continue };
        let mut parts = vec![if e.patch_applied {
            "patch applied".to_owned()
        } else {
            "patch not applied".to_owned()
        }];
        parts.extend(describe("repro", e.repro.as_ref()));
        parts.extend(describe("suite", e.suite.as_ref()));
        parts.extend(e.error.iter().map(|e| format!("error: {e}")));
        out.push_str(&format!("  {}: {}\n", label(c), parts.join("; ")));
        for (name, command) in [("repro", &e.repro), ("suite", &e.suite)] {
            if let Some(command) = command.as_ref().filter(|c| !c.passed()) {
                for line in tail(&command.output_tail, 5) {
                    out.push_str(&format!("    {name} | {line}\n"));
                }
            }
        }
    }
    out
}

/// The last `n` non-empty lines of `text`.
fn tail(text: &str, n: usize) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_cells_say_what_happened() {
        let run = |exit_code, timed_out| CommandEvidence {
            exit_code,
            duration_ms: 1,
            timed_out,
            output_tail: String::new(),
            sandbox: None,
        };
        assert_eq!(exit_cell(None), "-");
        assert_eq!(exit_cell(Some(&run(Some(0), false))), "0");
        assert_eq!(exit_cell(Some(&run(None, true))), "timeout");
        assert_eq!(exit_cell(Some(&run(None, false))), "killed");
    }
}
