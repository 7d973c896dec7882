//! The files of a battle's results folder, rendered purely:
//! `manifest.json` ([`manifest_json`]), each contestant's `result.md`
//! ([`result_md`]) and `analysis.md` ([`analysis_md`]).
//!
//! Everything comes in as values — timestamps as the strings to print
//! (RFC 3339 is the runtime's choice), the tier of each contestant as
//! [`super::evidence::tier`] computed it — so the same battle always renders
//! to the same bytes. Contestant text (answers, digests, command output) is
//! placed in fenced blocks that it cannot close; table cells have `|` and
//! line breaks escaped.

use super::analysis::fenced;
use super::bench::{benchmark_line, Benchmark};
use super::evidence::{BaseRun, CommandEvidence, Evidence, EvidenceTier, Verdict};
use super::evidence::{WinnerDecision, WinnerSource};
use super::lane::{BattleType, ContestantStatus, Lane};
use super::spec::{AgentRef, BattleSpec};
use crate::agent::Usage;
use crate::event::BattleStatus;
use serde_json::{json, Map, Value};

/// One contestant as the results folder shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ContestantReport {
    /// The contestant's id.
    pub id: String,
    /// Its agent and model.
    pub agent: AgentRef,
    /// Its own instruction, appended to the battle's prompt for it alone.
    pub instruction: Option<String>,
    /// Its folder under the battle's ([`super::contestant_dir`]).
    pub dir: String,
    /// The lane it ran in.
    pub lane: Lane,
    /// Where it stands.
    pub status: ContestantStatus,
    /// When it started, as printed.
    pub started_at: Option<String>,
    /// When it ended, as printed.
    pub ended_at: Option<String>,
    /// Duration and tokens/second, once it ended.
    pub benchmark: Option<Benchmark>,
    /// Time to the first token.
    pub ttft_ms: Option<u64>,
    /// Token usage, where the backend reported it.
    pub usage: Option<Usage>,
    /// The oracle's evidence, when it ran.
    pub evidence: Option<Evidence>,
    /// The tier of that evidence (`none` without any).
    pub tier: EvidenceTier,
    /// Its final answer.
    pub answer: String,
    /// Why it failed, if it did.
    pub error: Option<String>,
}

/// A battle as the results folder shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct BattleReport {
    /// The battle's id.
    pub id: String,
    /// What was asked for.
    pub spec: BattleSpec,
    /// Where it stands.
    pub status: BattleStatus,
    /// The commit the contestants started from (coding).
    pub base_commit: Option<String>,
    /// The oracle's run on the base, when it ran.
    pub base_run: Option<BaseRun>,
    /// When it was created, as printed.
    pub created_at: String,
    /// When it started, as printed.
    pub started_at: Option<String>,
    /// When it ended, as printed.
    pub ended_at: Option<String>,
    /// Why it failed, if it did.
    pub error: Option<String>,
    /// Its contestants, in creation order.
    pub contestants: Vec<ContestantReport>,
    /// The stored winner: a contestant id and who named it.
    pub winner: Option<(String, WinnerSource)>,
}

/// What the analysis did, with contestants named `identity/model`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnalysisReport {
    /// `(label, digest)` of each digested contestant.
    pub digests: Vec<(String, String)>,
    /// `(first, second, verdict)` of each pairwise judging.
    pub verdicts: Vec<(String, String, Verdict)>,
    /// The decision.
    pub decision: WinnerDecision<String>,
    /// Why the digests or the judge failed, if they did.
    pub error: Option<String>,
}

impl BattleReport {
    fn contestant(&self, id: &str) -> Option<&ContestantReport> {
        self.contestants.iter().find(|c| c.id == id)
    }

    fn has_oracle(&self) -> bool {
        self.spec.battle_type == BattleType::Coding && self.spec.oracle.is_some()
    }
}

