//! A test tool: a drive that fails the calls it is told to fail, as a dying or full disk
//! fails some operations and not others, so tests can place failures on chosen drives at
//! chosen steps of a write (shards on some drives, records on others). It counts the shard
//! reads it serves, and can pass for another node's drive.

use std::collections::HashMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use uuid::Uuid;

use super::{
    DataDir, DiskInfo, Drive, DriveError, MetaOp, MetaTable, Replaced, ScanPage, ShardReader,
    ShardWriter,
};

/// The calls a [`FaultyDrive`] can be told to fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Call {
    CreateStagedFile,
    CommitStaged,
    LinkDataDir,
    OpenShard,
    MetaGet,
    MetaApply,
    MetaScan,
}

/// Wraps a drive; the calls told to fail answer [`DriveError::Offline`], and metadata calls
/// may be slowed down (to widen the windows in which concurrent writers race).
pub struct FaultyDrive {
    inner: Arc<dyn Drive>,
    /// Calls that fail, each after letting this many more through.
    failing: Mutex<HashMap<Call, u32>>,
    /// Added to every metadata read and write.
    delay: Mutex<std::time::Duration>,
    /// Added to every metadata write, on top of `delay`.
    apply_delay: Mutex<std::time::Duration>,
    /// Shard reads served.
    shard_reads: Arc<AtomicUsize>,
    /// Shard files open now, and the most that were open at once.
    open_files: Arc<OpenFiles>,
    /// Passes for another node's drive.
    remote: AtomicBool,
    /// The free space it reports, when told to report another than its inner drive's.
    free: Mutex<Option<u64>>,
}

impl FaultyDrive {
    pub fn new(inner: Arc<dyn Drive>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            failing: Mutex::new(HashMap::new()),
            delay: Mutex::new(std::time::Duration::ZERO),
            apply_delay: Mutex::new(std::time::Duration::ZERO),
            shard_reads: Arc::default(),
            open_files: Arc::default(),
            remote: AtomicBool::new(false),
            free: Mutex::new(None),
        })
    }

    /// From now on it reports `bytes` free (a fuller disk than it is).
    pub fn report_free(&self, bytes: u64) {
        *self.free.lock().expect("not poisoned") = Some(bytes);
    }

    /// From now on it says it is another node's drive.
    pub fn pass_for_remote(&self) {
        self.remote.store(true, Ordering::SeqCst);
    }

    /// The shard reads it has served.
    pub fn shard_reads(&self) -> usize {
        self.shard_reads.load(Ordering::SeqCst)
    }

    /// The most shard files it had open at once.
    pub fn most_open_files(&self) -> usize {
        self.open_files.most.load(Ordering::SeqCst)
    }

    /// From now on, these calls fail.
    pub fn fail(&self, calls: &[Call]) {
        for &call in calls {
            self.fail_after(call, 0);
        }
    }

    /// `call` succeeds `times` more times, then fails (a disk that dies mid-write).
    pub fn fail_after(&self, call: Call, times: u32) {
        self.failing
            .lock()
            .expect("not poisoned")
            .insert(call, times);
    }

    /// Every metadata read and write takes `delay` longer.
    pub fn slow_down(&self, delay: std::time::Duration) {
        *self.delay.lock().expect("not poisoned") = delay;
    }

    /// Every metadata write takes `delay` longer (a commit that reaches this drive late).
    pub fn slow_down_writes(&self, delay: std::time::Duration) {
        *self.apply_delay.lock().expect("not poisoned") = delay;
    }

    async fn wait(&self) {
        let delay = *self.delay.lock().expect("not poisoned");
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
    }

    /// Every call works again.
    pub fn recover(&self) {
        self.failing.lock().expect("not poisoned").clear();
    }

    fn check(&self, call: Call) -> Result<(), DriveError> {
        match self.failing.lock().expect("not poisoned").get_mut(&call) {
            Some(0) => Err(DriveError::Offline(self.inner.label().to_string())),
            Some(left) => {
                *left -= 1;
                Ok(())
            }
            None => Ok(()),
        }
    }
}

