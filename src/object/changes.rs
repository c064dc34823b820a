//! How the object store tells the other servers of its changes to bucket records and
//! deployment-wide records (the feed itself: `crate::records::changes`).

use std::sync::Arc;

use super::{ObjectError, ObjectStore};
use crate::records::changes::{ChangeFeed, RecordChange};

impl ObjectStore {
    /// From now on, changes to bucket and system records go through `feed`.
    pub fn set_change_feed(&self, feed: Arc<dyn ChangeFeed>) {
        if self.feed.set(feed).is_err() {
            tracing::warn!("a change feed was already set; the first one stays");
            return;
        }
        // Other servers' bucket changes now arrive as `forget_bucket`: records can be cached.
        self.buckets.told_of_changes();
    }

    /// Another server changed a bucket: its record is read from the drives again.
    pub fn forget_bucket(&self, name: &str) {
        self.buckets.forget(name);
    }

    /// Refuses a change of records that the other servers could not hear of now.
    pub(super) async fn may_change_records(&self) -> Result<(), ObjectError> {
        match self.feed.get() {
            Some(feed) if !feed.may_change().await => Err(ObjectError::ControlPlaneUnavailable),
            _ => Ok(()),
        }
    }

    /// Tells the other servers of a change this one committed (or may have).
    pub(super) async fn announce(&self, change: RecordChange) {
        if let Some(feed) = self.feed.get() {
            feed.changed(change).await;
        }
    }
}
