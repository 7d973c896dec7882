//! The conformance tests of the store's additions for the arena runner:
//! judge and cross-examination owners, `add_owner`, `owner`, claims by
//! owner kind, `list_works`, and migration 0002 keeping the data of a store
//! created by 0001. Run on both backends by `on_both_stores!` (their names are
//! listed there).

use crate::common::*;
use coderig::arena::Lane;
use coderig::store::*;
use coderig::task::TaskState;
use coderig::ErrorKind;
use serde_json::json;
use std::collections::HashSet;
use std::time::Duration;

const TTL: Duration = Duration::from_secs(30);

fn owner(id: &str, kind: OwnerKind) -> NewOwner {
    NewOwner {
        id: id.into(),
        kind,
        status: "pending".into(),
        data: json!({"of": id}),
    }
}

fn task_of(id: &str, owner: &NewOwner, lane: Lane) -> TaskSpec {
    TaskSpec::new(
        id,
        OwnerRef {
            kind: owner.kind,
            id: owner.id.clone(),
        },
        lane,
    )
}

/// A battle `id` with `n` contestants and its judge `<id>-judge`, whose one
/// task `<id>-judge-t` is queued with the contestants' tasks.
fn judged_battle(id: &str, n: usize, lane: Lane) -> NewWork {
    let mut work = battle(id, n, lane);
    let judge = owner(&format!("{id}-judge"), OwnerKind::Judge);
    work.tasks
        .push(task_of(&format!("{id}-judge-t"), &judge, lane));
    work.owners.push(judge);
    work
}

fn cross_exam_event(battle: &str, id: &str) -> NewEvent {
    NewEvent::new(
        EventType::BattleUpdated,
        json!({"battle_id": battle, "cross_exam_id": id, "status": "pending"}),
    )
}

// The two new kinds belong to battles, on both backends: stored, read back
// (`owner`), refused under a run.
pub async fn judge_and_cross_exam_owners_belong_to_battles(h: &Harness) {
    let store = &*h.store;
    store
        .create_work(judged_battle("b", 2, Lane::Cloud))
        .await
        .unwrap();
    let judge = store.owner("b-judge").await.unwrap();
    assert_eq!(
        (judge.kind, judge.work_id.as_str(), judge.status.as_str()),
        (OwnerKind::Judge, "b", "pending")
    );
    assert_eq!(judge.data, json!({"of": "b-judge"}));
    let snapshot = store.work("b").await.unwrap();
    assert_eq!(snapshot.owners.len(), 3);
    let judge_task = snapshot.tasks.iter().find(|t| t.id == "b-judge-t").unwrap();
    assert_eq!(judge_task.owner.kind, OwnerKind::Judge);

    let exam = owner("b-x1", OwnerKind::CrossExam);
    let tasks = vec![task_of("b-x1-t", &exam, Lane::Cloud)];
    let event = store
        .add_owner("b", exam, tasks, Some(cross_exam_event("b", "b-x1")))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (event.work_id.as_str(), event.owner_id.as_deref()),
        ("b", Some("b-x1"))
    );
    assert_eq!(
        store.owner("b-x1").await.unwrap().kind,
        OwnerKind::CrossExam
    );
    assert_eq!(
        store.owner("b-c0").await.unwrap().kind,
        OwnerKind::Contestant
    );
    let e = store.owner("nope").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFoundId, "{e}");

    // A run owns neither.
    let mut judged_run = run("r", 1);
    judged_run.owners.push(owner("r-judge", OwnerKind::Judge));
    let e = store.create_work(judged_run).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    store.create_work(run("r", 1)).await.unwrap();
    let e = store
        .add_owner("r", owner("r-x", OwnerKind::CrossExam), vec![], None)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert_eq!(
        store.owner("r-x").await.unwrap_err().kind(),
        ErrorKind::NotFoundId
    );
}

