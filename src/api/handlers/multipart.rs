//! The multipart calls that large uploads from every client need.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use super::object::{body_length, put_options, refuse_unsupported, stored_response};
use super::{bucket_name, object_key, Request};
use crate::api::error::{S3Error, S3ErrorCode};
use crate::api::{headers, xml, xml_response};
use crate::object::{ChecksumAlgorithm, CompletedPart, UploadOptions};

pub async fn create(request: Request<'_>, bucket: &str, key: &str) -> Result<Response, S3Error> {
    let name = bucket_name(bucket)?;
    let object = object_key(key)?;
    refuse_unsupported(&request)?;
    let options = UploadOptions {
        content_type: headers::header(request.headers, "content-type").map(str::to_string),
        user_meta: headers::user_metadata(request.headers)?,
        headers: headers::stored_headers(request.headers),
        checksum_algorithm: headers::checksum_algorithm(request.headers)?,
    };
    let algorithm = options.checksum_algorithm;
    let upload_id = request
        .state
        .store
        .create_multipart_upload(&name, &object, options)
        .await?;
    let doc = xml::InitiateMultipartUploadResult {
        xmlns: (),
        bucket: bucket.to_string(),
        key: key.to_string(),
        upload_id,
    };
    let mut response = xml_response(xml::render("InitiateMultipartUploadResult", &doc));
    if let Some(algorithm) = algorithm {
        response.headers_mut().insert(
            "x-amz-checksum-algorithm",
            HeaderValue::from_static(algorithm.as_str()),
        );
    }
    Ok(response)
}

pub async fn upload_part(
    request: Request<'_>,
    bucket: &str,
    key: &str,
    upload_id: &str,
    part_number: &str,
) -> Result<Response, S3Error> {
    let name = bucket_name(bucket)?;
    let object = object_key(key)?;
    let number: u32 = part_number.parse().map_err(|_| {
        S3Error::new(
            S3ErrorCode::InvalidArgument,
            "Part number must be an integer between 1 and 10000, inclusive",
        )
    })?;
    body_length(&request)?;
    let options = put_options(&request)?;
    let part = request
        .state
        .store
        .upload_part(&name, &object, upload_id, number, request.body, options)
        .await?;
    Ok(stored_response(&part.etag, part.checksum.as_ref()))
}

pub async fn complete(
    mut request: Request<'_>,
    bucket: &str,
    key: &str,
    upload_id: &str,
) -> Result<Response, S3Error> {
    let name = bucket_name(bucket)?;
    let object = object_key(key)?;
    let body = request.small_body().await?;
    let parsed: xml::CompleteMultipartUpload = xml::parse(&body)?;
    if parsed.parts.is_empty() {
        return Err(S3Error::from_code(S3ErrorCode::MalformedXML));
    }
    let parts: Vec<CompletedPart> = parsed
        .parts
        .into_iter()
        .map(|p| CompletedPart {
            number: p.part_number,
            etag: p.etag,
        })
        .collect();
    let record = request
        .state
        .store
        .complete_multipart_upload(&name, &object, upload_id, &parts)
        .await?;
    let checksum = |algorithm| {
        record
            .checksum
            .as_ref()
            .filter(|c| c.algorithm == algorithm)
            .map(|c| c.value.clone())
    };
    let doc = xml::CompleteMultipartUploadResult {
        xmlns: (),
        location: format!("/{bucket}/{key}"),
        bucket: bucket.to_string(),
        key: key.to_string(),
        etag: format!("\"{}\"", record.etag),
        checksum_crc32: checksum(ChecksumAlgorithm::Crc32),
        checksum_crc32c: checksum(ChecksumAlgorithm::Crc32c),
        checksum_crc64nvme: checksum(ChecksumAlgorithm::Crc64Nvme),
        checksum_sha1: checksum(ChecksumAlgorithm::Sha1),
        checksum_sha256: checksum(ChecksumAlgorithm::Sha256),
    };
    Ok(xml_response(xml::render(
        "CompleteMultipartUploadResult",
        &doc,
    )))
}

pub async fn abort(
    request: Request<'_>,
    bucket: &str,
    key: &str,
    upload_id: &str,
) -> Result<Response, S3Error> {
    let name = bucket_name(bucket)?;
    let object = object_key(key)?;
    request
        .state
        .store
        .abort_multipart_upload(&name, &object, upload_id)
        .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
