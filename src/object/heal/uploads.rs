//! Healing multipart uploads in progress: the upload record, its parts' records and their
//! shard files go back to the drives that miss them, and records that agreement says are
//! gone are removed. An ended upload's tombstone goes to the drives that miss it (the upload
//! was completed or aborted while they were away), then away from all of them.
//!
//! Every record a heal writes is conditioned on what the drive held when it was read: an
//! upload ended meanwhile, or a part committed again, is never written over.
//!
//! A heal pass covers uploads too, so that a drive that joined blank holds every upload of
//! its set before it may vote that one does not exist.

use std::collections::BTreeSet;
use std::ops::Bound;

use crate::erasure::ErasureError;
use crate::object::heal::objects::{commit_healed, heal_data, HealReport, HealScope, StoredData};
use crate::object::multipart::upload::take_away_tombstone;
use crate::object::record::{
    self, parts_prefix, BucketRecord, PartInfo, PartRecord, UploadRecord, PARTS, UPLOADS,
};
use crate::object::{Agreement, BucketName, HealDepth, ObjectError, ObjectKey, ObjectStore};
use crate::records::copies::Copies;
use crate::records::copies::Guard;
use crate::records::revisioned::reachable;
use crate::records::{Change, DriveError, RecordSet, Replica};

/// Parts an upload can have, plus one: a scan this long sees them all.
const PARTS_SCAN: usize = 10_001;

impl ObjectStore {
    /// Heals every upload in progress in `scope`.
    pub async fn heal_uploads(&self, scope: &HealScope) -> Result<HealReport, ObjectError> {
        let scan_prefix = scope.scan_prefix();
        let mut total = HealReport::default();
        for set in self.sets_in(scope) {
            let mut start = Bound::Unbounded;
            loop {
                let page = set.scan_keys(&[UPLOADS.id()], start, &scan_prefix).await;
                // With a write quorum of drives unanswered, a key a write quorum committed may
                // be on none that answered: the pass is not settled.
                if !page.holds_every_committed_key(set) {
                    total.unresolved += page.unanswered as u64;
                }
                let next = page.next;
                for db_key in page.keys {
                    let Some((bucket, key, upload_id)) = split_upload_key(&db_key) else {
                        continue;
                    };
                    let bucket_record = match self.bucket(&bucket).await {
                        Ok(record) => record,
                        // The bucket is gone: its deletion removed its uploads on the
                        // drives it reached, and this finishes it on the others.
                        Err(ObjectError::NoSuchBucket) => {
                            total.add(&end_orphaned_upload(set, &upload_id, &db_key).await);
                            continue;
                        }
                        Err(e) => {
                            tracing::warn!(bucket = %bucket, key = %key, upload_id, error = %e, "heal of an upload failed");
                            total.unresolved += 1;
                            continue;
                        }
                    };
                    let _upload = self.upload_locks.write(bucket.as_str(), &upload_id).await;
                    let report = heal_upload(set, &bucket_record, &key, &upload_id, &db_key).await;
                    match report {
                        Ok(report) => total.add(&report),
                        Err(e) => {
                            tracing::warn!(bucket = %bucket, key = %key, upload_id, error = %e, "heal of an upload failed");
                            total.unresolved += 1;
                        }
                    }
                }
                match next {
                    Some(after) => start = Bound::Excluded(after),
                    None => break,
                }
            }
        }
        Ok(total)
    }
}