// add_owner writes the owner, its tasks and its event in one transaction:
// every refusal leaves nothing behind, and a later retry writes it whole.
pub async fn add_owner_is_atomic(h: &Harness) {
    let store = &*h.store;
    store
        .create_work(judged_battle("b", 2, Lane::Cloud))
        .await
        .unwrap();
    let events_before = store.events_after(0, 1000).await.unwrap().len();
    let before = store.work("b").await.unwrap();
    let exam = owner("b-x1", OwnerKind::CrossExam);
    let attempt = |tasks: Vec<TaskSpec>| {
        store.add_owner(
            "b",
            exam.clone(),
            tasks,
            Some(cross_exam_event("b", "b-x1")),
        )
    };

    // A task id already in the store: conflict, found only in the database,
    // after the owner row was inserted; the owner goes with the rollback.
    let e = attempt(vec![
        task_of("b-x1-t", &exam, Lane::Cloud),
        task_of("b-t0", &exam, Lane::Cloud),
    ])
    .await
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    assert!(e.message().contains("b-t0"), "{e}");
    // A task spec that is not valid: refused before the database.
    let mut bad = task_of("b-x1-t", &exam, Lane::Cloud);
    bad.retry.max_attempts = 0;
    assert_eq!(
        attempt(vec![bad]).await.unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    // A task of another owner.
    let other = owner("b-c0", OwnerKind::Contestant);
    let e = attempt(vec![task_of("b-x1-t", &other, Lane::Cloud)])
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    // An event the store does not keep.
    let e = store
        .add_owner(
            "b",
            exam.clone(),
            vec![],
            Some(NewEvent::new(EventType::AgentOutput, json!({}))),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    // An unknown work; a duplicate owner id.
    let e = store
        .add_owner("nope", exam.clone(), vec![], None)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFoundId, "{e}");
    let e = store
        .add_owner("b", owner("b-judge", OwnerKind::CrossExam), vec![], None)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");

    assert_eq!(
        store.owner("b-x1").await.unwrap_err().kind(),
        ErrorKind::NotFoundId
    );
    assert_eq!(store.work("b").await.unwrap(), before, "nothing written");
    assert_eq!(
        store.events_after(0, 1000).await.unwrap().len(),
        events_before
    );

    // Now whole: the owner after the others, its tasks queued, its event.
    let event = attempt(vec![
        task_of("b-x1-t", &exam, Lane::Cloud),
        task_of("b-x1-u", &exam, Lane::Local),
    ])
    .await
    .unwrap()
    .unwrap();
    assert_eq!(event.kind, EventType::BattleUpdated);
    store
        .add_owner("b", owner("b-x2", OwnerKind::CrossExam), vec![], None)
        .await
        .unwrap();
    let after = store.work("b").await.unwrap();
    let ids: Vec<&str> = after.owners.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(ids, ["b-c0", "b-c1", "b-judge", "b-x1", "b-x2"]);
    let exam_tasks: Vec<&Task> = after
        .tasks
        .iter()
        .filter(|t| t.owner.id == "b-x1")
        .collect();
    assert_eq!(exam_tasks.len(), 2);
    assert!(exam_tasks
        .iter()
        .all(|t| t.state == TaskState::Pending && t.work_id == "b"));
    let events = store.events_after(0, 1000).await.unwrap();
    assert_eq!(
        events.len(),
        events_before + 1,
        "add_owner without event adds none"
    );
}

// A claim takes only tasks whose owner is of a requested kind; lane
// capacities still count every running task, whatever its owner.
pub async fn claims_filter_by_owner_kind(h: &Harness) {
    let store = &*h.store;
    store
        .create_work(judged_battle("b", 2, Lane::Cloud))
        .await
        .unwrap();
    let exam = owner("b-x", OwnerKind::CrossExam);
    let tasks = vec![task_of("b-x-t", &exam, Lane::Cloud)];
    store.add_owner("b", exam, tasks, None).await.unwrap();
    store.create_work(run("r", 2)).await.unwrap();
    store
        .enqueue(
            vec![
                step_task("r-t0", "r-s0", Lane::Cloud),
                step_task("r-t1", "r-s1", Lane::Cloud),
            ],
            None,
        )
        .await
        .unwrap();
    let claim = |kinds: &[OwnerKind]| {
        claimed(
            store,
            ClaimRequest::new("w")
                .lease_ttl(TTL)
                .limit(100)
                .owner_kinds(kinds),
        )
    };
    assert_eq!(
        claim(&[OwnerKind::Judge, OwnerKind::CrossExam]).await,
        ["b-judge-t", "b-x-t"]
    );
    assert_eq!(claim(&[OwnerKind::Step]).await, ["r-t0", "r-t1"]);
    assert!(claim(&[OwnerKind::Judge]).await.is_empty(), "already taken");
    assert_eq!(claim(&[]).await, ["b-t0", "b-t1"], "empty = every kind");

    // The local lane (capacity 1) is full with a contestant's task: a judge
    // task there waits, although no judge task runs.
    store
        .create_work(judged_battle("l", 1, Lane::Local))
        .await
        .unwrap();
    assert_eq!(claim(&[OwnerKind::Contestant]).await, ["l-t0"]);
    assert!(claim(&[OwnerKind::Judge]).await.is_empty(), "lane is full");
    let held = store.work("l").await.unwrap();
    let running = held.tasks.iter().find(|t| t.id == "l-t0").unwrap();
    assert_eq!(running.state, TaskState::Running);
    store
        .cancel("l-t0", "done with it", Update::default())
        .await
        .unwrap();
    assert_eq!(claim(&[OwnerKind::Judge]).await, ["l-judge-t"]);
    // The filter is part of the request's JSON, absent = every kind.
    let old: ClaimRequest = serde_json::from_value(json!({
        "worker": "w", "lanes": [], "limit": 1, "lease_ttl": {"secs": 30, "nanos": 0}
    }))
    .unwrap();
    assert!(old.owner_kinds.is_empty());
}

/// The ids of the tasks `request` claims, sorted.
async fn claimed(store: &dyn Store, request: ClaimRequest) -> Vec<String> {
    let mut ids: Vec<String> = store
        .claim(&request)
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.task.id)
        .collect();
    ids.sort();
    ids
}

