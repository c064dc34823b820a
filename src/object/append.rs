//! Appends (`PutObject` with `x-amz-write-offset-bytes`): bytes added at the end of an
//! object as a new segment, without rewriting what is there.
//!
//! An appended object is stored like a multipart object: its parts are the segments, in
//! order. An append makes a new version whose data folder hard-links the shard files of
//! the version appended to and adds one new part file, erasure-coded and checksummed like
//! any part. The commit is conditional on the version appended to (its data id and
//! revision), so of two appends racing at one offset exactly one wins; the other finds a
//! version of another size and is answered `InvalidWriteOffset`. In an unversioned bucket
//! the new version replaces the old one (whose folder goes, its files living on in the new
//! folder); in a versioned bucket every append is a new version, and the older ones stay
//! readable, sharing their bytes with the newer ones on disk.

use bytes::Bytes;
use futures::StreamExt;
use uuid::Uuid;

use super::at_rest::{self, Encryption};
use super::conditions::WriteCondition;
use super::object_lock::ObjectLock;
use super::objects::{write_verified, GetOptions, NewVersion, PutOptions};
use super::record::{BucketRecord, ObjectRecord, PartInfo, SINGLE_PUT_FILE};
use super::{now_ms, Agreement, BucketName, ObjectError, ObjectKey, ObjectStore};
use crate::body::ByteStream;
use crate::encryption::{CustomerKey, SseKind};
use crate::erasure::{DataDir, Encoded};
use crate::object::digest::checksum::ChecksumType;
use crate::object::digest::hashing::ExpectedChecksum;
use crate::object::digest::parts::{checksum_of_parts, etag_of_parts};
use crate::object::versions::agreed::{agreed_or_conflict, read_records};
use crate::object::versions::versioning::{key_versions, version_id_for};
use crate::records::RecordSet;

/// The most segments an object may have, as on S3: past it, the client must rewrite the
/// object (a copy makes it one segment again).
pub const MAX_SEGMENTS: usize = 10_000;

/// The version an append goes onto, and the drives that hold its data.
struct Appended {
    version: ObjectRecord,
    holders: Vec<bool>,
}

/// The data folder of the version an append makes, before its segment is placed.
struct Carried {
    dir: DataDir,
    /// The parts already there: the old version's.
    parts: Vec<PartInfo>,
    /// The drives that hold them.
    holders: Vec<bool>,
    /// Whether the folder is the old version's own (the new version is a new revision of it).
    in_place: bool,
}

impl ObjectStore {
    /// Appends `body` to `key` at `offset`, which must be the object's size (0 with no
    /// object makes one, as a PUT). `options` gives the segment's checksum, Content-MD5, the
    /// client's own condition and an SSE-C object's key; the object keeps its metadata.
    /// Answers the new version.
    pub async fn append_object(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
        offset: u64,
        body: ByteStream,
        mut options: PutOptions,
    ) -> Result<ObjectRecord, ObjectError> {
        let bucket_record = self.bucket(bucket).await?;
        let (set, _writing) = self.set_for(bucket, key).await?;
        let current = current_version(set, &bucket_record, key).await?;
        if let Some(condition) = &options.condition {
            condition.check(current.as_ref().map(|c| &c.version))?;
        }
        let Some(current) = current else {
            if offset != 0 {
                return Err(ObjectError::InvalidWriteOffset);
            }
            options.condition = Some(WriteCondition::Appends(None));
            return self.put_object(bucket, key, body, options).await;
        };
        let version = &current.version;
        if version.content_length() != offset {
            return Err(ObjectError::InvalidWriteOffset);
        }
        if version.tier.is_some() {
            return Err(ObjectError::NotImplemented(
                "appending to a version whose data is in a tier".into(),
            ));
        }
        if version.parts.len().max(1) >= MAX_SEGMENTS {
            return Err(ObjectError::TooManyParts);
        }
        let customer = customer_key(options.encryption.as_ref(), version)?;
        let data_key = self
            .open_key(bucket.as_str(), key.as_str(), version, customer)
            .await?;
        options.checksum = segment_checksum(options.checksum.take(), version)?;

        let number = version.parts.last().map_or(1, |p| p.number) + 1;
        let file = format!("part.{number}.{}", Uuid::new_v4().simple());
        let package_key = data_key.as_ref().map(|k| k.part_package_key(&file));
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
        let Encoded::Staged { staging, holders } = written.outcome.encoded else {
            // Nothing to append: the object stays as it is.
            return Ok(current.version);
        };
        let segment = PartInfo {
            number,
            size: written.outcome.size,
            etag: at_rest::etag_of(version.sse.as_ref(), &written.md5),
            file,
            checksum: written.checksum,
        };
        let carried = match self
            .carry_data(set, (bucket, &bucket_record), key, &current)
            .await
        {
            Ok(carried) => carried,
            Err(e) => {
                set.remove_staged(staging).await;
                return Err(e);
            }
        };
        // Takes back what this append added, and only that.
        let undo = |carried: &Carried, segment: &PartInfo| {
            let (dir, own_file) = (carried.dir.clone(), [segment.file.clone()]);
            let in_place = carried.in_place;
            async move {
                match in_place {
                    true => set.delete_data_files(&dir, &own_file).await,
                    false => set.delete_data_dir(&dir).await,
                }
            }
        };
        let placed = match set.place_staged(staging, &holders, &carried.dir).await {
            Ok(placed) => placed,
            Err(e) => {
                undo(&carried, &segment).await;
                return Err(e.into());
            }
        };
        let data_holders = (placed.iter().zip(&carried.holders))
            .map(|(&segment, &earlier)| segment && earlier)
            .collect();
        let record = appended_record(&bucket_record, version, &carried, segment.clone());
        let onto = WriteCondition::Appends(Some((version.data_id, version.revision)));
        let committed = self
            .commit_version(
                set,
                &bucket_record,
                key,
                NewVersion {
                    record: &record,
                    inline: None,
                    data_holders: Some(data_holders),
                    extra: Vec::new(),
                    decided_on: Vec::new(),
                    condition: Some(&onto),
                },
            )
            .await;
        if committed.is_err() {
            undo(&carried, &segment).await;
        }
        committed.map(|()| record)
    }

