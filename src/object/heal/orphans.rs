//! Data folders no record refers to: leftovers of writes cut short between placing their
//! shards and committing their record, or of drives that missed a delete.

use std::collections::HashSet;
use std::ops::Bound;
use std::time::SystemTime;

use uuid::Uuid;

use crate::object::record::{self, ObjectRecord, VersionsRecord, OBJECTS, UPLOADS, VERSIONS};
use crate::object::{ObjectError, ObjectStore};
use crate::records::{RecordSet, SCAN_PAGE};

impl ObjectStore {
    /// Deletes data folders no record refers to: leftovers of writes cut short between placing
    /// their shards and committing their record, or of drives that missed a delete. Only
    /// folders unchanged since `older_than` go, so writes in flight keep theirs; a folder any
    /// drive of the set still refers to is kept everywhere. Returns the folders deleted.
    pub async fn collect_orphans(&self, older_than: SystemTime) -> Result<u64, ObjectError> {
        let mut deleted = 0;
        for set in &self.sets {
            let listed = set.list_data_dirs_all().await;
            if listed
                .iter()
                .all(|l| l.as_ref().map_or(true, Vec::is_empty))
            {
                continue;
            }
            let Some(referenced) = referenced_data(set).await else {
                // Without every drive's records, nothing can be called unreferenced.
                continue;
            };
            for (drive, dirs) in listed.into_iter().enumerate() {
                for (dir, modified) in dirs.unwrap_or_default() {
                    let orphan = modified < older_than && !referenced.contains(&dir.data_id);
                    if orphan && set.delete_data_dir_on(drive, &dir).await.is_ok() {
                        tracing::info!(drive = set.drive_label(drive), data = %dir.data_id, "removed an orphaned data folder");
                        deleted += 1;
                    }
                }
            }
        }
        Ok(deleted)
    }
}

/// Every data id the records of a set's drives refer to (current and replaced versions,
/// uploads in progress); `None` unless every drive answered.
async fn referenced_data(set: &RecordSet) -> Option<HashSet<Uuid>> {
    let mut referenced = HashSet::new();
    for drive in 0..set.width() {
        for table in [OBJECTS.id(), VERSIONS.id(), UPLOADS.id()] {
            let mut start = Bound::Unbounded;
            loop {
                let page = set
                    .scan_on(drive, table, start, Vec::new(), None, SCAN_PAGE)
                    .await
                    .ok()?;
                for (_, value) in &page {
                    if table == OBJECTS.id() {
                        let record = record::decode::<ObjectRecord>(value).ok()?;
                        referenced.extend(record.with_superseded().map(|v| v.data_id));
                    } else if table == VERSIONS.id() {
                        let record = record::decode::<VersionsRecord>(value).ok()?;
                        let states = record.with_superseded();
                        referenced
                            .extend(states.flat_map(|s| s.versions.iter().map(|v| v.data_id)));
                    } else {
                        let upload = record::decode::<crate::object::UploadRecord>(value).ok()?;
                        referenced.insert(upload.data_id);
                    }
                }
                match page.last() {
                    Some((key, _)) if page.len() == SCAN_PAGE => {
                        start = Bound::Excluded(key.clone())
                    }
                    _ => break,
                }
            }
        }
    }
    Some(referenced)
}
