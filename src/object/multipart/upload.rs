//! Multipart uploads: parts are erasure-coded straight into the upload's data folder, which
//! becomes the object's at completion, so completing copies no data.
//!
//! The upload record decides, on every server alike: a part commits only on the drives that
//! still hold the open upload as it was read (and the part's record as it was read); a
//! completion and an abort each replace the open upload by its tombstone (see
//! [`UploadEnd`]) on the drives that still hold it, the completion only where every part it
//! takes is still the copy it read. So of a completion, an abort and a part racing through
//! any servers, the commits that could undo each other's work never all reach a write
//! quorum, and data (an aborted upload's folder, a replaced part's file, parts a completion
//! left out) is deleted only after the commit that made it unreferenced won its quorum.
//!
//! Locks within one server only spare it needless conflicts: a part commits under a read lock
//! on its upload and a write lock on its part number; completion and abort take the upload's
//! write lock.

use std::collections::BTreeMap;
use std::ops::Bound;

use uuid::Uuid;

use crate::body::ByteStream;
use crate::erasure::{DataDir, Encoded};
use crate::object::acl::Acl;
use crate::object::at_rest::{self, Encryption};
use crate::object::conditions::WriteCondition;
use crate::object::digest::checksum::{ChecksumAlgorithm, ChecksumType};
use crate::object::digest::hashing::ExpectedChecksum;
use crate::object::digest::parts::{checksum_of_parts, etag_of_parts, sent_checksum_matches};
use crate::object::object_lock::{self, ObjectLock};
use crate::object::objects::{write_verified, NewVersion};
use crate::object::record::{
    part_key, parts_prefix, upload_key, BucketRecord, ObjectRecord, PartInfo, PartRecord,
    StoredChecksum, UploadEnd, UploadRecord, PARTS, UPLOADS,
};
use crate::object::versions::agreed::{agree_on_version, read_records};
use crate::object::versions::versioning::key_versions;
use crate::object::{
    now_ms, retry_conflicts, Agreement, BucketName, ObjectError, ObjectKey, ObjectStore, PutOptions,
};
use crate::records::copies::{Copies, Guard};
use crate::records::{RecordSet, Replica};

/// Smallest size of every part but the last.
pub const MIN_PART_SIZE: u64 = 5 << 20;
/// Largest part number.
pub const MAX_PART_NUMBER: u32 = 10_000;

/// What CreateMultipartUpload stores for the object to be.
#[derive(Debug, Default, Clone)]
pub struct UploadOptions {
    pub content_type: Option<String>,
    pub user_meta: Vec<(String, String)>,
    pub headers: Vec<(String, String)>,
    pub checksum_algorithm: Option<ChecksumAlgorithm>,
    /// `x-amz-checksum-type`; S3's default is COMPOSITE (FULL_OBJECT for CRC64NVME).
    pub checksum_type: Option<ChecksumType>,
    pub tags: Vec<(String, String)>,
    pub storage_class: Option<String>,
    /// Object Lock retention and legal hold for the object to be.
    pub lock: ObjectLock,
    /// The object's ACL, when it is not the bucket owner's alone.
    pub acl: Option<Acl>,
    /// The encryption the request asks for; `None`: the bucket's default, if any.
    pub encryption: Option<Encryption>,
}

/// Part records read from each drive at a time (ListParts, CompleteMultipartUpload).
const PART_BATCH: usize = 1000;

/// A part as listed in CompleteMultipartUpload.
#[derive(Debug, Clone)]
pub struct CompletedPart {
    pub number: u32,
    pub etag: String,
}

/// A part whose shards are in place, before its record is committed.
struct PlacedPart {
    info: PartInfo,
    dir: DataDir,
    /// The drives that hold its shard files; `None` for an empty part (it has none).
    data_holders: Option<Vec<bool>>,
}

/// A part a read quorum agrees on, and the drives that hold it.
struct StoredPart {
    record: PartRecord,
    holders: Vec<bool>,
    /// What each holder holds, as stored: a completion taking the part commits on a drive
    /// only while it still holds exactly that.
    held: Vec<Option<Vec<u8>>>,
}

