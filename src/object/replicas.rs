//! How agreement ([`crate::records::agreement`]) compares the copies of each kind of record
//! the drives hold: which value a copy is, and which earlier values it vouches for.

use uuid::Uuid;

use super::record::{ObjectRecord, PartRecord, UploadRecord, VersionsRecord};
use crate::records::Replica;

/// An object's record: a version (a data id at a revision of its metadata), vouching for
/// the one it superseded on this drive.
impl Replica for ObjectRecord {
    type Rank = (i64, u32, Uuid);
    fn is_current(&self, value: &Self) -> bool {
        self.same_version(value)
    }
    fn vouches_for(&self, value: &Self) -> bool {
        self.with_superseded().any(|v| v.same_version(value))
    }
    fn values(&self) -> Vec<Self> {
        self.with_superseded()
            .map(|v| ObjectRecord {
                superseded: None,
                ..v.clone()
            })
            .collect()
    }
    fn rank(&self) -> Self::Rank {
        (self.modified_ms, self.revision, self.data_id)
    }
}

/// A key's versions, one state per commit, vouching for the state it replaced.
impl Replica for VersionsRecord {
    type Rank = Uuid;
    fn is_current(&self, value: &Self) -> bool {
        self.state == value.state
    }
    fn vouches_for(&self, value: &Self) -> bool {
        self.with_superseded().any(|s| s.state == value.state)
    }
    fn values(&self) -> Vec<Self> {
        self.with_superseded()
            .map(|s| VersionsRecord {
                superseded: None,
                ..s.clone()
            })
            .collect()
    }
    fn rank(&self) -> Uuid {
        self.state
    }
}

// Bucket and system records are `Revisioned` (see `crate::records::revisioned`).

/// Records written once and never changed, told apart by an identity.
macro_rules! immutable_replica {
    ($record:ty, $identity:ident $(. $field:ident)*) => {
        impl Replica for $record {
            type Rank = ();
            fn is_current(&self, value: &Self) -> bool {
                self.$identity $(.$field)* == value.$identity $(.$field)*
            }
            fn vouches_for(&self, value: &Self) -> bool {
                self.is_current(value)
            }
            fn values(&self) -> Vec<Self> {
                vec![self.clone()]
            }
            fn rank(&self) {}
        }
    };
}

/// An upload, open or ended: its tombstone vouches for the open upload it ended.
impl Replica for UploadRecord {
    type Rank = bool;
    fn is_current(&self, value: &Self) -> bool {
        self.data_id == value.data_id && self.ended == value.ended
    }
    fn vouches_for(&self, value: &Self) -> bool {
        self.is_current(value)
            || (self.data_id == value.data_id && self.ended.is_some() && value.ended.is_none())
    }
    fn values(&self) -> Vec<Self> {
        match self.ended {
            Some(_) => vec![
                self.clone(),
                UploadRecord {
                    ended: None,
                    ..self.clone()
                },
            ],
            None => vec![self.clone()],
        }
    }
    fn rank(&self) -> bool {
        self.ended.is_some()
    }
}
immutable_replica!(PartRecord, info.file);
