//! S3 semantics over erasure sets: buckets, objects, multipart uploads and listings.
//!
//! This layer decides what a request means (which set holds a key, which version of a record
//! the drives agree on, when a write is committed) and never touches files itself.

pub mod acl;
mod append;
mod at_rest;
mod authority;
mod bucket;
mod bucket_cache;
mod changes;
pub use bucket_cache::ParsedByRevision;
mod commit;
mod conditions;
pub mod digest;
mod drain;
#[cfg(test)]
mod drive_calls_tests;
mod heal;
mod key_locks;
mod list;
mod moves;
mod multipart;
mod names;
mod object_lock;
mod objects;
mod pool_usage;
mod pools;
mod rebalance;
mod record;
mod rename;
mod replicas;
mod span;
mod system;
pub mod tier;
mod versions;
#[cfg(test)]
mod write_quorum_tests;

use std::ops::Range;
use std::sync::Arc;

use siphasher::sip::SipHasher24;
use std::hash::Hasher;
use thiserror::Error;

use crate::erasure::ErasureError;
use crate::records::{Agreement, RecordError, RecordSet};

pub use at_rest::{check_customer_key, Encryption};
pub use conditions::{DeleteConditions, DeleteIf, WriteCondition};
pub use digest::checksum::{ChecksumAlgorithm, ChecksumType};
pub use digest::hashing::ExpectedChecksum;
pub use drain::DrainPass;
pub use heal::objects::{HealDepth, HealReport, HealScope};
pub use list::{ListEntry, ListPage, ListQuery};
pub use moves::{MoveCounts, MoveProgress, Moved};
pub use multipart::list::{UploadEntry, UploadQuery, UploadsPage};
pub use multipart::upload::{
    CompleteOptions, CompletedPart, PartsPage, UploadOptions, MAX_PART_NUMBER,
};
pub use names::{BucketName, ObjectKey, VersionId, MAX_KEY_LEN};
pub use object_lock::{
    DefaultRetention, ObjectLock, ObjectLockConfig, Retention, RetentionMode, RetentionPeriod,
};
pub use objects::{GetOptions, GetResult, PutOptions, ReadIf};
pub use pool_usage::PoolUsage;
pub use pools::{Pool, PoolState};
pub use rebalance::RebalancePass;
pub use record::{
    BucketRecord, BucketSettings, CorsRule, DefaultEncryption, ObjectRecord, PartRecord,
    SseAlgorithm, StoredChecksum, TierLocation, UploadRecord, Versioning, NULL_VERSION,
};
pub use rename::{Precondition, RenameOptions};
pub use span::{ByteRange, ReadSpan};
pub use tier::{Tier, TierError, Tiers};
pub use versions::list::{VersionEntry, VersionsPage, VersionsQuery};
pub use versions::versioning::{DeleteOptions, Deleted};

use crate::records::authority::RecordAuthority;
use crate::records::changes::ChangeFeed;
use key_locks::NamespaceLocks;

/// Damaged objects that can wait for the healer at once.
const HEAL_QUEUE_LEN: usize = 10_000;

/// Objects up to this size live inline in the metadata records.
pub const INLINE_LIMIT: usize = 128 * 1024;

