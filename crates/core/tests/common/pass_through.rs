//! A real store behind a pass-through that counts its whole-run reads
//! (`Store::work`) and can set its database clock apart from the local
//! wall clock (`clock_skew_ms`), as a database server on another machine
//! would be. Nothing is mocked: every call reaches the real store.
#![allow(dead_code)]

use async_trait::async_trait;
use coderig::store::*;
use coderig::Error;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A real store, passed through.
pub struct PassThrough {
    pub inner: Arc<dyn Store>,
    /// `Store::work` calls so far.
    pub works: AtomicUsize,
    /// Added to the real store's clock.
    pub clock_skew_ms: i64,
}

impl PassThrough {
    /// `inner`, passed through unchanged.
    pub fn new(inner: Arc<dyn Store>) -> PassThrough {
        PassThrough::skewed(inner, 0)
    }

    /// `inner` with its clock `skew_ms` ahead (behind when negative).
    pub fn skewed(inner: Arc<dyn Store>, skew_ms: i64) -> PassThrough {
        PassThrough {
            inner,
            works: AtomicUsize::new(0),
            clock_skew_ms: skew_ms,
        }
    }
}

#[async_trait]
impl Store for PassThrough {
    fn backend(&self) -> &'static str {
        self.inner.backend()
    }
    fn epoch(&self) -> &str {
        self.inner.epoch()
    }
    async fn create_work(&self, work: NewWork) -> Result<EventRecord, Error> {
        self.inner.create_work(work).await
    }
    async fn enqueue(
        &self,
        tasks: Vec<TaskSpec>,
        event: Option<NewEvent>,
    ) -> Result<Vec<Task>, Error> {
        self.inner.enqueue(tasks, event).await
    }
    async fn add_owner(
        &self,
        work_id: &str,
        owner: NewOwner,
        tasks: Vec<TaskSpec>,
        event: Option<NewEvent>,
    ) -> Result<Option<EventRecord>, Error> {
        self.inner.add_owner(work_id, owner, tasks, event).await
    }
    async fn claim(&self, request: &ClaimRequest) -> Result<Vec<Claim>, Error> {
        self.inner.claim(request).await
    }
    async fn heartbeat(&self, fence: &Fence, ttl: Duration) -> Result<Millis, Error> {
        self.inner.heartbeat(fence, ttl).await
    }
    async fn record(&self, fence: &Fence, update: Update) -> Result<Option<EventRecord>, Error> {
        self.inner.record(fence, update).await
    }
    async fn record_changes(
        &self,
        fence: &Fence,
        changes: Changes,
    ) -> Result<Vec<EventRecord>, Error> {
        self.inner.record_changes(fence, changes).await
    }
    async fn finish_work(&self, work_id: &str, finish: Finish) -> Result<Finished, Error> {
        self.inner.finish_work(work_id, finish).await
    }
    async fn complete(&self, fence: &Fence, completion: Completion) -> Result<Task, Error> {
        self.inner.complete(fence, completion).await
    }
    async fn cancel(&self, task_id: &str, reason: &str, update: Update) -> Result<Task, Error> {
        self.inner.cancel(task_id, reason, update).await
    }
    async fn rescue_expired(&self, limit: u32) -> Result<Vec<Rescued>, Error> {
        self.inner.rescue_expired(limit).await
    }
    async fn transition(&self, transition: Transition) -> Result<Option<EventRecord>, Error> {
        self.inner.transition(transition).await
    }
    async fn task(&self, id: &str) -> Result<Task, Error> {
        self.inner.task(id).await
    }
    async fn work(&self, id: &str) -> Result<WorkSnapshot, Error> {
        self.works.fetch_add(1, Ordering::SeqCst);
        self.inner.work(id).await
    }
    async fn owner(&self, id: &str) -> Result<Owner, Error> {
        self.inner.owner(id).await
    }
    async fn list_works(&self, filter: &WorkFilter) -> Result<WorkPage, Error> {
        self.inner.list_works(filter).await
    }
    async fn events_after(&self, after: i64, limit: u32) -> Result<Vec<EventRecord>, Error> {
        self.inner.events_after(after, limit).await
    }
    async fn work_events(
        &self,
        work_id: &str,
        after: i64,
        limit: u32,
    ) -> Result<Vec<EventRecord>, Error> {
        self.inner.work_events(work_id, after, limit).await
    }
    async fn event_window(&self) -> Result<coderig::event::StoreWindow, Error> {
        self.inner.event_window().await
    }
    async fn lanes(&self) -> Result<Vec<LaneState>, Error> {
        self.inner.lanes().await
    }
    async fn set_lane_capacity(
        &self,
        lane: coderig::arena::Lane,
        capacity: Option<u32>,
    ) -> Result<(), Error> {
        self.inner.set_lane_capacity(lane, capacity).await
    }
    async fn compact(&self, retain: std::time::Duration) -> Result<Compacted, Error> {
        self.inner.compact(retain).await
    }
    async fn heartbeat_many(
        &self,
        fences: &[Fence],
        ttl: Duration,
    ) -> Result<Vec<Result<Millis, Error>>, Error> {
        self.inner.heartbeat_many(fences, ttl).await
    }
    async fn watch_commits(
        &self,
        wake: Arc<tokio::sync::Notify>,
        stop: tokio_util::sync::CancellationToken,
    ) -> CommitFeed {
        self.inner.watch_commits(wake, stop).await
    }
    async fn clock_ms(&self) -> Result<Millis, Error> {
        Ok(self.inner.clock_ms().await? + self.clock_skew_ms)
    }
}
