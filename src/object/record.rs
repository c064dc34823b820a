//! The metadata records kept in every drive's database, and their encoding.
//!
//! Records are MessagePack with named fields behind a one-byte format version, so fields can
//! be added with `#[serde(default)]` and old records still decode.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::acl::{Acl, ObjectOwnership, PublicAccessBlock};
use super::object_lock::{ObjectLock, ObjectLockConfig};
use crate::object::digest::checksum::{ChecksumAlgorithm, ChecksumType};
use crate::records::revisioned::Revisioned;
use crate::records::Table;

pub use crate::records::codec::{decode, encode};

/// Where each kind of record lives on the drives of a set (see [`crate::records::Table`]).
pub const BUCKETS: Table<BucketRecord> = Table::buckets();
pub const OBJECTS: Table<ObjectRecord> = Table::objects();
pub const VERSIONS: Table<VersionsRecord> = Table::versions();
pub const INLINE_CHUNKS: Table<InlineChunk> = Table::inline_chunks();
pub const UPLOADS: Table<UploadRecord> = Table::uploads();
pub const PARTS: Table<PartRecord> = Table::parts();

/// One drive's own chunk of a small object's data (see [`Table::inline_chunks`]): raw bytes
/// as stored, never a record to decode, so only ever put as stored.
pub enum InlineChunk {}

/// A bucket, stored on every drive of every set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BucketRecord {
    pub name: String,
    /// Random id naming the bucket's data folder on each drive.
    pub id: String,
    /// Creation time, Unix milliseconds.
    pub created_ms: i64,
    /// Bumped by every change of the bucket's settings; the highest revision a drive of
    /// the bucket holds wins, so a settings change cut short by a crash is all or nothing.
    #[serde(default)]
    pub revision: u64,
    #[serde(default)]
    pub settings: BucketSettings,
}

impl Revisioned for BucketRecord {
    fn id(&self) -> &str {
        &self.id
    }
    fn revision(&self) -> u64 {
        self.revision
    }
}

/// A bucket's configuration subresources.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BucketSettings {
    /// Bucket tags (`?tagging`); `None` when no tag set was ever put or it was deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<(String, String)>>,
    /// CORS rules (`?cors`), as stored for answering browsers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cors: Option<Vec<CorsRule>>,
    /// Bucket policy (`?policy`): the JSON document as put, validated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// Lifecycle configuration (`?lifecycle`), as S3's XML, validated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<String>,
    /// Versioning (`?versioning`); `None` while it was never enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub versioning: Option<Versioning>,
    /// Object Lock (`?object-lock`); once enabled it stays, as in S3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_lock: Option<ObjectLockConfig>,
    /// The bucket's ACL (`?acl`); `None`: the owner has full control.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acl: Option<Acl>,
    /// Object Ownership (`?ownershipControls`); `None` once deleted (ACLs then count, and
    /// writers own their objects). Buckets start with `BucketOwnerEnforced`, as on S3.
    #[serde(default = "enforced", skip_serializing_if = "is_enforced")]
    pub ownership: Option<ObjectOwnership>,
    /// Block Public Access (`?publicAccessBlock`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_access_block: Option<PublicAccessBlock>,
    /// Default encryption (`?encryption`): what uploads that ask for none get.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encryption: Option<DefaultEncryption>,
    /// Canonical ID of the user who created the bucket; `None`: the deployment's root user
    /// (who also owns the buckets made before owners were kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

/// How a bucket encrypts the objects uploaded without encryption headers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DefaultEncryption {
    pub algorithm: SseAlgorithm,
    /// The KMS key of `aws:kms`; `None`: the key service's default key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kms_key_id: Option<String>,
    /// S3 Bucket Keys (`BucketKeyEnabled`), reported back to clients.
    #[serde(default)]
    pub bucket_key_enabled: bool,
}

/// The server-side encryption algorithms S3 names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SseAlgorithm {
    /// SSE-S3 (`AES256`).
    Aes256,
    /// SSE-KMS (`aws:kms`).
    AwsKms,
}

