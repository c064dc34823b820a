//! Single objects: PUT, GET, HEAD and DELETE.

use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use uuid::Uuid;

use super::acl::Acl;
use super::at_rest::{self, Encryption, Piece};
use super::commit::{commit_on_records, dropped_inline_chunks};
use super::conditions::{DeleteIf, WriteCondition};
use super::object_lock::{self, ObjectLock};
use super::record::{
    inline_key, object_key, BucketRecord, ObjectRecord, PartInfo, StoredChecksum, INLINE_CHUNKS,
    OBJECTS, SINGLE_PUT_FILE,
};
use super::{
    now_ms, retry_conflicts, Agreement, BucketName, ObjectError, ObjectKey, ObjectStore, ReadSpan,
    INLINE_LIMIT,
};
use crate::body::{chain_reading_ahead, ByteStream};
use crate::encryption::{encrypt_stream, CustomerKey};
use crate::erasure::{DataDir, Encoded, ErasureError, PartSpan, ShardSource, WriteOutcome};
use crate::object::digest::hashing::{self, ExpectedChecksum};
use crate::object::digest::md5_lanes::Md5Lanes;
use crate::object::versions::agreed::{
    agree_on_version, agreed_or_conflict, complete_records, held_for_commit, read_records,
    read_records_with_data, read_records_with_data_sparingly, replaced_versions, DriveRecords,
};
use crate::object::versions::versioning::{delete_marker, version_id_for};
use crate::records::copies::Guard;
use crate::records::{Change, RecordSet};

/// What a PUT stores beside the data.
#[derive(Debug, Default, Clone)]
pub struct PutOptions {
    pub content_type: Option<String>,
    pub user_meta: Vec<(String, String)>,
    pub headers: Vec<(String, String)>,
    /// Content-MD5 sent by the client; the body must match it.
    pub content_md5: Option<[u8; 16]>,
    pub checksum: Option<ExpectedChecksum>,
    /// Commit only if the key's current state allows it.
    pub condition: Option<WriteCondition>,
    pub tags: Vec<(String, String)>,
    /// `x-amz-storage-class` when not STANDARD.
    pub storage_class: Option<String>,
    /// Object Lock retention and legal hold named by the request.
    pub lock: ObjectLock,
    /// The version's ACL, when it is not the bucket owner's alone.
    pub acl: Option<Acl>,
    /// The encryption the request asks for; `None`: the bucket's default, if any.
    pub encryption: Option<Encryption>,
}

#[derive(Debug, Default, Clone)]
pub struct GetOptions {
    pub span: Option<ReadSpan>,
    /// The version to read (`null` names the null version); the newest when `None`.
    pub version_id: Option<String>,
    /// Whether the data is read at all, decided on the agreed record before any shard is
    /// opened (a conditional GET that ends in 304 or 412 reads none); `None`: always.
    pub read_if: Option<ReadIf>,
    /// The request's SSE-C key: required for (and only for) a version encrypted with one.
    pub customer_key: Option<Arc<CustomerKey>>,
    /// The stored bytes of the whole version, still sealed if it is encrypted (a lifecycle
    /// transition moves them as they are); `span` and `customer_key` do not apply.
    pub raw: bool,
}

/// A decision on a version's record: read its data or not.
#[derive(Clone)]
pub struct ReadIf(pub Arc<dyn Fn(&ObjectRecord) -> bool + Send + Sync>);

impl std::fmt::Debug for ReadIf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReadIf(..)")
    }
}

/// A version about to be committed.
pub(crate) struct NewVersion<'a> {
    pub record: &'a ObjectRecord,
    /// Each drive's inline chunk, for small objects.
    pub inline: Option<Vec<Bytes>>,
    /// The drives that hold the version's shard files: only they take its record. `None`
    /// when there are none to hold (inline data goes in with the record, or no new data).
    pub data_holders: Option<Vec<bool>>,
    /// Other changes committed with it on every drive (e.g. ending the upload).
    pub extra: Vec<Change>,
    /// What else the commit was decided on, drive by drive (the upload and the parts a
    /// completion reads): a drive takes the commit only where its guard lets it. Empty:
    /// nothing else.
    pub decided_on: Vec<Guard>,
    pub condition: Option<&'a WriteCondition>,
}

