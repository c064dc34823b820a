//! Where this server tells the others of its changes to bucket records and deployment-wide
//! records, which every server caches (buckets here, users and policies in `crate::iam`).
//!
//! A server alone on its drives has no feed. In a cluster the control plane is the feed: a
//! change is refused while the others could not hear of it, and announced before it is
//! answered, so that every server's cache drops it within a watch's delay.

use std::sync::Arc;

use async_trait::async_trait;

use super::{ObjectError, ObjectStore};

/// A record that changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordChange {
    /// A bucket's record, by bucket name.
    Bucket(String),
    /// A deployment-wide record, by key.
    System(String),
}

#[async_trait]
pub trait ChangeFeed: Send + Sync {
    /// Whether records may change now: not while the other servers could not hear of it (nor
    /// decide it). May wait a little for that.
    async fn may_change(&self) -> bool;
    /// Tells the other servers that a record changed.
    async fn changed(&self, change: RecordChange);
}

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