impl SseAlgorithm {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "AES256" => Some(Self::Aes256),
            "aws:kms" => Some(Self::AwsKms),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Aes256 => "AES256",
            Self::AwsKms => "aws:kms",
        }
    }
}

fn enforced() -> Option<ObjectOwnership> {
    Some(ObjectOwnership::BucketOwnerEnforced)
}

fn is_enforced(ownership: &Option<ObjectOwnership>) -> bool {
    *ownership == enforced()
}

impl Default for BucketSettings {
    fn default() -> Self {
        Self {
            tags: None,
            cors: None,
            policy: None,
            lifecycle: None,
            versioning: None,
            object_lock: None,
            acl: None,
            ownership: enforced(),
            public_access_block: None,
            encryption: None,
            owner: None,
        }
    }
}

impl BucketSettings {
    /// Whether ACLs grant anything in the bucket (its Object Ownership is not
    /// `BucketOwnerEnforced`).
    pub fn acls_enabled(&self) -> bool {
        self.ownership.is_none_or(ObjectOwnership::acls_enabled)
    }

    /// The canonical ID of the bucket's owner, `root` being the root user's.
    pub fn owner<'a>(&'a self, root: &'a str) -> &'a str {
        self.owner.as_deref().unwrap_or(root)
    }
}

/// The versioning state of a bucket that has had versioning enabled; it never goes back to
/// unversioned, as in S3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Versioning {
    /// Every write makes a new version; deletes leave delete markers.
    Enabled,
    /// Writes replace the `null` version; versions made before are kept.
    Suspended,
}

/// One CORS rule of a bucket.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CorsRule {
    pub id: Option<String>,
    pub allowed_origins: Vec<String>,
    pub allowed_methods: Vec<String>,
    pub allowed_headers: Vec<String>,
    pub expose_headers: Vec<String>,
    pub max_age_seconds: Option<u64>,
}

/// A flexible checksum (`x-amz-checksum-*`) as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredChecksum {
    pub algorithm: ChecksumAlgorithm,
    /// Base64 of the digest, as S3 shows it (with a `-N` suffix for composite checksums).
    pub value: String,
    #[serde(default)]
    pub kind: ChecksumType,
}

/// The shard file of a single PUT's data. A multipart upload names each part's file afresh
/// (`part.<n>.<id>`), so this name also tells how a part is sealed (see `at_rest::pieces`).
pub(crate) const SINGLE_PUT_FILE: &str = "part.1";

/// One part of an object's data: a shard file per drive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartInfo {
    /// Part number (1 for a single PUT).
    pub number: u32,
    /// Bytes of user data in the part.
    pub size: u64,
    /// Hex MD5 of the part.
    pub etag: String,
    /// Shard file name inside the data folder; starts with `part.`.
    pub file: String,
    #[serde(default)]
    pub checksum: Option<StoredChecksum>,
}

