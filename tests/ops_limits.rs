//! Running in production: request limits and the request log.
//!
//! - `STRATA_MAX_REQUESTS` bounds the S3 requests in flight; one more is answered at once with
//!   `503 SlowDown` (S3's XML error), health probes are still answered, and requests succeed
//!   again once the load is gone.
//! - Body and metadata limits: a PUT announcing more than 5 GiB is refused before its body
//!   (`EntityTooLarge`), an XML body over 2 MiB is `MalformedXML`, and more than 2 KB of
//!   `x-amz-meta-*` is `MetadataTooLarge`.
//! - The `x-amz-request-id` a client gets is in the server's JSON log, on the request's line
//!   (with its operation, bucket, key and status) and on every line logged while handling it;
//!   signatures never are.

mod common;

use std::io;
use std::time::{Duration, Instant};

use aws_sdk_s3::primitives::ByteStream;
use base64::Engine;
use bytes::Bytes;
use common::*;
use futures::channel::mpsc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Asserts a raw response is an S3 XML error with `status` and `code`, whose `RequestId` is the
/// `x-amz-request-id` header.
#[track_caller]
fn assert_error(resp: &RawResponse, status: u16, code: &str, what: &str) {
    assert_eq!(
        resp.status,
        status,
        "{what}: status (want {code}); body: {}",
        resp.text()
    );
    assert_eq!(
        resp.xml_element("Code").as_deref(),
        Some(code),
        "{what}: error code; body: {}",
        resp.text()
    );
    assert!(
        resp.text().starts_with("<?xml"),
        "{what}: an XML document; body: {}",
        resp.text()
    );
    let id = resp.header("x-amz-request-id").expect("x-amz-request-id");
    assert_eq!(
        resp.xml_element("RequestId").as_deref(),
        Some(id.as_str()),
        "{what}: RequestId"
    );
}

/// Signed ListBuckets.
async fn list_buckets(server: &TestServer) -> RawResponse {
    signed_send(&Signer::test(), "GET", &server.url("/"), &[], Vec::new()).await
}

/// A PUT of `len` bytes whose body is sent only as the test pushes it through the returned
/// sender; the request is in flight (its headers sent) once this returns.
fn slow_put(
    server: &TestServer,
    bucket: &str,
    key: &str,
    len: usize,
) -> (
    mpsc::UnboundedSender<io::Result<Bytes>>,
    tokio::task::JoinHandle<reqwest::Response>,
) {
    let path = format!("/{bucket}/{key}");
    let (tx, task) = trickling_put(server, &path, len, Some(Signer::test()));
    let task = tokio::spawn(async move { task.await.unwrap().expect("slow PUT answered") });
    (tx, task)
}

/// A PUT announcing `len` bytes whose body trickles in as the test pushes it, sent with the
/// given signer (`None`: unsigned); the connection's outcome, which may be a reset.
fn trickling_put(
    server: &TestServer,
    path: &str,
    len: usize,
    signer: Option<Signer>,
) -> (
    mpsc::UnboundedSender<io::Result<Bytes>>,
    tokio::task::JoinHandle<Result<reqwest::Response, reqwest::Error>>,
) {
    let url = server.url(path);
    let length = len.to_string();
    let headers = hdrs(&[("content-length", &length)]);
    let auth = signer.map_or_else(Vec::new, |s| {
        s.sign("PUT", &url, &headers, UNSIGNED_PAYLOAD).0
    });
    let (tx, rx) = mpsc::unbounded::<io::Result<Bytes>>();
    let mut request = reqwest::Client::new()
        .put(&url)
        .body(reqwest::Body::wrap_stream(rx));
    for (k, v) in headers.iter().chain(&auth) {
        request = request.header(k.as_str(), v.as_str());
    }
    (tx, tokio::spawn(request.send()))
}

