//! The bucket records this server has agreed on, so that a request does not read its
//! bucket's record from every drive (a small GET did, several times over).
//!
//! An entry is the record at one revision. The commit paths of this server put the new
//! record (or drop the entry) before answering, so a change answered 200 is in force for the
//! very next request. What can change the drives' agreement otherwise — a heal, drives
//! coming back or leaving, and in a cluster another server's commit — calls `forget`, or
//! `forget_all`; as a last guard an entry is read again after `TTL`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use super::record::BucketRecord;

/// How long an entry is trusted without hearing of a change.
const TTL: Duration = Duration::from_secs(5);

#[derive(Default)]
pub(crate) struct BucketCache {
    entries: RwLock<HashMap<String, (Arc<BucketRecord>, Instant)>>,
    /// Bumped by every change: a read of the drives that started before one does not put
    /// what it found (it may be older than the change).
    generation: AtomicU64,
}

impl BucketCache {
    pub fn get(&self, name: &str) -> Option<Arc<BucketRecord>> {
        let entries = self.entries.read().expect("not poisoned");
        let (record, since) = entries.get(name)?;
        (since.elapsed() < TTL).then(|| record.clone())
    }

    /// Where a read of the drives starts: pass it to [`BucketCache::found`].
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// What a read of the drives that started at `generation` agreed on.
    pub fn found(&self, generation: u64, record: &BucketRecord) {
        let mut entries = self.entries.write().expect("not poisoned");
        if self.generation() == generation {
            let entry = (Arc::new(record.clone()), Instant::now());
            entries.insert(record.name.clone(), entry);
        }
    }

    /// A change this server committed: in force from now on.
    pub fn changed(&self, record: &BucketRecord) {
        let mut entries = self.entries.write().expect("not poisoned");
        self.generation.fetch_add(1, Ordering::SeqCst);
        let entry = (Arc::new(record.clone()), Instant::now());
        entries.insert(record.name.clone(), entry);
    }

    /// The bucket may have changed (deleted, or a change whose outcome is unknown).
    pub fn forget(&self, name: &str) {
        let mut entries = self.entries.write().expect("not poisoned");
        self.generation.fetch_add(1, Ordering::SeqCst);
        entries.remove(name);
    }

    /// Any bucket may have changed: drives came or went, or a heal ran.
    pub fn forget_all(&self) {
        let mut entries = self.entries.write().expect("not poisoned");
        self.generation.fetch_add(1, Ordering::SeqCst);
        entries.clear();
    }
}
