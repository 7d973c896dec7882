//! One contestant's task: worktree, agent turn, archive, oracle, benchmark.

use super::data::{decode, encode, now_ms, BattleData, ContestantData};
use super::events::contestant_event;
use super::{folder, Inner};
use crate::agent::{Access, AgentEvent, Turn};
use crate::arena::{BattleSpec, BattleType, ContestantStatus, Evidence, Lane};
use crate::error::Error;
use crate::event::{AgentOutput, Event, OutputKind, OutputSource};
use crate::store::{Completion, OwnerUpdate, Update, WorkSnapshot};
use crate::worker::Held;
use crate::workspace::{Base, Patch, RemoveProof, Workspace, Worktree, WorktreeName};
use std::path::{Path, PathBuf};
use std::sync::Arc;

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::internal(format!("a workspace task failed: {e}")))?
}

fn output_of(event: &AgentEvent) -> Option<(OutputKind, String)> {
    match event {
        AgentEvent::TextDelta { text } => Some((OutputKind::Text, text.clone())),
        AgentEvent::ReasoningDelta { text } => Some((OutputKind::Reasoning, text.clone())),
        AgentEvent::ToolCall { name, input, .. } => {
            Some((OutputKind::ToolCall, format!("{name} {input}")))
        }
        AgentEvent::ToolResult { output, ok, .. } => Some((
            OutputKind::ToolResult,
            if *ok {
                output.clone()
            } else {
                format!("[failed] {output}")
            },
        )),
        _ => None,
    }
}

/// Runs the contestant of `held`'s task to its end and completes the task;
/// a holder fenced out by a stop ends quietly.
pub(crate) async fn run(inner: &Arc<Inner>, held: &Held) -> Result<(), Error> {
    let task = &held.claim.task;
    let result = attempt(inner, held).await;
    super::finish::quiet_if_taken(inner, &task.id, task.attempt, result).await
}

