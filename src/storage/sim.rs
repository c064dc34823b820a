//! A test tool: in-memory drives that lose, at a simulated power cut, everything the
//! [`Drive`] contract has not yet made durable.
//!
//! `kill -9` cannot test power loss: the page cache survives it. A [`SimDrive`] keeps, for
//! every file, directory entry and metadata transaction, the state a reader sees now and
//! the state that is on the platter, following what [`LocalDrive`](super::LocalDrive)
//! promises:
//!
//! - shard bytes are volatile until [`ShardWriter::finish`] (fdatasync); their name in the
//!   staging folder never survives (the staging folder is emptied when a drive opens);
//! - [`Drive::commit_staged`] makes its renames durable when it returns, and with them every
//!   other pending change of entries in the destination folder (it fsyncs that folder);
//! - removals (`remove_staged`, `delete_data_dir`, `delete_data_file`) stay volatile;
//! - a [`Drive::meta_apply`] transaction is durable when it returns. Concurrent batches go
//!   through the same [`CommitQueue`] as a local drive's and share a transaction: a group is
//!   one drive call, and a cut during it keeps all of the group or none of it.
//!
//! The drives of a deployment share a [`CrashController`], which counts their calls, can cut
//! the power after the Nth (the call in flight at the cut does its volatile part and fails,
//! every later one fails as offline), and then [`CrashController::crash`]es them: volatile
//! changes are dropped, or a seeded random subset of them is kept, since the kernel may have
//! flushed any of them. The drives then behave as freshly opened ones; a new store built
//! over them sees what survived.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use uuid::Uuid;

use super::commit_queue::{CommitQueue, GroupOutcome};
use super::DiskInfo;
use super::{
    absent_unless_unhealed, note_replaced, past_prefix, refuse_scan_if_unhealed, rolled_up_len,
    scan_from, DataDir, Drive, DriveError, MetaOp, MetaTable, Replaced, ScanPage, ShardReader,
    ShardWriter, RELATED_LIMIT,
};

/// What a crash keeps of the changes that were not durable yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flushed {
    /// Nothing: only durable state survives.
    Nothing,
    /// Each volatile change survives or not, as drawn by an RNG with this seed.
    RandomSubset(u64),
}

/// Drives of one simulated deployment and the power supply they share.
pub struct CrashController {
    power: Arc<Power>,
    drives: Vec<Arc<SimDrive>>,
}

impl CrashController {
    /// `count` empty drives, labelled `sim0`, `sim1`, ...
    pub fn new(count: usize) -> Self {
        let power = Arc::new(Power::default());
        let drives = (0..count)
            .map(|i| Arc::new(SimDrive::new(format!("sim{i}"), power.clone())))
            .collect();
        Self { power, drives }
    }

    /// The drives, in order, to build erasure sets over.
    pub fn drives(&self) -> Vec<Arc<dyn Drive>> {
        self.drives
            .iter()
            .map(|d| d.clone() as Arc<dyn Drive>)
            .collect()
    }

    pub fn drive(&self, index: usize) -> &Arc<SimDrive> {
        &self.drives[index]
    }

    /// Drive calls (including shard reads and writes) since the last reset or crash.
    pub fn calls(&self) -> u64 {
        self.power.calls.load(Ordering::SeqCst)
    }

    /// Drive calls since the last reset or crash, by kind.
    pub fn calls_by_kind(&self) -> std::collections::BTreeMap<String, u64> {
        self.power.by_kind.lock().expect("not poisoned").clone()
    }

    /// How long each metadata commit takes (its fsync), so that concurrent batches gather
    /// into groups as they do on a disk; none by default.
    pub fn set_commit_latency(&self, latency: Duration) {
        (self.power.commit_latency_us).store(latency.as_micros() as u64, Ordering::SeqCst);
    }

    /// Metadata batches committed since the last reset or crash, and the transactions
    /// (groups) they shared.
    pub fn batches_and_groups(&self) -> (u64, u64) {
        let groups = self.calls_by_kind().get("meta_apply").copied().unwrap_or(0);
        (self.power.batches.load(Ordering::SeqCst), groups)
    }

    pub fn reset_calls(&self) {
        self.power.calls.store(0, Ordering::SeqCst);
        self.power.batches.store(0, Ordering::SeqCst);
        self.power.by_kind.lock().expect("not poisoned").clear();
    }

