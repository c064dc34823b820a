//! An erasure set: stripes object data over its drives as data + parity shards, verifies
//! bitrot checksums, reads and writes with quorum, and reconstructs lost shards.
//!
//! It knows nothing of S3: it moves blocks and opaque metadata records. Which records mean
//! what is the object layer's business.

mod bitrot;
mod codec;
mod heal;
mod one_drive;
pub mod quorum;
mod read;
mod write;

use std::sync::Arc;

use futures::future::join_all;
use thiserror::Error;
use uuid::Uuid;

use crate::storage::Drive;

use crate::storage::DriveError;

/// The data folder a set's data calls name, and the length of its rolled-up shard files:
/// the object layer names its data with these (records with [`crate::records`]'s types).
pub use crate::storage::{rolled_up_len, DataDir};
pub use bitrot::CHECKSUM_LEN;
pub use codec::Codec;
pub use read::{PartReader, PartSpan, ShardSource};
pub use write::{Encoded, MemoryBudget, WriteOutcome};

/// Erasure block size: the unit that is encoded, checksummed and read.
pub const DEFAULT_BLOCK_SIZE: usize = 1 << 20;

/// What can go wrong in an erasure set.
#[derive(Debug, Error)]
pub enum ErasureError {
    /// Fewer drives than the read quorum could serve the data or agree on metadata.
    #[error("not enough drives online to read (read quorum)")]
    ReadQuorum,
    /// Fewer drives than the write quorum took the write.
    #[error("not enough drives took the write: {ok} of {needed} needed")]
    WriteQuorum { ok: usize, needed: usize },
    /// The write failed because drives are out of space.
    #[error("drives are full")]
    DriveFull,
    /// The client's body stream failed (cut short, or a verification failed).
    #[error("request body: {0}")]
    Body(std::io::Error),
    /// Other writers changed the record between this one's read and its commit.
    #[error("the record changed under a concurrent writer")]
    Conflict,
    /// The commit took longer than other servers wait for a write in flight: they may
    /// already have written over it (see [`crate::records::in_flight`]), so it was undone.
    #[error("the commit took longer than its deadline")]
    CommitDeadline,
    #[error("codec: {0}")]
    Codec(String),
}

/// Per-drive outcome of a call made on every drive of a set.
pub type DriveResults<T> = Vec<Result<T, DriveError>>;

/// A set of `data + parity` drives; drive `i` stores shard `i` of every block. Cloning one
/// shares its drives.
#[derive(Clone)]
pub struct ErasureSet {
    index: usize,
    drives: Vec<Arc<dyn Drive>>,
    codec: Arc<Codec>,
    block_size: usize,
    /// What writes in flight may buffer, shared by the deployment's sets.
    memory: Option<Arc<MemoryBudget>>,
}

impl ErasureSet {
    pub fn new(
        index: usize,
        drives: Vec<Arc<dyn Drive>>,
        parity_shards: usize,
        block_size: usize,
    ) -> Result<Self, ErasureError> {
        let codec = Codec::new(drives.len() - parity_shards, parity_shards)?;
        Ok(Self {
            index,
            drives,
            codec: Arc::new(codec),
            block_size,
            memory: None,
        })
    }

    /// The same set, its writes buffering within `memory` (shared with other sets).
    pub fn with_memory_budget(mut self, memory: Arc<MemoryBudget>) -> Self {
        self.memory = Some(memory);
        self
    }

    pub fn index(&self) -> usize {
        self.index
    }

    /// The set's drives, drive `i` holding shard `i`.
    pub fn drives(&self) -> &[Arc<dyn Drive>] {
        &self.drives
    }

    /// How many drives the set has.
    pub fn width(&self) -> usize {
        self.drives.len()
    }

    pub fn data_shards(&self) -> usize {
        self.codec.data_shards()
    }

    pub fn parity_shards(&self) -> usize {
        self.drives.len() - self.codec.data_shards()
    }

