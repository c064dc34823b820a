//! Listings of records: which keys a scan of a set's drives has decided, and what the set
//! agrees each of them holds. Every listing of records (buckets, deployment-wide records,
//! uploads, parts, the keys a heal goes over) pages by the one rule here.
//!
//! Each drive answers at most a page of keys in order. A drive whose page is full may hold
//! more keys after its last one, so a key is decided only if every full page reached it: a
//! drive that answered without it then surely does not hold it.

use std::collections::BTreeMap;
use std::ops::Bound;

use futures::future::join_all;
use serde::de::DeserializeOwned;

use super::table::{Table, TableId};
use super::{codec, Agreement, RecordSet, Replica};
use crate::erasure::ErasureError;
use crate::storage::DriveError;

/// Keys each drive is asked for per page of a scan over a whole namespace.
pub const SCAN_PAGE: usize = 500;

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// The last key decided by pages of at most `limit` entries (see the module docs): the
/// smallest last key of a full page; `None` when no page was full, and every key was seen.
fn decided_until<'a>(pages: impl Iterator<Item = &'a Entries>, limit: usize) -> Option<Vec<u8>> {
    pages
        .filter(|entries| entries.len() >= limit)
        .filter_map(|entries| entries.last().map(|(key, _)| key.clone()))
        .min()
}

/// One page of the keys the drives of a set hold (see [`RecordSet::scan_keys`]).
pub struct KeyPage {
    /// In order, each once.
    pub keys: Vec<Vec<u8>>,
    /// Where the next page starts (after this key); `None`: this was the last.
    pub next: Option<Vec<u8>>,
    /// Drives whose scan failed: what they hold is not in the page.
    pub unanswered: usize,
}

impl KeyPage {
    /// Whether enough drives answered for every key a write quorum committed to be in the
    /// page: such a key is on a write quorum of drives, so on one that answered unless at
    /// least a write quorum did not.
    pub fn holds_every_committed_key(&self, set: &RecordSet) -> bool {
        self.unanswered < set.write_quorum()
    }
}

/// A record a scan decided: what the set agrees it is, and each drive's copy as stored.
pub struct Scanned<T> {
    pub key: Vec<u8>,
    /// An error where the answers cannot tell (too few drives vouch either way).
    pub agreed: Result<Agreement<T>, ErasureError>,
    /// Drive by drive, the copy as stored; `None` where it holds none or did not answer.
    pub stored: Vec<Option<Vec<u8>>>,
}

/// One page of a scan of records (see [`RecordSet::scan_records`]).
pub struct RecordPage<T> {
    /// In key order.
    pub records: Vec<Scanned<T>>,
    /// Where the next page starts (after this key); `None`: this was the last.
    pub next: Option<Vec<u8>>,
}

impl RecordSet {
    /// One page of the keys any drive of the set holds in `tables` under `prefix`, from
    /// `start` on. The drives that did not answer are counted, not waited for: a heal goes
    /// over what it can see.
    pub async fn scan_keys(
        &self,
        tables: &[TableId],
        start: Bound<Vec<u8>>,
        prefix: &[u8],
    ) -> KeyPage {
        let scans = join_all(
            (tables.iter()).map(|&table| self.scan_all(table, start.clone(), prefix, SCAN_PAGE)),
        )
        .await;
        // A drive is unanswered if any of its tables' scans failed.
        let mut failed = vec![false; self.width()];
        for scan in &scans {
            for (drive, answer) in scan.iter().enumerate() {
                failed[drive] |= answer.is_err();
            }
        }
        let pages: Vec<Entries> = scans.into_iter().flatten().flatten().collect();
        let next = decided_until(pages.iter(), SCAN_PAGE);
        let mut keys: Vec<Vec<u8>> = (pages.into_iter().flatten())
            .map(|(key, _)| key)
            .filter(|key| next.as_ref().is_none_or(|last| key <= last))
            .collect();
        keys.sort();
        keys.dedup();
        KeyPage {
            keys,
            next,
            unanswered: failed.iter().filter(|&&f| f).count(),
        }
    }

    /// One page of the records of `table` under `prefix` from `start` on, each drive asked
    /// for at most `limit`, with what the set agrees each decided key holds (a copy that does
    /// not decode counts as none). Fails unless a read quorum of drives answered: fewer could
    /// all miss a record a write quorum holds, and a listing never decides from absence.
    pub async fn scan_records<T: Replica + DeserializeOwned>(
        &self,
        table: Table<T>,
        start: Bound<Vec<u8>>,
        prefix: &[u8],
        limit: usize,
    ) -> Result<RecordPage<T>, ErasureError> {
        let scans = self.scan_all(table.id(), start, prefix, limit).await;
        if scans.iter().filter(|scan| scan.is_ok()).count() < self.read_quorum() {
            return Err(ErasureError::ReadQuorum);
        }
        let next = decided_until(scans.iter().flatten(), limit);
        // Each decided key's copies, drive by drive.
        let mut stored: BTreeMap<Vec<u8>, Vec<Option<Vec<u8>>>> = BTreeMap::new();
        for (drive, scan) in scans.iter().enumerate() {
            for (key, value) in scan.iter().flatten() {
                if next.as_ref().is_some_and(|last| key > last) {
                    break;
                }
                let copies = (stored.entry(key.clone())).or_insert_with(|| vec![None; scans.len()]);
                copies[drive] = Some(value.clone());
            }
        }
        let records = (stored.into_iter())
            .map(|(key, stored)| {
                let answers: Vec<Result<Option<T>, DriveError>> = (scans.iter().zip(&stored))
                    .map(|(scan, copy)| match scan {
                        Ok(_) => Ok(copy.as_deref().and_then(|c| codec::decode(c).ok())),
                        Err(_) => Err(DriveError::Offline(String::new())),
                    })
                    .collect();
                Scanned {
                    key,
                    agreed: self.agree(&answers),
                    stored,
                }
            })
            .collect();
        Ok(RecordPage { records, next })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::erasure::ErasureSet;
    use crate::storage::{Drive, Format, LocalDrive, MetaOp, MetaTable, OfflineDrive};

    /// A record written once, told apart by its id.
    #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Toy {
        id: u32,
    }

