//! Purging what deleted keys left on drives: records (and their data) that drives missed the
//! delete of, and the tombstones of deletes once nothing they stand over is left. A purge
//! acts only on what agreement says is deleted, never on a value a commit in flight may still
//! make current, and takes a tombstone away last.

use std::collections::HashMap;

use uuid::Uuid;

use crate::erasure::DataDir;
use crate::object::record::{
    inline_key, object_key, BucketRecord, ObjectRecord, INLINE_CHUNKS, OBJECTS, VERSIONS,
};
use crate::object::versions::agreed::{agree_on_version, lent_data, read_records, DriveRecords};
use crate::object::versions::versioning::read_states;
use crate::object::{Agreement, ObjectError, ObjectKey, ObjectStore};
use crate::records::copies::Guard;
use crate::records::{Change, RecordSet};

impl ObjectStore {
    /// Removes versions records that agreement says no longer exist (every version of the
    /// key was deleted) from the drives that still hold one.
    pub(in crate::object) async fn purge_stale_states(
        &self,
        set: &RecordSet,
        bucket: &BucketRecord,
        key: &ObjectKey,
    ) -> Result<Purge, ObjectError> {
        let _guard = self.locks.write(&bucket.name, key.as_str()).await;
        let states = read_states(set, &bucket.name, key.as_str()).await;
        let mut purge = Purge::default();
        if !matches!(set.agree(&states), Ok(Agreement::NotFound)) {
            return Ok(purge);
        }
        for (i, held) in states.iter().enumerate() {
            let Ok(Some(_)) = held else { continue };
            let Some(mut ops) = purge.condition(states.guard_on(set, i, None)) else {
                continue;
            };
            ops.push(VERSIONS.delete(object_key(&bucket.name, key.as_str())));
            purge.purged += u64::from(set.apply_on(i, ops).await.is_ok());
        }
        Ok(purge)
    }
}

/// What a purge of a deleted key's leftovers did.
#[derive(Default)]
pub(in crate::object) struct Purge {
    /// Drives whose leftover records were removed.
    pub purged: u64,
    /// A drive holds a value that may be another server's commit in flight: left for a
    /// later pass, which takes it for a leftover once no commit can still be answered.
    pub deferred: bool,
    sources: SourcesAsked,
}

/// Whether the keys renames took data folders from may still hold them, asked once per
/// folder and source (see [`ObjectStore::folder_held_by_source`]), however many drives drop
/// it.
#[derive(Default)]
pub(in crate::object) struct SourcesAsked(HashMap<(Uuid, Option<String>), bool>);

impl ObjectStore {
    async fn folder_held_by_source_once(
        &self,
        set: &RecordSet,
        bucket: &BucketRecord,
        version: &ObjectRecord,
        asked: &mut SourcesAsked,
    ) -> bool {
        let question = (version.data_id, version.data_from.clone());
        if let Some(&held) = asked.0.get(&question) {
            return held;
        }
        let held = self.folder_held_by_source(set, bucket, version).await;
        asked.0.insert(question, held);
        held
    }
}

impl Purge {
    /// What a drive's removal is conditioned on (it still holds what was read, and that is
    /// no write in flight), or `None` to leave it: a possible commit in flight defers it.
    fn condition(&mut self, guard: Guard) -> Option<Vec<Change>> {
        match guard {
            Guard::Expect(ops) => Some(ops),
            Guard::Refuse => {
                self.deferred = true;
                None
            }
            Guard::LeaveOut => None,
        }
    }
}

impl ObjectStore {
    /// Removes the records (and data) of a deleted key from the drives that still hold one: a
    /// stale drive must not bring a deleted object back. A key is deleted when agreement says
    /// it does not exist, or agrees on a delete's tombstone. Tombstones go last, once every
    /// drive answered and none holds anything else: taken from some drives while others still
    /// hold the version it replaced, that version would have a read quorum of vouchers again.
    pub(in crate::object) async fn purge_stale(
        &self,
        set: &RecordSet,
        bucket: &BucketRecord,
        key: &ObjectKey,
    ) -> Result<Purge, ObjectError> {
        let _guard = self.locks.write(&bucket.name, key.as_str()).await;
        let records = read_records(set, &bucket.name, key.as_str()).await;
        let mut purge = Purge::default();
        let tombstone = match agree_on_version(set, &records) {
            Ok(Agreement::NotFound) => None,
            Ok(Agreement::Found { value, .. }) if value.delete_marker => Some(value),
            _ => return Ok(purge),
        };
        let tombstone = tombstone.as_ref();
        let is_tombstone = |held: &ObjectRecord| tombstone.is_some_and(|t| held.same_version(t));
        let mut others_gone = records.iter().all(|r| r.is_ok());
        for (i, held) in records.iter().enumerate() {
            if let Ok(Some(stale)) = held {
                if !is_tombstone(stale) {
                    others_gone &= self
                        .purge_on(set, (&records, tombstone), i, bucket, key, &mut purge)
                        .await;
                }
            }
        }
        if tombstone.is_some() && others_gone {
            for i in 0..records.len() {
                self.purge_on(set, (&records, tombstone), i, bucket, key, &mut purge)
                    .await;
            }
        }
        Ok(purge)
    }

    /// Removes drive `i`'s record of a deleted key (see [`Self::purge_stale`]) and the data
    /// of the versions it names, unless it may be a write in flight or changed since it was
    /// read. Answers whether the drive holds none now.
    async fn purge_on(
        &self,
        set: &RecordSet,
        (records, tombstone): (&DriveRecords, Option<&ObjectRecord>),
        i: usize,
        bucket: &BucketRecord,
        key: &ObjectKey,
        purge: &mut Purge,
    ) -> bool {
        let Ok(Some(stale)) = &records[i] else {
            return records[i].is_ok();
        };
        let Some(mut ops) = purge.condition(records.guard_on(set, i, tombstone)) else {
            return false;
        };
        ops.push(OBJECTS.delete(object_key(&bucket.name, key.as_str())));
        if set.apply_on(i, ops).await.is_err() {
            return false;
        }
        purge.purged += 1;
        tracing::info!(drive = set.drive_label(i), bucket = %bucket.name, key = %key, "heal: removed the record of a deleted object");
        let lent = lent_data(records);
        for version in stale.with_superseded() {
            if !lent.contains(&version.data_id) {
                (self.drop_version_on(set, i, (bucket, key), version, &mut purge.sources)).await;
            }
        }
        true
    }

    /// Deletes one version's data (shard folder or inline chunk) from drive `index`, unless
    /// a rename took its folder from a key that may still hold it (`sources`: what was
    /// found of such keys so far).
    pub(in crate::object) async fn drop_version_on(
        &self,
        set: &RecordSet,
        index: usize,
        (bucket, key): (&BucketRecord, &ObjectKey),
        version: &ObjectRecord,
        sources: &mut SourcesAsked,
    ) {
        let _ = if version.inline {
            let key = inline_key(&bucket.name, key.as_str(), version.data_id);
            let delete = INLINE_CHUNKS.delete(key);
            set.apply_on(index, vec![delete]).await
        } else if !(self.folder_held_by_source_once(set, bucket, version, sources)).await {
            let dir = DataDir {
                bucket_id: bucket.id.clone(),
                data_id: version.data_id,
            };
            set.delete_data_dir_on(index, &dir).await
        } else {
            Ok(())
        };
    }
}
