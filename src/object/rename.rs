//! RenameObject: a version takes a new name in its bucket in one commit, its data left where
//! it is.
//!
//! The source and the destination are two keys of one erasure set, and the rename is one
//! conditional commit over its drives: each drive takes, in one transaction, the
//! destination's new version and the source's removal (a tombstone in an unversioned bucket,
//! a delete marker in a versioned one), and only if it still holds both keys' records as
//! they were read. Racing writers of either key make it read again and retry; a crash leaves
//! the old name or the new one, resolved like any commit cut short.
//!
//! No byte of the data is copied or rewritten, and a small object's inline chunks are
//! carried over in the same transaction. In an unversioned bucket the source's version is
//! gone once the rename wins, so its data folder (or its tier copy) simply passes to the new
//! version: nothing on disk or in the tier changes, and the rename is metadata commits
//! alone. Until every drive agrees, two keys' records may name that data; the tombstone
//! names it as lent (`lent_data`), the new version names where it came from (`data_from`),
//! and neither key deletes it while the other may still hold it (see
//! `ObjectStore::delete_data`). In a versioned bucket both
//! names keep a version of the data, so the new version gets a folder of its own holding
//! hard links to the source's shard files (the file system keeps the bytes while either
//! name refers to them). An encrypted version's object key is re-wrapped for its new name.

use std::sync::Arc;

use bytes::Bytes;
use uuid::Uuid;

use super::commit::{guarded_on_records, guarded_on_versions};
use super::object_lock::{self, ObjectLock};
use super::objects::{batches_over, tombstone_removal, NewVersion};
use super::record::{inline_key, BucketRecord, ObjectRecord, RenameToken, INLINE_CHUNKS};
use super::{now_ms, retry_conflicts, Agreement, BucketName, ObjectError, ObjectKey, ObjectStore};
use crate::encryption::CustomerKey;
use crate::erasure::DataDir;
use crate::object::versions::agreed::{agreed_or_conflict, read_records, replaced_versions};
use crate::object::versions::versioning::{
    delete_marker, key_versions, state_batches, version_id_for, Addition, NewState,
};
use crate::records::commit::together;
use crate::records::RecordSet;

/// A judgement on a version (`None`: no object, or a delete marker): `Err` is the answer.
pub type Judge = dyn Fn(Option<&ObjectRecord>) -> Result<(), ObjectError> + Send + Sync;

/// A client's precondition on a version, judged by S3's rules on the version the drives
/// agree on, atomically with the commit.
#[derive(Clone)]
pub struct Precondition(pub Arc<Judge>);

impl Default for Precondition {
    fn default() -> Self {
        Precondition(Arc::new(|_| Ok(())))
    }
}

impl std::fmt::Debug for Precondition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Precondition(..)")
    }
}

/// How a RenameObject is asked.
#[derive(Debug, Default, Clone)]
pub struct RenameOptions {
    /// `x-amz-rename-source-if-*`: what the source's current version must be.
    pub source_if: Precondition,
    /// `If-Match`, `If-None-Match`, `If-(Un)Modified-Since`: what the destination must be.
    pub destination_if: Precondition,
    /// `x-amz-client-token`: a retry with the same token and source succeeds again without
    /// doing anything.
    pub client_token: Option<String>,
    /// The SSE-C key of an SSE-C source, needed to re-wrap its object key.
    pub customer_key: Option<Arc<CustomerKey>>,
}

/// The version a rename moves, and what the source's drives hold of it.
struct Source {
    version: ObjectRecord,
    holders: Vec<bool>,
}

/// The data of the new version: linked shard files or copied inline chunks, and the drives
/// that hold it (only they take the commit).
struct Carried {
    inline: Option<Vec<Bytes>>,
    holders: Vec<bool>,
    linked: Option<DataDir>,
}

