//! Server-side encryption through the AWS Rust SDK: SSE-S3, SSE-KMS with the built-in key
//! service, SSE-C, bucket default encryption, copies between them, ranges across package
//! boundaries, and what the drives hold (never the plaintext of an encrypted object).

mod common;

use std::path::Path;

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{
    ServerSideEncryption, ServerSideEncryptionByDefault, ServerSideEncryptionConfiguration,
    ServerSideEncryptionRule,
};
use aws_sdk_s3::Client;
use common::*;

/// The deployment master key the tests give the server (`<name>:<base64 of 32 bytes>`).
const MASTER_KEY: &str = "strata-test-key:AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=";
const MASTER_KEY_NAME: &str = "strata-test-key";
/// A client's SSE-C key and its MD5, and another one.
const KEY_A: &str = "pO3upElrwuEXSoFwCfnZPdSsmt/xWeFa0N9KgDijwVs=";
const KEY_A_MD5: &str = "DWygnHRtgiJ77HCm+1rvHw==";
const KEY_B: &str = "6b+WOZ1T3cqZMxgThRcXAQBrS5mXKdDUphvpxptl9/4=";
const KEY_B_MD5: &str = "arxBvwY2V4SiOne6yppVPQ==";

fn start() -> TestServer {
    start_with_env(&[])
}

/// A server with the test's master key, SSE-C over plain HTTP, and `more` variables.
fn start_with_env(more: &[(&str, &str)]) -> TestServer {
    let mut env = vec![
        ("STRATA_KMS_SECRET_KEY".to_string(), MASTER_KEY.to_string()),
        ("STRATA_SSE_C_ALLOW_HTTP".to_string(), "true".to_string()),
    ];
    env.extend(more.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    TestServer::start_with(ServerOptions {
        env,
        ..ServerOptions::default()
    })
}

/// `len` bytes of a pattern that names itself, so that a search of the drives can find
/// any stretch of it.
fn pattern(marker: &str, len: usize) -> Vec<u8> {
    marker.bytes().cycle().take(len).collect()
}

/// Whether any file under `dir` (shards, metadata databases) holds `needle`.
fn drives_hold(drives: &[std::path::PathBuf], needle: &[u8]) -> bool {
    fn walk(dir: &Path, needle: &[u8]) -> bool {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return false;
        };
        entries.flatten().any(|entry| {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, needle)
            } else {
                std::fs::read(&path)
                    .map(|data| data.windows(needle.len()).any(|w| w == needle))
                    .unwrap_or(false)
            }
        })
    }
    drives.iter().any(|drive| walk(drive, needle))
}

fn md5_hex(data: &[u8]) -> String {
    use md5::{Digest, Md5};
    hex::encode(Md5::digest(data))
}

async fn get_range(client: &Client, bucket: &str, key: &str, range: &str) -> Vec<u8> {
    let got = ok(
        client
            .get_object()
            .bucket(bucket)
            .key(key)
            .range(range)
            .send()
            .await,
        range,
    );
    got.body.collect().await.unwrap().into_bytes().to_vec()
}

#[tokio::test]
async fn sse_s3_objects_read_back_whole_and_in_ranges_and_the_drives_hold_no_plaintext() {
    let server = start();
    let client = server.client();
    create_bucket(&client, "secrets").await;
    // Several 64 KiB packages and 1 MiB blocks; and one small enough to live inline.
    let large = pattern("ENCRYPTED-LARGE-MARKER-0123456789|", 2_500_000);
    let small = pattern("ENCRYPTED-SMALL-MARKER-0123456789|", 3000);
    for (key, data) in [("large", &large), ("small", &small)] {
        let put = ok(
            client
                .put_object()
                .bucket("secrets")
                .key(key)
                .server_side_encryption(ServerSideEncryption::Aes256)
                .body(ByteStream::from(data.clone()))
                .send()
                .await,
            "put",
        );
        assert_eq!(
            put.server_side_encryption(),
            Some(&ServerSideEncryption::Aes256)
        );
        // SSE-S3 ETags are the plaintext's MD5, as on S3.
        let md5 = format!("\"{}\"", md5_hex(data));
        assert_eq!(put.e_tag(), Some(md5.as_str()), "{key}");
        let got = ok(
            client.get_object().bucket("secrets").key(key).send().await,
            "get",
        );
        assert_eq!(got.content_length(), Some(data.len() as i64));
        assert_eq!(
            got.server_side_encryption(),
            Some(&ServerSideEncryption::Aes256)
        );
        assert_eq!(
            &got.body.collect().await.unwrap().into_bytes()[..],
            &data[..]
        );
        let head = ok(
            client.head_object().bucket("secrets").key(key).send().await,
            "head",
        );
        assert_eq!(head.content_length(), Some(data.len() as i64));
    }
    // Ranges that start, end and straddle 64 KiB package boundaries, and suffixes.
    for (first, last) in [
        (0usize, 0usize),
        (65_530, 65_545),
        (65_536, 65_536),
        (131_000, 1_100_000),
        (2_499_990, 2_499_999),
    ] {
        let got = get_range(
            &client,
            "secrets",
            "large",
            &format!("bytes={first}-{last}"),
        )
        .await;
        assert_eq!(got, &large[first..=last], "bytes={first}-{last}");
    }
    assert_eq!(
        get_range(&client, "secrets", "large", "bytes=-70000").await,
        &large[large.len() - 70_000..]
    );
    assert_eq!(
        get_range(&client, "secrets", "small", "bytes=100-").await,
        &small[100..]
    );
    // Listings show the plaintext's size.
    let listed = ok(
        client.list_objects_v2().bucket("secrets").send().await,
        "list",
    );
    let sizes: Vec<_> = listed.contents().iter().map(|o| o.size()).collect();
    assert_eq!(sizes, [Some(large.len() as i64), Some(small.len() as i64)]);

    // The search finds what is stored in the clear, so its silence about the encrypted
    // objects means something.
    let clear = pattern("CLEAR-TEXT-MARKER-0123456789|", 300_000);
    put(&client, "secrets", "clear", &clear).await;
    server.kill();
    assert!(drives_hold(server.drives(), &clear[..64]));
    assert!(!drives_hold(server.drives(), &large[..32]));
    assert!(!drives_hold(server.drives(), &small[..32]));

    // After a restart the key service reopens the keys from its catalog.
    server.restart();
    let client = server.client();
    assert_object(&client, "secrets", "large", &large).await;
}

