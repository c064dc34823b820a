//! Server-side encryption headers: what a request asks for, checked as S3 checks them, and
//! what answers report of a version's encryption.

use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue};
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;

use super::error::{S3Error, S3ErrorCode};
use super::headers::header;
use crate::encryption::{CustomerKey, Sse, CUSTOMER_ALGORITHM};
use crate::kms::EncryptionContext;
use crate::object::Encryption;

pub const SSE: &str = "x-amz-server-side-encryption";
pub const KMS_KEY_ID: &str = "x-amz-server-side-encryption-aws-kms-key-id";
pub const KMS_CONTEXT: &str = "x-amz-server-side-encryption-context";
pub const BUCKET_KEY: &str = "x-amz-server-side-encryption-bucket-key-enabled";
const CUSTOMER: &str = "x-amz-server-side-encryption-customer-";
const COPY_SOURCE_CUSTOMER: &str = "x-amz-copy-source-server-side-encryption-customer-";

fn invalid(message: &'static str) -> S3Error {
    S3Error::new(S3ErrorCode::InvalidArgument, message)
}

/// The encryption a write asks for (PutObject, CopyObject's destination, POST Object);
/// `None`: the bucket's default, if any. `sse_c_allowed` is false on plain HTTP, where S3
/// refuses customer keys.
pub fn requested(headers: &HeaderMap, sse_c_allowed: bool) -> Result<Option<Encryption>, S3Error> {
    let customer = customer_key(headers, false, sse_c_allowed)?;
    let algorithm = header(headers, SSE);
    let kms_only = header(headers, KMS_KEY_ID).is_some() || header(headers, KMS_CONTEXT).is_some();
    let needs_kms = || {
        invalid(
            "Server Side Encryption with AWS KMS managed key requires HTTP header \
             x-amz-server-side-encryption : aws:kms",
        )
    };
    match (algorithm, customer) {
        (Some(_), Some(_)) => Err(invalid(
            "Server side encryption specified with both SSE-C and SSE-S3 headers",
        )),
        (None, Some(_)) | (Some("AES256"), _) if kms_only => Err(needs_kms()),
        (None, None) if kms_only => Err(needs_kms()),
        (None, Some(customer)) => Ok(Some(Encryption::Customer(customer))),
        (None, None) => Ok(None),
        (Some("AES256"), None) => Ok(Some(Encryption::S3)),
        (Some("aws:kms"), None) => Ok(Some(Encryption::Kms {
            key_id: header(headers, KMS_KEY_ID).map(key_id_of),
            context: kms_context(headers)?,
            bucket_key: header(headers, BUCKET_KEY).is_some_and(|v| v.eq_ignore_ascii_case("true")),
        })),
        (Some(_), None) => Err(invalid("The encryption method specified is not supported")),
    }
}

/// A KMS key named by id or by ARN (`arn:aws:kms:region:account:key/<id>`).
fn key_id_of(named: &str) -> String {
    let named = named.trim();
    match named.rsplit_once(":key/") {
        Some((_, id)) if named.starts_with("arn:") => id.to_string(),
        _ => named.to_string(),
    }
}

/// `x-amz-server-side-encryption-context`: base64 of a JSON object of strings.
fn kms_context(headers: &HeaderMap) -> Result<EncryptionContext, S3Error> {
    let Some(encoded) = header(headers, KMS_CONTEXT) else {
        return Ok(EncryptionContext::new());
    };
    BASE64
        .decode(encoded.trim())
        .ok()
        .and_then(|json| serde_json::from_slice(&json).ok())
        .ok_or_else(|| {
            invalid(
                "The header 'x-amz-server-side-encryption-context' shall be Base64-encoded \
                 UTF-8 string holding JSON which represents a string-string map",
            )
        })
}

/// The SSE-C key a request gives for the object it reads or writes, or (`copy_source`) for
/// a copy's source; `None` when it gives none.
pub fn customer_key(
    headers: &HeaderMap,
    copy_source: bool,
    sse_c_allowed: bool,
) -> Result<Option<Arc<CustomerKey>>, S3Error> {
    let prefix = if copy_source {
        COPY_SOURCE_CUSTOMER
    } else {
        CUSTOMER
    };
    let named = |suffix: &str| header(headers, &format!("{prefix}{suffix}"));
    let (algorithm, key, md5) = (named("algorithm"), named("key"), named("key-md5"));
    if algorithm.is_none() && key.is_none() && md5.is_none() {
        return Ok(None);
    }
    if !sse_c_allowed {
        return Err(S3Error::new(
            S3ErrorCode::InvalidRequest,
            "Requests specifying Server Side Encryption with Customer provided keys must be \
             made over a secure connection.",
        ));
    }
    CustomerKey::from_headers(algorithm, key, md5)
        .map(|key| Some(Arc::new(key)))
        .map_err(|e| invalid(e.message()))
}

