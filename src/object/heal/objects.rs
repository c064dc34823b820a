//! Healing: putting back what drives of a set are missing — object records, inline chunks
//! and shard files — from what a read quorum of the others agrees on, and purging what a
//! definite majority says no longer exists.
//!
//! Healing never deletes the last good copy of anything: it purges a record only when
//! agreement says "not found" (more than parity-count drives answered so; offline drives
//! never count), and leaves anything it cannot decide alone, with a log line.

use std::ops::Bound;

use futures::future::join_all;
use serde::Serialize;
use tokio::sync::mpsc;
use uuid::Uuid;

use crate::erasure::{DataDir, ErasureError, ShardSource};
use crate::object::heal::purge::SourcesAsked;
use crate::object::record::{
    inline_key, object_key, BucketRecord, ObjectRecord, PartInfo, BUCKETS, INLINE_CHUNKS, OBJECTS,
    VERSIONS,
};
use crate::object::versions::agreed::{agree_on_version, lent_data, read_records};
use crate::object::versions::versioning::{key_versions, read_states};
use crate::object::{Agreement, BucketName, ObjectError, ObjectKey, ObjectStore};
use crate::records::copies::{Copies, Guard};
use crate::records::revisioned::{self, reachable, Revisioned};
use crate::records::{Change, RecordSet, Table, TableId};

/// How hard to look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HealDepth {
    /// Records, inline chunks and the presence of shard files.
    Quick,
    /// Also read every shard and verify its bitrot checksums (scrubbing, heal after a bad read).
    Deep,
}

/// What healing one object (or many) did.
#[derive(Debug, Default, Clone, Serialize, PartialEq, Eq)]
pub struct HealReport {
    pub objects_checked: u64,
    /// Bytes of object data the checked objects hold.
    pub bytes_checked: u64,
    /// Objects that had something repaired.
    pub objects_healed: u64,
    /// Drive records (object records with their inline chunks) rewritten.
    pub records_repaired: u64,
    /// Shard files rebuilt.
    pub shards_rebuilt: u64,
    /// Stale records of deleted objects removed.
    pub stale_purged: u64,
    /// Objects left alone because the drives did not agree (logged).
    pub unresolved: u64,
}

impl HealReport {
    pub fn add(&mut self, other: &HealReport) {
        self.objects_checked += other.objects_checked;
        self.bytes_checked += other.bytes_checked;
        self.objects_healed += other.objects_healed;
        self.records_repaired += other.records_repaired;
        self.shards_rebuilt += other.shards_rebuilt;
        self.stale_purged += other.stale_purged;
        self.unresolved += other.unresolved;
    }
}

/// Objects waiting for the healer after a read found a shard missing or corrupt. Bounded:
/// when it is full, later reports are dropped and the next scrub finds those objects.
pub struct HealQueue {
    sender: mpsc::Sender<(BucketName, ObjectKey)>,
    receiver: std::sync::Mutex<Option<mpsc::Receiver<(BucketName, ObjectKey)>>>,
}

impl HealQueue {
    pub fn new(capacity: usize) -> Self {
        let (sender, receiver) = mpsc::channel(capacity);
        Self {
            sender,
            receiver: std::sync::Mutex::new(Some(receiver)),
        }
    }

    /// A callback that queues one object for healing.
    pub fn reporter(&self, bucket: &BucketName, key: &ObjectKey) -> impl Fn() + Send + Sync {
        let sender = self.sender.clone();
        let object = (bucket.clone(), key.clone());
        move || {
            let _ = sender.try_send(object.clone());
        }
    }
}

impl ObjectStore {
    /// Objects reads found damaged that wait for the healer.
    pub fn heal_requests_queued(&self) -> u64 {
        let sender = &self.heal_queue.sender;
        (sender.max_capacity() - sender.capacity()) as u64
    }

    /// How many objects a heal of `scope` goes over.
    pub async fn count_objects(&self, scope: &HealScope) -> u64 {
        let scan_prefix = scope.scan_prefix();
        let mut count = 0;
        for set in self.sets_in(scope) {
            let mut start = Bound::Unbounded;
            loop {
                let page = set.scan_keys(&object_tables(), start, &scan_prefix).await;
                count += page.keys.len() as u64;
                match page.next {
                    Some(after) => start = Bound::Excluded(after),
                    None => break,
                }
            }
        }
        count
    }

