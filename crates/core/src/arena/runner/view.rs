//! What every face shows of a battle: [`BattleView`], built from one store
//! snapshot, the same JSON over HTTP, from the CLI, Python and Node.

use super::data::{decode, BattleData, ContestantData, CrossExamData, JudgeData};
use crate::arena::evidence::{tier, BaseRun, EvidenceTier};
use crate::arena::lifecycle::CrossExamStatus;
use crate::arena::{BattleSpec, BattleType, ContestantStatus, Evidence, Lane, WinnerSource};
use crate::error::Error;
use crate::event::BattleStatus;
use crate::store::{OwnerKind, WorkSnapshot};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An agent and model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AgentView {
    /// A configured agent's identity.
    pub identity: String,
    /// The model.
    pub model: String,
}

/// One contestant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ContestantView {
    /// The contestant's id (unique in the store).
    pub id: String,
    /// Its agent.
    pub identity: String,
    /// Its model.
    pub model: String,
    /// Its own instruction, appended to the battle's prompt for it alone
    /// (`prompt + "\n\n" + instruction`); `null` without one.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub instruction: Option<String>,
    /// The lane it runs in.
    pub lane: Lane,
    /// Where it stands.
    pub status: ContestantStatus,
    /// Its folder in the results folder.
    pub dir: String,
    /// When its agent started (Unix ms).
    #[cfg_attr(feature = "openapi", schema(required))]
    pub started_at_ms: Option<i64>,
    /// When its agent ended (Unix ms).
    #[cfg_attr(feature = "openapi", schema(required))]
    pub ended_at_ms: Option<i64>,
    /// The turn's wall-clock time.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub duration_ms: Option<u64>,
    /// Time to the first token.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub ttft_ms: Option<u64>,
    /// Token usage (`input` uncached, `output`, `cache_read`,
    /// `cache_write`, `cost_usd`), where the backend reported it.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub usage: Option<crate::agent::Usage>,
    /// Generated tokens per second (local lane, where measurable).
    #[cfg_attr(feature = "openapi", schema(required))]
    pub tokens_per_sec: Option<f64>,
    /// Size of its `diff.patch` in bytes (coding; 0 = no change).
    #[cfg_attr(feature = "openapi", schema(required))]
    pub patch_bytes: Option<u64>,
    /// The oracle's evidence.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub evidence: Option<Evidence>,
    /// The tier of that evidence (`none` without).
    pub tier: EvidenceTier,
    /// Why it failed.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub error: Option<String>,
}

/// One cross-examination.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CrossExamView {
    /// Its id.
    pub id: String,
    /// The examiner.
    pub identity: String,
    /// Its model.
    pub model: String,
    /// `pending`, `running`, `done` or `error`.
    pub status: CrossExamStatus,
    /// The examiner's text.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub text: Option<String>,
    /// Its parsed `VERDICT:` (`identity/model`), `null` for `NO_WINNER` or
    /// none.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub verdict: Option<String>,
    /// Why it failed.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub error: Option<String>,
}

/// A battle with its contestants and cross-examinations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BattleView {
    /// The battle's id.
    pub id: String,
    /// Where it stands.
    pub status: BattleStatus,
    /// `coding` or `qa`.
    pub battle_type: BattleType,
    /// The task.
    pub prompt: String,
    /// The project (canonical path), when there is one.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub project: Option<String>,
    /// `HEAD`, another ref, or `snapshot`.
    pub base: String,
    /// The commit the contestants started from (coding).
    #[cfg_attr(feature = "openapi", schema(required))]
    pub base_commit: Option<String>,
    /// The judge.
    pub judge: AgentView,
    /// The spec as given (normalized), `BattleSpec` JSON.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub spec: Value,
    /// The results folder.
    pub results_dir: String,
    /// When it was created (Unix ms).
    pub created_at_ms: i64,
    /// When it reached a final status.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub ended_at_ms: Option<i64>,
    /// The winner's contestant id.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub winner_contestant_id: Option<String>,
    /// Who named it.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub winner_source: Option<WinnerSource>,
    /// `GET /battles/:id/analysis` has a text.
    pub analysis_ready: bool,
    /// The analysis' reason for its decision.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub reason: Option<String>,
    /// The oracle's run on the base.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub base_run: Option<BaseRun>,
    /// Why the battle or its analysis failed.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub error: Option<String>,
    /// Contestants in spec order.
    pub contestants: Vec<ContestantView>,
    /// Cross-examinations, oldest first.
    pub cross_exams: Vec<CrossExamView>,
}