impl StoredPart {
    /// What drive `i` is asked of a completion that takes this part.
    fn guard(&self, upload_id: &str, i: usize) -> Guard {
        match &self.held[i] {
            Some(bytes) if self.holders[i] => Guard::Expect(vec![PARTS.expect(
                part_key(upload_id, self.record.info.number),
                Some(bytes.clone()),
            )]),
            _ => Guard::LeaveOut,
        }
    }
}

/// What CompleteMultipartUpload asks for.
#[derive(Debug, Clone, Default)]
pub struct CompleteOptions {
    pub parts: Vec<CompletedPart>,
    pub condition: Option<WriteCondition>,
    /// The whole object's checksum as the client computed it, to be checked.
    pub checksum: Option<(ChecksumAlgorithm, String)>,
}

/// One page of ListParts.
#[derive(Debug, Clone)]
pub struct PartsPage {
    pub upload: UploadRecord,
    pub parts: Vec<PartRecord>,
    pub truncated: bool,
}

impl ObjectStore {
    pub async fn create_multipart_upload(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
        options: UploadOptions,
    ) -> Result<(String, UploadRecord), ObjectError> {
        let bucket_record = self.bucket(bucket).await?;
        object_lock::check_allowed(&bucket_record, &options.lock)?;
        let checksum_type = match (options.checksum_algorithm, options.checksum_type) {
            (Some(a), Some(ChecksumType::FullObject)) if !a.combinable() => {
                return Err(ObjectError::InvalidRequest(format!(
                    "The FULL_OBJECT checksum type cannot be used with the {} checksum algorithm.",
                    a.as_str()
                )))
            }
            (Some(ChecksumAlgorithm::Crc64Nvme), Some(ChecksumType::Composite)) => {
                return Err(ObjectError::InvalidRequest(
                    "The COMPOSITE checksum type cannot be used with the CRC64NVME checksum algorithm."
                        .into(),
                ))
            }
            (None, Some(_)) => {
                return Err(ObjectError::InvalidArgument(
                    "x-amz-checksum-type needs x-amz-checksum-algorithm".into(),
                ))
            }
            (_, Some(kind)) => kind,
            (Some(ChecksumAlgorithm::Crc64Nvme), None) => ChecksumType::FullObject,
            (_, None) => ChecksumType::Composite,
        };
        let (set, _writing) = self.set_for(bucket, key).await?;
        // The object key is made now and sealed into the upload; each part reopens it.
        let sealing = self
            .new_key(&bucket_record, key, options.encryption.as_ref())
            .await?;
        // Time-ordered ids list the uploads of one key in the order they were started.
        let upload_id = Uuid::now_v7().simple().to_string();
        let record = UploadRecord {
            bucket: bucket.to_string(),
            key: key.to_string(),
            initiated_ms: now_ms(),
            data_id: Uuid::new_v4(),
            content_type: options.content_type,
            user_meta: options.user_meta,
            headers: options.headers,
            checksum_algorithm: options.checksum_algorithm,
            checksum_type,
            tags: options.tags,
            storage_class: options.storage_class,
            lock: options.lock,
            acl: options.acl,
            sse: sealing.map(|new| new.sse),
            ended: None,
        };
        // A new id: each drive takes the record where it holds none, and one that misses its
        // write quorum is undone, as every record commit is.
        let db_key = upload_key(bucket.as_str(), key.as_str(), &upload_id);
        let batch = vec![
            UPLOADS.expect(db_key.clone(), None),
            UPLOADS.put(db_key, &record),
        ];
        set.commit_guarded(vec![Some(batch); set.width()], &[], None)
            .await?;
        if self.moved_while_upload_opened(set, bucket, key).await? {
            // Best effort: an upload left behind is aborted with the stale ones.
            let aborted = self.abort_multipart_upload(bucket, key, &upload_id).await;
            if let Err(e) = aborted {
                tracing::warn!(%bucket, %key, error = %e, "could not abort an upload opened where its key had left");
            }
            return Err(ObjectError::Moved);
        }
        Ok((upload_id, record))
    }

    /// An upload in progress, or `NoSuchUpload`.
    pub async fn upload_record(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
        upload_id: &str,
    ) -> Result<UploadRecord, ObjectError> {
        self.bucket(bucket).await?;
        self.upload(
            self.set_for_upload(bucket, key, upload_id).await?.0,
            bucket,
            key,
            upload_id,
        )
        .await
    }

