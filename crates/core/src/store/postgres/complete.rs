//! Completions batched under load: `Store::complete` hands its completion
//! to the handle's completer, which takes every completion queued at that
//! moment and writes them in one transaction of a fixed number of
//! statements — the tasks read and locked (in id order), settled, their
//! owners updated and their events appended, each a statement over all of
//! them — where one at a time is a transaction of six round trips and a
//! durable commit each. A lone completion never waits: the completer
//! starts a batch as soon as none is in flight, so batches form only while
//! one is being written (under load). What it buys is commits: on a
//! server that syncs its WAL (`fsync = on`) 8 completers got 1.38× the
//! completions/s of a transaction each, 4.4 completions per commit; with
//! `fsync = off` the two are even (the rows' writes dominate).
//! `benches/RESULTS-store.md`.
//!
//! A batch answers every completion as it would have been answered alone:
//! a lost lease is that completion's `conflict` (the others commit); a
//! completion of a task already in the batch waits for the next one; and
//! anything else that fails the batch's transaction (a follow-up task's id
//! taken, say) runs every completion of it again alone, so the one at
//! fault gets its own error and the rest commit.

use super::*;
use crate::store::body::Conn;
use crate::store::settle;
use crate::task::TaskState;
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};

/// A completion and where its answer goes.
pub(super) struct Job {
    fence: Fence,
    completion: Completion,
    reply: oneshot::Sender<Result<Task, Error>>,
}

/// What a completer writes with: the parts of the store it was started by
/// (not the store, whose last handle's drop closes the queue and so ends
/// the completer).
pub(super) struct Parts {
    pub(super) pool: PgPool,
    pub(super) sql: Arc<Statements>,
    pub(super) commits: Arc<AtomicU64>,
    pub(super) notifier: Option<Arc<listen::Notifier>>,
    /// The key of the schema's event-log lock.
    pub(super) event_lock: i32,
    /// The most completions one batch writes
    /// (`PostgresOptions::max_completion_batch`).
    pub(super) max_batch: usize,
}

impl Parts {
    fn appended(&self) {
        if let Some(notifier) = &self.notifier {
            notifier.mark();
        }
    }

    fn statements(&self) -> &Statements {
        &self.sql
    }
}

/// Batches of one handle in flight at once: while one is, completions
/// queue and form the next; when none is, a completion starts at once.
/// (Two in flight made batches of 2.6 and no faster.)
const IN_FLIGHT: usize = 1;

/// A store handle's queue of completions.
pub(super) struct Completer {
    jobs: mpsc::UnboundedSender<Job>,
    parts: Arc<Parts>,
}

impl std::fmt::Debug for Completer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Completer")
            .field("max_batch", &self.parts.max_batch)
            .finish()
    }
}

impl Completer {
    pub(super) fn start(parts: Parts) -> Completer {
        let (jobs, queue) = mpsc::unbounded_channel();
        let parts = Arc::new(parts);
        if parts.max_batch > 1 {
            tokio::spawn(drain(parts.clone(), queue));
        }
        Completer { jobs, parts }
    }

    /// Completes `fence`'s task with `completion`, in a batch with the
    /// completions queued beside it.
    pub(super) async fn complete(
        &self,
        fence: Fence,
        completion: Completion,
    ) -> Result<Task, Error> {
        let (reply, answer) = oneshot::channel();
        let job = Job {
            fence,
            completion,
            reply,
        };
        // Unbatched (`max_batch` 1: a transaction each, concurrently, the
        // store before batching), or the completer gone with the runtime
        // that started it: the caller writes its own.
        let job = if self.parts.max_batch <= 1 {
            job
        } else {
            match self.jobs.send(job) {
                Ok(()) => {
                    return answer.await.unwrap_or_else(|_| {
                        Err(Error::io(
                            "postgres store: the completer stopped before answering \
                             (its runtime shut down)",
                        ))
                    })
                }
                Err(mpsc::error::SendError(job)) => job,
            }
        };
        let (fence, completion) = (&job.fence, &job.completion);
        write_one(&self.parts, fence, completion).await
    }
}

