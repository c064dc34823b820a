//! Listings: a merge of the sorted scans of every drive, keeping the keys a read quorum of
//! their set agrees on.

use std::collections::BTreeMap;
use std::ops::Bound;

use futures::future::join_all;

use super::record::{self, object_key, ObjectRecord};
use super::version::{agree_on_version, DriveRecords};
use super::{Agreement, BucketName, ObjectError, ObjectStore};
use crate::erasure::{DriveResults, ErasureError};
use crate::storage::{DriveError, MetaTable};

/// A byte that never occurs in UTF-8: appended to a prefix, it sorts after every key that
/// starts with that prefix.
const AFTER_ALL: u8 = 0xFF;

/// A scanned database entry: key and record bytes.
type Entry = (Vec<u8>, Vec<u8>);

/// One drive's copy of a listed key: set index, drive index, record bytes.
type Copy<'a> = (usize, usize, &'a [u8]);

/// What to list.
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    pub prefix: String,
    pub delimiter: Option<String>,
    /// List only what sorts after this key or common prefix.
    pub after: Option<String>,
    pub max_keys: usize,
}

/// One listed item.
#[derive(Debug, Clone)]
pub enum ListEntry {
    Object {
        key: String,
        record: Box<ObjectRecord>,
    },
    CommonPrefix(String),
}

impl ListEntry {
    /// The key or prefix, which is also where the next page starts.
    pub fn name(&self) -> &str {
        match self {
            ListEntry::Object { key, .. } => key,
            ListEntry::CommonPrefix(prefix) => prefix,
        }
    }
}

/// One page of a listing.
#[derive(Debug, Clone, Default)]
pub struct ListPage {
    pub entries: Vec<ListEntry>,
    pub truncated: bool,
}

impl ObjectStore {
    pub async fn list_objects(
        &self,
        bucket: &BucketName,
        query: &ListQuery,
    ) -> Result<ListPage, ObjectError> {
        self.bucket(bucket).await?;
        if query.max_keys == 0 {
            return Ok(ListPage::default());
        }
        let base = object_key(bucket.as_str(), "");
        let mut scan_prefix = base.clone();
        scan_prefix.extend_from_slice(query.prefix.as_bytes());
        let delimiter = query.delimiter.as_deref().filter(|d| !d.is_empty());

        let mut cursor = match &query.after {
            None => Bound::Unbounded,
            Some(after) => {
                let mut key = base.clone();
                key.extend_from_slice(after.as_bytes());
                // Resuming after a common prefix skips every key under it.
                if let Some(d) = delimiter {
                    if after.starts_with(&query.prefix) && after.ends_with(d) {
                        key.push(AFTER_ALL);
                    }
                }
                Bound::Excluded(key)
            }
        };
        let wanted = query.max_keys + 1;
        let batch = wanted.clamp(100, 1000);
        let mut entries = Vec::new();

        'pages: loop {
            let scans = join_all(self.sets.iter().map(|set| {
                set.meta_scan_all(MetaTable::Objects, cursor.clone(), &scan_prefix, batch)
            }))
            .await;

            // Only keys up to the smallest last key of any full scan are known completely.
            let mut horizon: Option<Vec<u8>> = None;
            for (set, answers) in self.sets.iter().zip(&scans) {
                let ok = answers.iter().filter(|a| a.is_ok()).count();
                if ok < set.read_quorum() {
                    return Err(ErasureError::ReadQuorum.into());
                }
                for found in answers.iter().flatten() {
                    if found.len() == batch {
                        let last = &found[batch - 1].0;
                        if horizon.as_ref().is_none_or(|h| last < h) {
                            horizon = Some(last.clone());
                        }
                    }
                }
            }
            // Every copy of a key: (set, drive, record bytes).
            let mut grouped: BTreeMap<&[u8], Vec<Copy<'_>>> = BTreeMap::new();
            for (set_index, answers) in scans.iter().enumerate() {
                for (drive_index, found) in answers.iter().enumerate() {
                    for (key, value) in found.iter().flatten() {
                        if horizon.as_ref().is_none_or(|h| key <= h) {
                            grouped.entry(key.as_slice()).or_default().push((
                                set_index,
                                drive_index,
                                value.as_slice(),
                            ));
                        }
                    }
                }
            }
            if grouped.is_empty() && horizon.is_none() {
                break;
            }

            let mut skip: Option<Vec<u8>> = None;
            for (db_key, copies) in grouped {
                if skip.as_ref().is_some_and(|s| db_key.starts_with(s)) {
                    continue;
                }
                cursor = Bound::Excluded(db_key.to_vec());
                let Some(record) = self.agreed_copy(&scans, &copies) else {
                    continue;
                };
                let key = String::from_utf8_lossy(&db_key[base.len()..]).into_owned();
                let common_prefix = delimiter.and_then(|d| {
                    key[query.prefix.len()..]
                        .find(d)
                        .map(|at| key[..query.prefix.len() + at + d.len()].to_string())
                });
                match common_prefix {
                    Some(prefix) => {
                        let mut past = base.clone();
                        past.extend_from_slice(prefix.as_bytes());
                        skip = Some(past.clone());
                        past.push(AFTER_ALL);
                        cursor = Bound::Excluded(past);
                        entries.push(ListEntry::CommonPrefix(prefix));
                    }
                    None => entries.push(ListEntry::Object {
                        key,
                        record: Box::new(record),
                    }),
                }
                if entries.len() == wanted {
                    break 'pages;
                }
            }
            match horizon {
                None => break,
                Some(h) => {
                    if matches!(&cursor, Bound::Excluded(c) if *c < h) || cursor == Bound::Unbounded
                    {
                        cursor = Bound::Excluded(h);
                    }
                }
            }
        }

        let truncated = entries.len() > query.max_keys;
        entries.truncate(query.max_keys);
        Ok(ListPage { entries, truncated })
    }

    /// The version of a listed key that a read quorum of its set agrees on, if any.
    fn agreed_copy(
        &self,
        scans: &[DriveResults<Vec<Entry>>],
        copies: &[Copy<'_>],
    ) -> Option<ObjectRecord> {
        // A key lives in one set; copies elsewhere would be strays of an older layout.
        let &(set_index, _, _) = copies.first()?;
        let records: DriveRecords = scans[set_index]
            .iter()
            .enumerate()
            .map(|(drive, scan)| match scan {
                Err(_) => Err(DriveError::Offline(String::new())),
                Ok(_) => Ok(copies
                    .iter()
                    .find(|(s, d, _)| *s == set_index && *d == drive)
                    .and_then(|(_, _, bytes)| record::decode::<ObjectRecord>(bytes).ok())),
            })
            .collect();
        // A key whose versions no read quorum agrees on is left out of the page, like a key
        // whose GET would fail: one damaged key does not fail a whole listing.
        match agree_on_version(&self.sets[set_index], &records) {
            Ok(Agreement::Found { value, .. }) => Some(value),
            _ => None,
        }
    }
}
