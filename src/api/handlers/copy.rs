//! CopyObject: a copy streams the source (its newest version, or the one named) through a
//! new PUT; a copy onto itself in an unversioned bucket rewrites the metadata and keeps the
//! data.

use axum::http::{HeaderMap, HeaderValue};
use axum::response::Response;

use super::multipart::checksums;
use super::object::{customer_of, new_object_acl, put_options, refuse_unsupported};
use super::versioning::set_written_version;
use super::{bucket_name, Request};
use crate::api::error::{S3Error, S3ErrorCode};
use crate::api::headers::{self, iso8601, ConditionFailure};
use crate::api::sse;
use crate::api::{xml, xml_response};
use crate::object::check_customer_key;
use crate::object::{
    BucketName, ExpectedChecksum, GetOptions, ObjectError, ObjectKey, ObjectRecord, PutOptions,
};

/// Largest object CopyObject copies, as in S3 (bigger ones need UploadPartCopy).
const MAX_COPY_SIZE: u64 = 5 << 30;

/// The object a copy reads: its newest version, or the one `x-amz-copy-source` names.
pub(super) struct CopySource {
    pub bucket: BucketName,
    pub key: ObjectKey,
    pub version_id: Option<String>,
}

impl CopySource {
    /// Whether the source is `bucket`/`key` as it is now (no version named).
    fn is_current(&self, bucket: &BucketName, key: &ObjectKey) -> bool {
        self.bucket == *bucket && self.key == *key && self.version_id.is_none()
    }
}

/// The copy's source, from `x-amz-copy-source`.
pub(super) fn copy_source(request: &Request<'_>) -> Result<CopySource, S3Error> {
    let source = crate::api::router::copy_source(request.headers)
        .ok_or_else(|| S3Error::new(S3ErrorCode::InvalidArgument, "Invalid copy source"))?;
    Ok(CopySource {
        bucket: bucket_name(&source.bucket)?,
        key: ObjectKey::parse(&source.key)?,
        version_id: source.version,
    })
}

/// A failed read of a copy's source. A delete marker is no object to copy: named by its
/// version it is an invalid source, as in S3; as the newest version it hides the key. The
/// marker's headers are left out, since they would describe the source, not the answer.
pub(super) fn source_error(err: ObjectError) -> S3Error {
    match err {
        ObjectError::DeleteMarker {
            by_version: true, ..
        } => S3Error::new(
            S3ErrorCode::InvalidRequest,
            "The source of a copy request may not specifically refer to a delete marker by version id.",
        ),
        ObjectError::DeleteMarker { .. } => S3Error::from_code(S3ErrorCode::NoSuchKey),
        other => other.into(),
    }
}

/// `x-amz-copy-source-version-id`: the version copied, when it has an id or was named.
pub(super) fn set_source_version(
    headers: &mut HeaderMap,
    source: &CopySource,
    read: &ObjectRecord,
) {
    let shown = match &read.version_id {
        Some(id) => Some(id.as_str()),
        None => source.version_id.is_some().then(|| read.version_id_str()),
    };
    if let Some(value) = shown.and_then(|id| HeaderValue::from_str(id).ok()) {
        headers.insert("x-amz-copy-source-version-id", value);
    }
}

/// `x-amz-metadata-directive` or `x-amz-tagging-directive`: COPY (the default) or REPLACE.
fn replaces(request: &Request<'_>, header: &str) -> Result<bool, S3Error> {
    match headers::header(request.headers, header) {
        None | Some("COPY") => Ok(false),
        Some("REPLACE") => Ok(true),
        Some(_) => Err(S3Error::new(
            S3ErrorCode::InvalidArgument,
            format!("Unknown {header} value."),
        )),
    }
}

/// Fails unless the source passes the `x-amz-copy-source-if-*` conditions; for a copy, a
/// source that is "not modified" fails the precondition too.
fn check_source(headers: &HeaderMap, source: &ObjectRecord) -> Result<(), ObjectError> {
    let modified = headers::modified(source);
    match headers::check_copy_source_conditions(headers, &source.etag, modified) {
        Ok(()) => Ok(()),
        Err(ConditionFailure::NotModified | ConditionFailure::PreconditionFailed) => {
            Err(ObjectError::PreconditionFailed)
        }
    }
}

fn check_size(source: &ObjectRecord) -> Result<(), ObjectError> {
    if source.content_length() > MAX_COPY_SIZE {
        return Err(ObjectError::InvalidRequest(format!(
            "The specified copy source is larger than the maximum allowable size for a copy source: {MAX_COPY_SIZE}"
        )));
    }
    Ok(())
}

