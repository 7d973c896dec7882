//! Switch resolution, do-while termination, batches, launch guards,
//! completion/stuck detection and retry decisions.

use coderig::flow::{
    build_batch_state, is_batch_joined, is_loop_terminated, is_retriable, is_run_complete,
    is_stuck, manifest_steps, propagate_skips, ready_in_batch, ready_steps, resolve_switch,
    should_retry, BatchConfig, Case, FailureKind, Flow, SchedulerState, SkipReason, Step, StepKind,
    SwitchResult, TriggerRule,
};
use serde_json::{json, Value};
use std::collections::BTreeSet;

fn ids(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn router(cases: Vec<Case>, default: &[&str]) -> Step {
    Step::new("router", StepKind::Switch)
        .cases(cases)
        .default_branch(default.iter().copied())
}

fn lang_is(lang: &'static str) -> impl Fn(&Value) -> bool + Send + Sync + 'static {
    move |ctx: &Value| ctx["input"]["lang"] == lang
}

#[test]
fn switch_cases() {
    let cases = || {
        vec![
            Case::new("rust", ["r1", "r2"], lang_is("rust")),
            Case::new("py", ["p1"], lang_is("py")),
            Case::new("also_rust", ["a1"], lang_is("rust")),
        ]
    };
    let ctx = |lang: &str| json!({"input": {"lang": lang}, "results": {}});
    #[rustfmt::skip]
    let table: &[(Step, &str, Option<&str>, &[&str])] = &[
        // first matching case wins; other cases' steps and the default branch are excluded
        (router(cases(), &["d1"]), "rust", Some("rust"), &["p1", "a1", "d1"]),
        (router(cases(), &["d1"]), "py", Some("py"), &["r1", "r2", "a1", "d1"]),
        // no match: default runs, every case step excluded
        (router(cases(), &["d1"]), "go", None, &["r1", "r2", "p1", "a1"]),
        // no match and no default: every case step excluded
        (router(cases(), &[]), "go", None, &["r1", "r2", "p1", "a1"]),
        // no cases: nothing excluded
        (router(vec![], &["d1"]), "rust", None, &[]),
        // a case without a condition never matches
        (router(vec![Case { label: "bare".into(), steps: ids(&["b1"]), condition: None }], &[]), "x", None, &["b1"]),
    ];
    for (step, lang, chosen, excluded) in table {
        let got = resolve_switch(step, &ctx(lang));
        assert_eq!(
            got,
            (chosen.map(str::to_string), ids(excluded)),
            "lang {lang}"
        );
    }
}

#[test]
fn a_step_shared_by_the_taken_branch_is_not_excluded() {
    let step = router(
        vec![
            Case::new("a", ["shared", "a1"], |_: &Value| true),
            Case::new("b", ["shared", "b1"], |_: &Value| true),
        ],
        &["shared"],
    );
    assert_eq!(
        resolve_switch(&step, &json!({})),
        (Some("a".into()), ids(&["b1"]))
    );
}

#[test]
fn the_join_of_a_switch_runs_after_the_taken_branch() {
    let flow = Flow::new(vec![
        router(
            vec![
                Case::new("a", ["a1"], |_: &Value| true),
                Case::new("b", ["b1"], |_: &Value| false),
            ],
            &[],
        ),
        Step::new("a1", StepKind::Agent).deps(["router"]),
        Step::new("b1", StepKind::Agent).deps(["router"]),
        Step::new("join", StepKind::Code).deps(["a1", "b1"]),
    ]);
    let mut st = SchedulerState::new();
    st.done.insert("router".into());
    let (chosen, excluded) = resolve_switch(flow.step("router").unwrap(), &json!({}));
    st.switch_results.insert(
        "router".into(),
        SwitchResult {
            chosen,
            excluded: excluded.into_iter().collect(),
        },
    );
    assert_eq!(ready_steps(&flow, &st), ids(&["a1"]));
    assert_eq!(
        propagate_skips(&flow, &st),
        vec![("b1".to_string(), SkipReason::BranchNotTaken)]
    );
    st.done.insert("a1".into());
    assert_eq!(ready_steps(&flow, &st), ids(&["join"]));
}

#[test]
fn do_while_termination() {
    let looping = |cap: u32| {
        Step::new("loop", StepKind::DoWhile)
            .loop_body(["body"])
            .loop_condition(|ctx: &Value| ctx["results"]["body"]["again"] == true)
            .loop_max_iterations(cap)
    };
    let again = json!({"input": null, "results": {"body": {"again": true}}});
    let stop = json!({"input": null, "results": {"body": {"again": false}}});
    #[rustfmt::skip]
    let table: &[(Step, &Value, u32, bool)] = &[
        (looping(100), &again, 0, false), // the body always runs once
        (looping(100), &again, 1, false),
        (looping(100), &stop, 1, true), // condition false
        (looping(100), &again, 99, false),
        (looping(100), &again, 100, true), // cap reached
        (looping(3), &again, 3, true),
        (looping(0), &again, 0, true),
        (Step::new("loop", StepKind::DoWhile).loop_body(["body"]), &again, 1, true), // no condition: once
    ];
    for (step, ctx, iterations, expected) in table {
        assert_eq!(
            is_loop_terminated(step, ctx, *iterations),
            *expected,
            "{iterations} {ctx}"
        );
    }
    assert_eq!(Step::new("l", StepKind::DoWhile).loop_max_iterations, 100);
}

#[test]
fn a_running_do_while_lets_its_body_run_but_not_what_follows_it() {
    let flow = Flow::new(vec![
        Step::new("loop", StepKind::DoWhile).loop_body(["body"]),
        Step::new("body", StepKind::Agent).deps(["loop"]),
        Step::new("after", StepKind::Code).deps(["loop"]),
    ]);
    let mut st = SchedulerState::new();
    assert_eq!(ready_steps(&flow, &st), ids(&["loop"]));
    st.in_flight.insert("loop".into());
    assert_eq!(ready_steps(&flow, &st), ids(&["body"]));
    st.in_flight.remove("loop");
    st.done.insert("loop".into());
    st.done.insert("body".into());
    assert_eq!(ready_steps(&flow, &st), ids(&["after"]));
    // A failed loop fails its pending body (and what follows it).
    let mut st = SchedulerState::new();
    st.failed.insert("loop".into());
    assert_eq!(
        propagate_skips(&flow, &st),
        vec![
            ("body".to_string(), SkipReason::UpstreamFailed),
            ("after".to_string(), SkipReason::UpstreamFailed)
        ]
    );
}

fn batched_flow(cap: Option<usize>) -> Flow {
    Flow::new(vec![
        Step::new("a", StepKind::Agent).batch("models"),
        Step::new("b", StepKind::Agent).batch("models"),
        Step::new("c", StepKind::Agent).batch("models"),
        Step::new("d", StepKind::Code).batch("tools"),
        Step::new("e", StepKind::Code),
    ])
    .with_batch_config(BatchConfig {
        max_concurrent: cap,
        join_rule: TriggerRule::AllSuccess,
    })
}

/// cap, in flight, ready, admitted
type BatchRow = (
    Option<usize>,
    &'static [&'static str],
    &'static [&'static str],
    &'static [&'static str],
);