impl ObjectStore {
    /// Renames `source` to `key` in `bucket`: the source's current version becomes the
    /// destination's current version, and the source is deleted as a DELETE would delete it
    /// (a delete marker in a versioned bucket). Both keys must live in one erasure set.
    pub async fn rename_object(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
        source: &ObjectKey,
        options: &RenameOptions,
    ) -> Result<(), ObjectError> {
        let bucket_record = self.bucket(bucket).await?;
        let (set, _writing) = self.set_for(bucket, key).await?;
        let (source_set, _writing_source) = self.set_for(bucket, source).await?;
        if !std::ptr::eq(set, source_set) {
            return Err(ObjectError::NotImplemented(
                "RenameObject between keys of different erasure sets".into(),
            ));
        }
        retry_conflicts(|| self.rename_once(set, &bucket_record, key, source, options)).await
    }

    async fn rename_once(
        &self,
        set: &RecordSet,
        bucket: &BucketRecord,
        key: &ObjectKey,
        source: &ObjectKey,
        options: &RenameOptions,
    ) -> Result<(), ObjectError> {
        let name = bucket.name.as_str();
        let _guards = (self.locks)
            .write_both(name, [key.as_str(), source.as_str()])
            .await;
        match bucket.settings.versioning {
            None => {
                self.rename_unversioned(set, bucket, key, source, options)
                    .await
            }
            Some(_) => {
                self.rename_versioned(set, bucket, key, source, options)
                    .await
            }
        }
    }

    async fn rename_unversioned(
        &self,
        set: &RecordSet,
        bucket: &BucketRecord,
        key: &ObjectKey,
        source: &ObjectKey,
        options: &RenameOptions,
    ) -> Result<(), ObjectError> {
        let name = bucket.name.as_str();
        let (dest_records, src_records) = futures::join!(
            read_records(set, name, key.as_str()),
            read_records(set, name, source.as_str())
        );
        let dest = match agreed_or_conflict(set, &dest_records)? {
            Agreement::Found { value, .. } => Some(value),
            Agreement::NotFound => None,
        };
        let src_agreed = agreed_or_conflict(set, &src_records)?;
        let src_held = !matches!(src_agreed, Agreement::NotFound);
        self.not_moved_away(set, name, key.as_str(), dest.is_some())?;
        self.not_moved_away(set, name, source.as_str(), src_held)?;
        let dest_current = dest.as_ref().filter(|v| !v.delete_marker);
        let src = match src_agreed {
            Agreement::Found { value, holders } if !value.delete_marker => Some(Source {
                version: value,
                holders,
            }),
            _ => None,
        };
        let Some(src) = judge(source, dest_current, src, options)? else {
            return Ok(());
        };
        if key == source {
            return Ok(());
        }
        let mut renamed = self
            .renamed(bucket, key, source, &src.version, options)
            .await?;
        let mut tombstone = delete_marker(None, set);
        if passes_data(bucket, &src.version) {
            // The source's data becomes the destination's: nothing on disk or in a tier
            // changes. A new revision, so that no drive's stale record of either key passes
            // for this one.
            renamed.data_id = src.version.data_id;
            renamed.revision = src.version.revision + 1;
            renamed.data_from = Some(source.as_str().to_string());
            tombstone.lent_data = Some(src.version.data_id);
        }
        let carried = self.carry(set, bucket, source, &src, &renamed).await;

        let new_version = NewVersion {
            record: &renamed,
            inline: carried.inline.clone(),
            data_holders: None,
            extra: Vec::new(),
            decided_on: Vec::new(),
            condition: None,
        };
        let dest_agreed = Some(dest.clone());
        let dest_batches = batches_over(
            bucket,
            key,
            &dest_records,
            dest_agreed.as_ref(),
            &new_version,
        );
        let removal = NewVersion {
            record: &tombstone,
            inline: None,
            data_holders: None,
            extra: Vec::new(),
            decided_on: Vec::new(),
            condition: None,
        };
        let src_agreed = Some(Some(src.version.clone()));
        let src_batches = batches_over(bucket, source, &src_records, src_agreed.as_ref(), &removal);
        let batches = together(
            guarded_on_records(set, dest_batches, (&dest_records, Some(dest.as_ref())), &[]),
            guarded_on_records(
                set,
                src_batches,
                (&src_records, Some(Some(&src.version))),
                &[],
            ),
        );
        let took = self.commit_carried(set, batches, &carried).await?;
        if took == set.width() {
            // Not waited for: the rename answers after one commit, as a PUT does.
            set.apply_all_later(tombstone_removal(
                bucket,
                source,
                &tombstone,
                src.version.clone(),
            ));
        }
        let mut replaced = replaced_versions(&dest_records, dest.as_ref(), Some(renamed.data_id));
        replaced.extend(replaced_versions(
            &src_records,
            Some(&src.version),
            Some(tombstone.data_id),
        ));
        // The data the new version took over stays.
        replaced.retain(|version| version.data_id != renamed.data_id);
        self.delete_data(set, bucket, replaced).await;
        Ok(())
    }