/// What the new object keeps of the source, and what the request replaces. Its Object Lock is
/// the request's alone: a copy never inherits the source's retention or legal hold.
fn copied_metadata(
    source: &ObjectRecord,
    replace_metadata: bool,
    replace_tags: bool,
    requested: PutOptions,
) -> PutOptions {
    let mut options = requested;
    if !replace_metadata {
        options.content_type = source.content_type.clone();
        options.user_meta = source.user_meta.clone();
        options.headers = source.headers.clone();
    }
    if !replace_tags {
        options.tags = source.tags.clone();
    }
    options
}

pub async fn copy_object(
    request: Request<'_>,
    bucket: &BucketName,
    object: &ObjectKey,
) -> Result<Response, S3Error> {
    refuse_unsupported(&request)?;
    let source = copy_source(&request)?;
    let replace_metadata = replaces(&request, "x-amz-metadata-directive")?;
    let replace_tags = replaces(&request, "x-amz-tagging-directive")?;
    let mut requested = put_options(&request)?;
    // The copy's ACL is the request's, never the source's (as on S3).
    requested.acl = new_object_acl(&request, bucket).await?;
    super::lock::check_retention(request.state, requested.lock.retention.as_ref())?;
    // A copy has no body of its own: digests of one make no sense, and the checksum is
    // computed afresh over the copied bytes.
    requested.content_md5 = None;
    requested.checksum =
        headers::checksum_algorithm(request.headers)?.map(ExpectedChecksum::Compute);
    let store = &request.state.store;
    let request_headers = request.headers;

    // Copying a version onto its key (restoring it) is a copy like any other.
    let onto_itself = source.is_current(bucket, object);
    if onto_itself {
        let changes_something = replace_metadata
            || request.headers.contains_key("x-amz-storage-class")
            || requested.encryption.is_some();
        if !changes_something {
            return Err(S3Error::new(
                S3ErrorCode::InvalidRequest,
                "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.",
            ));
        }
    }
    // A copy onto itself rewrites the metadata in place, unless the bucket keeps versions:
    // then the copy is a new version and the old one stays.
    // The source's SSE-C key, if it has one, comes in the copy-source headers.
    let source_key = sse::customer_key(request.headers, true, request.state.sse_c_allowed)?;
    let dest_key = customer_of(&requested);
    // A copy that changes the encryption rewrites the data.
    let in_place = onto_itself
        && requested.encryption.is_none()
        && store.bucket(bucket).await?.settings.versioning.is_none();
    let mut copied = None;
    let record = if in_place {
        // Only a bucket without versioning rewrites in place, and it has no Object Lock.
        if !requested.lock.is_empty() {
            return Err(ObjectError::NoObjectLock.into());
        }
        if requested.condition.is_some() {
            return Err(S3Error::new(
                S3ErrorCode::NotImplemented,
                "Conditional writes of an object copied onto itself are not implemented.",
            ));
        }
        store
            .update_object_metadata(bucket, object, None, |current| {
                check_customer_key(
                    bucket.as_str(),
                    object.as_str(),
                    current,
                    source_key.as_deref(),
                )?;
                check_source(request_headers, current)?;
                check_size(current)?;
                let options = copied_metadata(current, replace_metadata, replace_tags, requested);
                let mut record = current.clone();
                record.content_type = options.content_type;
                record.user_meta = options.user_meta;
                record.headers = options.headers;
                record.tags = options.tags;
                record.storage_class = options.storage_class;
                record.modified_ms = crate::object::now_ms();
                Ok(record)
            })
            .await?
    } else {
        // The stream is of the version read here, so the conditions hold for what is copied.
        let options = GetOptions {
            version_id: source.version_id.clone(),
            customer_key: source_key.clone(),
            ..GetOptions::default()
        };
        let read = store
            .get_object(&source.bucket, &source.key, options)
            .await
            .map_err(source_error)?;
        check_source(request.headers, &read.record)?;
        check_size(&read.record)?;
        let mut options = copied_metadata(&read.record, replace_metadata, replace_tags, requested);
        if options.checksum.is_none() {
            options.checksum = read
                .record
                .checksum
                .as_ref()
                .map(|c| ExpectedChecksum::Compute(c.algorithm));
        }
        let written = store.put_object(bucket, object, read.body, options).await?;
        copied = Some(read.record);
        written
    };
    let doc = xml::CopyResult {
        xmlns: (),
        last_modified: iso8601(record.modified_ms),
        etag: format!("\"{}\"", record.etag),
        checksums: checksums(record.checksum.as_ref()),
    };
    let mut response = xml_response(xml::render("CopyObjectResult", &doc));
    set_written_version(response.headers_mut(), &record);
    sse::response_headers(
        record.sse.as_ref(),
        dest_key.as_deref(),
        response.headers_mut(),
    );
    if let Some(read) = &copied {
        set_source_version(response.headers_mut(), &source, read);
    }
    Ok(response)
}