/// Puts `data` under SSE-S3.
async fn put_sse_s3(client: &Client, bucket: &str, key: &str, data: &[u8]) {
    let put = client
        .put_object()
        .bucket(bucket)
        .key(key)
        .server_side_encryption(ServerSideEncryption::Aes256)
        .body(ByteStream::from(data.to_vec()))
        .send()
        .await;
    ok(put, "put under SSE-S3");
}

/// A GET of `bucket`/`key` with SSE-C key A.
fn get_with_key_a(
    client: &Client,
    bucket: &str,
    key: &str,
) -> aws_sdk_s3::operation::get_object::builders::GetObjectFluentBuilder {
    client
        .get_object()
        .bucket(bucket)
        .key(key)
        .sse_customer_algorithm("AES256")
        .sse_customer_key(KEY_A)
        .sse_customer_key_md5(KEY_A_MD5)
}

fn sse_c_headers(
    put: aws_sdk_s3::operation::put_object::builders::PutObjectFluentBuilder,
    key: &str,
    md5: &str,
) -> aws_sdk_s3::operation::put_object::builders::PutObjectFluentBuilder {
    put.sse_customer_algorithm("AES256")
        .sse_customer_key(key)
        .sse_customer_key_md5(md5)
}

#[tokio::test]
async fn sse_c_objects_open_only_with_their_key() {
    let server = start();
    let client = server.client();
    create_bucket(&client, "customer").await;
    let data = pattern("CUSTOMER-KEY-MARKER-0123456789|", 200_000);
    let stored = ok(
        sse_c_headers(client.put_object(), KEY_A, KEY_A_MD5)
            .bucket("customer")
            .key("obj")
            .body(ByteStream::from(data.clone()))
            .send()
            .await,
        "put",
    );
    assert_eq!(stored.sse_customer_key_md5(), Some(KEY_A_MD5));
    // SSE-C ETags say nothing of the plaintext.
    let plain_md5 = format!("\"{}\"", md5_hex(&data));
    assert_ne!(stored.e_tag(), Some(plain_md5.as_str()));

    let without = client
        .get_object()
        .bucket("customer")
        .key("obj")
        .send()
        .await;
    assert_s3_error(without, 400, "InvalidRequest", "GET without the key");
    let head_without = client
        .head_object()
        .bucket("customer")
        .key("obj")
        .send()
        .await;
    assert_s3_status(head_without, 400, "HEAD without the key");
    let other = client
        .get_object()
        .bucket("customer")
        .key("obj")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(KEY_B)
        .sse_customer_key_md5(KEY_B_MD5)
        .send()
        .await;
    assert_s3_error(other, 403, "AccessDenied", "GET with another key");
    let bad_md5 = client
        .get_object()
        .bucket("customer")
        .key("obj")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(KEY_A)
        .sse_customer_key_md5(KEY_B_MD5)
        .send()
        .await;
    assert_s3_error(
        bad_md5,
        400,
        "InvalidArgument",
        "a key MD5 that does not match",
    );

    let got = ok(
        get_with_key_a(&client, "customer", "obj")
            .range("bytes=65000-140000")
            .send()
            .await,
        "ranged GET with the key",
    );
    assert_eq!(got.sse_customer_key_md5(), Some(KEY_A_MD5));
    let bytes = got.body.collect().await.unwrap().into_bytes();
    assert_eq!(&bytes[..], &data[65_000..=140_000]);
    let head = ok(
        client
            .head_object()
            .bucket("customer")
            .key("obj")
            .sse_customer_algorithm("AES256")
            .sse_customer_key(KEY_A)
            .sse_customer_key_md5(KEY_A_MD5)
            .send()
            .await,
        "HEAD with the key",
    );
    assert_eq!(head.content_length(), Some(data.len() as i64));

    // GetObjectAttributes tells an SSE-C object's size and checksums only with its key.
    use aws_sdk_s3::types::ObjectAttributes;
    let attributes = || {
        (client.get_object_attributes())
            .bucket("customer")
            .key("obj")
            .object_attributes(ObjectAttributes::ObjectSize)
    };
    let without = attributes().send().await;
    assert_s3_error(without, 400, "InvalidRequest", "attributes without the key");
    let with_key = attributes()
        .sse_customer_algorithm("AES256")
        .sse_customer_key(KEY_A)
        .sse_customer_key_md5(KEY_A_MD5)
        .send()
        .await;
    let with_key = ok(with_key, "attributes with the key");
    assert_eq!(with_key.object_size(), Some(data.len() as i64));

    // A key on an object stored in the clear does not apply.
    put(&client, "customer", "plain", b"in the clear").await;
    let misplaced = get_with_key_a(&client, "customer", "plain").send().await;
    assert_s3_error(misplaced, 400, "InvalidRequest", "a key for a plain object");
    server.kill();
    assert!(!drives_hold(server.drives(), &data[..32]));
}

