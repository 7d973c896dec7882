//! The incremental scheduler: events, typed errors, propagation, switches,
//! batches, do-while iterations and launch exclusions.

use coderig::flow::{
    is_run_complete, BatchConfig, Case, Flow, FlowError, Scheduler, SkipReason, Step, StepKind,
    StepOutcome, TriggerRule,
};
use serde_json::{json, Value};

fn ids(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn code(id: &str) -> Step {
    Step::new(id, StepKind::Code)
}

#[test]
fn a_chain_runs_to_completion() {
    let flow = Flow::new(vec![
        code("a"),
        code("b").deps(["a"]),
        code("c").deps(["a"]),
        code("d").deps(["b", "c"]),
    ]);
    let mut s = Scheduler::new(flow).unwrap();
    assert_eq!(s.start().unwrap(), ids(&["a"]));
    assert_eq!(s.complete("a").unwrap(), ids(&["b", "c"]));
    assert_eq!(s.complete("c").unwrap(), Vec::<String>::new());
    assert!(!s.is_complete());
    assert_eq!(s.complete("b").unwrap(), ids(&["d"]));
    assert_eq!(s.in_flight(), ids(&["d"]));
    assert_eq!(s.complete("d").unwrap(), Vec::<String>::new());
    assert!(s.is_complete());
    assert!(is_run_complete(s.flow(), &s.state()));
    assert!(s.take_skipped().is_empty());
}

#[test]
fn refused_events_are_typed_errors_and_change_nothing() {
    let flow = Flow::new(vec![
        code("a"),
        code("b").deps(["a"]),
        Step::new("sw", StepKind::Switch).cases(vec![Case::new("x", ["b"], |_: &Value| true)]),
    ]);
    let mut s = Scheduler::new(flow).unwrap();
    assert_eq!(s.complete("a"), Err(FlowError::NotStarted));
    s.start().unwrap();
    let before = s.state();
    assert_eq!(s.start(), Err(FlowError::AlreadyStarted));
    assert_eq!(s.complete("zz"), Err(FlowError::UnknownStep("zz".into())));
    assert_eq!(
        s.complete("b"),
        Err(FlowError::InvalidTransition {
            step: "b".into(),
            event: "complete",
            state: "pending"
        })
    );
    assert_eq!(
        s.complete("sw"),
        Err(FlowError::SwitchOutcomeRequired("sw".into()))
    );
    assert_eq!(
        s.complete_switch("a", None),
        Err(FlowError::NotASwitch("a".into()))
    );
    assert_eq!(
        s.complete_switch("sw", Some("y")),
        Err(FlowError::UnknownCase {
            step: "sw".into(),
            label: "y".into()
        })
    );
    assert_eq!(s.next_iteration("a"), Err(FlowError::NotALoop("a".into())));
    assert_eq!(s.state(), before);
    s.complete("a").unwrap();
    assert_eq!(
        s.fail("a"),
        Err(FlowError::InvalidTransition {
            step: "a".into(),
            event: "fail",
            state: "done"
        })
    );
    assert_eq!(
        s.skip("a").unwrap_err().to_string(),
        "cannot skip step \"a\": it is done"
    );

    let invalid = Scheduler::new(Flow::new(vec![code("a").deps(["nope"])])).unwrap_err();
    assert!(
        matches!(invalid, FlowError::Invalid(ref e) if e.len() == 1),
        "{invalid}"
    );
    assert!(invalid.to_string().contains("unknown step \"nope\""));
    assert_eq!(
        Scheduler::with_excluded(Flow::new(vec![code("a")]), ["b"]).unwrap_err(),
        FlowError::UnknownStep("b".into())
    );
}

#[test]
fn a_failure_propagates_upstream_failed_and_releases_cleanup() {
    let flow = Flow::new(vec![
        code("a"),
        code("b").deps(["a"]),
        code("c").deps(["b"]),
        code("cleanup")
            .deps(["c"])
            .trigger_rule(TriggerRule::AllDone),
        code("alert")
            .deps(["a"])
            .trigger_rule(TriggerRule::OneFailed),
    ]);
    let mut s = Scheduler::new(flow).unwrap();
    s.start().unwrap();
    assert_eq!(s.fail("a").unwrap(), ids(&["cleanup", "alert"]));
    assert_eq!(
        s.take_skipped(),
        vec![
            ("b".to_string(), SkipReason::UpstreamFailed),
            ("c".to_string(), SkipReason::UpstreamFailed)
        ]
    );
    assert_eq!(
        s.outcome("c").unwrap(),
        StepOutcome::Skipped(SkipReason::UpstreamFailed)
    );
    assert!(s.take_skipped().is_empty());
}

#[test]
fn a_timeout_counts_as_a_failure() {
    let flow = Flow::new(vec![
        code("a"),
        code("b").deps(["a"]),
        code("c").deps(["a"]).trigger_rule(TriggerRule::OneFailed),
    ]);
    let mut s = Scheduler::new(flow).unwrap();
    s.start().unwrap();
    assert_eq!(s.timeout("a").unwrap(), ids(&["c"]));
    assert_eq!(s.outcome("a").unwrap(), StepOutcome::TimedOut);
    assert_eq!(
        s.outcome("b").unwrap(),
        StepOutcome::Skipped(SkipReason::UpstreamFailed)
    );
}

fn switch_flow() -> Flow {
    Flow::new(vec![
        Step::new("router", StepKind::Switch)
            .cases(vec![
                Case::new("rust", ["r1"], |ctx: &Value| ctx["input"] == "rust"),
                Case::new("py", ["p1", "p2"], |ctx: &Value| ctx["input"] == "py"),
            ])
            .default_branch(["other"]),
        code("r1").deps(["router"]),
        code("p1").deps(["router"]),
        code("p2").deps(["p1"]),
        code("other").deps(["router"]),
        code("join").deps(["r1", "p2", "other"]),
    ])
}

#[test]
fn a_switch_excludes_untaken_branches_and_its_join_runs() {
    let mut s = Scheduler::new(switch_flow()).unwrap();
    assert_eq!(s.start().unwrap(), ids(&["router"]));
    assert_eq!(
        s.complete_switch("router", Some("py")).unwrap(),
        ids(&["p1"])
    );
    let mut skipped = s.take_skipped();
    skipped.sort();
    assert_eq!(
        skipped,
        vec![
            ("other".to_string(), SkipReason::BranchNotTaken),
            ("r1".to_string(), SkipReason::BranchNotTaken)
        ]
    );
    assert_eq!(s.complete("p1").unwrap(), ids(&["p2"]));
    assert_eq!(s.complete("p2").unwrap(), ids(&["join"]));
    let st = s.state();
    assert_eq!(st.switch_results["router"].chosen.as_deref(), Some("py"));
    assert_eq!(
        st.switch_results["router"].excluded,
        ["r1".to_string(), "other".to_string()].into()
    );

    // No case matches: the default branch runs.
    let mut s = Scheduler::new(switch_flow()).unwrap();
    s.start().unwrap();
    assert_eq!(
        s.complete_switch_with("router", &json!({"input": "go"}))
            .unwrap(),
        ids(&["other"])
    );
    assert_eq!(s.complete("other").unwrap(), ids(&["join"]));
}

#[test]
fn a_batch_cap_holds_steps_until_a_sibling_finishes() {
    let flow = Flow::new(vec![
        Step::new("a", StepKind::Agent).batch("models"),
        Step::new("b", StepKind::Agent).batch("models"),
        Step::new("c", StepKind::Agent).batch("models"),
        code("free"),
        code("join").deps(["a", "b", "c"]),
    ])
    .with_batch_config(BatchConfig {
        max_concurrent: Some(2),
        join_rule: TriggerRule::AllSuccess,
    });
    let mut s = Scheduler::new(flow).unwrap();
    assert_eq!(s.start().unwrap(), ids(&["a", "b", "free"]));
    assert_eq!(s.held(), ids(&["c"]));
    assert_eq!(s.outcome("c").unwrap(), StepOutcome::Pending);
    assert_eq!(s.complete("free").unwrap(), Vec::<String>::new());
    assert_eq!(s.fail("b").unwrap(), ids(&["c"]));
    assert!(s.held().is_empty());
    assert_eq!(
        s.take_skipped(),
        vec![("join".to_string(), SkipReason::UpstreamFailed)]
    );
}

#[test]
fn skipping_a_held_step_keeps_the_batch_count_right() {
    let flow = Flow::new(vec![
        Step::new("a", StepKind::Agent).batch("g"),
        Step::new("b", StepKind::Agent).batch("g"),
        Step::new("c", StepKind::Agent).batch("g"),
    ])
    .with_batch_config(BatchConfig {
        max_concurrent: Some(1),
        join_rule: TriggerRule::AllSuccess,
    });
    let mut s = Scheduler::new(flow).unwrap();
    assert_eq!(s.start().unwrap(), ids(&["a"]));
    assert_eq!(s.skip("b").unwrap(), Vec::<String>::new());
    assert_eq!(s.skip("a").unwrap(), ids(&["c"]));
    assert_eq!(s.complete("c").unwrap(), Vec::<String>::new());
    assert!(s.is_complete());
}

#[test]
fn a_do_while_runs_its_body_per_iteration_then_what_follows() {
    let flow = Flow::new(vec![
        Step::new("loop", StepKind::DoWhile)
            .loop_body(["draft", "review"])
            .loop_max_iterations(3),
        Step::new("draft", StepKind::Agent).deps(["loop"]),
        Step::new("review", StepKind::Agent).deps(["draft"]),
        code("after").deps(["loop"]),
    ]);
    let mut s = Scheduler::new(flow).unwrap();
    // Dispatching the loop opens it, so its body's first step is handed out in the same event.
    assert_eq!(s.start().unwrap(), ids(&["loop", "draft"]));
    assert_eq!(s.complete("draft").unwrap(), ids(&["review"]));
    assert_eq!(
        s.next_iteration("loop"),
        Err(FlowError::LoopBodyBusy {
            step: "loop".into(),
            body: "review".into()
        })
    );
    assert_eq!(s.complete("review").unwrap(), Vec::<String>::new());
    assert_eq!(s.next_iteration("loop").unwrap(), ids(&["draft"]));
    assert_eq!(s.loop_iterations("loop").unwrap(), 1);
    assert_eq!(s.outcome("review").unwrap(), StepOutcome::Pending);
    s.complete("draft").unwrap();
    s.complete("review").unwrap();
    assert_eq!(s.complete("loop").unwrap(), ids(&["after"]));
    assert_eq!(s.state().loop_iterations["loop"], 1);
}

#[test]
fn launch_exclusions_are_deliberate_skips() {
    let flow = Flow::new(vec![
        code("lint"),
        code("test"),
        code("report").deps(["lint", "test"]),
    ]);
    let mut s = Scheduler::with_excluded(flow, ["lint"]).unwrap();
    assert_eq!(s.start().unwrap(), ids(&["test"]));
    assert_eq!(
        s.take_skipped(),
        vec![("lint".to_string(), SkipReason::Excluded)]
    );
    assert_eq!(s.complete("test").unwrap(), ids(&["report"]));
    assert!(s.state().excluded.contains("lint"));
}

#[test]
fn always_runs_at_start_and_deliberate_skip_of_a_pending_step() {
    let flow = Flow::new(vec![
        code("a"),
        code("watch").deps(["a"]).trigger_rule(TriggerRule::Always),
        code("b").deps(["a"]),
        code("c").deps(["b"]),
    ]);
    let mut s = Scheduler::new(flow).unwrap();
    assert_eq!(s.start().unwrap(), ids(&["a", "watch"]));
    // A pending step skipped by the runtime (its own condition was false): its
    // dependents under all_success still run.
    assert_eq!(s.skip("b").unwrap(), ids(&["c"]));
    assert_eq!(
        s.take_skipped(),
        vec![("b".to_string(), SkipReason::ConditionFalse)]
    );
    assert_eq!(s.complete("a").unwrap(), Vec::<String>::new());
}

#[test]
fn flows_and_schedulers_can_cross_threads_for_the_bindings() {
    fn assert_send_sync<T: Send + Sync + Clone + std::fmt::Debug>() {}
    assert_send_sync::<Flow>();
    assert_send_sync::<Scheduler>();
    assert_send_sync::<coderig::flow::SchedulerState>();
    assert_send_sync::<FlowError>();
}

#[test]
fn a_failed_do_while_fails_its_pending_body() {
    let flow = Flow::new(vec![
        Step::new("loop", StepKind::DoWhile).loop_body(["draft", "review"]),
        Step::new("draft", StepKind::Agent).deps(["loop"]),
        Step::new("review", StepKind::Agent).deps(["draft"]),
        code("after")
            .deps(["loop"])
            .trigger_rule(TriggerRule::AllDone),
    ]);
    let mut s = Scheduler::new(flow).unwrap();
    assert_eq!(s.start().unwrap(), ids(&["loop", "draft"]));
    assert_eq!(s.fail("loop").unwrap(), ids(&["after"]));
    // draft is already running and keeps running; review can never start.
    assert_eq!(s.take_skipped(), vec![]);
    assert_eq!(s.fail("draft").unwrap(), Vec::<String>::new());
    assert_eq!(
        s.take_skipped(),
        vec![("review".to_string(), SkipReason::UpstreamFailed)]
    );
}

#[test]
fn skip_reason_is_some_exactly_for_skipped_outcomes() {
    let table = [
        (StepOutcome::Pending, None),
        (StepOutcome::InFlight, None),
        (StepOutcome::Done, None),
        (StepOutcome::Failed, None),
        (StepOutcome::TimedOut, None),
        (
            StepOutcome::Skipped(SkipReason::UpstreamFailed),
            Some(SkipReason::UpstreamFailed),
        ),
        (
            StepOutcome::Skipped(SkipReason::BranchNotTaken),
            Some(SkipReason::BranchNotTaken),
        ),
        (
            StepOutcome::Skipped(SkipReason::ConditionFalse),
            Some(SkipReason::ConditionFalse),
        ),
        (
            StepOutcome::Skipped(SkipReason::Excluded),
            Some(SkipReason::Excluded),
        ),
    ];
    for (outcome, reason) in table {
        assert_eq!(outcome.skip_reason(), reason, "{outcome:?}");
    }
}
