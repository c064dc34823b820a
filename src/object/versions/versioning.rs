//! Versioned keys: every version of a key, delete markers included, in one record per drive.
//!
//! A key of a bucket that has had versioning enabled keeps a [`VersionsRecord`] (its versions,
//! newest first) in the `Versions` table of every drive of its set, committed like an object
//! record: atomically per drive, with the state it replaced kept as `superseded`, so that a
//! commit cut short leaves the old state whole and readers take the state a read quorum
//! holds. Beside it, in the same transaction, the `Objects` table keeps the newest version:
//! listings and plain GETs read only that, as in an unversioned bucket. When the newest
//! version is a delete marker, the marker is committed there too (as a tombstone readers
//! skip, so that a commit cut short resolves to the same state in both tables) and removed
//! once the commit has its quorum. Keys written before versioning was enabled have no
//! `Versions` record; their one version (the `null` one) is their `Objects` record.

use crate::object::record::{
    inline_key, is_valid_version_id, new_version_id, object_key, BucketRecord, ObjectRecord,
    Versioning, VersionsRecord, INLINE_CHUNKS, OBJECTS, VERSIONS,
};
use bytes::Bytes;
use uuid::Uuid;

use crate::object::commit::{commit_on_versions, dropped_inline_chunks};
use crate::object::conditions::DeleteIf;
use crate::object::object_lock::{self, ObjectLock};
use crate::object::versions::agreed::{
    agree_on_version, held_for_commit, lent_data, read_records, DriveRecords,
};
use crate::object::{
    now_ms, retry_conflicts, Agreement, BucketName, ObjectError, ObjectKey, ObjectStore,
};
use crate::records::copies::Copies;
use crate::records::copies::Guard;
use crate::records::{Change, RecordSet};

/// Each drive's versions record of a key, decoded.
pub(crate) type DriveStates = Copies<VersionsRecord>;

/// How a DeleteObject is asked.
#[derive(Debug, Default, Clone)]
pub struct DeleteOptions {
    /// The version to remove for good; `None`: the key (a delete marker when versioned).
    pub version_id: Option<String>,
    /// `x-amz-bypass-governance-retention`, once authorised: a governance retention does
    /// not keep the version.
    pub bypass_governance: bool,
    /// What the version deleted must still be, checked atomically with the commit.
    pub only_if: DeleteIf,
}

/// What a delete did, as S3 reports it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Deleted {
    /// The version the delete made (a delete marker) or removed; `None` in an unversioned
    /// bucket.
    pub version_id: Option<String>,
    /// Whether that version is a delete marker.
    pub delete_marker: bool,
}

/// Reads a key's versions record from every drive of its set.
pub(crate) async fn read_states(set: &RecordSet, bucket: &str, key: &str) -> DriveStates {
    Copies::read(set, VERSIONS, object_key(bucket, key)).await
}

/// A key's versions as its set agrees on them, with what each drive holds.
pub(crate) struct KeyVersions {
    pub states: DriveStates,
    pub records: DriveRecords,
    /// The agreed versions record; `None` when the key has none (never written while
    /// versioning was on).
    pub state: Option<VersionsRecord>,
    /// The agreed `Objects` record.
    pub object: Option<ObjectRecord>,
    /// Every version, newest first.
    pub versions: Vec<ObjectRecord>,
}

impl KeyVersions {
    /// Whether the set holds any record of the key.
    pub fn holds_key(&self) -> bool {
        self.state.is_some() || self.object.is_some()
    }

    pub fn find(&self, version_id: &str) -> Option<&ObjectRecord> {
        self.versions.iter().find(|v| v.has_version_id(version_id))
    }

    /// The drives that hold a version's data: those whose records name it.
    pub fn data_holders(&self, version: &ObjectRecord) -> Vec<bool> {
        self.states
            .iter()
            .zip(&self.records)
            .map(|(state, object)| {
                let in_state = matches!(state, Ok(Some(s)) if s.with_superseded()
                    .any(|s| s.versions.iter().any(|v| v.data_id == version.data_id)));
                let in_object = matches!(object, Ok(Some(o)) if o.data_id == version.data_id
                    || o.superseded.as_ref().is_some_and(|s| s.data_id == version.data_id));
                in_state || in_object
            })
            .collect()
    }
}

