//! Rebalancing server pools: keys move from the active pools fuller than the deployment as a
//! whole to the emptiest, pass after pass, until each pool's used fraction is within
//! [`BAND`] of the whole's, so within about twice that of each other. A new pool starts
//! empty and new keys spread by free space, so without this the old pools stay full.
//!
//! A key moves whole, as a decommission moves it (see [`super::moves`]), and only when the
//! move evens the pools: the destination, with the key, must stay less full than the source
//! was without it, so no key is moved back and forth. Keys whose first-choice pool is another
//! move first, and to it: a read asks a key's first-choice pool first, so these are then
//! found at the first look (keys written before a pool was added are the ones whose first
//! choice moved). Other keys move to the emptiest pool only when those were not enough.

use std::ops::Bound;
use std::sync::atomic::Ordering;

use serde::{Deserialize, Serialize};

use super::heal::objects::{object_tables, split_object_key};
use super::moves::{MoveProgress, Moved};
use super::pool_usage::{held_data, PoolUsage};
use super::pools::PoolState;
use super::record::{object_key, ObjectRecord, VersionsRecord, OBJECTS, VERSIONS};
use super::{ObjectError, ObjectStore};
use crate::erasure::ErasureError;
use crate::records::RecordSet;

/// How far above the deployment's used fraction a pool may be (as a share of it) before a
/// rebalance moves its keys.
pub const BAND: f64 = 0.05;

/// Where a sweep over a fuller pool's keys sends them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sweep {
    /// Each key to its first-choice pool, when that is another.
    ToFirstChoice,
    /// Each key to the emptiest other pool.
    ToEmptiest,
}

/// What one rebalance pass found and did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RebalancePass {
    /// Each pool's usage when the pass began, by its place in the list (`None`: not active,
    /// so not counted).
    pub usage: Vec<Option<PoolUsage>>,
    /// Keys the pass moved.
    pub keys_moved: u64,
    /// Keys it would have moved but could not now (a writer in flight, a failure).
    pub keys_left: u64,
}

impl RebalancePass {
    /// Whether the pools are as even as moves can make them: the pass found nothing to do.
    pub fn balanced(&self) -> bool {
        self.keys_moved == 0 && self.keys_left == 0
    }
}

/// The pools' used bytes and capacities, as a pass moves keys between them.
struct Fill {
    usage: Vec<Option<PoolUsage>>,
}

impl Fill {
    fn fraction(&self, pool: usize) -> f64 {
        self.usage[pool].map_or(f64::INFINITY, |u| u.used_fraction())
    }

    /// The deployment's used fraction over its active pools.
    fn goal(&self) -> f64 {
        let counted = self.usage.iter().flatten();
        let bytes: u64 = counted.clone().map(|u| u.bytes).sum();
        let capacity: u64 = counted.map(|u| u.capacity).sum();
        bytes as f64 / capacity.max(1) as f64
    }

    fn fuller(&self, pool: usize, goal: f64) -> bool {
        self.fraction(pool) > goal * (1.0 + BAND)
    }

    /// The active pool other than `source` with the smallest used fraction.
    fn emptiest_but(&self, source: usize) -> Option<usize> {
        (0..self.usage.len())
            .filter(|&pool| pool != source && self.usage[pool].is_some())
            .min_by(|&a, &b| self.fraction(a).total_cmp(&self.fraction(b)))
    }

    /// Whether moving `bytes` from `source` to `to` evens them: `to` stays less full than
    /// `source` was.
    fn evens(&self, source: usize, to: usize, bytes: u64) -> bool {
        let Some(to_usage) = self.usage[to] else {
            return false;
        };
        let after = (to_usage.bytes + bytes) as f64 / to_usage.capacity.max(1) as f64;
        after < self.fraction(source)
    }

    fn moved(&mut self, source: usize, to: usize, bytes: u64) {
        if let Some(usage) = &mut self.usage[source] {
            usage.bytes = usage.bytes.saturating_sub(bytes);
        }
        if let Some(usage) = &mut self.usage[to] {
            usage.bytes += bytes;
        }
    }
}

