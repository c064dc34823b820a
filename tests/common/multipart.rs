//! Multipart helpers: checksum values as S3 reports them, shard-file counts across drives,
//! XML lists, copy-source encoding and a request that sends only its head.

use std::path::PathBuf;
use std::time::Duration;

use base64::Engine as _;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::drives::shard_files;
use super::payload::quoted_md5;
use super::raw::{RawResponse, Signer, UNSIGNED_PAYLOAD};
use super::sdk::ok;
use aws_sdk_s3::Client;

/// A checksum algorithm by its S3 name (`CRC32`, `CRC32C`, `CRC64NVME`, `SHA1`, `SHA256`):
/// the raw (binary) checksum of `data`.
pub fn checksum_raw(algorithm: &str, data: &[u8]) -> Vec<u8> {
    use crc_fast::CrcAlgorithm;
    use sha1::Digest as _;
    match algorithm {
        "CRC32" => (crc_fast::checksum(CrcAlgorithm::Crc32IsoHdlc, data) as u32)
            .to_be_bytes()
            .to_vec(),
        "CRC32C" => (crc_fast::checksum(CrcAlgorithm::Crc32Iscsi, data) as u32)
            .to_be_bytes()
            .to_vec(),
        "CRC64NVME" => crc_fast::checksum(CrcAlgorithm::Crc64Nvme, data)
            .to_be_bytes()
            .to_vec(),
        "SHA1" => sha1::Sha1::digest(data).to_vec(),
        "SHA256" => sha2::Sha256::digest(data).to_vec(),
        other => panic!("unknown checksum algorithm {other}"),
    }
}