    /// Where the new version's data goes, holding the data of the version appended to. In
    /// an unversioned bucket the new version replaces the old one, and its segment goes into
    /// the same folder (under a name of its own: a losing append removes just its file).
    /// Otherwise both versions stay, so the new one gets a folder of hard links to the old
    /// one's shard files. A small object's inline data is written out as a first part.
    async fn carry_data(
        &self,
        set: &RecordSet,
        (name, bucket): (&BucketName, &BucketRecord),
        key: &ObjectKey,
        current: &Appended,
    ) -> Result<Carried, ObjectError> {
        let version = &current.version;
        let old_dir = DataDir {
            bucket_id: bucket.id.clone(),
            data_id: version.data_id,
        };
        let new_dir = DataDir {
            bucket_id: bucket.id.clone(),
            data_id: Uuid::new_v4(),
        };
        if !version.inline && bucket.settings.versioning.is_none() {
            return Ok(Carried {
                dir: old_dir,
                parts: version.parts.clone(),
                holders: current.holders.clone(),
                in_place: true,
            });
        }
        if !version.inline {
            let holders = set
                .link_data_dir(&old_dir, &new_dir, &current.holders)
                .await;
            return Ok(Carried {
                dir: new_dir,
                parts: version.parts.clone(),
                holders,
                in_place: false,
            });
        }
        if version.size == 0 {
            return Ok(Carried {
                dir: new_dir,
                parts: Vec::new(),
                holders: vec![true; set.width()],
                in_place: false,
            });
        }
        // At most a few hundred KiB: read whole, as stored (sealed, if it is encrypted).
        let named = bucket.settings.versioning.is_some();
        let read = GetOptions {
            version_id: named.then(|| version.version_id_str().to_string()),
            raw: true,
            ..GetOptions::default()
        };
        let got = self.get_object(name, key, read).await?;
        if !got.record.same_version(version) {
            return Err(ObjectError::InvalidWriteOffset);
        }
        let mut stored = Vec::with_capacity(version.size as usize);
        let mut body = got.body;
        while let Some(chunk) = body.next().await {
            stored.extend_from_slice(&chunk.map_err(|e| ObjectError::Internal(e.to_string()))?);
        }
        let body: ByteStream = Box::pin(futures::stream::once(async {
            Ok::<_, std::io::Error>(Bytes::from(stored))
        }));
        let written = write_verified(
            &self.md5,
            set,
            body,
            SINGLE_PUT_FILE,
            0,
            &PutOptions::default(),
            None,
        )
        .await?;
        let Encoded::Staged { staging, holders } = written.outcome.encoded else {
            return Err(ObjectError::Internal(
                "a non-empty body was not staged".into(),
            ));
        };
        let holders = set.place_staged(staging, &holders, &new_dir).await?;
        let first = PartInfo {
            number: 1,
            size: version.size,
            etag: version.etag.clone(),
            file: SINGLE_PUT_FILE.into(),
            checksum: version.checksum.clone(),
        };
        Ok(Carried {
            dir: new_dir,
            parts: vec![first],
            holders,
            in_place: false,
        })
    }
}

