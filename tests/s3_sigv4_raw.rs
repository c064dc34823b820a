//! Authentication on the wire: hand-signed requests (aws-sigv4 + reqwest), signed aws-chunked
//! bodies, wrong secrets, unknown keys, anonymous requests, tampered bodies, clock skew,
//! presigned URLs, and the 501 answer for unsupported S3 features.

mod common;

use std::time::{Duration, SystemTime};

use aws_sdk_s3::presigning::PresigningConfig;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::Client;
use common::*;

/// Asserts a raw response is an S3 XML error with `status` and `code`.
#[track_caller]
fn assert_raw_error(resp: &RawResponse, status: u16, code: &str, what: &str) {
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
}

async fn assert_absent(client: &Client, bucket: &str, key: &str, what: &str) {
    assert_s3_status(
        client.head_object().bucket(bucket).key(key).send().await,
        404,
        &format!("{what}: object must not exist"),
    );
}

#[tokio::test]
async fn hand_signed_put_and_get_work() {
    // Positive control for the raw signing helper: hex payload hash and UNSIGNED-PAYLOAD.
    let (client, bucket) = new_bucket("rawok").await;
    let data = payload(300 * KIB, 1);
    let url = server().url(&format!("/{bucket}/signed-hex"));
    let resp = signed_send(&Signer::test(), "PUT", &url, &[], data.clone()).await;
    assert_eq!(resp.status, 200, "signed PUT: {}", resp.text());
    assert_eq!(resp.header("etag"), Some(quoted_md5(&data)));
    assert_object(&client, &bucket, "signed-hex", &data).await;

    let url = server().url(&format!("/{bucket}/unsigned-payload"));
    let resp = signed_send_with_hash(
        &Signer::test(),
        "PUT",
        &url,
        &[],
        data.clone(),
        UNSIGNED_PAYLOAD,
    )
    .await;
    assert_eq!(resp.status, 200, "UNSIGNED-PAYLOAD PUT: {}", resp.text());
    assert_object(&client, &bucket, "unsigned-payload", &data).await;

    let resp = signed_send(&Signer::test(), "GET", &url, &[], Vec::new()).await;
    assert_eq!(resp.status, 200);
    assert_same_bytes(&resp.body, &data, "raw GET");
}

#[tokio::test]
async fn wrong_secret_is_signature_does_not_match_and_writes_nothing() {
    let (client, bucket) = new_bucket("wrongsecret").await;
    let bad = server().client_with(ACCESS_KEY, "definitely-not-the-secret");

    // SDK PUT, in-memory body (checksum header, signed payload).
    assert_s3_error(
        bad.put_object()
            .bucket(&bucket)
            .key("sdk")
            .body(payload(1000, 2).into())
            .send()
            .await,
        403,
        "SignatureDoesNotMatch",
        "SDK PUT with wrong secret",
    );
    assert_absent(&client, &bucket, "sdk", "SDK PUT with wrong secret").await;

    // SDK PUT from a file: aws-chunked with a checksum trailer.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("body");
    std::fs::write(&path, payload(200 * KIB, 3)).unwrap();
    assert_s3_error(
        bad.put_object()
            .bucket(&bucket)
            .key("sdk-stream")
            .body(ByteStream::from_path(&path).await.unwrap())
            .send()
            .await,
        403,
        "SignatureDoesNotMatch",
        "SDK streaming PUT with wrong secret",
    );
    assert_absent(
        &client,
        &bucket,
        "sdk-stream",
        "SDK streaming PUT with wrong secret",
    )
    .await;

    // Hand-signed PUT with a hex payload hash.
    let data = payload(200 * KIB, 4);
    let url = server().url(&format!("/{bucket}/raw"));
    let resp = signed_send(
        &Signer::new(ACCESS_KEY, "wrong-secret"),
        "PUT",
        &url,
        &[],
        data,
    )
    .await;
    assert_raw_error(
        &resp,
        403,
        "SignatureDoesNotMatch",
        "raw PUT with wrong secret",
    );
    assert_absent(&client, &bucket, "raw", "raw PUT with wrong secret").await;

    // Other operations too: GET, list, create bucket, multipart.
    put(&client, &bucket, "exists", b"secret data").await;
    assert_s3_error(
        bad.get_object().bucket(&bucket).key("exists").send().await,
        403,
        "SignatureDoesNotMatch",
        "GET with wrong secret",
    );
    assert_s3_error(
        bad.list_objects_v2().bucket(&bucket).send().await,
        403,
        "SignatureDoesNotMatch",
        "ListObjectsV2 with wrong secret",
    );
    let other = unique_bucket("never-created");
    assert_s3_error(
        bad.create_bucket().bucket(&other).send().await,
        403,
        "SignatureDoesNotMatch",
        "CreateBucket with wrong secret",
    );
    assert_s3_status(
        client.head_bucket().bucket(&other).send().await,
        404,
        "bucket created with wrong secret",
    );
    assert_s3_error(
        bad.delete_object()
            .bucket(&bucket)
            .key("exists")
            .send()
            .await,
        403,
        "SignatureDoesNotMatch",
        "DELETE with wrong secret",
    );
    assert_object(&client, &bucket, "exists", b"secret data").await;
}

