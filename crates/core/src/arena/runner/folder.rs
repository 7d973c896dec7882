//! The results folder `<project>/Arena/<slug>/` (qa without a project:
//! `<data_dir>/Arena/<slug>/`): every file written atomically (temp file,
//! fsync, rename), `Arena/` kept out of `git status` through the
//! repository's `info/exclude`, `cross-exam.md` appended under a lock.

use super::data::{decode, BattleData, ContestantData, JudgeData};
use crate::arena::evidence::{tier, EvidenceTier, WinnerDecision};
use crate::arena::report::{AnalysisReport, BattleReport, ContestantReport};
use crate::arena::{BattleSpec, Benchmark, ContestantStatus};
use crate::edit::file::write_atomic;
use crate::error::Error;
use crate::event::BattleStatus;
use crate::store::{OwnerKind, WorkSnapshot};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The folder every battle's results go under, in the project.
pub const ARENA_DIR: &str = "Arena";

/// The results folder of a battle.
pub fn results_dir(project: Option<&Path>, data_dir: &Path, slug: &str) -> PathBuf {
    project.unwrap_or(data_dir).join(ARENA_DIR).join(slug)
}

fn io_error(what: &str, path: &Path, e: &std::io::Error) -> Error {
    Error::io(format!("cannot {what} {}: {e}", path.display()))
        .with_detail("path", path.display().to_string())
}

/// Writes `bytes` to `dir/relative` atomically, creating the folders.
pub fn write_file(dir: &Path, relative: &str, bytes: &[u8]) -> Result<PathBuf, Error> {
    let path = dir.join(relative);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io_error("create", parent, &e))?;
    }
    write_atomic(&path, bytes).map_err(|e| io_error("write", &path, &e))?;
    Ok(path)
}

/// Adds `/Arena/` to the repository's `info/exclude` (the common one, so
/// every worktree of it agrees) unless a line already says so. Safe to call
/// for every battle; the file is rewritten atomically.
pub fn exclude_arena(project: &Path) -> Result<(), Error> {
    let repo = git2::Repository::open(project).map_err(|e| {
        Error::invalid_input(format!(
            "{} is not a git repository: {}",
            project.display(),
            e.message()
        ))
    })?;
    let info = repo.commondir().join("info");
    let exclude = info.join("exclude");
    let current = match std::fs::read_to_string(&exclude) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(io_error("read", &exclude, &e)),
    };
    let wanted = format!("/{ARENA_DIR}/");
    if current.lines().any(|l| {
        let l = l.trim();
        l == wanted
            || l == format!("/{ARENA_DIR}")
            || l == format!("{ARENA_DIR}/")
            || l == ARENA_DIR
    }) {
        return Ok(());
    }
    let mut text = current;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str("# coderig's battle results (coderig adds this line)\n");
    text.push_str(&wanted);
    text.push('\n');
    std::fs::create_dir_all(&info).map_err(|e| io_error("create", &info, &e))?;
    write_atomic(&exclude, text.as_bytes()).map_err(|e| io_error("write", &exclude, &e))
}

/// Appends `section` to `dir/cross-exam.md` under an exclusive lock on
/// `dir/.cross-exam.lock` (two examinations of one battle, even from two
/// processes, never interleave or lose a section); the file is replaced
/// atomically, so a reader never sees half a section.
pub fn append_cross_exam(dir: &Path, section: &str) -> Result<(), Error> {
    use nix::fcntl::{Flock, FlockArg};
    std::fs::create_dir_all(dir).map_err(|e| io_error("create", dir, &e))?;
    let lock_path = dir.join(".cross-exam.lock");
    let lock_file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| io_error("open", &lock_path, &e))?;
    let _lock = Flock::lock(lock_file, FlockArg::LockExclusive)
        .map_err(|(_, e)| Error::io(format!("cannot lock {}: {e}", lock_path.display())))?;
    let path = dir.join("cross-exam.md");
    let mut text = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => b"# Cross-examinations\n".to_vec(),
        Err(e) => return Err(io_error("read", &path, &e)),
    };
    if !text.ends_with(b"\n") {
        text.push(b'\n');
    }
    text.push(b'\n');
    let _ = text.write_all(section.as_bytes());
    if !text.ends_with(b"\n") {
        text.push(b'\n');
    }
    write_atomic(&path, &text).map_err(|e| io_error("write", &path, &e))
}

/// RFC 3339 UTC with milliseconds (`2026-12-01T15:04:05.123Z`), as the
/// results folder prints times.
pub fn rfc3339(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rest = ms.rem_euclid(86_400_000);
    let (y, m, d) = crate::arena::paths::civil_from_days(days);
    let (h, rest) = (rest / 3_600_000, rest % 3_600_000);
    let (min, rest) = (rest / 60_000, rest % 60_000);
    let (s, milli) = (rest / 1000, rest % 1000);
    format!("{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}.{milli:03}Z")
}

