//! One drive: durable, atomic file and metadata operations, and nothing about S3.
//!
//! The object and erasure layers reach a drive only through the [`Drive`] trait, so a
//! simulated drive (crash tests), a fault-injecting wrapper or a remote drive can stand in
//! for [`LocalDrive`]. All blocking I/O of the server happens below this trait.

mod commit_queue;
mod deadline;
mod direct;
mod error;
pub mod faulty;
mod format;
pub mod handoff;
mod local;
pub mod pause;
pub mod remote;
pub mod sim;
mod slot;

use std::ops::Bound;

use async_trait::async_trait;
use bytes::Bytes;
use uuid::Uuid;

pub use deadline::{answer_by, time_left, DeadlineDrive, Reachability};
pub use error::DriveError;
pub use format::{Format, PoolEntry, PoolList, RecordedPoolState};
pub use local::LocalDrive;
pub use remote::RemoteDrive;
pub use slot::DriveSlot;

/// The tables of the per-drive metadata database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetaTable {
    /// Bucket name → bucket record.
    Buckets,
    /// Bucket + key → object record.
    Objects,
    /// Bucket + key + data id → this drive's inline shard chunk of a small object.
    Inline,
    /// Upload id → multipart upload record.
    Uploads,
    /// Upload id + part number → part record.
    Parts,
    /// Deployment-wide records (identities and policies): name → record.
    System,
    /// Bucket + key → every version of a key of a versioned bucket, newest first.
    Versions,
}

/// One change to the metadata database; a batch of them commits atomically.
#[derive(Debug, Clone)]
pub enum MetaOp {
    Put {
        table: MetaTable,
        key: Vec<u8>,
        value: Vec<u8>,
    },
    Delete {
        table: MetaTable,
        key: Vec<u8>,
    },
    /// Deletes every key that starts with the prefix.
    DeletePrefix {
        table: MetaTable,
        prefix: Vec<u8>,
    },
    /// Changes nothing, but the whole batch applies only if the key holds exactly `value`
    /// (`None`: no value) when the transaction runs; otherwise the batch fails with
    /// [`DriveError::Conflict`] and nothing changes. Two writers that read the same state
    /// can never both change it on one drive.
    Expect {
        table: MetaTable,
        key: Vec<u8>,
        value: Option<Vec<u8>>,
    },
}

impl MetaOp {
    /// The one key the op reads or writes; `None` for a prefix.
    pub fn table_and_key(&self) -> Option<(MetaTable, &[u8])> {
        match self {
            MetaOp::Put { table, key, .. }
            | MetaOp::Delete { table, key }
            | MetaOp::Expect { table, key, .. } => Some((*table, key.as_slice())),
            MetaOp::DeletePrefix { .. } => None,
        }
    }
}

/// Entries of a table in key order, as scans answer them.
pub type ScanPage = Vec<(Vec<u8>, Vec<u8>)>;

/// Related entries read with a record at most (an object's inline chunks: the current
/// version's and the one it superseded; a versioned key keeps every small version's, so a
/// full page may not hold the one wanted).
pub const RELATED_LIMIT: usize = 8;

/// What a batch replaced: for each key it puts or deletes (prefix deletes aside), in the
/// order first touched, the value the key held before the batch (`None`: none).
pub type Replaced = Vec<(MetaTable, Vec<u8>, Option<Vec<u8>>)>;

/// Notes what `key` held before a batch, the first time the batch touches it.
pub fn note_replaced(
    replaced: &mut Replaced,
    table: MetaTable,
    key: &[u8],
    held: impl FnOnce() -> Option<Vec<u8>>,
) {
    if !replaced.iter().any(|(t, k, _)| *t == table && k == key) {
        replaced.push((table, key.to_vec(), held()));
    }
}

/// Where an object version's shard files live on a drive:
/// `data/<bucket_id>/<first two hex digits of data_id>/<data_id>/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataDir {
    pub bucket_id: String,
    pub data_id: Uuid,
}

/// A shard file being written into a staging folder.
#[async_trait]
pub trait ShardWriter: Send {
    /// Appends the pieces, in order, in one blocking call.
    async fn write(&mut self, pieces: Vec<Bytes>) -> Result<(), DriveError>;
    /// Makes the written bytes durable (fdatasync); the file is complete after this.
    async fn finish(&mut self) -> Result<(), DriveError>;
}

/// An open shard file. Being open, it stays readable even if the object is overwritten and
/// its folder deleted while a GET streams it.
#[async_trait]
pub trait ShardReader: Send + Sync {
    /// Reads exactly `len` bytes at `offset`; a short file is [`DriveError::ShortRead`].
    async fn read_at(&self, offset: u64, len: usize) -> Result<Bytes, DriveError>;
}

/// The space of the filesystem a drive lives on, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskInfo {
    pub total: u64,
    /// Taken by anyone, not only by this drive's files.
    pub used: u64,
    /// Available to the server (without the blocks reserved for root).
    pub free: u64,
}

