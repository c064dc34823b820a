//! Draining a server pool (a decommission): pass after pass, every key its sets hold moves
//! to its set in the key's first-choice pool among the active ones (see [`super::moves`]).
//! A pass starts again from the first key, so a drain cut short (a restart) resumes by
//! running passes: what moved is no longer there.

use std::ops::Bound;
use std::sync::atomic::Ordering;

use serde::{Deserialize, Serialize};

use super::heal::objects::{object_tables, split_object_key};
use super::moves::{open_uploads, MoveProgress, Moved};
use super::{ObjectError, ObjectStore, PoolState};
use crate::erasure::ErasureError;

/// What one pass over a pool found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DrainPass {
    /// Keys the pass saw in the pool.
    pub keys_seen: u64,
    /// Of those, keys still there when it ended (a writer in flight, a failure).
    pub keys_left: u64,
    /// Multipart uploads open in the pool: they finish (or expire) where they began.
    pub open_uploads: u64,
}

impl DrainPass {
    /// Whether the pool holds nothing any more.
    pub fn drained(&self) -> bool {
        self.keys_left == 0 && self.open_uploads == 0
    }
}

impl ObjectStore {
    /// One pass of draining pool `pool` (which is being decommissioned): each key moves to
    /// its set in its first-choice active pool. `pace` runs after each key; the pass ends
    /// early once the decommission is cancelled.
    pub async fn drain_pass<F, Fut>(
        &self,
        pool: usize,
        progress: &MoveProgress,
        pace: F,
    ) -> Result<DrainPass, ObjectError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        self.spread_records_to_every_set().await?;
        let mut pass = DrainPass::default();
        let sets = self.pools[pool].sets.clone();
        // Uploads first: none can be opened in the pool now, so none open then means no
        // completion can put a key in it behind the scan.
        for set in &self.sets[sets.clone()] {
            pass.open_uploads += open_uploads(set, &[]).await?;
        }
        for set in &self.sets[sets.clone()] {
            let mut start = Bound::Unbounded;
            loop {
                let page = set.scan_keys(&object_tables(), start, &[]).await;
                if !page.holds_every_committed_key(set) {
                    return Err(ObjectError::Unavailable(ErasureError::ReadQuorum));
                }
                for db_key in &page.keys {
                    // Cancelled: what moved stays moved, and nothing more moves.
                    if self.pools[pool].state() != PoolState::Decommissioning {
                        pass.keys_left += 1;
                        return Ok(pass);
                    }
                    let Some((bucket, key)) = split_object_key(db_key) else {
                        continue;
                    };
                    // Records of a deleted bucket are leftovers, not keys to keep.
                    let bucket_record = match self.bucket(&bucket).await {
                        Ok(record) => record,
                        Err(ObjectError::NoSuchBucket) => continue,
                        Err(e) => return Err(e),
                    };
                    pass.keys_seen += 1;
                    let destination = self.first_choice(&bucket, &key).await;
                    if sets.contains(&destination.sets.start) {
                        return Err(ObjectError::InvalidRequest(
                            "no other pool takes new keys".into(),
                        ));
                    }
                    let to = self.set_in(destination, &bucket, &key);
                    match self.move_key(&bucket_record, &key, set, to).await {
                        Ok(Moved::Done { versions, bytes }) => {
                            progress.keys.fetch_add(1, Ordering::Relaxed);
                            progress.versions.fetch_add(versions, Ordering::Relaxed);
                            progress.bytes.fetch_add(bytes, Ordering::Relaxed);
                        }
                        Ok(Moved::Nothing) => {}
                        Ok(Moved::Busy | Moved::Pinned) => pass.keys_left += 1,
                        Err(e) => {
                            tracing::warn!(%bucket, %key, error = %e, "could not move the key out of its pool; trying again next pass");
                            progress.failures.fetch_add(1, Ordering::Relaxed);
                            pass.keys_left += 1;
                        }
                    }
                    pace().await;
                }
                match page.next {
                    Some(after) => start = Bound::Excluded(after),
                    None => break,
                }
            }
        }
        Ok(pass)
    }
}