    /// Removes what a deleted bucket of this name left behind (see [`remove_leftover`]), so
    /// that a new bucket of the name starts empty; an error while a drive may still hold some.
    pub(in crate::object) async fn remove_leftovers_of(
        &self,
        name: &BucketName,
    ) -> Result<(), ObjectError> {
        let prefix = object_key(name.as_str(), "");
        let mut total = HealReport::default();
        for set in &self.sets {
            let mut start = Bound::Unbounded;
            loop {
                let page = set.scan_keys(&object_tables(), start, &prefix).await;
                // Too few drives answered to see every leftover a quorum committed.
                if !page.holds_every_committed_key(set) {
                    return Err(ObjectError::Unavailable(ErasureError::ReadQuorum));
                }
                for db_key in &page.keys {
                    total.add(&remove_leftover(set, db_key).await);
                }
                match page.next {
                    Some(after) => start = Bound::Excluded(after),
                    None => break,
                }
            }
        }
        if total.stale_purged > 0 {
            tracing::warn!(bucket = %name, records = total.stale_purged, "removed the records a deleted bucket of this name left");
        }
        match total.unresolved {
            0 => Ok(()),
            _ => Err(ObjectError::Unavailable(ErasureError::ReadQuorum)),
        }
    }

    /// The queue of objects that reads found damaged; the healer takes it once.
    pub fn take_heal_requests(&self) -> Option<mpsc::Receiver<(BucketName, ObjectKey)>> {
        self.heal_queue
            .receiver
            .lock()
            .expect("not poisoned")
            .take()
    }
}

impl ObjectStore {
    /// Heals one object on its set.
    pub async fn heal_object(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
        depth: HealDepth,
    ) -> Result<HealReport, ObjectError> {
        let bucket_record = self.bucket(bucket).await?;
        let (set, _writing) = self.set_for(bucket, key).await?;
        let states = read_states(set, bucket.as_str(), key.as_str()).await;
        if states.iter().any(|s| matches!(s, Ok(Some(_)))) {
            if let Some(report) = self.heal_versioned(set, &bucket_record, key, depth).await? {
                return Ok(report);
            }
        }
        let mut report = HealReport {
            objects_checked: 1,
            ..HealReport::default()
        };
        let records = read_records(set, bucket.as_str(), key.as_str()).await;
        let version = match agree_on_version(set, &records) {
            Ok(Agreement::Found { value, .. }) if !value.delete_marker => value,
            Ok(_) => {
                let purge = self.purge_stale(set, &bucket_record, key).await?;
                report.stale_purged = purge.purged;
                report.unresolved = u64::from(purge.deferred);
                return Ok(report);
            }
            Err(ObjectError::Unavailable(ErasureError::ReadQuorum)) => {
                tracing::warn!(bucket = %bucket, key = %key, "heal: drives do not agree on this object; left as it is");
                report.unresolved = 1;
                return Ok(report);
            }
            Err(e) => return Err(e),
        };
        report.bytes_checked = version.size;
        let online: Vec<bool> = records.iter().map(reachable).collect();
        let record_ok: Vec<bool> = records
            .iter()
            .map(|r| matches!(r, Ok(Some(held)) if held.same_version(&version)))
            .collect();
        let heal = heal_data(
            set,
            &bucket_record,
            key,
            StoredData::of(&version),
            depth,
            &online,
            &mut report,
        )
        .await?;
        let targets: Vec<bool> = (0..online.len())
            .map(|i| online[i] && (!record_ok[i] || !heal.data_ok[i]))
            .collect();
        if !targets.contains(&true) {
            return Ok(report);
        }

        // Commit, if the version is still the current one.
        let guard = self.locks.write(bucket.as_str(), key.as_str()).await;
        let now = read_records(set, bucket.as_str(), key.as_str()).await;
        let still_current = matches!(
            agree_on_version(set, &now),
            Ok(Agreement::Found { value, .. }) if value.same_version(&version)
        );
        if !still_current {
            drop(guard);
            set.remove_staged(heal.staging).await;
            return Ok(report);
        }
        let mut healed = version.clone();
        healed.superseded = None;
        let record = vec![OBJECTS.put(object_key(bucket.as_str(), key.as_str()), &healed)];
        // A drive holding a value no agreement accounts for (a write in flight) is left.
        let targets = (targets.iter().enumerate())
            .map(|(i, &target)| match target {
                true => now.guard_on(set, i, Some(&version)),
                false => Guard::LeaveOut,
            })
            .collect();
        let results = commit_healed(
            set,
            &bucket_record,
            key,
            targets,
            &[(healed.data_id, heal)],
            record,
        )
        .await;
        drop(guard);
        report.records_repaired = results.iter().filter(|&&ok| ok).count() as u64;
        report.objects_healed = u64::from(report.records_repaired > 0);
        // What the healed drives held before, other than this version (and data a rename
        // passed on), is garbage now.
        let lent = lent_data(&records);
        let mut sources = SourcesAsked::default();
        for (i, held) in records.iter().enumerate() {
            if !results[i] {
                continue;
            }
            if let Ok(Some(old)) = held {
                for stale in old
                    .with_superseded()
                    .filter(|v| v.data_id != version.data_id && !lent.contains(&v.data_id))
                {
                    let owner = (&bucket_record, key);
                    (self.drop_version_on(set, i, owner, stale, &mut sources)).await;
                }
            }
        }
        Ok(report)
    }
}