async fn drain(parts: Arc<Parts>, mut queue: mpsc::UnboundedReceiver<Job>) {
    let in_flight = Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT));
    while let Some(first) = queue.recv().await {
        // Wait for a free slot, then take everything queued meanwhile.
        let Ok(slot) = in_flight.clone().acquire_owned().await else {
            return;
        };
        let mut jobs = vec![first];
        while jobs.len() < parts.max_batch {
            match queue.try_recv() {
                Ok(job) => jobs.push(job),
                Err(_) => break,
            }
        }
        // A caller that stopped waiting before its batch began is not
        // written for (as on SQLite's writer).
        jobs.retain(|job| !job.reply.is_closed());
        let parts = parts.clone();
        tokio::spawn(async move {
            run(parts, jobs).await;
            drop(slot);
        });
    }
}

async fn run(parts: Arc<Parts>, jobs: Vec<Job>) {
    // One completion per task a batch: a second of the same task goes
    // after, and finds the first's outcome.
    let mut seen = std::collections::HashSet::new();
    let (batch, later): (Vec<Job>, Vec<Job>) = jobs
        .into_iter()
        .partition(|job| seen.insert(job.fence.task_id.clone()));
    let mut batch = batch;
    if batch.len() == 1 {
        if let Some(job) = batch.pop() {
            alone(&parts, job).await;
        }
    } else if !batch.is_empty() {
        let pairs: Vec<(&Fence, &Completion)> =
            batch.iter().map(|j| (&j.fence, &j.completion)).collect();
        let pairs = &pairs[..];
        let event_lock = parts.event_lock;
        let sql = parts.statements();
        let answers = pg_tx!(&*parts, WRITE, |tx| together(tx, sql, pairs, event_lock)
            .await?);
        match answers {
            Ok(answers) => {
                for (job, answer) in batch.into_iter().zip(answers) {
                    let _ = job.reply.send(answer);
                }
            }
            Err(_) => {
                for job in batch {
                    alone(&parts, job).await;
                }
            }
        }
    }
    for job in later {
        alone(&parts, job).await;
    }
}

/// One completion in its own transaction (the shared body).
async fn alone(parts: &Parts, job: Job) {
    let answer = write_one(parts, &job.fence, &job.completion).await;
    let _ = job.reply.send(answer);
}

async fn write_one(parts: &Parts, fence: &Fence, completion: &Completion) -> Result<Task, Error> {
    let sql = parts.statements();
    pg_tx!(parts, WRITE, |tx| body::complete(
        tx, sql, fence, completion
    )
    .await?)
}

