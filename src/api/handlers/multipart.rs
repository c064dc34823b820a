//! Multipart uploads: create, upload (and copy) parts, list, complete, abort.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use super::bucket::bucket_owner_element;
use super::copy::{copy_source, set_source_version, source_error};
use super::list::Encoder;
use super::object::{
    body_length, customer_of, new_object_acl, put_options, refuse_unsupported, stored_response,
};
use super::versioning::set_written_version;
use super::Request;
use crate::api::error::{S3Error, S3ErrorCode};
use crate::api::headers::{self, iso8601, storage_class_name, ConditionFailure};
use crate::api::router::PartNumber;
use crate::api::sse;
use crate::api::{xml, xml_response};
use crate::object::BucketName;
use crate::object::Encryption;
use crate::object::ObjectKey;
use crate::object::{
    ByteRange, ChecksumAlgorithm, ChecksumType, CompleteOptions, CompletedPart, GetOptions,
    ReadSpan, StoredChecksum, UploadOptions, UploadQuery,
};

const MAX_PARTS_LISTED: usize = 1000;
const MAX_UPLOADS_LISTED: usize = 1000;

pub async fn create(
    request: Request<'_>,
    name: &BucketName,
    object: &ObjectKey,
) -> Result<Response, S3Error> {
    refuse_unsupported(&request)?;
    let encryption = sse::requested(request.headers, request.state.sse_c_allowed)?;
    let customer = match &encryption {
        Some(Encryption::Customer(key)) => Some(key.clone()),
        _ => None,
    };
    let checksum_type = headers::header(request.headers, "x-amz-checksum-type")
        .map(|t| {
            ChecksumType::parse(t).ok_or_else(|| {
                S3Error::new(S3ErrorCode::InvalidRequest, "Invalid x-amz-checksum-type")
            })
        })
        .transpose()?;
    let options = UploadOptions {
        content_type: headers::header(request.headers, "content-type").map(str::to_string),
        user_meta: headers::user_metadata(request.headers)?,
        headers: headers::stored_headers(request.headers),
        checksum_algorithm: headers::checksum_algorithm(request.headers)?,
        checksum_type,
        tags: headers::tags(request.headers)?,
        storage_class: headers::storage_class(request.headers)?,
        // Unlike PutObject, S3 asks no digest here: this request carries no data.
        lock: headers::object_lock(request.headers)?,
        acl: new_object_acl(&request, name).await?,
        encryption,
    };
    super::lock::check_retention(request.state, options.lock.retention.as_ref())?;
    let (upload_id, upload) = request
        .state
        .store
        .create_multipart_upload(name, object, options)
        .await?;
    let doc = xml::InitiateMultipartUploadResult {
        xmlns: (),
        bucket: name.to_string(),
        key: object.to_string(),
        upload_id,
    };
    let mut response = xml_response(xml::render("InitiateMultipartUploadResult", &doc));
    if let Some(algorithm) = upload.checksum_algorithm {
        let out = response.headers_mut();
        out.insert(
            "x-amz-checksum-algorithm",
            HeaderValue::from_static(algorithm.as_str()),
        );
        out.insert(
            "x-amz-checksum-type",
            HeaderValue::from_static(upload.checksum_type.as_str()),
        );
    }
    sse::response_headers(
        upload.sse.as_ref(),
        customer.as_deref(),
        response.headers_mut(),
    );
    Ok(response)
}

pub async fn upload_part(
    request: Request<'_>,
    bucket: &BucketName,
    key: &ObjectKey,
    upload_id: &str,
    number: PartNumber,
) -> Result<Response, S3Error> {
    let number = number.get();
    body_length(&request)?;
    let options = put_options(&request)?;
    let customer = customer_of(&options);
    let (part, sse) = request
        .state
        .store
        .upload_sealed_part(bucket, key, upload_id, number, request.body, options)
        .await?;
    let mut response = stored_response(&part.etag, part.checksum.as_ref(), false);
    sse::response_headers(sse.as_ref(), customer.as_deref(), response.headers_mut());
    Ok(response)
}

/// `x-amz-copy-source-range: bytes=first-last` (both required, as in S3).
fn copy_range(request: &Request<'_>) -> Result<Option<ByteRange>, S3Error> {
    let Some(value) = headers::header(request.headers, "x-amz-copy-source-range") else {
        return Ok(None);
    };
    let invalid = || {
        S3Error::new(
            S3ErrorCode::InvalidArgument,
            "The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy",
        )
    };
    let (first, last) = value
        .trim()
        .strip_prefix("bytes=")
        .and_then(|r| r.split_once('-'))
        .ok_or_else(invalid)?;
    let (first, last): (u64, u64) = (
        first.parse().map_err(|_| invalid())?,
        last.parse().map_err(|_| invalid())?,
    );
    if first > last {
        return Err(invalid());
    }
    Ok(Some(ByteRange::From {
        first,
        last: Some(last),
    }))
}