    async fn rename_versioned(
        &self,
        set: &RecordSet,
        bucket: &BucketRecord,
        key: &ObjectKey,
        source: &ObjectKey,
        options: &RenameOptions,
    ) -> Result<(), ObjectError> {
        let name = bucket.name.as_str();
        let (dest_current, src_current) = futures::join!(
            key_versions(set, name, key.as_str()),
            key_versions(set, name, source.as_str())
        );
        let (dest_current, src_current) = (dest_current?, src_current?);
        self.not_moved_away(set, name, key.as_str(), dest_current.holds_key())?;
        self.not_moved_away(set, name, source.as_str(), src_current.holds_key())?;
        let newest =
            |versions: &[ObjectRecord]| versions.first().filter(|v| !v.delete_marker).cloned();
        let src = newest(&src_current.versions).map(|version| Source {
            holders: src_current.data_holders(&version),
            version,
        });
        let dest_newest = newest(&dest_current.versions);
        let Some(src) = judge(source, dest_newest.as_ref(), src, options)? else {
            return Ok(());
        };
        if key == source {
            return Ok(());
        }
        let mode = bucket.settings.versioning;
        let mut renamed = self
            .renamed(bucket, key, source, &src.version, options)
            .await?;
        renamed.version_id = version_id_for(mode);
        object_lock::apply_default(bucket, &mut renamed);
        let carried = self.carry(set, bucket, source, &src, &renamed).await;

        let mut dest_versions = vec![renamed.clone()];
        dest_versions.extend(
            (dest_current.versions.iter())
                .filter(|v| v.version_id.is_some() || renamed.version_id.is_some())
                .cloned(),
        );
        let added = Addition {
            record: &renamed,
            inline: carried.inline.as_deref(),
            data_holders: None,
        };
        let next = NewState {
            versions: dest_versions,
            added: Some(added),
            extra: Vec::new(),
            decided_on: Vec::new(),
        };
        let (dest_batches, dest_versions) = state_batches(bucket, key, &dest_current, next);
        let marker = delete_marker(mode, set);
        let marker_id = marker.version_id.clone();
        let mut src_versions = vec![marker];
        src_versions.extend(
            (src_current.versions.iter())
                .filter(|v| v.version_id.is_some() || marker_id.is_some())
                .cloned(),
        );
        let (src_batches, src_versions) =
            state_batches(bucket, source, &src_current, NewState::of(src_versions));
        let batches = together(
            guarded_on_versions(set, dest_batches, &dest_current, &[]),
            guarded_on_versions(set, src_batches, &src_current, &[]),
        );
        let took = self.commit_carried(set, batches, &carried).await?;
        futures::join!(
            self.settle_versions(set, bucket, key, &dest_current, &dest_versions, took),
            self.settle_versions(set, bucket, source, &src_current, &src_versions, took),
        );
        Ok(())
    }

    /// The destination's new version: the source's, under a new data id, modified now, with
    /// its object key sealed for the new name and no retention of its own yet.
    async fn renamed(
        &self,
        bucket: &BucketRecord,
        key: &ObjectKey,
        source: &ObjectKey,
        version: &ObjectRecord,
        options: &RenameOptions,
    ) -> Result<ObjectRecord, ObjectError> {
        // In an unversioned bucket the tier copy passes to the new name whole; in a
        // versioned one both names would hold it, which deletes do not count yet.
        if version.tier.is_some() && bucket.settings.versioning.is_some() {
            return Err(ObjectError::NotImplemented(
                "RenameObject of a version whose data is in a tier, in a versioned bucket".into(),
            ));
        }
        let name = bucket.name.as_str();
        let sse = self
            .rebind_key(
                version.sse.as_ref(),
                options.customer_key.as_deref(),
                (name, source.as_str()),
                (name, key.as_str()),
            )
            .await?;
        Ok(ObjectRecord {
            data_id: Uuid::new_v4(),
            modified_ms: now_ms(),
            revision: 0,
            superseded: None,
            version_id: None,
            lock: ObjectLock::default(),
            upload_id: None,
            sse,
            lent_data: None,
            data_from: None,
            pool_moves: 0,
            renamed_by: (options.client_token.clone()).map(|client_token| RenameToken {
                client_token,
                source: source.as_str().to_string(),
            }),
            ..version.clone()
        })
    }

