//! `Engine::wait` on a long run reads the run a bounded number of times,
//! not once per stored event: every read is the whole run (each step row
//! decoded), so a read per `step_updated` made waiting on an n-step run
//! O(n²) (benches/RESULTS-flow.md).
//!
//! The store is a real SQLite file behind `CountingStore`, a pass-through
//! that counts `Store::work` calls (the whole-run read); nothing is mocked.
//! No assertion on wall-clock durations. (A waiter that reads per event
//! reads back to back while the run lasts and stops at its end, so the
//! steps take a moment here for the difference to show: 391 reads for 400
//! step events before the fix, 4 after.)

use async_trait::async_trait;
use coderig::agent::Registry;
use coderig::bus::EventBus;
use coderig::event::RunStatus;
use coderig::flow::engine::{code_fn, Engine, EngineConfig, NewRun};
use coderig::flow::runspec::FlowSpec;
use coderig::flow::StepStatus;
use coderig::store::*;
use coderig::Error;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A real store that counts its whole-run reads.
struct CountingStore {
    inner: Arc<dyn Store>,
    works: AtomicUsize,
}

#[async_trait]
impl Store for CountingStore {
    fn backend(&self) -> &'static str {
        self.inner.backend()
    }
    fn epoch(&self) -> &str {
        self.inner.epoch()
    }
    async fn create_work(&self, work: NewWork) -> Result<EventRecord, Error> {
        self.inner.create_work(work).await
    }
    async fn enqueue(
        &self,
        tasks: Vec<TaskSpec>,
        event: Option<NewEvent>,
    ) -> Result<Vec<Task>, Error> {
        self.inner.enqueue(tasks, event).await
    }
    async fn add_owner(
        &self,
        work_id: &str,
        owner: NewOwner,
        tasks: Vec<TaskSpec>,
        event: Option<NewEvent>,
    ) -> Result<Option<EventRecord>, Error> {
        self.inner.add_owner(work_id, owner, tasks, event).await
    }
    async fn claim(&self, request: &ClaimRequest) -> Result<Vec<Claim>, Error> {
        self.inner.claim(request).await
    }
    async fn heartbeat(&self, fence: &Fence, ttl: Duration) -> Result<Millis, Error> {
        self.inner.heartbeat(fence, ttl).await
    }
    async fn record(&self, fence: &Fence, update: Update) -> Result<Option<EventRecord>, Error> {
        self.inner.record(fence, update).await
    }
    async fn record_changes(
        &self,
        fence: &Fence,
        changes: Changes,
    ) -> Result<Vec<EventRecord>, Error> {
        self.inner.record_changes(fence, changes).await
    }
    async fn finish_work(&self, work_id: &str, finish: Finish) -> Result<Finished, Error> {
        self.inner.finish_work(work_id, finish).await
    }
    async fn complete(&self, fence: &Fence, completion: Completion) -> Result<Task, Error> {
        self.inner.complete(fence, completion).await
    }
    async fn cancel(&self, task_id: &str, reason: &str, update: Update) -> Result<Task, Error> {
        self.inner.cancel(task_id, reason, update).await
    }
    async fn rescue_expired(&self, limit: u32) -> Result<Vec<Rescued>, Error> {
        self.inner.rescue_expired(limit).await
    }
    async fn transition(&self, transition: Transition) -> Result<Option<EventRecord>, Error> {
        self.inner.transition(transition).await
    }
    async fn task(&self, id: &str) -> Result<Task, Error> {
        self.inner.task(id).await
    }
    async fn work(&self, id: &str) -> Result<WorkSnapshot, Error> {
        self.works.fetch_add(1, Ordering::SeqCst);
        self.inner.work(id).await
    }
    async fn owner(&self, id: &str) -> Result<Owner, Error> {
        self.inner.owner(id).await
    }
    async fn list_works(&self, filter: &WorkFilter) -> Result<WorkPage, Error> {
        self.inner.list_works(filter).await
    }
    async fn events_after(&self, after: i64, limit: u32) -> Result<Vec<EventRecord>, Error> {
        self.inner.events_after(after, limit).await
    }
    async fn work_events(
        &self,
        work_id: &str,
        after: i64,
        limit: u32,
    ) -> Result<Vec<EventRecord>, Error> {
        self.inner.work_events(work_id, after, limit).await
    }
    async fn event_window(&self) -> Result<coderig::event::StoreWindow, Error> {
        self.inner.event_window().await
    }
    async fn lanes(&self) -> Result<Vec<LaneState>, Error> {
        self.inner.lanes().await
    }
    async fn set_lane_capacity(
        &self,
        lane: coderig::arena::Lane,
        capacity: Option<u32>,
    ) -> Result<(), Error> {
        self.inner.set_lane_capacity(lane, capacity).await
    }
    async fn compact(&self, retain: std::time::Duration) -> Result<Compacted, Error> {
        self.inner.compact(retain).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_on_a_200_step_run_reads_it_a_bounded_number_of_times() {
    const STEPS: usize = 200;
    let tmp = tempfile::tempdir().unwrap();
    let sqlite: Arc<dyn Store> = Arc::new(SqliteStore::open(tmp.path()).await.unwrap());
    let store = Arc::new(CountingStore {
        inner: sqlite,
        works: AtomicUsize::new(0),
    });
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