/// An object version, stored on every drive of its set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectRecord {
    /// Bytes of user data.
    pub size: u64,
    /// ETag without quotes: hex MD5, or `md5-of-md5s-N` for multipart objects.
    pub etag: String,
    /// Last-modified time, Unix milliseconds.
    pub modified_ms: i64,
    /// Unique per write: names the data folder and tells drives' copies of a key apart.
    pub data_id: Uuid,
    pub content_type: Option<String>,
    /// User metadata (`x-amz-meta-` names, lower-cased, prefix removed).
    pub user_meta: Vec<(String, String)>,
    /// Other stored headers: Content-Encoding, Content-Disposition, Cache-Control, ...
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    #[serde(default)]
    pub checksum: Option<StoredChecksum>,
    /// Object tags (`x-amz-tagging`), in the order given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<(String, String)>,
    /// `x-amz-storage-class` when not STANDARD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class: Option<String>,
    /// Bumped by changes that keep the data (tagging, copying onto itself): a version is its
    /// `data_id` and `revision` together.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub revision: u32,
    pub data_shards: u8,
    pub parity_shards: u8,
    /// Erasure block size in bytes.
    pub block_size: u32,
    /// True when the shards live in the `Inline` table rather than in files.
    pub inline: bool,
    /// The parts of the data, in order; empty for inline objects.
    pub parts: Vec<PartInfo>,
    /// The version this one replaced on this drive, kept until the key is written again so
    /// that a crash in the middle of a commit leaves the old version readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded: Option<Box<ObjectRecord>>,
    /// S3's version id; `None` is the `null` version (unversioned and suspended writes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_id: Option<String>,
    /// A delete marker: a version that records a delete and holds no data.
    #[serde(default, skip_serializing_if = "is_false")]
    pub delete_marker: bool,
    /// Where the data went when lifecycle moved it to a tier; then `parts` is empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<TierLocation>,
    /// Object Lock retention and legal hold.
    #[serde(default, skip_serializing_if = "ObjectLock::is_empty")]
    pub lock: ObjectLock,
    /// The multipart upload whose completion made this version, so that a completion sent
    /// again (SDKs retry one that timed out) gets the same answer instead of NoSuchUpload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upload_id: Option<String>,
    /// The version's ACL (`?acl`); `None`: the bucket's owner owns it, with full control.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acl: Option<Acl>,
    /// How the data is encrypted at rest, and its object key sealed; `None`: not encrypted.
    /// An encrypted version's `size` and part sizes count the stored (sealed) bytes, which
    /// is what the erasure sets, healing and tiers work on; clients see
    /// [`ObjectRecord::content_length`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sse: Option<crate::encryption::Sse>,
    /// The rename that made this version, when the client gave it a token: a retry of it
    /// (same token, same source) succeeds again without doing anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renamed_by: Option<RenameToken>,
    /// On a rename's tombstone in an unversioned bucket: the data folder of the version it
    /// replaced, which passed to the rename's destination. This key never deletes it, even
    /// from a drive that missed the rename; a crash's leftover goes to the orphan collector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lent_data: Option<Uuid>,
    /// On a version a rename made without a new data folder: the key it took the folder
    /// from. A rename cut short may leave that key holding the folder as its own, so the
    /// folder is deleted with this version only once that key's current version is another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_from: Option<String>,
    /// How many moves between server pools carried this version. Until a move removes the
    /// key from the pool it left, both pools hold it, and the copy moved fewer times is the
    /// key's: a writer who chose that pool before the copy meets those who come after.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pool_moves: u32,
}

/// A rename's `x-amz-client-token` and the source it named.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenameToken {
    pub client_token: String,
    pub source: String,
}

impl ObjectRecord {
    /// The object's size as clients see it: the plaintext's, for an encrypted version.
    pub fn content_length(&self) -> u64 {
        match (&self.sse, self.parts.as_slice()) {
            (None, _) => self.size,
            (Some(_), []) | (Some(_), [_]) => plain(self.size),
            (Some(_), parts) => parts.iter().map(|part| plain(part.size)).sum(),
        }
    }

    /// A part's size as clients see it.
    pub fn part_content_length(&self, part: &PartInfo) -> u64 {
        match self.sse {
            Some(_) => plain(part.size),
            None => part.size,
        }
    }
}

/// The plaintext size of `stored` sealed bytes.
fn plain(stored: u64) -> u64 {
    crate::encryption::plain_len(stored).unwrap_or(0)
}

/// An object's data in a tier.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TierLocation {
    /// The tier's name (also the version's storage class).
    pub tier: String,
    /// The object's name inside the tier.
    pub object: String,
}

/// Every version of one key of a versioned bucket, newest first, delete markers included.
/// Stored on every drive of the key's set beside the `Objects` record of the newest version
/// that is not a delete marker (which listings read).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VersionsRecord {
    /// Fresh for every commit of the key: tells drives' copies apart.
    pub state: Uuid,
    pub versions: Vec<ObjectRecord>,
    /// The state this one replaced on this drive, kept until the key is written again so
    /// that a commit cut short leaves the old state whole (see `ObjectRecord::superseded`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded: Option<Box<VersionsRecord>>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl ObjectRecord {
    /// Whether two records are the same version: same data and same metadata revision.
    pub fn same_version(&self, other: &ObjectRecord) -> bool {
        self.data_id == other.data_id && self.revision == other.revision
    }

    /// The version id as S3 shows it: `null` for the null version.
    pub fn version_id_str(&self) -> &str {
        self.version_id.as_deref().unwrap_or(NULL_VERSION)
    }

    /// Whether this is the version a request's `versionId` names.
    pub fn has_version_id(&self, id: &str) -> bool {
        self.version_id_str() == id
    }

    /// Whether the version's bytes live on this set's drives (not in a tier, not a marker).
    pub fn has_local_data(&self) -> bool {
        !self.delete_marker && self.tier.is_none()
    }

    /// The versions a drive's record vouches for: its own and the one it replaced.
    pub(crate) fn with_superseded(&self) -> impl Iterator<Item = &ObjectRecord> {
        std::iter::once(self).chain(self.superseded.as_deref())
    }
}

