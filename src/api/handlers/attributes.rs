//! GetObjectAttributes (`?attributes`): an object's ETag, checksum, parts, storage class and
//! size, as many of them as `x-amz-object-attributes` names, without its data.

use axum::http::HeaderValue;
use axum::response::Response;

use super::multipart::checksums;
use super::versioning::with_version;
use super::Request;
use crate::api::error::{S3Error, S3ErrorCode};
use crate::api::headers::{header, storage_class_name};
use crate::api::{sse, xml, xml_response};
use crate::object::check_customer_key;
use crate::object::BucketName;
use crate::object::ObjectKey;

/// The attributes a request may ask for.
const ATTRIBUTES: [&str; 5] = [
    "ETag",
    "Checksum",
    "ObjectParts",
    "StorageClass",
    "ObjectSize",
];
/// Parts of one answer at most, and the default of `x-amz-max-parts`.
const MAX_PARTS: usize = 1000;

pub async fn get_object_attributes(
    request: Request<'_>,
    bucket: &BucketName,
    key: &ObjectKey,
    version_id: Option<&str>,
) -> Result<Response, S3Error> {
    let asked = asked_attributes(&request)?;
    let max_parts = number_header(&request, "x-amz-max-parts")?.unwrap_or(MAX_PARTS);
    let marker = number_header(&request, "x-amz-part-number-marker")?.unwrap_or(0);
    // An SSE-C object's attributes (its plaintext's size and checksums) are shown only to
    // a request that brings its key, as HEAD does.
    let customer = sse::customer_key(request.headers, false, request.state.sse_c_allowed)?;
    let record = (request.state.store)
        .head_object(bucket, key, version_id)
        .await?;
    check_customer_key(bucket.as_str(), key.as_str(), &record, customer.as_deref())?;
    let wants = |attribute: &str| asked.iter().any(|a| a == attribute);

    // Parts are those of a multipart upload; a single PUT has none to list.
    let object_parts = (wants("ObjectParts") && record.is_multipart()).then(|| {
        let after: Vec<_> = (record.parts.iter())
            .filter(|p| p.number as usize > marker)
            .collect();
        let truncated = after.len() > max_parts;
        let page = &after[..after.len().min(max_parts)];
        xml::ObjectParts {
            total_parts_count: record.parts.len(),
            part_number_marker: marker,
            next_part_number_marker: page.last().map(|p| p.number as usize).filter(|_| truncated),
            max_parts,
            is_truncated: truncated,
            part: (page.iter())
                .map(|p| xml::AttributesPart {
                    part_number: p.number,
                    size: record.part_content_length(p),
                    checksums: checksums(p.checksum.as_ref()),
                })
                .collect(),
        }
    });
    let checksum = (record.checksum.as_ref())
        .filter(|_| wants("Checksum"))
        .map(|c| xml::ObjectChecksum {
            checksums: checksums(Some(c)),
            checksum_type: c.kind.as_str().to_string(),
        });
    let doc = xml::GetObjectAttributesResponse {
        xmlns: (),
        etag: wants("ETag").then(|| record.etag.clone()),
        checksum,
        object_parts,
        storage_class: (wants("StorageClass"))
            .then(|| storage_class_name(record.storage_class.as_deref())),
        object_size: wants("ObjectSize").then_some(record.content_length()),
    };
    let mut response = xml_response(xml::render("GetObjectAttributesResponse", &doc));
    let modified = crate::api::headers::http_date(crate::api::headers::modified(&record));
    if let Ok(value) = HeaderValue::from_str(&modified) {
        response.headers_mut().insert("last-modified", value);
    }
    Ok(with_version(request.state, bucket, &record, version_id, response).await)
}

/// The attributes `x-amz-object-attributes` names (comma-separated; the header may repeat).
fn asked_attributes(request: &Request<'_>) -> Result<Vec<String>, S3Error> {
    let asked: Vec<String> = (request.headers.get_all("x-amz-object-attributes").iter())
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|a| a.trim().to_string())
        .filter(|a| !a.is_empty())
        .collect();
    if asked.is_empty() {
        return Err(S3Error::new(
            S3ErrorCode::InvalidRequest,
            "The x-amz-object-attributes header specifying the attributes to be retrieved is \
             either missing or empty",
        ));
    }
    if let Some(unknown) = asked.iter().find(|a| !ATTRIBUTES.contains(&a.as_str())) {
        return Err(S3Error::new(
            S3ErrorCode::InvalidArgument,
            format!("Invalid attribute name specified: {unknown}"),
        ));
    }
    Ok(asked)
}

fn number_header(request: &Request<'_>, name: &str) -> Result<Option<usize>, S3Error> {
    match header(request.headers, name) {
        None => Ok(None),
        Some(value) => value.trim().parse().map(Some).map_err(|_| {
            S3Error::new(
                S3ErrorCode::InvalidArgument,
                format!("{name} must be a non-negative integer"),
            )
        }),
    }
}