    pub fn block_size(&self) -> usize {
        self.block_size
    }

    pub fn write_quorum(&self) -> usize {
        quorum::write_quorum(self.data_shards(), self.parity_shards())
    }

    pub fn read_quorum(&self) -> usize {
        quorum::read_quorum(self.data_shards())
    }

    /// Fails unless a write quorum of drives succeeded: with "drives are full" when too many
    /// drives are full for any write to reach the quorum, so that the client is told why.
    pub fn require_write_quorum<T>(
        &self,
        results: &[Result<T, DriveError>],
    ) -> Result<(), ErasureError> {
        let ok = quorum::count_ok(results);
        if ok >= self.write_quorum() {
            return Ok(());
        }
        let full = (results.iter())
            .filter(|r| matches!(r, Err(DriveError::Full)))
            .count();
        if full > self.drives.len() - self.write_quorum() {
            return Err(ErasureError::DriveFull);
        }
        Err(ErasureError::WriteQuorum {
            ok,
            needed: self.write_quorum(),
        })
    }

    /// Moves staged shard files into their data folder on the drives that hold them, and
    /// fails unless a write quorum now has them (the staging is then removed; what was
    /// placed is the caller's to remove: the folder may hold other data, such as an
    /// upload's earlier parts). Returns the drives that hold the placed data: a commit that
    /// records it counts those only ([`ErasureSet::commit`]).
    pub async fn place_staged(
        &self,
        staging: Uuid,
        holders: &[bool],
        dir: &DataDir,
    ) -> Result<Vec<bool>, ErasureError> {
        let placed = self.commit_staged(staging, holders, dir).await;
        let ok = placed.iter().filter(|&&p| p).count();
        if ok < self.write_quorum() {
            self.remove_staged(staging).await;
            return Err(ErasureError::WriteQuorum {
                ok,
                needed: self.write_quorum(),
            });
        }
        // Drives whose shard write failed (full, stalled) may keep a partial staged file.
        if placed.contains(&false) {
            self.remove_staged(staging).await;
        }
        Ok(placed)
    }

    /// Moves staged shard files into their data folder on the drives that hold them.
    /// Returns, per drive, whether it now has them.
    pub async fn commit_staged(&self, staging: Uuid, holders: &[bool], dir: &DataDir) -> Vec<bool> {
        join_all(
            self.drives
                .iter()
                .zip(holders)
                .map(|(drive, &holds)| async move {
                    holds && drive.commit_staged(staging, dir).await.is_ok()
                }),
        )
        .await
    }

    /// Gives the files of data folder `from` a second name, `to`, on the drives that hold
    /// them (hard links: no byte is copied or rewritten). Returns, per drive, whether it
    /// now has them under `to`.
    pub async fn link_data_dir(&self, from: &DataDir, to: &DataDir, holders: &[bool]) -> Vec<bool> {
        join_all(
            self.drives
                .iter()
                .zip(holders)
                .map(|(drive, &holds)| async move {
                    holds && drive.link_data_dir(from, to).await.is_ok()
                }),
        )
        .await
    }

    /// Removes a staging folder from every drive (best effort: a leftover is cleaned at start).
    pub async fn remove_staged(&self, staging: Uuid) {
        join_all(self.drives.iter().map(|d| d.remove_staged(staging))).await;
    }

    /// Deletes an object version's data folder from every drive (best effort: a drive that
    /// misses it keeps an orphan, never a live object's data).
    pub async fn delete_data_dir(&self, dir: &DataDir) {
        join_all(self.drives.iter().map(|d| d.delete_data_dir(dir))).await;
    }

    /// Deletes some shard files of a data folder from every drive (best effort).
    pub async fn delete_data_files(&self, dir: &DataDir, names: &[String]) {
        join_all(self.drives.iter().map(|d| async move {
            for name in names {
                let _ = d.delete_data_file(dir, name).await;
            }
        }))
        .await;
    }
}
