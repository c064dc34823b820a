//! Object operations: PUT, GET, HEAD, DELETE.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use super::versioning::{set_deleted, set_version_id, set_written_version, shown_version};
use super::Request;
use crate::api::acl;
use crate::api::error::{S3Error, S3ErrorCode};
use crate::api::headers::{self, ConditionFailure};
use crate::api::permissions::bypasses_governance;
use crate::api::router::Endpoint;
use crate::api::sse;
use crate::encryption::CustomerKey;
use crate::object::acl::Acl;
use crate::object::ObjectKey;
use crate::object::VersionId;
use crate::object::{check_customer_key, Encryption};
use crate::object::{
    BucketName, DeleteOptions, GetOptions, ObjectLock, ObjectRecord, PutOptions, ReadIf, ReadSpan,
    StoredChecksum,
};

/// Largest single PUT, as in S3.
const MAX_PUT_SIZE: u64 = 5 << 30;

/// Headers that ask for features this server does not have; ignoring them would silently
/// store something other than what the client asked for.
const UNSUPPORTED_PUT_HEADERS: &[&str] = &["x-amz-website-redirect-location"];

/// The announced size of a request body: Content-Length, or the decoded length of an
/// `aws-chunked` body.
pub fn body_length(request: &Request<'_>) -> Result<u64, S3Error> {
    let length = match request.decoded_length {
        Some(length) => length,
        None => headers::header(request.headers, "content-length")
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| S3Error::from_code(S3ErrorCode::MissingContentLength))?,
    };
    if length > MAX_PUT_SIZE {
        return Err(S3Error::from_code(S3ErrorCode::EntityTooLarge));
    }
    Ok(length)
}

/// Refuses headers that name features this server does not implement.
pub fn refuse_unsupported(request: &Request<'_>) -> Result<(), S3Error> {
    if let Some(name) = UNSUPPORTED_PUT_HEADERS
        .iter()
        .find(|name| request.headers.contains_key(**name))
    {
        return Err(S3Error::new(
            S3ErrorCode::NotImplemented,
            format!("Strata does not implement the {name} header yet."),
        ));
    }
    Ok(())
}

/// The ACL a new object gets from the request's headers, under its bucket's Object
/// Ownership and Block Public Access (see [`acl::for_new_object`]).
pub fn new_object_acl<'a>(
    request: &Request<'a>,
    bucket: &'a BucketName,
) -> impl std::future::Future<Output = Result<Option<Acl>, S3Error>> + Send + 'a {
    let (state, headers, identity) = (request.state, request.headers, request.identity.clone());
    async move {
        let record = state.store.bucket(bucket).await?;
        acl::for_new_object(state, headers, &record.settings, &identity)
    }
}

/// What a PUT or UploadPart stores beside the data, from its headers (the ACL apart: see
/// [`new_object_acl`]).
pub fn put_options(request: &Request<'_>) -> Result<PutOptions, S3Error> {
    Ok(PutOptions {
        content_type: headers::header(request.headers, "content-type").map(str::to_string),
        user_meta: headers::user_metadata(request.headers)?,
        headers: headers::stored_headers(request.headers),
        content_md5: headers::content_md5(request.headers)?,
        checksum: headers::expected_checksum(request.headers, &request.trailers)?,
        condition: headers::write_condition(request.headers)?,
        tags: headers::tags(request.headers)?,
        storage_class: headers::storage_class(request.headers)?,
        lock: headers::object_lock(request.headers)?,
        acl: None,
        encryption: sse::requested(request.headers, request.state.sse_c_allowed)?,
    })
}

/// S3 takes Object Lock settings only with a digest of the data (Content-MD5 or a flexible
/// checksum), so what is kept for years is what the client sent. A signed SHA-256 of the
/// payload, which SigV4 checks against the body, is such a digest too (the minio SDK sends
/// that over plain HTTP rather than Content-MD5).
fn require_digest_for_lock(request: &Request<'_>, lock: &ObjectLock) -> Result<(), S3Error> {
    let signed_payload = headers::header(request.headers, "x-amz-content-sha256")
        .is_some_and(|hash| hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()));
    let digest = request.has_body_digest()
        || signed_payload
        || request.headers.contains_key("x-amz-sdk-checksum-algorithm");
    if lock.is_empty() || digest {
        return Ok(());
    }
    Err(S3Error::new(
        S3ErrorCode::InvalidRequest,
        "Content-MD5 OR x-amz-checksum- HTTP header is required for Put Object requests with Object Lock parameters",
    ))
}

