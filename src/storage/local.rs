//! A drive that is a local folder: shard files on the filesystem, metadata in redb.

use std::fs::{self, File};
use std::io::Write;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use redb::{Database, ReadableDatabase, TableDefinition};
use uuid::Uuid;

mod dir_index;
mod durable_dirs;
mod group_commit;

use super::commit_queue::CommitQueue;
use super::direct::DirectFile;
use super::{
    absent_unless_unhealed, past_prefix, refuse_scan_if_unhealed, rolled_up_len, scan_from,
    DataDir, DiskInfo, Drive, DriveError, Format, MetaOp, MetaTable, PoolList, Replaced, ScanPage,
    ShardReader, ShardWriter, RELATED_LIMIT,
};
use durable_dirs::{sync_dir, DurableDirs};

const SYSTEM_DIR: &str = ".strata";
const FORMAT_FILE: &str = "format.json";
const POOLS_FILE: &str = "pools.json";
const META_FILE: &str = "meta.redb";
/// Present while the drive is unhealed (see [`Drive::is_unhealed`]).
const UNHEALED_FILE: &str = "unhealed.json";
const STAGING_DIR: &str = "tmp";
const DATA_DIR: &str = "data";

type Table = TableDefinition<'static, &'static [u8], &'static [u8]>;

fn table(which: MetaTable) -> Table {
    match which {
        MetaTable::Buckets => TableDefinition::new("buckets"),
        MetaTable::Objects => TableDefinition::new("objects"),
        MetaTable::Inline => TableDefinition::new("inline"),
        MetaTable::Uploads => TableDefinition::new("uploads"),
        MetaTable::Parts => TableDefinition::new("parts"),
        MetaTable::System => TableDefinition::new("system"),
        MetaTable::Versions => TableDefinition::new("versions"),
    }
}

const ALL_TABLES: [MetaTable; 7] = [
    MetaTable::Buckets,
    MetaTable::Objects,
    MetaTable::Inline,
    MetaTable::Uploads,
    MetaTable::Parts,
    MetaTable::System,
    MetaTable::Versions,
];

/// A drive folder on this machine.
pub struct LocalDrive {
    root: PathBuf,
    label: String,
    db_path: PathBuf,
    /// The open database; `None` after a failed write until it is reopened (redb refuses
    /// every write after an I/O error, such as a full disk, until then).
    db: Mutex<Option<Arc<Database>>>,
    /// Mirrors the presence of the unhealed mark; set before, cleared after the file changes.
    unhealed: AtomicBool,
    /// Metadata batches waiting to share a transaction.
    commits: Arc<CommitQueue>,
    /// Folders below `data/` already made durable.
    data_dirs: Arc<DurableDirs>,
    /// How a call checks that the drive is still in place.
    presence: Arc<Presence>,
}

/// A drive answers only while its format record is in place: a folder that was removed or
/// replaced under a running server must not keep serving from open handles. The record is
/// looked up by path on every call (a `stat`, about 3 % of a small PUT's CPU): a cached
/// answer, or the open record's link count, would miss a folder moved aside and serve from
/// it until the next look, and the fault suite moves drives aside and reads at once.
struct Presence {
    format_file: PathBuf,
    label: String,
}

impl Presence {
    fn new(root: &Path, label: &str) -> Self {
        Self {
            format_file: root.join(SYSTEM_DIR).join(FORMAT_FILE),
            label: label.to_string(),
        }
    }

    fn check(&self) -> Result<(), DriveError> {
        match self.format_file.exists() {
            true => Ok(()),
            false => Err(DriveError::Offline(self.label.clone())),
        }
    }
}

impl LocalDrive {
    /// Reads the format record of a drive folder, if it has one.
    pub fn read_format(root: &Path) -> Result<Option<Format>, DriveError> {
        read_system_json(root, FORMAT_FILE)
    }

    /// Writes the format record of a new drive, durably.
    pub fn write_format(root: &Path, format: &Format) -> Result<(), DriveError> {
        write_system_json(root, FORMAT_FILE, format)
    }

    /// The deployment's pool list as this drive last recorded it (`None`: never, a drive
    /// formatted before pools existed or a new one).
    pub fn read_pools(root: &Path) -> Result<Option<PoolList>, DriveError> {
        read_system_json(root, POOLS_FILE)
    }