    /// Gives the new version the source's data on the drives that hold it: the data as it
    /// is, when it passes whole ([`passes_data`]); else each drive's inline chunk, or hard
    /// links to the shard files.
    async fn carry(
        &self,
        set: &RecordSet,
        bucket: &BucketRecord,
        source: &ObjectKey,
        src: &Source,
        renamed: &ObjectRecord,
    ) -> Carried {
        if passes_data(bucket, &src.version) {
            return Carried {
                inline: None,
                holders: src.holders.clone(),
                linked: None,
            };
        }
        if src.version.inline {
            let chunk_key = inline_key(&bucket.name, source.as_str(), src.version.data_id);
            let chunks = set.stored_all(INLINE_CHUNKS, &chunk_key).await;
            let holders = (chunks.iter().zip(&src.holders))
                .map(|(chunk, &holds)| holds && matches!(chunk, Ok(Some(_))))
                .collect();
            let inline = chunks
                .into_iter()
                .map(|chunk| Bytes::from(chunk.ok().flatten().unwrap_or_default()))
                .collect();
            return Carried {
                inline: Some(inline),
                holders,
                linked: None,
            };
        }
        let from = DataDir {
            bucket_id: bucket.id.clone(),
            data_id: src.version.data_id,
        };
        let to = DataDir {
            bucket_id: bucket.id.clone(),
            data_id: renamed.data_id,
        };
        let holders = set.link_data_dir(&from, &to, &src.holders).await;
        Carried {
            inline: None,
            holders,
            linked: Some(to),
        }
    }

    /// Commits a rename's batches on the drives that hold its data; on failure the links
    /// made for it go. Answers how many drives took it.
    async fn commit_carried(
        &self,
        set: &RecordSet,
        batches: Vec<crate::records::commit::Batch>,
        carried: &Carried,
    ) -> Result<usize, ObjectError> {
        let committed = set.commit(batches, Some(&carried.holders)).await;
        if let (Err(_), Some(linked)) = (&committed, &carried.linked) {
            set.delete_data_dir(linked).await;
        }
        Ok(committed?)
    }
}

/// Whether a rename passes the source's data to the new version whole: in an unversioned
/// bucket the source's version is gone once the rename wins, so its data folder, or its
/// tier copy, changes hands and nothing is copied or linked. (A small version's inline
/// chunks are written with the new record; in a versioned bucket both names keep a version
/// of the data.)
fn passes_data(bucket: &BucketRecord, version: &ObjectRecord) -> bool {
    bucket.settings.versioning.is_none() && !version.inline
}

/// Judges a rename on what the keys hold: `Ok(None)` when a retry of it (same client token,
/// same source) already renamed, the source's version to move otherwise.
fn judge(
    source: &ObjectKey,
    dest: Option<&ObjectRecord>,
    src: Option<Source>,
    options: &RenameOptions,
) -> Result<Option<Source>, ObjectError> {
    let done_by = dest.and_then(|d| d.renamed_by.as_ref());
    if let (Some(token), Some(done)) = (&options.client_token, done_by) {
        if *token == done.client_token {
            return match done.source == source.as_str() {
                true => Ok(None),
                false => Err(ObjectError::IdempotencyMismatch),
            };
        }
    }
    let src = src.ok_or(ObjectError::NoSuchKey)?;
    (options.source_if.0)(Some(&src.version))?;
    (options.destination_if.0)(dest)?;
    Ok(Some(src))
}
