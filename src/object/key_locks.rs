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
        let mut h = SipHasher13::new();
        (bucket, key).hash(&mut h);
        &self.stripes[(h.finish() % STRIPES as u64) as usize]
    }

    pub async fn read(&self, bucket: &str, key: &str) -> RwLockReadGuard<'_, ()> {
        self.stripe(bucket, key).read().await
    }

    pub async fn write(&self, bucket: &str, key: &str) -> RwLockWriteGuard<'_, ()> {
        self.stripe(bucket, key).write().await
    }
}
