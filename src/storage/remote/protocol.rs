//! The drive RPC on the wire: the calls and their paths, the headers, and the msgpack shapes
//! of arguments, answers and errors. Both sides take these definitions from here, so a change
//! to one is a change to both; a change that old peers cannot read takes a new path version.
//!
//! Every call is a POST to `/_strata/rpc/v2/<call>`. Its arguments are one msgpack value
//! (maps with named fields, so fields can be added), an [`Envelope`] naming the drive: the
//! request body, except for [`Call::CreateStagedFile`], whose arguments travel base64 in the
//! [`ARGS_HEADER`] because its body is the shard's bytes (see [`super::frame`]). A 200 answer
//! is the call's value in msgpack, or the bytes read for [`Call::ReadShard`]; a drive's
//! failure is a 500 marked with [`DRIVE_ERROR_HEADER`] carrying a [`WireError`]; any other
//! status is the service refusing the request itself (authentication, a malformed request).

use std::io;
use std::ops::Bound;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use uuid::Uuid;

use crate::storage::{DataDir, DriveError, MetaOp, MetaTable, Replaced, ScanPage};

/// The path every call's name is appended to; the version changes with incompatible shapes.
pub const RPC_PREFIX: &str = "/_strata/rpc/v2/";

/// Milliseconds since the Unix epoch when the request was signed.
pub const TIME_HEADER: &str = "x-strata-time";
/// 128 random bits, hex: no two requests share one.
pub const NONCE_HEADER: &str = "x-strata-nonce";
/// HMAC-SHA256, hex, over what [`super::auth`] says a request's signature covers.
pub const SIGNATURE_HEADER: &str = "x-strata-signature";
/// The SHA-256 of a call's arguments, hex: signed, so the signature is checked before the
/// body is read.
pub const ARGS_DIGEST_HEADER: &str = "x-strata-args-sha256";
/// The arguments of a streaming call (its body being the stream): msgpack, base64url.
pub const ARGS_HEADER: &str = "x-strata-args";
/// What is left of the caller's deadline for the call, in milliseconds (see
/// [`crate::storage::answer_by`]): the serving node does not start a call that comes with
/// none left, and gives up on one when it runs out. Signed, so it cannot be raised on the way.
pub const DEADLINE_HEADER: &str = "x-strata-deadline-ms";
/// On an answer: `1` when the drive answered a drive error, whose [`WireError`] is the body.
pub const DRIVE_ERROR_HEADER: &str = "x-strata-drive-error";
/// On every answer to an authenticated request: its signature for that request (hex; see
/// [`super::auth::ClusterAuth::sign_answer`]).
pub const ANSWER_SIGNATURE_HEADER: &str = "x-strata-answer-signature";
/// On every answer about a drive: whether it is unhealed (`1`) or not (`0`) after the call.
pub const UNHEALED_HEADER: &str = "x-strata-unhealed";

/// Largest arguments accepted: metadata batches and keys, never shard data.
pub const MAX_ARGS: usize = 4 << 20;
/// Largest read of a shard file in one call (reads are one erasure block's shard).
pub const MAX_READ: u64 = 64 << 20;

/// The calls of the drive RPC, one per [`crate::storage::Drive`] method (reads of an open
/// shard file are [`Call::ReadShard`]; a shard file's writes and finish are one stream).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Call {
    MetaGet,
    MetaGetRelated,
    MetaApply,
    MetaScan,
    MetaScanDelimited,
    CreateStagedFile,
    CommitStaged,
    RemoveStaged,
    OpenShard,
    /// Several shard files of one data folder at once (the parts of one read).
    OpenShards,
    ReadShard,
    DeleteDataDir,
    DeleteDataFile,
    LinkDataDir,
    DiskInfo,
    ListDataDirs,
    MarkHealed,
    IsUnhealed,
    /// Whether the node answers at all: touches no drive.
    Ping,
}

impl Call {
    pub const ALL: [Call; 19] = [
        Call::MetaGet,
        Call::MetaGetRelated,
        Call::MetaApply,
        Call::MetaScan,
        Call::MetaScanDelimited,
        Call::CreateStagedFile,
        Call::CommitStaged,
        Call::RemoveStaged,
        Call::OpenShard,
        Call::OpenShards,
        Call::ReadShard,
        Call::DeleteDataDir,
        Call::DeleteDataFile,
        Call::LinkDataDir,
        Call::DiskInfo,
        Call::ListDataDirs,
        Call::MarkHealed,
        Call::IsUnhealed,
        Call::Ping,
    ];

