//! Data folders made durable with as few syncs as the guarantee needs.
//!
//! A version's data folder (`data/BUCKET/XX/ID`) must survive power loss once its record is
//! committed: the folder's entries and every folder on the way are synced first. The bucket
//! and fan-out folders are made once and never removed while the drive runs, so after this
//! process has synced the parent of one, it need not sync it again: only the new folder and
//! its own parent are synced per write. The new folder is synced after it is filled, so the
//! one journal commit covers its creation and its entries, and the parent's sync that
//! follows finds little left to write.

use std::collections::HashSet;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::storage::DriveError;

/// Folders below `data/` this process knows to be durable.
#[derive(Default)]
pub(super) struct DurableDirs(Mutex<HashSet<PathBuf>>);

impl DurableDirs {
    /// Makes the folder `below` (relative to the durable folder `base`), lets `fill` put its
    /// entries in, and returns once the folder, its entries and its path are durable.
    pub(super) fn make_filled(
        &self,
        base: &Path,
        below: &Path,
        fill: impl FnOnce(&Path) -> Result<(), DriveError>,
    ) -> Result<(), DriveError> {
        let parent = self.parents_of(base, below)?;
        let dir = base.join(below);
        match fs::create_dir(&dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // A parent went away under us (a wiped drive): nothing cached holds.
                self.forget_all();
                return Err(e.into());
            }
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e.into()),
            _ => {}
        }
        fill(&dir)?;
        sync_dir(&dir)?;
        sync_dir(&parent)
    }

    /// Makes every folder between `base` and `below`'s parent, syncing the parent of each
    /// one not known durable yet (another writer may have just made it, unsynced). Answers
    /// the last one.
    fn parents_of(&self, base: &Path, below: &Path) -> Result<PathBuf, DriveError> {
        let mut current = base.to_path_buf();
        let Some(parents) = below.parent() else {
            return Ok(current);
        };
        for component in parents.components() {
            let next = current.join(component);
            if !self.known(&next) {
                match fs::create_dir(&next) {
                    Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e.into()),
                    _ => sync_dir(&current)?,
                }
                self.0.lock().expect("not poisoned").insert(next.clone());
            }
            current = next;
        }
        Ok(current)
    }

    fn known(&self, dir: &Path) -> bool {
        self.0.lock().expect("not poisoned").contains(dir)
    }

    fn forget_all(&self) {
        self.0.lock().expect("not poisoned").clear();
    }
}

/// fsyncs a folder so that the entries created or renamed in it survive power loss.
pub(super) fn sync_dir(dir: &Path) -> Result<(), DriveError> {
    File::open(dir)?.sync_all()?;
    Ok(())
}
