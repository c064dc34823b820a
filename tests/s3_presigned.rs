//! Presigned URLs made by the AWS Rust SDK (`.presigned(PresigningConfig)`) and used by a plain
//! HTTP client (reqwest), as a user hands them to a browser or `curl`: GET, HEAD, PUT and
//! DELETE work; expired URLs are `403 AccessDenied` "Request has expired"; a changed key,
//! bucket, method, query parameter or signed header is `403 SignatureDoesNotMatch`.
//!
//! `s3_sigv4_raw.rs` (`presigned_get_works_and_expires`) has the first GET/PUT round trip, an
//! expired GET's code and a wrong-secret signature; this file covers the rest.

mod common;

use std::time::Duration;

use aws_sdk_s3::presigning::{PresignedRequest, PresigningConfig};
use aws_sdk_s3::Client;
use common::*;

/// A presigned URL valid for ten minutes.
fn ten_minutes() -> PresigningConfig {
    PresigningConfig::expires_in(Duration::from_secs(600)).expect("presigning config")
}

/// A presigned URL valid for one second.
fn one_second() -> PresigningConfig {
    PresigningConfig::expires_in(Duration::from_secs(1)).expect("presigning config")
}

/// Sends `method url` with no credentials, only `extra` headers and `body`, the way a plain
/// HTTP client would use a presigned URL.
async fn plain(method: &str, url: &str, extra: &[(&str, &str)], body: Vec<u8>) -> RawResponse {
    raw_send(method, url, &hdrs(extra), body).await
}

/// Uses a presigned request as given: its method, URL and the headers it was signed with.
async fn use_presigned(req: &PresignedRequest, body: Vec<u8>) -> RawResponse {
    let headers: Vec<(String, String)> = req
        .headers()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    raw_send(req.method(), req.uri(), &headers, body).await
}

/// Asserts a raw response is an S3 XML error with `status`, `code` and (if given) `message`.
#[track_caller]
fn assert_error(resp: &RawResponse, status: u16, code: &str, message: Option<&str>, what: &str) {
    assert_eq!(
        resp.status,
        status,
        "{what}: HTTP status (want {code}); body: {}",
        resp.text()
    );
    assert_eq!(
        resp.xml_element("Code").as_deref(),
        Some(code),
        "{what}: error code; body: {}",
        resp.text()
    );
    if let Some(message) = message {
        assert_eq!(
            resp.xml_element("Message").as_deref(),
            Some(message),
            "{what}: error message; body: {}",
            resp.text()
        );
    }
}

/// Replaces the first `from` in `url` (which must occur) with `to`.
#[track_caller]
fn tamper(url: &str, from: &str, to: &str) -> String {
    assert!(url.contains(from), "{from:?} not in presigned URL {url}");
    url.replacen(from, to, 1)
}