fn command_json(c: &CommandEvidence) -> Value {
    json!({
        "exit_code": c.exit_code,
        "duration_ms": c.duration_ms,
        "timed_out": c.timed_out,
        "passed": c.passed(),
        "output_tail": c.output_tail,
        "sandbox": c.sandbox,
    })
}

/// `manifest.json`: the battle, its contestants (each with its own
/// `instruction`, `null` without one), their lanes, benchmarks
/// and evidence (by contestant id), the winner, the judge, the base commit
/// and the timestamps. Every key is always present (`null` when unknown);
/// maps by contestant id are sorted by id. `analysis` adds the decision's
/// reason, tier and pairwise wins under `analysis` (`null` without one).
/// Each command's record carries the sandbox it ran in (`sandbox`: the
/// enforced policy as [`crate::sandbox::SandboxReport`] serializes it,
/// `null` for records made before commands were sandboxed); the oracle's
/// configuration its `network`.
pub fn manifest_json(battle: &BattleReport, analysis: Option<&AnalysisReport>) -> Value {
    let spec = &battle.spec;
    let oracle = spec.oracle.as_ref().map(|o| {
        json!({"repro": o.repro, "suite": o.suite, "timeout_ms": o.timeout.as_millis() as u64,
               "network": o.network.name()})
    });
    let mut lanes = Map::new();
    let mut benchmarks = Map::new();
    let mut evidence = Map::new();
    for c in &battle.contestants {
        lanes.insert(c.id.clone(), json!(c.lane.as_str()));
        let bench = c.benchmark.map(|b| {
            json!({
                "duration_ms": b.duration_ms,
                "ttft_ms": c.ttft_ms,
                "tokens_per_sec": b.tokens_per_sec,
                "usage": c.usage,
            })
        });
        benchmarks.insert(c.id.clone(), bench.unwrap_or(Value::Null));
        let ev = c.evidence.as_ref().map(|e| {
            json!({
                "patch_applied": e.patch_applied,
                "repro": e.repro.as_ref().map(command_json),
                "suite": e.suite.as_ref().map(command_json),
                "error": e.error,
                "tier": c.tier.as_str(),
            })
        });
        evidence.insert(c.id.clone(), ev.unwrap_or(Value::Null));
    }
    let base = battle.base_run.as_ref().map(|b| {
        json!({
            "repro": b.repro.as_ref().map(command_json),
            "suite": b.suite.as_ref().map(command_json),
            "error": b.error,
            "base_repro_passes": b.base_repro_passes(),
        })
    });
    let winner = battle.winner.as_ref().map(|(id, source)| {
        let agent = battle.contestant(id).map(|c| &c.agent);
        json!({
            "contestant_id": id,
            "identity": agent.map(|a| &a.identity),
            "model": agent.map(|a| &a.model),
            "source": source.as_str(),
        })
    });
    let analysis = analysis.map(|a| {
        let wins: Map<String, Value> = a
            .decision
            .wins
            .iter()
            .map(|(label, n)| (label.clone(), json!(n)))
            .collect();
        json!({
            "tier": a.decision.tier.map(EvidenceTier::as_str),
            "reason": a.decision.reason,
            "wins": wins,
            "error": a.error,
        })
    });
    json!({
        "battle": {
            "id": battle.id,
            "battle_type": spec.battle_type.as_str(),
            "prompt": spec.prompt,
            "project": spec.project,
            "base": (spec.battle_type == BattleType::Coding).then(|| spec.base.as_str()),
            "status": battle.status.as_str(),
            "error": battle.error,
            "contestant_timeout_ms": spec.contestant_timeout.as_millis() as u64,
            "keep_worktrees": spec.keep_worktrees,
            "oracle": oracle,
        },
        "contestants": battle.contestants.iter().map(|c| json!({
            "id": c.id,
            "identity": c.agent.identity,
            "model": c.agent.model,
            "instruction": c.instruction,
            "dir": c.dir,
            "status": c.status.as_str(),
            "error": c.error,
            "started_at": c.started_at,
            "ended_at": c.ended_at,
        })).collect::<Vec<_>>(),
        "lanes": lanes,
        "benchmarks": benchmarks,
        "evidence": {"base": base, "contestants": evidence},
        "winner": winner,
        "judge": {"identity": spec.judge.identity, "model": spec.judge.model},
        "base_commit": battle.base_commit,
        "timestamps": {
            "created_at": battle.created_at,
            "started_at": battle.started_at,
            "ended_at": battle.ended_at,
        },
        "analysis": analysis,
    })
}

