//! Deployment-wide records: settings of the whole deployment rather than of a bucket or an
//! object, such as users and policies (see `crate::iam`).
//!
//! They are kept like bucket records: in the [`SYSTEM`] table of every drive of
//! every set, written with a write quorum of each set, and read from the first set by the
//! agreement of a read quorum. Each record carries a random id (a record deleted and made
//! again is another record) and a revision bumped by every change; of the agreed record,
//! the highest revision any drive holds wins, so a change acknowledged by a write quorum is
//! never read back older. Values are opaque bytes chosen by the caller.
//!
//! Changes of one key are serialised on this server; a caller that reads, changes and writes
//! a record back serialises that itself. In a cluster with a control plane the records are
//! decided there, and the drives keep a copy (see `authority.rs`).

use std::ops::Bound;

use serde::{Deserialize, Serialize};

use super::{retry_conflicts, ObjectError, ObjectStore};
use crate::records::changes::RecordChange;
use crate::records::revisioned::{self, Revisioned};
use crate::records::{Change, Table};

/// The lock namespace of system records: never a bucket name (`_` is not allowed in one).
const LOCK_NAMESPACE: &str = "_system";

/// Where deployment-wide records live on the drives.
pub(crate) const SYSTEM: Table<SystemRecord> = Table::system();

/// One deployment-wide record as stored on a drive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SystemRecord {
    /// Random, fixed at creation.
    id: String,
    /// Bumped by every change.
    revision: u64,
    value: Vec<u8>,
}

impl Revisioned for SystemRecord {
    fn id(&self) -> &str {
        &self.id
    }
    fn revision(&self) -> u64 {
        self.revision
    }
}

impl ObjectStore {
    /// Puts deployment-wide records back where drives miss them or hold older revisions.
    pub(crate) async fn heal_system_records(&self) -> Result<super::HealReport, ObjectError> {
        self.heal_table::<SystemRecord>(SYSTEM).await
    }

    /// The value of a deployment-wide record; `None` when it does not exist.
    pub async fn system_get(&self, key: &str) -> Result<Option<Vec<u8>>, ObjectError> {
        Ok(self.system_record(key).await?.map(|r| r.value))
    }

    /// Creates or replaces a deployment-wide record on every set.
    pub async fn system_put(&self, key: &str, value: Vec<u8>) -> Result<(), ObjectError> {
        self.system_put_where(key, value, |_| true)
            .await
            .map(|_| ())
    }

    /// Replaces a deployment-wide record only if it still holds `expected` (`None`: only if it
    /// does not exist), as one compare-and-swap across every server: the commit is
    /// conditional on the record it compared. `false` when another writer changed it first.
    pub async fn system_put_if(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        value: Vec<u8>,
    ) -> Result<bool, ObjectError> {
        let holds_expected =
            |base: Option<&SystemRecord>| base.map(|r| r.value.as_slice()) == expected;
        self.system_put_where(key, value, holds_expected).await
    }

    /// Puts the record if `condition` holds of the record read (`false` when it does not),
    /// committing conditionally on that record.
    async fn system_put_where(
        &self,
        key: &str,
        value: Vec<u8>,
        condition: impl Fn(Option<&SystemRecord>) -> bool,
    ) -> Result<bool, ObjectError> {
        self.may_change_records().await?;
        let _guard = self.locks.write(LOCK_NAMESPACE, key).await;
        let put = retry_conflicts(|| async {
            let (base, base_bytes) = match self.authority() {
                Some(authority) => {
                    let decided = authority.read(SYSTEM, key.as_bytes());
                    decided.await?.unzip()
                }
                None => (self.system_record(key).await?, None),
            };
            if !condition(base.as_ref()) {
                return Ok(false);
            }
            let record = match &base {
                Some(current) => SystemRecord {
                    id: current.id.clone(),
                    revision: current.revision + 1,
                    value: value.clone(),
                },
                None => SystemRecord {
                    id: uuid::Uuid::new_v4().simple().to_string(),
                    revision: 0,
                    value: value.clone(),
                },
            };
            if let Some(authority) = self.authority() {
                let decided = (SYSTEM, key.as_bytes());
                (authority.change(decided, base_bytes.as_deref(), Some(&record))).await?;
                return Ok(true);
            }
            let op = SYSTEM.put(key.as_bytes().to_vec(), &record);
            self.system_apply(key, op, base.as_ref()).await?;
            Ok(true)
        })
        .await;
        if !matches!(put, Ok(false)) {
            self.announce(RecordChange::System(key.to_string())).await;
        }
        put
    }

