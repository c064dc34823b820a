//! Listings: a merge of the sorted scans of every drive, keeping the keys a read quorum of
//! their set agrees on.
//!
//! A page costs one round of scans when the drives agree, whatever the bucket's size:
//! - each drive returns at most a page plus one entry;
//! - with a delimiter, the drives roll common prefixes up themselves: one entry per prefix,
//!   however many keys it holds;
//! - a round reads a majority of each set's drives (and at least a read quorum) first. When
//!   those hold every key with the same record bytes, that is the version a read quorum
//!   agrees on (no other version can be current on as many drives), and the other drives
//!   need not be read. When they differ (a write or delete under way, a drive offline or
//!   behind), the round reads the other drives too and applies the full agreement rules.

use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::future::{join_all, BoxFuture};

use super::record::{self, object_key, ObjectRecord, VersionsRecord, OBJECTS, VERSIONS};
use super::{BucketName, ObjectError, ObjectStore};
use crate::erasure::{rolled_up_len, ErasureError};
use crate::records::agreement::held_by_majority;
use crate::records::{DriveError, RecordSet, Replica, Table};

/// A byte that never occurs in UTF-8: appended to a prefix, it sorts after every key that
/// starts with that prefix.
const AFTER_ALL: u8 = 0xFF;

/// Entries a drive returns per round, at most: a full page of the API (1,000) and the one
/// more that tells whether it is truncated, so that a page takes one round.
const MAX_SCAN: usize = 1001;
/// Entries a drive returns per round, at least: small pages still read ahead a little, in
/// case some keys are not agreed on.
const MIN_SCAN: usize = 100;

/// The drive of each set that the next listing reads first, so that listings, which read a
/// majority of the drives, spread over all of them.
static FIRST_DRIVE: AtomicUsize = AtomicUsize::new(0);

/// A scanned database entry: key and record bytes.
type Entry = (Vec<u8>, Vec<u8>);

/// Each drive's scan in a round, by set and drive; `None` for a drive the round has not read.
type Scans = Vec<Vec<Option<Result<Vec<Entry>, DriveError>>>>;

/// One drive's copy of a listed key.
#[derive(Clone, Copy)]
struct Copy<'a> {
    set: usize,
    drive: usize,
    key: &'a [u8],
    record: &'a [u8],
}

/// How the keys of a round are settled.
#[derive(Clone, Copy)]
enum Settle {
    /// By the drives read so far (a majority) holding them alike; any difference puts the
    /// round in doubt.
    Alike,
    /// By the agreement of a read quorum, as a GET would: every drive has been read.
    Quorum,
}

/// How a round ended.
enum Round {
    /// The page is full, or the scans held every key left.
    Finished,
    /// More keys may follow: scan again from here.
    Next(Bound<Vec<u8>>),
}

/// What to list.
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    pub prefix: String,
    pub delimiter: Option<String>,
    /// List only what sorts after this key or common prefix.
    pub after: Option<String>,
    pub max_keys: usize,
}

/// A record kind a listing merges: its table, and how drives' copies agree.
pub(crate) trait Listed: Replica + Send + Sync + serde::de::DeserializeOwned {
    const TABLE: Table<Self>;
    /// Drops what only crash recovery needs (the superseded copy).
    fn strip(&mut self);
    /// Whether the record is listed at all (a delete marker's tombstone is not).
    fn visible(&self) -> bool {
        true
    }
}

impl Listed for ObjectRecord {
    const TABLE: Table<Self> = OBJECTS;
    fn strip(&mut self) {
        self.superseded = None;
    }
    fn visible(&self) -> bool {
        !self.delete_marker
    }
}

impl Listed for VersionsRecord {
    const TABLE: Table<Self> = VERSIONS;
    fn strip(&mut self) {
        self.superseded = None;
    }
}

/// One listed item.
#[derive(Debug, Clone)]
pub enum ListEntry<R = ObjectRecord> {
    Object { key: String, record: Box<R> },
    CommonPrefix(String),
}