/// A table cell: `|` escaped, line breaks as spaces.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\r', '\n'], " ")
}

fn seconds(ms: u64) -> String {
    format!("{:.2}s", ms as f64 / 1000.0)
}

/// `passed (exit 0, 1.20s)`, `failed (exit 1, …)`, `timed out (…)`,
/// `killed (no exit code, …)`; `not run` without a record.
fn command_cell(c: Option<&CommandEvidence>) -> String {
    match c {
        None => "not run".to_owned(),
        Some(c) if c.timed_out => format!("timed out ({})", seconds(c.duration_ms)),
        Some(c) => match c.exit_code {
            None => format!("killed (no exit code, {})", seconds(c.duration_ms)),
            Some(code) => format!(
                "{} (exit {code}, {})",
                if c.passed() { "passed" } else { "failed" },
                seconds(c.duration_ms)
            ),
        },
    }
}

fn usage_line(u: &Usage) -> String {
    let mut line = format!(
        "input {}, output {}, cache read {}, cache write {}, reasoning {}",
        u.input, u.output, u.cache_read, u.cache_write, u.reasoning
    );
    if let Some(cost) = u.cost_usd {
        line.push_str(&format!(", cost ${cost:.4}"));
    }
    line
}

/// The one-line benchmark of a contestant ([`benchmark_line`]; output
/// tokens are its tokens), `not measured` before it ended.
pub fn contestant_benchmark_line(c: &ContestantReport) -> String {
    match &c.benchmark {
        Some(b) => benchmark_line(b, c.usage.map(|u| u.output), c.lane),
        None => "not measured".to_owned(),
    }
}

/// A contestant's `result.md`: who, outcome, benchmark, usage, its own
/// instruction (fenced, when it has one), the evidence table with the
/// sandbox each command ran in (one line of
/// [`crate::sandbox::SandboxReport::summary`], when recorded) and the tails
/// of the commands' output (coding battles with an oracle), and the answer.
pub fn result_md(battle: &BattleReport, c: &ContestantReport) -> String {
    let mut md = format!(
        "# {}/{}\n\n- Battle: {} ({})\n- Status: {}\n- Lane: {}\n- Benchmark: {}\n",
        c.agent.identity,
        c.agent.model,
        battle.id,
        battle.spec.battle_type.as_str(),
        c.status.as_str(),
        c.lane.as_str(),
        contestant_benchmark_line(c),
    );
    if let Some(ttft) = c.ttft_ms {
        md.push_str(&format!("- Time to first token: {ttft} ms\n"));
    }
    if let Some(u) = &c.usage {
        md.push_str(&format!("- Usage: {}\n", usage_line(u)));
    }
    if let Some(error) = &c.error {
        md.push_str(&format!("- Error: {}\n", cell(error)));
    }
    if let Some(instruction) = &c.instruction {
        md.push_str(
            "\n## Instruction\n\nAppended to the battle's prompt for this contestant only:\n\n",
        );
        md.push_str(&fenced("text", instruction));
        md.push('\n');
    }
    if battle.spec.battle_type == BattleType::Coding {
        md.push_str("\n## Evidence\n\n");
        match (&battle.spec.oracle, &c.evidence) {
            (None, _) => md.push_str("No oracle configured.\n"),
            (Some(_), None) => md.push_str("The oracle did not run for this contestant.\n"),
            (Some(oracle), Some(e)) => {
                md.push_str("| check | result |\n|---|---|\n");
                let patch = if e.patch_applied {
                    "applied"
                } else {
                    "did not apply"
                };
                md.push_str(&format!("| patch | {patch} |\n"));
                for (name, configured, record) in [
                    ("repro", oracle.repro.is_some(), e.repro.as_ref()),
                    ("suite", oracle.suite.is_some(), e.suite.as_ref()),
                ] {
                    if configured {
                        md.push_str(&format!("| {name} | {} |\n", command_cell(record)));
                    }
                }
                md.push_str(&format!("\nTier: **{}**\n", c.tier.as_str()));
                if let Some(error) = &e.error {
                    md.push_str(&format!("\nOracle error: {}\n", cell(error)));
                }
                for (name, record) in [("repro", &e.repro), ("suite", &e.suite)] {
                    if let Some(report) = record.as_ref().and_then(|r| r.sandbox.as_ref()) {
                        md.push_str(&format!(
                            "\nSandbox of the {name}: {}\n",
                            cell(&report.summary())
                        ));
                    }
                }
                for (name, record) in [("repro", &e.repro), ("suite", &e.suite)] {
                    if let Some(r) = record.as_ref().filter(|r| !r.output_tail.is_empty()) {
                        md.push_str(&format!(
                            "\n### {name} output (tail)\n\n{}\n",
                            fenced("text", &r.output_tail)
                        ));
                    }
                }
            }
        }
    }
    md.push_str("\n## Answer\n\n");
    if c.answer.trim().is_empty() {
        md.push_str("(no answer)\n");
    } else {
        md.push_str(&fenced("markdown", &c.answer));
        md.push('\n');
    }
    md
}