pub async fn upload_part_copy(
    request: Request<'_>,
    bucket: &BucketName,
    key: &ObjectKey,
    upload_id: &str,
    number: PartNumber,
) -> Result<Response, S3Error> {
    let number = number.get();
    let source = copy_source(&request)?;
    let range = copy_range(&request)?;
    let store = &request.state.store;
    // The upload must exist before any source byte is read.
    store.upload_record(bucket, key, upload_id).await?;
    let head = store
        .head_object(&source.bucket, &source.key, source.version_id.as_deref())
        .await
        .map_err(source_error)?;
    // Unlike a GET, a copy range must lie within the source.
    if let Some(ByteRange::From {
        last: Some(last), ..
    }) = range
    {
        if last >= head.content_length() {
            return Err(S3Error::new(
                S3ErrorCode::InvalidArgument,
                format!(
                    "Range specified is not valid for source object of size: {}",
                    head.content_length()
                ),
            ));
        }
    }
    let modified = headers::modified(&head);
    match headers::check_copy_source_conditions(request.headers, &head.etag, modified) {
        Ok(()) => {}
        // For a copy, a source that is "not modified" fails the precondition too.
        Err(ConditionFailure::NotModified | ConditionFailure::PreconditionFailed) => {
            return Err(S3Error::from_code(S3ErrorCode::PreconditionFailed));
        }
    }
    let options = GetOptions {
        span: range.map(ReadSpan::Range),
        version_id: source.version_id.clone(),
        customer_key: sse::customer_key(request.headers, true, request.state.sse_c_allowed)?,
        ..GetOptions::default()
    };
    let read = store
        .get_object(&source.bucket, &source.key, options)
        .await
        .map_err(source_error)?;
    // The source may have been overwritten since its conditions were checked: copy only
    // what was checked.
    let conditional = request
        .headers
        .keys()
        .any(|bucket| bucket.as_str().starts_with("x-amz-copy-source-if-"));
    if conditional && read.record.etag != head.etag {
        return Err(S3Error::from_code(S3ErrorCode::PreconditionFailed));
    }
    let options = crate::object::PutOptions {
        // The destination upload's SSE-C key, when it has one.
        encryption: sse::customer_key(request.headers, false, request.state.sse_c_allowed)?
            .map(Encryption::Customer),
        ..Default::default()
    };
    let customer = customer_of(&options);
    let (part, sse) = store
        .upload_sealed_part(bucket, key, upload_id, number, read.body, options)
        .await?;
    let doc = xml::CopyResult {
        xmlns: (),
        last_modified: iso8601(crate::object::now_ms()),
        etag: format!("\"{}\"", part.etag),
        checksums: checksums(part.checksum.as_ref()),
    };
    let mut response = xml_response(xml::render("CopyPartResult", &doc));
    set_source_version(response.headers_mut(), &source, &read.record);
    // The destination upload's encryption, as UploadPart reports it: the source's is not told.
    sse::response_headers(sse.as_ref(), customer.as_deref(), response.headers_mut());
    Ok(response)
}

/// The `Checksum*` element of a stored checksum.
pub(super) fn checksums(checksum: Option<&StoredChecksum>) -> xml::Checksums {
    let mut out = xml::Checksums::default();
    if let Some(checksum) = checksum {
        let value = Some(checksum.value.clone());
        match checksum.algorithm {
            ChecksumAlgorithm::Crc32 => out.crc32 = value,
            ChecksumAlgorithm::Crc32c => out.crc32c = value,
            ChecksumAlgorithm::Crc64Nvme => out.crc64nvme = value,
            ChecksumAlgorithm::Sha1 => out.sha1 = value,
            ChecksumAlgorithm::Sha256 => out.sha256 = value,
        }
    }
    out
}

pub async fn complete(
    mut request: Request<'_>,
    bucket: &BucketName,
    key: &ObjectKey,
    upload_id: &str,
) -> Result<Response, S3Error> {
    let body = request.completion_body().await?;
    let parsed: xml::CompleteMultipartUpload = xml::parse(&body)?;
    if parsed.parts.is_empty() {
        return Err(S3Error::from_code(S3ErrorCode::MalformedXML));
    }
    // The whole object's checksum, when the client sends it to be checked.
    let checksum = ChecksumAlgorithm::ALL.into_iter().find_map(|algorithm| {
        headers::header(request.headers, algorithm.header_name())
            .map(|value| (algorithm, value.to_string()))
    });
    let options = CompleteOptions {
        parts: parsed
            .parts
            .into_iter()
            .map(|p| CompletedPart {
                number: p.part_number,
                etag: p.etag,
            })
            .collect(),
        condition: headers::write_condition(request.headers)?,
        checksum,
    };
    let record = request
        .state
        .store
        .complete_multipart_upload(bucket, key, upload_id, options)
        .await?;
    let doc = xml::CompleteMultipartUploadResult {
        xmlns: (),
        location: format!("/{bucket}/{key}"),
        bucket: bucket.to_string(),
        key: key.to_string(),
        etag: format!("\"{}\"", record.etag),
        checksums: checksums(record.checksum.as_ref()),
        checksum_type: record
            .checksum
            .as_ref()
            .map(|c| c.kind.as_str().to_string()),
    };
    let mut response = xml_response(xml::render("CompleteMultipartUploadResult", &doc));
    set_written_version(response.headers_mut(), &record);
    sse::response_headers(record.sse.as_ref(), None, response.headers_mut());
    Ok(response)
}

