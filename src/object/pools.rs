//! Server pools: which pool, and so which erasure set, holds a key.
//!
//! A key hashes to one set within each pool, and lives in exactly one pool: the one whose
//! set holds a record of it. A key no pool holds goes to the pool a rendezvous hash of the
//! key picks, weighted by each pool's free space as measured when the store opened (and
//! coarsened, so that restarts rarely change it): every request for one new key picks the
//! same pool, and that pool is where a read looks first. With one pool (every deployment
//! that never grew) nothing is asked: the key's set is its hash.
//!
//! Writes ask every pool which holds the key before they write (a pool that cannot answer
//! makes it 503, never a guess that the key is absent there). Reads look in the key's
//! first-choice pool and ask the others only when that pool holds nothing of the key: a
//! key found there is the key, since a writer would have found it there too.

use std::hash::Hasher;
use std::ops::Range;

use futures::future::join_all;
use siphasher::sip::SipHasher24;
use tokio::sync::OnceCell;

use super::record::{object_key, upload_key, ObjectRecord, OBJECTS, UPLOADS, VERSIONS};
use super::{BucketName, ObjectError, ObjectKey, ObjectStore};
use crate::records::{Agreement, RecordSet};

/// Free-space weights are rounded to this many steps per doubling (about 9 % apart), so
/// that pools of about the same free space weigh the same from one start to the next.
const WEIGHT_STEPS_PER_DOUBLING: f64 = 8.0;

/// A server pool as the object layer places keys in it.
pub struct Pool {
    /// Its erasure sets, as indexes into the store's sets.
    pub sets: Range<usize>,
    /// Its weight for new keys: its free space when first asked, coarsened.
    weight: OnceCell<f64>,
}

impl Pool {
    pub fn new(sets: Range<usize>) -> Self {
        Pool {
            sets,
            weight: OnceCell::new(),
        }
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
        match self.holder(bucket, key, None).await? {
            Some(set) => Ok(set),
            None => Ok(self.set_in(self.first_choice(bucket, key).await, bucket, key)),
        }
    }

