//! Records replicated whole on every drive of every set and changed in place: bucket records
//! and deployment-wide records (users, policies, the key catalog). Each carries an identity,
//! fixed when it is made, and a revision raised by every change; the highest revision of the
//! agreed record is its latest change, and a copy vouches for the earlier revisions of its
//! own record.

use futures::future::join_all;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::commit::Batch;
use super::copies::{Copies, Guard};
use super::table::{Change, Table};
use super::{Agreement, RecordSet, Replica};
use crate::erasure::ErasureError;
use crate::storage::DriveError;

/// A record changed in place. `id` tells a record from a later one of the same name.
pub trait Revisioned: Serialize + DeserializeOwned + Clone + Send + Sync {
    fn id(&self) -> &str;
    fn revision(&self) -> u64;
}

/// A revision vouches for the earlier revisions of the same record.
impl<T: Revisioned> Replica for T {
    type Rank = u64;
    fn is_current(&self, value: &Self) -> bool {
        self.id() == value.id() && self.revision() == value.revision()
    }
    fn vouches_for(&self, value: &Self) -> bool {
        self.id() == value.id() && self.revision() >= value.revision()
    }
    fn values(&self) -> Vec<Self> {
        vec![self.clone()]
    }
    fn rank(&self) -> u64 {
        self.revision()
    }
}

/// Commits `change` on a record every set holds, decided on `base` (the agreed record, `None`
/// when there was none), under the record's write lock. Each drive takes it if it holds no
/// copy, `base` or an earlier revision of it, and still holds that when its transaction
/// runs; a newer copy, or another record (one made meanwhile), means another writer got there
/// first (unless it is a leftover, see [`Copies::guard_on`]). When any set misses its write
/// quorum, every drive of every set that took it is put back: a change answered with an
/// error is in force nowhere.
pub async fn commit<T: Revisioned>(
    sets: &[RecordSet],
    (table, key): (Table<T>, &[u8]),
    base: Option<&T>,
    change: Change,
) -> Result<(), ErasureError> {
    let applied = join_all(sets.iter().map(|set| async {
        let copies = Copies::<T>::read(set, table, key.to_vec()).await;
        let batches = (0..set.width())
            .map(|i| match copies.guard_on(set, i, base) {
                Guard::Expect(held) => {
                    Batch::Apply(held.into_iter().chain([change.clone()]).collect())
                }
                Guard::Refuse => Batch::Refuse,
                Guard::LeaveOut => Batch::LeaveOut,
            })
            .collect();
        set.apply_undoable(batches).await
    }))
    .await;
    let missed_quorum =
        (sets.iter().zip(&applied)).find_map(|(set, applied)| set.quorum_of(applied).err());
    if let Some(e) = missed_quorum {
        join_all((sets.iter().zip(&applied)).map(|(set, applied)| set.undo(applied))).await;
        return Err(e);
    }
    Ok(())
}

/// What a heal of one record did on a set's drives.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Healed {
    /// Copies put where a drive missed the record or held an older revision.
    pub repaired: u64,
    /// Copies of a record agreement says is gone, removed.
    pub purged: u64,
    /// The drives did not agree, or a drive could not be changed safely (logged).
    pub unresolved: bool,
}

/// Heals one record across a set's drives: the newest revision of the agreed record goes
/// where it is missing or older; a record agreement says is gone is removed.
pub async fn heal<T: Revisioned>(set: &RecordSet, table: Table<T>, name: &[u8]) -> Healed {
    let answers = Copies::<T>::read(set, table, name.to_vec()).await;
    let held: Vec<Option<T>> = answers
        .iter()
        .map(|a| a.as_ref().ok().cloned().flatten())
        .collect();
    let online: Vec<bool> = answers.iter().map(reachable).collect();
    let mut healed = Healed::default();
    let agreed = match set.agree(&answers) {
        Ok(agreed) => agreed,
        Err(_) => {
            tracing::warn!(record = %String::from_utf8_lossy(name), "heal: drives do not agree on this record; left as it is");
            healed.unresolved = true;
            return healed;
        }
    };
    // Each drive changes only if it still holds what was read, and never where that is a
    // value no agreement accounts for that may be a write in flight (a record being made).
    let (newest, change) = match &agreed {
        Agreement::Found { value, .. } => (Some(value), table.put(name.to_vec(), value)),
        Agreement::NotFound => (None, table.delete(name.to_vec())),
    };
    for i in 0..set.width() {
        let up_to_date = match (&held[i], newest) {
            (Some(held), Some(newest)) => held.is_current(newest),
            (held, newest) => held.is_none() && newest.is_none(),
        };
        if !online[i] || up_to_date {
            continue;
        }
        match answers.guard_on(set, i, newest) {
            Guard::Expect(mut ops) => {
                ops.push(change.clone());
                let changed = u64::from(set.apply_on(i, ops).await.is_ok());
                match newest {
                    Some(_) => healed.repaired += changed,
                    None => healed.purged += changed,
                }
            }
            Guard::Refuse | Guard::LeaveOut => healed.unresolved = true,
        }
    }
    healed
}

/// Whether a drive answered for a record (holding it or not), or is unhealed: either way it
/// is in service and takes what a heal writes. Only offline drives are left out.
pub fn reachable<T>(answer: &Result<T, DriveError>) -> bool {
    matches!(answer, Ok(_) | Err(DriveError::Unhealed(_)))
}