    /// The last segment of the call's path.
    pub fn name(self) -> &'static str {
        match self {
            Call::MetaGet => "meta_get",
            Call::MetaGetRelated => "meta_get_related",
            Call::MetaApply => "meta_apply",
            Call::MetaScan => "meta_scan",
            Call::MetaScanDelimited => "meta_scan_delimited",
            Call::CreateStagedFile => "create_staged_file",
            Call::CommitStaged => "commit_staged",
            Call::RemoveStaged => "remove_staged",
            Call::OpenShard => "open_shard",
            Call::OpenShards => "open_shards",
            Call::ReadShard => "read_shard",
            Call::DeleteDataDir => "delete_data_dir",
            Call::DeleteDataFile => "delete_data_file",
            Call::LinkDataDir => "link_data_dir",
            Call::DiskInfo => "disk_info",
            Call::ListDataDirs => "list_data_dirs",
            Call::MarkHealed => "mark_healed",
            Call::IsUnhealed => "is_unhealed",
            Call::Ping => "ping",
        }
    }

    pub fn parse(name: &str) -> Option<Call> {
        Call::ALL.into_iter().find(|call| call.name() == name)
    }

    /// `/_strata/rpc/v2/<name>`.
    pub fn path(self) -> String {
        format!("{RPC_PREFIX}{}", self.name())
    }
}

/// Bytes as msgpack `bin` (serde's default for `Vec<u8>` is an array of numbers, up to twice
/// the size).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Blob(pub Vec<u8>);

impl Serialize for Blob {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(&self.0)
    }
}

impl<'de> Deserialize<'de> for Blob {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct BlobVisitor;
        impl<'de> Visitor<'de> for BlobVisitor {
            type Value = Blob;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E: de::Error>(self, bytes: &[u8]) -> Result<Blob, E> {
                Ok(Blob(bytes.to_vec()))
            }
            fn visit_byte_buf<E: de::Error>(self, bytes: Vec<u8>) -> Result<Blob, E> {
                Ok(Blob(bytes))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Blob, A::Error> {
                let mut bytes = Vec::new();
                while let Some(byte) = seq.next_element()? {
                    bytes.push(byte);
                }
                Ok(Blob(bytes))
            }
        }
        deserializer.deserialize_byte_buf(BlobVisitor)
    }
}

/// A call's arguments and the drive they are for (its path on the serving node).
#[derive(Debug, Serialize, Deserialize)]
pub struct Envelope<A> {
    pub drive: String,
    pub args: A,
}

/// [`MetaTable`] on the wire, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WireTable {
    Buckets,
    Objects,
    Inline,
    Uploads,
    Parts,
    System,
    Versions,
}

impl From<MetaTable> for WireTable {
    fn from(table: MetaTable) -> Self {
        match table {
            MetaTable::Buckets => WireTable::Buckets,
            MetaTable::Objects => WireTable::Objects,
            MetaTable::Inline => WireTable::Inline,
            MetaTable::Uploads => WireTable::Uploads,
            MetaTable::Parts => WireTable::Parts,
            MetaTable::System => WireTable::System,
            MetaTable::Versions => WireTable::Versions,
        }
    }
}

impl From<WireTable> for MetaTable {
    fn from(table: WireTable) -> Self {
        match table {
            WireTable::Buckets => MetaTable::Buckets,
            WireTable::Objects => MetaTable::Objects,
            WireTable::Inline => MetaTable::Inline,
            WireTable::Uploads => MetaTable::Uploads,
            WireTable::Parts => MetaTable::Parts,
            WireTable::System => MetaTable::System,
            WireTable::Versions => MetaTable::Versions,
        }
    }
}

/// [`MetaOp`] on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum WireOp {
    Put {
        table: WireTable,
        key: Blob,
        value: Blob,
    },
    Delete {
        table: WireTable,
        key: Blob,
    },
    DeletePrefix {
        table: WireTable,
        prefix: Blob,
    },
    Expect {
        table: WireTable,
        key: Blob,
        value: Option<Blob>,
    },
}

