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
use std::sync::atomic::{AtomicU8, Ordering};

use futures::future::join_all;
use siphasher::sip::SipHasher24;
use tokio::sync::OnceCell;

use super::key_locks::{Chosen, MoveGate, Writing};
use super::moves::Moved;
use super::record::{
    inline_key, object_key, upload_key, BucketRecord, ObjectRecord, VersionsRecord, OBJECTS,
    UPLOADS, VERSIONS,
};
use super::{BucketName, ObjectError, ObjectKey, ObjectStore};
use crate::records::{Agreement, RecordSet};

/// How long a writer waits for the other writers of a key in a drained pool to finish, so
/// that it can move the key out first.
const MOVE_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Free-space weights are rounded to this many steps per doubling (about 9 % apart), so
/// that pools of about the same free space weigh the same from one start to the next.
const WEIGHT_STEPS_PER_DOUBLING: f64 = 8.0;

/// A server pool as the object layer places keys in it.
pub struct Pool {
    /// Its erasure sets, as indexes into the store's sets.
    pub sets: Range<usize>,
    /// Its weight for new keys: its free space when first asked, coarsened; in a cluster,
    /// the free space the pool list records (see [`Pool::weigh_by`]).
    weight: OnceCell<f64>,
    /// The free space a cluster's pool list records for the pool, in bytes (0: none).
    recorded_free: std::sync::atomic::AtomicU64,
    /// A [`PoolState`].
    state: AtomicU8,
    /// When this server saw it turn from joining to active.
    activated: std::sync::Mutex<Option<std::time::Instant>>,
}

/// How long after a pool turns active servers may still place new keys differently: each
/// follows the pool list within about a second.
const SETTLING: std::time::Duration = std::time::Duration::from_secs(10);

/// Whether a pool takes new keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PoolState {
    /// It takes new keys.
    #[default]
    Active,
    /// Its keys are moving to the other pools (a decommission); it takes no new ones.
    Decommissioning,
    /// It holds nothing: it may be dropped from the command line.
    Retired,
    /// Added to a cluster by a rolling restart: it takes no new keys until every node runs
    /// with it (a node that does not would not look for them there).
    Joining,
}

impl PoolState {
    pub fn as_str(self) -> &'static str {
        match self {
            PoolState::Active => "active",
            PoolState::Decommissioning => "decommissioning",
            PoolState::Retired => "retired",
            PoolState::Joining => "joining",
        }
    }
}

impl Pool {
    pub fn new(sets: Range<usize>) -> Self {
        Pool {
            sets,
            weight: OnceCell::new(),
            recorded_free: Default::default(),
            state: AtomicU8::new(PoolState::Active as u8),
            activated: std::sync::Mutex::new(None),
        }
    }

    /// Weighs new keys by `free` bytes from now on rather than by the pool's own measure:
    /// the nodes of a cluster weigh alike, so that every node picks the same pool for a new
    /// key.
    pub fn weigh_by(&self, free: u64) {
        self.recorded_free.store(free.max(1), Ordering::Relaxed);
    }

    pub fn state(&self) -> PoolState {
        match self.state.load(Ordering::Relaxed) {
            0 => PoolState::Active,
            1 => PoolState::Decommissioning,
            2 => PoolState::Retired,
            _ => PoolState::Joining,
        }
    }

    pub fn set_state(&self, state: PoolState) {
        let was = self.state();
        self.state.store(state as u8, Ordering::Relaxed);
        if (was, state) == (PoolState::Joining, PoolState::Active) {
            *self.activated.lock().expect("pool") = Some(std::time::Instant::now());
        }
    }

    /// Whether servers may place new keys differently because of this pool: it joins, or
    /// turned active moments ago.
    fn settling(&self) -> bool {
        let activated = *self.activated.lock().expect("pool");
        self.state() == PoolState::Joining || activated.is_some_and(|at| at.elapsed() < SETTLING)
    }
}

/// What a pool's set holds of one key.
#[derive(Debug, Clone, PartialEq)]
enum Holding {
    Nothing,
    /// The newest version's (or delete marker's) time, or 0 when only older versions are
    /// listed, and how many moves between pools carried it.
    Key {
        modified_ms: i64,
        pool_moves: u32,
    },
}

impl ObjectStore {
    pub fn pools(&self) -> &[Pool] {
        &self.pools
    }

