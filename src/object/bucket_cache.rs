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
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use super::record::BucketRecord;

/// How long an entry is trusted without hearing of a change.
const TTL: Duration = Duration::from_secs(5);

pub(crate) struct BucketCache {
    entries: RwLock<HashMap<String, (Arc<BucketRecord>, Instant)>>,
    /// How long an entry is trusted, in milliseconds: zero where other servers change
    /// buckets and nothing tells this one (several nodes without a change feed).
    ttl_ms: AtomicU64,
    /// Bumped by every change: a read of the drives that started before one does not put
    /// what it found (it may be older than the change).
    generation: AtomicU64,
}

impl BucketCache {
    /// A cache for a server alone on its drives.
    pub fn alone() -> Self {
        Self::trusting_for(TTL)
    }

    /// A cache for a server whose drives other servers change too: every read goes to the
    /// drives, until [`BucketCache::told_of_changes`].
    pub fn shared() -> Self {
        Self::trusting_for(Duration::ZERO)
    }

    fn trusting_for(ttl: Duration) -> Self {
        Self {
            entries: RwLock::default(),
            ttl_ms: AtomicU64::new(ttl.as_millis() as u64),
            generation: AtomicU64::new(0),
        }
    }

    /// The other servers' changes are told to this one (which then calls `forget`): entries
    /// are trusted as a server alone trusts them.
    pub fn told_of_changes(&self) {
        self.ttl_ms.store(TTL.as_millis() as u64, Ordering::SeqCst);
    }

    pub fn get(&self, name: &str) -> Option<Arc<BucketRecord>> {
        let entries = self.entries.read().expect("not poisoned");
        let (record, since) = entries.get(name)?;
        let ttl = Duration::from_millis(self.ttl_ms.load(Ordering::Relaxed));
        (since.elapsed() < ttl).then(|| record.clone())
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

/// What a bucket's settings parse into (its policy, its lifecycle rules), parsed once per
/// revision of its record instead of once per request.
pub struct ParsedByRevision<T>(Mutex<HashMap<String, Parsed<T>>>);

/// A parsed value and the record (id and revision) it was parsed from.
struct Parsed<T> {
    id: String,
    revision: u64,
    value: Arc<T>,
}

impl<T> Default for ParsedByRevision<T> {
    fn default() -> Self {
        Self(Mutex::default())
    }
}

impl<T> ParsedByRevision<T> {
    /// What `parse` makes of `record`'s settings, parsed again only when the record changed.
    pub fn of<E>(
        &self,
        record: &BucketRecord,
        parse: impl FnOnce() -> Result<T, E>,
    ) -> Result<Arc<T>, E> {
        let same_record = |p: &&Parsed<T>| p.id == record.id && p.revision == record.revision;
        if let Some(parsed) = self.lock().get(&record.name).filter(same_record) {
            return Ok(parsed.value.clone());
        }
        let value = Arc::new(parse()?);
        let parsed = Parsed {
            id: record.id.clone(),
            revision: record.revision,
            value: value.clone(),
        };
        self.lock().insert(record.name.clone(), parsed);
        Ok(value)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Parsed<T>>> {
        self.0.lock().expect("not poisoned")
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::object::BucketSettings;

    fn record(id: &str, revision: u64) -> BucketRecord {
        BucketRecord {
            name: "b".into(),
            id: id.into(),
            created_ms: 0,
            revision,
            settings: BucketSettings::default(),
        }
    }

    #[test]
    fn settings_are_parsed_again_only_when_the_record_changes() {
        let parsed = ParsedByRevision::<u64>::default();
        let parses = Cell::new(0);
        let parse = |r: &BucketRecord| {
            parsed.of(r, || {
                parses.set(parses.get() + 1);
                Ok::<_, ()>(r.revision)
            })
        };
        assert_eq!(*parse(&record("one", 1)).unwrap(), 1);
        assert_eq!(*parse(&record("one", 1)).unwrap(), 1);
        assert_eq!(parses.get(), 1);
        assert_eq!(*parse(&record("one", 2)).unwrap(), 2, "a new revision");
        assert_eq!(*parse(&record("two", 2)).unwrap(), 2, "a bucket made anew");
        assert_eq!(parses.get(), 3);
    }

    #[test]
    fn a_read_that_started_before_a_change_does_not_put_what_it_found() {
        let cache = BucketCache::alone();
        let before = cache.generation();
        cache.changed(&record("one", 2));
        cache.found(before, &record("one", 1));
        assert_eq!(cache.get("b").unwrap().revision, 2);
        cache.forget("b");
        assert!(cache.get("b").is_none());
        let now = cache.generation();
        cache.found(now, &record("one", 2));
        assert_eq!(cache.get("b").unwrap().revision, 2);
    }
}
