//! CopyObject: same and cross bucket, metadata and tagging directives, copying onto itself,
//! copy-source conditions, large and multipart sources, checksums and errors.

mod common;

use aws_sdk_s3::primitives::{ByteStream, DateTime};
use aws_sdk_s3::types::{
    ChecksumAlgorithm, ChecksumMode, MetadataDirective, StorageClass, TaggingDirective,
};
use common::*;

/// `x-amz-copy-source` for a key, URL-encoded as the SDKs send it.
fn source(bucket: &str, key: &str) -> String {
    format!("{bucket}/{}", url_encode_key(key))
}

async fn put_described(client: &aws_sdk_s3::Client, bucket: &str, key: &str, data: &[u8]) {
    ok(
        client
            .put_object()
            .bucket(bucket)
            .key(key)
            .body(data.to_vec().into())
            .content_type("text/csv")
            .content_disposition("attachment; filename=\"train.csv\"")
            .cache_control("max-age=60")
            .metadata("dataset", "imagenet")
            .tagging("stage=raw&owner=ml")
            .send()
            .await,
        "PutObject with metadata",
    );
}

#[tokio::test]
async fn copy_within_and_across_buckets_keeps_bytes_metadata_and_tags() {
    let (client, bucket) = new_bucket("copy").await;
    let other = unique_bucket("copy-dst");
    create_bucket(&client, &other).await;
    let data = payload(3 * MIB + 17, 1);
    put_described(&client, &bucket, "src.csv", &data).await;

    for (dst_bucket, dst_key) in [(&bucket, "same-bucket.csv"), (&other, "dir/other.csv")] {
        let out = ok(
            client
                .copy_object()
                .bucket(dst_bucket)
                .key(dst_key)
                .copy_source(source(&bucket, "src.csv"))
                .send()
                .await,
            "CopyObject",
        );
        let result = out.copy_object_result().expect("CopyObjectResult");
        assert_eq!(result.e_tag(), Some(quoted_md5(&data).as_str()));
        assert!(result.last_modified().is_some());

        assert_object(&client, dst_bucket, dst_key, &data).await;
        let head = ok(
            client
                .head_object()
                .bucket(dst_bucket)
                .key(dst_key)
                .send()
                .await,
            "HeadObject copy",
        );
        assert_eq!(head.content_type(), Some("text/csv"));
        assert_eq!(
            head.content_disposition(),
            Some("attachment; filename=\"train.csv\"")
        );
        assert_eq!(head.cache_control(), Some("max-age=60"));
        assert_eq!(
            head.metadata()
                .and_then(|m| m.get("dataset"))
                .map(String::as_str),
            Some("imagenet")
        );
        let tags = ok(
            client
                .get_object_tagging()
                .bucket(dst_bucket)
                .key(dst_key)
                .send()
                .await,
            "GetObjectTagging copy",
        );
        let mut pairs: Vec<_> = tags
            .tag_set()
            .iter()
            .map(|t| (t.key(), t.value()))
            .collect();
        pairs.sort();
        assert_eq!(pairs, vec![("owner", "ml"), ("stage", "raw")]);
    }
    // The source is untouched.
    assert_object(&client, &bucket, "src.csv", &data).await;
}