    /// The set `key` hashes to within `pool`.
    pub(super) fn set_in(&self, pool: &Pool, bucket: &BucketName, key: &ObjectKey) -> &RecordSet {
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
    ///
    /// The writer holds the returned gate until its commit is done: the key does not move
    /// to another pool meanwhile.
    pub(super) async fn set_for(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
    ) -> Result<(&RecordSet, Writing<'_>), ObjectError> {
        if let [only] = self.pools.as_slice() {
            return Ok((self.set_in(only, bucket, key), MoveGate::none()));
        }
        // Whether the key stays in a drained pool for an upload open there.
        let mut pinned = false;
        loop {
            let mut writing = self.moves.write(bucket.as_str(), key.as_str()).await;
            // Both looks at once: a new key's write waits for one round of reads, not two.
            let (held, upload) = futures::join!(
                self.holder(bucket, key, None),
                self.upload_holder(bucket, key, None)
            );
            let set = match held? {
                // Nothing new lands in a pool being drained: the key moves out first. Not
                // in a cluster, where the one node elected for the drain moves keys (movers
                // on two nodes would copy into the same folders): the write lands in place,
                // and the drain moves the key at its next pass.
                Some(set)
                    if !pinned
                        && !set.is_shared_with_other_servers()
                        && self.pool_of(set).state() != PoolState::Active =>
                {
                    drop(writing);
                    pinned = !self.move_out(bucket, key, set).await?;
                    continue;
                }
                Some(set) => {
                    writing.chose(Chosen::Held(set.index()));
                    set
                }
                None => {
                    let set = match upload? {
                        Some(set) => set,
                        None => self.set_in(self.first_choice(bucket, key).await, bucket, key),
                    };
                    if set.is_shared_with_other_servers() && self.placement_settling() {
                        writing.chose(Chosen::NewWhileSettling(set.index()));
                    }
                    set
                }
            };
            return Ok((set, writing));
        }
    }

    /// A writer's check, before it commits, that its key did not move away: one that chose
    /// `set` because it held the key, and now finds nothing of it there, lost a race with a
    /// move by another server (this one's moves wait for its writers). Recreating the key
    /// there would leave it in two pools, so the client is told to try again
    /// ([`ObjectError::Moved`]): the next try finds the key where it went.
    pub(super) fn not_moved_away(
        &self,
        set: &RecordSet,
        bucket: &str,
        key: &str,
        holds_key: bool,
    ) -> Result<(), ObjectError> {
        let moved = !holds_key
            && set.is_shared_with_other_servers()
            && (self.moves.choices(bucket, key)).contains(&Chosen::Held(set.index()));
        match moved {
            true => Err(ObjectError::Moved),
            false => Ok(()),
        }
    }

    /// Whether the servers of the deployment may place a new key in different pools now.
    fn placement_settling(&self) -> bool {
        self.pools.len() > 1 && self.pools.iter().any(Pool::settling)
    }

    /// A writer's check, after it committed a new key while placement settles (see
    /// [`Chosen::NewWhileSettling`]), that no other server created the key in another pool
    /// at once. Both look after their commits, so at least one sees the other; one that
    /// does takes its creation back (if nothing changed it since) and is told to try again
    /// ([`ObjectError::Moved`]), and the retry finds the key where the other put it.
    ///
    /// Any other answer leaves the committed version as it is (`Ok`): the caller deletes
    /// the data of a write that failed, so an error here must mean the version is gone.
    /// A look that cannot tell (a pool without its read quorum) keeps it too.
    pub(super) async fn created_alone(
        &self,
        set: &RecordSet,
        bucket: &BucketRecord,
        key: &ObjectKey,
        created: &ObjectRecord,
    ) -> Result<(), ObjectError> {
        let choices = self.moves.choices(&bucket.name, key.as_str());
        if !choices.contains(&Chosen::NewWhileSettling(set.index())) {
            return Ok(());
        }
        let Ok(name) = BucketName::parse(&bucket.name) else {
            return Ok(());
        };
        // Another pool holds the key, or an upload of it (whose completion would put it
        // there).
        let (held, upload) = futures::join!(
            self.holder(&name, key, Some(set)),
            self.upload_holder(&name, key, Some(set))
        );
        if !matches!(held, Ok(Some(_))) && !matches!(upload, Ok(Some(_))) {
            return Ok(());
        }
        let db_key = object_key(&bucket.name, key.as_str());
        let (current, history) = futures::join!(
            set.read_agreed::<ObjectRecord>(OBJECTS, &db_key),
            set.read_agreed::<VersionsRecord>(VERSIONS, &db_key)
        );
        let (Ok(current), Ok(history)) = (current, history) else {
            return Ok(());
        };
        let (current, history) = (current.found(), history.found());
        let ours = |record: &ObjectRecord| record.data_id == created.data_id;
        let untouched = current.as_ref().is_some_and(ours)
            && history
                .as_ref()
                .is_none_or(|h| matches!(h.versions.as_slice(), [only] if ours(only)));
        // A version written over this one since keeps it (in a history) or deleted its
        // data: either way it stays as it is, the key in two pools, the newer served.
        let taken = untouched && {
            let inline =
                (created.inline).then(|| inline_key(&bucket.name, key.as_str(), created.data_id));
            let carried: Vec<&ObjectRecord> = current.iter().collect();
            let records = (&current, &history);
            super::moves::take_back(bucket, key, &carried, set, records, inline.as_slice()).await
        };
        tracing::warn!(bucket = %bucket.name, %key, taken, "a new key was created in two pools at once while a pool turned active");
        match taken {
            true => Err(ObjectError::Moved),
            false => Ok(()),
        }
    }

    /// Whether `key` moved away from `set` while an upload of it was opened there (by
    /// another server's move: this one's wait for its writers). Checked after the upload's
    /// record is committed, as a move checks for uploads after its copy is committed: of
    /// the two, at least one sees the other, so either the upload is refused here or the
    /// move takes its copy back and leaves the key with the upload.
    pub(super) async fn moved_while_upload_opened(
        &self,
        set: &RecordSet,
        bucket: &BucketName,
        key: &ObjectKey,
    ) -> Result<bool, ObjectError> {
        if self.pools.len() < 2 || !set.is_shared_with_other_servers() {
            return Ok(false);
        }
        let elsewhere = self.holder(bucket, key, Some(set)).await?;
        Ok(elsewhere.is_some())
    }

    /// The pool a set belongs to.
    fn pool_of(&self, set: &RecordSet) -> &Pool {
        (self.pools.iter())
            .find(|pool| pool.sets.contains(&set.index()))
            .expect("every set is in a pool")
    }

    /// Moves `key` out of `from` (a pool being drained) to its first-choice pool, for a
    /// writer; waits while other writers of it are in flight. `false` when it stays: an
    /// upload of it is open there.
    async fn move_out(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
        from: &RecordSet,
    ) -> Result<bool, ObjectError> {
        let bucket_record = self.bucket(bucket).await?;
        let to = self.set_in(self.first_choice(bucket, key).await, bucket, key);
        let started = std::time::Instant::now();
        loop {
            match self.move_key(&bucket_record, key, from, to).await? {
                Moved::Busy if started.elapsed() < MOVE_WAIT => {
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await
                }
                Moved::Busy => return Err(ObjectError::Conflict),
                Moved::Pinned => return Ok(false),
                Moved::Done { .. } | Moved::Nothing => return Ok(true),
            }
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
        let mut newest: Option<((i64, std::cmp::Reverse<u32>), &RecordSet)> = None;
        for (set, holding) in sets.into_iter().zip(holdings) {
            if let Holding::Key {
                modified_ms,
                pool_moves,
            } = holding?
            {
                // Held twice (a move between pools not finished): the newer copy is the key;
                // of two alike, the one the move copied from (moved fewer times), which it
                // leaves only once the other holds the key for good: so writers that chose
                // before the copy and after it meet in one set.
                let rank = (modified_ms, std::cmp::Reverse(pool_moves));
                if newest.is_none_or(|(newest, _)| rank > newest) {
                    newest = Some((rank, set));
                }
            }
        }
        Ok(newest.map(|(_, set)| set))
    }

    /// The set of the pool where an upload of `key` is open, if any: a new key goes there,
    /// or the upload's completion (where its parts are) would put the key in a second pool
    /// when the pools' weights changed since it opened.
    /// Asks every pool but `other_than`'s.
    async fn upload_holder(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
        other_than: Option<&RecordSet>,
    ) -> Result<Option<&RecordSet>, ObjectError> {
        let prefix = [object_key(bucket.as_str(), key.as_str()).as_slice(), &[0]].concat();
        let sets: Vec<&RecordSet> = (self.pools.iter())
            .map(|pool| self.set_in(pool, bucket, key))
            .filter(|set| other_than.is_none_or(|other| !std::ptr::eq(*set, other)))
            .collect();
        let open = join_all(
            sets.iter()
                .map(|set| super::moves::open_uploads(set, &prefix)),
        )
        .await;
        for (set, open) in sets.into_iter().zip(open) {
            if open? > 0 {
                return Ok(Some(set));
            }
        }
        Ok(None)
    }

    /// The set that holds a multipart upload: the pool whose set of the key holds its
    /// record (where the upload was created), or `NoSuchUpload`.
    pub(super) async fn set_for_upload(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
        upload_id: &str,
    ) -> Result<(&RecordSet, Writing<'_>), ObjectError> {
        if let [only] = self.pools.as_slice() {
            return Ok((self.set_in(only, bucket, key), MoveGate::none()));
        }
        let writing = self.moves.write(bucket.as_str(), key.as_str()).await;
        let record_key = upload_key(bucket.as_str(), key.as_str(), upload_id);
        let sets: Vec<&RecordSet> = (self.pools.iter())
            .map(|pool| self.set_in(pool, bucket, key))
            .collect();
        let found = join_all(sets.iter().map(|set| set.read_agreed(UPLOADS, &record_key))).await;
        for (set, agreement) in sets.into_iter().zip(found) {
            if let Agreement::Found { .. } = agreement? {
                return Ok((set, writing));
            }
        }
        Err(ObjectError::NoSuchUpload)
    }

    /// The pool a new key goes to, and where a read of a key looks first: of the active
    /// pools, the highest rendezvous score of the key, weighted by each pool's free space.
    pub(super) async fn first_choice(&self, bucket: &BucketName, key: &ObjectKey) -> &Pool {
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
        let active = |(pool, _): &(&Pool, f64)| pool.state() == PoolState::Active;
        let candidates: Vec<(&Pool, f64)> = self.pools.iter().zip(weights).collect();
        let taking = match candidates.iter().any(active) {
            true => candidates.into_iter().filter(active).collect(),
            false => candidates,
        };
        (taking.into_iter())
            .max_by(|a, b| score(*a).total_cmp(&score(*b)))
            .map(|(pool, _)| pool)
            .expect("a store has a pool")
    }

    /// A pool's weight for new keys: the free space its sets can take, asked once, rounded
    /// to a step of a log scale.
    async fn weight(&self, pool: &Pool) -> f64 {
        let coarse = |free: u64| {
            let free = free.max(1) as f64;
            ((free.log2() * WEIGHT_STEPS_PER_DOUBLING).round() / WEIGHT_STEPS_PER_DOUBLING).exp2()
        };
        match pool.recorded_free.load(Ordering::Relaxed) {
            0 => {
                *(pool.weight)
                    .get_or_init(|| async { coarse(self.pool_free(pool).await) })
                    .await
            }
            recorded => coarse(recorded),
        }
    }

    /// Runs `read` on the set that holds `key`: first in the key's first-choice pool, and
    /// only when that holds nothing of it (`NoSuchKey`, `NoSuchVersion`) in the pool that
    /// does, if another; after a miss there too, once more wherever it is.
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
        let missed = |read: &Result<T, ObjectError>| {
            matches!(
                read,
                Err(ObjectError::NoSuchKey | ObjectError::NoSuchVersion)
            )
        };
        let looked = read(first).await;
        if !missed(&looked) {
            return looked;
        }
        if let Some(holder) = self.holder(bucket, key, Some(first)).await? {
            let looked = read(holder).await;
            if !missed(&looked) {
                return looked;
            }
        }
        // A key moving between pools is in the destination before it leaves the source, yet
        // two looks can miss it: the destination looked at before the move's copy, the
        // source after its removal. With two pools one of them was the first choice, which
        // holds it now; with more, it may be any.
        match self.pools.len() {
            2 => read(first).await,
            _ => match self.holder(bucket, key, None).await? {
                Some(holder) => read(holder).await,
                None => looked,
            },
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
            pool_moves: value.pool_moves,
        });
    }
    Ok(match versions? {
        Agreement::Found { value, .. } => Holding::Key {
            modified_ms: 0,
            pool_moves: (value.versions.iter().map(|v| v.pool_moves))
                .max()
                .unwrap_or(0),
        },
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
    use crate::object::{GetOptions, PoolUsage, PutOptions, RenameOptions};
    use crate::storage::faulty::{Call, FaultyDrive};
    use crate::storage::sim::CrashController;
    use crate::storage::Drive;

    /// A pool of one set of simulated drives (6+3 unless told), each of which can be made
    /// to fail.
    struct SimPool {
        _sim: CrashController,
        drives: Vec<Arc<FaultyDrive>>,
        parity: usize,
        /// Whether other servers write its set too (a cluster's).
        shared: bool,
    }

    impl SimPool {
        fn new() -> Self {
            Self::coded(6, 3)
        }

        fn coded(data: usize, parity: usize) -> Self {
            let sim = CrashController::new(data + parity);
            let drives = sim.drives().into_iter().map(FaultyDrive::new).collect();
            SimPool {
                _sim: sim,
                drives,
                parity,
                shared: false,
            }
        }

        fn set(&self, index: usize) -> RecordSet {
            let drives = self
                .drives
                .iter()
                .map(|d| d.clone() as Arc<dyn Drive>)
                .collect();
            let set: RecordSet = ErasureSet::new(index, drives, self.parity, 64 << 10)
                .unwrap()
                .into();
            match self.shared {
                true => set.shared_with_other_servers(std::time::Duration::from_secs(10)),
                false => set,
            }
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

    /// Whether `pool`'s set of `key` holds an open upload of it.
    async fn held_by_upload(store: &ObjectStore, pool: usize, key: &ObjectKey) -> bool {
        let set = store.set_in(&store.pools[pool], &bucket(), key);
        let holder = store.upload_holder(&bucket(), key, None).await.unwrap();
        holder.is_some_and(|holder| std::ptr::eq(holder, set))
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
        // What a server does when it starts with a new pool: the bucket made before it is
        // put on the new pool's set too.
        assert!(store_of(&[&second]).bucket(&bucket).await.is_err());
        grown.spread_records_to_every_set().await.unwrap();
        assert!(store_of(&[&second]).bucket(&bucket).await.is_ok());
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

    /// A listing of every version of the bucket, as (key, version id, delete marker, etag).
    async fn versions(store: &ObjectStore) -> Vec<(String, String, bool, String)> {
        use crate::object::{VersionEntry, VersionsQuery};
        let query = VersionsQuery {
            prefix: String::new(),
            delimiter: None,
            key_marker: None,
            version_id_marker: None,
            max_keys: 1000,
        };
        let page = store.list_object_versions(&bucket(), &query).await.unwrap();
        (page.entries.into_iter())
            .filter_map(|entry| match entry {
                VersionEntry::Version { key, record, .. } => Some((
                    key,
                    record.version_id_str().to_string(),
                    record.delete_marker,
                    record.etag.clone(),
                )),
                VersionEntry::CommonPrefix(_) => None,
            })
            .collect()
    }

    #[tokio::test]
    async fn a_drained_pool_gives_every_version_to_the_others_and_ends_empty() {
        drain_gives_every_version_to(SimPool::new()).await;
    }

    #[tokio::test]
    async fn a_drain_into_a_pool_of_another_geometry_codes_the_data_anew() {
        drain_gives_every_version_to(SimPool::coded(4, 2)).await;
    }

    /// Fills a pool of 6+3, adds `second`, and drains the first into it.
    async fn drain_gives_every_version_to(second: SimPool) {
        use crate::object::{MoveProgress, Versioning};
        let first = SimPool::new();
        let alone = store_of(&[&first]);
        alone.create_bucket(&bucket()).await.unwrap();
        alone
            .set_versioning(&bucket(), Versioning::Enabled)
            .await
            .unwrap();
        let large: &'static [u8] = Box::leak(vec![9u8; 300 << 10].into_boxed_slice());
        for i in 0..12 {
            put(&alone, &key(i), b"first").await;
            put(&alone, &key(i), if i % 3 == 0 { large } else { b"second" }).await;
            if i % 4 == 1 {
                alone.delete_object(&bucket(), &key(i), None).await.unwrap();
            }
        }
        // Renamed objects: their versions carry the rename's token (and, unversioned, the key
        // their data folder came from).
        let plain = BucketName::parse("plainpool").unwrap();
        alone.create_bucket(&plain).await.unwrap();
        let renamed = RenameOptions {
            client_token: Some("token".into()),
            ..RenameOptions::default()
        };
        for bucket in [&plain, &bucket()] {
            let body = Box::pin(futures::stream::iter([Ok(Bytes::from_static(large))]));
            (alone
                .put_object(bucket, &key(50), body, PutOptions::default())
                .await)
                .unwrap();
            (alone
                .rename_object(bucket, &key(51), &key(50), &renamed)
                .await)
                .unwrap();
        }
        let before = versions(&alone).await;
        // As a server does when it stops.
        alone.tidied().await;
        drop(alone);

        let store = store_of(&[&first, &second]);
        store.pools()[0].set_state(PoolState::Decommissioning);
        // A write of a key of the drained pool moves the key out before it lands.
        put(&store, &key(0), b"third").await;
        assert!(!held_by(&store, 0, &key(0)).await && held_by(&store, 1, &key(0)).await);
        let progress = MoveProgress::default();
        let pass = store.drain_pass(0, &progress, || async {}).await.unwrap();
        assert!(pass.drained(), "{pass:?}");
        assert_eq!(
            pass.keys_seen, 14,
            "key 0 had moved already; 3 keys renamed"
        );
        for i in 0..12 {
            assert!(
                !held_by(&store, 0, &key(i)).await,
                "key {i} is still in the drained pool"
            );
        }
        let again = store.drain_pass(0, &progress, || async {}).await.unwrap();
        assert_eq!(again.keys_seen, 0);
        // The moved records say how the destination codes their data (inline and not).
        let coded = (second.drives.len() - second.parity, second.parity);
        for i in [2, 3] {
            let set = store.set_in(&store.pools[1], &bucket(), &key(i));
            let db_key = object_key(bucket().as_str(), key(i).as_str());
            let record = set.read_agreed::<ObjectRecord>(OBJECTS, &db_key).await;
            let record = record.unwrap().found().expect("moved");
            let geometry = (record.data_shards as usize, record.parity_shards as usize);
            assert_eq!(geometry, coded, "key {i}");
        }

        let mut after = versions(&store).await;
        assert_eq!(after.len(), before.len() + 1);
        let new: Vec<_> = after
            .iter()
            .filter(|v| !before.contains(v))
            .cloned()
            .collect();
        assert!(
            new.len() == 1 && new[0].0 == "key-0",
            "the write during the drain: {new:?}"
        );
        after.retain(|v| before.contains(v));
        assert_eq!(after, before, "every version and delete marker, as it was");
        // Once the drained pool is gone, the other answers alone: the bucket's record was
        // shared with it, and every key is there.
        drop(store);
        let remaining = store_of(&[&second]);
        for i in 1..12 {
            let want: &[u8] = if i % 3 == 0 { large } else { b"second" };
            match get(&remaining, &key(i)).await {
                Ok(data) => assert!(i % 4 != 1 && data == want, "key {i}"),
                Err(ObjectError::DeleteMarker { .. }) => assert_eq!(i % 4, 1, "key {i}"),
                Err(e) => panic!("key {i}: {e}"),
            }
        }
        assert_eq!(get(&remaining, &key(0)).await.unwrap(), b"third");
        assert_eq!(get(&remaining, &key(51)).await.unwrap(), large);
        let got = remaining
            .get_object(&plain, &key(51), GetOptions::default())
            .await;
        let chunks: Vec<_> = got.unwrap().body.collect().await;
        let data: Vec<u8> = chunks
            .into_iter()
            .flat_map(|c| c.unwrap().to_vec())
            .collect();
        assert_eq!(data, large, "the unversioned rename's destination");
        // The token went with the version: a retry of the rename is still a success.
        (remaining
            .rename_object(&plain, &key(51), &key(50), &renamed)
            .await)
            .unwrap();
    }

    #[tokio::test]
    async fn in_a_cluster_a_write_of_a_key_in_a_drained_pool_lands_in_place() {
        use crate::object::MoveProgress;
        let (mut first, mut second) = (SimPool::new(), SimPool::new());
        (first.shared, second.shared) = (true, true);
        let alone = store_of(&[&first]);
        alone.create_bucket(&bucket()).await.unwrap();
        put(&alone, &key(0), b"before the drain").await;
        drop(alone);
        let store = store_of(&[&first, &second]);
        store.pools()[0].set_state(PoolState::Decommissioning);
        put(&store, &key(0), b"during the drain").await;
        assert!(
            held_by(&store, 0, &key(0)).await && !held_by(&store, 1, &key(0)).await,
            "only the node elected for the drain moves keys: the write lands in place"
        );
        let progress = MoveProgress::default();
        let pass = store.drain_pass(0, &progress, || async {}).await.unwrap();
        assert!(pass.drained(), "{pass:?}");
        assert!(!held_by(&store, 0, &key(0)).await && held_by(&store, 1, &key(0)).await);
        assert_eq!(get(&store, &key(0)).await.unwrap(), b"during the drain");
    }

    #[tokio::test]
    async fn a_move_cut_short_between_its_commits_is_finished_by_the_next_pass() {
        use crate::object::{MoveProgress, Versioning};
        let (first, second) = (SimPool::new(), SimPool::new());
        let alone = store_of(&[&first]);
        alone.create_bucket(&bucket()).await.unwrap();
        (alone.set_versioning(&bucket(), Versioning::Enabled).await).unwrap();
        let large: &'static [u8] = Box::leak(vec![7u8; 300 << 10].into_boxed_slice());
        put(&alone, &key(0), b"inline").await;
        put(&alone, &key(0), large).await;
        let before = versions(&alone).await;
        // As a server does when it stops.
        alone.tidied().await;
        drop(alone);
        let store = store_of(&[&first, &second]);
        store.spread_records_to_every_set().await.unwrap();
        store.pools()[0].set_state(PoolState::Decommissioning);

        // The destination takes the key's records, then neither the source's removal nor
        // the undo of the copy reaches a quorum: as if the mover died between its commits.
        for drive in &first.drives[..4] {
            drive.fail(&[Call::MetaApply]);
        }
        for drive in &second.drives {
            drive.fail_after(Call::MetaApply, 1);
        }
        let record = store.bucket(&bucket()).await.unwrap();
        let (from, to) = (
            store.set_in(&store.pools[0], &bucket(), &key(0)),
            store.set_in(&store.pools[1], &bucket(), &key(0)),
        );
        assert!(store.move_key(&record, &key(0), from, to).await.is_err());
        for drive in first.drives.iter().chain(&second.drives) {
            drive.recover();
        }
        assert!(held_by(&store, 0, &key(0)).await && held_by(&store, 1, &key(0)).await);

        let progress = MoveProgress::default();
        let pass = store.drain_pass(0, &progress, || async {}).await.unwrap();
        assert!(pass.drained(), "{pass:?}");
        assert!(!held_by(&store, 0, &key(0)).await && held_by(&store, 1, &key(0)).await);
        assert_eq!(versions(&store).await, before);
        assert_eq!(get(&store, &key(0)).await.unwrap(), large);
    }

    #[tokio::test]
    async fn a_key_held_twice_by_a_cut_short_move_is_the_copy_it_was_moved_from() {
        let (first, second) = (SimPool::new(), SimPool::new());
        let store = store_of(&[&first, &second]);
        store.create_bucket(&bucket()).await.unwrap();
        // A key of the second pool, moved to the first (which comes first in the list), the
        // move cut short between its commits: both pools hold the same version.
        let mut i = 0;
        loop {
            put(&store, &key(i), b"in the second pool").await;
            if held_by(&store, 1, &key(i)).await {
                break;
            }
            i += 1;
        }
        let (from, to) = (
            store.set_in(&store.pools[1], &bucket(), &key(i)),
            store.set_in(&store.pools[0], &bucket(), &key(i)),
        );
        for drive in &second.drives[..4] {
            drive.fail(&[Call::MetaApply]);
        }
        for drive in &first.drives {
            drive.fail_after(Call::MetaApply, 1);
        }
        let record = store.bucket(&bucket()).await.unwrap();
        assert!(store.move_key(&record, &key(i), from, to).await.is_err());
        for drive in first.drives.iter().chain(&second.drives) {
            drive.recover();
        }
        assert!(held_by(&store, 0, &key(i)).await && held_by(&store, 1, &key(i)).await);
        // Every writer goes to the copy the move came from, so writers that chose before
        // the copy and after it meet in one set.
        let holder = store.holder(&bucket(), &key(i), None).await.unwrap();
        assert!(std::ptr::eq(holder.unwrap(), from));
    }

    #[tokio::test]
    async fn a_write_that_loses_its_key_to_a_move_on_another_server_is_told_to_try_again() {
        let (mut first, mut second) = (SimPool::new(), SimPool::new());
        (first.shared, second.shared) = (true, true);
        let (here, there) = (store_of(&[&first, &second]), store_of(&[&first, &second]));
        here.create_bucket(&bucket()).await.unwrap();
        let key = key(0);
        put(&here, &key, b"old").await;
        let home = usize::from(held_by(&here, 1, &key).await);
        let (from, to) = (
            here.set_in(&here.pools[home], &bucket(), &key),
            here.set_in(&here.pools[1 - home], &bucket(), &key),
        );

        // Another server starts an overwrite: it finds the key where it is.
        let (sender, receiver) = futures::channel::mpsc::unbounded::<std::io::Result<Bytes>>();
        sender
            .unbounded_send(Ok(Bytes::from_static(b"new ")))
            .unwrap();
        let writer = {
            let (there, key) = (there.clone(), key.clone());
            tokio::spawn(async move {
                let body: crate::body::ByteStream = Box::pin(receiver);
                let options = PutOptions::default();
                there.put_object(&bucket(), &key, body, options).await
            })
        };
        while there
            .moves
            .choices(bucket().as_str(), key.as_str())
            .is_empty()
        {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        // Meanwhile this server moves the key to the other pool.
        let record = here.bucket(&bucket()).await.unwrap();
        let moved = here.move_key(&record, &key, from, to).await.unwrap();
        assert!(matches!(moved, Moved::Done { .. }), "{moved:?}");
        sender
            .unbounded_send(Ok(Bytes::from_static(b"bytes")))
            .unwrap();
        drop(sender);
        let written = writer.await.unwrap();
        assert!(
            matches!(written, Err(ObjectError::Moved)),
            "the write must not put the key back where it was: {written:?}"
        );
        assert!(!held_by(&here, home, &key).await && held_by(&here, 1 - home, &key).await);
        // The client's next try lands where the key went.
        put(&there, &key, b"new bytes").await;
        assert!(!held_by(&here, home, &key).await && held_by(&here, 1 - home, &key).await);
        assert_eq!(get(&here, &key).await.unwrap(), b"new bytes");
    }

    /// Two overwrites of a key in flight on one server when another server moves the key:
    /// both are told to try again. Before, a server acted on a writer's choice only while it
    /// was the key's one writer, and both put the key back where it was.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn writers_of_a_key_in_flight_together_all_meet_its_move_on_another_server() {
        let (mut first, mut second) = (SimPool::new(), SimPool::new());
        (first.shared, second.shared) = (true, true);
        let (here, there) = (store_of(&[&first, &second]), store_of(&[&first, &second]));
        here.create_bucket(&bucket()).await.unwrap();
        let key = key(0);
        put(&here, &key, b"old").await;
        let home = usize::from(held_by(&here, 1, &key).await);
        let (from, to) = (
            here.set_in(&here.pools[home], &bucket(), &key),
            here.set_in(&here.pools[1 - home], &bucket(), &key),
        );
        let writers = [put_held(&there, &key).await, put_held(&there, &key).await];
        let record = here.bucket(&bucket()).await.unwrap();
        let moved = here.move_key(&record, &key, from, to).await.unwrap();
        assert!(matches!(moved, Moved::Done { .. }), "{moved:?}");
        for (writer, rest) in writers {
            rest.unbounded_send(Ok(Bytes::from_static(b"new"))).unwrap();
            drop(rest);
            let written = writer.await.unwrap();
            assert!(matches!(written, Err(ObjectError::Moved)), "{written:?}");
        }
        assert!(!held_by(&here, home, &key).await && held_by(&here, 1 - home, &key).await);
        assert!(there
            .moves
            .choices(bucket().as_str(), key.as_str())
            .is_empty());
    }

    /// A tag or ACL change through another server that finds its key moved away meanwhile
    /// is told to try again (503); before, it was answered NoSuchKey.
    #[tokio::test]
    async fn a_metadata_change_that_loses_its_key_to_a_move_on_another_server_is_told_to_try_again()
    {
        let (mut first, mut second) = (SimPool::new(), SimPool::new());
        (first.shared, second.shared) = (true, true);
        let (here, there) = (store_of(&[&first, &second]), store_of(&[&first, &second]));
        here.create_bucket(&bucket()).await.unwrap();
        let key = key(0);
        put(&here, &key, b"tagged").await;
        let home = usize::from(held_by(&here, 1, &key).await);
        let (from, to) = (
            here.set_in(&here.pools[home], &bucket(), &key),
            here.set_in(&here.pools[1 - home], &bucket(), &key),
        );

        // The other server's change has found the key's set, and waits for the key's lock
        // (held here by the test) before it reads the key there.
        let lock = there.locks.write(bucket().as_str(), key.as_str()).await;
        let change = {
            let (there, key) = (there.clone(), key.clone());
            tokio::spawn(async move {
                let change = |now: &ObjectRecord| Ok(now.clone());
                there
                    .update_object_metadata(&bucket(), &key, None, change)
                    .await
            })
        };
        while there
            .moves
            .choices(bucket().as_str(), key.as_str())
            .is_empty()
        {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        let record = here.bucket(&bucket()).await.unwrap();
        let moved = here.move_key(&record, &key, from, to).await.unwrap();
        assert!(matches!(moved, Moved::Done { .. }), "{moved:?}");
        drop(lock);
        let changed = change.await.unwrap();
        assert!(matches!(changed, Err(ObjectError::Moved)), "{changed:?}");
        // The client's next try finds the key where it went.
        let change = |now: &ObjectRecord| Ok(now.clone());
        there
            .update_object_metadata(&bucket(), &key, None, change)
            .await
            .unwrap();
        assert!(!held_by(&here, home, &key).await && held_by(&here, 1 - home, &key).await);
        assert_eq!(get(&here, &key).await.unwrap(), b"tagged");
    }

    #[tokio::test]
    async fn a_read_that_looks_on_both_sides_of_a_move_still_finds_the_key() {
        use std::sync::atomic::AtomicBool;
        let (first, second) = (SimPool::new(), SimPool::new());
        let alone = store_of(&[&first]);
        alone.create_bucket(&bucket()).await.unwrap();
        for i in 0..20 {
            put(&alone, &key(i), b"moving").await;
        }
        drop(alone);
        let store = store_of(&[&first, &second]);
        store.spread_records_to_every_set().await.unwrap();
        // A key of the first pool whose first choice is now the second.
        let mut moving = None;
        for i in 0..20 {
            if std::ptr::eq(
                store.first_choice(&bucket(), &key(i)).await,
                &store.pools[1],
            ) {
                moving = Some(key(i));
                break;
            }
        }
        let key = moving.expect("a key whose first choice is the new pool");
        let record = store.bucket(&bucket()).await.unwrap();
        let (from, to) = (
            store.set_in(&store.pools[0], &bucket(), &key),
            store.set_in(&store.pools[1], &bucket(), &key),
        );
        // The read looks at the key's first choice, which misses it; the key moves there
        // before the read looks at the pool it came from.
        let db_key = object_key(bucket().as_str(), key.as_str());
        let first_look = AtomicBool::new(true);
        let found = store
            .read_where_held(&bucket(), &key, |set| {
                let (store, record, key, db_key) = (&store, &record, &key, db_key.clone());
                let first_look = first_look.swap(false, Ordering::SeqCst);
                async move {
                    let found = set.read_agreed::<ObjectRecord>(OBJECTS, &db_key).await?;
                    if first_look {
                        let moved = store.move_key(record, key, from, to).await?;
                        assert!(matches!(moved, Moved::Done { .. }), "{moved:?}");
                    }
                    found.found().ok_or(ObjectError::NoSuchKey)
                }
            })
            .await;
        assert!(found.is_ok(), "{found:?}");
    }

    /// Two servers over shared pools, a key of `data` written through the first; the pool
    /// that holds it, and the drives of each pool.
    async fn two_servers() -> (Arc<ObjectStore>, Arc<ObjectStore>, usize, [SimPool; 2]) {
        let (mut first, mut second) = (SimPool::new(), SimPool::new());
        (first.shared, second.shared) = (true, true);
        let (here, there) = (store_of(&[&first, &second]), store_of(&[&first, &second]));
        here.create_bucket(&bucket()).await.unwrap();
        put(&here, &key(0), b"old").await;
        let home = usize::from(held_by(&here, 1, &key(0)).await);
        (here, there, home, [first, second])
    }

    async fn uploads_open(store: &ObjectStore, pool: usize, key: &ObjectKey) -> u64 {
        let set = store.set_in(&store.pools[pool], &bucket(), key);
        let prefix = [object_key(bucket().as_str(), key.as_str()).as_slice(), &[0]].concat();
        super::super::moves::open_uploads(set, &prefix)
            .await
            .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_upload_opened_on_another_server_where_its_key_is_moving_away_is_refused() {
        let (here, there, home, pools) = two_servers().await;
        let key = key(0);
        // Commits reach the key's pool late: the upload's record lands after the move
        // looked for uploads, before the move's removal.
        for drive in &pools[home].drives {
            drive.slow_down_writes(std::time::Duration::from_millis(400));
        }
        let opening = {
            let (there, key) = (there.clone(), key.clone());
            tokio::spawn(async move {
                (there.create_multipart_upload(&bucket(), &key, Default::default())).await
            })
        };
        while there
            .moves
            .choices(bucket().as_str(), key.as_str())
            .is_empty()
        {
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        let record = here.bucket(&bucket()).await.unwrap();
        let (from, to) = (
            here.set_in(&here.pools[home], &bucket(), &key),
            here.set_in(&here.pools[1 - home], &bucket(), &key),
        );
        let moved = here.move_key(&record, &key, from, to).await.unwrap();
        assert!(matches!(moved, Moved::Done { .. }), "{moved:?}");
        let opened = opening.await.unwrap();
        assert!(
            matches!(opened, Err(ObjectError::Moved)),
            "an upload left where its key is not: {opened:?}"
        );
        assert_eq!(uploads_open(&here, home, &key).await, 0);
        assert!(!held_by(&here, home, &key).await && held_by(&here, 1 - home, &key).await);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_move_that_meets_an_upload_opened_on_another_server_leaves_the_key_with_it() {
        use crate::object::CompleteOptions;
        let (here, there, home, pools) = two_servers().await;
        let key = key(0);
        // The move's copy reaches its destination late: an upload opens meanwhile.
        for drive in &pools[1 - home].drives {
            drive.slow_down_writes(std::time::Duration::from_millis(400));
        }
        let moving = {
            let (here, key) = (here.clone(), key.clone());
            tokio::spawn(async move {
                let record = here.bucket(&bucket()).await.unwrap();
                let (from, to) = (
                    here.set_in(&here.pools[home], &bucket(), &key),
                    here.set_in(&here.pools[1 - home], &bucket(), &key),
                );
                here.move_key(&record, &key, from, to).await
            })
        };
        tokio::time::sleep(std::time::Duration::from_millis(150)).await;
        let (upload_id, part) = open_upload(&there, &key, b"new").await;
        let moved = moving.await.unwrap().unwrap();
        assert_eq!(moved, Moved::Pinned, "the key stays with its upload");
        assert!(held_by(&here, home, &key).await && !held_by(&here, 1 - home, &key).await);
        let options = CompleteOptions {
            parts: vec![part],
            ..CompleteOptions::default()
        };
        (there
            .complete_multipart_upload(&bucket(), &key, &upload_id, options)
            .await)
            .unwrap();
        assert!(held_by(&here, home, &key).await && !held_by(&here, 1 - home, &key).await);
        assert_eq!(get(&here, &key).await.unwrap(), b"new");
    }

    /// A put of `key` through `store` whose body waits for `rest`, once the writer chose its
    /// set.
    async fn put_held(
        store: &Arc<ObjectStore>,
        key: &ObjectKey,
    ) -> (
        tokio::task::JoinHandle<Result<ObjectRecord, ObjectError>>,
        futures::channel::mpsc::UnboundedSender<std::io::Result<Bytes>>,
    ) {
        let choices = || store.moves.choices(bucket().as_str(), key.as_str()).len();
        let before = choices();
        let (sender, receiver) = futures::channel::mpsc::unbounded::<std::io::Result<Bytes>>();
        let writer = {
            let (store, key) = (store.clone(), key.clone());
            tokio::spawn(async move {
                let body: crate::body::ByteStream = Box::pin(receiver);
                let options = PutOptions::default();
                store.put_object(&bucket(), &key, body, options).await
            })
        };
        while choices() == before {
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        (writer, sender)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_new_key_created_through_two_servers_as_a_pool_turns_active_lands_in_one_pool() {
        let (mut first, mut second) = (SimPool::new(), SimPool::new());
        (first.shared, second.shared) = (true, true);
        let (ahead, behind) = (store_of(&[&first, &second]), store_of(&[&first, &second]));
        ahead.create_bucket(&bucket()).await.unwrap();
        // The second pool joins; one server has heard that it turned active, the other not.
        for store in [&ahead, &behind] {
            store.pools()[1].set_state(PoolState::Joining);
        }
        ahead.pools()[1].set_state(PoolState::Active);
        let mut new_key = None;
        for i in 0..40 {
            if std::ptr::eq(
                ahead.first_choice(&bucket(), &key(i)).await,
                &ahead.pools[1],
            ) {
                new_key = Some(key(i));
                break;
            }
        }
        let key = new_key.expect("a key whose first choice is the new pool");
        // Both create the key at once: each chose its pool before either committed.
        let (through_ahead, rest_ahead) = put_held(&ahead, &key).await;
        let (through_behind, rest_behind) = put_held(&behind, &key).await;
        rest_ahead
            .unbounded_send(Ok(Bytes::from_static(b"ahead")))
            .unwrap();
        drop(rest_ahead);
        through_ahead.await.unwrap().unwrap();
        rest_behind
            .unbounded_send(Ok(Bytes::from_static(b"behind")))
            .unwrap();
        drop(rest_behind);
        let second_write = through_behind.await.unwrap();
        assert!(
            matches!(second_write, Err(ObjectError::Moved)),
            "the second creation must not stay in the other pool: {second_write:?}"
        );
        assert!(!held_by(&ahead, 0, &key).await && held_by(&ahead, 1, &key).await);
        assert_eq!(get(&behind, &key).await.unwrap(), b"ahead");
        // The client's retry finds the key where it is.
        put(&behind, &key, b"behind").await;
        assert!(!held_by(&ahead, 0, &key).await && held_by(&ahead, 1, &key).await);
        assert_eq!(get(&ahead, &key).await.unwrap(), b"behind");
    }

    /// A new key written through one server while another opens an upload of it in the
    /// other pool, as that pool turns active: the write, which sees the upload after its
    /// commit, takes its creation back; its retry lands with the upload. Before, the key
    /// stayed, and the upload's completion put it in the other pool too.
    #[tokio::test]
    async fn a_new_key_written_as_an_upload_of_it_opens_in_the_other_pool_lands_with_the_upload() {
        use crate::object::CompleteOptions;
        let (mut first, mut second) = (SimPool::new(), SimPool::new());
        (first.shared, second.shared) = (true, true);
        let (ahead, behind) = (store_of(&[&first, &second]), store_of(&[&first, &second]));
        ahead.create_bucket(&bucket()).await.unwrap();
        for store in [&ahead, &behind] {
            store.pools()[1].set_state(PoolState::Joining);
        }
        ahead.pools()[1].set_state(PoolState::Active);
        let mut new_key = None;
        for i in 0..40 {
            if std::ptr::eq(
                ahead.first_choice(&bucket(), &key(i)).await,
                &ahead.pools[1],
            ) {
                new_key = Some(key(i));
                break;
            }
        }
        let key = new_key.expect("a key whose first choice is the new pool");
        // The server behind chooses the first pool for a write; the one ahead opens an
        // upload in the new pool before that write commits.
        let (through_behind, rest_behind) = put_held(&behind, &key).await;
        let (upload_id, part) = open_upload(&ahead, &key, b"the upload's bytes").await;
        assert!(held_by_upload(&ahead, 1, &key).await);
        rest_behind
            .unbounded_send(Ok(Bytes::from_static(b"behind")))
            .unwrap();
        drop(rest_behind);
        let written = through_behind.await.unwrap();
        assert!(
            matches!(written, Err(ObjectError::Moved)),
            "the write must not stay in the other pool: {written:?}"
        );
        assert!(!held_by(&ahead, 0, &key).await);
        // The client's retry lands with the upload, and so does its completion.
        put(&behind, &key, b"behind").await;
        assert!(!held_by(&ahead, 0, &key).await && held_by(&ahead, 1, &key).await);
        let options = CompleteOptions {
            parts: vec![part],
            condition: None,
            checksum: None,
        };
        (ahead
            .complete_multipart_upload(&bucket(), &key, &upload_id, options)
            .await)
            .unwrap();
        assert!(!held_by(&ahead, 0, &key).await);
        assert_eq!(get(&behind, &key).await.unwrap(), b"the upload's bytes");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_new_key_whose_check_for_another_copy_cannot_be_answered_is_kept_whole() {
        let (mut first, mut second) = (SimPool::new(), SimPool::new());
        (first.shared, second.shared) = (true, true);
        let behind = store_of(&[&first, &second]);
        behind.create_bucket(&bucket()).await.unwrap();
        behind.pools()[1].set_state(PoolState::Joining);
        let key = key(0);
        // Its data out of line, so that a write taken for failed would delete it.
        let (through_behind, rest) = put_held(&behind, &key).await;
        // The joining pool stops answering before the writer looks there after its commit.
        for drive in &second.drives[..6] {
            drive.fail(&[Call::MetaGet, Call::MetaScan]);
        }
        let large = vec![5u8; 300 << 10];
        rest.unbounded_send(Ok(Bytes::from(large.clone()))).unwrap();
        drop(rest);
        let written = through_behind.await.unwrap();
        assert!(written.is_ok(), "the write is committed: {written:?}");
        assert!(held_by(&behind, 0, &key).await);
        assert_eq!(get(&behind, &key).await.unwrap(), large);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn keys_written_during_a_drain_end_in_one_pool_with_their_newest_bytes() {
        use crate::object::MoveProgress;
        let (first, second) = (SimPool::new(), SimPool::new());
        let alone = store_of(&[&first]);
        alone.create_bucket(&bucket()).await.unwrap();
        for i in 0..24 {
            put(&alone, &key(i), b"before the drain").await;
        }
        drop(alone);
        let store = store_of(&[&first, &second]);
        // Slow metadata calls widen the windows in which writers and moves meet.
        for drive in first.drives.iter().chain(&second.drives) {
            drive.slow_down(std::time::Duration::from_millis(1));
        }
        store.pools()[0].set_state(PoolState::Decommissioning);
        // Four writers, each over its own keys, so that each key's last write is known.
        let writers: Vec<_> = (0..4)
            .map(|writer| {
                let store = store.clone();
                tokio::spawn(async move {
                    let mut last = Vec::new();
                    for round in 0..8u8 {
                        for i in (writer..24).step_by(4) {
                            // Written out of line: the data takes a while before the commit.
                            let mut data = format!("round {round} key {i}").into_bytes();
                            data.resize(150 << 10, b'.');
                            let data: &'static [u8] = Box::leak(data.into_boxed_slice());
                            put(&store, &key(i), data).await;
                            last.retain(|(k, _)| *k != i);
                            last.push((i, data));
                        }
                    }
                    last
                })
            })
            .collect();
        let progress = MoveProgress::default();
        let mut drained = false;
        for _ in 0..20 {
            let pass = store.drain_pass(0, &progress, || async {}).await.unwrap();
            if pass.drained() && writers.iter().all(|w| w.is_finished()) {
                drained = true;
                break;
            }
        }
        let mut last = Vec::new();
        for writer in writers {
            last.extend(writer.await.unwrap());
        }
        if !drained {
            assert!(store
                .drain_pass(0, &progress, || async {})
                .await
                .unwrap()
                .drained());
        }
        for (i, data) in last {
            let (one, two) = (
                held_by(&store, 0, &key(i)).await,
                held_by(&store, 1, &key(i)).await,
            );
            assert!(
                !one && two,
                "key {i}: in the drained pool {one}, in the other {two}"
            );
            assert_eq!(get(&store, &key(i)).await.unwrap(), data, "key {i}");
        }
    }

    /// Starts an upload of `key` with one part of `data`; its id and the part to complete it.
    async fn open_upload(
        store: &ObjectStore,
        key: &ObjectKey,
        data: &'static [u8],
    ) -> (String, crate::object::CompletedPart) {
        let bucket = bucket();
        let (upload_id, _) = store
            .create_multipart_upload(&bucket, key, Default::default())
            .await
            .unwrap();
        let body = Box::pin(futures::stream::iter([Ok(Bytes::from_static(data))]));
        let part = store
            .upload_part(&bucket, key, &upload_id, 1, body, PutOptions::default())
            .await
            .unwrap();
        let completed = crate::object::CompletedPart {
            number: 1,
            etag: part.etag,
        };
        (upload_id, completed)
    }

    #[tokio::test]
    async fn a_key_with_an_open_upload_moves_only_once_the_upload_ends() {
        use crate::object::{CompleteOptions, MoveProgress};
        let (first, second) = (SimPool::new(), SimPool::new());
        let alone = store_of(&[&first]);
        alone.create_bucket(&bucket()).await.unwrap();
        put(&alone, &key(1), b"first version").await;
        let (upload_id, part) = open_upload(&alone, &key(1), b"the upload's bytes").await;
        drop(alone);

        let store = store_of(&[&first, &second]);
        store.pools()[0].set_state(PoolState::Decommissioning);
        let progress = MoveProgress::default();
        let pass = store.drain_pass(0, &progress, || async {}).await.unwrap();
        assert_eq!((pass.keys_left, pass.open_uploads), (1, 1), "{pass:?}");
        assert!(held_by(&store, 0, &key(1)).await && !held_by(&store, 1, &key(1)).await);
        // A write of the key lands with its upload, at once.
        put(&store, &key(1), b"second version").await;
        assert!(!held_by(&store, 1, &key(1)).await);

        let options = CompleteOptions {
            parts: vec![part],
            condition: None,
            checksum: None,
        };
        (store
            .complete_multipart_upload(&bucket(), &key(1), &upload_id, options)
            .await)
            .unwrap();
        let pass = store.drain_pass(0, &progress, || async {}).await.unwrap();
        assert!(pass.drained(), "{pass:?}");
        assert!(!held_by(&store, 0, &key(1)).await && held_by(&store, 1, &key(1)).await);
        assert_eq!(get(&store, &key(1)).await.unwrap(), b"the upload's bytes");
    }

    /// A new key written while an upload of it is open lands with the upload, even when
    /// the pools' weights have changed since the upload opened; before, the write went to
    /// the new first choice and the upload's completion left the key in two pools.
    #[tokio::test]
    async fn a_new_key_with_an_open_upload_is_written_where_the_upload_is() {
        use crate::object::CompleteOptions;
        let (first, second) = (SimPool::new(), SimPool::new());
        let store = store_of(&[&first, &second]);
        store.create_bucket(&bucket()).await.unwrap();
        let key = key(3);
        let (upload_id, part) = open_upload(&store, &key, b"the upload's bytes").await;
        let upload_pool = usize::from(held_by_upload(&store, 1, &key).await);
        // The pool the upload is in fills up: new keys now go to the other.
        store.pools[upload_pool].weigh_by(1);
        store.pools[1 - upload_pool].weigh_by(1 << 50);
        assert!(std::ptr::eq(
            store.first_choice(&bucket(), &key).await,
            &store.pools[1 - upload_pool]
        ));
        put(&store, &key, b"a plain write").await;
        assert!(held_by(&store, upload_pool, &key).await);
        assert!(!held_by(&store, 1 - upload_pool, &key).await);

        let options = CompleteOptions {
            parts: vec![part],
            condition: None,
            checksum: None,
        };
        (store
            .complete_multipart_upload(&bucket(), &key, &upload_id, options)
            .await)
            .unwrap();
        assert!(!held_by(&store, 1 - upload_pool, &key).await);
        assert_eq!(get(&store, &key).await.unwrap(), b"the upload's bytes");
    }

    #[tokio::test]
    async fn a_rebalance_evens_the_pools_and_keeps_every_key() {
        use crate::object::MoveProgress;
        let (first, second) = (SimPool::new(), SimPool::new());
        let alone = store_of(&[&first]);
        alone.create_bucket(&bucket()).await.unwrap();
        let data = |i: usize| -> &'static [u8] {
            let mut data = format!("key {i} ").into_bytes();
            data.resize((20 + i % 7 * 10) << 10, b'.');
            Box::leak(data.into_boxed_slice())
        };
        for i in 0..60 {
            put(&alone, &key(i), data(i)).await;
        }
        // An upload of key 0 stays open: the key stays with it.
        let _upload = open_upload(&alone, &key(0), b"open").await;
        drop(alone);

        let store = store_of(&[&first, &second]);
        let progress = MoveProgress::default();
        let mut passes = 0;
        loop {
            let pass = (store.rebalance_pass(&progress, || true, || async {}).await).unwrap();
            passes += 1;
            if pass.balanced() {
                break;
            }
            assert!(passes < 5, "still moving after {passes} passes: {pass:?}");
        }
        let usage: Vec<PoolUsage> = join_all(store.pools().iter().map(|p| store.pool_usage(p)))
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        let (one, two) = (usage[0].used_fraction(), usage[1].used_fraction());
        assert!(
            (one - two).abs() <= 0.1 * one.max(two),
            "used fractions {one} and {two}: {usage:?}"
        );
        assert_eq!(usage[0].keys + usage[1].keys, 60);
        assert!(
            held_by(&store, 0, &key(0)).await,
            "the key of the open upload moved"
        );
        // The keys moved are those whose first choice is the new pool: a read finds them at
        // its first look.
        let (mut moved, mut where_read_looks) = (0, 0);
        for i in 0..60 {
            if held_by(&store, 1, &key(i)).await {
                moved += 1;
                let first = store.first_choice(&bucket(), &key(i)).await;
                where_read_looks += usize::from(std::ptr::eq(first, &store.pools()[1]));
            }
        }
        assert!(
            moved > 10 && where_read_looks == moved,
            "{where_read_looks} of {moved}"
        );
        for i in 0..60 {
            let (one, two) = (
                held_by(&store, 0, &key(i)).await,
                held_by(&store, 1, &key(i)).await,
            );
            assert!(one != two, "key {i} is in exactly one pool");
            assert_eq!(get(&store, &key(i)).await.unwrap(), data(i), "key {i}");
        }
        // A stop asked for ends a pass before it moves anything.
        let pass = (store.rebalance_pass(&progress, || false, || async {}).await).unwrap();
        assert_eq!(pass.keys_moved, 0);
    }

    #[tokio::test]
    async fn a_drain_needs_room_for_the_data_the_pool_holds_not_for_its_disks() {
        let (first, second) = (SimPool::new(), SimPool::new());
        let store = store_of(&[&first, &second]);
        store.create_bucket(&bucket()).await.unwrap();
        let data: &'static [u8] = Box::leak(vec![7u8; 200 << 10].into_boxed_slice());
        for i in 0..10 {
            let set = store.set_in(&store.pools[0], &bucket(), &key(i));
            let (written, _) = store.set_for(&bucket(), &key(i)).await.unwrap();
            if std::ptr::eq(set, written) {
                put(&store, &key(i), data).await;
            }
        }
        let (holds, _) = store.room_to_drain(0).await.unwrap();
        assert!(holds >= 200 << 10, "{holds}");
        // The other pool's disks have 100 KiB free each: 600 KiB of data in its six data
        // shards, less than the pool holds.
        for drive in &second.drives {
            drive.report_free(100 << 10);
        }
        assert_eq!(
            store.room_to_drain(0).await.unwrap(),
            (holds, 6 * (100 << 10))
        );
        // Once they have room: what the drained pool's own disks hold does not count.
        for drive in &second.drives {
            drive.report_free(1 << 30);
        }
        let (_, free) = store.room_to_drain(0).await.unwrap();
        assert!(free > holds);
        // Only active pools take keys.
        store.pools()[1].set_state(PoolState::Decommissioning);
        assert_eq!(store.room_to_drain(0).await.unwrap(), (holds, 0));
    }

    #[tokio::test]
    async fn a_cancelled_drain_moves_nothing_more() {
        use crate::object::MoveProgress;
        let (first, second) = (SimPool::new(), SimPool::new());
        let alone = store_of(&[&first]);
        alone.create_bucket(&bucket()).await.unwrap();
        for i in 0..10 {
            put(&alone, &key(i), b"kept").await;
        }
        drop(alone);
        let store = store_of(&[&first, &second]);
        store.pools()[0].set_state(PoolState::Decommissioning);
        let progress = MoveProgress::default();
        // The operator cancels once the first key moved.
        let cancel = || async { store.pools()[0].set_state(PoolState::Active) };
        let pass = store.drain_pass(0, &progress, cancel).await.unwrap();
        assert!(!pass.drained(), "{pass:?}");
        let mut moved = 0;
        for i in 0..10 {
            moved += usize::from(held_by(&store, 1, &key(i)).await);
            assert_eq!(get(&store, &key(i)).await.unwrap(), b"kept");
        }
        assert_eq!(moved, 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn keys_overwritten_during_a_rebalance_keep_their_newest_bytes() {
        use crate::object::MoveProgress;
        let (first, second) = (SimPool::new(), SimPool::new());
        let alone = store_of(&[&first]);
        alone.create_bucket(&bucket()).await.unwrap();
        for i in 0..24 {
            put(&alone, &key(i), b"before the rebalance").await;
        }
        drop(alone);
        let store = store_of(&[&first, &second]);
        for drive in first.drives.iter().chain(&second.drives) {
            drive.slow_down(std::time::Duration::from_millis(1));
        }
        let writers: Vec<_> = (0..4)
            .map(|writer| {
                let store = store.clone();
                tokio::spawn(async move {
                    let mut last = Vec::new();
                    for round in 0..6u8 {
                        for i in (writer..24).step_by(4) {
                            let mut data = format!("round {round} key {i}").into_bytes();
                            data.resize(150 << 10, b'.');
                            let data: &'static [u8] = Box::leak(data.into_boxed_slice());
                            put(&store, &key(i), data).await;
                            last.retain(|(k, _)| *k != i);
                            last.push((i, data));
                        }
                    }
                    last
                })
            })
            .collect();
        let progress = MoveProgress::default();
        while !writers.iter().all(|w| w.is_finished()) {
            (store.rebalance_pass(&progress, || true, || async {}).await).unwrap();
        }
        let mut last = Vec::new();
        for writer in writers {
            last.extend(writer.await.unwrap());
        }
        assert!(progress.keys.load(std::sync::atomic::Ordering::Relaxed) > 0);
        for (i, data) in last {
            let (one, two) = (
                held_by(&store, 0, &key(i)).await,
                held_by(&store, 1, &key(i)).await,
            );
            assert!(
                one != two,
                "key {i}: in the first pool {one}, in the second {two}"
            );
            assert_eq!(get(&store, &key(i)).await.unwrap(), data, "key {i}");
        }
    }
}
