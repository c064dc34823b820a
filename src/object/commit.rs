//! What the object layer's commits are based on: the conditions under which each drive may
//! take a commit (the records a decision read), and commits of records every set holds.
//! The commit itself, conditional per drive and undone below quorum, is the erasure set's
//! ([`crate::erasure::commit`]).

use futures::future::join_all;
use uuid::Uuid;

use super::heal::Revisioned;
use super::record::{self, inline_key, ObjectRecord, VersionsRecord};
use super::version::{held_for_commit, DriveRecords};
use super::versioning::DriveStates;
use super::ObjectError;
use crate::erasure::commit::{Basis, Previous};
use crate::erasure::ErasureSet;
use crate::erasure::{MetaOp, MetaTable};

pub(crate) use crate::erasure::commit::ANY_BASIS;

/// The basis of a commit decided on a key's object records: each drive still holds the
/// record it was read with.
pub(crate) fn object_basis<'a>(
    current: &'a DriveRecords,
    db_key: &'a [u8],
) -> impl Fn(usize, &Previous) -> bool + Sync + 'a {
    move |i, previous| {
        let now = held::<ObjectRecord>(previous, MetaTable::Objects, db_key);
        matches!((held_for_commit(&current[i]), now), (Some(read), Some(now)) if read == now.as_ref())
    }
}

/// The basis of a commit decided on a key's versions: each drive still holds the versions
/// record and the object record it was read with.
pub(crate) fn versions_basis<'a>(
    states: &'a DriveStates,
    records: &'a DriveRecords,
    db_key: &'a [u8],
) -> impl Fn(usize, &Previous) -> bool + Sync + 'a {
    move |i, previous| {
        let state = held::<VersionsRecord>(previous, MetaTable::Versions, db_key);
        let object = held::<ObjectRecord>(previous, MetaTable::Objects, db_key);
        let same_state = matches!((held_for_commit(&states[i]), state),
            (Some(read), Some(now)) if read == now.as_ref());
        let same_object = matches!((held_for_commit(&records[i]), object),
            (Some(read), Some(now)) if read == now.as_ref());
        same_state && same_object
    }
}

/// The basis of a change to a replicated record decided on `base` (the agreed record, or
/// `None` when there was none): each drive holds no copy, or an older or equal revision of
/// the same record. A copy that is newer, or another record (one made meanwhile), means
/// another writer got there first.
pub(crate) fn revision_basis<'a, T: Revisioned>(
    table: MetaTable,
    key: &'a [u8],
    base: Option<&'a T>,
) -> impl Fn(usize, &Previous) -> bool + Sync + 'a {
    move |_, previous| match held::<T>(previous, table, key) {
        Some(None) => true,
        Some(Some(now)) => {
            base.is_some_and(|base| now.id() == base.id() && now.revision() <= base.revision())
        }
        None => false,
    }
}

/// The decoded value a drive held under `key`; `None` when the commit did not touch it or
/// it does not decode.
fn held<T: serde::de::DeserializeOwned>(
    previous: &Previous,
    table: MetaTable,
    key: &[u8],
) -> Option<Option<T>> {
    let (_, _, value) = previous.iter().find(|(t, k, _)| *t == table && k == key)?;
    match value {
        Some(bytes) => record::decode(bytes).ok().map(Some),
        None => Some(None),
    }
}

/// The deletes, one per chunk, of the inline chunks of the versions a drive `held` that
/// `kept` no longer needs: once a commit replaces them, nothing refers to those chunks.
pub(crate) fn dropped_inline_chunks<'a>(
    bucket: &str,
    key: &str,
    held: impl Iterator<Item = &'a ObjectRecord>,
    kept: impl Fn(Uuid) -> bool,
) -> Vec<MetaOp> {
    let mut dropped: Vec<Uuid> = Vec::new();
    for version in held.filter(|v| v.inline && !kept(v.data_id)) {
        if !dropped.contains(&version.data_id) {
            dropped.push(version.data_id);
        }
    }
    dropped
        .into_iter()
        .map(|data_id| MetaOp::Delete {
            table: MetaTable::Inline,
            key: inline_key(bucket, key, data_id),
        })
        .collect()
}

/// Applies `batches[i]` on drive `i` of `set` (see [`ErasureSet::commit`]).
pub(crate) async fn commit(
    set: &ErasureSet,
    batches: Vec<Option<Vec<MetaOp>>>,
    basis: Basis<'_>,
) -> Result<(), ObjectError> {
    Ok(set.commit(batches, basis).await?)
}

/// Applies the same undoable changes on every drive of every set (records every set holds:
/// buckets, users, policies), conditionally on each drive still holding what `basis` says.
/// When any set misses its write quorum, every drive of every set that took them is put
/// back: a change answered with an error is in force nowhere.
pub(crate) async fn commit_everywhere(
    sets: &[ErasureSet],
    ops: Vec<MetaOp>,
    basis: Basis<'_>,
) -> Result<(), ObjectError> {
    let applied = join_all((sets.iter()).map(|set| {
        let batches = vec![Some(ops.clone()); set.width()];
        set.apply_undoable(batches, basis)
    }))
    .await;
    let missed_quorum =
        (sets.iter().zip(&applied)).find_map(|(set, applied)| set.quorum_of(applied).err());
    if let Some(e) = missed_quorum {
        join_all((sets.iter().zip(&applied)).map(|(set, applied)| set.undo(applied))).await;
        return Err(e.into());
    }
    Ok(())
}