    /// Cuts the power after `calls` more drive calls: call `calls + 1` is cut midway, every
    /// later one fails as offline, until [`CrashController::crash`].
    pub fn crash_after(&self, calls: u64) {
        self.reset_calls();
        *self.power.cut_call.lock().expect("not poisoned") = None;
        self.power.cut_after.store(calls, Ordering::SeqCst);
    }

    /// The call that was in flight when the power was cut, e.g. `sim3 meta_apply`.
    pub fn cut_call(&self) -> Option<String> {
        self.power.cut_call.lock().expect("not poisoned").clone()
    }

    /// Power loss and reboot: every drive drops its volatile changes (all of them, or all
    /// but a random subset) and comes back as freshly opened, with an empty staging folder.
    /// Handles opened before the crash stay dead; the call counter restarts, and no new cut
    /// is armed.
    pub fn crash(&self, flushed: Flushed) {
        let mut rng = match flushed {
            Flushed::Nothing => None,
            Flushed::RandomSubset(seed) => Some(StdRng::seed_from_u64(seed)),
        };
        self.power.boot.fetch_add(1, Ordering::SeqCst);
        for drive in &self.drives {
            drive.state().lose_volatile(rng.as_mut());
        }
        self.power.cut_after.store(u64::MAX, Ordering::SeqCst);
        self.reset_calls();
    }

    /// Makes every change durable, as `sync(1)` would: to set up a pre-state.
    pub fn sync(&self) {
        for drive in &self.drives {
            drive.state().sync();
        }
    }

    /// Independent copies of the drives, volatile state included, on a fresh power supply:
    /// one pre-state can be forked for every crash point.
    pub fn fork(&self) -> Self {
        let power = Arc::new(Power::default());
        power.commit_latency_us.store(
            self.power.commit_latency_us.load(Ordering::SeqCst),
            Ordering::SeqCst,
        );
        let drives = self
            .drives
            .iter()
            .map(|d| {
                let state = d.state().clone();
                Arc::new(SimDrive {
                    label: d.label.clone(),
                    state: Arc::new(Mutex::new(state)),
                    power: power.clone(),
                    commits: Arc::default(),
                })
            })
            .collect();
        Self { power, drives }
    }
}

/// The power supply shared by the drives of a deployment.
struct Power {
    /// Drive calls so far.
    calls: AtomicU64,
    /// The power is cut after this many calls (`u64::MAX`: never).
    cut_after: AtomicU64,
    /// Bumped at every crash: handles from an earlier boot are dead.
    boot: AtomicU64,
    /// The call that was in flight at the cut.
    cut_call: Mutex<Option<String>>,
    /// Calls so far by kind (`meta_get`, `write`, ...), to count what a request costs.
    by_kind: Mutex<std::collections::BTreeMap<String, u64>>,
    /// Metadata batches so far (a group commit, one call, holds one or more).
    batches: AtomicU64,
    /// How long a metadata commit takes, in microseconds.
    commit_latency_us: AtomicU64,
}

impl Default for Power {
    fn default() -> Self {
        Self {
            calls: AtomicU64::new(0),
            cut_after: AtomicU64::new(u64::MAX),
            boot: AtomicU64::new(0),
            cut_call: Mutex::new(None),
            by_kind: Mutex::default(),
            batches: AtomicU64::new(0),
            commit_latency_us: AtomicU64::new(0),
        }
    }
}

/// How a drive call goes, given when the power is cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// Before the cut: the call completes.
    Completes,
    /// In flight at the cut: its volatile part happens, its durability step does not.
    CutMidway,
    /// After the cut: nothing happens.
    Dead,
}

impl Power {
    fn enter(&self, drive: &str, call: &str, boot: u64) -> Fate {
        let number = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        *(self.by_kind.lock().expect("not poisoned"))
            .entry(call.to_string())
            .or_default() += 1;
        if boot != self.boot.load(Ordering::SeqCst) {
            return Fate::Dead;
        }
        let cut_after = self.cut_after.load(Ordering::SeqCst);
        match number.checked_sub(cut_after) {
            None | Some(0) => Fate::Completes,
            Some(1) => {
                *self.cut_call.lock().expect("not poisoned") = Some(format!("{drive} {call}"));
                Fate::CutMidway
            }
            Some(_) => Fate::Dead,
        }
    }
}

/// The size every simulated drive reports.
pub const SIM_DRIVE_SIZE: u64 = 1 << 30;

