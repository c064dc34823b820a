//! Deployment-wide records decided by an authority (etcd, in a cluster: its contract and
//! tombstones are [`super::authority`]): bucket records, and the system records that hold
//! users, policies and the key catalog. Each change is a compare-and-swap in the authority,
//! on the bytes the change was decided on; the drives then keep a copy of the record, the
//! same bytes, as on a server alone. The copy serves reads while the authority cannot be
//! reached (settings changes wait for it), and lets a new etcd be filled from the drives.
//! Heal brings the copies in line with it.
//!
//! Absence in the authority is never taken for a deletion: an etcd restored from an older
//! snapshot, or whose keys were deleted, lacks what it once held. So a deleted record stays
//! in the authority as a tombstone, and a record the authority lacks that the drives agree
//! on is put back into it. Every change also raises the records' revision, in the same
//! transaction, and each drive keeps the revision of the last change it copied
//! ([`RECORDS_REVISION`]): a drive ahead of the authority shows that the authority lost
//! changes, and it is filled again from the drives before any change is decided over it.
//!
//! A server alone on its drives has no authority: the drives decide, each change committed
//! conditionally on a write quorum ([`super::revisioned::commit`]).

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::authority::{
    agreed_records, authority_key, copy_fixes, decided_in, is_later, put_if_absent, Divergence,
    Held, RecordAuthority, DELETED, RECORDS_REVISION,
};
use super::revisioned::Revisioned;
use super::{codec, Change, DriveError, RecordError, RecordSet, Table, TableId};

/// How many times a record's copy is written again because the authority's value changed
/// meanwhile, before heal is left to bring the drives in line.
const COPY_ROUNDS: usize = 3;
/// How many times one set is written while fewer than its write quorum took the copy, and the
/// pause between two writes.
const SET_WRITES: usize = 3;
const SET_RETRY: Duration = Duration::from_millis(200);

/// Each drive's note of the records revision it last copied, among the system records: a
/// decimal number, no record.
enum RevisionNote {}
const REVISION_NOTES: Table<RevisionNote> = Table::system();

/// A kind of record the authority decides, as the flows here need it whatever its type.
#[async_trait]
pub trait DecidedKind: Send + Sync {
    fn table(&self) -> TableId;
    /// Whether `a` is a later revision of the same record as `b` (both as stored).
    fn is_later(&self, a: &[u8], b: &[u8]) -> bool;
    /// Every record of the kind some drive of `set` holds, and what the set agrees on about
    /// it. Fails unless a read quorum of drives listed theirs.
    async fn agreed_on(&self, set: &RecordSet) -> Result<BTreeMap<Vec<u8>, Held>, RecordError>;
}

#[async_trait]
impl<T: Revisioned + 'static> DecidedKind for Table<T> {
    fn table(&self) -> TableId {
        self.id()
    }

    fn is_later(&self, a: &[u8], b: &[u8]) -> bool {
        is_later::<T>(a, b)
    }

    async fn agreed_on(&self, set: &RecordSet) -> Result<BTreeMap<Vec<u8>, Held>, RecordError> {
        agreed_records(set, *self).await
    }
}

/// What a heal of the drives' copies did (see [`Decided::heal_copies`]).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CopiesHealed {
    /// Records the authority holds, counted once per set.
    pub checked: u64,
    /// Copies put, changed or removed on drives, and records put back into the authority.
    pub repaired: u64,
}

/// A record to replace in the authority: its key there, what it holds now, what it takes.
type Replacement<'a> = (String, Option<&'a [u8]>, &'a [u8]);

/// The decided records of a deployment: the authority that decides them, the sets whose
/// drives keep their copies, and the kinds it decides.
pub struct Decided<'a> {
    pub authority: &'a Arc<dyn RecordAuthority>,
    pub sets: &'a [RecordSet],
    /// What was found of the authority behind the drives (see [`Divergence`]).
    pub divergence: &'a Divergence,
    pub kinds: &'a [&'a dyn DecidedKind],
}