/// A version being read and where its data is: what [`ObjectStore::read_stored`] needs.
#[derive(Clone, Copy)]
struct StoredVersion<'a> {
    set: &'a RecordSet,
    bucket_record: &'a BucketRecord,
    bucket: &'a BucketName,
    key: &'a ObjectKey,
    record: &'a ObjectRecord,
    holders: &'a [bool],
    records: &'a DriveRecords,
}

/// An object being read.
pub struct GetResult {
    pub record: ObjectRecord,
    /// The selected span `start..end` when a range was asked for.
    pub range: Option<(u64, u64)>,
    pub body: ByteStream,
}

impl ObjectStore {
    pub async fn put_object(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
        body: ByteStream,
        options: PutOptions,
    ) -> Result<ObjectRecord, ObjectError> {
        let bucket_record = self.bucket(bucket).await?;
        object_lock::check_allowed(&bucket_record, &options.lock)?;
        let (set, _writing) = self.set_for(bucket, key).await?;
        let sealing = self
            .new_key(&bucket_record, key, options.encryption.as_ref())
            .await?;
        let package_key = sealing.as_ref().map(|new| new.key.object_package_key());
        let written = write_verified(
            &self.md5,
            set,
            body,
            SINGLE_PUT_FILE,
            INLINE_LIMIT,
            &options,
            package_key.as_ref(),
        )
        .await?;
        let (outcome, checksum) = (written.outcome, written.checksum);
        let data_dir = DataDir {
            bucket_id: bucket_record.id.clone(),
            data_id: Uuid::new_v4(),
        };

        let etag = at_rest::etag_of(sealing.as_ref().map(|new| &new.sse), &written.md5);
        let mut record = ObjectRecord {
            size: outcome.size,
            etag: etag.clone(),
            modified_ms: now_ms(),
            data_id: data_dir.data_id,
            content_type: options.content_type,
            user_meta: options.user_meta,
            headers: options.headers,
            checksum: checksum.clone(),
            tags: options.tags.clone(),
            storage_class: options.storage_class.clone(),
            revision: 0,
            data_shards: set.data_shards() as u8,
            parity_shards: set.parity_shards() as u8,
            block_size: set.block_size() as u32,
            inline: false,
            parts: Vec::new(),
            superseded: None,
            version_id: version_id_for(bucket_record.settings.versioning),
            delete_marker: false,
            tier: None,
            lock: options.lock,
            upload_id: None,
            acl: options.acl,
            sse: sealing.map(|new| new.sse),
            renamed_by: None,
            lent_data: None,
            data_from: None,
            pool_moves: 0,
        };
        let mut data_holders = None;
        let inline = match outcome.encoded {
            Encoded::Inline(chunks) => {
                record.inline = true;
                Some(chunks)
            }
            Encoded::Staged { staging, holders } => {
                let placed = set.place_staged(staging, &holders, &data_dir).await;
                if placed.is_err() {
                    set.delete_data_dir(&data_dir).await;
                }
                data_holders = Some(placed?);
                record.parts.push(PartInfo {
                    number: 1,
                    size: outcome.size,
                    etag,
                    file: SINGLE_PUT_FILE.into(),
                    checksum,
                });
                None
            }
        };
        let committed = self
            .commit_version(
                set,
                &bucket_record,
                key,
                NewVersion {
                    record: &record,
                    inline,
                    data_holders,
                    extra: Vec::new(),
                    decided_on: Vec::new(),
                    condition: options.condition.as_ref(),
                },
            )
            .await;
        if committed.is_err() && !record.inline {
            set.delete_data_dir(&data_dir).await;
        }
        committed.map(|()| record)
    }

    /// Commits a new version of `key` on its set: the object record (and inline chunks) plus
    /// `extra` changes on every drive, atomically per drive, then removes the data of the
    /// versions it replaced. On failure nothing changed; the caller owns the new data.
    pub(crate) async fn commit_version(
        &self,
        set: &RecordSet,
        bucket: &BucketRecord,
        key: &ObjectKey,
        version: NewVersion<'_>,
    ) -> Result<(), ObjectError> {
        retry_conflicts(|| self.commit_version_once(set, bucket, key, &version)).await
    }