/// Reads both records of a key from every drive and agrees on its versions.
pub(crate) async fn key_versions(
    set: &RecordSet,
    bucket: &str,
    key: &str,
) -> Result<KeyVersions, ObjectError> {
    let (states, records) = futures::join!(
        read_states(set, bucket, key),
        read_records(set, bucket, key)
    );
    let object = match agree_on_version(set, &records) {
        Ok(Agreement::Found { value, .. }) => Some(value),
        Ok(Agreement::NotFound) => None,
        Err(e) => return Err(e),
    };
    let state = match set.agree(&states)? {
        Agreement::Found { value, .. } => Some(value),
        Agreement::NotFound => None,
    };
    let versions = match &state {
        Some(state) => state.versions.clone(),
        None => object
            .iter()
            .filter(|o| !o.delete_marker)
            .cloned()
            .collect(),
    };
    Ok(KeyVersions {
        states,
        records,
        state,
        object,
        versions,
    })
}

/// A new version about to join a key's versions.
pub(crate) struct Addition<'a> {
    pub record: &'a ObjectRecord,
    pub inline: Option<&'a [Bytes]>,
    /// The drives that hold its shard files, when it has any: only they take the new state.
    pub data_holders: Option<&'a [bool]>,
}

/// A key's next state: its versions (newest first), the new version's inline data if one
/// joins, and other changes committed with it on every drive.
pub(crate) struct NewState<'a> {
    pub versions: Vec<ObjectRecord>,
    pub added: Option<Addition<'a>>,
    pub extra: Vec<Change>,
    /// What else the change was decided on, drive by drive (see
    /// [`crate::object::objects::NewVersion::decided_on`]).
    pub decided_on: Vec<Guard>,
}

impl NewState<'_> {
    /// Versions that keep their data: a removal or a metadata change.
    pub(crate) fn of(versions: Vec<ObjectRecord>) -> Self {
        Self {
            versions,
            added: None,
            extra: Vec::new(),
            decided_on: Vec::new(),
        }
    }
}

/// Each drive's batch of [`ObjectStore::commit_versions`], unguarded (`None`: leave the
/// drive out), and the versions of the new state.
pub(crate) fn state_batches(
    bucket: &BucketRecord,
    key: &ObjectKey,
    current: &KeyVersions,
    next: NewState<'_>,
) -> (Vec<Option<Vec<Change>>>, Vec<ObjectRecord>) {
    let NewState {
        versions,
        added,
        extra,
        ..
    } = next;
    let db_key = object_key(&bucket.name, key.as_str());
    let new_state = (!versions.is_empty()).then(|| VersionsRecord {
        state: Uuid::new_v4(),
        versions: versions.clone(),
        superseded: None,
    });
    let newest_object = versions.first();
    // What the drives must keep readable until the next commit: the new versions and,
    // as long as the new state may be cut short, the old ones.
    let keeps = |data_id: Uuid| {
        versions.iter().any(|v| v.data_id == data_id)
            || (new_state.is_some() && current.versions.iter().any(|v| v.data_id == data_id))
    };
    let batches: Vec<Option<Vec<Change>>> = current
        .states
        .iter()
        .zip(&current.records)
        .enumerate()
        .map(|(i, (held_state, held_object))| {
            let (held_state, held_object) =
                (held_for_commit(held_state)?, held_for_commit(held_object)?);
            let mut ops = Vec::new();
            match &new_state {
                Some(state) => {
                    let mut state = state.clone();
                    state.superseded = current.state.clone().map(Box::new);
                    ops.push(VERSIONS.put(db_key.clone(), &state));
                }
                None => ops.push(VERSIONS.delete(db_key.clone())),
            }
            match newest_object {
                Some(newest) => {
                    let mut newest = newest.clone();
                    newest.superseded = current.object.clone().map(Box::new);
                    ops.push(OBJECTS.put(db_key.clone(), &newest));
                }
                None => ops.push(OBJECTS.delete(db_key.clone())),
            }
            if let Some(Addition {
                record,
                inline: Some(chunks),
                ..
            }) = &added
            {
                ops.push(INLINE_CHUNKS.put_stored(
                    inline_key(&bucket.name, key.as_str(), record.data_id),
                    chunks[i].to_vec(),
                ));
            }
            let held_versions = held_state
                .into_iter()
                .flat_map(VersionsRecord::with_superseded)
                .flat_map(|s| s.versions.iter())
                .chain(
                    held_object
                        .into_iter()
                        .flat_map(ObjectRecord::with_superseded),
                );
            ops.extend(dropped_inline_chunks(
                &bucket.name,
                key.as_str(),
                held_versions,
                keeps,
            ));
            ops.extend(extra.iter().cloned());
            Some(ops)
        })
        .collect();
    (batches, versions)
}

