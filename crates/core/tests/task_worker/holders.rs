//! Every handler's holders learn why they were stopped (lease lost, shutdown, cancel), recorded by a handler that only records.

use super::*;

/// A handler that records why each of its tasks stopped.
struct Recorder {
    kinds: &'static [OwnerKind],
    lanes: &'static [Lane],
    tasks: TaskSet,
    stops: Mutex<Vec<(String, Option<StopReason>)>>,
}

#[async_trait::async_trait]
impl TaskHandler for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }
    fn owner_kinds(&self) -> &[OwnerKind] {
        self.kinds
    }
    fn lanes(&self) -> &[Lane] {
        self.lanes
    }
    fn max_concurrent(&self) -> u32 {
        8
    }
    fn tasks(&self) -> &TaskSet {
        &self.tasks
    }
    async fn run(&self, held: &Held) -> Result<(), Error> {
        held.cancel.cancelled().await;
        self.stops
            .lock()
            .unwrap()
            .push((held.claim.task.id.clone(), held.stopped()));
        Ok(())
    }
}

fn recorder(kinds: &'static [OwnerKind], lanes: &'static [Lane]) -> Arc<Recorder> {
    Arc::new(Recorder {
        kinds,
        lanes,
        tasks: TaskSet::new(),
        stops: Mutex::new(Vec::new()),
    })
}

// What a holder learns: a refused heartbeat is `LeaseLost`, a shutdown
// `Shutdown` — the same record whichever handler holds the task — and a
// handler's own cancel of a work no reason. Each handler claims only its
// owner kinds and lanes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn holders_of_every_handler_learn_why_they_were_stopped() {
    let h = common::sqlite().await;
    let store = h.store.clone();
    let bus = EventBus::start(store.clone());
    let battles = recorder(
        &[
            OwnerKind::Contestant,
            OwnerKind::Judge,
            OwnerKind::CrossExam,
        ],
        &[Lane::Local, Lane::Cloud],
    );
    let runs = recorder(&[OwnerKind::Step], &[Lane::Driver]);
    store
        .create_work(common::battle("b", 2, Lane::Cloud))
        .await
        .unwrap();
    store.create_work(common::run("r", 2)).await.unwrap();
    store
        .enqueue(
            vec![
                common::step_task("r-d0", "r-s0", Lane::Driver),
                common::step_task("r-d1", "r-s1", Lane::Driver),
            ],
            None,
        )
        .await
        .unwrap();
    let worker = TaskWorker::start(
        store.clone(),
        bus.clone(),
        WorkerConfig {
            name: "w".into(),
            lease_ttl: Duration::from_millis(300),
            poll: Duration::from_millis(20),
            scope: None,
        },
        vec![runs.clone(), battles.clone()],
    );
    until("every task is held", || {
        runs.tasks.len() == 2 && battles.tasks.len() == 2
    })
    .await;
    assert_eq!(worker.running(), 4);
    assert_eq!(runs.tasks.works(), ["r"]);
    assert_eq!(battles.tasks.works(), ["b"]);
    // One lease of each handler lost (cancelled in the store).
    for id in ["b-t0", "r-d0"] {
        store
            .cancel(id, "taken away", Default::default())
            .await
            .unwrap();
    }
    until("the lost ones stopped", || {
        runs.stops.lock().unwrap().len() == 1 && battles.stops.lock().unwrap().len() == 1
    })
    .await;
    // A battle's own cancel (a stop): no reason; then the store settles
    // the task (as `Arena::stop` does) so that nobody rescues it.
    battles.tasks.cancel_work("b");
    until("the cancelled one stopped", || {
        battles.stops.lock().unwrap().len() == 2
    })
    .await;
    store
        .cancel("b-t1", "the battle was stopped", Default::default())
        .await
        .unwrap();
    worker.shutdown(Duration::from_secs(5)).await;
    let mut all: Vec<(String, Option<StopReason>)> = runs.stops.lock().unwrap().clone();
    all.extend(battles.stops.lock().unwrap().iter().cloned());
    all.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        all,
        [
            ("b-t0".to_string(), Some(StopReason::LeaseLost)),
            ("b-t1".to_string(), None),
            ("r-d0".to_string(), Some(StopReason::LeaseLost)),
            ("r-d1".to_string(), Some(StopReason::Shutdown)),
        ]
    );
    assert!(runs.tasks.is_shut_down() && battles.tasks.is_shut_down());
    assert_eq!(worker.running(), 0);
    // The shut-down worker's leases are left: the tasks still run in the
    // store until their leases expire (then any worker rescues them).
    let t = store.task("r-d1").await.unwrap();
    assert_eq!(
        (t.state, t.worker.as_deref()),
        (TaskState::Running, Some("w"))
    );
    bus.shutdown();
    h.finish().await;
}