/// One drive of an erasure set.
#[async_trait]
pub trait Drive: Send + Sync {
    /// A human-readable name for logs and errors (the folder path).
    fn label(&self) -> &str;

    /// Whether the drive missed a call's deadline and is being served around.
    fn is_stalled(&self) -> bool {
        false
    }

    /// Whether the drive is another node's, reached over the network: reads take shards
    /// from this node's own drives first.
    fn is_remote(&self) -> bool {
        false
    }

    /// Whether the drive joined its set blank and no heal pass has completed over it since.
    /// Such a drive answers [`DriveError::Unhealed`] where it would say a record is absent,
    /// and to every scan: a freshly formatted drive knows nothing of what was deleted.
    fn is_unhealed(&self) -> bool {
        false
    }

    /// Records, durably, that a heal pass has given the drive everything its set holds: from
    /// now on its "not found" counts.
    async fn mark_healed(&self) -> Result<(), DriveError> {
        Ok(())
    }

    /// The space of the drive's filesystem, for the operator's view. Drives that cannot
    /// tell (offline, simulated) answer offline.
    async fn disk_info(&self) -> Result<DiskInfo, DriveError> {
        Err(DriveError::Offline(self.label().to_string()))
    }

    /// Every data folder on the drive, with when it last changed, for the garbage collector.
    /// Drives that cannot tell list none, and nothing of theirs is collected.
    async fn list_data_dirs(&self) -> Result<Vec<(DataDir, std::time::SystemTime)>, DriveError> {
        Ok(Vec::new())
    }

    /// Creates `name` in the staging folder `staging` (creating the folder).
    async fn create_staged_file(
        &self,
        staging: Uuid,
        name: &str,
    ) -> Result<Box<dyn ShardWriter>, DriveError>;
    /// Moves every file of a staging folder into `dir` and makes the move durable (fsync of
    /// the destination folder and of every folder it had to create), then removes the
    /// staging folder.
    async fn commit_staged(&self, staging: Uuid, dir: &DataDir) -> Result<(), DriveError>;
    /// Removes a staging folder and everything in it.
    async fn remove_staged(&self, staging: Uuid) -> Result<(), DriveError>;

    async fn open_shard(
        &self,
        dir: &DataDir,
        name: &str,
    ) -> Result<Box<dyn ShardReader>, DriveError>;
    /// Opens several shard files of one data folder, in one call where the drive can (the
    /// parts of an object of many segments): an answer per name, in order.
    async fn open_shards(
        &self,
        dir: &DataDir,
        names: &[String],
    ) -> Vec<Result<Box<dyn ShardReader>, DriveError>> {
        let mut opened = Vec::with_capacity(names.len());
        for name in names {
            opened.push(self.open_shard(dir, name).await);
        }
        opened
    }
    /// Deletes a whole data folder (an object version's shards).
    async fn delete_data_dir(&self, dir: &DataDir) -> Result<(), DriveError>;
    /// Deletes one shard file from a data folder.
    async fn delete_data_file(&self, dir: &DataDir, name: &str) -> Result<(), DriveError>;
    /// Gives every file of the data folder `from` a second name in the new folder `to`, and
    /// makes that durable (fsync of `to` and of every folder it had to create): no byte is
    /// copied, and deleting either folder leaves the other whole (hard links). Names that
    /// are there already are kept, so a retry completes a link cut short.
    async fn link_data_dir(&self, from: &DataDir, to: &DataDir) -> Result<(), DriveError>;

