//! SQLite's one writer: a thread that owns the write connection and
//! drains every caller's logical write into one `BEGIN IMMEDIATE`, with a
//! savepoint each.
//!
//! - **Group commit.** A commit of a WAL file in `synchronous = FULL` is
//!   an fsync; a write transaction of a few rows costs a fraction of it.
//!   Writes that queue while a batch commits share the next commit, so
//!   concurrent callers (the flow driver, contestants' and judges'
//!   completions, heartbeats, the API) pay one fsync per batch, not one
//!   each. A batch is whatever is queued when the writer looks: a lone
//!   write never waits for a window.
//! - **Isolation.** A write that is refused (a lost lease, a conflict) or
//!   fails is answered with its error and leaves nothing; its neighbours
//!   commit. Refusals are rare, so a batch first runs without savepoints;
//!   after a refusal it is rolled back and runs again without that write,
//!   a savepoint around each of the others (at most two runs). Each write
//!   sees exactly what the writes before it left, on either run. A batch
//!   that meets another process's lock is retried whole (every write is
//!   re-runnable: it owns its inputs).
//! - **Cancellation.** A write is owned by the writer once queued: a caller
//!   that stops waiting (a dropped future, a timeout) cannot leave the
//!   connection mid-statement or a transaction open. A write whose caller
//!   is gone before its batch starts is not run (as a dropped future never
//!   began); once its batch starts it commits or rolls back with it.
//! - **Runtime-free.** The thread runs its own small runtime, so the store
//!   works from any runtime (or several: Python's and Node's faces) and
//!   outlives none of them by accident: it stops when the last handle is
//!   dropped or [`Writer::close`] is called.

use crate::error::Error;
use crate::store::sql::TxError;
use sqlx::sqlite::SqliteConnection;
use sqlx::Connection as _;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// A write's body as the writer runs it: given the connection (inside the
/// batch's transaction and the write's savepoint), its value.
pub(crate) type Body<'c, T> = Pin<Box<dyn Future<Output = Result<T, TxError>> + Send + 'c>>;

/// A queued write, its type erased.
trait Job: Send {
    /// Runs the body once (again after a retried batch); keeps its value.
    fn run<'c>(&'c mut self, conn: &'c mut SqliteConnection) -> Body<'c, ()>;
    /// When the caller queued it (its busy deadline counts from here).
    fn queued(&self) -> Instant;
    /// True when nobody waits for the answer any more.
    fn abandoned(&self) -> bool;
    /// Answers the caller: the kept value after a commit, or `error`.
    fn answer(&mut self, outcome: Result<(), Error>);
}

struct Typed<F, T> {
    body: F,
    value: Option<T>,
    reply: Option<oneshot::Sender<Result<T, Error>>>,
    queued: Instant,
}

impl<F, T> Job for Typed<F, T>
where
    F: for<'c> Fn(&'c mut SqliteConnection) -> Body<'c, T> + Send + 'static,
    T: Send + 'static,
{
    fn run<'c>(&'c mut self, conn: &'c mut SqliteConnection) -> Body<'c, ()> {
        let body = (self.body)(conn);
        let slot = &mut self.value;
        Box::pin(async move {
            *slot = Some(body.await?);
            Ok(())
        })
    }

    fn queued(&self) -> Instant {
        self.queued
    }

    fn abandoned(&self) -> bool {
        self.reply.as_ref().is_none_or(oneshot::Sender::is_closed)
    }

    fn answer(&mut self, outcome: Result<(), Error>) {
        let answer = match outcome {
            Ok(()) => self
                .value
                .take()
                .ok_or_else(|| Error::internal("sqlite writer: a committed write kept no value")),
            Err(e) => Err(e),
        };
        if let Some(reply) = self.reply.take() {
            // A caller that stopped waiting does not want it.
            let _ = reply.send(answer);
        }
    }
}

enum Message {
    Write(Box<dyn Job>),
    Close(oneshot::Sender<()>),
}

/// The handle callers queue writes on. Cheap to clone; the writer thread
/// stops when the last clone is dropped.
#[derive(Debug, Clone)]
pub(crate) struct Writer {
    queue: mpsc::UnboundedSender<Message>,
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Message::Write(_) => "Write",
            Message::Close(_) => "Close",
        })
    }
}

