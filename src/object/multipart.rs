//! Multipart uploads: parts are erasure-coded straight into the upload's data folder, which
//! becomes the object's at completion, so completing copies no data.

use std::collections::BTreeMap;
use std::ops::Bound;

use base64::Engine;
use md5::{Digest, Md5};
use uuid::Uuid;

use super::checksum::ChecksumAlgorithm;
use super::commit::commit;
use super::hashing;
use super::objects::place_staged;
use super::record::{
    self, part_key, parts_prefix, upload_key, ObjectRecord, PartInfo, PartRecord, StoredChecksum,
    UploadRecord,
};
use super::{
    now_ms, read_agreed, require_write_quorum, Agreement, BucketName, ObjectError, ObjectKey,
    ObjectStore, PutOptions,
};
use crate::body::ByteStream;
use crate::erasure::{Encoded, ErasureError, ErasureSet};
use crate::storage::{DataDir, MetaOp, MetaTable};

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
}

/// A part as listed in CompleteMultipartUpload.
#[derive(Debug, Clone)]
pub struct CompletedPart {
    pub number: u32,
    pub etag: String,
}

impl ObjectStore {
    pub async fn create_multipart_upload(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
        options: UploadOptions,
    ) -> Result<String, ObjectError> {
        self.bucket(bucket).await?;
        let set = self.set_for(bucket, key);
        let upload_id = Uuid::new_v4().simple().to_string();
        let record = UploadRecord {
            bucket: bucket.to_string(),
            key: key.to_string(),
            initiated_ms: now_ms(),
            data_id: Uuid::new_v4(),
            content_type: options.content_type,
            user_meta: options.user_meta,
            headers: options.headers,
            checksum_algorithm: options.checksum_algorithm,
        };
        let results = set
            .meta_apply_all(vec![MetaOp::Put {
                table: MetaTable::Uploads,
                key: upload_key(bucket.as_str(), key.as_str(), &upload_id),
                value: record::encode(&record),
            }])
            .await;
        require_write_quorum(set, &results)?;
        Ok(upload_id)
    }

