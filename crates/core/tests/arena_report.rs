//! The results folder's files, rendered from values: exact snapshots.

use coderig::agent::Usage;
use coderig::arena::{
    analysis_md, decide_winner, manifest_json, result_md, tier, AgentRef, AnalysisReport, BaseRun,
    BattleReport, BattleSpec, Benchmark, CommandEvidence, ContestantReport, ContestantStatus,
    Evidence, EvidenceTier, Lane, Verdict, WinnerSource,
};
use coderig::event::BattleStatus;
use serde_json::json;

fn cmd(exit_code: Option<i32>, duration_ms: u64, tail: &str) -> CommandEvidence {
    CommandEvidence {
        exit_code,
        duration_ms,
        timed_out: false,
        output_tail: tail.into(),
        sandbox: None,
    }
}

fn contestant(id: &str, identity: &str, model: &str, lane: Lane) -> ContestantReport {
    ContestantReport {
        id: id.into(),
        agent: AgentRef {
            identity: identity.into(),
            model: model.into(),
        },
        instruction: None,
        dir: format!("{identity}-{model}"),
        lane,
        status: ContestantStatus::Done,
        started_at: Some("2025-01-02T03:04:05Z".into()),
        ended_at: Some("2025-01-02T03:05:05Z".into()),
        benchmark: Some(Benchmark {
            duration_ms: 60_000,
            tokens_per_sec: None,
        }),
        ttft_ms: None,
        usage: None,
        evidence: None,
        tier: EvidenceTier::None,
        answer: String::new(),
        error: None,
    }
}

/// A coding battle: claude fixes it (full), qwen fixes the repro but
/// breaks the suite (partial), codex's patch does not apply (none).
fn coding_battle() -> BattleReport {
    let spec = BattleSpec::from_json(&json!({
        "battle_type": "coding", "prompt": "Fix the failing test in calc.py",
        "project": "/repo", "contestants": [
            {"identity": "claude", "model": "sonnet"},
            {"identity": "qwen", "model": "qwen3-coder", "instruction": "Keep the diff small."},
            {"identity": "codex", "model": "gpt-5"}],
        "judge": {"identity": "local", "model": "qwen3"},
        "oracle": {"repro": "pytest -q tests/test_calc.py", "suite": "pytest -q", "timeout": "5m"}}))
    .unwrap();
    let base = BaseRun {
        repro: Some(cmd(Some(1), 500, "1 failed")),
        suite: Some(cmd(Some(1), 1500, "1 failed, 9 passed")),
        error: None,
    };
    let mut claude = contestant("c1", "claude", "sonnet", Lane::Cloud);
    claude.ttft_ms = Some(850);
    claude.usage = Some(Usage {
        input: 1200,
        output: 3400,
        cache_read: 50,
        cache_write: 0,
        reasoning: 0,
        cost_usd: Some(0.0123),
    });
    claude.evidence = Some(Evidence {
        repro: Some(cmd(Some(0), 1200, "1 passed")),
        suite: Some(cmd(Some(0), 3400, "10 passed")),
        patch_applied: true,
        error: None,
    });
    claude.answer = "Fixed `add`:\n```py\nreturn a + b\n```\n".into();
    let mut qwen = contestant("c2", "qwen", "qwen3-coder", Lane::Local);
    qwen.instruction = Some("Keep the diff small.".into());
    qwen.benchmark = Some(Benchmark {
        duration_ms: 12_345,
        tokens_per_sec: Some(369.84),
    });
    qwen.usage = Some(Usage {
        output: 4567,
        ..Usage::default()
    });
    qwen.evidence = Some(Evidence {
        repro: Some(cmd(Some(0), 1000, "")),
        suite: Some(CommandEvidence {
            exit_code: None,
            duration_ms: 300_000,
            timed_out: true,
            output_tail: "tests | hung".into(),
            sandbox: None,
        }),
        patch_applied: true,
        error: None,
    });
    qwen.answer = "Done.".into();
    let mut codex = contestant("c3", "codex", "gpt-5", Lane::Cloud);
    codex.status = ContestantStatus::Error;
    codex.benchmark = None;
    codex.ended_at = None;
    codex.error = Some("timeout after 20m".into());
    codex.evidence = Some(Evidence {
        repro: None,
        suite: None,
        patch_applied: false,
        error: None,
    });
    let mut battle = BattleReport {
        id: "b-1".into(),
        spec,
        status: BattleStatus::Completed,
        base_commit: Some("abc1234".into()),
        base_run: Some(base),
        created_at: "2025-01-02T03:04:00Z".into(),
        started_at: Some("2025-01-02T03:04:01Z".into()),
        ended_at: Some("2025-01-02T03:10:00Z".into()),
        error: None,
        contestants: vec![claude, qwen, codex],
        winner: Some(("c1".into(), WinnerSource::Oracle)),
    };
    let commands = battle.spec.oracle.as_ref().unwrap().commands();
    for c in &mut battle.contestants {
        c.tier = tier(
            c.evidence.as_ref().unwrap(),
            commands,
            battle.base_run.as_ref(),
        );
    }
    battle
}