/// The table of every contestant: status and benchmark, and for coding
/// battles with an oracle the patch, each configured command and the tier,
/// with the base run as its first row when there was one.
pub fn evidence_table(battle: &BattleReport) -> String {
    let oracle = battle.spec.oracle.as_ref().filter(|_| battle.has_oracle());
    let mut commands: Vec<&str> = vec![];
    if let Some(o) = oracle {
        if o.repro.is_some() {
            commands.push("repro");
        }
        if o.suite.is_some() {
            commands.push("suite");
        }
    }
    let mut md = String::from("| contestant | status | benchmark |");
    let mut rule = String::from("|---|---|---|");
    if oracle.is_some() {
        md.push_str(" patch |");
        rule.push_str("---|");
        for name in &commands {
            md.push_str(&format!(" {name} |"));
            rule.push_str("---|");
        }
        md.push_str(" tier |");
        rule.push_str("---|");
    }
    md.push('\n');
    md.push_str(&rule);
    md.push('\n');
    let pick = |name: &str, repro: Option<&CommandEvidence>, suite: Option<&CommandEvidence>| {
        command_cell(if name == "repro" { repro } else { suite })
    };
    if let (Some(_), Some(base)) = (oracle, &battle.base_run) {
        md.push_str("| (base) | – | – | – |");
        for name in &commands {
            md.push_str(&format!(
                " {} |",
                pick(name, base.repro.as_ref(), base.suite.as_ref())
            ));
        }
        md.push_str(" – |\n");
    }
    for c in &battle.contestants {
        md.push_str(&format!(
            "| {} | {} | {} |",
            cell(&c.agent.label()),
            c.status.as_str(),
            cell(&contestant_benchmark_line(c))
        ));
        if oracle.is_some() {
            match &c.evidence {
                None => {
                    md.push_str(" – |");
                    for _ in &commands {
                        md.push_str(" not run |");
                    }
                }
                Some(e) => {
                    let patch = if e.patch_applied {
                        "applied"
                    } else {
                        "did not apply"
                    };
                    md.push_str(&format!(" {patch} |"));
                    for name in &commands {
                        md.push_str(&format!(
                            " {} |",
                            pick(name, e.repro.as_ref(), e.suite.as_ref())
                        ));
                    }
                }
            }
            md.push_str(&format!(" {} |", c.tier.as_str()));
        }
        md.push('\n');
    }
    md
}