    async fn upload(
        &self,
        set: &ErasureSet,
        bucket: &BucketName,
        key: &ObjectKey,
        upload_id: &str,
    ) -> Result<UploadRecord, ObjectError> {
        let db_key = upload_key(bucket.as_str(), key.as_str(), upload_id);
        match read_agreed(set, MetaTable::Uploads, &db_key, |u: &UploadRecord| {
            u.data_id
        })
        .await?
        {
            Agreement::Found { value, .. } => Ok(value),
            Agreement::NotFound => Err(ObjectError::NoSuchUpload),
        }
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
        if !(1..=MAX_PART_NUMBER).contains(&number) {
            return Err(ObjectError::InvalidArgument(
                "Part number must be an integer between 1 and 10000, inclusive".into(),
            ));
        }
        let bucket_record = self.bucket(bucket).await?;
        let set = self.set_for(bucket, key);
        let upload = self.upload(set, bucket, key, upload_id).await?;
        // A fresh file name per upload of a part: a part sent twice at once can never mix
        // shards of both attempts.
        let file = format!("part.{number}.{}", Uuid::new_v4().simple());
        let (tap, digests) = hashing::start(options.checksum.as_ref().map(|c| c.algorithm()));
        // Parts are never inline: they must end up in the upload's data folder.
        let outcome = set.write_stream(body, &file, 0, tap).await?;
        let digests = digests
            .await
            .map_err(|e| ObjectError::Internal(e.to_string()))?;
        let staged = match outcome.encoded {
            Encoded::Staged { staging, holders } => Some((staging, holders)),
            Encoded::Inline(_) => None,
        };
        let checked = (|| {
            if options.content_md5.is_some_and(|m| m != digests.md5) {
                return Err(ObjectError::BadDigest);
            }
            match (&options.checksum, &digests.checksum) {
                (Some(expected), Some(computed)) => expected.check(computed).map(Some),
                _ => Ok(None),
            }
        })();
        let checksum = match checked {
            Ok(checksum) => checksum,
            Err(e) => {
                if let Some((staging, _)) = staged {
                    set.remove_staged(staging).await;
                }
                return Err(e);
            }
        };

        let dir = DataDir {
            bucket_id: bucket_record.id.clone(),
            data_id: upload.data_id,
        };
        if let Some((staging, holders)) = &staged {
            place_staged(set, *staging, holders, &dir).await?;
        }
        let info = PartInfo {
            number,
            size: outcome.size,
            etag: hex::encode(digests.md5),
            file: if staged.is_some() {
                file
            } else {
                String::new()
            },
            checksum,
        };
        let part = PartRecord {
            info: info.clone(),
            modified_ms: now_ms(),
        };
        let db_key = part_key(upload_id, number);
        let ops = vec![MetaOp::Put {
            table: MetaTable::Parts,
            key: db_key.clone(),
            value: record::encode(&part),
        }];
        let lock_name = format!("{upload_id}/{number}");
        let guard = self.locks.write(bucket.as_str(), &lock_name).await;
        let mut replaced: Vec<String> = set
            .meta_get_all(MetaTable::Parts, &db_key)
            .await
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|bytes| record::decode::<PartRecord>(&bytes).ok())
            .map(|p| p.info.file)
            .filter(|f| !f.is_empty() && *f != info.file)
            .collect();
        replaced.sort();
        replaced.dedup();
        let committed = commit(set, vec![Some(ops); set.drives().len()]).await;
        drop(guard);
        if let Err(e) = committed {
            set.delete_data_files(&dir, std::slice::from_ref(&info.file))
                .await;
            return Err(e);
        }
        if !replaced.is_empty() {
            set.delete_data_files(&dir, &replaced).await;
        }
        Ok(info)
    }

    /// The parts of an upload that a read quorum agrees on, by part number.
    async fn stored_parts(
        &self,
        set: &ErasureSet,
        upload_id: &str,
    ) -> Result<BTreeMap<u32, PartInfo>, ObjectError> {
        let prefix = parts_prefix(upload_id);
        let scans = set
            .meta_scan_all(
                MetaTable::Parts,
                Bound::Unbounded,
                &prefix,
                MAX_PART_NUMBER as usize + 1,
            )
            .await;
        if scans.iter().filter(|s| s.is_ok()).count() < set.read_quorum() {
            return Err(ErasureError::ReadQuorum.into());
        }
        let mut copies: BTreeMap<u32, Vec<PartInfo>> = BTreeMap::new();
        for (_, value) in scans.iter().flatten().flatten() {
            if let Ok(part) = record::decode::<PartRecord>(value) {
                copies.entry(part.info.number).or_default().push(part.info);
            }
        }
        let mut parts = BTreeMap::new();
        for (number, copies) in copies {
            let agreed = copies.iter().find(|candidate| {
                copies.iter().filter(|c| c.file == candidate.file).count() >= set.read_quorum()
            });
            if let Some(part) = agreed {
                parts.insert(number, part.clone());
            }
        }
        Ok(parts)
    }

    pub async fn complete_multipart_upload(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
        upload_id: &str,
        requested: &[CompletedPart],
    ) -> Result<ObjectRecord, ObjectError> {
        let bucket_record = self.bucket(bucket).await?;
        let set = self.set_for(bucket, key);
        let upload = self.upload(set, bucket, key, upload_id).await?;
        if requested.windows(2).any(|w| w[0].number >= w[1].number) {
            return Err(ObjectError::InvalidPartOrder);
        }
        let stored = self.stored_parts(set, upload_id).await?;
        let mut parts = Vec::with_capacity(requested.len());
        for wanted in requested {
            let part = stored.get(&wanted.number).ok_or(ObjectError::InvalidPart)?;
            if part.etag != wanted.etag.trim_matches('"').to_ascii_lowercase() {
                return Err(ObjectError::InvalidPart);
            }
            parts.push(part.clone());
        }
        if let Some(small) = parts[..parts.len().saturating_sub(1)]
            .iter()
            .find(|p| p.size < MIN_PART_SIZE)
        {
            return Err(ObjectError::EntityTooSmall(small.number));
        }

        let mut md5s = Md5::new();
        for part in &parts {
            md5s.update(hex::decode(&part.etag).unwrap_or_default());
        }
        let etag = format!("{}-{}", hex::encode(md5s.finalize()), parts.len());
        let record = ObjectRecord {
            size: parts.iter().map(|p| p.size).sum(),
            etag,
            modified_ms: now_ms(),
            data_id: upload.data_id,
            content_type: upload.content_type.clone(),
            user_meta: upload.user_meta.clone(),
            headers: upload.headers.clone(),
            checksum: composite_checksum(upload.checksum_algorithm, &parts),
            data_shards: set.data_shards() as u8,
            parity_shards: set.parity_shards() as u8,
            block_size: set.block_size() as u32,
            inline: false,
            parts: parts.into_iter().filter(|p| p.size > 0).collect(),
            superseded: None,
        };
        let mut extra = vec![MetaOp::Delete {
            table: MetaTable::Uploads,
            key: upload_key(bucket.as_str(), key.as_str(), upload_id),
        }];
        extra.extend(stored.keys().map(|&n| MetaOp::Delete {
            table: MetaTable::Parts,
            key: part_key(upload_id, n),
        }));
        self.commit_version(set, &bucket_record, key, &record, None, extra)
            .await?;
        let unused: Vec<String> = stored
            .values()
            .filter(|p| !p.file.is_empty() && !record.parts.iter().any(|u| u.file == p.file))
            .map(|p| p.file.clone())
            .collect();
        if !unused.is_empty() {
            let dir = DataDir {
                bucket_id: bucket_record.id,
                data_id: upload.data_id,
            };
            set.delete_data_files(&dir, &unused).await;
        }
        Ok(record)
    }

    pub async fn abort_multipart_upload(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
        upload_id: &str,
    ) -> Result<(), ObjectError> {
        let bucket_record = self.bucket(bucket).await?;
        let set = self.set_for(bucket, key);
        let upload = self.upload(set, bucket, key, upload_id).await?;
        let results = set
            .meta_apply_all(vec![
                MetaOp::Delete {
                    table: MetaTable::Uploads,
                    key: upload_key(bucket.as_str(), key.as_str(), upload_id),
                },
                MetaOp::DeletePrefix {
                    table: MetaTable::Parts,
                    prefix: parts_prefix(upload_id),
                },
            ])
            .await;
        require_write_quorum(set, &results)?;
        set.delete_data_dir(&DataDir {
            bucket_id: bucket_record.id,
            data_id: upload.data_id,
        })
        .await;
        Ok(())
    }
}

/// S3's COMPOSITE checksum of a multipart object: the checksum of the concatenated binary
/// part checksums, with the part count appended.
fn composite_checksum(
    algorithm: Option<ChecksumAlgorithm>,
    parts: &[PartInfo],
) -> Option<StoredChecksum> {
    let algorithm = algorithm?;
    let mut hasher = algorithm.hasher();
    for part in parts {
        let value = &part.checksum.as_ref()?.value;
        let raw = base64::engine::general_purpose::STANDARD
            .decode(value)
            .ok()?;
        hasher.update(&raw);
    }
    Some(StoredChecksum {
        algorithm,
        value: format!("{}-{}", hasher.finish_base64(), parts.len()),
    })
}