/// An in-memory drive that tracks durable and volatile state (see the module docs).
pub struct SimDrive {
    label: String,
    state: Arc<Mutex<DriveState>>,
    power: Arc<Power>,
    commits: Arc<CommitQueue>,
}

type FileId = u64;

/// A file: append-only segments, of which the first `synced` bytes are durable.
#[derive(Debug, Clone, Default)]
struct SimFile {
    segments: Vec<Bytes>,
    len: u64,
    synced: u64,
}

impl SimFile {
    fn append(&mut self, pieces: Vec<Bytes>) {
        let mut segment = BytesMut::new();
        for piece in pieces {
            segment.extend_from_slice(&piece);
        }
        self.len += segment.len() as u64;
        self.segments.push(segment.freeze());
    }

    /// Keeps the durable bytes and, with an RNG, a random part of the rest: a prefix of
    /// it, written or (size flushed before data) zeroed.
    fn lose_volatile(&mut self, rng: Option<&mut StdRng>) {
        if self.synced == self.len {
            return;
        }
        let mut keep = self.synced;
        let mut zero_tail = false;
        if let Some(rng) = rng {
            keep = rng.random_range(self.synced..=self.len);
            zero_tail = rng.random_bool(0.5);
        }
        let mut bytes = self.read(0, self.len);
        bytes.truncate(keep as usize);
        if zero_tail {
            bytes[self.synced as usize..].fill(0);
        }
        *self = SimFile {
            len: keep,
            synced: keep,
            segments: vec![Bytes::from(bytes)],
        };
    }

    /// Bytes `offset..offset + len`, as far as the file has them.
    fn read(&self, offset: u64, len: u64) -> Vec<u8> {
        let end = (offset + len).min(self.len);
        let mut out = Vec::with_capacity(end.saturating_sub(offset) as usize);
        let mut start = 0u64;
        for segment in &self.segments {
            let seg_end = start + segment.len() as u64;
            if seg_end > offset && start < end {
                let from = offset.max(start) - start;
                let to = end.min(seg_end) - start;
                out.extend_from_slice(&segment[from as usize..to as usize]);
            }
            start = seg_end;
        }
        out
    }
}

/// A name in a data folder: the file it names now, and the file it names on the platter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Entry {
    current: Option<FileId>,
    durable: Option<FileId>,
}

/// The metadata database, one map per [`MetaTable`].
type Tables = [BTreeMap<Vec<u8>, Vec<u8>>; 7];

fn table_index(table: MetaTable) -> usize {
    match table {
        MetaTable::Buckets => 0,
        MetaTable::Objects => 1,
        MetaTable::Inline => 2,
        MetaTable::Uploads => 3,
        MetaTable::Parts => 4,
        MetaTable::System => 5,
        MetaTable::Versions => 6,
    }
}

/// Whether every [`MetaOp::Expect`] of a batch holds.
fn expectations_hold(tables: &Tables, ops: &[MetaOp]) -> bool {
    ops.iter().all(|op| match op {
        MetaOp::Expect { table, key, value } => {
            tables[table_index(*table)].get(key) == value.as_ref()
        }
        _ => true,
    })
}

fn apply(tables: &mut Tables, ops: &[MetaOp]) -> Replaced {
    let mut replaced = Replaced::new();
    for op in ops {
        match op {
            MetaOp::Expect { .. } => {}
            MetaOp::Put { table, key, value } => {
                let old = tables[table_index(*table)].insert(key.clone(), value.clone());
                note_replaced(&mut replaced, *table, key, || old);
            }
            MetaOp::Delete { table, key } => {
                let old = tables[table_index(*table)].remove(key);
                note_replaced(&mut replaced, *table, key, || old);
            }
            MetaOp::DeletePrefix { table, prefix } => {
                tables[table_index(*table)].retain(|k, _| !k.starts_with(prefix));
            }
        }
    }
    replaced
}

