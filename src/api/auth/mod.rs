//! Request authentication: AWS Signature Version 4 in the `Authorization` header or in a
//! presigned query string, and the body checks the signature commits the client to
//! (`x-amz-content-sha256` digest, `aws-chunked` chunk signatures, trailers).
//!
//! This module decides who sent a request and whether its bytes are the ones signed; it does
//! not decide what that identity may do, and it never reads a clock (`now` is an argument).

mod chunked;
pub mod sigv4;

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::http::{header, HeaderMap, Method, Uri};
use bytes::Bytes;
use futures::Stream;
use sha2::{Digest, Sha256};
use time::{Duration, OffsetDateTime};

pub use chunked::ChunkVerifier;
use sigv4::{AuthorizationHeader, CanonicalRequest, CredentialScope};

use crate::api::error::{S3Error, S3ErrorCode};
use crate::body::{ByteStream, TrailerSlot};

/// Largest accepted distance between the request time and the server clock.
const MAX_SKEW: Duration = Duration::minutes(15);
/// Longest lifetime of a presigned URL (7 days), as on AWS.
const MAX_EXPIRES_SECS: i64 = 604_800;

const UNSIGNED_PAYLOAD: &str = "UNSIGNED-PAYLOAD";
const STREAMING_SIGNED: &str = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD";
const STREAMING_SIGNED_TRAILER: &str = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER";
const STREAMING_UNSIGNED_TRAILER: &str = "STREAMING-UNSIGNED-PAYLOAD-TRAILER";

const X_AMZ_CONTENT_SHA256: &str = "x-amz-content-sha256";
const X_AMZ_DATE: &str = "x-amz-date";
const X_AMZ_DECODED_CONTENT_LENGTH: &str = "x-amz-decoded-content-length";

/// The six query parameters of a presigned URL, all required.
const PRESIGN_PARAMS: [&str; 6] = [
    "X-Amz-Algorithm",
    "X-Amz-Credential",
    "X-Amz-Signature",
    "X-Amz-Date",
    "X-Amz-SignedHeaders",
    "X-Amz-Expires",
];

/// An access key and its secret.
#[derive(Clone)]
pub struct Credentials {
    pub access_key: String,
    pub secret_key: String,
}

impl std::fmt::Debug for Credentials {
    // The secret never reaches a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key", &self.access_key)
            .finish_non_exhaustive()
    }
}

/// Credentials the server accepts, and the region it signs for.
#[derive(Clone, Debug)]
pub struct Keyring {
    keys: Vec<Credentials>,
    region: String,
}

impl Keyring {
    pub fn new(root: Credentials, region: impl Into<String>) -> Self {
        Self {
            keys: vec![root],
            region: region.into(),
        }
    }

    pub fn secret_for(&self, access_key: &str) -> Option<&str> {
        self.keys
            .iter()
            .find(|c| c.access_key == access_key)
            .map(|c| c.secret_key.as_str())
    }

    pub fn region(&self) -> &str {
        &self.region
    }
}

/// How the request body must be checked, as decided by authentication.
#[derive(Clone, Debug)]
pub enum PayloadCheck {
    /// Nothing to verify in the body (UNSIGNED-PAYLOAD, anonymous, presigned URL).
    Unverified,
    /// `x-amz-content-sha256` was a hex digest: the whole body must hash to it (else
    /// `XAmzContentSHA256Mismatch` at the end of the stream).
    Sha256([u8; 32]),
    /// `STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER]`: an `aws-chunked` body whose every chunk
    /// signature (and trailer signature) is verified.
    SignedChunks(ChunkVerifier),
    /// `STREAMING-UNSIGNED-PAYLOAD-TRAILER`: an `aws-chunked` body with a trailer and no chunk
    /// signatures.
    UnsignedChunks,
}

/// A request whose signature verified.
#[derive(Clone, Debug)]
pub struct Authenticated {
    pub access_key: String,
    pub payload: PayloadCheck,
    /// Decoded length from `x-amz-decoded-content-length` for `aws-chunked` bodies.
    pub decoded_length: Option<u64>,
}

fn err(code: S3ErrorCode, message: impl Into<std::borrow::Cow<'static, str>>) -> S3Error {
    S3Error::new(code, message)
}

fn sigv2_rejected() -> S3Error {
    let message = "SigV2 is not supported, use AWS Signature Version 4";
    err(S3ErrorCode::InvalidRequest, message)
}

