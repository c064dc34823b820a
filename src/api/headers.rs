//! Reading S3 request headers into object-layer options, and writing object headers back.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::http::{HeaderMap, HeaderValue};
use base64::Engine;

use super::encoded_words;
use super::error::{S3Error, S3ErrorCode};
use crate::body::TrailerSlot;
use crate::object::{
    ByteRange, ChecksumAlgorithm, DeleteConditions, DeleteIf, ExpectedChecksum, ObjectLock,
    ObjectRecord, Retention, RetentionMode, WriteCondition,
};

/// S3's limit on user metadata (names and values of `x-amz-meta-*`).
const MAX_USER_METADATA: usize = 2048;

/// Standard headers stored with an object and returned with it.
const STORED_HEADERS: &[&str] = &[
    "content-encoding",
    "content-disposition",
    "content-language",
    "cache-control",
    "expires",
];

pub fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// `x-amz-meta-*` headers, names lower-cased without the prefix, values as S3 stores them
/// (encoded-words decoded, see [`encoded_words`]).
pub fn user_metadata(headers: &HeaderMap) -> Result<Vec<(String, String)>, S3Error> {
    let mut meta = Vec::new();
    let mut size = 0;
    for (name, value) in headers {
        if let Some(short) = name.as_str().strip_prefix("x-amz-meta-") {
            let value = encoded_words::decode(&String::from_utf8_lossy(value.as_bytes()));
            size += short.len() + value.len();
            meta.push((short.to_string(), value));
        }
    }
    if size > MAX_USER_METADATA {
        return Err(S3Error::from_code(S3ErrorCode::MetadataTooLarge));
    }
    meta.sort();
    Ok(meta)
}

/// Content headers kept with the object. `aws-chunked` is how the body travelled, not how
/// the object is encoded: S3 drops it from the stored Content-Encoding.
pub fn stored_headers(headers: &HeaderMap) -> Vec<(String, String)> {
    STORED_HEADERS
        .iter()
        .filter_map(|&name| {
            let value = header(headers, name)?;
            let is_chunked = |coding: &str| coding.trim().eq_ignore_ascii_case("aws-chunked");
            let value = match name {
                // Kept as sent, unless it names aws-chunked.
                "content-encoding" if value.split(',').any(is_chunked) => (value.split(','))
                    .filter(|coding| !is_chunked(coding))
                    .map(str::trim)
                    .collect::<Vec<_>>()
                    .join(", "),
                _ => value.to_string(),
            };
            (!value.is_empty()).then(|| (name.to_string(), value))
        })
        .collect()
}

/// `Content-MD5`: base64 of 16 bytes, else `InvalidDigest`.
pub fn content_md5(headers: &HeaderMap) -> Result<Option<[u8; 16]>, S3Error> {
    let Some(value) = headers.get("content-md5") else {
        return Ok(None);
    };
    base64::engine::general_purpose::STANDARD
        .decode(value.as_bytes())
        .ok()
        .and_then(|bytes| <[u8; 16]>::try_from(bytes).ok())
        .map(Some)
        .ok_or_else(|| S3Error::from_code(S3ErrorCode::InvalidDigest))
}

/// The flexible checksum a request announces: a `x-amz-checksum-*` header, or one named in
/// `x-amz-trailer` whose value follows the body.
pub fn expected_checksum(
    headers: &HeaderMap,
    trailers: &Arc<TrailerSlot>,
) -> Result<Option<ExpectedChecksum>, S3Error> {
    let algorithms = [
        ChecksumAlgorithm::Crc32,
        ChecksumAlgorithm::Crc32c,
        ChecksumAlgorithm::Crc64Nvme,
        ChecksumAlgorithm::Sha1,
        ChecksumAlgorithm::Sha256,
    ];
    for algorithm in algorithms {
        if let Some(value) = header(headers, algorithm.header_name()) {
            if !algorithm.is_valid_value(value) {
                return Err(S3Error::new(
                    S3ErrorCode::InvalidRequest,
                    format!("Value for {} header is invalid.", algorithm.header_name()),
                ));
            }
            return Ok(Some(ExpectedChecksum::Value(algorithm, value.to_string())));
        }
    }
    if let Some(trailer) = header(headers, "x-amz-trailer") {
        let name = trailer.trim().to_ascii_lowercase();
        let algorithm = algorithms
            .into_iter()
            .find(|a| a.header_name() == name)
            .ok_or_else(|| {
                S3Error::new(
                    S3ErrorCode::InvalidRequest,
                    format!("Unsupported x-amz-trailer {trailer:?}"),
                )
            })?;
        return Ok(Some(ExpectedChecksum::Trailer(algorithm, trailers.clone())));
    }
    Ok(None)
}