async fn attempt(inner: &Arc<Inner>, held: &Held) -> Result<(), Error> {
    let task = &held.claim.task;
    let cid = task.owner.id.clone();
    let battle_id = task.work_id.clone();
    let fence = held.claim.fence();
    let snapshot = inner.store.work(&battle_id).await?;
    let bdata: BattleData = decode("battle", &battle_id, &snapshot.work.data)?;
    let spec = BattleSpec::from_json(&bdata.spec)?;
    let owner = snapshot
        .owners
        .iter()
        .find(|o| o.id == cid)
        .ok_or_else(|| Error::not_found_id("contestant", &cid))?;
    let mut data: ContestantData = decode("contestant", &cid, &owner.data)?;
    if snapshot.work.status != "running" {
        // Stopped (or finished) before this task ran.
        inner
            .store
            .complete(
                &fence,
                Completion::new(crate::store::Outcome::Cancelled {
                    reason: format!("the battle is {}", snapshot.work.status),
                })
                .with_owner(OwnerUpdate {
                    status: Some(ContestantStatus::Cancelled.as_str().into()),
                    data: None,
                })
                .with_event(contestant_event(
                    &battle_id,
                    &cid,
                    ContestantStatus::Cancelled,
                    None,
                    Some("the battle was stopped"),
                )?),
            )
            .await?;
        return Ok(());
    }
    let results_dir = PathBuf::from(&bdata.results_dir);
    let project = bdata.project.as_ref().map(PathBuf::from);
    // A rescued attempt: the previous holder's worktree goes first (its
    // agent died with it; a run starts from the base again).
    if let Some(old) = data.worktree.take() {
        if !data.worktree_removed {
            let ws = inner.workspace.clone();
            let _ = blocking(move || {
                let _ = ws.unlock(&old);
                ws.remove(&old, &RemoveProof::Discard).map(|_| ())
            })
            .await;
        }
    }
    data.started_at_ms = Some(now_ms());
    data.ended_at_ms = None;
    data.error = None;
    let worktree_name = match spec.battle_type {
        BattleType::Coding => Some(WorktreeName::new(&bdata.slug, &data.dir)?),
        BattleType::Qa => None,
    };
    data.worktree_name = worktree_name.as_ref().map(|n| n.to_string());
    data.worktree_removed = false;
    // Intent before creation: a crash between the two leaves a name the
    // sweep and the next attempt can find.
    inner
        .store
        .record(
            &fence,
            Update {
                owner: Some(OwnerUpdate {
                    status: Some(ContestantStatus::Running.as_str().into()),
                    data: Some(encode(&data)),
                }),
                event: Some(contestant_event(
                    &battle_id,
                    &cid,
                    ContestantStatus::Running,
                    None,
                    None,
                )?),
            },
        )
        .await?;
    inner.bus.notify();

    let worktree: Option<Worktree> = match (&worktree_name, &project, &bdata.base_commit) {
        (Some(name), Some(project), Some(base)) => {
            let ws = inner.workspace.clone();
            let (name, project, base) = (name.clone(), project.clone(), base.clone());
            match blocking(move || ws.create(&project, &Base::Ref(base), &name)).await {
                Ok(wt) => Some(wt),
                Err(e) => {
                    data.error = Some(format!("the worktree could not be created: {e}"));
                    return finish(
                        inner, held, &battle_id, &cid, &spec, &bdata, data, None, None,
                    )
                    .await;
                }
            }
        }
        _ => None,
    };
    if let Some(wt) = &worktree {
        data.worktree = Some(wt.clone());
        let recorded = inner
            .store
            .record(
                &fence,
                Update {
                    owner: Some(OwnerUpdate {
                        status: None,
                        data: Some(encode(&data)),
                    }),
                    event: None,
                },
            )
            .await;
        if let Err(e) = recorded {
            // The lease went (a stop, a rescue) between the creation and
            // its record: nobody but this holder knows the worktree.
            let ws = inner.workspace.clone();
            let wt2 = wt.clone();
            let _ = blocking(move || {
                let _ = ws.unlock(&wt2);
                ws.remove(&wt2, &RemoveProof::Discard).map(|_| ())
            })
            .await;
            return Err(e);
        }
    }

    // The turn.
    let (access, workdir) = match (&worktree, spec.battle_type) {
        (Some(wt), _) => (Access::Edit, wt.path.clone()),
        (None, _) => {
            let dir = project.clone().unwrap_or_else(|| results_dir.clone());
            std::fs::create_dir_all(&dir)
                .map_err(|e| Error::io(format!("cannot create {}: {e}", dir.display())))?;
            (Access::ReadOnly, dir)
        }
    };
    let prompt = crate::arena::contestant_prompt(&spec.prompt, data.instruction.as_deref());
    let turn = Turn::new(prompt)
        .model(data.model.clone())
        .workdir(workdir)
        .access(access)
        .timeout(spec.contestant_timeout);
    // The agent's own records (the native agent's transcript and cut tool
    // outputs) in the contestant's results folder, beside its diff.
    let turn = Turn {
        artifacts: Some(results_dir.join(&data.dir).join("agent")),
        ..turn
    };
    let mut outcome = None;
    match inner.registry.start_turn(&data.identity, turn) {
        Err(e) => data.error = Some(e.to_string()),
        Ok(mut handle) => {
            let cancel = held.cancel.clone();
            let mut cancelled = false;
            loop {
                tokio::select! {
                    event = handle.next_event() => match event {
                        Some(event) => {
                            if let Some((kind, text)) = output_of(&event) {
                                inner.bus.publish_live(Event::AgentOutput(AgentOutput {
                                    source: OutputSource::Contestant { battle_id: battle_id.clone(), contestant_id: cid.clone() },
                                    kind,
                                    text,
                                }));
                            }
                        }
                        None => break,
                    },
                    _ = cancel.cancelled(), if !cancelled => {
                        cancelled = true;
                        handle.cancel();
                    }
                }
            }
            match handle.wait().await {
                Ok(o) => outcome = Some(o),
                Err(e) => {
                    data.error = Some(match e.kind {
                        crate::agent::AgentErrorKind::Timeout => format!(
                            "timed out after {} s (contestant_timeout): {}",
                            spec.contestant_timeout.as_secs(),
                            e.message
                        ),
                        _ => e.to_string(),
                    })
                }
            }
        }
    }
    data.ended_at_ms = Some(now_ms());
    if let Some(o) = &outcome {
        data.duration_ms = Some(o.duration_ms);
        data.ttft_ms = o.ttft_ms;
        data.usage = (!o.usage.is_empty()).then_some(o.usage);
        data.tokens_per_sec = if data.lane == Some(Lane::Local) {
            o.tokens_per_sec()
        } else {
            None
        };
        data.answer = Some(o.final_text.clone());
    } else {
        data.duration_ms =
            Some((data.ended_at_ms.unwrap_or(0) - data.started_at_ms.unwrap_or(0)).max(0) as u64);
    }
    let patch = match &worktree {
        Some(wt) => {
            let ws = inner.workspace.clone();
            let wt2 = wt.clone();
            let _ = blocking(move || ws.unlock(&wt2)).await;
            let ws = inner.workspace.clone();
            let wt2 = wt.clone();
            match blocking(move || ws.diff(&wt2)).await {
                Ok(p) => Some(p),
                Err(e) => {
                    data.error
                        .get_or_insert(format!("the diff could not be taken: {e}"));
                    None
                }
            }
        }
        None => None,
    };
    finish(
        inner, held, &battle_id, &cid, &spec, &bdata, data, worktree, patch,
    )
    .await
}

