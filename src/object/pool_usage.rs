//! What a server pool holds and can hold: its keys, versions and bytes, counted from its
//! sets' records (not from its drives' file systems, which other pools' drives may share),
//! and its capacity, from its drives' sizes. A rebalance compares pools by these.

use std::collections::VecDeque;
use std::ops::Bound;

use futures::future::join_all;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::pools::{Pool, PoolState};
use super::record::{ObjectRecord, VersionsRecord, OBJECTS, VERSIONS};
use super::{ObjectError, ObjectStore};
use crate::records::{Agreement, RecordSet, Replica, Scanned, Table, SCAN_PAGE};

/// What one pool holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolUsage {
    /// Keys with at least one version (delete markers alone included).
    pub keys: u64,
    /// Versions that hold data, delete markers left out.
    pub versions: u64,
    /// Bytes of data those versions keep in the pool (as stored: encrypted sizes; a version
    /// whose data went to a tier counts none).
    pub bytes: u64,
    /// The bytes of data the pool can hold: for each set, its smallest drive's size times
    /// its data shards.
    pub capacity: u64,
}

impl PoolUsage {
    /// The share of its capacity the pool's data takes.
    pub fn used_fraction(&self) -> f64 {
        self.bytes as f64 / self.capacity.max(1) as f64
    }
}

impl ObjectStore {
    /// Counts what `pool` holds. Fails when a set cannot answer with a read quorum: a count
    /// that missed keys would move the wrong ones.
    pub async fn pool_usage(&self, pool: &Pool) -> Result<PoolUsage, ObjectError> {
        let mut usage = PoolUsage::default();
        for set in &self.sets[pool.sets.clone()] {
            usage.capacity += set_space(set).await.0;
            count_set(set, &mut usage).await?;
        }
        Ok(usage)
    }

    /// The bytes of data `pool` can still take: for each set, its smallest drive's free
    /// space times its data shards (of the drives that answer).
    pub async fn pool_free(&self, pool: &Pool) -> u64 {
        let sets = &self.sets[pool.sets.clone()];
        let space = join_all(sets.iter().map(set_space)).await;
        space.iter().map(|(_, free)| free).sum()
    }

    /// What draining pool `index` needs against what it would get: the bytes of data it
    /// holds, and the bytes the other active pools can still take.
    pub async fn room_to_drain(&self, index: usize) -> Result<(u64, u64), ObjectError> {
        let holds = self.pool_usage(&self.pools[index]).await?.bytes;
        let mut free = 0;
        for (other, pool) in self.pools.iter().enumerate() {
            if other != index && pool.state() == PoolState::Active {
                free += self.pool_free(pool).await;
            }
        }
        Ok((holds, free))
    }
}

/// The bytes of data `set` can hold and can still take: of the drives that answer, the
/// smallest size and the smallest free space, each times its data shards.
async fn set_space(set: &RecordSet) -> (u64, u64) {
    let infos = join_all(set.drives().iter().map(|d| d.disk_info())).await;
    let answered = infos.iter().flatten();
    let data_shards = set.data_shards() as u64;
    let total = answered.clone().map(|info| info.total).min().unwrap_or(0);
    let free = answered.map(|info| info.free).min().unwrap_or(0);
    (total * data_shards, free * data_shards)
}

/// Adds what `set` holds to `usage`. A key of a versioned bucket has every version in its
/// `VERSIONS` record (its current one in `OBJECTS` too); any other key only its `OBJECTS`
/// record: the two tables are walked side by side in key order so no version counts twice.
async fn count_set(set: &RecordSet, usage: &mut PoolUsage) -> Result<(), ObjectError> {
    let mut objects = Walk::new(set, OBJECTS);
    let mut histories = Walk::new(set, VERSIONS);
    loop {
        let object = objects.peek().await?.map(<[u8]>::to_vec);
        let history = histories.peek().await?.map(<[u8]>::to_vec);
        let (take_object, take_history) = match (&object, &history) {
            (None, None) => return Ok(()),
            (Some(o), Some(h)) => (o <= h, h <= o),
            (Some(_), None) => (true, false),
            (None, Some(_)) => (false, true),
        };
        let current = take_object.then(|| objects.pop()).flatten();
        let history = take_history.then(|| histories.pop()).flatten();
        let (versions, bytes) = held_data(current.as_ref(), history.as_ref());
        if versions > 0 {
            usage.keys += 1;
            usage.versions += versions;
            usage.bytes += bytes;
        }
    }
}

/// The versions with data, and their bytes in the pool, of a key whose records are
/// `current` (its `OBJECTS` record) and `history` (its `VERSIONS` record, which lists every
/// version when there is one).
pub(super) fn held_data(
    current: Option<&ObjectRecord>,
    history: Option<&VersionsRecord>,
) -> (u64, u64) {
    let held: Vec<&ObjectRecord> = match history {
        Some(history) => history.versions.iter().collect(),
        None => current.into_iter().collect(),
    };
    let with_data = held.iter().filter(|version| !version.delete_marker);
    let bytes = (with_data.clone())
        .filter(|version| version.tier.is_none())
        .map(|version| version.size)
        .sum();
    (with_data.count() as u64, bytes)
}

/// One table of a set, record by record in key order, read a page at a time.
struct Walk<'a, T> {
    set: &'a RecordSet,
    table: Table<T>,
    /// Read and not yet taken: each key with the value its drives agree on (`None`: none, or
    /// too few drives vouch either way; such a key is not counted).
    page: VecDeque<(Vec<u8>, Option<T>)>,
    /// Where the next page starts; `None` once the last was read.
    next: Option<Bound<Vec<u8>>>,
}

impl<'a, T: Replica + DeserializeOwned> Walk<'a, T> {
    fn new(set: &'a RecordSet, table: Table<T>) -> Self {
        Walk {
            set,
            table,
            page: VecDeque::new(),
            next: Some(Bound::Unbounded),
        }
    }

    /// The next record's key (`None`: no more), reading the next page when needed.
    async fn peek(&mut self) -> Result<Option<&[u8]>, ObjectError> {
        while self.page.is_empty() {
            let Some(start) = self.next.take() else {
                return Ok(None);
            };
            let page = self
                .set
                .scan_records(self.table, start, &[], SCAN_PAGE)
                .await?;
            self.next = page.next.map(Bound::Excluded);
            self.page
                .extend(page.records.into_iter().map(|scanned: Scanned<T>| {
                    let value = match scanned.agreed {
                        Ok(Agreement::Found { value, .. }) => Some(value),
                        _ => None,
                    };
                    (scanned.key, value)
                }));
        }
        Ok(self.page.front().map(|(key, _)| key.as_slice()))
    }

    /// Takes the record [`Walk::peek`] named.
    fn pop(&mut self) -> Option<T> {
        self.page.pop_front().and_then(|(_, value)| value)
    }
}