/// Fails unless `id` could name a version.
pub(crate) fn check_version_id(id: &str) -> Result<(), ObjectError> {
    if is_valid_version_id(id) {
        Ok(())
    } else {
        Err(ObjectError::InvalidArgument(
            "Invalid version id specified".into(),
        ))
    }
}

impl ObjectStore {
    /// Commits `versions` (newest first) as a key's new state on every drive of its set,
    /// under the key's write lock (`current` was read under it), then removes the data of
    /// versions no longer referenced. `extra` changes commit with it on every drive.
    pub(crate) async fn commit_versions(
        &self,
        set: &RecordSet,
        bucket: &BucketRecord,
        key: &ObjectKey,
        current: &KeyVersions,
        next: NewState<'_>,
    ) -> Result<(), ObjectError> {
        let data_on = (next.added.as_ref()).and_then(|a| a.data_holders.map(<[bool]>::to_vec));
        let decided_on = next.decided_on.clone();
        let (batches, versions) = state_batches(bucket, key, current, next);
        let took =
            commit_on_versions(set, batches, current, data_on.as_deref(), &decided_on).await?;
        self.settle_versions(set, bucket, key, current, &versions, took)
            .await;
        Ok(())
    }

    /// What follows a committed state of a key (`versions`, taken by `took` drives): the
    /// tombstone of a delete marker goes once every drive holds it, and the data of the
    /// versions the state no longer holds goes.
    pub(crate) async fn settle_versions(
        &self,
        set: &RecordSet,
        bucket: &BucketRecord,
        key: &ObjectKey,
        current: &KeyVersions,
        versions: &[ObjectRecord],
        took: usize,
    ) {
        let db_key = object_key(&bucket.name, key.as_str());
        let newest_object = versions.first();
        let everywhere = took == set.width();
        if let Some(tombstone) = newest_object.filter(|v| v.delete_marker && everywhere) {
            // The tombstone has done its job (see the module's note); a drive that misses
            // this keeps it until healed, and readers skip it meanwhile. A drive where a
            // later write replaced it keeps that. Only once every drive holds it: taking it
            // from some while others still hold the record it replaced would leave that
            // record a read quorum of vouchers again (heal spreads it, then removes it).
            let mut tombstone = tombstone.clone();
            tombstone.superseded = current.object.clone().map(Box::new);
            set.apply_all(vec![
                OBJECTS.expect_record(db_key.clone(), &tombstone),
                OBJECTS.delete(db_key.clone()),
            ])
            .await;
        }
        // Shard folders of versions gone from the new state go now: the state is committed.
        // Only versions the decision accounted for: a drive's copy of another writer's
        // commit in flight names data that writer may still commit, on a retry.
        let mut gone: Vec<ObjectRecord> = Vec::new();
        let states = (current.states.iter().enumerate())
            .filter(|(i, _)| current.states.settled_on(*i, current.state.as_ref()))
            .map(|(_, state)| state);
        let records = (current.records.iter().enumerate())
            .filter(|(i, _)| current.records.settled_on(*i, current.object.as_ref()))
            .map(|(_, record)| record);
        let known = (states.flatten().flatten())
            .flat_map(VersionsRecord::with_superseded)
            .flat_map(|s| s.versions.iter())
            .chain(
                records
                    .flatten()
                    .flatten()
                    .flat_map(ObjectRecord::with_superseded),
            );
        // Data a rename passed to another key (while the bucket was unversioned) stays.
        let lent = lent_data(&current.records);
        for version in known {
            let referenced = versions
                .iter()
                .any(|v| v.data_id == version.data_id && v.tier == version.tier);
            let lent = lent.contains(&version.data_id);
            if !referenced && !lent && !gone.iter().any(|g| g.data_id == version.data_id) {
                let mut version = version.clone();
                version.superseded = None;
                gone.push(version);
            }
        }
        self.delete_data(set, bucket, gone).await;
    }

