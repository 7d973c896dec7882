//! The commit feed of the PostgreSQL store: each handle announces its
//! commits that appended events with a payload-free `NOTIFY` on the
//! schema's channel ([`Notifier`]), and each watcher `LISTEN`s there
//! ([`watch`], behind [`Store::watch_commits`]).
//!
//! Announcing from the handle rather than from a trigger lets it coalesce:
//! a lone commit is announced at once, but under load one `NOTIFY` covers
//! every commit of the last few milliseconds ([`paced`]), so listeners are signalled a few
//! hundred times a second at most instead of once per commit (a trigger
//! cannot fold notifications across transactions).
//!
//! Notifications are only wake-ups — the reader reads the log itself — so
//! losing one costs latency, never an event: the reader polls as a
//! backstop, and every reconnect of the listener (sqlx drops what arrives
//! while it reconnects) wakes the reader to look for itself.
//!
//! [`Store::watch_commits`]: crate::store::Store::watch_commits

use crate::store::CommitFeed;
use sqlx::postgres::{PgListener, PgPool};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// How long the start-up probe waits for its own notification. A
/// transaction-mode pooler (PgBouncer) accepts `LISTEN` and never delivers:
/// without the probe the reader would wait on a feed that never speaks.
const PROBE: Duration = Duration::from_secs(2);

/// The longest pause between two attempts to re-open a failed listener.
const RETRY_MAX: Duration = Duration::from_secs(5);

/// The gap after an announcement of one handle, and after a wake-up of one
/// watcher, while marks keep coming: what comes sooner waits out the gap
/// and folds into one (a `Notify` keeps a single permit). A mark after a
/// quiet gap goes at once; each gap that ends with a mark waiting doubles
/// the next, up to [`GAP_MAX`], so a reader behind many committing writers
/// reads a batch every few milliseconds instead of once per commit — and,
/// under a steady load, at most ~125 times a second, not 500 (with a fixed
/// 2 ms gap the notifications and the reads they cause cost 8 writers
/// ~18 % of their commits on 2 cores).
const GAP_MIN: Duration = Duration::from_millis(2);

/// The widest gap: what a commit under sustained load may wait before it
/// is announced.
const GAP_MAX: Duration = Duration::from_millis(8);

/// The gap after `gap` when it ended with a mark waiting (`busy`) or not.
fn next_gap(gap: Duration, busy: bool) -> Duration {
    if busy {
        (gap * 2).clamp(GAP_MIN, GAP_MAX)
    } else {
        GAP_MIN
    }
}

/// Runs `act` for each mark on `marks`, pacing repeats by [`next_gap`],
/// until `stop` or `act` answers false.
async fn paced<F, Fut>(marks: Arc<Notify>, stop: CancellationToken, mut act: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let mut gap = GAP_MIN;
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = marks.notified() => {}
        }
        loop {
            if !act().await {
                return;
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(gap) => {}
            }
            // A mark made during the gap left its permit: take it and go
            // again with a wider gap; none: quiet, the next goes at once.
            let busy = tokio::time::timeout(Duration::ZERO, marks.notified())
                .await
                .is_ok();
            gap = next_gap(gap, busy);
            if !busy {
                break;
            }
        }
    }
}

/// The channel of the store in `schema`: `coderig:<schema>`, cut to
/// PostgreSQL's 63 bytes (schemas are ASCII, so a byte cut is a character
/// cut).
pub(super) fn channel(schema: &str) -> String {
    let mut channel = format!("coderig:{schema}");
    channel.truncate(63);
    channel
}

/// A handle's announcer: [`Notifier::mark`] after a commit that appended
/// events; a task sends the `NOTIFY` (after the commit, so a woken reader
/// finds the rows), paced by [`paced`]. It stops when the last
/// store handle holding it is dropped, or when the pool closes.
#[derive(Debug)]
pub(super) struct Notifier {
    marked: Arc<Notify>,
    stop: CancellationToken,
}

impl Notifier {
    pub(super) fn start(pool: PgPool, channel: String) -> Arc<Notifier> {
        let marked = Arc::new(Notify::new());
        let stop = CancellationToken::new();
        tokio::spawn(announce(pool, channel, marked.clone(), stop.clone()));
        Arc::new(Notifier { marked, stop })
    }

    /// A commit appended events: announce it (now, or with the next
    /// announcement when one went out within its gap).
    pub(super) fn mark(&self) {
        self.marked.notify_one();
    }
}

