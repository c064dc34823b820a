//! A tier on a remote S3-compatible endpoint (AWS S3, another Strata, MinIO): one bucket,
//! path-style, every object under a prefix, requests signed with SigV4.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;
use async_trait::async_trait;
use futures::StreamExt;
use percent_encoding::{utf8_percent_encode, AsciiSet};
use reqwest::header::{CONTENT_LENGTH, RANGE};
use reqwest::{Method, RequestBuilder, Response, StatusCode};
use serde::Deserialize;

use super::body::{exact_size, idle_limited, BodyFault};
use super::config::RemoteConfig;
use crate::body::ByteStream;
use crate::object::{Tier, TierError};
use crate::signing::{Payload, Signer};

/// A remote that does not accept a connection within this is unavailable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest wait for a whole small exchange (DELETE, one listing page, an error body).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Longest pause in a streamed body (or before the answer to it): transfers of any length
/// proceed while bytes move, a stalled peer is given up on.
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Keys asked for per listing page.
const LIST_PAGE: usize = 1000;
/// Largest listing page or error document read into memory.
const MAX_DOCUMENT: usize = 16 << 20;

/// Bytes of a key sent as they are in a path: AWS's unreserved set and `/`.
const PATH_CHARS: &AsciiSet = crate::signing::URI_PATH;
/// Bytes of a query value sent as they are: AWS's unreserved set.
const QUERY_CHARS: &AsciiSet = crate::signing::URI_UNRESERVED;

/// A tier in a bucket of a remote S3-compatible endpoint.
pub struct RemoteS3Tier {
    name: String,
    /// `scheme://host[:port]`, no trailing slash.
    endpoint: String,
    bucket: String,
    prefix: String,
    signer: Signer,
    client: reqwest::Client,
    /// Objects larger than this go up in parts of this size.
    part_size: u64,
}

impl RemoteS3Tier {
    /// Prepares the client; nothing is sent until the first call.
    pub fn new(name: &str, config: &RemoteConfig) -> anyhow::Result<Self> {
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            // A signed request cannot follow a redirect (and a streamed body cannot be sent
            // twice); a redirect, e.g. to another AWS region, is reported instead.
            .redirect(reqwest::redirect::Policy::none())
            // Certificates are only needed, and only loaded, for https endpoints.
            .tls_built_in_native_certs(config.endpoint.starts_with("https:"))
            .build()
            .with_context(|| format!("tier {name}: building the HTTP client"))?;
        Ok(Self {
            name: name.to_string(),
            endpoint: config.endpoint.trim_end_matches('/').to_string(),
            bucket: config.bucket.clone(),
            prefix: config.prefix.clone(),
            part_size: config.part_size,
            signer: Signer::new(&config.access_key, &config.secret_key, &config.region),
            client,
        })
    }

    /// The URL of `object`: path-style, under the prefix.
    fn object_url(&self, object: &str) -> Result<String, TierError> {
        let key = format!("{}{object}", self.prefix);
        // URL parsing resolves `.` and `..` segments, which would change the key.
        if object.is_empty() || key.split('/').any(|s| s == "." || s == "..") {
            return Err(self.failed(format!("object name {object:?} cannot be a remote key")));
        }
        Ok(format!(
            "{}/{}/{}",
            self.endpoint,
            self.bucket,
            utf8_percent_encode(&key, PATH_CHARS)
        ))
    }

    /// The URL of one ListObjectsV2 page under the prefix.
    fn list_url(&self, token: Option<&str>) -> String {
        let mut url = format!(
            "{}/{}?list-type=2&max-keys={LIST_PAGE}",
            self.endpoint, self.bucket
        );
        if !self.prefix.is_empty() {
            url.push_str("&prefix=");
            url.extend(utf8_percent_encode(&self.prefix, QUERY_CHARS));
        }
        if let Some(token) = token {
            url.push_str("&continuation-token=");
            url.extend(utf8_percent_encode(token, QUERY_CHARS));
        }
        url
    }