pub async fn abort(
    request: Request<'_>,
    bucket: &BucketName,
    key: &ObjectKey,
    upload_id: &str,
) -> Result<Response, S3Error> {
    request
        .state
        .store
        .abort_multipart_upload(bucket, key, upload_id)
        .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// A non-negative integer query parameter, capped at `max`.
fn count_param(request: &Request<'_>, name: &str, max: usize) -> Result<usize, S3Error> {
    match request.query.get(name) {
        None => Ok(max),
        Some(v) => v
            .parse::<usize>()
            .map(|n| n.min(max))
            .map_err(|_| S3Error::new(S3ErrorCode::InvalidArgument, format!("Invalid {name}"))),
    }
}

pub async fn list_parts(
    request: Request<'_>,
    name: &BucketName,
    object: &ObjectKey,
    upload_id: &str,
) -> Result<Response, S3Error> {
    let max = count_param(&request, "max-parts", MAX_PARTS_LISTED)?;
    let marker = count_param(&request, "part-number-marker", 10_000)? as u32;
    let marker = if request.query.has("part-number-marker") {
        marker
    } else {
        0
    };
    let page = request
        .state
        .store
        .list_parts(name, object, upload_id, marker, max)
        .await?;
    let owner = bucket_owner_element(request.state, name).await?;
    let doc = xml::ListPartsResult {
        xmlns: (),
        bucket: name.to_string(),
        key: object.to_string(),
        upload_id: upload_id.to_string(),
        initiator: owner.clone(),
        owner,
        storage_class: storage_class_name(page.upload.storage_class.as_deref()),
        part_number_marker: marker,
        next_part_number_marker: page
            .truncated
            .then(|| page.parts.last().map(|p| p.info.number))
            .flatten(),
        max_parts: max,
        is_truncated: page.truncated,
        checksum_algorithm: page
            .upload
            .checksum_algorithm
            .map(|a| a.as_str().to_string()),
        checksum_type: page
            .upload
            .checksum_algorithm
            .map(|_| page.upload.checksum_type.as_str().to_string()),
        part: page
            .parts
            .iter()
            .map(|p| xml::Part {
                part_number: p.info.number,
                last_modified: iso8601(p.modified_ms),
                etag: format!("\"{}\"", p.info.etag),
                size: page.upload.part_content_length(&p.info),
                checksums: checksums(p.info.checksum.as_ref()),
            })
            .collect(),
    };
    Ok(xml_response(xml::render("ListPartsResult", &doc)))
}

pub async fn list_uploads(request: Request<'_>, name: &BucketName) -> Result<Response, S3Error> {
    let encoder = Encoder::from(&request)?;
    let encode = |v: &str| encoder.apply(v);
    let query = UploadQuery {
        prefix: request.query.get("prefix").unwrap_or("").to_string(),
        delimiter: request.query.get("delimiter").map(str::to_string),
        key_marker: request.query.get("key-marker").map(str::to_string),
        upload_id_marker: request.query.get("upload-id-marker").map(str::to_string),
        max_uploads: count_param(&request, "max-uploads", MAX_UPLOADS_LISTED)?,
    };
    let page = request
        .state
        .store
        .list_multipart_uploads(name, &query)
        .await?;
    let owner = bucket_owner_element(request.state, name).await?;
    let last = page.uploads.last();
    let doc = xml::ListMultipartUploadsResult {
        xmlns: (),
        bucket: name.to_string(),
        key_marker: encode(query.key_marker.as_deref().unwrap_or("")),
        upload_id_marker: query.upload_id_marker.clone().unwrap_or_default(),
        next_key_marker: page
            .truncated
            .then(|| last.map(|u| encode(&u.key)))
            .flatten(),
        next_upload_id_marker: page
            .truncated
            .then(|| last.map(|u| u.upload_id.clone()))
            .flatten(),
        prefix: encode(&query.prefix),
        delimiter: query.delimiter.as_deref().map(encode),
        max_uploads: query.max_uploads,
        is_truncated: page.truncated,
        encoding_type: encoder.name(),
        upload: page
            .uploads
            .iter()
            .map(|u| xml::Upload {
                key: encode(&u.key),
                upload_id: u.upload_id.clone(),
                initiator: owner.clone(),
                owner: owner.clone(),
                storage_class: storage_class_name(u.storage_class.as_deref()),
                initiated: iso8601(u.initiated_ms),
            })
            .collect(),
        common_prefixes: page
            .common_prefixes
            .iter()
            .map(|p| xml::CommonPrefix { prefix: encode(p) })
            .collect(),
    };
    Ok(xml_response(xml::render(
        "ListMultipartUploadsResult",
        &doc,
    )))
}
