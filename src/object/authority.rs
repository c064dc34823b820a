//! How the object store uses the authority that decides its deployment-wide records in a
//! cluster (its contract and tombstones: `crate::records::authority`): bucket records,
//! and the system records that hold users, policies and the key catalog. Each change is a
//! compare-and-swap in the authority (etcd), on the bytes the change was decided on; the
//! drives then keep a copy of the record, the same bytes, as on a server alone. The copy
//! serves reads while the authority cannot be reached (settings changes wait for it), and
//! lets a new etcd be filled from the drives. Heal brings the copies in line with it.
//!
//! Absence in the authority is never taken for a deletion: an etcd restored from an older
//! snapshot, or whose keys were deleted, lacks what it once held. So a deleted record stays
//! in the authority as a tombstone, and a record the authority lacks that the
//! drives agree on is put back into it. Every change also raises the records' revision, in
//! the same transaction, and each drive keeps the revision of the last change it copied
//! (`RECORDS_REVISION`): a drive ahead of the authority shows that the authority lost
//! changes, and it is filled again from the drives before any change is decided over it.
//!
//! A server alone on its drives has no authority: the drives decide, each change committed
//! conditionally on a write quorum (see `bucket.rs`, `system.rs`).

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::record::BucketRecord;
use super::system::SystemRecord;
use super::{HealReport, ObjectError, ObjectStore};
use crate::object::record::BUCKETS;
use crate::object::system::SYSTEM;
use crate::records::authority::{
    agreed_records, authority_key, copy_fixes, decided_in, is_later, put_if_absent, Held,
    RecordAuthority, DECIDED, DELETED, RECORDS_REVISION,
};
use crate::records::revisioned::Revisioned;
use crate::records::{Change, DriveError, RecordSet, Table, TableId};

/// How many times a record's copy is written again because the authority's value changed
/// meanwhile, before heal is left to bring the drives in line.
const COPY_ROUNDS: usize = 3;
/// How many times one set is written while fewer than its write quorum took the copy, and the
/// pause between two writes.
const SET_WRITES: usize = 3;
const SET_RETRY: std::time::Duration = std::time::Duration::from_millis(200);

/// A record to replace in the authority: its key there, what it holds now, what it takes.
type Replacement<'a> = (String, Option<&'a [u8]>, &'a [u8]);

/// Which of two copies of a record to keep when the authority is behind the drives: the
/// drives' (`from_drives`), unless the authority's is a later revision of the same record.
fn newer_of<'a>(table: TableId, in_authority: Option<&'a [u8]>, from_drives: &'a [u8]) -> &'a [u8] {
    match in_authority {
        Some(held) if table == BUCKETS.id() && is_later::<BucketRecord>(held, from_drives) => held,
        Some(held) if table == SYSTEM.id() && is_later::<SystemRecord>(held, from_drives) => held,
        _ => from_drives,
    }
}

impl ObjectStore {
    /// From now on, changes to bucket and system records are decided by `authority`, and
    /// reads ask it first.
    pub fn set_record_authority(&self, authority: Arc<dyn RecordAuthority>) {
        if self.authority.set(authority).is_err() {
            tracing::warn!("a record authority was already set; the first one stays");
        }
    }

    pub(super) fn authority(&self) -> Option<&Arc<dyn RecordAuthority>> {
        self.authority.get()
    }

    /// How often the authority was found behind the drives (see [`Divergence`]).
    pub fn authority_divergence(&self) -> (u64, u64) {
        let d = &self.divergence;
        (
            d.refills.load(Ordering::Relaxed),
            d.records_put_back.load(Ordering::Relaxed),
        )
    }