#[tokio::test]
async fn slow_down_beyond_the_request_limit_and_back_once_the_load_is_gone() {
    let server = TestServer::start_with(ServerOptions {
        env: vec![("STRATA_MAX_REQUESTS".into(), "2".into())],
        ..Default::default()
    });
    let client = server.client();
    let bucket = unique_bucket("limits");
    create_bucket(&client, &bucket).await;

    // Two PUTs hold the server's two places while their bodies trickle in.
    let data = payload(256 * KIB, 7);
    let mut slow = Vec::new();
    for key in ["slow-1", "slow-2"] {
        let (tx, task) = slow_put(&server, &bucket, key, data.len());
        tx.unbounded_send(Ok(Bytes::copy_from_slice(&data[..1024])))
            .unwrap();
        // One at a time, so that each has its place before anything else is sent.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            !task.is_finished(),
            "{key} answered before its body was sent"
        );
        slow.push((tx, task));
    }

    // The third request is refused at once (not queued behind the other two).
    let deadline = Instant::now() + Duration::from_secs(10);
    let refused = loop {
        let started = Instant::now();
        let resp = list_buckets(&server).await;
        if resp.status == 503 {
            break (resp, started.elapsed());
        }
        assert_eq!(resp.status, 200, "ListBuckets: {}", resp.text());
        assert!(
            Instant::now() < deadline,
            "never refused with two slow PUTs in flight"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let (resp, took) = refused;
    assert_error(&resp, 503, "SlowDown", "third request");
    assert_eq!(
        resp.xml_element("Message").as_deref(),
        Some("Please reduce your request rate.")
    );
    assert!(took < Duration::from_secs(2), "SlowDown took {took:?}");
    let slow_down_id = resp.header("x-amz-request-id").unwrap();

    // Still saturated: every S3 request is refused, a PUT's unread body closes its connection.
    for _ in 0..3 {
        assert_error(&list_buckets(&server).await, 503, "SlowDown", "again");
    }
    let put = signed_send(
        &Signer::test(),
        "PUT",
        &server.url(&format!("/{bucket}/refused")),
        &[],
        b"refused body".to_vec(),
    )
    .await;
    assert_error(&put, 503, "SlowDown", "PUT while saturated");
    assert_eq!(put.header("connection").as_deref(), Some("close"));

    // Probes are not S3 requests: answered while saturated.
    for probe in ["/health/live", "/health/ready"] {
        let resp = raw_send("GET", &server.url(probe), &[], Vec::new()).await;
        assert_eq!(resp.status, 200, "{probe} while saturated: {}", resp.text());
    }

    // The slow PUTs finish and store their objects.
    for (tx, task) in slow {
        tx.unbounded_send(Ok(Bytes::copy_from_slice(&data[1024..])))
            .unwrap();
        drop(tx);
        let resp = task.await.unwrap();
        assert_eq!(resp.status(), 200, "slow PUT: {:?}", resp.text().await);
    }
    for key in ["slow-1", "slow-2"] {
        assert_object(&client, &bucket, key, &data).await;
    }
    // The refused PUT stored nothing.
    let res = client
        .head_object()
        .bucket(&bucket)
        .key("refused")
        .send()
        .await;
    assert_s3_status(res, 404, "HEAD of the refused PUT");

    // And the server takes requests again.
    let resp = list_buckets(&server).await;
    assert_eq!(resp.status, 200, "after the load: {}", resp.text());

    let line = log_line_with(&server, &slow_down_id);
    assert!(
        line.contains("operation=\"SlowDown\"") && line.contains("status=503"),
        "{line}"
    );
}

/// The request's log line that carries `request_id`.
#[track_caller]
fn log_line_with(server: &TestServer, request_id: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(line) = server
            .log()
            .lines()
            .find(|l| l.contains(request_id) && l.contains("request"))
        {
            return line.to_string();
        }
        assert!(
            Instant::now() < deadline,
            "no log line with request id {request_id}:\n{}",
            server.log_tail(40)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Writes `head` on a new connection, sends no body, and reads the answer (until the server
/// closes or `wait` passes). Returns the raw answer and how long it took.
async fn send_head_only(server: &TestServer, head: &str, wait: Duration) -> (String, Duration) {
    let mut stream = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    let started = Instant::now();
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout_at((started + wait).into(), stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => break,
            Ok(Ok(n)) => answer.extend_from_slice(&buf[..n]),
        }
        if complete_http_answer(&answer) {
            break;
        }
    }
    (
        String::from_utf8_lossy(&answer).into_owned(),
        started.elapsed(),
    )
}

/// Whether `answer` holds a final (non-1xx) response with its whole Content-Length body.
fn complete_http_answer(answer: &[u8]) -> bool {
    let text = String::from_utf8_lossy(answer);
    let Some(head_end) = text.find("\r\n\r\n") else {
        return false;
    };
    if text.starts_with("HTTP/1.1 1") {
        return complete_http_answer(&answer[head_end + 4..]);
    }
    let length = text[..head_end]
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    answer.len() >= head_end + 4 + length
}

/// A signed PUT request head announcing `length` bytes, without the body.
fn put_head(server: &TestServer, path: &str, length: u64, extra: &[(&str, &str)]) -> String {
    let url = server.url(path);
    let length = length.to_string();
    let mut headers = hdrs(&[("host", &server.addr()), ("content-length", &length)]);
    headers.extend(hdrs(extra));
    let (auth, _) = Signer::test().sign("PUT", &url, &headers, UNSIGNED_PAYLOAD);
    let mut head = format!("PUT {path} HTTP/1.1\r\n");
    for (k, v) in headers.iter().chain(&auth) {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    head
}

#[tokio::test]
async fn a_put_announcing_more_than_5_gib_is_refused_before_its_body() {
    let (_, bucket) = new_bucket("limits-big").await;
    let server = server();
    let too_big = (5u64 << 30) + 1;
    for (what, extra) in [
        ("plain", &[][..]),
        ("100-continue", &[("expect", "100-continue")][..]),
    ] {
        let head = put_head(server, &format!("/{bucket}/huge"), too_big, extra);
        let (answer, took) = send_head_only(server, &head, Duration::from_secs(20)).await;
        assert!(
            answer.starts_with("HTTP/1.1 400"),
            "{what}: want 400 without a body sent (no 100 Continue); got:\n{answer}"
        );
        assert!(
            answer.contains("<Code>EntityTooLarge</Code>"),
            "{what}: {answer}"
        );
        assert!(
            took < Duration::from_secs(5),
            "{what}: answered in {took:?}"
        );
    }
    // Exactly 5 GiB is allowed: the server waits for that body instead of refusing it.
    let head = put_head(server, &format!("/{bucket}/huge"), 5 << 30, &[]);
    let (answer, _) = send_head_only(server, &head, Duration::from_secs(1)).await;
    assert!(answer.is_empty(), "5 GiB refused: {answer}");
}

/// A refused request that waits for `100 Continue` gets its refusal at once: no `100` that
/// would make the client send a body the server then throws away.
#[tokio::test]
async fn a_refused_request_expecting_100_continue_is_answered_without_a_100() {
    let (_, bucket) = new_bucket("limits-continue").await;
    let server = server();
    let path = format!("/{bucket}/refused");
    // Unsigned: refused by authorisation before anything reads the body.
    let head = format!(
        "PUT {path} HTTP/1.1\r\nhost: {}\r\ncontent-length: 1000\r\nexpect: 100-continue\r\n\r\n",
        server.addr()
    );
    let (answer, took) = send_head_only(server, &head, Duration::from_secs(20)).await;
    assert!(
        answer.starts_with("HTTP/1.1 403"),
        "want 403 without a 100 Continue first; got:\n{answer}"
    );
    assert!(answer.contains("<Code>AccessDenied</Code>"), "{answer}");
    assert!(took < Duration::from_secs(5), "answered in {took:?}");
    // The connection closes: the body it announced is not read.
    assert!(
        answer.to_ascii_lowercase().contains("connection: close"),
        "{answer}"
    );
}

#[tokio::test]
async fn an_xml_body_over_2_mib_is_malformed_xml() {
    let (_, bucket) = new_bucket("limits-xml").await;
    let server = server();
    let mut body = b"<Delete>".to_vec();
    while body.len() <= 2 << 20 {
        body.extend_from_slice(b"<Object><Key>some-key-to-delete</Key></Object>");
    }
    body.extend_from_slice(b"</Delete>");
    let md5 = base64::engine::general_purpose::STANDARD.encode(md5_bytes(&body));
    let resp = signed_send(
        &Signer::test(),
        "POST",
        &server.url(&format!("/{bucket}?delete")),
        &hdrs(&[("content-md5", &md5)]),
        body,
    )
    .await;
    assert_error(&resp, 400, "MalformedXML", "DeleteObjects of 2 MiB+");
}

#[tokio::test]
async fn more_than_2_kb_of_user_metadata_is_metadata_too_large() {
    let (client, bucket) = new_bucket("limits-meta").await;
    // Names (without `x-amz-meta-`) and values count: 3 + 2045 = 2048 bytes fit.
    ok(
        client
            .put_object()
            .bucket(&bucket)
            .key("fits")
            .metadata("big", "v".repeat(2045))
            .body(ByteStream::from_static(b"x"))
            .send()
            .await,
        "2048 bytes of metadata",
    );
    let res = client
        .put_object()
        .bucket(&bucket)
        .key("too-much")
        .metadata("big", "v".repeat(2046))
        .body(ByteStream::from_static(b"x"))
        .send()
        .await;
    assert_s3_error(res, 400, "MetadataTooLarge", "2049 bytes of metadata");
    // Many small entries add up.
    let mut many = client.put_object().bucket(&bucket).key("too-many");
    for i in 0..40 {
        many = many.metadata(format!("k{i:03}"), "0123456789abcdef".repeat(3));
    }
    let res = many.body(ByteStream::from_static(b"x")).send().await;
    assert_s3_error(res, 400, "MetadataTooLarge", "40 entries");
    let res = client
        .create_multipart_upload()
        .bucket(&bucket)
        .key("too-much")
        .metadata("big", "v".repeat(2046))
        .send()
        .await;
    assert_s3_error(res, 400, "MetadataTooLarge", "CreateMultipartUpload");
    let res = client
        .head_object()
        .bucket(&bucket)
        .key("too-much")
        .send()
        .await;
    assert_s3_status(res, 404, "nothing stored");
}

/// The JSON objects of the server's log; panics on a line that is not one.
fn json_lines(server: &TestServer) -> Vec<serde_json::Value> {
    server
        .log()
        .lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("log line is not JSON ({e}): {line}"))
        })
        .collect()
}

/// The JSON `request` line of `request_id` (waits for it briefly: it is written after the
/// response).
fn request_line(server: &TestServer, request_id: &str) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let found = json_lines(server).into_iter().find(|l| {
            l["fields"]["message"] == "request" && l["fields"]["request_id"] == request_id
        });
        if let Some(line) = found {
            return line;
        }
        assert!(
            Instant::now() < deadline,
            "no request line for {request_id}:\n{}",
            server.log_tail(20)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test]
async fn the_request_id_is_logged_as_json_with_operation_bucket_and_key_and_no_secret() {
    let server = TestServer::start_with(ServerOptions {
        extra_args: vec!["--json-logs".into()],
        env: vec![("STRATA_LOG".into(), "info".into())],
        ..Default::default()
    });
    let client = server.client();
    let bucket = unique_bucket("limits-log");
    create_bucket(&client, &bucket).await;

    // A signed PUT: its request id leads to its line; its signature is nowhere in the log.
    let key = "photos/a b/ü.txt";
    let url = server.url(&format!("/{bucket}/photos/a%20b/%C3%BC.txt"));
    let body = payload(4 * KIB, 3);
    let signer = Signer::test();
    let (auth, signature) = signer.sign("PUT", &url, &[], &sha256_hex(&body));
    let resp = raw_send("PUT", &url, &auth, body.clone()).await;
    assert_eq!(resp.status, 200, "PUT: {}", resp.text());
    let id = resp.header("x-amz-request-id").expect("request id");
    let line = request_line(&server, &id);
    let fields = &line["fields"];
    assert_eq!(fields["operation"], "PutObject", "{line}");
    assert_eq!(fields["bucket"], bucket.as_str(), "{line}");
    assert_eq!(fields["key"], key, "{line}");
    assert_eq!(fields["status"], 200, "{line}");
    assert_eq!(fields["method"], "PUT", "{line}");
    assert!(fields["millis"].is_u64(), "{line}");
    assert_eq!(line["level"], "INFO", "{line}");

    // An error: the id the client sees in the XML is the logged one.
    let resp = signed_send(
        &signer,
        "GET",
        &server.url(&format!("/{bucket}/missing")),
        &[],
        Vec::new(),
    )
    .await;
    assert_error(&resp, 404, "NoSuchKey", "GET missing");
    let line = request_line(&server, &resp.header("x-amz-request-id").unwrap());
    assert_eq!(line["fields"]["operation"], "GetObject", "{line}");
    assert_eq!(line["fields"]["key"], "missing", "{line}");
    assert_eq!(line["fields"]["status"], 404, "{line}");

    // A presigned GET: the query's signature stays out of the log too.
    let presigned = client
        .get_object()
        .bucket(&bucket)
        .key(key)
        .presigned(
            aws_sdk_s3::presigning::PresigningConfig::expires_in(Duration::from_secs(600)).unwrap(),
        )
        .await
        .unwrap();
    let resp = raw_send("GET", presigned.uri(), &[], Vec::new()).await;
    assert_eq!(resp.status, 200, "presigned GET: {}", resp.text());
    let query_signature = presigned
        .uri()
        .split("X-Amz-Signature=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap()
        .to_string();
    let line = request_line(&server, &resp.header("x-amz-request-id").unwrap());
    assert_eq!(line["fields"]["operation"], "GetObject", "{line}");

    // A ListBuckets has neither bucket nor key.
    let resp = list_buckets(&server).await;
    let line = request_line(&server, &resp.header("x-amz-request-id").unwrap());
    assert_eq!(line["fields"]["operation"], "ListBuckets", "{line}");
    assert!(line["fields"].get("bucket").is_none(), "{line}");
    assert!(line["fields"].get("key").is_none(), "{line}");

    // Lines logged while a request is handled carry its id: a GET missing a shard file on one
    // drive logs that, inside the GET's span.
    let data = payload(2 * MIB, 11);
    put(&client, &bucket, "damaged", &data).await;
    let removed = shard_files(&server.drives()[0]);
    assert!(!removed.is_empty(), "no shard files on drive 1");
    for f in &removed {
        std::fs::remove_file(f).unwrap();
    }
    let resp = signed_send(
        &signer,
        "GET",
        &server.url(&format!("/{bucket}/damaged")),
        &[],
        Vec::new(),
    )
    .await;
    assert_eq!(resp.status, 200);
    assert_same_bytes(&resp.body, &data, "GET damaged");
    let id = resp.header("x-amz-request-id").unwrap();
    request_line(&server, &id);
    let inner: Vec<_> = json_lines(&server)
        .into_iter()
        .filter(|l| l["fields"]["message"] == "shard file unavailable")
        .collect();
    assert!(
        !inner.is_empty(),
        "no warning for the missing shard:\n{}",
        server.log_tail(20)
    );
    // The GET's own lines carry its id (the healer then repairs the object in the background,
    // outside the request, and logs without one).
    assert!(
        inner.iter().any(|l| l["span"]["request_id"] == id.as_str()),
        "no line in the GET's span: {inner:?}"
    );
    for line in inner.iter().filter(|l| l.get("span").is_some()) {
        assert_eq!(line["span"]["request_id"], id.as_str(), "{line}");
    }

    // So do lines logged while its body is sent: a damaged shard found as a GET streams.
    put(&client, &bucket, "corrupt", &data).await;
    for f in shard_files(&server.drives()[2]) {
        flip_bytes(&f);
    }
    let resp = signed_send(
        &signer,
        "GET",
        &server.url(&format!("/{bucket}/corrupt")),
        &[],
        Vec::new(),
    )
    .await;
    assert_eq!(resp.status, 200);
    assert_same_bytes(&resp.body, &data, "GET corrupt");
    let id = resp.header("x-amz-request-id").unwrap();
    request_line(&server, &id);
    let unreadable: Vec<_> = json_lines(&server)
        .into_iter()
        .filter(|l| l["fields"]["message"] == "shard unreadable, reading parity")
        .collect();
    assert!(
        unreadable
            .iter()
            .any(|l| l["span"]["request_id"] == id.as_str()),
        "no damaged-shard line in the GET's span: {unreadable:?}"
    );

    let log = server.log();
    for secret in [
        SECRET_KEY,
        signature.as_str(),
        query_signature.as_str(),
        "Signature=",
        "X-Amz-Signature",
        "AWS4-HMAC-SHA256",
    ] {
        assert!(!log.contains(secret), "{secret:?} logged:\n{log}");
    }
}

/// Unsigned requests and requests whose signature fails cannot hold the places of signed
/// ones: a bad signature is checked before a place is taken (and its body read for 2 s at
/// most), and unsigned requests have a small share of places of their own.
#[tokio::test]
async fn unsigned_and_forged_requests_cannot_take_the_places_of_signed_ones() {
    let server = TestServer::start_with(ServerOptions {
        env: vec![("STRATA_MAX_REQUESTS".into(), "4".into())],
        ..Default::default()
    });
    let client = server.client();
    let bucket = unique_bucket("crowd");
    create_bucket(&client, &bucket).await;

    let mut held = Vec::new();
    for i in 0..12 {
        let signer = (i % 2 == 0).then(|| Signer::new(ACCESS_KEY, "not-the-secret-at-all"));
        let (tx, task) = trickling_put(&server, &format!("/{bucket}/k{i}"), 1_000_000, signer);
        tx.unbounded_send(Ok(Bytes::from_static(b"a few bytes")))
            .unwrap();
        held.push((tx, task));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    // While they trickle, signed requests have every place.
    for _ in 0..8 {
        assert_eq!(list_buckets(&server).await.status, 200);
    }
    // Each was answered without waiting for its whole body: refused (403), or, unsigned
    // beyond their share of places, told to slow down (503).
    for (i, (_tx, task)) in held.into_iter().enumerate() {
        let answered = tokio::time::timeout(Duration::from_secs(5), task).await;
        let answered = answered.expect("answered without its body").unwrap();
        if let Ok(response) = answered {
            let status = response.status().as_u16();
            assert!(
                status == 403 || (i % 2 == 1 && status == 503),
                "request {i}: {status}"
            );
        }
    }
    let listed = client
        .list_objects_v2()
        .bucket(&bucket)
        .send()
        .await
        .unwrap();
    assert!(listed.contents().is_empty(), "nothing refused was stored");
}

/// An upload whose body averages less than the minimum rate (once its grace has passed) is
/// cut off with S3's RequestTimeout, and nothing is stored.
#[tokio::test]
async fn an_upload_slower_than_the_minimum_rate_is_cut_off() {
    let server = TestServer::start_with(ServerOptions {
        env: vec![
            ("STRATA_MIN_UPLOAD_BYTES_PER_SEC".into(), "10000".into()),
            ("STRATA_MIN_UPLOAD_RATE_GRACE_SECS".into(), "1".into()),
        ],
        ..Default::default()
    });
    let client = server.client();
    let bucket = unique_bucket("trickle");
    create_bucket(&client, &bucket).await;
    let path = format!("/{bucket}/slow");
    let (tx, task) = trickling_put(&server, &path, 1_000_000, Some(Signer::test()));
    let started = Instant::now();
    let feeder = tokio::spawn(async move {
        for _ in 0..60 {
            if tx
                .unbounded_send(Ok(Bytes::from_static(&[b'x'; 100])))
                .is_err()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let answered = tokio::time::timeout(Duration::from_secs(10), task).await;
    let response = answered
        .expect("cut off well before the body ends")
        .unwrap()
        .unwrap();
    assert_eq!(response.status(), 400);
    assert!(response
        .text()
        .await
        .unwrap()
        .contains("<Code>RequestTimeout</Code>"));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    feeder.abort();
    let head = client
        .head_object()
        .bucket(&bucket)
        .key("slow")
        .send()
        .await;
    assert_s3_status(head, 404, "the slow upload stored nothing");
    // A fast upload is not affected.
    put(&client, &bucket, "fast", &payload(2 << 20, 3)).await;
}

/// Connections beyond the cap for one client address are closed as they arrive; others are
/// served, and a place freed is taken again.
#[tokio::test]
async fn connections_beyond_the_per_client_cap_are_closed() {
    let server = TestServer::start_with(ServerOptions {
        env: vec![("STRATA_MAX_CONNECTIONS_PER_CLIENT".into(), "3".into())],
        ..Default::default()
    });
    let mut open = Vec::new();
    for _ in 0..3 {
        open.push(tokio::net::TcpStream::connect(server.addr()).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut refused = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    let mut buf = [0u8; 16];
    let read = tokio::time::timeout(Duration::from_secs(5), refused.read(&mut buf)).await;
    assert!(
        matches!(read, Ok(Ok(0)) | Ok(Err(_))),
        "the fourth connection was closed: {read:?}"
    );
    drop(open.pop());
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        list_buckets(&server).await.status,
        200,
        "a freed place is taken"
    );
}

/// Uploads beyond the memory budget wait for room rather than fail: with room for one large
/// upload at a time, a dozen at once all succeed and read back whole.
#[tokio::test]
async fn uploads_beyond_the_memory_budget_wait_rather_than_fail() {
    let server = TestServer::start_with(ServerOptions {
        env: vec![("STRATA_MEMORY_BUDGET_MIB".into(), "8".into())],
        ..Default::default()
    });
    let client = server.client();
    let bucket = unique_bucket("budget");
    create_bucket(&client, &bucket).await;
    let uploads: Vec<_> = (0..12u8)
        .map(|i| {
            let (client, bucket) = (client.clone(), bucket.clone());
            tokio::spawn(async move {
                let data = payload(3 << 20, u64::from(i));
                put(&client, &bucket, &format!("k{i}"), &data).await;
                data
            })
        })
        .collect();
    for (i, upload) in uploads.into_iter().enumerate() {
        let data = upload.await.unwrap();
        assert_object(&client, &bucket, &format!("k{i}"), &data).await;
    }
}
