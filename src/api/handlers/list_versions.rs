//! ListObjectVersions (`GET /bucket?versions`): every version and delete marker, by key and
//! newest first within a key.

use axum::response::Response;

use super::bucket::{bucket_owner_element, ListedOwners};
use super::list::{listed_checksum, max_keys, Encoder};
use super::Request;
use crate::api::error::{S3Error, S3ErrorCode};
use crate::api::headers::{iso8601, storage_class_name};
use crate::api::{xml, xml_response};
use crate::object::BucketName;
use crate::object::{VersionEntry, VersionsPage, VersionsQuery};

/// A listing parameter; an empty value counts as absent, as in S3.
fn param(request: &Request<'_>, name: &str) -> Option<String> {
    request
        .query
        .get(name)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
}

/// The query a request asks for, checked as S3 checks it.
fn versions_query(request: &Request<'_>) -> Result<VersionsQuery, S3Error> {
    let key_marker = param(request, "key-marker");
    let version_id_marker = param(request, "version-id-marker");
    // A malformed marker is the object layer's to refuse, as every version id is.
    if version_id_marker.is_some() && key_marker.is_none() {
        return Err(S3Error::new(
            S3ErrorCode::InvalidArgument,
            "A version-id marker cannot be specified without a key marker.",
        ));
    }
    Ok(VersionsQuery {
        prefix: request.query.get("prefix").unwrap_or("").to_string(),
        delimiter: param(request, "delimiter"),
        key_marker,
        version_id_marker,
        max_keys: max_keys(request)?,
    })
}

/// The `Version`, `DeleteMarker` and `CommonPrefixes` elements of a page.
fn entries(
    request: &Request<'_>,
    page: &VersionsPage,
    encoder: &Encoder,
    bucket_owner: xml::Owner,
) -> (Vec<xml::VersionItem>, Vec<xml::CommonPrefix>) {
    let mut items = Vec::new();
    let mut prefixes = Vec::new();
    let owners = ListedOwners::new(request, bucket_owner);
    for entry in &page.entries {
        match entry {
            VersionEntry::Version {
                key,
                record,
                is_latest,
            } if record.delete_marker => {
                items.push(xml::VersionItem::DeleteMarker(xml::DeleteMarkerEntry {
                    key: encoder.apply(key),
                    version_id: record.version_id_str().to_string(),
                    is_latest: *is_latest,
                    last_modified: iso8601(record.modified_ms),
                    owner: owners.of(record),
                }))
            }
            VersionEntry::Version {
                key,
                record,
                is_latest,
            } => {
                let (checksum_algorithm, checksum_type) = listed_checksum(record);
                items.push(xml::VersionItem::Version(xml::ObjectVersion {
                    key: encoder.apply(key),
                    version_id: record.version_id_str().to_string(),
                    is_latest: *is_latest,
                    last_modified: iso8601(record.modified_ms),
                    etag: format!("\"{}\"", record.etag),
                    checksum_algorithm,
                    checksum_type,
                    size: record.content_length(),
                    storage_class: storage_class_name(record.storage_class.as_deref()),
                    owner: owners.of(record),
                }))
            }
            VersionEntry::CommonPrefix(prefix) => prefixes.push(xml::CommonPrefix {
                prefix: encoder.apply(prefix),
            }),
        }
    }
    (items, prefixes)
}

pub async fn list_object_versions(
    request: Request<'_>,
    name: &BucketName,
) -> Result<Response, S3Error> {
    let encoder = Encoder::from(&request)?;
    let query = versions_query(&request)?;
    let page = request
        .state
        .store
        .list_object_versions(name, &query)
        .await?;
    let bucket_owner = bucket_owner_element(request.state, name).await?;
    let (items, prefixes) = entries(&request, &page, &encoder, bucket_owner);
    let truncated = page.truncated;
    let doc = xml::ListVersionsResult {
        xmlns: (),
        name: name.to_string(),
        prefix: encoder.apply(&query.prefix),
        key_marker: encoder.apply(query.key_marker.as_deref().unwrap_or("")),
        version_id_marker: query.version_id_marker.clone().unwrap_or_default(),
        next_key_marker: page
            .next_key_marker
            .filter(|_| truncated)
            .map(|k| encoder.apply(&k)),
        next_version_id_marker: page.next_version_id_marker.filter(|_| truncated),
        max_keys: query.max_keys,
        delimiter: query.delimiter.as_deref().map(|d| encoder.apply(d)),
        is_truncated: truncated,
        entries: items,
        common_prefixes: prefixes,
        encoding_type: encoder.name(),
    };
    Ok(xml_response(xml::render("ListVersionsResult", &doc)))
}