    /// Records the deployment's pool list on a drive, durably (written aside, then renamed).
    pub fn write_pools(root: &Path, pools: &PoolList) -> Result<(), DriveError> {
        write_system_json(root, POOLS_FILE, pools)
    }

    /// Marks a drive folder, durably, as one that joins its set blank: written before the
    /// folder is formatted into its place or given a new database, so that a crash cannot
    /// leave a blank drive that vouches for absence. Only [`Drive::mark_healed`] removes it.
    pub fn mark_unhealed(root: &Path, reason: &str) -> Result<(), DriveError> {
        let mark = serde_json::json!({
            "reason": reason,
            "since_unix_secs": std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        });
        write_system_file(root, UNHEALED_FILE, mark.to_string().as_bytes())
    }

    /// Whether a drive folder carries the unhealed mark.
    pub fn is_marked_unhealed(root: &Path) -> bool {
        root.join(SYSTEM_DIR).join(UNHEALED_FILE).exists()
    }

    /// Whether a drive folder has a metadata database (a formatted drive without one lost it).
    pub fn has_database(root: &Path) -> bool {
        root.join(SYSTEM_DIR).join(META_FILE).exists()
    }

    /// Opens a formatted drive: its metadata database, and an empty staging folder (leftovers
    /// of writes interrupted by a crash are removed here).
    pub fn open(root: &Path) -> Result<Self, DriveError> {
        let system = root.join(SYSTEM_DIR);
        let staging = system.join(STAGING_DIR);
        if staging.exists() {
            fs::remove_dir_all(&staging)?;
        }
        fs::create_dir_all(&staging)?;
        create_dir_durable(root, Path::new(DATA_DIR))?;
        let db = open_database(&system.join(META_FILE))?;
        let txn = begin_write(&db).map_err(db_err)?;
        for which in ALL_TABLES {
            txn.open_table(table(which)).map_err(db_err)?;
            if let Some(built @ 1..) = dir_index::build_if_missing(&txn, which)? {
                tracing::info!(drive = %root.display(), table = ?which, directories = built,
                    "built the directory index of a database written before it existed");
            }
        }
        txn.commit().map_err(db_err)?;
        Ok(Self {
            root: root.to_path_buf(),
            label: root.display().to_string(),
            db_path: system.join(META_FILE),
            db: Mutex::new(Some(Arc::new(db))),
            unhealed: AtomicBool::new(Self::is_marked_unhealed(root)),
            commits: Default::default(),
            data_dirs: Default::default(),
            presence: Arc::new(Presence::new(root, &root.display().to_string())),
        })
    }

    /// The database, reopened if a failed write closed it. Reopening waits for calls still
    /// holding the old handle, so it may take a few calls.
    fn database(&self) -> Result<Arc<Database>, DriveError> {
        let mut db = self.db.lock().expect("not poisoned");
        if let Some(open) = db.as_ref() {
            return Ok(open.clone());
        }
        // A drive whose folder (or format record) is gone is offline: nothing is made anew
        // in its place.
        self.presence.check()?;
        if !self.db_path.exists() {
            // The database file went away under the running server: the new one is blank.
            Self::mark_unhealed(&self.root, "metadata database made anew")?;
            self.unhealed.store(true, Ordering::SeqCst);
            tracing::warn!(drive = %self.label, "metadata database missing; the drive is unhealed until a heal pass completes");
        }
        let reopened = Arc::new(open_database(&self.db_path)?);
        tracing::info!(drive = %self.label, "metadata database reopened");
        *db = Some(reopened.clone());
        Ok(reopened)
    }

    /// Drops the database handle after a failed write, so the next call reopens it.
    fn close_database(&self) {
        *self.db.lock().expect("not poisoned") = None;
    }

    fn staging_path(&self, staging: Uuid) -> PathBuf {
        self.root
            .join(SYSTEM_DIR)
            .join(STAGING_DIR)
            .join(staging.simple().to_string())
    }

    fn data_path(dir: &DataDir) -> PathBuf {
        let id = dir.data_id.simple().to_string();
        Path::new(DATA_DIR)
            .join(&dir.bucket_id)
            .join(&id[..2])
            .join(id)
    }

