//! Single-object operations: PUT/GET/HEAD/DELETE across size classes (inline and erasure
//! coded, block boundaries), ETags, metadata, ranges, Content-MD5, flexible checksums and keys.

mod common;

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{ChecksumAlgorithm, ChecksumMode};
use base64::Engine as _;
use common::*;
use sha2::Digest as _;

fn b64(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// Sizes around the inline limit (128 KiB) and the erasure block (1 MiB).
const SIZES: &[usize] = &[
    0,
    1,
    10 * KIB,
    128 * KIB,
    128 * KIB + 1,
    MIB,
    MIB + 1,
    6 * MIB + 7,
];

#[tokio::test]
async fn put_get_head_delete_every_size_class() {
    let (client, bucket) = new_bucket("sizes").await;
    for (i, &size) in SIZES.iter().enumerate() {
        let key = format!("obj-{size}");
        let data = payload(size, 100 + i as u64);
        let etag = put(&client, &bucket, &key, &data).await;
        assert_eq!(etag, quoted_md5(&data), "PUT ETag for {size} bytes");

        let head = ok(
            client.head_object().bucket(&bucket).key(&key).send().await,
            "HeadObject",
        );
        assert_eq!(
            head.content_length(),
            Some(size as i64),
            "HEAD length {size}"
        );
        assert_eq!(
            head.e_tag(),
            Some(quoted_md5(&data).as_str()),
            "HEAD ETag {size}"
        );
        assert!(head.last_modified().is_some(), "HEAD Last-Modified {size}");

        let got = ok(
            client.get_object().bucket(&bucket).key(&key).send().await,
            "GetObject",
        );
        assert_eq!(
            got.e_tag(),
            Some(quoted_md5(&data).as_str()),
            "GET ETag {size}"
        );
        assert_eq!(got.content_length(), Some(size as i64), "GET length {size}");
        let body = got.body.collect().await.expect("GET body").into_bytes();
        assert_same_bytes(&body, &data, &format!("GET {size} bytes"));
    }
    // Everything is still there after all the writes, then delete each.
    for (i, &size) in SIZES.iter().enumerate() {
        let key = format!("obj-{size}");
        assert_object(&client, &bucket, &key, &payload(size, 100 + i as u64)).await;
        ok(
            client
                .delete_object()
                .bucket(&bucket)
                .key(&key)
                .send()
                .await,
            "DeleteObject",
        );
        assert_s3_error(
            client.get_object().bucket(&bucket).key(&key).send().await,
            404,
            "NoSuchKey",
            &format!("GET after DELETE ({size} bytes)"),
        );
        assert_s3_status(
            client.head_object().bucket(&bucket).key(&key).send().await,
            404,
            &format!("HEAD after DELETE ({size} bytes)"),
        );
    }
}

#[tokio::test]
async fn streaming_upload_with_checksum_trailer_round_trips() {
    // A file body makes the SDK send aws-chunked with an x-amz-checksum-crc32 trailer
    // (STREAMING-UNSIGNED-PAYLOAD-TRAILER).
    let (client, bucket) = new_bucket("stream").await;
    let dir = tempfile::tempdir().unwrap();
    for (i, size) in [5usize, 200 * KIB, 2 * MIB + 3].into_iter().enumerate() {
        let data = payload(size, 900 + i as u64);
        let path = dir.path().join(format!("f{i}"));
        std::fs::write(&path, &data).unwrap();
        let key = format!("streamed-{size}");
        let out = ok(
            client
                .put_object()
                .bucket(&bucket)
                .key(&key)
                .body(ByteStream::from_path(&path).await.unwrap())
                .send()
                .await,
            &format!("streaming PutObject {size}"),
        );
        assert_eq!(out.e_tag(), Some(quoted_md5(&data).as_str()), "ETag {size}");
        assert_object(&client, &bucket, &key, &data).await;
    }
}

#[tokio::test]
async fn delete_missing_key_succeeds() {
    let (client, bucket) = new_bucket("delmissing").await;
    ok(
        client
            .delete_object()
            .bucket(&bucket)
            .key("never-existed")
            .send()
            .await,
        "DeleteObject of a missing key",
    );
    // Raw check of the status code: 204.
    let resp = signed_send(
        &Signer::test(),
        "DELETE",
        &server().url(&format!("/{bucket}/never-existed-either")),
        &[],
        Vec::new(),
    )
    .await;
    assert_eq!(resp.status, 204, "DELETE missing key: {}", resp.text());
}

#[tokio::test]
async fn user_metadata_and_content_type_round_trip() {
    let (client, bucket) = new_bucket("meta").await;
    for (key, data) in [("small", payload(300, 1)), ("large", payload(MIB + 300, 2))] {
        ok(
            client
                .put_object()
                .bucket(&bucket)
                .key(key)
                .content_type("application/x-strata-test")
                .metadata("color", "blue")
                .metadata("shard-count", "9")
                .body(data.clone().into())
                .send()
                .await,
            "PutObject with metadata",
        );
        let head = ok(
            client.head_object().bucket(&bucket).key(key).send().await,
            "HeadObject",
        );
        assert_eq!(
            head.content_type(),
            Some("application/x-strata-test"),
            "{key}"
        );
        let meta = head.metadata().cloned().unwrap_or_default();
        assert_eq!(
            meta.get("color").map(String::as_str),
            Some("blue"),
            "{key}: {meta:?}"
        );
        assert_eq!(
            meta.get("shard-count").map(String::as_str),
            Some("9"),
            "{key}: {meta:?}"
        );

        let got = ok(
            client.get_object().bucket(&bucket).key(key).send().await,
            "GetObject",
        );
        assert_eq!(
            got.content_type(),
            Some("application/x-strata-test"),
            "{key}"
        );
        let meta = got.metadata().cloned().unwrap_or_default();
        assert_eq!(
            meta.get("color").map(String::as_str),
            Some("blue"),
            "{key}: {meta:?}"
        );
        let body = got.body.collect().await.unwrap().into_bytes();
        assert_same_bytes(&body, &data, key);
    }
}

/// User metadata beyond US-ASCII, as S3 carries it in headers: a value sent as raw UTF-8
/// (as Go's HTTP client sends it) or as RFC 2047 encoded-words is stored as its text and
/// answered as one UTF-8 encoded-word, "mail-safe"; a plain ASCII value as sent. Before,
/// raw UTF-8 came back raw and an encoded-word as sent, however it was encoded.
#[tokio::test]
async fn user_metadata_beyond_ascii_is_answered_as_encoded_words() {
    let (client, bucket) = new_bucket("utf8meta").await;
    let url = server().url(&format!("/{bucket}/cafe"));
    let headers = hdrs(&[
        ("x-amz-meta-raw", "café"),
        ("x-amz-meta-quoted", "=?UTF-8?Q?caf=C3=A9?="),
        ("x-amz-meta-latin", "=?ISO-8859-1?Q?caf=E9?="),
        ("x-amz-meta-plain", "au lait"),
    ]);
    let resp = signed_send(&Signer::test(), "PUT", &url, &headers, b"x".to_vec()).await;
    assert_eq!(resp.status, 200, "PUT with UTF-8 metadata: {}", resp.text());
    let head = ok(
        client
            .head_object()
            .bucket(&bucket)
            .key("cafe")
            .send()
            .await,
        "HeadObject",
    );
    let meta = head.metadata().cloned().unwrap_or_default();
    let cafe = "=?UTF-8?B?Y2Fmw6k=?=";
    for name in ["raw", "quoted", "latin"] {
        assert_eq!(
            meta.get(name).map(String::as_str),
            Some(cafe),
            "{name}: {meta:?}"
        );
    }
    assert_eq!(meta.get("plain").map(String::as_str), Some("au lait"));
}

#[tokio::test]
async fn overwrite_replaces_content_and_metadata() {
    let (client, bucket) = new_bucket("overwrite").await;
    let first = payload(3 * MIB + 5, 11);
    let second = payload(10 * KIB, 12);
    let third = payload(MIB + 1, 13);
    ok(
        client
            .put_object()
            .bucket(&bucket)
            .key("k")
            .metadata("version", "one")
            .body(first.clone().into())
            .send()
            .await,
        "first PUT",
    );
    assert_object(&client, &bucket, "k", &first).await;

    // Large → inline.
    put(&client, &bucket, "k", &second).await;
    assert_object(&client, &bucket, "k", &second).await;
    let head = ok(
        client.head_object().bucket(&bucket).key("k").send().await,
        "HEAD",
    );
    assert_eq!(head.e_tag(), Some(quoted_md5(&second).as_str()));
    assert!(
        head.metadata().is_none_or(|m| !m.contains_key("version")),
        "old metadata survived overwrite: {:?}",
        head.metadata()
    );

    // Inline → large.
    put(&client, &bucket, "k", &third).await;
    assert_object(&client, &bucket, "k", &third).await;
    let keys = list_all_keys(&client, &bucket, None).await;
    assert_eq!(
        keys,
        vec!["k".to_string()],
        "overwrite duplicated the key in listings"
    );
}

/// One ranged GET through the SDK: returns (body, Content-Range, Content-Length).
async fn ranged_get(
    client: &aws_sdk_s3::Client,
    bucket: &str,
    key: &str,
    range: &str,
) -> (Vec<u8>, Option<String>, Option<i64>) {
    let out = ok(
        client
            .get_object()
            .bucket(bucket)
            .key(key)
            .range(range)
            .send()
            .await,
        &format!("GetObject Range {range}"),
    );
    let content_range = out.content_range().map(str::to_owned);
    let len = out.content_length();
    let body = out.body.collect().await.unwrap().into_bytes().to_vec();
    (body, content_range, len)
}

#[tokio::test]
async fn range_requests_return_exact_slices() {
    let (client, bucket) = new_bucket("ranges").await;
    let size = 3 * MIB + 5;
    let data = payload(size, 21);
    put(&client, &bucket, "big", &data).await;
    let small = payload(10 * KIB, 22);
    put(&client, &bucket, "small", &small).await;

    // (key, object, Range header, expected first byte, expected last byte inclusive)
    let cases: Vec<(&str, &[u8], String, usize, usize)> = vec![
        ("big", &data, "bytes=0-9".into(), 0, 9),
        ("big", &data, "bytes=0-0".into(), 0, 0),
        // Crosses the first 1 MiB erasure block boundary.
        (
            "big",
            &data,
            "bytes=1048000-1049999".into(),
            1_048_000,
            1_049_999,
        ),
        // Crosses two block boundaries.
        (
            "big",
            &data,
            format!("bytes={}-{}", MIB - 1, 2 * MIB + 1),
            MIB - 1,
            2 * MIB + 1,
        ),
        // Suffix: last 100 bytes (in the last, short block).
        ("big", &data, "bytes=-100".into(), size - 100, size - 1),
        // Suffix longer than the object: whole object.
        ("big", &data, format!("bytes=-{}", size + 10), 0, size - 1),
        // Open-ended.
        ("big", &data, "bytes=3000000-".into(), 3_000_000, size - 1),
        // End past the object: truncated to the end.
        (
            "big",
            &data,
            format!("bytes={}-{}", size - 3, size + 1000),
            size - 3,
            size - 1,
        ),
        // Last byte exactly.
        (
            "big",
            &data,
            format!("bytes={}-", size - 1),
            size - 1,
            size - 1,
        ),
        // Inline object.
        ("small", &small, "bytes=100-4195".into(), 100, 4195),
        (
            "small",
            &small,
            "bytes=-1".into(),
            small.len() - 1,
            small.len() - 1,
        ),
    ];
    for (key, obj, range, first, last) in cases {
        let (body, content_range, len) = ranged_get(&client, &bucket, key, &range).await;
        assert_same_bytes(&body, &obj[first..=last], &format!("{key} Range {range}"));
        assert_eq!(
            len,
            Some((last - first + 1) as i64),
            "{key} Range {range}: Content-Length"
        );
        assert_eq!(
            content_range.as_deref(),
            Some(format!("bytes {first}-{last}/{}", obj.len()).as_str()),
            "{key} Range {range}: Content-Range"
        );
    }

    // The status code is 206 (raw request; the SDK hides it).
    let resp = signed_send(
        &Signer::test(),
        "GET",
        &server().url(&format!("/{bucket}/big")),
        &hdrs(&[("range", "bytes=1048570-1048579")]),
        Vec::new(),
    )
    .await;
    assert_eq!(resp.status, 206, "ranged GET status: {}", resp.text());
    assert_eq!(
        resp.header("content-range").as_deref(),
        Some(format!("bytes 1048570-1048579/{size}").as_str())
    );
    assert_same_bytes(&resp.body, &data[1_048_570..1_048_580], "raw ranged GET");
}

#[tokio::test]
async fn range_starting_at_or_past_the_end_is_invalid_range() {
    let (client, bucket) = new_bucket("badrange").await;
    let data = payload(MIB + 1, 31);
    put(&client, &bucket, "obj", &data).await;
    put(&client, &bucket, "one", b"x").await;
    put(&client, &bucket, "empty", b"").await;
    for (key, range) in [
        ("obj", format!("bytes={}-", data.len())),
        (
            "obj",
            format!("bytes={}-{}", data.len() + 5, data.len() + 10),
        ),
        ("one", "bytes=1-".to_string()),
        ("one", "bytes=5-9".to_string()),
        ("empty", "bytes=0-".to_string()),
        ("empty", "bytes=0-0".to_string()),
    ] {
        assert_s3_error(
            client
                .get_object()
                .bucket(&bucket)
                .key(key)
                .range(&range)
                .send()
                .await,
            416,
            "InvalidRange",
            &format!("{key} Range {range}"),
        );
    }
}

#[tokio::test]
async fn wrong_content_md5_is_bad_digest_and_keeps_old_object() {
    let (client, bucket) = new_bucket("baddigest").await;
    for (key, old, new) in [
        ("inline", payload(1000, 41), payload(2000, 42)),
        ("large", payload(2 * MIB + 1, 43), payload(2 * MIB + 2, 44)),
    ] {
        put(&client, &bucket, key, &old).await;
        let wrong_md5 = b64(&md5_bytes(b"something else entirely"));
        assert_s3_error(
            client
                .put_object()
                .bucket(&bucket)
                .key(key)
                .content_md5(wrong_md5)
                .body(new.clone().into())
                .send()
                .await,
            400,
            "BadDigest",
            &format!("{key}: PUT with wrong Content-MD5"),
        );
        assert_object(&client, &bucket, key, &old).await;

        // A wrong Content-MD5 on a new key creates nothing.
        let fresh = format!("{key}-fresh");
        assert_s3_error(
            client
                .put_object()
                .bucket(&bucket)
                .key(&fresh)
                .content_md5(b64(&md5_bytes(b"nope")))
                .body(new.clone().into())
                .send()
                .await,
            400,
            "BadDigest",
            &format!("{fresh}: PUT with wrong Content-MD5"),
        );
        assert_s3_status(
            client
                .head_object()
                .bucket(&bucket)
                .key(&fresh)
                .send()
                .await,
            404,
            "HEAD after rejected PUT",
        );

        // The right Content-MD5 is accepted.
        ok(
            client
                .put_object()
                .bucket(&bucket)
                .key(key)
                .content_md5(b64(&md5_bytes(&new)))
                .body(new.clone().into())
                .send()
                .await,
            "PUT with correct Content-MD5",
        );
        assert_object(&client, &bucket, key, &new).await;
    }
}

#[tokio::test]
async fn malformed_content_md5_is_invalid_digest() {
    let (client, bucket) = new_bucket("invdigest").await;
    for bad in ["not-base64!!", "AAAA"] {
        assert_s3_error(
            client
                .put_object()
                .bucket(&bucket)
                .key("k")
                .content_md5(bad)
                .body(b"hello".to_vec().into())
                .send()
                .await,
            400,
            "InvalidDigest",
            &format!("Content-MD5 {bad:?}"),
        );
    }
    assert_s3_status(
        client.head_object().bucket(&bucket).key("k").send().await,
        404,
        "HEAD after rejected PUTs",
    );
}

/// Expected base64 checksum value for `alg` over `data`.
fn expected_checksum(alg: &ChecksumAlgorithm, data: &[u8]) -> String {
    use crc_fast::CrcAlgorithm;
    use sha1::Digest as _;
    match alg {
        ChecksumAlgorithm::Crc32 => {
            b64(&(crc_fast::checksum(CrcAlgorithm::Crc32IsoHdlc, data) as u32).to_be_bytes())
        }
        ChecksumAlgorithm::Crc32C => {
            b64(&(crc_fast::checksum(CrcAlgorithm::Crc32Iscsi, data) as u32).to_be_bytes())
        }
        ChecksumAlgorithm::Crc64Nvme => {
            b64(&crc_fast::checksum(CrcAlgorithm::Crc64Nvme, data).to_be_bytes())
        }
        ChecksumAlgorithm::Sha1 => b64(&sha1::Sha1::digest(data)),
        ChecksumAlgorithm::Sha256 => b64(&sha2::Sha256::digest(data)),
        other => panic!("unexpected algorithm {other:?}"),
    }
}

fn checksum_field(
    alg: &ChecksumAlgorithm,
    crc32: Option<&str>,
    crc32c: Option<&str>,
    crc64: Option<&str>,
    sha1: Option<&str>,
    sha256: Option<&str>,
) -> Option<String> {
    match alg {
        ChecksumAlgorithm::Crc32 => crc32,
        ChecksumAlgorithm::Crc32C => crc32c,
        ChecksumAlgorithm::Crc64Nvme => crc64,
        ChecksumAlgorithm::Sha1 => sha1,
        ChecksumAlgorithm::Sha256 => sha256,
        _ => None,
    }
    .map(str::to_owned)
}

const ALGORITHMS: [ChecksumAlgorithm; 5] = [
    ChecksumAlgorithm::Crc32,
    ChecksumAlgorithm::Crc32C,
    ChecksumAlgorithm::Crc64Nvme,
    ChecksumAlgorithm::Sha1,
    ChecksumAlgorithm::Sha256,
];

#[tokio::test]
async fn flexible_checksums_are_stored_and_returned() {
    let (client, bucket) = new_bucket("checksums").await;
    let dir = tempfile::tempdir().unwrap();
    for (i, alg) in ALGORITHMS.iter().enumerate() {
        for (j, size) in [777usize, MIB + 3].into_iter().enumerate() {
            let data = payload(size, 500 + (i * 10 + j) as u64);
            let want = expected_checksum(alg, &data);
            // In-memory body: checksum in a header. File body: aws-chunked trailer.
            for streaming in [false, true] {
                let key = format!(
                    "{}-{size}-{}",
                    alg.as_str(),
                    if streaming { "trailer" } else { "header" }
                );
                let body = if streaming {
                    let path = dir.path().join(&key);
                    std::fs::write(&path, &data).unwrap();
                    ByteStream::from_path(&path).await.unwrap()
                } else {
                    data.clone().into()
                };
                let put = ok(
                    client
                        .put_object()
                        .bucket(&bucket)
                        .key(&key)
                        .checksum_algorithm(alg.clone())
                        .body(body)
                        .send()
                        .await,
                    &format!("PUT {key}"),
                );
                let got = checksum_field(
                    alg,
                    put.checksum_crc32(),
                    put.checksum_crc32_c(),
                    put.checksum_crc64_nvme(),
                    put.checksum_sha1(),
                    put.checksum_sha256(),
                );
                assert_eq!(
                    got.as_deref(),
                    Some(want.as_str()),
                    "PUT response checksum for {key}"
                );

                let head = ok(
                    client
                        .head_object()
                        .bucket(&bucket)
                        .key(&key)
                        .checksum_mode(ChecksumMode::Enabled)
                        .send()
                        .await,
                    &format!("HEAD {key}"),
                );
                let got = checksum_field(
                    alg,
                    head.checksum_crc32(),
                    head.checksum_crc32_c(),
                    head.checksum_crc64_nvme(),
                    head.checksum_sha1(),
                    head.checksum_sha256(),
                );
                assert_eq!(
                    got.as_deref(),
                    Some(want.as_str()),
                    "HEAD checksum for {key}"
                );

                // The SDK also validates the body against the returned checksum.
                let out = ok(
                    client
                        .get_object()
                        .bucket(&bucket)
                        .key(&key)
                        .checksum_mode(ChecksumMode::Enabled)
                        .send()
                        .await,
                    &format!("GET {key}"),
                );
                let got = checksum_field(
                    alg,
                    out.checksum_crc32(),
                    out.checksum_crc32_c(),
                    out.checksum_crc64_nvme(),
                    out.checksum_sha1(),
                    out.checksum_sha256(),
                );
                assert_eq!(
                    got.as_deref(),
                    Some(want.as_str()),
                    "GET checksum for {key}"
                );
                let body = out.body.collect().await.expect("GET body").into_bytes();
                assert_same_bytes(&body, &data, &key);
            }
        }
    }
}

#[tokio::test]
async fn wrong_flexible_checksum_is_bad_digest() {
    let (client, bucket) = new_bucket("badchecksum").await;
    let data = payload(64 * KIB, 61);
    let wrong_crc32 = b64(&0xDEAD_BEEFu32.to_be_bytes());
    assert_s3_error(
        client
            .put_object()
            .bucket(&bucket)
            .key("crc32")
            .checksum_crc32(wrong_crc32)
            .body(data.clone().into())
            .send()
            .await,
        400,
        "BadDigest",
        "PUT with wrong x-amz-checksum-crc32",
    );
    let wrong_sha256 = b64(&sha2::Sha256::digest(b"other"));
    let big = payload(MIB + 9, 62);
    assert_s3_error(
        client
            .put_object()
            .bucket(&bucket)
            .key("sha256")
            .checksum_sha256(wrong_sha256)
            .body(big.into())
            .send()
            .await,
        400,
        "BadDigest",
        "PUT with wrong x-amz-checksum-sha256",
    );
    for key in ["crc32", "sha256"] {
        assert_s3_status(
            client.head_object().bucket(&bucket).key(key).send().await,
            404,
            &format!("HEAD {key} after rejected PUT"),
        );
    }
}

#[tokio::test]
async fn slash_keys_coexist() {
    // Keys are database keys: `a`, `a/`, `a/b`, `a//b` are four different objects.
    let (client, bucket) = new_bucket("slashes").await;
    let keys = ["a", "a/", "a/b", "a//b", "a/b/c"];
    for (i, key) in keys.iter().enumerate() {
        let data = payload(100 + i, 70 + i as u64);
        put(&client, &bucket, key, &data).await;
    }
    // Also a large one under a "directory" that is itself an object.
    let big = payload(MIB + 17, 79);
    put(&client, &bucket, "a/big", &big).await;
    for (i, key) in keys.iter().enumerate() {
        assert_object(&client, &bucket, key, &payload(100 + i, 70 + i as u64)).await;
    }
    assert_object(&client, &bucket, "a/big", &big).await;
    let mut want: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    want.push("a/big".into());
    want.sort();
    assert_eq!(list_all_keys(&client, &bucket, None).await, want);

    // Deleting one leaves the others.
    ok(
        client
            .delete_object()
            .bucket(&bucket)
            .key("a/")
            .send()
            .await,
        "DeleteObject a/",
    );
    assert_object(&client, &bucket, "a", &payload(100, 70)).await;
    assert_object(&client, &bucket, "a/b", &payload(102, 72)).await;
    assert_s3_error(
        client.get_object().bucket(&bucket).key("a/").send().await,
        404,
        "NoSuchKey",
        "GET a/ after delete",
    );
}

#[tokio::test]
async fn special_character_keys_round_trip() {
    let (client, bucket) = new_bucket("specialkeys").await;
    let keys = [
        "with space",
        "  leading and trailing  ",
        "plus+sign",
        "percent%20literal",
        "percent%",
        "ünïcødé/日本語/файл",
        "emoji-😀",
        "question?mark",
        "hash#tag",
        "amp&eq=semi;colon",
        "tilde~star*paren(1)",
        "quote'double\"",
        "brackets[]{}<>",
        "back\\slash",
        "caret^pipe|backtick`",
        "comma,colon:at@dollar$",
        "dot.",
    ];
    for (i, key) in keys.iter().enumerate() {
        let data = payload(10 + i, 200 + i as u64);
        put(&client, &bucket, key, &data).await;
    }
    for (i, key) in keys.iter().enumerate() {
        assert_object(&client, &bucket, key, &payload(10 + i, 200 + i as u64)).await;
    }
    let mut want: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    want.sort();
    assert_eq!(
        list_all_keys(&client, &bucket, None).await,
        want,
        "listed keys"
    );
    for key in keys {
        ok(
            client.delete_object().bucket(&bucket).key(key).send().await,
            &format!("DeleteObject {key:?}"),
        );
    }
    assert!(list_all_keys(&client, &bucket, None).await.is_empty());
}

#[tokio::test]
async fn key_length_limit_is_1024_bytes() {
    let (client, bucket) = new_bucket("keylen").await;
    let max = "k".repeat(1024);
    put(&client, &bucket, &max, b"max length key").await;
    assert_object(&client, &bucket, &max, b"max length key").await;

    // Multi-byte characters: 256 four-byte characters = 1024 bytes.
    let max_utf8 = "😀".repeat(256);
    put(&client, &bucket, &max_utf8, b"utf8").await;
    assert_object(&client, &bucket, &max_utf8, b"utf8").await;

    let too_long = "k".repeat(1025);
    assert_s3_error(
        client
            .put_object()
            .bucket(&bucket)
            .key(&too_long)
            .body(b"x".to_vec().into())
            .send()
            .await,
        400,
        "KeyTooLongError",
        "PUT with 1025-byte key",
    );
    let too_long_utf8 = format!("{}a", "😀".repeat(256));
    assert_s3_error(
        client
            .put_object()
            .bucket(&bucket)
            .key(&too_long_utf8)
            .body(b"x".to_vec().into())
            .send()
            .await,
        400,
        "KeyTooLongError",
        "PUT with 1025-byte UTF-8 key",
    );
    let keys = list_all_keys(&client, &bucket, None).await;
    assert_eq!(keys.len(), 2, "only the two valid keys exist: {keys:?}");
}

#[tokio::test]
async fn missing_key_is_no_such_key() {
    let (client, bucket) = new_bucket("nosuchkey").await;
    put(&client, &bucket, "present", b"here").await;
    assert_s3_error(
        client
            .get_object()
            .bucket(&bucket)
            .key("absent")
            .send()
            .await,
        404,
        "NoSuchKey",
        "GET missing key",
    );
    assert_s3_status(
        client
            .head_object()
            .bucket(&bucket)
            .key("absent")
            .send()
            .await,
        404,
        "HEAD missing key",
    );
    // A prefix of an existing key is not an object.
    assert_s3_error(
        client.get_object().bucket(&bucket).key("pres").send().await,
        404,
        "NoSuchKey",
        "GET key prefix",
    );
    // The error body is S3 XML naming the code.
    let resp = signed_send(
        &Signer::test(),
        "GET",
        &server().url(&format!("/{bucket}/absent")),
        &[],
        Vec::new(),
    )
    .await;
    assert_eq!(resp.status, 404);
    assert_eq!(
        resp.xml_element("Code").as_deref(),
        Some("NoSuchKey"),
        "{}",
        resp.text()
    );
    assert!(
        resp.xml_element("Message").is_some(),
        "no Message: {}",
        resp.text()
    );
    assert!(
        resp.xml_element("RequestId").is_some(),
        "no RequestId: {}",
        resp.text()
    );
    assert!(
        resp.xml_element("Resource").is_some(),
        "no Resource: {}",
        resp.text()
    );
}

#[tokio::test]
async fn concurrent_overwrites_are_atomic_for_readers() {
    // One writer cycles a key through three payloads (inline and erasure-coded sizes) while
    // four readers GET it: every read is exactly one of the payloads, never a mix or an error.
    let (client, bucket) = new_bucket("atomic").await;
    let versions: Vec<Vec<u8>> = vec![
        payload(MIB + 333, 81),
        payload(100 * KIB, 82),
        payload(2 * MIB + 1, 83),
    ];
    put(&client, &bucket, "hot", &versions[0]).await;
    let hashes: Vec<String> = versions.iter().map(|v| sha256_hex(v)).collect();

    let writer = {
        let client = client.clone();
        let bucket = bucket.clone();
        let versions = versions.clone();
        tokio::spawn(async move {
            for i in 0..15 {
                put(&client, &bucket, "hot", &versions[i % versions.len()]).await;
            }
        })
    };
    let mut readers = Vec::new();
    for r in 0..4 {
        let client = client.clone();
        let bucket = bucket.clone();
        let hashes = hashes.clone();
        readers.push(tokio::spawn(async move {
            for i in 0..10 {
                let body = get(&client, &bucket, "hot").await;
                let h = sha256_hex(&body);
                assert!(
                    hashes.contains(&h),
                    "reader {r} read {i}: {} bytes matching none of the written payloads",
                    body.len()
                );
            }
        }));
    }
    writer.await.expect("writer");
    for r in readers {
        r.await.expect("reader");
    }
    // The last write wins.
    assert_object(&client, &bucket, "hot", &versions[14 % versions.len()]).await;
}

/// `aws-chunked` is how an SDK sends a body from a file (with a checksum trailer), not how
/// the object is encoded: it is not stored as its Content-Encoding, other codings are.
#[tokio::test]
async fn aws_chunked_is_not_kept_as_the_content_encoding() {
    let (client, bucket) = new_bucket("chunkedenc").await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("body");
    let data = payload(200 * KIB, 31);
    std::fs::write(&path, &data).unwrap();
    for (key, encoding) in [
        ("plain", None),
        ("gzipped", Some("gzip")),
        ("listed", Some("gzip, br")),
    ] {
        let body = ByteStream::from_path(&path).await.unwrap();
        ok(
            client
                .put_object()
                .bucket(&bucket)
                .key(key)
                .set_content_encoding(encoding.map(str::to_string))
                .body(body)
                .send()
                .await,
            "streaming PUT",
        );
        let head = ok(
            client.head_object().bucket(&bucket).key(key).send().await,
            "HEAD",
        );
        assert_eq!(head.content_encoding(), encoding, "{key}");
        assert_object(&client, &bucket, key, &data).await;
    }
    // Sent whole, a list of codings is kept as sent.
    ok(
        client
            .put_object()
            .bucket(&bucket)
            .key("whole")
            .content_encoding("gzip, br")
            .body(data.clone().into())
            .send()
            .await,
        "PUT",
    );
    let head = ok(
        client
            .head_object()
            .bucket(&bucket)
            .key("whole")
            .send()
            .await,
        "HEAD",
    );
    assert_eq!(head.content_encoding(), Some("gzip, br"));
}