    /// A request to `url` carrying SigV4 headers (`x-amz-date`, `x-amz-content-sha256`,
    /// `authorization`); the host and path are signed as reqwest sends them.
    fn signed(
        &self,
        method: Method,
        url: &str,
        payload: Payload<'_>,
    ) -> Result<RequestBuilder, TierError> {
        let headers = (self.signer)
            .headers(method.as_str(), url, payload, SystemTime::now())
            .map_err(|e| self.failed(e))?;
        let mut request = self.client.request(method, url);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        Ok(request)
    }

    fn failed(&self, reason: String) -> TierError {
        TierError::Failed {
            tier: self.name.clone(),
            reason,
        }
    }

    /// A request that got no answer: the remote is unreachable (refused, reset, timed out).
    fn unreachable(&self, err: reqwest::Error) -> TierError {
        TierError::Unavailable {
            tier: self.name.clone(),
            reason: error_chain(&err),
        }
    }

    /// The error an answer that is not a success stands for.
    async fn refused(&self, response: Response, object: Option<&str>) -> TierError {
        let status = response.status();
        let body = tokio::time::timeout(REQUEST_TIMEOUT, read_capped(response, MAX_DOCUMENT))
            .await
            .ok()
            .and_then(Result::ok)
            .flatten()
            .unwrap_or_default();
        let doc: ErrorDoc =
            crate::untrusted_xml::from_str(&String::from_utf8_lossy(&body)).unwrap_or_default();
        answer_error(&self.name, object, status, &doc)
    }
}

#[async_trait]
impl Tier for RemoteS3Tier {
    fn name(&self) -> &str {
        &self.name
    }

    async fn put(&self, object: &str, body: ByteStream, size: u64) -> Result<(), TierError> {
        let url = self.object_url(object)?;
        // A body of the wrong length is cut off mid-request, so the remote stores nothing.
        let (mut body, fault) = exact_size(body, size);
        if size > self.part_size {
            return self.put_in_parts(&url, body, size, &fault).await;
        }
        if size == 0 {
            // With `Content-Length: 0` the body is never read: check here that it is empty.
            while let Some(chunk) = body.next().await {
                chunk.map_err(|e| self.failed(e.to_string()))?;
            }
            body = Box::pin(futures::stream::empty());
        }
        self.upload(&url, body, size, &fault).await.map(drop)
    }

    async fn get(&self, object: &str, start: u64, end: u64) -> Result<ByteStream, TierError> {
        let url = self.object_url(object)?;
        if start > end {
            return Err(self.failed(format!("{object}: bad span {start}..{end}")));
        }
        // An HTTP range cannot be empty, and nothing needs fetching.
        if start == end {
            return Ok(Box::pin(futures::stream::empty()));
        }
        let request = self
            .signed(Method::GET, &url, Payload::Bytes(&[]))?
            .header(RANGE, format!("bytes={start}-{}", end - 1));
        let response = match tokio::time::timeout(IDLE_TIMEOUT, request.send()).await {
            Ok(Ok(response)) => response,
            Ok(Err(e)) => return Err(self.unreachable(e)),
            Err(_) => {
                return Err(TierError::Unavailable {
                    tier: self.name.clone(),
                    reason: format!("GET {object}: no answer within {IDLE_TIMEOUT:?}"),
                })
            }
        };
        let status = response.status();
        if !status.is_success() {
            return Err(self.refused(response, Some(object)).await);
        }
        // 200 is the whole object: right only if the span is all of it.
        let length = end - start;
        let whole = status == StatusCode::OK && start == 0;
        if !(status == StatusCode::PARTIAL_CONTENT || whole)
            || response.content_length().is_some_and(|l| l != length)
        {
            return Err(self.failed(format!(
                "GET {object} bytes {start}..{end}: answered {status} with {:?} bytes",
                response.content_length()
            )));
        }
        let stream: ByteStream = Box::pin(
            response
                .bytes_stream()
                .map(|chunk| chunk.map_err(|e| io::Error::other(error_chain(&e)))),
        );
        Ok(exact_size(idle_limited(stream, IDLE_TIMEOUT), length).0)
    }