#[tokio::test]
async fn sse_kms_uses_named_keys_and_refuses_unknown_ones() {
    let server = start();
    let client = server.client();
    create_bucket(&client, "kms").await;
    let data = pattern("KMS-MARKER-0123456789|", 100_000);
    let put = ok(
        client
            .put_object()
            .bucket("kms")
            .key("obj")
            .server_side_encryption(ServerSideEncryption::AwsKms)
            .ssekms_key_id(MASTER_KEY_NAME)
            .body(ByteStream::from(data.clone()))
            .send()
            .await,
        "put",
    );
    assert_eq!(
        put.server_side_encryption(),
        Some(&ServerSideEncryption::AwsKms)
    );
    assert_eq!(put.ssekms_key_id(), Some(MASTER_KEY_NAME));
    let got = ok(
        client.get_object().bucket("kms").key("obj").send().await,
        "get",
    );
    assert_eq!(got.ssekms_key_id(), Some(MASTER_KEY_NAME));
    assert_eq!(
        &got.body.collect().await.unwrap().into_bytes()[..],
        &data[..]
    );
    // Without a key id, the service's default key.
    let default = ok(
        client
            .put_object()
            .bucket("kms")
            .key("default")
            .server_side_encryption(ServerSideEncryption::AwsKms)
            .body(ByteStream::from_static(b"default key"))
            .send()
            .await,
        "put with the default key",
    );
    assert_eq!(default.ssekms_key_id(), Some(MASTER_KEY_NAME));
    let unknown = client
        .put_object()
        .bucket("kms")
        .key("unknown")
        .server_side_encryption(ServerSideEncryption::AwsKms)
        .ssekms_key_id("no-such-key")
        .body(ByteStream::from_static(b"x"))
        .send()
        .await;
    assert_s3_error(unknown, 400, "KMS.NotFoundException", "an unknown key");
    let not_declared = client
        .put_object()
        .bucket("kms")
        .key("undeclared")
        .ssekms_key_id(MASTER_KEY_NAME)
        .body(ByteStream::from_static(b"x"))
        .send()
        .await;
    assert_s3_error(
        not_declared,
        400,
        "InvalidArgument",
        "a key id without aws:kms",
    );
    let read_declared = client
        .get_object()
        .bucket("kms")
        .key("obj")
        .customize()
        .mutate_request(|r| {
            r.headers_mut()
                .insert("x-amz-server-side-encryption", "aws:kms");
        })
        .send()
        .await;
    assert_s3_error(read_declared, 400, "InvalidArgument", "SSE header on a GET");
    server.kill();
    assert!(!drives_hold(server.drives(), &data[..32]));
}

#[tokio::test]
async fn bucket_default_encryption_applies_to_uploads_that_ask_for_none() {
    let server = start();
    let client = server.client();
    create_bucket(&client, "defaults").await;
    let missing = client
        .get_bucket_encryption()
        .bucket("defaults")
        .send()
        .await;
    assert_s3_error(
        missing,
        404,
        "ServerSideEncryptionConfigurationNotFoundError",
        "no configuration yet",
    );
    let rule = ServerSideEncryptionRule::builder()
        .apply_server_side_encryption_by_default(
            ServerSideEncryptionByDefault::builder()
                .sse_algorithm(ServerSideEncryption::Aes256)
                .build()
                .unwrap(),
        )
        .build();
    let config = ServerSideEncryptionConfiguration::builder()
        .rules(rule)
        .build()
        .unwrap();
    ok(
        client
            .put_bucket_encryption()
            .bucket("defaults")
            .server_side_encryption_configuration(config)
            .send()
            .await,
        "put encryption",
    );
    let got = ok(
        client
            .get_bucket_encryption()
            .bucket("defaults")
            .send()
            .await,
        "get encryption",
    );
    let algorithm = got
        .server_side_encryption_configuration()
        .and_then(|c| c.rules().first())
        .and_then(|r| r.apply_server_side_encryption_by_default())
        .map(|d| d.sse_algorithm().clone());
    assert_eq!(algorithm, Some(ServerSideEncryption::Aes256));

    let data = pattern("DEFAULT-ENCRYPTION-MARKER-0123456789|", 50_000);
    let put = ok(
        client
            .put_object()
            .bucket("defaults")
            .key("obj")
            .body(ByteStream::from(data.clone()))
            .send()
            .await,
        "put",
    );
    assert_eq!(
        put.server_side_encryption(),
        Some(&ServerSideEncryption::Aes256)
    );
    assert_object(&client, "defaults", "obj", &data).await;
    // Multipart uploads get the default too.
    let created = ok(
        client
            .create_multipart_upload()
            .bucket("defaults")
            .key("big")
            .send()
            .await,
        "create",
    );
    assert_eq!(
        created.server_side_encryption(),
        Some(&ServerSideEncryption::Aes256)
    );

    ok(
        client
            .delete_bucket_encryption()
            .bucket("defaults")
            .send()
            .await,
        "delete encryption",
    );
    let plain = ok(
        client
            .put_object()
            .bucket("defaults")
            .key("plain")
            .body(ByteStream::from_static(b"plain"))
            .send()
            .await,
        "put after delete",
    );
    assert_eq!(plain.server_side_encryption(), None);
    server.kill();
    assert!(!drives_hold(server.drives(), &data[..32]));
}

