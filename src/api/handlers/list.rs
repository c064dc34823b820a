//! ListObjects (V1) and ListObjectsV2.

use axum::response::Response;
use base64::Engine;
use percent_encoding::{utf8_percent_encode, AsciiSet};

use super::bucket::{bucket_owner_element, ListedOwners};
use super::Request;
use crate::api::error::{S3Error, S3ErrorCode};
use crate::api::headers::{iso8601, storage_class_name, tagging_value};
use crate::api::{xml, xml_response};
use crate::object::BucketName;
use crate::object::{ListEntry, ListPage, ListQuery, ObjectRecord};
use std::collections::BTreeMap;

const MAX_KEYS: usize = 1000;

/// `encoding-type=url` escapes everything but unreserved characters and '/'.
const URL_ENCODING: &AsciiSet = crate::signing::URI_PATH;

/// Keys and prefixes as a listing shows them: as stored, or URL-encoded when the request
/// says `encoding-type=url`.
pub(super) struct Encoder(bool);

impl Encoder {
    pub(super) fn from(request: &Request<'_>) -> Result<Self, S3Error> {
        match request.query.get("encoding-type") {
            None => Ok(Self(false)),
            Some(t) if t.eq_ignore_ascii_case("url") => Ok(Self(true)),
            Some(_) => Err(S3Error::new(
                S3ErrorCode::InvalidArgument,
                "Invalid Encoding Method specified in Request",
            )),
        }
    }

    pub(super) fn apply(&self, value: &str) -> String {
        if self.0 {
            utf8_percent_encode(value, URL_ENCODING).to_string()
        } else {
            value.to_string()
        }
    }

    pub(super) fn name(&self) -> Option<String> {
        self.0.then(|| "url".to_string())
    }
}

pub(super) fn max_keys(request: &Request<'_>) -> Result<usize, S3Error> {
    match request.query.get("max-keys") {
        None => Ok(MAX_KEYS),
        Some(v) => v
            .parse::<i64>()
            .ok()
            .filter(|n| *n >= 0)
            .map(|n| (n as usize).min(MAX_KEYS))
            .ok_or_else(|| {
                S3Error::new(
                    S3ErrorCode::InvalidArgument,
                    "max-keys must be a non-negative integer",
                )
            }),
    }
}

/// What a listing's entries carry besides key, date, ETag, size and storage class.
#[derive(Default)]
struct Extras {
    /// The bucket's owner, when entries name their owners.
    owner: Option<xml::Owner>,
    /// MinIO's `metadata=true`: user metadata and tags.
    metadata: bool,
}

fn contents(
    request: &Request<'_>,
    page: &ListPage,
    encoder: &Encoder,
    extras: Extras,
) -> (Vec<xml::Object>, Vec<xml::CommonPrefix>) {
    let mut objects = Vec::new();
    let mut prefixes = Vec::new();
    let owners = (extras.owner).map(|bucket_owner| ListedOwners::new(request, bucket_owner));
    for entry in &page.entries {
        match entry {
            ListEntry::Object { key, record } => {
                let (checksum_algorithm, checksum_type) = listed_checksum(record);
                objects.push(xml::Object {
                    key: encoder.apply(key),
                    last_modified: iso8601(record.modified_ms),
                    etag: format!("\"{}\"", record.etag),
                    checksum_algorithm,
                    checksum_type,
                    size: record.content_length(),
                    owner: owners.as_ref().map(|owners| owners.of(record)),
                    storage_class: storage_class_name(record.storage_class.as_deref()),
                    user_metadata: extras.metadata.then(|| metadata_elements(record)),
                    user_tags: (extras.metadata && !record.tags.is_empty())
                        .then(|| tagging_value(&record.tags)),
                })
            }
            ListEntry::CommonPrefix(prefix) => prefixes.push(xml::CommonPrefix {
                prefix: encoder.apply(prefix),
            }),
        }
    }
    (objects, prefixes)
}

/// The algorithm and type of a version's checksum, as listings name them.
pub(super) fn listed_checksum(record: &ObjectRecord) -> (Option<String>, Option<String>) {
    let checksum = record.checksum.as_ref();
    (
        checksum.map(|c| c.algorithm.as_str().to_string()),
        checksum.map(|c| c.kind.as_str().to_string()),
    )
}

/// An object's metadata as MinIO lists it: `Content-Type` and the `x-amz-meta-*` headers,
/// named in canonical header case. A name that cannot be an XML element is left out.
fn metadata_elements(record: &ObjectRecord) -> BTreeMap<String, String> {
    let content_type = (record.content_type.iter()).map(|t| ("content-type".to_string(), t));
    let user = (record.user_meta.iter()).map(|(name, value)| (format!("x-amz-meta-{name}"), value));
    content_type
        .chain(user)
        .filter(|(name, _)| {
            (name.bytes()).all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        })
        .map(|(name, value)| (canonical_header_case(&name), value.clone()))
        .collect()
}

