//! Stopping a battle (every contestant settled in the cancelling transaction, the agents cancelled, a second stop a conflict) and bad specs refused before anything is created.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stop_settles_every_contestant_in_the_transaction_that_cancels_the_battle() {
    // Two hanging agents in the local lane (capacity 1: one runs, one is
    // queued) and one in the cloud lane.
    let toml = format!(
        "{}\n[agents.slowgpu]\nkind = \"scripted\"\nlane = \"local\"\n\
         scripts.hang = [ {{ text = \"thinking\" }}, {{ hang = true }} ]\n\
         scripts.hang2 = [ {{ text = \"thinking\" }}, {{ hang = true }} ]\n",
        agents_toml()
    );
    let w = world_with(&toml).await;
    let mut s = spec(
        &w.project,
        &["fixer/hang", "slowgpu/hang", "slowgpu/hang2"],
        "judge/j",
        false,
    );
    s.contestant_timeout = Duration::from_secs(120);
    let view = w.arena.start_battle(s).await.unwrap();
    let id = view.id.clone();
    for _ in 0..200 {
        let v = w.arena.battle(&id).await.unwrap();
        let running = v
            .contestants
            .iter()
            .filter(|c| c.status == ContestantStatus::Running)
            .count();
        if running == 2 && w.arena.running_tasks() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let before = w.arena.battle(&id).await.unwrap();
    let statuses = |v: &BattleView| {
        let mut s: Vec<_> = v.contestants.iter().map(|c| c.status).collect();
        s.sort_by_key(|s| s.as_str());
        s
    };
    assert_eq!(
        statuses(&before),
        [
            ContestantStatus::Queued,
            ContestantStatus::Running,
            ContestantStatus::Running
        ],
        "{before:#?}"
    );

    let stopped = w.arena.stop(&id).await.unwrap();
    // Terminal everywhere at once: the view stop returned and the first
    // read after it show no contestant queued or running, although the
    // agents may still be stopping.
    let read = w.arena.battle(&id).await.unwrap();
    for v in [&stopped, &read] {
        assert_eq!(v.status, BattleStatus::Cancelled);
        assert_eq!(statuses(v), [ContestantStatus::Cancelled; 3], "{v:#?}");
    }
    let snapshot = w.store.work(&id).await.unwrap();
    assert!(
        snapshot
            .tasks
            .iter()
            .all(|t| t.state == coderig::task::TaskState::Cancelled),
        "{:#?}",
        snapshot.tasks
    );
    // In the log: the contestants' cancellations, then the battle's — its
    // last event, also once every holder has stopped (their late writes
    // are refused, quietly).
    let ends_with_the_stop = |events: &[Value]| {
        let tail: Vec<_> = events[events.len() - 4..]
            .iter()
            .map(|e| (e["type"].clone(), e["status"].clone()))
            .collect();
        assert_eq!(
            tail,
            [
                (json!("contestant_updated"), json!("cancelled")),
                (json!("contestant_updated"), json!("cancelled")),
                (json!("contestant_updated"), json!("cancelled")),
                (json!("battle_updated"), json!("cancelled")),
            ],
            "{events:#?}"
        );
    };
    ends_with_the_stop(&stored_events(&w.store, &id).await);
    for _ in 0..200 {
        if w.arena.running_tasks() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(w.arena.running_tasks(), 0, "every agent stopped");
    ends_with_the_stop(&stored_events(&w.store, &id).await);
    let after = w.arena.battle(&id).await.unwrap();
    assert_eq!(statuses(&after), [ContestantStatus::Cancelled; 3]);
    w.arena.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stop_cancels_the_running_agents_and_stopping_again_is_a_conflict() {
    let w = world().await;
    let mut s = spec(&w.project, &["fixer/hang", "fixer/slow"], "judge/j", false);
    s.contestant_timeout = Duration::from_secs(120);
    let view = w.arena.start_battle(s).await.unwrap();
    for _ in 0..100 {
        if w.arena.running_tasks() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let stopped = w.arena.stop(&view.id).await.unwrap();
    assert_eq!(stopped.status, BattleStatus::Cancelled);
    for _ in 0..100 {
        if w.arena.running_tasks() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(w.arena.running_tasks(), 0, "every agent stopped");
    let view = w.arena.battle(&view.id).await.unwrap();
    assert!(
        view.contestants
            .iter()
            .all(|c| c.status == ContestantStatus::Cancelled),
        "{view:#?}"
    );
    let again = w.arena.stop(&view.id).await.unwrap_err();
    assert_eq!(again.kind(), ErrorKind::Conflict);
    // The worktrees are archived and removed once their agents stopped.
    for _ in 0..100 {
        if coderig_worktrees(&w.project).is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        coderig_worktrees(&w.project).is_empty(),
        "{:?}",
        coderig_worktrees(&w.project)
    );
    w.arena.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bad_specs_are_refused_and_create_nothing() {
    let w = world().await;
    let not_git = w.root.join("projects").join("plain");
    std::fs::create_dir_all(&not_git).unwrap();
    let outside = w.root.join("elsewhere");
    std::fs::create_dir_all(&outside).unwrap();
    git(&outside, &["init", "-q"]);
    let cases: Vec<(&str, Value)> = vec![
        (
            "unknown identity",
            json!({"contestants": [{"identity": "ghost", "model": "m"}, {"identity": "fixer", "model": "good"}]}),
        ),
        (
            "unknown judge",
            json!({"judge": {"identity": "ghost", "model": "m"}}),
        ),
        ("not git", json!({"project": not_git.display().to_string()})),
        (
            "outside the roots",
            json!({"project": outside.display().to_string()}),
        ),
        ("bad base", json!({"base": "no-such-branch"})),
    ];
    for (what, patch) in cases {
        let mut s = json!({
            "battle_type": "coding", "prompt": "p", "project": w.project.display().to_string(),
            "contestants": [{"identity": "fixer", "model": "good"}, {"identity": "fixer", "model": "wrong"}],
            "judge": {"identity": "judge", "model": "j"},
        });
        for (k, v) in patch.as_object().unwrap() {
            s[k] = v.clone();
        }
        let spec = BattleSpec::from_json(&s).expect(what);
        let err = w.arena.start_battle(spec).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{what}: {err}");
    }
    // 1, 7 and duplicate contestants are refused by the spec decoder.
    for contestants in [
        json!([{"identity": "fixer", "model": "good"}]),
        json!((0..7)
            .map(|i| json!({"identity": "fixer", "model": format!("m{i}")}))
            .collect::<Vec<_>>()),
        json!([{"identity": "fixer", "model": "good"}, {"identity": "fixer", "model": "good"}]),
    ] {
        let s = json!({"battle_type": "coding", "prompt": "p", "project": w.project.display().to_string(), "contestants": contestants, "judge": {"identity": "judge", "model": "j"}});
        assert_eq!(
            BattleSpec::from_json(&s).unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
    }
    let page = w
        .arena
        .list_battles(&BattleFilter::default())
        .await
        .unwrap();
    assert!(page.battles.is_empty(), "nothing half-created: {page:?}");
    assert!(w.store.events_after(0, 10).await.unwrap().is_empty());
    assert!(w.arena.battle("no-such-battle").await.unwrap_err().kind() == ErrorKind::NotFoundId);
    let _ = &w.data;
    w.arena.shutdown(Duration::from_secs(5)).await;
}