#[test]
fn batches_admit_at_most_the_free_slots() {
    #[rustfmt::skip]
    let table: &[BatchRow] = &[
        // cap, in flight, ready, admitted
        (Some(2), &[], &["a", "b", "c"], &["a", "b"]), // 0 running, cap 2, 3 ready -> 2
        (Some(2), &["a"], &["b", "c"], &["b"]),
        (Some(2), &["a", "b"], &["c"], &[]),
        (Some(1), &["d"], &["a", "e", "b"], &["a", "e"]), // groups are capped separately; unbatched pass
        (None, &["a"], &["b", "c"], &["b", "c"]),
        (Some(2), &[], &["c", "a", "b", "zz"], &["c", "a"]), // given order kept; unknown ids dropped
    ];
    for (cap, in_flight, ready, admitted) in table {
        let flow = batched_flow(*cap);
        let mut st = SchedulerState::new();
        st.in_flight = in_flight.iter().map(|s| s.to_string()).collect();
        assert_eq!(
            ready_in_batch(&flow, &st, &ids(ready)),
            ids(admitted),
            "cap {cap:?} running {in_flight:?}"
        );
    }
}

#[test]
fn batch_state_lists_every_group_with_its_running_members() {
    let flow = batched_flow(Some(2));
    let in_flight: BTreeSet<String> = ["a", "e"].iter().map(|s| s.to_string()).collect();
    let groups = build_batch_state(&flow, &in_flight);
    assert_eq!(
        groups.keys().cloned().collect::<Vec<_>>(),
        ids(&["models", "tools"])
    );
    assert_eq!(groups["models"].running, ["a".to_string()].into());
    assert!(groups["tools"].running.is_empty());
    assert_eq!(
        (groups["models"].max_concurrent, groups["models"].join_rule),
        (Some(2), TriggerRule::AllSuccess)
    );
}

#[test]
fn batch_join_rule_judges_the_group_as_a_whole() {
    let mut flow = batched_flow(Some(2));
    let mut st = SchedulerState::new();
    st.done.extend(ids(&["a", "b"]));
    st.failed.insert("c".into());
    assert_eq!(is_batch_joined(&flow, &st, "models"), Some(false));
    flow.batch_config.join_rule = TriggerRule::OneSuccess;
    assert_eq!(is_batch_joined(&flow, &st, "models"), Some(true));
    assert_eq!(is_batch_joined(&flow, &st, "nope"), None);
}