/// One group of metadata batches in one simulated transaction: one drive call, durable as a
/// whole when it completes; cut midway, it may or may not be on the platter, all of it.
fn commit_group(
    label: &str,
    state: &Mutex<DriveState>,
    power: &Power,
    boot: u64,
    batches: Vec<Vec<MetaOp>>,
) -> GroupOutcome {
    let fate = power.enter(label, "meta_apply", boot);
    power
        .batches
        .fetch_add(batches.len() as u64, Ordering::SeqCst);
    let offline = || DriveError::Offline(label.to_string());
    if fate == Fate::Dead {
        return Err(offline());
    }
    let latency = power.commit_latency_us.load(Ordering::SeqCst);
    if latency > 0 {
        std::thread::sleep(Duration::from_micros(latency));
    }
    let mut state = state.lock().expect("not poisoned");
    let mut outcomes = Vec::with_capacity(batches.len());
    let mut applied = Vec::with_capacity(batches.len());
    for ops in batches {
        if expectations_hold(&state.meta, &ops) {
            outcomes.push(Ok(apply(&mut state.meta, &ops)));
            applied.push(ops);
        } else {
            outcomes.push(Err(DriveError::Conflict));
        }
    }
    if fate == Fate::CutMidway {
        state.meta_unsynced = true;
        return Err(offline());
    }
    for ops in &applied {
        apply(&mut state.durable_meta, ops);
    }
    Ok(outcomes)
}

/// A data folder, as `(bucket_id, data_id)`.
type DirKey = (String, Uuid);

fn dir_key(dir: &DataDir) -> DirKey {
    (dir.bucket_id.clone(), dir.data_id)
}

#[derive(Debug, Clone, Default)]
struct DriveState {
    /// Ordered, so that a seeded crash draws the same choices every run.
    files: BTreeMap<FileId, SimFile>,
    next_file: FileId,
    /// Staging folders: never durable, since opening a drive empties them.
    staging: HashMap<Uuid, BTreeMap<String, FileId>>,
    dirs: BTreeMap<DirKey, BTreeMap<String, Entry>>,
    meta: Tables,
    durable_meta: Tables,
    /// A transaction in flight at the cut changed `meta` but maybe not `durable_meta`.
    meta_unsynced: bool,
    /// The durable unhealed mark of a drive that joined blank.
    unhealed: bool,
}

impl DriveState {
    /// The file a data folder names `name` now.
    fn current(&self, dir: &DataDir, name: &str) -> Option<FileId> {
        self.dirs.get(&dir_key(dir))?.get(name)?.current
    }

    /// fsync of a data folder: every entry in it becomes durable as it is now.
    fn sync_dir(&mut self, dir: &DirKey) {
        if let Some(entries) = self.dirs.get_mut(dir) {
            for entry in entries.values_mut() {
                entry.durable = entry.current;
            }
            entries.retain(|_, e| e.current.is_some());
        }
    }

    fn sync(&mut self) {
        let dirs: Vec<DirKey> = self.dirs.keys().cloned().collect();
        for dir in &dirs {
            self.sync_dir(dir);
        }
        for file in self.files.values_mut() {
            file.synced = file.len;
        }
        self.durable_meta = self.meta.clone();
        self.meta_unsynced = false;
    }

    fn lose_volatile(&mut self, mut rng: Option<&mut StdRng>) {
        self.staging.clear();
        for entries in self.dirs.values_mut() {
            for entry in entries.values_mut() {
                if entry.current != entry.durable {
                    let flushed = rng.as_mut().is_some_and(|r| r.random_bool(0.5));
                    if flushed {
                        entry.durable = entry.current;
                    } else {
                        entry.current = entry.durable;
                    }
                }
            }
            entries.retain(|_, e| e.current.is_some());
        }
        self.dirs.retain(|_, entries| !entries.is_empty());
        let named: BTreeSet<FileId> = self
            .dirs
            .values()
            .flat_map(|entries| entries.values().filter_map(|e| e.current))
            .collect();
        self.files.retain(|id, _| named.contains(id));
        for file in self.files.values_mut() {
            file.lose_volatile(rng.as_deref_mut());
        }
        if self.meta_unsynced {
            let flushed = rng.is_some_and(|r| r.random_bool(0.5));
            if flushed {
                self.durable_meta = self.meta.clone();
            } else {
                self.meta = self.durable_meta.clone();
            }
            self.meta_unsynced = false;
        }
    }

    fn new_file(&mut self) -> FileId {
        self.next_file += 1;
        self.files.insert(self.next_file, SimFile::default());
        self.next_file
    }
}

impl SimDrive {
    fn new(label: String, power: Arc<Power>) -> Self {
        Self {
            label,
            state: Arc::new(Mutex::new(DriveState::default())),
            power,
            commits: Arc::default(),
        }
    }