impl BattleView {
    /// True for `completed`, `failed` and `cancelled`.
    pub fn is_finished(&self) -> bool {
        matches!(
            self.status,
            BattleStatus::Completed | BattleStatus::Failed | BattleStatus::Cancelled
        )
    }

    /// The contestant `id`.
    pub fn contestant(&self, id: &str) -> Option<&ContestantView> {
        self.contestants.iter().find(|c| c.id == id)
    }
}

/// The view of a battle from its snapshot.
pub fn battle_view(snapshot: &WorkSnapshot) -> Result<BattleView, Error> {
    let work = &snapshot.work;
    let data: BattleData = decode("battle", &work.id, &work.data)?;
    let spec = BattleSpec::from_json(&data.spec)
        .map_err(|e| Error::internal(format!("battle {:?}: stored spec: {e}", work.id)))?;
    let status = work
        .status
        .parse::<BattleStatus>()
        .map_err(|e| Error::internal(format!("battle {:?}: {e}", work.id)))?;
    let mut judge: Option<JudgeData> = None;
    let mut contestants = Vec::new();
    let mut cross_exams = Vec::new();
    for owner in &snapshot.owners {
        if owner.kind == OwnerKind::Judge {
            judge = Some(decode("judge", &owner.id, &owner.data)?);
        }
    }
    let base_run = judge.as_ref().and_then(|j| j.base_run.clone());
    let commands = spec
        .oracle
        .as_ref()
        .map(|o| o.commands())
        .unwrap_or_default();
    for owner in &snapshot.owners {
        match owner.kind {
            OwnerKind::Contestant => {
                let c: ContestantData = decode("contestant", &owner.id, &owner.data)?;
                let status = owner
                    .status
                    .parse::<ContestantStatus>()
                    .map_err(|e| Error::internal(format!("contestant {:?}: {e}", owner.id)))?;
                let tier = c
                    .evidence
                    .as_ref()
                    .map(|e| tier(e, commands, base_run.as_ref()))
                    .unwrap_or(EvidenceTier::None);
                contestants.push((
                    c.index,
                    ContestantView {
                        id: owner.id.clone(),
                        identity: c.identity,
                        model: c.model,
                        instruction: c.instruction,
                        lane: c.lane.unwrap_or(Lane::Cloud),
                        status,
                        dir: c.dir,
                        started_at_ms: c.started_at_ms,
                        ended_at_ms: c.ended_at_ms,
                        duration_ms: c.duration_ms,
                        ttft_ms: c.ttft_ms,
                        usage: c.usage,
                        tokens_per_sec: c.tokens_per_sec,
                        patch_bytes: c.patch_bytes,
                        evidence: c.evidence,
                        tier,
                        error: c.error,
                    },
                ));
            }
            OwnerKind::CrossExam => {
                let x: CrossExamData = decode("cross-examination", &owner.id, &owner.data)?;
                let status = owner.status.parse::<CrossExamStatus>().map_err(|e| {
                    Error::internal(format!("cross-examination {:?}: {e}", owner.id))
                })?;
                cross_exams.push((
                    x.created_at_ms,
                    CrossExamView {
                        id: owner.id.clone(),
                        identity: x.identity,
                        model: x.model,
                        status,
                        text: x.text,
                        verdict: x.verdict,
                        error: x.error,
                    },
                ));
            }
            _ => {}
        }
    }
    contestants.sort_by_key(|(i, _)| *i);
    cross_exams.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.id.cmp(&b.1.id)));
    let reason = judge
        .as_ref()
        .and_then(|j| j.decision.as_ref())
        .map(|d| d.reason.clone());
    let error = data
        .error
        .clone()
        .or_else(|| judge.as_ref().and_then(|j| j.error.clone()));
    Ok(BattleView {
        id: work.id.clone(),
        status,
        battle_type: spec.battle_type,
        prompt: spec.prompt.clone(),
        project: data.project.clone(),
        base: spec.base.as_str().to_owned(),
        base_commit: data.base_commit.clone(),
        judge: AgentView {
            identity: spec.judge.identity.clone(),
            model: spec.judge.model.clone(),
        },
        spec: data.spec.clone(),
        results_dir: data.results_dir.clone(),
        created_at_ms: data.created_at_ms,
        ended_at_ms: data.ended_at_ms,
        winner_contestant_id: data.winner.as_ref().map(|w| w.contestant_id.clone()),
        winner_source: data.winner.as_ref().map(|w| w.source),
        analysis_ready: data.analysis_ready,
        reason,
        base_run,
        error,
        contestants: contestants.into_iter().map(|(_, c)| c).collect(),
        cross_exams: cross_exams.into_iter().map(|(_, x)| x).collect(),
    })
}
