//! `Engine::wait` on a long run reads the run a bounded number of times,
//! not once per stored event: every read is the whole run (each step row
//! decoded), so a read per `step_updated` made waiting on an n-step run
//! O(n²) (benches/RESULTS-flow.md).
//!
//! The store is a real SQLite file behind `PassThrough`
//! (`common/pass_through.rs`), which counts `Store::work` calls (the whole-run read); nothing is mocked.
//! No assertion on wall-clock durations. (A waiter that reads per event
//! reads back to back while the run lasts and stops at its end, so the
//! steps take a moment here for the difference to show: 391 reads for 400
//! step events before the fix, 4 after.)

#[path = "common/pass_through.rs"]
mod pass_through;

use coderig::agent::Registry;
use coderig::bus::EventBus;
use coderig::event::RunStatus;
use coderig::flow::engine::{code_fn, Engine, EngineConfig, NewRun};
use coderig::flow::runspec::FlowSpec;
use coderig::flow::StepStatus;
use coderig::store::*;
use pass_through::PassThrough;
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_on_a_200_step_run_reads_it_a_bounded_number_of_times() {
    const STEPS: usize = 200;
    let tmp = tempfile::tempdir().unwrap();
    let sqlite: Arc<dyn Store> = Arc::new(SqliteStore::open(tmp.path()).await.unwrap());
    let store = Arc::new(PassThrough::new(sqlite));
    let bus = EventBus::start(store.clone());
    let engine = Engine::start(
        store.clone(),
        Registry::new(),
        bus,
        EngineConfig::new(tmp.path().join("data")),
    )
    .await
    .unwrap();
    // A chain: every step is started by its predecessor's ending, so the
    // run emits two step_updated per step, one after another.
    let steps: Vec<Value> = (0..STEPS)
        .map(|i| {
            let deps: Vec<String> = (i > 0).then(|| format!("c{}", i - 1)).into_iter().collect();
            json!({"id": format!("c{i}"), "kind": "code", "deps": deps})
        })
        .collect();
    let spec = FlowSpec::from_json(&json!({"steps": steps})).unwrap();
    let mut run = NewRun::spec(spec, json!({}));
    // Each step takes a moment, so the run lasts long enough for a waiter
    // that reads per event to do so (a read of 200 rows is far quicker).
    let noop = code_fn(|_| async {
        tokio::time::sleep(Duration::from_millis(5)).await;
        Ok(Value::Null)
    });
    for i in 0..STEPS {
        run = run.code(format!("c{i}"), noop.clone());
    }
    let id = engine.start_run(run).await.unwrap();
    let view = engine
        .wait(&id, Some(Duration::from_secs(120)))
        .await
        .unwrap();
    assert_eq!(view.status, RunStatus::Completed, "{:?}", view.error);
    assert_eq!(view.steps.len(), STEPS);
    assert!(view.steps.iter().all(|s| s.status == StepStatus::Done));
    let events = store.events_after(0, 10_000).await.unwrap();
    let step_events = events
        .iter()
        .filter(|e| e.kind == EventType::StepUpdated && e.work_id == id)
        .count();
    assert!(step_events >= 2 * STEPS, "{step_events} step_updated");
    // The driver reads the run when it starts and when it ends; wait reads
    // it first, on its run_updated and every 10 s. A read per event would
    // be 400 or more.
    let reads = store.works.load(Ordering::SeqCst);
    assert!(
        reads < 40,
        "{reads} whole-run reads for {step_events} step events"
    );
    engine.shutdown(Duration::from_secs(10)).await;
}