/// Heals one upload: called with the upload's lock held, so no part commits meanwhile.
async fn heal_upload(
    set: &RecordSet,
    bucket: &BucketRecord,
    key: &ObjectKey,
    upload_id: &str,
    db_key: &[u8],
) -> Result<HealReport, ObjectError> {
    let mut report = HealReport::default();
    let answers = Copies::<UploadRecord>::read(set, UPLOADS, db_key.to_vec()).await;
    let online: Vec<bool> = answers.iter().map(reachable).collect();
    let held: Vec<bool> = answers.iter().map(|a| matches!(a, Ok(Some(_)))).collect();
    let upload = match set.agree(&answers) {
        Ok(Agreement::Found { value, holders }) => (value, holders),
        Ok(Agreement::NotFound) => {
            report.stale_purged = purge_upload(set, upload_id, db_key, &held).await;
            return Ok(report);
        }
        Err(ErasureError::ReadQuorum) => {
            tracing::warn!(bucket = %bucket.name, key = %key, upload_id, "heal: drives do not agree on this upload; left as it is");
            report.unresolved = 1;
            return Ok(report);
        }
        Err(e) => return Err(e.into()),
    };
    let (upload, upload_holders) = upload;
    if upload.ended.is_some() {
        report.records_repaired = spread_tombstone(set, &answers, &upload, db_key).await;
        take_away_tombstone(set, db_key).await;
        return Ok(report);
    }

    // The parts a read quorum agrees on; stale ones go, undecided ones stay.
    let scans = set
        .scan_all(
            PARTS,
            Bound::Unbounded,
            &parts_prefix(upload_id),
            PARTS_SCAN,
        )
        .await;
    let copies: Vec<Result<Vec<PartRecord>, ()>> = scans
        .iter()
        .map(|scan| match scan {
            Ok(entries) => Ok(entries
                .iter()
                .filter_map(|(_, v)| record::decode::<PartRecord>(v).ok())
                .collect()),
            Err(_) => Err(()),
        })
        .collect();
    let numbers: BTreeSet<u32> = (copies.iter().flatten().flatten())
        .map(|p| p.info.number)
        .collect();
    let mut parts: Vec<(PartRecord, Vec<bool>)> = Vec::new();
    let mut stale_parts: Vec<(u32, Vec<bool>)> = Vec::new();
    for number in numbers {
        let answers: Vec<Result<Option<PartRecord>, DriveError>> = copies
            .iter()
            .zip(&scans)
            .map(|(copy, scan)| match (copy, scan) {
                (Ok(held), _) => Ok(held.iter().find(|p| p.info.number == number).cloned()),
                (Err(()), Err(DriveError::Unhealed(label))) => {
                    Err(DriveError::Unhealed(label.clone()))
                }
                (Err(()), _) => Err(DriveError::Offline(String::new())),
            })
            .collect();
        let holding: Vec<bool> = answers.iter().map(|a| matches!(a, Ok(Some(_)))).collect();
        match set.agree(&answers) {
            Ok(Agreement::Found { value, holders }) => parts.push((value, holders)),
            Ok(Agreement::NotFound) => stale_parts.push((number, holding)),
            Err(_) => {
                tracing::warn!(bucket = %bucket.name, key = %key, upload_id, part = number, "heal: drives do not agree on a part; left as it is");
                report.unresolved += 1;
            }
        }
    }
    for (number, holding) in stale_parts {
        let delete = PARTS.delete(record::part_key(upload_id, number));
        let ops: Vec<Option<Vec<Change>>> = (holding.iter())
            .map(|&h| h.then(|| vec![delete.clone()]))
            .collect();
        let removed = set.apply_each(ops).await;
        report.stale_purged += removed.iter().filter(|r| r.is_ok()).count() as u64;
    }

    // Data of the agreed parts, then the records where they are missing.
    let files: Vec<PartInfo> = parts.iter().map(|(p, _)| p.info.clone()).collect();
    let data = StoredData {
        data_id: upload.data_id,
        inline_size: None,
        parts: &files,
    };
    let heal = heal_data(
        set,
        bucket,
        key,
        data,
        HealDepth::Quick,
        &online,
        &mut report,
    )
    .await?;
    let records_ok = |i: usize| upload_holders[i] && parts.iter().all(|(_, holders)| holders[i]);
    let targets: Vec<bool> = (0..online.len())
        .map(|i| online[i] && (!records_ok(i) || !heal.data_ok[i]))
        .collect();
    if !targets.contains(&true) {
        set.remove_staged(heal.staging).await;
        return Ok(report);
    }
    let mut records = vec![UPLOADS.put(db_key.to_vec(), &upload)];
    records.extend(
        parts
            .iter()
            .map(|(part, _)| PARTS.put(record::part_key(upload_id, part.info.number), part)),
    );
    // Each target takes them only while it holds what was read: the open upload (or
    // nothing) and, under each part's key, the copy the scan found.
    let targets = (targets.iter().enumerate())
        .map(|(i, &target)| {
            if !target {
                return Guard::LeaveOut;
            }
            // An unhealed drive lists nothing: it holds nothing it could vouch for.
            let scanned: &[(Vec<u8>, Vec<u8>)] = match &scans[i] {
                Ok(entries) => entries,
                Err(DriveError::Unhealed(_)) => &[],
                Err(_) => return Guard::LeaveOut,
            };
            let parts_as_read = parts.iter().map(|(part, _)| {
                let part_key = record::part_key(upload_id, part.info.number);
                let held = scanned.iter().find(|(k, _)| *k == part_key);
                PARTS.expect(part_key, held.map(|(_, v)| v.clone()))
            });
            let parts_as_read = Guard::Expect(parts_as_read.collect());
            answers.guard_on(set, i, Some(&upload)).and(parts_as_read)
        })
        .collect();
    let results = commit_healed(
        set,
        bucket,
        key,
        targets,
        &[(upload.data_id, heal)],
        records,
    )
    .await;
    report.records_repaired += results.iter().filter(|&&ok| ok).count() as u64;
    Ok(report)
}