#[tokio::test]
async fn copies_change_encryption_both_ways() {
    let server = start();
    let client = server.client();
    create_bucket(&client, "copies").await;
    let data = pattern("COPY-MARKER-0123456789|", 150_000);
    put(&client, "copies", "plain", &data).await;
    // Plain → SSE-C.
    ok(
        client
            .copy_object()
            .bucket("copies")
            .key("customer")
            .copy_source("copies/plain")
            .sse_customer_algorithm("AES256")
            .sse_customer_key(KEY_A)
            .sse_customer_key_md5(KEY_A_MD5)
            .send()
            .await,
        "plain to SSE-C",
    );
    // SSE-C → SSE-S3: the source's key comes in the copy-source headers.
    let without_source_key = client
        .copy_object()
        .bucket("copies")
        .key("s3")
        .copy_source("copies/customer")
        .server_side_encryption(ServerSideEncryption::Aes256)
        .send()
        .await;
    assert_s3_error(
        without_source_key,
        400,
        "InvalidRequest",
        "an SSE-C source without its key",
    );
    let copied = ok(
        client
            .copy_object()
            .bucket("copies")
            .key("s3")
            .copy_source("copies/customer")
            .copy_source_sse_customer_algorithm("AES256")
            .copy_source_sse_customer_key(KEY_A)
            .copy_source_sse_customer_key_md5(KEY_A_MD5)
            .server_side_encryption(ServerSideEncryption::Aes256)
            .send()
            .await,
        "SSE-C to SSE-S3",
    );
    assert_eq!(
        copied.server_side_encryption(),
        Some(&ServerSideEncryption::Aes256)
    );
    // SSE-S3 → SSE-KMS → plain.
    ok(
        client
            .copy_object()
            .bucket("copies")
            .key("kms")
            .copy_source("copies/s3")
            .server_side_encryption(ServerSideEncryption::AwsKms)
            .send()
            .await,
        "SSE-S3 to SSE-KMS",
    );
    ok(
        client
            .copy_object()
            .bucket("copies")
            .key("back")
            .copy_source("copies/kms")
            .send()
            .await,
        "SSE-KMS to plain",
    );
    for key in ["s3", "kms", "back"] {
        assert_object(&client, "copies", key, &data).await;
    }
    let customer = ok(
        get_with_key_a(&client, "copies", "customer").send().await,
        "read the SSE-C copy",
    );
    assert_eq!(
        &customer.body.collect().await.unwrap().into_bytes()[..],
        &data[..]
    );
    // In place: re-encrypting an object onto itself.
    ok(
        client
            .copy_object()
            .bucket("copies")
            .key("back")
            .copy_source("copies/back")
            .server_side_encryption(ServerSideEncryption::Aes256)
            .send()
            .await,
        "encrypt in place",
    );
    let head = ok(
        client
            .head_object()
            .bucket("copies")
            .key("back")
            .send()
            .await,
        "head",
    );
    assert_eq!(
        head.server_side_encryption(),
        Some(&ServerSideEncryption::Aes256)
    );
    assert_object(&client, "copies", "back", &data).await;
}

#[tokio::test]
async fn a_damaged_shard_of_an_encrypted_object_is_read_around() {
    let server = start();
    let client = server.client();
    create_bucket(&client, "bitrot").await;
    let data = pattern("BITROT-MARKER-0123456789|", 1_500_000);
    put_sse_s3(&client, "bitrot", "obj", &data).await;
    // Three drives' shards damaged: as many as parity covers.
    for drive in &server.drives()[..3] {
        for file in shard_files(drive) {
            flip_bytes(&file);
        }
    }
    assert_object(&client, "bitrot", "obj", &data).await;
    // Four more (flipping the first three again could undo their damage): whether or not
    // the read's heal repaired those three, more than parity is damaged now, and the answer
    // is an error, never wrong bytes.
    server.kill();
    for drive in &server.drives()[3..7] {
        for file in shard_files(drive) {
            flip_bytes(&file);
        }
    }
    server.restart();
    let client = server.client();
    match client.get_object().bucket("bitrot").key("obj").send().await {
        Err(e) => assert_eq!(status_of(&e), Some(503), "{}", describe(&e)),
        Ok(got) => {
            let body = got.body.collect().await;
            assert!(body.is_err(), "a read beyond parity must not return bytes");
        }
    }
}

#[tokio::test]
async fn without_a_key_service_sse_s3_is_refused_and_sse_c_needs_https() {
    let server = TestServer::start();
    let client = server.client();
    create_bucket(&client, "nokms").await;
    let sse_s3 = client
        .put_object()
        .bucket("nokms")
        .key("obj")
        .server_side_encryption(ServerSideEncryption::Aes256)
        .body(ByteStream::from_static(b"x"))
        .send()
        .await;
    assert_s3_error(
        sse_s3,
        501,
        "NotImplemented",
        "SSE-S3 without a key service",
    );
    let sse_c = sse_c_headers(client.put_object(), KEY_A, KEY_A_MD5)
        .bucket("nokms")
        .key("obj")
        .body(ByteStream::from_static(b"x"))
        .send()
        .await;
    assert_s3_error(sse_c, 400, "InvalidRequest", "SSE-C over plain HTTP");
    let listed = ok(
        client.list_objects_v2().bucket("nokms").send().await,
        "list",
    );
    assert!(listed.contents().is_empty(), "nothing was stored");
}