impl<R> ListEntry<R> {
    /// The key or prefix, which is also where the next page starts.
    pub fn name(&self) -> &str {
        match self {
            ListEntry::Object { key, .. } => key,
            ListEntry::CommonPrefix(prefix) => prefix,
        }
    }
}

/// One page of a listing.
#[derive(Debug, Clone)]
pub struct ListPage<R = ObjectRecord> {
    pub entries: Vec<ListEntry<R>>,
    pub truncated: bool,
}

impl<R> Default for ListPage<R> {
    fn default() -> Self {
        Self {
            entries: Vec::new(),
            truncated: false,
        }
    }
}

/// The database keys a listing covers and how it groups them.
struct Scope<'a> {
    /// Database key of the bucket's first possible object: bucket, NUL.
    base: &'a [u8],
    /// Database key prefix of the listed keys: `base` and the query's prefix.
    scan_prefix: Vec<u8>,
    delimiter: Option<&'a [u8]>,
    /// Whether a key the drives cannot agree on fails the listing (a 503) instead of being
    /// left out: for decisions that rest on a listing, such as whether a bucket is empty.
    undecided_fails: bool,
}

impl Scope<'_> {
    /// A key's agreed record as the listing takes it (see `undecided_fails`).
    fn settle<R>(&self, agreed: Result<Option<R>, ErasureError>) -> Result<Option<R>, ObjectError> {
        match agreed {
            Err(e) if self.undecided_fails => Err(e.into()),
            Err(_) => Ok(None),
            Ok(record) => Ok(record),
        }
    }
}

/// What a run of scanned keys is listed as.
#[derive(Clone, Copy)]
enum Name<'a> {
    /// An object: one database key.
    Key(&'a [u8]),
    /// A common prefix: every database key that starts with it.
    Prefix(&'a [u8]),
}

impl Name<'_> {
    fn covers(&self, key: &[u8]) -> bool {
        match self {
            Name::Key(name) => key == *name,
            Name::Prefix(prefix) => key.starts_with(prefix),
        }
    }

    /// Where the listing goes on after this name.
    fn past(&self) -> Vec<u8> {
        match self {
            Name::Key(key) => key.to_vec(),
            Name::Prefix(prefix) => [prefix, &[AFTER_ALL][..]].concat(),
        }
    }
}

impl Scope<'_> {
    /// What a database key is listed as: itself, or the common prefix it rolls up into.
    fn name<'k>(&self, key: &'k [u8]) -> Name<'k> {
        let rolled_up = self
            .delimiter
            .and_then(|d| rolled_up_len(key, self.scan_prefix.len(), d));
        match rolled_up {
            Some(len) => Name::Prefix(&key[..len]),
            None => Name::Key(key),
        }
    }

    /// A database key or prefix as the user named it.
    fn user_name(&self, name: &[u8]) -> String {
        String::from_utf8_lossy(&name[self.base.len()..]).into_owned()
    }

    fn object<R: Listed>(&self, key: &[u8], mut record: R) -> ListEntry<R> {
        record.strip();
        ListEntry::Object {
            key: self.user_name(key),
            record: Box::new(record),
        }
    }
}

/// Drives of a set that a round reads first: a majority, and at least a read quorum.
fn majority(set: &RecordSet) -> usize {
    (set.width() / 2 + 1).max(set.read_quorum())
}

impl ObjectStore {
    pub async fn list_objects(
        &self,
        bucket: &BucketName,
        query: &ListQuery,
    ) -> Result<ListPage, ObjectError> {
        self.bucket(bucket).await?;
        self.list_table(bucket, query, false).await
    }

    /// Whether the bucket holds any key of one table that the drives agree exists; a key
    /// they cannot decide on makes the answer unknown (503), never "no".
    pub(crate) async fn holds_any<R: Listed>(
        &self,
        bucket: &BucketName,
    ) -> Result<bool, ObjectError> {
        let base = object_key(bucket.as_str(), "");
        let scope = Scope {
            base: &base,
            scan_prefix: base.clone(),
            delimiter: None,
            undecided_fails: true,
        };
        Ok(!self
            .collect::<R>(&scope, Bound::Unbounded, 1)
            .await?
            .is_empty())
    }

