//! The commit step of a write: metadata changes applied on every drive of a set with write
//! quorum, undone on the drives that took them when the quorum is missed.
//!
//! Commits are conditional per drive: each drive applies its batch only if the keys it
//! changes still hold what the writer read (checked in the same transaction, see
//! [`MetaOp::Expect`]), and what the writer read must be what its decision was based on.
//! Two writers that raced from the same state can then never both reach a write quorum
//! (2W > N), whatever locks they hold: the loser undoes what it got and is told
//! [`ObjectError::Conflict`], so that it reads again and retries.

use futures::future::join_all;
use uuid::Uuid;

use super::heal::Revisioned;
use super::record::{self, inline_key, ObjectRecord, VersionsRecord};
use super::version::{held_for_commit, DriveRecords};
use super::versioning::DriveStates;
use super::{require_write_quorum, ObjectError};
use crate::erasure::ErasureSet;
use crate::storage::{DriveError, MetaOp, MetaTable};

/// What one drive held before a commit, for every key the commit touches.
pub(crate) type Previous = Vec<(MetaTable, Vec<u8>, Option<Vec<u8>>)>;

/// Whether what drive `i` holds now (`Previous`) is still what the writer's decision was
/// based on.
pub(crate) type Basis<'a> = &'a (dyn Fn(usize, &Previous) -> bool + Sync);

/// A commit whose decision read nothing that the drives could change under it.
pub(crate) const ANY_BASIS: Basis<'static> = &|_, _| true;

/// The keys a batch changes.
fn touched(ops: &[MetaOp]) -> Vec<(MetaTable, Vec<u8>)> {
    let mut keys: Vec<(MetaTable, Vec<u8>)> = Vec::new();
    for op in ops {
        if let MetaOp::Put { table, key, .. } | MetaOp::Delete { table, key } = op {
            if !keys.iter().any(|(t, k)| t == table && k == key) {
                keys.push((*table, key.clone()));
            }
        }
    }
    keys
}

/// What a batch leaves under each key it changes.
fn written(ops: &[MetaOp]) -> Previous {
    let mut out: Previous = Vec::new();
    for op in ops {
        let (table, key, value) = match op {
            MetaOp::Put { table, key, value } => (*table, key, Some(value.clone())),
            MetaOp::Delete { table, key } => (*table, key, None),
            _ => continue,
        };
        out.retain(|(t, k, _)| !(*t == table && k == key));
        out.push((table, key.clone(), value));
    }
    out
}

/// Expectations that each key holds the given value.
fn expect(values: &Previous) -> impl Iterator<Item = MetaOp> + '_ {
    values.iter().map(|(table, key, value)| MetaOp::Expect {
        table: *table,
        key: key.clone(),
        value: value.clone(),
    })
}

/// Puts back what a drive held, where it still holds what the batch wrote (a later writer
/// may have replaced it).
fn undo(previous: &Previous, batch: &[MetaOp]) -> Vec<MetaOp> {
    let restore = previous.iter().map(|(table, key, value)| match value {
        Some(value) => MetaOp::Put {
            table: *table,
            key: key.clone(),
            value: value.clone(),
        },
        None => MetaOp::Delete {
            table: *table,
            key: key.clone(),
        },
    });
    expect(&written(batch)).chain(restore).collect()
}

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

/// What one set's drives took of a commit, and what they held before.
struct Applied {
    batches: Vec<Option<Vec<MetaOp>>>,
    results: Vec<Result<(), DriveError>>,
    previous: Vec<Option<Previous>>,
}

impl Applied {
    /// Drives that refused the batch because a key changed since the writer read it.
    fn conflicts(&self) -> usize {
        let refused = |r: &&Result<(), DriveError>| matches!(r, Err(DriveError::Conflict));
        self.results.iter().filter(refused).count()
    }
}