/// The checksum algorithm named at CreateMultipartUpload.
pub fn checksum_algorithm(headers: &HeaderMap) -> Result<Option<ChecksumAlgorithm>, S3Error> {
    header(headers, "x-amz-checksum-algorithm")
        .map(|name| {
            ChecksumAlgorithm::parse(name).ok_or_else(|| {
                S3Error::new(
                    S3ErrorCode::InvalidRequest,
                    format!("Checksum algorithm {name:?} is not supported"),
                )
            })
        })
        .transpose()
}

/// `Range: bytes=…`. A header that is not a single valid byte range is ignored, as S3 does.
pub fn byte_range(headers: &HeaderMap) -> Option<ByteRange> {
    let spec = header(headers, "range")?.trim().strip_prefix("bytes=")?;
    if spec.contains(',') {
        return None;
    }
    let (first, last) = spec.split_once('-')?;
    match (first.trim(), last.trim()) {
        ("", n) => n.parse().ok().map(ByteRange::Suffix),
        (f, "") => f
            .parse()
            .ok()
            .map(|first| ByteRange::From { first, last: None }),
        (f, l) => {
            let (first, last): (u64, u64) = (f.parse().ok()?, l.parse().ok()?);
            (first <= last).then_some(ByteRange::From {
                first,
                last: Some(last),
            })
        }
    }
}

/// An HTTP date (RFC 7231), for any time: those past what the format can say (year 9999)
/// are shown as its last second rather than failing the response.
pub fn http_date(time: SystemTime) -> String {
    const LAST: Duration = Duration::from_secs(253_402_300_799); // 9999-12-31T23:59:59Z
    let since_epoch = time
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    httpdate::fmt_http_date(SystemTime::UNIX_EPOCH + since_epoch.min(LAST))
}

/// Last-modified time of a record.
pub fn modified(record: &ObjectRecord) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(record.modified_ms.max(0) as u64)
}

/// ISO 8601 with milliseconds, as S3 listings show times.
pub fn iso8601(ms: i64) -> String {
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    t.format(time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    ))
    .expect("fixed format")
}

/// An ISO 8601 time as S3 takes it (RFC 3339, with or without fractional seconds), in Unix
/// milliseconds.
pub fn parse_iso8601(text: &str) -> Option<i64> {
    let rfc3339 = time::format_description::well_known::Rfc3339;
    let t = time::OffsetDateTime::parse(text.trim(), &rfc3339).ok()?;
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).ok()
}

/// The Object Lock settings of a new object (PutObject, CreateMultipartUpload, the
/// destination of CopyObject): `x-amz-object-lock-mode` with
/// `x-amz-object-lock-retain-until-date`, and `x-amz-object-lock-legal-hold`.
pub fn object_lock(headers: &HeaderMap) -> Result<ObjectLock, S3Error> {
    object_lock_at(headers, crate::object::now_ms())
}