#[async_trait]
impl Drive for FaultyDrive {
    fn label(&self) -> &str {
        self.inner.label()
    }
    fn is_unhealed(&self) -> bool {
        self.inner.is_unhealed()
    }
    fn is_remote(&self) -> bool {
        self.remote.load(Ordering::SeqCst) || self.inner.is_remote()
    }
    async fn mark_healed(&self) -> Result<(), DriveError> {
        self.inner.mark_healed().await
    }
    async fn disk_info(&self) -> Result<DiskInfo, DriveError> {
        let mut info = self.inner.disk_info().await?;
        if let Some(free) = *self.free.lock().expect("not poisoned") {
            info.free = free;
        }
        Ok(info)
    }
    async fn list_data_dirs(&self) -> Result<Vec<(DataDir, std::time::SystemTime)>, DriveError> {
        self.inner.list_data_dirs().await
    }
    async fn create_staged_file(
        &self,
        staging: Uuid,
        name: &str,
    ) -> Result<Box<dyn ShardWriter>, DriveError> {
        self.check(Call::CreateStagedFile)?;
        self.inner.create_staged_file(staging, name).await
    }
    async fn commit_staged(&self, staging: Uuid, dir: &DataDir) -> Result<(), DriveError> {
        self.check(Call::CommitStaged)?;
        self.inner.commit_staged(staging, dir).await
    }
    async fn remove_staged(&self, staging: Uuid) -> Result<(), DriveError> {
        self.inner.remove_staged(staging).await
    }
    async fn open_shard(
        &self,
        dir: &DataDir,
        name: &str,
    ) -> Result<Box<dyn ShardReader>, DriveError> {
        self.check(Call::OpenShard)?;
        let inner = self.inner.open_shard(dir, name).await?;
        let now = self.open_files.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.open_files.most.fetch_max(now, Ordering::SeqCst);
        Ok(Box::new(CountedReader {
            inner,
            reads: self.shard_reads.clone(),
            open_files: self.open_files.clone(),
        }))
    }
    async fn delete_data_dir(&self, dir: &DataDir) -> Result<(), DriveError> {
        self.inner.delete_data_dir(dir).await
    }
    async fn delete_data_file(&self, dir: &DataDir, name: &str) -> Result<(), DriveError> {
        self.inner.delete_data_file(dir, name).await
    }
    async fn link_data_dir(&self, from: &DataDir, to: &DataDir) -> Result<(), DriveError> {
        self.check(Call::LinkDataDir)?;
        self.inner.link_data_dir(from, to).await
    }
    async fn meta_get(
        &self,
        table: MetaTable,
        key: Vec<u8>,
    ) -> Result<Option<Vec<u8>>, DriveError> {
        self.check(Call::MetaGet)?;
        self.wait().await;
        self.inner.meta_get(table, key).await
    }
    async fn meta_get_related(
        &self,
        table: MetaTable,
        key: Vec<u8>,
        related: (MetaTable, Vec<u8>),
    ) -> Result<(Option<Vec<u8>>, ScanPage), DriveError> {
        self.check(Call::MetaGet)?;
        self.wait().await;
        self.inner.meta_get_related(table, key, related).await
    }
    async fn meta_apply(&self, ops: Vec<MetaOp>) -> Result<Replaced, DriveError> {
        self.check(Call::MetaApply)?;
        self.wait().await;
        let delay = *self.apply_delay.lock().expect("not poisoned");
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        self.inner.meta_apply(ops).await
    }
    async fn meta_scan(
        &self,
        table: MetaTable,
        start: Bound<Vec<u8>>,
        prefix: Vec<u8>,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>, DriveError> {
        self.check(Call::MetaScan)?;
        self.inner.meta_scan(table, start, prefix, limit).await
    }
    async fn meta_scan_delimited(
        &self,
        table: MetaTable,
        start: Bound<Vec<u8>>,
        prefix: Vec<u8>,
        delimiter: Vec<u8>,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>, DriveError> {
        self.check(Call::MetaScan)?;
        (self.inner)
            .meta_scan_delimited(table, start, prefix, delimiter, limit)
            .await
    }
}

/// Shard files open now, and the most open at once.
#[derive(Default)]
struct OpenFiles {
    now: AtomicUsize,
    most: AtomicUsize,
}

/// A shard file whose reads are counted, and which counts as open until dropped.
struct CountedReader {
    inner: Box<dyn ShardReader>,
    reads: Arc<AtomicUsize>,
    open_files: Arc<OpenFiles>,
}

impl Drop for CountedReader {
    fn drop(&mut self) {
        self.open_files.now.fetch_sub(1, Ordering::SeqCst);
    }
}

#[async_trait]
impl ShardReader for CountedReader {
    async fn read_at(&self, offset: u64, len: usize) -> Result<bytes::Bytes, DriveError> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.inner.read_at(offset, len).await
    }
}