    async fn delete(&self, object: &str) -> Result<(), TierError> {
        let url = self.object_url(object)?;
        let request = self
            .signed(Method::DELETE, &url, Payload::Bytes(&[]))?
            .timeout(REQUEST_TIMEOUT);
        let response = request.send().await.map_err(|e| self.unreachable(e))?;
        if response.status().is_success() {
            return Ok(());
        }
        match self.refused(response, Some(object)).await {
            // Some S3 implementations answer 404 for a missing key; it is gone either way.
            TierError::Missing { .. } => Ok(()),
            other => Err(other),
        }
    }

    async fn list(&self) -> Result<Vec<String>, TierError> {
        let mut names = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let url = self.list_url(token.as_deref());
            let request = self
                .signed(Method::GET, &url, Payload::Bytes(&[]))?
                .timeout(REQUEST_TIMEOUT);
            let response = request.send().await.map_err(|e| self.unreachable(e))?;
            if !response.status().is_success() {
                return Err(self.refused(response, None).await);
            }
            let body = read_capped(response, MAX_DOCUMENT)
                .await
                .map_err(|e| self.unreachable(e))?
                .ok_or_else(|| self.failed("listing page too large".into()))?;
            let page: ListDoc = crate::untrusted_xml::from_str(&String::from_utf8_lossy(&body))
                .map_err(|e| self.failed(format!("malformed listing: {e}")))?;
            names.extend(
                page.contents
                    .into_iter()
                    .filter_map(|o| o.key.strip_prefix(&self.prefix).map(str::to_string)),
            );
            match page.next_continuation_token {
                Some(next) if page.is_truncated && !next.is_empty() => token = Some(next),
                _ if page.is_truncated => {
                    return Err(self.failed("truncated listing without a continuation token".into()))
                }
                _ => return Ok(names),
            }
        }
    }
}

impl RemoteS3Tier {
    /// PUTs `size` bytes of `body` to `url` (an object or one part of an upload) and returns
    /// the answer; `fault` tells a body of the wrong length from a lost connection.
    async fn upload(
        &self,
        url: &str,
        body: ByteStream,
        size: u64,
        fault: &BodyFault,
    ) -> Result<Response, TierError> {
        let request = self
            .signed(Method::PUT, url, Payload::Unsigned)?
            .header(CONTENT_LENGTH, size);
        let response = match send_streaming(request, body).await {
            Ok(Ok(response)) => response,
            Ok(Err(_)) | Err(Stalled) if fault.get().is_some() => {
                return Err(self.failed(fault.get().unwrap_or_default().to_string()))
            }
            Ok(Err(e)) => return Err(self.unreachable(e)),
            Err(Stalled) => {
                return Err(TierError::Unavailable {
                    tier: self.name.clone(),
                    reason: format!("PUT {url}: nothing moved for {IDLE_TIMEOUT:?}"),
                })
            }
        };
        if !response.status().is_success() {
            return Err(self.refused(response, None).await);
        }
        Ok(response)
    }

    /// Uploads a large object as a multipart upload, one part after the other, each part
    /// streamed from the body as it comes; an upload that fails is aborted.
    async fn put_in_parts(
        &self,
        url: &str,
        body: ByteStream,
        size: u64,
        fault: &BodyFault,
    ) -> Result<(), TierError> {
        let upload_id = self.create_upload(url).await?;
        let upload = format!("uploadId={}", utf8_percent_encode(&upload_id, QUERY_CHARS));
        let mut parts = Vec::new();
        let source = Arc::new(tokio::sync::Mutex::new(PartSource {
            body,
            leftover: None,
        }));
        let mut sent = Ok(());
        for (number, offset) in (1..).zip((0..size).step_by(self.part_size as usize)) {
            let length = self.part_size.min(size - offset);
            let part = part_stream(source.clone(), length);
            let part_url = format!("{url}?partNumber={number}&{upload}");
            match self.upload(&part_url, part, length, fault).await {
                Ok(response) => {
                    let etag = response
                        .headers()
                        .get(reqwest::header::ETAG)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_string();
                    parts.push((number, etag));
                }
                Err(e) => {
                    sent = Err(e);
                    break;
                }
            }
        }
        if sent.is_ok() {
            let mut rest = source.lock().await;
            if rest.leftover.is_some() || rest.body.next().await.is_some() {
                sent = Err(self.failed(format!("the body is longer than {size} bytes")));
            }
        }
        if sent.is_ok() {
            sent = self.complete_upload(url, &upload, &parts).await;
        }
        if sent.is_err() {
            self.abort_upload(url, &upload).await;
        }
        sent
    }