/// Builds and sends a `STREAMING-AWS4-HMAC-SHA256-PAYLOAD` PUT. `chunk_signer` signs the
/// chunks (normally the same as `signer`).
async fn streaming_put(
    signer: &Signer,
    chunk_signer: &Signer,
    url: &str,
    data: &[u8],
    chunk_size: usize,
) -> RawResponse {
    let headers = hdrs(&[
        ("content-encoding", "aws-chunked"),
        ("x-amz-decoded-content-length", &data.len().to_string()),
    ]);
    let (auth, seed) = signer.sign("PUT", url, &headers, STREAMING_PAYLOAD);
    let body = chunk_signer.aws_chunked_body(data, chunk_size, &seed);
    let mut all = headers;
    all.extend(auth);
    raw_send("PUT", url, &all, body).await
}

#[tokio::test]
async fn signed_streaming_put_round_trips() {
    // Positive control: chunk signatures from the right secret.
    let (client, bucket) = new_bucket("chunked").await;
    for (key, size, chunk) in [("small", 1000, 64 * KIB), ("multi", 3 * MIB + 5, 64 * KIB)] {
        let data = payload(size, 7);
        let url = server().url(&format!("/{bucket}/{key}"));
        let signer = Signer::test();
        let resp = streaming_put(&signer, &signer, &url, &data, chunk).await;
        assert_eq!(resp.status, 200, "streaming PUT {key}: {}", resp.text());
        assert_eq!(
            resp.header("etag"),
            Some(quoted_md5(&data)),
            "ETag of decoded payload"
        );
        assert_object(&client, &bucket, key, &data).await;
    }
}