/// The completions of distinct tasks in one transaction: each answer in
/// their order — the settled task, or the error of a lost lease. Rows are
/// found by primary key (`id = ANY(ARRAY(…))`): a join on the JSON list
/// alone let the planner scan the whole table.
async fn together(
    tx: &mut PgConnection,
    sql: &Statements,
    pairs: &[(&Fence, &Completion)],
    event_lock: i32,
) -> Result<Vec<Result<Task, Error>>, TxError> {
    let fences: Vec<Value> = pairs
        .iter()
        .map(|(f, _)| json!([f.task_id, f.lease_token]))
        .collect();
    let found = sqlx::query(&format!(
        "SELECT {TASK_COLUMNS} FROM tasks t \
         JOIN jsonb_array_elements($1::jsonb) AS f(pair) \
           ON t.id = f.pair ->> 0 AND t.lease_token = f.pair ->> 1 \
         WHERE t.id = ANY(ARRAY(SELECT jsonb_array_elements($1::jsonb) ->> 0)) \
           AND t.state = 'running' ORDER BY t.id FOR UPDATE OF t"
    ))
    .bind(Value::from(fences).to_string())
    .fetch_all(&mut *tx)
    .await?;
    let mut held = std::collections::HashMap::new();
    for row in &found {
        let task = task_from_row(row)?;
        held.insert(task.id.clone(), task);
    }
    let mut answers = Vec::with_capacity(pairs.len());
    let mut settles = Vec::new();
    for (fence, completion) in pairs {
        match held.get(&fence.task_id) {
            None => answers.push(Err(body::lease_lost(tx, sql, &fence.task_id).await?)),
            Some(task) => {
                let s = settle(task, &completion.outcome);
                let finished = s.state != TaskState::Pending;
                settles.push(json!([
                    task.id,
                    s.state.as_str(),
                    s.failures,
                    s.retry_in_ms,
                    s.result.as_ref().map(json_text),
                    s.error,
                    finished
                ]));
                answers.push(Ok(None));
            }
        }
    }
    let settled = sqlx::query(&format!(
        "UPDATE tasks SET state = s.value ->> 1, failures = (s.value ->> 2)::bigint, \
             available_at = CASE WHEN s.value -> 3 = 'null'::jsonb THEN tasks.available_at \
                 ELSE clock_timestamp() \
                     + ((s.value ->> 3)::float8 * interval '1 millisecond') END, \
             lease_token = NULL, lease_expires_at = NULL, heartbeat_at = NULL, \
             result = (s.value ->> 4)::jsonb, error = s.value ->> 5, \
             finished_at = CASE WHEN (s.value ->> 6)::boolean THEN clock_timestamp() \
                 ELSE NULL END \
         FROM jsonb_array_elements($1::jsonb) AS s(value) \
         WHERE tasks.id = ANY(ARRAY(SELECT jsonb_array_elements($1::jsonb) ->> 0)) \
           AND tasks.id = s.value ->> 0 \
         RETURNING {TASK_COLUMNS}"
    ))
    .bind(Value::from(settles).to_string())
    .fetch_all(&mut *tx)
    .await?;
    let mut after = std::collections::HashMap::new();
    for row in &settled {
        let task = task_from_row(row)?;
        after.insert(task.id.clone(), task);
    }
    // Follow-ups, owners and events in the completions' order.
    let mut owners: Vec<(&str, Option<&str>, Option<String>)> = Vec::new();
    let mut events = Vec::new();
    for ((fence, completion), answer) in pairs.iter().zip(&mut answers) {
        let Ok(slot) = answer else { continue };
        let task = after.get(&fence.task_id).ok_or_else(|| {
            Error::internal(format!("store: task {:?} was not settled", fence.task_id))
        })?;
        for spec in &completion.enqueue {
            body::insert_task(tx, sql, spec).await?;
        }
        if let Some(o) = completion
            .owner
            .as_ref()
            .filter(|o| o.status.is_some() || o.data.is_some())
        {
            let data = o.data.as_ref().map(json_text);
            match owners.iter_mut().find(|w| w.0 == task.owner.id) {
                Some(w) => {
                    w.1 = o.status.as_deref().or(w.1);
                    w.2 = data.or(w.2.take());
                }
                None => owners.push((&task.owner.id, o.status.as_deref(), data)),
            }
        }
        if let Some(event) = &completion.event {
            event.check()?;
            events.push(json!([
                event.kind.as_str(),
                task.work_id,
                task.owner.id,
                task.id,
                json_text(&event.payload)
            ]));
        }
        *slot = Some(task.clone());
    }
    body::update_owners(tx, sql, &owners).await?;
    if !events.is_empty() {
        let n = events.len();
        tx.before_append();
        let appended = sqlx::query(&format!(
            "WITH held AS (SELECT pg_advisory_xact_lock({EVENT_LOCK_CLASS}, $2)) \
             INSERT INTO events (kind, work_id, owner_id, task_id, payload, created_at) \
             SELECT e.value ->> 0, e.value ->> 1, e.value ->> 2, e.value ->> 3, \
                 (e.value ->> 4)::jsonb, clock_timestamp() \
             FROM held, jsonb_array_elements($1::jsonb) WITH ORDINALITY AS e(value, n) \
             ORDER BY e.n RETURNING seq"
        ))
        .bind(Value::from(events).to_string())
        .bind(event_lock)
        .fetch_all(&mut *tx)
        .await?;
        if appended.len() != n {
            return Err(Error::internal(format!(
                "store: {n} events appended, {} returned",
                appended.len()
            ))
            .into());
        }
    }
    answers
        .into_iter()
        .map(|answer| match answer {
            Ok(Some(task)) => Ok(Ok(task)),
            Ok(None) => Err(Error::internal("store: a batched completion was not settled").into()),
            Err(e) => Ok(Err(e)),
        })
        .collect()
}

