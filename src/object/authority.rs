//! Where a cluster with a control plane decides its deployment-wide records: bucket records,
//! and the system records that hold users, policies and the key catalog. Each change is a
//! compare-and-swap in the authority (etcd), on the bytes the change was decided on; the
//! drives then keep a copy of the record, the same bytes, as on a server alone. The copy
//! serves reads while the authority cannot be reached (settings changes wait for it), and
//! lets a new etcd be filled from the drives. Heal brings the copies in line with it.
//!
//! A server alone on its drives has no authority: the drives decide, each change committed
//! conditionally on a write quorum (see `bucket.rs`, `system.rs`).

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use async_trait::async_trait;

use super::{HealReport, ObjectError, ObjectStore};
use crate::erasure::{DriveError, MetaOp, MetaTable};

#[async_trait]
pub trait RecordAuthority: Send + Sync {
    /// The record's bytes, if it exists.
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, ObjectError>;
    /// Every record whose key starts with `prefix`, in key order.
    async fn list(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, ObjectError>;
    /// Sets the record to `value` (`None`: deletes it) only if it still holds `expected`
    /// (`None`: only if it does not exist); whether it did.
    async fn swap(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        value: Option<&[u8]>,
    ) -> Result<bool, ObjectError>;
}

/// The tables whose records the authority decides, and the prefix of their keys there.
const DECIDED: [(MetaTable, &str); 2] = [
    (MetaTable::Buckets, "buckets/"),
    (MetaTable::System, "system/"),
];

/// The authority's key of a record of `table`.
pub(crate) fn authority_key(table: MetaTable, key: &[u8]) -> String {
    let prefix = (DECIDED.iter())
        .find(|(decided, _)| *decided == table)
        .map_or("", |(_, prefix)| prefix);
    format!("{prefix}{}", String::from_utf8_lossy(key))
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

    /// A record as the authority holds it, with its bytes (what a change compares); `Err`
    /// when the authority cannot be reached.
    pub(super) async fn decided<T: serde::de::DeserializeOwned>(
        authority: &Arc<dyn RecordAuthority>,
        table: MetaTable,
        key: &[u8],
    ) -> Result<Option<(T, Vec<u8>)>, ObjectError> {
        let Some(bytes) = authority.get(&authority_key(table, key)).await? else {
            return Ok(None);
        };
        let record = super::record::decode(&bytes)
            .map_err(|e| ObjectError::Internal(format!("a record in the authority: {e}")))?;
        Ok(Some((record, bytes)))
    }

    /// Changes a record in the authority if it still holds `base` ([`ObjectError::Conflict`]
    /// when another server changed it first), then its copy on the drives.
    pub(super) async fn decide(
        &self,
        authority: &Arc<dyn RecordAuthority>,
        (table, key): (MetaTable, &[u8]),
        base: Option<&[u8]>,
        value: Option<Vec<u8>>,
    ) -> Result<(), ObjectError> {
        let swapped = authority
            .swap(&authority_key(table, key), base, value.as_deref())
            .await?;
        if !swapped {
            return Err(ObjectError::Conflict);
        }
        self.copy_to_drives(table, key, value).await;
        Ok(())
    }

    /// Writes a decided record's copy on every drive of every set (best effort: heal puts
    /// back what a drive misses).
    async fn copy_to_drives(&self, table: MetaTable, key: &[u8], value: Option<Vec<u8>>) {
        let op = match value {
            Some(value) => MetaOp::Put {
                table,
                key: key.to_vec(),
                value,
            },
            None => MetaOp::Delete {
                table,
                key: key.to_vec(),
            },
        };
        futures::future::join_all(
            self.sets
                .iter()
                .map(|set| set.meta_apply_all(vec![op.clone()])),
        )
        .await;
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
            let key = authority_key(MetaTable::Buckets, bucket.name.as_bytes());
            records.push((key, super::record::encode(&bucket)));
        }
        for (key, record) in self.system_records("").await? {
            let key = authority_key(MetaTable::System, key.as_bytes());
            records.push((key, super::record::encode(&record)));
        }
        let mut added = 0;
        for (key, value) in records {
            added += usize::from(authority.swap(&key, None, Some(&value)).await?);
        }
        Ok(added)
    }

    /// Every record the authority holds of `table`, by its key on the drives.
    async fn decided_in(
        authority: &Arc<dyn RecordAuthority>,
        table: MetaTable,
    ) -> Result<BTreeMap<Vec<u8>, Vec<u8>>, ObjectError> {
        let prefix = authority_key(table, b"");
        Ok((authority.list(&prefix).await?.into_iter())
            .map(|(key, value)| (key.as_bytes()[prefix.len()..].to_vec(), value))
            .collect())
    }

    /// Brings every drive's copies of the decided records in line with the authority: puts
    /// what a drive misses or holds otherwise, removes what the authority no longer holds.
    ///
    /// The drives are read before the authority: a change decides in the authority before
    /// it copies to the drives, so the authority read is never older than a copy seen, and
    /// each fix applies only where the drive still holds what was read (a copy written since
    /// stays). An unhealed drive lists nothing: it is given every record, deleting none.
    pub(super) async fn heal_copies(
        &self,
        authority: &Arc<dyn RecordAuthority>,
    ) -> Result<HealReport, ObjectError> {
        let mut report = HealReport::default();
        for (table, _) in DECIDED {
            for set in &self.sets {
                let scans = set
                    .meta_scan_all(table, Bound::Unbounded, &[], usize::MAX)
                    .await;
                let decided = Self::decided_in(authority, table).await?;
                report.objects_checked += decided.len() as u64;
                let fixes: Vec<Option<Vec<MetaOp>>> = (scans.iter())
                    .map(|scan| match scan {
                        Ok(entries) => copy_fixes(table, &decided, Some(entries)),
                        Err(DriveError::Unhealed(_)) => copy_fixes(table, &decided, None),
                        Err(_) => None,
                    })
                    .collect();
                let repaired = (fixes.iter().flatten().flatten())
                    .filter(|op| !matches!(op, MetaOp::Expect { .. }))
                    .count();
                if repaired > 0 {
                    set.meta_apply_each(fixes).await;
                    report.records_repaired += repaired as u64;
                }
            }
        }
        Ok(report)
    }
}