/// What S3 says went wrong, before it becomes an S3 error code in the API layer.
#[derive(Debug, Error)]
pub enum ObjectError {
    #[error("no such bucket")]
    NoSuchBucket,
    #[error("bucket already exists")]
    BucketExists,
    #[error("bucket not empty")]
    BucketNotEmpty,
    #[error("invalid bucket name {0:?}")]
    InvalidBucketName(String),
    #[error("no such key")]
    NoSuchKey,
    #[error("no such version")]
    NoSuchVersion,
    /// The version asked for (the newest one, or the one named) is a delete marker.
    #[error("the version is a delete marker")]
    DeleteMarker {
        version_id: String,
        by_version: bool,
    },
    #[error("key too long")]
    KeyTooLong,
    #[error("no such upload")]
    NoSuchUpload,
    #[error("invalid part")]
    InvalidPart,
    #[error("part list not in ascending order")]
    InvalidPartOrder,
    #[error("part {0} is smaller than 5 MiB")]
    EntityTooSmall(u32),
    #[error("Content-MD5 does not match the body")]
    BadDigest,
    #[error("{} checksum does not match the body", .0.as_str())]
    ChecksumMismatch(ChecksumAlgorithm),
    #[error("precondition failed")]
    PreconditionFailed,
    #[error("part number beyond the object's parts")]
    InvalidPartNumber,
    #[error("range not satisfiable for size {0}")]
    InvalidRange(u64),
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The request needs Object Lock, which the bucket does not have.
    #[error("the bucket has no Object Lock configuration")]
    NoObjectLock,
    /// The bucket's state does not allow the change (Object Lock and versioning).
    #[error("invalid bucket state: {0}")]
    InvalidBucketState(String),
    /// The version is under an Object Lock retention or legal hold that the request may not
    /// lift.
    #[error("the object is protected by Object Lock")]
    ObjectLocked,
    /// Other writers kept changing the record between this one's read and its commit; it
    /// tried again for a while and gave up.
    #[error("the record changed under a concurrent writer")]
    Conflict,
    /// The key moved to another server pool while the write was in flight (see
    /// `ObjectStore::not_moved_away`): a try again finds it there.
    #[error("the key moved to another server pool during the write")]
    Moved,
    /// Too few drives answered, took the write, or took it in time: the answer is 503 until
    /// they are back. (One of [`ErasureError::ReadQuorum`], [`ErasureError::WriteQuorum`],
    /// [`ErasureError::CommitDeadline`].)
    #[error(transparent)]
    Unavailable(ErasureError),
    /// The drives have no room for the write.
    #[error("the drives are full")]
    DriveFull,
    /// The request's body could not be read whole (cut short, or a verification failed).
    #[error("request body: {0}")]
    Body(std::io::Error),
    /// Any other failure of the erasure sets (a codec error): an internal error.
    #[error(transparent)]
    Erasure(ErasureError),
    #[error(transparent)]
    Tier(#[from] TierError),
    /// A version's encryption: its key could not be made or reopened.
    #[error(transparent)]
    Encryption(crate::encryption::EncryptionError),
    /// SSE-S3 or SSE-KMS asked of a server started without a key service.
    #[error("server-side encryption needs a key service (STRATA_KMS_SECRET_KEY)")]
    KmsNotConfigured,
    /// The key service is configured but its catalog cannot be read yet.
    #[error("the key service is not available yet")]
    KmsUnavailable,
    /// Bucket and deployment-wide records cannot change now: the other servers of the
    /// cluster could not hear of it (the control plane is out of reach).
    #[error("the cluster's control plane is unavailable; settings cannot change now")]
    ControlPlaneUnavailable,
    /// A request this server does not carry out (yet), said why.
    #[error("not implemented: {0}")]
    NotImplemented(String),
    /// An append's offset is not the object's size (or the object changed under it).
    #[error("the write offset does not match the object's size")]
    InvalidWriteOffset,
    /// An append would give the object more than 10,000 segments.
    #[error("the object has the most segments it may have")]
    TooManyParts,
    /// A retried idempotent request (a rename's client token) asked something else.
    #[error("the client token was used with other parameters")]
    IdempotencyMismatch,
    #[error("internal: {0}")]
    Internal(String),
}

impl From<ErasureError> for ObjectError {
    fn from(e: ErasureError) -> Self {
        match e {
            ErasureError::Conflict => ObjectError::Conflict,
            e @ (ErasureError::ReadQuorum
            | ErasureError::WriteQuorum { .. }
            | ErasureError::CommitDeadline) => ObjectError::Unavailable(e),
            ErasureError::DriveFull => ObjectError::DriveFull,
            ErasureError::Body(e) => ObjectError::Body(e),
            e @ ErasureError::Codec(_) => ObjectError::Erasure(e),
        }
    }
}

impl From<RecordError> for ObjectError {
    fn from(e: RecordError) -> Self {
        match e {
            RecordError::AuthorityUnreachable => ObjectError::ControlPlaneUnavailable,
            RecordError::Conflict => ObjectError::Conflict,
            RecordError::Erasure(e) => e.into(),
            e @ RecordError::Undecodable(_) => ObjectError::Internal(e.to_string()),
        }
    }
}

/// The object store: every erasure set of the deployment.
pub struct ObjectStore {
    sets: Vec<RecordSet>,
    /// The server pools, in order, each a run of `sets`; a key lives in one of them.
    pools: Vec<Pool>,
    placement_key: (u64, u64),
    /// Object keys: held by readers of metadata and by commits.
    locks: NamespaceLocks,
    /// Keys moving between pools, and their writers in flight.
    moves: key_locks::MoveGate,
    /// Multipart uploads: read by part commits, written by completion and abort.
    upload_locks: NamespaceLocks,
    /// Part numbers of an upload: a part sent twice commits once at a time.
    part_locks: NamespaceLocks,
    /// The thread that hashes the ETags of all uploads in flight together.
    md5: digest::md5_lanes::Md5Lanes,
    /// Objects that reads found damaged, for the healer.
    heal_queue: heal::objects::HealQueue,
    /// Where lifecycle transitions move data, by name.
    tiers: arc_swap::ArcSwap<Tiers>,
    /// The bucket records agreed on lately.
    buckets: bucket_cache::BucketCache,
    /// Where object keys of SSE-S3 and SSE-KMS versions come from.
    kms: arc_swap::ArcSwapOption<Arc<dyn crate::kms::KeyService>>,
    /// A key service is configured, though `kms` may not hold it yet.
    kms_expected: std::sync::atomic::AtomicBool,
    /// Where changes to bucket and system records are told to other servers (a cluster).
    feed: std::sync::OnceLock<Arc<dyn ChangeFeed>>,
    /// Where bucket and system records are decided, when not on the drives (a cluster's
    /// control plane).
    authority: std::sync::OnceLock<Arc<dyn RecordAuthority>>,
    /// How often the authority was found behind the drives.
    divergence: crate::records::authority::Divergence,
}

impl ObjectStore {
    /// One pool of `sets`. `deployment_id` seeds key placement, so it must be the same on
    /// every start.
    pub fn new(sets: Vec<impl Into<RecordSet>>, deployment_id: &str) -> Arc<Self> {
        let sets: Vec<RecordSet> = sets.into_iter().map(Into::into).collect();
        let one_pool = 0..sets.len();
        Self::pooled(sets, deployment_id, Vec::from([one_pool]))
    }