/// Uploads `parts` (each sent twice when `resend` names it: the second upload replaces the
/// first) to an upload created by `create`, completes it and returns the upload id.
async fn upload_parts(
    client: &Client,
    bucket: &str,
    key: &str,
    upload_id: &str,
    parts: &[Vec<u8>],
    customer: Option<(&str, &str)>,
) -> Vec<aws_sdk_s3::types::CompletedPart> {
    let mut completed = Vec::new();
    for (i, data) in parts.iter().enumerate() {
        let number = i as i32 + 1;
        let mut part = client
            .upload_part()
            .bucket(bucket)
            .key(key)
            .upload_id(upload_id)
            .part_number(number)
            .body(ByteStream::from(data.clone()));
        if let Some((key, md5)) = customer {
            part = part
                .sse_customer_algorithm("AES256")
                .sse_customer_key(key)
                .sse_customer_key_md5(md5);
        }
        let uploaded = ok(part.send().await, "upload part");
        // Each part's answer reports the upload's encryption.
        match customer {
            Some((_, md5)) => assert_eq!(uploaded.sse_customer_key_md5(), Some(md5)),
            None => assert_eq!(
                uploaded.server_side_encryption(),
                Some(&ServerSideEncryption::Aes256)
            ),
        }
        completed.push(
            aws_sdk_s3::types::CompletedPart::builder()
                .part_number(number)
                .e_tag(uploaded.e_tag().unwrap_or_default())
                .build(),
        );
    }
    completed
}

async fn complete(
    client: &Client,
    bucket: &str,
    key: &str,
    upload_id: &str,
    parts: Vec<aws_sdk_s3::types::CompletedPart>,
) -> aws_sdk_s3::operation::complete_multipart_upload::CompleteMultipartUploadOutput {
    ok(
        client
            .complete_multipart_upload()
            .bucket(bucket)
            .key(key)
            .upload_id(upload_id)
            .multipart_upload(
                aws_sdk_s3::types::CompletedMultipartUpload::builder()
                    .set_parts(Some(parts))
                    .build(),
            )
            .send()
            .await,
        "complete",
    )
}

#[tokio::test]
async fn multipart_uploads_are_sealed_part_by_part() {
    let server = start();
    let client = server.client();
    create_bucket(&client, "parts").await;
    let parts = vec![
        pattern("MULTIPART-ONE-MARKER-0123456789|", 5 * MIB),
        pattern("MULTIPART-TWO-MARKER-0123456789|", 5 * MIB + 12_345),
        pattern("MULTIPART-THREE-MARKER-01234567|", 700_000),
    ];
    let whole: Vec<u8> = parts.concat();
    let created = ok(
        client
            .create_multipart_upload()
            .bucket("parts")
            .key("obj")
            .server_side_encryption(ServerSideEncryption::Aes256)
            .send()
            .await,
        "create",
    );
    let upload_id = created.upload_id().unwrap().to_string();
    // Part 2 is sent twice, first with other bytes: the second replaces it.
    upload_parts(
        &client,
        "parts",
        "obj",
        &upload_id,
        &[parts[0].clone(), vec![7u8; 5 * MIB]],
        None,
    )
    .await;
    let completed = upload_parts(&client, "parts", "obj", &upload_id, &parts, None).await;
    let listed = ok(
        client
            .list_parts()
            .bucket("parts")
            .key("obj")
            .upload_id(&upload_id)
            .send()
            .await,
        "list parts",
    );
    let sizes: Vec<_> = listed.parts().iter().map(|p| p.size()).collect();
    let want: Vec<_> = parts.iter().map(|p| Some(p.len() as i64)).collect();
    assert_eq!(sizes, want, "ListParts shows the plaintext sizes");
    let done = complete(&client, "parts", "obj", &upload_id, completed).await;
    assert_eq!(
        done.server_side_encryption(),
        Some(&ServerSideEncryption::Aes256)
    );
    assert_object(&client, "parts", "obj", &whole).await;
    // Ranges across part and package boundaries, and a part by number.
    let boundary = parts[0].len();
    for (first, last) in [
        (boundary - 10, boundary + 10),
        (65_530, boundary + 70_000),
        (whole.len() - 5, whole.len() - 1),
    ] {
        let got = get_range(&client, "parts", "obj", &format!("bytes={first}-{last}")).await;
        assert_eq!(got, &whole[first..=last], "bytes={first}-{last}");
    }
    let second = ok(
        client
            .get_object()
            .bucket("parts")
            .key("obj")
            .part_number(2)
            .send()
            .await,
        "part 2",
    );
    assert_eq!(second.content_length(), Some(parts[1].len() as i64));
    assert_eq!(
        &second.body.collect().await.unwrap().into_bytes()[..],
        &parts[1][..]
    );

    // SSE-C: every part brings the key; a part without it is refused.
    let created = ok(
        client
            .create_multipart_upload()
            .bucket("parts")
            .key("customer")
            .sse_customer_algorithm("AES256")
            .sse_customer_key(KEY_A)
            .sse_customer_key_md5(KEY_A_MD5)
            .send()
            .await,
        "create SSE-C",
    );
    let upload_id = created.upload_id().unwrap().to_string();
    let keyless = client
        .upload_part()
        .bucket("parts")
        .key("customer")
        .upload_id(&upload_id)
        .part_number(1)
        .body(ByteStream::from_static(b"no key"))
        .send()
        .await;
    assert_s3_status(keyless, 400, "a part without the upload's key");
    // A part under another key is refused as a GET under another key is, and not kept.
    let other_key = client
        .upload_part()
        .bucket("parts")
        .key("customer")
        .upload_id(&upload_id)
        .part_number(1)
        .sse_customer_algorithm("AES256")
        .sse_customer_key(KEY_B)
        .sse_customer_key_md5(KEY_B_MD5)
        .body(ByteStream::from_static(b"another key"))
        .send()
        .await;
    assert_s3_error(other_key, 403, "AccessDenied", "a part under another key");
    let listed = ok(
        (client.list_parts().bucket("parts").key("customer"))
            .upload_id(&upload_id)
            .send()
            .await,
        "list parts",
    );
    assert!(listed.parts().is_empty(), "{listed:?}");
    let completed = upload_parts(
        &client,
        "parts",
        "customer",
        &upload_id,
        &parts,
        Some((KEY_A, KEY_A_MD5)),
    )
    .await;
    complete(&client, "parts", "customer", &upload_id, completed).await;
    let got = ok(
        get_with_key_a(&client, "parts", "customer").send().await,
        "GET SSE-C multipart",
    );
    assert_eq!(
        &got.body.collect().await.unwrap().into_bytes()[..],
        &whole[..]
    );
    let without = client
        .get_object()
        .bucket("parts")
        .key("customer")
        .send()
        .await;
    assert_s3_error(without, 400, "InvalidRequest", "GET without the key");

    server.kill();
    for part in &parts {
        assert!(!drives_hold(server.drives(), &part[..32]));
    }
}

