//! Object data in tiers: moving a version's bytes to a tier (a lifecycle transition),
//! reading them back, and removing them with the version.

use std::sync::Arc;

use uuid::Uuid;

use crate::body::ByteStream;
use crate::object::record::TierLocation;
use crate::object::{
    BucketName, GetOptions, ObjectError, ObjectKey, ObjectStore, Tier, TierError, Tiers,
};

/// Where tier copies whose removal failed are noted, as `tier/orphans/<tier>/<object>`
/// system records (tier names hold no `/`).
const ORPHANS: &str = "tier/orphans/";

fn orphan_key(location: &TierLocation) -> String {
    format!("{ORPHANS}{}/{}", location.tier, location.object)
}

impl ObjectStore {
    /// Installs the tiers configured on this server (once, at start).
    pub fn set_tiers(&self, tiers: Tiers) {
        self.tiers.store(Arc::new(tiers));
    }

    pub fn tiers(&self) -> Arc<Tiers> {
        self.tiers.load_full()
    }

    fn tier(&self, name: &str) -> Result<Arc<dyn Tier>, ObjectError> {
        self.tiers.load().get(name).cloned().ok_or_else(|| {
            ObjectError::Tier(TierError::Failed {
                tier: name.to_string(),
                reason: "no tier of that name is configured".into(),
            })
        })
    }

    /// Streams bytes `start..end` of a version whose data is in a tier.
    pub(crate) async fn read_from_tier(
        &self,
        location: &TierLocation,
        start: u64,
        end: u64,
    ) -> Result<ByteStream, ObjectError> {
        let tier = self.tier(&location.tier)?;
        Ok(tier.get(&location.object, start, end).await?)
    }

    /// Removes a version's data from its tier. A tier that is down keeps the copy for now:
    /// it is noted (a system record) and removed by a later pass once the tier is back.
    pub(crate) async fn delete_from_tier(&self, location: &TierLocation) {
        if let Err(e) = self.remove_tier_copy(location).await {
            let noted = self.system_put(&orphan_key(location), Vec::new()).await;
            tracing::warn!(tier = %location.tier, object = %location.object, error = %e, noted = noted.is_ok(), "could not remove a version's data from its tier; removal retried later");
        }
    }

    async fn remove_tier_copy(&self, location: &TierLocation) -> Result<(), ObjectError> {
        let tier = self.tier(&location.tier)?;
        Ok(tier.delete(&location.object).await?)
    }

    /// Removes the tier copies noted by [`Self::delete_from_tier`] while their tier was down.
    /// Returns how many went and how many are still there.
    pub async fn remove_tier_orphans(&self) -> Result<(usize, usize), ObjectError> {
        let (mut removed, mut left) = (0, 0);
        for (key, _) in self.system_list(ORPHANS).await? {
            let Some((tier, object)) = key[ORPHANS.len()..].split_once('/') else {
                continue;
            };
            let location = TierLocation {
                tier: tier.to_string(),
                object: object.to_string(),
            };
            match self.remove_tier_copy(&location).await {
                Ok(()) => {
                    self.system_delete(&key).await?;
                    removed += 1;
                }
                Err(_) => left += 1,
            }
        }
        Ok((removed, left))
    }