    /// Adds a new version of a key in a versioned bucket, as a PUT, copy or multipart
    /// completion does. With versioning suspended it replaces the `null` version.
    /// The record carries its version id already (see [`version_id_for`]); a `null` one
    /// replaces the key's `null` version.
    pub(crate) async fn add_version(
        &self,
        set: &RecordSet,
        bucket: &BucketRecord,
        key: &ObjectKey,
        version: &crate::object::objects::NewVersion<'_>,
    ) -> Result<(), ObjectError> {
        let guard = self.locks.write(&bucket.name, key.as_str()).await;
        let current = key_versions(set, &bucket.name, key.as_str()).await?;
        self.not_moved_away(set, &bucket.name, key.as_str(), current.holds_key())?;
        if let Some(condition) = version.condition {
            condition.check(current.versions.first().filter(|v| !v.delete_marker))?;
        }
        let mut record = version.record.clone();
        object_lock::apply_default(bucket, &mut record);
        let mut versions = vec![record.clone()];
        versions.extend(
            current
                .versions
                .iter()
                .filter(|v| v.version_id.is_some() || record.version_id.is_some())
                .cloned(),
        );
        let added = Addition {
            record: &record,
            inline: version.inline.as_deref(),
            data_holders: version.data_holders.as_deref(),
        };
        let next = NewState {
            versions,
            added: Some(added),
            extra: version.extra.clone(),
            decided_on: version.decided_on.clone(),
        };
        let created = !current.holds_key();
        self.commit_versions(set, bucket, key, &current, next)
            .await?;
        drop(guard);
        if created {
            self.created_alone(set, bucket, key, version.record).await?;
        }
        Ok(())
    }

    /// Deletes a key or one version of it. Without a version id, a versioned bucket gets a
    /// delete marker (the `null` one while suspended) and an unversioned bucket loses the
    /// key; with one, that version goes for good (a missing version is no error, as in S3).
    pub async fn delete_object(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
        version_id: Option<&str>,
    ) -> Result<Deleted, ObjectError> {
        let options = DeleteOptions {
            version_id: version_id.map(str::to_string),
            ..DeleteOptions::default()
        };
        self.delete_object_with(bucket, key, &options).await
    }

    /// [`Self::delete_object`] as `options` ask: governance bypassed, or only if the
    /// version found still matches the client's conditions.
    pub async fn delete_object_with(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
        options: &DeleteOptions,
    ) -> Result<Deleted, ObjectError> {
        retry_conflicts(|| self.delete_object_once(bucket, key, options)).await
    }

    async fn delete_object_once(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
        options: &DeleteOptions,
    ) -> Result<Deleted, ObjectError> {
        let only_if = &options.only_if;
        if let Some(id) = options.version_id.as_deref() {
            check_version_id(id)?;
            return self
                .remove_version_if(bucket, key, id, options.bypass_governance, only_if)
                .await;
        }
        let bucket_record = self.bucket(bucket).await?;
        match bucket_record.settings.versioning {
            None => {
                self.delete_object_if(bucket, key, only_if).await?;
                Ok(Deleted::default())
            }
            Some(mode) => {
                self.add_delete_marker(bucket, &bucket_record, key, mode, only_if)
                    .await
            }
        }
    }