#[test]
fn launch_guards_exclude_steps_and_exclusion_satisfies_the_join() {
    let flow = Flow::new(vec![
        Step::new("lint", StepKind::Code).when(|ctx: &Value| ctx["input"]["lint"] == true),
        Step::new("test", StepKind::Code),
        Step::new("report", StepKind::Code).deps(["lint", "test"]),
    ]);
    let excluded = manifest_steps(&flow, &json!({"input": {"lint": false}}));
    assert_eq!(excluded, ["lint".to_string()].into());
    assert!(manifest_steps(&flow, &json!({"input": {"lint": true}})).is_empty());
    let mut st = SchedulerState {
        excluded,
        ..Default::default()
    };
    assert_eq!(ready_steps(&flow, &st), ids(&["test"]));
    assert_eq!(
        propagate_skips(&flow, &st),
        vec![("lint".to_string(), SkipReason::Excluded)]
    );
    st.done.insert("test".into());
    assert_eq!(ready_steps(&flow, &st), ids(&["report"]));
}

#[test]
fn completion_and_stuck_detection() {
    let flow = Flow::new(vec![
        Step::new("a", StepKind::Code),
        Step::new("b", StepKind::Code).deps(["a"]),
    ]);
    let mut st = SchedulerState::new();
    assert!(!is_run_complete(&flow, &st) && !is_stuck(&flow, &st)); // a is ready
    st.in_flight.insert("a".into());
    assert!(!is_stuck(&flow, &st)); // something runs
    st.in_flight.clear();
    st.failed.insert("a".into());
    assert!(!is_stuck(&flow, &st)); // b can still be skipped
    st.skipped.insert("b".into(), SkipReason::UpstreamFailed);
    assert!(is_run_complete(&flow, &st) && !is_stuck(&flow, &st));

    // A dependency on a step that does not exist can never settle.
    let broken = Flow::new(vec![Step::new("x", StepKind::Code).deps(["ghost"])]);
    assert!(is_stuck(&broken, &SchedulerState::new()));
}

#[test]
fn retry_decisions() {
    #[rustfmt::skip]
    let table: &[(u32, u32, bool)] = &[(0, 0, false), (1, 0, true), (1, 1, false), (3, 2, true), (3, 5, false)];
    for &(max, count, expected) in table {
        assert_eq!(should_retry(max, count), expected, "{count}/{max}");
    }
    #[rustfmt::skip]
    let kinds: &[(FailureKind, bool)] = &[
        (FailureKind::Timeout, true), (FailureKind::RateLimited, true), (FailureKind::Transient, true),
        (FailureKind::Crashed, true), (FailureKind::Validation, false), (FailureKind::Cancelled, false),
        (FailureKind::Permanent, false),
    ];
    assert_eq!(kinds.len(), FailureKind::ALL.len());
    for &(kind, expected) in kinds {
        assert_eq!(is_retriable(kind), expected, "{kind}");
    }
}

#[test]
fn flows_round_trip_through_json_without_their_conditions() {
    let flow = Flow::new(vec![
        router(vec![Case::new("a", ["x"], |_: &Value| true)], &["y"]),
        Step::new("x", StepKind::Agent)
            .deps(["router"])
            .max_retries(2)
            .timeout_secs(30)
            .batch("g"),
        Step::new("y", StepKind::Code)
            .deps(["router"])
            .trigger_rule(TriggerRule::NoneFailedMinOneSuccess),
    ]);
    let text = serde_json::to_string(&flow).unwrap();
    assert!(!text.contains("condition"), "{text}");
    let back: Flow = serde_json::from_str(&text).unwrap();
    assert_eq!(
        serde_json::to_value(&back).unwrap(),
        serde_json::to_value(&flow).unwrap()
    );
    assert!(back.steps[0].cases[0].condition.is_none());
    assert_eq!(
        back.steps[1].timeout_duration(),
        Some(std::time::Duration::from_secs(30))
    );

    let minimal: Flow =
        serde_json::from_str(r#"{"steps":[{"id":"a","kind":"do_while"}]}"#).unwrap();
    assert_eq!(minimal.steps[0].loop_max_iterations, 100);
    assert_eq!(minimal.steps[0].trigger_rule, TriggerRule::AllSuccess);
    let bad = serde_json::from_str::<Flow>(
        r#"{"steps":[{"id":"a","kind":"code","trigger_rule":"most"}]}"#,
    );
    assert!(bad.unwrap_err().to_string().contains("all_success"));
    assert!(format!("{:?}", flow.steps[0]).contains("Condition(<closure>)"));
}