fn oracle_analysis(battle: &BattleReport) -> AnalysisReport {
    let candidates: Vec<_> = battle
        .contestants
        .iter()
        .map(|c| (c.agent.label(), c.tier, c.status == ContestantStatus::Done))
        .collect();
    AnalysisReport {
        digests: vec![],
        verdicts: vec![],
        decision: decide_winner(&candidates, &[]),
        error: None,
    }
}

#[test]
fn result_md_of_a_contestant_with_full_evidence() {
    let battle = coding_battle();
    let expected = "\
# claude/sonnet

- Battle: b-1 (coding)
- Status: done
- Lane: cloud
- Benchmark: lane=cloud duration=60.00s tokens=3400
- Time to first token: 850 ms
- Usage: input 1200, output 3400, cache read 50, cache write 0, reasoning 0, cost $0.0123

## Evidence

| check | result |
|---|---|
| patch | applied |
| repro | passed (exit 0, 1.20s) |
| suite | passed (exit 0, 3.40s) |

Tier: **full**

### repro output (tail)

```text
1 passed
```

### suite output (tail)

```text
10 passed
```

## Answer

````markdown
Fixed `add`:
```py
return a + b
```
````
";
    assert_eq!(result_md(&battle, &battle.contestants[0]), expected);
}

#[test]
fn result_md_of_partial_and_failed_contestants() {
    let battle = coding_battle();
    let expected = "\
# qwen/qwen3-coder

- Battle: b-1 (coding)
- Status: done
- Lane: local
- Benchmark: lane=local duration=12.35s tokens=4567 tokens_per_sec=369.8
- Usage: input 0, output 4567, cache read 0, cache write 0, reasoning 0

## Instruction

Appended to the battle's prompt for this contestant only:

```text
Keep the diff small.
```

## Evidence

| check | result |
|---|---|
| patch | applied |
| repro | passed (exit 0, 1.00s) |
| suite | timed out (300.00s) |

Tier: **partial**

### suite output (tail)

```text
tests | hung
```

## Answer

```markdown
Done.
```
";
    assert_eq!(result_md(&battle, &battle.contestants[1]), expected);
    let expected = "\
# codex/gpt-5

- Battle: b-1 (coding)
- Status: error
- Lane: cloud
- Benchmark: not measured
- Error: timeout after 20m

## Evidence

| check | result |
|---|---|
| patch | did not apply |
| repro | not run |
| suite | not run |

Tier: **none**

## Answer

(no answer)
";
    assert_eq!(result_md(&battle, &battle.contestants[2]), expected);
}

#[test]
fn result_md_of_a_qa_contestant_has_no_evidence() {
    let mut battle = coding_battle();
    battle.spec = BattleSpec::from_json(&json!({"battle_type": "qa", "prompt": "Why?",
        "contestants": [{"identity": "a", "model": "m"}, {"identity": "b", "model": "m"}],
        "judge": {"identity": "j", "model": "m"}}))
    .unwrap();
    let mut c = contestant("c1", "a", "m", Lane::Local);
    c.answer = "Because.\n".into();
    let expected = "\
# a/m

- Battle: b-1 (qa)
- Status: done
- Lane: local
- Benchmark: lane=local duration=60.00s tokens=unknown

## Answer

```markdown
Because.
```
";
    assert_eq!(result_md(&battle, &c), expected);
}

