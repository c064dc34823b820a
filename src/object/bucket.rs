//! Buckets: a record on every drive of every set.

use futures::future::join_all;

use super::record::{BucketRecord, BucketSettings, ObjectRecord, VersionsRecord, BUCKETS, UPLOADS};
use super::{now_ms, retry_conflicts, Agreement, BucketName, ObjectError, ObjectStore};
use crate::records::changes::RecordChange;
use crate::records::revisioned;

impl ObjectStore {
    pub async fn create_bucket(&self, name: &BucketName) -> Result<BucketRecord, ObjectError> {
        self.create_bucket_with(name, BucketSettings::default())
            .await
    }

    /// Creates a bucket whose settings start as `settings` (a bucket made with Object Lock
    /// has it, and versioning, from its first record on).
    pub async fn create_bucket_with(
        &self,
        name: &BucketName,
        settings: BucketSettings,
    ) -> Result<BucketRecord, ObjectError> {
        self.may_change_records().await?;
        let key = name.as_str().as_bytes();
        let _guard = self.locks.write(name.as_str(), "").await;
        let created = retry_conflicts(|| async {
            if self.find_bucket(name).await?.is_some() {
                return Err(ObjectError::BucketExists);
            }
            self.remove_leftovers_of(name).await?;
            let record = BucketRecord {
                name: name.to_string(),
                id: uuid::Uuid::new_v4().simple().to_string(),
                created_ms: now_ms(),
                revision: 0,
                settings: settings.clone(),
            };
            if let Some(authority) = self.authority() {
                let decided = authority.change((BUCKETS, key), None, Some(&record));
                self.in_force(name, decided.await.map_err(ObjectError::from), &record)?;
                return Ok(record);
            }
            let op = BUCKETS.put(key.to_vec(), &record);
            // Two creates at once: one wins, the other finds the bucket when it retries. A
            // create that fails is undone: the name stays free.
            let no_base: Option<&BucketRecord> = None;
            let committed = revisioned::commit(&self.sets, (BUCKETS, key), no_base, op);
            self.in_force(name, committed.await.map_err(ObjectError::from), &record)?;
            Ok(record)
        })
        .await;
        self.announce(RecordChange::Bucket(name.to_string())).await;
        created
    }

    /// The bucket's record, or `NoSuchBucket`: as agreed on lately (see [`BucketCache`]).
    /// Decisions to change the bucket read the drives instead ([`Self::find_bucket`]).
    ///
    /// [`BucketCache`]: super::bucket_cache::BucketCache
    pub async fn bucket(&self, name: &BucketName) -> Result<BucketRecord, ObjectError> {
        if let Some(record) = self.buckets.get(name.as_str()) {
            return Ok((*record).clone());
        }
        let generation = self.buckets.generation();
        let record = self.find_bucket(name).await?;
        let record = record.ok_or(ObjectError::NoSuchBucket)?;
        self.buckets.found(generation, &record);
        Ok(record)
    }

    /// A bucket or system record may have changed under this server (a heal ran, drives
    /// came or went): what it agreed on before is read again.
    pub fn forget_agreed_buckets(&self) {
        self.buckets.forget_all();
    }

    /// Puts a change this server committed in force for its next requests; a change whose
    /// outcome is unknown (an error) makes it read the drives again.
    fn in_force(
        &self,
        name: &BucketName,
        committed: Result<(), ObjectError>,
        record: &BucketRecord,
    ) -> Result<(), ObjectError> {
        match committed {
            Ok(()) => self.buckets.changed(record),
            Err(_) => self.buckets.forget(name.as_str()),
        }
        committed
    }

    /// The bucket's record as the drives agree on it now, or as the authority holds it
    /// (the drives' copy while it cannot be reached).
    async fn find_bucket(&self, name: &BucketName) -> Result<Option<BucketRecord>, ObjectError> {
        if let Some(authority) = self.authority() {
            let key = name.as_str().as_bytes();
            match authority.read(BUCKETS, key).await {
                Ok(decided) => return Ok(decided.map(|(record, _)| record)),
                Err(e) => tracing::debug!(error = %e, "bucket record read from the drives' copy"),
            }
        }
        // Every set holds every bucket; the first set answers for all.
        let set = &self.sets[0];
        let key = name.as_str().as_bytes();
        Ok(set.read_agreed(BUCKETS, key).await?.found())
    }

