//! Timers on the database clock: a store whose clock is an hour ahead of
//! this machine's (as a database server on another machine may be). The
//! driver persists every time on the store's clock — the clock its leases
//! already use — and fires its timers against that same clock, so a
//! timeout still takes its own length, and a driver that takes the run
//! over on a machine with another wall clock reads the same deadlines.

use super::*;
use pass_through::PassThrough;

const SKEW_MS: i64 = 3_600_000;

fn local_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadlines_backoff_and_step_times_are_on_the_stores_clock() {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let sqlite: Arc<dyn Store> = Arc::new(SqliteStore::open(&root.join("db")).await.unwrap());
    let store: Arc<dyn Store> = Arc::new(PassThrough::skewed(sqlite, SKEW_MS));
    let bus = EventBus::start(store.clone());
    let engine = Engine::start(
        store.clone(),
        Registry::new(),
        bus,
        EngineConfig::new(root.join("data")),
    )
    .await
    .unwrap();
    let yaml = r#"
steps:
  - id: hang
    kind: command
    argv: ["sleep", "30"]
    timeout: 500ms
    retry: {max_attempts: 2, initial: 300ms, multiplier: 1, on: [timeout]}
"#;
    let before = local_ms();
    let spec = FlowSpec::parse(yaml).unwrap();
    let id = engine
        .start_run(NewRun::spec(spec, json!({})))
        .await
        .unwrap();
    // A driver that mixed the clocks would wait an hour for a deadline
    // set on one and read on the other: WAIT fails it.
    let view = engine.wait(&id, Some(WAIT)).await.unwrap();
    assert_eq!(view.status, RunStatus::Failed, "{view:#?}");
    let s = step(&view, "hang");
    assert_eq!(outcomes(&view, "hang"), ["timed_out", "timed_out"]);
    let (first, second) = (&s.attempts[0], &s.attempts[1]);
    // Stored on the store's clock, not this machine's.
    assert!(
        first.started_at >= before + SKEW_MS - 1_000,
        "attempt 1 started at {} on a clock {} ms from the store's",
        first.started_at,
        first.started_at - (before + SKEW_MS)
    );
    // Each attempt ran its timeout against the same clock its deadline
    // was set on (a deadline set on one clock and read on the other fires
    // at once, or an hour late), and the retry waited its backoff (300 ms
    // ±10 %).
    for a in [first, second] {
        assert!(a.finished_at - a.started_at >= 500, "{a:?}");
    }
    assert!(second.started_at - first.finished_at >= 270, "{s:#?}");
    engine.shutdown(Duration::from_secs(10)).await;
}