/// What the writer thread needs besides its connection.
pub(crate) struct WriterConfig {
    /// How long a write is retried while another process holds the lock.
    pub busy_deadline: Duration,
    /// Counts the durable commits.
    pub commits: Arc<AtomicU64>,
    /// Tells a retried batch's busy errors from the others.
    pub is_busy: fn(&TxError) -> bool,
    /// The backend's name in error messages.
    pub backend: &'static str,
    /// The most writes one batch takes (≥ 1): bounds how long the first
    /// of them waits for its commit behind the others.
    pub max_batch: usize,
}

fn closed() -> Error {
    Error::io("sqlite store: closed (its writer has stopped)").with_detail("backend", "sqlite")
}

impl Writer {
    /// Starts the writer thread on `conn` (migrated, not in a transaction).
    pub(crate) fn start(conn: SqliteConnection, config: WriterConfig) -> Result<Writer, Error> {
        let (queue, inbox) = mpsc::unbounded_channel();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .map_err(|e| Error::io(format!("sqlite store: cannot start its writer: {e}")))?;
        std::thread::Builder::new()
            .name("coderig-sqlite-writer".into())
            .spawn(move || runtime.block_on(serve(conn, inbox, config)))
            .map_err(|e| Error::io(format!("sqlite store: cannot start its writer: {e}")))?;
        Ok(Writer { queue })
    }

    /// Runs `body` in the next batch; its value once the batch committed,
    /// or its own error (its savepoint rolled back, the others kept).
    /// `body` may run more than once (a batch retried while the file is
    /// busy), each time in a fresh transaction.
    pub(crate) async fn write<T, F>(&self, body: F) -> Result<T, Error>
    where
        F: for<'c> Fn(&'c mut SqliteConnection) -> Body<'c, T> + Send + 'static,
        T: Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job = Typed {
            body,
            value: None,
            reply: Some(reply),
            queued: Instant::now(),
        };
        self.queue
            .send(Message::Write(Box::new(job)))
            .map_err(|_| closed())?;
        answer.await.map_err(|_| closed())?
    }

    /// Finishes the queued writes, closes the connection and stops the
    /// thread; later writes answer `io` (closed).
    pub(crate) async fn close(&self) {
        let (ack, done) = oneshot::channel();
        if self.queue.send(Message::Close(ack)).is_ok() {
            let _ = done.await;
        }
    }
}

async fn serve(
    mut conn: SqliteConnection,
    mut inbox: mpsc::UnboundedReceiver<Message>,
    config: WriterConfig,
) {
    let mut closing = None;
    while closing.is_none() {
        let Some(first) = inbox.recv().await else {
            break;
        };
        let mut batch = Vec::new();
        let mut next = Some(first);
        while let Some(message) = next.take() {
            match message {
                Message::Write(job) if !job.abandoned() => batch.push(job),
                Message::Write(_) => {}
                Message::Close(ack) => {
                    closing = Some(ack);
                    break;
                }
            }
            if batch.len() < config.max_batch {
                next = inbox.try_recv().ok();
            }
        }
        if !batch.is_empty() {
            commit_batch(&mut conn, batch, &config).await;
        }
    }
    let _ = conn.close().await;
    if let Some(ack) = closing {
        let _ = ack.send(());
    }
}

/// How a try at a batch ended short of a commit.
enum Short {
    /// Another process holds the file: retry the whole batch later.
    Busy,
    /// The write at this index failed in a batch run without savepoints:
    /// the transaction is rolled back; answer it, run the rest again.
    Refused(usize, Error),
    /// The transaction could not begin or commit: answer every write.
    Failed(Error),
}