    pub(crate) async fn upload(
        &self,
        set: &RecordSet,
        bucket: &BucketName,
        key: &ObjectKey,
        upload_id: &str,
    ) -> Result<UploadRecord, ObjectError> {
        Ok(read_open_upload(set, bucket, key, upload_id).await?.0)
    }

    /// Stores one part; uploading a part number again replaces it.
    pub async fn upload_part(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
        upload_id: &str,
        number: u32,
        body: ByteStream,
        options: PutOptions,
    ) -> Result<PartInfo, ObjectError> {
        let stored = self
            .upload_sealed_part(bucket, key, upload_id, number, body, options)
            .await?;
        Ok(stored.0)
    }

    /// Like [`Self::upload_part`], with the upload's encryption (for the answer to report).
    pub async fn upload_sealed_part(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
        upload_id: &str,
        number: u32,
        body: ByteStream,
        mut options: PutOptions,
    ) -> Result<(PartInfo, Option<crate::encryption::Sse>), ObjectError> {
        if !(1..=MAX_PART_NUMBER).contains(&number) {
            return Err(ObjectError::InvalidArgument(
                "Part number must be an integer between 1 and 10000, inclusive".into(),
            ));
        }
        let bucket_record = self.bucket(bucket).await?;
        let (set, _writing) = self.set_for_upload(bucket, key, upload_id).await?;
        let upload = self.upload(set, bucket, key, upload_id).await?;
        // The object's checksum is made from its parts': every part gets one.
        if options.checksum.is_none() {
            options.checksum = upload.checksum_algorithm.map(ExpectedChecksum::Compute);
        }
        // A fresh file name per upload of a part: a part sent twice at once can never mix
        // shards of both attempts.
        let file = format!("part.{number}.{}", Uuid::new_v4().simple());
        // A part of an encrypted upload is sealed under a key of its own (named by its
        // file); an SSE-C upload's parts each bring the client's key.
        let customer = match &options.encryption {
            Some(Encryption::Customer(key)) => Some(key.clone()),
            _ => None,
        };
        let data_key = self
            .open_sealed(
                bucket.as_str(),
                key.as_str(),
                upload.sse.as_ref(),
                customer.as_deref(),
            )
            .await?;
        let package_key = data_key.as_ref().map(|k| k.part_package_key(&file));
        // Parts are never inline: they must end up in the upload's data folder.
        let written = write_verified(
            &self.md5,
            set,
            body,
            &file,
            0,
            &options,
            package_key.as_ref(),
        )
        .await?;
        let dir = DataDir {
            bucket_id: bucket_record.id.clone(),
            data_id: upload.data_id,
        };
        let (stored_file, data_holders) = match written.outcome.encoded {
            Encoded::Staged { staging, holders } => {
                match set.place_staged(staging, &holders, &dir).await {
                    Ok(placed) => (file, Some(placed)),
                    Err(e) => {
                        // Only this part's file goes: the folder holds the other parts.
                        set.delete_data_files(&dir, std::slice::from_ref(&file))
                            .await;
                        // An abort removes the upload's folder under a part being placed:
                        // that is a missing upload, not missing drives.
                        self.upload(set, bucket, key, upload_id).await?;
                        return Err(e.into());
                    }
                }
            }
            // An empty part has no shards.
            Encoded::Inline(_) => (String::new(), None),
        };
        let placed = PlacedPart {
            info: PartInfo {
                number,
                size: written.outcome.size,
                etag: at_rest::etag_of(upload.sse.as_ref(), &written.md5),
                file: stored_file,
                checksum: written.checksum,
            },
            dir,
            data_holders,
        };
        self.commit_part(set, bucket, key, upload_id, &placed)
            .await?;
        Ok((placed.info, upload.sse))
    }

