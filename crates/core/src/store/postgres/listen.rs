//! The commit feed of the PostgreSQL store ([`Store::watch_commits`]): one
//! `LISTEN` connection per watcher on the schema's channel, which the
//! `events_notify` trigger (migration 0004) signals once per write
//! transaction that appended events.
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

/// The channel of the store in `schema`: `coderig:<schema>`, cut to
/// PostgreSQL's 63 bytes exactly as the trigger cuts it (schemas are
/// ASCII, so a byte cut is a character cut).
pub(super) fn channel(schema: &str) -> String {
    let mut channel = format!("coderig:{schema}");
    channel.truncate(63);
    channel
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
    tokio::spawn(async move {
        let mut retry = Duration::from_millis(50);
        loop {
            let received = tokio::select! {
                () = stop.cancelled() => return,
                received = listener.try_recv() => received,
            };
            match received {
                Ok(Some(_)) => {
                    retry = Duration::from_millis(50);
                    wake.notify_one();
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
