//! Which version of an object the drives of its set agree on.
//!
//! An overwrite commits drive by drive, so a crash in the middle leaves some drives with the
//! new record and some with the old one. Each drive therefore keeps the version it replaced
//! (`superseded`) until the key is written again: the old version then still has a copy on
//! every drive, and a reader takes the newest version that a read quorum of drives holds.

use crate::object::record::{inline_prefix, object_key, ObjectRecord, INLINE_CHUNKS, OBJECTS};
use crate::object::{Agreement, ObjectError};
use crate::records::copies::Copies;
use crate::records::{DriveError, RecordSet};

/// Each drive's record of a key, decoded.
pub(crate) type DriveRecords = Copies<ObjectRecord>;

/// Each drive's answer about a key's object record, decoded.
pub(crate) type RecordAnswers = [Result<Option<ObjectRecord>, DriveError>];

/// What a drive holds, as a commit sees it: an unhealed drive's "unknown" is its own
/// content's "nothing" (it only answers so for keys it lacks), so it takes new writes; an
/// offline drive is left out (`None`).
pub(crate) fn held_for_commit<T>(answer: &Result<Option<T>, DriveError>) -> Option<Option<&T>> {
    match answer {
        Ok(held) => Some(held.as_ref()),
        Err(DriveError::Unhealed(_)) => Some(None),
        Err(_) => None,
    }
}

/// Reads a key's record from every drive of its set.
pub(crate) async fn read_records(set: &RecordSet, bucket: &str, key: &str) -> DriveRecords {
    Copies::read(set, OBJECTS, object_key(bucket, key)).await
}

/// Reads a key's record from every drive of its set with its inline chunks, in one call per
/// drive: what a GET of a small object needs.
pub(crate) async fn read_records_with_data(
    set: &RecordSet,
    bucket: &str,
    key: &str,
) -> DriveRecords {
    let db_key = object_key(bucket, key);
    let chunks = inline_prefix(bucket, key);
    Copies::read_related(set, OBJECTS, db_key, (INLINE_CHUNKS, &chunks)).await
}

/// [`read_records_with_data`] from a read quorum of drives when those agree (see
/// [`Copies::read_related_sparingly`]): what a HEAD, or a GET of a small object, needs.
pub(crate) async fn read_records_with_data_sparingly(
    set: &RecordSet,
    bucket: &str,
    key: &str,
) -> DriveRecords {
    let db_key = object_key(bucket, key);
    let chunks = inline_prefix(bucket, key);
    Copies::read_related_sparingly(set, OBJECTS, db_key, (INLINE_CHUNKS, &chunks)).await
}

/// `records` of a sparing read, with the drives it left alone read too.
pub(crate) async fn complete_records(
    set: &RecordSet,
    bucket: &str,
    key: &str,
    records: DriveRecords,
) -> DriveRecords {
    let chunks = inline_prefix(bucket, key);
    records.complete(set, (INLINE_CHUNKS, &chunks)).await
}

/// The version of a key the drives agree on (see [`crate::records::agreement`]), with the
/// drives that hold its data: any revision of it shares the shards.
pub(crate) fn agree_on_version(
    set: &RecordSet,
    records: &RecordAnswers,
) -> Result<Agreement<ObjectRecord>, ObjectError> {
    Ok(match set.agree(records)? {
        Agreement::Found { value, .. } => {
            let holders = records
                .iter()
                .map(|r| matches!(r, Ok(Some(record)) if record.with_superseded().any(|v| v.data_id == value.data_id)))
                .collect();
            Agreement::Found { value, holders }
        }
        Agreement::NotFound => Agreement::NotFound,
    })
}

/// What the drives agree on, where every drive answering and still nothing decided means
/// other writes are in flight (or were cut short): [`ObjectError::Conflict`], to read again
/// rather than answer 503 at once.
pub(crate) fn agreed_or_conflict(
    set: &RecordSet,
    records: &RecordAnswers,
) -> Result<Agreement<ObjectRecord>, ObjectError> {
    match agree_on_version(set, records) {
        Err(_) if records.iter().all(|r| r.is_ok()) => Err(ObjectError::Conflict),
        agreed => agreed,
    }
}

/// The versions, other than `keep`, that drives held as current or superseded where what
/// they held is settled on `agreed` (the record a commit was decided on, see
/// [`Copies::settled_on`]): their data can go once a newer version is committed. A copy of
/// another writer's commit in flight is not among them: that writer may still retry its
/// commit, with the same data. Nor is data a rename passed to another key.
pub(crate) fn replaced_versions(
    records: &DriveRecords,
    agreed: Option<&ObjectRecord>,
    keep: Option<uuid::Uuid>,
) -> Vec<ObjectRecord> {
    let lent = lent_data(records);
    let mut out: Vec<ObjectRecord> = Vec::new();
    let settled = (records.iter().enumerate())
        .filter(|(i, _)| records.settled_on(*i, agreed))
        .map(|(_, record)| record);
    for record in settled.flatten().flatten() {
        for version in record.with_superseded() {
            let id = version.data_id;
            if Some(id) != keep && !lent.contains(&id) && !out.iter().any(|o| o.data_id == id) {
                let mut version = version.clone();
                version.superseded = None;
                out.push(version);
            }
        }
    }
    out
}