impl From<MetaOp> for WireOp {
    fn from(op: MetaOp) -> Self {
        match op {
            MetaOp::Put { table, key, value } => WireOp::Put {
                table: table.into(),
                key: Blob(key),
                value: Blob(value),
            },
            MetaOp::Delete { table, key } => WireOp::Delete {
                table: table.into(),
                key: Blob(key),
            },
            MetaOp::DeletePrefix { table, prefix } => WireOp::DeletePrefix {
                table: table.into(),
                prefix: Blob(prefix),
            },
            MetaOp::Expect { table, key, value } => WireOp::Expect {
                table: table.into(),
                key: Blob(key),
                value: value.map(Blob),
            },
        }
    }
}

impl From<WireOp> for MetaOp {
    fn from(op: WireOp) -> Self {
        match op {
            WireOp::Put { table, key, value } => MetaOp::Put {
                table: table.into(),
                key: key.0,
                value: value.0,
            },
            WireOp::Delete { table, key } => MetaOp::Delete {
                table: table.into(),
                key: key.0,
            },
            WireOp::DeletePrefix { table, prefix } => MetaOp::DeletePrefix {
                table: table.into(),
                prefix: prefix.0,
            },
            WireOp::Expect { table, key, value } => MetaOp::Expect {
                table: table.into(),
                key: key.0,
                value: value.map(|v| v.0),
            },
        }
    }
}

/// [`DataDir`] on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireDataDir {
    pub bucket_id: String,
    pub data_id: Uuid,
}

impl From<&DataDir> for WireDataDir {
    fn from(dir: &DataDir) -> Self {
        Self {
            bucket_id: dir.bucket_id.clone(),
            data_id: dir.data_id,
        }
    }
}

/// Checked on arrival: the bucket id is one path component, so that no call can reach
/// outside the drive's data folders.
impl TryFrom<WireDataDir> for DataDir {
    type Error = DriveError;
    fn try_from(dir: WireDataDir) -> Result<Self, DriveError> {
        plain_name(&dir.bucket_id)?;
        Ok(Self {
            bucket_id: dir.bucket_id,
            data_id: dir.data_id,
        })
    }
}

/// `name` if it names an entry of one folder (a shard file, a bucket's data folder): not
/// empty, not `.` or `..`, without `/` or NUL. A drive joins such names to its paths as they
/// are; across the network they are checked first.
pub fn plain_name(name: &str) -> Result<&str, DriveError> {
    match name.is_empty() || name == "." || name == ".." || name.contains(['/', '\0']) {
        false => Ok(name),
        true => Err(DriveError::Io(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{name:?} is not a plain file name"),
        ))),
    }
}

/// Arguments of [`Call::MetaGet`].
#[derive(Debug, Serialize, Deserialize)]
pub struct MetaGetArgs {
    pub table: WireTable,
    pub key: Blob,
}

/// Arguments of [`Call::MetaGetRelated`].
#[derive(Debug, Serialize, Deserialize)]
pub struct MetaGetRelatedArgs {
    pub table: WireTable,
    pub key: Blob,
    pub related_table: WireTable,
    pub related_prefix: Blob,
}

/// Arguments of [`Call::MetaScan`].
#[derive(Debug, Serialize, Deserialize)]
pub struct ScanArgs {
    pub table: WireTable,
    pub start: Bound<Blob>,
    pub prefix: Blob,
    pub limit: u64,
}

/// Arguments of [`Call::MetaScanDelimited`].
#[derive(Debug, Serialize, Deserialize)]
pub struct DelimitedScanArgs {
    pub table: WireTable,
    pub start: Bound<Blob>,
    pub prefix: Blob,
    pub delimiter: Blob,
    pub limit: u64,
}

/// Arguments of [`Call::CommitStaged`].
#[derive(Debug, Serialize, Deserialize)]
pub struct CommitArgs {
    pub staging: Uuid,
    pub dir: WireDataDir,
}

/// Arguments of [`Call::LinkDataDir`]: the folder whose files get a second name, and the new
/// folder that names them.
#[derive(Debug, Serialize, Deserialize)]
pub struct LinkArgs {
    pub from: WireDataDir,
    pub to: WireDataDir,
}

