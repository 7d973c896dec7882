//! Evidence tiers, pairwise judging and the winner decision.

use coderig::arena::{
    apply_analysis, decide_winner, judge_field, pair_verdict, plan_judging, should_name_winner,
    tier, BaseRun, CommandEvidence, Evidence, EvidenceTier, OracleCommands, Verdict,
    WinnerDecision, WinnerSource,
};
use proptest::prelude::*;
use serde_json::json;
use EvidenceTier::{Full, None as NoEv, Partial};

fn cmd(exit_code: Option<i32>, timed_out: bool) -> CommandEvidence {
    CommandEvidence {
        exit_code,
        duration_ms: 10,
        timed_out,
        output_tail: String::new(),
        sandbox: None,
    }
}
const PASS: Option<(Option<i32>, bool)> = Some((Some(0), false));
const FAIL: Option<(Option<i32>, bool)> = Some((Some(1), false));
const TIMEOUT: Option<(Option<i32>, bool)> = Some((Some(0), true));
const KILLED: Option<(Option<i32>, bool)> = Some((None, false));
const SKIPPED: Option<(Option<i32>, bool)> = None;

fn ev(repro: Option<(Option<i32>, bool)>, suite: Option<(Option<i32>, bool)>) -> Evidence {
    Evidence {
        repro: repro.map(|(c, t)| cmd(c, t)),
        suite: suite.map(|(c, t)| cmd(c, t)),
        patch_applied: true,
        error: None,
    }
}

const BOTH: OracleCommands = OracleCommands {
    repro: true,
    suite: true,
};
const REPRO: OracleCommands = OracleCommands {
    repro: true,
    suite: false,
};
const SUITE: OracleCommands = OracleCommands {
    repro: false,
    suite: true,
};
const NEITHER: OracleCommands = OracleCommands {
    repro: false,
    suite: false,
};

#[test]
fn tiers_follow_the_table() {
    let base_fails = BaseRun {
        repro: Some(cmd(Some(1), false)),
        ..BaseRun::default()
    };
    let base_passes = BaseRun {
        repro: Some(cmd(Some(0), false)),
        ..BaseRun::default()
    };
    let cases: &[(
        &str,
        Evidence,
        OracleCommands,
        Option<&BaseRun>,
        EvidenceTier,
    )] = &[
        ("both pass", ev(PASS, PASS), BOTH, None, Full),
        (
            "both pass, base fails",
            ev(PASS, PASS),
            BOTH,
            Some(&base_fails),
            Full,
        ),
        (
            "repro passes, suite fails",
            ev(PASS, FAIL),
            BOTH,
            None,
            Partial,
        ),
        (
            "repro passes, suite times out",
            ev(PASS, TIMEOUT),
            BOTH,
            None,
            Partial,
        ),
        (
            "repro passes, suite never ran",
            ev(PASS, SKIPPED),
            BOTH,
            None,
            Partial,
        ),
        (
            "repro fails, suite passes",
            ev(FAIL, PASS),
            BOTH,
            None,
            NoEv,
        ),
        ("both fail", ev(FAIL, FAIL), BOTH, None, NoEv),
        ("repro killed", ev(KILLED, PASS), BOTH, None, NoEv),
        ("repro only, passes", ev(PASS, SKIPPED), REPRO, None, Full),
        (
            "repro only, times out with 0",
            ev(TIMEOUT, SKIPPED),
            REPRO,
            None,
            NoEv,
        ),
        ("suite only, passes", ev(SKIPPED, PASS), SUITE, None, Full),
        ("suite only, fails", ev(SKIPPED, FAIL), SUITE, None, NoEv),
        ("no oracle", ev(SKIPPED, SKIPPED), NEITHER, None, NoEv),
        // A repro passing on the base is not counted: the suite decides.
        (
            "base repro passes, suite passes",
            ev(PASS, PASS),
            BOTH,
            Some(&base_passes),
            Full,
        ),
        (
            "base repro passes, suite fails",
            ev(PASS, FAIL),
            BOTH,
            Some(&base_passes),
            NoEv,
        ),
        (
            "base repro passes, repro fails",
            ev(FAIL, PASS),
            BOTH,
            Some(&base_passes),
            Full,
        ),
        (
            "base repro passes, repro only",
            ev(PASS, SKIPPED),
            REPRO,
            Some(&base_passes),
            NoEv,
        ),
        // Records of commands the battle does not configure are ignored.
        (
            "unconfigured suite failed",
            ev(PASS, FAIL),
            REPRO,
            None,
            Full,
        ),
    ];
    for (name, evidence, configured, base, expected) in cases {
        assert_eq!(tier(evidence, *configured, *base), *expected, "{name}");
    }
    let not_applied = Evidence {
        patch_applied: false,
        ..ev(PASS, PASS)
    };
    assert_eq!(tier(&not_applied, BOTH, None), NoEv);
    let errored = Evidence {
        error: Some("checkout failed".into()),
        ..ev(PASS, PASS)
    };
    assert_eq!(tier(&errored, BOTH, None), NoEv);
    assert!(base_passes.base_repro_passes());
    assert!(!base_fails.base_repro_passes());
    assert!(!BaseRun::default().base_repro_passes());
}