    /// The set of the pool that holds `key`, asking every pool but `known_empty`'s.
    async fn holder(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
        known_empty: Option<&RecordSet>,
    ) -> Result<Option<&RecordSet>, ObjectError> {
        let sets: Vec<&RecordSet> = (self.pools.iter())
            .map(|pool| self.set_in(pool, bucket, key))
            .filter(|set| known_empty.is_none_or(|empty| !std::ptr::eq(*set, empty)))
            .collect();
        let holdings = join_all(sets.iter().map(|set| holding(set, bucket, key))).await;
        let mut newest: Option<(i64, &RecordSet)> = None;
        for (set, holding) in sets.into_iter().zip(holdings) {
            if let Holding::Key { modified_ms } = holding? {
                // Held twice (a move between pools not finished): the newer copy is the key.
                if newest.is_none_or(|(ms, _)| modified_ms > ms) {
                    newest = Some((modified_ms, set));
                }
            }
        }
        Ok(newest.map(|(_, set)| set))
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

    /// The pool a new key goes to, and where a read of a key looks first: the highest
    /// rendezvous score of the key, weighted by each pool's free space.
    async fn first_choice(&self, bucket: &BucketName, key: &ObjectKey) -> &Pool {
        let weights = join_all(self.pools.iter().map(|pool| self.weight(pool))).await;
        let score = |(pool, weight): (&Pool, f64)| {
            let mut h = SipHasher24::new_with_keys(self.placement_key.0, self.placement_key.1);
            h.write_usize(pool.sets.start);
            h.write(bucket.as_str().as_bytes());
            h.write_u8(b'/');
            h.write(key.as_str().as_bytes());
            // A uniform draw in (0, 1); the weighted rendezvous score is -w / ln(u).
            let u = ((h.finish() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
            weight / -u.ln()
        };
        (self.pools.iter().zip(weights))
            .max_by(|a, b| score(*a).total_cmp(&score(*b)))
            .map(|(pool, _)| pool)
            .expect("a store has a pool")
    }

    /// A pool's weight for new keys: the free space its sets can take (each set's
    /// smallest drive times its data shards), asked once, rounded to a step of a log scale.
    async fn weight(&self, pool: &Pool) -> f64 {
        *(pool.weight)
            .get_or_init(|| async {
                let sets = &self.sets[pool.sets.clone()];
                let free = join_all(sets.iter().map(|set| async move {
                    let infos = join_all(set.drives().iter().map(|d| d.disk_info())).await;
                    let smallest = infos.iter().flatten().map(|info| info.free).min();
                    smallest.unwrap_or(0) * set.data_shards() as u64
                }))
                .await;
                let free = free.iter().sum::<u64>().max(1) as f64;
                ((free.log2() * WEIGHT_STEPS_PER_DOUBLING).round() / WEIGHT_STEPS_PER_DOUBLING)
                    .exp2()
            })
            .await
    }

    /// Runs `read` on the set that holds `key`: first in the key's first-choice pool, and
    /// only when that holds nothing of it (`NoSuchKey`, `NoSuchVersion`) in the pool that
    /// does, if another.
    pub(super) async fn read_where_held<'a, T, F, Fut>(
        &'a self,
        bucket: &BucketName,
        key: &ObjectKey,
        read: F,
    ) -> Result<T, ObjectError>
    where
        F: Fn(&'a RecordSet) -> Fut,
        Fut: std::future::Future<Output = Result<T, ObjectError>>,
    {
        let first = match self.pools.as_slice() {
            [only] => return read(self.set_in(only, bucket, key)).await,
            _ => self.set_in(self.first_choice(bucket, key).await, bucket, key),
        };
        match read(first).await {
            Err(e @ (ObjectError::NoSuchKey | ObjectError::NoSuchVersion)) => {
                match self.holder(bucket, key, Some(first)).await? {
                    Some(holder) => read(holder).await,
                    None => Err(e),
                }
            }
            other => other,
        }
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bytes::Bytes;
    use futures::StreamExt;

    use super::*;
    use crate::erasure::ErasureSet;
    use crate::object::{GetOptions, PutOptions};
    use crate::storage::faulty::{Call, FaultyDrive};
    use crate::storage::sim::CrashController;
    use crate::storage::Drive;

    /// A pool of one set of 6+3 simulated drives, each of which can be made to fail.
    struct SimPool {
        _sim: CrashController,
        drives: Vec<Arc<FaultyDrive>>,
    }

    impl SimPool {
        fn new() -> Self {
            let sim = CrashController::new(9);
            let drives = sim.drives().into_iter().map(FaultyDrive::new).collect();
            SimPool { _sim: sim, drives }
        }

        fn set(&self, index: usize) -> RecordSet {
            let drives = self
                .drives
                .iter()
                .map(|d| d.clone() as Arc<dyn Drive>)
                .collect();
            ErasureSet::new(index, drives, 3, 64 << 10).unwrap().into()
        }
    }

    fn store_of(pools: &[&SimPool]) -> Arc<ObjectStore> {
        let sets = pools
            .iter()
            .enumerate()
            .map(|(i, pool)| pool.set(i))
            .collect();
        let ranges = (0..pools.len()).map(|i| i..i + 1).collect();
        ObjectStore::pooled(sets, "pools", ranges)
    }

    fn bucket() -> BucketName {
        BucketName::parse("pooled").unwrap()
    }

    fn key(i: usize) -> ObjectKey {
        ObjectKey::parse(&format!("key-{i}")).unwrap()
    }

    async fn put(store: &ObjectStore, key: &ObjectKey, data: &'static [u8]) {
        let body = Box::pin(futures::stream::iter([Ok(Bytes::from_static(data))]));
        let bucket = bucket();
        store
            .put_object(&bucket, key, body, PutOptions::default())
            .await
            .unwrap();
    }

    async fn get(store: &ObjectStore, key: &ObjectKey) -> Result<Vec<u8>, ObjectError> {
        let bucket = bucket();
        let got = store
            .get_object(&bucket, key, GetOptions::default())
            .await?;
        let chunks: Vec<_> = got.body.collect().await;
        Ok(chunks
            .into_iter()
            .flat_map(|c| c.unwrap().to_vec())
            .collect())
    }

    async fn held_by(store: &ObjectStore, pool: usize, key: &ObjectKey) -> bool {
        let bucket = bucket();
        let set = store.set_in(&store.pools[pool], &bucket, key);
        holding(set, &bucket, key).await.unwrap() != Holding::Nothing
    }

    #[tokio::test]
    async fn keys_written_before_a_pool_was_added_stay_where_they_are() {
        let (first, second) = (SimPool::new(), SimPool::new());
        let bucket = bucket();
        let alone = store_of(&[&first]);
        alone.create_bucket(&bucket).await.unwrap();
        for i in 0..40 {
            put(&alone, &key(i), b"old").await;
        }
        drop(alone);

        let grown = store_of(&[&first, &second]);
        for i in 0..40 {
            assert_eq!(get(&grown, &key(i)).await.unwrap(), b"old");
            put(&grown, &key(i), b"overwritten").await;
            assert!(
                !held_by(&grown, 1, &key(i)).await,
                "key {i} went to the new pool"
            );
            assert_eq!(get(&grown, &key(i)).await.unwrap(), b"overwritten");
        }
        let mut in_second = 0;
        for i in 40..120 {
            put(&grown, &key(i), b"new").await;
            let (one, two) = (
                held_by(&grown, 0, &key(i)).await,
                held_by(&grown, 1, &key(i)).await,
            );
            assert!(one != two, "key {i} is in exactly one pool");
            in_second += usize::from(two);
            assert_eq!(get(&grown, &key(i)).await.unwrap(), b"new");
        }
        // Pools of equal weight share new keys about evenly (80 keys: 40 ± 15).
        assert!(
            (25..=55).contains(&in_second),
            "{in_second} of 80 in the new pool"
        );
    }

    #[tokio::test]
    async fn a_pool_that_cannot_answer_is_never_taken_to_lack_a_key() {
        let (first, second) = (SimPool::new(), SimPool::new());
        let bucket = bucket();
        let store = store_of(&[&first, &second]);
        store.create_bucket(&bucket).await.unwrap();
        for i in 0..20 {
            put(&store, &key(i), b"kept").await;
        }
        // Six drives of the second pool stop answering: the three left cannot tell whether
        // it holds a key (a key written to a write quorum may lack only from three drives).
        for drive in &second.drives[..6] {
            drive.fail(&[
                Call::MetaGet,
                Call::MetaApply,
                Call::MetaScan,
                Call::OpenShard,
            ]);
        }
        for i in 0..20 {
            let in_first = held_by(&store, 0, &key(i)).await;
            let read = get(&store, &key(i)).await;
            match (in_first, read) {
                (true, Ok(data)) => assert_eq!(data, b"kept"),
                (false, Err(ObjectError::Unavailable(_))) => {}
                (in_first, read) => panic!("key {i} (in the first pool: {in_first}): {read:?}"),
            }
        }
        // A new key cannot be written: the second pool might hold it.
        let body = Box::pin(futures::stream::iter([Ok(Bytes::from_static(b"x"))]));
        let new = store
            .put_object(&bucket, &key(99), body, PutOptions::default())
            .await;
        assert!(matches!(new, Err(ObjectError::Unavailable(_))), "{new:?}");
        assert!(matches!(
            get(&store, &key(98)).await,
            Err(ObjectError::Unavailable(_))
        ));
    }
}
