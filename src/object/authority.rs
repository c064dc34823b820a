//! The authority that decides the object store's deployment-wide records in a cluster (etcd):
//! bucket records and the system records. How it decides and how the drives keep their
//! copies is the records layer's ([`crate::records::decided`]); here the store names the
//! kinds it decides, and fills a new authority from what it lists.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{ObjectError, ObjectStore};
use crate::object::record::BUCKETS;
use crate::object::system::SYSTEM;
use crate::records::authority::{authority_key, put_if_absent, RecordAuthority};
use crate::records::decided::{Decided, DecidedKind};

/// The kinds of record the authority decides.
static DECIDED_KINDS: [&dyn DecidedKind; 2] = [&BUCKETS, &SYSTEM];

impl ObjectStore {
    /// From now on, changes to bucket and system records are decided by `authority`, and
    /// reads ask it first.
    pub fn set_record_authority(&self, authority: Arc<dyn RecordAuthority>) {
        if self.authority.set(authority).is_err() {
            tracing::warn!("a record authority was already set; the first one stays");
        }
    }

    /// The decided records, once an authority decides them.
    pub(super) fn authority(&self) -> Option<Decided<'_>> {
        self.authority
            .get()
            .map(|authority| self.decided_by(authority))
    }

    fn decided_by<'a>(&'a self, authority: &'a Arc<dyn RecordAuthority>) -> Decided<'a> {
        Decided {
            authority,
            sets: &self.sets,
            divergence: &self.divergence,
            kinds: &DECIDED_KINDS,
        }
    }

    /// How often the authority was found behind the drives (see
    /// [`crate::records::authority::Divergence`]).
    pub fn authority_divergence(&self) -> (u64, u64) {
        let d = &self.divergence;
        (
            d.refills.load(Ordering::Relaxed),
            d.records_put_back.load(Ordering::Relaxed),
        )
    }

    /// When `authority` is behind the drives, fills it again from them (see
    /// [`Decided::refill`]). Answers whether it was behind.
    pub async fn refill_authority(
        &self,
        authority: &Arc<dyn RecordAuthority>,
    ) -> Result<bool, ObjectError> {
        Ok(self.decided_by(authority).refill().await?)
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
        assert_eq!(store.authority().unwrap().drives_revision().await, revision);
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

        let report = store.authority().unwrap().heal_copies().await.unwrap();
        assert_eq!(report.repaired, 3, "{report:?}");
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
        let again = store.authority().unwrap().heal_copies().await.unwrap();
        assert_eq!(again.repaired, 0, "{again:?}");
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