#[test]
fn names_and_order_of_the_enums() {
    assert_eq!(EvidenceTier::NAMES, ["full", "partial", "none"]);
    assert!(Full > Partial && Partial > NoEv);
    assert_eq!(WinnerSource::NAMES, ["oracle", "judge", "human"]);
    assert_eq!(Verdict::NAMES, ["first", "second", "tie", "invalid"]);
    assert_eq!("PARTIAL".parse::<EvidenceTier>().unwrap(), Partial);
    let lists: Vec<&str> = coderig::names::LISTS.iter().map(|l| l.0).collect();
    for key in ["evidence_tier", "winner_source", "verdict"] {
        assert!(lists.contains(&key), "{key}");
    }
}

#[test]
fn evidence_serializes_snake_case_and_round_trips() {
    let e = Evidence {
        error: None,
        ..ev(PASS, SKIPPED)
    };
    let value = serde_json::to_value(&e).unwrap();
    assert_eq!(
        value,
        json!({"repro": {"exit_code": 0, "duration_ms": 10, "timed_out": false, "output_tail": ""},
               "suite": null, "patch_applied": true})
    );
    assert_eq!(serde_json::from_value::<Evidence>(value).unwrap(), e);
    let with_error = Evidence {
        error: Some("x".into()),
        ..Evidence::default()
    };
    let value = serde_json::to_value(&with_error).unwrap();
    assert_eq!(value["error"], "x");
    assert_eq!(
        serde_json::from_value::<Evidence>(value).unwrap(),
        with_error
    );
}

#[test]
fn pair_verdicts_read_the_last_decision_line() {
    let a = ("claude", "sonnet");
    let b = ("qwen", "qwen3-coder");
    for (text, expected) in [
        ("analysis\nWINNER: claude/sonnet", Verdict::First),
        ("**WINNER:** qwen / qwen3-coder.", Verdict::Second),
        ("WINNER: claude/sonnet\nNO_WINNER", Verdict::Tie),
        ("WINNER: none", Verdict::Tie),
        ("WINNER: codex/gpt-5", Verdict::Invalid),
        ("WINNER: the first one", Verdict::Invalid),
        ("I cannot decide.", Verdict::Invalid),
        ("", Verdict::Invalid),
        ("WINNER: Claude/sonnet", Verdict::Invalid),
    ] {
        assert_eq!(pair_verdict(text, a, b), expected, "{text:?}");
    }
}

#[test]
fn plans_judge_each_pair_in_both_orders() {
    assert_eq!(plan_judging::<&str>(&[]), vec![]);
    assert_eq!(plan_judging(&["a"]), vec![]);
    assert_eq!(plan_judging(&["a", "b"]), vec![("a", "b"), ("b", "a")]);
    assert_eq!(
        plan_judging(&["a", "b", "c"]),
        vec![
            ("a", "b"),
            ("b", "a"),
            ("a", "c"),
            ("c", "a"),
            ("b", "c"),
            ("c", "b")
        ]
    );
    assert_eq!(plan_judging(&["a", "b", "a"]), vec![("a", "b"), ("b", "a")]);
}

