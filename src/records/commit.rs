//! Commits of metadata changes over the drives of a set: each drive applies its batch only
//! if what it holds is still what the writer's decision was based on (checked in the same
//! transaction), and when fewer than a write quorum take theirs, the drives that did are put
//! back as they were, from what their transaction answered it replaced: no read first.
//!
//! Two writers that raced from the same state can then never both reach a write quorum
//! (2W > N), whatever locks they hold: the loser undoes what it got and is told
//! [`ErasureError::Conflict`], so that it reads again and retries. A writer that read another
//! one's commit in flight on some drives is refused there ([`Batch::Refuse`], see
//! [`super::in_flight`]): otherwise its conditions would include the other's values and both
//! could reach a quorum.

use futures::future::join_all;

use super::copies::Guard;
use super::in_flight::InFlight;
use super::table::{ops, Change};
use super::RecordSet;
use crate::erasure::{DriveResults, ErasureError};
use crate::storage::{DriveError, MetaOp, Replaced};

/// What one drive is asked to do in a commit.
pub enum Batch {
    /// Apply these changes, if its conditions ([`super::Table::expect`]: what the drive held
    /// when the writer read it) still hold when the drive's transaction runs.
    Apply(Vec<Change>),
    /// Nothing: the drive did not answer the read the decision was made on.
    LeaveOut,
    /// Nothing: the read showed that another writer got there first (a conflict).
    Refuse,
}

/// Each drive's batch (`None`: leave the drive out), guarded by `guard(i)` and by `also[i]`
/// (what else the decision read on that drive, e.g. the upload a completion ends; empty:
/// nothing else).
pub(crate) fn guarded(
    batches: Vec<Option<Vec<Change>>>,
    guard: impl Fn(usize) -> Guard,
    also: &[Guard],
) -> Vec<Batch> {
    let also = |i: usize| also.get(i).cloned().unwrap_or(Guard::Expect(Vec::new()));
    (batches.into_iter().enumerate())
        .map(|(i, changes)| match (changes, guard(i).and(also(i))) {
            (Some(changes), Guard::Expect(held)) => {
                Batch::Apply(held.into_iter().chain(changes).collect())
            }
            (Some(_), Guard::Refuse) => Batch::Refuse,
            _ => Batch::LeaveOut,
        })
        .collect()
}

/// Two changes of one set, each guarded on what it was decided on, as one commit: each
/// drive takes both in one transaction, or neither.
pub fn together(first: Vec<Batch>, second: Vec<Batch>) -> Vec<Batch> {
    (first.into_iter().zip(second))
        .map(|pair| match pair {
            (Batch::Apply(mut changes), Batch::Apply(more)) => {
                changes.extend(more);
                Batch::Apply(changes)
            }
            (Batch::Refuse, _) | (_, Batch::Refuse) => Batch::Refuse,
            _ => Batch::LeaveOut,
        })
        .collect()
}