    /// One try of [`Self::commit_version`]: a conflict is the caller's to retry, for a
    /// commit decided on more than the key's records must read those again too.
    pub(crate) async fn commit_version_once(
        &self,
        set: &RecordSet,
        bucket: &BucketRecord,
        key: &ObjectKey,
        version: &NewVersion<'_>,
    ) -> Result<(), ObjectError> {
        if bucket.settings.versioning.is_some() {
            return self.add_version(set, bucket, key, version).await;
        }
        let guard = self.locks.write(&bucket.name, key.as_str()).await;
        let current = read_records(set, &bucket.name, key.as_str()).await;
        let agreed = match agree_on_version(set, &current) {
            Ok(Agreement::Found { value, .. }) => Ok(Some(value)),
            Ok(Agreement::NotFound) => Ok(None),
            Err(e) => Err(e),
        };
        let created = matches!(agreed, Ok(None));
        if created {
            self.not_moved_away(set, &bucket.name, key.as_str(), false)?;
        }
        if let Some(condition) = version.condition {
            let judged = match agreed_or_conflict(set, &current)? {
                Agreement::Found { value, .. } => Some(value),
                Agreement::NotFound => None,
            };
            // A delete's tombstone is no object.
            condition.check(judged.as_ref().filter(|v| !v.delete_marker))?;
        }
        let agreed = agreed.ok();
        commit_over(set, bucket, key, &current, agreed.clone(), version).await?;
        drop(guard);
        if created {
            self.created_alone(set, bucket, key, version.record).await?;
        }
        let agreed = agreed.flatten();
        let replaced = replaced_versions(&current, agreed.as_ref(), Some(version.record.data_id));
        self.delete_data(set, bucket, replaced).await;
        Ok(())
    }

    /// Writes a new revision of an unversioned key's record over the one its drives agree
    /// on (`current`, read under the key's write lock), keeping the data.
    pub(crate) async fn rewrite_object_record(
        &self,
        set: &RecordSet,
        bucket: &BucketRecord,
        key: &ObjectKey,
        current: &DriveRecords,
        record: &ObjectRecord,
    ) -> Result<(), ObjectError> {
        let agreed = match agree_on_version(set, current)? {
            Agreement::Found { value, .. } if !value.delete_marker => value,
            _ => return Err(ObjectError::NoSuchKey),
        };
        let new = NewVersion {
            record,
            inline: None,
            data_holders: None,
            extra: Vec::new(),
            decided_on: Vec::new(),
            condition: None,
        };
        commit_over(set, bucket, key, current, Some(Some(agreed.clone())), &new).await?;
        let mut replaced = replaced_versions(current, Some(&agreed), Some(record.data_id));
        // Data moved to a tier leaves the drives (or the tier it was in).
        if record.tier != agreed.tier {
            replaced.push(agreed);
        }
        self.delete_data(set, bucket, replaced).await;
        Ok(())
    }

    /// Removes the shard files (or tier copies) of versions no longer referenced as current
    /// (best effort: a drive that misses it keeps an orphan, never a live object's data).
    /// What a rename passed on from a key that may still hold it stays, for that key.
    pub(crate) async fn delete_data(
        &self,
        set: &RecordSet,
        bucket: &BucketRecord,
        versions: Vec<ObjectRecord>,
    ) {
        for version in versions {
            if version.inline
                || version.delete_marker
                || self.folder_held_by_source(set, bucket, &version).await
            {
                continue;
            }
            if let Some(location) = &version.tier {
                self.delete_from_tier(location).await;
            } else {
                set.delete_data_dir(&DataDir {
                    bucket_id: bucket.id.clone(),
                    data_id: version.data_id,
                })
                .await;
            }
        }
    }

    /// Whether the key a rename took `version`'s data folder from may still hold it as its
    /// current version (a rename cut short, not yet healed either way): then the folder
    /// stays, for that key. Its drives decide it as for a read: once they agree on another
    /// version, or on none, the rename has won for good; when they agree on nothing, it may
    /// not have.
    pub(crate) async fn folder_held_by_source(
        &self,
        set: &RecordSet,
        bucket: &BucketRecord,
        version: &ObjectRecord,
    ) -> bool {
        let Some(source) = &version.data_from else {
            return false;
        };
        let records = read_records(set, &bucket.name, source).await;
        match agree_on_version(set, &records) {
            Ok(Agreement::Found { value, .. }) => {
                value.data_id == version.data_id && !value.delete_marker
            }
            Ok(Agreement::NotFound) => false,
            Err(_) => true,
        }
    }