/// Arguments of [`Call::OpenShard`] and [`Call::DeleteDataFile`]: one file of a data folder.
#[derive(Debug, Serialize, Deserialize)]
pub struct ShardArgs {
    pub dir: WireDataDir,
    pub name: String,
}

/// Arguments of [`Call::OpenShards`]: files of one data folder.
#[derive(Debug, Serialize, Deserialize)]
pub struct OpenShardsArgs {
    pub dir: WireDataDir,
    pub names: Vec<String>,
}

/// The most files one [`Call::OpenShards`] may name.
pub const MAX_OPENS: usize = 1024;

/// Arguments of [`Call::ReadShard`]: `len` bytes at `offset` of one shard file.
#[derive(Debug, Serialize, Deserialize)]
pub struct ReadArgs {
    pub dir: WireDataDir,
    pub name: String,
    pub offset: u64,
    pub len: u64,
}

/// Arguments of [`Call::CreateStagedFile`].
#[derive(Debug, Serialize, Deserialize)]
pub struct CreateArgs {
    pub staging: Uuid,
    pub name: String,
}

/// Answer of [`Call::MetaGetRelated`].
pub type RelatedAnswer = (Option<Blob>, Vec<(Blob, Blob)>);
/// Answer of [`Call::MetaApply`].
pub type ReplacedAnswer = Vec<(WireTable, Blob, Option<Blob>)>;
/// Answer of [`Call::DiskInfo`]: total, used, free bytes.
pub type DiskInfoAnswer = (u64, u64, u64);
/// Answer of [`Call::ListDataDirs`].
pub type DataDirsAnswer = Vec<(WireDataDir, std::time::SystemTime)>;

pub fn page_to_wire(page: ScanPage) -> Vec<(Blob, Blob)> {
    page.into_iter().map(|(k, v)| (Blob(k), Blob(v))).collect()
}

pub fn page_from_wire(page: Vec<(Blob, Blob)>) -> ScanPage {
    page.into_iter().map(|(k, v)| (k.0, v.0)).collect()
}

pub fn replaced_to_wire(replaced: Replaced) -> ReplacedAnswer {
    let entries = replaced.into_iter();
    entries
        .map(|(table, key, held)| (table.into(), Blob(key), held.map(Blob)))
        .collect()
}

pub fn replaced_from_wire(replaced: ReplacedAnswer) -> Replaced {
    let entries = replaced.into_iter();
    entries
        .map(|(table, key, held)| (table.into(), key.0, held.map(|v| v.0)))
        .collect()
}

pub fn bound_to_wire(bound: Bound<Vec<u8>>) -> Bound<Blob> {
    bound.map(Blob)
}

pub fn bound_from_wire(bound: Bound<Blob>) -> Bound<Vec<u8>> {
    bound.map(|key| key.0)
}

/// [`DriveError`] on the wire: every variant, an I/O error by its kind and message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum WireError {
    Offline(String),
    NotFound,
    Unhealed(String),
    ShortRead,
    Conflict,
    Full,
    Database(String),
    /// An I/O error: by its OS error code when it has one (nodes run the same OS, and the
    /// code gives back the exact kind, including kinds without a stable name), else by kind
    /// name and message.
    Io {
        kind: String,
        message: String,
        os_code: Option<i32>,
    },
}

impl From<&DriveError> for WireError {
    fn from(err: &DriveError) -> Self {
        match err {
            DriveError::Offline(label) => WireError::Offline(label.clone()),
            DriveError::NotFound => WireError::NotFound,
            DriveError::Unhealed(label) => WireError::Unhealed(label.clone()),
            DriveError::ShortRead => WireError::ShortRead,
            DriveError::Conflict => WireError::Conflict,
            DriveError::Full => WireError::Full,
            DriveError::Database(message) => WireError::Database(message.clone()),
            DriveError::Io(io) => WireError::Io {
                kind: kind_name(io.kind()).to_string(),
                // The kind travels apart; the message alone is what `Display` adds to it.
                message: io
                    .get_ref()
                    .map_or_else(|| io.to_string(), |inner| inner.to_string()),
                os_code: io.raw_os_error(),
            },
        }
    }
}