    fn state(&self) -> MutexGuard<'_, DriveState> {
        self.state.lock().expect("not poisoned")
    }

    fn boot(&self) -> u64 {
        self.power.boot.load(Ordering::SeqCst)
    }

    fn enter(&self, call: &str) -> Fate {
        self.power.enter(&self.label, call, self.boot())
    }

    fn offline(&self) -> DriveError {
        DriveError::Offline(self.label.clone())
    }

    /// Fails unless the call completes: for calls whose only effect is their answer.
    fn read_call(&self, call: &str) -> Result<(), DriveError> {
        match self.enter(call) {
            Fate::Completes => Ok(()),
            _ => Err(self.offline()),
        }
    }

    /// Loses a data folder at once, durably, as a bad sector would (for heal tests).
    pub fn lose_data_dir(&self, dir: &DataDir) {
        self.state().dirs.remove(&dir_key(dir));
    }

    /// Loses everything at once, as a replaced disk would (for heal tests).
    pub fn wipe(&self) {
        *self.state() = DriveState::default();
    }

    /// Loses everything and comes back blank, as the server takes back an empty folder in a
    /// drive's place: marked unhealed until [`Drive::mark_healed`].
    pub fn replace_blank(&self) {
        *self.state() = DriveState {
            unhealed: true,
            ..DriveState::default()
        };
    }
}

struct SimShardWriter {
    drive: String,
    state: Arc<Mutex<DriveState>>,
    power: Arc<Power>,
    boot: u64,
    file: FileId,
    finished: bool,
}

#[async_trait]
impl ShardWriter for SimShardWriter {
    async fn write(&mut self, pieces: Vec<Bytes>) -> Result<(), DriveError> {
        let fate = self.power.enter(&self.drive, "write", self.boot);
        if fate == Fate::Dead {
            return Err(DriveError::Offline(self.drive.clone()));
        }
        if self.finished {
            return Err(DriveError::NotFound);
        }
        let mut state = self.state.lock().expect("not poisoned");
        if let Some(file) = state.files.get_mut(&self.file) {
            file.append(pieces);
        }
        match fate {
            Fate::Completes => Ok(()),
            _ => Err(DriveError::Offline(self.drive.clone())),
        }
    }

    async fn finish(&mut self) -> Result<(), DriveError> {
        if self.power.enter(&self.drive, "finish", self.boot) != Fate::Completes {
            return Err(DriveError::Offline(self.drive.clone()));
        }
        if std::mem::replace(&mut self.finished, true) {
            return Err(DriveError::NotFound);
        }
        let mut state = self.state.lock().expect("not poisoned");
        if let Some(file) = state.files.get_mut(&self.file) {
            file.synced = file.len;
        }
        Ok(())
    }
}

/// An open shard: its bytes as they were when it was opened (shard files are never
/// changed once named in a data folder).
struct SimShardReader {
    drive: String,
    power: Arc<Power>,
    boot: u64,
    file: SimFile,
}

#[async_trait]
impl ShardReader for SimShardReader {
    async fn read_at(&self, offset: u64, len: usize) -> Result<Bytes, DriveError> {
        if self.power.enter(&self.drive, "read_at", self.boot) != Fate::Completes {
            return Err(DriveError::Offline(self.drive.clone()));
        }
        let bytes = self.file.read(offset, len as u64);
        if bytes.len() < len {
            return Err(DriveError::ShortRead);
        }
        Ok(Bytes::from(bytes))
    }
}

#[async_trait]
impl Drive for SimDrive {
    fn label(&self) -> &str {
        &self.label
    }

    fn is_unhealed(&self) -> bool {
        self.state().unhealed
    }

    async fn mark_healed(&self) -> Result<(), DriveError> {
        self.read_call("mark_healed")?;
        self.state().unhealed = false;
        Ok(())
    }

    /// A simulated drive is a disk of [`SIM_DRIVE_SIZE`], all of it free: what pools are
    /// weighed and compared by (the bytes a pool holds are counted from its records).
    /// Not a counted call: crash sweeps cut only calls that change or read what is stored.
    async fn disk_info(&self) -> Result<DiskInfo, DriveError> {
        Ok(DiskInfo {
            total: SIM_DRIVE_SIZE,
            used: 0,
            free: SIM_DRIVE_SIZE,
        })
    }