    /// A page of the records of one table, listed like objects; with `including_after`, the
    /// key `query.after` itself is listed too.
    pub(crate) async fn list_table<R: Listed>(
        &self,
        bucket: &BucketName,
        query: &ListQuery,
        including_after: bool,
    ) -> Result<ListPage<R>, ObjectError> {
        if query.max_keys == 0 {
            return Ok(ListPage::default());
        }
        let base = object_key(bucket.as_str(), "");
        let delimiter = query.delimiter.as_deref().filter(|d| !d.is_empty());
        let scope = Scope {
            base: &base,
            scan_prefix: [base.as_slice(), query.prefix.as_bytes()].concat(),
            delimiter: delimiter.map(str::as_bytes),
            undecided_fails: false,
        };
        let cursor = match &query.after {
            None => Bound::Unbounded,
            Some(after) => {
                let mut key = [base.as_slice(), after.as_bytes()].concat();
                // Resuming after a common prefix skips every key under it.
                if let Some(d) = delimiter {
                    if after.starts_with(&query.prefix) && after.ends_with(d) {
                        key.push(AFTER_ALL);
                    }
                }
                if including_after {
                    Bound::Included(key)
                } else {
                    Bound::Excluded(key)
                }
            }
        };
        let mut entries = self.collect(&scope, cursor, query.max_keys + 1).await?;
        let truncated = entries.len() > query.max_keys;
        entries.truncate(query.max_keys);
        Ok(ListPage { entries, truncated })
    }

