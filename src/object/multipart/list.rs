//! Listing multipart uploads in progress, and removing the ones left behind.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::time::Duration;

use futures::future::join_all;

use crate::object::record::{object_key, UploadRecord, UPLOADS};
use crate::object::{now_ms, Agreement, BucketName, ObjectError, ObjectKey, ObjectStore};

/// Most uploads one listing or cleanup pass reads per drive. In-progress uploads are few
/// next to objects; a bucket with more lists the first ones only.
const MAX_SCANNED_UPLOADS: usize = 100_000;

/// What ListMultipartUploads asks for.
#[derive(Debug, Clone, Default)]
pub struct UploadQuery {
    pub prefix: String,
    pub delimiter: Option<String>,
    pub key_marker: Option<String>,
    pub upload_id_marker: Option<String>,
    pub max_uploads: usize,
}

/// One listed upload.
#[derive(Debug, Clone)]
pub struct UploadEntry {
    pub bucket: String,
    pub key: String,
    pub upload_id: String,
    pub initiated_ms: i64,
    pub storage_class: Option<String>,
}

/// One page of ListMultipartUploads.
#[derive(Debug, Clone, Default)]
pub struct UploadsPage {
    pub uploads: Vec<UploadEntry>,
    pub common_prefixes: Vec<String>,
    pub truncated: bool,
}

impl ObjectStore {
    /// Every upload under `prefix` (bucket, NUL, key prefix) that its set agrees is open, in
    /// key order and, within a key, in the order the uploads were started; an error while a
    /// set cannot tell.
    async fn agreed_uploads(&self, prefix: &[u8]) -> Result<Vec<UploadEntry>, ObjectError> {
        let pages = join_all(self.sets.iter().map(|set| {
            set.scan_records::<UploadRecord>(UPLOADS, Bound::Unbounded, prefix, MAX_SCANNED_UPLOADS)
        }))
        .await;
        let mut found = BTreeMap::new();
        for page in pages {
            for scanned in page?.records {
                // An ended upload's tombstone is no upload.
                let upload = match scanned.agreed? {
                    Agreement::Found { value, .. } if value.ended.is_none() => value,
                    _ => continue,
                };
                // The upload id is what follows the last NUL of the database key.
                let upload_id = (scanned.key.rsplit(|&b| b == 0).next())
                    .map(|id| String::from_utf8_lossy(id).into_owned())
                    .unwrap_or_default();
                found.insert(
                    scanned.key,
                    UploadEntry {
                        bucket: upload.bucket,
                        key: upload.key,
                        upload_id,
                        initiated_ms: upload.initiated_ms,
                        storage_class: upload.storage_class,
                    },
                );
            }
        }
        Ok(found.into_values().collect())
    }

    pub async fn list_multipart_uploads(
        &self,
        bucket: &BucketName,
        query: &UploadQuery,
    ) -> Result<UploadsPage, ObjectError> {
        self.bucket(bucket).await?;
        let mut prefix = object_key(bucket.as_str(), "");
        prefix.extend_from_slice(query.prefix.as_bytes());
        let all = self.agreed_uploads(&prefix).await?;
        let after_marker = |u: &UploadEntry| match (&query.key_marker, &query.upload_id_marker) {
            (None, _) => true,
            (Some(key), Some(id)) if !id.is_empty() => {
                (u.key.as_str(), u.upload_id.as_str()) > (key.as_str(), id.as_str())
            }
            (Some(key), _) => u.key.as_str() > key.as_str(),
        };
        let delimiter = query.delimiter.as_deref().filter(|d| !d.is_empty());
        let mut page = UploadsPage::default();
        let mut listed = 0;
        for upload in all.into_iter().filter(after_marker) {
            let common = delimiter.and_then(|d| {
                upload.key[query.prefix.len()..]
                    .find(d)
                    .map(|at| upload.key[..query.prefix.len() + at + d.len()].to_string())
            });
            if let Some(common) = &common {
                if page.common_prefixes.last() == Some(common) {
                    continue;
                }
            }
            if listed == query.max_uploads {
                page.truncated = true;
                break;
            }
            listed += 1;
            match common {
                Some(common) => page.common_prefixes.push(common),
                None => page.uploads.push(upload),
            }
        }
        Ok(page)
    }

    /// Aborts every upload started more than `expiry` ago, in every bucket; returns how many.
    pub async fn abort_stale_uploads(&self, expiry: Duration) -> Result<usize, ObjectError> {
        let cutoff = now_ms() - expiry.as_millis() as i64;
        let mut aborted = 0;
        for upload in self.agreed_uploads(&[]).await? {
            if upload.initiated_ms > cutoff {
                continue;
            }
            let bucket = BucketName::parse(&upload.bucket)?;
            let key = ObjectKey::parse(&upload.key)?;
            match self
                .abort_multipart_upload(&bucket, &key, &upload.upload_id)
                .await
            {
                Ok(()) => aborted += 1,
                Err(ObjectError::NoSuchUpload) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(aborted)
    }
}
