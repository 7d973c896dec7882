//! The [`Store`] impl of a SQL backend, written once: every method but
//! the backend's own (its name, its epoch, its claim, its commit feed)
//! checks its input as the shared checks say and runs the shared body in
//! the backend's transaction.

/// Implements [`Store`](crate::store::Store) for `$store`.
///
/// - `write: m`, `snapshot: m`, `read: m`: the backend's macros that run
///   `m!(store, |tx| body)` in a write transaction (retried as the backend
///   retries), in one read snapshot, and as a single read statement;
/// - `sql: |store| expr`: the backend's [`Statements`](super::Statements);
/// - `{ … }`: the backend's own methods.
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
                let work = &work;
                $write!(self, |tx| body::create_work(tx, self.statements(), work).await?)
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
                let (tasks, event) = (&tasks, event.as_ref());
                $write!(self, |tx| body::enqueue(tx, self.statements(), tasks, event).await?)
            }

            async fn heartbeat(&self, fence: &Fence, ttl: Duration) -> Result<Millis, Error> {
                if ttl.is_zero() {
                    return Err(Error::invalid_input("a heartbeat's ttl must be positive"));
                }
                let ttl = millis(ttl);
                $write!(self, |tx| body::heartbeat(tx, self.statements(), fence, ttl).await?)
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
                let ttl = millis(ttl);
                $write!(self, |tx| body::heartbeat_many(tx, self.statements(), fences, ttl).await?)
            }

            async fn record(&self, fence: &Fence, update: Update) -> Result<Option<EventRecord>, Error> {
                let update = &update;
                $write!(self, |tx| body::record(tx, self.statements(), fence, update).await?)
            }

            async fn record_changes(
                &self,
                fence: &Fence,
                changes: Changes,
            ) -> Result<Vec<EventRecord>, Error> {
                check_changes(&changes)?;
                let changes = &changes;
                $write!(self, |tx| body::record_changes(tx, self.statements(), fence, changes).await?)
            }

            async fn finish_work(&self, work_id: &str, finish: Finish) -> Result<Finished, Error> {
                check_finish(work_id, &finish)?;
                let finish = &finish;
                $write!(self, |tx| body::finish_work(tx, self.statements(), work_id, finish).await?)
            }

            async fn complete(&self, fence: &Fence, completion: Completion) -> Result<Task, Error> {
                check_tasks(&completion.enqueue)?;
                let completion = &completion;
                $write!(self, |tx| body::complete(tx, self.statements(), fence, completion).await?)
            }

            async fn cancel(&self, task_id: &str, reason: &str, update: Update) -> Result<Task, Error> {
                let update = &update;
                $write!(self, |tx| body::cancel(tx, self.statements(), task_id, reason, update).await?)
            }

            async fn rescue_expired(&self, limit: u32) -> Result<Vec<Rescued>, Error> {
                if limit == 0 {
                    return Ok(Vec::new());
                }
                $write!(self, |tx| body::rescue_expired(tx, self.statements(), limit).await?)
            }

            async fn transition(&self, transition: Transition) -> Result<Option<EventRecord>, Error> {
                let t = &transition;
                $write!(self, |tx| body::transition(tx, self.statements(), t).await?)
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
                let (owner, tasks, event) = (&owner, &tasks, event.as_ref());
                $write!(self, |tx| body::add_owner(tx, self.statements(), work_id, owner, tasks, event).await?)
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
                $write!(self, |tx| body::set_lane_capacity(tx, self.statements(), lane, capacity).await?)
            }

            async fn clock_ms(&self) -> Result<Millis, Error> {
                $read!(self, |tx| body::clock(tx, self.statements()).await?)
            }

            async fn compact(&self, retain: Duration) -> Result<super::Compacted, Error> {
                check_retain(retain)?;
                let retain_ms = i64::try_from(retain.as_millis()).unwrap_or(i64::MAX);
                $write!(self, |tx| body::compact(tx, self.statements(), retain_ms).await?)
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