impl VersionsRecord {
    /// The states a drive's record vouches for: its own and the one it replaced.
    pub(crate) fn with_superseded(&self) -> impl Iterator<Item = &VersionsRecord> {
        std::iter::once(self).chain(self.superseded.as_deref())
    }
}

#[cfg(test)]
impl ObjectRecord {
    /// An empty inline 6+3 version with a fresh data id, for tests to adjust.
    pub(crate) fn for_tests() -> Self {
        ObjectRecord {
            size: 0,
            etag: String::new(),
            modified_ms: 0,
            data_id: Uuid::new_v4(),
            content_type: None,
            user_meta: vec![],
            headers: vec![],
            checksum: None,
            tags: vec![],
            storage_class: None,
            revision: 0,
            data_shards: 6,
            parity_shards: 3,
            block_size: 1 << 20,
            inline: true,
            parts: vec![],
            superseded: None,
            version_id: None,
            delete_marker: false,
            tier: None,
            lock: ObjectLock::default(),
            upload_id: None,
            acl: None,
            sse: None,
            renamed_by: None,
            lent_data: None,
            data_from: None,
            pool_moves: 0,
        }
    }
}

/// S3's name of the version that unversioned and suspended writes make.
pub const NULL_VERSION: &str = "null";

/// A fresh version id: 32 hex digits, ordered by time of creation.
pub fn new_version_id() -> String {
    Uuid::now_v7().simple().to_string()
}

/// Whether a `versionId` a client sent could name a version here.
pub fn is_valid_version_id(id: &str) -> bool {
    id == NULL_VERSION || (id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A multipart upload in progress, stored on every drive of the key's set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UploadRecord {
    pub bucket: String,
    pub key: String,
    pub initiated_ms: i64,
    /// The data folder the parts are written into; it becomes the object's at completion.
    pub data_id: Uuid,
    pub content_type: Option<String>,
    pub user_meta: Vec<(String, String)>,
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    #[serde(default)]
    pub checksum_algorithm: Option<ChecksumAlgorithm>,
    /// How the object's checksum is formed from the parts'.
    #[serde(default)]
    pub checksum_type: ChecksumType,
    /// Tags for the object to be.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<(String, String)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class: Option<String>,
    /// Object Lock settings for the object to be.
    #[serde(default, skip_serializing_if = "ObjectLock::is_empty")]
    pub lock: ObjectLock,
    /// The ACL for the object to be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acl: Option<Acl>,
    /// The object key the parts are sealed with, when the object is to be encrypted; the
    /// completed object keeps it. Part sizes then count sealed bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sse: Option<crate::encryption::Sse>,
    /// Set when the upload was completed or aborted: the record then stands in for the
    /// upload as a tombstone (see [`UploadEnd`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<UploadEnd>,
}

/// How an upload ended. Its record is not deleted then but replaced by this tombstone, on the
/// drives that still held the upload as it was read (so a completion and an abort can never
/// both win), and taken away only once every drive holds it: a drive that missed the end, or
/// a heal that read the upload before it, could otherwise make it open again, and a later
/// abort would delete the folder that a completion made an object's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum UploadEnd {
    Completed,
    Aborted,
}

impl UploadRecord {
    /// This upload's tombstone.
    pub fn ended(&self, how: UploadEnd) -> UploadRecord {
        UploadRecord {
            ended: Some(how),
            ..self.clone()
        }
    }