impl ObjectStore {
    /// One rebalance pass: counts each active pool, then moves keys out of each pool fuller
    /// than the whole (the fullest first) to the emptiest, until it is not. `pace` runs after
    /// each key moved; the pass stops early once `keep_going` says no.
    pub async fn rebalance_pass<F, Fut>(
        &self,
        progress: &MoveProgress,
        keep_going: impl Fn() -> bool,
        pace: F,
    ) -> Result<RebalancePass, ObjectError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        self.spread_records_to_every_set().await?;
        let mut usage = Vec::with_capacity(self.pools.len());
        for pool in &self.pools {
            usage.push(match pool.state() {
                PoolState::Active => Some(self.pool_usage(pool).await?),
                _ => None,
            });
        }
        let mut pass = RebalancePass {
            usage: usage.clone(),
            ..RebalancePass::default()
        };
        let mut fill = Fill { usage };
        let goal = fill.goal();
        let mut sources: Vec<usize> = (0..self.pools.len())
            .filter(|&pool| fill.usage[pool].is_some() && fill.fuller(pool, goal))
            .collect();
        sources.sort_by(|&a, &b| fill.fraction(b).total_cmp(&fill.fraction(a)));
        for source in sources {
            // Keys whose first choice is another pool go first, and there: a read of them
            // then finds them at its first look. Others only if that is not enough.
            for sweep in [Sweep::ToFirstChoice, Sweep::ToEmptiest] {
                for set in &self.sets[self.pools[source].sets.clone()] {
                    let mut start = Bound::Unbounded;
                    loop {
                        let page = set.scan_keys(&object_tables(), start, &[]).await;
                        if !page.holds_every_committed_key(set) {
                            return Err(ObjectError::Unavailable(ErasureError::ReadQuorum));
                        }
                        for db_key in &page.keys {
                            if !keep_going() {
                                return Ok(pass);
                            }
                            if !fill.fuller(source, goal) {
                                break;
                            }
                            let moved =
                                (self.rebalance_key(&mut fill, (source, sweep), set, db_key)).await;
                            match moved {
                                Ok(Some(Moved::Done { versions, bytes })) => {
                                    pass.keys_moved += 1;
                                    progress.keys.fetch_add(1, Ordering::Relaxed);
                                    progress.versions.fetch_add(versions, Ordering::Relaxed);
                                    progress.bytes.fetch_add(bytes, Ordering::Relaxed);
                                    pace().await;
                                }
                                Ok(Some(Moved::Busy)) => pass.keys_left += 1,
                                // Stays with its upload; a later rebalance may move it.
                                Ok(Some(Moved::Pinned | Moved::Nothing) | None) => {}
                                Err(e) => {
                                    tracing::warn!(error = %e, "could not move a key to even the pools; trying again next pass");
                                    progress.failures.fetch_add(1, Ordering::Relaxed);
                                    pass.keys_left += 1;
                                }
                            }
                        }
                        match page.next {
                            Some(after) if fill.fuller(source, goal) => {
                                start = Bound::Excluded(after)
                            }
                            _ => break,
                        }
                    }
                }
            }
        }
        Ok(pass)
    }

    /// Moves the key `db_key` of `set` (in pool `source`) to the pool `sweep` names, if that
    /// evens them; `None` when it does not, or the key's bucket is gone.
    async fn rebalance_key(
        &self,
        fill: &mut Fill,
        (source, sweep): (usize, Sweep),
        set: &RecordSet,
        db_key: &[u8],
    ) -> Result<Option<Moved>, ObjectError> {
        let Some((bucket, key)) = split_object_key(db_key) else {
            return Ok(None);
        };
        let to = match sweep {
            Sweep::ToFirstChoice => {
                let first = self.first_choice(&bucket, &key).await;
                let index = (self.pools.iter()).position(|pool| std::ptr::eq(pool, first));
                match index {
                    Some(index) if index != source && fill.fraction(index) < fill.goal() => index,
                    _ => return Ok(None),
                }
            }
            Sweep::ToEmptiest => match fill.emptiest_but(source) {
                Some(index) => index,
                None => return Ok(None),
            },
        };
        let bucket_record = match self.bucket(&bucket).await {
            Ok(record) => record,
            // Records of a deleted bucket are leftovers, not keys to keep.
            Err(ObjectError::NoSuchBucket) => return Ok(None),
            Err(e) => return Err(e),
        };
        let record_key = object_key(bucket.as_str(), key.as_str());
        let (current, history) = futures::join!(
            set.read_agreed::<ObjectRecord>(OBJECTS, &record_key),
            set.read_agreed::<VersionsRecord>(VERSIONS, &record_key)
        );
        let (current, history) = (current?.found(), history?.found());
        let (_, bytes) = held_data(current.as_ref(), history.as_ref());
        if bytes == 0 || !fill.evens(source, to, bytes) {
            return Ok(None);
        }
        let destination = self.set_in(&self.pools[to], &bucket, &key);
        let moved = self
            .move_key(&bucket_record, &key, set, destination)
            .await?;
        if let Moved::Done { .. } = moved {
            fill.moved(source, to, bytes);
        }
        Ok(Some(moved))
    }
}