#[allow(clippy::too_many_arguments)]
async fn finish(
    inner: &Arc<Inner>,
    held: &Held,
    battle_id: &str,
    cid: &str,
    spec: &BattleSpec,
    bdata: &BattleData,
    mut data: ContestantData,
    worktree: Option<Worktree>,
    patch: Option<Patch>,
) -> Result<(), Error> {
    let results_dir = PathBuf::from(&bdata.results_dir);
    let status = if data.error.is_none() {
        ContestantStatus::Done
    } else {
        ContestantStatus::Error
    };
    // Archive, whatever the outcome.
    let mut patch_path = None;
    if spec.battle_type == BattleType::Coding {
        let bytes = patch
            .as_ref()
            .map(|p| p.as_bytes().to_vec())
            .unwrap_or_default();
        data.patch_bytes = Some(bytes.len() as u64);
        patch_path = Some(folder::write_file(
            &results_dir,
            &format!("{}/diff.patch", data.dir),
            &bytes,
        )?);
    }
    write_result_md(inner, battle_id, cid, status, &data, &results_dir).await?;
    if let (Some(wt), Some(path)) = (&worktree, &patch_path) {
        if !spec.keep_worktrees && patch.is_some() {
            let ws = inner.workspace.clone();
            let (wt2, path2) = (wt.clone(), path.clone());
            match blocking(move || ws.remove(&wt2, &RemoveProof::Archived(path2))).await {
                Ok(_) => data.worktree_removed = true,
                Err(e) => eprintln!("coderig arena: worktree {} kept: {e}", wt.path.display()),
            }
        }
    }
    if held.stopped().is_some() {
        // Lease lost or shutting down: the archive is written (harmless,
        // the next holder rewrites it), the store is not ours to change.
        return Ok(());
    }
    // The oracle, on a fresh checkout of the base with the patch.
    if let (Some(oracle), Some(project), Some(base), BattleType::Coding) = (
        &spec.oracle,
        &bdata.project,
        &bdata.base_commit,
        spec.battle_type,
    ) {
        if status == ContestantStatus::Done {
            let evidence = match &patch {
                Some(p) if !p.is_empty() => {
                    match crate::arena::oracle::run_oracle(
                        inner.workspace.clone(),
                        Path::new(project),
                        base,
                        Some(p),
                        oracle,
                        inner.registry.sandbox_mode(),
                        &held.cancel,
                    )
                    .await
                    {
                        Ok(run) => run.into_evidence(),
                        Err(e) if crate::arena::oracle::is_cancelled(&e) => return Ok(()),
                        Err(e) => Evidence {
                            error: Some(e.to_string()),
                            ..Evidence::default()
                        },
                    }
                }
                _ => Evidence {
                    error: Some("no change: the contestant's diff is empty".into()),
                    ..Evidence::default()
                },
            };
            data.evidence = Some(evidence);
            write_result_md(inner, battle_id, cid, status, &data, &results_dir).await?;
        }
    }
    let outcome = match status {
        ContestantStatus::Done => {
            Completion::completed(serde_json::json!({"patch_bytes": data.patch_bytes}))
        }
        _ => Completion::failed(data.error.clone().unwrap_or_default(), false),
    };
    let event = contestant_event(battle_id, cid, status, Some(&data), None)?;
    match inner
        .store
        .complete(
            &held.claim.fence(),
            outcome
                .with_owner(OwnerUpdate {
                    status: Some(status.as_str().into()),
                    data: Some(encode(&data)),
                })
                .with_event(event),
        )
        .await
    {
        // The battle was stopped (the task cancelled) while the agent ran:
        // its ending is the stop's, already written.
        Err(e) if e.kind() == crate::ErrorKind::Conflict => Ok(()),
        other => other.map(|_| ()),
    }
}

