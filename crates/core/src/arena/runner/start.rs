//! Starting a battle: every check before the store is touched, then one
//! transaction for the battle, its contestants, its judge row, one task per
//! contestant and `battle_started`.

use super::data::{encode, now_ms, BattleData, ContestantData, JudgeData};
use super::{folder, Inner};
use crate::arena::{battle_slug, contestant_dir, BattleSpec, BattleType, Lane};
use crate::error::Error;
use crate::event::{BattleStarted, ContestantInfo, Event};
use crate::store::{NewEvent, NewOwner, NewWork, OwnerKind, OwnerRef, TaskSpec, WorkKind};
use std::io::Read;
use std::path::{Path, PathBuf};

/// `n` random bytes as hex, from the kernel's generator.
pub(crate) fn random_hex(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    let filled = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .is_ok();
    if !filled {
        // Without /dev/urandom: time and a counter, still unique per process.
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let seed = (now_ms() as u64) ^ COUNTER.fetch_add(1, Ordering::Relaxed).rotate_left(32);
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (seed >> ((i % 8) * 8)) as u8 ^ (i as u8);
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The lane of a contestant: qa battles run on the local lane (they exist
/// to compare local models on one GPU); coding contestants where their
/// agent's configuration puts them.
pub(crate) fn lane_of(
    inner: &Inner,
    battle_type: BattleType,
    identity: &str,
) -> Result<Lane, Error> {
    let entry = inner.registry.get(identity)?;
    Ok(match battle_type {
        BattleType::Qa => Lane::Local,
        BattleType::Coding => entry.lane,
    })
}

/// The project of a coding battle: canonical, under a project root, the top
/// level of a git working tree.
fn check_project(inner: &Inner, project: &str) -> Result<PathBuf, Error> {
    let bad = |msg: String| Error::invalid_input(msg).with_detail("path", "project");
    let path = Path::new(project);
    if !path.is_absolute() {
        return Err(bad(format!(
            "the project must be an absolute path, not {project:?}"
        )));
    }
    let canonical = std::fs::canonicalize(path)
        .map_err(|e| bad(format!("the project {project:?} cannot be opened: {e}")))?;
    if !inner.config.project_roots.is_empty()
        && !inner
            .config
            .project_roots
            .iter()
            .any(|root| canonical.starts_with(root))
    {
        let roots: Vec<String> = inner
            .config
            .project_roots
            .iter()
            .map(|r| r.display().to_string())
            .collect();
        return Err(bad(format!(
            "the project {} is outside the project roots ({}): start the server with --project-root for it",
            canonical.display(),
            roots.join(", ")
        )));
    }
    let repo = git2::Repository::open(&canonical).map_err(|_| {
        bad(format!(
            "the project {} is not the top of a git repository: a coding battle needs one (git init, commit)",
            canonical.display()
        ))
    })?;
    let top = repo
        .workdir()
        .and_then(|w| std::fs::canonicalize(w).ok())
        .ok_or_else(|| {
            bad(format!(
                "the project {} is a bare repository",
                canonical.display()
            ))
        })?;
    if top != canonical {
        return Err(bad(format!(
            "the project {} is inside the repository {}: name its top level",
            canonical.display(),
            top.display()
        )));
    }
    Ok(canonical)
}

fn resolve_base(
    inner: &Inner,
    project: &Path,
    base: &crate::arena::spec::Base,
) -> Result<String, Error> {
    match base {
        crate::arena::spec::Base::Snapshot => inner.workspace.snapshot(project),
        crate::arena::spec::Base::Ref(r) => {
            let repo = git2::Repository::open(project).map_err(|e| {
                Error::invalid_input(format!(
                    "cannot open {}: {}",
                    project.display(),
                    e.message()
                ))
            })?;
            let commit = repo
                .revparse_single(r)
                .and_then(|o| o.peel_to_commit())
                .map_err(|e| {
                    Error::invalid_input(format!(
                        "the base {r:?} is not a commit of the project: {}",
                        e.message()
                    ))
                    .with_detail("path", "base")
                })?;
            Ok(commit.id().to_string())
        }
    }
}

/// Checks `spec` and creates the battle; returns its id.
pub(crate) async fn create(inner: &Inner, spec: BattleSpec) -> Result<String, Error> {
    spec.validate_against(&inner.registry.identities())?;
    let created_at_ms = now_ms();
    let id = random_hex(16);
    let (project, base_commit) = match (&spec.battle_type, &spec.project) {
        (BattleType::Coding, Some(p)) => {
            let project = check_project(inner, p)?;
            let base = spec.base.clone();
            let workspace_project = project.clone();
            let base_commit = {
                let inner_ws = inner.workspace.clone();
                let project2 = workspace_project.clone();
                match base {
                    crate::arena::spec::Base::Snapshot => {
                        tokio::task::spawn_blocking(move || inner_ws.snapshot(&project2))
                            .await
                            .map_err(|e| {
                                Error::internal(format!("the snapshot task failed: {e}"))
                            })??
                    }
                    other => resolve_base(inner, &workspace_project, &other)?,
                }
            };
            (Some(project), Some(base_commit))
        }
        (BattleType::Coding, None) => {
            return Err(
                Error::invalid_input("a coding battle needs a project (a git repository)")
                    .with_detail("path", "project"),
            )
        }
        (BattleType::Qa, Some(p)) => {
            let canonical = std::fs::canonicalize(p).map_err(|e| {
                Error::invalid_input(format!("the project {p:?} cannot be opened: {e}"))
                    .with_detail("path", "project")
            })?;
            (Some(canonical), None)
        }
        (BattleType::Qa, None) => (None, None),
    };
    let slug = battle_slug(&id, spec.battle_type, created_at_ms)
        .map_err(|e| Error::internal(format!("battle slug: {e}")))?;
    let results_dir = folder::results_dir(project.as_deref(), &inner.config.data_dir, &slug);
    if let Some(p) = &project {
        match spec.battle_type {
            BattleType::Coding => folder::exclude_arena(p)?,
            // A qa battle's project need not be a repository; when it is,
            // its results stay out of `git status` too.
            BattleType::Qa => {
                if git2::Repository::open(p).is_ok() {
                    folder::exclude_arena(p)?;
                }
            }
        }
    }
    let mut owners = Vec::new();
    let mut tasks = Vec::new();
    let mut infos = Vec::new();
    for (index, contestant) in spec.contestants.iter().enumerate() {
        let agent = &contestant.agent;
        let cid = format!("{id}-c{}", index + 1);
        let lane = lane_of(inner, spec.battle_type, &agent.identity)?;
        let dir = contestant_dir(&agent.identity, &agent.model).map_err(|e| {
            Error::invalid_input(e.to_string()).with_detail("path", format!("contestants[{index}]"))
        })?;
        owners.push(NewOwner {
            id: cid.clone(),
            kind: OwnerKind::Contestant,
            status: "queued".into(),
            data: encode(&ContestantData {
                index,
                identity: agent.identity.clone(),
                model: agent.model.clone(),
                instruction: contestant.instruction.clone(),
                lane: Some(lane),
                dir,
                ..ContestantData::default()
            }),
        });
        tasks.push(
            TaskSpec::new(
                format!("{cid}-t1"),
                OwnerRef {
                    kind: OwnerKind::Contestant,
                    id: cid.clone(),
                },
                lane,
            )
            .with_payload(serde_json::json!({"battle_id": id})),
        );
        infos.push(ContestantInfo {
            id: cid,
            identity: agent.identity.clone(),
            model: agent.model.clone(),
            lane,
        });
    }
    let judge_lane = inner.registry.get(&spec.judge.identity)?.lane;
    owners.push(NewOwner {
        id: format!("{id}-judge"),
        kind: OwnerKind::Judge,
        status: "idle".into(),
        data: encode(&JudgeData {
            identity: spec.judge.identity.clone(),
            model: spec.judge.model.clone(),
            lane: Some(judge_lane),
            ..JudgeData::default()
        }),
    });
    let data = BattleData {
        spec: spec.to_json(),
        project: project.as_ref().map(|p| p.display().to_string()),
        base_commit,
        slug,
        results_dir: results_dir.display().to_string(),
        created_at_ms,
        ended_at_ms: None,
        winner: None,
        analysis_ready: false,
        error: None,
    };
    let event = NewEvent::from_event(&Event::BattleStarted(BattleStarted {
        battle_id: id.clone(),
        battle_type: spec.battle_type,
        prompt: spec.prompt.clone(),
        contestants: infos,
    }))?;
    if let Some(scope) = &inner.config.scope {
        scope.add(&id);
    }
    inner
        .store
        .create_work(NewWork {
            id: id.clone(),
            kind: WorkKind::Battle,
            status: "running".into(),
            data: encode(&data),
            owners,
            tasks,
            event,
        })
        .await?;
    Ok(id)
}