fn object_lock_at(headers: &HeaderMap, now_ms: i64) -> Result<ObjectLock, S3Error> {
    let invalid = |message: &str| S3Error::new(S3ErrorCode::InvalidArgument, message.to_string());
    let mode = header(headers, "x-amz-object-lock-mode");
    let date = header(headers, "x-amz-object-lock-retain-until-date");
    let retention = match (mode, date) {
        (None, None) => None,
        (Some(mode), Some(date)) => {
            let mode =
                RetentionMode::parse(mode).ok_or_else(|| invalid("Unknown wormMode directive."))?;
            let until_ms = parse_iso8601(date).ok_or_else(|| {
                invalid("The retain until date must be provided in ISO 8601 format")
            })?;
            if until_ms <= now_ms {
                return Err(invalid("The retain until date must be in the future!"));
            }
            Some(Retention { mode, until_ms })
        }
        _ => return Err(invalid(
            "x-amz-object-lock-retain-until-date and x-amz-object-lock-mode must both be supplied",
        )),
    };
    let legal_hold = match header(headers, "x-amz-object-lock-legal-hold") {
        None => None,
        Some("ON") => Some(true),
        Some("OFF") => Some(false),
        Some(_) => return Err(invalid("Legal Hold must be either of 'ON' or 'OFF'")),
    };
    Ok(ObjectLock {
        retention,
        legal_hold,
    })
}

/// The Object Lock headers of GET and HEAD answers.
pub const LOCK_MODE: &str = "x-amz-object-lock-mode";
pub const LOCK_RETAIN_UNTIL: &str = "x-amz-object-lock-retain-until-date";
pub const LOCK_LEGAL_HOLD: &str = "x-amz-object-lock-legal-hold";

/// The headers that describe an object in GET and HEAD responses.
pub fn object_headers(record: &ObjectRecord, with_checksum: bool) -> HeaderMap {
    let mut out = HeaderMap::new();
    let mut set = |name: &'static str, value: &str| {
        if let Ok(v) = HeaderValue::from_str(value) {
            out.insert(name, v);
        }
    };
    set("etag", &format!("\"{}\"", record.etag));
    set("last-modified", &http_date(modified(record)));
    set(
        "content-type",
        record
            .content_type
            .as_deref()
            .unwrap_or("binary/octet-stream"),
    );
    set("accept-ranges", "bytes");
    if let Some(class) = &record.storage_class {
        set("x-amz-storage-class", class);
    }
    if !record.tags.is_empty() {
        set("x-amz-tagging-count", &record.tags.len().to_string());
    }
    if let Some(retention) = &record.lock.retention {
        set(LOCK_MODE, retention.mode.as_str());
        set(LOCK_RETAIN_UNTIL, &iso8601(retention.until_ms));
    }
    if let Some(on) = record.lock.legal_hold {
        set(LOCK_LEGAL_HOLD, if on { "ON" } else { "OFF" });
    }
    if with_checksum {
        if let Some(checksum) = &record.checksum {
            set(checksum.algorithm.header_name(), &checksum.value);
            set("x-amz-checksum-type", checksum.kind.as_str());
        }
    }
    for (name, value) in &record.headers {
        if let (Ok(name), Ok(value)) = (
            axum::http::HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            out.insert(name, value);
        }
    }
    for (name, value) in &record.user_meta {
        if let (Ok(name), Ok(value)) = (
            axum::http::HeaderName::from_bytes(format!("x-amz-meta-{name}").as_bytes()),
            HeaderValue::from_str(&encoded_words::encode(value)),
        ) {
            out.insert(name, value);
        }
    }
    out
}

/// S3's limits on tag keys and values.
const MAX_TAG_KEY: usize = 128;
const MAX_TAG_VALUE: usize = 256;

/// `x-amz-tagging: k1=v1&k2=v2` (URL-encoded), checked against S3's limits.
pub fn tags(headers: &HeaderMap) -> Result<Vec<(String, String)>, S3Error> {
    let Some(value) = header(headers, "x-amz-tagging") else {
        return Ok(Vec::new());
    };
    let invalid = |why: &str| S3Error::new(S3ErrorCode::InvalidTag, why.to_string());
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(&s.replace('+', " "))
            .decode_utf8()
            .map(|v| v.into_owned())
            .map_err(|_| invalid("The tag is not valid UTF-8."))
    };
    let mut tags = Vec::new();
    for pair in value.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        tags.push((decode(k)?, decode(v)?));
    }
    check_tags(tags, OBJECT_TAG_LIMIT)
}

