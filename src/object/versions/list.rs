//! ListObjectVersions: every version of every key, delete markers included, in key order and
//! newest first within a key.

use crate::object::record::{ObjectRecord, VersionsRecord};
use crate::object::{BucketName, ListEntry, ListQuery, ObjectError, ObjectStore};

/// What to list.
#[derive(Debug, Clone, Default)]
pub struct VersionsQuery {
    pub prefix: String,
    pub delimiter: Option<String>,
    /// List keys after this one (or, with `version_id_marker`, the versions of this key
    /// after that version, then the keys after it).
    pub key_marker: Option<String>,
    pub version_id_marker: Option<String>,
    pub max_keys: usize,
}

/// One listed item.
#[derive(Debug, Clone)]
pub enum VersionEntry {
    /// A version or a delete marker (`record.delete_marker`).
    Version {
        key: String,
        record: Box<ObjectRecord>,
        is_latest: bool,
    },
    CommonPrefix(String),
}

/// One page of versions.
#[derive(Debug, Clone, Default)]
pub struct VersionsPage {
    pub entries: Vec<VersionEntry>,
    pub truncated: bool,
    /// Where the next page starts, when truncated.
    pub next_key_marker: Option<String>,
    pub next_version_id_marker: Option<String>,
}

impl ObjectStore {
    pub async fn list_object_versions(
        &self,
        bucket: &BucketName,
        query: &VersionsQuery,
    ) -> Result<VersionsPage, ObjectError> {
        self.bucket(bucket).await?;
        if let Some(marker) = &query.version_id_marker {
            crate::object::versions::versioning::check_version_id(marker)?;
        }
        if query.max_keys == 0 {
            return Ok(VersionsPage::default());
        }
        // The keys from the marker on, in both tables: versioned keys have a versions
        // record, keys written before versioning only their object record.
        let resume_inside = query.key_marker.is_some() && query.version_id_marker.is_some();
        let keys = ListQuery {
            prefix: query.prefix.clone(),
            delimiter: query.delimiter.clone(),
            after: query.key_marker.clone(),
            // Resuming inside a key, that key may have nothing left after the marker.
            max_keys: query.max_keys + usize::from(resume_inside),
        };
        let versioned = self
            .list_table::<VersionsRecord>(bucket, &keys, resume_inside)
            .await?;
        let unversioned = self
            .list_table::<ObjectRecord>(bucket, &keys, resume_inside)
            .await?;
        // Past the last name of a truncated page, the other table's keys are not known yet.
        let last_of_truncated =
            |truncated: bool, last: Option<&str>| last.filter(|_| truncated).map(str::to_string);
        let horizon = [
            last_of_truncated(
                versioned.truncated,
                versioned.entries.last().map(|e| e.name()),
            ),
            last_of_truncated(
                unversioned.truncated,
                unversioned.entries.last().map(|e| e.name()),
            ),
        ]
        .into_iter()
        .flatten()
        .min();
        let mut names: Vec<String> = versioned
            .entries
            .iter()
            .map(|e| e.name().to_string())
            .chain(unversioned.entries.iter().map(|e| e.name().to_string()))
            .filter(|name| horizon.as_ref().is_none_or(|h| name <= h))
            .collect();
        names.sort();
        names.dedup();

        let mut page = VersionsPage::default();
        let mut last: Option<(String, Option<String>)> = None;
        let mut names = names.into_iter().peekable();
        while let Some(name) = names.next() {
            let of_versioned = versioned.entries.iter().find(|e| e.name() == name);
            let of_unversioned = unversioned.entries.iter().find(|e| e.name() == name);
            let versions: Vec<ObjectRecord> = match (of_versioned, of_unversioned) {
                (Some(ListEntry::Object { record, .. }), _) => record.versions.clone(),
                (_, Some(ListEntry::Object { record, .. })) => vec![(**record).clone()],
                _ => {
                    if page.entries.len() == query.max_keys {
                        page.truncated = true;
                        break;
                    }
                    page.entries.push(VersionEntry::CommonPrefix(name.clone()));
                    last = Some((name, None));
                    continue;
                }
            };
            let mut skip = 0;
            if resume_inside && Some(&name) == query.key_marker.as_ref() {
                let marker = query.version_id_marker.as_deref().unwrap_or_default();
                skip = versions
                    .iter()
                    .position(|v| v.has_version_id(marker))
                    .map_or(versions.len(), |i| i + 1);
            }
            for (index, version) in versions.iter().enumerate().skip(skip) {
                if page.entries.len() == query.max_keys {
                    page.truncated = true;
                    break;
                }
                page.entries.push(VersionEntry::Version {
                    key: name.clone(),
                    record: Box::new(version.clone()),
                    is_latest: index == 0,
                });
                last = Some((name.clone(), Some(version.version_id_str().to_string())));
            }
            if page.truncated {
                break;
            }
            if page.entries.len() == query.max_keys && names.peek().is_some() {
                page.truncated = true;
                break;
            }
        }
        if !page.truncated && horizon.is_some() {
            page.truncated = true;
        }
        if page.truncated {
            // Nothing listed (every version of the marker's key was before the marker):
            // go on after the keys looked at.
            let (key, version) = last.unzip();
            page.next_key_marker = key.or(horizon);
            page.next_version_id_marker = version.flatten();
        }
        Ok(page)
    }
}