type Cand = (&'static str, EvidenceTier, bool);
type Verdicts = Vec<(&'static str, &'static str, Verdict)>;
/// (name, candidates, verdicts, winner, source, reason)
type Case = (
    &'static str,
    Vec<Cand>,
    Verdicts,
    Option<&'static str>,
    Option<WinnerSource>,
    &'static str,
);

fn decide(
    candidates: &[Cand],
    verdicts: &[(&'static str, &'static str, Verdict)],
) -> WinnerDecision<&'static str> {
    decide_winner(candidates, verdicts)
}

/// `a` beats `b` in both orders.
fn beats(a: &'static str, b: &'static str) -> [(&'static str, &'static str, Verdict); 2] {
    [(a, b, Verdict::First), (b, a, Verdict::Second)]
}

#[test]
fn winners_by_evidence_then_judge() {
    use Verdict::*;
    let ab = beats("a", "b");
    let ac = beats("a", "c");
    let bc = beats("b", "c");
    let cases: Vec<Case> = vec![
        ("nobody", vec![], vec![], None, None,
         "no winner: no contestant produced a result"),
        ("no result at all", vec![("a", Full, false), ("b", NoEv, false)], vec![], None, None,
         "no winner: no contestant produced a result"),
        ("a lone result with full evidence wins by oracle", vec![("a", Full, true), ("b", Full, false)], vec![], Some("a"), Some(WinnerSource::Oracle),
         "a is the only contestant that produced a result, with full evidence"),
        ("a lone result beside one that changed nothing", vec![("a", NoEv, false), ("b", Full, true)], vec![], Some("b"), Some(WinnerSource::Oracle),
         "b is the only contestant that produced a result, with full evidence"),
        ("a lone result with partial evidence wins by oracle", vec![("a", Partial, true), ("b", NoEv, false), ("c", NoEv, false)], vec![], Some("a"), Some(WinnerSource::Oracle),
         "a is the only contestant that produced a result, with partial evidence"),
        ("a lone result without oracle evidence: no winner", vec![("a", NoEv, true), ("b", Full, false)], vec![], None, None,
         "no winner: a is the only contestant that produced a result, and it has no oracle evidence (a lone result wins only with it)"),
        ("a lone result's verdicts are ignored", vec![("a", NoEv, true), ("b", NoEv, false)], ab.to_vec(), None, None,
         "no winner: a is the only contestant that produced a result, and it has no oracle evidence (a lone result wins only with it)"),
        ("alone in full", vec![("a", Full, true), ("b", Partial, true), ("c", NoEv, true)], vec![], Some("a"), Some(WinnerSource::Oracle),
         "a is the only contestant with full evidence; the others have at most partial evidence"),
        ("alone in partial", vec![("a", NoEv, true), ("b", Partial, true)], vec![], Some("b"), Some(WinnerSource::Oracle),
         "b is the only contestant with partial evidence; the others have at most no oracle evidence"),
        ("a full tier without a result does not count", vec![("a", Full, false), ("b", Partial, true), ("c", NoEv, true)], vec![], Some("b"), Some(WinnerSource::Oracle),
         "b is the only contestant with partial evidence; the others have at most no oracle evidence"),
        ("judge in the top tier", vec![("a", Full, true), ("b", Full, true), ("c", NoEv, true)], ab.to_vec(), Some("a"), Some(WinnerSource::Judge),
         "a won the judging among 2 contestants with full evidence: 1 of 1 pairs won in both orders"),
        ("orders disagree: tie", vec![("a", Full, true), ("b", Full, true)], vec![("a", "b", First), ("b", "a", First)], None, None,
         "no winner: the judging among 2 contestants with full evidence gave no pair won in both orders"),
        ("one order missing: tie", vec![("a", NoEv, true), ("b", NoEv, true)], vec![("a", "b", First)], None, None,
         "no winner: the judging among 2 contestants with no oracle evidence gave no pair won in both orders"),
        ("invalid verdicts: tie", vec![("a", NoEv, true), ("b", NoEv, true)], vec![("a", "b", Invalid), ("b", "a", Second)], None, None,
         "no winner: the judging among 2 contestants with no oracle evidence gave no pair won in both orders"),
        ("most wins takes it", vec![("a", Partial, true), ("b", Partial, true), ("c", Partial, true)], [ab, ac, bc].concat(), Some("a"), Some(WinnerSource::Judge),
         "a won the judging among 3 contestants with partial evidence: 2 of 2 pairs won in both orders"),
        ("most wins with ties elsewhere", vec![("a", Full, true), ("b", Full, true), ("c", Full, true)], [bc.to_vec(), vec![("a", "b", Tie), ("b", "a", Tie)]].concat(), Some("b"), Some(WinnerSource::Judge),
         "b won the judging among 3 contestants with full evidence: 1 of 2 pairs won in both orders"),
        ("a cycle ties at the top", vec![("a", Full, true), ("b", Full, true), ("c", Full, true)], [ab, bc, beats("c", "a")].concat(), None, None,
         "no winner: the judging among 3 contestants with full evidence left a, b and c tied at the top with 1 win"),
        ("verdicts outside the field are ignored", vec![("a", Full, true), ("b", Full, true), ("c", NoEv, true)], [beats("c", "a"), beats("c", "b"), ab].concat(), Some("a"), Some(WinnerSource::Judge),
         "a won the judging among 2 contestants with full evidence: 1 of 1 pairs won in both orders"),
        ("the last verdict on a pair counts", vec![("a", Full, true), ("b", Full, true)], vec![("a", "b", Invalid), ("a", "b", Second), ("b", "a", First)], Some("b"), Some(WinnerSource::Judge),
         "b won the judging among 2 contestants with full evidence: 1 of 1 pairs won in both orders"),
    ];
    for (name, candidates, verdicts, winner, source, reason) in cases {
        let d = decide(&candidates, &verdicts);
        assert_eq!(
            (d.winner, d.source, d.reason.as_str()),
            (winner, source, reason),
            "{name}"
        );
        let field = judge_field(&candidates);
        assert_eq!(
            field.is_some(),
            !d.wins.is_empty(),
            "{name}: judge_field and wins agree"
        );
        if let Some(field) = field {
            assert_eq!(
                d.wins.iter().map(|w| w.0).collect::<Vec<_>>(),
                field,
                "{name}"
            );
        }
    }
}