    async fn create_staged_file(
        &self,
        staging: Uuid,
        name: &str,
    ) -> Result<Box<dyn ShardWriter>, DriveError> {
        let fate = self.enter("create_staged_file");
        if fate == Fate::Dead {
            return Err(self.offline());
        }
        let mut state = self.state();
        if state
            .staging
            .get(&staging)
            .is_some_and(|f| f.contains_key(name))
        {
            return Err(std::io::Error::from(std::io::ErrorKind::AlreadyExists).into());
        }
        let file = state.new_file();
        state
            .staging
            .entry(staging)
            .or_default()
            .insert(name.to_string(), file);
        if fate == Fate::CutMidway {
            return Err(self.offline());
        }
        Ok(Box::new(SimShardWriter {
            drive: self.label.clone(),
            state: self.state.clone(),
            power: self.power.clone(),
            boot: self.boot(),
            file,
            finished: false,
        }))
    }

    async fn commit_staged(&self, staging: Uuid, dir: &DataDir) -> Result<(), DriveError> {
        let fate = self.enter("commit_staged");
        if fate == Fate::Dead {
            return Err(self.offline());
        }
        let mut state = self.state();
        let files = state.staging.remove(&staging).ok_or(DriveError::NotFound)?;
        let key = dir_key(dir);
        let entries = state.dirs.entry(key.clone()).or_default();
        for (name, file) in files {
            entries.entry(name).or_default().current = Some(file);
        }
        if fate == Fate::CutMidway {
            return Err(self.offline());
        }
        state.sync_dir(&key);
        Ok(())
    }

    async fn remove_staged(&self, staging: Uuid) -> Result<(), DriveError> {
        let fate = self.enter("remove_staged");
        if fate == Fate::Dead {
            return Err(self.offline());
        }
        self.state().staging.remove(&staging);
        match fate {
            Fate::Completes => Ok(()),
            _ => Err(self.offline()),
        }
    }

    async fn open_shard(
        &self,
        dir: &DataDir,
        name: &str,
    ) -> Result<Box<dyn ShardReader>, DriveError> {
        self.read_call("open_shard")?;
        let state = self.state();
        let id = state.current(dir, name).ok_or(DriveError::NotFound)?;
        Ok(Box::new(SimShardReader {
            drive: self.label.clone(),
            power: self.power.clone(),
            boot: self.boot(),
            file: state.files[&id].clone(),
        }))
    }

    async fn link_data_dir(&self, from: &DataDir, to: &DataDir) -> Result<(), DriveError> {
        let fate = self.enter("link_data_dir");
        if fate == Fate::Dead {
            return Err(self.offline());
        }
        let mut state = self.state();
        let files: Vec<(String, FileId)> = (state.dirs.get(&dir_key(from)))
            .map(|entries| {
                (entries.iter())
                    .filter_map(|(name, entry)| Some((name.clone(), entry.current?)))
                    .collect()
            })
            .unwrap_or_default();
        if files.is_empty() {
            return Err(DriveError::NotFound);
        }
        let key = dir_key(to);
        let entries = state.dirs.entry(key.clone()).or_default();
        for (name, file) in files {
            let entry = entries.entry(name).or_default();
            entry.current = entry.current.or(Some(file));
        }
        if fate == Fate::CutMidway {
            return Err(self.offline());
        }
        state.sync_dir(&key);
        Ok(())
    }

    async fn delete_data_dir(&self, dir: &DataDir) -> Result<(), DriveError> {
        let fate = self.enter("delete_data_dir");
        if fate == Fate::Dead {
            return Err(self.offline());
        }
        if let Some(entries) = self.state().dirs.get_mut(&dir_key(dir)) {
            for entry in entries.values_mut() {
                entry.current = None;
            }
        }
        match fate {
            Fate::Completes => Ok(()),
            _ => Err(self.offline()),
        }
    }

    async fn delete_data_file(&self, dir: &DataDir, name: &str) -> Result<(), DriveError> {
        let fate = self.enter("delete_data_file");
        if fate == Fate::Dead {
            return Err(self.offline());
        }
        let mut state = self.state();
        if let Some(entry) = state
            .dirs
            .get_mut(&dir_key(dir))
            .and_then(|e| e.get_mut(name))
        {
            entry.current = None;
        }
        match fate {
            Fate::Completes => Ok(()),
            _ => Err(self.offline()),
        }
    }