    /// Commits a placed part's record (retrying while it loses races), then deletes the
    /// files of the copies it replaced; on failure, its own file goes instead.
    async fn commit_part(
        &self,
        set: &RecordSet,
        bucket: &BucketName,
        key: &ObjectKey,
        upload_id: &str,
        placed: &PlacedPart,
    ) -> Result<(), ObjectError> {
        let _upload = self.upload_locks.read(bucket.as_str(), upload_id).await;
        let _part = (self.part_locks)
            .write(upload_id, &placed.info.number.to_string())
            .await;
        let attempt = || commit_part_once(set, bucket, key, upload_id, placed);
        match retry_conflicts(attempt).await {
            Ok(replaced) => {
                if !replaced.is_empty() {
                    set.delete_data_files(&placed.dir, &replaced).await;
                }
                Ok(())
            }
            Err(e) => {
                // Completed or aborted while the part streamed in, or refused: its data has
                // nowhere to go.
                let own_file = std::slice::from_ref(&placed.info.file);
                set.delete_data_files(&placed.dir, own_file).await;
                Err(e)
            }
        }
    }

    /// The parts after part `after` that the set agrees on, a page at a time: each
    /// drive is asked for at most `batch` part records, and only the part numbers every full
    /// page reached are decided (a drive's page that stopped short of a number may hold a copy
    /// of it). Returns them and, when there may be more, the number to read on from.
    async fn stored_parts_after(
        &self,
        set: &RecordSet,
        upload_id: &str,
        after: u32,
        batch: usize,
    ) -> Result<(BTreeMap<u32, StoredPart>, Option<u32>), ObjectError> {
        let prefix = parts_prefix(upload_id);
        let start = match after {
            0 => Bound::Unbounded,
            after => Bound::Excluded(part_key(upload_id, after)),
        };
        let page = (set.scan_records::<PartRecord>(PARTS, start, &prefix, batch)).await?;
        let mut parts = BTreeMap::new();
        for scanned in page.records {
            if let Agreement::Found { value, holders } = scanned.agreed? {
                let stored = StoredPart {
                    record: value,
                    holders,
                    held: scanned.stored,
                };
                parts.insert(stored.record.info.number, stored);
            }
        }
        // The key says how far the page reached, whatever its value holds.
        let more = (page.next.as_deref())
            .and_then(|key| key.split_last_chunk::<4>())
            .map(|(_, number)| u32::from_be_bytes(*number));
        Ok((parts, more))
    }

    /// ListParts: the parts after `marker`, at most `max`.
    pub async fn list_parts(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
        upload_id: &str,
        marker: u32,
        max: usize,
    ) -> Result<PartsPage, ObjectError> {
        self.bucket(bucket).await?;
        let (set, _writing) = self.set_for_upload(bucket, key, upload_id).await?;
        let upload = self.upload(set, bucket, key, upload_id).await?;
        // Pages of part records until one more than asked for is known.
        let mut parts: Vec<PartRecord> = Vec::new();
        let mut after = marker;
        while parts.len() <= max {
            let batch = (max + 1 - parts.len()).clamp(1, PART_BATCH);
            let (page, more) = self
                .stored_parts_after(set, upload_id, after, batch)
                .await?;
            parts.extend(page.into_values().map(|stored| stored.record));
            match more {
                Some(next) => after = next,
                None => break,
            }
        }
        let truncated = parts.len() > max;
        parts.truncate(max);
        Ok(PartsPage {
            upload,
            parts,
            truncated,
        })
    }

    pub async fn complete_multipart_upload(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
        upload_id: &str,
        options: CompleteOptions,
    ) -> Result<ObjectRecord, ObjectError> {
        let bucket_record = self.bucket(bucket).await?;
        let (set, _writing) = self.set_for_upload(bucket, key, upload_id).await?;
        let _upload_lock = self.upload_locks.write(bucket.as_str(), upload_id).await;
        let attempt =
            || self.complete_once(set, (bucket, &bucket_record), key, upload_id, &options);
        let (record, unused) = retry_conflicts(attempt).await?;
        let dir = DataDir {
            bucket_id: bucket_record.id.clone(),
            data_id: record.data_id,
        };
        if !unused.is_empty() {
            set.delete_data_files(&dir, &unused).await;
        }
        take_away_tombstone(set, &upload_key(bucket.as_str(), key.as_str(), upload_id)).await;
        Ok(record)
    }

