//! SigV4 signing of S3 requests sent with reqwest, with the bench credentials.

use std::time::SystemTime;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC};

use super::{PASSWORD, REGION, USER};

/// SHA-256 of an empty payload, for `x-amz-content-sha256`.
pub const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
/// Query values as SigV4 canonicalises them: everything but unreserved characters escaped.
pub const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// SigV4 headers for a request of `url` whose payload has this SHA-256, signed now.
pub fn sign(method: &str, url: &str, payload_sha256: &str) -> Vec<(String, String)> {
    use aws_sigv4::http_request::{
        sign, PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest,
        SigningSettings, UriPathNormalizationMode,
    };
    let identity =
        aws_credential_types::Credentials::new(USER, PASSWORD, None, None, "bench").into();
    let mut settings = SigningSettings::default();
    settings.percent_encoding_mode = PercentEncodingMode::Single;
    settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
    settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
    let params = aws_sigv4::sign::v4::SigningParams::builder()
        .identity(&identity)
        .region(REGION)
        .name("s3")
        .time(SystemTime::now())
        .settings(settings)
        .build()
        .expect("signing params")
        .into();
    let request = SignableRequest::new(
        method,
        url,
        std::iter::empty(),
        SignableBody::Precomputed(payload_sha256.to_string()),
    )
    .expect("signable request");
    let (instructions, _) = sign(request, &params).expect("sign").into_parts();
    instructions
        .headers()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}