    pub async fn head_object(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
        version_id: Option<&str>,
    ) -> Result<ObjectRecord, ObjectError> {
        let bucket_record = self.bucket(bucket).await?;
        let _guard = self.locks.read(bucket.as_str(), key.as_str()).await;
        let read = |set| self.read_version(set, &bucket_record, key, version_id, Reach::Record);
        let (record, ..) = self.read_where_held(bucket, key, read).await?;
        Ok(record)
    }

    /// The version a read names (the newest when `version_id` is `None`), the drives that
    /// hold its data, and each drive's `Objects` record (as far as `reach` asks drives).
    /// Called under the key's read lock.
    async fn read_version(
        &self,
        set: &RecordSet,
        bucket: &BucketRecord,
        key: &ObjectKey,
        version_id: Option<&str>,
        reach: Reach,
    ) -> Result<(ObjectRecord, Vec<bool>, DriveRecords), ObjectError> {
        if let Some(id) = version_id {
            return self.find_version(set, &bucket.name, key.as_str(), id).await;
        }
        let (bucket_name, key_name) = (&bucket.name, key.as_str());
        let mut records = match reach {
            Reach::Every => read_records_with_data(set, bucket_name, key_name).await,
            Reach::Record | Reach::Data => {
                read_records_with_data_sparingly(set, bucket_name, key_name).await
            }
        };
        let mut agreed = agree_on_version(set, &records);
        // A version read from shard files needs every drive that holds it, so that a
        // damaged shard is made up from parity.
        if reach == Reach::Data && records.is_partial() {
            if let Ok(Agreement::Found { value, .. }) = &agreed {
                if !value.inline && value.tier.is_none() {
                    records = complete_records(set, bucket_name, key_name, records).await;
                    agreed = agree_on_version(set, &records);
                }
            }
        }
        match agreed? {
            Agreement::Found { value, holders } if !value.delete_marker => {
                Ok((value, holders, records))
            }
            // Absent, or the tombstone of a delete marker: the versions record tells.
            _ => self.newest_when_unlisted(set, bucket, key.as_str()).await,
        }
    }

    pub async fn get_object(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
        options: GetOptions,
    ) -> Result<GetResult, ObjectError> {
        // A small object is read from the drives a sparing read of its records asked: when
        // its data does not decode from those, it is read again from every drive.
        match self
            .read_object(bucket, key, options.clone(), Reach::Data)
            .await?
        {
            Some(read) => Ok(read),
            None => (self.read_object(bucket, key, options, Reach::Every).await)?
                .ok_or(ObjectError::Unavailable(ErasureError::ReadQuorum)),
        }
    }

    /// [`Self::get_object`], asking drives as far as `reach` says; `None` when the data did
    /// not decode from drives some of which were not asked.
    async fn read_object(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
        options: GetOptions,
        reach: Reach,
    ) -> Result<Option<GetResult>, ObjectError> {
        let bucket_record = self.bucket(bucket).await?;

        // Shard files are opened under the read lock: an overwrite that commits afterwards
        // deletes their names, but open files stay readable to the end of this GET.
        let guard = self.locks.read(bucket.as_str(), key.as_str()).await;
        let (version_id, bucket_record) = (options.version_id.as_deref(), &bucket_record);
        let read = |set| async move {
            let found = self
                .read_version(set, bucket_record, key, version_id, reach)
                .await?;
            Ok((set, found))
        };
        let (set, (record, holders, records)) = self.read_where_held(bucket, key, read).await?;
        if let Some(ReadIf(read)) = &options.read_if {
            if !read(&record) {
                let body: ByteStream = Box::pin(futures::stream::empty());
                return Ok(Some(GetResult {
                    record,
                    range: None,
                    body,
                }));
            }
        }
        let partial = records.is_partial();
        // What to read of the stored bytes, and how to open each piece of an encrypted
        // version (only the packages that hold the span are read).
        let (range, pieces) = if options.raw {
            (None, vec![Piece::clear(0, record.size)])
        } else {
            let range = options.span.map(|r| record.resolve_span(r)).transpose()?;
            let (start, end) = range.unwrap_or((0, record.content_length()));
            let customer = options.customer_key.as_deref();
            let opened = self
                .open_key(bucket.as_str(), key.as_str(), &record, customer)
                .await?;
            let pieces = match opened {
                Some(data_key) => at_rest::pieces(&record, &data_key, start, end),
                None => vec![Piece::clear(start, end)],
            };
            (range, pieces)
        };
        let stored = StoredVersion {
            set,
            bucket_record,
            bucket,
            key,
            record: &record,
            holders: &holders,
            records: &records,
        };
        let mut streams: Vec<ByteStream> = Vec::new();
        for piece in pieces {
            let (start, end) = piece.stored;
            let read = self.read_stored(&stored, start, end).await?;
            streams.push(piece.open(chain_reading_ahead(read)));
        }
        drop(guard);

        let mut body: ByteStream = Box::pin(futures::stream::iter(streams).flatten());
        // Read the first block before answering, so that a read that cannot succeed is a
        // clean error rather than a 200 cut short.
        let first = body.next().await;
        let body: ByteStream = match first {
            None => Box::pin(futures::stream::empty()),
            Some(Err(_)) if partial => return Ok(None),
            Some(Err(e)) => return Err(read_failure(e)),
            Some(Ok(chunk)) => Box::pin(futures::stream::once(async { Ok(chunk) }).chain(body)),
        };
        Ok(Some(GetResult {
            record,
            range,
            body,
        }))
    }