pub async fn put_object(
    request: Request<'_>,
    bucket: &BucketName,
    key: &ObjectKey,
) -> Result<Response, S3Error> {
    refuse_unsupported(&request)?;
    body_length(&request)?;
    let mut options = put_options(&request)?;
    require_digest_for_lock(&request, &options.lock)?;
    super::lock::check_retention(request.state, options.lock.retention.as_ref())?;
    options.acl = new_object_acl(&request, bucket).await?;
    let customer = customer_of(&options);
    let store = &request.state.store;
    let offset = write_offset(request.headers)?;
    let record = match offset {
        Some(offset) => (store.append_object(bucket, key, offset, request.body, options)).await?,
        None => store.put_object(bucket, key, request.body, options).await?,
    };
    let mut response = stored_response(&record.etag, record.checksum.as_ref(), true);
    if offset.is_some() {
        let size = HeaderValue::from(record.content_length());
        response.headers_mut().insert("x-amz-object-size", size);
    }
    set_written_version(response.headers_mut(), &record);
    sse::response_headers(
        record.sse.as_ref(),
        customer.as_deref(),
        response.headers_mut(),
    );
    Ok(response)
}

/// `x-amz-write-offset-bytes`: the PUT appends at this offset.
fn write_offset(request_headers: &HeaderMap) -> Result<Option<u64>, S3Error> {
    let Some(value) = headers::header(request_headers, "x-amz-write-offset-bytes") else {
        return Ok(None);
    };
    match value.parse() {
        Ok(offset) => Ok(Some(offset)),
        Err(_) => Err(S3Error::new(
            S3ErrorCode::InvalidArgument,
            "x-amz-write-offset-bytes must be a non-negative integer",
        )),
    }
}

/// The SSE-C key a write encrypts with, to echo its MD5.
pub fn customer_of(options: &PutOptions) -> Option<Arc<CustomerKey>> {
    match &options.encryption {
        Some(Encryption::Customer(key)) => Some(key.clone()),
        _ => None,
    }
}

/// The answer to a PUT or UploadPart: the ETag, and the checksum that was verified (with
/// its type for an object; S3 gives a part's none).
pub fn stored_response(etag: &str, checksum: Option<&StoredChecksum>, of_object: bool) -> Response {
    let mut response = StatusCode::OK.into_response();
    let out = response.headers_mut();
    out.insert("etag", quoted(etag));
    if let Some(checksum) = checksum {
        if let Ok(value) = HeaderValue::from_str(&checksum.value) {
            out.insert(checksum.algorithm.header_name(), value);
        }
        if of_object {
            out.insert(
                "x-amz-checksum-type",
                HeaderValue::from_static(checksum.kind.as_str()),
            );
        }
    }
    response
}

/// A GET's conditions (If-Match and the like), for the object layer to judge on the record
/// before it reads any data; `None` when the request has none.
fn conditions_on_record(request_headers: &HeaderMap) -> Option<ReadIf> {
    const CONDITIONS: [&str; 4] = [
        "if-match",
        "if-none-match",
        "if-modified-since",
        "if-unmodified-since",
    ];
    if !CONDITIONS.iter().any(|c| request_headers.contains_key(*c)) {
        return None;
    }
    let conditions = request_headers.clone();
    Some(ReadIf(Arc::new(move |record| {
        headers::check_conditions(&conditions, &record.etag, headers::modified(record)).is_ok()
    })))
}

fn quoted(etag: &str) -> HeaderValue {
    HeaderValue::from_str(&format!("\"{etag}\"")).expect("etags are hex")
}

