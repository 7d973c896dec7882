//! `Rig` and `Watch` on a real SQLite file: one front door, one follower.
//!
//! The end rule is tested here once for every face: a watch ends right
//! after the subject's final status event, with every step already final
//! in what it delivered; a watch opened after the end replays the same
//! stored events and ends at the same place; nothing is delivered twice.

use coderig::agent::Registry;
use coderig::bus::BusEvent;
use coderig::event::{Event, RunStatus};
use coderig::flow::engine::{code_fn, NewRun};
use coderig::flow::runspec::FlowSpec;
use coderig::flow::StepStatus;
use coderig::rig::{Rig, RigConfig, Subject};
use coderig::ErrorKind;
use serde_json::{json, Value};
use std::time::Duration;

async fn open(dir: &std::path::Path) -> Rig {
    let mut config = RigConfig::new(dir.join("data"));
    config.project_roots = vec![dir.to_path_buf()];
    config.agents = Registry::new();
    config.poll = Some(Duration::from_millis(50));
    Rig::open(config).await.expect("the rig opens")
}

/// A chain of `n` code steps, each sleeping `ms`.
fn chain(n: usize, ms: u64) -> NewRun {
    let steps: Vec<Value> = (0..n)
        .map(|i| {
            let deps: Vec<String> = (i > 0).then(|| format!("c{}", i - 1)).into_iter().collect();
            json!({"id": format!("c{i}"), "kind": "code", "deps": deps})
        })
        .collect();
    let spec = FlowSpec::from_json(&json!({ "steps": steps })).unwrap();
    let mut run = NewRun::spec(spec, json!({}));
    let step = code_fn(move |_| async move {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        Ok(Value::Null)
    });
    for i in 0..n {
        run = run.code(format!("c{i}"), step.clone());
    }
    run
}

/// Every stored event a watch delivers until its end, as (seq, type,
/// status) — the live `agent_output` left out.
async fn follow(rig: &Rig, subject: Subject) -> Vec<(u64, Event)> {
    let mut watch = rig.watch(subject);
    let mut seen = Vec::new();
    let limit = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let next = tokio::time::timeout_at(limit, watch.next())
            .await
            .expect("the watch ends within a minute")
            .expect("the watch reads");
        match next {
            Some(BusEvent::Stored(e)) => seen.push((e.seq, e.event)),
            Some(BusEvent::Live(_)) => {}
            None => break,
        }
    }
    assert!(watch.is_ended());
    seen
}