#[tokio::test]
async fn streaming_put_with_wrong_secret_writes_nothing() {
    let (client, bucket) = new_bucket("chunkedbad").await;
    let data = payload(MIB + 5, 8);
    let wrong = Signer::new(ACCESS_KEY, "wrong-secret");

    // Seed and chunks signed with the wrong secret. (A small body: a request refused from its
    // headers alone is covered with large bodies by `refused_large_upload_gets_the_error`.)
    let url = server().url(&format!("/{bucket}/wrong-seed"));
    let small = payload(200 * KIB, 8);
    let resp = streaming_put(&wrong, &wrong, &url, &small, 64 * KIB).await;
    assert_raw_error(
        &resp,
        403,
        "SignatureDoesNotMatch",
        "streaming PUT, wrong secret",
    );
    assert_absent(
        &client,
        &bucket,
        "wrong-seed",
        "streaming PUT, wrong secret",
    )
    .await;

    // Correct seed signature, chunk signatures from the wrong secret.
    let url = server().url(&format!("/{bucket}/wrong-chunks"));
    let mut right = Signer::test();
    right.time = SystemTime::now();
    let mut wrong_chunks = wrong.clone();
    wrong_chunks.time = right.time;
    let resp = streaming_put(&right, &wrong_chunks, &url, &data, 64 * KIB).await;
    assert_raw_error(
        &resp,
        403,
        "SignatureDoesNotMatch",
        "streaming PUT, bad chunk signatures",
    );
    assert_absent(
        &client,
        &bucket,
        "wrong-chunks",
        "streaming PUT, bad chunk signatures",
    )
    .await;

    // Correct signatures but one payload byte changed after signing.
    let url = server().url(&format!("/{bucket}/tampered-chunk"));
    let headers = hdrs(&[
        ("content-encoding", "aws-chunked"),
        ("x-amz-decoded-content-length", &data.len().to_string()),
    ]);
    let (auth, seed) = right.sign("PUT", &url, &headers, STREAMING_PAYLOAD);
    let mut body = right.aws_chunked_body(&data, 64 * KIB, &seed);
    // Flip a payload byte of the first chunk (not its header line).
    let header_end = body
        .windows(2)
        .position(|w| w == b"\r\n")
        .expect("chunk header")
        + 2;
    body[header_end + 100] ^= 0x01;
    let mut all = headers;
    all.extend(auth);
    let resp = raw_send("PUT", &url, &all, body).await;
    assert_raw_error(
        &resp,
        403,
        "SignatureDoesNotMatch",
        "streaming PUT, tampered chunk",
    );
    assert_absent(
        &client,
        &bucket,
        "tampered-chunk",
        "streaming PUT, tampered chunk",
    )
    .await;
}

#[tokio::test]
async fn unknown_access_key_is_invalid_access_key_id() {
    let (client, bucket) = new_bucket("unknownkey").await;
    let stranger = server().client_with("AKIDNOSUCHUSER000000", SECRET_KEY);
    assert_s3_error(
        stranger
            .put_object()
            .bucket(&bucket)
            .key("k")
            .body(b"x".to_vec().into())
            .send()
            .await,
        403,
        "InvalidAccessKeyId",
        "PUT with unknown access key",
    );
    assert_absent(&client, &bucket, "k", "PUT with unknown access key").await;
    assert_s3_error(
        stranger.list_buckets().send().await,
        403,
        "InvalidAccessKeyId",
        "ListBuckets with unknown access key",
    );
    let resp = signed_send(
        &Signer::new("AKIDNOSUCHUSER000000", SECRET_KEY),
        "GET",
        &server().url(&format!("/{bucket}/k")),
        &[],
        Vec::new(),
    )
    .await;
    assert_raw_error(&resp, 403, "InvalidAccessKeyId", "raw GET with unknown key");
}

#[tokio::test]
async fn anonymous_requests_are_access_denied() {
    let (client, bucket) = new_bucket("anon").await;
    put(&client, &bucket, "private", b"not for anonymous eyes").await;

    let resp = raw_send(
        "GET",
        &server().url(&format!("/{bucket}/private")),
        &[],
        Vec::new(),
    )
    .await;
    assert_raw_error(&resp, 403, "AccessDenied", "anonymous GET");
    assert!(
        !resp.text().contains("not for anonymous eyes"),
        "anonymous GET leaked the object"
    );

    let resp = raw_send("GET", &server().url(&format!("/{bucket}")), &[], Vec::new()).await;
    assert_raw_error(&resp, 403, "AccessDenied", "anonymous list");
    let resp = raw_send("GET", &server().url("/"), &[], Vec::new()).await;
    assert_raw_error(&resp, 403, "AccessDenied", "anonymous ListBuckets");

    let resp = raw_send(
        "PUT",
        &server().url(&format!("/{bucket}/anon-put")),
        &[],
        b"anonymous write".to_vec(),
    )
    .await;
    assert_raw_error(&resp, 403, "AccessDenied", "anonymous PUT");
    assert_absent(&client, &bucket, "anon-put", "anonymous PUT").await;

    let resp = raw_send(
        "DELETE",
        &server().url(&format!("/{bucket}/private")),
        &[],
        Vec::new(),
    )
    .await;
    assert_raw_error(&resp, 403, "AccessDenied", "anonymous DELETE");
    assert_object(&client, &bucket, "private", b"not for anonymous eyes").await;
}