    async fn create_upload(&self, url: &str) -> Result<String, TierError> {
        let request = self
            .signed(Method::POST, &format!("{url}?uploads"), Payload::Bytes(&[]))?
            .timeout(REQUEST_TIMEOUT);
        let response = request.send().await.map_err(|e| self.unreachable(e))?;
        if !response.status().is_success() {
            return Err(self.refused(response, None).await);
        }
        let body = read_capped(response, MAX_DOCUMENT)
            .await
            .map_err(|e| self.unreachable(e))?
            .unwrap_or_default();
        let doc: InitiateDoc = crate::untrusted_xml::from_str(&String::from_utf8_lossy(&body))
            .map_err(|e| self.failed(format!("malformed CreateMultipartUpload answer: {e}")))?;
        Ok(doc.upload_id)
    }

    async fn complete_upload(
        &self,
        url: &str,
        upload: &str,
        parts: &[(u32, String)],
    ) -> Result<(), TierError> {
        let mut doc = String::from("<CompleteMultipartUpload>");
        for (number, etag) in parts {
            let etag = quick_xml::escape::escape(etag.as_str());
            doc.push_str(&format!(
                "<Part><PartNumber>{number}</PartNumber><ETag>{etag}</ETag></Part>"
            ));
        }
        doc.push_str("</CompleteMultipartUpload>");
        let request = self
            .signed(
                Method::POST,
                &format!("{url}?{upload}"),
                Payload::Bytes(doc.as_bytes()),
            )?
            // Completing a large upload may take the remote a while; it keeps answering.
            .timeout(REQUEST_TIMEOUT * 5)
            .body(doc);
        let response = request.send().await.map_err(|e| self.unreachable(e))?;
        if !response.status().is_success() {
            return Err(self.refused(response, None).await);
        }
        // S3 may answer 200 and still fail the completion in the body.
        let body = read_capped(response, MAX_DOCUMENT)
            .await
            .map_err(|e| self.unreachable(e))?
            .unwrap_or_default();
        let text = String::from_utf8_lossy(&body);
        if text.contains("<Error>") {
            let error: ErrorDoc = crate::untrusted_xml::from_str(&text).unwrap_or_default();
            return Err(answer_error(
                &self.name,
                None,
                StatusCode::INTERNAL_SERVER_ERROR,
                &error,
            ));
        }
        Ok(())
    }

    /// Best effort: an upload left behind is the remote's to expire.
    async fn abort_upload(&self, url: &str, upload: &str) {
        let aborted = match self.signed(
            Method::DELETE,
            &format!("{url}?{upload}"),
            Payload::Bytes(&[]),
        ) {
            Ok(request) => request.timeout(REQUEST_TIMEOUT).send().await.ok(),
            Err(_) => None,
        };
        if !aborted.is_some_and(|r| r.status().is_success()) {
            tracing::warn!(tier = %self.name, url, "could not abort a multipart upload to the tier");
        }
    }
}

/// The body of a multipart upload, handed out part by part.
struct PartSource {
    body: ByteStream,
    /// What the last chunk held past the end of the part it was read for.
    leftover: Option<bytes::Bytes>,
}

/// The next `length` bytes of `source`, as one part's body.
fn part_stream(source: Arc<tokio::sync::Mutex<PartSource>>, length: u64) -> ByteStream {
    Box::pin(futures::stream::unfold(
        (source, length),
        |(source, left)| async move {
            if left == 0 {
                return None;
            }
            let next = {
                let mut held = source.lock().await;
                let chunk = match held.leftover.take() {
                    Some(chunk) => Some(Ok(chunk)),
                    None => held.body.next().await,
                };
                match chunk {
                    Some(Ok(mut chunk)) => {
                        if chunk.len() as u64 > left {
                            held.leftover = Some(chunk.split_off(left as usize));
                        }
                        Some(Ok(chunk))
                    }
                    other => other,
                }
            };
            match next? {
                Ok(chunk) => {
                    let left = left - chunk.len() as u64;
                    Some((Ok(chunk), (source, left)))
                }
                Err(e) => Some((Err(e), (source, 0))),
            }
        },
    ))
}