/// `x-amz-meta-team` → `X-Amz-Meta-Team`.
fn canonical_header_case(name: &str) -> String {
    let words = name.split('-').map(|word| {
        let mut chars = word.chars();
        match chars.next() {
            Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
            None => String::new(),
        }
    });
    words.collect::<Vec<_>>().join("-")
}

pub async fn list_objects_v2(
    request: Request<'_>,
    name: &BucketName,
    with_metadata: bool,
) -> Result<Response, S3Error> {
    let encoder = Encoder::from(&request)?;
    let token = request.query.get("continuation-token").map(str::to_string);
    let start_after = request.query.get("start-after").map(str::to_string);
    let after = match &token {
        Some(token) => Some(decode_token(token)?),
        None => start_after.clone(),
    };
    let query = ListQuery {
        prefix: request.query.get("prefix").unwrap_or("").to_string(),
        delimiter: delimiter(&request),
        after,
        max_keys: max_keys(&request)?,
    };
    let page = request.state.store.list_objects(name, &query).await?;
    let fetch_owner = request.query.get("fetch-owner") == Some("true");
    let extras = Extras {
        owner: match fetch_owner {
            true => Some(bucket_owner_element(request.state, name).await?),
            false => None,
        },
        metadata: with_metadata,
    };
    let (objects, prefixes) = contents(&request, &page, &encoder, extras);
    let next = page
        .truncated
        .then(|| page.entries.last().map(|e| encode_token(e.name())))
        .flatten();
    let doc = xml::ListBucketResultV2 {
        xmlns: (),
        name: name.to_string(),
        prefix: encoder.apply(&query.prefix),
        delimiter: query.delimiter.as_deref().map(|d| encoder.apply(d)),
        max_keys: query.max_keys,
        key_count: page.entries.len(),
        is_truncated: page.truncated,
        continuation_token: token,
        next_continuation_token: next,
        start_after: start_after.map(|s| encoder.apply(&s)),
        encoding_type: encoder.name(),
        contents: objects,
        common_prefixes: prefixes,
    };
    Ok(xml_response(xml::render("ListBucketResult", &doc)))
}

pub async fn list_objects_v1(request: Request<'_>, name: &BucketName) -> Result<Response, S3Error> {
    let encoder = Encoder::from(&request)?;
    let marker = request.query.get("marker").unwrap_or("").to_string();
    let query = ListQuery {
        prefix: request.query.get("prefix").unwrap_or("").to_string(),
        delimiter: delimiter(&request),
        after: (!marker.is_empty()).then(|| marker.clone()),
        max_keys: max_keys(&request)?,
    };
    let page = request.state.store.list_objects(name, &query).await?;
    let extras = Extras {
        owner: Some(bucket_owner_element(request.state, name).await?),
        ..Extras::default()
    };
    let (objects, prefixes) = contents(&request, &page, &encoder, extras);
    // S3 gives NextMarker only when a delimiter was used; clients use the last key otherwise.
    let next_marker = (page.truncated && query.delimiter.is_some())
        .then(|| page.entries.last().map(|e| encoder.apply(e.name())))
        .flatten();
    let doc = xml::ListBucketResultV1 {
        xmlns: (),
        name: name.to_string(),
        // V1 echoes the prefix as given, even with `encoding-type=url` (V2 encodes it).
        prefix: query.prefix.clone(),
        marker: encoder.apply(&marker),
        next_marker,
        max_keys: query.max_keys,
        delimiter: query.delimiter.as_deref().map(|d| encoder.apply(d)),
        is_truncated: page.truncated,
        encoding_type: encoder.name(),
        contents: objects,
        common_prefixes: prefixes,
    };
    Ok(xml_response(xml::render("ListBucketResult", &doc)))
}

/// The `delimiter` parameter; an empty one is no delimiter (and S3 does not echo it).
fn delimiter(request: &Request<'_>) -> Option<String> {
    (request.query.get("delimiter"))
        .filter(|d| !d.is_empty())
        .map(str::to_string)
}

/// Continuation tokens are opaque to clients: the base64 of where the page ended.
fn encode_token(after: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(after)
}

fn decode_token(token: &str) -> Result<String, S3Error> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(|| {
            S3Error::new(
                S3ErrorCode::InvalidArgument,
                "The continuation token provided is incorrect",
            )
        })
}
