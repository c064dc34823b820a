//! Request authentication: AWS Signature Version 4 in the `Authorization` header or in a
//! presigned query string, and the body checks the signature commits the client to
//! (`x-amz-content-sha256` digest, `aws-chunked` chunk signatures, trailers); and Signature
//! Version 2 in the same two places, which boto3 and the aws CLI use for presigned URLs at
//! their defaults.
//!
//! This module decides who sent a request and whether its bytes are the ones signed; it does
//! not decide what that identity may do, and it never reads a clock (`now` is an argument).

mod chunked;
pub mod sigv2;
pub mod sigv4;
mod v2;

use std::borrow::Cow;
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
use v2::{v2_header_auth, v2_query_auth, V2Request};

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

/// Access keys besides the root user's: the users of `crate::iam`, looked up on every
/// request.
pub trait UserKeys: Send + Sync + std::fmt::Debug {
    /// The secret key of an enabled user's access key.
    fn secret_for(&self, access_key: &str) -> Option<String>;
}

impl UserKeys for crate::iam::Iam {
    fn secret_for(&self, access_key: &str) -> Option<String> {
        crate::iam::Iam::secret_for(self, access_key)
    }
}

pub use crate::iam::Identity;

/// Credentials the server accepts, and the region it signs for.
#[derive(Clone, Debug)]
pub struct Keyring {
    keys: Vec<Credentials>,
    users: Option<Arc<dyn UserKeys>>,
    region: String,
}

impl Keyring {
    pub fn new(root: Credentials, region: impl Into<String>) -> Self {
        Self {
            keys: vec![root],
            users: None,
            region: region.into(),
        }
    }

    /// Also accepts the keys of these users (the root user's key comes first).
    pub fn with_users(mut self, users: Arc<dyn UserKeys>) -> Self {
        self.users = Some(users);
        self
    }

    pub fn secret_for(&self, access_key: &str) -> Option<Cow<'_, str>> {
        self.lookup(access_key).map(|(secret, _)| secret)
    }

    /// The secret of an access key and whose key it is.
    pub fn lookup(&self, access_key: &str) -> Option<(Cow<'_, str>, Identity)> {
        if let Some(root) = self.keys.iter().find(|c| c.access_key == access_key) {
            return Some((Cow::Borrowed(root.secret_key.as_str()), Identity::Root));
        }
        let secret = self.users.as_ref()?.secret_for(access_key)?;
        Some((Cow::Owned(secret), Identity::User(access_key.to_string())))
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
    /// Whose access key signed it.
    pub identity: Identity,
    pub payload: PayloadCheck,
    /// Decoded length from `x-amz-decoded-content-length` for `aws-chunked` bodies.
    pub decoded_length: Option<u64>,
    /// The region a SigV4 signature was made for, when not the server's: only a request
    /// shaped as a CreateBucket gets here with one (see [`creates_bucket`]), and the
    /// CreateBucket handler judges it against the bucket's `LocationConstraint`.
    pub foreign_region: Option<String>,
}

impl Authenticated {
    /// A request without a signature, for the endpoints that allow one (their handler
    /// checks what it must, e.g. a CORS preflight's origin).
    pub fn anonymous() -> Self {
        Authenticated {
            access_key: String::new(),
            identity: Identity::Anonymous,
            payload: PayloadCheck::Unverified,
            decoded_length: None,
            foreign_region: None,
        }
    }
}

/// S3's refusal of a header signature made for `signed_for` by a server in `region`: it
/// names the region, which clients re-sign with.
pub fn wrong_region(signed_for: &str, region: &str) -> S3Error {
    let message = format!(
        "The authorization header is malformed; {}",
        wrong_region_detail(signed_for, region)
    );
    err(S3ErrorCode::AuthorizationHeaderMalformed, message).with_element("Region", region)
}

fn wrong_region_detail(signed_for: &str, region: &str) -> String {
    format!("the region '{signed_for}' is wrong; expecting '{region}'")
}

fn err(code: S3ErrorCode, message: impl Into<std::borrow::Cow<'static, str>>) -> S3Error {
    S3Error::new(code, message)
}

/// Verifies the signature of a request (SigV4 or SigV2), in the Authorization header or in a
/// presigned query string. `Ok(None)`: anonymous (no credentials at all).
/// `domain` is the one of virtual-hosted requests, which SigV2 signs with their bucket.
pub fn authenticate(
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    keyring: &Keyring,
    domain: Option<&str>,
    now: OffsetDateTime,
) -> Result<Option<Authenticated>, S3Error> {
    // A CORS preflight is answered from the bucket's CORS rules alone, and is never signed:
    // a browser sends it to a presigned URL with the URL's query string but no credentials.
    if method == Method::OPTIONS {
        return Ok(None);
    }
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
        Some(value) if value.as_bytes().starts_with(b"AWS ") => {
            let request = V2Request {
                method,
                uri,
                headers,
                params: &params,
                domain,
            };
            v2_header_auth(&request, value.as_bytes(), keyring, now).map(Some)
        }
        Some(value) => {
            let request = (method, uri, headers, domain);
            header_auth(request, value.as_bytes(), keyring, now).map(Some)
        }
        None if presigned => query_auth(method, uri, headers, &params, keyring, now).map(Some),
        None if sigv2_query => {
            let request = V2Request {
                method,
                uri,
                headers,
                params: &params,
                domain,
            };
            v2_query_auth(&request, keyring, now).map(Some)
        }
        None => Ok(None),
    }
}