impl Decided<'_> {
    /// A record as the authority holds it, with its bytes (what a change compares); `Err`
    /// when the authority cannot be reached. A record the authority lacks (and holds no
    /// tombstone of) that the drives agree on is put back into it first.
    pub async fn read<T: Revisioned>(
        &self,
        table: Table<T>,
        key: &[u8],
    ) -> Result<Option<(T, Vec<u8>)>, RecordError> {
        let bytes = match self.authority.get(&authority_key(table, key)).await? {
            Some(bytes) if bytes == DELETED => return Ok(None),
            Some(bytes) => bytes,
            None => match self.put_back(table, key).await? {
                Some(bytes) => bytes,
                None => return Ok(None),
            },
        };
        Ok(Some((codec::decode(&bytes)?, bytes)))
    }

    /// Every record of `table` whose key starts with `prefix`, in key order, as the
    /// authority holds it (tombstones left out), by its key on the drives.
    pub async fn list<T: Revisioned>(
        &self,
        table: Table<T>,
        prefix: &[u8],
    ) -> Result<Vec<(Vec<u8>, T)>, RecordError> {
        let root = authority_key(table, b"");
        let records = self.authority.list(&authority_key(table, prefix)).await?;
        Ok((records.into_iter())
            .filter(|(_, value)| value != DELETED)
            .filter_map(|(key, value)| {
                let record = codec::decode(&value).ok()?;
                Some((key.as_bytes()[root.len()..].to_vec(), record))
            })
            .collect())
    }

    /// Puts a record the authority lacks back into it from the drives, when a read quorum of
    /// them agrees on it; answers what the authority then holds (`None`: no record).
    async fn put_back<T: Revisioned>(
        &self,
        table: Table<T>,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>, RecordError> {
        let Some(record) = self.sets[0].read_agreed(table, key).await?.found() else {
            return Ok(None);
        };
        let bytes = codec::encode(&record);
        let name = authority_key(table, key);
        if put_if_absent(self.authority, &name, &bytes).await? {
            self.divergence
                .records_put_back
                .fetch_add(1, Ordering::Relaxed);
            tracing::warn!(record = %name, "etcd lacked a record the drives hold (restored or deleted keys?): put back from the drives");
        }
        match self.authority.get(&name).await? {
            Some(held) if held == DELETED => Ok(None),
            Some(held) => Ok(Some(held)),
            None => Ok(Some(bytes)),
        }
    }

    /// Changes a record in the authority if it still holds `base` ([`RecordError::Conflict`]
    /// when another server changed it, or any record, first), then its copy on the drives.
    /// `value` `None` deletes the record: the authority keeps its tombstone.
    pub async fn change<T>(
        &self,
        (table, key): (Table<T>, &[u8]),
        base: Option<&[u8]>,
        value: Option<&T>,
    ) -> Result<(), RecordError>
    where
        T: Revisioned,
    {
        let revision = self.revision_not_behind().await?;
        let name = authority_key(table, key);
        let value = value.map(codec::encode);
        let stored = value.as_deref().unwrap_or(DELETED);
        let authority = self.authority;
        let mut swapped = authority.swap(&name, base, stored, revision).await?;
        if !swapped && base.is_none() {
            // Holding no record is also holding a deleted one's tombstone.
            swapped = authority
                .swap(&name, Some(DELETED), stored, revision)
                .await?;
        }
        if !swapped {
            return Err(RecordError::Conflict);
        }
        self.copy_to_drives((table, key), value, revision + 1).await;
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
        (table, key): (Table<T>, &[u8]),
        mut value: Option<Vec<u8>>,
        mut revision: u64,
    ) {
        let name = authority_key(table, key);
        for _ in 0..COPY_ROUNDS {
            self.write_copies(table, key, value.clone(), revision).await;
            let (Ok(now), Ok(now_revision)) = (
                self.authority.get(&name).await,
                self.authority.revision().await,
            ) else {
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
        let copy = match value {
            Some(value) => table.put_stored(key.to_vec(), value),
            None => table.delete(key.to_vec()),
        };
        let note = revision.to_string().into_bytes();
        let changes = vec![
            copy,
            REVISION_NOTES.put_stored(RECORDS_REVISION.to_vec(), note),
        ];
        futures::future::join_all(self.sets.iter().map(|set| async {
            for _ in 0..SET_WRITES {
                let answers = set.apply_all(changes.clone()).await;
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
    pub async fn drives_revision(&self) -> u64 {
        let answers = (self.sets[0])
            .stored_all(REVISION_NOTES, RECORDS_REVISION)
            .await;
        (answers.into_iter().flatten().flatten())
            .filter_map(|bytes| std::str::from_utf8(&bytes).ok()?.parse::<u64>().ok())
            .max()
            .unwrap_or(0)
    }

    /// The authority's records revision, once it is not behind the drives' (else it is
    /// filled from them first): a change decided over an etcd that lost changes could undo
    /// them, a key catalog saved over an older one would lose keys.
    async fn revision_not_behind(&self) -> Result<u64, RecordError> {
        let revision = self.authority.revision().await?;
        if self.drives_revision().await <= revision {
            return Ok(revision);
        }
        self.refill().await?;
        self.authority.revision().await
    }

    /// When the authority is behind the drives (a drive copied a later records revision
    /// than it holds: etcd restored from an older snapshot, or its records deleted), makes
    /// each record in it what a read quorum of the drives agrees on (a later revision of the
    /// same record in the authority stays), turns records no drive holds into tombstones,
    /// and raises its revision to the drives'. Records the drives disagree on are left as
    /// they are. Answers whether it was behind.
    pub async fn refill(&self) -> Result<bool, RecordError> {
        let authority = self.authority;
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
        for kind in self.kinds {
            let table = kind.table();
            let decided = decided_in(authority, table).await?;
            let on_drives = kind.agreed_on(&self.sets[0]).await?;
            let mut changes: Vec<Replacement> = Vec::new();
            for (key, held) in &on_drives {
                let in_authority = decided.get(key).map(Vec::as_slice);
                let keep = match (held, in_authority) {
                    // A later revision of the same record in the authority stays.
                    (Held::Agreed(bytes), Some(held)) if kind.is_later(held, bytes) => held,
                    (Held::Agreed(bytes), _) => bytes.as_slice(),
                    (Held::Nowhere, _) => DELETED,
                    (Held::Undecided, _) => continue,
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
                    return Err(RecordError::Conflict);
                }
                tracing::warn!(record = %name, "etcd's record replaced by the drives' copy");
                revision += 1;
                put_back += 1;
            }
        }
        if revision < copied && !authority.raise_revision(revision, copied).await? {
            return Err(RecordError::Conflict);
        }
        self.divergence
            .records_put_back
            .fetch_add(put_back, Ordering::Relaxed);
        tracing::warn!(put_back, "etcd is in line with the drives' records again");
        Ok(true)
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
    pub async fn heal_copies(&self) -> Result<CopiesHealed, RecordError> {
        let authority = self.authority;
        let mut healed = CopiesHealed::default();
        self.refill().await?;
        for kind in self.kinds {
            let table = kind.table();
            for set in self.sets {
                let scans = set.scan_all(table, Bound::Unbounded, &[], usize::MAX).await;
                let decided = decided_in(authority, table).await?;
                healed.checked += decided.len() as u64;
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
                    healed.repaired += repaired as u64;
                }
                // Records the drives hold that the authority lacks go back into it.
                for (key, held) in kind.agreed_on(set).await? {
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
                        healed.repaired += 1;
                    }
                }
            }
        }
        Ok(healed)
    }
}