    /// Puts a delete marker on top of a key's versions, if `only_if` allows it of its current
    /// version (`None`: the key has none, or a delete marker is newest).
    pub(crate) async fn add_delete_marker(
        &self,
        name: &BucketName,
        bucket: &BucketRecord,
        key: &ObjectKey,
        mode: Versioning,
        only_if: &DeleteIf,
    ) -> Result<Deleted, ObjectError> {
        let (set, _writing) = self.set_for(name, key).await?;
        let _guard = self.locks.write(&bucket.name, key.as_str()).await;
        let current = key_versions(set, &bucket.name, key.as_str()).await?;
        self.not_moved_away(set, &bucket.name, key.as_str(), current.holds_key())?;
        if !only_if.allows(current.versions.first().filter(|v| !v.delete_marker))? {
            return Ok(Deleted::default());
        }
        let marker = delete_marker(Some(mode), set);
        let mut versions = vec![marker.clone()];
        versions.extend(
            current
                .versions
                .iter()
                .filter(|v| v.version_id.is_some() || mode == Versioning::Enabled)
                .cloned(),
        );
        self.commit_versions(set, bucket, key, &current, NewState::of(versions))
            .await?;
        Ok(Deleted {
            version_id: Some(marker.version_id_str().to_string()),
            delete_marker: true,
        })
    }

    /// Removes one version of a key for good if `only_if` allows it (lifecycle checks that
    /// it is the version it judged) and no Object Lock protects it ([`ObjectError::ObjectLocked`];
    /// `bypass_governance` lifts a governance retention). A missing version is no error,
    /// unless `If-Match` asked for it.
    pub async fn remove_version_if(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
        version_id: &str,
        bypass_governance: bool,
        only_if: &DeleteIf,
    ) -> Result<Deleted, ObjectError> {
        let bucket_record = self.bucket(bucket).await?;
        let (set, _writing) = self.set_for(bucket, key).await?;
        let _guard = self.locks.write(bucket.as_str(), key.as_str()).await;
        let current = key_versions(set, bucket.as_str(), key.as_str()).await?;
        self.not_moved_away(set, bucket.as_str(), key.as_str(), current.holds_key())?;
        let removed = Deleted {
            version_id: Some(version_id.to_string()),
            delete_marker: false,
        };
        let Some(version) = current.find(version_id) else {
            only_if.allows(None)?;
            return Ok(removed);
        };
        if !only_if.allows(Some(version))? {
            return Ok(Deleted::default());
        }
        object_lock::check_removable(version, now_ms(), bypass_governance)?;
        let delete_marker = version.delete_marker;
        let versions: Vec<ObjectRecord> = current
            .versions
            .iter()
            .filter(|v| !v.has_version_id(version_id))
            .cloned()
            .collect();
        self.commit_versions(set, &bucket_record, key, &current, NewState::of(versions))
            .await?;
        Ok(Deleted {
            delete_marker,
            ..removed
        })
    }

    /// Rewrites one version's record and keeps its data (tagging, a self-copy, a transition to
    /// a tier): `change` sees the version (the newest when `version_id` is `None`) and returns
    /// its new metadata or refuses, all under the key's write lock.
    pub async fn update_object_metadata(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
        version_id: Option<&str>,
        change: impl FnOnce(&ObjectRecord) -> Result<ObjectRecord, ObjectError>,
    ) -> Result<ObjectRecord, ObjectError> {
        if let Some(id) = version_id {
            check_version_id(id)?;
        }
        let bucket_record = self.bucket(bucket).await?;
        let (set, _writing) = self.set_for(bucket, key).await?;
        let _guard = self.locks.write(bucket.as_str(), key.as_str()).await;
        let current = key_versions(set, bucket.as_str(), key.as_str()).await?;
        self.not_moved_away(set, bucket.as_str(), key.as_str(), current.holds_key())?;
        let index = select(&current.versions, version_id)?;
        let version = &current.versions[index];
        let mut record = change(version)?;
        // A version whose data is in a tier is of the tier's class until it moves again.
        if let Some(location) = record.tier.as_ref().filter(|_| record.tier == version.tier) {
            record.storage_class = Some(location.tier.clone());
        }
        record.data_id = version.data_id;
        record.version_id = version.version_id.clone();
        record.delete_marker = false;
        record.revision = version.revision + 1;
        record.superseded = None;
        if current.state.is_none() {
            // An unversioned key: its one record is rewritten over the agreed one.
            self.rewrite_object_record(set, &bucket_record, key, &current.records, &record)
                .await?;
            return Ok(record);
        }
        let mut versions = current.versions.clone();
        versions[index] = record.clone();
        self.commit_versions(set, &bucket_record, key, &current, NewState::of(versions))
            .await?;
        Ok(record)
    }