/// A second master key, for rotation.
const NEW_MASTER_KEY: &str = "strata-test-key-2:ISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+P0A=";

fn admin_ok(server: &TestServer, args: &[&str]) -> String {
    let out = strata_admin(server, args);
    assert!(
        out.status.success(),
        "strata admin {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test]
async fn keys_are_managed_with_strata_admin_and_the_master_key_rotates() {
    let server = start();
    let client = server.client();
    create_bucket(&client, "managed").await;
    assert!(admin_ok(&server, &["kms", "key", "create", "datasets"]).contains("datasets"));
    let listed = admin_ok(&server, &["kms", "key", "list"]);
    assert!(
        listed.contains("datasets") && listed.contains(MASTER_KEY_NAME),
        "{listed}"
    );
    let data = pattern("MANAGED-KEY-MARKER-0123456789|", 70_000);
    let kms_put = |key: &'static str| {
        client
            .put_object()
            .bucket("managed")
            .key(key)
            .server_side_encryption(ServerSideEncryption::AwsKms)
            .ssekms_key_id("datasets")
            .body(ByteStream::from(data.clone()))
            .send()
    };
    ok(kms_put("obj").await, "put under datasets");
    put_sse_s3(&client, "managed", "s3", &data).await;

    // A disabled key neither seals nor opens.
    admin_ok(&server, &["kms", "key", "disable", "datasets"]);
    assert!(admin_ok(&server, &["kms", "key", "status", "datasets"]).contains("disabled"));
    let read = client
        .get_object()
        .bucket("managed")
        .key("obj")
        .send()
        .await;
    assert_s3_error(
        read,
        400,
        "KMS.DisabledException",
        "GET under a disabled key",
    );
    assert_s3_error(kms_put("new").await, 400, "KMS.DisabledException", "PUT");
    admin_ok(&server, &["kms", "key", "enable", "datasets"]);
    let status = admin_ok(&server, &["kms", "key", "status", "datasets"]);
    assert!(status.contains("Encryption: works"), "{status}");
    assert_object(&client, "managed", "obj", &data).await;

    // Rotation: the new master key with the old one as previous, re-seal, then the new one
    // alone opens everything.
    server.kill();
    let rotating = TestServer::start_with(ServerOptions {
        drives: Some(server.drives().to_vec()),
        env: vec![
            ("STRATA_KMS_SECRET_KEY".into(), NEW_MASTER_KEY.into()),
            ("STRATA_KMS_PREVIOUS_SECRET_KEYS".into(), MASTER_KEY.into()),
        ],
        ..ServerOptions::default()
    });
    let rotated = admin_ok(&rotating, &["kms", "rotate"]);
    assert!(rotated.contains("Re-sealed"), "{rotated}");
    rotating.kill();
    let after = TestServer::start_with(ServerOptions {
        drives: Some(server.drives().to_vec()),
        env: vec![("STRATA_KMS_SECRET_KEY".into(), NEW_MASTER_KEY.into())],
        ..ServerOptions::default()
    });
    let client = after.client();
    assert_object(&client, "managed", "obj", &data).await;
    assert_object(&client, "managed", "s3", &data).await;
}

#[tokio::test]
async fn a_replaced_drive_is_rebuilt_with_sealed_shards_that_stand_in_for_others() {
    let server = start_with_env(&[("STRATA_DRIVE_CHECK_SECS", "1")]);
    let client = server.client();
    create_bucket(&client, "healed").await;
    let data = pattern("HEALED-MARKER-0123456789|", 2_000_000);
    put_sse_s3(&client, "healed", "s3", &data).await;
    ok(
        sse_c_headers(client.put_object(), KEY_A, KEY_A_MD5)
            .bucket("healed")
            .key("customer")
            .body(ByteStream::from(data.clone()))
            .send()
            .await,
        "put SSE-C",
    );
    // The disk of drive 3 dies and an empty one takes its place while the server runs.
    let replaced = server.drives()[2].clone();
    std::fs::remove_dir_all(&replaced).unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    std::fs::create_dir_all(&replaced).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !server.log().contains("heal pass done") {
        assert!(std::time::Instant::now() < deadline, "no heal pass");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert!(!shard_files(&replaced).is_empty(), "the drive was rebuilt");
    // Three other drives' shards damaged: the rebuilt drive must stand in for them.
    server.kill();
    for drive in &server.drives()[3..6] {
        for file in shard_files(drive) {
            flip_bytes(&file);
        }
    }
    server.restart();
    let client = server.client();
    assert_object(&client, "healed", "s3", &data).await;
    let got = ok(
        get_with_key_a(&client, "healed", "customer").send().await,
        "get",
    );
    assert_eq!(
        &got.body.collect().await.unwrap().into_bytes()[..],
        &data[..]
    );
}

#[tokio::test]
async fn versions_keep_their_own_encryption_and_policies_can_require_it() {
    let server = start();
    let client = server.client();
    create_bucket(&client, "versions").await;
    set_versioning(
        &client,
        "versions",
        aws_sdk_s3::types::BucketVersioningStatus::Enabled,
    )
    .await;
    let first = ok(
        client
            .put_object()
            .bucket("versions")
            .key("obj")
            .server_side_encryption(ServerSideEncryption::Aes256)
            .body(ByteStream::from_static(b"first, under SSE-S3"))
            .send()
            .await,
        "v1",
    );
    let second = ok(
        sse_c_headers(client.put_object(), KEY_A, KEY_A_MD5)
            .bucket("versions")
            .key("obj")
            .body(ByteStream::from_static(b"second, under SSE-C"))
            .send()
            .await,
        "v2",
    );
    let v1 = ok(
        client
            .get_object()
            .bucket("versions")
            .key("obj")
            .version_id(first.version_id().unwrap())
            .send()
            .await,
        "GET v1",
    );
    assert_eq!(
        &v1.body.collect().await.unwrap().into_bytes()[..],
        b"first, under SSE-S3"
    );
    let v2 = ok(
        get_with_key_a(&client, "versions", "obj")
            .version_id(second.version_id().unwrap())
            .send()
            .await,
        "GET v2",
    );
    assert_eq!(
        &v2.body.collect().await.unwrap().into_bytes()[..],
        b"second, under SSE-C"
    );
    // The newest needs its key.
    let keyless = client
        .get_object()
        .bucket("versions")
        .key("obj")
        .send()
        .await;
    assert_s3_error(keyless, 400, "InvalidRequest", "the SSE-C newest version");

    // A bucket policy that refuses uploads asking for no encryption (S3's documented way).
    let policy = r#"{"Version": "2012-10-17", "Statement": [{
        "Effect": "Deny", "Principal": "*", "Action": "s3:PutObject",
        "Resource": "arn:aws:s3:::versions/*",
        "Condition": {"Null": {"s3:x-amz-server-side-encryption": "true"}}}]}"#;
    ok(
        client
            .put_bucket_policy()
            .bucket("versions")
            .policy(policy)
            .send()
            .await,
        "policy",
    );
    let plain = client
        .put_object()
        .bucket("versions")
        .key("plain")
        .body(ByteStream::from_static(b"x"))
        .send()
        .await;
    assert_s3_error(plain, 403, "AccessDenied", "an upload without encryption");
    ok(
        client
            .put_object()
            .bucket("versions")
            .key("sealed")
            .server_side_encryption(ServerSideEncryption::Aes256)
            .body(ByteStream::from_static(b"x"))
            .send()
            .await,
        "an upload with encryption",
    );
}