/// What a batch leaves under each key it changes.
fn written(ops: &[MetaOp]) -> Replaced {
    let mut out = Replaced::new();
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

/// Puts back what a drive held, where it still holds what the batch wrote (a later writer
/// may have replaced it).
fn undo(replaced: &Replaced, batch: &[MetaOp]) -> Vec<MetaOp> {
    let still_written = written(batch)
        .into_iter()
        .map(|(table, key, value)| MetaOp::Expect { table, key, value });
    let restore = replaced.iter().map(|(table, key, value)| match value {
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
    still_written.chain(restore).collect()
}

/// What one set's drives took of a commit, and what it replaced there.
pub struct Applied<'a> {
    batches: Vec<Batch>,
    results: DriveResults<Replaced>,
    /// From the first drive call to the last answer.
    took: std::time::Duration,
    /// The commit is in flight until it is decided and undone where it must be.
    _in_flight: InFlight<'a>,
}

impl RecordSet {
    /// Applies `batches[i]` on drive `i` (undoable ops only, no prefix deletes), each drive
    /// only if its conditions hold. A commit that records placed data (`data_on`: the drives
    /// that hold it, see [`crate::erasure::ErasureSet::place_staged`]) goes to those drives only: a drive
    /// counts toward the write quorum when it holds both the data and its record. When fewer
    /// than a write quorum of drives take their batch, the drives that did are put back as
    /// they were. Answers how many drives took it.
    pub async fn commit(
        &self,
        batches: Vec<Batch>,
        data_on: Option<&[bool]>,
    ) -> Result<usize, ErasureError> {
        let batches = (batches.into_iter().enumerate())
            .map(|(i, batch)| match data_on {
                Some(holders) if !holders[i] => Batch::LeaveOut,
                _ => batch,
            })
            .collect();
        let applied = self.apply_undoable(batches).await;
        if let Err(e) = self.quorum_of(&applied) {
            self.undo(&applied).await;
            return Err(e);
        }
        Ok(applied.results.iter().filter(|r| r.is_ok()).count())
    }

    /// Commits `batches[i]` on drive `i` (`None`: leave it out) where `guards[i]` lets it:
    /// a change decided on records the caller read and guarded itself. Answers how many
    /// drives took it.
    pub(crate) async fn commit_guarded(
        &self,
        batches: Vec<Option<Vec<Change>>>,
        guards: &[Guard],
        data_on: Option<&[bool]>,
    ) -> Result<usize, ErasureError> {
        let batches = guarded(batches, |_| Guard::Expect(Vec::new()), guards);
        self.commit(batches, data_on).await
    }

    /// Applies `batches[i]` on drive `i`, each in one transaction that answers what it
    /// replaced. Callers that commit over several sets decide with
    /// [`RecordSet::quorum_of`] and [`RecordSet::undo`].
    pub async fn apply_undoable(&self, batches: Vec<Batch>) -> Applied<'_> {
        let keys = (batches.iter())
            .flat_map(|batch| match batch {
                Batch::Apply(changes) => changes.as_slice(),
                _ => &[],
            })
            .filter_map(|change| change.op().table_and_key());
        let in_flight = self.local_commits.begin(keys);
        let started = std::time::Instant::now();
        let results = join_all(self.drives().iter().zip(&batches).map(
            |(drive, batch)| async move {
                match batch {
                    Batch::Apply(changes) => drive.meta_apply(ops(changes.clone())).await,
                    Batch::LeaveOut => Err(DriveError::Offline(drive.label().to_string())),
                    Batch::Refuse => Err(DriveError::Conflict),
                }
            },
        ))
        .await;
        Applied {
            batches,
            results,
            took: started.elapsed(),
            _in_flight: in_flight,
        }
    }

    /// Whether a write quorum took the commit in time. When not: a conflict if the drives
    /// that refused because another writer got there first made the difference (the caller
    /// reads again and retries), the quorum error otherwise. A commit that took longer than
    /// other servers wait for a write in flight does not count (see [`super::in_flight`]).
    pub fn quorum_of(&self, applied: &Applied<'_>) -> Result<(), ErasureError> {
        if !self.writers.in_time(applied.took) {
            return Err(ErasureError::CommitDeadline);
        }
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
    pub async fn undo(&self, applied: &Applied<'_>) {
        let undos: Vec<Option<Vec<MetaOp>>> = (applied.results.iter().zip(&applied.batches))
            .map(|(result, batch)| match (result, batch) {
                (Ok(replaced), Batch::Apply(changes)) => {
                    Some(undo(replaced, &ops(changes.clone())))
                }
                _ => None,
            })
            .collect();
        let drives = self.drives();
        join_all((drives.iter().zip(undos)).map(|(drive, undo)| async move {
            if let Some(undo) = undo {
                // A drive that cannot be put back keeps a write below quorum: a leftover
                // that agreement accounts for as it does a writer's crash.
                let _ = drive.meta_apply(undo).await;
            }
        }))
        .await;
    }
}