    /// Streams of stored bytes `start..end` of a version (sealed, if it is encrypted): from
    /// its tier, its inline chunks, or the shard files of the parts the span touches.
    async fn read_stored(
        &self,
        version: &StoredVersion<'_>,
        start: u64,
        end: u64,
    ) -> Result<Vec<ByteStream>, ObjectError> {
        let StoredVersion {
            set,
            bucket_record,
            bucket,
            key,
            record,
            holders,
            records,
        } = *version;
        if let Some(location) = &record.tier {
            return Ok(vec![self.read_from_tier(location, start, end).await?]);
        }
        if record.inline {
            let chunk_key = inline_key(bucket.as_str(), key.as_str(), record.data_id);
            // Read with the records, unless a version was named.
            let read_with_records: Option<Vec<Option<Vec<u8>>>> = (0..set.width())
                .map(|i| Some(records.related_on(i, &chunk_key)?.map(<[u8]>::to_vec)))
                .collect();
            let chunks = match read_with_records {
                Some(chunks) => chunks,
                None => (set.stored_all(INLINE_CHUNKS, &chunk_key).await)
                    .into_iter()
                    .map(|chunk| chunk.ok().flatten())
                    .collect(),
            };
            let sources = chunks
                .into_iter()
                .zip(holders)
                .map(|(chunk, &holds)| match chunk {
                    Some(bytes) if holds => Some(ShardSource::Inline(Bytes::from(bytes))),
                    _ => None,
                })
                .collect();
            let reader = set
                .part_reader(record.size, sources)?
                .on_damage(self.heal_queue.reporter(bucket, key));
            return Ok(vec![Arc::new(reader).stream_range(start, end)]);
        }
        let dir = DataDir {
            bucket_id: bucket_record.id.clone(),
            data_id: record.data_id,
        };
        // The parts the span touches, and what of each.
        let mut spans = Vec::new();
        let mut part_start = 0u64;
        for part in &record.parts {
            let part_end = part_start + part.size;
            if part.size > 0 && part_end > start && part_start < end {
                spans.push(PartSpan {
                    file: part.file.clone(),
                    size: part.size,
                    start: start.max(part_start) - part_start,
                    end: end.min(part_end) - part_start,
                });
            }
            part_start = part_end;
        }
        // A holder that answered for the record and has no shard file lost it.
        let vouched = (holders.iter().zip(records))
            .map(|(&holds, record)| holds && record.is_ok())
            .collect();
        let report = Arc::new(self.heal_queue.reporter(bucket, key));
        let stream = set.stream_spans(dir, spans, (holders.to_vec(), vouched), report);
        Ok(vec![stream])
    }