impl ObjectStore {
    /// Heals a key of a versioned bucket: the agreed versions record (and the `Objects`
    /// record of its newest version) goes to the drives that miss it or hold another state,
    /// and every version's data is checked and rebuilt like a single object's. `None` when
    /// no versions record is agreed on (stale ones are purged): the key then heals as an
    /// unversioned one.
    async fn heal_versioned(
        &self,
        set: &RecordSet,
        bucket_record: &BucketRecord,
        key: &ObjectKey,
        depth: HealDepth,
    ) -> Result<Option<HealReport>, ObjectError> {
        let mut report = HealReport {
            objects_checked: 1,
            ..HealReport::default()
        };
        let current = match key_versions(set, &bucket_record.name, key.as_str()).await {
            Ok(current) => current,
            Err(ObjectError::Unavailable(ErasureError::ReadQuorum)) => {
                tracing::warn!(bucket = %bucket_record.name, key = %key, "heal: drives do not agree on this key's versions; left as they are");
                report.unresolved = 1;
                return Ok(Some(report));
            }
            Err(e) => return Err(e),
        };
        let Some(state) = current.state.clone() else {
            let purge = self.purge_stale_states(set, bucket_record, key).await?;
            if purge.deferred {
                report.unresolved = 1;
                return Ok(Some(report));
            }
            return Ok(None);
        };
        let newest = state.versions.first().filter(|v| !v.delete_marker);
        let online: Vec<bool> = current.states.iter().map(reachable).collect();
        let record_ok: Vec<bool> = current
            .states
            .iter()
            .zip(&current.records)
            .map(|(held_state, held_object)| {
                let state_ok = matches!(held_state, Ok(Some(s)) if s.state == state.state);
                let object_ok = match (held_object, newest) {
                    (Ok(Some(held)), Some(newest)) => held.same_version(newest),
                    (Ok(None), None) => true,
                    _ => false,
                };
                state_ok && object_ok
            })
            .collect();
        let mut data_ok = vec![true; online.len()];
        let mut healed = Vec::new();
        for version in &state.versions {
            if version.has_local_data() {
                report.bytes_checked += version.size;
            }
            let heal = heal_data(
                set,
                bucket_record,
                key,
                StoredData::of(version),
                depth,
                &online,
                &mut report,
            )
            .await?;
            for (ok, &good) in data_ok.iter_mut().zip(&heal.data_ok) {
                *ok &= good;
            }
            healed.push((version.data_id, heal));
        }
        let targets: Vec<bool> = (0..online.len())
            .map(|i| online[i] && (!record_ok[i] || !data_ok[i]))
            .collect();
        let remove_staging = || async {
            for (_, heal) in &healed {
                set.remove_staged(heal.staging).await;
            }
        };
        if !targets.contains(&true) {
            remove_staging().await;
            return Ok(Some(report));
        }

        // Commit, if the key is still in the state healed.
        let guard = self.locks.write(&bucket_record.name, key.as_str()).await;
        let now = match key_versions(set, &bucket_record.name, key.as_str()).await {
            Ok(now) if now.state.as_ref().is_some_and(|s| s.state == state.state) => now,
            _ => {
                drop(guard);
                remove_staging().await;
                return Ok(Some(report));
            }
        };
        let db_key = object_key(&bucket_record.name, key.as_str());
        let records = vec![
            VERSIONS.put(db_key.clone(), &state),
            match newest {
                Some(newest) => OBJECTS.put(db_key, newest),
                None => OBJECTS.delete(db_key),
            },
        ];
        // A drive holding a value no agreement accounts for (a write in flight) is left.
        let targets = (targets.iter().enumerate())
            .map(|(i, &target)| match target {
                true => (now.states.guard_on(set, i, now.state.as_ref()))
                    .and(now.records.guard_on(set, i, now.object.as_ref())),
                false => Guard::LeaveOut,
            })
            .collect();
        let results = commit_healed(set, bucket_record, key, targets, &healed, records).await;
        drop(guard);
        report.records_repaired = results.iter().filter(|&&ok| ok).count() as u64;
        report.objects_healed = u64::from(report.records_repaired > 0);
        Ok(Some(report))
    }

