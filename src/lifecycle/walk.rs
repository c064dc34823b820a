//! Walking a bucket key by key, each key with all its versions (newest first): what the
//! scanner judges and the plan previews. A versioned bucket is walked through
//! ListObjectVersions, an unversioned one through its objects.

use std::collections::VecDeque;

use super::evaluate::VersionState;
use crate::object::{
    BucketName, ListEntry, ListQuery, ObjectError, ObjectRecord, ObjectStore, VersionEntry,
    VersionsQuery,
};

/// Entries listed per page.
const PAGE: usize = 1000;

/// Where the walk goes on from.
enum Cursor {
    Objects(ListQuery),
    Versions(VersionsQuery),
    Done,
}

/// A walk over a bucket's keys.
pub struct KeyWalk<'a> {
    store: &'a ObjectStore,
    bucket: &'a BucketName,
    cursor: Cursor,
    /// Keys of the last page not handed out yet; the last one may go on in the next page.
    ready: VecDeque<(String, Vec<ObjectRecord>)>,
}

impl<'a> KeyWalk<'a> {
    /// A walk of the keys after `after` (all of them when `None`).
    pub async fn new(
        store: &'a ObjectStore,
        bucket: &'a BucketName,
        after: Option<String>,
    ) -> Result<Self, ObjectError> {
        let versioned = store.bucket(bucket).await?.settings.versioning.is_some();
        let cursor = if versioned {
            Cursor::Versions(VersionsQuery {
                key_marker: after,
                max_keys: PAGE,
                ..VersionsQuery::default()
            })
        } else {
            Cursor::Objects(ListQuery {
                after,
                max_keys: PAGE,
                ..ListQuery::default()
            })
        };
        Ok(Self {
            store,
            bucket,
            cursor,
            ready: VecDeque::new(),
        })
    }

    /// The next key and its versions, newest first; `None` at the end.
    pub async fn next_key(&mut self) -> Result<Option<(String, Vec<ObjectRecord>)>, ObjectError> {
        loop {
            // A key is complete once a later key follows it, or the listing has ended.
            if self.ready.len() > 1 || matches!(self.cursor, Cursor::Done) {
                return Ok(self.ready.pop_front());
            }
            self.next_page().await?;
        }
    }

    async fn next_page(&mut self) -> Result<(), ObjectError> {
        match &mut self.cursor {
            Cursor::Done => {}
            Cursor::Objects(query) => {
                let page = self.store.list_objects(self.bucket, query).await?;
                for entry in &page.entries {
                    if let ListEntry::Object { key, record } = entry {
                        self.ready
                            .push_back((key.clone(), vec![(**record).clone()]));
                    }
                }
                match (page.truncated, page.entries.last()) {
                    (true, Some(last)) => query.after = Some(last.name().to_string()),
                    _ => self.cursor = Cursor::Done,
                }
            }
            Cursor::Versions(query) => {
                let page = self.store.list_object_versions(self.bucket, query).await?;
                for entry in page.entries {
                    let VersionEntry::Version { key, record, .. } = entry else {
                        continue;
                    };
                    match self.ready.back_mut() {
                        Some((last, versions)) if *last == key => versions.push(*record),
                        _ => self.ready.push_back((key, vec![*record])),
                    }
                }
                if page.truncated {
                    query.key_marker = page.next_key_marker;
                    query.version_id_marker = page.next_version_id_marker;
                } else {
                    self.cursor = Cursor::Done;
                }
            }
        }
        Ok(())
    }
}

/// What the evaluator sees of each version of one key (newest first).
pub fn version_states<'r>(key: &'r str, versions: &'r [ObjectRecord]) -> Vec<VersionState<'r>> {
    let mut newer_noncurrent = 0;
    versions
        .iter()
        .enumerate()
        .map(|(index, record)| {
            let state = VersionState {
                key,
                size: record.content_length(),
                tags: &record.tags,
                modified_ms: record.modified_ms,
                storage_class: record.storage_class.as_deref(),
                is_latest: index == 0,
                is_delete_marker: record.delete_marker,
                // A version became noncurrent when the next newer one was made.
                noncurrent_since_ms: index.checked_sub(1).map(|i| versions[i].modified_ms),
                newer_noncurrent,
                only_version: versions.len() == 1,
            };
            if index > 0 && !record.delete_marker {
                newer_noncurrent += 1;
            }
            state
        })
        .collect()
}