    /// Runs blocking drive work off the runtime (see [`handoff`](super::handoff)), after
    /// checking the drive is online.
    async fn blocking<T, F>(&self, work: F) -> Result<T, DriveError>
    where
        T: Send + 'static,
        F: FnOnce(&Path) -> Result<T, DriveError> + Send + 'static,
    {
        let root = self.root.clone();
        let presence = self.presence.clone();
        super::handoff::run(move || {
            presence.check()?;
            work(&root)
        })
        .await
    }
}

/// The memory each drive's metadata database may keep as cache. redb's default is 1 GiB per
/// database, a ceiling nine drives reach together after a few million small objects (a fill
/// of a million 1 KiB objects left the server at 4 GiB). The interior pages of a B-tree of
/// tens of millions of keys fit in far less, and the kernel's page cache keeps the rest.
const METADATA_CACHE: usize = 64 << 20;

fn open_database(path: &Path) -> Result<Database, DriveError> {
    Database::builder()
        .set_cache_size(METADATA_CACHE)
        .create(path)
        .map_err(|e| DriveError::Database(e.to_string()))
}

/// A write transaction that commits in two phases. Keys and values are chosen by clients,
/// and redb documents that a one-phase commit whose data an attacker controls can be taken
/// for complete after a crash that left it partial; the second phase costs one more fsync.
fn begin_write(db: &Database) -> Result<redb::WriteTransaction, redb::TransactionError> {
    let mut txn = db.begin_write()?;
    txn.set_two_phase_commit(true);
    Ok(txn)
}

/// Up to `limit` entries of a table whose keys start with `prefix`, from `start`, in a read
/// transaction.
fn scan_in(
    txn: &redb::ReadTransaction,
    which: MetaTable,
    start: Bound<Vec<u8>>,
    prefix: &[u8],
    limit: usize,
) -> Result<ScanPage, DriveError> {
    let t = txn.open_table(table(which)).map_err(db_err)?;
    let start = scan_from(start, prefix);
    let start = match &start {
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    };
    let mut out = ScanPage::new();
    for entry in t
        .range::<&[u8]>((start, Bound::Unbounded))
        .map_err(db_err)?
    {
        let (k, v) = entry.map_err(db_err)?;
        if !k.value().starts_with(prefix) || out.len() >= limit {
            break;
        }
        out.push((k.value().to_vec(), v.value().to_vec()));
    }
    Ok(out)
}

fn db_err(err: impl std::fmt::Display) -> DriveError {
    DriveError::Database(err.to_string())
}

/// A failed write: a full disk is `Full`; an I/O error, or redb's refusal after an earlier
/// one, means the database must be reopened.
fn write_err(err: impl Into<redb::Error>) -> DriveError {
    match err.into() {
        redb::Error::Io(io) => DriveError::from(io),
        redb::Error::PreviousIo => DriveError::Io(std::io::Error::other(
            "an earlier write failed; the metadata database must be reopened",
        )),
        other => DriveError::Database(other.to_string()),
    }
}

/// Writes `<root>/.strata/<name>` whole or not at all, durably: written aside, fsynced,
/// renamed into place, and the folder fsynced.
/// A JSON record of the drive's system folder (`None`: the drive has none).
fn read_system_json<T: serde::de::DeserializeOwned>(
    root: &Path,
    name: &str,
) -> Result<Option<T>, DriveError> {
    match fs::read(root.join(SYSTEM_DIR).join(name)) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| DriveError::Database(format!("{name}: {e}"))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Writes a JSON record into the drive's system folder, durably.
fn write_system_json<T: serde::Serialize>(
    root: &Path,
    name: &str,
    record: &T,
) -> Result<(), DriveError> {
    let bytes = serde_json::to_vec_pretty(record).expect("a system record serialises");
    write_system_file(root, name, &bytes)
}

fn write_system_file(root: &Path, name: &str, bytes: &[u8]) -> Result<(), DriveError> {
    fs::create_dir_all(root)?;
    let system = create_dir_durable(root, Path::new(SYSTEM_DIR))?;
    let staged = system.join(format!("{name}.tmp"));
    let mut file = File::create(&staged)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    fs::rename(&staged, system.join(name))?;
    sync_dir(&system)
}

/// Creates `relative` under `root` and fsyncs the parent of every folder on the way, so that
/// a file renamed into the last one cannot vanish with a folder on power loss. Folders that
/// existed are synced too: another writer may have just created one and not synced it yet.
fn create_dir_durable(root: &Path, relative: &Path) -> Result<PathBuf, DriveError> {
    let mut current = root.to_path_buf();
    for component in relative.components() {
        let next = current.join(component);
        match fs::create_dir(&next) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e.into()),
            _ => sync_dir(&current)?,
        }
        current = next;
    }
    Ok(current)
}

