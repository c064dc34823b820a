//! A drive position whose drive can be swapped while the server runs: a drive that returns,
//! or an empty one put in place of a failed one, is opened into its old position without a
//! restart. Calls go to whatever drive the slot holds when they start.

use std::ops::Bound;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use uuid::Uuid;

use super::{
    DataDir, DiskInfo, Drive, DriveError, MetaOp, MetaTable, Replaced, ScanPage, ShardReader,
    ShardWriter,
};

pub struct DriveSlot {
    label: String,
    current: RwLock<Arc<dyn Drive>>,
}

impl DriveSlot {
    pub fn new(label: impl Into<String>, drive: Arc<dyn Drive>) -> Self {
        Self {
            label: label.into(),
            current: RwLock::new(drive),
        }
    }

    /// The drive in the slot now.
    pub fn current(&self) -> Arc<dyn Drive> {
        self.current.read().expect("not poisoned").clone()
    }

    /// Puts another drive in the slot; calls already running finish on the old one.
    pub fn replace(&self, drive: Arc<dyn Drive>) {
        *self.current.write().expect("not poisoned") = drive;
    }
}

#[async_trait]
impl Drive for DriveSlot {
    fn label(&self) -> &str {
        &self.label
    }
    async fn disk_info(&self) -> Result<DiskInfo, DriveError> {
        self.current().disk_info().await
    }
    fn is_stalled(&self) -> bool {
        self.current().is_stalled()
    }
    fn is_unhealed(&self) -> bool {
        self.current().is_unhealed()
    }
    fn is_remote(&self) -> bool {
        self.current().is_remote()
    }
    async fn mark_healed(&self) -> Result<(), DriveError> {
        self.current().mark_healed().await
    }
    async fn list_data_dirs(&self) -> Result<Vec<(DataDir, std::time::SystemTime)>, DriveError> {
        self.current().list_data_dirs().await
    }
    async fn create_staged_file(
        &self,
        staging: Uuid,
        name: &str,
    ) -> Result<Box<dyn ShardWriter>, DriveError> {
        self.current().create_staged_file(staging, name).await
    }
    async fn commit_staged(&self, staging: Uuid, dir: &DataDir) -> Result<(), DriveError> {
        self.current().commit_staged(staging, dir).await
    }
    async fn remove_staged(&self, staging: Uuid) -> Result<(), DriveError> {
        self.current().remove_staged(staging).await
    }
    async fn open_shard(
        &self,
        dir: &DataDir,
        name: &str,
    ) -> Result<Box<dyn ShardReader>, DriveError> {
        self.current().open_shard(dir, name).await
    }
    async fn open_shards(
        &self,
        dir: &DataDir,
        names: &[String],
    ) -> Vec<Result<Box<dyn ShardReader>, DriveError>> {
        self.current().open_shards(dir, names).await
    }
    async fn delete_data_dir(&self, dir: &DataDir) -> Result<(), DriveError> {
        self.current().delete_data_dir(dir).await
    }
    async fn delete_data_file(&self, dir: &DataDir, name: &str) -> Result<(), DriveError> {
        self.current().delete_data_file(dir, name).await
    }
    async fn link_data_dir(&self, from: &DataDir, to: &DataDir) -> Result<(), DriveError> {
        self.current().link_data_dir(from, to).await
    }
    async fn meta_get(
        &self,
        table: MetaTable,
        key: Vec<u8>,
    ) -> Result<Option<Vec<u8>>, DriveError> {
        self.current().meta_get(table, key).await
    }
    async fn meta_get_related(
        &self,
        table: MetaTable,
        key: Vec<u8>,
        related: (MetaTable, Vec<u8>),
    ) -> Result<(Option<Vec<u8>>, ScanPage), DriveError> {
        self.current().meta_get_related(table, key, related).await
    }
    async fn meta_apply(&self, ops: Vec<MetaOp>) -> Result<Replaced, DriveError> {
        self.current().meta_apply(ops).await
    }
    async fn meta_scan(
        &self,
        table: MetaTable,
        start: Bound<Vec<u8>>,
        prefix: Vec<u8>,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>, DriveError> {
        self.current().meta_scan(table, start, prefix, limit).await
    }
    async fn meta_scan_delimited(
        &self,
        table: MetaTable,
        start: Bound<Vec<u8>>,
        prefix: Vec<u8>,
        delimiter: Vec<u8>,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>, DriveError> {
        self.current()
            .meta_scan_delimited(table, start, prefix, delimiter, limit)
            .await
    }
}
