//! Hand-signed raw requests (aws-sigv4 + reqwest), including aws-chunked bodies.

use std::time::{Duration, SystemTime};

use aws_sdk_s3::config::Credentials;

use super::payload::sha256_hex;
use super::{ACCESS_KEY, REGION, SECRET_KEY};

/// Payload hash placed in `x-amz-content-sha256`.
pub const UNSIGNED_PAYLOAD: &str = "UNSIGNED-PAYLOAD";
pub const STREAMING_PAYLOAD: &str = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD";
pub const STREAMING_PAYLOAD_TRAILER: &str = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER";
pub const STREAMING_UNSIGNED_TRAILER: &str = "STREAMING-UNSIGNED-PAYLOAD-TRAILER";

/// Response of a raw request, body fully read.
#[derive(Debug)]
pub struct RawResponse {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Vec<u8>,
}

impl RawResponse {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }

    /// Text of the first `<tag>...</tag>` element in the body.
    pub fn xml_element(&self, tag: &str) -> Option<String> {
        xml_element(&self.text(), tag)
    }
}

/// Text of the first `<tag>...</tag>` element (no XML parser needed for error bodies).
pub fn xml_element(xml: &str, tag: &str) -> Option<String> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = xml.find(&open)? + open.len();
    let end = xml[start..].find(&close)? + start;
    Some(xml[start..end].to_string())
}

/// SigV4 signing inputs for a raw request.
#[derive(Clone, Debug)]
pub struct Signer {
    pub access_key: String,
    pub secret_key: String,
    pub region: String,
    pub time: SystemTime,
}

impl Signer {
    pub fn new(access_key: &str, secret_key: &str) -> Signer {
        Signer {
            access_key: access_key.to_string(),
            secret_key: secret_key.to_string(),
            region: REGION.to_string(),
            time: SystemTime::now(),
        }
    }

    /// The test credentials, signed now.
    pub fn test() -> Signer {
        Signer::new(ACCESS_KEY, SECRET_KEY)
    }

    fn settings() -> aws_sigv4::http_request::SigningSettings {
        use aws_sigv4::http_request::{
            PayloadChecksumKind, PercentEncodingMode, SigningSettings, UriPathNormalizationMode,
        };
        let mut s = SigningSettings::default();
        s.percent_encoding_mode = PercentEncodingMode::Single;
        s.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
        s.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
        s
    }

    /// Signs a header-authenticated request. `headers` are signed as given; the result is
    /// the headers to add (`authorization`, `x-amz-date`, `x-amz-content-sha256`) and the
    /// signature (the seed for aws-chunked bodies).
    pub fn sign(
        &self,
        method: &str,
        url: &str,
        headers: &[(String, String)],
        payload_hash: &str,
    ) -> (Vec<(String, String)>, String) {
        use aws_sigv4::http_request::{sign, SignableBody, SignableRequest};
        let identity = Credentials::new(
            &self.access_key,
            &self.secret_key,
            None,
            None,
            "strata-tests",
        )
        .into();
        let params = aws_sigv4::sign::v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name("s3")
            .time(self.time)
            .settings(Self::settings())
            .build()
            .expect("signing params")
            .into();
        let request = SignableRequest::new(
            method,
            url,
            headers.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            SignableBody::Precomputed(payload_hash.to_string()),
        )
        .expect("signable request");
        let (instructions, signature) = sign(request, &params).expect("sign").into_parts();
        let out = instructions
            .headers()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        (out, signature)
    }