    /// A part's size as clients see it: its plaintext's, when the upload is encrypted.
    pub fn part_content_length(&self, part: &PartInfo) -> u64 {
        match self.sse {
            Some(_) => plain(part.size),
            None => part.size,
        }
    }
}

/// One uploaded part of a multipart upload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartRecord {
    pub info: PartInfo,
    pub modified_ms: i64,
}

/// Database key of an object: bucket, NUL, key (NUL cannot occur in either).
pub fn object_key(bucket: &str, key: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(bucket.len() + 1 + key.len());
    out.extend_from_slice(bucket.as_bytes());
    out.push(0);
    out.extend_from_slice(key.as_bytes());
    out
}

/// Database key of an inline object's shard chunk on a drive: the object key, NUL, the
/// version's data id.
pub fn inline_key(bucket: &str, key: &str, data_id: Uuid) -> Vec<u8> {
    let mut out = inline_prefix(bucket, key);
    out.extend_from_slice(data_id.as_bytes());
    out
}

/// What the database keys of every inline chunk of an object start with (keys hold no NUL,
/// so no other object's chunks do).
pub fn inline_prefix(bucket: &str, key: &str) -> Vec<u8> {
    let mut out = object_key(bucket, key);
    out.push(0);
    out
}

/// Database key of an upload: the object key, NUL, the upload id.
pub fn upload_key(bucket: &str, key: &str, upload_id: &str) -> Vec<u8> {
    let mut out = object_key(bucket, key);
    out.push(0);
    out.extend_from_slice(upload_id.as_bytes());
    out
}

/// Prefix of every part key of an upload.
pub fn parts_prefix(upload_id: &str) -> Vec<u8> {
    let mut out = upload_id.as_bytes().to_vec();
    out.push(0);
    out
}

/// Database key of a part: the upload id, NUL, the part number big-endian (so parts sort).
pub fn part_key(upload_id: &str, number: u32) -> Vec<u8> {
    let mut out = parts_prefix(upload_id);
    out.extend_from_slice(&number.to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_reject_unknown_versions() {
        let record = BucketRecord {
            name: "b".into(),
            id: "id".into(),
            created_ms: 7,
            revision: 3,
            settings: BucketSettings {
                tags: Some(vec![("team".into(), "ml".into())]),
                cors: None,
                policy: Some("{}".into()),
                lifecycle: None,
                versioning: Some(Versioning::Enabled),
                object_lock: Some(ObjectLockConfig::default()),
                acl: Some(Acl::private("owner")),
                ownership: Some(ObjectOwnership::ObjectWriter),
                public_access_block: Some(PublicAccessBlock {
                    block_public_acls: true,
                    ..PublicAccessBlock::default()
                }),
                encryption: Some(DefaultEncryption {
                    algorithm: SseAlgorithm::AwsKms,
                    kms_key_id: Some("datasets".into()),
                    bucket_key_enabled: true,
                }),
                owner: Some("alice-id".into()),
            },
        };
        let bytes = encode(&record);
        assert_eq!(decode::<BucketRecord>(&bytes).unwrap(), record);
        // Buckets start with ACLs disabled (and records from before Object Ownership
        // decode so); controls deleted stay deleted.
        for ownership in [Some(ObjectOwnership::BucketOwnerEnforced), None] {
            let settings = BucketSettings {
                ownership,
                ..BucketSettings::default()
            };
            let bytes = encode(&settings);
            assert_eq!(
                decode::<BucketSettings>(&bytes).unwrap().ownership,
                ownership
            );
        }
        #[derive(Serialize)]
        struct Before {
            policy: Option<String>,
        }
        let before = encode(&Before { policy: None });
        assert_eq!(
            decode::<BucketSettings>(&before).unwrap(),
            BucketSettings::default()
        );
        let mut future = bytes.clone();
        future[0] = 99;
        assert!(decode::<BucketRecord>(&future).is_err());
        assert!(decode::<BucketRecord>(&[]).is_err());
    }

    #[test]
    fn part_keys_sort_by_number() {
        assert!(part_key("u", 2) < part_key("u", 10));
        assert!(part_key("u", 255) < part_key("u", 256));
        assert!(part_key("u", 1).starts_with(&parts_prefix("u")));
    }
}