/// An upload that made no progress for `IDLE_TIMEOUT` and got no answer.
struct Stalled;

/// Sends `request` with `body` streamed as its body, giving up once the body has not moved
/// and no answer has come for `IDLE_TIMEOUT` (a total timeout would cut large uploads).
async fn send_streaming(
    request: RequestBuilder,
    body: ByteStream,
) -> Result<Result<Response, reqwest::Error>, Stalled> {
    let started = Instant::now();
    let moved_ms = Arc::new(AtomicU64::new(0));
    let mark = moved_ms.clone();
    let body = body.inspect(move |_| {
        mark.store(started.elapsed().as_millis() as u64, Ordering::Relaxed);
    });
    let send = request.body(reqwest::Body::wrap_stream(body)).send();
    tokio::pin!(send);
    let mut check = tokio::time::interval(IDLE_TIMEOUT / 8);
    loop {
        tokio::select! {
            sent = &mut send => return Ok(sent),
            _ = check.tick() => {
                let moved = Duration::from_millis(moved_ms.load(Ordering::Relaxed));
                if started.elapsed().saturating_sub(moved) >= IDLE_TIMEOUT {
                    return Err(Stalled);
                }
            }
        }
    }
}

/// The body of `response`, or `None` when it is longer than `cap` bytes.
async fn read_capped(
    mut response: Response,
    cap: usize,
) -> Result<Option<Vec<u8>>, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > cap {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(body))
}

/// An error and its causes on one line: reqwest's own message rarely says what failed.
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        out.push_str(": ");
        out.push_str(&cause.to_string());
        source = cause.source();
    }
    out
}

/// An S3 `<Error>` document; both fields may be missing (HEAD, proxies, empty bodies).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ErrorDoc {
    code: Option<String>,
    message: Option<String>,
}

/// What a non-success answer means to a tier's caller: busy or broken remotes are
/// unavailable (try later), a missing key of a read is missing, anything else (refused
/// credentials, a missing bucket) is a failure that retrying will not fix.
fn answer_error(tier: &str, object: Option<&str>, status: StatusCode, doc: &ErrorDoc) -> TierError {
    let code = doc.code.as_deref().unwrap_or("");
    let reason = match (&doc.code, &doc.message) {
        (Some(code), Some(message)) => format!("HTTP {status} {code}: {message}"),
        (Some(code), None) => format!("HTTP {status} {code}"),
        _ => format!("HTTP {status}"),
    };
    let tier = tier.to_string();
    match object {
        _ if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS => {
            TierError::Unavailable { tier, reason }
        }
        // A missing bucket is a configuration problem, not a missing object.
        Some(object) if status == StatusCode::NOT_FOUND && code != "NoSuchBucket" => {
            TierError::Missing {
                tier,
                object: object.to_string(),
            }
        }
        _ => TierError::Failed { tier, reason },
    }
}

/// The answer to CreateMultipartUpload: only what the tier needs.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InitiateDoc {
    upload_id: String,
}