    async fn meta_get(
        &self,
        table: MetaTable,
        key: Vec<u8>,
    ) -> Result<Option<Vec<u8>>, DriveError> {
        self.read_call("meta_get")?;
        let found = self.state().meta[table_index(table)].get(&key).cloned();
        absent_unless_unhealed(self, found)
    }

    async fn meta_get_related(
        &self,
        table: MetaTable,
        key: Vec<u8>,
        related: (MetaTable, Vec<u8>),
    ) -> Result<(Option<Vec<u8>>, ScanPage), DriveError> {
        self.read_call("meta_get_related")?;
        let state = self.state();
        let found = state.meta[table_index(table)].get(&key).cloned();
        let (which, prefix) = related;
        let entries = match found.is_some() && !state.unhealed {
            true => (state.meta[table_index(which)].range(prefix.clone()..))
                .take_while(|(k, _)| k.starts_with(&prefix))
                .take(RELATED_LIMIT)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            false => Vec::new(),
        };
        drop(state);
        Ok((absent_unless_unhealed(self, found)?, entries))
    }

    async fn meta_apply(&self, ops: Vec<MetaOp>) -> Result<Replaced, DriveError> {
        let (label, state, power) = (self.label.clone(), self.state.clone(), self.power.clone());
        let boot = self.boot();
        let commit_group = move |batches| commit_group(&label, &state, &power, boot, batches);
        self.commits.commit(ops, commit_group).await
    }