/// Tags in the `k1=v1&k2=v2` form of `x-amz-tagging`, keys and values URL-encoded: what
/// [`tags`] reads.
pub fn tagging_value(tags: &[(String, String)]) -> String {
    let encode = |s: &str| super::auth::sigv4::uri_encode(s.as_bytes(), true);
    (tags.iter())
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// How many tags a tag set may hold, and what S3 says past that.
pub struct TagLimit(usize, &'static str);

pub const OBJECT_TAG_LIMIT: TagLimit = TagLimit(10, "Object tags cannot be greater than 10");
pub const BUCKET_TAG_LIMIT: TagLimit = TagLimit(50, "Bucket tag count cannot be greater than 50");

/// Checks a tag set against S3's limits: how many, key and value lengths, no key twice.
pub fn check_tags(
    given: Vec<(String, String)>,
    limit: TagLimit,
) -> Result<Vec<(String, String)>, S3Error> {
    let invalid = |why: &str| S3Error::new(S3ErrorCode::InvalidTag, why.to_string());
    let mut tags: Vec<(String, String)> = Vec::new();
    for (k, v) in given {
        if k.is_empty() || k.chars().count() > MAX_TAG_KEY {
            return Err(invalid("The TagKey you have provided is invalid"));
        }
        if v.chars().count() > MAX_TAG_VALUE {
            return Err(invalid("The TagValue you have provided is invalid"));
        }
        if tags.iter().any(|(existing, _)| *existing == k) {
            return Err(invalid("Cannot provide multiple Tags with the same key"));
        }
        tags.push((k, v));
    }
    if tags.len() > limit.0 {
        return Err(invalid(limit.1));
    }
    Ok(tags)
}

/// The storage class as listings show it.
pub fn storage_class_name(stored: Option<&str>) -> String {
    stored.unwrap_or("STANDARD").to_string()
}

/// The storage classes Strata accepts: STANDARD (stored as the default) and
/// REDUCED_REDUNDANCY, as MinIO does; any other S3 class names a tier this server lacks.
pub fn storage_class(headers: &HeaderMap) -> Result<Option<String>, S3Error> {
    match header(headers, "x-amz-storage-class") {
        None | Some("STANDARD") => Ok(None),
        Some(class @ "REDUCED_REDUNDANCY") => Ok(Some(class.to_string())),
        Some(_) => Err(S3Error::from_code(S3ErrorCode::InvalidStorageClass)),
    }
}

/// A conditional write: `If-None-Match: *` or `If-Match: <etag>`.
pub fn write_condition(headers: &HeaderMap) -> Result<Option<WriteCondition>, S3Error> {
    if let Some(value) = header(headers, "if-none-match") {
        if value.trim() != "*" {
            return Err(S3Error::new(
                S3ErrorCode::NotImplemented,
                "If-None-Match on a write only supports the value *.",
            ));
        }
        return Ok(Some(WriteCondition::IfNoneMatch));
    }
    Ok(header(headers, "if-match").map(|etag| WriteCondition::IfMatch(etag.to_string())))
}

/// A conditional delete: `If-Match`, `x-amz-if-match-last-modified-time` and
/// `x-amz-if-match-size`, all of which must hold.
pub fn delete_condition(headers: &HeaderMap) -> Result<DeleteIf, S3Error> {
    let invalid = |name: &str| {
        S3Error::new(
            S3ErrorCode::InvalidArgument,
            format!("Invalid value for the {name} header."),
        )
    };
    let last_modified_secs = header(headers, "x-amz-if-match-last-modified-time")
        .map(|text| {
            timestamp_secs(text).ok_or_else(|| invalid("x-amz-if-match-last-modified-time"))
        })
        .transpose()?;
    let size = header(headers, "x-amz-if-match-size")
        .map(|text| {
            text.trim()
                .parse()
                .map_err(|_| invalid("x-amz-if-match-size"))
        })
        .transpose()?;
    Ok(DeleteIf::matching(DeleteConditions {
        etag: header(headers, "if-match").map(str::to_string),
        last_modified_secs,
        size,
    }))
}

/// A timestamp as SDKs send one, in whole seconds: an HTTP date in a header, ISO 8601 in XML
/// (either is taken in either place).
pub fn timestamp_secs(text: &str) -> Option<i64> {
    if let Ok(time) = httpdate::parse_http_date(text.trim()) {
        let secs = time.duration_since(SystemTime::UNIX_EPOCH).ok()?.as_secs();
        return i64::try_from(secs).ok();
    }
    parse_iso8601(text).map(|ms| ms.div_euclid(1000))
}

/// Why a conditional GET or HEAD does not return the object.
#[derive(Debug, PartialEq, Eq)]
pub enum ConditionFailure {
    NotModified,
    PreconditionFailed,
}

/// Evaluates If-Match, If-Unmodified-Since, If-None-Match and If-Modified-Since in the
/// order and with the precedence RFC 9110 and S3 give them.
pub fn check_conditions(
    headers: &HeaderMap,
    etag: &str,
    modified: SystemTime,
) -> Result<(), ConditionFailure> {
    check_prefixed_conditions(headers, "", etag, modified)
}

/// The same conditions on a copy's source: `x-amz-copy-source-if-match` and friends.
pub fn check_copy_source_conditions(
    headers: &HeaderMap,
    etag: &str,
    modified: SystemTime,
) -> Result<(), ConditionFailure> {
    check_prefixed_conditions(headers, "x-amz-copy-source-", etag, modified)
}

/// The same conditions on a rename's source: `x-amz-rename-source-if-match` and friends.
pub fn check_rename_source_conditions(
    headers: &HeaderMap,
    etag: &str,
    modified: SystemTime,
) -> Result<(), ConditionFailure> {
    check_prefixed_conditions(headers, "x-amz-rename-source-", etag, modified)
}

fn check_prefixed_conditions(
    headers: &HeaderMap,
    prefix: &str,
    etag: &str,
    modified: SystemTime,
) -> Result<(), ConditionFailure> {
    let named = |name: &str| header(headers, &format!("{prefix}{name}"));
    let matches = |list: &str| {
        list.split(',')
            .map(|t| t.trim().trim_start_matches("W/").trim_matches('"'))
            .any(|t| t == "*" || t == etag)
    };
    let date = |name| named(name).and_then(|v| httpdate::parse_http_date(v).ok());
    // HTTP dates have whole seconds.
    let modified_secs = modified
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let secs = |t: SystemTime| {
        t.duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
    };

    if let Some(list) = named("if-match") {
        if !matches(list) {
            return Err(ConditionFailure::PreconditionFailed);
        }
    } else if let Some(since) = date("if-unmodified-since") {
        if modified_secs > secs(since) {
            return Err(ConditionFailure::PreconditionFailed);
        }
    }
    if let Some(list) = named("if-none-match") {
        if matches(list) {
            return Err(ConditionFailure::NotModified);
        }
    } else if let Some(since) = date("if-modified-since") {
        if modified_secs <= secs(since) {
            return Err(ConditionFailure::NotModified);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_dates_of_any_time_are_answered() {
        let far = SystemTime::UNIX_EPOCH + Duration::from_secs(400_000_000_000);
        assert_eq!(http_date(far), "Fri, 31 Dec 9999 23:59:59 GMT");
        let before_epoch = SystemTime::UNIX_EPOCH - Duration::from_secs(10);
        assert_eq!(http_date(before_epoch), "Thu, 01 Jan 1970 00:00:00 GMT");
        let record = ObjectRecord {
            modified_ms: i64::MAX,
            ..ObjectRecord::for_tests()
        };
        assert_eq!(
            http_date(modified(&record)),
            "Fri, 31 Dec 9999 23:59:59 GMT"
        );
    }

    #[test]
    fn aws_chunked_is_not_stored_as_a_content_encoding() {
        let stored = |encoding: &str| {
            let mut headers = HeaderMap::new();
            headers.insert("content-encoding", encoding.parse().unwrap());
            headers.insert("cache-control", "no-cache".parse().unwrap());
            stored_headers(&headers)
        };
        let pair = |name: &str, value: &str| (name.to_string(), value.to_string());
        assert_eq!(stored("aws-chunked"), [pair("cache-control", "no-cache")]);
        assert_eq!(
            stored("aws-chunked, gzip"),
            [
                pair("content-encoding", "gzip"),
                pair("cache-control", "no-cache")
            ]
        );
        assert_eq!(stored("gzip,br")[0], pair("content-encoding", "gzip,br"));
        // A list is kept as sent.
        assert_eq!(stored("gzip, br")[0], pair("content-encoding", "gzip, br"));
        assert_eq!(
            stored("aws-chunked, gzip, br")[0],
            pair("content-encoding", "gzip, br")
        );
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        map
    }

    #[test]
    fn ranges_parse_or_are_ignored() {
        let r = |v: &str| byte_range(&headers(&[("range", v)]));
        assert_eq!(
            r("bytes=0-9"),
            Some(ByteRange::From {
                first: 0,
                last: Some(9)
            })
        );
        assert_eq!(
            r("bytes=5-"),
            Some(ByteRange::From {
                first: 5,
                last: None
            })
        );
        assert_eq!(r("bytes=-7"), Some(ByteRange::Suffix(7)));
        assert_eq!(r("bytes=9-1"), None);
        assert_eq!(r("bytes=0-1,4-5"), None);
        assert_eq!(r("items=0-1"), None);
        assert_eq!(r("bytes=a-b"), None);
    }

    #[test]
    fn content_md5_must_be_16_bytes_of_base64() {
        assert_eq!(
            content_md5(&headers(&[("content-md5", "1B2M2Y8AsgTpgAmY7PhCfg==")])).unwrap(),
            Some(
                hex::decode("d41d8cd98f00b204e9800998ecf8427e")
                    .unwrap()
                    .try_into()
                    .unwrap()
            )
        );
        for bad in ["nope", "AAAA"] {
            let err = content_md5(&headers(&[("content-md5", bad)])).unwrap_err();
            assert_eq!(err.code, S3ErrorCode::InvalidDigest);
        }
    }

    #[test]
    fn conditions_follow_precedence() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let before = httpdate::fmt_http_date(t - Duration::from_secs(10));
        let after = httpdate::fmt_http_date(t + Duration::from_secs(10));
        let check = |pairs: &[(&'static str, &str)]| check_conditions(&headers(pairs), "abc", t);
        use ConditionFailure::*;
        assert_eq!(check(&[]), Ok(()));
        assert_eq!(check(&[("if-match", "\"abc\"")]), Ok(()));
        assert_eq!(check(&[("if-match", "\"x\", \"abc\"")]), Ok(()));
        assert_eq!(check(&[("if-match", "\"x\"")]), Err(PreconditionFailed));
        assert_eq!(check(&[("if-none-match", "\"abc\"")]), Err(NotModified));
        assert_eq!(check(&[("if-none-match", "*")]), Err(NotModified));
        assert_eq!(check(&[("if-modified-since", &after)]), Err(NotModified));
        assert_eq!(check(&[("if-modified-since", &before)]), Ok(()));
        assert_eq!(
            check(&[("if-unmodified-since", &before)]),
            Err(PreconditionFailed)
        );
        // If-Match wins over a failing If-Unmodified-Since, as S3 documents.
        assert_eq!(
            check(&[("if-match", "abc"), ("if-unmodified-since", &before)]),
            Ok(())
        );
        // If-None-Match wins over If-Modified-Since.
        assert_eq!(
            check(&[("if-none-match", "\"x\""), ("if-modified-since", &after)]),
            Ok(())
        );
    }

    #[test]
    fn times_render_with_milliseconds() {
        assert_eq!(iso8601(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
    }

    #[test]
    fn iso8601_times_parse_with_or_without_fractions() {
        assert_eq!(
            parse_iso8601("2023-11-14T22:13:20.123Z"),
            Some(1_700_000_000_123)
        );
        assert_eq!(
            parse_iso8601("2023-11-14T22:13:20Z"),
            Some(1_700_000_000_000)
        );
        assert_eq!(
            parse_iso8601("2023-11-14T23:13:20.5+01:00"),
            Some(1_700_000_000_500)
        );
        for bad in ["2023-11-14", "yesterday", "2023-11-14T22:13:20", ""] {
            assert_eq!(parse_iso8601(bad), None, "{bad}");
        }
    }

    #[test]
    fn object_lock_headers_parse_as_s3_checks_them() {
        let now = 1_700_000_000_000;
        let lock = |pairs: &[(&'static str, &str)]| object_lock_at(&headers(pairs), now);
        assert_eq!(lock(&[]).unwrap(), ObjectLock::default());
        assert_eq!(
            lock(&[
                ("x-amz-object-lock-mode", "GOVERNANCE"),
                (
                    "x-amz-object-lock-retain-until-date",
                    "2030-01-01T00:00:00.000Z"
                ),
                ("x-amz-object-lock-legal-hold", "OFF"),
            ])
            .unwrap(),
            ObjectLock {
                retention: Some(Retention {
                    mode: RetentionMode::Governance,
                    until_ms: 1_893_456_000_000
                }),
                legal_hold: Some(false),
            }
        );
        assert_eq!(
            lock(&[("x-amz-object-lock-legal-hold", "ON")])
                .unwrap()
                .legal_hold,
            Some(true)
        );
        let message = |pairs: &[(&'static str, &str)]| {
            let err = lock(pairs).unwrap_err();
            assert_eq!(err.code, S3ErrorCode::InvalidArgument, "{pairs:?}");
            err.message.into_owned()
        };
        let both =
            "x-amz-object-lock-retain-until-date and x-amz-object-lock-mode must both be supplied";
        assert_eq!(message(&[("x-amz-object-lock-mode", "COMPLIANCE")]), both);
        assert_eq!(
            message(&[(
                "x-amz-object-lock-retain-until-date",
                "2030-01-01T00:00:00Z"
            )]),
            both
        );
        assert_eq!(
            message(&[
                ("x-amz-object-lock-mode", "compliance"),
                (
                    "x-amz-object-lock-retain-until-date",
                    "2030-01-01T00:00:00Z"
                ),
            ]),
            "Unknown wormMode directive."
        );
        message(&[
            ("x-amz-object-lock-mode", "COMPLIANCE"),
            ("x-amz-object-lock-retain-until-date", "1 Jan 2030"),
        ]);
        assert_eq!(
            message(&[
                ("x-amz-object-lock-mode", "COMPLIANCE"),
                (
                    "x-amz-object-lock-retain-until-date",
                    "2023-11-14T22:13:20Z"
                ),
            ]),
            "The retain until date must be in the future!"
        );
        assert_eq!(
            message(&[("x-amz-object-lock-legal-hold", "on")]),
            "Legal Hold must be either of 'ON' or 'OFF'"
        );
    }

    #[test]
    fn object_headers_show_the_lock() {
        let mut record = ObjectRecord::for_tests();
        let out = object_headers(&record, false);
        for name in [LOCK_MODE, LOCK_RETAIN_UNTIL, LOCK_LEGAL_HOLD] {
            assert!(!out.contains_key(name), "{name}");
        }
        record.lock = ObjectLock {
            retention: Some(Retention {
                mode: RetentionMode::Compliance,
                until_ms: 1_700_000_000_123,
            }),
            legal_hold: Some(false),
        };
        let out = object_headers(&record, false);
        assert_eq!(out[LOCK_MODE], "COMPLIANCE");
        assert_eq!(out[LOCK_RETAIN_UNTIL], "2023-11-14T22:13:20.123Z");
        assert_eq!(out[LOCK_LEGAL_HOLD], "OFF");
    }
}