/// A ListObjectsV2 page: only what the tier needs.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ListDoc {
    #[serde(default)]
    contents: Vec<ListedObject>,
    #[serde(default)]
    is_truncated: bool,
    next_continuation_token: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ListedObject {
    key: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tier(prefix: &str) -> RemoteS3Tier {
        let config = RemoteConfig {
            endpoint: "http://127.0.0.1:9100".into(),
            bucket: "archive".into(),
            prefix: prefix.into(),
            access_key: "ak".into(),
            secret_key: "sk".into(),
            region: "us-east-1".into(),
            part_size: super::super::config::DEFAULT_PART_SIZE,
        };
        RemoteS3Tier::new("ARCHIVE", &config).unwrap()
    }

    #[test]
    fn urls_are_path_style_and_encoded_once() {
        let t = tier("strata/");
        assert_eq!(
            t.object_url("b1/0190-ab").unwrap(),
            "http://127.0.0.1:9100/archive/strata/b1/0190-ab"
        );
        assert_eq!(
            t.object_url("a b+c=~d").unwrap(),
            "http://127.0.0.1:9100/archive/strata/a%20b%2Bc%3D~d"
        );
        assert!(t.object_url("a/../b").is_err());
        assert!(t.object_url("").is_err());
        assert_eq!(
            t.list_url(Some("a/b+c==")),
            "http://127.0.0.1:9100/archive?list-type=2&max-keys=1000&prefix=strata%2F\
             &continuation-token=a%2Fb%2Bc%3D%3D"
        );
        assert_eq!(
            tier("").list_url(None),
            "http://127.0.0.1:9100/archive?list-type=2&max-keys=1000"
        );
    }

    #[test]
    fn requests_carry_sigv4_headers() {
        let t = tier("");
        let request = t
            .signed(
                Method::PUT,
                "http://127.0.0.1:9100/archive/k",
                Payload::Unsigned,
            )
            .unwrap()
            .build()
            .unwrap();
        let headers = request.headers();
        assert_eq!(headers["x-amz-content-sha256"], "UNSIGNED-PAYLOAD");
        assert!(headers.contains_key("x-amz-date"));
        let auth = headers["authorization"].to_str().unwrap();
        assert!(
            auth.starts_with("AWS4-HMAC-SHA256 Credential=ak/"),
            "{auth}"
        );
        assert!(auth.contains("/us-east-1/s3/aws4_request"), "{auth}");
        assert!(
            auth.contains("SignedHeaders=host;x-amz-content-sha256;x-amz-date"),
            "{auth}"
        );
    }

    #[test]
    fn answers_map_to_tier_errors() {
        let doc = |code: &str| ErrorDoc {
            code: Some(code.into()),
            message: Some("m".into()),
        };
        let table: [(u16, &str, Option<&str>, &str); 8] = [
            (503, "SlowDown", Some("o"), "unavailable"),
            (500, "InternalError", None, "unavailable"),
            (429, "", Some("o"), "unavailable"),
            (404, "NoSuchKey", Some("o"), "missing"),
            (404, "NoSuchBucket", Some("o"), "failed"),
            (404, "NoSuchKey", None, "failed"),
            (403, "SignatureDoesNotMatch", Some("o"), "failed"),
            (416, "InvalidRange", Some("o"), "failed"),
        ];
        for (status, code, object, want) in table {
            let status = StatusCode::from_u16(status).unwrap();
            let got = answer_error("T", object, status, &doc(code));
            let kind = match &got {
                TierError::Unavailable { .. } => "unavailable",
                TierError::Missing { .. } => "missing",
                TierError::Failed { reason, .. } => {
                    assert!(reason.contains(code), "{reason}");
                    "failed"
                }
            };
            assert_eq!(kind, want, "{status} {code}: {got}");
        }
    }

    #[test]
    fn documents_parse() {
        let error: ErrorDoc = crate::untrusted_xml::from_str(
            "<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code><Message>no</Message>\
             <Resource>/b</Resource></Error>",
        )
        .unwrap();
        assert_eq!(error.code.as_deref(), Some("AccessDenied"));
        assert_eq!(error.message.as_deref(), Some("no"));

        let page: ListDoc = crate::untrusted_xml::from_str(
            "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
             <Name>archive</Name><Prefix>p/</Prefix><KeyCount>2</KeyCount><MaxKeys>2</MaxKeys>\
             <IsTruncated>true</IsTruncated><NextContinuationToken>tok</NextContinuationToken>\
             <Contents><Key>p/a</Key><Size>1</Size></Contents>\
             <Contents><Key>p/b/c</Key><Size>2</Size></Contents></ListBucketResult>",
        )
        .unwrap();
        assert!(page.is_truncated);
        assert_eq!(page.next_continuation_token.as_deref(), Some("tok"));
        let keys: Vec<_> = page.contents.iter().map(|o| o.key.as_str()).collect();
        assert_eq!(keys, ["p/a", "p/b/c"]);

        let empty: ListDoc = crate::untrusted_xml::from_str(
            "<ListBucketResult><Name>a</Name><IsTruncated>false</IsTruncated></ListBucketResult>",
        )
        .unwrap();
        assert!(empty.contents.is_empty() && !empty.is_truncated);
    }
}