struct LocalShardWriter {
    file: Option<DirectFile>,
}

#[async_trait]
impl ShardWriter for LocalShardWriter {
    async fn write(&mut self, pieces: Vec<Bytes>) -> Result<(), DriveError> {
        let mut file = self.file.take().ok_or(DriveError::NotFound)?;
        let (file, result) = tokio::task::spawn_blocking(move || {
            let result = pieces.iter().try_for_each(|piece| file.append(piece));
            (file, result)
        })
        .await
        .map_err(|e| DriveError::Io(std::io::Error::other(e)))?;
        self.file = Some(file);
        Ok(result?)
    }

    async fn finish(&mut self) -> Result<(), DriveError> {
        let file = self.file.take().ok_or(DriveError::NotFound)?;
        tokio::task::spawn_blocking(move || file.finish())
            .await
            .map_err(|e| DriveError::Io(std::io::Error::other(e)))??;
        Ok(())
    }
}

struct LocalShardReader {
    file: Arc<File>,
}

/// Reads `len` bytes of `file` at `offset` into a fresh buffer, without zeroing it first:
/// the kernel's copy fills it (zeroing a shard's buffer cost as much as hashing it).
fn read_exact_at(file: &File, offset: u64, len: usize) -> Result<Bytes, DriveError> {
    let mut buf = Vec::with_capacity(len);
    while buf.len() < len {
        let at = offset + buf.len() as u64;
        match rustix::io::pread(file, rustix::buffer::spare_capacity(&mut buf), at) {
            Ok(0) => return Err(DriveError::ShortRead),
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => {}
            Err(errno) => return Err(std::io::Error::from(errno).into()),
        }
    }
    buf.truncate(len);
    Ok(Bytes::from(buf))
}

#[async_trait]
impl ShardReader for LocalShardReader {
    async fn read_at(&self, offset: u64, len: usize) -> Result<Bytes, DriveError> {
        let file = self.file.clone();
        tokio::task::spawn_blocking(move || read_exact_at(&file, offset, len))
            .await
            .map_err(|e| DriveError::Io(std::io::Error::other(e)))?
    }
}

#[async_trait]
impl Drive for LocalDrive {
    fn label(&self) -> &str {
        &self.label
    }

    fn is_unhealed(&self) -> bool {
        self.unhealed.load(Ordering::SeqCst)
    }

    async fn mark_healed(&self) -> Result<(), DriveError> {
        self.blocking(|root| {
            let system = root.join(SYSTEM_DIR);
            match fs::remove_file(system.join(UNHEALED_FILE)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
                _ => {}
            }
            sync_dir(&system)
        })
        .await?;
        self.unhealed.store(false, Ordering::SeqCst);
        Ok(())
    }

    async fn disk_info(&self) -> Result<DiskInfo, DriveError> {
        self.blocking(|root| {
            let stat = rustix::fs::statvfs(root).map_err(std::io::Error::from)?;
            let block = stat.f_frsize;
            Ok(DiskInfo {
                total: stat.f_blocks * block,
                used: stat.f_blocks.saturating_sub(stat.f_bfree) * block,
                free: stat.f_bavail * block,
            })
        })
        .await
    }

    async fn list_data_dirs(&self) -> Result<Vec<(DataDir, std::time::SystemTime)>, DriveError> {
        self.blocking(|root| {
            let mut out = Vec::new();
            // data/<bucket id>/<two hex digits>/<data id>
            for bucket in fs::read_dir(root.join(DATA_DIR))? {
                let bucket = bucket?;
                let bucket_id = bucket.file_name().to_string_lossy().into_owned();
                for fan in fs::read_dir(bucket.path())? {
                    for entry in fs::read_dir(fan?.path())? {
                        let entry = entry?;
                        let name = entry.file_name();
                        let Ok(data_id) = Uuid::parse_str(&name.to_string_lossy()) else {
                            continue;
                        };
                        let modified = entry.metadata()?.modified()?;
                        let dir = DataDir {
                            bucket_id: bucket_id.clone(),
                            data_id,
                        };
                        out.push((dir, modified));
                    }
                }
            }
            Ok(out)
        })
        .await
    }

