//! Server pools: which pool, and so which erasure set, holds a key.
//!
//! A key hashes to one set within each pool, and lives in exactly one pool: the one whose
//! set holds a record of it. A key no pool holds goes to the pool a free-space-weighted
//! rendezvous hash picks, so every request for one new key picks the same pool while the
//! free-space figures stand. With one pool (every deployment that never grew) nothing is
//! asked: the key's set is its hash.

use std::hash::Hasher;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::future::join_all;
use siphasher::sip::SipHasher24;

use super::record::{object_key, upload_key, ObjectRecord, OBJECTS, UPLOADS, VERSIONS};
use super::{BucketName, ObjectError, ObjectKey, ObjectStore};
use crate::records::{Agreement, RecordSet};

/// How long a pool's free-space figure is used before it is asked again.
const FREE_SPACE_TTL: Duration = Duration::from_secs(30);

/// A server pool as the object layer places keys in it.
pub struct Pool {
    /// Its erasure sets, as indexes into the store's sets.
    pub sets: Range<usize>,
    /// Bytes free on its drives when last asked (the sum over its sets of their smallest
    /// drive times their data shards: what the pool can still take).
    free: AtomicU64,
    /// When `free` was last asked.
    asked: Mutex<Option<Instant>>,
}

impl Pool {
    pub fn new(sets: Range<usize>) -> Self {
        Pool {
            sets,
            free: AtomicU64::new(0),
            asked: Mutex::new(None),
        }
    }

    /// Bytes the pool can still take, as last asked.
    pub fn free_bytes(&self) -> u64 {
        self.free.load(Ordering::Relaxed)
    }
}

/// What a pool's set holds of one key.
#[derive(Debug, Clone, PartialEq)]
enum Holding {
    Nothing,
    /// The newest version's (or delete marker's) time, or 0 when only older versions are
    /// listed.
    Key {
        modified_ms: i64,
    },
}

impl ObjectStore {
    pub fn pools(&self) -> &[Pool] {
        &self.pools
    }

    /// The set `key` hashes to within `pool`.
    fn set_in(&self, pool: &Pool, bucket: &BucketName, key: &ObjectKey) -> &RecordSet {
        let mut h = SipHasher24::new_with_keys(self.placement_key.0, self.placement_key.1);
        h.write(bucket.as_str().as_bytes());
        h.write_u8(b'/');
        h.write(key.as_str().as_bytes());
        let sets = pool.sets.len() as u64;
        &self.sets[pool.sets.start + (h.finish() % sets) as usize]
    }

    /// The set that holds `key`, or where it goes when no pool holds it. Beyond one pool
    /// this asks each pool's set of the key; a pool that cannot answer makes it 503, never a
    /// guess that the key is absent there.
    pub(super) async fn set_for(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
    ) -> Result<&RecordSet, ObjectError> {
        if let [only] = self.pools.as_slice() {
            return Ok(self.set_in(only, bucket, key));
        }
        let sets: Vec<&RecordSet> = (self.pools.iter())
            .map(|pool| self.set_in(pool, bucket, key))
            .collect();
        let holdings = join_all(sets.iter().map(|set| holding(set, bucket, key))).await;
        let mut newest: Option<(i64, &RecordSet)> = None;
        for (set, holding) in sets.iter().zip(holdings) {
            if let Holding::Key { modified_ms } = holding? {
                // Held twice (a move between pools not finished): the newer copy is the key.
                if newest.is_none_or(|(ms, _)| modified_ms > ms) {
                    newest = Some((modified_ms, set));
                }
            }
        }
        match newest {
            Some((_, set)) => Ok(set),
            None => Ok(self.set_in(self.pool_for_new_key(bucket, key).await, bucket, key)),
        }
    }

    /// The set that holds a multipart upload: the pool whose set of the key holds its
    /// record (where the upload was created), or `NoSuchUpload`.
    pub(super) async fn set_for_upload(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
        upload_id: &str,
    ) -> Result<&RecordSet, ObjectError> {
        if let [only] = self.pools.as_slice() {
            return Ok(self.set_in(only, bucket, key));
        }
        let record_key = upload_key(bucket.as_str(), key.as_str(), upload_id);
        let sets: Vec<&RecordSet> = (self.pools.iter())
            .map(|pool| self.set_in(pool, bucket, key))
            .collect();
        let found = join_all(sets.iter().map(|set| set.read_agreed(UPLOADS, &record_key))).await;
        for (set, agreement) in sets.into_iter().zip(found) {
            if let Agreement::Found { .. } = agreement? {
                return Ok(set);
            }
        }
        Err(ObjectError::NoSuchUpload)
    }

    /// The pool a new key goes to: of the pools that have room, a rendezvous hash of the key
    /// weighted by each pool's free space, so that emptier pools take more of the new keys
    /// and every request for one key agrees while the figures stand.
    async fn pool_for_new_key(&self, bucket: &BucketName, key: &ObjectKey) -> &Pool {
        join_all(self.pools.iter().map(|pool| self.refresh_free_space(pool))).await;
        let score = |pool: &Pool| {
            let mut h = SipHasher24::new_with_keys(self.placement_key.0, self.placement_key.1);
            h.write_usize(pool.sets.start);
            h.write(bucket.as_str().as_bytes());
            h.write_u8(b'/');
            h.write(key.as_str().as_bytes());
            // A uniform draw in (0, 1]; the weighted rendezvous score is -w / ln(u).
            let u = ((h.finish() >> 11) + 1) as f64 / (1u64 << 53) as f64;
            pool.free_bytes() as f64 / -u.ln().min(-f64::MIN_POSITIVE)
        };
        (self.pools.iter())
            .max_by(|a, b| score(a).total_cmp(&score(b)))
            .expect("a store has a pool")
    }

    /// Asks a pool's drives for their free space, when the figure is older than its TTL.
    async fn refresh_free_space(&self, pool: &Pool) {
        {
            let mut asked = pool.asked.lock().expect("free-space clock");
            if asked.is_some_and(|at| at.elapsed() < FREE_SPACE_TTL) {
                return;
            }
            *asked = Some(Instant::now());
        }
        let sets = &self.sets[pool.sets.clone()];
        let free = join_all(sets.iter().map(|set| async move {
            let infos = join_all(set.drives().iter().map(|drive| drive.disk_info())).await;
            let smallest = infos.iter().flatten().map(|info| info.free).min();
            smallest.unwrap_or(0) * set.data_shards() as u64
        }))
        .await;
        pool.free.store(free.iter().sum(), Ordering::Relaxed);
    }
}

/// Whether `set` holds any record of a key: its current version (or delete marker), or
/// older versions of a versioned bucket.
async fn holding(
    set: &RecordSet,
    bucket: &BucketName,
    key: &ObjectKey,
) -> Result<Holding, ObjectError> {
    let db_key = object_key(bucket.as_str(), key.as_str());
    let (current, versions) = futures::join!(
        set.read_agreed::<ObjectRecord>(OBJECTS, &db_key),
        set.read_agreed(VERSIONS, &db_key)
    );
    if let Agreement::Found { value, .. } = current? {
        return Ok(Holding::Key {
            modified_ms: value.modified_ms,
        });
    }
    Ok(match versions? {
        Agreement::Found { .. } => Holding::Key { modified_ms: 0 },
        Agreement::NotFound => Holding::Nothing,
    })
}
