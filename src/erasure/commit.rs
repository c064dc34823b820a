//! Commits of metadata changes over the drives of a set: each drive applies its batch only
//! if what it holds is still what the writer's decision was based on, and when fewer than a
//! write quorum take theirs, the drives that did are put back as they were.
//!
//! Two writers that raced from the same state can then never both reach a write quorum
//! (2W > N), whatever locks they hold: the loser undoes what it got and is told
//! [`ErasureError::Conflict`], so that it reads again and retries.

use futures::future::join_all;

use super::{ErasureError, ErasureSet};
use crate::storage::{DriveError, MetaOp, MetaTable};

/// What one drive held before a commit, under every key the commit touches.
pub type Previous = Vec<(MetaTable, Vec<u8>, Option<Vec<u8>>)>;

/// Whether what drive `i` holds now (`Previous`) is still what the writer's decision was
/// based on.
pub type Basis<'a> = &'a (dyn Fn(usize, &Previous) -> bool + Sync);

/// A commit whose decision read nothing that the drives could change under it.
pub const ANY_BASIS: Basis<'static> = &|_, _| true;

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

/// What one set's drives took of a commit, and what they held before.
pub struct Applied {
    batches: Vec<Option<Vec<MetaOp>>>,
    results: Vec<Result<(), DriveError>>,
    previous: Vec<Option<Previous>>,
}

impl ErasureSet {
    /// Applies `batches[i]` on drive `i` (`None`: leave the drive out; undoable ops only, no
    /// prefix deletes), conditionally on each drive still holding what `basis` says the
    /// decision was made on. When fewer than a write quorum of drives take their batch, the
    /// drives that did are put back as they were.
    pub async fn commit(
        &self,
        batches: Vec<Option<Vec<MetaOp>>>,
        basis: Basis<'_>,
    ) -> Result<(), ErasureError> {
        let applied = self.apply_undoable(batches, basis).await;
        if let Err(e) = self.quorum_of(&applied) {
            self.undo(&applied).await;
            return Err(e);
        }
        Ok(())
    }

    /// Applies `batches[i]` on drive `i` (`None`: leave the drive out), after reading what
    /// each drive holds under the keys it changes, and only where that is still what `basis`
    /// says the decision was made on; each drive then applies its batch only if those keys
    /// still hold it. A drive whose previous state could not be read cannot be rolled back,
    /// so it is left out. Callers that commit over several sets decide with
    /// [`ErasureSet::quorum_of`] and [`ErasureSet::undo`].
    pub async fn apply_undoable(
        &self,
        batches: Vec<Option<Vec<MetaOp>>>,
        basis: Basis<'_>,
    ) -> Applied {
        let previous: Vec<Option<Previous>> = join_all(self.drives.iter().zip(&batches).map(
            |(drive, ops)| async move {
                let mut held = Vec::new();
                for (table, key) in touched(ops.as_ref()?) {
                    let value = match drive.meta_get(table, key.clone()).await {
                        Ok(value) => value,
                        // It answers "unknown" only for keys it lacks.
                        Err(DriveError::Unhealed(_)) => None,
                        Err(_) => return None,
                    };
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
        let mut results = self.meta_apply_each(to_apply).await;
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

    /// Whether a write quorum took the commit. When not: a conflict if the drives that
    /// refused because another writer got there first made the difference (the caller reads
    /// again and retries), the quorum error otherwise.
    pub fn quorum_of(&self, applied: &Applied) -> Result<(), ErasureError> {
        let quorum = self.require_write_quorum(&applied.results);
        let Err(e) = quorum else { return Ok(()) };
        let ok = applied.results.iter().filter(|r| r.is_ok()).count();
        let conflicts = (applied.results.iter())
            .filter(|r| matches!(r, Err(DriveError::Conflict)))
            .count();
        match ok + conflicts >= self.write_quorum() && conflicts > 0 {
            true => Err(ErasureError::Conflict),
            false => Err(e),
        }
    }

    /// Puts the drives that took a commit back as they were, where no later writer replaced
    /// what the commit wrote.
    pub async fn undo(&self, applied: &Applied) {
        let undos = (applied.results.iter().zip(&applied.previous))
            .zip(&applied.batches)
            .map(|((result, prev), batch)| match (result, prev, batch) {
                (Ok(()), Some(prev), Some(batch)) => Some(undo(prev, batch)),
                _ => None,
            })
            .collect();
        self.meta_apply_each(undos).await;
    }
}