/// Verifies the SigV4 signature of a request, in the Authorization header or in a presigned
/// query string. `Ok(None)`: anonymous (no credentials at all).
pub fn authenticate(
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    keyring: &Keyring,
    now: OffsetDateTime,
) -> Result<Option<Authenticated>, S3Error> {
    let params = sigv4::query_pairs(uri.query().unwrap_or(""));
    let has = |name: &str| params.iter().any(|(key, _)| key == name);
    let presigned = has("X-Amz-Algorithm") || has("X-Amz-Credential") || has("X-Amz-Signature");
    let sigv2_query = has("AWSAccessKeyId") && has("Signature");
    match headers.get(header::AUTHORIZATION) {
        Some(_) if presigned || sigv2_query => Err(err(
            S3ErrorCode::InvalidArgument,
            "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, \
             Signature query string parameter or the Authorization header should be specified",
        )),
        Some(value) => header_auth(method, uri, headers, value.as_bytes(), keyring, now).map(Some),
        None if presigned => query_auth(method, uri, headers, &params, keyring, now).map(Some),
        None if sigv2_query => Err(sigv2_rejected()),
        None => Ok(None),
    }
}

/// What `x-amz-content-sha256` announces about the body.
enum PayloadMode {
    Unsigned,
    Digest([u8; 32]),
    SignedChunks { trailer: bool },
    UnsignedChunks,
}

fn payload_mode(value: &str) -> Result<PayloadMode, S3Error> {
    match value {
        UNSIGNED_PAYLOAD => Ok(PayloadMode::Unsigned),
        STREAMING_SIGNED => Ok(PayloadMode::SignedChunks { trailer: false }),
        STREAMING_SIGNED_TRAILER => Ok(PayloadMode::SignedChunks { trailer: true }),
        STREAMING_UNSIGNED_TRAILER => Ok(PayloadMode::UnsignedChunks),
        v if v.starts_with("STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD") => Err(err(
            S3ErrorCode::NotImplemented,
            "SigV4a (AWS4-ECDSA-P256-SHA256) streaming uploads are not supported",
        )),
        v => {
            let mut digest = [0u8; 32];
            match hex::decode_to_slice(v, &mut digest) {
                Ok(()) => Ok(PayloadMode::Digest(digest)),
                Err(_) => Err(err(
                    S3ErrorCode::InvalidArgument,
                    "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, \
                     STREAMING-UNSIGNED-PAYLOAD-TRAILER, STREAMING-AWS4-HMAC-SHA256-PAYLOAD, \
                     STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER or a valid sha256 value.",
                )),
            }
        }
    }
}

/// The declared decoded size of an `aws-chunked` body, which S3 requires.
fn decoded_length(headers: &HeaderMap) -> Result<u64, S3Error> {
    headers
        .get(X_AMZ_DECODED_CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| S3Error::from_code(S3ErrorCode::MissingContentLength))
}

/// Every signed request signs `host`, and every `x-amz-*` header sent must be signed, or a
/// relay could add one (an ACL, a storage class) to a request it did not sign.
fn check_signed_headers(headers: &HeaderMap, signed: &str, exempt: &[&str]) -> Result<(), S3Error> {
    let names: Vec<&str> = signed.split(';').collect();
    let unsigned = headers.keys().map(|name| name.as_str()).any(|name| {
        name.starts_with("x-amz-") && !names.contains(&name) && !exempt.contains(&name)
    });
    if unsigned || !names.contains(&"host") {
        let message = "There were headers present in the request which were not signed";
        return Err(err(S3ErrorCode::AccessDenied, message));
    }
    Ok(())
}

/// Checks region and service of a credential and finds its secret; `scope_error` wraps the
/// detail in the error of the signing mechanism.
fn lookup_secret<'k>(
    credential: &CredentialScope,
    keyring: &'k Keyring,
    scope_error: impl Fn(String) -> S3Error,
) -> Result<&'k str, S3Error> {
    if credential.region != keyring.region() {
        let (got, want) = (&credential.region, keyring.region());
        return Err(scope_error(format!(
            "the region '{got}' is wrong; expecting '{want}'"
        )));
    }
    if credential.service != sigv4::SERVICE {
        let service = &credential.service;
        let detail = format!("incorrect service \"{service}\". This endpoint belongs to \"s3\".");
        return Err(scope_error(detail));
    }
    keyring
        .secret_for(&credential.access_key)
        .ok_or_else(|| S3Error::from_code(S3ErrorCode::InvalidAccessKeyId))
}

/// The parts of a request that the signature covers, however it was transported.
struct SignedParts<'a> {
    method: &'a Method,
    uri: &'a Uri,
    headers: &'a HeaderMap,
    credential: &'a CredentialScope,
    signed_headers: &'a str,
    signature: &'a str,
    amz_date: String,
    canonical_query: String,
    payload_hash: &'a str,
}