    /// One try of a completion: commits the object's version together with the upload's
    /// tombstone, on the drives that still hold the open upload and every part taken as they
    /// were read. Answers the new version and the files of the parts it left out.
    async fn complete_once(
        &self,
        set: &RecordSet,
        (bucket, bucket_record): (&BucketName, &BucketRecord),
        key: &ObjectKey,
        upload_id: &str,
        options: &CompleteOptions,
    ) -> Result<(ObjectRecord, Vec<String>), ObjectError> {
        let (upload, upload_copies) = match read_open_upload(set, bucket, key, upload_id).await {
            Err(ObjectError::NoSuchUpload) => {
                // Completed already? A retry with the same parts gets the same answer.
                let done = self.completed_by(set, bucket_record, key, upload_id, &options.parts);
                let record = done.await?.ok_or(ObjectError::NoSuchUpload)?;
                return Ok((record, Vec::new()));
            }
            other => other?,
        };
        let requested = &options.parts;
        if requested.windows(2).any(|w| w[0].number >= w[1].number) {
            return Err(ObjectError::InvalidPartOrder);
        }
        let mut parts = Vec::with_capacity(requested.len());
        // The drives that hold every part's shards: only they take the object's record.
        let mut data_holders: Option<Vec<bool>> = None;
        // Each drive takes the completion only where it holds the open upload and every part
        // taken as read: a part committed again, or an abort, meanwhile makes it refuse.
        let mut decided_on: Vec<Guard> = (0..set.width())
            .map(|i| upload_copies.guard_holding(i, &upload))
            .collect();
        // Every part record of the upload the pages reached, by number, with its file.
        let mut seen: BTreeMap<u32, String> = BTreeMap::new();
        // The requested parts are in ascending order: part records are read a page at a
        // time as the list reaches them.
        let (mut stored, mut more) = (BTreeMap::new(), Some(0));
        for wanted in requested {
            while let Some(after) = more.filter(|_| !stored.contains_key(&wanted.number)) {
                if after >= wanted.number {
                    break;
                }
                let page = self.stored_parts_after(set, upload_id, after, PART_BATCH);
                let (page, next) = page.await?;
                stored = page;
                more = next;
                let files = stored.iter().map(|(&n, p)| (n, p.record.info.file.clone()));
                seen.extend(files);
            }
            let part: &StoredPart = stored.get(&wanted.number).ok_or(ObjectError::InvalidPart)?;
            if part.record.info.etag != wanted.etag.trim_matches('"').to_ascii_lowercase() {
                return Err(ObjectError::InvalidPart);
            }
            if !part.record.info.file.is_empty() {
                let all = data_holders.get_or_insert_with(|| vec![true; part.holders.len()]);
                for (holds_all, &holds) in all.iter_mut().zip(&part.holders) {
                    *holds_all &= holds;
                }
            }
            for (i, guard) in decided_on.iter_mut().enumerate() {
                let taken = std::mem::replace(guard, Guard::LeaveOut);
                *guard = taken.and(part.guard(upload_id, i));
            }
            parts.push(part.record.info.clone());
        }
        // The parts after the last one requested are the completion's to remove too.
        while let Some(after) = more {
            let (page, next) = self
                .stored_parts_after(set, upload_id, after, PART_BATCH)
                .await?;
            seen.extend(page.iter().map(|(&n, p)| (n, p.record.info.file.clone())));
            more = next;
        }
        // Sizes and checksums are the plaintext's; the record keeps the parts as stored.
        let plain_parts: Vec<PartInfo> = parts
            .iter()
            .map(|part| PartInfo {
                size: upload.part_content_length(part),
                ..part.clone()
            })
            .collect();
        if let Some(small) = plain_parts[..plain_parts.len().saturating_sub(1)]
            .iter()
            .find(|p| p.size < MIN_PART_SIZE)
        {
            return Err(ObjectError::EntityTooSmall(small.number));
        }
        let checksum = object_checksum(&upload, &plain_parts);
        if let Some((algorithm, sent)) = &options.checksum {
            if !sent_checksum_matches(*algorithm, sent, checksum.as_ref(), &plain_parts) {
                return Err(ObjectError::ChecksumMismatch(*algorithm));
            }
        }

        let record = ObjectRecord {
            size: parts.iter().map(|p| p.size).sum(),
            etag: etag_of_parts(&parts),
            modified_ms: now_ms(),
            data_id: upload.data_id,
            content_type: upload.content_type.clone(),
            user_meta: upload.user_meta.clone(),
            headers: upload.headers.clone(),
            checksum,
            tags: upload.tags.clone(),
            storage_class: upload.storage_class.clone(),
            revision: 0,
            data_shards: set.data_shards() as u8,
            parity_shards: set.parity_shards() as u8,
            block_size: set.block_size() as u32,
            inline: false,
            parts,
            superseded: None,
            version_id: crate::object::versions::versioning::version_id_for(
                bucket_record.settings.versioning,
            ),
            delete_marker: false,
            tier: None,
            lock: upload.lock,
            upload_id: Some(upload_id.to_string()),
            acl: upload.acl.clone(),
            sse: upload.sse.clone(),
            renamed_by: None,
            lent_data: None,
            data_from: None,
            pool_moves: 0,
        };
        let mut extra = vec![UPLOADS.put(
            upload_key(bucket.as_str(), key.as_str(), upload_id),
            &upload.ended(UploadEnd::Completed),
        )];
        extra.extend(seen.keys().map(|&n| PARTS.delete(part_key(upload_id, n))));
        let version = NewVersion {
            record: &record,
            inline: None,
            data_holders,
            extra,
            decided_on,
            condition: options.condition.as_ref(),
        };
        self.commit_version_once(set, bucket_record, key, &version)
            .await?;
        let unused: Vec<String> = (seen.into_values())
            .filter(|f| !f.is_empty() && !record.parts.iter().any(|u| u.file == *f))
            .collect();
        Ok((record, unused))
    }