/// Applies `batches[i]` on drive `i` (`None`: leave the drive out), after reading what each
/// drive holds under the keys it changes, and only where that is still what `basis` says
/// the decision was made on; each drive then applies its batch only if those keys still
/// hold it. A drive whose previous state could not be read cannot be rolled back, so it is
/// left out.
async fn apply_undoable(
    set: &ErasureSet,
    batches: Vec<Option<Vec<MetaOp>>>,
    basis: Basis<'_>,
) -> Applied {
    let previous: Vec<Option<Previous>> = join_all(set.drives().iter().zip(&batches).map(
        |(drive, ops)| async move {
            let mut held = Vec::new();
            for (table, key) in touched(ops.as_ref()?) {
                let answer = drive.meta_get(table, key.clone()).await;
                let value = held_for_commit(&answer)?.cloned();
                held.push((table, key, value));
            }
            Some(held)
        },
    ))
    .await;
    let guarded: Vec<Option<Vec<MetaOp>>> = (batches.iter().zip(&previous))
        .map(|(ops, prev)| {
            let (ops, prev) = (ops.as_ref()?, prev.as_ref()?);
            Some(expect(prev).chain(ops.iter().cloned()).collect())
        })
        .collect();
    let changed = |i: usize| previous[i].as_ref().is_some_and(|prev| !basis(i, prev));
    let to_apply = (guarded.into_iter().enumerate())
        .map(|(i, ops)| ops.filter(|_| !changed(i)))
        .collect();
    let mut results = set.meta_apply_each(to_apply).await;
    for (i, result) in results.iter_mut().enumerate() {
        if changed(i) {
            *result = Err(DriveError::Conflict);
        }
    }
    Applied {
        batches,
        results,
        previous,
    }
}

/// Puts the drives that took a commit back as they were, where no later writer replaced
/// what the commit wrote.
async fn undo_applied(set: &ErasureSet, applied: &Applied) {
    let undos = (applied.results.iter().zip(&applied.previous))
        .zip(&applied.batches)
        .map(|((result, prev), batch)| match (result, prev, batch) {
            (Ok(()), Some(prev), Some(batch)) => Some(undo(prev, batch)),
            _ => None,
        })
        .collect();
    set.meta_apply_each(undos).await;
}

/// The error of a commit that missed its write quorum: a conflict when the drives that
/// refused because another writer got there first made the difference (the caller reads
/// again and retries), the quorum error otherwise.
fn missed(set: &ErasureSet, applied: &Applied, quorum_error: ObjectError) -> ObjectError {
    let ok = applied.results.iter().filter(|r| r.is_ok()).count();
    match ok + applied.conflicts() >= set.write_quorum() && applied.conflicts() > 0 {
        true => ObjectError::Conflict,
        false => quorum_error,
    }
}

/// Applies `batches[i]` on drive `i` (`None`: leave the drive out; undoable ops only, no
/// prefix deletes), conditionally on each drive still holding what `basis` says the
/// decision was made on. When fewer than a write quorum of drives take their batch, the
/// drives that did are put back as they were.
pub(crate) async fn commit(
    set: &ErasureSet,
    batches: Vec<Option<Vec<MetaOp>>>,
    basis: Basis<'_>,
) -> Result<(), ObjectError> {
    let applied = apply_undoable(set, batches, basis).await;
    if let Err(e) = require_write_quorum(set, &applied.results) {
        undo_applied(set, &applied).await;
        return Err(missed(set, &applied, e));
    }
    Ok(())
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
        let batches = vec![Some(ops.clone()); set.drives().len()];
        apply_undoable(set, batches, basis)
    }))
    .await;
    let missed_quorum = (sets.iter().zip(&applied)).find_map(|(set, applied)| {
        let quorum = require_write_quorum(set, &applied.results).err()?;
        Some(missed(set, applied, quorum))
    });
    if let Some(e) = missed_quorum {
        join_all((sets.iter().zip(&applied)).map(|(set, applied)| undo_applied(set, applied)))
            .await;
        return Err(e);
    }
    Ok(())
}