/// The changes that make a drive's copies of `table` the `decided` records: each put or
/// delete conditional on what the drive held (`held`: its scan; `None` for an unhealed drive,
/// which lists nothing and only receives). `None` when nothing is to change.
fn copy_fixes(
    table: MetaTable,
    decided: &BTreeMap<Vec<u8>, Vec<u8>>,
    held: Option<&[(Vec<u8>, Vec<u8>)]>,
) -> Option<Vec<MetaOp>> {
    let held_map: BTreeMap<&[u8], &[u8]> = (held.unwrap_or_default().iter())
        .map(|(k, v)| (k.as_slice(), v.as_slice()))
        .collect();
    let mut ops = Vec::new();
    let mut fix = |key: &[u8], value: Option<&Vec<u8>>| {
        if held.is_some() {
            ops.push(MetaOp::Expect {
                table,
                key: key.to_vec(),
                value: held_map.get(key).map(|v| v.to_vec()),
            });
        }
        ops.push(match value {
            Some(value) => MetaOp::Put {
                table,
                key: key.to_vec(),
                value: value.clone(),
            },
            None => MetaOp::Delete {
                table,
                key: key.to_vec(),
            },
        });
    };
    for (key, value) in decided {
        if held_map.get(key.as_slice()) != Some(&value.as_slice()) {
            fix(key, Some(value));
        }
    }
    if held.is_some() {
        for key in held_map.keys().filter(|key| !decided.contains_key(**key)) {
            fix(key, None);
        }
    }
    Some(ops).filter(|ops| !ops.is_empty())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    use super::*;
    use crate::erasure::ErasureSet;
    use crate::object::record::{self, BucketRecord};
    use crate::object::{BucketName, Versioning};
    use crate::storage::sim::CrashController;

    type Records = BTreeMap<String, Vec<u8>>;
    type Meddle = Box<dyn FnOnce(&mut Records) + Send>;

    /// An authority in memory; `meddle` runs once, between a change's read and its swap (a
    /// change made meanwhile by another server).
    #[derive(Default)]
    struct Memory {
        records: Mutex<Records>,
        meddle: Mutex<Option<Meddle>>,
        swaps: Mutex<u32>,
    }

    #[async_trait]
    impl RecordAuthority for Memory {
        async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, ObjectError> {
            Ok(self.records.lock().unwrap().get(key).cloned())
        }
        async fn list(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, ObjectError> {
            let records = self.records.lock().unwrap();
            Ok((records.iter())
                .filter(|(k, _)| k.starts_with(prefix))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect())
        }
        async fn swap(
            &self,
            key: &str,
            expected: Option<&[u8]>,
            value: Option<&[u8]>,
        ) -> Result<bool, ObjectError> {
            *self.swaps.lock().unwrap() += 1;
            let mut records = self.records.lock().unwrap();
            if let Some(meddle) = self.meddle.lock().unwrap().take() {
                meddle(&mut records);
            }
            if records.get(key).map(Vec::as_slice) != expected {
                return Ok(false);
            }
            match value {
                Some(value) => records.insert(key.to_string(), value.to_vec()),
                None => records.remove(key),
            };
            Ok(true)
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
        let held = store.sets[0]
            .meta_get_all(MetaTable::Buckets, b"decided")
            .await;
        let decided_bytes = memory.records.lock().unwrap()["buckets/decided"].clone();
        assert!(held
            .iter()
            .all(|h| h.as_ref().ok() == Some(&Some(decided_bytes.clone()))));
    }

    #[tokio::test]
    async fn heal_puts_the_decided_copies_back_and_takes_away_what_was_not_decided() {
        let (store, memory) = (store(), Arc::new(Memory::default()));
        let kept = BucketName::parse("kept").unwrap();
        store.create_bucket(&kept).await.unwrap();
        store.set_record_authority(memory.clone());
        let made = BucketName::parse("made").unwrap();
        store.create_bucket(&made).await.unwrap();
        let set = &store.sets[0];
        // One drive lost the copy of a decided record; every drive holds one the authority
        // never decided (`kept` was made before there was an authority).
        set.meta_apply_on(
            2,
            vec![MetaOp::Delete {
                table: MetaTable::Buckets,
                key: b"made".to_vec(),
            }],
        )
        .await
        .unwrap();

        let report = store.heal_copies(&(memory.clone() as _)).await.unwrap();
        assert_eq!(report.records_repaired, 10, "{report:?}");
        let made_copies = set.meta_get_all(MetaTable::Buckets, b"made").await;
        assert!(made_copies.iter().all(|c| matches!(c, Ok(Some(_)))));
        let kept_copies = set.meta_get_all(MetaTable::Buckets, b"kept").await;
        assert!(kept_copies.iter().all(|c| matches!(c, Ok(None))));
        let again = store.heal_copies(&(memory as _)).await.unwrap();
        assert_eq!(again.records_repaired, 0, "{again:?}");
    }
}