    /// The version of `key` that completing `upload_id` with `parts` made, if it is still
    /// there.
    async fn completed_by(
        &self,
        set: &RecordSet,
        bucket: &BucketRecord,
        key: &ObjectKey,
        upload_id: &str,
        parts: &[CompletedPart],
    ) -> Result<Option<ObjectRecord>, ObjectError> {
        let same_parts = |record: &ObjectRecord| {
            record.parts.len() == parts.len()
                && record.parts.iter().zip(parts).all(|(stored, asked)| {
                    stored.number == asked.number
                        && stored.etag == asked.etag.trim_matches('"').to_ascii_lowercase()
                })
        };
        let made_here = |record: &ObjectRecord| {
            record.upload_id.as_deref() == Some(upload_id) && same_parts(record)
        };
        if bucket.settings.versioning.is_some() {
            let current = key_versions(set, &bucket.name, key.as_str()).await?;
            return Ok(current.versions.into_iter().find(made_here));
        }
        let records = read_records(set, &bucket.name, key.as_str()).await;
        Ok(match agree_on_version(set, &records)? {
            Agreement::Found { value, .. } if made_here(&value) => Some(value),
            _ => None,
        })
    }

    pub async fn abort_multipart_upload(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
        upload_id: &str,
    ) -> Result<(), ObjectError> {
        let bucket_record = self.bucket(bucket).await?;
        let (set, _writing) = self.set_for_upload(bucket, key, upload_id).await?;
        let _upload_lock = self.upload_locks.write(bucket.as_str(), upload_id).await;
        let db_key = upload_key(bucket.as_str(), key.as_str(), upload_id);
        let attempt = || async {
            let (upload, copies) = read_open_upload(set, bucket, key, upload_id).await?;
            let tombstone = UPLOADS.put(db_key.clone(), &upload.ended(UploadEnd::Aborted));
            let guards: Vec<Guard> = (0..set.width())
                .map(|i| copies.guard_holding(i, &upload))
                .collect();
            set.commit_guarded(vec![Some(vec![tombstone]); set.width()], &guards, None)
                .await?;
            Ok(upload)
        };
        let upload = retry_conflicts(attempt).await?;
        // The abort won: no part or completion can commit to the upload any more.
        set.apply_all(vec![PARTS.delete_prefix(parts_prefix(upload_id))])
            .await;
        set.delete_data_dir(&DataDir {
            bucket_id: bucket_record.id,
            data_id: upload.data_id,
        })
        .await;
        take_away_tombstone(set, &db_key).await;
        Ok(())
    }
}