    async fn meta_get(&self, table: MetaTable, key: Vec<u8>)
        -> Result<Option<Vec<u8>>, DriveError>;
    /// A record and, read with it, what another table holds under `related` (an object's
    /// record and its inline chunks): one call instead of two. The related entries are read
    /// only when the record exists, and are empty when they cannot be (an unhealed drive).
    async fn meta_get_related(
        &self,
        table: MetaTable,
        key: Vec<u8>,
        related: (MetaTable, Vec<u8>),
    ) -> Result<(Option<Vec<u8>>, ScanPage), DriveError> {
        let found = self.meta_get(table, key).await?;
        let entries = match found {
            Some(_) => (self.meta_scan(related.0, Bound::Unbounded, related.1, RELATED_LIMIT))
                .await
                .unwrap_or_default(),
            None => Vec::new(),
        };
        Ok((found, entries))
    }
    /// Applies a batch of changes in one durable transaction, and answers what it replaced:
    /// so that a commit can be undone without reading first.
    async fn meta_apply(&self, ops: Vec<MetaOp>) -> Result<Replaced, DriveError>;
    /// Up to `limit` entries whose keys start with `prefix`, in key order, from `start`.
    async fn meta_scan(
        &self,
        table: MetaTable,
        start: Bound<Vec<u8>>,
        prefix: Vec<u8>,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>, DriveError>;
    /// Like [`Drive::meta_scan`], but of the keys that share a common prefix (up to and
    /// including the first `delimiter` after `prefix`, see [`rolled_up_len`]) only the first
    /// is returned, and the scan jumps past the others: a listing with a delimiter reads one
    /// entry per common prefix, however many keys it holds.
    async fn meta_scan_delimited(
        &self,
        table: MetaTable,
        start: Bound<Vec<u8>>,
        prefix: Vec<u8>,
        delimiter: Vec<u8>,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>, DriveError>;
}

/// What a drive answers for a record it does not hold: absent, unless the drive is unhealed
/// (it may have lost the record with its disk), when it does not know.
fn absent_unless_unhealed<T>(drive: &dyn Drive, found: Option<T>) -> Result<Option<T>, DriveError> {
    match found {
        None if drive.is_unhealed() => Err(DriveError::Unhealed(drive.label().to_string())),
        found => Ok(found),
    }
}

/// An unhealed drive lists nothing: what it lacks could be anything its set holds.
fn refuse_scan_if_unhealed(drive: &dyn Drive) -> Result<(), DriveError> {
    match drive.is_unhealed() {
        true => Err(DriveError::Unhealed(drive.label().to_string())),
        false => Ok(()),
    }
}

/// The length of the common prefix that `key` rolls up into in a listing with a delimiter:
/// its first `prefix_len` bytes and what follows up to and including the first `delimiter`;
/// `None` when no delimiter follows.
pub fn rolled_up_len(key: &[u8], prefix_len: usize, delimiter: &[u8]) -> Option<usize> {
    if delimiter.is_empty() {
        return None;
    }
    let at = key
        .get(prefix_len..)?
        .windows(delimiter.len())
        .position(|window| window == delimiter)?;
    Some(prefix_len + at + delimiter.len())
}

/// Where a scan of the keys under `prefix` from `start` begins: at `start`, or at the prefix
/// when `start` sorts before it (the keys between them are not under the prefix).
pub fn scan_from(start: Bound<Vec<u8>>, prefix: &[u8]) -> Bound<Vec<u8>> {
    match start {
        Bound::Included(ref key) | Bound::Excluded(ref key) if key.as_slice() >= prefix => start,
        _ => Bound::Included(prefix.to_vec()),
    }
}

/// The smallest key that sorts after every key starting with `prefix`; `None` if none does.
pub fn past_prefix(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut next = prefix.to_vec();
    while let Some(last) = next.pop() {
        if last < u8::MAX {
            next.push(last + 1);
            return Some(next);
        }
    }
    None
}

/// Stands in for a drive that could not be opened: every call fails as offline.
pub struct OfflineDrive {
    label: String,
}

impl OfflineDrive {
    pub fn new(label: impl Into<String>) -> Self {
        Self {
            label: label.into(),
        }
    }

    fn offline(&self) -> DriveError {
        DriveError::Offline(self.label.clone())
    }
}

#[async_trait]
impl Drive for OfflineDrive {
    fn label(&self) -> &str {
        &self.label
    }
    async fn create_staged_file(
        &self,
        _: Uuid,
        _: &str,
    ) -> Result<Box<dyn ShardWriter>, DriveError> {
        Err(self.offline())
    }
    async fn commit_staged(&self, _: Uuid, _: &DataDir) -> Result<(), DriveError> {
        Err(self.offline())
    }
    async fn remove_staged(&self, _: Uuid) -> Result<(), DriveError> {
        Err(self.offline())
    }
    async fn open_shard(&self, _: &DataDir, _: &str) -> Result<Box<dyn ShardReader>, DriveError> {
        Err(self.offline())
    }
    async fn link_data_dir(&self, _: &DataDir, _: &DataDir) -> Result<(), DriveError> {
        Err(self.offline())
    }
    async fn delete_data_dir(&self, _: &DataDir) -> Result<(), DriveError> {
        Err(self.offline())
    }
    async fn delete_data_file(&self, _: &DataDir, _: &str) -> Result<(), DriveError> {
        Err(self.offline())
    }
    async fn meta_get(&self, _: MetaTable, _: Vec<u8>) -> Result<Option<Vec<u8>>, DriveError> {
        Err(self.offline())
    }
    async fn meta_apply(&self, _: Vec<MetaOp>) -> Result<Replaced, DriveError> {
        Err(self.offline())
    }
    async fn meta_scan(
        &self,
        _: MetaTable,
        _: Bound<Vec<u8>>,
        _: Vec<u8>,
        _: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>, DriveError> {
        Err(self.offline())
    }
    async fn meta_scan_delimited(
        &self,
        _: MetaTable,
        _: Bound<Vec<u8>>,
        _: Vec<u8>,
        _: Vec<u8>,
        _: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>, DriveError> {
        Err(self.offline())
    }
}