/// Puts an ended upload's tombstone on the drives that hold the open upload or nothing,
/// each while it still holds what was read; answers how many took it.
async fn spread_tombstone(
    set: &RecordSet,
    answers: &Copies<UploadRecord>,
    tombstone: &UploadRecord,
    db_key: &[u8],
) -> u64 {
    let batches = (0..set.width())
        .map(|i| {
            let missing = match &answers[i] {
                Ok(Some(held)) => !held.is_current(tombstone) && tombstone.vouches_for(held),
                Ok(None) => true,
                Err(_) => false,
            };
            let held = answers.unchanged_on(i).filter(|_| missing)?;
            Some(vec![held, UPLOADS.put(db_key.to_vec(), tombstone)])
        })
        .collect();
    let results = set.apply_each(batches).await;
    results.iter().filter(|r| r.is_ok()).count() as u64
}

/// Removes an upload's records (never its data: a completed upload's folder is now its
/// object's) from the drives that still hold them.
async fn purge_upload(set: &RecordSet, upload_id: &str, db_key: &[u8], held: &[bool]) -> u64 {
    let ops = upload_purge(upload_id, db_key);
    let batches = held.iter().map(|&h| h.then(|| ops.clone())).collect();
    let removed = set.apply_each(batches).await;
    removed.iter().filter(|r| r.is_ok()).count() as u64
}

/// The batch that removes an upload's record and its parts' records from a drive.
fn upload_purge(upload_id: &str, db_key: &[u8]) -> Vec<Change> {
    vec![
        UPLOADS.delete(db_key.to_vec()),
        PARTS.delete_prefix(parts_prefix(upload_id)),
    ]
}

/// Removes an upload of a deleted bucket, and its parts, from every drive (the deletion
/// took away only the upload records it reached); unresolved while a drive cannot be
/// reached, as it may hold them too.
async fn end_orphaned_upload(set: &RecordSet, upload_id: &str, db_key: &[u8]) -> HealReport {
    let removed = set.apply_all(upload_purge(upload_id, db_key)).await;
    let everywhere = removed.iter().all(Result::is_ok);
    HealReport {
        stale_purged: u64::from(everywhere),
        unresolved: u64::from(!everywhere),
        ..HealReport::default()
    }
}

/// Splits a database key `bucket NUL key NUL upload id` back into its parts.
fn split_upload_key(db_key: &[u8]) -> Option<(BucketName, ObjectKey, String)> {
    let text = std::str::from_utf8(db_key).ok()?;
    let (bucket, rest) = text.split_once('\0')?;
    let (key, upload_id) = rest.rsplit_once('\0')?;
    Some((
        BucketName::parse(bucket).ok()?,
        ObjectKey::parse(key).ok()?,
        upload_id.to_string(),
    ))
}