/// The battle as the pure renderers of `arena::report` take it, from one
/// store snapshot.
pub fn battle_report(snapshot: &WorkSnapshot) -> Result<BattleReport, Error> {
    let work = &snapshot.work;
    let data: BattleData = decode("battle", &work.id, &work.data)?;
    let spec = BattleSpec::from_json(&data.spec)
        .map_err(|e| Error::internal(format!("battle {:?}: stored spec: {e}", work.id)))?;
    let status = work
        .status
        .parse::<BattleStatus>()
        .map_err(|e| Error::internal(format!("battle {:?}: {e}", work.id)))?;
    let judge: Option<JudgeData> = snapshot
        .owners
        .iter()
        .find(|o| o.kind == OwnerKind::Judge)
        .map(|o| decode("judge", &o.id, &o.data))
        .transpose()?;
    let base_run = judge.as_ref().and_then(|j| j.base_run.clone());
    let commands = spec
        .oracle
        .as_ref()
        .map(|o| o.commands())
        .unwrap_or_default();
    let mut contestants = Vec::new();
    for owner in snapshot
        .owners
        .iter()
        .filter(|o| o.kind == OwnerKind::Contestant)
    {
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
            ContestantReport {
                id: owner.id.clone(),
                agent: crate::arena::AgentRef {
                    identity: c.identity.clone(),
                    model: c.model.clone(),
                },
                instruction: c.instruction.clone(),
                dir: c.dir.clone(),
                lane: c.lane.unwrap_or(crate::arena::Lane::Cloud),
                status,
                started_at: c.started_at_ms.map(rfc3339),
                ended_at: c.ended_at_ms.map(rfc3339),
                benchmark: c.duration_ms.map(|duration_ms| Benchmark {
                    duration_ms,
                    tokens_per_sec: c.tokens_per_sec,
                }),
                ttft_ms: c.ttft_ms,
                usage: c.usage,
                evidence: c.evidence.clone(),
                tier,
                answer: c.answer.clone().unwrap_or_default(),
                error: c.error.clone(),
            },
        ));
    }
    contestants.sort_by_key(|(i, _)| *i);
    Ok(BattleReport {
        id: work.id.clone(),
        spec,
        status,
        base_commit: data.base_commit.clone(),
        base_run,
        created_at: rfc3339(data.created_at_ms),
        started_at: Some(rfc3339(data.created_at_ms)),
        ended_at: data.ended_at_ms.map(rfc3339),
        error: data.error.clone(),
        contestants: contestants.into_iter().map(|(_, c)| c).collect(),
        winner: data
            .winner
            .as_ref()
            .map(|w| (w.contestant_id.clone(), w.source)),
    })
}

/// The analysis as `arena::report` renders it, from the judge's data, with
/// contestants named `identity/model`.
pub fn analysis_report(report: &BattleReport, judge: &JudgeData) -> Option<AnalysisReport> {
    let decision = judge.decision.as_ref()?;
    let label = |id: &str| {
        report
            .contestants
            .iter()
            .find(|c| c.id == id)
            .map(|c| c.agent.label())
            .unwrap_or_else(|| id.to_owned())
    };
    Some(AnalysisReport {
        digests: judge
            .digests
            .iter()
            .map(|d| (d.label.clone(), d.text.clone()))
            .collect(),
        verdicts: judge
            .verdicts
            .iter()
            .map(|v| (label(&v.first), label(&v.second), v.verdict))
            .collect(),
        decision: WinnerDecision {
            winner: decision.winner.as_deref().map(label),
            source: decision.source,
            tier: decision.tier,
            reason: decision.reason.clone(),
            wins: decision
                .wins
                .iter()
                .map(|(id, n)| (label(id), *n))
                .collect(),
        },
        error: judge.error.clone(),
    })
}

/// Writes `manifest.json` (and `analysis.md` when `analysis` is given) for
/// the battle as it is now.
pub fn write_summary(
    dir: &Path,
    report: &BattleReport,
    analysis: Option<&AnalysisReport>,
    write_analysis: bool,
) -> Result<(), Error> {
    let manifest = crate::arena::manifest_json(report, analysis);
    let mut text = serde_json::to_string_pretty(&manifest).unwrap_or_default();
    text.push('\n');
    write_file(dir, "manifest.json", text.as_bytes())?;
    if write_analysis {
        write_file(
            dir,
            "analysis.md",
            crate::arena::analysis_md(report, analysis).as_bytes(),
        )?;
    }
    Ok(())
}