    /// Deletes a key if `only_if` allows it of its current version, judged on the agreed
    /// records and committed conditionally on them: expiry must not delete an object
    /// overwritten since it was judged, nor a client's conditional delete one that changed.
    /// In a versioned bucket the delete is a delete marker. Returns whether it deleted
    /// anything.
    ///
    /// An unversioned key is deleted as it is overwritten: by a tombstone that keeps the
    /// version it replaced, committed like any version. Removing the record outright would
    /// let a delete that misses its quorum be seen before it is undone (readers take a key
    /// for absent once enough drives lack it), and seen again after a retry: a reader could
    /// find the object gone, then back. The tombstone is taken away a moment after every
    /// drive took it, else by heal (readers skip it meanwhile).
    pub async fn delete_object_if(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
        only_if: &DeleteIf,
    ) -> Result<bool, ObjectError> {
        let bucket_record = self.bucket(bucket).await?;
        if let Some(mode) = bucket_record.settings.versioning {
            let marked = self
                .add_delete_marker(bucket, &bucket_record, key, mode, only_if)
                .await?;
            return Ok(marked.delete_marker);
        }
        let (set, _writing) = self.set_for(bucket, key).await?;
        retry_conflicts(|| async {
            let guard = self.locks.write(bucket.as_str(), key.as_str()).await;
            let current = read_records(set, bucket.as_str(), key.as_str()).await;
            let agreed = match agree_on_version(set, &current) {
                Ok(Agreement::Found { value, .. }) if !value.delete_marker => {
                    if !only_if.allows(Some(&value))? {
                        return Ok(false);
                    }
                    Some(Some(value))
                }
                Ok(agreed) => {
                    let holds_key = matches!(agreed, Agreement::Found { .. });
                    self.not_moved_away(set, bucket.as_str(), key.as_str(), holds_key)?;
                    only_if.allows(None)?;
                    return Ok(false);
                }
                // Drives that agree on nothing each keep what they hold under the tombstone;
                // a delete that must judge what it deletes cannot go ahead.
                Err(e) if !only_if.is_unconditional() => return Err(e),
                Err(_) => None,
            };
            let tombstone = delete_marker(None, set);
            let version = NewVersion {
                record: &tombstone,
                inline: None,
                data_holders: None,
                extra: Vec::new(),
                decided_on: Vec::new(),
                condition: None,
            };
            let took =
                commit_over(set, &bucket_record, key, &current, agreed.clone(), &version).await?;
            let agreed = agreed.flatten();
            if let (Some(replaced), true) = (&agreed, took == set.width()) {
                // Not waited for: the delete answers after one commit.
                let removal = tombstone_removal(&bucket_record, key, &tombstone, replaced.clone());
                set.apply_all_later(removal);
            }
            drop(guard);
            let replaced = replaced_versions(&current, agreed.as_ref(), Some(tombstone.data_id));
            self.delete_data(set, &bucket_record, replaced).await;
            Ok(true)
        })
        .await
    }
}

/// What takes a committed tombstone (written over `replaced` on every drive) away, with the
/// inline chunks of the version it replaced. A drive where a later write replaced it keeps
/// that; one that misses this keeps the tombstone until heal removes it.
pub(crate) fn tombstone_removal(
    bucket: &BucketRecord,
    key: &ObjectKey,
    tombstone: &ObjectRecord,
    mut replaced: ObjectRecord,
) -> Vec<Change> {
    let db_key = object_key(&bucket.name, key.as_str());
    replaced.superseded = None;
    let mut held = tombstone.clone();
    held.superseded = Some(Box::new(replaced.clone()));
    let mut ops = vec![
        OBJECTS.expect_record(db_key.clone(), &held),
        OBJECTS.delete(db_key),
    ];
    ops.extend(dropped_inline_chunks(
        &bucket.name,
        key.as_str(),
        std::iter::once(&replaced),
        |_| false,
    ));
    ops
}

/// Writes `version` over the records drives hold now (`current`, read under the key's write
/// lock). Every drive keeps the version the set agreed on (`agreed`: `Some(None)` when the key
/// did not exist) as `superseded`, so a commit cut short leaves that version readable — even
/// on drives whose own record is a write that never reached quorum. When the drives agree on
/// nothing, each keeps its own record instead. Answers how many drives took it.
async fn commit_over(
    set: &RecordSet,
    bucket: &BucketRecord,
    key: &ObjectKey,
    current: &DriveRecords,
    agreed: Option<Option<ObjectRecord>>,
    version: &NewVersion<'_>,
) -> Result<usize, ObjectError> {
    let batches = batches_over(bucket, key, current, agreed.as_ref(), version);
    let basis = (current, agreed.as_ref().map(Option::as_ref));
    let (data_holders, decided_on) = (&version.data_holders, &version.decided_on);
    commit_on_records(set, batches, basis, data_holders.as_deref(), decided_on).await
}