/// Against the PostgreSQL of `DATABASE_URL` (skipped without one unless
/// `CODERIG_REQUIRE_POSTGRES` is set). Completions sent together on one
/// current-thread runtime all reach the queue before the completer runs,
/// so they form one batch.
#[cfg(test)]
mod tests {
    use super::super::{test_store, PostgresStore};
    use crate::arena::Lane;
    use crate::event::EventType;
    use crate::store::*;
    use serde_json::json;
    use std::time::Duration;

    /// Work `w` with `n` steps, each with a claimed task `w-t<i>`.
    async fn claimed(store: &PostgresStore, n: usize) -> Vec<Claim> {
        let owners = (0..n)
            .map(|i| NewOwner {
                id: format!("w-s{i:02}"),
                kind: OwnerKind::Step,
                status: "running".into(),
                data: json!({}),
            })
            .collect();
        let work = NewWork {
            id: "w".into(),
            kind: WorkKind::Run,
            status: "running".into(),
            data: json!({}),
            owners,
            tasks: Vec::new(),
            event: NewEvent::new(EventType::RunUpdated, json!({"run_id": "w"})),
        };
        store.create_work(work).await.unwrap();
        let tasks = (0..n)
            .map(|i| {
                let owner = OwnerRef {
                    kind: OwnerKind::Step,
                    id: format!("w-s{i:02}"),
                };
                TaskSpec::new(format!("w-t{i:02}"), owner, Lane::Cloud).with_retry(RetryPolicy {
                    max_attempts: 3,
                    initial_ms: 60_000,
                    multiplier: 2.0,
                    max_ms: 60_000,
                })
            })
            .collect();
        store.enqueue(tasks, None).await.unwrap();
        let request = ClaimRequest::new("w")
            .limit(n as u32)
            .lease_ttl(Duration::from_secs(30));
        let mut claims = store.claim(&request).await.unwrap();
        claims.sort_by(|a, b| a.task.id.cmp(&b.task.id));
        assert_eq!(claims.len(), n);
        claims
    }

    fn done(i: usize) -> Completion {
        let mut c = Completion::completed(json!({"i": i}));
        c.owner = Some(OwnerUpdate {
            status: Some("done".into()),
            data: Some(json!({"i": i})),
        });
        c.event = Some(NewEvent::new(
            EventType::StepUpdated,
            json!({"step_id": format!("w-s{i:02}")}),
        ));
        c
    }

    /// Sends every completion at once; the answers in order.
    async fn together(
        store: &PostgresStore,
        jobs: Vec<(Fence, Completion)>,
    ) -> Vec<Result<Task, crate::Error>> {
        let handles: Vec<_> = jobs
            .into_iter()
            .map(|(fence, completion)| {
                let store = store.clone();
                tokio::spawn(async move { store.complete(&fence, completion).await })
            })
            .collect();
        let mut answers = Vec::new();
        for handle in handles {
            answers.push(handle.await.unwrap());
        }
        answers
    }