    /// Puts every bucket record, and every deployment-wide record (users, policies), back on
    /// the drives that miss it or hold an older revision, and removes records that agreement
    /// says are gone. Records the drives do not agree on are left alone and counted
    /// unresolved. In a cluster whose records are decided by its control plane, the drives'
    /// copies are brought in line with it instead.
    pub async fn heal_buckets(&self) -> Result<HealReport, ObjectError> {
        if let Some(authority) = self.authority() {
            let healed = authority.heal_copies().await;
            self.forget_agreed_buckets();
            let healed = healed?;
            return Ok(HealReport {
                objects_checked: healed.checked,
                records_repaired: healed.repaired,
                ..HealReport::default()
            });
        }
        self.spread_records_to_every_set().await?;
        let healed = self.heal_table::<BucketRecord>(BUCKETS).await;
        // What the drives agree on may differ from what this server had agreed on before.
        self.forget_agreed_buckets();
        let mut report = healed?;
        report.add(&self.heal_system_records().await?);
        Ok(report)
    }

    /// Puts the bucket and deployment-wide records the first set holds on every set that
    /// lacks them all (agreement says absent): a pool added after a bucket was made never had
    /// its record (a change to the bucket would have written it there), and once the first
    /// pool is drained and dropped another pool's set answers for them. The first set is
    /// where every reader of these records looks, so its copy is the one clients see.
    pub async fn spread_records_to_every_set(&self) -> Result<(), ObjectError> {
        self.spread_table(BUCKETS).await?;
        self.spread_table(crate::object::system::SYSTEM).await
    }

    async fn spread_table<T: Revisioned>(&self, table: Table<T>) -> Result<(), ObjectError> {
        let Some((first, others)) = self.sets.split_first() else {
            return Ok(());
        };
        if others.is_empty() {
            return Ok(());
        }
        let page = first
            .scan_records::<T>(table, Bound::Unbounded, &[], usize::MAX)
            .await?;
        for scanned in page.records {
            // The drive's own note of the records' revision is no record.
            if scanned.key.as_slice() == crate::records::authority::RECORDS_REVISION {
                continue;
            }
            let Some(record) = scanned.agreed?.found() else {
                continue;
            };
            for set in others {
                let copies = Copies::<T>::read(set, table, scanned.key.clone()).await;
                if !matches!(set.agree(&copies)?, Agreement::NotFound) {
                    continue;
                }
                let put = vec![Some(vec![table.put(scanned.key.clone(), &record)]); set.width()];
                let guards: Vec<Guard> = (0..set.width())
                    .map(|i| copies.guard_on(set, i, None))
                    .collect();
                set.commit_guarded(put, &guards, None).await?;
            }
        }
        Ok(())
    }