#[tokio::test]
async fn tampered_body_is_x_amz_content_sha256_mismatch() {
    let (client, bucket) = new_bucket("tampered").await;
    for (key, size) in [("inline", 4 * KIB), ("large", MIB + 77)] {
        let signed_body = payload(size, 9);
        let mut sent_body = signed_body.clone();
        sent_body[size / 2] ^= 0x20;
        let url = server().url(&format!("/{bucket}/{key}"));
        let resp = signed_send_with_hash(
            &Signer::test(),
            "PUT",
            &url,
            &[],
            sent_body,
            &sha256_hex(&signed_body),
        )
        .await;
        assert_raw_error(
            &resp,
            400,
            "XAmzContentSHA256Mismatch",
            &format!("tampered {key}"),
        );
        assert_absent(&client, &bucket, key, &format!("tampered {key}")).await;
    }
    // Tampering must not clobber an existing object either.
    put(&client, &bucket, "existing", b"original").await;
    let url = server().url(&format!("/{bucket}/existing"));
    let resp = signed_send_with_hash(
        &Signer::test(),
        "PUT",
        &url,
        &[],
        b"replaced".to_vec(),
        &sha256_hex(b"REPLACED"),
    )
    .await;
    assert_raw_error(
        &resp,
        400,
        "XAmzContentSHA256Mismatch",
        "tampered overwrite",
    );
    assert_object(&client, &bucket, "existing", b"original").await;
}

#[tokio::test]
async fn request_time_too_skewed() {
    let (client, bucket) = new_bucket("skew").await;
    let url = server().url(&format!("/{bucket}/skewed"));
    for offset in [-1i64, 1] {
        let mut signer = Signer::test();
        let skew = Duration::from_secs(20 * 60);
        signer.time = if offset < 0 {
            SystemTime::now() - skew
        } else {
            SystemTime::now() + skew
        };
        let resp = signed_send(&signer, "PUT", &url, &[], b"late".to_vec()).await;
        assert_raw_error(
            &resp,
            403,
            "RequestTimeTooSkewed",
            &format!("clock {offset:+} 20 min"),
        );
    }
    assert_absent(&client, &bucket, "skewed", "skewed PUT").await;
    // 5 minutes off is within the allowed window.
    let mut signer = Signer::test();
    signer.time = SystemTime::now() - Duration::from_secs(5 * 60);
    let resp = signed_send(&signer, "PUT", &url, &[], b"ok".to_vec()).await;
    assert_eq!(resp.status, 200, "5 min skew: {}", resp.text());
}