/// GET (with a body) and HEAD (without), of the newest version or of the one named.
pub async fn get_object(
    request: Request<'_>,
    bucket: &BucketName,
    key: &ObjectKey,
    version_id: Option<VersionId>,
    with_body: bool,
) -> Result<Response, S3Error> {
    refuse_anonymous_overrides(&request)?;
    sse::refuse_on_read(request.headers)?;
    let customer = sse::customer_key(request.headers, false, request.state.sse_c_allowed)?;
    let span = read_span(&request)?;
    let store = &request.state.store;
    let asked = version_id.is_some();
    let (record, range, body) = if with_body {
        let options = GetOptions {
            span,
            version_id: version_id.as_ref().map(|id| id.to_string()),
            read_if: conditions_on_record(request.headers),
            customer_key: customer.clone(),
            raw: false,
        };
        let got = store.get_object(bucket, key, options).await?;
        (got.record, got.range, Some(got.body))
    } else {
        let record = store
            .head_object(bucket, key, version_id.as_ref().map(VersionId::as_str))
            .await?;
        check_customer_key(bucket.as_str(), key.as_str(), &record, customer.as_deref())?;
        let range = span.map(|s| record.resolve_span(s)).transpose()?;
        (record, range, None)
    };
    let bucket_record = store.bucket(bucket).await.ok();
    let versioning = bucket_record.as_ref().and_then(|b| b.settings.versioning);
    // partNumber=1 of an object uploaded in one piece is the whole object, answered as such.
    let part_asked = matches!(span, Some(ReadSpan::Part(_)));
    let range = range.filter(|_| !part_asked || record.is_multipart());

    let with_checksum = range.is_none()
        && headers::header(request.headers, "x-amz-checksum-mode")
            .is_some_and(|m| m.eq_ignore_ascii_case("enabled"));
    let mut response = Response::new(Body::empty());
    *response.headers_mut() = headers::object_headers(&record, with_checksum);
    let info = crate::api::permissions::RequestInfo {
        headers: request.headers,
        query: &request.query,
        source_ip: request.source_ip,
        secure: request.state.tls,
    };
    let named = (bucket, key, version_id.as_ref());
    let out = response.headers_mut();
    hide_unreadable_lock(request.state, &request.identity, &info, named, &record, out).await;
    set_version_id(
        response.headers_mut(),
        shown_version(&record, versioning, asked),
    );
    sse::response_headers(
        record.sse.as_ref(),
        customer.as_deref(),
        response.headers_mut(),
    );

    match headers::check_conditions(request.headers, &record.etag, headers::modified(&record)) {
        Ok(()) => {}
        Err(ConditionFailure::NotModified) => {
            *response.status_mut() = StatusCode::NOT_MODIFIED;
            keep_not_modified_headers(response.headers_mut());
            return Ok(response);
        }
        Err(ConditionFailure::PreconditionFailed) => {
            return Err(S3Error::from_code(S3ErrorCode::PreconditionFailed));
        }
    }
    apply_response_overrides(&request, &mut response);
    // Expiration is judged for the current version; a version named by id may be noncurrent.
    let current = bucket_record.filter(|_| !asked);
    if let Some(expiration) =
        current.and_then(|bucket| expiration_header(request.state, &bucket, key, &record))
    {
        response
            .headers_mut()
            .insert("x-amz-expiration", expiration);
    }

    let (start, end) = range.unwrap_or((0, record.content_length()));
    let out = response.headers_mut();
    out.insert("content-length", HeaderValue::from(end - start));
    if part_asked && record.is_multipart() {
        out.insert(
            "x-amz-mp-parts-count",
            HeaderValue::from(record.parts.len()),
        );
    }
    // An empty range (the part of an object whose only part is empty) has no last byte to
    // name: it is answered whole, 200 without a Content-Range.
    if range.is_some_and(|(start, end)| end > start) {
        *response.status_mut() = StatusCode::PARTIAL_CONTENT;
        let content_range = format!("bytes {}-{}/{}", start, end - 1, record.content_length());
        response.headers_mut().insert(
            "content-range",
            HeaderValue::from_str(&content_range).expect("digits"),
        );
    }
    if let Some(body) = body {
        *response.body_mut() = Body::from_stream(body);
    }
    Ok(response)
}

/// S3 shows a version's retention and legal hold only to requesters who may read them
/// (s3:GetObjectRetention, s3:GetObjectLegalHold). Takes the request's parts, not the
/// request, whose body is not `Sync`.
async fn hide_unreadable_lock(
    state: &crate::api::S3State,
    identity: &crate::api::auth::Identity,
    info: &crate::api::permissions::RequestInfo<'_>,
    (bucket, key, version_id): (&BucketName, &ObjectKey, Option<&VersionId>),
    record: &ObjectRecord,
    out: &mut HeaderMap,
) {
    let (bucket, key, version_id) = (bucket.clone(), key.clone(), version_id.cloned());
    if record.lock.retention.is_some() {
        let endpoint = Endpoint::GetObjectRetention {
            bucket: bucket.clone(),
            key: key.clone(),
            version_id: version_id.clone(),
        };
        if crate::api::permissions::authorize(&state.store, &state.iam, identity, &endpoint, info)
            .await
            .is_err()
        {
            out.remove(headers::LOCK_MODE);
            out.remove(headers::LOCK_RETAIN_UNTIL);
        }
    }
    if record.lock.legal_hold.is_some() {
        let endpoint = Endpoint::GetObjectLegalHold {
            bucket,
            key,
            version_id,
        };
        if crate::api::permissions::authorize(&state.store, &state.iam, identity, &endpoint, info)
            .await
            .is_err()
        {
            out.remove(headers::LOCK_LEGAL_HOLD);
        }
    }
}