    /// A record as the authority holds it, with its bytes (what a change compares); `Err`
    /// when the authority cannot be reached. A record the authority lacks (and holds no
    /// tombstone of) that the drives agree on is put back into it first.
    pub(super) async fn decided<T: Revisioned>(
        &self,
        authority: &Arc<dyn RecordAuthority>,
        table: Table<T>,
        key: &[u8],
    ) -> Result<Option<(T, Vec<u8>)>, ObjectError> {
        let bytes = match authority.get(&authority_key(table.id(), key)).await? {
            Some(bytes) if bytes == DELETED => return Ok(None),
            Some(bytes) => bytes,
            None => match self.put_back(authority, table, key).await? {
                Some(bytes) => bytes,
                None => return Ok(None),
            },
        };
        let record = super::record::decode(&bytes)
            .map_err(|e| ObjectError::Internal(format!("a record in the authority: {e}")))?;
        Ok(Some((record, bytes)))
    }

    /// Puts a record the authority lacks back into it from the drives, when a read quorum of
    /// them agrees on it; answers what the authority then holds (`None`: no record).
    async fn put_back<T: Revisioned>(
        &self,
        authority: &Arc<dyn RecordAuthority>,
        table: Table<T>,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>, ObjectError> {
        let Some(record) = self.sets[0].read_agreed(table, key).await?.found() else {
            return Ok(None);
        };
        let bytes = super::record::encode(&record);
        let name = authority_key(table.id(), key);
        if put_if_absent(authority, &name, &bytes).await? {
            self.divergence
                .records_put_back
                .fetch_add(1, Ordering::Relaxed);
            tracing::warn!(record = %name, "etcd lacked a record the drives hold (restored or deleted keys?): put back from the drives");
        }
        match authority.get(&name).await? {
            Some(held) if held == DELETED => Ok(None),
            Some(held) => Ok(Some(held)),
            None => Ok(Some(bytes)),
        }
    }

    /// Changes a record in the authority if it still holds `base` ([`ObjectError::Conflict`]
    /// when another server changed it, or any record, first), then its copy on the drives.
    /// `value` `None` deletes the record: the authority keeps its tombstone.
    pub(super) async fn decide<T>(
        &self,
        authority: &Arc<dyn RecordAuthority>,
        (table, key): (Table<T>, &[u8]),
        base: Option<&[u8]>,
        value: Option<Vec<u8>>,
    ) -> Result<(), ObjectError> {
        let revision = self.revision_not_behind(authority).await?;
        let name = authority_key(table.id(), key);
        let stored = value.as_deref().unwrap_or(DELETED);
        let mut swapped = authority.swap(&name, base, stored, revision).await?;
        if !swapped && base.is_none() {
            // Holding no record is also holding a deleted one's tombstone.
            swapped = authority
                .swap(&name, Some(DELETED), stored, revision)
                .await?;
        }
        if !swapped {
            return Err(ObjectError::Conflict);
        }
        self.copy_to_drives(authority, (table, key), value, revision + 1)
            .await;
        Ok(())
    }

    /// Writes a decided record's copy, and the records revision, on every drive of every
    /// set, until the drives hold what the authority holds: a later change decided by
    /// another server may have copied its value first, which this copy, arriving late, would
    /// otherwise replace with an older one. So after each write the authority is read again,
    /// and its value now, with its revision now, is what the next write takes; the last
    /// writer of a record thus always ends on the decided value. Each set is written again
    /// while fewer than its write quorum took the copy (a few times; heal puts back what a
    /// drive still misses, and a failed read of the authority leaves the rest to heal too).
    async fn copy_to_drives<T>(
        &self,
        authority: &Arc<dyn RecordAuthority>,
        (table, key): (Table<T>, &[u8]),
        mut value: Option<Vec<u8>>,
        mut revision: u64,
    ) {
        let name = authority_key(table.id(), key);
        for _ in 0..COPY_ROUNDS {
            self.write_copies(table, key, value.clone(), revision).await;
            let (Ok(now), Ok(now_revision)) =
                (authority.get(&name).await, authority.revision().await)
            else {
                return;
            };
            let now = now.filter(|held| held != DELETED);
            if now == value {
                return;
            }
            (value, revision) = (now, now_revision.max(revision));
        }
        tracing::warn!(record = %name, "the drives' copies of a record changed faster than they could be written; heal brings them in line");
    }

    /// One write of a record's copy and the records revision on every drive of every set,
    /// again on a set whose write quorum did not take it.
    async fn write_copies<T>(
        &self,
        table: Table<T>,
        key: &[u8],
        value: Option<Vec<u8>>,
        revision: u64,
    ) {
        let op = match value {
            Some(value) => table.put_stored(key.to_vec(), value),
            None => table.delete(key.to_vec()),
        };
        let copied =
            SYSTEM.put_stored(RECORDS_REVISION.to_vec(), revision.to_string().into_bytes());
        let ops = vec![op, copied];
        futures::future::join_all(self.sets.iter().map(|set| async {
            for _ in 0..SET_WRITES {
                let answers = set.apply_all(ops.clone()).await;
                if answers.iter().filter(|a| a.is_ok()).count() >= set.write_quorum() {
                    return;
                }
                tokio::time::sleep(SET_RETRY).await;
            }
            tracing::warn!(
                set = set.index(),
                "fewer drives than the write quorum took a record's copy; heal puts it back"
            );
        }))
        .await;
    }

    /// The highest records revision any drive of the first set copied (0: none).
    async fn drives_revision(&self) -> u64 {
        let answers = (self.sets[0]).stored_all(SYSTEM, RECORDS_REVISION).await;
        (answers.into_iter().flatten().flatten())
            .filter_map(|bytes| std::str::from_utf8(&bytes).ok()?.parse::<u64>().ok())
            .max()
            .unwrap_or(0)
    }

    /// The authority's records revision, once it is not behind the drives' (else it is
    /// filled from them first): a change decided over an etcd that lost changes could undo
    /// them, a key catalog saved over an older one would lose keys.
    async fn revision_not_behind(
        &self,
        authority: &Arc<dyn RecordAuthority>,
    ) -> Result<u64, ObjectError> {
        let revision = authority.revision().await?;
        if self.drives_revision().await <= revision {
            return Ok(revision);
        }
        self.refill_authority(authority).await?;
        Ok(authority.revision().await?)
    }

    /// When the authority is behind the drives (a drive copied a later records revision
    /// than it holds: etcd restored from an older snapshot, or its records deleted), makes
    /// each record in it what a read quorum of the drives agrees on (a later revision of the
    /// same record in the authority stays), turns records no drive holds into tombstones,
    /// and raises its revision to the drives'. Records the drives disagree on are left as
    /// they are. Answers whether it was behind.
    pub async fn refill_authority(
        &self,
        authority: &Arc<dyn RecordAuthority>,
    ) -> Result<bool, ObjectError> {
        let copied = self.drives_revision().await;
        let mut revision = authority.revision().await?;
        if copied <= revision {
            return Ok(false);
        }
        tracing::warn!(
            etcd_revision = revision,
            drives_revision = copied,
            "etcd is behind the drives' copy of the records (restored from an older snapshot, or records deleted): filling it again from the drives"
        );
        self.divergence.refills.fetch_add(1, Ordering::Relaxed);
        let mut put_back = 0;
        for (table, _) in DECIDED {
            let decided = decided_in(authority, table).await?;
            let on_drives = records_on_drives(&self.sets[0], table).await?;
            let mut changes: Vec<Replacement> = Vec::new();
            for (key, held) in &on_drives {
                let in_authority = decided.get(key).map(Vec::as_slice);
                let keep = match held {
                    Held::Agreed(bytes) => newer_of(table, in_authority, bytes),
                    Held::Nowhere => DELETED,
                    Held::Undecided => continue,
                };
                if in_authority != Some(keep) {
                    changes.push((authority_key(table, key), in_authority, keep));
                }
            }
            for (key, value) in &decided {
                if !on_drives.contains_key(key) && value.as_slice() != DELETED {
                    changes.push((authority_key(table, key), Some(value), DELETED));
                }
            }
            for (name, expected, value) in changes {
                if !authority.swap(&name, expected, value, revision).await? {
                    return Err(ObjectError::Conflict);
                }
                tracing::warn!(record = %name, "etcd's record replaced by the drives' copy");
                revision += 1;
                put_back += 1;
            }
        }
        if revision < copied && !authority.raise_revision(revision, copied).await? {
            return Err(ObjectError::Conflict);
        }
        self.divergence
            .records_put_back
            .fetch_add(put_back, Ordering::Relaxed);
        tracing::warn!(put_back, "etcd is in line with the drives' records again");
        Ok(true)
    }

    /// Fills the authority with the records the drives hold that it lacks (a cluster that ran
    /// without etcd, or a new etcd); records it holds are left as they are. Reads the drives,
    /// so call it before setting the authority. Answers how many records it added.
    pub async fn fill_authority(
        &self,
        authority: &Arc<dyn RecordAuthority>,
    ) -> Result<usize, ObjectError> {
        let mut records: Vec<(String, Vec<u8>)> = Vec::new();
        for bucket in self.list_buckets().await? {
            let key = authority_key(BUCKETS, bucket.name.as_bytes());
            records.push((key, super::record::encode(&bucket)));
        }
        for (key, record) in self.system_records("").await? {
            let key = authority_key(SYSTEM, key.as_bytes());
            records.push((key, super::record::encode(&record)));
        }
        let mut added = 0;
        for (key, value) in records {
            added += usize::from(put_if_absent(authority, &key, &value).await?);
        }
        Ok(added)
    }

    /// Brings every drive's copies of the decided records in line with the authority: puts
    /// what a drive misses or holds otherwise, removes what the authority holds a tombstone
    /// of. A record the authority lacks is never removed from the drives: it is put back
    /// into the authority when the drives agree on it (and the authority is filled again
    /// first when it is behind the drives).
    ///
    /// The drives are read before the authority: a change decides in the authority before
    /// it copies to the drives, so the authority read is never older than a copy seen, and
    /// each fix applies only where the drive still holds what was read (a copy written since
    /// stays). An unhealed drive lists nothing: it is given every record.
    pub(super) async fn heal_copies(
        &self,
        authority: &Arc<dyn RecordAuthority>,
    ) -> Result<HealReport, ObjectError> {
        let mut report = HealReport::default();
        self.refill_authority(authority).await?;
        for (table, _) in DECIDED {
            for set in &self.sets {
                let scans = set.scan_all(table, Bound::Unbounded, &[], usize::MAX).await;
                let decided = decided_in(authority, table).await?;
                report.objects_checked += decided.len() as u64;
                let fixes: Vec<Option<Vec<Change>>> = (scans.iter())
                    .map(|scan| match scan {
                        Ok(entries) => copy_fixes(table, &decided, Some(entries)),
                        Err(DriveError::Unhealed(_)) => copy_fixes(table, &decided, None),
                        Err(_) => None,
                    })
                    .collect();
                let repaired = (fixes.iter().flatten().flatten())
                    .filter(|change| !change.is_condition())
                    .count();
                if repaired > 0 {
                    set.apply_each(fixes).await;
                    report.records_repaired += repaired as u64;
                }
                // Records the drives hold that the authority lacks go back into it.
                for (key, held) in records_on_drives(set, table).await? {
                    let Held::Agreed(bytes) = held else { continue };
                    if decided.contains_key(&key) {
                        continue;
                    }
                    let name = authority_key(table, &key);
                    if put_if_absent(authority, &name, &bytes).await? {
                        self.divergence
                            .records_put_back
                            .fetch_add(1, Ordering::Relaxed);
                        tracing::warn!(record = %name, "etcd lacked a record the drives hold (restored or deleted keys?): put back from the drives");
                        report.records_repaired += 1;
                    }
                }
            }
        }
        Ok(report)
    }
}

/// Every record of `table` some drive of `set` holds, and what the set agrees on about it.
/// Fails unless a read quorum of drives listed theirs.
async fn records_on_drives(
    set: &RecordSet,
    table: TableId,
) -> Result<BTreeMap<Vec<u8>, Held>, ObjectError> {
    match table == BUCKETS.id() {
        true => Ok(agreed_records(set, BUCKETS).await?),
        false => Ok(agreed_records(set, SYSTEM).await?),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    use super::*;
    use crate::erasure::ErasureSet;
    use crate::object::record::{self, BucketRecord};
    use crate::object::{BucketName, Versioning};
    use crate::records::RecordError;
    use crate::storage::sim::CrashController;
    use async_trait::async_trait;

    type Records = BTreeMap<String, Vec<u8>>;
    type Meddle = Box<dyn FnOnce(&mut Records) + Send>;

    /// An authority in memory; `meddle` runs once, between a change's read and its swap (a
    /// change made meanwhile by another server); `after_swap` once, right after a swap (a
    /// later change by another server, decided before this one's copy is written).
    #[derive(Default)]
    struct Memory {
        records: Mutex<Records>,
        meddle: Mutex<Option<Meddle>>,
        after_swap: Mutex<Option<Meddle>>,
        swaps: Mutex<u32>,
        revision: Mutex<u64>,
    }

    #[async_trait]
    impl RecordAuthority for Memory {
        async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, RecordError> {
            Ok(self.records.lock().unwrap().get(key).cloned())
        }
        async fn list(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, RecordError> {
            let records = self.records.lock().unwrap();
            Ok((records.iter())
                .filter(|(k, _)| k.starts_with(prefix))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect())
        }
        async fn revision(&self) -> Result<u64, RecordError> {
            Ok(*self.revision.lock().unwrap())
        }
        async fn swap(
            &self,
            key: &str,
            expected: Option<&[u8]>,
            value: &[u8],
            revision: u64,
        ) -> Result<bool, RecordError> {
            *self.swaps.lock().unwrap() += 1;
            let mut records = self.records.lock().unwrap();
            if let Some(meddle) = self.meddle.lock().unwrap().take() {
                meddle(&mut records);
            }
            let mut held = self.revision.lock().unwrap();
            if records.get(key).map(Vec::as_slice) != expected || *held != revision {
                return Ok(false);
            }
            records.insert(key.to_string(), value.to_vec());
            *held += 1;
            if let Some(later_change) = self.after_swap.lock().unwrap().take() {
                later_change(&mut records);
                *held += 1;
            }
            Ok(true)
        }
        async fn raise_revision(&self, from: u64, to: u64) -> Result<bool, RecordError> {
            let mut held = self.revision.lock().unwrap();
            let raised = *held == from;
            if raised {
                *held = to;
            }
            Ok(raised)
        }
    }

    fn store() -> Arc<ObjectStore> {
        let set = ErasureSet::new(0, CrashController::new(9).drives(), 3, 64 << 10).unwrap();
        ObjectStore::new(vec![set], "authority")
    }

    #[tokio::test]
    async fn a_change_made_meanwhile_elsewhere_is_kept_and_the_drives_copy_the_decision() {
        let (store, memory) = (store(), Arc::new(Memory::default()));
        let bucket = BucketName::parse("decided").unwrap();
        store.create_bucket(&bucket).await.unwrap();
        // The drives held it first: the authority takes it from them.
        assert_eq!(
            store.fill_authority(&(memory.clone() as _)).await.unwrap(),
            1
        );
        store.set_record_authority(memory.clone());

        // Another server tags the bucket between this one's read and its swap.
        *memory.meddle.lock().unwrap() = Some(Box::new(|records| {
            let key = "buckets/decided".to_string();
            let mut record: BucketRecord = record::decode(&records[&key]).unwrap();
            record.settings.tags = Some(vec![("by".into(), "another".into())]);
            record.revision += 1;
            records.insert(key, record::encode(&record));
        }));
        store
            .set_versioning(&bucket, Versioning::Enabled)
            .await
            .unwrap();
        assert_eq!(*memory.swaps.lock().unwrap(), 3, "filled, refused, retried");
        let decided = store.bucket(&bucket).await.unwrap();
        assert_eq!(decided.settings.versioning, Some(Versioning::Enabled));
        assert_eq!(
            decided.settings.tags,
            Some(vec![("by".into(), "another".into())])
        );

        // The drives hold the decided record, byte for byte.
        let held = store.sets[0].stored_all(BUCKETS, b"decided").await;
        let decided_bytes = memory.records.lock().unwrap()["buckets/decided"].clone();
        assert!(held
            .iter()
            .all(|h| h.as_ref().ok() == Some(&Some(decided_bytes.clone()))));
    }

    /// Another server decides a later change of the record, and writes its copy, before this
    /// server's copy of its own change lands: the drives end on the later change, not on this
    /// one (before, the late copy was written last and the drives kept the older value, so a
    /// node cut off from etcd served it: a detached policy still in force, say).
    #[tokio::test]
    async fn a_copy_that_lands_after_a_later_change_leaves_the_drives_on_the_later_one() {
        let (store, memory) = (store(), Arc::new(Memory::default()));
        store.set_record_authority(memory.clone());
        let bucket = BucketName::parse("decided").unwrap();
        store.create_bucket(&bucket).await.unwrap();
        *memory.after_swap.lock().unwrap() = Some(Box::new(|records| {
            let key = "buckets/decided".to_string();
            let mut record: BucketRecord = record::decode(&records[&key]).unwrap();
            record.settings.tags = Some(vec![("by".into(), "a later change".into())]);
            record.revision += 1;
            records.insert(key, record::encode(&record));
        }));
        store
            .set_versioning(&bucket, Versioning::Enabled)
            .await
            .unwrap();

        let decided_bytes = memory.records.lock().unwrap()["buckets/decided"].clone();
        let decided: BucketRecord = record::decode(&decided_bytes).unwrap();
        assert_eq!(
            decided.settings.tags,
            Some(vec![("by".into(), "a later change".into())])
        );
        let held = store.sets[0].stored_all(BUCKETS, b"decided").await;
        assert!(
            held.iter()
                .all(|h| h.as_ref().ok() == Some(&Some(decided_bytes.clone()))),
            "every drive holds the later change"
        );
        let revision = *memory.revision.lock().unwrap();
        assert_eq!(store.drives_revision().await, revision);
    }

    #[tokio::test]
    async fn heal_puts_the_decided_copies_back_and_takes_away_only_what_was_deleted() {
        let (store, memory) = (store(), Arc::new(Memory::default()));
        let kept = BucketName::parse("kept").unwrap();
        store.create_bucket(&kept).await.unwrap();
        store.set_record_authority(memory.clone());
        let made = BucketName::parse("made").unwrap();
        store.create_bucket(&made).await.unwrap();
        let gone = BucketName::parse("gone").unwrap();
        store.create_bucket(&gone).await.unwrap();
        store.delete_bucket(&gone).await.unwrap();
        let set = &store.sets[0];
        // One drive lost the copy of a decided record, another missed a deletion; every
        // drive holds one the authority lacks (`kept` was made before there was an
        // authority, as after an etcd that lost its keys).
        let lost = BUCKETS.delete(b"made".to_vec());
        set.apply_on(2, vec![lost]).await.unwrap();
        let (gone_key, gone_copy) = (b"gone".to_vec(), b"stale".to_vec());
        let missed = BUCKETS.put_stored(gone_key.clone(), gone_copy);
        set.apply_on(5, vec![missed]).await.unwrap();

        let report = store.heal_copies(&(memory.clone() as _)).await.unwrap();
        assert_eq!(report.records_repaired, 3, "{report:?}");
        let made_copies = set.stored_all(BUCKETS, b"made").await;
        assert!(made_copies.iter().all(|c| matches!(c, Ok(Some(_)))));
        let gone_copies = set.stored_all(BUCKETS, &gone_key).await;
        assert!(gone_copies.iter().all(|c| matches!(c, Ok(None))));
        // Absence in the authority deleted nothing: `kept` is back in it, and on every drive.
        let kept_copies = set.stored_all(BUCKETS, b"kept").await;
        assert!(kept_copies.iter().all(|c| matches!(c, Ok(Some(_)))));
        assert!(memory.records.lock().unwrap().contains_key("buckets/kept"));
        assert!(store.bucket(&kept).await.is_ok());
        assert!(matches!(
            store.bucket(&gone).await,
            Err(ObjectError::NoSuchBucket)
        ));
        let again = store.heal_copies(&(memory as _)).await.unwrap();
        assert_eq!(again.records_repaired, 0, "{again:?}");
    }

    /// An authority that lost changes (restored from an older snapshot): the drives' copies
    /// are ahead of it, so it is filled again from them before anything is decided over it.
    /// A record made since comes back, one deleted since stays deleted, and a record changed
    /// since keeps its change.
    #[tokio::test]
    async fn an_authority_behind_the_drives_is_filled_again_from_them() {
        let (store, memory) = (store(), Arc::new(Memory::default()));
        store.set_record_authority(memory.clone());
        let (kept, deleted) = (
            BucketName::parse("kept").unwrap(),
            BucketName::parse("deleted").unwrap(),
        );
        store.create_bucket(&kept).await.unwrap();
        store.create_bucket(&deleted).await.unwrap();
        let snapshot = (
            memory.records.lock().unwrap().clone(),
            *memory.revision.lock().unwrap(),
        );
        let deleted_copy = memory.records.lock().unwrap()["buckets/deleted"].clone();
        let made = BucketName::parse("made-since").unwrap();
        store.create_bucket(&made).await.unwrap();
        store.delete_bucket(&deleted).await.unwrap();
        store
            .set_versioning(&kept, Versioning::Enabled)
            .await
            .unwrap();
        store
            .system_put("iam/user/new", b"secret".to_vec())
            .await
            .unwrap();
        // Two drives missed the deletion's copy: they still hold the bucket.
        let missed = BUCKETS.put_stored(b"deleted".to_vec(), deleted_copy);
        for i in 0..2 {
            let drive = store.sets[0].apply_on(i, vec![missed.clone()]);
            drive.await.unwrap();
        }
        // The snapshot is restored.
        *memory.records.lock().unwrap() = snapshot.0;
        *memory.revision.lock().unwrap() = snapshot.1;
        store.forget_agreed_buckets();

        // The next change finds the authority behind, and fills it first.
        let other = BucketName::parse("other").unwrap();
        store.create_bucket(&other).await.unwrap();
        assert_eq!(store.authority_divergence().0, 1, "one refill");
        assert!(store.bucket(&made).await.is_ok(), "a bucket made since");
        assert!(matches!(
            store.bucket(&deleted).await,
            Err(ObjectError::NoSuchBucket)
        ));
        let kept_now = store.bucket(&kept).await.unwrap();
        assert_eq!(kept_now.settings.versioning, Some(Versioning::Enabled));
        assert_eq!(
            store.system_get("iam/user/new").await.unwrap().as_deref(),
            Some(&b"secret"[..])
        );
        let names: Vec<String> = (store.list_buckets().await.unwrap().into_iter())
            .map(|b| b.name)
            .collect();
        assert_eq!(names, ["kept", "made-since", "other"]);
    }

    /// A node still filling the authority from what its drives held when it came, after
    /// another node adopted it and deleted a bucket: the fill brings nothing back, as the
    /// deletion left a tombstone and a fill only creates records the authority holds
    /// nothing of.
    #[tokio::test]
    async fn a_late_fill_does_not_bring_back_a_record_deleted_since() {
        let (first, late, memory) = (store(), store(), Arc::new(Memory::default()));
        let gone = BucketName::parse("gone").unwrap();
        // `late`'s drives are as they were before the deletion.
        for node in [&first, &late] {
            node.create_bucket(&gone).await.unwrap();
        }
        assert_eq!(
            first.fill_authority(&(memory.clone() as _)).await.unwrap(),
            1
        );
        first.set_record_authority(memory.clone());
        first.delete_bucket(&gone).await.unwrap();

        assert_eq!(
            late.fill_authority(&(memory.clone() as _)).await.unwrap(),
            0
        );
        late.set_record_authority(memory.clone());
        late.forget_agreed_buckets();
        for node in [&first, &late] {
            let read = node.bucket(&gone).await;
            assert!(matches!(read, Err(ObjectError::NoSuchBucket)), "{read:?}");
        }
    }
}