/// The open upload the drives of its set agree on, and each drive's copy (for the guards
/// of a commit decided on it); `NoSuchUpload` when there is none or it has ended.
async fn read_open_upload(
    set: &RecordSet,
    bucket: &BucketName,
    key: &ObjectKey,
    upload_id: &str,
) -> Result<(UploadRecord, Copies<UploadRecord>), ObjectError> {
    let db_key = upload_key(bucket.as_str(), key.as_str(), upload_id);
    let copies = Copies::<UploadRecord>::read(set, UPLOADS, db_key).await;
    match set.agree(&copies)? {
        Agreement::Found { value, .. } if value.ended.is_none() => Ok((value, copies)),
        _ => Err(ObjectError::NoSuchUpload),
    }
}

/// One try of a part's commit: its record goes to the drives that hold its shards, the open
/// upload and the part's record as read. Answers the files of the copies it replaced, which
/// nothing can take any more once it won.
async fn commit_part_once(
    set: &RecordSet,
    bucket: &BucketName,
    key: &ObjectKey,
    upload_id: &str,
    placed: &PlacedPart,
) -> Result<Vec<String>, ObjectError> {
    let PlacedPart {
        info, data_holders, ..
    } = placed;
    let (upload, upload_copies) = read_open_upload(set, bucket, key, upload_id).await?;
    let db_key = part_key(upload_id, info.number);
    let earlier = Copies::<PartRecord>::read(set, PARTS, db_key.clone()).await;
    let agreed = match set.agree(&earlier) {
        Ok(Agreement::Found { value, .. }) => Some(value),
        _ => None,
    };
    let guards: Vec<Guard> = (0..set.width())
        .map(|i| {
            let upload = upload_copies.guard_holding(i, &upload);
            upload.and(earlier.guard_on(set, i, agreed.as_ref()))
        })
        .collect();
    let part = PartRecord {
        info: info.clone(),
        modified_ms: now_ms(),
    };
    let put = PARTS.put(db_key, &part);
    // Only the drives holding the part's shards take its record.
    let batches = vec![Some(vec![put]); set.width()];
    set.commit_guarded(batches, &guards, data_holders.as_deref())
        .await?;
    // Only the copies the decision accounted for: another node's commit of this part in
    // flight names a file that node may still commit, on a retry.
    let settled = (earlier.iter().enumerate())
        .filter(|(i, _)| earlier.settled_on(*i, agreed.as_ref()))
        .map(|(_, copy)| copy);
    let mut replaced: Vec<String> = (settled.flatten().flatten())
        .map(|p| p.info.file.clone())
        .filter(|f| !f.is_empty() && *f != info.file)
        .collect();
    replaced.sort();
    replaced.dedup();
    Ok(replaced)
}

/// Takes an ended upload's tombstone away, with any part records left, once every drive
/// holds the same one (see [`UploadEnd`]); otherwise heal spreads it first.
pub(crate) async fn take_away_tombstone(set: &RecordSet, db_key: &[u8]) {
    let copies = Copies::<UploadRecord>::read(set, UPLOADS, db_key.to_vec()).await;
    let Some(Ok(Some(tombstone))) = copies.first() else {
        return;
    };
    let everywhere = copies.iter().all(
        |copy| matches!(copy, Ok(Some(held)) if held.ended.is_some() && held.is_current(tombstone)),
    );
    if !everywhere {
        return;
    }
    let parts = parts_prefix(&split_upload_id(db_key));
    let batches = (0..set.width())
        .map(|i| {
            let held = copies.unchanged_on(i)?;
            Some(vec![
                held,
                UPLOADS.delete(db_key.to_vec()),
                PARTS.delete_prefix(parts.clone()),
            ])
        })
        .collect();
    set.apply_each(batches).await;
}

/// The upload id at the end of an upload's database key (after its last NUL).
fn split_upload_id(db_key: &[u8]) -> String {
    let id = db_key.rsplit(|&b| b == 0).next().unwrap_or_default();
    String::from_utf8_lossy(id).into_owned()
}

/// The checksum of a completed upload's object, of the algorithm and type it was created with.
fn object_checksum(upload: &UploadRecord, parts: &[PartInfo]) -> Option<StoredChecksum> {
    checksum_of_parts(upload.checksum_algorithm?, upload.checksum_type, parts)
}
