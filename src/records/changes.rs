//! Where a server tells the others of its changes to bucket records and deployment-wide
//! records, which every server caches (buckets in the object store, users and policies in
//! `crate::iam`).
//!
//! A server alone on its drives has no feed. In a cluster the control plane is the feed: a
//! change is refused while the others could not hear of it, and announced before it is
//! answered, so that every server's cache drops it within a watch's delay.

use async_trait::async_trait;

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