#[test]
fn analysis_md_of_an_oracle_win() {
    let battle = coding_battle();
    let analysis = oracle_analysis(&battle);
    assert_eq!(analysis.decision.winner.as_deref(), Some("claude/sonnet"));
    let expected = "\
# Analysis of battle b-1

Coding battle, completed; judge local/qwen3.
Base: `HEAD` at commit `abc1234`.

## Prompt

```text
Fix the failing test in calc.py
```

## Evidence

| contestant | status | benchmark | patch | repro | suite | tier |
|---|---|---|---|---|---|---|
| (base) | – | – | – | failed (exit 1, 0.50s) | failed (exit 1, 1.50s) | – |
| claude/sonnet | done | lane=cloud duration=60.00s tokens=3400 | applied | passed (exit 0, 1.20s) | passed (exit 0, 3.40s) | full |
| qwen/qwen3-coder | done | lane=local duration=12.35s tokens=4567 tokens_per_sec=369.8 | applied | passed (exit 0, 1.00s) | timed out (300.00s) | partial |
| codex/gpt-5 | error | not measured | did not apply | not run | not run | none |

## Winner

**claude/sonnet**, named by the oracle.

Why: claude/sonnet is the only contestant with full evidence; the others have at most partial evidence.
";
    assert_eq!(analysis_md(&battle, Some(&analysis)), expected);
}

