//! Signed S3 requests with reqwest, timed from signing (a client pays it too) to the last
//! byte of the response body.

use std::time::{Duration, Instant};

use bytes::Bytes;
use sha2::Digest;

use super::sigv4::{sign, EMPTY_SHA256};

/// A payload and its SHA-256, hashed once: the timed requests pay signing, not hashing.
pub struct Payload {
    pub body: Bytes,
    sha256: String,
}

impl Payload {
    pub fn new(body: impl Into<Bytes>) -> Self {
        let body = body.into();
        let sha256 = hex::encode(sha2::Sha256::digest(&body));
        Payload { body, sha256 }
    }

    pub fn empty() -> Self {
        Payload {
            body: Bytes::new(),
            sha256: EMPTY_SHA256.to_string(),
        }
    }
}

/// When a request ran: from signing to the last byte of the body.
#[derive(Clone, Copy)]
pub struct Span {
    pub start: Instant,
    pub end: Instant,
}

impl Span {
    pub fn elapsed(&self) -> Duration {
        self.end - self.start
    }

    pub fn ms(&self) -> f64 {
        self.elapsed().as_secs_f64() * 1e3
    }
}

/// Sends one signed request and reads its body whole; panics unless it succeeds. Returns the
/// body and when the request ran.
pub async fn send(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    payload: &Payload,
    headers: &[(&str, String)],
) -> (Bytes, Span) {
    let start = Instant::now();
    let mut request = client.request(method.clone(), url);
    for (name, value) in sign(method.as_str(), url, &payload.sha256) {
        request = request.header(name, value);
    }
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let response = request
        .body(payload.body.clone())
        .send()
        .await
        .unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    let status = response.status();
    let body = response
        .bytes()
        .await
        .unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    let span = Span {
        start,
        end: Instant::now(),
    };
    assert!(
        status.is_success(),
        "{method} {url}: {status} {}",
        String::from_utf8_lossy(&body)
    );
    (body, span)
}

/// Sends one signed GET with an empty body, as `send` does.
pub async fn get(client: &reqwest::Client, url: &str) -> (Bytes, Span) {
    send(client, reqwest::Method::GET, url, &Payload::empty(), &[]).await
}

/// Text of the first `<tag>...</tag>` of a document.
pub fn element<'a>(xml: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let start = xml.find(&open)? + open.len();
    let end = xml[start..].find(&format!("</{tag}>"))? + start;
    Some(&xml[start..end])
}