#[tokio::test]
async fn a_key_service_whose_catalog_cannot_be_read_yet_answers_503_until_it_can() {
    let server = start_with_env(&[("STRATA_DRIVE_CHECK_SECS", "1")]);
    let client = server.client();
    create_bucket(&client, "waiting").await;
    let data = pattern("WAITING-MARKER-0123456789|", 300_000);
    put_sse_s3(&client, "waiting", "obj", &data).await;
    // Four drives gone at the start: nothing can be read, the key catalog included.
    server.kill();
    let away: Vec<_> = server.drives()[..4]
        .iter()
        .map(|drive| {
            let moved = drive.with_extension("away");
            std::fs::rename(drive, &moved).unwrap();
            (drive.clone(), moved)
        })
        .collect();
    server.restart();
    let client = server.client();
    let put = client
        .put_object()
        .bucket("waiting")
        .key("new")
        .server_side_encryption(ServerSideEncryption::Aes256)
        .body(ByteStream::from_static(b"x"))
        .send()
        .await;
    assert_eq!(status_of(&put.unwrap_err()), Some(503));
    // The drives come back: the service opens, and everything reads as before.
    for (drive, moved) in &away {
        std::fs::rename(moved, drive).unwrap();
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        match client
            .get_object()
            .bucket("waiting")
            .key("obj")
            .send()
            .await
        {
            Ok(got) => {
                let bytes = got.body.collect().await.unwrap().into_bytes();
                assert_eq!(&bytes[..], &data[..]);
                break;
            }
            Err(e) => {
                assert_eq!(status_of(&e), Some(503), "{}", describe(&e));
                assert!(
                    std::time::Instant::now() < deadline,
                    "still {}",
                    describe(&e)
                );
                tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            }
        }
    }
}

