//! The few calls on one drive of a set that the layers above need: healing puts back or
//! removes what a single drive holds wrongly, and listings page through drives one by one.
//! Everything else goes to all the drives of the set at once (see the set's methods).

use std::ops::Bound;
use std::time::SystemTime;

use uuid::Uuid;

use super::{DriveResults, ErasureSet, ScanPage};
use crate::storage::{DataDir, DriveError, MetaOp, MetaTable};

impl ErasureSet {
    /// The drive's name in logs.
    pub fn drive_label(&self, drive: usize) -> &str {
        self.drives[drive].label()
    }

    /// Applies metadata changes on one drive, unconditionally (healing).
    pub async fn meta_apply_on(&self, drive: usize, ops: Vec<MetaOp>) -> Result<(), DriveError> {
        self.drives[drive].meta_apply(ops).await.map(drop)
    }

    /// Moves staged shard files into their data folder on one drive (healing).
    pub async fn commit_staged_on(
        &self,
        drive: usize,
        staging: Uuid,
        dir: &DataDir,
    ) -> Result<(), DriveError> {
        self.drives[drive].commit_staged(staging, dir).await
    }

    /// Deletes a data folder from one drive (healing, orphan collection).
    pub async fn delete_data_dir_on(&self, drive: usize, dir: &DataDir) -> Result<(), DriveError> {
        self.drives[drive].delete_data_dir(dir).await
    }

    /// Every data folder on every drive, with when it last changed.
    pub async fn list_data_dirs_all(&self) -> DriveResults<Vec<(DataDir, SystemTime)>> {
        futures::future::join_all(self.drives.iter().map(|d| d.list_data_dirs())).await
    }

    /// Up to `limit` records of one drive whose keys start with `prefix`, from `start`; with
    /// a delimiter, one per common prefix (see the drive's `meta_scan_delimited`).
    pub async fn meta_scan_on(
        &self,
        drive: usize,
        table: MetaTable,
        start: Bound<Vec<u8>>,
        prefix: Vec<u8>,
        delimiter: Option<Vec<u8>>,
        limit: usize,
    ) -> Result<ScanPage, DriveError> {
        let drive = &self.drives[drive];
        match delimiter {
            Some(d) => (drive.meta_scan_delimited(table, start, prefix, d, limit)).await,
            None => drive.meta_scan(table, start, prefix, limit).await,
        }
    }
}
