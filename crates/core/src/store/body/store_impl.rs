//! The [`Store`] impl of a SQL backend, written once: every method but
//! the backend's own (its name, its epoch, its claim, its commit feed)
//! checks its input as the shared checks say and runs the shared body in
//! the backend's transaction.

/// Implements [`Store`](crate::store::Store) for `$store`.
///
/// - `write: m`: the backend's macro that runs `m!(store, [a, b] |tx, sql|
///   body)` in a write transaction (retried as the backend retries), the
///   captured `a`, `b` owned by the write and seen by `body` as
///   references (SQLite's writer runs a write after its caller may have
///   stopped waiting), `sql` the backend's statements;
/// - `snapshot: m`, `read: m`: its macros that run `m!(store, |tx| body)`
///   in one read snapshot and as a single read statement;
/// - `sql: |store| expr`: the backend's [`Statements`](super::Statements);
/// - `{ … }`: the backend's own methods.
///
/// `complete` is the backend's own (PostgreSQL batches concurrent
/// completions). The store also has an inherent `record_changes_at_once(&self, &Fence,
/// &Changes) -> Result<Option<Vec<EventRecord>>, Error>`: a batch it
/// writes without a transaction (`Some`), or `None` to run it in one.
macro_rules! sql_store {
    (
        $store:ty,
        write: $write:ident,
        snapshot: $snapshot:ident,
        read: $read:ident,
        sql: |$this:ident| $statements:expr,
        { $($own:tt)* }
    ) => {
        #[async_trait::async_trait]
        impl crate::store::Store for $store {
            $($own)*

            async fn create_work(&self, work: NewWork) -> Result<EventRecord, Error> {
                check_new_work(&work)?;
                $write!(self, [work] |tx, sql| body::create_work(tx, sql, work).await?)
            }

            async fn enqueue(
                &self,
                tasks: Vec<TaskSpec>,
                event: Option<NewEvent>,
            ) -> Result<Vec<Task>, Error> {
                check_enqueue(&tasks, event.as_ref())?;
                if tasks.is_empty() {
                    return Ok(Vec::new());
                }
                $write!(self, [tasks, event] |tx, sql| body::enqueue(tx, sql, tasks, event.as_ref()).await?)
            }

            async fn heartbeat(&self, fence: &Fence, ttl: Duration) -> Result<Millis, Error> {
                if ttl.is_zero() {
                    return Err(Error::invalid_input("a heartbeat's ttl must be positive"));
                }
                let (fence, ttl) = (fence.clone(), millis(ttl));
                $write!(self, [fence, ttl] |tx, sql| body::heartbeat(tx, sql, fence, *ttl).await?)
            }

            async fn heartbeat_many(
                &self,
                fences: &[Fence],
                ttl: Duration,
            ) -> Result<Vec<Result<Millis, Error>>, Error> {
                if ttl.is_zero() {
                    return Err(Error::invalid_input("a heartbeat's ttl must be positive"));
                }
                if fences.is_empty() {
                    return Ok(Vec::new());
                }
                let (fences, ttl) = (fences.to_vec(), millis(ttl));
                $write!(self, [fences, ttl] |tx, sql| body::heartbeat_many(tx, sql, fences, *ttl).await?)
            }

            async fn record(&self, fence: &Fence, update: Update) -> Result<Option<EventRecord>, Error> {
                let fence = fence.clone();
                $write!(self, [fence, update] |tx, sql| body::record(tx, sql, fence, update).await?)
            }

            async fn record_changes(
                &self,
                fence: &Fence,
                changes: Changes,
            ) -> Result<Vec<EventRecord>, Error> {
                check_changes(&changes)?;
                if let Some(events) = self.record_changes_at_once(fence, &changes).await? {
                    return Ok(events);
                }
                let fence = fence.clone();
                $write!(self, [fence, changes] |tx, sql| body::record_changes(tx, sql, fence, changes).await?)
            }

            async fn finish_work(&self, work_id: &str, finish: Finish) -> Result<Finished, Error> {
                check_finish(work_id, &finish)?;
                let work_id = work_id.to_owned();
                $write!(self, [work_id, finish] |tx, sql| body::finish_work(tx, sql, work_id, finish).await?)
            }

            async fn cancel(&self, task_id: &str, reason: &str, update: Update) -> Result<Task, Error> {
                let (task_id, reason) = (task_id.to_owned(), reason.to_owned());
                $write!(self, [task_id, reason, update] |tx, sql| body::cancel(tx, sql, task_id, reason, update).await?)
            }

            async fn rescue_expired(&self, limit: u32) -> Result<Vec<Rescued>, Error> {
                if limit == 0 {
                    return Ok(Vec::new());
                }
                $write!(self, [limit] |tx, sql| body::rescue_expired(tx, sql, *limit).await?)
            }

            async fn transition(&self, transition: Transition) -> Result<Option<EventRecord>, Error> {
                $write!(self, [transition] |tx, sql| body::transition(tx, sql, transition).await?)
            }

            async fn task(&self, id: &str) -> Result<Task, Error> {
                $read!(self, |tx| body::task(tx, self.statements(), id).await?)
            }

            async fn work(&self, id: &str) -> Result<WorkSnapshot, Error> {
                // Three statements: one snapshot.
                $snapshot!(self, |tx| body::work(tx, self.statements(), id).await?)
            }

            async fn add_owner(
                &self,
                work_id: &str,
                owner: NewOwner,
                tasks: Vec<TaskSpec>,
                event: Option<NewEvent>,
            ) -> Result<Option<EventRecord>, Error> {
                check_add_owner(work_id, &owner, &tasks, event.as_ref())?;
                let work_id = work_id.to_owned();
                $write!(self, [work_id, owner, tasks, event] |tx, sql| body::add_owner(tx, sql, work_id, owner, tasks, event.as_ref()).await?)
            }

            async fn owner(&self, id: &str) -> Result<Owner, Error> {
                $read!(self, |tx| body::owner(tx, self.statements(), id).await?)
            }

            async fn list_works(&self, filter: &WorkFilter) -> Result<WorkPage, Error> {
                let cursor = checked_filter(filter)?;
                let cursor = cursor.as_ref();
                let works = $read!(self, |tx| body::list_works(tx, self.statements(), filter, cursor).await?)?;
                Ok(page(works, filter.limit))
            }

            async fn events_after(&self, after: i64, limit: u32) -> Result<Vec<EventRecord>, Error> {
                $read!(self, |tx| body::events(tx, self.statements(), None, after, limit).await?)
            }

            async fn work_events(
                &self,
                work_id: &str,
                after: i64,
                limit: u32,
            ) -> Result<Vec<EventRecord>, Error> {
                $read!(self, |tx| body::events(tx, self.statements(), Some(work_id), after, limit).await?)
            }

            async fn event_window(&self) -> Result<crate::event::StoreWindow, Error> {
                let (oldest, newest) = $read!(self, |tx| body::seq_range(tx, self.statements()).await?)?;
                Ok(window(&self.epoch, oldest, newest))
            }

            async fn lanes(&self) -> Result<Vec<LaneState>, Error> {
                $read!(self, |tx| body::lanes(tx, self.statements()).await?)
            }

            async fn set_lane_capacity(&self, lane: Lane, capacity: Option<u32>) -> Result<(), Error> {
                super::check_lane_capacity(lane, capacity)?;
                $write!(self, [lane, capacity] |tx, sql| body::set_lane_capacity(tx, sql, *lane, *capacity).await?)
            }

            async fn clock_ms(&self) -> Result<Millis, Error> {
                $read!(self, |tx| body::clock(tx, self.statements()).await?)
            }

            async fn compact(&self, retain: Duration) -> Result<super::Compacted, Error> {
                check_retain(retain)?;
                let retain_ms = i64::try_from(retain.as_millis()).unwrap_or(i64::MAX);
                $write!(self, [retain_ms] |tx, sql| body::compact(tx, sql, *retain_ms).await?)
            }
        }

        impl $store {
            /// The backend's statements.
            fn statements(&self) -> &crate::store::body::Statements {
                let $this = self;
                $statements
            }
        }
    };
}
pub(crate) use sql_store;