    /// Server pools over `sets`, each a run of them, in order.
    pub fn pooled(
        sets: Vec<RecordSet>,
        deployment_id: &str,
        pools: Vec<Range<usize>>,
    ) -> Arc<Self> {
        let mut h = SipHasher24::new();
        h.write(deployment_id.as_bytes());
        let k0 = h.finish();
        h.write_u8(1);
        let k1 = h.finish();
        let buckets = match sets.iter().any(RecordSet::is_shared_with_other_servers) {
            true => bucket_cache::BucketCache::shared(),
            false => bucket_cache::BucketCache::alone(),
        };
        Arc::new(Self {
            sets,
            pools: pools.into_iter().map(Pool::new).collect(),
            placement_key: (k0, k1),
            locks: NamespaceLocks::new(),
            moves: Default::default(),
            upload_locks: NamespaceLocks::new(),
            part_locks: NamespaceLocks::new(),
            md5: digest::md5_lanes::Md5Lanes::start(),
            heal_queue: heal::objects::HealQueue::new(HEAL_QUEUE_LEN),
            tiers: arc_swap::ArcSwap::from_pointee(Tiers::default()),
            buckets,
            kms: arc_swap::ArcSwapOption::empty(),
            kms_expected: Default::default(),
            feed: Default::default(),
            authority: Default::default(),
            divergence: Default::default(),
        })
    }

    pub fn sets(&self) -> &[RecordSet] {
        &self.sets
    }

    /// Waits until the tidy-up changes asked so far (tombstones taken away after a rename)
    /// are applied: at shutdown, so that heal has less to do, and in tests.
    pub async fn tidied(&self) {
        futures::future::join_all(self.sets.iter().map(RecordSet::tidied)).await;
    }
}

/// How long a read-decide-commit step keeps trying while it loses races: long enough for a
/// write cut short on another server to be told from one in flight, which takes a commit
/// deadline (see [`crate::records::in_flight`]).
const CONFLICT_BUDGET: std::time::Duration =
    crate::records::in_flight::DEFAULT_COMMIT_DEADLINE.saturating_mul(2);

/// Runs a read-decide-commit step, and again (after a random pause that grows with each
/// try) while it loses races to writers on other servers, then gives up with the conflict.
pub(crate) async fn retry_conflicts<T, F, Fut>(mut attempt: F) -> Result<T, ObjectError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, ObjectError>>,
{
    let started = std::time::Instant::now();
    let mut tried = 0;
    loop {
        match attempt().await {
            Err(ObjectError::Conflict) if started.elapsed() < CONFLICT_BUDGET => {
                let ceiling_ms = 2u64 << tried.min(6);
                let pause = rand::random_range(1..=ceiling_ms);
                tokio::time::sleep(std::time::Duration::from_millis(pause)).await;
                tried += 1;
            }
            other => return other,
        }
    }
}

/// Now, in Unix milliseconds.
pub fn now_ms() -> i64 {
    (time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64
}
