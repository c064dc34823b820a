//! SigV4 for the requests Strata sends as an S3 client: to a remote tier, from `strata admin`
//! to its server, and from the benches. One signer, on `aws-sigv4`, with S3's rules: the path
//! signed as it is sent (encoded once, never normalised) and the payload's SHA-256 in
//! `x-amz-content-sha256`. Checking signatures is the S3 front's own (`crate::api::auth`).

use std::time::SystemTime;

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{
    sign, PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest,
    SignatureLocation, SigningInstructions, SigningSettings, UriPathNormalizationMode,
};
use aws_sigv4::sign::v4::SigningParams;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC};

/// AWS's URI encoding of a query value or a path segment: every byte percent-encoded but
/// the unreserved characters `A-Z a-z 0-9 - _ . ~` (what SigV4 signs, and S3's
/// `encoding-type=url`, alike).
pub const URI_UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');
/// The same for a whole path: its `/` stay as they are.
pub const URI_PATH: &AsciiSet = &URI_UNRESERVED.remove(b'/');

/// What a request's signature says of its body.
#[derive(Debug, Clone, Copy)]
pub enum Payload<'a> {
    /// The whole body, hashed here.
    Bytes(&'a [u8]),
    /// The body's SHA-256, hex, computed by the caller.
    Sha256(&'a str),
    /// `UNSIGNED-PAYLOAD`: a streamed body, protected by TLS or its own checksums.
    Unsigned,
}

/// Signs requests with one access key, for one region, as the `s3` service.
#[derive(Clone)]
pub struct Signer {
    credentials: Credentials,
    region: String,
}

impl Signer {
    pub fn new(access_key: &str, secret_key: &str, region: &str) -> Self {
        Signer {
            credentials: Credentials::new(access_key, secret_key, None, None, "strata"),
            region: region.to_string(),
        }
    }

    /// The headers that sign a request of `url` (`x-amz-date`, `x-amz-content-sha256`,
    /// `authorization`) at `now`; the host is signed as the URL gives it.
    pub fn headers(
        &self,
        method: &str,
        url: &str,
        payload: Payload<'_>,
        now: SystemTime,
    ) -> Result<Vec<(String, String)>, String> {
        let mut settings = s3_settings();
        settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
        let body = match payload {
            Payload::Bytes(bytes) => SignableBody::Bytes(bytes),
            Payload::Sha256(hash) => SignableBody::Precomputed(hash.to_string()),
            Payload::Unsigned => SignableBody::UnsignedPayload,
        };
        let instructions = self.sign(method, url, body, settings, now)?;
        Ok((instructions.headers())
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect())
    }

    /// A presigned `GET` of `url` (no query of its own) made at `now`, valid for `expires`:
    /// the URL with its `X-Amz-*` query parameters.
    pub fn presigned_get(
        &self,
        url: &str,
        expires: std::time::Duration,
        now: SystemTime,
    ) -> Result<String, String> {
        let mut settings = s3_settings();
        settings.signature_location = SignatureLocation::QueryParams;
        settings.expires_in = Some(expires);
        let instructions = self.sign("GET", url, SignableBody::UnsignedPayload, settings, now)?;
        let encode = |v: &str| percent_encoding::utf8_percent_encode(v, URI_UNRESERVED).to_string();
        let query: Vec<String> = (instructions.params().iter())
            .map(|(name, value)| format!("{}={}", encode(name), encode(value)))
            .collect();
        Ok(format!("{url}?{}", query.join("&")))
    }

    /// Signs `method url` with `body` as `settings` say, at `now`.
    fn sign(
        &self,
        method: &str,
        url: &str,
        body: SignableBody<'_>,
        settings: SigningSettings,
        now: SystemTime,
    ) -> Result<SigningInstructions, String> {
        let identity = self.credentials.clone().into();
        let params = SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name("s3")
            .time(now)
            .settings(settings)
            .build()
            .map_err(|e| format!("signing: {e}"))?
            .into();
        let request = SignableRequest::new(method, url, std::iter::empty(), body)
            .map_err(|e| format!("signing {url}: {e}"))?;
        let (instructions, _signature) = sign(request, &params)
            .map_err(|e| format!("signing {url}: {e}"))?
            .into_parts();
        Ok(instructions)
    }
}

/// S3's rules: the path signed as it is sent (encoded once, never normalised).
fn s3_settings() -> SigningSettings {
    let mut settings = SigningSettings::default();
    settings.percent_encoding_mode = PercentEncodingMode::Single;
    settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
    settings
}
