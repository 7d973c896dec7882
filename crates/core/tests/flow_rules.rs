//! Every trigger rule against dependency outcome combinations, checked
//! through three doors that must agree: `decide_trigger` on counts,
//! `evaluate_trigger_rule`/`ready_steps` (may it run now?) and
//! `propagate_skips` (will it never run, and why?). Plus Airflow's
//! `upstream_failed` propagation through chains.

use coderig::flow::{
    dep_counts, evaluate_trigger_rule, propagate_skips, ready_steps, Flow, SchedulerState,
    SkipReason, Step, StepKind, TriggerDecision, TriggerRule,
};
use std::str::FromStr;

/// Builds a state from one letter per dependency `d0, d1, ...`:
/// S done, F failed, T timed out, U skipped upstream_failed, B skipped
/// branch_not_taken, C skipped condition_false, E excluded at launch,
/// X excluded by a switch result, R running, P pending.
fn state_of(pattern: &str) -> SchedulerState {
    let mut st = SchedulerState::new();
    for (i, c) in pattern.chars().enumerate() {
        let id = format!("d{i}");
        match c {
            'S' => {
                st.done.insert(id);
            }
            'F' => {
                st.failed.insert(id);
            }
            'T' => {
                st.timed_out.insert(id);
            }
            'U' => {
                st.skipped.insert(id, SkipReason::UpstreamFailed);
            }
            'B' => {
                st.skipped.insert(id, SkipReason::BranchNotTaken);
            }
            'C' => {
                st.skipped.insert(id, SkipReason::ConditionFalse);
            }
            'E' => {
                st.excluded.insert(id);
            }
            'X' => {
                st.switch_results
                    .entry("sw".into())
                    .or_default()
                    .excluded
                    .insert(id);
            }
            'R' => {
                st.in_flight.insert(id);
            }
            'P' => {}
            other => panic!("bad test pattern letter {other}"),
        }
    }
    st
}

fn flow_of(pattern: &str, rule: TriggerRule) -> Flow {
    let deps: Vec<String> = (0..pattern.len()).map(|i| format!("d{i}")).collect();
    let mut steps: Vec<Step> = deps
        .iter()
        .map(|d| Step::new(d.clone(), StepKind::Code))
        .collect();
    steps.push(Step::new("t", StepKind::Code).deps(deps).trigger_rule(rule));
    Flow::new(steps)
}

const RUN: &str = "run";
const WAIT: &str = "wait";
const UF: &str = "upstream_failed";
const CF: &str = "condition_false";

#[rustfmt::skip]
const TABLE: &[(&str, &str, &str)] = &[
    // rule, dependency outcomes, expected decision
    ("all_success", "", RUN),
    ("all_success", "SS", RUN),
    ("all_success", "SB", RUN),
    ("all_success", "SC", RUN),
    ("all_success", "SE", RUN),
    ("all_success", "SX", RUN),
    ("all_success", "BBB", RUN),
    ("all_success", "SP", WAIT),
    ("all_success", "SR", WAIT),
    ("all_success", "SF", UF),
    ("all_success", "ST", UF),
    ("all_success", "SU", UF),
    ("all_success", "FP", UF),
    ("all_failed", "", RUN),
    ("all_failed", "FF", RUN),
    ("all_failed", "FT", RUN),
    ("all_failed", "FU", RUN),
    ("all_failed", "UU", RUN),
    ("all_failed", "FP", WAIT),
    ("all_failed", "FS", CF),
    ("all_failed", "FB", CF),
    ("all_failed", "PS", CF),
    ("all_done", "", RUN),
    ("all_done", "SFTUBCE", RUN),
    ("all_done", "UU", RUN),
    ("all_done", "SP", WAIT),
    ("all_done", "FR", WAIT),
    ("all_skipped", "", RUN),
    ("all_skipped", "BC", RUN),
    ("all_skipped", "BEX", RUN),
    ("all_skipped", "BP", WAIT),
    ("all_skipped", "BS", CF),
    ("all_skipped", "BF", CF),
    ("all_skipped", "BU", CF),
    ("all_skipped", "PT", CF),
    ("one_success", "", RUN),
    ("one_success", "SP", RUN),
    ("one_success", "PRS", RUN),
    ("one_success", "FS", RUN),
    ("one_success", "FP", WAIT),
    ("one_success", "PP", WAIT),
    ("one_success", "FF", UF),
    ("one_success", "FB", UF),
    ("one_success", "UB", UF),
    ("one_success", "TC", UF),
    ("one_success", "BB", CF),
    ("one_success", "BCE", CF),
    ("one_failed", "", RUN),
    ("one_failed", "FP", RUN),
    ("one_failed", "TP", RUN),
    ("one_failed", "UP", RUN),
    ("one_failed", "SP", WAIT),
    ("one_failed", "SS", CF),
    ("one_failed", "SB", CF),
    ("one_done", "", RUN),
    ("one_done", "SP", RUN),
    ("one_done", "FP", RUN),
    ("one_done", "TP", RUN),
    ("one_done", "UP", WAIT),
    ("one_done", "PP", WAIT),
    ("one_done", "BU", CF),
    ("one_done", "BB", CF),
    ("none_failed", "", RUN),
    ("none_failed", "SB", RUN),
    ("none_failed", "BB", RUN),
    ("none_failed", "SP", WAIT),
    ("none_failed", "SF", UF),
    ("none_failed", "SU", UF),
    ("none_failed", "TP", UF),
    ("none_failed_min_one_success", "", RUN),
    ("none_failed_min_one_success", "SB", RUN),
    ("none_failed_min_one_success", "SS", RUN),
    ("none_failed_min_one_success", "SP", WAIT),
    ("none_failed_min_one_success", "BP", WAIT),
    ("none_failed_min_one_success", "BB", CF),
    ("none_failed_min_one_success", "BF", UF),
    ("none_failed_min_one_success", "UB", UF),
    ("none_failed_min_one_success", "SPT", UF),
    ("none_skipped", "", RUN),
    ("none_skipped", "SF", RUN),
    ("none_skipped", "SU", RUN),
    ("none_skipped", "SP", WAIT),
    ("none_skipped", "SB", CF),
    ("none_skipped", "SE", CF),
    ("none_skipped", "PC", CF),
    ("always", "", RUN),
    ("always", "PP", RUN),
    ("always", "RR", RUN),
    ("always", "FU", RUN),
];