    /// Heals every record of a replicated table on every set.
    pub(crate) async fn heal_table<T: Revisioned>(
        &self,
        table: Table<T>,
    ) -> Result<HealReport, ObjectError> {
        let mut report = HealReport::default();
        for set in &self.sets {
            let scans = set
                .scan_all(table.id(), Bound::Unbounded, &[], usize::MAX)
                .await;
            let mut names: Vec<Vec<u8>> = scans
                .iter()
                .flatten()
                .flat_map(|entries| entries.iter().map(|(k, _)| k.clone()))
                .collect();
            names.sort();
            names.dedup();
            for name in names {
                let healed = revisioned::heal(set, table, &name).await;
                report.records_repaired += healed.repaired;
                report.stale_purged += healed.purged;
                report.unresolved += u64::from(healed.unresolved);
            }
        }
        Ok(report)
    }

    /// Heals every object of the deployment, or of one bucket under a key prefix, calling
    /// `progress` after each object. `max_rate` bounds the object bytes checked per second,
    /// so that a scrub leaves the drives to the clients.
    pub async fn heal_objects(
        &self,
        scope: &HealScope,
        depth: HealDepth,
        max_rate: Option<u64>,
        mut progress: impl FnMut(&HealReport),
    ) -> Result<HealReport, ObjectError> {
        let started = std::time::Instant::now();
        let mut total = HealReport::default();
        let scan_prefix = scope.scan_prefix();
        for set in self.sets_in(scope) {
            let mut start = Bound::Unbounded;
            loop {
                let page = set.scan_keys(&object_tables(), start, &scan_prefix).await;
                // With a write quorum of drives unanswered, a key a write quorum committed may
                // be on none that answered: the pass is not settled.
                if !page.holds_every_committed_key(set) {
                    total.unresolved += page.unanswered as u64;
                }
                let next = page.next;
                for db_key in page.keys {
                    let Some((bucket, key)) = split_object_key(&db_key) else {
                        continue;
                    };
                    match self.heal_object(&bucket, &key, depth).await {
                        Ok(report) => total.add(&report),
                        // Records under a name no bucket holds (a PUT that raced the
                        // bucket's deletion): they went with their bucket.
                        Err(ObjectError::NoSuchBucket) => {
                            tracing::warn!(bucket = %bucket, key = %key, "heal: removing a record of a bucket that does not exist");
                            total.add(&remove_leftover(set, &db_key).await);
                        }
                        Err(e) => {
                            tracing::warn!(bucket = %bucket, key = %key, error = %e, "heal failed");
                            total.unresolved += 1;
                        }
                    }
                    progress(&total);
                    if let Some(rate) = max_rate.filter(|&r| r > 0) {
                        let due = std::time::Duration::from_secs_f64(
                            total.bytes_checked as f64 / rate as f64,
                        );
                        if let Some(wait) = due.checked_sub(started.elapsed()) {
                            tokio::time::sleep(wait).await;
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

/// What a heal pass goes over: one bucket (under a key prefix) or every bucket, on every
/// erasure set or on some.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HealScope {
    pub bucket: Option<BucketName>,
    pub prefix: String,
    /// The sets, by index; `None`: every set.
    pub sets: Option<Vec<usize>>,
}

impl HealScope {
    /// Every object of the sets with these indexes.
    pub fn of_sets(sets: Vec<usize>) -> Self {
        Self {
            sets: Some(sets),
            ..Self::default()
        }
    }

    /// The keys a scan of the objects in scope starts with.
    pub(in crate::object) fn scan_prefix(&self) -> Vec<u8> {
        match &self.bucket {
            Some(bucket) => object_key(bucket.as_str(), &self.prefix),
            None => Vec::new(),
        }
    }

    pub fn covers_set(&self, index: usize) -> bool {
        self.sets.as_ref().is_none_or(|sets| sets.contains(&index))
    }
}

impl std::fmt::Display for HealScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(bucket) = &self.bucket {
            write!(f, "{bucket}/{}", self.prefix)?;
        }
        if let Some(sets) = &self.sets {
            let sets: Vec<String> = sets.iter().map(|s| (s + 1).to_string()).collect();
            write!(f, "set {}", sets.join(", "))?;
        }
        Ok(())
    }
}

impl ObjectStore {
    /// The sets a heal of `scope` goes over.
    pub(in crate::object) fn sets_in<'a>(
        &'a self,
        scope: &'a HealScope,
    ) -> impl Iterator<Item = &'a RecordSet> + 'a {
        (self.sets.iter()).filter(|set| scope.covers_set(set.index()))
    }
}

/// What healing one version's data found and rebuilt.
pub(in crate::object) struct DataHeal {
    /// Staging folder holding rebuilt shard files, to commit on the drives they are for.
    pub staging: Uuid,
    /// Every drive's inline chunk, when some were missing or bad.
    pub inline_chunks: Option<Vec<bytes::Bytes>>,
    /// Drives whose data for the version is whole.
    pub data_ok: Vec<bool>,
    /// Drives that a rebuilt shard file waits for in staging.
    pub rebuilt_on: Vec<bool>,
}

/// What one version, or an upload in progress, keeps on the drives, as healing checks it.
pub(in crate::object) struct StoredData<'a> {
    pub data_id: Uuid,
    /// Bytes of user data when they are inline chunks; `None` for shard files (or nothing).
    pub inline_size: Option<u64>,
    /// The shard files, one per part; none for inline data, delete markers and tiered data.
    pub parts: &'a [PartInfo],
}

impl<'a> StoredData<'a> {
    pub fn of(version: &'a ObjectRecord) -> Self {
        let local = version.has_local_data();
        Self {
            data_id: version.data_id,
            inline_size: (local && version.inline).then_some(version.size),
            parts: match local && !version.inline {
                true => &version.parts,
                false => &[],
            },
        }
    }
}

/// Checks one version's data (inline chunks, or each part's shard files; with `Deep`, their
/// checksums too) and rebuilds what the online drives miss into staging.
pub(in crate::object) async fn heal_data(
    set: &RecordSet,
    bucket_record: &BucketRecord,
    key: &ObjectKey,
    data: StoredData<'_>,
    depth: HealDepth,
    online: &[bool],
    report: &mut HealReport,
) -> Result<DataHeal, ObjectError> {
    let bucket = &bucket_record.name;
    let dir = DataDir {
        bucket_id: bucket_record.id.clone(),
        data_id: data.data_id,
    };

    // Data: inline chunks, or each part's shard files.
    let staging = Uuid::new_v4();
    let mut inline_chunks = None;
    let mut data_ok = vec![true; online.len()];
    let mut rebuilt_on = vec![false; online.len()];
    if let Some(size) = data.inline_size {
        let chunk_key = inline_key(bucket.as_str(), key.as_str(), data.data_id);
        let sources: Vec<Option<ShardSource>> = set
            .stored_all(INLINE_CHUNKS, &chunk_key)
            .await
            .into_iter()
            .map(|c| c.ok().flatten().map(|b| ShardSource::Inline(b.into())))
            .collect();
        let good = set.verify_sources(size, &sources).await;
        data_ok = good.clone();
        if data_ok.iter().zip(online).any(|(&ok, &on)| on && !ok) {
            let sources = keep_good(sources, &good);
            inline_chunks = Some(set.rebuild_inline(size, sources).await?);
        }
    } else {
        for part in data.parts.iter().filter(|p| p.size > 0) {
            let sources = set.open_all_shards(&dir, &part.file).await;
            let good = match depth {
                HealDepth::Deep => set.verify_sources(part.size, &sources).await,
                HealDepth::Quick => sources.iter().map(Option::is_some).collect(),
            };
            let targets: Vec<bool> = good
                .iter()
                .zip(online)
                .map(|(&ok, &on)| on && !ok)
                .collect();
            for (ok, &g) in data_ok.iter_mut().zip(&good) {
                *ok &= g;
            }
            if !targets.contains(&true) {
                continue;
            }
            let sources = keep_good(sources, &good);
            let staged = set
                .rebuild_part(part.size, sources, &targets, staging, &part.file)
                .await?;
            for (i, &done) in staged.iter().enumerate() {
                if done {
                    rebuilt_on[i] = true;
                    report.shards_rebuilt += 1;
                }
            }
        }
    }
    Ok(DataHeal {
        staging,
        inline_chunks,
        data_ok,
        rebuilt_on,
    })
}

/// Puts what a heal rebuilt on the drives whose target is [`Guard::Expect`]: each version's
/// rebuilt shard files move from staging into place, then `records` and the rebuilt inline
/// chunks commit in one transaction per drive, if its conditions still hold. Staging is
/// removed afterwards. Returns which drives took it all.
pub(in crate::object) async fn commit_healed(
    set: &RecordSet,
    bucket: &BucketRecord,
    key: &ObjectKey,
    targets: Vec<Guard>,
    healed: &[(Uuid, DataHeal)],
    records: Vec<Change>,
) -> Vec<bool> {
    let results = join_all(targets.into_iter().enumerate().map(|(i, target)| {
        let records = records.clone();
        async move {
            let Guard::Expect(mut ops) = target else {
                return false;
            };
            ops.extend(records);
            for (data_id, heal) in healed {
                let dir = DataDir {
                    bucket_id: bucket.id.clone(),
                    data_id: *data_id,
                };
                if heal.rebuilt_on[i] && set.commit_staged_on(i, heal.staging, &dir).await.is_err()
                {
                    return false;
                }
                if let Some(chunks) = &heal.inline_chunks {
                    ops.push(INLINE_CHUNKS.put_stored(
                        inline_key(&bucket.name, key.as_str(), *data_id),
                        chunks[i].to_vec(),
                    ));
                }
            }
            set.apply_on(i, ops).await.is_ok()
        }
    }))
    .await;
    for (_, heal) in healed {
        set.remove_staged(heal.staging).await;
    }
    results
}

/// Keeps the sources that verified as good.
fn keep_good(sources: Vec<Option<ShardSource>>, good: &[bool]) -> Vec<Option<ShardSource>> {
    sources
        .into_iter()
        .zip(good)
        .map(|(source, &ok)| source.filter(|_| ok))
        .collect()
}

/// Splits a database key `bucket NUL key` back into names.
pub(in crate::object) fn split_object_key(db_key: &[u8]) -> Option<(BucketName, ObjectKey)> {
    let text = std::str::from_utf8(db_key).ok()?;
    let (bucket, key) = text.split_once('\0')?;
    Some((BucketName::parse(bucket).ok()?, ObjectKey::parse(key).ok()?))
}

/// Removes the object records a deleted bucket left under `db_key` (a PUT that committed
/// after the deletion found the bucket empty), each only if it is still the copy read, so
/// that a write into a new bucket of that name is never taken. Their data folders are then
/// referenced by nothing and go with the orphans. Unresolved while a drive cannot be read
/// or written, as it may hold them too.
pub(in crate::object) async fn remove_leftover(set: &RecordSet, db_key: &[u8]) -> HealReport {
    let mut batches: Vec<Vec<Change>> = vec![Vec::new(); set.width()];
    let objects = remove_if_unchanged(set, OBJECTS, db_key, &mut batches).await;
    let versions = remove_if_unchanged(set, VERSIONS, db_key, &mut batches).await;
    let unread = !(objects && versions);
    let batches = batches.into_iter().map(|b| (!b.is_empty()).then_some(b));
    let held: Vec<bool> = batches.clone().map(|b| b.is_some()).collect();
    let removed = set.apply_each(batches.collect()).await;
    let failed = removed.iter().zip(&held).any(|(r, &h)| h && r.is_err());
    HealReport {
        stale_purged: removed.iter().filter(|r| r.is_ok()).count() as u64,
        unresolved: u64::from(unread || failed),
        ..HealReport::default()
    }
}

/// Adds to each drive's batch the removal of the record it holds under `db_key` in
/// `table`, if it still holds it then. Whether every drive answered.
async fn remove_if_unchanged<T>(
    set: &RecordSet,
    table: Table<T>,
    db_key: &[u8],
    batches: &mut [Vec<Change>],
) -> bool {
    let mut answered = true;
    for (batch, answer) in batches.iter_mut().zip(set.stored_all(table, db_key).await) {
        match answer {
            Ok(Some(held)) => batch.extend([
                table.expect(db_key.to_vec(), Some(held)),
                table.delete(db_key.to_vec()),
            ]),
            Ok(None) => {}
            Err(_) => answered = false,
        }
    }
    answered
}

/// The tables whose keys are a set's objects: keys of versioned buckets whose newest
/// version is a delete marker have only a versions record.
pub(in crate::object) fn object_tables() -> [TableId; 2] {
    [OBJECTS.id(), VERSIONS.id()]
}