impl SignedParts<'_> {
    /// Checks the signed-header rules and the signature, then decides the body check.
    fn verify(&self, secret: &str, exempt_headers: &[&str]) -> Result<Authenticated, S3Error> {
        let mode = payload_mode(self.payload_hash)?;
        check_signed_headers(self.headers, self.signed_headers, exempt_headers)?;
        let c = self.credential;
        let key = sigv4::signing_key(secret, &c.date, &c.region, &c.service);
        let signature = self
            .matching_signature(&key)
            .ok_or_else(|| S3Error::from_code(S3ErrorCode::SignatureDoesNotMatch))?;
        let (payload, decoded_length) = match mode {
            PayloadMode::Unsigned => (PayloadCheck::Unverified, None),
            PayloadMode::Digest(digest) => (PayloadCheck::Sha256(digest), None),
            PayloadMode::UnsignedChunks => (
                PayloadCheck::UnsignedChunks,
                Some(decoded_length(self.headers)?),
            ),
            PayloadMode::SignedChunks { trailer } => {
                let (scope, date) = (c.scope(), self.amz_date.clone());
                let verifier = ChunkVerifier::new(key, scope, date, signature, trailer);
                (
                    PayloadCheck::SignedChunks(verifier),
                    Some(decoded_length(self.headers)?),
                )
            }
        };
        Ok(Authenticated {
            access_key: c.access_key.clone(),
            payload,
            decoded_length,
        })
    }

    /// The computed signature if it matches the one sent. The path is tried as sent and, if
    /// different, re-encoded the AWS way (see [`sigv4::normalized_uri`]).
    fn matching_signature(&self, key: &[u8; 32]) -> Option<String> {
        let scope = self.credential.scope();
        let raw = sigv4::canonical_uri(self.uri.path());
        let normalized = sigv4::normalized_uri(self.uri.path());
        let paths = if raw == normalized {
            vec![raw]
        } else {
            vec![raw, normalized]
        };
        paths.iter().find_map(|path| {
            let creq = CanonicalRequest {
                method: self.method,
                uri: path,
                query: &self.canonical_query,
                headers: self.headers,
                signed_headers: self.signed_headers,
                authority: self.uri.authority().map(|a| a.as_str()),
                payload_hash: self.payload_hash,
            };
            let to_sign = sigv4::string_to_sign(&self.amz_date, &scope, &creq.to_bytes());
            let computed = sigv4::sign(key, &to_sign);
            sigv4::signatures_match(&computed, self.signature).then_some(computed)
        })
    }
}

fn header_auth(
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    value: &[u8],
    keyring: &Keyring,
    now: OffsetDateTime,
) -> Result<Authenticated, S3Error> {
    let malformed = |detail: String| {
        let message = format!("The authorization header is malformed; {detail}");
        err(S3ErrorCode::AuthorizationHeaderMalformed, message)
    };
    if value.starts_with(b"AWS ") {
        return Err(sigv2_rejected());
    }
    if !value.starts_with(sigv4::ALGORITHM.as_bytes()) {
        return Err(err(
            S3ErrorCode::InvalidArgument,
            "Unsupported Authorization Type",
        ));
    }
    let auth = std::str::from_utf8(value)
        .ok()
        .and_then(AuthorizationHeader::parse)
        .ok_or_else(|| {
            malformed(
                "the authorization header requires three components: Credential, \
                 SignedHeaders, and Signature."
                    .into(),
            )
        })?;
    let credential = CredentialScope::parse(&auth.credential).ok_or_else(|| {
        malformed(format!(
            "the Credential is mal-formed; expecting {CREDENTIAL_FORM}."
        ))
    })?;
    let secret = lookup_secret(&credential, keyring, malformed)?;

    let signed_at = request_time(headers).ok_or_else(|| {
        let message = "AWS authentication requires a valid Date or x-amz-date header";
        err(S3ErrorCode::AccessDenied, message)
    })?;
    if credential.date != sigv4::scope_date(signed_at) {
        return Err(malformed(WRONG_SCOPE_DATE.into()));
    }
    if (now - signed_at).abs() > MAX_SKEW {
        return Err(S3Error::from_code(S3ErrorCode::RequestTimeTooSkewed));
    }
    let payload_hash = headers.get(X_AMZ_CONTENT_SHA256).ok_or_else(|| {
        let message = "Missing required header for this request: x-amz-content-sha256";
        err(S3ErrorCode::InvalidRequest, message)
    })?;
    let parts = SignedParts {
        method,
        uri,
        headers,
        credential: &credential,
        signed_headers: &auth.signed_headers,
        signature: &auth.signature,
        amz_date: sigv4::format_amz_date(signed_at),
        canonical_query: sigv4::canonical_query(uri.query().unwrap_or(""), None),
        payload_hash: payload_hash.to_str().map_err(|_| bad_content_sha256())?,
    };
    parts.verify(secret, &[])
}