/// An encryption a test object or upload is made with.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Sealed {
    Plain,
    S3,
    Kms,
    CustomerA,
}

const EVERY_SEAL: [Sealed; 4] = [Sealed::Plain, Sealed::S3, Sealed::Kms, Sealed::CustomerA];

/// What a response says of its encryption: the algorithm, the KMS key, the SSE-C key MD5.
fn said(
    algorithm: Option<&ServerSideEncryption>,
    kms_key: Option<&str>,
    customer_md5: Option<&str>,
) -> Sealed {
    match (algorithm, kms_key, customer_md5) {
        (_, _, Some(md5)) => {
            assert_eq!(md5, KEY_A_MD5);
            Sealed::CustomerA
        }
        (Some(ServerSideEncryption::AwsKms), Some(key), None) => {
            assert_eq!(key, MASTER_KEY_NAME);
            Sealed::Kms
        }
        (Some(ServerSideEncryption::Aes256), _, None) => Sealed::S3,
        (None, None, None) => Sealed::Plain,
        other => panic!("an answer that says {other:?}"),
    }
}

/// UploadPartCopy answers with the destination upload's encryption (and its SSE-C key's
/// MD5), whatever the source's, and the completed object reads back under it, for every
/// pair of source and destination encryption.
#[tokio::test]
async fn copied_parts_report_the_uploads_encryption_for_every_pair() {
    use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
    let server = start();
    let client = server.client();
    create_bucket(&client, "parts").await;
    for source in EVERY_SEAL {
        let data = pattern(&format!("COPIED-PART-{source:?}|"), 150_000);
        let put = client
            .put_object()
            .bucket("parts")
            .key(format!("source-{source:?}"))
            .body(ByteStream::from(data.clone()));
        let put = match source {
            Sealed::Plain => put,
            Sealed::S3 => put.server_side_encryption(ServerSideEncryption::Aes256),
            Sealed::Kms => put
                .server_side_encryption(ServerSideEncryption::AwsKms)
                .ssekms_key_id(MASTER_KEY_NAME),
            Sealed::CustomerA => sse_c_headers(put, KEY_A, KEY_A_MD5),
        };
        ok(put.send().await, &format!("PUT {source:?}"));
        for destination in EVERY_SEAL {
            let key = format!("copy-{source:?}-into-{destination:?}");
            let create = client.create_multipart_upload().bucket("parts").key(&key);
            let create = match destination {
                Sealed::Plain => create,
                Sealed::S3 => create.server_side_encryption(ServerSideEncryption::Aes256),
                Sealed::Kms => create
                    .server_side_encryption(ServerSideEncryption::AwsKms)
                    .ssekms_key_id(MASTER_KEY_NAME),
                Sealed::CustomerA => create
                    .sse_customer_algorithm("AES256")
                    .sse_customer_key(KEY_A)
                    .sse_customer_key_md5(KEY_A_MD5),
            };
            let id = ok(create.send().await, &key)
                .upload_id()
                .unwrap()
                .to_string();
            let copy = client
                .upload_part_copy()
                .bucket("parts")
                .key(&key)
                .upload_id(&id)
                .part_number(1)
                .copy_source(format!("parts/source-{source:?}"));
            let copy = match source {
                Sealed::CustomerA => copy
                    .copy_source_sse_customer_algorithm("AES256")
                    .copy_source_sse_customer_key(KEY_A)
                    .copy_source_sse_customer_key_md5(KEY_A_MD5),
                _ => copy,
            };
            let copy = match destination {
                Sealed::CustomerA => copy
                    .sse_customer_algorithm("AES256")
                    .sse_customer_key(KEY_A)
                    .sse_customer_key_md5(KEY_A_MD5),
                _ => copy,
            };
            let copied = ok(copy.send().await, &format!("UploadPartCopy {key}"));
            let reported = said(
                copied.server_side_encryption(),
                copied.ssekms_key_id(),
                copied.sse_customer_key_md5(),
            );
            assert_eq!(reported, destination, "UploadPartCopy of {key}");
            let part = CompletedPart::builder()
                .part_number(1)
                .e_tag(copied.copy_part_result().unwrap().e_tag().unwrap())
                .build();
            let done = client
                .complete_multipart_upload()
                .bucket("parts")
                .key(&key)
                .upload_id(&id)
                .multipart_upload(CompletedMultipartUpload::builder().parts(part).build());
            let done = match destination {
                Sealed::CustomerA => done
                    .sse_customer_algorithm("AES256")
                    .sse_customer_key(KEY_A)
                    .sse_customer_key_md5(KEY_A_MD5),
                _ => done,
            };
            let done = ok(done.send().await, &format!("Complete {key}"));
            // S3's CompleteMultipartUpload answer names no SSE-C key.
            if destination != Sealed::CustomerA {
                let reported = said(done.server_side_encryption(), done.ssekms_key_id(), None);
                assert_eq!(reported, destination, "CompleteMultipartUpload of {key}");
            }
            let get = match destination {
                Sealed::CustomerA => get_with_key_a(&client, "parts", &key),
                _ => client.get_object().bucket("parts").key(&key),
            };
            let got = ok(get.send().await, &format!("GET {key}"));
            let reported = said(
                got.server_side_encryption(),
                got.ssekms_key_id(),
                got.sse_customer_key_md5(),
            );
            assert_eq!(reported, destination, "GET of {key}");
            let body = got.body.collect().await.unwrap().into_bytes();
            assert!(body[..] == data[..], "{key}: the bytes read back differ");
        }
    }
}
