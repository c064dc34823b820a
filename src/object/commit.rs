//! What the object layer's commits are conditioned on: each drive takes its batch only if it
//! still holds the records the writer's decision read from it. The commit itself, checked
//! per drive in the drive's transaction and undone below quorum, is the erasure set's
//! ([`crate::erasure::commit`]).

use futures::future::join_all;
use uuid::Uuid;

use super::copies::Copies;
use super::heal::Revisioned;
use super::record::{inline_key, ObjectRecord};
use super::version::DriveRecords;
use super::versioning::DriveStates;
use super::ObjectError;
use crate::erasure::commit::Batch;
use crate::erasure::{ErasureSet, MetaOp, MetaTable};

/// Each drive's batch (`None`: leave the drive out), guarded by `conditions(i)`: what drive
/// `i` must still hold, `None` when it could not be read (it is left out too).
fn guarded(
    batches: Vec<Option<Vec<MetaOp>>>,
    conditions: impl Fn(usize) -> Option<Vec<MetaOp>>,
) -> Vec<Batch> {
    (batches.into_iter().enumerate())
        .map(|(i, ops)| match (ops, conditions(i)) {
            (Some(ops), Some(held)) => Batch::Apply(held.into_iter().chain(ops).collect()),
            _ => Batch::LeaveOut,
        })
        .collect()
}

/// Commits `batches[i]` on drive `i` (`None`: leave it out), decided on a key's object
/// records: each drive takes its batch only if it still holds the record it was read with.
/// `data_on`: the drives that hold the data the commit records, if any (see
/// [`ErasureSet::commit`]).
pub(crate) async fn commit_on_records(
    set: &ErasureSet,
    batches: Vec<Option<Vec<MetaOp>>>,
    records: &DriveRecords,
    data_on: Option<&[bool]>,
) -> Result<(), ObjectError> {
    let batches = guarded(batches, |i| Some(vec![records.unchanged_on(i)?]));
    Ok(set.commit(batches, data_on).await?)
}

/// Commits a change decided on a key's versions: each drive takes its batch only if it still
/// holds the versions record and the object record it was read with.
pub(crate) async fn commit_on_versions(
    set: &ErasureSet,
    batches: Vec<Option<Vec<MetaOp>>>,
    (states, records): (&DriveStates, &DriveRecords),
    data_on: Option<&[bool]>,
) -> Result<(), ObjectError> {
    let batches = guarded(batches, |i| {
        Some(vec![states.unchanged_on(i)?, records.unchanged_on(i)?])
    });
    Ok(set.commit(batches, data_on).await?)
}

/// Commits a change whose decision read nothing the drives could change under it.
pub(crate) async fn commit_unconditionally(
    set: &ErasureSet,
    batches: Vec<Option<Vec<MetaOp>>>,
    data_on: Option<&[bool]>,
) -> Result<(), ObjectError> {
    let batches = guarded(batches, |_| Some(Vec::new()));
    Ok(set.commit(batches, data_on).await?)
}

/// Commits `op` on a record every set holds (a bucket, a user, a policy), decided on `base`
/// (the agreed record, `None` when there was none). Each drive takes it if it holds no copy,
/// or an older or equal revision of the same record, and still holds that when its
/// transaction runs; a newer copy, or another record (one made meanwhile), means another
/// writer got there first. When any set misses its write quorum, every drive of every set
/// that took it is put back: a change answered with an error is in force nowhere.
pub(crate) async fn commit_revision<T: Revisioned>(
    sets: &[ErasureSet],
    key: (MetaTable, &[u8]),
    base: Option<&T>,
    op: MetaOp,
) -> Result<(), ObjectError> {
    let (table, key) = key;
    let may_replace = |held: &T| {
        base.is_some_and(|base| held.id() == base.id() && held.revision() <= base.revision())
    };
    let applied = join_all(sets.iter().map(|set| async {
        let copies = Copies::<T>::read(set, table, key.to_vec()).await;
        let batches = (0..set.width())
            .map(|i| {
                let Some(unchanged) = copies.unchanged_on(i) else {
                    return Batch::LeaveOut;
                };
                let may_take = match &copies[i] {
                    Ok(Some(held)) => may_replace(held),
                    _ => copies.is_absent_on(i),
                };
                match may_take {
                    true => Batch::Apply(vec![unchanged, op.clone()]),
                    false => Batch::Refuse,
                }
            })
            .collect();
        set.apply_undoable(batches).await
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
