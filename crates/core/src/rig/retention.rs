//! The rig's compactor: with `[store] retain` (or `RigConfig::retain`) set,
//! a rig that runs workers compacts the store ([`Store::compact`]) when it
//! opens and every [`COMPACT_EVERY`] after, so the database does not grow
//! without bound. Several rigs on one store may all compact: each run is
//! one transaction, and a second one finds nothing left to delete.

use crate::store::Store;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How often a rig compacts after the first time.
pub const COMPACT_EVERY: Duration = Duration::from_secs(3600);

/// The compaction loop, until `stop`. A compaction under way is never
/// dropped halfway (only the sleep between two is cut short): a store
/// transaction dropped mid-flight can leave its connection inside it.
pub(super) fn start(
    store: Arc<dyn Store>,
    retain: Duration,
    stop: CancellationToken,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            if let Err(e) = store.compact(retain).await {
                eprintln!("coderig: compacting the store failed (tried again in an hour): {e}");
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(COMPACT_EVERY) => {}
            }
        }
    })
}
