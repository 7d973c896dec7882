//! The judge's task (the base run, digests, pairwise judging, the
//! decision, `analysis.md`) and cross-examinations.
//!
//! Every judge, digest and examiner call goes through the [`Agent`] trait
//! of the configured identity (an `openai` agent usually, any agent
//! possible) with `ReadOnly` access, and is retried while its error's
//! class is `retry` (the provider's `Retry-After` honoured, capped).
//!
//! [`Agent`]: crate::agent::Agent

use super::data::{
    decode, encode, now_ms, BattleData, ContestantData, CrossExamData, DecisionRecord,
    DigestRecord, JudgeData, VerdictRecord, WinnerRecord,
};
use super::events::battle_event;
use super::{folder, Inner};
use crate::agent::{Access, Turn};
use crate::arena::evidence::{
    apply_analysis, decide_winner, judge_field, pair_verdict, plan_judging, tier, EvidenceTier,
    WinnerDecision,
};
use crate::arena::{
    build_cross_exam_prompt, build_digest_prompt, build_judge_prompt, extract_verdict, AgentRef,
    BattleSpec, BattleType, ContestantStatus, Lane,
};
use crate::error::Error;
use crate::event::BattleStatus;
use crate::model::ErrorClass;
use crate::store::{
    Completion, NewOwner, OwnerKind, OwnerRef, OwnerUpdate, Target, TaskSpec, Transition, Update,
    WorkKind, WorkSnapshot,
};
use crate::worker::Held;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The judge row's data of a battle.
pub(crate) fn judge_data(snapshot: &WorkSnapshot) -> Result<JudgeData, Error> {
    let judge = snapshot
        .owners
        .iter()
        .find(|o| o.kind == OwnerKind::Judge)
        .ok_or_else(|| {
            Error::internal(format!("battle {:?} has no judge row", snapshot.work.id))
        })?;
    decode("judge", &judge.id, &judge.data)
}

/// One call of `agent` with `system` + `user`, retried while retryable.
async fn ask(
    inner: &Inner,
    agent: &AgentRef,
    system: String,
    user: String,
    cancel: &tokio_util::sync::CancellationToken,
    workdir: PathBuf,
) -> Result<String, Error> {
    let attempts = inner.config.judge_attempts.max(1);
    let mut last = None;
    for attempt in 1..=attempts {
        let mut turn = Turn::new(user.clone())
            .model(agent.model.clone())
            .access(Access::ReadOnly)
            .workdir(workdir.clone())
            .timeout(inner.config.judge_timeout);
        turn.system = Some(system.clone());
        let mut handle = inner.registry.start_turn(&agent.identity, turn)?;
        let result = tokio::select! {
            r = handle.wait() => r,
            _ = cancel.cancelled() => { handle.cancel(); return Err(Error::conflict("cancelled").with_detail("cancelled", true)); }
        };
        match result {
            Ok(outcome) => return Ok(outcome.final_text),
            Err(e) => {
                let retry = e.class == ErrorClass::Retry && attempt < attempts;
                if !retry {
                    return Err(e.into());
                }
                let wait = e
                    .retry_after_ms
                    .map(Duration::from_millis)
                    .unwrap_or_else(|| Duration::from_millis(500 << (attempt - 1)))
                    .min(Duration::from_secs(30));
                last = Some(e);
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = cancel.cancelled() => return Err(Error::conflict("cancelled").with_detail("cancelled", true)),
                }
            }
        }
    }
    Err(last
        .map(Error::from)
        .unwrap_or_else(|| Error::internal("no attempt ran")))
}

/// The benchmark line the digest, judge and examiner prompts show.
fn bench_line(c: &ContestantData) -> String {
    crate::arena::benchmark_line(
        &crate::arena::Benchmark {
            duration_ms: c.duration_ms.unwrap_or(0),
            tokens_per_sec: c.tokens_per_sec,
        },
        c.usage.as_ref().map(|u| u.output),
        c.lane.unwrap_or(Lane::Cloud),
    )
}

