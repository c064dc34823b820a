//! The authority that decides deployment-wide records in a cluster (etcd, through the
//! control plane): bucket records, and the system records that hold users, policies and the
//! key catalog. Each change is a compare-and-swap there on the bytes it was decided on; the
//! drives keep a copy of the record, the same bytes, as on a server alone.
//!
//! Absence in the authority is never taken for a deletion: an etcd restored from an older
//! snapshot, or whose keys were deleted, lacks what it once held. So a deleted record stays
//! in the authority as a tombstone ([`DELETED`]), and every change raises the records'
//! revision in the same transaction, which each drive copies ([`RECORDS_REVISION`]). This
//! file holds the authority's contract and what is decided from its records and the drives'
//! alone; the flows that read, change, refill and heal through it are [`super::decided`].

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use async_trait::async_trait;

use super::revisioned::Revisioned;
use super::table::{Change, Table, TableId};
use super::{codec, Agreement, RecordError, RecordSet};
use crate::erasure::ErasureError;
use crate::storage::{DriveError, MetaOp, MetaTable};

#[async_trait]
pub trait RecordAuthority: Send + Sync {
    /// The record's bytes as stored (a tombstone included), if the authority holds any.
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, RecordError>;
    /// Every record whose key starts with `prefix`, in key order, as stored.
    async fn list(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, RecordError>;
    /// How many changes the authority has decided: the records' revision (0: none, or the
    /// count was lost with the records).
    async fn revision(&self) -> Result<u64, RecordError>;
    /// Sets the record to `value` only if it still holds `expected` (`None`: only if it
    /// holds nothing) and the records' revision is still `revision`, raising it by one, in
    /// one transaction; whether it did.
    async fn swap(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        value: &[u8],
        revision: u64,
    ) -> Result<bool, RecordError>;
    /// Raises the records' revision from `from` to `to`; whether it still was `from`.
    async fn raise_revision(&self, from: u64, to: u64) -> Result<bool, RecordError>;
}

/// What the authority holds for a deleted record: never a record's encoding (those start
/// with their format's version byte, 1).
pub const DELETED: &[u8] = b"deleted";

/// The system record key under which each drive keeps the records' revision of the last
/// change it copied (decimal). Not a record the authority decides.
pub const RECORDS_REVISION: &[u8] = b"records-revision";

/// The tables whose records the authority decides, and the prefix of their keys there.
pub const DECIDED: [(TableId, &str); 2] = [
    (TableId(MetaTable::Buckets), "buckets/"),
    (TableId(MetaTable::System), "system/"),
];

/// The authority's key of a record of `table`.
pub fn authority_key(table: impl Into<TableId>, key: &[u8]) -> String {
    let table = table.into();
    let prefix = (DECIDED.iter())
        .find(|(decided, _)| *decided == table)
        .map_or("", |(_, prefix)| prefix);
    format!("{prefix}{}", String::from_utf8_lossy(key))
}

/// How often this server found the authority behind the drives and filled it again, and the
/// records it put back: what `strata admin info` reports.
#[derive(Default)]
pub struct Divergence {
    pub refills: AtomicU64,
    pub records_put_back: AtomicU64,
}

/// Puts `value` under `key` in the authority if it holds nothing there, whatever other
/// records change meanwhile; whether it did.
pub async fn put_if_absent(
    authority: &Arc<dyn RecordAuthority>,
    key: &str,
    value: &[u8],
) -> Result<bool, RecordError> {
    const ATTEMPTS: usize = 20;
    for _ in 0..ATTEMPTS {
        let revision = authority.revision().await?;
        if authority.swap(key, None, value, revision).await? {
            return Ok(true);
        }
        if authority.get(key).await?.is_some() {
            return Ok(false);
        }
    }
    Err(RecordError::Conflict)
}

/// Every record the authority holds of `table` (tombstones included), by its key on the
/// drives.
pub async fn decided_in(
    authority: &Arc<dyn RecordAuthority>,
    table: TableId,
) -> Result<BTreeMap<Vec<u8>, Vec<u8>>, RecordError> {
    let prefix = authority_key(table, b"");
    Ok((authority.list(&prefix).await?.into_iter())
        .map(|(key, value)| (key.as_bytes()[prefix.len()..].to_vec(), value))
        .collect())
}

/// What a set's drives agree on about one record (see [`ErasureSet::agree`]).
pub enum Held {
    /// This record, encoded.
    Agreed(Vec<u8>),
    /// Enough drives answered that they hold none that it cannot exist.
    Nowhere,
    /// The drives disagree, or too few answered.
    Undecided,
}

/// Every record of `table` some drive of `set` holds, and what the set agrees on about it,
/// each read as a `T`. Fails unless a read quorum of drives listed theirs.
pub async fn agreed_records<T: Revisioned>(
    set: &RecordSet,
    table: Table<T>,
) -> Result<BTreeMap<Vec<u8>, Held>, RecordError> {
    let table = table.id();
    let scans = set.scan_all(table, Bound::Unbounded, &[], usize::MAX).await;
    if scans.iter().flatten().count() < set.read_quorum() {
        return Err(RecordError::Erasure(ErasureError::ReadQuorum));
    }
    let mut keys: Vec<&Vec<u8>> = (scans.iter().flatten())
        .flat_map(|entries| entries.iter().map(|(key, _)| key))
        // The drive's own note of the records' revision is no record.
        .filter(|key| !(table.meta() == MetaTable::System && key.as_slice() == RECORDS_REVISION))
        .collect();
    keys.sort();
    keys.dedup();
    let mut held = BTreeMap::new();
    for key in keys {
        let answers: Vec<Result<Option<T>, DriveError>> = (scans.iter())
            .map(|scan| match scan {
                Ok(entries) => Ok((entries.iter())
                    .find(|(k, _)| k == key)
                    .and_then(|(_, v)| codec::decode::<T>(v).ok())),
                Err(_) => Err(DriveError::Offline(String::new())),
            })
            .collect();
        let agreed = match set.agree(&answers) {
            Ok(Agreement::Found { value, .. }) => Held::Agreed(codec::encode(&value)),
            Ok(Agreement::NotFound) => Held::Nowhere,
            Err(_) => Held::Undecided,
        };
        held.insert(key.clone(), agreed);
    }
    Ok(held)
}

/// The changes that make a drive's copies of `table` the `decided` records: each put or
/// delete conditional on what the drive held (`held`: its scan; `None` for an unhealed drive,
/// which lists nothing and only receives). A tombstone in the authority removes the copy; a
/// copy the authority lacks stays. `None` when nothing is to change.
pub fn copy_fixes(
    table: TableId,
    decided: &BTreeMap<Vec<u8>, Vec<u8>>,
    held: Option<&[(Vec<u8>, Vec<u8>)]>,
) -> Option<Vec<Change>> {
    let table = table.meta();
    let held_map: BTreeMap<&[u8], &[u8]> = (held.unwrap_or_default().iter())
        .map(|(k, v)| (k.as_slice(), v.as_slice()))
        .collect();
    let mut ops = Vec::new();
    for (key, value) in decided {
        let on_drive = held_map.get(key.as_slice()).copied();
        let fix = match value.as_slice() {
            DELETED if on_drive.is_some() => MetaOp::Delete {
                table,
                key: key.to_vec(),
            },
            DELETED => continue,
            value if on_drive == Some(value) => continue,
            value => MetaOp::Put {
                table,
                key: key.to_vec(),
                value: value.to_vec(),
            },
        };
        if held.is_some() {
            ops.push(Change(MetaOp::Expect {
                table,
                key: key.to_vec(),
                value: on_drive.map(<[u8]>::to_vec),
            }));
        }
        ops.push(Change(fix));
    }
    Some(ops).filter(|ops| !ops.is_empty())
}

/// Whether `a` is a later revision of the same record as `b` (both encoded `T`s).
pub fn is_later<T: Revisioned>(a: &[u8], b: &[u8]) -> bool {
    match (codec::decode::<T>(a), codec::decode::<T>(b)) {
        (Ok(a), Ok(b)) => a.id() == b.id() && a.revision() > b.revision(),
        _ => false,
    }
}