    async fn create_staged_file(
        &self,
        staging: Uuid,
        name: &str,
    ) -> Result<Box<dyn ShardWriter>, DriveError> {
        let dir = self.staging_path(staging);
        let name = name.to_string();
        let file = self
            .blocking(move |_| {
                fs::create_dir_all(&dir)?;
                Ok(DirectFile::create(&dir.join(name))?)
            })
            .await?;
        Ok(Box::new(LocalShardWriter { file: Some(file) }))
    }

    async fn commit_staged(&self, staging: Uuid, dir: &DataDir) -> Result<(), DriveError> {
        let source = self.staging_path(staging);
        let relative = Self::data_path(dir);
        let dirs = self.data_dirs.clone();
        self.blocking(move |root| {
            // `data` itself was made durable when the drive was opened.
            let below_data = relative
                .strip_prefix(DATA_DIR)
                .expect("data paths start there");
            dirs.make_filled(&root.join(DATA_DIR), below_data, |dest| {
                for entry in fs::read_dir(&source)? {
                    let entry = entry?;
                    fs::rename(entry.path(), dest.join(entry.file_name()))?;
                }
                Ok(())
            })?;
            fs::remove_dir_all(&source)?;
            Ok(())
        })
        .await
    }

    async fn remove_staged(&self, staging: Uuid) -> Result<(), DriveError> {
        let path = self.staging_path(staging);
        self.blocking(move |_| match fs::remove_dir_all(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        })
        .await
    }

    async fn open_shard(
        &self,
        dir: &DataDir,
        name: &str,
    ) -> Result<Box<dyn ShardReader>, DriveError> {
        let path = Self::data_path(dir).join(name);
        let file = self
            .blocking(move |root| Ok(File::open(root.join(path))?))
            .await?;
        Ok(Box::new(LocalShardReader {
            file: Arc::new(file),
        }))
    }

    async fn open_shards(
        &self,
        dir: &DataDir,
        names: &[String],
    ) -> Vec<Result<Box<dyn ShardReader>, DriveError>> {
        let paths: Vec<PathBuf> = names.iter().map(|n| Self::data_path(dir).join(n)).collect();
        let count = paths.len();
        let opened = self
            .blocking(move |root| {
                Ok(paths
                    .into_iter()
                    .map(|path| File::open(root.join(path)).map_err(DriveError::from))
                    .collect::<Vec<_>>())
            })
            .await;
        match opened {
            Ok(files) => (files.into_iter())
                .map(|file| {
                    let file = Arc::new(file?);
                    Ok(Box::new(LocalShardReader { file }) as Box<dyn ShardReader>)
                })
                .collect(),
            Err(e) => (0..count).map(|_| Err(e.copied())).collect(),
        }
    }

    async fn delete_data_dir(&self, dir: &DataDir) -> Result<(), DriveError> {
        let path = Self::data_path(dir);
        self.blocking(move |root| match fs::remove_dir_all(root.join(path)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        })
        .await
    }