#[test]
fn every_rule_against_outcome_combinations() {
    for &(rule_name, pattern, expected) in TABLE {
        let rule = TriggerRule::from_str(rule_name).unwrap();
        let st = state_of(pattern);
        let flow = flow_of(pattern, rule);
        let deps: Vec<String> = (0..pattern.len()).map(|i| format!("d{i}")).collect();
        let case = format!("{rule_name} over {pattern:?}");

        let decision = coderig::flow::decide_trigger(rule, &dep_counts(&deps, &st));
        let decision_name = match decision {
            TriggerDecision::Run => RUN,
            TriggerDecision::Wait => WAIT,
            TriggerDecision::Skip(r) => r.as_str(),
        };
        assert_eq!(decision_name, expected, "decide_trigger: {case}");

        assert_eq!(
            evaluate_trigger_rule(&deps, &st, rule),
            expected == RUN,
            "evaluate_trigger_rule: {case}"
        );
        let ready = ready_steps(&flow, &st);
        assert_eq!(
            ready.contains(&"t".to_string()),
            expected == RUN,
            "ready_steps: {case}"
        );

        let skips = propagate_skips(&flow, &st);
        let t_skip = skips
            .iter()
            .find(|(id, _)| id == "t")
            .map(|(_, r)| r.as_str());
        let expected_skip = (expected == UF || expected == CF).then_some(expected);
        assert_eq!(t_skip, expected_skip, "propagate_skips: {case}");
    }
}

#[test]
fn the_table_covers_every_rule_with_and_without_dependencies() {
    for rule in TriggerRule::ALL {
        let rows: Vec<_> = TABLE.iter().filter(|r| r.0 == rule.as_str()).collect();
        assert!(
            rows.iter().any(|r| r.1.is_empty()),
            "{rule}: no row without dependencies"
        );
        assert!(
            rows.iter().any(|r| r.2 == RUN && !r.1.is_empty()),
            "{rule}: no running row"
        );
        if *rule != TriggerRule::Always && *rule != TriggerRule::AllDone {
            assert!(
                rows.iter().any(|r| r.2 == UF || r.2 == CF),
                "{rule}: no skip row"
            );
        }
    }
}