impl Drop for Notifier {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn announce(pool: PgPool, channel: String, marked: Arc<Notify>, stop: CancellationToken) {
    paced(marked, stop, || async {
        // Never dropped halfway (no select around it). A failure costs
        // only latency: the readers' backstop poll finds the events.
        let sent = sqlx::query("SELECT pg_notify($1, '')")
            .bind(&channel)
            .execute(&pool)
            .await;
        !matches!(sent, Err(sqlx::Error::PoolClosed))
    })
    .await
}

/// Opens a listener on `channel`, proves with a probe notification that
/// the database delivers to it, and leaves a task waking `wake` at every
/// notification and reconnect until `stop` or the pool closes.
pub(super) async fn watch(
    pool: PgPool,
    channel: String,
    wake: Arc<Notify>,
    stop: CancellationToken,
) -> CommitFeed {
    let mut listener = match open(&pool, &channel).await {
        Ok(listener) => listener,
        Err(e) => {
            return CommitFeed::Polling {
                reason: format!("LISTEN {channel:?} failed: {e}"),
            }
        }
    };
    if let Err(reason) = probe(&pool, &mut listener, &channel).await {
        return CommitFeed::Polling { reason };
    }
    // Notifications only mark that something committed; the waker passes
    // the mark on, paced (a Notify keeps one permit, so marks made
    // meanwhile fold into one).
    let signalled = Arc::new(Notify::new());
    let done = stop.child_token();
    tokio::spawn(pass_on(signalled.clone(), wake.clone(), done.clone()));
    tokio::spawn(async move {
        // The waker ends with this loop, however it ends.
        let _done = done.drop_guard();
        let mut retry = Duration::from_millis(50);
        loop {
            let received = tokio::select! {
                () = stop.cancelled() => return,
                received = listener.try_recv() => received,
            };
            match received {
                Ok(Some(_)) => {
                    retry = Duration::from_millis(50);
                    signalled.notify_one();
                }
                // The connection dropped and sqlx re-opened it: whatever
                // was signalled in between is lost, so look now.
                Ok(None) => wake.notify_one(),
                Err(sqlx::Error::PoolClosed) => return,
                Err(_) => {
                    // A connection sqlx cannot recover: open a new listener
                    // (after a pause that grows while the database stays
                    // away), then look, since anything may have committed.
                    loop {
                        tokio::select! {
                            () = stop.cancelled() => return,
                            () = tokio::time::sleep(retry) => {}
                        }
                        retry = (retry * 2).min(RETRY_MAX);
                        match open(&pool, &channel).await {
                            Ok(fresh) => {
                                listener = fresh;
                                break;
                            }
                            Err(sqlx::Error::PoolClosed) => return,
                            Err(_) => continue,
                        }
                    }
                    wake.notify_one();
                }
            }
        }
    });
    CommitFeed::Listening
}

/// Wakes `wake` for each mark on `signalled`, paced as announcements are
/// ([`paced`]), until `stop`.
async fn pass_on(signalled: Arc<Notify>, wake: Arc<Notify>, stop: CancellationToken) {
    paced(signalled, stop, || {
        wake.notify_one();
        std::future::ready(true)
    })
    .await
}

async fn open(pool: &PgPool, channel: &str) -> Result<PgListener, sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen(channel).await?;
    Ok(listener)
}

/// Sends a notification on `channel` from another connection and waits
/// for the listener to receive one.
async fn probe(pool: &PgPool, listener: &mut PgListener, channel: &str) -> Result<(), String> {
    sqlx::query("SELECT pg_notify($1, 'probe')")
        .bind(channel)
        .execute(pool)
        .await
        .map_err(|e| format!("the LISTEN probe could not notify: {e}"))?;
    match tokio::time::timeout(PROBE, listener.try_recv()).await {
        Ok(Ok(Some(_))) => Ok(()),
        Ok(Ok(None)) => Err("the LISTEN connection dropped during its probe".to_owned()),
        Ok(Err(e)) => Err(format!("the LISTEN probe failed: {e}")),
        Err(_) => Err(format!(
            "LISTEN received no notification within {PROBE:?} (a transaction-mode pooler such \
             as PgBouncer drops LISTEN)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gap_widens_while_busy_and_resets_when_quiet() {
        let ms = Duration::from_millis;
        let cases = [
            (ms(2), true, ms(4)),
            (ms(4), true, ms(8)),
            (ms(8), true, ms(8)),
            (ms(8), false, ms(2)),
            (ms(2), false, ms(2)),
            (ms(0), true, ms(2)),
        ];
        for (gap, busy, next) in cases {
            assert_eq!(next_gap(gap, busy), next, "{gap:?} busy={busy}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_lone_mark_acts_at_once_and_a_stream_of_marks_is_paced() {
        let marks = Arc::new(Notify::new());
        let stop = CancellationToken::new();
        let acted = Arc::new(std::sync::Mutex::new(Vec::new()));
        let start = tokio::time::Instant::now();
        let log = acted.clone();
        let task = tokio::spawn(paced(marks.clone(), stop.clone(), move || {
            log.lock().unwrap().push(start.elapsed());
            std::future::ready(true)
        }));
        // A lone mark: at once.
        marks.notify_one();
        tokio::time::sleep(Duration::from_millis(50)).await;
        // A mark every millisecond for 40 ms (the paused clock's
        // resolution): folded, the gaps 2, 4, 8, 8 … ms.
        for _ in 0..40 {
            marks.notify_one();
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        stop.cancel();
        task.await.unwrap();
        let at: Vec<u128> = acted
            .lock()
            .unwrap()
            .iter()
            .map(|d| d.as_millis())
            .collect();
        assert_eq!(at[0], 0, "{at:?}");
        let stream: Vec<u128> = at[1..].iter().map(|t| t - 50).collect();
        assert_eq!(&stream[..4], &[0, 2, 6, 14], "{at:?}");
        assert!(
            stream.len() <= 8,
            "40 marks in 40 ms folded into a few acts: {at:?}"
        );
        assert!(stream.windows(2).all(|w| w[1] - w[0] <= 8), "{at:?}");
    }
}