/// `result.md` of the contestant as it stands, from a fresh snapshot with
/// this contestant's data in it.
async fn write_result_md(
    inner: &Arc<Inner>,
    battle_id: &str,
    cid: &str,
    status: ContestantStatus,
    data: &ContestantData,
    results_dir: &Path,
) -> Result<(), Error> {
    let mut snapshot = inner.store.work(battle_id).await?;
    if let Some(owner) = snapshot.owners.iter_mut().find(|o| o.id == cid) {
        owner.data = encode(data);
        owner.status = status.as_str().into();
    }
    let report = folder::battle_report(&snapshot)?;
    if let Some(c) = report.contestants.iter().find(|c| c.id == cid) {
        let text = crate::arena::result_md(&report, c);
        folder::write_file(
            results_dir,
            &format!("{}/result.md", c.dir),
            text.as_bytes(),
        )?;
    }
    Ok(())
}

/// After the reconcile pass settled a contestant whose holder died: its
/// worktree is archived (diff.patch) and removed, unless kept.
pub(crate) async fn cleanup_after_crash(
    inner: &Arc<Inner>,
    snapshot: &WorkSnapshot,
    cid: &str,
    data: &ContestantData,
) {
    let Some(wt) = data.worktree.clone() else {
        return;
    };
    if data.worktree_removed {
        return;
    }
    let Ok(bdata) = decode::<BattleData>("battle", &snapshot.work.id, &snapshot.work.data) else {
        return;
    };
    let keep = BattleSpec::from_json(&bdata.spec)
        .map(|s| s.keep_worktrees)
        .unwrap_or(true);
    let ws: Arc<dyn Workspace> = inner.workspace.clone();
    let dir = PathBuf::from(&bdata.results_dir).join(&data.dir);
    let _ = cid;
    let _ = blocking(move || {
        let _ = ws.unlock(&wt);
        let patch = ws.diff(&wt)?;
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(e.to_string()))?;
        let path = dir.join("diff.patch");
        crate::edit::file::write_atomic(&path, patch.as_bytes())
            .map_err(|e| Error::io(e.to_string()))?;
        if !keep {
            ws.remove(&wt, &RemoveProof::Archived(path))?;
        }
        Ok(())
    })
    .await;
}