/// Data folders a rename passed from this key to another, as any drive's records say (see
/// [`ObjectRecord::lent_data`]): never this key's to delete, even where a drive that missed
/// the rename still holds the version as its own.
pub(crate) fn lent_data(records: &RecordAnswers) -> Vec<uuid::Uuid> {
    (records.iter().flatten().flatten())
        .flat_map(ObjectRecord::with_superseded)
        .filter_map(|version| version.lent_data)
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::erasure::{ErasureError, ErasureSet};
    use crate::storage::{Drive, OfflineDrive};

    fn set() -> RecordSet {
        let drives: Vec<Arc<dyn Drive>> = (0..9)
            .map(|i| Arc::new(OfflineDrive::new(format!("d{i}"))) as Arc<dyn Drive>)
            .collect();
        ErasureSet::new(0, drives, 3, 1 << 20).unwrap().into()
    }

    fn version(modified_ms: i64) -> ObjectRecord {
        ObjectRecord {
            size: 1,
            etag: format!("etag{modified_ms}"),
            modified_ms,
            ..ObjectRecord::for_tests()
        }
    }

    fn over(new: &ObjectRecord, old: &ObjectRecord) -> ObjectRecord {
        let mut record = new.clone();
        record.superseded = Some(Box::new(old.clone()));
        record
    }

    fn found(
        records: Vec<Result<Option<ObjectRecord>, DriveError>>,
    ) -> Option<(ObjectRecord, usize)> {
        match agree_on_version(&set(), &records).unwrap() {
            Agreement::Found { value, holders } => {
                Some((value, holders.iter().filter(|&&h| h).count()))
            }
            Agreement::NotFound => None,
        }
    }

    #[test]
    fn a_commit_cut_short_by_a_crash_leaves_the_old_version() {
        let old = version(1);
        let new = version(2);
        for committed in 0..=9 {
            let records = (0..9)
                .map(|i| {
                    Ok(Some(if i < committed {
                        over(&new, &old)
                    } else {
                        old.clone()
                    }))
                })
                .collect();
            let (value, holders) = found(records).unwrap();
            if committed >= 6 {
                assert_eq!(value.data_id, new.data_id, "{committed} drives committed");
                assert_eq!(holders, committed);
            } else {
                assert_eq!(value.data_id, old.data_id, "{committed} drives committed");
                assert_eq!(holders, 9);
            }
            assert!(value.superseded.is_none());
        }
    }

    #[test]
    fn a_metadata_update_cut_short_by_a_crash_is_all_or_nothing() {
        let old = version(1);
        let mut tagged = old.clone();
        tagged.revision = 1;
        tagged.tags = vec![("k".into(), "v".into())];
        for committed in 0..=9 {
            let records = (0..9)
                .map(|i| {
                    Ok(Some(if i < committed {
                        over(&tagged, &old)
                    } else {
                        old.clone()
                    }))
                })
                .collect();
            let (value, holders) = found(records).unwrap();
            let expected = if committed >= 6 { &tagged } else { &old };
            assert_eq!(value.tags, expected.tags, "{committed} drives committed");
            assert_eq!(holders, 9, "every drive holds the data");
        }
    }

    #[test]
    fn the_later_commit_wins_even_with_an_older_timestamp() {
        let first_committed = version(20);
        let then_committed = version(10);
        let records = (0..9)
            .map(|_| Ok(Some(over(&then_committed, &first_committed))))
            .collect();
        let (value, _) = found(records).unwrap();
        assert_eq!(value.data_id, then_committed.data_id);
    }

    #[test]
    fn a_newer_version_that_may_have_been_acknowledged_is_never_passed_over() {
        let old = version(1);
        let new = version(2);
        // `new` was acknowledged on six drives; one of them is lost, three never had it.
        let mut records: Vec<Result<Option<ObjectRecord>, DriveError>> = (0..9)
            .map(|i| Ok(Some(if i < 6 { over(&new, &old) } else { old.clone() })))
            .collect();
        records[0] = Err(DriveError::Offline("d0".into()));
        assert!(matches!(
            agree_on_version(&set(), &records),
            Err(ObjectError::Unavailable(ErasureError::ReadQuorum))
        ));
        // With every drive answering, five holders cannot be an acknowledged write.
        records[0] = Ok(Some(old.clone()));
        let (value, _) = found(records).unwrap();
        assert_eq!(value.data_id, old.data_id);
        // A stale drive holding an older version does not stop an answer.
        let older = version(0);
        let mut records: Vec<Result<Option<ObjectRecord>, DriveError>> =
            (0..9).map(|_| Ok(Some(over(&new, &old)))).collect();
        records[8] = Ok(Some(older));
        records[7] = Err(DriveError::Offline("d7".into()));
        let (value, _) = found(records).unwrap();
        assert_eq!(value.data_id, new.data_id);
    }

    #[test]
    fn deletes_and_missing_quorum_are_told_apart() {
        let old = version(1);
        let some = |n: usize| -> Vec<Result<Option<ObjectRecord>, DriveError>> {
            (0..9).map(|i| Ok((i < n).then(|| old.clone()))).collect()
        };
        assert!(found(some(0)).is_none());
        assert!(
            found(some(5)).is_none(),
            "a delete that reached 4 drives is a delete"
        );
        assert!(found(some(6)).is_some());
        let mut offline = some(5);
        offline[8] = Err(DriveError::Offline("d8".into()));
        offline[7] = Err(DriveError::Offline("d7".into()));
        assert!(matches!(
            agree_on_version(&set(), &offline),
            Err(ObjectError::Unavailable(ErasureError::ReadQuorum))
        ));
    }
}