fn is_final_run(event: &Event) -> bool {
    matches!(event, Event::RunUpdated(u) if matches!(u.status,
        RunStatus::Completed | RunStatus::Failed | RunStatus::Cancelled))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_ends_at_the_runs_final_update_and_a_late_one_replays_the_same() {
    let tmp = tempfile::tempdir().unwrap();
    let rig = open(tmp.path()).await;
    let id = rig.engine().start_run(chain(5, 10)).await.unwrap();
    let live = follow(&rig, Subject::Run(id.clone())).await;

    // Seqs strictly increase (no duplicate, no reordering).
    assert!(live.windows(2).all(|w| w[0].0 < w[1].0), "{live:?}");
    // It ended right after the final run_updated, every step final by then.
    let (_, last) = live.last().expect("events");
    assert!(is_final_run(last), "the last event: {last:?}");
    assert_eq!(live.iter().filter(|(_, e)| is_final_run(e)).count(), 1);
    let view = rig.engine().run(&id).await.unwrap();
    assert_eq!(view.status, RunStatus::Completed);
    assert!(view.steps.iter().all(|s| s.status == StepStatus::Done));
    // Every event of the run belongs to it.
    assert!(live.iter().all(|(_, e)| e.run_id() == Some(id.as_str())));

    // Opened afterwards: the same stored events, the same end.
    let late = follow(&rig, Subject::Run(id.clone())).await;
    let seqs = |v: &[(u64, Event)]| v.iter().map(|(s, _)| *s).collect::<Vec<_>>();
    assert_eq!(seqs(&late), seqs(&live));

    // wait() is the same rule.
    let waited = rig
        .wait_run(&id, Some(Duration::from_secs(5)))
        .await
        .unwrap();
    assert_eq!(waited.status, RunStatus::Completed);
    rig.shutdown(Duration::from_secs(5)).await;
    rig.shutdown(Duration::from_secs(5)).await;
    assert!(rig.is_shut_down());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_of_a_cancelled_run_ends_with_every_step_final() {
    let tmp = tempfile::tempdir().unwrap();
    let rig = open(tmp.path()).await;
    let id = rig.engine().start_run(chain(4, 60_000)).await.unwrap();
    let mut watch = rig.watch(Subject::Run(id.clone()));
    // Until the first step runs.
    loop {
        match watch.next().await.unwrap() {
            Some(BusEvent::Stored(e)) if matches!(&e.event, Event::StepUpdated(s) if s.status == StepStatus::Running) => {
                break
            }
            Some(_) => {}
            None => panic!("the run ended before its first step ran"),
        }
    }
    let cancelled = rig.engine().cancel(&id).await.unwrap();
    assert_eq!(cancelled.status, RunStatus::Cancelled);
    // The first read after cancel returned: no step is left live.
    for step in &cancelled.steps {
        assert!(
            !matches!(
                step.status,
                StepStatus::Pending | StepStatus::Running | StepStatus::Waiting
            ),
            "step {} is {} after the cancel returned",
            step.id,
            step.status
        );
    }
    let mut rest = Vec::new();
    while let Some(event) = watch.next().await.unwrap() {
        if let BusEvent::Stored(e) = event {
            rest.push(e.event);
        }
    }
    assert!(is_final_run(rest.last().expect("the final update")));
    // Every step's cancellation was delivered before the run's.
    let cancelled_steps = rest
        .iter()
        .filter(|e| matches!(e, Event::StepUpdated(s) if s.status == StepStatus::Cancelled))
        .count();
    assert_eq!(cancelled_steps, 4, "{rest:?}");
    rig.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_of_an_unknown_subject_is_not_found_and_ends() {
    let tmp = tempfile::tempdir().unwrap();
    let rig = open(tmp.path()).await;
    let run = rig.engine().start_run(chain(1, 1)).await.unwrap();
    for subject in [
        Subject::Run("nope".into()),
        Subject::Battle("nope".into()),
        // A run's id is no battle.
        Subject::Battle(run.clone()),
    ] {
        let mut watch = rig.watch(subject.clone());
        let err = watch.next().await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotFoundId, "{subject:?}");
        assert!(watch.next().await.unwrap().is_none(), "{subject:?}");
    }
    let err = rig.wait_battle("nope", None).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFoundId);
    rig.shutdown(Duration::from_secs(5)).await;
}

/// A wait whose time runs out first is the one error every face raises
/// for it, and the run goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_that_times_out_says_so_and_leaves_the_run_going() {
    let tmp = tempfile::tempdir().unwrap();
    let rig = open(tmp.path()).await;
    let id = rig.engine().start_run(chain(1, 3_000)).await.unwrap();
    let err = rig
        .wait_run(&id, Some(Duration::from_millis(100)))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    let details = err.details();
    assert_eq!(details["reason"], "timeout");
    assert_eq!(details["run_id"], id.as_str());
    assert_eq!(details["status"], "running");
    assert_eq!(details["timeout_ms"], 100);
    assert!(
        err.message().contains("wait again or cancel it"),
        "{}",
        err.message()
    );
    assert_eq!(
        rig.engine().run(&id).await.unwrap().status,
        RunStatus::Running
    );
    rig.engine().cancel(&id).await.unwrap();
    rig.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rig_refuses_a_bad_project_root_and_leaves_nothing_running() {
    let tmp = tempfile::tempdir().unwrap();
    let mut config = RigConfig::new(tmp.path().join("data"));
    config.project_roots = vec![tmp.path().join("missing")];
    let err = Rig::open(config).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(err.details()["path"], "project_roots[0]");
    // Nothing was created either.
    assert!(!tmp.path().join("data").exists());
}

/// A rig that claims only its own work (the CLI's `run` and `battle run`)
/// beside another process's run on the same store: it drives its own run
/// to the end and never claims the other's, which the next rig that
/// claims any work then runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rig_of_its_own_work_leaves_another_processs_run_alone() {
    let tmp = tempfile::tempdir().unwrap();
    // Their run: started by a rig without workers (a server's handle).
    let mut config = RigConfig::new(tmp.path().join("data"));
    config.project_roots = vec![tmp.path().to_path_buf()];
    config.run_workers = false;
    let theirs_rig = Rig::open(config).await.unwrap();
    let spec = FlowSpec::from_json(&json!({"steps": [
        {"id": "a", "kind": "command", "argv": ["true"], "sandbox": {"mode": "off"}}
    ]}))
    .unwrap();
    let theirs = theirs_rig
        .engine()
        .start_run(NewRun::spec(spec, json!({})))
        .await
        .unwrap();

    let mut config = RigConfig::new(tmp.path().join("data"));
    config.project_roots = vec![tmp.path().to_path_buf()];
    config.poll = Some(Duration::from_millis(20));
    config.only_own_work = true;
    let mine_rig = Rig::open(config).await.unwrap();
    let mine = mine_rig.engine().start_run(chain(3, 10)).await.unwrap();
    let done = mine_rig
        .wait_run(&mine, Some(Duration::from_secs(60)))
        .await
        .unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    // Many polls later, their driver task was never claimed.
    let work = mine_rig.store().work(&theirs).await.unwrap();
    assert!(
        work.tasks.iter().all(|t| t.attempt == 0),
        "{:?}",
        work.tasks
    );
    mine_rig.shutdown(Duration::from_secs(5)).await;

    // A rig that runs any work finishes theirs.
    let any_rig = open(tmp.path()).await;
    let view = any_rig
        .wait_run(&theirs, Some(Duration::from_secs(60)))
        .await
        .unwrap();
    assert_eq!(view.status, RunStatus::Completed, "{view:?}");
    any_rig.shutdown(Duration::from_secs(5)).await;
    theirs_rig.shutdown(Duration::from_secs(5)).await;
}