    /// One version of a key as the drives agree on it, with the drives holding its data.
    pub(crate) async fn find_version(
        &self,
        set: &RecordSet,
        bucket: &str,
        key: &str,
        version_id: &str,
    ) -> Result<(ObjectRecord, Vec<bool>, DriveRecords), ObjectError> {
        check_version_id(version_id)?;
        let current = key_versions(set, bucket, key).await?;
        let index = select(&current.versions, Some(version_id))?;
        let version = current.versions[index].clone();
        let holders = current.data_holders(&version);
        Ok((version, holders, current.records))
    }

    /// The newest version of a key whose `Objects` record agreement found missing: in a
    /// versioned bucket the versions record decides (a delete marker, or a version whose
    /// `Objects` record a cut-short commit left behind).
    pub(crate) async fn newest_when_unlisted(
        &self,
        set: &RecordSet,
        bucket: &BucketRecord,
        key: &str,
    ) -> Result<(ObjectRecord, Vec<bool>, DriveRecords), ObjectError> {
        if bucket.settings.versioning.is_none() {
            return Err(ObjectError::NoSuchKey);
        }
        let current = key_versions(set, &bucket.name, key).await?;
        match current.versions.first() {
            None => Err(ObjectError::NoSuchKey),
            Some(newest) if newest.delete_marker => Err(ObjectError::DeleteMarker {
                version_id: newest.version_id_str().to_string(),
                by_version: false,
            }),
            Some(newest) => {
                let holders = current.data_holders(newest);
                Ok((newest.clone(), holders, current.records))
            }
        }
    }
}

/// The index of the version a request names (the newest when `version_id` is `None`).
fn select(versions: &[ObjectRecord], version_id: Option<&str>) -> Result<usize, ObjectError> {
    match version_id {
        None => match versions.first() {
            None => Err(ObjectError::NoSuchKey),
            Some(newest) if newest.delete_marker => Err(ObjectError::DeleteMarker {
                version_id: newest.version_id_str().to_string(),
                by_version: false,
            }),
            Some(_) => Ok(0),
        },
        Some(id) => {
            let index = versions
                .iter()
                .position(|v| v.has_version_id(id))
                .ok_or(ObjectError::NoSuchVersion)?;
            if versions[index].delete_marker {
                return Err(ObjectError::DeleteMarker {
                    version_id: id.to_string(),
                    by_version: true,
                });
            }
            Ok(index)
        }
    }
}

/// The version id a new version gets in a bucket in this versioning state.
pub(crate) fn version_id_for(versioning: Option<Versioning>) -> Option<String> {
    match versioning {
        Some(Versioning::Enabled) => Some(new_version_id()),
        Some(Versioning::Suspended) | None => None,
    }
}

/// A fresh delete marker; in an unversioned bucket (`None`), the tombstone of a delete.
pub(crate) fn delete_marker(versioning: Option<Versioning>, set: &RecordSet) -> ObjectRecord {
    ObjectRecord {
        size: 0,
        etag: String::new(),
        modified_ms: now_ms(),
        data_id: Uuid::new_v4(),
        content_type: None,
        user_meta: Vec::new(),
        headers: Vec::new(),
        checksum: None,
        tags: Vec::new(),
        storage_class: None,
        revision: 0,
        data_shards: set.data_shards() as u8,
        parity_shards: set.parity_shards() as u8,
        block_size: set.block_size() as u32,
        inline: false,
        parts: Vec::new(),
        superseded: None,
        version_id: version_id_for(versioning),
        delete_marker: true,
        tier: None,
        lock: ObjectLock::default(),
        upload_id: None,
        acl: None,
        sse: None,
        renamed_by: None,
        lent_data: None,
        data_from: None,
        pool_moves: 0,
    }
}