/// `analysis.md`: the prompt, the evidence table (and a note when the
/// repro already passes on the base), the digests and the judge's verdicts
/// when they ran, and the winner and why.
pub fn analysis_md(battle: &BattleReport, analysis: Option<&AnalysisReport>) -> String {
    let spec = &battle.spec;
    let mut md = format!(
        "# Analysis of battle {}\n\n{} battle, {}; judge {}.\n",
        battle.id,
        match spec.battle_type {
            BattleType::Coding => "Coding",
            BattleType::Qa => "Q&A",
        },
        battle.status.as_str(),
        spec.judge.label(),
    );
    if let Some(commit) = &battle.base_commit {
        md.push_str(&format!(
            "Base: `{}` at commit `{commit}`.\n",
            spec.base.as_str()
        ));
    }
    md.push_str(&format!(
        "\n## Prompt\n\n{}\n",
        fenced("text", &spec.prompt)
    ));
    md.push_str("\n## Evidence\n\n");
    if spec.battle_type == BattleType::Coding && spec.oracle.is_none() {
        md.push_str(
            "No oracle configured: the judge decides among every contestant with a result.\n\n",
        );
    }
    md.push_str(&evidence_table(battle));
    if let Some(base) = battle.base_run.as_ref().filter(|_| battle.has_oracle()) {
        if base.base_repro_passes() {
            md.push_str("\nThe repro already passes on the base, so passing it is no evidence of a fix: the suite alone decides the tiers.\n");
        }
        if let Some(error) = &base.error {
            md.push_str(&format!("\nThe base run failed: {}\n", cell(error)));
        }
    }
    if let Some(a) = analysis {
        if !a.digests.is_empty() {
            md.push_str("\n## Digests\n");
            for (label, digest) in &a.digests {
                md.push_str(&format!(
                    "\n### {label}\n\n{}\n",
                    fenced("markdown", digest)
                ));
            }
        }
        if !a.verdicts.is_empty() {
            md.push_str("\n## Judge verdicts\n\n| first | second | verdict |\n|---|---|---|\n");
            for (first, second, verdict) in &a.verdicts {
                md.push_str(&format!(
                    "| {} | {} | {} |\n",
                    cell(first),
                    cell(second),
                    verdict.as_str()
                ));
            }
            let wins: Vec<String> = a
                .decision
                .wins
                .iter()
                .map(|(label, n)| format!("{label} {n}"))
                .collect();
            if !wins.is_empty() {
                md.push_str(&format!("\nPairwise wins: {}.\n", wins.join(", ")));
            }
        }
        if let Some(error) = &a.error {
            md.push_str(&format!("\nAnalysis error: {}\n", cell(error)));
        }
    }
    md.push_str("\n## Winner\n\n");
    let reason = analysis.map(|a| a.decision.reason.as_str());
    match (&battle.winner, reason) {
        (Some((id, source)), reason) => {
            let label = battle
                .contestant(id)
                .map_or_else(|| id.clone(), |c| c.agent.label());
            if *source == WinnerSource::Human {
                md.push_str(&format!(
                    "**{label}**, named by a person (a re-analysis keeps it unless forced).\n"
                ));
                if let Some(r) = reason {
                    md.push_str(&format!("\nThe analysis said: {r}.\n"));
                }
            } else {
                md.push_str(&format!("**{label}**, named by the {}.\n", source.as_str()));
                if let Some(r) = reason {
                    md.push_str(&format!("\nWhy: {r}.\n"));
                }
            }
        }
        (None, Some(r)) => md.push_str(&format!(
            "No winner.\n\nWhy: {}.\n",
            r.strip_prefix("no winner: ").unwrap_or(r)
        )),
        (None, None) => md.push_str("No winner: the analysis did not run.\n"),
    }
    md
}