    /// Up to `wanted` entries of the listing after `cursor`. Boxed: a common prefix whose
    /// drives disagree on its first key is checked by listing inside it.
    fn collect<'a, R: Listed>(
        &'a self,
        scope: &'a Scope<'a>,
        mut cursor: Bound<Vec<u8>>,
        wanted: usize,
    ) -> BoxFuture<'a, Result<Vec<ListEntry<R>>, ObjectError>> {
        Box::pin(async move {
            let mut listing = Listing {
                store: self,
                scope,
                batch: wanted.clamp(MIN_SCAN, MAX_SCAN),
                wanted,
                first_drive: FIRST_DRIVE.fetch_add(1, Ordering::Relaxed),
                entries: Vec::new(),
            };
            loop {
                match listing.round(&cursor).await? {
                    Round::Finished => return Ok(listing.entries),
                    Round::Next(next) => cursor = next,
                }
            }
        })
    }

    /// What `name` is listed as when all the drives read of a set (a majority) hold the same
    /// key with the same record bytes: that version is current on more drives than any other
    /// can be, which makes it the one `agree_on_version` picks. `None` when they differ.
    fn held_alike<R: Listed>(
        &self,
        scope: &Scope<'_>,
        scans: &Scans,
        name: Name<'_>,
        copies: &[Copy<'_>],
    ) -> Option<ListEntry<R>> {
        // A key lives in the set of its first copy (copies elsewhere would be strays of an
        // older layout); a common prefix exists if any set holds a key under it.
        let first_set = copies.first()?.set;
        for (set, answers) in scans.iter().enumerate().skip(first_set) {
            let read = answered(answers);
            let mut of_set = copies.iter().filter(|c| c.set == set);
            let Some(one) = of_set.next() else { continue };
            let alike = of_set.all(|c| c.key == one.key && c.record == one.record);
            let count = copies.iter().filter(|c| c.set == set).count();
            // Every drive read holds it, and alike.
            let record = (alike && count == read)
                .then(|| record::decode::<R>(one.record).ok())
                .flatten()
                // A tombstone puts the round in doubt: the quorum round skips it.
                .filter(Listed::visible);
            match (name, record) {
                (Name::Key(key), Some(record)) => return Some(scope.object(key, record)),
                (Name::Key(_), None) => return None,
                (Name::Prefix(prefix), Some(_)) => {
                    return Some(ListEntry::CommonPrefix(scope.user_name(prefix)))
                }
                (Name::Prefix(_), None) => continue,
            }
        }
        None
    }

    /// Whether a common prefix holds a key that a read quorum agrees on. The drives return
    /// their first key under it; when those of a set name the same key, that key decides.
    /// Otherwise (a write or delete under way, a drive behind), the keys under the prefix are
    /// listed until one is agreed on.
    async fn prefix_has_agreed_key<R: Listed>(
        &self,
        scope: &Scope<'_>,
        scans: &Scans,
        copies: &[Copy<'_>],
        prefix: &[u8],
        round_start: &Bound<Vec<u8>>,
    ) -> Result<bool, ObjectError> {
        for set in 0..self.sets.len() {
            let in_set: Vec<Copy<'_>> = copies.iter().filter(|c| c.set == set).copied().collect();
            let Some(first) = in_set.first() else {
                continue;
            };
            if in_set.iter().all(|c| c.key == first.key)
                && (scope.settle(self.agreed_record::<R>(scans, &in_set))?).is_some()
            {
                return Ok(true);
            }
        }
        let inside = Scope {
            base: scope.base,
            scan_prefix: prefix.to_vec(),
            delimiter: None,
            undecided_fails: scope.undecided_fails,
        };
        let start = match round_start {
            Bound::Excluded(key) if key.starts_with(prefix) => Bound::Excluded(key.clone()),
            _ => Bound::Unbounded,
        };
        Ok(!self.collect::<R>(&inside, start, 1).await?.is_empty())
    }

    /// The version of a listed key that a read quorum of its set agrees on, if any. All
    /// `copies` are of one key, and every drive has been read.
    fn agreed_record<R: Listed>(
        &self,
        scans: &Scans,
        copies: &[Copy<'_>],
    ) -> Result<Option<R>, ErasureError> {
        // A key lives in one set; copies elsewhere would be strays of an older layout.
        let Some(set_index) = copies.first().map(|c| c.set) else {
            return Ok(None);
        };
        let set = &self.sets[set_index];
        let copies: Vec<&Copy<'_>> = copies.iter().filter(|c| c.set == set_index).collect();
        // What most drives hold byte for byte is what agreement answers: decode it once.
        let stored: Vec<&[u8]> = copies.iter().map(|c| c.record).collect();
        if let Some(alike) = held_by_majority(&stored, set.width(), set.read_quorum()) {
            if let Ok(record) = record::decode::<R>(alike) {
                return Ok(Some(record).filter(Listed::visible));
            }
        }
        let records: Vec<Result<Option<R>, DriveError>> = scans[set_index]
            .iter()
            .enumerate()
            .map(|(drive, scan)| match scan {
                Some(Ok(_)) => Ok(copies
                    .iter()
                    .find(|c| c.drive == drive)
                    .and_then(|c| record::decode::<R>(c.record).ok())),
                _ => Err(DriveError::Offline(String::new())),
            })
            .collect();
        // A key whose versions no read quorum agrees on is left out of a page by the caller
        // (see `Scope::undecided_fails`), like a key whose GET would fail: one damaged key
        // does not fail a whole listing.
        Ok(set.agree(&records)?.found().filter(Listed::visible))
    }
}

/// A listing under way: what it covers and what it has found so far.
struct Listing<'a, R> {
    store: &'a ObjectStore,
    scope: &'a Scope<'a>,
    /// Entries each drive returns per round.
    batch: usize,
    /// Entries the listing stops at.
    wanted: usize,
    /// The drive of each set that rounds read first.
    first_drive: usize,
    entries: Vec<ListEntry<R>>,
}

impl<R: Listed> Listing<'_, R> {
    /// One round of scans from `cursor`: a majority of each set's drives first, and every
    /// drive when those differ on a key or do not all answer.
    async fn round(&mut self, cursor: &Bound<Vec<u8>>) -> Result<Round, ObjectError> {
        let sets = &self.store.sets;
        let mut scans: Scans = sets
            .iter()
            .map(|set| (0..set.width()).map(|_| None).collect())
            .collect();
        let reads_first = |set: usize, drive: usize| {
            let n = sets[set].width();
            (drive + n - self.first_drive % n) % n < majority(&sets[set])
        };
        self.read_drives(cursor, &mut scans, reads_first).await;
        let majority_answered = sets
            .iter()
            .zip(&scans)
            .all(|(set, answers)| answered(answers) == majority(set));
        if majority_answered {
            let found_before = self.entries.len();
            if let Some(round) = self.merge(&scans, cursor, Settle::Alike).await? {
                return Ok(round);
            }
            self.entries.truncate(found_before);
        }
        self.read_drives(cursor, &mut scans, |_, _| true).await;
        for (set, answers) in sets.iter().zip(&scans) {
            if answered(answers) < set.read_quorum() {
                return Err(ErasureError::ReadQuorum.into());
            }
        }
        self.merge(&scans, cursor, Settle::Quorum)
            .await?
            .ok_or_else(|| ObjectError::Internal("listing round left in doubt".into()))
    }

    /// Reads into `scans` the drives not read yet that `pick(set, drive)` selects: up to
    /// `batch` entries after `cursor` each, common prefixes rolled up by the drives when the
    /// listing has a delimiter.
    async fn read_drives(
        &self,
        cursor: &Bound<Vec<u8>>,
        scans: &mut Scans,
        pick: impl Fn(usize, usize) -> bool,
    ) {
        let mut to_read = Vec::new();
        for (set, answers) in scans.iter().enumerate() {
            for (drive, answer) in answers.iter().enumerate() {
                if answer.is_none() && pick(set, drive) {
                    to_read.push((set, drive));
                }
            }
        }
        let (scope, batch) = (self.scope, self.batch);
        let answers = join_all(to_read.iter().map(|&(set, drive)| {
            let set = &self.store.sets[set];
            let (start, prefix) = (cursor.clone(), scope.scan_prefix.clone());
            let delimiter = scope.delimiter.map(<[u8]>::to_vec);
            set.scan_on(drive, R::TABLE.id(), start, prefix, delimiter, batch)
        }))
        .await;
        for ((set, drive), answer) in to_read.into_iter().zip(answers) {
            scans[set][drive] = Some(answer);
        }
    }

    /// Merges a round of scans that started at `start` into the entries, settling each key
    /// as `settle` says. `None` when `settle` is [`Settle::Alike`] and the drives read differ
    /// on a key.
    async fn merge(
        &mut self,
        scans: &Scans,
        start: &Bound<Vec<u8>>,
        settle: Settle,
    ) -> Result<Option<Round>, ObjectError> {
        let (store, scope, batch) = (self.store, self.scope, self.batch);
        // Only keys up to the smallest last key of any full scan are known completely.
        let horizon = scans
            .iter()
            .flatten()
            .flatten()
            .flatten()
            .filter(|found| found.len() == batch)
            .map(|found| found[batch - 1].0.as_slice())
            .min();
        let mut cursor = start.clone();
        let mut lanes = Lanes::new(scans, horizon);
        while let Some(name) = lanes.next_name(scope) {
            let copies = lanes.take(name);
            let entry = match (settle, name) {
                (Settle::Alike, _) => match store.held_alike(scope, scans, name, &copies) {
                    Some(entry) => Some(entry),
                    None => return Ok(None),
                },
                (Settle::Quorum, Name::Key(key)) => (scope
                    .settle(store.agreed_record(scans, &copies))?)
                .map(|record| scope.object(key, record)),
                (Settle::Quorum, Name::Prefix(prefix)) => store
                    .prefix_has_agreed_key::<R>(scope, scans, &copies, prefix, start)
                    .await?
                    .then(|| ListEntry::CommonPrefix(scope.user_name(prefix))),
            };
            cursor = Bound::Excluded(name.past());
            if let Some(entry) = entry {
                self.entries.push(entry);
                if self.entries.len() == self.wanted {
                    return Ok(Some(Round::Finished));
                }
            }
        }
        Ok(Some(match horizon {
            None => Round::Finished,
            Some(h) => {
                if matches!(&cursor, Bound::Excluded(c) if c.as_slice() < h)
                    || cursor == Bound::Unbounded
                {
                    cursor = Bound::Excluded(h.to_vec());
                }
                Round::Next(cursor)
            }
        }))
    }
}