/// A claim for some works takes only their tasks (what a CLI beside a
/// server claims); the other works' tasks stay for any other claimer.
pub async fn claims_filter_by_work(h: &Harness) {
    let store = &*h.store;
    for id in ["mine", "theirs"] {
        store.create_work(battle(id, 2, Lane::Cloud)).await.unwrap();
    }
    let claim = |works: &[&str]| {
        let works: Vec<String> = works.iter().map(|w| w.to_string()).collect();
        claimed(
            store,
            ClaimRequest::new("w")
                .lease_ttl(TTL)
                .limit(100)
                .work_ids(&works),
        )
    };
    assert_eq!(claim(&["mine", "nowhere"]).await, ["mine-t0", "mine-t1"]);
    assert!(claim(&["mine"]).await.is_empty(), "already taken");
    assert_eq!(
        claim(&[]).await,
        ["theirs-t0", "theirs-t1"],
        "empty = every work"
    );
    // Part of the request's JSON; absent = every work.
    let old: ClaimRequest = serde_json::from_value(json!({
        "worker": "w", "lanes": [], "limit": 1, "lease_ttl": {"secs": 30, "nanos": 0}
    }))
    .unwrap();
    assert!(old.work_ids.is_empty());
}

async fn battle_with(store: &dyn Store, id: &str, data: serde_json::Value, status: &str) {
    let mut work = battle(id, 1, Lane::Cloud);
    work.data = data;
    work.status = status.into();
    store.create_work(work).await.unwrap();
}

fn ids(page: &WorkPage) -> Vec<&str> {
    page.works.iter().map(|w| w.id.as_str()).collect()
}

// Newest first, filtered by kind, status and a string field of data;
// every malformed filter refused.
pub async fn list_works_newest_first_by_status_and_data_field(h: &Harness) {
    let store = &*h.store;
    let empty = store
        .list_works(&WorkFilter::new(WorkKind::Battle))
        .await
        .unwrap();
    assert_eq!((empty.works.len(), empty.next_cursor), (0, None));

    battle_with(store, "m", json!({"project": "/p1"}), "running").await;
    battle_with(store, "z", json!({"project": "/p2"}), "completed").await;
    battle_with(store, "a", json!({"project": "/p1"}), "failed").await;
    battle_with(store, "n", json!({"project": 1}), "completed").await;
    battle_with(store, "q", json!({"other": "/p1"}), "running").await;
    store.create_work(run("r1", 1)).await.unwrap();
    // Later by a clear margin: the database clock has moved on, so `first`
    // must come first although its id sorts last but one.
    tokio::time::sleep(Duration::from_millis(30)).await;
    battle_with(store, "b-first", json!({"project": "/p1"}), "running").await;

    let all = store
        .list_works(&WorkFilter::new(WorkKind::Battle))
        .await
        .unwrap();
    assert_eq!(all.next_cursor, None);
    assert_eq!(all.works.len(), 6, "{:?}", ids(&all));
    assert_eq!(all.works[0].id, "b-first");
    assert!(all.works.iter().all(|w| w.kind == WorkKind::Battle));
    // created_at descending, then id descending, as each work shows them.
    for pair in all.works.windows(2) {
        assert!(
            (pair[0].created_at, &pair[0].id) > (pair[1].created_at, &pair[1].id),
            "{:?} before {:?}",
            (pair[0].created_at, &pair[0].id),
            (pair[1].created_at, &pair[1].id)
        );
    }
    // Each work as `work` reads it.
    assert_eq!(all.works[0], store.work("b-first").await.unwrap().work);
    let runs = store
        .list_works(&WorkFilter::new(WorkKind::Run))
        .await
        .unwrap();
    assert_eq!(ids(&runs), ["r1"]);

    let order = |page: &WorkPage| {
        let mut v: Vec<String> = ids(page).into_iter().map(String::from).collect();
        v.sort();
        v
    };
    let finished = store
        .list_works(&WorkFilter::new(WorkKind::Battle).statuses(&["completed", "failed"]))
        .await
        .unwrap();
    assert_eq!(order(&finished), ["a", "n", "z"]);
    let p1 = store
        .list_works(&WorkFilter::new(WorkKind::Battle).data_field("project", "/p1"))
        .await
        .unwrap();
    assert_eq!(
        order(&p1),
        ["a", "b-first", "m"],
        "a number or another key never matches"
    );
    let both = WorkFilter::new(WorkKind::Battle)
        .statuses(&["running"])
        .data_field("project", "/p1");
    assert_eq!(
        order(&store.list_works(&both).await.unwrap()),
        ["b-first", "m"]
    );
    let digits = WorkFilter::new(WorkKind::Battle).data_field("project", "1");
    assert!(store.list_works(&digits).await.unwrap().works.is_empty());
    let none = WorkFilter::new(WorkKind::Battle).statuses(&["cancelled"]);
    assert!(store.list_works(&none).await.unwrap().works.is_empty());

    for (filter, path) in [
        (WorkFilter::new(WorkKind::Battle).limit(0), "limit"),
        (WorkFilter::new(WorkKind::Battle).limit(501), "limit"),
        (
            WorkFilter::new(WorkKind::Battle).data_field("project') OR 1=1 --", "x"),
            "data_field",
        ),
        (
            WorkFilter::new(WorkKind::Battle).data_field("a.b", "x"),
            "data_field",
        ),
        (
            WorkFilter::new(WorkKind::Battle).cursor("garbage"),
            "cursor",
        ),
        (
            WorkFilter::new(WorkKind::Battle).cursor("w1.5.zz"),
            "cursor",
        ),
    ] {
        let e = store.list_works(&filter).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{filter:?}: {e}");
        if path == "cursor" {
            assert!(e.message().contains("next_cursor"), "{e}");
        }
    }
    let widest = WorkFilter::new(WorkKind::Battle).limit(500);
    assert_eq!(store.list_works(&widest).await.unwrap().works.len(), 6);
}