#[tokio::test]
async fn presigned_get_works_and_expires() {
    let (client, bucket) = new_bucket("presign").await;
    let data = payload(MIB + 11, 12);
    put(&client, &bucket, "shared.bin", &data).await;

    let presigned = client
        .get_object()
        .bucket(&bucket)
        .key("shared.bin")
        .presigned(PresigningConfig::expires_in(Duration::from_secs(600)).unwrap())
        .await
        .expect("presign");
    let headers: Vec<(String, String)> = presigned
        .headers()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let resp = raw_send("GET", presigned.uri(), &headers, Vec::new()).await;
    assert_eq!(resp.status, 200, "presigned GET: {}", resp.text());
    assert_same_bytes(&resp.body, &data, "presigned GET body");

    // A presigned URL for another key does not open this one (tampered path).
    let tampered = presigned.uri().replace("shared.bin", "other.bin");
    let resp = raw_send("GET", &tampered, &headers, Vec::new()).await;
    assert_raw_error(
        &resp,
        403,
        "SignatureDoesNotMatch",
        "presigned URL with changed key",
    );

    // A presigned PUT writes.
    let put_req = client
        .put_object()
        .bucket(&bucket)
        .key("uploaded.bin")
        .presigned(PresigningConfig::expires_in(Duration::from_secs(600)).unwrap())
        .await
        .expect("presign PUT");
    let headers: Vec<(String, String)> = put_req
        .headers()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let resp = raw_send(
        "PUT",
        put_req.uri(),
        &headers,
        b"via presigned put".to_vec(),
    )
    .await;
    assert_eq!(resp.status, 200, "presigned PUT: {}", resp.text());
    assert_object(&client, &bucket, "uploaded.bin", b"via presigned put").await;

    // Expired.
    let short = client
        .get_object()
        .bucket(&bucket)
        .key("shared.bin")
        .presigned(PresigningConfig::expires_in(Duration::from_secs(1)).unwrap())
        .await
        .expect("presign");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let resp = raw_send("GET", short.uri(), &[], Vec::new()).await;
    assert_raw_error(&resp, 403, "AccessDenied", "expired presigned GET");
    assert!(
        resp.body.len() < 4096,
        "expired presigned GET returned a large body"
    );

    // Presigned with a wrong secret.
    let bad = server().client_with(ACCESS_KEY, "wrong-secret");
    let forged = bad
        .get_object()
        .bucket(&bucket)
        .key("shared.bin")
        .presigned(PresigningConfig::expires_in(Duration::from_secs(600)).unwrap())
        .await
        .expect("presign");
    let resp = raw_send("GET", forged.uri(), &[], Vec::new()).await;
    assert_raw_error(
        &resp,
        403,
        "SignatureDoesNotMatch",
        "presigned with wrong secret",
    );
}

#[tokio::test]
async fn unsupported_requests_are_not_implemented() {
    let (client, bucket) = new_bucket("unsupported").await;
    put(&client, &bucket, "obj", b"x").await;
    let cases = [
        ("GET", format!("/{bucket}?website")),
        ("GET", format!("/{bucket}?replication")),
        ("DELETE", format!("/{bucket}?acl")),
        ("POST", format!("/{bucket}/obj?acl")),
    ];
    for (method, path) in &cases {
        let resp = signed_send(
            &Signer::test(),
            method,
            &server().url(path),
            &[],
            Vec::new(),
        )
        .await;
        assert_raw_error(&resp, 501, "NotImplemented", &format!("{method} {path}"));
        assert!(
            resp.xml_element("Message").is_some() && resp.xml_element("RequestId").is_some(),
            "{method} {path}: error XML lacks Message/RequestId: {}",
            resp.text()
        );
    }
    // Through the SDK as well.
    assert_s3_error(
        client.get_bucket_website().bucket(&bucket).send().await,
        501,
        "NotImplemented",
        "SDK GetBucketWebsite",
    );
    // Nothing was changed by the refused requests.
    assert_object(&client, &bucket, "obj", b"x").await;
}

fn crc32_b64(data: &[u8]) -> String {
    use base64::Engine as _;
    let crc = crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32IsoHdlc, data) as u32;
    base64::engine::general_purpose::STANDARD.encode(crc.to_be_bytes())
}

/// Headers for an aws-chunked PUT with a trailer.
fn trailer_headers(decoded_len: usize, trailer: &str) -> Vec<(String, String)> {
    hdrs(&[
        ("content-encoding", "aws-chunked"),
        ("x-amz-decoded-content-length", &decoded_len.to_string()),
        ("x-amz-trailer", trailer),
    ])
}

