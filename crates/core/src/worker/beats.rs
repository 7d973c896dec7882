//! The worker's heartbeats, batched: every held task's beat goes through
//! one queue, and one task sends whatever is queued when it is free as one
//! [`Store::heartbeat_many`]. A lone beat goes at once; beats that fall due
//! together (a worker holding many tasks) share one write, each lease still
//! fenced on its own.

use crate::error::Error;
use crate::store::{Fence, Millis, Store};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// One lease to extend and where its answer goes.
struct Beat {
    fence: Fence,
    ttl: Duration,
    answer: oneshot::Sender<Result<Millis, Error>>,
}

/// The queue of a worker's beats. Cheap to clone; the sending task ends
/// when the last clone is dropped.
#[derive(Clone)]
pub(super) struct Beats {
    queue: mpsc::UnboundedSender<Beat>,
}

impl Beats {
    /// Starts the sending task on the current tokio runtime.
    pub(super) fn start(store: Arc<dyn Store>) -> Beats {
        let (queue, beats) = mpsc::unbounded_channel();
        tokio::spawn(send(store, beats));
        Beats { queue }
    }

    /// Extends `fence`'s lease by `ttl`: [`Store::heartbeat`]'s answer,
    /// given by a batch. `unavailable` when the sending task is gone (the
    /// runtime shutting down).
    pub(super) async fn beat(&self, fence: Fence, ttl: Duration) -> Result<Millis, Error> {
        let (answer, answered) = oneshot::channel();
        let gone = || Error::unavailable("the worker's heartbeats stopped");
        self.queue
            .send(Beat { fence, ttl, answer })
            .map_err(|_| gone())?;
        answered.await.map_err(|_| gone())?
    }
}

/// Waits for a beat, takes every other one queued by then, and sends them
/// as one write per lease length (a worker has one). Never drops a write
/// halfway: nothing here is raced against anything.
async fn send(store: Arc<dyn Store>, mut beats: mpsc::UnboundedReceiver<Beat>) {
    while let Some(first) = beats.recv().await {
        let mut by_ttl: BTreeMap<Duration, Vec<Beat>> = BTreeMap::new();
        by_ttl.entry(first.ttl).or_default().push(first);
        while let Ok(beat) = beats.try_recv() {
            by_ttl.entry(beat.ttl).or_default().push(beat);
        }
        for (ttl, batch) in by_ttl {
            let fences: Vec<Fence> = batch.iter().map(|b| b.fence.clone()).collect();
            match store.heartbeat_many(&fences, ttl).await {
                Ok(answers) => {
                    for (beat, answer) in batch.into_iter().zip(answers) {
                        let _ = beat.answer.send(answer);
                    }
                }
                Err(e) => {
                    for beat in batch {
                        let _ = beat.answer.send(Err(e.clone()));
                    }
                }
            }
        }
    }
}