    impl Replica for Toy {
        type Rank = u32;
        fn is_current(&self, value: &Self) -> bool {
            self.id == value.id
        }
        fn vouches_for(&self, value: &Self) -> bool {
            self.is_current(value)
        }
        fn values(&self) -> Vec<Self> {
            vec![self.clone()]
        }
        fn rank(&self) -> u32 {
            self.id
        }
    }

    /// A 6+3 set whose first `offline` drives are offline, and its online drives.
    fn set_with_offline(
        dir: &std::path::Path,
        offline: usize,
    ) -> (RecordSet, Vec<Arc<LocalDrive>>) {
        let mut online = Vec::new();
        for i in offline..9 {
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
            LocalDrive::write_format(&root, &format).unwrap();
            online.push(Arc::new(LocalDrive::open(&root).unwrap()));
        }
        let drives = (0..offline)
            .map(|i| Arc::new(OfflineDrive::new(format!("offline{i}"))) as Arc<dyn Drive>)
            .chain(online.iter().map(|d| d.clone() as Arc<dyn Drive>))
            .collect();
        let set = ErasureSet::new(0, drives, 3, 1 << 20).unwrap();
        (RecordSet::from(set), online)
    }

    async fn put(drive: &LocalDrive, key: &str, value: Vec<u8>) {
        let op = MetaOp::Put {
            table: MetaTable::System,
            key: key.as_bytes().to_vec(),
            value,
        };
        drive.meta_apply(vec![op]).await.unwrap();
    }

    async fn page(set: &RecordSet, start: Bound<Vec<u8>>) -> RecordPage<Toy> {
        let scanned = set.scan_records(Table::<Toy>::system(), start, b"", 2);
        scanned.await.unwrap()
    }

    fn keys(page: &RecordPage<Toy>) -> Vec<&[u8]> {
        page.records.iter().map(|r| r.key.as_slice()).collect()
    }

    #[tokio::test]
    async fn a_key_is_decided_once_every_full_page_reached_it_and_listed_once() {
        let dir = tempfile::tempdir().unwrap();
        let (set, drives) = set_with_offline(dir.path(), 0);
        for (i, drive) in drives.iter().enumerate() {
            put(drive, "k1", codec::encode(&Toy { id: 1 })).await;
            // On three drives only: the other six say it does not exist.
            if i >= 6 {
                put(drive, "k2", codec::encode(&Toy { id: 2 })).await;
            }
            // A copy that does not decode counts as none.
            let k3 = match i {
                0 => b"damaged".to_vec(),
                _ => codec::encode(&Toy { id: 3 }),
            };
            put(drive, "k3", k3).await;
        }
        // Pages of two: drives 6..9 stop at k2, so k3 (the others' second key) waits.
        let first = page(&set, Bound::Unbounded).await;
        assert_eq!(keys(&first), [b"k1".as_slice(), b"k2"]);
        assert_eq!(first.next.as_deref(), Some(b"k2".as_slice()));
        let agreed: Vec<_> = (first.records.into_iter())
            .map(|r| r.agreed.unwrap().found())
            .collect();
        assert_eq!(agreed, [Some(Toy { id: 1 }), None]);

        let second = page(&set, Bound::Excluded(b"k2".to_vec())).await;
        assert_eq!(keys(&second), [b"k3".as_slice()]);
        assert_eq!(second.next, None, "no drive's page was full");
        let k3 = &second.records[0];
        assert_eq!(k3.stored[0].as_deref(), Some(b"damaged".as_slice()));
        match &k3.agreed {
            Ok(Agreement::Found { value, holders }) => {
                assert_eq!(value, &Toy { id: 3 });
                assert!(!holders[0] && holders[1..].iter().all(|&h| h));
            }
            other => panic!("k3 is on eight drives: {:?}", other.as_ref().map(|_| ())),
        }
    }

    #[tokio::test]
    async fn a_scan_fewer_than_a_read_quorum_answered_decides_nothing() {
        let dir = tempfile::tempdir().unwrap();
        // Four of nine offline: the five left could all miss a record six drives hold.
        let (set, drives) = set_with_offline(dir.path(), 4);
        for drive in &drives {
            put(drive, "k1", codec::encode(&Toy { id: 1 })).await;
        }
        let scanned = (set.scan_records(Table::<Toy>::system(), Bound::Unbounded, b"", 10)).await;
        assert!(matches!(scanned, Err(ErasureError::ReadQuorum)));

        let dir = tempfile::tempdir().unwrap();
        let (set, drives) = set_with_offline(dir.path(), 3);
        for drive in &drives {
            put(drive, "k1", codec::encode(&Toy { id: 1 })).await;
        }
        let page = (set.scan_records(Table::<Toy>::system(), Bound::Unbounded, b"", 10)).await;
        let found = page.unwrap().records.remove(0).agreed.unwrap().found();
        assert_eq!(
            found,
            Some(Toy { id: 1 }),
            "six of nine answered: a read quorum"
        );
    }
}