#[tokio::test]
async fn signed_streaming_put_with_trailer() {
    let (client, bucket) = new_bucket("signedtrailer").await;
    let data = payload(2 * MIB + 9, 30);
    let signer = Signer::test();

    // Correct chunk and trailer signatures, correct CRC32.
    let url = server().url(&format!("/{bucket}/good"));
    let headers = trailer_headers(data.len(), "x-amz-checksum-crc32");
    let (auth, seed) = signer.sign("PUT", &url, &headers, STREAMING_PAYLOAD_TRAILER);
    let body = signer.aws_chunked_body_with_trailer(
        &data,
        64 * KIB,
        &seed,
        "x-amz-checksum-crc32",
        &crc32_b64(&data),
    );
    let mut all = headers.clone();
    all.extend(auth);
    let resp = raw_send("PUT", &url, &all, body).await;
    assert_eq!(resp.status, 200, "signed trailer PUT: {}", resp.text());
    assert_eq!(resp.header("etag"), Some(quoted_md5(&data)));
    assert_object(&client, &bucket, "good", &data).await;

    // Trailer signature made with the wrong secret.
    let url = server().url(&format!("/{bucket}/bad-trailer-sig"));
    let (auth, seed) = signer.sign("PUT", &url, &headers, STREAMING_PAYLOAD_TRAILER);
    let mut body = signer.aws_chunked_body_with_trailer(
        &data,
        64 * KIB,
        &seed,
        "x-amz-checksum-crc32",
        &crc32_b64(&data),
    );
    let forged = Signer {
        secret_key: "wrong-secret".into(),
        ..signer.clone()
    }
    .aws_chunked_body_with_trailer(
        &data,
        64 * KIB,
        &seed,
        "x-amz-checksum-crc32",
        &crc32_b64(&data),
    );
    // Same chunks (chunk signatures from the right key), trailer signature from the wrong one.
    let sig_at = |b: &[u8]| {
        let marker = b"x-amz-trailer-signature:";
        b.windows(marker.len())
            .rposition(|w| w == marker)
            .expect("trailer signature")
    };
    let tail = forged[sig_at(&forged)..].to_vec();
    let cut = sig_at(&body);
    body.truncate(cut);
    body.extend_from_slice(&tail);
    let mut all = headers.clone();
    all.extend(auth);
    let resp = raw_send("PUT", &url, &all, body).await;
    assert_raw_error(
        &resp,
        403,
        "SignatureDoesNotMatch",
        "wrong trailer signature",
    );
    assert_absent(
        &client,
        &bucket,
        "bad-trailer-sig",
        "wrong trailer signature",
    )
    .await;

    // Everything signed correctly, but the CRC32 in the trailer does not match the data.
    let url = server().url(&format!("/{bucket}/bad-crc"));
    let (auth, seed) = signer.sign("PUT", &url, &headers, STREAMING_PAYLOAD_TRAILER);
    let body = signer.aws_chunked_body_with_trailer(
        &data,
        64 * KIB,
        &seed,
        "x-amz-checksum-crc32",
        &crc32_b64(b"other data"),
    );
    let mut all = headers;
    all.extend(auth);
    let resp = raw_send("PUT", &url, &all, body).await;
    assert_raw_error(&resp, 400, "BadDigest", "signed trailer with wrong CRC32");
    assert_absent(
        &client,
        &bucket,
        "bad-crc",
        "signed trailer with wrong CRC32",
    )
    .await;
}