fn read_text(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The judge task: base run, digests, pairwise judging, decision, files,
/// then the battle's final status. A holder fenced out by a stop ends
/// quietly.
pub(crate) async fn run_analysis(inner: &Arc<Inner>, held: &Held) -> Result<(), Error> {
    let task = &held.claim.task;
    let result = analysis(inner, held).await;
    super::finish::quiet_if_taken(inner, &task.id, task.attempt, result).await
}

async fn analysis(inner: &Arc<Inner>, held: &Held) -> Result<(), Error> {
    let fence = held.claim.fence();
    let battle_id = held.claim.task.work_id.clone();
    let judge_id = held.claim.task.owner.id.clone();
    let snapshot = inner.store.work(&battle_id).await?;
    if snapshot.work.status != BattleStatus::Judging.as_str() {
        inner
            .store
            .complete(
                &fence,
                Completion::new(crate::store::Outcome::Cancelled {
                    reason: format!("the battle is {}", snapshot.work.status),
                }),
            )
            .await?;
        return Ok(());
    }
    let bdata: BattleData = decode("battle", &battle_id, &snapshot.work.data)?;
    let spec = BattleSpec::from_json(&bdata.spec)?;
    let mut jdata = judge_data(&snapshot)?;
    jdata.error = None;
    jdata.rounds += 1;
    inner
        .store
        .record(
            &fence,
            Update {
                owner: Some(OwnerUpdate {
                    status: Some("running".into()),
                    data: Some(encode(&jdata)),
                }),
                event: None,
            },
        )
        .await?;
    let results_dir = PathBuf::from(&bdata.results_dir);
    std::fs::create_dir_all(&results_dir)
        .map_err(|e| Error::io(format!("cannot create {}: {e}", results_dir.display())))?;

    // The base run, once per battle.
    if let (Some(oracle), Some(project), Some(base), BattleType::Coding) = (
        &spec.oracle,
        &bdata.project,
        &bdata.base_commit,
        spec.battle_type,
    ) {
        if jdata.base_run.is_none() {
            match crate::arena::oracle::run_base(
                inner.workspace.clone(),
                std::path::Path::new(project),
                base,
                oracle,
                inner.registry.sandbox_mode(),
                &held.cancel,
            )
            .await
            {
                Ok(run) => jdata.base_run = Some(run.into_base_run()),
                Err(e) if crate::arena::oracle::is_cancelled(&e) => return Ok(()),
                Err(e) => {
                    jdata.base_run = Some(crate::arena::BaseRun {
                        error: Some(e.to_string()),
                        ..Default::default()
                    })
                }
            }
            inner
                .store
                .record(
                    &fence,
                    Update {
                        owner: Some(OwnerUpdate {
                            status: None,
                            data: Some(encode(&jdata)),
                        }),
                        event: None,
                    },
                )
                .await?;
        }
    }

    // Candidates: (id, tier, has a result).
    let commands = spec
        .oracle
        .as_ref()
        .map(|o| o.commands())
        .unwrap_or_default();
    let mut contestants: Vec<(String, ContestantData, ContestantStatus)> = Vec::new();
    for owner in snapshot
        .owners
        .iter()
        .filter(|o| o.kind == OwnerKind::Contestant)
    {
        let c: ContestantData = decode("contestant", &owner.id, &owner.data)?;
        let status = owner
            .status
            .parse::<ContestantStatus>()
            .map_err(|e| Error::internal(e.to_string()))?;
        contestants.push((owner.id.clone(), c, status));
    }
    contestants.sort_by_key(|(_, c, _)| c.index);
    let label = |id: &str| {
        contestants
            .iter()
            .find(|c| c.0 == id)
            .map(|c| format!("{}/{}", c.1.identity, c.1.model))
            .unwrap_or_else(|| id.to_owned())
    };
    let candidates: Vec<(String, EvidenceTier, bool)> = contestants
        .iter()
        .map(|(id, c, status)| {
            let t = c
                .evidence
                .as_ref()
                .map(|e| tier(e, commands, jdata.base_run.as_ref()))
                .unwrap_or(EvidenceTier::None);
            let has_result = *status == ContestantStatus::Done
                && match spec.battle_type {
                    BattleType::Coding => c.patch_bytes.unwrap_or(0) > 0,
                    BattleType::Qa => c.answer.as_deref().is_some_and(|a| !a.trim().is_empty()),
                };
            (id.clone(), t, has_result)
        })
        .collect();

    let mut digests: Vec<DigestRecord> = Vec::new();
    let mut verdicts: Vec<VerdictRecord> = Vec::new();
    let mut failure: Option<String> = None;
    if let Some(field) = judge_field(&candidates) {
        let judge_ref = spec.judge.clone();
        for id in &field {
            let (_, c, _) = contestants
                .iter()
                .find(|x| &x.0 == id)
                .expect("field ids are contestants");
            let dir = results_dir.join(&c.dir);
            let result_md = read_text(&dir.join("result.md"));
            let diff = (spec.battle_type == BattleType::Coding)
                .then(|| read_text(&dir.join("diff.patch")));
            let bench = bench_line(c);
            let (system, user) =
                build_digest_prompt(&c.identity, &c.model, &result_md, &bench, diff.as_deref());
            match ask(
                inner,
                &judge_ref,
                system,
                user,
                &held.cancel,
                results_dir.clone(),
            )
            .await
            {
                Ok(text) => digests.push(DigestRecord {
                    contestant_id: id.clone(),
                    label: label(id),
                    text,
                }),
                Err(e) if e.details().get("cancelled").is_some() => return Ok(()),
                Err(e) => {
                    failure = Some(format!("the digest of {} failed: {e}", label(id)));
                    break;
                }
            }
        }
        if failure.is_none() {
            let digest_of = |id: &str| {
                digests
                    .iter()
                    .find(|d| d.contestant_id == id)
                    .map(|d| d.text.clone())
                    .unwrap_or_default()
            };
            let bench_of = |id: &str| {
                contestants
                    .iter()
                    .find(|x| x.0 == id)
                    .map(|(_, c, _)| bench_line(c))
                    .unwrap_or_default()
            };
            let agent_of = |id: &str| {
                contestants
                    .iter()
                    .find(|x| x.0 == id)
                    .map(|(_, c, _)| (c.identity.clone(), c.model.clone()))
                    .unwrap_or_default()
            };
            for (a, b) in plan_judging(&field) {
                let (ai, am) = agent_of(&a);
                let (bi, bm) = agent_of(&b);
                let pair = vec![
                    (ai.clone(), am.clone(), digest_of(&a), bench_of(&a)),
                    (bi.clone(), bm.clone(), digest_of(&b), bench_of(&b)),
                ];
                let (system, user) = build_judge_prompt(&spec.prompt, &pair);
                match ask(
                    inner,
                    &judge_ref,
                    system,
                    user,
                    &held.cancel,
                    results_dir.clone(),
                )
                .await
                {
                    Ok(text) => verdicts.push(VerdictRecord {
                        first: a.clone(),
                        second: b.clone(),
                        verdict: pair_verdict(&text, (&ai, &am), (&bi, &bm)),
                    }),
                    Err(e) if e.details().get("cancelled").is_some() => return Ok(()),
                    Err(e) => {
                        failure = Some(format!(
                            "the judge failed on {} vs {}: {e}",
                            label(&a),
                            label(&b)
                        ));
                        break;
                    }
                }
            }
        }
    }
    let decision: WinnerDecision<String> = match &failure {
        None => decide_winner(
            &candidates,
            &verdicts
                .iter()
                .map(|v| (v.first.clone(), v.second.clone(), v.verdict))
                .collect::<Vec<_>>(),
        ),
        Some(msg) => WinnerDecision {
            winner: None,
            source: None,
            tier: candidates.iter().filter(|c| c.2).map(|c| c.1).max(),
            reason: format!("no winner: {msg}"),
            wins: vec![],
        },
    };
    // The decision names contestants by label in its reason; keep ids in
    // the record.
    let reason = field_reason(&decision.reason, &contestants);
    jdata.digests = digests;
    jdata.verdicts = verdicts;
    jdata.decision = Some(DecisionRecord {
        winner: decision.winner.clone(),
        source: decision.source,
        tier: decision.tier,
        reason,
        wins: decision.wins.clone(),
    });
    jdata.error = failure;
    let force = jdata.force;
    jdata.force = false;
    let status = if jdata.error.is_some() {
        "error"
    } else {
        "done"
    };
    inner
        .store
        .record(
            &fence,
            Update {
                owner: Some(OwnerUpdate {
                    status: Some(status.into()),
                    data: Some(encode(&jdata)),
                }),
                event: None,
            },
        )
        .await?;
    finish_battle(inner, &battle_id, &jdata, force).await?;
    let _ = judge_id;
    match inner
        .store
        .complete(&fence, Completion::completed(serde_json::json!({})))
        .await
    {
        Err(e) if e.kind() == crate::ErrorKind::Conflict => Ok(()),
        other => other.map(|_| ()),
    }
}

/// The reason with contestant ids replaced by `identity/model`.
fn field_reason(
    reason: &str,
    contestants: &[(String, ContestantData, ContestantStatus)],
) -> String {
    let mut out = reason.to_owned();
    // Longest ids first so `…-c1` does not eat `…-c10`'s prefix.
    let mut ids: Vec<_> = contestants.iter().collect();
    ids.sort_by_key(|c| std::cmp::Reverse(c.0.len()));
    for (id, c, _) in ids {
        out = out.replace(id.as_str(), &format!("{}/{}", c.identity, c.model));
    }
    out
}

/// Writes the battle's final state from the judge's decision: the winner
/// (a human's kept unless `force`), `analysis.md`, `manifest.json`,
/// `completed` with `battle_updated`.
async fn finish_battle(
    inner: &Arc<Inner>,
    battle_id: &str,
    jdata: &JudgeData,
    force: bool,
) -> Result<(), Error> {
    let snapshot = inner.store.work(battle_id).await?;
    let mut bdata: BattleData = decode("battle", battle_id, &snapshot.work.data)?;
    if let Some(d) = &jdata.decision {
        let current = bdata
            .winner
            .as_ref()
            .map(|w| (w.contestant_id.clone(), w.source));
        let decision = WinnerDecision {
            winner: d.winner.clone(),
            source: d.source,
            tier: d.tier,
            reason: d.reason.clone(),
            wins: d.wins.clone(),
        };
        bdata.winner =
            apply_analysis(current, &decision, force).map(|(contestant_id, source)| WinnerRecord {
                contestant_id,
                source,
            });
    }
    bdata.error = jdata.error.clone();
    bdata.analysis_ready = true;
    bdata.ended_at_ms = Some(now_ms());
    // Files first: a crash after them and before the transition is
    // repaired by the reconcile pass, which writes them again.
    let mut report_snapshot = snapshot.clone();
    report_snapshot.work.data = encode(&bdata);
    report_snapshot.work.status = BattleStatus::Completed.as_str().into();
    if let Some(j) = report_snapshot
        .owners
        .iter_mut()
        .find(|o| o.kind == OwnerKind::Judge)
    {
        j.data = encode(jdata);
    }
    let report = folder::battle_report(&report_snapshot)?;
    let analysis = folder::analysis_report(&report, jdata);
    folder::write_summary(
        std::path::Path::new(&bdata.results_dir),
        &report,
        analysis.as_ref(),
        true,
    )?;
    inner
        .store
        .transition(Transition {
            target: Target::Work(battle_id.to_owned()),
            from: vec![BattleStatus::Judging.as_str().into()],
            to: BattleStatus::Completed.as_str().into(),
            data: Some(encode(&bdata)),
            event: Some(battle_event(
                battle_id,
                BattleStatus::Completed,
                &bdata,
                None,
            )?),
        })
        .await?;
    inner.bus.notify();
    Ok(())
}

/// The reconcile pass's `FinishBattle`: the judge settled but the battle
/// was not completed (a crash between the two).
pub(crate) async fn finish_from_judge(inner: &Arc<Inner>, battle_id: &str) -> Result<(), Error> {
    let snapshot = inner.store.work(battle_id).await?;
    let jdata = judge_data(&snapshot)?;
    if jdata.decision.is_none() {
        // Settled without a decision (its task was cancelled or failed):
        // complete with the error.
        let mut j = jdata.clone();
        j.error
            .get_or_insert_with(|| "the analysis did not finish".to_owned());
        j.decision = Some(DecisionRecord {
            winner: None,
            source: None,
            tier: None,
            reason: "no winner: the analysis did not finish".into(),
            wins: vec![],
        });
        return finish_battle(inner, battle_id, &j, false).await;
    }
    finish_battle(inner, battle_id, &jdata, false).await
}

/// Queues a cross-examination of a completed battle's analysis.
pub(crate) async fn request_cross_exam(
    inner: &Arc<Inner>,
    battle_id: &str,
    examiner: AgentRef,
) -> Result<String, Error> {
    let snapshot = inner.store.work(battle_id).await?;
    if snapshot.work.kind != WorkKind::Battle {
        return Err(Error::not_found_id("battle", battle_id));
    }
    let entry = inner
        .registry
        .get(&examiner.identity)
        // A bad request, like an unknown contestant identity in a spec.
        .map_err(|e| {
            Error::invalid_input(e.message().to_owned()).with_detail("path", "identity")
        })?;
    if examiner.model.trim().is_empty() {
        return Err(Error::invalid_input("the examiner needs a model").with_detail("path", "model"));
    }
    let bdata: BattleData = decode("battle", battle_id, &snapshot.work.data)?;
    if snapshot.work.status != BattleStatus::Completed.as_str() || !bdata.analysis_ready {
        return Err(Error::conflict(format!(
            "battle {battle_id:?} is {}: a cross-examination needs a completed battle with its analysis",
            snapshot.work.status
        ))
        .with_detail("status", snapshot.work.status.clone()));
    }
    let n = snapshot
        .owners
        .iter()
        .filter(|o| o.kind == OwnerKind::CrossExam)
        .count()
        + 1;
    let id = format!("{battle_id}-x{n}-{}", super::start::random_hex(2));
    let lane = entry.lane;
    let data = CrossExamData {
        identity: examiner.identity,
        model: examiner.model,
        lane: Some(lane),
        created_at_ms: now_ms(),
        ..Default::default()
    };
    inner
        .store
        .add_owner(
            battle_id,
            NewOwner {
                id: id.clone(),
                kind: OwnerKind::CrossExam,
                status: "pending".into(),
                data: encode(&data),
            },
            vec![TaskSpec::new(
                format!("{id}-t1"),
                OwnerRef {
                    kind: OwnerKind::CrossExam,
                    id: id.clone(),
                },
                lane,
            )
            .with_payload(serde_json::json!({"battle_id": battle_id}))],
            Some(battle_event(
                battle_id,
                BattleStatus::Completed,
                &bdata,
                Some(id.clone()),
            )?),
        )
        .await?;
    inner.bus.notify();
    inner.tasks.wake();
    Ok(id)
}

/// The cross-examination task.
pub(crate) async fn run_cross_exam(inner: &Arc<Inner>, held: &Held) -> Result<(), Error> {
    let task = &held.claim.task;
    let result = cross_exam(inner, held).await;
    super::finish::quiet_if_taken(inner, &task.id, task.attempt, result).await
}

async fn cross_exam(inner: &Arc<Inner>, held: &Held) -> Result<(), Error> {
    let fence = held.claim.fence();
    let battle_id = held.claim.task.work_id.clone();
    let xid = held.claim.task.owner.id.clone();
    let snapshot = inner.store.work(&battle_id).await?;
    let bdata: BattleData = decode("battle", &battle_id, &snapshot.work.data)?;
    let spec = BattleSpec::from_json(&bdata.spec)?;
    let owner = snapshot
        .owners
        .iter()
        .find(|o| o.id == xid)
        .ok_or_else(|| Error::not_found_id("cross_exam", &xid))?;
    let mut xdata: CrossExamData = decode("cross-examination", &xid, &owner.data)?;
    inner
        .store
        .record(
            &fence,
            Update {
                owner: Some(OwnerUpdate {
                    status: Some("running".into()),
                    data: None,
                }),
                event: None,
            },
        )
        .await?;
    let jdata = judge_data(&snapshot)?;
    let results_dir = PathBuf::from(&bdata.results_dir);
    let mut contestants: Vec<(String, ContestantData)> = Vec::new();
    for o in snapshot
        .owners
        .iter()
        .filter(|o| o.kind == OwnerKind::Contestant)
    {
        contestants.push((o.id.clone(), decode("contestant", &o.id, &o.data)?));
    }
    contestants.sort_by_key(|c| c.1.index);
    // The judge's digests where it wrote them; otherwise (the oracle
    // decided) each contestant's result.md stands in.
    let digests: Vec<(String, String, String, String)> = contestants
        .iter()
        .map(|(id, c)| {
            let text = jdata
                .digests
                .iter()
                .find(|d| &d.contestant_id == id)
                .map(|d| d.text.clone())
                .unwrap_or_else(|| read_text(&results_dir.join(&c.dir).join("result.md")));
            let bench = bench_line(c);
            (c.identity.clone(), c.model.clone(), text, bench)
        })
        .collect();
    let analysis = read_text(&results_dir.join("analysis.md"));
    let proposed = bdata
        .winner
        .as_ref()
        .and_then(|w| contestants.iter().find(|c| c.0 == w.contestant_id))
        .map(|(_, c)| (c.identity.clone(), c.model.clone()));
    let (system, user) = build_cross_exam_prompt(
        &spec.prompt,
        &digests,
        &analysis,
        proposed.as_ref().map(|(i, m)| (i.as_str(), m.as_str())),
        &xdata.identity,
        &xdata.model,
    );
    let examiner = AgentRef {
        identity: xdata.identity.clone(),
        model: xdata.model.clone(),
    };
    let status = match ask(
        inner,
        &examiner,
        system,
        user,
        &held.cancel,
        results_dir.clone(),
    )
    .await
    {
        Ok(text) => {
            xdata.verdict = extract_verdict(&text).map(|(i, m)| format!("{i}/{m}"));
            let section = format!(
                "## {} ({}), {}\n\nVerdict: {}\n\n{}\n",
                examiner.label(),
                xid,
                folder::rfc3339(now_ms()),
                xdata.verdict.as_deref().unwrap_or("NO_WINNER"),
                text.trim_end()
            );
            xdata.text = Some(text);
            let dir = results_dir.clone();
            tokio::task::spawn_blocking(move || folder::append_cross_exam(&dir, &section))
                .await
                .map_err(|e| Error::internal(e.to_string()))??;
            "done"
        }
        Err(e) if e.details().get("cancelled").is_some() => return Ok(()),
        Err(e) => {
            xdata.error = Some(e.to_string());
            "error"
        }
    };
    let event = battle_event(
        &battle_id,
        snapshot
            .work
            .status
            .parse::<BattleStatus>()
            .unwrap_or(BattleStatus::Completed),
        &bdata,
        Some(xid.clone()),
    )?;
    let completion = if status == "done" {
        Completion::completed(serde_json::json!({}))
    } else {
        Completion::failed(xdata.error.clone().unwrap_or_default(), false)
    };
    match inner
        .store
        .complete(
            &fence,
            completion
                .with_owner(OwnerUpdate {
                    status: Some(status.into()),
                    data: Some(encode(&xdata)),
                })
                .with_event(event),
        )
        .await
    {
        Err(e) if e.kind() == crate::ErrorKind::Conflict => Ok(()),
        other => other.map(|_| ()),
    }
}