#[tokio::test]
async fn replace_directives_take_metadata_and_tags_from_the_request() {
    let (client, bucket) = new_bucket("copy-replace").await;
    let data = payload(1000, 2);
    put_described(&client, &bucket, "src", &data).await;
    ok(
        client
            .copy_object()
            .bucket(&bucket)
            .key("dst")
            .copy_source(source(&bucket, "src"))
            .metadata_directive(MetadataDirective::Replace)
            .content_type("application/json")
            .metadata("dataset", "coco")
            .tagging_directive(TaggingDirective::Replace)
            .tagging("stage=clean")
            .send()
            .await,
        "CopyObject REPLACE",
    );
    let head = ok(
        client.head_object().bucket(&bucket).key("dst").send().await,
        "HeadObject",
    );
    assert_eq!(head.content_type(), Some("application/json"));
    assert_eq!(
        head.content_disposition(),
        None,
        "REPLACE drops what is not given"
    );
    assert_eq!(
        head.metadata()
            .and_then(|m| m.get("dataset"))
            .map(String::as_str),
        Some("coco")
    );
    let tags = ok(
        client
            .get_object_tagging()
            .bucket(&bucket)
            .key("dst")
            .send()
            .await,
        "GetObjectTagging",
    );
    let pairs: Vec<_> = tags
        .tag_set()
        .iter()
        .map(|t| (t.key(), t.value()))
        .collect();
    assert_eq!(pairs, vec![("stage", "clean")]);
    assert_eq!(get(&client, &bucket, "dst").await, data);
}

#[tokio::test]
async fn copying_onto_itself_needs_a_change_and_keeps_the_data() {
    let (client, bucket) = new_bucket("copy-self").await;
    // Erasure-coded (above the inline limit), so the data folder must survive the rewrite.
    let data = payload(2 * MIB + 5, 3);
    put_described(&client, &bucket, "ckpt", &data).await;
    let before = ok(
        client
            .head_object()
            .bucket(&bucket)
            .key("ckpt")
            .send()
            .await,
        "HeadObject",
    );

    let unchanged = client
        .copy_object()
        .bucket(&bucket)
        .key("ckpt")
        .copy_source(source(&bucket, "ckpt"))
        .send()
        .await;
    assert_s3_error(
        unchanged,
        400,
        "InvalidRequest",
        "self-copy without a change",
    );

    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    ok(
        client
            .copy_object()
            .bucket(&bucket)
            .key("ckpt")
            .copy_source(source(&bucket, "ckpt"))
            .metadata_directive(MetadataDirective::Replace)
            .content_type("application/octet-stream")
            .metadata("step", "1000")
            .send()
            .await,
        "CopyObject onto itself with REPLACE",
    );
    let after = ok(
        client
            .head_object()
            .bucket(&bucket)
            .key("ckpt")
            .send()
            .await,
        "HeadObject",
    );
    assert_eq!(after.content_type(), Some("application/octet-stream"));
    assert_eq!(
        after
            .metadata()
            .and_then(|m| m.get("step"))
            .map(String::as_str),
        Some("1000")
    );
    assert_eq!(after.metadata().and_then(|m| m.get("dataset")), None);
    assert_eq!(after.e_tag(), before.e_tag(), "same bytes, same ETag");
    assert!(
        after.last_modified() > before.last_modified(),
        "a copy is a new write"
    );
    assert_object(&client, &bucket, "ckpt", &data).await;
    // Tags were not replaced (COPY is the tagging default).
    let tags = ok(
        client
            .get_object_tagging()
            .bucket(&bucket)
            .key("ckpt")
            .send()
            .await,
        "GetObjectTagging",
    );
    assert_eq!(tags.tag_set().len(), 2);

    // A storage class change is a change too.
    ok(
        client
            .copy_object()
            .bucket(&bucket)
            .key("ckpt")
            .copy_source(source(&bucket, "ckpt"))
            .storage_class(StorageClass::ReducedRedundancy)
            .send()
            .await,
        "CopyObject onto itself with a storage class",
    );
    let head = ok(
        client
            .head_object()
            .bucket(&bucket)
            .key("ckpt")
            .send()
            .await,
        "HeadObject",
    );
    assert_eq!(head.storage_class(), Some(&StorageClass::ReducedRedundancy));
    assert_object(&client, &bucket, "ckpt", &data).await;
}