    /// A presigned URL for `method url`, valid for an hour.
    pub fn presign(&self, method: &str, url: &str) -> String {
        use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SignatureLocation};
        let identity = Credentials::new(
            &self.access_key,
            &self.secret_key,
            None,
            None,
            "strata-tests",
        )
        .into();
        let mut settings = Self::settings();
        settings.signature_location = SignatureLocation::QueryParams;
        settings.expires_in = Some(Duration::from_secs(3600));
        settings.payload_checksum_kind = aws_sigv4::http_request::PayloadChecksumKind::NoHeader;
        let params = aws_sigv4::sign::v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name("s3")
            .time(self.time)
            .settings(settings)
            .build()
            .expect("signing params")
            .into();
        let request = SignableRequest::new(
            method,
            url,
            std::iter::empty(),
            SignableBody::UnsignedPayload,
        )
        .expect("signable request");
        let (instructions, _) = sign(request, &params).expect("sign").into_parts();
        let mut presigned = url.to_string();
        for (i, (name, value)) in instructions.params().iter().enumerate() {
            let sep = if i == 0 && !url.contains('?') {
                '?'
            } else {
                '&'
            };
            let value =
                percent_encoding::utf8_percent_encode(value, percent_encoding::NON_ALPHANUMERIC);
            presigned.push_str(&format!("{sep}{name}={value}"));
        }
        presigned
    }

    /// Encodes `data` as an aws-chunked body (`STREAMING-AWS4-HMAC-SHA256-PAYLOAD`) with
    /// chunk signatures chained from `seed_signature`.
    pub fn aws_chunked_body(
        &self,
        data: &[u8],
        chunk_size: usize,
        seed_signature: &str,
    ) -> Vec<u8> {
        let (mut out, _) = self.signed_chunks(data, chunk_size, seed_signature);
        out.extend_from_slice(b"\r\n");
        out
    }

    /// Encodes `data` as `STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER`: signed chunks, then the
    /// trailer header `name: value` and its `x-amz-trailer-signature`.
    pub fn aws_chunked_body_with_trailer(
        &self,
        data: &[u8],
        chunk_size: usize,
        seed_signature: &str,
        name: &str,
        value: &str,
    ) -> Vec<u8> {
        let (mut out, last) = self.signed_chunks(data, chunk_size, seed_signature);
        let canonical = format!("{name}:{value}\n");
        let sig = self.streaming_signature(
            "AWS4-HMAC-SHA256-TRAILER",
            &last,
            &sha256_hex(canonical.as_bytes()),
        );
        out.extend_from_slice(format!("{name}:{value}\r\n").as_bytes());
        out.extend_from_slice(format!("x-amz-trailer-signature:{sig}\r\n\r\n").as_bytes());
        out
    }

    /// Signed chunks including the final zero-length chunk's header line (without the blank
    /// line that ends the body); returns the body and the last chunk signature.
    fn signed_chunks(
        &self,
        data: &[u8],
        chunk_size: usize,
        seed_signature: &str,
    ) -> (Vec<u8>, String) {
        let empty_hash = sha256_hex(b"");
        let mut out = Vec::with_capacity(data.len() + 256);
        let mut previous = seed_signature.to_string();
        let mut chunks: Vec<&[u8]> = data.chunks(chunk_size.max(1)).collect();
        chunks.push(&[]);
        for chunk in chunks {
            let sig = self.streaming_signature(
                "AWS4-HMAC-SHA256-PAYLOAD",
                &previous,
                &format!("{empty_hash}\n{}", sha256_hex(chunk)),
            );
            out.extend_from_slice(
                format!("{:x};chunk-signature={sig}\r\n", chunk.len()).as_bytes(),
            );
            if !chunk.is_empty() {
                out.extend_from_slice(chunk);
                out.extend_from_slice(b"\r\n");
            }
            previous = sig;
        }
        (out, previous)
    }

    /// Signature of one aws-chunked element (chunk or trailer), chained on `previous`.
    fn streaming_signature(&self, algorithm: &str, previous: &str, hashed_payload: &str) -> String {
        let timestamp = time::OffsetDateTime::from(self.time);
        let date = format!(
            "{:04}{:02}{:02}",
            timestamp.year(),
            u8::from(timestamp.month()),
            timestamp.day()
        );
        let amz_date = format!(
            "{date}T{:02}{:02}{:02}Z",
            timestamp.hour(),
            timestamp.minute(),
            timestamp.second()
        );
        let scope = format!("{date}/{}/s3/aws4_request", self.region);
        let string_to_sign =
            format!("{algorithm}\n{amz_date}\n{scope}\n{previous}\n{hashed_payload}");
        let key = aws_sigv4::sign::v4::generate_signing_key(
            &self.secret_key,
            self.time,
            &self.region,
            "s3",
        );
        aws_sigv4::sign::v4::calculate_signature(key, string_to_sign.as_bytes())
    }
}

/// Encodes `data` as an unsigned aws-chunked body (`STREAMING-UNSIGNED-PAYLOAD-TRAILER`)
/// with an optional trailer header.
pub fn aws_chunked_unsigned(
    data: &[u8],
    chunk_size: usize,
    trailer: Option<(&str, &str)>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 256);
    for chunk in data.chunks(chunk_size.max(1)) {
        out.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        out.extend_from_slice(chunk);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n");
    if let Some((name, value)) = trailer {
        out.extend_from_slice(format!("{name}:{value}\r\n").as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// Sends a request as-is (no signing) and reads the whole answer.
pub async fn raw_send(
    method: &str,
    url: &str,
    headers: &[(String, String)],
    body: Vec<u8>,
) -> RawResponse {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .expect("reqwest client");
    let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
    let mut req = client.request(method, url);
    for (k, v) in headers {
        req = req.header(k.as_str(), v.as_str());
    }
    let resp = req
        .body(body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("raw request to {url} failed: {e:?}"));
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp
        .bytes()
        .await
        .unwrap_or_else(|e| panic!("reading raw response body from {url}: {e:?}"))
        .to_vec();
    RawResponse {
        status,
        headers,
        body,
    }
}

/// Signs (with the hex SHA-256 of `body` as payload hash) and sends.
pub async fn signed_send(
    signer: &Signer,
    method: &str,
    url: &str,
    headers: &[(String, String)],
    body: Vec<u8>,
) -> RawResponse {
    let hash = sha256_hex(&body);
    signed_send_with_hash(signer, method, url, headers, body, &hash).await
}

/// Signs with an explicit `x-amz-content-sha256` value and sends `body`.
pub async fn signed_send_with_hash(
    signer: &Signer,
    method: &str,
    url: &str,
    headers: &[(String, String)],
    body: Vec<u8>,
    payload_hash: &str,
) -> RawResponse {
    let (auth, _) = signer.sign(method, url, headers, payload_hash);
    let mut all = headers.to_vec();
    all.extend(auth);
    raw_send(method, url, &all, body).await
}

/// `(name, value)` pairs as owned header list.
pub fn hdrs(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}