    /// Changes a bucket's settings on every drive of every set. The new record carries a
    /// higher revision, which readers take once a write quorum may have it; a change that
    /// misses the quorum is undone everywhere. `change` may refuse.
    pub async fn update_bucket_settings(
        &self,
        name: &BucketName,
        change: impl Fn(&mut BucketSettings) -> Result<(), ObjectError>,
    ) -> Result<BucketRecord, ObjectError> {
        self.may_change_records().await?;
        // Bucket keys are never object keys (those are never empty), so this lock is the
        // bucket's own.
        let _guard = self.locks.write(name.as_str(), "").await;
        let key = name.as_str().as_bytes();
        let changed = retry_conflicts(|| async {
            if let Some(authority) = self.authority() {
                let base = authority.read(BUCKETS, key);
                let (base, base_bytes) = base.await?.ok_or(ObjectError::NoSuchBucket)?;
                let mut record = base;
                change(&mut record.settings)?;
                record.revision += 1;
                let decided = authority.change((BUCKETS, key), Some(&base_bytes), Some(&record));
                self.in_force(name, decided.await.map_err(ObjectError::from), &record)?;
                return Ok(record);
            }
            let base = self.find_bucket(name).await?;
            let base = base.ok_or(ObjectError::NoSuchBucket)?;
            let mut record = base.clone();
            change(&mut record.settings)?;
            record.revision += 1;
            let op = BUCKETS.put(key.to_vec(), &record);
            let committed = revisioned::commit(&self.sets, (BUCKETS, key), Some(&base), op);
            self.in_force(name, committed.await.map_err(ObjectError::from), &record)?;
            Ok(record)
        })
        .await;
        if !matches!(changed, Err(ObjectError::NoSuchBucket)) {
            self.announce(RecordChange::Bucket(name.to_string())).await;
        }
        changed
    }

    pub async fn list_buckets(&self) -> Result<Vec<BucketRecord>, ObjectError> {
        if let Some(authority) = self.authority() {
            match authority.list(BUCKETS, b"").await {
                Ok(records) => return Ok(records.into_iter().map(|(_, bucket)| bucket).collect()),
                Err(e) => tracing::debug!(error = %e, "buckets listed from the drives' copy"),
            }
        }
        // Too few drives answering (offline, or unhealed and so unable to list) may miss a
        // bucket: an error, as for a bucket the drives cannot agree on.
        let page = (self.sets[0])
            .scan_records::<BucketRecord>(BUCKETS, std::ops::Bound::Unbounded, &[], usize::MAX)
            .await?;
        let mut buckets = Vec::new();
        for scanned in page.records {
            if let Agreement::Found { value, .. } = scanned.agreed? {
                buckets.push(value);
            }
        }
        Ok(buckets)
    }

    /// Deletes an empty bucket, like a settings change: conditionally on every drive and
    /// undone everywhere when a set misses its write quorum, so that a DeleteBucket answered
    /// with an error leaves the bucket in place.
    pub async fn delete_bucket(&self, name: &BucketName) -> Result<(), ObjectError> {
        self.may_change_records().await?;
        let key = name.as_str().as_bytes();
        let _guard = self.locks.write(name.as_str(), "").await;
        let deleted = retry_conflicts(|| async {
            let decided = match self.authority() {
                Some(authority) => {
                    let base = authority.read(BUCKETS, key);
                    Some(base.await?.ok_or(ObjectError::NoSuchBucket)?)
                }
                None => None,
            };
            let base = match &decided {
                Some((base, _)) => base.clone(),
                None => self
                    .find_bucket(name)
                    .await?
                    .ok_or(ObjectError::NoSuchBucket)?,
            };
            // A versioned bucket is empty only once every version and delete marker is gone.
            if self.holds_any::<ObjectRecord>(name).await?
                || self.holds_any::<VersionsRecord>(name).await?
            {
                return Err(ObjectError::BucketNotEmpty);
            }
            if let (Some(authority), Some((_, base_bytes))) = (self.authority(), &decided) {
                let deleted = authority.change((BUCKETS, key), Some(base_bytes), None);
                let deleted = deleted.await.map_err(ObjectError::from);
                self.buckets.forget(name.as_str());
                return deleted;
            }
            let delete = BUCKETS.delete(key.to_vec());
            let deleted = revisioned::commit(&self.sets, (BUCKETS, key), Some(&base), delete);
            let deleted = deleted.await.map_err(ObjectError::from);
            // Gone, or in doubt: either way read again.
            self.buckets.forget(name.as_str());
            deleted
        })
        .await;
        self.announce(RecordChange::Bucket(name.to_string())).await;
        deleted?;
        // Its multipart uploads go with it (best effort: uploads of a bucket that no longer
        // exists can be neither listed nor completed).
        let mut uploads_prefix = key.to_vec();
        uploads_prefix.push(0);
        let uploads = vec![UPLOADS.delete_prefix(uploads_prefix)];
        join_all(self.sets.iter().map(|s| s.apply_all(uploads.clone()))).await;
        Ok(())
    }
}