    async fn meta_scan(
        &self,
        table: MetaTable,
        start: Bound<Vec<u8>>,
        prefix: Vec<u8>,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>, DriveError> {
        self.read_call("meta_scan")?;
        refuse_scan_if_unhealed(self)?;
        let state = self.state();
        let start = scan_from(start, &prefix);
        Ok(state.meta[table_index(table)]
            .range((start, Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(&prefix))
            .take(limit)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect())
    }

    async fn meta_scan_delimited(
        &self,
        table: MetaTable,
        start: Bound<Vec<u8>>,
        prefix: Vec<u8>,
        delimiter: Vec<u8>,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>, DriveError> {
        self.read_call("meta_scan_delimited")?;
        refuse_scan_if_unhealed(self)?;
        let state = self.state();
        let table = &state.meta[table_index(table)];
        let mut from = scan_from(start, &prefix);
        let mut out = Vec::new();
        // Each common prefix found is returned once, and the scan jumps past its other keys.
        while out.len() < limit {
            let Some((key, value)) = table
                .range((from.clone(), Bound::Unbounded))
                .next()
                .filter(|(k, _)| k.starts_with(&prefix))
            else {
                break;
            };
            out.push((key.clone(), value.clone()));
            from = match rolled_up_len(key, prefix.len(), &delimiter) {
                Some(len) => match past_prefix(&key[..len]) {
                    Some(next) => Bound::Included(next),
                    None => break,
                },
                None => Bound::Excluded(key.clone()),
            };
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(n: u128) -> DataDir {
        DataDir {
            bucket_id: "b".into(),
            data_id: Uuid::from_u128(n),
        }
    }

    fn put(key: &str) -> MetaOp {
        MetaOp::Put {
            table: MetaTable::Objects,
            key: key.as_bytes().to_vec(),
            value: vec![1],
        }
    }

    async fn stage(drive: &SimDrive, name: &str, bytes: &'static [u8], finish: bool) -> Uuid {
        let staging = Uuid::new_v4();
        let mut w = drive.create_staged_file(staging, name).await.unwrap();
        w.write(vec![Bytes::from_static(bytes)]).await.unwrap();
        if finish {
            w.finish().await.unwrap();
        }
        staging
    }

    async fn read_all(drive: &SimDrive, dir: &DataDir, name: &str, len: usize) -> Option<Bytes> {
        let reader = drive.open_shard(dir, name).await.ok()?;
        reader.read_at(0, len).await.ok()
    }

    #[tokio::test]
    async fn only_committed_synced_files_and_applied_metadata_survive() {
        let sim = CrashController::new(1);
        let drive = sim.drive(0);
        let staged_only = stage(drive, "part.1", b"lost", true).await;
        let committed = stage(drive, "part.1", b"kept", true).await;
        drive.commit_staged(committed, &dir(1)).await.unwrap();
        drive.meta_apply(vec![put("k")]).await.unwrap();
        sim.crash(Flushed::Nothing);

        assert_eq!(read_all(drive, &dir(1), "part.1", 4).await.unwrap(), "kept");
        let after = drive.commit_staged(staged_only, &dir(2)).await;
        assert!(matches!(after, Err(DriveError::NotFound)));
        let got = drive.meta_get(MetaTable::Objects, b"k".to_vec()).await;
        assert_eq!(got.unwrap(), Some(vec![1]));
    }

    #[tokio::test]
    async fn removals_are_volatile_until_the_folder_is_synced() {
        let sim = CrashController::new(1);
        let drive = sim.drive(0);
        let first = stage(drive, "part.1", b"one", true).await;
        drive.commit_staged(first, &dir(1)).await.unwrap();
        drive.delete_data_file(&dir(1), "part.1").await.unwrap();
        assert!(read_all(drive, &dir(1), "part.1", 3).await.is_none());
        sim.crash(Flushed::Nothing);
        assert!(read_all(drive, &dir(1), "part.1", 3).await.is_some());

        drive.delete_data_file(&dir(1), "part.1").await.unwrap();
        let second = stage(drive, "part.2", b"two", true).await;
        drive.commit_staged(second, &dir(1)).await.unwrap();
        sim.crash(Flushed::Nothing);
        assert!(read_all(drive, &dir(1), "part.1", 3).await.is_none());
        assert!(read_all(drive, &dir(1), "part.2", 3).await.is_some());
    }

    #[tokio::test]
    async fn a_cut_fails_every_later_call_and_leaves_the_cut_one_volatile() {
        let sim = CrashController::new(2);
        sim.crash_after(1);
        sim.drive(0).meta_apply(vec![put("a")]).await.unwrap();
        let cut = sim.drive(1).meta_apply(vec![put("b")]).await;
        assert!(matches!(cut, Err(DriveError::Offline(_))));
        assert_eq!(sim.cut_call().as_deref(), Some("sim1 meta_apply"));
        let dead = sim
            .drive(0)
            .meta_get(MetaTable::Objects, b"a".to_vec())
            .await;
        assert!(dead.is_err());

        let kept: Vec<bool> = (0..16)
            .map(|seed| {
                let run = sim.fork();
                run.crash(Flushed::RandomSubset(seed));
                let has_b = run.drive(1).state().meta[1].contains_key(b"b".as_slice());
                has_b
            })
            .collect();
        assert!(kept.contains(&true) && kept.contains(&false));
        sim.crash(Flushed::Nothing);
        let b = sim
            .drive(1)
            .meta_get(MetaTable::Objects, b"b".to_vec())
            .await;
        assert_eq!(b.unwrap(), None);
        let a = sim
            .drive(0)
            .meta_get(MetaTable::Objects, b"a".to_vec())
            .await;
        assert_eq!(a.unwrap(), Some(vec![1]));
    }

    #[tokio::test]
    async fn unsynced_bytes_of_a_named_file_may_be_torn() {
        let sim = CrashController::new(1);
        let drive = sim.drive(0);
        let staging = stage(drive, "part.1", b"abcdefgh", false).await;
        drive.commit_staged(staging, &dir(1)).await.unwrap();
        let survivors: Vec<Option<Bytes>> = (0..8)
            .map(|seed| {
                let run = sim.fork();
                run.crash(Flushed::RandomSubset(seed));
                let state = run.drive(0).state();
                let file = state.current(&dir(1), "part.1");
                file.map(|id| Bytes::from(state.files[&id].read(0, 8)))
            })
            .collect();
        assert!(survivors
            .iter()
            .all(|s| s.as_ref().is_some_and(|b| b.len() <= 8)));
        assert!(survivors.iter().any(|s| s.as_ref().unwrap().len() < 8));
    }

    #[tokio::test]
    async fn delimited_scans_roll_up_common_prefixes() {
        let sim = CrashController::new(1);
        let drive = sim.drive(0);
        let keys = ["a/1", "a/2", "a/b/1", "ab", "b/1", "c"];
        drive
            .meta_apply(keys.iter().map(|k| put(k)).collect())
            .await
            .unwrap();
        let found = drive
            .meta_scan_delimited(
                MetaTable::Objects,
                Bound::Unbounded,
                Vec::new(),
                b"/".to_vec(),
                10,
            )
            .await
            .unwrap();
        let names: Vec<&[u8]> = found.iter().map(|(k, _)| k.as_slice()).collect();
        assert_eq!(names, [&b"a/1"[..], b"ab", b"b/1", b"c"]);
    }
}