async fn commit_batch(
    conn: &mut SqliteConnection,
    mut batch: Vec<Box<dyn Job>>,
    config: &WriterConfig,
) {
    let mut pause = Duration::from_millis(1);
    // Refusals are rare: a batch first runs without savepoints (no extra
    // round trips); after one refusal it runs again with a savepoint per
    // write, so a batch runs at most twice (busy retries aside).
    let mut savepoints = false;
    loop {
        let mut outcomes = Vec::with_capacity(batch.len());
        match try_batch(conn, &mut batch, &mut outcomes, savepoints, config).await {
            Ok(committed) => {
                if committed {
                    config.commits.fetch_add(1, Ordering::Relaxed);
                }
                for (job, outcome) in batch.iter_mut().zip(outcomes) {
                    job.answer(outcome);
                }
                return;
            }
            Err(Short::Busy) => {
                let (late, waiting): (Vec<_>, Vec<_>) = batch
                    .into_iter()
                    .partition(|job| job.queued().elapsed() >= config.busy_deadline);
                for mut job in late {
                    job.answer(Err(Error::io(format!(
                        "{} store: the database stayed locked by another process for {:?}",
                        config.backend, config.busy_deadline
                    ))
                    .with_detail("backend", config.backend)));
                }
                batch = waiting;
                if batch.is_empty() {
                    return;
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(100));
            }
            Err(Short::Refused(index, error)) => {
                // Its answer stands: the write saw the state the writes
                // before it left, as it will on the second run.
                let mut job = batch.remove(index);
                job.answer(Err(error));
                savepoints = true;
                if batch.is_empty() {
                    return;
                }
            }
            Err(Short::Failed(error)) => {
                for job in &mut batch {
                    job.answer(Err(error.clone()));
                }
                return;
            }
        }
    }
}

/// One try: `BEGIN IMMEDIATE`, each write (in a savepoint of its own when
/// `savepoints`; a lone write needs none), `COMMIT`. On `Ok`, `outcomes`
/// holds each write's, and the flag says whether a commit was made (a lone
/// refused write rolls back instead).
async fn try_batch(
    conn: &mut SqliteConnection,
    batch: &mut [Box<dyn Job>],
    outcomes: &mut Vec<Result<(), Error>>,
    savepoints: bool,
    config: &WriterConfig,
) -> Result<bool, Short> {
    let fail = |e: TxError| {
        if (config.is_busy)(&e) {
            Short::Busy
        } else {
            Short::Failed(e.into_error(config.backend))
        }
    };
    run(conn, "BEGIN IMMEDIATE").await.map_err(fail)?;
    let lone = batch.len() == 1;
    let savepoints = savepoints && !lone;
    for (index, job) in batch.iter_mut().enumerate() {
        if savepoints {
            if let Err(e) = run(conn, "SAVEPOINT write").await {
                rollback(conn).await;
                return Err(fail(e));
            }
        }
        let error = match CatchUnwind(job.run(conn)).await {
            Ok(Ok(())) => None,
            Ok(Err(e)) if (config.is_busy)(&e) => {
                rollback(conn).await;
                return Err(Short::Busy);
            }
            Ok(Err(e)) => Some(e.into_error(config.backend)),
            Err(panic) => Some(Error::internal(format!(
                "{} store: a write panicked: {panic}",
                config.backend
            ))),
        };
        let Some(error) = error else {
            if savepoints {
                if let Err(e) = run(conn, "RELEASE write").await {
                    rollback(conn).await;
                    return Err(fail(e));
                }
            }
            outcomes.push(Ok(()));
            continue;
        };
        if lone {
            // Nothing else to keep: the transaction ends here.
            rollback(conn).await;
            outcomes.push(Err(error));
            return Ok(false);
        }
        // SQLite rolls a whole transaction back on some errors (a full
        // disk): then the savepoint is gone and the rest must run again.
        let undone = savepoints
            && run(conn, "ROLLBACK TO write").await.is_ok()
            && run(conn, "RELEASE write").await.is_ok();
        if !undone {
            rollback(conn).await;
            return Err(Short::Refused(index, error));
        }
        outcomes.push(Err(error));
    }
    if let Err(e) = run(conn, "COMMIT").await {
        rollback(conn).await;
        return Err(fail(e));
    }
    Ok(true)
}

async fn run(conn: &mut SqliteConnection, sql: &str) -> Result<(), TxError> {
    sqlx::raw_sql(sql).execute(&mut *conn).await?;
    Ok(())
}

/// Ends whatever transaction is open (none is fine: SQLite may have
/// rolled it back already).
async fn rollback(conn: &mut SqliteConnection) {
    let _ = run(conn, "ROLLBACK").await;
}

/// A write's future with its panic caught: the writer answers it as an
/// internal error and keeps serving the others.
struct CatchUnwind<'c>(Body<'c, ()>);

impl Future for CatchUnwind<'_> {
    type Output = Result<Result<(), TxError>, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let future = &mut self.0;
        match std::panic::catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
            Ok(Poll::Ready(value)) => Poll::Ready(Ok(value)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(panic) => Poll::Ready(Err(panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(no message)".into()))),
        }
    }
}