    /// Moves one version's data to `tier_name` (from the drives, or from a warmer tier), if
    /// `still` holds for the version once the
    /// copy is in the tier (lifecycle checks it is the version it judged). The version keeps
    /// its key, metadata, ETag and version id; its storage class becomes the tier's name.
    /// Returns whether it moved. On any failure the object is left as it was.
    pub async fn transition_object(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
        version_id: Option<&str>,
        tier_name: &str,
        still: impl Fn(&crate::object::ObjectRecord) -> bool,
    ) -> Result<bool, ObjectError> {
        let tier = self.tier(tier_name)?;
        let source = self
            .get_object(
                bucket,
                key,
                GetOptions {
                    version_id: version_id.map(str::to_string),
                    // Tiers hold what the drives hold: an encrypted version stays sealed.
                    raw: true,
                    ..GetOptions::default()
                },
            )
            .await?;
        // Small objects live in the metadata records: moving them saves nothing (S3 does not
        // transition objects under 128 KiB either).
        let already_there = source
            .record
            .tier
            .as_ref()
            .is_some_and(|t| t.tier == tier_name);
        if already_there || source.record.inline || !still(&source.record) {
            return Ok(false);
        }
        let bucket_id = self.bucket(bucket).await?.id;
        let location = TierLocation {
            tier: tier_name.to_string(),
            object: format!("{bucket_id}/{}", Uuid::new_v4().simple()),
        };
        tier.put(&location.object, source.body, source.record.size)
            .await?;
        let judged = source.record;
        let moved = self
            .update_object_metadata(bucket, key, version_id, |now| {
                if !now.same_version(&judged) {
                    return Err(ObjectError::PreconditionFailed);
                }
                let mut moved = now.clone();
                moved.tier = Some(location.clone());
                moved.storage_class = Some(tier_name.to_string());
                // An encrypted version's parts say where each part's packages lie in the
                // tier's copy; a clear one needs none.
                if moved.sse.is_none() {
                    moved.parts.clear();
                }
                moved.inline = false;
                Ok(moved)
            })
            .await;
        match moved {
            Ok(_) => Ok(true),
            Err(e) => {
                self.delete_from_tier(&location).await;
                match e {
                    ObjectError::PreconditionFailed
                    | ObjectError::NoSuchKey
                    | ObjectError::NoSuchVersion
                    | ObjectError::DeleteMarker { .. } => Ok(false),
                    e => Err(e),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    use async_trait::async_trait;
    use bytes::Bytes;
    use futures::StreamExt;

    use super::*;
    use crate::erasure::ErasureSet;
    use crate::object::tier::{Tier, TierError, Tiers};
    use crate::object::{ObjectRecord, PutOptions, RenameOptions};
    use crate::storage::faulty::{Call, FaultyDrive};
    use crate::storage::sim::CrashController;
    use crate::storage::Drive;

    /// A tier in memory.
    #[derive(Default)]
    struct MemoryTier(Mutex<BTreeMap<String, Bytes>>);

    #[async_trait]
    impl Tier for MemoryTier {
        fn name(&self) -> &str {
            "COLD"
        }

        async fn put(&self, object: &str, mut body: ByteStream, _: u64) -> Result<(), TierError> {
            let mut bytes = Vec::new();
            while let Some(chunk) = body.next().await {
                bytes.extend_from_slice(&chunk.expect("a readable body"));
            }
            self.0.lock().unwrap().insert(object.into(), bytes.into());
            Ok(())
        }

        async fn get(&self, object: &str, start: u64, end: u64) -> Result<ByteStream, TierError> {
            let held = self.0.lock().unwrap().get(object).cloned();
            let held = held.ok_or_else(|| TierError::Missing {
                tier: "COLD".into(),
                object: object.into(),
            })?;
            let part = held.slice(start as usize..end as usize);
            Ok(Box::pin(futures::stream::iter([Ok(part)])))
        }

        async fn delete(&self, object: &str) -> Result<(), TierError> {
            self.0.lock().unwrap().remove(object);
            Ok(())
        }

        async fn list(&self) -> Result<Vec<String>, TierError> {
            Ok(self.0.lock().unwrap().keys().cloned().collect())
        }
    }

    /// A version a rename made takes the source's tier copy with it. Until the rename is
    /// settled the source's drives may still agree on the source's version, which reads from
    /// that copy: deleting the renamed version must leave it (before, it took the copy, and
    /// the source's object with it).
    #[tokio::test]
    async fn a_tier_copy_stays_while_the_key_a_rename_took_it_from_may_hold_it() {
        let set = ErasureSet::new(0, CrashController::new(9).drives(), 3, 64 << 10).unwrap();
        let store = ObjectStore::new(vec![set], "tiers");
        let tier = Arc::new(MemoryTier::default());
        store.set_tiers(Tiers::new(vec![tier.clone()]));
        let bucket = BucketName::parse("cold").unwrap();
        let bucket_record = store.create_bucket(&bucket).await.unwrap();
        let source = ObjectKey::parse("ckpt.tmp").unwrap();
        let data = Bytes::from(vec![7u8; 300 << 10]);
        let body: ByteStream = Box::pin(futures::stream::iter([Ok(data.clone())]));
        (store.put_object(&bucket, &source, body, PutOptions::default()))
            .await
            .unwrap();
        let moved = store.transition_object(&bucket, &source, None, "COLD", |_| true);
        assert!(moved.await.unwrap());
        let held = store.head_object(&bucket, &source, None).await.unwrap();
        assert!(held.tier.is_some());

        let (set, _writing) = store.set_for(&bucket, &source).await.unwrap();
        let renamed = |from: &str| ObjectRecord {
            data_from: Some(from.into()),
            ..held.clone()
        };
        store
            .delete_data(set, &bucket_record, vec![renamed(source.as_str())])
            .await;
        assert_eq!(
            tier.list().await.unwrap().len(),
            1,
            "the source's copy is gone"
        );
        let read = store.get_object(&bucket, &source, GetOptions::default());
        let mut body = read.await.unwrap().body;
        let mut got = Vec::new();
        while let Some(chunk) = body.next().await {
            got.extend_from_slice(&chunk.unwrap());
        }
        assert!(got == data, "the source reads back whole");

        // Once the key it came from holds it no more, the copy is the renamed version's.
        store
            .delete_data(set, &bucket_record, vec![renamed("elsewhere")])
            .await;
        assert!(tier.list().await.unwrap().is_empty());
    }

    fn body(data: &Bytes) -> ByteStream {
        Box::pin(futures::stream::iter([Ok(data.clone())]))
    }

    async fn read(store: &ObjectStore, bucket: &BucketName, key: &ObjectKey) -> Vec<u8> {
        let read = store.get_object(bucket, key, GetOptions::default());
        let mut body = read.await.unwrap().body;
        let mut got = Vec::new();
        while let Some(chunk) = body.next().await {
            got.extend_from_slice(&chunk.unwrap());
        }
        got
    }

    /// The checkpoint pattern over a tier: `ckpt.tmp` (moved to the tier) is renamed to
    /// `ckpt` while one drive misses the commit, so that drive keeps `ckpt.tmp`'s version,
    /// and then the next `ckpt.tmp` is written. The tier copy passed to `ckpt` with the
    /// rename; before, the write took it as the replaced version's data, and `ckpt` could
    /// no longer be read.
    #[tokio::test]
    async fn a_tier_copy_a_rename_passed_on_outlives_the_next_write_of_the_old_name() {
        let sim = CrashController::new(9);
        let faulty: Vec<Arc<FaultyDrive>> =
            sim.drives().into_iter().map(FaultyDrive::new).collect();
        let drives = faulty.iter().map(|d| d.clone() as Arc<dyn Drive>).collect();
        let store = ObjectStore::new(vec![ErasureSet::new(0, drives, 3, 64 << 10).unwrap()], "t");
        let tier = Arc::new(MemoryTier::default());
        store.set_tiers(Tiers::new(vec![tier.clone()]));
        let bucket = BucketName::parse("cold").unwrap();
        store.create_bucket(&bucket).await.unwrap();
        let (tmp, ckpt) = (
            ObjectKey::parse("ckpt.tmp").unwrap(),
            ObjectKey::parse("ckpt").unwrap(),
        );
        let first = Bytes::from(vec![1u8; 300 << 10]);
        (store.put_object(&bucket, &tmp, body(&first), PutOptions::default()))
            .await
            .unwrap();
        let moved = store.transition_object(&bucket, &tmp, None, "COLD", |_| true);
        assert!(moved.await.unwrap());

        faulty[8].fail(&[Call::MetaApply]);
        let options = RenameOptions::default();
        let renamed = store.rename_object(&bucket, &ckpt, &tmp, &options);
        renamed.await.unwrap();
        faulty[8].recover();
        let next = Bytes::from(vec![2u8; 300 << 10]);
        (store.put_object(&bucket, &tmp, body(&next), PutOptions::default()))
            .await
            .unwrap();

        assert_eq!(
            tier.list().await.unwrap().len(),
            1,
            "ckpt's tier copy is gone"
        );
        assert!(
            read(&store, &bucket, &ckpt).await == first,
            "ckpt reads back whole"
        );
        assert!(read(&store, &bucket, &tmp).await == next);
    }
}
