//! The commit step of a write: metadata changes applied on every drive of a set with write
//! quorum, undone on the drives that took them when the quorum is missed.

use futures::future::join_all;
use uuid::Uuid;

use super::record::{inline_key, ObjectRecord};
use super::{require_write_quorum, ObjectError};
use crate::erasure::ErasureSet;
use crate::storage::{DriveError, MetaOp, MetaTable};

/// What one drive held before a commit, for every key the commit touches.
type Previous = Vec<(MetaTable, Vec<u8>, Option<Vec<u8>>)>;

fn touched(ops: &[MetaOp]) -> Vec<(MetaTable, Vec<u8>)> {
    ops.iter()
        .filter_map(|op| match op {
            MetaOp::Put { table, key, .. } | MetaOp::Delete { table, key } => {
                Some((*table, key.clone()))
            }
            MetaOp::DeletePrefix { .. } => None,
        })
        .collect()
}

fn undo(previous: &Previous) -> Vec<MetaOp> {
    previous
        .iter()
        .map(|(table, key, value)| match value {
            Some(value) => MetaOp::Put {
                table: *table,
                key: key.clone(),
                value: value.clone(),
            },
            None => MetaOp::Delete {
                table: *table,
                key: key.clone(),
            },
        })
        .collect()
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
    results: Vec<Result<(), DriveError>>,
    previous: Vec<Option<Previous>>,
}

/// Applies `batches[i]` on drive `i` (`None`: leave the drive out), after reading what each
/// drive holds under the keys it changes. A drive whose previous state could not be read
/// cannot be rolled back, so it is left out.
async fn apply_undoable(set: &ErasureSet, batches: Vec<Option<Vec<MetaOp>>>) -> Applied {
    let previous: Vec<Option<Previous>> = join_all(set.drives().iter().zip(&batches).map(
        |(drive, ops)| async move {
            let mut held = Vec::new();
            for (table, key) in touched(ops.as_ref()?) {
                let value = drive.meta_get(table, key.clone()).await.ok()?;
                held.push((table, key, value));
            }
            Some(held)
        },
    ))
    .await;
    let batches = batches
        .into_iter()
        .zip(&previous)
        .map(|(ops, prev)| prev.as_ref().and(ops))
        .collect();
    let results = set.meta_apply_each(batches).await;
    Applied { results, previous }
}

/// Puts the drives that took a commit back as they were.
async fn undo_applied(set: &ErasureSet, applied: &Applied) {
    let undos = (applied.results.iter())
        .zip(&applied.previous)
        .map(|(result, prev)| match (result, prev) {
            (Ok(()), Some(prev)) => Some(undo(prev)),
            _ => None,
        })
        .collect();
    set.meta_apply_each(undos).await;
}

/// Applies `batches[i]` on drive `i` (`None`: leave the drive out; undoable ops only, no
/// prefix deletes). When fewer than a write quorum of drives take their batch, the drives
/// that did are put back as they were. Must be called under the key's write lock.
pub(crate) async fn commit(
    set: &ErasureSet,
    batches: Vec<Option<Vec<MetaOp>>>,
) -> Result<(), ObjectError> {
    let applied = apply_undoable(set, batches).await;
    if let Err(e) = require_write_quorum(set, &applied.results) {
        undo_applied(set, &applied).await;
        return Err(e);
    }
    Ok(())
}

/// Applies the same undoable changes on every drive of every set (records every set holds:
/// buckets, users, policies). When any set misses its write quorum, every drive of every
/// set that took them is put back: a change answered with an error is in force nowhere.
/// Must be called under the record's write lock.
pub(crate) async fn commit_everywhere(
    sets: &[ErasureSet],
    ops: Vec<MetaOp>,
) -> Result<(), ObjectError> {
    let applied = join_all(
        (sets.iter()).map(|set| apply_undoable(set, vec![Some(ops.clone()); set.drives().len()])),
    )
    .await;
    let missed = (sets.iter().zip(&applied))
        .find_map(|(set, applied)| require_write_quorum(set, &applied.results).err());
    if let Some(e) = missed {
        join_all((sets.iter().zip(&applied)).map(|(set, applied)| undo_applied(set, applied)))
            .await;
        return Err(e);
    }
    Ok(())
}