#[tokio::test]
async fn unsigned_streaming_put_with_trailer() {
    let (client, bucket) = new_bucket("unsignedtrailer").await;
    let data = payload(MIB + 123, 31);
    let headers = trailer_headers(data.len(), "x-amz-checksum-crc32");

    let url = server().url(&format!("/{bucket}/good"));
    let body = aws_chunked_unsigned(
        &data,
        64 * KIB,
        Some(("x-amz-checksum-crc32", &crc32_b64(&data))),
    );
    let resp = signed_send_with_hash(
        &Signer::test(),
        "PUT",
        &url,
        &headers,
        body,
        STREAMING_UNSIGNED_TRAILER,
    )
    .await;
    assert_eq!(resp.status, 200, "unsigned trailer PUT: {}", resp.text());
    assert_object(&client, &bucket, "good", &data).await;

    // Wrong CRC32 in the trailer: BadDigest, nothing written, existing object kept.
    for key in ["good", "fresh"] {
        let url = server().url(&format!("/{bucket}/{key}"));
        let body = aws_chunked_unsigned(
            &payload(MIB + 123, 32),
            64 * KIB,
            Some(("x-amz-checksum-crc32", &crc32_b64(b"not this"))),
        );
        let resp = signed_send_with_hash(
            &Signer::test(),
            "PUT",
            &url,
            &headers,
            body,
            STREAMING_UNSIGNED_TRAILER,
        )
        .await;
        assert_raw_error(
            &resp,
            400,
            "BadDigest",
            &format!("{key}: unsigned trailer with wrong CRC32"),
        );
    }
    assert_object(&client, &bucket, "good", &data).await;
    assert_absent(
        &client,
        &bucket,
        "fresh",
        "unsigned trailer with wrong CRC32",
    )
    .await;

    // The seed signature is still verified in the unsigned-payload mode.
    let url = server().url(&format!("/{bucket}/wrong-secret"));
    let small = payload(200 * KIB, 33);
    let headers = trailer_headers(small.len(), "x-amz-checksum-crc32");
    let body = aws_chunked_unsigned(
        &small,
        64 * KIB,
        Some(("x-amz-checksum-crc32", &crc32_b64(&small))),
    );
    let resp = signed_send_with_hash(
        &Signer::new(ACCESS_KEY, "wrong-secret"),
        "PUT",
        &url,
        &headers,
        body,
        STREAMING_UNSIGNED_TRAILER,
    )
    .await;
    assert_raw_error(
        &resp,
        403,
        "SignatureDoesNotMatch",
        "unsigned trailer, wrong secret",
    );
    assert_absent(
        &client,
        &bucket,
        "wrong-secret",
        "unsigned trailer, wrong secret",
    )
    .await;
}

#[tokio::test]
async fn refused_large_upload_gets_the_error_response() {
    // Regression: a PUT refused from its headers alone (wrong secret) was answered 403 without
    // reading the body and the connection closed, so a client still sending a few MiB saw a
    // broken pipe instead of SignatureDoesNotMatch.
    let (client, bucket) = new_bucket("refusedlarge").await;
    let bad = server().client_with(ACCESS_KEY, "definitely-not-the-secret");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("body");
    std::fs::write(&path, payload(4 * MIB, 40)).unwrap();
    for attempt in 0..3 {
        // aws-chunked from a file (checksum trailer) ...
        assert_s3_error(
            bad.put_object()
                .bucket(&bucket)
                .key("streamed")
                .body(ByteStream::from_path(&path).await.unwrap())
                .send()
                .await,
            403,
            "SignatureDoesNotMatch",
            &format!("attempt {attempt}: 4 MiB streaming PUT with wrong secret"),
        );
        // ... and a plain signed body.
        assert_s3_error(
            bad.put_object()
                .bucket(&bucket)
                .key("in-memory")
                .body(payload(4 * MIB, 41).into())
                .send()
                .await,
            403,
            "SignatureDoesNotMatch",
            &format!("attempt {attempt}: 4 MiB PUT with wrong secret"),
        );
    }
    assert_absent(&client, &bucket, "streamed", "refused streaming PUT").await;
    assert_absent(&client, &bucket, "in-memory", "refused PUT").await;

    // Same for a correctly signed 4 MiB PUT refused for another reason.
    let missing = unique_bucket("no-such-bucket");
    assert_s3_error(
        client
            .put_object()
            .bucket(&missing)
            .key("k")
            .body(ByteStream::from_path(&path).await.unwrap())
            .send()
            .await,
        404,
        "NoSuchBucket",
        "4 MiB streaming PUT to a missing bucket",
    );
}