#[tokio::test]
async fn copy_source_conditions_decide_as_s3() {
    let (client, bucket) = new_bucket("copy-cond").await;
    let data = payload(500, 4);
    let etag = put(&client, &bucket, "src", &data).await;
    let head = ok(
        client.head_object().bucket(&bucket).key("src").send().await,
        "HeadObject",
    );
    let modified = head.last_modified().unwrap().secs();
    let earlier = DateTime::from_secs(modified - 3600);
    let later = DateTime::from_secs(modified + 3600);
    let copy = || {
        client
            .copy_object()
            .bucket(&bucket)
            .key("dst")
            .copy_source(source(&bucket, "src"))
    };

    ok(copy().copy_source_if_match(&etag).send().await, "if-match");
    assert_s3_error(
        copy().copy_source_if_match("\"0000\"").send().await,
        412,
        "PreconditionFailed",
        "PreconditionFailed expected",
    );
    ok(
        copy().copy_source_if_none_match("\"0000\"").send().await,
        "if-none-match other",
    );
    assert_s3_error(
        copy().copy_source_if_none_match(&etag).send().await,
        412,
        "PreconditionFailed",
        "PreconditionFailed expected",
    );
    ok(
        copy().copy_source_if_modified_since(earlier).send().await,
        "if-modified-since earlier",
    );
    assert_s3_error(
        copy().copy_source_if_modified_since(later).send().await,
        412,
        "PreconditionFailed",
        "PreconditionFailed expected",
    );
    ok(
        copy().copy_source_if_unmodified_since(later).send().await,
        "if-unmodified-since later",
    );
    assert_s3_error(
        copy().copy_source_if_unmodified_since(earlier).send().await,
        412,
        "PreconditionFailed",
        "PreconditionFailed expected",
    );
    // S3: if-match true and if-unmodified-since false together copy.
    ok(
        copy()
            .copy_source_if_match(&etag)
            .copy_source_if_unmodified_since(earlier)
            .send()
            .await,
        "if-match wins over if-unmodified-since",
    );
    assert_eq!(get(&client, &bucket, "dst").await, data);
}

#[tokio::test]
async fn multipart_and_large_sources_copy_byte_identical() {
    let (client, bucket) = new_bucket("copy-big").await;
    let part1 = payload(5 * MIB, 5);
    let part2 = payload(3 * MIB + 333, 6);
    multipart_put(&client, &bucket, "multi", &[&part1, &part2]).await;
    let whole: Vec<u8> = [part1.as_slice(), part2.as_slice()].concat();
    let out = ok(
        client
            .copy_object()
            .bucket(&bucket)
            .key("multi-copy")
            .copy_source(source(&bucket, "multi"))
            .send()
            .await,
        "CopyObject of a multipart object",
    );
    // The copy is written in one piece: its ETag is the MD5 of the bytes.
    assert_eq!(
        out.copy_object_result().and_then(|r| r.e_tag()),
        Some(quoted_md5(&whole).as_str())
    );
    assert_object(&client, &bucket, "multi-copy", &whole).await;

    let big = payload(24 * MIB + 1, 7);
    put(&client, &bucket, "big", &big).await;
    ok(
        client
            .copy_object()
            .bucket(&bucket)
            .key("big-copy")
            .copy_source(source(&bucket, "big"))
            .send()
            .await,
        "CopyObject 24 MiB",
    );
    assert_object(&client, &bucket, "big-copy", &big).await;
}

#[tokio::test]
async fn keys_with_special_characters_copy() {
    let (client, bucket) = new_bucket("copy-keys").await;
    let data = payload(77, 8);
    let key = "data set/ünïcode+plus%percent?&=.bin";
    put(&client, &bucket, key, &data).await;
    ok(
        client
            .copy_object()
            .bucket(&bucket)
            .key("copied/ünïcode + more")
            .copy_source(source(&bucket, key))
            .send()
            .await,
        "CopyObject with special characters",
    );
    assert_eq!(get(&client, &bucket, "copied/ünïcode + more").await, data);
}

