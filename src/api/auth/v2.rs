//! SigV2 authentication: the `Authorization: AWS key:signature` header and presigned URLs
//! (`AWSAccessKeyId`, `Signature`, `Expires`), whose signing primitives are in [`super::sigv2`].

use axum::http::{HeaderMap, Method, Uri};
use time::OffsetDateTime;

use super::*;

/// A request as a SigV2 signature covers it.
pub(super) struct V2Request<'a> {
    pub(super) method: &'a Method,
    pub(super) uri: &'a Uri,
    pub(super) headers: &'a HeaderMap,
    pub(super) params: &'a [(String, String)],
    /// The domain under which `bucket.DOMAIN` addresses a bucket (virtual-hosted style).
    pub(super) domain: Option<&'a str>,
}

impl<'a> V2Request<'a> {
    fn param(&self, name: &str) -> Option<&'a str> {
        (self.params.iter())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The resources the signature may cover: the path as sent, with the bucket in front
    /// when the request addresses it by its host name, exactly as the router reads the
    /// request; a bare bucket (`/bucket`) also as `/bucket/`, its resource in the
    /// virtual-hosted form, which botocore signs its presigned bucket URLs for.
    fn resources(&self) -> Vec<String> {
        let path = self.uri.path();
        let path =
            match crate::api::router::virtual_host_bucket(self.uri, self.headers, self.domain) {
                Some(bucket) => format!("/{bucket}{path}"),
                None => path.to_string(),
            };
        let bare_bucket = path.len() > 1 && !path[1..].contains('/');
        let mut paths = vec![sigv2::canonical_resource(&path, self.params)];
        if bare_bucket {
            paths.push(sigv2::canonical_resource(&format!("{path}/"), self.params));
        }
        paths
    }

    /// Checks `signature` against the string to sign with `date` in the date position;
    /// `query_amz` adds a presigned URL's `x-amz-` parameters to the headers.
    fn verify(
        &self,
        (access_key, signature): (&str, &str),
        date: &str,
        query_amz: bool,
        keyring: &Keyring,
    ) -> Result<Authenticated, S3Error> {
        if let Some(name) = sigv2::unsigned_selector(self.params) {
            let message = format!(
                "The authorization mechanism you have provided is not supported for \
                 ?{name}. Please use AWS4-HMAC-SHA256."
            );
            return Err(err(S3ErrorCode::InvalidRequest, message));
        }
        let (secret, identity) = keyring
            .lookup(access_key)
            .ok_or_else(|| S3Error::from_code(S3ErrorCode::InvalidAccessKeyId))?;
        let headers = (self.headers.iter())
            .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)));
        let params = (self.params.iter())
            .filter(|_| query_amz)
            .map(|(name, value)| (name.as_str(), value.as_str()));
        let amz = sigv2::canonical_amz_headers(headers.chain(params));
        // A presigned URL may carry these as parameters; a header sent wins.
        let standard = |name: &str| match sigv2::header(self.headers, name) {
            "" if query_amz => self.param(name).unwrap_or(""),
            value => value,
        };
        let signed = self.resources().iter().any(|resource| {
            let to_sign = sigv2::string_to_sign(
                self.method,
                standard("content-md5"),
                standard("content-type"),
                date,
                &amz,
                resource,
            );
            sigv2::signatures_match(&sigv2::sign(&secret, &to_sign), signature)
        });
        if !signed {
            return Err(S3Error::from_code(S3ErrorCode::SignatureDoesNotMatch));
        }
        Ok(Authenticated {
            access_key: access_key.to_string(),
            identity,
            payload: PayloadCheck::Unverified,
            decoded_length: None,
            foreign_region: None,
        })
    }
}

/// `Authorization: AWS <access key>:<signature>`, dated by `x-amz-date` or `Date`.
pub(super) fn v2_header_auth(
    request: &V2Request,
    value: &[u8],
    keyring: &Keyring,
    now: OffsetDateTime,
) -> Result<Authenticated, S3Error> {
    let invalid = || {
        let message = "AWS authorization header is invalid.  Expected AwsAccessKeyId:signature";
        err(S3ErrorCode::InvalidArgument, message)
    };
    let (access_key, signature) = std::str::from_utf8(value)
        .ok()
        .and_then(|v| v.strip_prefix("AWS "))
        .and_then(|v| v.trim().split_once(':'))
        .filter(|(key, signature)| !key.is_empty() && !signature.is_empty())
        .ok_or_else(invalid)?;
    if keyring.lookup(access_key).is_none() {
        return Err(S3Error::from_code(S3ErrorCode::InvalidAccessKeyId));
    }
    let amz_date = sigv2::header(request.headers, X_AMZ_DATE);
    let date = sigv2::header(request.headers, "date");
    let signed_at =
        parse_http_date(if amz_date.is_empty() { date } else { amz_date }).ok_or_else(|| {
            let message = "AWS authentication requires a valid Date or x-amz-date header";
            err(S3ErrorCode::AccessDenied, message)
        })?;
    if (now - signed_at).abs() > MAX_SKEW {
        return Err(S3Error::from_code(S3ErrorCode::RequestTimeTooSkewed));
    }
    // With `x-amz-date` the date line is empty: the date is signed among the amz headers.
    let date_line = if amz_date.is_empty() { date } else { "" };
    request.verify((access_key, signature), date_line, false, keyring)
}

/// A presigned URL: `AWSAccessKeyId`, `Signature` and `Expires` (Unix seconds).
pub(super) fn v2_query_auth(
    request: &V2Request,
    keyring: &Keyring,
    now: OffsetDateTime,
) -> Result<Authenticated, S3Error> {
    let (Some(access_key), Some(signature), Some(expires)) = (
        request.param("AWSAccessKeyId"),
        request.param("Signature"),
        request.param("Expires"),
    ) else {
        let message = "Query-string authentication requires the Signature, Expires and \
                       AWSAccessKeyId parameters";
        return Err(err(S3ErrorCode::AccessDenied, message));
    };
    let expires_at: i64 = expires.parse().map_err(|_| {
        let message = format!("Invalid date (should be seconds since epoch): {expires}");
        err(S3ErrorCode::AccessDenied, message)
    })?;
    if now.unix_timestamp() > expires_at {
        return Err(err(S3ErrorCode::AccessDenied, "Request has expired"));
    }
    // The same bound as SigV4's X-Amz-Expires: a leaked URL is not a key for decades.
    if expires_at - now.unix_timestamp() > MAX_EXPIRES_SECS {
        let message = "Expires must be less than a week (604800 seconds) from now";
        return Err(err(S3ErrorCode::AccessDenied, message));
    }
    request.verify((access_key, signature), expires, true, keyring)
}
