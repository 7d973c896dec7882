//! The subcommands over stored battles — `list`, `show`, `stop`, `apply` —
//! each on a rig without workers (the workers of a running server, or of a
//! `battle run`, do the work).

use super::render::{contestants_table, evidence_lines, label, verdict};
use super::{ApplyArgs, ListArgs, ShowArgs, StopArgs};
use crate::cmd::table::{self, short};
use coderig::arena::runner::folder::rfc3339;
use coderig::arena::runner::{BattleFilter, BattlePage};
use coderig::rig::Rig;
use std::path::Path;

fn to_json<T: serde::Serialize>(value: &T) -> Result<String, coderig::Error> {
    serde_json::to_string_pretty(value)
        .map(|text| format!("{text}\n"))
        .map_err(|e| coderig::Error::internal(format!("cannot serialize: {e}")))
}

/// `battle list`: a page of battles, newest first (a table, or `--json`).
pub(super) async fn list(rig: Rig, args: ListArgs) -> Result<String, coderig::Error> {
    let filter = BattleFilter {
        project: args.project.map(|p| p.display().to_string()),
        status: args.status,
        limit: args.limit,
        cursor: args.cursor,
    };
    let page: BattlePage = rig.arena().list_battles(&filter).await?;
    if args.json {
        return to_json(&page);
    }
    if page.battles.is_empty() {
        eprintln!("no battles");
        return Ok(String::new());
    }
    let rows: Vec<Vec<String>> = page
        .battles
        .iter()
        .map(|b| {
            let winner = b
                .winner_contestant_id
                .as_deref()
                .and_then(|id| b.contestant(id))
                .map(label)
                .unwrap_or_else(|| "-".to_owned());
            vec![
                b.id.clone(),
                b.status.as_str().to_owned(),
                b.battle_type.as_str().to_owned(),
                rfc3339(b.created_at_ms),
                b.contestants
                    .iter()
                    .map(label)
                    .collect::<Vec<_>>()
                    .join(", "),
                winner,
                short(b.prompt.lines().next().unwrap_or_default(), 50),
            ]
        })
        .collect();
    let out = table::render(
        &[
            "ID",
            "STATUS",
            "TYPE",
            "CREATED",
            "CONTESTANTS",
            "WINNER",
            "PROMPT",
        ],
        &rows,
    );
    if let Some(cursor) = &page.next_cursor {
        eprintln!("more: coderig battle list --cursor {cursor}");
    }
    Ok(out)
}

/// `battle show`: one battle, all of it.
pub(super) async fn show(rig: Rig, args: ShowArgs) -> Result<String, coderig::Error> {
    let view = rig.arena().battle(&args.id).await?;
    if args.json {
        return to_json(&view);
    }
    let mut out = format!(
        "battle {} {} ({})\ncreated: {}{}\n",
        view.id,
        view.status,
        view.battle_type,
        rfc3339(view.created_at_ms),
        view.ended_at_ms
            .map(|e| format!(", ended {}", rfc3339(e)))
            .unwrap_or_default()
    );
    if let Some(project) = &view.project {
        let commit = view
            .base_commit
            .as_deref()
            .map(|c| format!(", commit {}", &c[..c.len().min(12)]))
            .unwrap_or_default();
        out.push_str(&format!(
            "project: {project} (base {}{commit})\n",
            view.base
        ));
    }
    out.push_str(&format!(
        "judge: {}/{}\nprompt: {}\n\n",
        view.judge.identity,
        view.judge.model,
        view.prompt.trim()
    ));
    out.push_str(&contestants_table(&view));
    let instructions: Vec<String> = view
        .contestants
        .iter()
        .filter_map(|c| {
            let text = c.instruction.as_deref()?;
            let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
            Some(format!("  {}: {text}\n", label(c)))
        })
        .collect();
    if !instructions.is_empty() {
        out.push_str("\ninstructions (after the prompt, for that contestant only):\n");
        out.push_str(&instructions.concat());
    }
    let evidence = evidence_lines(&view);
    if !evidence.is_empty() {
        out.push_str("\nevidence:\n");
        out.push_str(&evidence);
    }
    out.push('\n');
    out.push_str(&verdict(&view));
    if view.analysis_ready {
        out.push_str(&format!(
            "analysis: {}\n",
            Path::new(&view.results_dir).join("analysis.md").display()
        ));
    }
    if !view.cross_exams.is_empty() {
        out.push_str("\ncross-examinations:\n");
        for x in &view.cross_exams {
            let verdict = x.verdict.as_deref().unwrap_or("no winner");
            out.push_str(&format!(
                "  {} {}/{} {}: verdict {verdict}\n",
                x.id, x.identity, x.model, x.status
            ));
            if let Some(error) = &x.error {
                out.push_str(&format!("    error: {error}\n"));
            }
        }
    }
    Ok(out)
}

/// `battle stop`: the battle is cancelled; its agents stop.
pub(super) async fn stop(rig: Rig, args: StopArgs) -> Result<String, coderig::Error> {
    let view = rig.arena().stop(&args.id).await?;
    Ok(format!(
        "battle {} {}: its agents stop at their next heartbeat\n",
        view.id, view.status
    ))
}

/// `battle apply`: the winner's (or a contestant's) patch applied to the
/// project's working tree.
pub(super) async fn apply(rig: Rig, args: ApplyArgs) -> Result<String, coderig::Error> {
    let view = rig.arena().battle(&args.id).await?;
    // A contestant may be named by its id or by `identity:model` (or
    // `identity/model`, as the tables show it).
    let contestant = match args.contestant.as_deref() {
        None => None,
        Some(given) => Some(
            view.contestants
                .iter()
                .find(|c| {
                    c.id == given
                        || format!("{}:{}", c.identity, c.model) == given
                        || label(c) == given
                })
                .map(|c| c.id.clone())
                .ok_or_else(|| {
                    coderig::Error::not_found_id("contestant", given)
                        .with_detail("battle_id", view.id.clone())
                })?,
        ),
    };
    let applied = rig.arena().apply(&view.id, contestant.as_deref()).await?;
    let who = view
        .contestant(&applied.contestant_id)
        .map(label)
        .unwrap_or_else(|| applied.contestant_id.clone());
    Ok(if applied.patch_bytes == 0 {
        format!("{who} changed nothing: {} is as it was\n", applied.project)
    } else {
        format!(
            "applied {who}'s patch ({} bytes) to {}\n",
            applied.patch_bytes, applied.project
        )
    })
}