/// A request date in any form clients send: IMF-fixdate (`GMT`), RFC 2822 with a numeric
/// zone (`+0000`, `-0000`), or ISO 8601 basic (`20130524T000000Z`).
fn parse_http_date(value: &str) -> Option<OffsetDateTime> {
    if let Ok(time) = httpdate::parse_http_date(value) {
        return Some(OffsetDateTime::from(time));
    }
    OffsetDateTime::parse(value, &time::format_description::well_known::Rfc2822)
        .ok()
        .or_else(|| sigv4::parse_amz_date(value))
        .and_then(request_date)
}

/// A date a request may be dated: one before the epoch is none (S3 answers it
/// `AccessDenied`, not `RequestTimeTooSkewed`).
fn request_date(time: OffsetDateTime) -> Option<OffsetDateTime> {
    (time.unix_timestamp() >= 0).then_some(time)
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

/// Checks region (unless `any_region`) and service of a credential and finds its secret and
/// identity; `scope_error` wraps the detail in the error of the signing mechanism.
fn lookup_secret<'k>(
    credential: &CredentialScope,
    keyring: &'k Keyring,
    any_region: bool,
    scope_error: impl Fn(String) -> S3Error,
) -> Result<(Cow<'k, str>, Identity), S3Error> {
    if credential.region != keyring.region() && !any_region {
        let (got, want) = (&credential.region, keyring.region());
        let detail = wrong_region_detail(got, want);
        // Clients re-sign for the region the answer names (S3's `<Region>`).
        return Err(scope_error(detail).with_element("Region", want));
    }
    if credential.service != sigv4::SERVICE {
        let service = &credential.service;
        let detail = format!("incorrect service \"{service}\". This endpoint belongs to \"s3\".");
        return Err(scope_error(detail));
    }
    keyring
        .lookup(&credential.access_key)
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
    fn verify(
        &self,
        (secret, identity): (Cow<'_, str>, Identity),
        exempt_headers: &[&str],
    ) -> Result<Authenticated, S3Error> {
        let mode = payload_mode(self.payload_hash)?;
        check_signed_headers(self.headers, self.signed_headers, exempt_headers)?;
        let c = self.credential;
        let key = sigv4::signing_key(&secret, &c.date, &c.region, &c.service);
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
            identity,
            payload,
            decoded_length,
            foreign_region: None,
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

/// Whether a request is a CreateBucket, which may be signed for the region its bucket is
/// created for: S3's global endpoint takes those, and minio-go and the minio SDKs sign a
/// MakeBucket with a region so (the signature is verified all the same).
fn creates_bucket(method: &Method, uri: &Uri, headers: &HeaderMap, domain: Option<&str>) -> bool {
    *method == Method::PUT
        && uri.query().is_none_or(str::is_empty)
        && matches!(super::router::bucket_and_key(uri, headers, domain),
            Ok((bucket, key)) if !bucket.is_empty() && key.is_empty())
}

fn header_auth(
    (method, uri, headers, domain): (&Method, &Uri, &HeaderMap, Option<&str>),
    value: &[u8],
    keyring: &Keyring,
    now: OffsetDateTime,
) -> Result<Authenticated, S3Error> {
    let malformed = |detail: String| {
        let message = format!("The authorization header is malformed; {detail}");
        err(S3ErrorCode::AuthorizationHeaderMalformed, message)
    };
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
    // Another region's signature is looked at only for the one request that may carry it.
    let foreign = credential.region != keyring.region();
    let any_region = foreign && creates_bucket(method, uri, headers, domain);
    let secret = lookup_secret(&credential, keyring, any_region, malformed)?;

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
    let mut authenticated = parts.verify(secret, &[])?;
    authenticated.foreign_region = foreign.then(|| credential.region.clone());
    Ok(authenticated)
}

const CREDENTIAL_FORM: &str = "\"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\"";
const WRONG_SCOPE_DATE: &str = "Invalid credential date. Date is not the same as X-Amz-Date.";

fn bad_content_sha256() -> S3Error {
    err(S3ErrorCode::InvalidArgument, "Invalid x-amz-content-sha256")
}

/// The request timestamp: `x-amz-date`, else `Date`.
fn request_time(headers: &HeaderMap) -> Option<OffsetDateTime> {
    if let Some(value) = headers.get(X_AMZ_DATE) {
        return sigv4::parse_amz_date(value.to_str().ok()?).and_then(request_date);
    }
    parse_http_date(headers.get(header::DATE)?.to_str().ok()?)
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
    let secret = lookup_secret(&credential, keyring, false, credential_error)?;
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
mod tests;
