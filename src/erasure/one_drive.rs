//! The few data calls on one drive of a set that the layers above need: healing puts back
//! or removes what a single drive holds wrongly. Everything else goes to all the drives of
//! the set at once (see the set's methods).

use std::time::SystemTime;

use uuid::Uuid;

use super::{DriveResults, ErasureSet};
use crate::storage::{DataDir, DriveError};

impl ErasureSet {
    /// The drive's name in logs.
    pub fn drive_label(&self, drive: usize) -> &str {
        self.drives[drive].label()
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
}