    #[tokio::test]
    async fn completions_sent_together_commit_once_and_each_is_answered_as_alone() {
        let Some(store) = test_store("complete_unit_batch").await else {
            return;
        };
        let claims = claimed(&store, 12).await;
        let stale = Fence {
            task_id: claims[10].task.id.clone(),
            lease_token: "stale".into(),
        };
        let mut jobs: Vec<(Fence, Completion)> =
            (0..10).map(|i| (claims[i].fence(), done(i))).collect();
        jobs.push((stale.clone(), done(10)));
        jobs.push((claims[11].fence(), Completion::failed("flaky", true)));
        let (commits, before) = (store.commits(), store.events_after(0, 1000).await.unwrap());
        let answers = together(&store, jobs).await;
        assert_eq!(
            store.commits() - commits,
            1,
            "one transaction for all twelve"
        );

        for (i, answer) in answers[..10].iter().enumerate() {
            let task = answer.as_ref().unwrap();
            assert_eq!(task.state, TaskState::Completed);
            assert_eq!(task.result, Some(json!({"i": i})));
        }
        let lost = answers[10].as_ref().unwrap_err();
        let alone = store.record(&stale, Update::default()).await.unwrap_err();
        assert_eq!(
            (lost.kind(), lost.message()),
            (alone.kind(), alone.message())
        );
        let retried = answers[11].as_ref().unwrap();
        assert_eq!((retried.state, retried.failures), (TaskState::Pending, 1));
        assert!(
            retried.available_at > claims[11].task.available_at,
            "backoff applied"
        );

        let snapshot = store.work("w").await.unwrap();
        let statuses: Vec<_> = snapshot.owners.iter().map(|o| o.status.as_str()).collect();
        assert_eq!(statuses[..10], ["done"; 10]);
        assert_eq!(statuses[10..], ["running", "running"]);
        assert_eq!(snapshot.owners[3].data, json!({"i": 3}));
        let appended = &store.events_after(0, 1000).await.unwrap()[before.len()..];
        let owners: Vec<_> = appended
            .iter()
            .map(|e| e.owner_id.clone().unwrap())
            .collect();
        let expected: Vec<_> = (0..10).map(|i| format!("w-s{i:02}")).collect();
        assert_eq!(owners, expected, "events in the completions' order");
        assert!(appended
            .iter()
            .zip(&claims)
            .all(|(e, c)| e.task_id.as_deref() == Some(c.task.id.as_str())));
        store.close().await;
    }

    #[tokio::test]
    async fn a_batch_that_fails_runs_each_completion_alone() {
        let Some(store) = test_store("complete_unit_fallback").await else {
            return;
        };
        let claims = claimed(&store, 4).await;
        let mut jobs: Vec<(Fence, Completion)> =
            (0..3).map(|i| (claims[i].fence(), done(i))).collect();
        // A follow-up whose id is taken fails the batch's transaction.
        let mut taken = done(3);
        taken.enqueue = vec![TaskSpec::new(
            "w-t00",
            OwnerRef {
                kind: OwnerKind::Step,
                id: "w-s00".into(),
            },
            Lane::Cloud,
        )];
        jobs.push((claims[3].fence(), taken));
        // And the same task twice: the second finds the first's outcome.
        jobs.push((claims[0].fence(), done(0)));
        let answers = together(&store, jobs).await;
        for answer in &answers[..3] {
            assert_eq!(answer.as_ref().unwrap().state, TaskState::Completed);
        }
        let duplicate = answers[3].as_ref().unwrap_err();
        assert_eq!(duplicate.kind(), crate::ErrorKind::Conflict, "{duplicate}");
        assert!(duplicate.message().contains("w-t00"), "{duplicate}");
        let twice = answers[4].as_ref().unwrap_err();
        assert_eq!(twice.kind(), crate::ErrorKind::Conflict, "{twice}");
        assert_eq!(twice.details()["state"], "completed", "{twice}");
        let snapshot = store.work("w").await.unwrap();
        let statuses: Vec<_> = snapshot.owners.iter().map(|o| o.status.as_str()).collect();
        assert_eq!(statuses, ["done", "done", "done", "running"]);
        let task = store.task(&claims[3].task.id).await.unwrap();
        assert_eq!(
            task.state,
            TaskState::Running,
            "the refused completion wrote nothing"
        );
        store.close().await;
    }
}