/// `x-amz-expiration: expiry-date="…", rule-id="…"` when a rule of the bucket's lifecycle
/// configuration (`lifecycle`, as stored) will expire the object, as S3 answers GET and HEAD.
fn expiration_header(
    state: &crate::api::S3State,
    bucket: &crate::object::BucketRecord,
    key: &crate::object::ObjectKey,
    record: &crate::object::ObjectRecord,
) -> Option<HeaderValue> {
    use crate::lifecycle::{expiration_of, Clock, LifecycleConfig, VersionState};
    let xml = bucket.settings.lifecycle.as_deref()?;
    let parse = || LifecycleConfig::from_xml(xml);
    let config = state.lifecycle_configs.of(bucket, parse).ok()?;
    let version = VersionState {
        key: key.as_str(),
        size: record.content_length(),
        tags: &record.tags,
        modified_ms: record.modified_ms,
        is_latest: true,
        ..VersionState::default()
    };
    let clock = Clock {
        now_ms: crate::object::now_ms(),
        day_ms: state.lifecycle_day.as_millis() as i64,
    };
    let (expires_ms, rule) = expiration_of(&config, &version, &clock)?;
    let expires =
        std::time::UNIX_EPOCH + std::time::Duration::from_millis(expires_ms.max(0) as u64);
    let value = format!(
        "expiry-date=\"{}\", rule-id=\"{}\"",
        headers::http_date(expires),
        rule.replace('"', "")
    );
    HeaderValue::from_str(&value).ok()
}

/// What a GET or HEAD reads: a `Range` header or a `partNumber` (not both, as in S3).
fn read_span(request: &Request<'_>) -> Result<Option<ReadSpan>, S3Error> {
    let range = headers::byte_range(request.headers);
    let Some(part) = request.query.get("partNumber") else {
        return Ok(range.map(ReadSpan::Range));
    };
    if request.headers.contains_key("range") {
        return Err(S3Error::new(
            S3ErrorCode::InvalidRequest,
            "Cannot specify both Range header and partNumber query parameter",
        ));
    }
    match part.parse::<u32>() {
        Ok(n) if (1..=10_000).contains(&n) => Ok(Some(ReadSpan::Part(n))),
        _ => Err(S3Error::new(
            S3ErrorCode::InvalidArgument,
            "Part number must be an integer between 1 and 10000, inclusive",
        )),
    }
}

/// The query parameters that override a GET's response headers, and the headers.
const OVERRIDES: &[(&str, &str)] = &[
    ("response-content-type", "content-type"),
    ("response-content-language", "content-language"),
    ("response-expires", "expires"),
    ("response-cache-control", "cache-control"),
    ("response-content-disposition", "content-disposition"),
    ("response-content-encoding", "content-encoding"),
];

/// As on S3, only signed requests may override response headers: otherwise anyone could
/// serve a public object as, say, HTML from this server's origin.
fn refuse_anonymous_overrides(request: &Request<'_>) -> Result<(), S3Error> {
    let overrides = OVERRIDES.iter().any(|(param, _)| request.query.has(param));
    if overrides && matches!(request.identity, crate::api::auth::Identity::Anonymous) {
        return Err(S3Error::new(
            S3ErrorCode::InvalidRequest,
            "Request specific response headers cannot be used for anonymous GET requests.",
        ));
    }
    Ok(())
}

/// `response-content-type` and friends override the stored headers of a GET.
fn apply_response_overrides(request: &Request<'_>, response: &mut Response) {
    for (param, header) in OVERRIDES {
        if let Some(value) = request.query.get(param) {
            if let Ok(value) = HeaderValue::from_str(value) {
                response.headers_mut().insert(*header, value);
            }
        }
    }
}

/// DELETE: in a versioned bucket, a delete marker, or with `versionId` that version for good;
/// only if the version still matches the request's conditions, when it has some.
pub async fn delete_object(
    request: Request<'_>,
    bucket: &BucketName,
    key: &ObjectKey,
    version_id: Option<&str>,
) -> Result<Response, S3Error> {
    let options = DeleteOptions {
        version_id: version_id.map(str::to_string),
        // Authorisation required s3:BypassGovernanceRetention of a request that asks for it.
        bypass_governance: bypasses_governance(request.headers),
        only_if: headers::delete_condition(request.headers)?,
    };
    let deleted = request
        .state
        .store
        .delete_object_with(bucket, key, &options)
        .await?;
    let mut response = StatusCode::NO_CONTENT.into_response();
    set_deleted(response.headers_mut(), &deleted);
    Ok(response)
}

/// The headers a 304 keeps: those that describe the cached copy's freshness and identity,
/// as S3 sends them. A 304 has no body, so nothing about one (length, type, checksums) goes
/// with it: SDKs that validate checksums fail on a checksum without a body.
fn keep_not_modified_headers(headers: &mut axum::http::HeaderMap) {
    const KEPT: [&str; 5] = [
        "etag",
        "last-modified",
        "cache-control",
        "expires",
        "x-amz-version-id",
    ];
    let drop: Vec<_> = (headers.keys())
        .filter(|name| !KEPT.contains(&name.as_str()))
        .cloned()
        .collect();
    for name in drop {
        headers.remove(name);
    }
}
