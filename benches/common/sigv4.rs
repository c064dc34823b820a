//! SigV4 signing of S3 requests sent with reqwest, with the bench credentials.

use std::time::SystemTime;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC};
use strata::signing::Payload;

use super::{PASSWORD, REGION, USER};

/// SHA-256 of an empty payload, for `x-amz-content-sha256`.
pub const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
/// Query values as SigV4 canonicalises them: everything but unreserved characters escaped.
pub const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// SigV4 headers for a request of `url` whose payload has this SHA-256, signed now (by the
/// server's own outgoing signer).
pub fn sign(method: &str, url: &str, payload_sha256: &str) -> Vec<(String, String)> {
    strata::signing::Signer::new(USER, PASSWORD, REGION)
        .headers(
            method,
            url,
            Payload::Sha256(payload_sha256),
            SystemTime::now(),
        )
        .expect("signed")
}