    /// Deletes a deployment-wide record from every set; whether it existed.
    pub async fn system_delete(&self, key: &str) -> Result<bool, ObjectError> {
        self.may_change_records().await?;
        let _guard = self.locks.write(LOCK_NAMESPACE, key).await;
        let deleted = retry_conflicts(|| async {
            if let Some(authority) = self.authority() {
                let decided = authority.read(SYSTEM, key.as_bytes());
                let Some((_, base_bytes)) = decided.await? else {
                    return Ok(false);
                };
                let decided = (SYSTEM, key.as_bytes());
                (authority.change(decided, Some(&base_bytes), None)).await?;
                return Ok(true);
            }
            let base = self.system_record(key).await?;
            let op = SYSTEM.delete(key.as_bytes().to_vec());
            self.system_apply(key, op, base.as_ref()).await?;
            Ok(base.is_some())
        })
        .await;
        self.announce(RecordChange::System(key.to_string())).await;
        deleted
    }

    /// Every deployment-wide record whose key starts with `prefix`, in key order.
    pub async fn system_list(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, ObjectError> {
        if let Some(authority) = self.authority() {
            match authority.list(SYSTEM, prefix.as_bytes()).await {
                Ok(records) => {
                    return Ok((records.into_iter())
                        .map(|(key, record)| (String::from_utf8_lossy(&key).into(), record.value))
                        .collect())
                }
                Err(e) => {
                    tracing::debug!(error = %e, "system records listed from the drives' copy")
                }
            }
        }
        let records = self.system_records(prefix).await?;
        Ok((records.into_iter())
            .map(|(key, record)| (key, record.value))
            .collect())
    }

    /// Every deployment-wide record whose key starts with `prefix`, as the drives agree on
    /// it; an error while they cannot tell.
    pub(super) async fn system_records(
        &self,
        prefix: &str,
    ) -> Result<Vec<(String, SystemRecord)>, ObjectError> {
        let page = (self.sets[0])
            .scan_records::<SystemRecord>(SYSTEM, Bound::Unbounded, prefix.as_bytes(), usize::MAX)
            .await?;
        let mut out = Vec::new();
        for scanned in page.records {
            // The drive's own note of the records' revision is no record.
            if scanned.key.as_slice() == crate::records::authority::RECORDS_REVISION {
                continue;
            }
            if let Some(record) = scanned.agreed?.found() {
                out.push((String::from_utf8_lossy(&scanned.key).into_owned(), record));
            }
        }
        Ok(out)
    }

    /// The record as the drives agree on it, or as the authority holds it (the drives' copy
    /// while it cannot be reached).
    async fn system_record(&self, key: &str) -> Result<Option<SystemRecord>, ObjectError> {
        if let Some(authority) = self.authority() {
            match authority.read(SYSTEM, key.as_bytes()).await {
                Ok(decided) => return Ok(decided.map(|(record, _)| record)),
                Err(e) => tracing::debug!(error = %e, "system record read from the drives' copy"),
            }
        }
        // Every set holds every record; the first set answers for all.
        let agreed = self.sets[0].read_agreed(SYSTEM, key.as_bytes());
        Ok(agreed.await?.found())
    }

    /// Commits a change decided on `base` (the record read, if any) on every set; one that
    /// misses the write quorum of any set is undone everywhere.
    async fn system_apply(
        &self,
        key: &str,
        op: Change,
        base: Option<&SystemRecord>,
    ) -> Result<(), ObjectError> {
        revisioned::commit(&self.sets, (SYSTEM, key.as_bytes()), base, op)
            .await
            .map_err(ObjectError::from)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::erasure::ErasureSet;
    use crate::storage::{Drive, Format, LocalDrive, OfflineDrive};

    const DRIVES: usize = 9;

    /// A 6+3 set whose first `offline` drives are offline.
    fn store(dir: &std::path::Path, offline: usize) -> (Arc<ObjectStore>, Vec<Arc<LocalDrive>>) {
        let mut local = Vec::new();
        for i in offline..DRIVES {
            let root = dir.join(format!("d{i}"));
            let format = Format {
                version: 1,
                deployment_id: "test".into(),
                set_index: 0,
                drive_index: i,
                set_count: 1,
                data_shards: 6,
                parity_shards: 3,
                pool_index: 0,
                pool_id: None,
            };
            if LocalDrive::read_format(&root).unwrap().is_none() {
                LocalDrive::write_format(&root, &format).unwrap();
            }
            local.push(Arc::new(LocalDrive::open(&root).unwrap()));
        }
        let drives = (0..offline)
            .map(|i| Arc::new(OfflineDrive::new(format!("offline{i}"))) as Arc<dyn Drive>)
            .chain(local.iter().map(|d| d.clone() as Arc<dyn Drive>))
            .collect();
        let set = ErasureSet::new(0, drives, 3, 1 << 20).unwrap();
        (ObjectStore::new(vec![set], "test"), local)
    }

    #[tokio::test]
    async fn records_are_put_read_listed_and_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _) = store(dir.path(), 0);
        assert_eq!(store.system_get("a/1").await.unwrap(), None);
        store.system_put("a/1", b"one".to_vec()).await.unwrap();
        store.system_put("a/2", b"two".to_vec()).await.unwrap();
        store.system_put("b/1", b"other".to_vec()).await.unwrap();
        store
            .system_put("a/1", b"one again".to_vec())
            .await
            .unwrap();
        assert_eq!(
            store.system_get("a/1").await.unwrap().as_deref(),
            Some(&b"one again"[..])
        );
        let listed = store.system_list("a/").await.unwrap();
        assert_eq!(
            listed,
            [
                ("a/1".to_string(), b"one again".to_vec()),
                ("a/2".to_string(), b"two".to_vec())
            ]
        );
        assert!(store.system_delete("a/1").await.unwrap());
        assert!(!store.system_delete("a/1").await.unwrap());
        assert_eq!(store.system_get("a/1").await.unwrap(), None);
        assert_eq!(store.system_list("").await.unwrap().len(), 2);
    }