/// The value of query parameter `name` in `url`.
fn query_param(url: &str, name: &str) -> String {
    let query = url.split_once('?').map(|(_, q)| q).unwrap_or("");
    query
        .split('&')
        .find_map(|pair| {
            pair.split_once('=')
                .filter(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        })
        .unwrap_or_else(|| panic!("no {name} in presigned URL {url}"))
}

async fn assert_absent(client: &Client, bucket: &str, key: &str, what: &str) {
    assert_s3_status(
        client.head_object().bucket(bucket).key(key).send().await,
        404,
        &format!("{what}: object must not exist"),
    );
}

async fn presign_get(client: &Client, bucket: &str, key: &str, cfg: PresigningConfig) -> String {
    let req = client
        .get_object()
        .bucket(bucket)
        .key(key)
        .presigned(cfg)
        .await
        .expect("presign GetObject");
    req.uri().to_string()
}

async fn presign_head(client: &Client, bucket: &str, key: &str, cfg: PresigningConfig) -> String {
    let req = client
        .head_object()
        .bucket(bucket)
        .key(key)
        .presigned(cfg)
        .await
        .expect("presign HeadObject");
    req.uri().to_string()
}

async fn presign_put(client: &Client, bucket: &str, key: &str, cfg: PresigningConfig) -> String {
    let req = client
        .put_object()
        .bucket(bucket)
        .key(key)
        .presigned(cfg)
        .await
        .expect("presign PutObject");
    req.uri().to_string()
}

async fn presign_delete(client: &Client, bucket: &str, key: &str, cfg: PresigningConfig) -> String {
    let req = client
        .delete_object()
        .bucket(bucket)
        .key(key)
        .presigned(cfg)
        .await
        .expect("presign DeleteObject");
    req.uri().to_string()
}

// -------------------------------------------------------------------------------------------
// Each operation works.

#[tokio::test]
async fn presigned_get_head_put_and_delete_each_work_from_a_plain_http_client() {
    let (client, bucket) = new_bucket("presops").await;
    // A key that needs percent-encoding in the URL path.
    let key = "shared dir/ß+data (1).bin";
    let data = payload(2 * MIB + 17, 1);

    // PUT through a presigned URL.
    let put_url = presign_put(&client, &bucket, key, ten_minutes()).await;
    let resp = plain("PUT", &put_url, &[], data.clone()).await;
    assert_eq!(resp.status, 200, "presigned PUT: {}", resp.text());
    assert_eq!(
        resp.header("etag"),
        Some(quoted_md5(&data)),
        "presigned PUT ETag"
    );
    assert_object(&client, &bucket, key, &data).await;

    // GET: the bytes, with the object's ETag and length.
    let get_url = presign_get(&client, &bucket, key, ten_minutes()).await;
    let resp = plain("GET", &get_url, &[], Vec::new()).await;
    assert_eq!(resp.status, 200, "presigned GET: {}", resp.text());
    assert_eq!(
        resp.header("etag"),
        Some(quoted_md5(&data)),
        "presigned GET ETag"
    );
    assert_same_bytes(&resp.body, &data, "presigned GET body");

    // The same URL can be used again until it expires.
    let resp = plain("GET", &get_url, &[], Vec::new()).await;
    assert_eq!(
        resp.status,
        200,
        "presigned GET, second use: {}",
        resp.text()
    );
    assert_same_bytes(&resp.body, &data, "presigned GET body, second use");

    // HEAD: metadata, no body.
    let head_url = presign_head(&client, &bucket, key, ten_minutes()).await;
    let resp = plain("HEAD", &head_url, &[], Vec::new()).await;
    assert_eq!(resp.status, 200, "presigned HEAD");
    assert_eq!(
        resp.header("etag"),
        Some(quoted_md5(&data)),
        "presigned HEAD ETag"
    );
    assert_eq!(
        resp.header("content-length"),
        Some(data.len().to_string()),
        "presigned HEAD Content-Length"
    );
    assert!(resp.body.is_empty(), "presigned HEAD has no body");

    // DELETE: 204, and the object is gone.
    let delete_url = presign_delete(&client, &bucket, key, ten_minutes()).await;
    let resp = plain("DELETE", &delete_url, &[], Vec::new()).await;
    assert_eq!(resp.status, 204, "presigned DELETE: {}", resp.text());
    assert_absent(&client, &bucket, key, "after presigned DELETE").await;

    // The GET URL now finds nothing; the HEAD URL says 404 too.
    let resp = plain("GET", &get_url, &[], Vec::new()).await;
    assert_error(
        &resp,
        404,
        "NoSuchKey",
        None,
        "presigned GET of a deleted key",
    );
    let resp = plain("HEAD", &head_url, &[], Vec::new()).await;
    assert_eq!(resp.status, 404, "presigned HEAD of a deleted key");
}

#[tokio::test]
async fn presigned_get_serves_a_range_the_client_asks_for() {
    // Range is not signed: a downloader may fetch pieces with one presigned URL.
    let (client, bucket) = new_bucket("presrange").await;
    let data = payload(3 * MIB, 2);
    put(&client, &bucket, "big.bin", &data).await;
    let url = presign_get(&client, &bucket, "big.bin", ten_minutes()).await;
    let first = MIB - 5;
    let last = 2 * MIB + 4;
    let resp = plain(
        "GET",
        &url,
        &[("range", &format!("bytes={first}-{last}"))],
        Vec::new(),
    )
    .await;
    assert_eq!(resp.status, 206, "presigned ranged GET: {}", resp.text());
    assert_eq!(
        resp.header("content-range"),
        Some(format!("bytes {first}-{last}/{}", data.len())),
    );
    assert_same_bytes(&resp.body, &data[first..=last], "presigned ranged GET body");
}

#[tokio::test]
async fn presigned_put_with_a_signed_content_type_stores_it_and_requires_it() {
    let (client, bucket) = new_bucket("presctype").await;
    let req = client
        .put_object()
        .bucket(&bucket)
        .key("doc.json")
        .content_type("application/json")
        .presigned(ten_minutes())
        .await
        .expect("presign PutObject with Content-Type");
    assert!(
        query_param(req.uri(), "X-Amz-SignedHeaders").contains("content-type"),
        "the SDK signs Content-Type: {}",
        req.uri()
    );

    // A different Content-Type than the one signed is refused and writes nothing.
    let resp = plain(
        "PUT",
        req.uri(),
        &[("content-type", "text/html")],
        b"<script>".to_vec(),
    )
    .await;
    assert_error(
        &resp,
        403,
        "SignatureDoesNotMatch",
        None,
        "presigned PUT with another Content-Type",
    );
    assert_absent(&client, &bucket, "doc.json", "refused presigned PUT").await;

    // With the signed headers it works and the type is stored.
    let resp = use_presigned(&req, br#"{"ok":true}"#.to_vec()).await;
    assert_eq!(resp.status, 200, "presigned PUT: {}", resp.text());
    let head = ok(
        client
            .head_object()
            .bucket(&bucket)
            .key("doc.json")
            .send()
            .await,
        "HeadObject",
    );
    assert_eq!(head.content_type(), Some("application/json"));
    assert_object(&client, &bucket, "doc.json", br#"{"ok":true}"#).await;
}

#[tokio::test]
async fn presigned_get_applies_signed_response_header_overrides() {
    let (client, bucket) = new_bucket("presover").await;
    put(&client, &bucket, "report.bin", b"quarterly numbers").await;
    let req = client
        .get_object()
        .bucket(&bucket)
        .key("report.bin")
        .response_content_disposition("attachment; filename=\"report.csv\"")
        .response_content_type("text/csv")
        .response_cache_control("no-store")
        .presigned(ten_minutes())
        .await
        .expect("presign GetObject with overrides");
    let resp = plain("GET", req.uri(), &[], Vec::new()).await;
    assert_eq!(
        resp.status,
        200,
        "presigned GET with overrides: {}",
        resp.text()
    );
    assert_eq!(
        resp.header("content-disposition").as_deref(),
        Some("attachment; filename=\"report.csv\"")
    );
    assert_eq!(resp.header("content-type").as_deref(), Some("text/csv"));
    assert_eq!(resp.header("cache-control").as_deref(), Some("no-store"));
    assert_eq!(resp.body, b"quarterly numbers");

    // The overrides are part of the signature: changing one is refused.
    let tampered = tamper(
        req.uri(),
        "response-content-type=text%2Fcsv",
        "response-content-type=text%2Fhtml",
    );
    let resp = plain("GET", &tampered, &[], Vec::new()).await;
    assert_error(
        &resp,
        403,
        "SignatureDoesNotMatch",
        None,
        "presigned GET with a changed response-content-type",
    );
}

// -------------------------------------------------------------------------------------------
// Expiry.

#[tokio::test]
async fn expired_presigned_urls_are_access_denied_for_every_method() {
    let (client, bucket) = new_bucket("presexp").await;
    put(&client, &bucket, "kept", b"still here").await;
    let get_url = presign_get(&client, &bucket, "kept", one_second()).await;
    let head_url = presign_head(&client, &bucket, "kept", one_second()).await;
    let put_url = presign_put(&client, &bucket, "new", one_second()).await;
    let delete_url = presign_delete(&client, &bucket, "kept", one_second()).await;
    tokio::time::sleep(Duration::from_secs(2)).await;

    let expired = Some("Request has expired");
    let resp = plain("GET", &get_url, &[], Vec::new()).await;
    assert_error(&resp, 403, "AccessDenied", expired, "expired presigned GET");
    assert!(
        !resp.text().contains("still here"),
        "expired presigned GET leaked the object"
    );

    let resp = plain("PUT", &put_url, &[], b"too late".to_vec()).await;
    assert_error(&resp, 403, "AccessDenied", expired, "expired presigned PUT");
    assert_absent(&client, &bucket, "new", "expired presigned PUT").await;

    let resp = plain("DELETE", &delete_url, &[], Vec::new()).await;
    assert_error(
        &resp,
        403,
        "AccessDenied",
        expired,
        "expired presigned DELETE",
    );
    assert_object(&client, &bucket, "kept", b"still here").await;

    // HEAD answers carry no body: the status is what a client sees.
    let resp = plain("HEAD", &head_url, &[], Vec::new()).await;
    assert_eq!(resp.status, 403, "expired presigned HEAD");
    assert!(resp.body.is_empty(), "HEAD has no body");
}

#[tokio::test]
async fn extending_the_expiry_of_a_presigned_url_breaks_its_signature() {
    let (client, bucket) = new_bucket("presext").await;
    put(&client, &bucket, "obj", b"data").await;
    let url = presign_get(&client, &bucket, "obj", one_second()).await;
    assert_eq!(query_param(&url, "X-Amz-Expires"), "1");
    let extended = tamper(&url, "X-Amz-Expires=1&", "X-Amz-Expires=3600&");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let resp = plain("GET", &extended, &[], Vec::new()).await;
    assert_error(
        &resp,
        403,
        "SignatureDoesNotMatch",
        None,
        "expired presigned GET with X-Amz-Expires raised",
    );
}

// -------------------------------------------------------------------------------------------
// Tampering.

#[tokio::test]
async fn tampered_presigned_urls_are_signature_does_not_match() {
    let (client, bucket) = new_bucket("prestamper").await;
    let other_bucket = unique_bucket("prestamper2");
    create_bucket(&client, &other_bucket).await;
    put(&client, &bucket, "public.txt", b"public").await;
    put(&client, &bucket, "secret.txt", b"TOP-SECRET-CONTENT").await;
    put(
        &client,
        &other_bucket,
        "public.txt",
        b"OTHER-BUCKET-CONTENT",
    )
    .await;

    let get_url = presign_get(&client, &bucket, "public.txt", ten_minutes()).await;
    let cases = [
        (
            "another key",
            tamper(&get_url, "/public.txt?", "/secret.txt?"),
        ),
        (
            "another bucket",
            tamper(
                &get_url,
                &format!("/{bucket}/"),
                &format!("/{other_bucket}/"),
            ),
        ),
        (
            "an added query parameter",
            format!("{get_url}&response-content-type=text%2Fhtml"),
        ),
        (
            "a changed X-Amz-Expires",
            tamper(&get_url, "X-Amz-Expires=600&", "X-Amz-Expires=599&"),
        ),
        ("a changed signature", {
            let sig = query_param(&get_url, "X-Amz-Signature");
            let flipped = if sig.starts_with('0') { "1" } else { "0" };
            tamper(
                &get_url,
                &format!("X-Amz-Signature={sig}"),
                &format!("X-Amz-Signature={flipped}{}", &sig[1..]),
            )
        }),
    ];
    for (what, url) in &cases {
        let resp = plain("GET", url, &[], Vec::new()).await;
        assert_error(
            &resp,
            403,
            "SignatureDoesNotMatch",
            None,
            &format!("presigned GET with {what}"),
        );
        assert!(
            !resp.text().contains("-CONTENT"),
            "presigned GET with {what} leaked data: {}",
            resp.text()
        );
    }
    // The untouched URL still works (the cases above really were the only difference).
    let resp = plain("GET", &get_url, &[], Vec::new()).await;
    assert_eq!(
        resp.status,
        200,
        "untampered presigned GET: {}",
        resp.text()
    );
    assert_eq!(resp.body, b"public");
}

#[tokio::test]
async fn a_presigned_url_only_allows_the_method_it_was_signed_for() {
    let (client, bucket) = new_bucket("presmethod").await;
    put(&client, &bucket, "obj", b"original").await;
    let get_url = presign_get(&client, &bucket, "obj", ten_minutes()).await;

    // A read URL cannot delete or overwrite.
    let resp = plain("DELETE", &get_url, &[], Vec::new()).await;
    assert_error(
        &resp,
        403,
        "SignatureDoesNotMatch",
        None,
        "presigned GET URL used for DELETE",
    );
    let resp = plain("PUT", &get_url, &[], b"overwritten".to_vec()).await;
    assert_error(
        &resp,
        403,
        "SignatureDoesNotMatch",
        None,
        "presigned GET URL used for PUT",
    );
    assert_object(&client, &bucket, "obj", b"original").await;
}

#[tokio::test]
async fn a_presigned_put_url_cannot_write_another_key() {
    let (client, bucket) = new_bucket("presputkey").await;
    let put_url = presign_put(&client, &bucket, "upload/mine.bin", ten_minutes()).await;
    let tampered = tamper(&put_url, "/upload/mine.bin?", "/upload/theirs.bin?");
    let resp = plain("PUT", &tampered, &[], b"sneaky".to_vec()).await;
    assert_error(
        &resp,
        403,
        "SignatureDoesNotMatch",
        None,
        "presigned PUT to another key",
    );
    assert_absent(
        &client,
        &bucket,
        "upload/theirs.bin",
        "tampered presigned PUT",
    )
    .await;
    assert_absent(
        &client,
        &bucket,
        "upload/mine.bin",
        "tampered presigned PUT",
    )
    .await;
}