#[test]
fn wins_are_reported_per_contestant_of_the_field() {
    let candidates = [
        ("a", Full, true),
        ("b", Full, true),
        ("c", Full, true),
        ("d", NoEv, true),
    ];
    let d = decide(
        &candidates,
        &[beats("a", "b"), beats("a", "c"), beats("b", "c")].concat(),
    );
    assert_eq!(d.wins, vec![("a", 2), ("b", 1), ("c", 0)]);
    assert_eq!(d.tier, Some(Full));
    assert_eq!(judge_field(&candidates), Some(vec!["a", "b", "c"]));
    assert_eq!(judge_field(&[("a", Full, true), ("b", NoEv, true)]), None);
    assert_eq!(judge_field(&[("a", Full, true)]), None);
}

#[test]
fn analysis_keeps_a_human_winner_unless_forced() {
    use WinnerSource::*;
    let judge_a = WinnerDecision {
        winner: Some("a"),
        source: Some(Judge),
        tier: Some(Full),
        reason: String::new(),
        wins: vec![],
    };
    let oracle_a = WinnerDecision {
        source: Some(Oracle),
        ..judge_a.clone()
    };
    let none = WinnerDecision {
        winner: None,
        source: None,
        ..judge_a.clone()
    };
    let cases = [
        (None, &judge_a, false, Some(("a", Judge))),
        (None, &none, false, None),
        (Some(("b", Human)), &judge_a, false, Some(("b", Human))),
        (Some(("b", Human)), &none, false, Some(("b", Human))),
        (Some(("b", Human)), &judge_a, true, Some(("a", Judge))),
        (Some(("b", Human)), &none, true, None),
        (Some(("b", Judge)), &none, false, None),
        (Some(("b", Oracle)), &none, false, None),
        (Some(("b", Judge)), &oracle_a, false, Some(("a", Oracle))),
        (Some(("b", Oracle)), &judge_a, false, Some(("a", Judge))),
    ];
    for (current, decision, force, expected) in cases {
        assert_eq!(
            apply_analysis(current, decision, force),
            expected,
            "{current:?} {force}"
        );
    }
}

