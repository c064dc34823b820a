//! What a write or a delete requires of a key's current version. Each is checked on the
//! version the drives agree on and committed conditionally on that same read, so it holds
//! atomically against a concurrent write through any server: a commit that loses the race
//! is retried, and the condition judged again on what won.

use super::record::ObjectRecord;
use super::ObjectError;

/// A conditional write: checkpoint writers use it so that two writers never clobber each
/// other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteCondition {
    /// `If-None-Match: *`: only create, never overwrite.
    IfNoneMatch,
    /// `If-Match: <etag>`: only replace this version.
    IfMatch(String),
    /// An append (`x-amz-write-offset-bytes`): only over the version appended to, named by
    /// its data id and revision (`None`: no object, for an append at offset 0 that makes
    /// one). Any other version has another size, so the offset no longer holds.
    Appends(Option<(uuid::Uuid, u32)>),
}

impl WriteCondition {
    /// Whether the write may go over `current` (`None`: no object, or a delete marker).
    pub(crate) fn check(&self, current: Option<&ObjectRecord>) -> Result<(), ObjectError> {
        match (self, current) {
            (WriteCondition::IfNoneMatch, None) => Ok(()),
            (WriteCondition::IfNoneMatch, Some(_)) => Err(ObjectError::PreconditionFailed),
            (WriteCondition::IfMatch(_), None) => Err(ObjectError::NoSuchKey),
            (WriteCondition::IfMatch(etag), Some(record)) if etag_matches(etag, record) => Ok(()),
            (WriteCondition::IfMatch(_), Some(_)) => Err(ObjectError::PreconditionFailed),
            (WriteCondition::Appends(onto), current) => {
                match (onto, current.map(|v| (v.data_id, v.revision))) {
                    (None, None) => Ok(()),
                    (Some(onto), Some(current)) if *onto == current => Ok(()),
                    _ => Err(ObjectError::InvalidWriteOffset),
                }
            }
        }
    }
}

/// Which version a delete may remove: the one it finds (`Always`), one that still matches
/// the client's conditions, or the very version a lifecycle rule judged.
#[derive(Debug, Clone, Default)]
pub enum DeleteIf {
    #[default]
    Always,
    /// DeleteObject's `If-Match`, `x-amz-if-match-last-modified-time` and
    /// `x-amz-if-match-size` (or a DeleteObjects entry's `ETag`, `LastModifiedTime`, `Size`).
    Matches(DeleteConditions),
    /// The version judged, unchanged since: anything else is left alone, without an error.
    Same(Box<ObjectRecord>),
}

/// The client's conditions on a delete; those given must all hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteConditions {
    /// An ETag, quoted or not, or `*` for any object.
    pub etag: Option<String>,
    /// The version's Last-Modified, compared to the second as S3's headers show it.
    pub last_modified_secs: Option<i64>,
    pub size: Option<u64>,
}

impl DeleteIf {
    /// The conditions a client sent; `Always` when it sent none.
    pub fn matching(conditions: DeleteConditions) -> Self {
        if conditions == DeleteConditions::default() {
            DeleteIf::Always
        } else {
            DeleteIf::Matches(conditions)
        }
    }

    /// Whether the delete may go ahead without knowing what the key holds: a conditional
    /// delete over drives that agree on nothing must fail instead.
    pub(crate) fn is_unconditional(&self) -> bool {
        matches!(self, DeleteIf::Always)
    }

    /// Whether to delete `found` (`None`: no such object, or a delete marker): `Ok(false)`
    /// leaves it, answered as a success; an `Err` is the answer. As S3 answers: a mismatch
    /// is 412 PreconditionFailed; `If-Match` on no object is 404 NoSuchKey, while a
    /// last-modified time or size on no object is a success that deletes nothing.
    pub(crate) fn allows(&self, found: Option<&ObjectRecord>) -> Result<bool, ObjectError> {
        match self {
            DeleteIf::Always => Ok(true),
            DeleteIf::Same(judged) => Ok(found.is_some_and(|now| now.same_version(judged))),
            DeleteIf::Matches(conditions) => conditions.allow(found),
        }
    }
}

impl DeleteConditions {
    fn allow(&self, found: Option<&ObjectRecord>) -> Result<bool, ObjectError> {
        let Some(record) = found else {
            return match self.etag {
                Some(_) => Err(ObjectError::NoSuchKey),
                None => Ok(false),
            };
        };
        let etag = self.etag.as_ref().is_none_or(|e| etag_matches(e, record));
        let modified = (self.last_modified_secs)
            .is_none_or(|secs| record.modified_ms.div_euclid(1000) == secs);
        let size = self.size.is_none_or(|size| record.size == size);
        if etag && modified && size {
            Ok(true)
        } else {
            Err(ObjectError::PreconditionFailed)
        }
    }
}

/// Whether an `If-Match` value names `record`: its ETag, quoted, weak or bare, or `*`.
fn etag_matches(wanted: &str, record: &ObjectRecord) -> bool {
    let wanted = wanted.trim().trim_start_matches("W/").trim_matches('"');
    wanted == "*" || wanted == record.etag
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> ObjectRecord {
        ObjectRecord {
            etag: "abc".into(),
            size: 5,
            modified_ms: 1_700_000_000_999,
            ..ObjectRecord::for_tests()
        }
    }

    fn conditions(etag: Option<&str>, secs: Option<i64>, size: Option<u64>) -> DeleteIf {
        DeleteIf::matching(DeleteConditions {
            etag: etag.map(str::to_string),
            last_modified_secs: secs,
            size,
        })
    }

    #[test]
    fn a_delete_goes_ahead_only_when_every_condition_given_holds() {
        let r = record();
        assert!(conditions(None, None, None).is_unconditional());
        for allowed in [
            conditions(Some("\"abc\""), None, None),
            conditions(Some("*"), None, None),
            conditions(None, Some(1_700_000_000), None),
            conditions(None, None, Some(5)),
            conditions(Some("abc"), Some(1_700_000_000), Some(5)),
        ] {
            assert!(matches!(allowed.allows(Some(&r)), Ok(true)), "{allowed:?}");
        }
        for refused in [
            conditions(Some("\"abd\""), None, None),
            conditions(None, Some(1_700_000_001), None),
            conditions(None, None, Some(6)),
            conditions(Some("abc"), Some(1_700_000_000), Some(6)),
        ] {
            assert!(
                matches!(
                    refused.allows(Some(&r)),
                    Err(ObjectError::PreconditionFailed)
                ),
                "{refused:?}"
            );
        }
    }

    #[test]
    fn on_no_object_if_match_is_no_such_key_and_the_others_delete_nothing() {
        assert!(matches!(
            conditions(Some("*"), None, None).allows(None),
            Err(ObjectError::NoSuchKey)
        ));
        assert!(matches!(
            conditions(None, Some(1), Some(5)).allows(None),
            Ok(false)
        ));
        assert!(matches!(DeleteIf::Always.allows(None), Ok(true)));
        let r = record();
        let judged = DeleteIf::Same(Box::new(r.clone()));
        assert!(matches!(judged.allows(None), Ok(false)));
        assert!(matches!(judged.allows(Some(&r)), Ok(true)));
        assert!(matches!(judged.allows(Some(&record())), Ok(false)));
    }
}
