//! The commit feed of each backend under a bus: SQLite polls and says so;
//! PostgreSQL delivers another handle's commits through `LISTEN` with
//! polls an hour apart, comes back from a killed listener connection, and
//! — behind a pooler that drops notifications — notices at start and
//! polls instead.

use super::*;
use crate::common::{Location, Raw};
use coderig::bus::{BusOptions, EventBus};
use coderig::store::{CommitFeed, PostgresOptions, PostgresStore, Store};
use std::sync::Arc;
use std::time::Duration;

/// A bus's wait between reads when the test wants none: only a wake-up
/// (a commit feed's, `notify()`'s) can deliver before `GUARD`.
const HOUR: Duration = Duration::from_secs(3600);

/// A bus over `store` that never polls in a test's lifetime.
fn unpolled(store: Arc<dyn Store>) -> Arc<EventBus> {
    EventBus::start_with(
        store,
        BusOptions {
            poll: HOUR,
            backstop: HOUR,
            ..BusOptions::default()
        },
    )
}

/// `h`'s own handle creates battle `id` and updates it: `sub`, on a bus of
/// another handle, receives exactly those events, in order.
async fn another_handles_commits_reach(h: &Harness, sub: &mut EventSubscription, id: &str) {
    let start = newest(&*h.store).await;
    h.store.create_work(battle(id)).await.unwrap();
    update(&*h.store, id).await;
    let last = newest(&*h.store).await;
    assert_eq!(
        seqs_until(sub, last).await,
        log(&*h.store, start, last).await
    );
}

/// SQLite has no commit feed: its bus polls, and says why.
#[tokio::test]
async fn a_sqlite_bus_polls_and_says_so() {
    let h = common::sqlite().await;
    let bus = EventBus::start(h.store.clone());
    match bus.commit_feed().await {
        Some(CommitFeed::Polling { reason }) => assert!(reason.contains("sqlite"), "{reason}"),
        other => panic!("{other:?}"),
    }
    bus.shutdown();
    assert_eq!(bus.commit_feed().await, None, "a stopped bus has no feed");
}

/// PostgreSQL: another handle's commits reach this bus through `LISTEN` —
/// its polls are an hour apart and nobody calls `notify()`, so only the
/// database's notification can deliver them before the guard.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn another_handles_commits_wake_a_postgres_bus_through_listen() {
    let Some(h) = common::postgres("bus").await else {
        return;
    };
    let there = unpolled(h.another().await);
    there.started().await.unwrap();
    assert_eq!(there.commit_feed().await, Some(CommitFeed::Listening));
    let mut remote = there.subscribe();
    another_handles_commits_reach(&h, &mut remote, "far").await;
    there.shutdown();
    h.finish().await;
}

/// A listener whose connection the database kills comes back and looks at
/// the log itself: what was committed while it was away still arrives,
/// with polls an hour apart.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_postgres_bus_whose_listener_is_killed_reconnects_and_looks() {
    let Some(h) = common::postgres("bus").await else {
        return;
    };
    let Location::Postgres { schema, .. } = &h.location else {
        unreachable!()
    };
    let there = unpolled(h.another().await);
    there.started().await.unwrap();
    assert_eq!(there.commit_feed().await, Some(CommitFeed::Listening));
    let mut remote = there.subscribe();
    let Raw::Postgres(admin) = h.raw().await else {
        unreachable!()
    };
    let killed: i64 = sqlx::query_scalar(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
         WHERE query LIKE 'LISTEN %' AND position($1 IN query) > 0",
    )
    .bind(format!("coderig:{schema}"))
    .fetch_one(&admin)
    .await
    .unwrap();
    assert_eq!(killed, 1, "one listener on this schema");
    another_handles_commits_reach(&h, &mut remote, "while-away").await;
    there.shutdown();
    admin.close().await;
    h.finish().await;
}

/// A TCP proxy to PostgreSQL that passes everything but the server's
/// notifications (`NotificationResponse`, message type `A`): what a pooler
/// in transaction mode (PgBouncer) amounts to for a `LISTEN`er. Returns
/// its address. The client side is passed untouched; the server side is
/// read message by message (type byte, 4-byte length), so the connection
/// must not start with an SSL request (`sslmode=disable`).
async fn notification_dropping_proxy(upstream: std::net::SocketAddr) -> std::net::SocketAddr {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = tokio::net::TcpStream::connect(upstream).await else {
                continue;
            };
            let (mut client_read, mut client_write) = client.into_split();
            let (mut server_read, mut server_write) = server.into_split();
            tokio::spawn(async move {
                let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
            });
            tokio::spawn(async move {
                loop {
                    let mut head = [0u8; 5];
                    if server_read.read_exact(&mut head).await.is_err() {
                        return;
                    }
                    let length = u32::from_be_bytes([head[1], head[2], head[3], head[4]]);
                    let mut body = vec![0u8; (length as usize).saturating_sub(4)];
                    if server_read.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    if head[0] == b'A' {
                        continue;
                    }
                    if client_write.write_all(&head).await.is_err()
                        || client_write.write_all(&body).await.is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    address
}

/// Behind a pooler that swallows notifications, the start-up probe gets no
/// answer: the feed says it polls and why, and the bus still delivers
/// another handle's commits — at its poll.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn behind_a_pooler_that_drops_notifications_a_postgres_bus_says_so_and_polls() {
    let Some(h) = common::postgres("bus").await else {
        return;
    };
    let Location::Postgres { url, schema } = &h.location else {
        unreachable!()
    };
    let options: sqlx::postgres::PgConnectOptions = url.parse().unwrap();
    let upstream = tokio::net::lookup_host((options.get_host(), options.get_port()))
        .await
        .unwrap()
        .next()
        .unwrap();
    let proxy = notification_dropping_proxy(upstream).await;
    // The same URL with the proxy as host and port, and no SSL request.
    let (scheme, rest) = url.split_once("://").unwrap();
    let (authority, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let user = authority
        .rsplit_once('@')
        .map(|(user, _)| format!("{user}@"))
        .unwrap_or_default();
    let separator = if tail.contains('?') { '&' } else { '?' };
    let through = format!("{scheme}://{user}{proxy}{tail}{separator}sslmode=disable");
    let behind: Arc<dyn Store> = Arc::new(
        PostgresStore::connect_with(
            &through,
            PostgresOptions {
                schema: Some(schema.clone()),
                ..PostgresOptions::default()
            },
        )
        .await
        .unwrap(),
    );
    let there = EventBus::start_with(
        behind,
        BusOptions {
            poll: Duration::from_millis(50),
            backstop: HOUR,
            ..BusOptions::default()
        },
    );
    there.started().await.unwrap();
    match there.commit_feed().await {
        Some(CommitFeed::Polling { reason }) => {
            assert!(reason.contains("PgBouncer"), "{reason}")
        }
        other => panic!("the probe cannot have been answered: {other:?}"),
    }
    let mut remote = there.subscribe();
    another_handles_commits_reach(&h, &mut remote, "pooled").await;
    there.shutdown();
    h.finish().await;
}