fn tier_strategy() -> impl Strategy<Value = EvidenceTier> {
    prop::sample::select(vec![Full, Partial, NoEv])
}

fn verdict_strategy() -> impl Strategy<Value = Verdict> {
    prop::sample::select(Verdict::ALL.to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// For any candidates and verdicts: a winner has a result and is in
    /// the best tier; an oracle winner is alone there; a judge winner has
    /// strictly the most wins; without a result no winner, and a lone
    /// result wins by the oracle exactly when its tier is above none (the
    /// judge, as `should_name_winner` says, never decides below two).
    #[test]
    fn winner_decisions_are_consistent(
        cands in prop::collection::vec((tier_strategy(), any::<bool>()), 0..7),
        raw in prop::collection::vec((0usize..6, 0usize..6, verdict_strategy()), 0..40),
    ) {
        const IDS: [&str; 6] = ["a", "b", "c", "d", "e", "f"];
        let candidates: Vec<Cand> = cands.iter().enumerate().map(|(i, (t, r))| (IDS[i], *t, *r)).collect();
        let verdicts: Vec<_> = raw.iter().map(|(i, j, v)| (IDS[*i], IDS[*j], *v)).collect();
        let d = decide_winner(&candidates, &verdicts);
        let results = candidates.iter().filter(|c| c.2).count();
        if results == 0 {
            prop_assert_eq!(d.winner, None);
        }
        if results == 1 {
            let only = candidates.iter().find(|c| c.2).unwrap();
            let expected = (only.1 > NoEv).then_some((only.0, WinnerSource::Oracle));
            prop_assert_eq!(d.winner.zip(d.source), expected);
        }
        if !should_name_winner(results) {
            prop_assert!(judge_field(&candidates).is_none());
            prop_assert!(d.wins.is_empty());
            prop_assert_ne!(d.source, Some(WinnerSource::Judge));
        }
        let best = candidates.iter().filter(|c| c.2).map(|c| c.1).max();
        prop_assert_eq!(d.winner.is_some(), d.source.is_some());
        if let Some(w) = d.winner {
            let c = candidates.iter().find(|c| c.0 == w).unwrap();
            prop_assert!(c.2);
            prop_assert_eq!(Some(c.1), best);
            match d.source.unwrap() {
                WinnerSource::Oracle => {
                    prop_assert_eq!(candidates.iter().filter(|c| c.2 && Some(c.1) == best).count(), 1);
                }
                WinnerSource::Judge => {
                    let mine = d.wins.iter().find(|x| x.0 == w).unwrap().1;
                    prop_assert!(mine > 0);
                    prop_assert!(d.wins.iter().all(|x| x.0 == w || x.1 < mine));
                }
                WinnerSource::Human => prop_assert!(false, "decide_winner never says human"),
            }
        }
        // Wins never exceed the pairs a contestant is in.
        let n = d.wins.len() as u32;
        prop_assert!(d.wins.iter().all(|x| x.1 < n.max(1)));
        // Judging exactly the planned pairs with an agreeing verdict gives a
        // strict order, so the first of the field wins.
        if let Some(field) = judge_field(&candidates) {
            let total: Vec<_> = plan_judging(&field)
                .into_iter()
                .map(|(f, s)| {
                    let first_is_better = field.iter().position(|x| *x == f) < field.iter().position(|x| *x == s);
                    (f, s, if first_is_better { Verdict::First } else { Verdict::Second })
                })
                .collect();
            let d = decide_winner(&candidates, &total);
            prop_assert_eq!(d.winner, Some(field[0]));
            prop_assert_eq!(d.source, Some(WinnerSource::Judge));
        }
    }
}