/// The key's current version, if it has one (a delete marker is none), and the drives that
/// hold its data.
async fn current_version(
    set: &RecordSet,
    bucket: &BucketRecord,
    key: &ObjectKey,
) -> Result<Option<Appended>, ObjectError> {
    if bucket.settings.versioning.is_some() {
        let versions = key_versions(set, bucket.name.as_str(), key.as_str()).await?;
        let newest = versions.versions.first().filter(|v| !v.delete_marker);
        return Ok(newest.map(|version| Appended {
            holders: versions.data_holders(version),
            version: version.clone(),
        }));
    }
    let records = read_records(set, bucket.name.as_str(), key.as_str()).await;
    Ok(match agreed_or_conflict(set, &records)? {
        Agreement::Found { value, holders } if !value.delete_marker => Some(Appended {
            version: value,
            holders,
        }),
        _ => None,
    })
}

/// The SSE-C key an append brings for the object's encryption. An append is sealed as the
/// object is: asking for another kind of encryption is refused, not ignored.
fn customer_key<'a>(
    asked: Option<&'a Encryption>,
    version: &ObjectRecord,
) -> Result<Option<&'a CustomerKey>, ObjectError> {
    let stored = version.sse.as_ref().map(|sse| sse.kind());
    match (asked, stored) {
        (Some(Encryption::Customer(key)), _) => Ok(Some(key)),
        (None, _) | (Some(Encryption::S3), Some(SseKind::S3)) => Ok(None),
        (Some(Encryption::Kms { .. }), Some(SseKind::Kms)) => Ok(None),
        (Some(_), _) => Err(ObjectError::InvalidRequest(
            "an append must use the encryption of the object it appends to".into(),
        )),
    }
}

/// The checksum a segment is verified and stored with: the object's algorithm, so that the
/// object's checksum can be extended (the client's value checked when it sends one).
fn segment_checksum(
    sent: Option<ExpectedChecksum>,
    version: &ObjectRecord,
) -> Result<Option<ExpectedChecksum>, ObjectError> {
    let Some(stored) = &version.checksum else {
        return Ok(sent);
    };
    match sent {
        Some(sent) if sent.algorithm() != stored.algorithm => {
            Err(ObjectError::InvalidRequest(format!(
                "the object's checksum is {}: an append must send that algorithm or none",
                stored.algorithm.as_str()
            )))
        }
        Some(sent) => Ok(Some(sent)),
        None => Ok(Some(ExpectedChecksum::Compute(stored.algorithm))),
    }
}

/// The version an append makes: the one appended to, with one more segment and its
/// checksum extended. A full-object CRC stays a full-object CRC of the
/// whole body (the segments' CRCs combine); any other becomes the composite checksum of the
/// segments, as for a multipart object.
fn appended_record(
    bucket: &BucketRecord,
    version: &ObjectRecord,
    carried: &Carried,
    segment: PartInfo,
) -> ObjectRecord {
    let mut parts = carried.parts.clone();
    parts.push(segment);
    let checksum = version.checksum.as_ref().and_then(|stored| {
        let kind = match stored.kind {
            ChecksumType::FullObject if stored.algorithm.combinable() => ChecksumType::FullObject,
            _ => ChecksumType::Composite,
        };
        let plain_parts: Vec<PartInfo> = (parts.iter())
            .map(|part| PartInfo {
                size: version.part_content_length(part),
                ..part.clone()
            })
            .collect();
        checksum_of_parts(stored.algorithm, kind, &plain_parts)
    });
    ObjectRecord {
        size: parts.iter().map(|p| p.size).sum(),
        etag: etag_of_parts(&parts),
        modified_ms: now_ms(),
        data_id: carried.dir.data_id,
        checksum,
        // In its old folder, the new version is a new revision of the old data id.
        revision: if carried.in_place {
            version.revision + 1
        } else {
            0
        },
        inline: false,
        parts,
        superseded: None,
        version_id: version_id_for(bucket.settings.versioning),
        lock: ObjectLock::default(),
        upload_id: None,
        renamed_by: None,
        lent_data: None,
        data_from: None,
        pool_moves: 0,
        ..version.clone()
    }
}
