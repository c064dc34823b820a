//! Per-key locks that guard the commit step of writes (never the data transfer).

use std::hash::{Hash, Hasher};

use siphasher::sip::SipHasher13;
use tokio::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Enough stripes that unrelated keys rarely share one.
const STRIPES: usize = 1024;

/// A fixed array of read-write locks; a key maps to one stripe. Readers hold a stripe while
/// they read metadata and open shard files, writers while they commit, so a reader sees the
/// old object or the new one, never a mix.
pub struct NamespaceLocks {
    stripes: Vec<RwLock<()>>,
}

impl NamespaceLocks {
    pub fn new() -> Self {
        Self {
            stripes: (0..STRIPES).map(|_| RwLock::new(())).collect(),
        }
    }

    fn stripe(&self, bucket: &str, key: &str) -> &RwLock<()> {
        &self.stripes[self.stripe_of(bucket, key)]
    }

    fn stripe_of(&self, bucket: &str, key: &str) -> usize {
        let mut h = SipHasher13::new();
        (bucket, key).hash(&mut h);
        (h.finish() % STRIPES as u64) as usize
    }

    pub async fn read(&self, bucket: &str, key: &str) -> RwLockReadGuard<'_, ()> {
        self.stripe(bucket, key).read().await
    }

    pub async fn write(&self, bucket: &str, key: &str) -> RwLockWriteGuard<'_, ()> {
        self.stripe(bucket, key).write().await
    }

    /// The write locks of two keys of a bucket (a rename's), taken in stripe order so that
    /// two such writers never wait on each other; one lock when both share a stripe.
    pub async fn write_both(&self, bucket: &str, keys: [&str; 2]) -> Vec<RwLockWriteGuard<'_, ()>> {
        let mut stripes = keys.map(|key| self.stripe_of(bucket, key));
        stripes.sort_unstable();
        let mut guards = vec![self.stripes[stripes[0]].write().await];
        if stripes[1] != stripes[0] {
            guards.push(self.stripes[stripes[1]].write().await);
        }
        guards
    }
}
