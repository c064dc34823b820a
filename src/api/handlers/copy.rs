//! CopyObject: a copy to another key streams the source through a new PUT; a copy onto
//! itself rewrites the metadata and keeps the data.

use axum::http::HeaderMap;
use axum::response::Response;

use super::multipart::checksums;
use super::object::{put_options, refuse_unsupported};
use super::{bucket_name, object_key, Request};
use crate::api::error::{S3Error, S3ErrorCode};
use crate::api::headers::{self, iso8601, ConditionFailure};
use crate::api::{xml, xml_response};
use crate::object::{
    ExpectedChecksum, GetOptions, ObjectError, ObjectKey, ObjectRecord, PutOptions,
};

/// Largest object CopyObject copies, as in S3 (bigger ones need UploadPartCopy).
const MAX_COPY_SIZE: u64 = 5 << 30;

/// The copy's source bucket and key; versioned sources wait for versioning.
pub(super) fn copy_source(request: &Request<'_>) -> Result<(String, String), S3Error> {
    let source = crate::api::router::copy_source(request.headers)
        .ok_or_else(|| S3Error::new(S3ErrorCode::InvalidArgument, "Invalid copy source"))?;
    if source.version.as_deref().is_some_and(|v| v != "null") {
        return Err(S3Error::new(
            S3ErrorCode::NotImplemented,
            "Versioned copy sources are not implemented yet.",
        ));
    }
    Ok((source.bucket, source.key))
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
    if source.size > MAX_COPY_SIZE {
        return Err(ObjectError::InvalidRequest(format!(
            "The specified copy source is larger than the maximum allowable size for a copy source: {MAX_COPY_SIZE}"
        )));
    }
    Ok(())
}

/// What the new object keeps of the source, and what the request replaces.
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
    bucket: &str,
    key: &str,
) -> Result<Response, S3Error> {
    let name = bucket_name(bucket)?;
    let object = object_key(key)?;
    refuse_unsupported(&request)?;
    let (source_bucket, source_key) = copy_source(&request)?;
    let source_bucket = bucket_name(&source_bucket)?;
    let source_key = ObjectKey::parse(&source_key)?;
    let replace_metadata = replaces(&request, "x-amz-metadata-directive")?;
    let replace_tags = replaces(&request, "x-amz-tagging-directive")?;
    let mut requested = put_options(&request)?;
    // A copy has no body of its own: digests of one make no sense, and the checksum is
    // computed afresh over the copied bytes.
    requested.content_md5 = None;
    requested.checksum =
        headers::checksum_algorithm(request.headers)?.map(ExpectedChecksum::Compute);
    let store = &request.state.store;
    let request_headers = request.headers;

    let record = if source_bucket == name && source_key == object {
        let changes_something =
            replace_metadata || request.headers.contains_key("x-amz-storage-class");
        if !changes_something {
            return Err(S3Error::new(
                S3ErrorCode::InvalidRequest,
                "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.",
            ));
        }
        if requested.condition.is_some() {
            return Err(S3Error::new(
                S3ErrorCode::NotImplemented,
                "Conditional writes of an object copied onto itself are not implemented.",
            ));
        }
        store
            .update_object_metadata(&name, &object, |current| {
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
        let source = store
            .get_object(&source_bucket, &source_key, GetOptions::default())
            .await?;
        check_source(request.headers, &source.record)?;
        check_size(&source.record)?;
        let mut options =
            copied_metadata(&source.record, replace_metadata, replace_tags, requested);
        if options.checksum.is_none() {
            options.checksum = source
                .record
                .checksum
                .as_ref()
                .map(|c| ExpectedChecksum::Compute(c.algorithm));
        }
        store
            .put_object(&name, &object, source.body, options)
            .await?
    };
    let doc = xml::CopyResult {
        xmlns: (),
        last_modified: iso8601(record.modified_ms),
        etag: format!("\"{}\"", record.etag),
        checksums: checksums(record.checksum.as_ref()),
    };
    Ok(xml_response(xml::render("CopyObjectResult", &doc)))
}
