//! `Scheduler::restore`: a scheduler rebuilt from a persisted state keeps
//! every recorded decision (switch choices, loop iterations, in-flight
//! steps, held batch members), applies only the skips the state implies,
//! and refuses contradictory states with typed errors.

use coderig::flow::{
    BatchConfig, Case, Flow, FlowError, Scheduler, SchedulerState, SkipReason, Step, StepKind,
    StepOutcome, SwitchResult, TriggerRule,
};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

fn ids(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn set(v: &[&str]) -> BTreeSet<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn code(id: &str) -> Step {
    Step::new(id, StepKind::Code)
}

const NONE: Vec<String> = Vec::new();

/// A router whose `rust` case matches when `rust_matches` says so, whatever the context.
fn switch_flow(rust_matches: bool) -> Flow {
    Flow::new(vec![
        Step::new("router", StepKind::Switch)
            .cases(vec![
                Case::new("rust", ["r1"], move |_: &Value| rust_matches),
                Case::new("py", ["p1", "p2"], |_: &Value| false),
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
fn a_persisted_switch_choice_is_not_re_evaluated() {
    let mut original = Scheduler::new(switch_flow(false)).unwrap();
    original.start().unwrap();
    assert_eq!(
        original.complete_switch("router", Some("py")).unwrap(),
        ids(&["p1"])
    );
    original.take_skipped();
    let persisted = original.state();

    // The conditions would now choose `rust`; the recorded `py` still holds.
    let (mut restored, ready) = Scheduler::restore(switch_flow(true), &persisted).unwrap();
    assert_eq!(ready, NONE);
    assert!(restored.take_skipped().is_empty());
    assert_eq!(restored.state(), persisted);
    assert_eq!(
        restored.outcome("r1").unwrap(),
        StepOutcome::Skipped(SkipReason::BranchNotTaken)
    );
    assert_eq!(restored.in_flight(), ids(&["p1"]));
    assert_eq!(restored.complete("p1").unwrap(), ids(&["p2"]));
    assert_eq!(restored.complete("p2").unwrap(), ids(&["join"]));
    assert_eq!(
        restored.state().switch_results["router"].chosen.as_deref(),
        Some("py")
    );

    // Only the choice persisted (no skips, no exclusion set, p1 not yet
    // recorded as started): the exclusions follow from the choice, the
    // untaken branches are skipped as news, and p1 is handed out again.
    let state = SchedulerState {
        done: set(&["router"]),
        switch_results: BTreeMap::from([(
            "router".to_string(),
            SwitchResult {
                chosen: Some("py".into()),
                excluded: BTreeSet::new(),
            },
        )]),
        ..Default::default()
    };
    let (mut restored, ready) = Scheduler::restore(switch_flow(true), &state).unwrap();
    assert_eq!(ready, ids(&["p1"]));
    let mut skipped = restored.take_skipped();
    skipped.sort();
    assert_eq!(
        skipped,
        vec![
            ("other".to_string(), SkipReason::BranchNotTaken),
            ("r1".to_string(), SkipReason::BranchNotTaken),
        ]
    );
    assert_eq!(restored.state(), persisted);
}

fn loop_flow() -> Flow {
    Flow::new(vec![
        Step::new("loop", StepKind::DoWhile)
            .loop_body(["draft", "review"])
            .loop_max_iterations(10),
        Step::new("draft", StepKind::Agent).deps(["loop"]),
        Step::new("review", StepKind::Agent).deps(["draft"]),
        code("after").deps(["loop"]),
    ])
}

#[test]
fn a_loop_at_iteration_three_with_its_body_half_done_continues_at_three() {
    let state = SchedulerState {
        in_flight: set(&["loop", "review"]),
        done: set(&["draft"]),
        loop_iterations: BTreeMap::from([("loop".to_string(), 3)]),
        ..Default::default()
    };
    let (mut s, ready) = Scheduler::restore(loop_flow(), &state).unwrap();
    assert_eq!(ready, NONE);
    assert_eq!(s.state(), state);
    assert_eq!(s.loop_iterations("loop").unwrap(), 3);
    assert_eq!(
        s.next_iteration("loop"),
        Err(FlowError::LoopBodyBusy {
            step: "loop".into(),
            body: "review".into()
        })
    );
    assert_eq!(s.complete("review").unwrap(), NONE);
    assert_eq!(s.next_iteration("loop").unwrap(), ids(&["draft"]));
    assert_eq!(s.loop_iterations("loop").unwrap(), 4);
    s.complete("draft").unwrap();
    s.complete("review").unwrap();
    assert_eq!(s.complete("loop").unwrap(), ids(&["after"]));
    assert_eq!(s.state().loop_iterations["loop"], 4);

    // A crash after draft finished, before review's dispatch was persisted:
    // review is handed out by restore, still inside iteration 3.
    let state = SchedulerState {
        in_flight: set(&["loop"]),
        done: set(&["draft"]),
        loop_iterations: BTreeMap::from([("loop".to_string(), 3)]),
        ..Default::default()
    };
    let (s, ready) = Scheduler::restore(loop_flow(), &state).unwrap();
    assert_eq!(ready, ids(&["review"]));
    assert_eq!(s.in_flight(), ids(&["loop", "review"]));
    assert_eq!(s.loop_iterations("loop").unwrap(), 3);
}

#[test]
fn an_approval_step_in_flight_stays_in_flight() {
    let flow = Flow::new(vec![
        code("build"),
        Step::new("ship", StepKind::Approval).deps(["build"]),
        code("deploy").deps(["ship"]),
    ]);
    let state = SchedulerState {
        done: set(&["build"]),
        in_flight: set(&["ship"]),
        ..Default::default()
    };
    let (mut s, ready) = Scheduler::restore(flow, &state).unwrap();
    assert_eq!(ready, NONE);
    assert_eq!(s.in_flight(), ids(&["ship"]));
    assert_eq!(s.outcome("ship").unwrap(), StepOutcome::InFlight);
    assert!(!s.is_complete());
    assert_eq!(s.complete("ship").unwrap(), ids(&["deploy"]));
    assert_eq!(s.complete("deploy").unwrap(), NONE);
    assert!(s.is_complete());
}

#[test]
fn held_batch_members_are_held_again_and_handed_out_as_slots_free() {
    let flow = Flow::new(vec![
        Step::new("a", StepKind::Agent).batch("models"),
        Step::new("b", StepKind::Agent).batch("models"),
        Step::new("c", StepKind::Agent).batch("models"),
        Step::new("d", StepKind::Agent).batch("models"),
        code("join").deps(["a", "b", "c", "d"]),
    ])
    .with_batch_config(BatchConfig {
        max_concurrent: Some(2),
        join_rule: TriggerRule::AllSuccess,
    });
    let mut original = Scheduler::new(flow.clone()).unwrap();
    assert_eq!(original.start().unwrap(), ids(&["a", "b"]));
    let (mut restored, ready) = Scheduler::restore(flow.clone(), &original.state()).unwrap();
    assert_eq!(ready, NONE);
    assert_eq!(restored.held(), ids(&["c", "d"]));
    assert_eq!(restored.complete("b").unwrap(), ids(&["c"]));
    assert_eq!(restored.held(), ids(&["d"]));
    assert_eq!(restored.complete("a").unwrap(), ids(&["d"]));

    // Neither a nor b persisted as started: restore hands out a cap's worth, in flow order.
    let (restored, ready) = Scheduler::restore(flow, &SchedulerState::default()).unwrap();
    assert_eq!(ready, ids(&["a", "b"]));
    assert_eq!(restored.held(), ids(&["c", "d"]));
}

#[test]
fn implied_skips_are_applied_and_reported_once() {
    let flow = Flow::new(vec![
        code("a"),
        code("b").deps(["a"]),
        code("c").deps(["b"]),
        code("cleanup")
            .deps(["c"])
            .trigger_rule(TriggerRule::AllDone),
        code("guarded"),
    ]);
    // `a` failed, nothing after it recorded; `guarded` was excluded at launch.
    let state = SchedulerState {
        failed: set(&["a"]),
        excluded: set(&["guarded"]),
        ..Default::default()
    };
    let (mut s, ready) = Scheduler::restore(flow, &state).unwrap();
    assert_eq!(ready, ids(&["cleanup"]));
    let mut skipped = s.take_skipped();
    skipped.sort();
    assert_eq!(
        skipped,
        vec![
            ("b".to_string(), SkipReason::UpstreamFailed),
            ("c".to_string(), SkipReason::UpstreamFailed),
            ("guarded".to_string(), SkipReason::Excluded),
        ]
    );
    assert!(s.take_skipped().is_empty());
    let st = s.state();
    assert_eq!(st.excluded, set(&["guarded"]));
    assert_eq!(st.skipped["guarded"], SkipReason::Excluded);
}

#[test]
fn a_restored_scheduler_is_started() {
    let (mut s, ready) =
        Scheduler::restore(Flow::new(vec![code("a")]), &SchedulerState::default()).unwrap();
    assert_eq!(ready, ids(&["a"]));
    assert_eq!(s.start(), Err(FlowError::AlreadyStarted));
    assert_eq!(s.complete("a").unwrap(), NONE);
    assert!(s.is_complete());
}

fn restore_err(flow: Flow, state: SchedulerState) -> FlowError {
    Scheduler::restore(flow, &state).unwrap_err()
}

#[test]
fn contradictory_states_are_refused_with_typed_errors() {
    let chain = || Flow::new(vec![code("a"), code("b").deps(["a"])]);

    assert!(matches!(
        restore_err(
            Flow::new(vec![code("a").deps(["zz"])]),
            SchedulerState::default()
        ),
        FlowError::Invalid(_)
    ));
    for state in [
        SchedulerState {
            done: set(&["zz"]),
            ..Default::default()
        },
        SchedulerState {
            in_flight: set(&["zz"]),
            ..Default::default()
        },
        SchedulerState {
            skipped: BTreeMap::from([("zz".to_string(), SkipReason::ConditionFalse)]),
            ..Default::default()
        },
        SchedulerState {
            excluded: set(&["zz"]),
            ..Default::default()
        },
        SchedulerState {
            loop_iterations: BTreeMap::from([("zz".to_string(), 1)]),
            ..Default::default()
        },
        SchedulerState {
            switch_results: BTreeMap::from([("zz".to_string(), SwitchResult::default())]),
            ..Default::default()
        },
    ] {
        assert_eq!(
            restore_err(chain(), state),
            FlowError::UnknownStep("zz".into())
        );
    }

    assert_eq!(
        restore_err(
            chain(),
            SchedulerState {
                done: set(&["a"]),
                in_flight: set(&["a"]),
                ..Default::default()
            }
        ),
        FlowError::StepInTwoBuckets {
            step: "a".into(),
            first: "done",
            second: "in_flight"
        }
    );
    assert_eq!(
        restore_err(
            chain(),
            SchedulerState {
                failed: set(&["b"]),
                skipped: BTreeMap::from([("b".to_string(), SkipReason::UpstreamFailed)]),
                ..Default::default()
            }
        ),
        FlowError::StepInTwoBuckets {
            step: "b".into(),
            first: "failed",
            second: "skipped"
        }
    );
    assert_eq!(
        restore_err(
            chain(),
            SchedulerState {
                done: set(&["a"]),
                excluded: set(&["a"]),
                ..Default::default()
            }
        ),
        FlowError::StepInTwoBuckets {
            step: "a".into(),
            first: "done",
            second: "excluded"
        }
    );

    let switch_state = |chosen: Option<&str>, excluded: &[&str], done: &[&str]| SchedulerState {
        done: set(done),
        switch_results: BTreeMap::from([(
            "router".to_string(),
            SwitchResult {
                chosen: chosen.map(str::to_string),
                excluded: set(excluded),
            },
        )]),
        ..Default::default()
    };
    assert_eq!(
        restore_err(
            switch_flow(false),
            switch_state(Some("go"), &[], &["router"])
        ),
        FlowError::UnknownCase {
            step: "router".into(),
            label: "go".into()
        }
    );
    assert_eq!(
        restore_err(
            switch_flow(false),
            switch_state(Some("py"), &["r1", "nope"], &["router"])
        ),
        FlowError::UnknownStep("nope".into())
    );
    assert_eq!(
        restore_err(
            switch_flow(false),
            switch_state(Some("py"), &["r1"], &["router"])
        ),
        FlowError::SwitchExclusionsMismatch {
            step: "router".into()
        }
    );
    assert_eq!(
        restore_err(switch_flow(false), switch_state(Some("py"), &[], &[])),
        FlowError::SwitchResultNotDone {
            step: "router".into(),
            state: "pending"
        }
    );
    let mut on_code = switch_state(None, &[], &["router", "r1"]);
    on_code.switch_results = BTreeMap::from([("r1".to_string(), SwitchResult::default())]);
    assert_eq!(
        restore_err(switch_flow(false), on_code),
        FlowError::NotASwitch("r1".into())
    );

    assert_eq!(
        restore_err(
            loop_flow(),
            SchedulerState {
                loop_iterations: BTreeMap::from([("draft".to_string(), 2)]),
                ..Default::default()
            }
        ),
        FlowError::NotALoop("draft".into())
    );
    assert_eq!(
        restore_err(
            loop_flow(),
            SchedulerState {
                in_flight: set(&["draft"]),
                ..Default::default()
            }
        ),
        FlowError::LoopBodyOutsideLoop {
            step: "loop".into(),
            body: "draft".into()
        }
    );
    // A body step that an `always` rule started before its loop did is a
    // state the scheduler itself reaches: restored as it is.
    let eager = Flow::new(vec![
        code("gate"),
        Step::new("loop", StepKind::DoWhile)
            .deps(["gate"])
            .loop_body(["draft"]),
        code("draft")
            .deps(["loop"])
            .trigger_rule(TriggerRule::Always),
    ]);
    let mut original = Scheduler::new(eager.clone()).unwrap();
    assert_eq!(original.start().unwrap(), ids(&["gate", "draft"]));
    let (s, ready) = Scheduler::restore(eager, &original.state()).unwrap();
    assert_eq!(ready, NONE);
    assert_eq!(s.in_flight(), ids(&["gate", "draft"]));
    // So is a loop that ended (or failed) while its body still ran.
    for state in [
        SchedulerState {
            done: set(&["loop"]),
            in_flight: set(&["draft"]),
            ..Default::default()
        },
        SchedulerState {
            failed: set(&["loop"]),
            in_flight: set(&["draft"]),
            ..Default::default()
        },
    ] {
        let (s, _) = Scheduler::restore(loop_flow(), &state).unwrap();
        assert_eq!(s.in_flight().first().map(String::as_str), Some("draft"));
    }
}