const CREDENTIAL_FORM: &str = "\"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\"";
const WRONG_SCOPE_DATE: &str = "Invalid credential date. Date is not the same as X-Amz-Date.";

fn bad_content_sha256() -> S3Error {
    err(S3ErrorCode::InvalidArgument, "Invalid x-amz-content-sha256")
}

/// The request timestamp: `x-amz-date`, else `Date`.
fn request_time(headers: &HeaderMap) -> Option<OffsetDateTime> {
    if let Some(value) = headers.get(X_AMZ_DATE) {
        return sigv4::parse_amz_date(value.to_str().ok()?);
    }
    let date = headers.get(header::DATE)?.to_str().ok()?;
    httpdate::parse_http_date(date)
        .ok()
        .map(OffsetDateTime::from)
}

fn query_auth(
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    params: &[(String, String)],
    keyring: &Keyring,
    now: OffsetDateTime,
) -> Result<Authenticated, S3Error> {
    let param_error =
        |message: String| err(S3ErrorCode::AuthorizationQueryParametersError, message);
    let get = |name: &str| {
        params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let mut values = [""; PRESIGN_PARAMS.len()];
    for (value, name) in values.iter_mut().zip(PRESIGN_PARAMS) {
        *value = get(name).ok_or_else(|| {
            param_error(
                "Query-string authentication version 4 requires the X-Amz-Algorithm, \
                 X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and \
                 X-Amz-Expires parameters."
                    .into(),
            )
        })?;
    }
    let [algorithm, credential, signature, date, signed_headers, expires] = values;
    if algorithm != sigv4::ALGORITHM {
        return Err(param_error(
            "X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\"".into(),
        ));
    }
    let credential_error = |detail: String| {
        param_error(format!(
            "Error parsing the X-Amz-Credential parameter; {detail}"
        ))
    };
    let credential = CredentialScope::parse(credential).ok_or_else(|| {
        credential_error(format!(
            "the Credential is mal-formed; expecting {CREDENTIAL_FORM}."
        ))
    })?;
    let secret = lookup_secret(&credential, keyring, credential_error)?;
    let signed_at = sigv4::parse_amz_date(date).ok_or_else(|| {
        param_error("X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"".into())
    })?;
    if credential.date != sigv4::scope_date(signed_at) {
        return Err(param_error(WRONG_SCOPE_DATE.into()));
    }
    let expires: i64 = expires
        .parse()
        .map_err(|_| param_error("X-Amz-Expires should be a number".into()))?;
    if expires < 0 {
        return Err(param_error("X-Amz-Expires must be non-negative".into()));
    }
    if expires > MAX_EXPIRES_SECS {
        let message = "X-Amz-Expires must be less than a week (in seconds) that is 604800";
        return Err(param_error(message.into()));
    }
    if signed_at - now > MAX_SKEW {
        return Err(err(S3ErrorCode::AccessDenied, "Request is not valid yet"));
    }
    if now > signed_at + Duration::seconds(expires) {
        return Err(err(S3ErrorCode::AccessDenied, "Request has expired"));
    }

    // A presigned URL signs no body unless the signer pinned one, in the query (as MinIO
    // reads it first) or in a header.
    let payload_hash = match (
        get("X-Amz-Content-Sha256"),
        headers.get(X_AMZ_CONTENT_SHA256),
    ) {
        (Some(value), _) => value,
        (None, Some(value)) => value.to_str().map_err(|_| bad_content_sha256())?,
        (None, None) => UNSIGNED_PAYLOAD,
    };
    let parts = SignedParts {
        method,
        uri,
        headers,
        credential: &credential,
        signed_headers,
        signature,
        amz_date: sigv4::format_amz_date(signed_at),
        canonical_query: sigv4::canonical_query(uri.query().unwrap_or(""), Some("X-Amz-Signature")),
        payload_hash,
    };
    // SDKs leave these out of presigned signatures although clients may send them.
    parts.verify(
        secret,
        &[
            "x-amz-user-agent",
            "x-amz-checksum-mode",
            X_AMZ_CONTENT_SHA256,
        ],
    )
}

/// Wraps the raw body: for chunked modes decodes `aws-chunked` framing (verifying chunk
/// signatures, the decoded length, storing trailers into `trailers`); for `Sha256` verifies
/// the digest at the end. Failures are yielded as io errors made with [`S3Error::into_io`] on
/// the poll where they are detected (a bad digest on the last poll before the end), never as
/// a silent end.
pub fn verified_body(
    body: ByteStream,
    auth: &Authenticated,
    trailers: Arc<TrailerSlot>,
) -> ByteStream {
    match &auth.payload {
        PayloadCheck::Unverified => body,
        PayloadCheck::Sha256(expected) => Box::pin(Sha256Body {
            inner: body,
            hasher: Sha256::new(),
            expected: *expected,
            finished: false,
        }),
        PayloadCheck::SignedChunks(verifier) => {
            chunked::decode(body, Some(verifier.clone()), auth.decoded_length, trailers)
        }
        PayloadCheck::UnsignedChunks => chunked::decode(body, None, auth.decoded_length, trailers),
    }
}

/// Passes a body through and fails its end if it does not hash to `x-amz-content-sha256`.
struct Sha256Body {
    inner: ByteStream,
    hasher: Sha256,
    expected: [u8; 32],
    finished: bool,
}

impl Stream for Sha256Body {
    type Item = std::io::Result<Bytes>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.finished {
            return Poll::Ready(None);
        }
        match this.inner.as_mut().poll_next(cx) {
            Poll::Ready(Some(Ok(data))) => {
                this.hasher.update(&data);
                Poll::Ready(Some(Ok(data)))
            }
            Poll::Ready(Some(Err(e))) => {
                this.finished = true;
                Poll::Ready(Some(Err(e)))
            }
            Poll::Ready(None) => {
                this.finished = true;
                let computed: [u8; 32] = std::mem::take(&mut this.hasher).finalize().into();
                if computed == this.expected {
                    Poll::Ready(None)
                } else {
                    let mismatch = S3Error::from_code(S3ErrorCode::XAmzContentSHA256Mismatch);
                    Poll::Ready(Some(Err(mismatch.into_io())))
                }
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::{HeaderName, HeaderValue};
    use futures::StreamExt;
    use S3ErrorCode::*;

    const AK: &str = "AKIAIOSFODNN7EXAMPLE";
    const SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    /// Request time of the AWS examples, and of the requests signed by [`signed_request`].
    const T_AWS: &str = "20130524T000000Z";
    const T_OWN: &str = "20240101T120000Z";

    fn uri(s: &str) -> Uri {
        s.parse().expect("valid uri")
    }

    fn header_map(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            let name = HeaderName::from_bytes(name.as_bytes()).expect("name");
            map.append(name, HeaderValue::from_str(value).expect("value"));
        }
        map
    }

    fn check(
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
        now: &str,
    ) -> Result<Option<Authenticated>, S3Error> {
        let root = Credentials {
            access_key: AK.into(),
            secret_key: SECRET.into(),
        };
        let now = sigv4::parse_amz_date(now).expect("valid date");
        authenticate(method, uri, headers, &Keyring::new(root, "us-east-1"), now)
    }

    fn accepted(method: &Method, uri: &Uri, headers: &HeaderMap, now: &str) -> Authenticated {
        check(method, uri, headers, now)
            .expect("accepted")
            .expect("not anonymous")
    }

    fn refused(method: &Method, uri: &Uri, headers: &HeaderMap, now: &str) -> S3ErrorCode {
        check(method, uri, headers, now).expect_err("refused").code
    }

    /// Signs all `headers` the way an SDK would, for `region` and `secret`.
    fn sign(method: &Method, uri: &Uri, headers: &mut HeaderMap, region: &str, secret: &str) {
        let mut names: Vec<&str> = headers.keys().map(|k| k.as_str()).collect();
        names.sort_unstable();
        let signed = names.join(";");
        let date = &T_OWN[..8];
        let creq = CanonicalRequest {
            method,
            uri: &sigv4::canonical_uri(uri.path()),
            query: &sigv4::canonical_query(uri.query().unwrap_or(""), None),
            headers,
            signed_headers: &signed,
            authority: None,
            payload_hash: headers[X_AMZ_CONTENT_SHA256].to_str().expect("ascii"),
        };
        let scope = format!("{date}/{region}/s3/aws4_request");
        let key = sigv4::signing_key(secret, date, region, "s3");
        let sig = sigv4::sign(
            &key,
            &sigv4::string_to_sign(T_OWN, &scope, &creq.to_bytes()),
        );
        let value = format!(
            "{} Credential={AK}/{scope}, SignedHeaders={signed}, Signature={sig}",
            sigv4::ALGORITHM
        );
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(&value).expect("ascii"),
        );
    }

    fn signed_request(path: &str, extra: &[(&str, &str)], payload: &str) -> (Uri, HeaderMap) {
        let uri = uri(path);
        let mut headers = header_map(&[
            ("host", "localhost:9000"),
            (X_AMZ_DATE, T_OWN),
            (X_AMZ_CONTENT_SHA256, payload),
        ]);
        headers.extend(header_map(extra));
        sign(&Method::PUT, &uri, &mut headers, "us-east-1", SECRET);
        (uri, headers)
    }

    fn read(body: ByteStream) -> Result<Vec<u8>, S3Error> {
        futures::executor::block_on(body.fold(Ok(Vec::new()), |acc, item| async move {
            let mut acc = acc?;
            acc.extend_from_slice(&item.map_err(|e| S3Error::from_io(&e).expect("S3 error"))?);
            Ok(acc)
        }))
    }

    fn body_of(pieces: &[&[u8]]) -> ByteStream {
        let pieces: Vec<_> = pieces
            .iter()
            .map(|p| Ok(Bytes::copy_from_slice(p)))
            .collect();
        Box::pin(futures::stream::iter(pieces))
    }

    /// AWS's "GET Object" example (`sig-v4-header-based-auth.html`).
    fn aws_get_object() -> HeaderMap {
        header_map(&[
            ("host", "examplebucket.s3.amazonaws.com"),
            ("range", "bytes=0-9"),
            (X_AMZ_CONTENT_SHA256, sigv4::EMPTY_SHA256_HEX),
            (X_AMZ_DATE, T_AWS),
            ("authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"),
        ])
    }

    #[test]
    fn aws_get_object_example_authenticates_and_checks_the_body_digest() {
        let auth = accepted(
            &Method::GET,
            &uri("/test.txt"),
            &aws_get_object(),
            "20130524T001459Z",
        );
        assert_eq!(auth.access_key, AK);
        assert!(matches!(auth.payload, PayloadCheck::Sha256(_)));
        let slot = Arc::new(TrailerSlot::default());
        assert_eq!(
            read(verified_body(body_of(&[]), &auth, slot.clone())).expect("ok"),
            b""
        );
        let err = read(verified_body(body_of(&[b"x"]), &auth, slot)).expect_err("digest");
        assert_eq!(err.code, XAmzContentSHA256Mismatch);
    }

    #[test]
    fn header_auth_refusals_use_aws_codes() {
        let (get, path, headers) = (&Method::GET, &uri("/test.txt"), aws_get_object());
        assert_eq!(
            refused(get, path, &headers, "20130524T001501Z"),
            RequestTimeTooSkewed
        );
        assert_eq!(
            refused(get, path, &headers, "20130523T234459Z"),
            RequestTimeTooSkewed
        );
        assert_eq!(
            refused(&Method::PUT, path, &headers, T_AWS),
            SignatureDoesNotMatch
        );
        let edits: [(&str, Option<&'static str>, S3ErrorCode); 3] = [
            (X_AMZ_CONTENT_SHA256, None, InvalidRequest),
            (X_AMZ_DATE, None, AccessDenied),
            ("x-amz-meta-unsigned", Some("1"), AccessDenied),
        ];
        for (name, value, want) in edits {
            let mut h = headers.clone();
            match value {
                Some(value) => h.insert(name, HeaderValue::from_static(value)),
                None => h.remove(name),
            };
            assert_eq!(refused(get, path, &h, T_AWS), want, "{name}");
        }
        let scope = "Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request";
        let cases = [
            (
                "AWS AKIAIOSFODNN7EXAMPLE:c2lnbmF0dXJl".to_owned(),
                InvalidRequest,
            ),
            ("Bearer token".to_owned(), InvalidArgument),
            (
                format!("AWS4-HMAC-SHA256 {scope}"),
                AuthorizationHeaderMalformed,
            ),
            (
                format!("AWS4-HMAC-SHA256 {scope},SignedHeaders=host"),
                AuthorizationHeaderMalformed,
            ),
            (
                format!("AWS4-HMAC-SHA256 {scope}x,SignedHeaders=host,Signature=0"),
                AuthorizationHeaderMalformed,
            ),
            (
                format!(
                    "AWS4-HMAC-SHA256 {},SignedHeaders=host,Signature=0",
                    scope.replace("0524", "0523")
                ),
                AuthorizationHeaderMalformed,
            ),
            (
                format!(
                    "AWS4-HMAC-SHA256 {},SignedHeaders=host,Signature=0",
                    scope.replace("/s3/", "/ec2/")
                ),
                AuthorizationHeaderMalformed,
            ),
            (
                format!(
                    "AWS4-HMAC-SHA256 {},SignedHeaders=host,Signature=0",
                    scope.replace("AKIA", "NOBODY")
                ),
                InvalidAccessKeyId,
            ),
        ];
        for (value, want) in cases {
            let mut h = headers.clone();
            h.insert(
                header::AUTHORIZATION,
                HeaderValue::from_str(&value).expect("ascii"),
            );
            assert_eq!(refused(get, path, &h, T_AWS), want, "{value}");
        }
    }

    #[test]
    fn wrong_region_names_the_expected_one() {
        let (uri, mut headers) = signed_request("/b/k", &[], UNSIGNED_PAYLOAD);
        sign(&Method::PUT, &uri, &mut headers, "eu-west-1", SECRET);
        let err = check(&Method::PUT, &uri, &headers, T_OWN).expect_err("region");
        assert_eq!(err.code, AuthorizationHeaderMalformed);
        assert!(err
            .message
            .ends_with("the region 'eu-west-1' is wrong; expecting 'us-east-1'"));
        sign(
            &Method::PUT,
            &uri,
            &mut headers,
            "us-east-1",
            "not-the-secret",
        );
        assert_eq!(
            refused(&Method::PUT, &uri, &headers, T_OWN),
            SignatureDoesNotMatch
        );
    }

    #[test]
    fn path_signed_in_aws_encoding_matches_a_raw_path() {
        let (signed_uri, headers) = signed_request("/b/a%24b%3Ac", &[], UNSIGNED_PAYLOAD);
        let put = &Method::PUT;
        assert!(matches!(
            accepted(put, &signed_uri, &headers, T_OWN).payload,
            PayloadCheck::Unverified
        ));
        accepted(put, &uri("/b/a$b:c"), &headers, T_OWN);
        assert_eq!(
            refused(put, &uri("/b/a$b:d"), &headers, T_OWN),
            SignatureDoesNotMatch
        );
    }

    #[test]
    fn aws_chunked_example_seed_signature_and_body() {
        // `sigv4-streaming.html`: PUT of 64 KiB + 1 KiB of 'a' in signed chunks.
        let headers = header_map(&[
            ("host", "s3.amazonaws.com"),
            (X_AMZ_DATE, T_AWS),
            ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
            (X_AMZ_CONTENT_SHA256, STREAMING_SIGNED),
            ("content-encoding", "aws-chunked"),
            (X_AMZ_DECODED_CONTENT_LENGTH, "66560"),
            ("content-length", "66824"),
            ("authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class,Signature=4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"),
        ]);
        let (put, path) = (&Method::PUT, &uri("/examplebucket/chunkObject.txt"));
        let auth = accepted(put, path, &headers, T_AWS);
        assert!(matches!(auth.payload, PayloadCheck::SignedChunks(_)));
        assert_eq!(auth.decoded_length, Some(66_560));
        let a = vec![b'a'; 65_536];
        let body = body_of(&[
            b"10000;chunk-signature=ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648\r\n",
            &a,
            b"\r\n400;chunk-signature=0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497\r\n",
            &a[..1024],
            b"\r\n0;chunk-signature=b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9\r\n\r\n",
        ]);
        let decoded = read(verified_body(body, &auth, Arc::new(TrailerSlot::default())));
        assert_eq!(decoded.expect("verifies"), vec![b'a'; 66_560]);
        let mut unsigned_length = headers.clone();
        unsigned_length.insert(
            X_AMZ_DECODED_CONTENT_LENGTH,
            HeaderValue::from_static("66561"),
        );
        assert_eq!(
            refused(put, path, &unsigned_length, T_AWS),
            SignatureDoesNotMatch
        );
    }

    /// Regression: MinIO CVE-2025-31489 accepted unsigned-trailer uploads without checking the
    /// header signature at all.
    #[test]
    fn unsigned_trailer_mode_still_verifies_the_seed_signature() {
        let extra = [
            (X_AMZ_DECODED_CONTENT_LENGTH, "5"),
            ("x-amz-trailer", "x-amz-checksum-crc32"),
        ];
        let (uri, mut headers) = signed_request("/b/k", &extra, STREAMING_UNSIGNED_TRAILER);
        let auth = accepted(&Method::PUT, &uri, &headers, T_OWN);
        assert!(matches!(auth.payload, PayloadCheck::UnsignedChunks));
        let slot = Arc::new(TrailerSlot::default());
        let body = body_of(&[
            b"5\r\nhel",
            b"lo\r\n0\r\nx-amz-checksum-crc32:NhCmhg==\r\n\r\n",
        ]);
        assert_eq!(
            read(verified_body(body, &auth, slot.clone())).expect("decodes"),
            b"hello"
        );
        assert_eq!(slot.get("x-amz-checksum-crc32"), Some("NhCmhg=="));

        let value = headers[header::AUTHORIZATION].to_str().expect("ascii");
        let forged = format!("{}0", &value[..value.len() - 1]);
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(&forged).expect("ascii"),
        );
        assert_eq!(
            refused(&Method::PUT, &uri, &headers, T_OWN),
            SignatureDoesNotMatch
        );
    }

    #[test]
    fn payload_header_values_are_checked() {
        let cases = [
            (STREAMING_SIGNED_TRAILER, MissingContentLength),
            ("not-a-digest", InvalidArgument),
            ("STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD", NotImplemented),
        ];
        for (payload, want) in cases {
            let (uri, headers) = signed_request("/b/k", &[], payload);
            assert_eq!(
                refused(&Method::PUT, &uri, &headers, T_OWN),
                want,
                "{payload}"
            );
        }
    }

    /// AWS's presigned URL example (`sigv4-query-string-auth.html`), valid for 86400 s.
    const PRESIGNED: &str = "/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256\
        &X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request\
        &X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host\
        &X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404";

    #[test]
    fn aws_presigned_example_and_its_lifetime() {
        let (get, presigned) = (&Method::GET, &uri(PRESIGNED));
        let headers = header_map(&[("host", "examplebucket.s3.amazonaws.com")]);
        for now in [T_AWS, "20130523T235000Z", "20130525T000000Z"] {
            let auth = accepted(get, presigned, &headers, now);
            assert!(matches!(auth.payload, PayloadCheck::Unverified), "{now}");
        }
        let late = [
            ("20130525T000001Z", "Request has expired"),
            ("20130523T234459Z", "Request is not valid yet"),
        ];
        for (now, message) in late {
            let err = check(get, presigned, &headers, now).expect_err("refused");
            assert_eq!((err.code, err.message.as_ref()), (AccessDenied, message));
        }
        let tampered = uri(&PRESIGNED.replace("test.txt", "test.txu"));
        assert_eq!(
            refused(get, &tampered, &headers, T_AWS),
            SignatureDoesNotMatch
        );
        let mut both = headers.clone();
        both.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("AWS4-HMAC-SHA256 x"),
        );
        assert_eq!(refused(get, presigned, &both, T_AWS), InvalidArgument);
        let mut unsigned = headers.clone();
        unsigned.insert("x-amz-acl", HeaderValue::from_static("public-read"));
        assert_eq!(refused(get, presigned, &unsigned, T_AWS), AccessDenied);
    }

    #[test]
    fn presigned_parameter_errors() {
        let headers = header_map(&[("host", "examplebucket.s3.amazonaws.com")]);
        let cases = [
            (
                "X-Amz-Expires=86400&",
                "",
                AuthorizationQueryParametersError,
            ),
            (
                "Expires=86400",
                "Expires=604801",
                AuthorizationQueryParametersError,
            ),
            (
                "Expires=86400",
                "Expires=-1",
                AuthorizationQueryParametersError,
            ),
            (
                "Expires=86400",
                "Expires=1d",
                AuthorizationQueryParametersError,
            ),
            (
                "AWS4-HMAC-SHA256",
                "AWS4-HMAC-SHA1",
                AuthorizationQueryParametersError,
            ),
            ("us-east-1", "eu-west-1", AuthorizationQueryParametersError),
            (
                "Date=20130524T000000Z",
                "Date=2013-05-24",
                AuthorizationQueryParametersError,
            ),
            (
                "Date=20130524T000000Z",
                "Date=20130525T000000Z",
                AuthorizationQueryParametersError,
            ),
            ("AKIAIOSFODNN7EXAMPLE", "NOBODY", InvalidAccessKeyId),
        ];
        for (from, to, want) in cases {
            let presigned = uri(&PRESIGNED.replace(from, to));
            assert_eq!(
                refused(&Method::GET, &presigned, &headers, T_AWS),
                want,
                "{from} -> {to}"
            );
        }
    }

    #[test]
    fn anonymous_and_sigv2_requests() {
        let (get, headers) = (&Method::GET, header_map(&[("host", "h")]));
        for path in ["/", "/b/k?list-type=2&prefix=a", "/b/k?Signature=x"] {
            assert!(check(get, &uri(path), &headers, T_OWN)
                .expect("anonymous")
                .is_none());
        }
        let v2 = uri("/b/k?AWSAccessKeyId=AK&Expires=1&Signature=x");
        assert_eq!(refused(get, &v2, &headers, T_OWN), InvalidRequest);
    }
}