/// Refuses SSE headers on a read: S3 takes `x-amz-server-side-encryption` and the KMS ones
/// only when an object is written.
pub fn refuse_on_read(headers: &HeaderMap) -> Result<(), S3Error> {
    if [SSE, KMS_KEY_ID, KMS_CONTEXT]
        .iter()
        .any(|name| headers.contains_key(*name))
    {
        return Err(S3Error::new(
            S3ErrorCode::InvalidArgument,
            "x-amz-server-side-encryption header is not supported for this operation.",
        ));
    }
    Ok(())
}

/// The headers that tell a client how a version is encrypted; an SSE-C version's key is
/// known only by the request that gave it (`customer`), whose MD5 is echoed.
pub fn response_headers(sse: Option<&Sse>, customer: Option<&CustomerKey>, out: &mut HeaderMap) {
    let value = |text: &str| HeaderValue::from_str(text).ok();
    match sse {
        None => {}
        Some(Sse::S3 { .. }) => {
            out.insert(SSE, HeaderValue::from_static("AES256"));
        }
        Some(Sse::Kms {
            key_id, bucket_key, ..
        }) => {
            out.insert(SSE, HeaderValue::from_static("aws:kms"));
            if let Some(id) = value(key_id) {
                out.insert(KMS_KEY_ID, id);
            }
            if *bucket_key {
                out.insert(BUCKET_KEY, HeaderValue::from_static("true"));
            }
        }
        Some(Sse::Customer { .. }) => {
            out.insert(
                "x-amz-server-side-encryption-customer-algorithm",
                HeaderValue::from_static(CUSTOMER_ALGORITHM),
            );
            if let Some(md5) = customer.and_then(|key| value(&key.key_md5_base64())) {
                out.insert("x-amz-server-side-encryption-customer-key-md5", md5);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().unwrap());
        }
        map
    }

    const KEY: &str = "pO3upElrwuEXSoFwCfnZPdSsmt/xWeFa0N9KgDijwVs=";
    const KEY_MD5: &str = "DWygnHRtgiJ77HCm+1rvHw==";

    fn code(pairs: &[(&'static str, &str)]) -> Option<S3ErrorCode> {
        requested(&headers(pairs), true).err().map(|e| e.code)
    }

    #[test]
    fn writes_ask_for_encryption_as_s3_allows() {
        let asked = |pairs: &[(&'static str, &str)]| requested(&headers(pairs), true).unwrap();
        assert!(asked(&[]).is_none());
        assert!(matches!(asked(&[(SSE, "AES256")]), Some(Encryption::S3)));
        let kms = asked(&[
            (SSE, "aws:kms"),
            (
                KMS_KEY_ID,
                "arn:aws:kms:us-east-1:123456789012:key/datasets",
            ),
            (BUCKET_KEY, "true"),
        ]);
        assert!(
            matches!(kms, Some(Encryption::Kms { key_id: Some(ref id), bucket_key: true, .. }) if id == "datasets")
        );
        let customer = asked(&[
            ("x-amz-server-side-encryption-customer-algorithm", "AES256"),
            ("x-amz-server-side-encryption-customer-key", KEY),
            ("x-amz-server-side-encryption-customer-key-md5", KEY_MD5),
        ]);
        assert!(matches!(customer, Some(Encryption::Customer(_))));
    }

    #[test]
    fn bad_combinations_are_invalid_arguments() {
        let invalid = Some(S3ErrorCode::InvalidArgument);
        assert_eq!(code(&[(SSE, "DES")]), invalid);
        assert_eq!(code(&[(SSE, "AES256"), (KMS_KEY_ID, "k")]), invalid);
        assert_eq!(code(&[(KMS_KEY_ID, "k")]), invalid);
        assert_eq!(
            code(&[(SSE, "aws:kms"), (KMS_CONTEXT, "not base64!")]),
            invalid
        );
        let customer = [
            ("x-amz-server-side-encryption-customer-algorithm", "AES256"),
            ("x-amz-server-side-encryption-customer-key", KEY),
            ("x-amz-server-side-encryption-customer-key-md5", KEY_MD5),
        ];
        let mut both = customer.to_vec();
        both.push((SSE, "AES256"));
        assert_eq!(code(&both), invalid);
        assert_eq!(code(&customer[..2]), invalid, "no key MD5");
        assert_eq!(code(&customer[1..]), invalid, "no algorithm");
        let wrong_md5 = [
            customer[0],
            customer[1],
            (customer[2].0, "AAAAAAAAAAAAAAAAAAAAAA=="),
        ];
        assert_eq!(code(&wrong_md5), invalid);
        // Over plain HTTP customer keys are refused outright.
        let refused = requested(&headers(&customer), false).unwrap_err();
        assert_eq!(refused.code, S3ErrorCode::InvalidRequest);
    }
}