impl From<WireError> for DriveError {
    fn from(err: WireError) -> Self {
        match err {
            WireError::Offline(label) => DriveError::Offline(label),
            WireError::NotFound => DriveError::NotFound,
            WireError::Unhealed(label) => DriveError::Unhealed(label),
            WireError::ShortRead => DriveError::ShortRead,
            WireError::Conflict => DriveError::Conflict,
            WireError::Full => DriveError::Full,
            WireError::Database(message) => DriveError::Database(message),
            WireError::Io {
                os_code: Some(code),
                ..
            } => DriveError::Io(io::Error::from_raw_os_error(code)),
            WireError::Io { kind, message, .. } => {
                DriveError::Io(io::Error::new(kind_from_name(&kind), message))
            }
        }
    }
}

/// I/O error kinds by stable names (`ErrorKind`'s `Debug` is not promised to be stable).
/// Kinds missing here travel as `Other`, their message kept.
const IO_KINDS: &[(io::ErrorKind, &str)] = &[
    (io::ErrorKind::NotFound, "not_found"),
    (io::ErrorKind::PermissionDenied, "permission_denied"),
    (io::ErrorKind::ConnectionRefused, "connection_refused"),
    (io::ErrorKind::ConnectionReset, "connection_reset"),
    (io::ErrorKind::ConnectionAborted, "connection_aborted"),
    (io::ErrorKind::NotConnected, "not_connected"),
    (io::ErrorKind::BrokenPipe, "broken_pipe"),
    (io::ErrorKind::AlreadyExists, "already_exists"),
    (io::ErrorKind::WouldBlock, "would_block"),
    (io::ErrorKind::NotADirectory, "not_a_directory"),
    (io::ErrorKind::IsADirectory, "is_a_directory"),
    (io::ErrorKind::DirectoryNotEmpty, "directory_not_empty"),
    (io::ErrorKind::ReadOnlyFilesystem, "read_only_filesystem"),
    (
        io::ErrorKind::StaleNetworkFileHandle,
        "stale_network_file_handle",
    ),
    (io::ErrorKind::InvalidInput, "invalid_input"),
    (io::ErrorKind::InvalidData, "invalid_data"),
    (io::ErrorKind::TimedOut, "timed_out"),
    (io::ErrorKind::WriteZero, "write_zero"),
    (io::ErrorKind::StorageFull, "storage_full"),
    (io::ErrorKind::QuotaExceeded, "quota_exceeded"),
    (io::ErrorKind::FileTooLarge, "file_too_large"),
    (io::ErrorKind::ResourceBusy, "resource_busy"),
    (io::ErrorKind::Deadlock, "deadlock"),
    (io::ErrorKind::CrossesDevices, "crosses_devices"),
    (io::ErrorKind::TooManyLinks, "too_many_links"),
    (io::ErrorKind::Interrupted, "interrupted"),
    (io::ErrorKind::Unsupported, "unsupported"),
    (io::ErrorKind::UnexpectedEof, "unexpected_eof"),
    (io::ErrorKind::OutOfMemory, "out_of_memory"),
    (io::ErrorKind::Other, "other"),
];

fn kind_name(kind: io::ErrorKind) -> &'static str {
    IO_KINDS
        .iter()
        .find(|(known, _)| *known == kind)
        .map_or("other", |(_, name)| name)
}

fn kind_from_name(name: &str) -> io::ErrorKind {
    IO_KINDS
        .iter()
        .find(|(_, known)| *known == name)
        .map_or(io::ErrorKind::Other, |(kind, _)| *kind)
}

/// Encodes a value as msgpack with named fields.
pub fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, DriveError> {
    rmp_serde::to_vec_named(value).map_err(|e| {
        DriveError::Io(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("encoding a drive RPC message: {e}"),
        ))
    })
}