#[tokio::test]
async fn the_source_checksum_algorithm_is_kept_and_a_new_one_can_be_asked_for() {
    let (client, bucket) = new_bucket("copy-sum").await;
    let data = payload(4 * MIB, 9);
    ok(
        client
            .put_object()
            .bucket(&bucket)
            .key("src")
            .body(ByteStream::from(data.clone()))
            .checksum_algorithm(ChecksumAlgorithm::Sha256)
            .send()
            .await,
        "PutObject with SHA256",
    );
    let sha = checksum_b64("SHA256", &data);
    let crc = checksum_b64("CRC32C", &data);
    let out = ok(
        client
            .copy_object()
            .bucket(&bucket)
            .key("kept")
            .copy_source(source(&bucket, "src"))
            .send()
            .await,
        "CopyObject",
    );
    assert_eq!(
        out.copy_object_result().and_then(|r| r.checksum_sha256()),
        Some(sha.as_str())
    );
    let out = ok(
        client
            .copy_object()
            .bucket(&bucket)
            .key("new")
            .copy_source(source(&bucket, "src"))
            .checksum_algorithm(ChecksumAlgorithm::Crc32C)
            .send()
            .await,
        "CopyObject asking for CRC32C",
    );
    assert_eq!(
        out.copy_object_result().and_then(|r| r.checksum_crc32_c()),
        Some(crc.as_str())
    );
    let head = ok(
        client
            .head_object()
            .bucket(&bucket)
            .key("new")
            .checksum_mode(ChecksumMode::Enabled)
            .send()
            .await,
        "HeadObject with checksum mode",
    );
    assert_eq!(head.checksum_crc32_c(), Some(crc.as_str()));
}

#[tokio::test]
async fn missing_sources_and_bad_directives_are_s3_errors() {
    let (client, bucket) = new_bucket("copy-err").await;
    put(&client, &bucket, "present", b"x").await;
    assert_s3_error(
        client
            .copy_object()
            .bucket(&bucket)
            .key("dst")
            .copy_source(source(&bucket, "absent"))
            .send()
            .await,
        404,
        "NoSuchKey",
        "NoSuchKey expected",
    );
    assert_s3_error(
        client
            .copy_object()
            .bucket(&bucket)
            .key("dst")
            .copy_source(source("no-such-bucket-for-copy", "k"))
            .send()
            .await,
        404,
        "NoSuchBucket",
        "NoSuchBucket expected",
    );
    assert_s3_error(
        client
            .copy_object()
            .bucket("no-such-bucket-for-copy")
            .key("dst")
            .copy_source(source(&bucket, "present"))
            .send()
            .await,
        404,
        "NoSuchBucket",
        "NoSuchBucket expected",
    );
    assert_s3_error(
        client
            .copy_object()
            .bucket(&bucket)
            .key("dst")
            .copy_source(source(&bucket, "present"))
            .metadata_directive(MetadataDirective::from("MOVE"))
            .send()
            .await,
        400,
        "InvalidArgument",
        "InvalidArgument expected",
    );
    // Nothing was written by the failed copies.
    assert_s3_status(
        client.head_object().bucket(&bucket).key("dst").send().await,
        404,
        "HEAD of a never-written copy",
    );
}

#[tokio::test]
async fn concurrent_copies_and_overwrites_leave_one_whole_object() {
    let (client, bucket) = new_bucket("copy-race").await;
    let a = payload(2 * MIB, 10);
    let b = payload(2 * MIB + 9, 11);
    put(&client, &bucket, "a", &a).await;
    put(&client, &bucket, "b", &b).await;
    let mut tasks = Vec::new();
    for i in 0..8 {
        let client = client.clone();
        let bucket = bucket.clone();
        tasks.push(tokio::spawn(async move {
            let from = if i % 2 == 0 { "a" } else { "b" };
            client
                .copy_object()
                .bucket(&bucket)
                .key("target")
                .copy_source(source(&bucket, from))
                .send()
                .await
                .map(|_| ())
                .map_err(|e| describe(&e))
        }));
    }
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    let got = get(&client, &bucket, "target").await;
    assert!(got == a || got == b, "the target is one source, whole");
}
