//! Flow spec validation: every problem reported at once, typed, with a stable code.

use coderig::flow::{
    validate, BatchConfig, Case, Flow, Step, StepKind, TriggerRule, ValidationError,
};
use serde_json::{json, Value};

fn codes(errors: &[ValidationError]) -> Vec<&'static str> {
    errors.iter().map(ValidationError::code).collect()
}

#[test]
fn a_valid_flow_has_no_errors() {
    let flow = Flow::new(vec![
        Step::new("router", StepKind::Switch)
            .cases(vec![Case::new("a", ["a1"], |_: &Value| true)])
            .default_branch(["d1"]),
        Step::new("a1", StepKind::Agent).deps(["router"]),
        Step::new("d1", StepKind::Agent).deps(["router"]),
        Step::new("loop", StepKind::DoWhile)
            .deps(["a1", "d1"])
            .trigger_rule(TriggerRule::OneSuccess)
            .loop_body(["body"]),
        Step::new("body", StepKind::Code).deps(["loop"]),
    ]);
    assert_eq!(validate(&flow), vec![]);
}

#[test]
fn each_kind_of_problem_is_reported() {
    #[rustfmt::skip]
    let table: Vec<(Flow, Vec<ValidationError>)> = vec![
        (Flow::new(vec![Step::new("a", StepKind::Code), Step::new("a", StepKind::Code)]),
         vec![ValidationError::DuplicateId { id: "a".into() }]),
        (Flow::new(vec![Step::new("", StepKind::Code)]),
         vec![ValidationError::EmptyId { index: 0 }]),
        (Flow::new(vec![Step::new("a", StepKind::Code).deps(["ghost", "ghost"])]),
         vec![ValidationError::UnknownDependency { step: "a".into(), dep: "ghost".into() }]),
        (Flow::new(vec![Step::new("a", StepKind::Code).deps(["a"])]),
         vec![ValidationError::Cycle { steps: vec!["a".into(), "a".into()] }]),
        (Flow::new(vec![
            Step::new("s", StepKind::Switch)
                .cases(vec![Case::new("x", ["nope"], |_: &Value| true), Case::new("x", Vec::<String>::new(), |_: &Value| true)])
                .default_branch(["nah"]),
         ]),
         vec![
            ValidationError::UnknownCaseStep { step: "s".into(), case: "x".into(), target: "nope".into() },
            ValidationError::DuplicateCaseLabel { step: "s".into(), label: "x".into() },
            ValidationError::UnknownDefaultBranchStep { step: "s".into(), target: "nah".into() },
         ]),
        (Flow::new(vec![Step::new("l", StepKind::DoWhile).loop_body(["gone"])]),
         vec![ValidationError::UnknownLoopBodyStep { step: "l".into(), target: "gone".into() }]),
        (Flow::new(vec![Step::new("c", StepKind::Code).default_branch(["c"])]),
         vec![ValidationError::CasesOnNonSwitch { step: "c".into() }]),
        (Flow::new(vec![Step::new("c", StepKind::Code).loop_condition(|_: &Value| true)]),
         vec![ValidationError::LoopOnNonDoWhile { step: "c".into() }]),
        (Flow::new(vec![Step::new("c", StepKind::Code).batch("g")])
            .with_batch_config(BatchConfig { max_concurrent: Some(0), join_rule: TriggerRule::AllSuccess }),
         vec![ValidationError::ZeroBatchCap]),
    ];
    for (flow, expected) in table {
        assert_eq!(validate(&flow), expected);
    }
}

#[test]
fn cycles_are_reported_as_paths_and_several_problems_at_once() {
    let flow = Flow::new(vec![
        Step::new("start", StepKind::Code),
        Step::new("a", StepKind::Code).deps(["start", "c"]),
        Step::new("b", StepKind::Code).deps(["a"]),
        Step::new("c", StepKind::Code).deps(["b", "missing"]),
        Step::new("tail", StepKind::Code).deps(["c"]),
        Step::new("x", StepKind::Code).deps(["y"]),
        Step::new("y", StepKind::Code).deps(["x"]),
    ]);
    let errors = validate(&flow);
    assert_eq!(codes(&errors), vec!["unknown_dependency", "cycle", "cycle"]);
    let ValidationError::Cycle { steps } = &errors[1] else {
        unreachable!()
    };
    // Each consecutive pair is an edge "next depends on previous", closing on itself.
    assert_eq!(steps.first(), steps.last());
    assert_eq!(steps.len(), 4);
    for pair in steps.windows(2) {
        assert!(
            flow.step(&pair[1]).unwrap().deps.contains(&pair[0]),
            "{steps:?}"
        );
    }
    let ValidationError::Cycle { steps } = &errors[2] else {
        unreachable!()
    };
    assert_eq!(steps.len(), 3);
}

#[test]
fn with_duplicate_ids_the_cycle_check_reads_the_first_step_as_the_rest_of_the_core() {
    // (steps, cycle expected): only the first "a" counts, as `Flow::step` says.
    #[rustfmt::skip]
    let table: Vec<(Vec<Step>, Option<Vec<&str>>)> = vec![
        // The first "a" closes a cycle with "b"; the second "a" would not.
        (vec![Step::new("a", StepKind::Code).deps(["b"]),
              Step::new("b", StepKind::Code).deps(["a"]),
              Step::new("a", StepKind::Code)],
         Some(vec!["b", "a", "b"])),
        // Only the second "a" would close a cycle with "b".
        (vec![Step::new("a", StepKind::Code),
              Step::new("b", StepKind::Code).deps(["a"]),
              Step::new("a", StepKind::Code).deps(["b"])],
         None),
        // A self-loop on the first "a" only.
        (vec![Step::new("a", StepKind::Code).deps(["a"]),
              Step::new("a", StepKind::Code)],
         Some(vec!["a", "a"])),
        (vec![Step::new("a", StepKind::Code),
              Step::new("a", StepKind::Code).deps(["a"])],
         None),
    ];
    for (steps, cycle) in table {
        let flow = Flow::new(steps);
        let first_a = flow.step("a").unwrap();
        assert!(
            std::ptr::eq(first_a, &flow.steps[0]),
            "Flow::step picks the first"
        );
        let mut expected = vec![ValidationError::DuplicateId { id: "a".into() }];
        if let Some(steps) = &cycle {
            expected.push(ValidationError::Cycle {
                steps: steps.iter().map(|s| s.to_string()).collect(),
            });
        }
        assert_eq!(validate(&flow), expected, "cycle expected: {cycle:?}");
    }
}

#[test]
fn errors_serialize_with_their_code_for_the_server() {
    let e = ValidationError::UnknownDependency {
        step: "a".into(),
        dep: "b".into(),
    };
    assert_eq!(
        serde_json::to_value(&e).unwrap(),
        json!({"code": "unknown_dependency", "step": "a", "dep": "b"})
    );
    assert_eq!(
        serde_json::to_value(ValidationError::ZeroBatchCap).unwrap(),
        json!({"code": "zero_batch_cap"})
    );
    assert_eq!(e.to_string(), "step \"a\" depends on unknown step \"b\"");
}