// Keyset pagination: three pages read while new works are created between
// them return every work that existed at the first read exactly once, in
// order; the new ones are not slipped in (they sort above every cursor).
pub async fn list_works_pages_by_keyset_while_works_are_created(h: &Harness) {
    let store = &*h.store;
    for i in 0..7 {
        battle_with(store, &format!("w{i}"), json!({"project": "/p"}), "running").await;
    }
    let first_read = store
        .list_works(&WorkFilter::new(WorkKind::Battle))
        .await
        .unwrap();
    let expected: Vec<String> = first_read.works.iter().map(|w| w.id.clone()).collect();
    assert_eq!(expected.len(), 7);

    let filter = WorkFilter::new(WorkKind::Battle)
        .limit(3)
        .data_field("project", "/p");
    let mut seen: Vec<String> = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = Vec::new();
    for page_number in 0.. {
        let mut this = filter.clone();
        this.cursor = cursor.clone();
        let page = store.list_works(&this).await.unwrap();
        pages.push(page.works.len());
        seen.extend(page.works.iter().map(|w| w.id.clone()));
        // New works between page reads; ids above every "w…", so even one
        // created in the same millisecond as a cursor sorts before it.
        battle_with(
            store,
            &format!("z{page_number}"),
            json!({"project": "/p"}),
            "running",
        )
        .await;
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
        assert!(page_number < 5, "pagination does not end");
    }
    assert_eq!(pages, [3, 3, 1]);
    assert_eq!(seen, expected, "no duplicate, no miss, same order");
    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len());

    // A page that ends exactly at the last work says there is no next one.
    let exact = store
        .list_works(&WorkFilter::new(WorkKind::Battle).limit(10))
        .await
        .unwrap();
    assert_eq!(exact.works.len(), 10, "the 7 and z0..z2");
    assert_eq!(exact.next_cursor, None);
    let mut second = WorkFilter::new(WorkKind::Battle).limit(5);
    let page = store.list_works(&second).await.unwrap();
    assert_eq!(page.works.len(), 5);
    second.cursor = page.next_cursor;
    let last = store.list_works(&second).await.unwrap();
    assert_eq!((last.works.len(), last.next_cursor), (5, None));
    // A cursor is not tied to its filter's limit, only to its position.
    let mut cursor_only = WorkFilter::new(WorkKind::Battle).limit(1);
    cursor_only.cursor = Some(
        store
            .list_works(&WorkFilter::new(WorkKind::Battle).limit(9))
            .await
            .unwrap()
            .next_cursor
            .unwrap(),
    );
    assert_eq!(store.list_works(&cursor_only).await.unwrap().works.len(), 1);
}