    async fn link_data_dir(&self, from: &DataDir, to: &DataDir) -> Result<(), DriveError> {
        let source = Self::data_path(from);
        let relative = Self::data_path(to);
        let dirs = self.data_dirs.clone();
        self.blocking(move |root| {
            // Read first: a folder that is not there makes no empty one.
            let files = fs::read_dir(root.join(source))?.collect::<Result<Vec<_>, _>>()?;
            let below_data = relative
                .strip_prefix(DATA_DIR)
                .expect("data paths start there");
            dirs.make_filled(&root.join(DATA_DIR), below_data, |dest| {
                for file in files {
                    match fs::hard_link(file.path(), dest.join(file.file_name())) {
                        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                            return Err(e.into())
                        }
                        _ => {}
                    }
                }
                Ok(())
            })
        })
        .await
    }

    async fn delete_data_file(&self, dir: &DataDir, name: &str) -> Result<(), DriveError> {
        let path = Self::data_path(dir).join(name);
        self.blocking(move |root| match fs::remove_file(root.join(path)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        })
        .await
    }

    async fn meta_get(
        &self,
        which: MetaTable,
        key: Vec<u8>,
    ) -> Result<Option<Vec<u8>>, DriveError> {
        let db = self.database()?;
        let found = self
            .blocking(move |_| {
                let txn = db.begin_read().map_err(db_err)?;
                let t = txn.open_table(table(which)).map_err(db_err)?;
                Ok(t.get(key.as_slice())
                    .map_err(db_err)?
                    .map(|v| v.value().to_vec()))
            })
            .await?;
        absent_unless_unhealed(self, found)
    }

    async fn meta_apply(&self, ops: Vec<MetaOp>) -> Result<Replaced, DriveError> {
        let db = self.database()?;
        let presence = self.presence.clone();
        let commit_group = move |batches| {
            presence.check()?;
            group_commit::commit_group(&db, batches)
        };
        self.commits
            .commit(ops, commit_group)
            .await
            .inspect_err(|e| {
                if matches!(e, DriveError::Full | DriveError::Io(_)) {
                    self.close_database();
                }
            })
    }

    async fn meta_get_related(
        &self,
        which: MetaTable,
        key: Vec<u8>,
        related: (MetaTable, Vec<u8>),
    ) -> Result<(Option<Vec<u8>>, ScanPage), DriveError> {
        let db = self.database()?;
        let unhealed = self.is_unhealed();
        let (found, entries) = self
            .blocking(move |_| {
                let txn = db.begin_read().map_err(db_err)?;
                let t = txn.open_table(table(which)).map_err(db_err)?;
                let found = (t.get(key.as_slice()).map_err(db_err)?).map(|v| v.value().to_vec());
                let entries = match found.is_some() && !unhealed {
                    true => scan_in(&txn, related.0, Bound::Unbounded, &related.1, RELATED_LIMIT)?,
                    false => ScanPage::new(),
                };
                Ok((found, entries))
            })
            .await?;
        Ok((absent_unless_unhealed(self, found)?, entries))
    }

    async fn meta_scan(
        &self,
        which: MetaTable,
        start: Bound<Vec<u8>>,
        prefix: Vec<u8>,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>, DriveError> {
        // Opening may find the database gone and make the drive unhealed: ask after.
        let db = self.database()?;
        refuse_scan_if_unhealed(self)?;
        self.blocking(move |_| {
            let txn = db.begin_read().map_err(db_err)?;
            scan_in(&txn, which, start, &prefix, limit)
        })
        .await
    }

    async fn meta_scan_delimited(
        &self,
        which: MetaTable,
        start: Bound<Vec<u8>>,
        prefix: Vec<u8>,
        delimiter: Vec<u8>,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>, DriveError> {
        // Opening may find the database gone and make the drive unhealed: ask after.
        let db = self.database()?;
        refuse_scan_if_unhealed(self)?;
        self.blocking(move |_| {
            let txn = db.begin_read().map_err(db_err)?;
            let t = txn.open_table(table(which)).map_err(db_err)?;
            let start = scan_from(start, &prefix);
            if let (true, Some(index)) =
                (dir_index::serves(&delimiter), dir_index::index_table(which))
            {
                let index = txn.open_table(index).map_err(db_err)?;
                let found = dir_index::scan_subdirectories(&t, &index, &start, &prefix, limit)?;
                if let Some(found) = found {
                    return Ok(found);
                }
            }
            let mut from = start;
            let mut out = Vec::new();
            // One read transaction; each common prefix found re-seeks past its other keys.
            'seeks: loop {
                let lower = match &from {
                    Bound::Included(k) => Bound::Included(k.as_slice()),
                    Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
                    Bound::Unbounded => Bound::Unbounded,
                };
                let mut jump = None;
                for entry in t
                    .range::<&[u8]>((lower, Bound::Unbounded))
                    .map_err(db_err)?
                {
                    let (k, v) = entry.map_err(db_err)?;
                    if !k.value().starts_with(&prefix) || out.len() >= limit {
                        break 'seeks;
                    }
                    out.push((k.value().to_vec(), v.value().to_vec()));
                    if let Some(len) = rolled_up_len(k.value(), prefix.len(), &delimiter) {
                        jump = past_prefix(&k.value()[..len]);
                        break;
                    }
                }
                match jump {
                    Some(next) => from = Bound::Included(next),
                    None => break,
                }
            }
            Ok(out)
        })
        .await
    }
}

#[cfg(test)]
#[path = "local_tests.rs"]
pub(crate) mod tests;