    #[tokio::test]
    async fn a_conditional_put_writes_only_over_what_it_expects() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _) = store(dir.path(), 0);
        assert!(store
            .system_put_if("k", None, b"one".to_vec())
            .await
            .unwrap());
        assert!(!store
            .system_put_if("k", None, b"again".to_vec())
            .await
            .unwrap());
        let stale = Some(&b"zero"[..]);
        assert!(!store
            .system_put_if("k", stale, b"lost".to_vec())
            .await
            .unwrap());
        assert_eq!(
            store.system_get("k").await.unwrap().as_deref(),
            Some(&b"one"[..])
        );
        let current = Some(&b"one"[..]);
        assert!(store
            .system_put_if("k", current, b"two".to_vec())
            .await
            .unwrap());
        assert_eq!(
            store.system_get("k").await.unwrap().as_deref(),
            Some(&b"two"[..])
        );
    }

    #[tokio::test]
    async fn the_newest_revision_wins_and_a_drive_that_missed_it_does_not_matter() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (store, _) = store(dir.path(), 0);
            store.system_put("k", b"old".to_vec()).await.unwrap();
        }
        // Three drives are away while the record changes.
        {
            let (store, _) = store(dir.path(), 3);
            store.system_put("k", b"new".to_vec()).await.unwrap();
            store.system_put("gone", b"x".to_vec()).await.unwrap();
        }
        {
            let (store, _) = store(dir.path(), 0);
            assert_eq!(
                store.system_get("k").await.unwrap().as_deref(),
                Some(&b"new"[..])
            );
            assert_eq!(store.system_list("k").await.unwrap()[0].1, b"new");
        }
        // Four drives away: no write quorum, and nothing changes.
        {
            let (short, _) = store(dir.path(), 4);
            assert!(short.system_put("k", b"lost".to_vec()).await.is_err());
        }
        let (store, _) = store(dir.path(), 0);
        assert_eq!(
            store.system_get("k").await.unwrap().as_deref(),
            Some(&b"new"[..])
        );
    }
}