/// Decodes a msgpack value; a malformed one is invalid data.
pub fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, DriveError> {
    rmp_serde::from_slice(bytes).map_err(|e| {
        DriveError::Io(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("decoding a drive RPC message: {e}"),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_names_parse_back_and_are_distinct() {
        for call in Call::ALL {
            assert_eq!(Call::parse(call.name()), Some(call));
            assert!(call.path().starts_with("/_strata/rpc/v2/"));
        }
        let names: std::collections::HashSet<_> = Call::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(names.len(), Call::ALL.len());
        assert_eq!(Call::parse("config"), None);
        assert_eq!(Call::MetaGet.path(), "/_strata/rpc/v2/meta_get");
    }

    /// Every drive error comes back as the variant, label, message and I/O kind it left as.
    #[test]
    fn every_drive_error_round_trips() {
        let errors = [
            DriveError::Offline("/srv/d1".into()),
            DriveError::NotFound,
            DriveError::Unhealed("/srv/d2".into()),
            DriveError::ShortRead,
            DriveError::Conflict,
            DriveError::Full,
            DriveError::Database("table missing".into()),
            DriveError::Io(io::Error::new(io::ErrorKind::PermissionDenied, "no")),
            DriveError::Io(io::Error::new(io::ErrorKind::NotFound, "kept as io")),
            DriveError::Io(io::Error::from_raw_os_error(libc::EIO)),
            DriveError::Io(io::Error::other("odd")),
        ];
        for sent in errors {
            let bytes = encode(&WireError::from(&sent)).unwrap();
            let got = DriveError::from(decode::<WireError>(&bytes).unwrap());
            assert_eq!(got.to_string(), sent.to_string(), "{sent:?}");
            assert_eq!(
                std::mem::discriminant(&got),
                std::mem::discriminant(&sent),
                "{sent:?}"
            );
            if let (DriveError::Io(got), DriveError::Io(sent)) = (&got, &sent) {
                assert_eq!(got.kind(), sent.kind());
            }
        }
    }

    #[test]
    fn every_io_kind_name_maps_back() {
        for (kind, name) in IO_KINDS {
            assert_eq!(kind_from_name(name), *kind);
            assert_eq!(kind_name(*kind), *name);
        }
        assert_eq!(kind_from_name("from_a_newer_peer"), io::ErrorKind::Other);
    }

    #[test]
    fn blobs_are_msgpack_bin_and_ops_round_trip() {
        // bin8: marker 0xc4, length, bytes.
        assert_eq!(encode(&Blob(vec![0xff, 0])).unwrap(), [0xc4, 2, 0xff, 0]);
        let ops = vec![
            MetaOp::Put {
                table: MetaTable::Objects,
                key: b"k".to_vec(),
                value: vec![0, 255],
            },
            MetaOp::Delete {
                table: MetaTable::Inline,
                key: b"i".to_vec(),
            },
            MetaOp::DeletePrefix {
                table: MetaTable::Parts,
                prefix: b"u/".to_vec(),
            },
            MetaOp::Expect {
                table: MetaTable::Versions,
                key: b"v".to_vec(),
                value: None,
            },
        ];
        let wire: Vec<WireOp> = ops.iter().cloned().map(WireOp::from).collect();
        let back: Vec<WireOp> = decode(&encode(&wire).unwrap()).unwrap();
        assert_eq!(back, wire);
        let ops_back: Vec<MetaOp> = back.into_iter().map(MetaOp::from).collect();
        assert_eq!(format!("{ops_back:?}"), format!("{ops:?}"));
    }

    #[test]
    fn only_plain_names_pass() {
        for name in ["part.1", "b1", "..x", "a.b"] {
            assert!(plain_name(name).is_ok(), "{name}");
        }
        for name in ["", ".", "..", "../x", "a/b", "/abs", "nul\0"] {
            assert!(
                matches!(plain_name(name), Err(DriveError::Io(e)) if e.kind() == io::ErrorKind::InvalidInput),
                "{name}"
            );
        }
        let escaping = WireDataDir {
            bucket_id: "../../etc".into(),
            data_id: Uuid::nil(),
        };
        assert!(DataDir::try_from(escaping).is_err());
    }

    #[test]
    fn scan_bounds_round_trip() {
        for bound in [
            Bound::Unbounded,
            Bound::Included(b"a".to_vec()),
            Bound::Excluded(vec![0xff]),
        ] {
            let args = Envelope {
                drive: "/d".into(),
                args: ScanArgs {
                    table: WireTable::Objects,
                    start: bound_to_wire(bound.clone()),
                    prefix: Blob(b"p".to_vec()),
                    limit: 7,
                },
            };
            let back: Envelope<ScanArgs> = decode(&encode(&args).unwrap()).unwrap();
            assert_eq!(bound_from_wire(back.args.start), bound);
            assert_eq!(back.drive, "/d");
        }
    }
}