#[test]
fn analysis_md_of_a_judged_battle_and_of_a_human_override() {
    let mut battle = coding_battle();
    // Everyone applied and passed: the judge decides.
    battle.contestants.truncate(2);
    battle.contestants[1].evidence.as_mut().unwrap().suite = Some(cmd(Some(0), 2000, ""));
    battle.base_run.as_mut().unwrap().repro = Some(cmd(Some(0), 500, ""));
    let commands = battle.spec.oracle.as_ref().unwrap().commands();
    for c in &mut battle.contestants {
        c.tier = tier(
            c.evidence.as_ref().unwrap(),
            commands,
            battle.base_run.as_ref(),
        );
        assert_eq!(c.tier, EvidenceTier::Full);
    }
    let (a, b) = ("claude/sonnet".to_owned(), "qwen/qwen3-coder".to_owned());
    let verdicts = vec![
        (a.clone(), b.clone(), Verdict::Second),
        (b.clone(), a.clone(), Verdict::First),
    ];
    let candidates = vec![
        (a.clone(), EvidenceTier::Full, true),
        (b.clone(), EvidenceTier::Full, true),
    ];
    let analysis = AnalysisReport {
        digests: vec![
            (a.clone(), "Fixed add.".into()),
            (b.clone(), "Fixed add; hung suite.".into()),
        ],
        decision: decide_winner(&candidates, &verdicts),
        verdicts,
        error: None,
    };
    battle.winner = Some(("c2".into(), WinnerSource::Judge));
    let md = analysis_md(&battle, Some(&analysis));
    let tail = "
The repro already passes on the base, so passing it is no evidence of a fix: the suite alone decides the tiers.

## Digests

### claude/sonnet

```markdown
Fixed add.
```

### qwen/qwen3-coder

```markdown
Fixed add; hung suite.
```

## Judge verdicts

| first | second | verdict |
|---|---|---|
| claude/sonnet | qwen/qwen3-coder | second |
| qwen/qwen3-coder | claude/sonnet | first |

Pairwise wins: claude/sonnet 0, qwen/qwen3-coder 1.

## Winner

**qwen/qwen3-coder**, named by the judge.

Why: qwen/qwen3-coder won the judging among 2 contestants with full evidence: 1 of 1 pairs won in both orders.
";
    assert!(md.ends_with(tail), "{md}");

    battle.winner = Some(("c1".into(), WinnerSource::Human));
    let md = analysis_md(&battle, Some(&analysis));
    assert!(md.ends_with("\
## Winner

**claude/sonnet**, named by a person (a re-analysis keeps it unless forced).

The analysis said: qwen/qwen3-coder won the judging among 2 contestants with full evidence: 1 of 1 pairs won in both orders.
"), "{md}");

    battle.winner = None;
    let tie = AnalysisReport {
        verdicts: vec![],
        digests: vec![],
        decision: decide_winner(&candidates, &[]),
        error: Some("judge: timeout after 5m".into()),
    };
    let md = analysis_md(&battle, Some(&tie));
    assert!(
        md.ends_with(
            "\
Analysis error: judge: timeout after 5m

## Winner

No winner.

Why: the judging among 2 contestants with full evidence gave no pair won in both orders.
"
        ),
        "{md}"
    );
    assert!(
        analysis_md(&battle, None).ends_with("## Winner\n\nNo winner: the analysis did not run.\n")
    );
}

#[test]
fn analysis_md_of_a_qa_battle_without_oracle() {
    let mut battle = coding_battle();
    battle.spec = BattleSpec::from_json(&json!({"battle_type": "qa", "prompt": "Why?",
        "contestants": [{"identity": "a", "model": "m"}, {"identity": "b|c", "model": "m"}],
        "judge": {"identity": "j", "model": "m"}}))
    .unwrap();
    battle.base_commit = None;
    battle.winner = None;
    battle.contestants = vec![
        contestant("c1", "a", "m", Lane::Local),
        contestant("c2", "b|c", "m", Lane::Local),
    ];
    let expected = "\
# Analysis of battle b-1

Q&A battle, completed; judge j/m.

## Prompt

```text
Why?
```

## Evidence

| contestant | status | benchmark |
|---|---|---|
| a/m | done | lane=local duration=60.00s tokens=unknown |
| b\\|c/m | done | lane=local duration=60.00s tokens=unknown |

## Winner

No winner: the analysis did not run.
";
    assert_eq!(analysis_md(&battle, None), expected);
}

#[test]
fn the_manifest_has_every_field_of_the_design() {
    let battle = coding_battle();
    let analysis = oracle_analysis(&battle);
    let m = manifest_json(&battle, Some(&analysis));
    let keys: Vec<&str> = m.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "analysis",
            "base_commit",
            "battle",
            "benchmarks",
            "contestants",
            "evidence",
            "judge",
            "lanes",
            "timestamps",
            "winner"
        ]
    );
    assert_eq!(
        m["battle"],
        json!({"id": "b-1", "battle_type": "coding", "prompt": "Fix the failing test in calc.py",
               "project": "/repo", "base": "HEAD", "status": "completed", "error": null,
               "contestant_timeout_ms": 1_200_000, "keep_worktrees": false,
               "oracle": {"repro": "pytest -q tests/test_calc.py", "suite": "pytest -q", "timeout_ms": 300_000,
                          "network": "deny"}})
    );
    assert_eq!(
        m["contestants"][2],
        json!({"id": "c3", "identity": "codex", "model": "gpt-5", "instruction": null, "dir": "codex-gpt-5",
               "status": "error", "error": "timeout after 20m", "started_at": "2025-01-02T03:04:05Z", "ended_at": null})
    );
    assert_eq!(m["contestants"][1]["instruction"], "Keep the diff small.");
    assert_eq!(
        m["lanes"],
        json!({"c1": "cloud", "c2": "local", "c3": "cloud"})
    );
    assert_eq!(
        m["benchmarks"]["c2"],
        json!({"duration_ms": 12_345, "ttft_ms": null, "tokens_per_sec": 369.84,
               "usage": {"input": 0, "output": 4567, "cache_read": 0, "cache_write": 0, "reasoning": 0}})
    );
    assert_eq!(m["benchmarks"]["c3"], json!(null));
    assert_eq!(
        m["evidence"]["contestants"]["c1"],
        json!({"patch_applied": true, "error": null, "tier": "full",
               "repro": {"exit_code": 0, "duration_ms": 1200, "timed_out": false, "passed": true, "output_tail": "1 passed", "sandbox": null},
               "suite": {"exit_code": 0, "duration_ms": 3400, "timed_out": false, "passed": true, "output_tail": "10 passed", "sandbox": null}})
    );
    assert_eq!(m["evidence"]["contestants"]["c2"]["tier"], "partial");
    assert_eq!(m["evidence"]["contestants"]["c2"]["suite"]["passed"], false);
    assert_eq!(m["evidence"]["base"]["base_repro_passes"], false);
    assert_eq!(
        m["winner"],
        json!({"contestant_id": "c1", "identity": "claude", "model": "sonnet", "source": "oracle"})
    );
    assert_eq!(m["judge"], json!({"identity": "local", "model": "qwen3"}));
    assert_eq!(m["base_commit"], "abc1234");
    assert_eq!(
        m["timestamps"],
        json!({"created_at": "2025-01-02T03:04:00Z", "started_at": "2025-01-02T03:04:01Z", "ended_at": "2025-01-02T03:10:00Z"})
    );
    assert_eq!(m["analysis"]["tier"], "full");
    assert_eq!(m["analysis"]["wins"], json!({}));
    let bare = manifest_json(&battle, None);
    assert_eq!(bare["analysis"], json!(null));
}