pub fn b64(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// The base64 value S3 reports for `algorithm` over `data` (a part, or a FULL_OBJECT
/// checksum of the whole body).
pub fn checksum_b64(algorithm: &str, data: &[u8]) -> String {
    b64(&checksum_raw(algorithm, data))
}

/// S3's COMPOSITE multipart checksum: base64(checksum(raw part checksums concatenated)) + "-N".
pub fn composite_checksum(algorithm: &str, parts: &[&[u8]]) -> String {
    let mut concat = Vec::new();
    for p in parts {
        concat.extend_from_slice(&checksum_raw(algorithm, p));
    }
    format!("{}-{}", checksum_b64(algorithm, &concat), parts.len())
}

/// Every shard file (`part.*`) under the data folders of all `drives`.
pub fn count_part_files(drives: &[PathBuf]) -> usize {
    drives.iter().map(|d| shard_files(d).len()).sum()
}

/// Polls `count_part_files` until it equals `want` or `timeout` passes; returns the last count.
pub async fn wait_for_part_files(drives: &[PathBuf], want: usize, timeout: Duration) -> usize {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let n = count_part_files(drives);
        if n == want || std::time::Instant::now() >= deadline {
            return n;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Texts of every `<tag>...</tag>` element, in document order.
pub fn xml_elements(xml: &str, tag: &str) -> Vec<String> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(start) = rest.find(&open) {
        let after = &rest[start + open.len()..];
        let Some(end) = after.find(&close) else { break };
        out.push(after[..end].to_string());
        rest = &after[end + close.len()..];
    }
    out
}

/// Characters S3 clients leave unescaped in a URL-encoded key (RFC 3986 unreserved plus `/`).
const KEY_ESCAPE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~')
    .remove(b'/');

const QUERY_ESCAPE: &AsciiSet = &KEY_ESCAPE.add(b'/');

/// URL-encodes a key for a path or `x-amz-copy-source`.
pub fn url_encode_key(key: &str) -> String {
    utf8_percent_encode(key, KEY_ESCAPE).to_string()
}

/// URL-encodes a query parameter value (also `/`).
pub fn url_encode_query(value: &str) -> String {
    utf8_percent_encode(value, QUERY_ESCAPE).to_string()
}

/// Sends a signed request (payload `UNSIGNED-PAYLOAD`) whose head announces
/// `content_length` body bytes but never sends any of them, then reads the answer the server
/// gives on the head alone. `addr` is `HOST:PORT`, `path_and_query` starts with `/`.
/// Panics if no complete answer arrives within `timeout`.
pub async fn send_head_only(
    addr: &str,
    method: &str,
    path_and_query: &str,
    extra_headers: &[(String, String)],
    content_length: u64,
    timeout: Duration,
) -> RawResponse {
    let url = format!("http://{addr}{path_and_query}");
    let signer = Signer::test();
    let (auth, _) = signer.sign(method, &url, extra_headers, UNSIGNED_PAYLOAD);
    let mut head = format!("{method} {path_and_query} HTTP/1.1\r\nhost: {addr}\r\n");
    for (k, v) in extra_headers.iter().chain(auth.iter()) {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!("content-length: {content_length}\r\n\r\n"));

    let work = async {
        let mut stream = tokio::net::TcpStream::connect(addr)
            .await
            .unwrap_or_else(|e| panic!("connect {addr}: {e}"));
        stream
            .write_all(head.as_bytes())
            .await
            .expect("write request head");
        let mut buf = Vec::new();
        let mut chunk = [0u8; 8192];
        // Head of the answer.
        let head_end = loop {
            if let Some(pos) = find(&buf, b"\r\n\r\n") {
                break pos + 4;
            }
            let n = stream.read(&mut chunk).await.expect("read answer");
            assert!(
                n > 0,
                "connection closed before a full answer head; got {:?}",
                String::from_utf8_lossy(&buf)
            );
            buf.extend_from_slice(&chunk[..n]);
        };
        let head_text = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let mut lines = head_text.split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        let status: u16 = status_line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
        let mut headers = reqwest::header::HeaderMap::new();
        for line in lines.filter(|l| !l.is_empty()) {
            if let Some((k, v)) = line.split_once(':') {
                if let (Ok(k), Ok(v)) = (
                    reqwest::header::HeaderName::from_bytes(k.trim().as_bytes()),
                    reqwest::header::HeaderValue::from_str(v.trim()),
                ) {
                    headers.append(k, v);
                }
            }
        }
        let mut body = buf[head_end..].to_vec();
        let chunked = headers
            .get("transfer-encoding")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
        if let Some(len) = headers
            .get("content-length")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok())
        {
            while body.len() < len {
                let n = stream.read(&mut chunk).await.expect("read answer body");
                if n == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..n]);
            }
            body.truncate(len);
        } else if chunked {
            while find(&body, b"\r\n0\r\n\r\n").is_none() && !body.starts_with(b"0\r\n\r\n") {
                let n = stream.read(&mut chunk).await.expect("read answer body");
                if n == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..n]);
            }
            body = dechunk(&body);
        }
        RawResponse {
            status,
            headers,
            body,
        }
    };
    match tokio::time::timeout(timeout, work).await {
        Ok(r) => r,
        Err(_) => panic!(
            "{method} {path_and_query} with Content-Length {content_length} and no body: no \
             answer within {timeout:?} (the server waited for the body instead of refusing the \
             head)"
        ),
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(pos) = find(data, b"\r\n") {
        let size_text = String::from_utf8_lossy(&data[..pos]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("0").trim(), 16)
            .unwrap_or(0);
        data = &data[pos + 2..];
        if size == 0 || data.len() < size {
            break;
        }
        out.extend_from_slice(&data[..size]);
        data = &data[(size + 2).min(data.len())..];
    }
    out
}

/// Deterministic pseudo-random numbers for test choices (SplitMix64).
pub struct TestRng(u64);

impl TestRng {
    pub fn new(seed: u64) -> TestRng {
        TestRng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo) as u64) as usize
    }
}

/// Uploads one part; asserts its ETag is the part's MD5 and returns it.
pub async fn upload_part(
    client: &Client,
    bucket: &str,
    key: &str,
    upload_id: &str,
    n: i32,
    data: &[u8],
) -> String {
    let out = ok(
        client
            .upload_part()
            .bucket(bucket)
            .key(key)
            .upload_id(upload_id)
            .part_number(n)
            .body(data.to_vec().into())
            .send()
            .await,
        &format!("UploadPart {n} of {key}"),
    );
    let etag = out.e_tag().expect("part ETag").to_string();
    assert_eq!(etag, quoted_md5(data), "part {n} ETag is the part's MD5");
    etag
}
