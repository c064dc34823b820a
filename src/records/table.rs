//! The kinds of records and the changes made to them, as the layers above name them: a
//! [`Table`] says where a kind's copies live and what a copy decodes to; a [`Change`] is one
//! step of a commit, built only from a table, so a record of one kind cannot be written
//! where another kind lives, and nothing above this layer speaks the drives' terms.

use std::fmt;
use std::marker::PhantomData;

use serde::Serialize;

use super::codec;
use crate::storage::{MetaOp, MetaTable};

/// Where the records of one kind live on each drive; `T`: what a copy decodes to.
pub struct Table<T> {
    id: MetaTable,
    kind: PhantomData<fn() -> T>,
}

/// A table, whatever its records: for what spans kinds (a scan over several tables, the
/// authority's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableId(pub(super) MetaTable);

/// One change of a record, or the condition a commit holds to (see [`Table::expect`]).
#[derive(Debug, Clone)]
pub struct Change(pub(super) MetaOp);

impl<T> Clone for Table<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Table<T> {}

impl<T> fmt::Debug for Table<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.id.fmt(f)
    }
}

impl<T> Table<T> {
    const fn new(id: MetaTable) -> Self {
        Table {
            id,
            kind: PhantomData,
        }
    }

    /// Bucket name → bucket record.
    pub const fn buckets() -> Self {
        Self::new(MetaTable::Buckets)
    }

    /// Bucket + key → the current object record of the key.
    pub const fn objects() -> Self {
        Self::new(MetaTable::Objects)
    }

    /// Bucket + key → every version of a key of a versioned bucket.
    pub const fn versions() -> Self {
        Self::new(MetaTable::Versions)
    }

    /// Bucket + key + data id → one drive's own chunk of a small object's data: each drive
    /// holds a different one, so they are written drive by drive and never agreed on.
    pub const fn inline_chunks() -> Self {
        Self::new(MetaTable::Inline)
    }

    /// Upload id → multipart upload record.
    pub const fn uploads() -> Self {
        Self::new(MetaTable::Uploads)
    }

    /// Upload id + part number → part record.
    pub const fn parts() -> Self {
        Self::new(MetaTable::Parts)
    }

    /// Deployment-wide records (identities, policies, the key catalog): name → record.
    pub const fn system() -> Self {
        Self::new(MetaTable::System)
    }

    pub fn id(self) -> TableId {
        TableId(self.id)
    }

    pub(super) fn meta(self) -> MetaTable {
        self.id
    }

    /// Puts `stored` under `key` as it is: the bytes of a record as a drive keeps them (a
    /// copy read elsewhere, an inline chunk).
    pub fn put_stored(self, key: Vec<u8>, stored: Vec<u8>) -> Change {
        Change(MetaOp::Put {
            table: self.id,
            key,
            value: stored,
        })
    }

    pub fn delete(self, key: Vec<u8>) -> Change {
        Change(MetaOp::Delete {
            table: self.id,
            key,
        })
    }

    /// Deletes every record whose key starts with `prefix` (never undone: see
    /// [`super::RecordSet::commit`]).
    pub fn delete_prefix(self, prefix: Vec<u8>) -> Change {
        Change(MetaOp::DeletePrefix {
            table: self.id,
            prefix,
        })
    }

    /// Changes nothing, but the drive takes the batch only if it holds exactly `stored`
    /// under `key` (`None`: nothing) when its transaction runs.
    pub fn expect(self, key: Vec<u8>, stored: Option<Vec<u8>>) -> Change {
        Change(MetaOp::Expect {
            table: self.id,
            key,
            value: stored,
        })
    }
}

impl<T: Serialize> Table<T> {
    pub fn put(self, key: Vec<u8>, record: &T) -> Change {
        self.put_stored(key, codec::encode(record))
    }

    /// As [`Self::expect`], for a drive that holds exactly `record`.
    pub fn expect_record(self, key: Vec<u8>, record: &T) -> Change {
        self.expect(key, Some(codec::encode(record)))
    }
}

impl<T> From<Table<T>> for TableId {
    fn from(table: Table<T>) -> Self {
        table.id()
    }
}

impl TableId {
    pub(super) fn meta(self) -> MetaTable {
        self.0
    }
}

impl Change {
    /// Whether the change only states a condition (see [`Table::expect`]).
    pub fn is_condition(&self) -> bool {
        matches!(self.0, MetaOp::Expect { .. })
    }

    pub(super) fn into_op(self) -> MetaOp {
        self.0
    }

    pub(super) fn op(&self) -> &MetaOp {
        &self.0
    }
}

/// The drives' operations of a batch of changes.
pub(super) fn ops(changes: Vec<Change>) -> Vec<MetaOp> {
    changes.into_iter().map(Change::into_op).collect()
}