/// A rig with a retention compacts the store when it opens: a finished run
/// older than it goes (its steps, tasks and events with it), with no call
/// of anyone's. A retention under a minute stops the open before anything
/// starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rig_with_a_retention_compacts_old_finished_runs_when_it_opens() {
    let tmp = tempfile::tempdir().unwrap();
    let rig = open(tmp.path()).await;
    let id = rig.engine().start_run(chain(2, 0)).await.unwrap();
    follow(&rig, Subject::Run(id.clone())).await;
    rig.shutdown(Duration::from_secs(5)).await;

    // Two hours pass, as far as the database's clock can tell.
    let db = tmp.path().join("data").join("coderig.db");
    let pool = sqlx::sqlite::SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(sqlx::sqlite::SqliteConnectOptions::new().filename(&db))
        .await
        .unwrap();
    for statement in [
        "UPDATE works SET updated_at = updated_at - 7200000",
        "UPDATE events SET created_at = created_at - 7200000",
    ] {
        sqlx::query(statement).execute(&pool).await.unwrap();
    }
    pool.close().await;

    let mut config = RigConfig::new(tmp.path().join("data"));
    config.project_roots = vec![tmp.path().to_path_buf()];
    config.retain = Some(Duration::from_secs(60));
    let tiny = RigConfig {
        retain: Some(Duration::from_secs(5)),
        ..config.clone()
    };
    let err = Rig::open(tiny).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert_eq!(err.details()["path"], "retain");

    config.retain = Some(Duration::from_secs(3600));
    let rig = Rig::open(config).await.unwrap();
    let limit = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        match rig.engine().run(&id).await {
            Err(e) if e.kind() == ErrorKind::NotFoundId => break,
            Ok(_) => {}
            Err(e) => panic!("{e}"),
        }
        assert!(
            tokio::time::Instant::now() < limit,
            "the run was not compacted"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    rig.shutdown(Duration::from_secs(5)).await;
}
