//! A flow with a switch: the untaken branch is skipped on purpose, and the
//! join after the switch still runs. The incremental scheduler tells the
//! harness what to start after every event.
//!
//! Run: `cargo run -p coderig --example flow_switch_join`

use coderig::flow::{Case, Flow, Scheduler, Step, StepKind};
use serde_json::json;

fn main() {
    let flow = Flow::new(vec![
        Step::new("plan", StepKind::Agent),
        Step::new("route", StepKind::Switch)
            .deps(["plan"])
            .cases(vec![
                Case::new("small", ["quick_fix"], |ctx| ctx["input"]["files"] == 1),
                Case::new("large", ["refactor", "review"], |_| true),
            ]),
        Step::new("quick_fix", StepKind::Agent).deps(["route"]),
        Step::new("refactor", StepKind::Agent).deps(["route"]),
        Step::new("review", StepKind::Agent).deps(["refactor"]),
        Step::new("test", StepKind::Code).deps(["quick_fix", "review"]),
    ]);
    let mut sch = Scheduler::new(flow).expect("a valid flow");
    let mut ready = sch.start().unwrap();
    println!("start: {ready:?}");
    assert_eq!(ready, ["plan"]);
    ready = sch.complete("plan").unwrap();
    println!("plan done: {ready:?}");
    // The switch decides on the run's input: one file → the small branch.
    let ctx = json!({"input": {"files": 1}, "results": {}});
    ready = sch.complete_switch_with("route", &ctx).unwrap();
    println!("route done: {ready:?}, skipped: {:?}", sch.take_skipped());
    assert_eq!(ready, ["quick_fix"]);
    ready = sch.complete("quick_fix").unwrap();
    println!("quick_fix done: {ready:?}");
    // `test` depends on the untaken `review` too; a deliberate skip satisfies
    // all_success, so the join runs.
    assert_eq!(ready, ["test"]);
    sch.complete("test").unwrap();
    assert!(sch.is_complete());
    println!("run complete");
}