#[test]
fn upstream_failed_propagates_through_chains_like_airflow() {
    let flow = Flow::new(vec![
        Step::new("a", StepKind::Code),
        Step::new("b", StepKind::Code).deps(["a"]),
        Step::new("c", StepKind::Code).deps(["b"]),
        Step::new("cleanup", StepKind::Code)
            .deps(["c"])
            .trigger_rule(TriggerRule::AllDone),
        Step::new("report", StepKind::Code)
            .deps(["c"])
            .trigger_rule(TriggerRule::NoneFailed),
        Step::new("alert", StepKind::Code)
            .deps(["b"])
            .trigger_rule(TriggerRule::OneFailed),
        Step::new("either", StepKind::Code)
            .deps(["c", "cleanup"])
            .trigger_rule(TriggerRule::NoneFailedMinOneSuccess),
    ]);
    let mut st = SchedulerState::new();
    st.failed.insert("a".into());
    let skips = propagate_skips(&flow, &st);
    assert_eq!(
        skips,
        vec![
            ("b".to_string(), SkipReason::UpstreamFailed),
            ("c".to_string(), SkipReason::UpstreamFailed),
            ("report".to_string(), SkipReason::UpstreamFailed),
            ("either".to_string(), SkipReason::UpstreamFailed),
        ]
    );
    // Before the skips are recorded nothing downstream may run...
    assert!(ready_steps(&flow, &st).is_empty());
    // ...once recorded, the failure-tolerant rules run, and nothing is left to skip.
    for (id, r) in skips {
        st.skipped.insert(id, r);
    }
    assert_eq!(ready_steps(&flow, &st), vec!["cleanup", "alert"]);
    assert!(propagate_skips(&flow, &st).is_empty());
}

#[test]
fn a_deliberate_skip_does_not_cascade_through_all_success() {
    let flow = Flow::new(vec![
        Step::new("x", StepKind::Code),
        Step::new("y", StepKind::Code).deps(["x"]),
        Step::new("z", StepKind::Code)
            .deps(["y"])
            .trigger_rule(TriggerRule::NoneFailed),
    ]);
    for reason in [
        SkipReason::BranchNotTaken,
        SkipReason::ConditionFalse,
        SkipReason::Excluded,
    ] {
        let mut st = SchedulerState::new();
        st.skipped.insert("x".into(), reason);
        assert!(propagate_skips(&flow, &st).is_empty(), "{reason}");
        assert_eq!(ready_steps(&flow, &st), vec!["y"], "{reason}");
    }
}

#[test]
fn failed_and_timed_out_steps_are_never_offered_again() {
    let flow = Flow::new(vec![
        Step::new("a", StepKind::Code).trigger_rule(TriggerRule::Always),
        Step::new("b", StepKind::Code),
        Step::new("c", StepKind::Code),
    ]);
    let mut st = SchedulerState::new();
    st.failed.insert("a".into());
    st.timed_out.insert("b".into());
    assert_eq!(ready_steps(&flow, &st), vec!["c"]);
}

#[test]
fn ready_steps_come_in_flow_order_and_skip_started_steps() {
    let flow = Flow::new(vec![
        Step::new("z", StepKind::Code),
        Step::new("a", StepKind::Agent),
        Step::new("m", StepKind::Approval).deps(["z"]),
        Step::new("b", StepKind::Code),
    ]);
    let mut st = SchedulerState::new();
    assert_eq!(ready_steps(&flow, &st), vec!["z", "a", "b"]);
    st.in_flight.insert("a".into());
    st.done.insert("z".into());
    assert_eq!(ready_steps(&flow, &st), vec!["m", "b"]);
}

#[test]
fn duplicate_dependencies_count_once() {
    let mut st = SchedulerState::new();
    st.done.insert("a".into());
    let deps = vec!["a".to_string(), "a".to_string()];
    let c = dep_counts(&deps, &st);
    assert_eq!((c.total, c.success), (1, 1));
    assert!(evaluate_trigger_rule(&deps, &st, TriggerRule::AllSuccess));
}

#[test]
fn names_parse_and_bad_names_list_the_valid_ones() {
    for rule in TriggerRule::ALL {
        assert_eq!(TriggerRule::from_str(rule.as_str()).unwrap(), *rule);
        assert_eq!(
            serde_json::to_string(rule).unwrap(),
            format!("\"{}\"", rule.as_str())
        );
    }
    assert_eq!(TriggerRule::ALL.len(), 11);
    let err = TriggerRule::from_str("all_succes").unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("\"all_succes\""), "{msg}");
    for rule in TriggerRule::ALL {
        assert!(msg.contains(rule.as_str()), "{msg} lacks {rule}");
    }
    assert_eq!(StepKind::from_str("do_while").unwrap(), StepKind::DoWhile);
    assert!(StepKind::from_str("loop")
        .unwrap_err()
        .to_string()
        .contains("agent, code, approval, switch, do_while"));
    assert_eq!(
        SkipReason::from_str("upstream_failed").unwrap(),
        SkipReason::UpstreamFailed
    );
    assert!(!SkipReason::UpstreamFailed.is_deliberate());
    assert!(SkipReason::BranchNotTaken.is_deliberate());
}