/// Each drive's batch of [`commit_over`], unguarded (`None`: leave the drive out).
pub(crate) fn batches_over(
    bucket: &BucketRecord,
    key: &ObjectKey,
    current: &DriveRecords,
    agreed: Option<&Option<ObjectRecord>>,
    version: &NewVersion<'_>,
) -> Vec<Option<Vec<Change>>> {
    let NewVersion {
        record,
        inline,
        extra,
        ..
    } = version;
    let db_key = object_key(&bucket.name, key.as_str());
    current
        .iter()
        .enumerate()
        .map(|(i, held)| {
            let held = held_for_commit(held)?;
            let mut new = (*record).clone();
            let mut ops = Vec::new();
            let replaced = match agreed {
                Some(agreed) => agreed.clone(),
                None => held.cloned(),
            }
            .map(|mut replaced| {
                replaced.superseded = None;
                replaced
            });
            // What this drive held, other than the version kept and the new one, goes.
            let kept = |data_id| {
                data_id == record.data_id || replaced.as_ref().is_some_and(|r| r.data_id == data_id)
            };
            let held_versions = held.into_iter().flat_map(ObjectRecord::with_superseded);
            ops.extend(dropped_inline_chunks(
                &bucket.name,
                key.as_str(),
                held_versions,
                kept,
            ));
            new.superseded = replaced.map(Box::new);
            ops.push(OBJECTS.put(db_key.clone(), &new));
            if let Some(chunks) = inline {
                ops.push(INLINE_CHUNKS.put_stored(
                    inline_key(&bucket.name, key.as_str(), record.data_id),
                    chunks[i].to_vec(),
                ));
            }
            ops.extend(extra.iter().cloned());
            Some(ops)
        })
        .collect()
}

/// A body written to staging and checked against what the client announced.
pub(crate) struct VerifiedWrite {
    pub outcome: WriteOutcome,
    pub md5: [u8; 16],
    pub checksum: Option<StoredChecksum>,
}

/// Writes a body through an erasure set while a thread beside it hashes every block, then
/// checks Content-MD5 and the flexible checksum; on a mismatch the staged data is removed.
pub(crate) async fn write_verified(
    md5: &Md5Lanes,
    set: &RecordSet,
    body: ByteStream,
    file_name: &str,
    inline_limit: usize,
    options: &PutOptions,
    seal_with: Option<&crate::encryption::PackageKey>,
) -> Result<VerifiedWrite, ObjectError> {
    let (tap, digests) = hashing::start(md5, options.checksum.as_ref().map(|c| c.algorithm()));
    let outcome = match seal_with {
        None => set.write_stream(body, file_name, inline_limit, tap).await?,
        Some(key) => {
            // Digests are the plaintext's: taken before sealing. The sealed blocks go to no
            // tap (a sender nobody reads is dropped at once).
            let sealed = encrypt_stream(key, hashing::tapped(body, tap));
            let (unread, _) = tokio::sync::mpsc::channel(1);
            set.write_stream(sealed, file_name, inline_limit, unread)
                .await?
        }
    };
    let digests = digests
        .await
        .ok()
        .flatten()
        .ok_or_else(|| ObjectError::Internal("the hashing task stopped".into()))?;
    let checked = if options.content_md5.is_some_and(|m| m != digests.md5) {
        Err(ObjectError::BadDigest)
    } else {
        match (&options.checksum, &digests.checksum) {
            (Some(expected), Some(computed)) => expected.check(computed).map(Some),
            _ => Ok(None),
        }
    };
    match checked {
        Ok(checksum) => Ok(VerifiedWrite {
            outcome,
            md5: digests.md5,
            checksum,
        }),
        Err(e) => {
            if let Encoded::Staged { staging, .. } = &outcome.encoded {
                set.remove_staged(*staging).await;
            }
            Err(e)
        }
    }
}

/// How many drives a read of a key's newest version asks for its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// Every drive of the set.
    Every,
    /// A read quorum when those agree: the record alone is wanted (HEAD).
    Record,
    /// A read quorum when those agree and the data is inline or in a tier (a small GET);
    /// every drive when the data is in shard files.
    Data,
}

/// Turns a failed first read into the error it stands for.
fn read_failure(err: std::io::Error) -> ObjectError {
    match err
        .into_inner()
        .map(|inner| inner.downcast::<ErasureError>())
    {
        Some(Ok(erasure)) => ObjectError::from(*erasure),
        Some(Err(other)) => ObjectError::Internal(other.to_string()),
        None => ObjectError::Unavailable(ErasureError::ReadQuorum),
    }
}