/// How many drives of a set a round has read successfully.
fn answered(answers: &[Option<Result<Vec<Entry>, DriveError>>]) -> usize {
    answers.iter().filter(|a| matches!(a, Some(Ok(_)))).count()
}

/// The scans of a round walked together in key order, up to the horizon.
struct Lanes<'a> {
    /// What each drive read (set, drive) has left to give.
    lanes: Vec<(usize, usize, &'a [Entry])>,
}

impl<'a> Lanes<'a> {
    fn new(scans: &'a Scans, horizon: Option<&[u8]>) -> Self {
        let mut lanes = Vec::new();
        for (set, answers) in scans.iter().enumerate() {
            for (drive, answer) in answers.iter().enumerate() {
                let Some(Ok(found)) = answer else { continue };
                let known = match horizon {
                    Some(h) => found.partition_point(|(key, _)| key.as_slice() <= h),
                    None => found.len(),
                };
                lanes.push((set, drive, &found[..known]));
            }
        }
        Lanes { lanes }
    }

    /// What the smallest key left is listed as.
    fn next_name(&self, scope: &Scope<'_>) -> Option<Name<'a>> {
        let smallest = self
            .lanes
            .iter()
            .filter_map(|(_, _, left)| left.first())
            .map(|(key, _)| key.as_slice())
            .min()?;
        Some(scope.name(smallest))
    }

    /// Every copy of the keys listed as `name`.
    fn take(&mut self, name: Name<'_>) -> Vec<Copy<'a>> {
        let mut copies = Vec::new();
        for (set, drive, left) in &mut self.lanes {
            while let Some(((key, record), rest)) = left.split_first() {
                if !name.covers(key) {
                    break;
                }
                copies.push(Copy {
                    set: *set,
                    drive: *drive,
                    key,
                    record,
                });
                *left = rest;
            }
        }
        copies
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::erasure::ErasureSet;
    use crate::storage::{Drive, Format, LocalDrive, MetaOp, MetaTable, OfflineDrive};

    const DRIVES: usize = 9;

    struct Fixture {
        dir: tempfile::TempDir,
        /// The drives online, from drive `offline` on.
        drives: Vec<Arc<LocalDrive>>,
        store: Arc<ObjectStore>,
        bucket: BucketName,
    }

    /// A set of 6+3 drives, the first `offline` of them offline.
    async fn fixture_with_offline(offline: usize) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let mut drives = Vec::new();
        for i in offline..DRIVES {
            let root = dir.path().join(format!("d{i}"));
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
            drives.push(Arc::new(LocalDrive::open(&root).unwrap()));
        }
        let offline_drives = (0..offline)
            .map(|i| Arc::new(OfflineDrive::new(format!("offline{i}"))) as Arc<dyn Drive>);
        let online_drives = drives.iter().map(|d| d.clone() as Arc<dyn Drive>);
        let all = offline_drives.chain(online_drives).collect();
        let set = ErasureSet::new(0, all, 3, 1 << 20).unwrap();
        let store = ObjectStore::new(vec![set], "test");
        let bucket = BucketName::parse("bucket").unwrap();
        store.create_bucket(&bucket).await.unwrap();
        Fixture {
            dir,
            drives,
            store,
            bucket,
        }
    }

    async fn fixture() -> Fixture {
        fixture_with_offline(0).await
    }

    fn version(etag: &str) -> ObjectRecord {
        ObjectRecord {
            size: 0,
            etag: etag.into(),
            modified_ms: 1,
            ..ObjectRecord::for_tests()
        }
    }

    impl Fixture {
        /// Writes `record` as `key`'s record on the online drives `on` (indexes among the
        /// online drives), as a commit cut short would.
        async fn put_on(&self, on: std::ops::Range<usize>, key: &str, record: &ObjectRecord) {
            for drive in &self.drives[on] {
                let op = MetaOp::Put {
                    table: MetaTable::Objects,
                    key: object_key(self.bucket.as_str(), key),
                    value: record::encode(record),
                };
                drive.meta_apply(vec![op]).await.unwrap();
            }
        }

        /// Every page of a listing, as `name=etag` for objects and `name` for prefixes.
        async fn list(&self, delimiter: Option<&str>, max_keys: usize) -> Vec<String> {
            let mut query = ListQuery {
                delimiter: delimiter.map(str::to_string),
                max_keys,
                ..ListQuery::default()
            };
            let mut out = Vec::new();
            loop {
                let page = self.store.list_objects(&self.bucket, &query).await.unwrap();
                for entry in &page.entries {
                    out.push(match entry {
                        ListEntry::Object { key, record } => format!("{key}={}", record.etag),
                        ListEntry::CommonPrefix(prefix) => prefix.clone(),
                    });
                }
                if !page.truncated {
                    return out;
                }
                query.after = page.entries.last().map(|e| e.name().to_string());
            }
        }
    }

    #[tokio::test]
    async fn keys_without_a_read_quorum_are_left_out_and_cannot_hide_a_prefix() {
        let f = fixture().await;
        // A prefix whose first key on some drives is not agreed on, but a later key is.
        f.put_on(0..5, "a/1", &version("a1")).await;
        f.put_on(0..9, "a/2", &version("a2")).await;
        // A prefix whose only key reached too few drives.
        f.put_on(0..5, "b/1", &version("b1")).await;
        f.put_on(0..9, "c", &version("c")).await;
        // A prefix whose drives each hold a different single key.
        for drive in 0..DRIVES {
            let key = format!("d/{drive}");
            f.put_on(drive..drive + 1, &key, &version("d")).await;
        }
        for max_keys in [1, 2, 1000] {
            assert_eq!(f.list(None, max_keys).await, ["a/2=a2", "c=c"]);
            assert_eq!(f.list(Some("/"), max_keys).await, ["a/", "c=c"]);
        }
    }

    #[tokio::test]
    async fn listed_versions_are_the_ones_a_get_would_read() {
        let f = fixture().await;
        let (old, new) = (version("old"), version("new"));
        let mut over = new.clone();
        over.superseded = Some(Box::new(old.clone()));
        // The new version reached 5 drives: a majority holds it, but not a read quorum.
        f.put_on(0..4, "cut-short", &old).await;
        f.put_on(4..9, "cut-short", &over).await;
        // The new version reached 6 drives: committed.
        f.put_on(0..3, "committed", &old).await;
        f.put_on(3..9, "committed", &over).await;
        let expected = ["committed=new", "cut-short=old"];
        assert_eq!(f.list(None, 1000).await, expected);
        assert_eq!(f.list(Some("/"), 1).await, expected);
    }

    #[tokio::test]
    async fn listings_read_around_offline_drives_down_to_a_read_quorum() {
        let f = fixture_with_offline(3).await;
        f.put_on(0..6, "a/1", &version("a1")).await;
        f.put_on(0..5, "a/2", &version("a2")).await;
        f.put_on(1..6, "b", &version("b")).await;
        f.put_on(0..6, "c", &version("c")).await;
        for max_keys in [1, 1000] {
            assert_eq!(f.list(None, max_keys).await, ["a/1=a1", "c=c"]);
            assert_eq!(f.list(Some("/"), max_keys).await, ["a/", "c=c"]);
        }
        // A fourth drive goes: no read quorum is left.
        std::fs::remove_dir_all(f.dir.path().join("d3")).unwrap();
        let query = ListQuery {
            max_keys: 1000,
            ..ListQuery::default()
        };
        let listing = f.store.list_objects(&f.bucket, &query).await;
        assert!(
            matches!(
                listing,
                Err(ObjectError::Unavailable(ErasureError::ReadQuorum))
            ),
            "{:?}",
            listing.map(|p| p.entries.len())
        );
    }
}
