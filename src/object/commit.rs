//! What the object layer's commits are conditioned on: each drive takes its batch only if it
//! still holds the object and versions records the writer's decision read from it. How
//! guards make batches, and the commit itself (checked per drive in the drive's transaction,
//! undone below quorum), are the records layer's ([`crate::records::commit`]).

use uuid::Uuid;

use super::record::{inline_key, ObjectRecord, INLINE_CHUNKS};
use super::ObjectError;
use crate::object::versions::agreed::DriveRecords;
use crate::object::versions::versioning::KeyVersions;
use crate::records::commit::{guarded, Batch};
use crate::records::copies::Guard;
use crate::records::{Change, RecordSet};

/// What a key's object records are, as a commit decided on them sees them: every drive's,
/// and the one the set agreed on (`Some(None)`: that the key does not exist; `None`: on
/// nothing, when each drive keeps its own record under the new one).
pub(crate) type RecordsBasis<'a> = (&'a DriveRecords, Option<Option<&'a ObjectRecord>>);

/// `batches[i]` for drive `i` (`None`: leave it out), guarded as decided on a key's object
/// records: each drive takes its batch only if it still holds the record it was read with,
/// and that record is one the decision accounts for (see [`Copies::guard_on`]). `also`:
/// each drive's guard on the other records the decision read (see [`guarded`]).
pub(crate) fn guarded_on_records(
    set: &RecordSet,
    batches: Vec<Option<Vec<Change>>>,
    (records, agreed): RecordsBasis<'_>,
    also: &[Guard],
) -> Vec<Batch> {
    let guard = |i| match agreed {
        Some(agreed) => records.guard_on(set, i, agreed),
        None => records
            .unchanged_on(i)
            .map_or(Guard::LeaveOut, |held| Guard::Expect(vec![held])),
    };
    guarded(batches, guard, also)
}

/// Commits `batches[i]` on drive `i` (`None`: leave it out), decided on a key's object
/// records (see [`guarded_on_records`]). `data_on`: the drives that hold the data the
/// commit records, if any (see [`RecordSet::commit`]). Answers how many drives took it.
pub(crate) async fn commit_on_records(
    set: &RecordSet,
    batches: Vec<Option<Vec<Change>>>,
    basis: RecordsBasis<'_>,
    data_on: Option<&[bool]>,
    also: &[Guard],
) -> Result<usize, ObjectError> {
    let batches = guarded_on_records(set, batches, basis, also);
    Ok(set.commit(batches, data_on).await?)
}

/// `batches[i]` for drive `i`, guarded as decided on a key's versions (see
/// [`KeyVersions`]): each drive takes its batch only if it still holds the versions record
/// and the object record it was read with, and both are ones the decision accounts for.
pub(crate) fn guarded_on_versions(
    set: &RecordSet,
    batches: Vec<Option<Vec<Change>>>,
    current: &KeyVersions,
    also: &[Guard],
) -> Vec<Batch> {
    let guard = |i| {
        let state = current.states.guard_on(set, i, current.state.as_ref());
        state.and(current.records.guard_on(set, i, current.object.as_ref()))
    };
    guarded(batches, guard, also)
}

/// Commits a change decided on a key's versions (see [`guarded_on_versions`]). Answers how
/// many drives took it.
pub(crate) async fn commit_on_versions(
    set: &RecordSet,
    batches: Vec<Option<Vec<Change>>>,
    current: &KeyVersions,
    data_on: Option<&[bool]>,
    also: &[Guard],
) -> Result<usize, ObjectError> {
    let batches = guarded_on_versions(set, batches, current, also);
    Ok(set.commit(batches, data_on).await?)
}

/// The deletes, one per chunk, of the inline chunks of the versions a drive `held` that
/// `kept` no longer needs: once a commit replaces them, nothing refers to those chunks.
pub(crate) fn dropped_inline_chunks<'a>(
    bucket: &str,
    key: &str,
    held: impl Iterator<Item = &'a ObjectRecord>,
    kept: impl Fn(Uuid) -> bool,
) -> Vec<Change> {
    let mut dropped: Vec<Uuid> = Vec::new();
    for version in held.filter(|v| v.inline && !kept(v.data_id)) {
        if !dropped.contains(&version.data_id) {
            dropped.push(version.data_id);
        }
    }
    dropped
        .into_iter()
        .map(|data_id| INLINE_CHUNKS.delete(inline_key(bucket, key, data_id)))
        .collect()
}
