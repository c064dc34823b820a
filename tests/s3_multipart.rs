//! Multipart uploads: create, upload parts, complete (body and ETag), abort, re-uploaded parts,
//! ListParts, ListMultipartUploads, UploadPartCopy, GET/HEAD by part number, conditional
//! Complete/PUT, per-part and full-object checksums, and S3's multipart rules and errors
//! (issue 4; research/reliability.md 1.5 and 3.3).
//!
//! Concurrency, crashes, stale-upload expiry and degraded reads, which need a server of their
//! own, are in `s3_multipart_concurrency.rs`.

mod common;

use std::time::{Duration, SystemTime};

use aws_sdk_s3::primitives::DateTime;
use aws_sdk_s3::types::{
    ChecksumAlgorithm, ChecksumMode, ChecksumType, CompletedMultipartUpload, CompletedPart,
    StorageClass,
};
use aws_sdk_s3::Client;
use common::*;

async fn create_upload(client: &Client, bucket: &str, key: &str) -> String {
    let out = ok(
        client
            .create_multipart_upload()
            .bucket(bucket)
            .key(key)
            .send()
            .await,
        "CreateMultipartUpload",
    );
    assert_eq!(out.bucket(), Some(bucket), "echoed Bucket");
    assert_eq!(out.key(), Some(key), "echoed Key");
    let id = out.upload_id().expect("UploadId").to_string();
    assert!(!id.is_empty(), "empty UploadId");
    id
}

fn completion(parts: &[(i32, &str)]) -> CompletedMultipartUpload {
    CompletedMultipartUpload::builder()
        .set_parts(Some(
            parts
                .iter()
                .map(|(n, etag)| {
                    CompletedPart::builder()
                        .part_number(*n)
                        .e_tag(*etag)
                        .build()
                })
                .collect(),
        ))
        .build()
}

#[tokio::test]
async fn three_part_upload_completes_to_the_concatenation() {
    let (client, bucket) = new_bucket("mpu").await;
    let key = "checkpoints/model.bin";
    let p1 = payload(5 * MIB, 1);
    let p2 = payload(5 * MIB, 2);
    let p3 = payload(MIB, 3);

    let id = create_upload(&client, &bucket, key).await;
    let e1 = upload_part(&client, &bucket, key, &id, 1, &p1).await;
    let e2 = upload_part(&client, &bucket, key, &id, 2, &p2).await;
    let e3 = upload_part(&client, &bucket, key, &id, 3, &p3).await;

    // Not visible before Complete.
    assert_s3_error(
        client.get_object().bucket(&bucket).key(key).send().await,
        404,
        "NoSuchKey",
        "GET before CompleteMultipartUpload",
    );

    let out = ok(
        client
            .complete_multipart_upload()
            .bucket(&bucket)
            .key(key)
            .upload_id(&id)
            .multipart_upload(completion(&[(1, &e1), (2, &e2), (3, &e3)]))
            .send()
            .await,
        "CompleteMultipartUpload",
    );
    let want_etag = multipart_etag(&[&p1, &p2, &p3]);
    assert_eq!(out.e_tag(), Some(want_etag.as_str()), "Complete ETag");
    assert_eq!(out.bucket(), Some(bucket.as_str()));
    assert_eq!(out.key(), Some(key));

    let whole = [p1.as_slice(), &p2, &p3].concat();
    assert_object(&client, &bucket, key, &whole).await;
    let head = ok(
        client.head_object().bucket(&bucket).key(key).send().await,
        "HEAD",
    );
    assert_eq!(head.e_tag(), Some(want_etag.as_str()), "HEAD ETag");

    // Ranges across part boundaries.
    let start = 5 * MIB - 10;
    let end = 10 * MIB + 10;
    let out = ok(
        client
            .get_object()
            .bucket(&bucket)
            .key(key)
            .range(format!("bytes={start}-{end}"))
            .send()
            .await,
        "ranged GET across parts",
    );
    let body = out.body.collect().await.unwrap().into_bytes();
    assert_same_bytes(&body, &whole[start..=end], "range across part boundaries");

    let keys = list_all_keys(&client, &bucket, None).await;
    assert_eq!(keys, vec![key.to_string()]);

    // The upload is gone once completed.
    assert_s3_error(
        client
            .upload_part()
            .bucket(&bucket)
            .key(key)
            .upload_id(&id)
            .part_number(4)
            .body(b"late".to_vec().into())
            .send()
            .await,
        404,
        "NoSuchUpload",
        "UploadPart after Complete",
    );
}

/// An upload whose only part is empty completes, and GET `?partNumber=1` answers its empty
/// body with 200 and no Content-Range (its range had no last byte: `bytes 0--1` underflowed,
/// a panic in debug builds).
#[tokio::test]
async fn the_empty_part_of_an_object_reads_as_an_empty_body() {
    let (client, bucket) = new_bucket("mpuempty").await;
    let id = create_upload(&client, &bucket, "empty").await;
    let e1 = upload_part(&client, &bucket, "empty", &id, 1, b"").await;
    ok(
        (client.complete_multipart_upload())
            .bucket(&bucket)
            .key("empty")
            .upload_id(&id)
            .multipart_upload(completion(&[(1, &e1)]))
            .send()
            .await,
        "Complete with one empty part",
    );
    let got = client
        .get_object()
        .bucket(&bucket)
        .key("empty")
        .part_number(1)
        .send()
        .await;
    let got = ok(got, "GET ?partNumber=1 of an empty part");
    assert_eq!(got.content_length(), Some(0));
    assert_eq!(got.content_range(), None);
    assert_eq!(got.parts_count(), Some(1));
    assert!(got.body.collect().await.unwrap().into_bytes().is_empty());
}

#[tokio::test]
async fn single_small_part_upload_completes() {
    // The last (here: only) part may be smaller than 5 MiB.
    let (client, bucket) = new_bucket("mpusmall").await;
    let p1 = payload(100 * KIB, 9);
    let id = create_upload(&client, &bucket, "small").await;
    let e1 = upload_part(&client, &bucket, "small", &id, 1, &p1).await;
    let out = ok(
        client
            .complete_multipart_upload()
            .bucket(&bucket)
            .key("small")
            .upload_id(&id)
            .multipart_upload(completion(&[(1, &e1)]))
            .send()
            .await,
        "Complete",
    );
    assert_eq!(out.e_tag(), Some(multipart_etag(&[&p1]).as_str()));
    assert_object(&client, &bucket, "small", &p1).await;
}

/// SDKs send a CompleteMultipartUpload again when the first one timed out; S3 answers the
/// retry with the same result (it used to be 404 NoSuchUpload, failing the whole upload).
#[tokio::test]
async fn a_completion_sent_again_gets_the_same_answer() {
    for versioned in [false, true] {
        let (client, bucket) = new_bucket("mpuretry").await;
        if versioned {
            let enabled = aws_sdk_s3::types::BucketVersioningStatus::Enabled;
            set_versioning(&client, &bucket, enabled).await;
        }
        let (p1, p2) = (payload(5 * MIB, 21), payload(KIB, 22));
        let id = create_upload(&client, &bucket, "ckpt").await;
        let e1 = upload_part(&client, &bucket, "ckpt", &id, 1, &p1).await;
        let e2 = upload_part(&client, &bucket, "ckpt", &id, 2, &p2).await;
        let complete = |parts: &[(i32, &str)]| {
            client
                .complete_multipart_upload()
                .bucket(&bucket)
                .key("ckpt")
                .upload_id(&id)
                .multipart_upload(completion(parts))
                .send()
        };
        let first = ok(complete(&[(1, &e1), (2, &e2)]).await, "Complete");
        let again = ok(complete(&[(1, &e1), (2, &e2)]).await, "Complete again");
        assert_eq!(again.e_tag(), first.e_tag(), "versioned {versioned}");
        assert_eq!(
            again.version_id(),
            first.version_id(),
            "versioned {versioned}"
        );
        assert_object(&client, &bucket, "ckpt", &[p1.as_slice(), &p2].concat()).await;

        // Other parts than those completed: the upload is gone.
        let other_parts = complete(&[(1, &e1)]).await;
        assert_s3_error(other_parts, 404, "NoSuchUpload", "other parts");
        // An object written over it since: the upload is gone too (in a versioned bucket
        // its version is still there, so the retry still succeeds).
        put(&client, &bucket, "ckpt", b"newer").await;
        let after = complete(&[(1, &e1), (2, &e2)]).await;
        if versioned {
            assert_eq!(ok(after, "Complete after a PUT").e_tag(), first.e_tag());
        } else {
            assert_s3_error(after, 404, "NoSuchUpload", "after a PUT");
        }
    }
}

#[tokio::test]
async fn multipart_overwrites_existing_object() {
    let (client, bucket) = new_bucket("mpuoverwrite").await;
    put(&client, &bucket, "k", &payload(3 * MIB, 5)).await;
    let p1 = payload(5 * MIB, 6);
    let p2 = payload(KIB, 7);
    let etag = multipart_put(&client, &bucket, "k", &[&p1, &p2]).await;
    assert_eq!(etag, multipart_etag(&[&p1, &p2]));
    assert_object(&client, &bucket, "k", &[p1.as_slice(), &p2].concat()).await;
}

#[tokio::test]
async fn aborted_upload_is_no_such_upload() {
    let (client, bucket) = new_bucket("mpuabort").await;
    let key = "aborted";
    let p1 = payload(5 * MIB, 11);
    let id = create_upload(&client, &bucket, key).await;
    let e1 = upload_part(&client, &bucket, key, &id, 1, &p1).await;

    ok(
        client
            .abort_multipart_upload()
            .bucket(&bucket)
            .key(key)
            .upload_id(&id)
            .send()
            .await,
        "AbortMultipartUpload",
    );
    assert_s3_error(
        client
            .upload_part()
            .bucket(&bucket)
            .key(key)
            .upload_id(&id)
            .part_number(2)
            .body(b"more".to_vec().into())
            .send()
            .await,
        404,
        "NoSuchUpload",
        "UploadPart after Abort",
    );
    assert_s3_error(
        client
            .complete_multipart_upload()
            .bucket(&bucket)
            .key(key)
            .upload_id(&id)
            .multipart_upload(completion(&[(1, &e1)]))
            .send()
            .await,
        404,
        "NoSuchUpload",
        "Complete after Abort",
    );
    assert_s3_error(
        client.get_object().bucket(&bucket).key(key).send().await,
        404,
        "NoSuchKey",
        "GET of an aborted upload's key",
    );
    // The bucket holds nothing and can be deleted.
    assert!(list_all_keys(&client, &bucket, None).await.is_empty());
    ok(
        client.delete_bucket().bucket(&bucket).send().await,
        "DeleteBucket after abort",
    );
}

#[tokio::test]
async fn unknown_upload_id_is_no_such_upload() {
    let (client, bucket) = new_bucket("mpuunknown").await;
    let bogus = "this-upload-id-does-not-exist";
    assert_s3_error(
        client
            .upload_part()
            .bucket(&bucket)
            .key("k")
            .upload_id(bogus)
            .part_number(1)
            .body(b"x".to_vec().into())
            .send()
            .await,
        404,
        "NoSuchUpload",
        "UploadPart with unknown id",
    );
    assert_s3_error(
        client
            .complete_multipart_upload()
            .bucket(&bucket)
            .key("k")
            .upload_id(bogus)
            .multipart_upload(completion(&[(1, "\"00000000000000000000000000000000\"")]))
            .send()
            .await,
        404,
        "NoSuchUpload",
        "Complete with unknown id",
    );
    assert_s3_error(
        client
            .abort_multipart_upload()
            .bucket(&bucket)
            .key("k")
            .upload_id(bogus)
            .send()
            .await,
        404,
        "NoSuchUpload",
        "Abort with unknown id",
    );
    // An upload id used with another key.
    let id = create_upload(&client, &bucket, "real-key").await;
    assert_s3_error(
        client
            .upload_part()
            .bucket(&bucket)
            .key("other-key")
            .upload_id(&id)
            .part_number(1)
            .body(b"x".to_vec().into())
            .send()
            .await,
        404,
        "NoSuchUpload",
        "UploadPart with another key's upload id",
    );
}

#[tokio::test]
async fn reuploaded_part_replaces_the_old_one() {
    let (client, bucket) = new_bucket("mpureupload").await;
    let key = "replaced";
    let old1 = payload(5 * MIB, 21);
    let new1 = payload(5 * MIB, 22);
    let p2 = payload(MIB + 3, 23);

    let id = create_upload(&client, &bucket, key).await;
    let old_e1 = upload_part(&client, &bucket, key, &id, 1, &old1).await;
    let e2 = upload_part(&client, &bucket, key, &id, 2, &p2).await;
    let new_e1 = upload_part(&client, &bucket, key, &id, 1, &new1).await;
    assert_ne!(old_e1, new_e1);

    // Completing with the replaced part's ETag fails: that part no longer exists.
    assert_s3_error(
        client
            .complete_multipart_upload()
            .bucket(&bucket)
            .key(key)
            .upload_id(&id)
            .multipart_upload(completion(&[(1, &old_e1), (2, &e2)]))
            .send()
            .await,
        400,
        "InvalidPart",
        "Complete with the replaced part's ETag",
    );
    assert_s3_error(
        client.get_object().bucket(&bucket).key(key).send().await,
        404,
        "NoSuchKey",
        "GET after failed Complete",
    );

    // The upload survives a failed Complete; the new part is used.
    let out = ok(
        client
            .complete_multipart_upload()
            .bucket(&bucket)
            .key(key)
            .upload_id(&id)
            .multipart_upload(completion(&[(1, &new_e1), (2, &e2)]))
            .send()
            .await,
        "Complete with the new part",
    );
    assert_eq!(out.e_tag(), Some(multipart_etag(&[&new1, &p2]).as_str()));
    assert_object(&client, &bucket, key, &[new1.as_slice(), &p2].concat()).await;
}

#[tokio::test]
async fn complete_with_subset_of_parts_uses_only_listed_parts() {
    // Parts 1, 2, 3 uploaded; Complete lists 1 and 3 only.
    let (client, bucket) = new_bucket("mpusubset").await;
    let key = "subset";
    let p1 = payload(5 * MIB, 31);
    let p2 = payload(5 * MIB, 32);
    let p3 = payload(KIB, 33);
    let id = create_upload(&client, &bucket, key).await;
    let e1 = upload_part(&client, &bucket, key, &id, 1, &p1).await;
    let _e2 = upload_part(&client, &bucket, key, &id, 2, &p2).await;
    let e3 = upload_part(&client, &bucket, key, &id, 3, &p3).await;
    let out = ok(
        client
            .complete_multipart_upload()
            .bucket(&bucket)
            .key(key)
            .upload_id(&id)
            .multipart_upload(completion(&[(1, &e1), (3, &e3)]))
            .send()
            .await,
        "Complete with parts 1 and 3",
    );
    assert_eq!(out.e_tag(), Some(multipart_etag(&[&p1, &p3]).as_str()));
    assert_object(&client, &bucket, key, &[p1.as_slice(), &p3].concat()).await;
}

// -------------------------------------------------------------------------------------------
// Helpers for the issue-4 tests below.

type CompleteBuilder =
    aws_sdk_s3::operation::complete_multipart_upload::builders::CompleteMultipartUploadFluentBuilder;

/// CompleteMultipartUpload of `parts` (not sent: callers add conditions and send).
fn complete_req(
    client: &Client,
    bucket: &str,
    key: &str,
    upload_id: &str,
    parts: &[(i32, &str)],
) -> CompleteBuilder {
    client
        .complete_multipart_upload()
        .bucket(bucket)
        .key(key)
        .upload_id(upload_id)
        .multipart_upload(completion(parts))
}

/// Signed raw request with an empty body to the shared server.
async fn raw(method: &str, path_and_query: &str, headers: &[(&str, &str)]) -> RawResponse {
    signed_send(
        &Signer::test(),
        method,
        &server().url(path_and_query),
        &hdrs(headers),
        Vec::new(),
    )
    .await
}

/// Part numbers of one ListParts page.
fn numbers(parts: &[aws_sdk_s3::types::Part]) -> Vec<i32> {
    parts
        .iter()
        .map(|p| p.part_number().unwrap_or(-1))
        .collect()
}

/// Every part of an upload, following ListParts pages of `max_parts`.
async fn list_all_parts(
    client: &Client,
    bucket: &str,
    key: &str,
    upload_id: &str,
    max_parts: Option<i32>,
) -> Vec<aws_sdk_s3::types::Part> {
    let mut out = Vec::new();
    let mut marker: Option<String> = None;
    for _ in 0..10_000 {
        let page = ok(
            client
                .list_parts()
                .bucket(bucket)
                .key(key)
                .upload_id(upload_id)
                .set_max_parts(max_parts)
                .set_part_number_marker(marker.clone())
                .send()
                .await,
            "ListParts",
        );
        out.extend(page.parts().iter().cloned());
        if page.is_truncated() != Some(true) {
            return out;
        }
        marker = Some(
            page.next_part_number_marker()
                .expect("truncated ListParts page without NextPartNumberMarker")
                .to_string(),
        );
    }
    panic!("ListParts never stopped being truncated");
}

/// (key, upload id) of every upload, following ListMultipartUploads pages of `max`.
async fn list_all_uploads(
    client: &Client,
    bucket: &str,
    prefix: Option<&str>,
    max: Option<i32>,
) -> (Vec<(String, String)>, usize) {
    let mut out = Vec::new();
    let mut key_marker: Option<String> = None;
    let mut id_marker: Option<String> = None;
    let mut pages = 0;
    loop {
        pages += 1;
        assert!(
            pages < 1000,
            "ListMultipartUploads never stopped being truncated"
        );
        let page = ok(
            client
                .list_multipart_uploads()
                .bucket(bucket)
                .set_prefix(prefix.map(str::to_owned))
                .set_max_uploads(max)
                .set_key_marker(key_marker.clone())
                .set_upload_id_marker(id_marker.clone())
                .send()
                .await,
            "ListMultipartUploads",
        );
        if let Some(max) = max {
            assert!(
                page.uploads().len() <= max as usize,
                "page of {} uploads with max-uploads={max}",
                page.uploads().len()
            );
        }
        for u in page.uploads() {
            out.push((
                u.key().unwrap_or_default().to_string(),
                u.upload_id().unwrap_or_default().to_string(),
            ));
        }
        if page.is_truncated() != Some(true) {
            return (out, pages);
        }
        key_marker = Some(
            page.next_key_marker()
                .expect("truncated page without NextKeyMarker")
                .to_string(),
        );
        id_marker = Some(
            page.next_upload_id_marker()
                .expect("truncated page without NextUploadIdMarker")
                .to_string(),
        );
    }
}

/// The field of `algorithm` among the checksum fields of an SDK output.
fn pick(
    algorithm: &ChecksumAlgorithm,
    crc32: Option<&str>,
    crc32c: Option<&str>,
    crc64nvme: Option<&str>,
    sha1: Option<&str>,
    sha256: Option<&str>,
) -> Option<String> {
    match algorithm {
        ChecksumAlgorithm::Crc32 => crc32,
        ChecksumAlgorithm::Crc32C => crc32c,
        ChecksumAlgorithm::Crc64Nvme => crc64nvme,
        ChecksumAlgorithm::Sha1 => sha1,
        ChecksumAlgorithm::Sha256 => sha256,
        other => panic!("unexpected algorithm {other:?}"),
    }
    .map(str::to_owned)
}

/// A small upload with `n` parts (a few KiB each: ListParts does not need 5 MiB parts);
/// returns the upload id and the parts' data.
async fn upload_small_parts(
    client: &Client,
    bucket: &str,
    key: &str,
    n: i32,
    seed: u64,
) -> (String, Vec<Vec<u8>>) {
    let id = create_upload(client, bucket, key).await;
    let mut parts = Vec::new();
    for i in 1..=n {
        let data = payload(1000 * i as usize + 17, seed + i as u64);
        upload_part(client, bucket, key, &id, i, &data).await;
        parts.push(data);
    }
    (id, parts)
}

fn secs(t: &DateTime) -> i64 {
    t.secs()
}

fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

// -------------------------------------------------------------------------------------------
// ListParts.

#[tokio::test]
async fn list_parts_shows_every_part_with_etag_size_and_time() {
    let (client, bucket) = new_bucket("listparts").await;
    let key = "dir/list parts+ß.bin";
    let id = create_upload(&client, &bucket, key).await;
    let start = now_secs();
    // Uploaded out of order; part 4 uploaded twice (the second one replaces the first).
    let data = |n: i32, gen: u64| payload(3000 * n as usize + 5, 100 * gen + n as u64);
    for n in [3, 1, 7, 2, 5, 4, 6] {
        upload_part(&client, &bucket, key, &id, n, &data(n, 1)).await;
    }
    upload_part(&client, &bucket, key, &id, 4, &data(4, 2)).await;

    let out = ok(
        client
            .list_parts()
            .bucket(&bucket)
            .key(key)
            .upload_id(&id)
            .send()
            .await,
        "ListParts",
    );
    assert_eq!(out.bucket(), Some(bucket.as_str()), "ListParts Bucket");
    assert_eq!(out.key(), Some(key), "ListParts Key");
    assert_eq!(out.upload_id(), Some(id.as_str()), "ListParts UploadId");
    assert_eq!(out.max_parts(), Some(1000), "default MaxParts");
    assert_eq!(out.is_truncated(), Some(false), "IsTruncated");
    assert!(out.initiator().is_some(), "ListParts has an Initiator");
    assert!(out.owner().is_some(), "ListParts has an Owner");
    assert_eq!(
        out.storage_class(),
        Some(&StorageClass::Standard),
        "ListParts StorageClass"
    );
    assert_eq!(
        numbers(out.parts()),
        vec![1, 2, 3, 4, 5, 6, 7],
        "part numbers"
    );
    for p in out.parts() {
        let n = p.part_number().unwrap();
        let want = data(n, if n == 4 { 2 } else { 1 });
        assert_eq!(p.e_tag(), Some(quoted_md5(&want).as_str()), "part {n} ETag");
        assert_eq!(p.size(), Some(want.len() as i64), "part {n} Size");
        let modified = secs(p.last_modified().expect("part LastModified"));
        assert!(
            modified >= start - 5 && modified <= now_secs() + 5,
            "part {n} LastModified {modified} not between {start} and now"
        );
    }
}

#[tokio::test]
async fn list_parts_paginates_with_max_parts_and_part_number_marker() {
    let (client, bucket) = new_bucket("listpartspages").await;
    let key = "paged";
    let (id, parts) = upload_small_parts(&client, &bucket, key, 7, 40).await;

    // Pages of 3: [1,2,3] [4,5,6] [7].
    let mut marker: Option<String> = None;
    let mut pages = Vec::new();
    loop {
        let page = ok(
            client
                .list_parts()
                .bucket(&bucket)
                .key(key)
                .upload_id(&id)
                .max_parts(3)
                .set_part_number_marker(marker.clone())
                .send()
                .await,
            &format!("ListParts max-parts=3 marker={marker:?}"),
        );
        assert_eq!(page.max_parts(), Some(3), "MaxParts echoed");
        if let Some(m) = &marker {
            assert_eq!(
                page.part_number_marker(),
                Some(m.as_str()),
                "PartNumberMarker echoed"
            );
        }
        let nums = numbers(page.parts());
        pages.push(nums.clone());
        if page.is_truncated() == Some(true) {
            let next = page
                .next_part_number_marker()
                .expect("NextPartNumberMarker");
            assert_eq!(
                next,
                nums.last().unwrap().to_string(),
                "NextPartNumberMarker is the last part of the page"
            );
            marker = Some(next.to_string());
        } else {
            break;
        }
        assert!(pages.len() < 10, "too many pages: {pages:?}");
    }
    assert_eq!(pages, vec![vec![1, 2, 3], vec![4, 5, 6], vec![7]], "pages");

    // Exactly max-parts parts left: not truncated.
    let page = ok(
        client
            .list_parts()
            .bucket(&bucket)
            .key(key)
            .upload_id(&id)
            .max_parts(7)
            .send()
            .await,
        "ListParts max-parts=7",
    );
    assert_eq!(numbers(page.parts()), vec![1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(page.is_truncated(), Some(false), "7 parts with max-parts=7");

    // A marker alone starts after that part number.
    let page = ok(
        client
            .list_parts()
            .bucket(&bucket)
            .key(key)
            .upload_id(&id)
            .part_number_marker("5")
            .send()
            .await,
        "ListParts part-number-marker=5",
    );
    assert_eq!(numbers(page.parts()), vec![6, 7]);
    assert_eq!(page.is_truncated(), Some(false));
    let page = ok(
        client
            .list_parts()
            .bucket(&bucket)
            .key(key)
            .upload_id(&id)
            .part_number_marker("7")
            .send()
            .await,
        "ListParts part-number-marker=7",
    );
    assert!(page.parts().is_empty(), "nothing after the last part");
    assert_eq!(page.is_truncated(), Some(false));

    // Pages of 1 and 2 cover every part exactly once.
    for max in [1, 2] {
        let all = list_all_parts(&client, &bucket, key, &id, Some(max)).await;
        assert_eq!(numbers(&all), vec![1, 2, 3, 4, 5, 6, 7], "pages of {max}");
        for p in &all {
            let n = p.part_number().unwrap() as usize;
            assert_eq!(p.e_tag(), Some(quoted_md5(&parts[n - 1]).as_str()));
        }
    }

    // The XML as a user sees it on the wire.
    let resp = raw(
        "GET",
        &format!("/{bucket}/{key}?uploadId={id}&max-parts=2"),
        &[],
    )
    .await;
    assert_eq!(resp.status, 200, "raw ListParts: {}", resp.text());
    let xml = resp.text();
    assert!(xml.contains("<ListPartsResult"), "root element: {xml}");
    assert_eq!(resp.xml_element("Bucket").as_deref(), Some(bucket.as_str()));
    assert_eq!(resp.xml_element("Key").as_deref(), Some(key));
    assert_eq!(resp.xml_element("UploadId").as_deref(), Some(id.as_str()));
    assert_eq!(resp.xml_element("MaxParts").as_deref(), Some("2"));
    assert_eq!(resp.xml_element("IsTruncated").as_deref(), Some("true"));
    assert_eq!(
        resp.xml_element("NextPartNumberMarker").as_deref(),
        Some("2")
    );
    assert_eq!(xml_elements(&xml, "PartNumber"), vec!["1", "2"]);
    assert_eq!(
        resp.xml_element("StorageClass").as_deref(),
        Some("STANDARD")
    );
    assert!(xml.contains("<Initiator>"), "Initiator element: {xml}");
    assert!(xml.contains("<Owner>"), "Owner element: {xml}");
}

#[tokio::test]
async fn list_parts_of_unknown_aborted_or_completed_upload_is_no_such_upload() {
    let (client, bucket) = new_bucket("listpartsgone").await;
    assert_s3_error(
        client
            .list_parts()
            .bucket(&bucket)
            .key("k")
            .upload_id("no-such-upload-id")
            .send()
            .await,
        404,
        "NoSuchUpload",
        "ListParts with an unknown upload id",
    );

    let (aborted, _) = upload_small_parts(&client, &bucket, "aborted", 2, 50).await;
    ok(
        client
            .abort_multipart_upload()
            .bucket(&bucket)
            .key("aborted")
            .upload_id(&aborted)
            .send()
            .await,
        "Abort",
    );
    assert_s3_error(
        client
            .list_parts()
            .bucket(&bucket)
            .key("aborted")
            .upload_id(&aborted)
            .send()
            .await,
        404,
        "NoSuchUpload",
        "ListParts after Abort",
    );

    let id = create_upload(&client, &bucket, "done").await;
    let e1 = upload_part(&client, &bucket, "done", &id, 1, b"only part").await;
    ok(
        complete_req(&client, &bucket, "done", &id, &[(1, &e1)])
            .send()
            .await,
        "Complete",
    );
    assert_s3_error(
        client
            .list_parts()
            .bucket(&bucket)
            .key("done")
            .upload_id(&id)
            .send()
            .await,
        404,
        "NoSuchUpload",
        "ListParts after Complete",
    );
}

// -------------------------------------------------------------------------------------------
// ListMultipartUploads.

/// Creates uploads in this order (20 ms apart, so initiation times differ) and returns
/// (key, id) in creation order.
async fn create_uploads(client: &Client, bucket: &str, keys: &[&str]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for key in keys {
        let id = create_upload(client, bucket, key).await;
        out.push((key.to_string(), id));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    out
}

/// S3's listing order: by key, and uploads of one key by initiation (here: creation) order.
fn listing_order(created: &[(String, String)]) -> Vec<(String, String)> {
    let mut indexed: Vec<(usize, &(String, String))> = created.iter().enumerate().collect();
    indexed.sort_by(|a, b| a.1 .0.cmp(&b.1 .0).then(a.0.cmp(&b.0)));
    indexed.into_iter().map(|(_, u)| u.clone()).collect()
}

const UPLOAD_KEYS: [&str; 7] = [
    "b/two",
    "a/one",
    "b/two",
    "c",
    "a/one",
    "b/two",
    "a/zz/deep",
];

#[tokio::test]
async fn list_multipart_uploads_by_key_then_initiation_with_prefix_and_delimiter() {
    let (client, bucket) = new_bucket("listuploads").await;
    let empty = ok(
        client.list_multipart_uploads().bucket(&bucket).send().await,
        "ListMultipartUploads of a bucket without uploads",
    );
    assert!(empty.uploads().is_empty());
    assert_eq!(empty.is_truncated(), Some(false));

    let created = create_uploads(&client, &bucket, &UPLOAD_KEYS).await;
    let want = listing_order(&created);

    let out = ok(
        client.list_multipart_uploads().bucket(&bucket).send().await,
        "ListMultipartUploads",
    );
    assert_eq!(out.bucket(), Some(bucket.as_str()), "Bucket echoed");
    assert_eq!(out.is_truncated(), Some(false));
    assert_eq!(out.max_uploads(), Some(1000), "default MaxUploads");
    let got: Vec<(String, String)> = out
        .uploads()
        .iter()
        .map(|u| {
            (
                u.key().unwrap_or_default().to_string(),
                u.upload_id().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(got, want, "uploads sorted by key, then initiation order");
    for u in out.uploads() {
        let initiated = secs(u.initiated().expect("Upload Initiated"));
        assert!(
            (initiated - now_secs()).abs() < 120,
            "Initiated {initiated} is not about now"
        );
        assert!(u.initiator().is_some(), "Upload Initiator");
        assert!(u.owner().is_some(), "Upload Owner");
        assert_eq!(u.storage_class(), Some(&StorageClass::Standard));
    }
    // Same key: Initiated never goes backwards.
    for w in out.uploads().windows(2) {
        if w[0].key() == w[1].key() {
            assert!(w[0].initiated().unwrap().as_nanos() <= w[1].initiated().unwrap().as_nanos());
        }
    }

    // Prefix.
    let out = ok(
        client
            .list_multipart_uploads()
            .bucket(&bucket)
            .prefix("b/")
            .send()
            .await,
        "ListMultipartUploads prefix=b/",
    );
    assert_eq!(out.prefix(), Some("b/"));
    let got: Vec<&str> = out
        .uploads()
        .iter()
        .map(|u| u.upload_id().unwrap())
        .collect();
    let want_b: Vec<&str> = want
        .iter()
        .filter(|(k, _)| k.starts_with("b/"))
        .map(|(_, id)| id.as_str())
        .collect();
    assert_eq!(got, want_b, "prefix b/");

    // Delimiter: keys with a '/' roll up into CommonPrefixes.
    let out = ok(
        client
            .list_multipart_uploads()
            .bucket(&bucket)
            .delimiter("/")
            .send()
            .await,
        "ListMultipartUploads delimiter=/",
    );
    assert_eq!(out.delimiter(), Some("/"));
    let keys: Vec<&str> = out.uploads().iter().map(|u| u.key().unwrap()).collect();
    assert_eq!(keys, vec!["c"], "uploads beside the common prefixes");
    let prefixes: Vec<&str> = out
        .common_prefixes()
        .iter()
        .map(|p| p.prefix().unwrap_or_default())
        .collect();
    assert_eq!(prefixes, vec!["a/", "b/"], "CommonPrefixes");

    // Prefix and delimiter together.
    let out = ok(
        client
            .list_multipart_uploads()
            .bucket(&bucket)
            .prefix("a/")
            .delimiter("/")
            .send()
            .await,
        "ListMultipartUploads prefix=a/ delimiter=/",
    );
    let got: Vec<(String, String)> = out
        .uploads()
        .iter()
        .map(|u| {
            (
                u.key().unwrap().to_string(),
                u.upload_id().unwrap().to_string(),
            )
        })
        .collect();
    let want_a: Vec<(String, String)> =
        want.iter().filter(|(k, _)| k == "a/one").cloned().collect();
    assert_eq!(got, want_a, "a/one uploads under prefix a/");
    let prefixes: Vec<&str> = out
        .common_prefixes()
        .iter()
        .map(|p| p.prefix().unwrap_or_default())
        .collect();
    assert_eq!(prefixes, vec!["a/zz/"]);

    // key-marker alone: only keys after it.
    for marker in ["a/one", "a/zz/deep", "b/two"] {
        let out = ok(
            client
                .list_multipart_uploads()
                .bucket(&bucket)
                .key_marker(marker)
                .send()
                .await,
            &format!("ListMultipartUploads key-marker={marker}"),
        );
        assert_eq!(out.key_marker(), Some(marker), "KeyMarker echoed");
        let got: Vec<(String, String)> = out
            .uploads()
            .iter()
            .map(|u| {
                (
                    u.key().unwrap().to_string(),
                    u.upload_id().unwrap().to_string(),
                )
            })
            .collect();
        let want_after: Vec<(String, String)> = want
            .iter()
            .filter(|(k, _)| k.as_str() > marker)
            .cloned()
            .collect();
        assert_eq!(got, want_after, "key-marker={marker}");
    }
}

#[tokio::test]
async fn list_multipart_uploads_pages_cover_every_upload_once() {
    let (client, bucket) = new_bucket("listuploadspages").await;
    let created = create_uploads(&client, &bucket, &UPLOAD_KEYS).await;
    let want = listing_order(&created);
    for max in [1, 2, 3, 7] {
        let (got, pages) = list_all_uploads(&client, &bucket, None, Some(max)).await;
        assert_eq!(got, want, "pages of max-uploads={max}");
        let expected_pages = want.len().div_ceil(max as usize);
        assert_eq!(
            pages, expected_pages,
            "number of pages for max-uploads={max}"
        );
    }
    let (got, _) = list_all_uploads(&client, &bucket, Some("b/"), Some(1)).await;
    let want_b: Vec<(String, String)> = want
        .iter()
        .filter(|(k, _)| k.starts_with("b/"))
        .cloned()
        .collect();
    assert_eq!(got, want_b, "pages of 1 under prefix b/");
}

#[tokio::test]
async fn completed_and_aborted_uploads_leave_the_listing() {
    let (client, bucket) = new_bucket("listuploadsgone").await;
    let created = create_uploads(&client, &bucket, &["k", "k", "k", "other"]).await;
    let (complete_id, abort_id) = (&created[0].1, &created[1].1);
    let e1 = upload_part(&client, &bucket, "k", complete_id, 1, b"tiny final part").await;
    ok(
        complete_req(&client, &bucket, "k", complete_id, &[(1, &e1)])
            .send()
            .await,
        "Complete",
    );
    ok(
        client
            .abort_multipart_upload()
            .bucket(&bucket)
            .key("k")
            .upload_id(abort_id)
            .send()
            .await,
        "Abort",
    );
    let (got, _) = list_all_uploads(&client, &bucket, None, None).await;
    assert_eq!(
        got,
        vec![created[2].clone(), created[3].clone()],
        "only the open uploads remain"
    );
}

// -------------------------------------------------------------------------------------------
// UploadPartCopy.

/// UploadPartCopy; returns the part's ETag after checking CopyPartResult.
/// `dst` is (bucket, key, upload id).
async fn copy_part(
    client: &Client,
    dst: (&str, &str, &str),
    n: i32,
    source: &str,
    range: Option<String>,
    copied: &[u8],
) -> String {
    let (bucket, key, upload_id) = dst;
    let out = ok(
        client
            .upload_part_copy()
            .bucket(bucket)
            .key(key)
            .upload_id(upload_id)
            .part_number(n)
            .copy_source(source)
            .set_copy_source_range(range.clone())
            .send()
            .await,
        &format!("UploadPartCopy part {n} from {source} range {range:?}"),
    );
    let result = out.copy_part_result().expect("CopyPartResult");
    assert_eq!(
        result.e_tag(),
        Some(quoted_md5(copied).as_str()),
        "CopyPartResult ETag of part {n} is the MD5 of the copied bytes"
    );
    let modified = secs(result.last_modified().expect("CopyPartResult LastModified"));
    assert!(
        (modified - now_secs()).abs() < 120,
        "CopyPartResult LastModified is about now"
    );
    result.e_tag().unwrap().to_string()
}

#[tokio::test]
async fn upload_part_copy_assembles_ranges_of_other_objects() {
    let (client, bucket) = new_bucket("partcopy").await;
    let src_bucket = unique_bucket("partcopysrc");
    create_bucket(&client, &src_bucket).await;
    let src_key = "src dir/ß é+&=$,;:@!.bin";
    let src = payload(10 * MIB + 11, 60);
    put(&client, &src_bucket, src_key, &src).await;
    let small = payload(300 * KIB, 61);
    put(&client, &bucket, "small/obj", &small).await;
    let source = format!("/{src_bucket}/{}", url_encode_key(src_key));

    let key = "assembled";
    let id = create_upload(&client, &bucket, key).await;
    let r1 = &src[..5 * MIB];
    let r2 = &src[5 * MIB..];
    let e1 = copy_part(
        &client,
        (&bucket, key, &id),
        1,
        &source,
        Some(format!("bytes=0-{}", 5 * MIB - 1)),
        r1,
    )
    .await;
    let e2 = copy_part(
        &client,
        (&bucket, key, &id),
        2,
        &source,
        Some(format!("bytes={}-{}", 5 * MIB, src.len() - 1)),
        r2,
    )
    .await;
    let p3 = payload(5 * MIB, 62);
    let e3 = upload_part(&client, &bucket, key, &id, 3, &p3).await;
    // No range: the whole source; the copy source without a leading slash.
    let e4 = copy_part(
        &client,
        (&bucket, key, &id),
        4,
        &format!("{bucket}/small/obj"),
        None,
        &small,
    )
    .await;

    let parts = list_all_parts(&client, &bucket, key, &id, None).await;
    assert_eq!(numbers(&parts), vec![1, 2, 3, 4]);
    let sizes: Vec<i64> = parts.iter().map(|p| p.size().unwrap_or(-1)).collect();
    assert_eq!(
        sizes,
        vec![
            r1.len() as i64,
            r2.len() as i64,
            p3.len() as i64,
            small.len() as i64
        ],
        "ListParts sizes of the copied and uploaded parts"
    );

    let out = ok(
        complete_req(
            &client,
            &bucket,
            key,
            &id,
            &[(1, &e1), (2, &e2), (3, &e3), (4, &e4)],
        )
        .send()
        .await,
        "Complete after UploadPartCopy",
    );
    let want_etag = multipart_etag(&[r1, r2, &p3, &small]);
    assert_eq!(out.e_tag(), Some(want_etag.as_str()));
    let whole = [r1, r2, p3.as_slice(), &small].concat();
    assert_object(&client, &bucket, key, &whole).await;
    // The sources are untouched.
    assert_object(&client, &src_bucket, src_key, &src).await;
    assert_object(&client, &bucket, "small/obj", &small).await;
}

#[tokio::test]
async fn upload_part_copy_from_a_multipart_source_across_its_parts() {
    let (client, bucket) = new_bucket("partcopymp").await;
    let s1 = payload(5 * MIB, 70);
    let s2 = payload(2 * MIB + 9, 71);
    multipart_put(&client, &bucket, "src/multi", &[&s1, &s2]).await;
    let src = [s1.as_slice(), &s2].concat();

    let key = "dst/copy";
    let id = create_upload(&client, &bucket, key).await;
    let source = format!("/{bucket}/src/multi");
    let e1 = copy_part(&client, (&bucket, key, &id), 1, &source, None, &src).await;
    let (a, b) = (4 * MIB, 6 * MIB);
    let e2 = copy_part(
        &client,
        (&bucket, key, &id),
        2,
        &source,
        Some(format!("bytes={a}-{b}")),
        &src[a..=b],
    )
    .await;
    ok(
        complete_req(&client, &bucket, key, &id, &[(1, &e1), (2, &e2)])
            .send()
            .await,
        "Complete",
    );
    assert_object(
        &client,
        &bucket,
        key,
        &[src.as_slice(), &src[a..=b]].concat(),
    )
    .await;
}

#[tokio::test]
async fn upload_part_copy_preconditions_fail_with_412() {
    let (client, bucket) = new_bucket("partcopycond").await;
    let src = payload(200 * KIB, 80);
    let etag = put(&client, &bucket, "src", &src).await;
    // The source is 2 s old; "now" lies after its modification and is not in the future.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let now = DateTime::from_secs(now_secs());
    let past = DateTime::from_secs(now_secs() - 3600);
    let key = "dst";
    let id = create_upload(&client, &bucket, key).await;
    let req = |n: i32| {
        client
            .upload_part_copy()
            .bucket(&bucket)
            .key(key)
            .upload_id(&id)
            .part_number(n)
            .copy_source(format!("/{bucket}/src"))
    };

    assert_s3_error(
        req(1)
            .copy_source_if_match("\"0123456789abcdef0123456789abcdef\"")
            .send()
            .await,
        412,
        "PreconditionFailed",
        "x-amz-copy-source-if-match with another ETag",
    );
    assert_s3_error(
        req(1).copy_source_if_none_match(&etag).send().await,
        412,
        "PreconditionFailed",
        "x-amz-copy-source-if-none-match with the source's ETag",
    );
    assert_s3_error(
        req(1).copy_source_if_modified_since(now).send().await,
        412,
        "PreconditionFailed",
        "x-amz-copy-source-if-modified-since after the source's modification",
    );
    assert_s3_error(
        req(1).copy_source_if_unmodified_since(past).send().await,
        412,
        "PreconditionFailed",
        "x-amz-copy-source-if-unmodified-since before the source's modification",
    );
    let listed = list_all_parts(&client, &bucket, key, &id, None).await;
    assert!(
        listed.is_empty(),
        "failed preconditions created parts: {listed:?}"
    );

    // The conditions that hold copy the part.
    ok(
        req(1).copy_source_if_match(&etag).send().await,
        "if-match the source's ETag",
    );
    ok(
        req(2)
            .copy_source_if_none_match("\"0123456789abcdef0123456789abcdef\"")
            .send()
            .await,
        "if-none-match another ETag",
    );
    ok(
        req(3).copy_source_if_modified_since(past).send().await,
        "if-modified-since an hour ago",
    );
    ok(
        req(4).copy_source_if_unmodified_since(now).send().await,
        "if-unmodified-since now",
    );
    // AWS: if-match true and if-unmodified-since false → the copy happens.
    ok(
        req(5)
            .copy_source_if_match(&etag)
            .copy_source_if_unmodified_since(past)
            .send()
            .await,
        "if-match true with if-unmodified-since false",
    );
    let listed = list_all_parts(&client, &bucket, key, &id, None).await;
    assert_eq!(numbers(&listed), vec![1, 2, 3, 4, 5]);
    for p in &listed {
        assert_eq!(p.e_tag(), Some(quoted_md5(&src).as_str()));
    }
}

#[tokio::test]
async fn upload_part_copy_errors() {
    let (client, bucket) = new_bucket("partcopyerr").await;
    let src = payload(100 * KIB + 1, 90);
    put(&client, &bucket, "src", &src).await;
    let key = "dst";
    let id = create_upload(&client, &bucket, key).await;
    let copy = |source: String, range: Option<String>| {
        client
            .upload_part_copy()
            .bucket(&bucket)
            .key(key)
            .upload_id(&id)
            .part_number(1)
            .copy_source(source)
            .set_copy_source_range(range)
    };
    assert_s3_error(
        copy(format!("/{bucket}/no-such-key"), None).send().await,
        404,
        "NoSuchKey",
        "UploadPartCopy from a missing key",
    );
    assert_s3_error(
        copy(format!("/{}/src", unique_bucket("missing")), None)
            .send()
            .await,
        404,
        "NoSuchBucket",
        "UploadPartCopy from a missing bucket",
    );
    let len = src.len();
    let mut wrong = Vec::new();
    for range in [
        format!("bytes=0-{len}"),
        format!("bytes={len}-{}", len + 10),
        format!("bytes={}-{}", len + 100, len + 200),
    ] {
        let res = copy(format!("/{bucket}/src"), Some(range.clone()))
            .send()
            .await;
        let got = match &res {
            Ok(out) => format!(
                "success (ETag {:?})",
                out.copy_part_result().and_then(|r| r.e_tag())
            ),
            Err(e) => format!("{:?} {:?}", status_of(e), code_of(e)),
        };
        // S3 answers 400 InvalidArgument here, not a GET's 416 InvalidRange.
        let right = matches!(&res, Err(e) if status_of(e) == Some(400)
            && code_of(e).as_deref() == Some("InvalidArgument"));
        if !right {
            wrong.push(format!("{range} of a {len}-byte source: got {got}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "UploadPartCopy x-amz-copy-source-range beyond the source: expected 400 InvalidArgument; {}",
        wrong.join("; ")
    );
    assert_s3_error(
        client
            .upload_part_copy()
            .bucket(&bucket)
            .key(key)
            .upload_id("no-such-upload")
            .part_number(1)
            .copy_source(format!("/{bucket}/src"))
            .send()
            .await,
        404,
        "NoSuchUpload",
        "UploadPartCopy into an unknown upload",
    );
    for n in [0, 10_001] {
        assert_s3_error(
            client
                .upload_part_copy()
                .bucket(&bucket)
                .key(key)
                .upload_id(&id)
                .part_number(n)
                .copy_source(format!("/{bucket}/src"))
                .send()
                .await,
            400,
            "InvalidArgument",
            &format!("UploadPartCopy part number {n}"),
        );
    }
    let listed = list_all_parts(&client, &bucket, key, &id, None).await;
    assert!(listed.is_empty(), "failed copies created parts: {listed:?}");
    // The last byte exactly is a valid range.
    copy_part(
        &client,
        (&bucket, key, &id),
        1,
        &format!("/{bucket}/src"),
        Some(format!("bytes={}-{}", len - 1, len - 1)),
        &src[len - 1..],
    )
    .await;
}

// -------------------------------------------------------------------------------------------
// GET / HEAD with partNumber.

#[tokio::test]
async fn get_and_head_by_part_number_return_that_part() {
    let (client, bucket) = new_bucket("partnumber").await;
    let key = "mp";
    let parts = [
        payload(5 * MIB, 101),
        payload(5 * MIB + 7, 102),
        payload(MIB + 3, 103),
    ];
    let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    let etag = multipart_put(&client, &bucket, key, &refs).await;
    let total: usize = parts.iter().map(Vec::len).sum();

    let mut offset = 0;
    for (i, part) in parts.iter().enumerate() {
        let n = i as i32 + 1;
        let range = format!("bytes {}-{}/{total}", offset, offset + part.len() - 1);
        let out = ok(
            client
                .get_object()
                .bucket(&bucket)
                .key(key)
                .part_number(n)
                .send()
                .await,
            &format!("GET partNumber={n}"),
        );
        assert_eq!(
            out.content_length(),
            Some(part.len() as i64),
            "GET part {n} length"
        );
        assert_eq!(
            out.content_range(),
            Some(range.as_str()),
            "GET part {n} Content-Range"
        );
        assert_eq!(
            out.parts_count(),
            Some(3),
            "GET part {n} x-amz-mp-parts-count"
        );
        assert_eq!(
            out.e_tag(),
            Some(etag.as_str()),
            "GET part {n} ETag is the object's"
        );
        let body = out.body.collect().await.expect("body").into_bytes();
        assert_same_bytes(&body, part, &format!("GET partNumber={n}"));

        let head = ok(
            client
                .head_object()
                .bucket(&bucket)
                .key(key)
                .part_number(n)
                .send()
                .await,
            &format!("HEAD partNumber={n}"),
        );
        assert_eq!(
            head.content_length(),
            Some(part.len() as i64),
            "HEAD part {n} length"
        );
        assert_eq!(
            head.content_range(),
            Some(range.as_str()),
            "HEAD part {n} Content-Range"
        );
        assert_eq!(
            head.parts_count(),
            Some(3),
            "HEAD part {n} x-amz-mp-parts-count"
        );

        for method in ["GET", "HEAD"] {
            let resp = raw(method, &format!("/{bucket}/{key}?partNumber={n}"), &[]).await;
            assert_eq!(resp.status, 206, "{method} partNumber={n}: {}", resp.text());
            assert_eq!(
                resp.header("content-range").as_deref(),
                Some(range.as_str())
            );
            assert_eq!(resp.header("x-amz-mp-parts-count").as_deref(), Some("3"));
        }
        offset += part.len();
    }

    assert_s3_error(
        client
            .get_object()
            .bucket(&bucket)
            .key(key)
            .part_number(4)
            .send()
            .await,
        416,
        "InvalidPartNumber",
        "GET partNumber beyond the part count",
    );
    assert_s3_status(
        client
            .head_object()
            .bucket(&bucket)
            .key(key)
            .part_number(4)
            .send()
            .await,
        416,
        "HEAD partNumber beyond the part count",
    );
}

#[tokio::test]
async fn part_number_one_of_a_single_put_object_is_the_whole_object() {
    let (client, bucket) = new_bucket("partnumberput").await;
    for (key, size) in [("inline", 10 * KIB), ("coded", 700 * KIB + 1)] {
        let data = payload(size, size as u64);
        let etag = put(&client, &bucket, key, &data).await;
        let out = ok(
            client
                .get_object()
                .bucket(&bucket)
                .key(key)
                .part_number(1)
                .send()
                .await,
            &format!("GET {key} partNumber=1"),
        );
        assert_eq!(
            out.content_length(),
            Some(size as i64),
            "{key}: Content-Length"
        );
        assert_eq!(out.e_tag(), Some(etag.as_str()));
        let body = out.body.collect().await.expect("body").into_bytes();
        assert_same_bytes(&body, &data, &format!("GET {key} partNumber=1"));

        let resp = raw("GET", &format!("/{bucket}/{key}?partNumber=1"), &[]).await;
        assert!(
            resp.status == 200 || resp.status == 206,
            "GET {key} partNumber=1: status {}",
            resp.status
        );
        if resp.status == 206 {
            assert_eq!(
                resp.header("content-range"),
                Some(format!("bytes 0-{}/{size}", size - 1)),
                "{key}: Content-Range of the only part"
            );
        }
        assert_same_bytes(&resp.body, &data, &format!("raw GET {key} partNumber=1"));

        assert_s3_error(
            client
                .get_object()
                .bucket(&bucket)
                .key(key)
                .part_number(2)
                .send()
                .await,
            416,
            "InvalidPartNumber",
            &format!("GET {key} partNumber=2 of a single-part object"),
        );
    }
}

// -------------------------------------------------------------------------------------------
// Conditional writes.

#[tokio::test]
async fn complete_with_if_none_match_star_refuses_an_existing_key() {
    let (client, bucket) = new_bucket("condnone").await;
    let key = "ckpt/step-100";
    let a = payload(MIB, 110);
    let b = payload(MIB, 111);
    let id_a = create_upload(&client, &bucket, key).await;
    let id_b = create_upload(&client, &bucket, key).await;
    let ea = upload_part(&client, &bucket, key, &id_a, 1, &a).await;
    let eb = upload_part(&client, &bucket, key, &id_b, 1, &b).await;

    let out = ok(
        complete_req(&client, &bucket, key, &id_a, &[(1, &ea)])
            .if_none_match("*")
            .send()
            .await,
        "Complete with If-None-Match: * on a new key",
    );
    assert_eq!(out.e_tag(), Some(multipart_etag(&[&a]).as_str()));
    assert_s3_error(
        complete_req(&client, &bucket, key, &id_b, &[(1, &eb)])
            .if_none_match("*")
            .send()
            .await,
        412,
        "PreconditionFailed",
        "second Complete with If-None-Match: * on the same key",
    );
    assert_object(&client, &bucket, key, &a).await;
    let head = ok(
        client.head_object().bucket(&bucket).key(key).send().await,
        "HEAD",
    );
    assert_eq!(
        head.e_tag(),
        Some(multipart_etag(&[&a]).as_str()),
        "the first one won"
    );

    // A key written by PutObject counts as existing too.
    put(&client, &bucket, "plain", b"exists").await;
    let id = create_upload(&client, &bucket, "plain").await;
    let e = upload_part(&client, &bucket, "plain", &id, 1, &b).await;
    assert_s3_error(
        complete_req(&client, &bucket, "plain", &id, &[(1, &e)])
            .if_none_match("*")
            .send()
            .await,
        412,
        "PreconditionFailed",
        "Complete with If-None-Match: * over a PutObject",
    );
    assert_object(&client, &bucket, "plain", b"exists").await;
}

#[tokio::test]
async fn complete_with_if_match_requires_the_current_etag() {
    let (client, bucket) = new_bucket("condmatch").await;
    let key = "ckpt";
    let v1 = payload(300 * KIB, 120);
    let e_v1 = put(&client, &bucket, key, &v1).await;

    let v2 = payload(MIB, 121);
    let id = create_upload(&client, &bucket, key).await;
    let e = upload_part(&client, &bucket, key, &id, 1, &v2).await;
    assert_s3_error(
        complete_req(&client, &bucket, key, &id, &[(1, &e)])
            .if_match("\"0123456789abcdef0123456789abcdef\"")
            .send()
            .await,
        412,
        "PreconditionFailed",
        "Complete with If-Match of another ETag",
    );
    assert_object(&client, &bucket, key, &v1).await;

    let out = ok(
        complete_req(&client, &bucket, key, &id, &[(1, &e)])
            .if_match(&e_v1)
            .send()
            .await,
        "Complete with If-Match of the current ETag",
    );
    let e_v2 = multipart_etag(&[&v2]);
    assert_eq!(out.e_tag(), Some(e_v2.as_str()));
    assert_object(&client, &bucket, key, &v2).await;

    // The old ETag no longer matches.
    let v3 = payload(MIB, 122);
    let id = create_upload(&client, &bucket, key).await;
    let e = upload_part(&client, &bucket, key, &id, 1, &v3).await;
    assert_s3_error(
        complete_req(&client, &bucket, key, &id, &[(1, &e)])
            .if_match(&e_v1)
            .send()
            .await,
        412,
        "PreconditionFailed",
        "Complete with If-Match of a replaced ETag",
    );
    ok(
        complete_req(&client, &bucket, key, &id, &[(1, &e)])
            .if_match(&e_v2)
            .send()
            .await,
        "Complete with If-Match of the multipart ETag",
    );
    assert_object(&client, &bucket, key, &v3).await;
}

#[tokio::test]
async fn complete_with_if_match_on_a_missing_key_is_no_such_key() {
    let (client, bucket) = new_bucket("condmatchmissing").await;
    let id = create_upload(&client, &bucket, "absent").await;
    let e = upload_part(&client, &bucket, "absent", &id, 1, b"data").await;
    assert_s3_error(
        complete_req(&client, &bucket, "absent", &id, &[(1, &e)])
            .if_match("\"0123456789abcdef0123456789abcdef\"")
            .send()
            .await,
        404,
        "NoSuchKey",
        "Complete with If-Match on a key that does not exist",
    );
}

#[tokio::test]
async fn put_object_honours_if_none_match_and_if_match() {
    let (client, bucket) = new_bucket("condput").await;
    let v1 = payload(200 * KIB, 130);
    let out = ok(
        client
            .put_object()
            .bucket(&bucket)
            .key("k")
            .if_none_match("*")
            .body(v1.clone().into())
            .send()
            .await,
        "PUT If-None-Match: * on a new key",
    );
    let e_v1 = out.e_tag().unwrap().to_string();
    assert_s3_error(
        client
            .put_object()
            .bucket(&bucket)
            .key("k")
            .if_none_match("*")
            .body(b"second".to_vec().into())
            .send()
            .await,
        412,
        "PreconditionFailed",
        "PUT If-None-Match: * on an existing key",
    );
    assert_s3_error(
        client
            .put_object()
            .bucket(&bucket)
            .key("k")
            .if_match("\"0123456789abcdef0123456789abcdef\"")
            .body(b"third".to_vec().into())
            .send()
            .await,
        412,
        "PreconditionFailed",
        "PUT If-Match of another ETag",
    );
    assert_object(&client, &bucket, "k", &v1).await;
    let v2 = payload(2 * MIB, 131);
    ok(
        client
            .put_object()
            .bucket(&bucket)
            .key("k")
            .if_match(&e_v1)
            .body(v2.clone().into())
            .send()
            .await,
        "PUT If-Match of the current ETag",
    );
    assert_object(&client, &bucket, "k", &v2).await;
}

// -------------------------------------------------------------------------------------------
// Checksums.

/// An upload with `algorithm` (and `kind` if given): per-part checksums checked on UploadPart
/// and ListParts, the object's checksum on Complete, HEAD and GET (checksum mode ENABLED).
async fn checksum_round_trip(
    algorithm: ChecksumAlgorithm,
    kind: Option<ChecksumType>,
    want_kind: ChecksumType,
) {
    let name = algorithm.as_str().to_string();
    let (client, bucket) = new_bucket(&format!("cks-{name}")).await;
    let key = "ckpt.bin";
    let parts = [
        payload(5 * MIB, 140),
        payload(5 * MIB + 1, 141),
        payload(300 * KIB + 7, 142),
    ];
    let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();

    let create = ok(
        client
            .create_multipart_upload()
            .bucket(&bucket)
            .key(key)
            .checksum_algorithm(algorithm.clone())
            .set_checksum_type(kind.clone())
            .send()
            .await,
        &format!("CreateMultipartUpload {name} {kind:?}"),
    );
    let id = create.upload_id().unwrap().to_string();

    let mut completed = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let n = i as i32 + 1;
        let out = ok(
            client
                .upload_part()
                .bucket(&bucket)
                .key(key)
                .upload_id(&id)
                .part_number(n)
                .checksum_algorithm(algorithm.clone())
                .body(part.clone().into())
                .send()
                .await,
            &format!("UploadPart {n} with {name}"),
        );
        let want = checksum_b64(&name, part);
        let got = pick(
            &algorithm,
            out.checksum_crc32(),
            out.checksum_crc32_c(),
            out.checksum_crc64_nvme(),
            out.checksum_sha1(),
            out.checksum_sha256(),
        );
        assert_eq!(
            got.as_deref(),
            Some(want.as_str()),
            "UploadPart {n} {name} checksum"
        );
        let builder = CompletedPart::builder()
            .part_number(n)
            .e_tag(out.e_tag().unwrap());
        let builder = match algorithm {
            ChecksumAlgorithm::Crc32 => builder.checksum_crc32(want),
            ChecksumAlgorithm::Crc32C => builder.checksum_crc32_c(want),
            ChecksumAlgorithm::Crc64Nvme => builder.checksum_crc64_nvme(want),
            ChecksumAlgorithm::Sha1 => builder.checksum_sha1(want),
            ChecksumAlgorithm::Sha256 => builder.checksum_sha256(want),
            _ => unreachable!(),
        };
        completed.push(builder.build());
    }

    let listed = ok(
        client
            .list_parts()
            .bucket(&bucket)
            .key(key)
            .upload_id(&id)
            .send()
            .await,
        "ListParts",
    );
    assert_eq!(
        listed.checksum_algorithm(),
        Some(&algorithm),
        "ListParts ChecksumAlgorithm"
    );
    assert_eq!(
        listed.checksum_type(),
        Some(&want_kind),
        "ListParts ChecksumType"
    );
    for p in listed.parts() {
        let n = p.part_number().unwrap() as usize;
        let got = pick(
            &algorithm,
            p.checksum_crc32(),
            p.checksum_crc32_c(),
            p.checksum_crc64_nvme(),
            p.checksum_sha1(),
            p.checksum_sha256(),
        );
        assert_eq!(
            got,
            Some(checksum_b64(&name, &parts[n - 1])),
            "ListParts part {n} {name} checksum"
        );
    }

    let whole = parts.concat();
    let want_object = if want_kind == ChecksumType::FullObject {
        checksum_b64(&name, &whole)
    } else {
        composite_checksum(&name, &refs)
    };
    // A CRC of the whole object sent with Complete is checked, whatever the checksum type:
    // the parts' CRCs combine into it. A wrong one is BadDigest and completes nothing.
    let whole_crc = (!matches!(
        algorithm,
        ChecksumAlgorithm::Sha1 | ChecksumAlgorithm::Sha256
    ))
    .then(|| checksum_b64(&name, &whole));
    let complete = |crc: Option<String>| {
        let request = client
            .complete_multipart_upload()
            .bucket(&bucket)
            .key(key)
            .upload_id(&id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(completed.clone()))
                    .build(),
            );
        match algorithm {
            ChecksumAlgorithm::Crc32 => request.set_checksum_crc32(crc),
            ChecksumAlgorithm::Crc32C => request.set_checksum_crc32_c(crc),
            ChecksumAlgorithm::Crc64Nvme => request.set_checksum_crc64_nvme(crc),
            _ => request,
        }
        .send()
    };
    if let Some(crc) = &whole_crc {
        let wrong = checksum_b64(&name, b"other bytes");
        assert_ne!(&wrong, crc);
        assert_s3_error(
            complete(Some(wrong)).await,
            400,
            "BadDigest",
            "wrong whole CRC",
        );
    }
    let out = ok(complete(whole_crc.clone()).await, "Complete");
    assert_eq!(
        out.e_tag(),
        Some(multipart_etag(&refs).as_str()),
        "Complete ETag"
    );
    let got = pick(
        &algorithm,
        out.checksum_crc32(),
        out.checksum_crc32_c(),
        out.checksum_crc64_nvme(),
        out.checksum_sha1(),
        out.checksum_sha256(),
    );
    assert_eq!(
        got.as_deref(),
        Some(want_object.as_str()),
        "Complete {name} {want_kind:?} checksum"
    );
    assert_eq!(
        out.checksum_type(),
        Some(&want_kind),
        "Complete ChecksumType"
    );

    let head = ok(
        client
            .head_object()
            .bucket(&bucket)
            .key(key)
            .checksum_mode(ChecksumMode::Enabled)
            .send()
            .await,
        "HEAD checksum mode",
    );
    let got = pick(
        &algorithm,
        head.checksum_crc32(),
        head.checksum_crc32_c(),
        head.checksum_crc64_nvme(),
        head.checksum_sha1(),
        head.checksum_sha256(),
    );
    assert_eq!(
        got.as_deref(),
        Some(want_object.as_str()),
        "HEAD {name} checksum"
    );
    assert_eq!(
        head.checksum_type(),
        Some(&want_kind),
        "HEAD x-amz-checksum-type"
    );

    // GET with checksum mode: the SDK checks a FULL_OBJECT CRC against the body itself.
    let get = ok(
        client
            .get_object()
            .bucket(&bucket)
            .key(key)
            .checksum_mode(ChecksumMode::Enabled)
            .send()
            .await,
        "GET checksum mode",
    );
    assert_eq!(
        get.checksum_type(),
        Some(&want_kind),
        "GET x-amz-checksum-type"
    );
    let got = pick(
        &algorithm,
        get.checksum_crc32(),
        get.checksum_crc32_c(),
        get.checksum_crc64_nvme(),
        get.checksum_sha1(),
        get.checksum_sha256(),
    );
    assert_eq!(
        got.as_deref(),
        Some(want_object.as_str()),
        "GET {name} checksum"
    );
    let body = get
        .body
        .collect()
        .await
        .unwrap_or_else(|e| panic!("GET body (checksum validation) failed: {e:?}"))
        .into_bytes();
    assert_same_bytes(&body, &whole, "GET with checksum mode");

    // The answer to CreateMultipartUpload names the algorithm and the type.
    assert_eq!(
        create.checksum_algorithm(),
        Some(&algorithm),
        "Create x-amz-checksum-algorithm"
    );
    assert_eq!(
        create.checksum_type(),
        Some(&want_kind),
        "Create x-amz-checksum-type"
    );
}

#[tokio::test]
async fn checksum_sha256_composite_by_default() {
    checksum_round_trip(ChecksumAlgorithm::Sha256, None, ChecksumType::Composite).await;
}

#[tokio::test]
async fn checksum_sha1_composite() {
    checksum_round_trip(
        ChecksumAlgorithm::Sha1,
        Some(ChecksumType::Composite),
        ChecksumType::Composite,
    )
    .await;
}

#[tokio::test]
async fn checksum_crc32_composite_by_default() {
    checksum_round_trip(ChecksumAlgorithm::Crc32, None, ChecksumType::Composite).await;
}

#[tokio::test]
async fn checksum_crc32c_composite() {
    checksum_round_trip(
        ChecksumAlgorithm::Crc32C,
        Some(ChecksumType::Composite),
        ChecksumType::Composite,
    )
    .await;
}

#[tokio::test]
async fn checksum_crc32_full_object() {
    checksum_round_trip(
        ChecksumAlgorithm::Crc32,
        Some(ChecksumType::FullObject),
        ChecksumType::FullObject,
    )
    .await;
}

#[tokio::test]
async fn checksum_crc32c_full_object() {
    checksum_round_trip(
        ChecksumAlgorithm::Crc32C,
        Some(ChecksumType::FullObject),
        ChecksumType::FullObject,
    )
    .await;
}

#[tokio::test]
async fn checksum_crc64nvme_full_object() {
    checksum_round_trip(
        ChecksumAlgorithm::Crc64Nvme,
        Some(ChecksumType::FullObject),
        ChecksumType::FullObject,
    )
    .await;
}

#[tokio::test]
async fn checksum_crc64nvme_is_full_object_by_default() {
    checksum_round_trip(ChecksumAlgorithm::Crc64Nvme, None, ChecksumType::FullObject).await;
}

/// minio-go (and `mc`, warp) upload with a CRC32C per part by default and complete with the
/// checksum of the parts' checksums, sent without the `-N` part count that S3 reports it
/// with: S3 takes it, for every algorithm of a COMPOSITE upload; a wrong one is BadDigest.
#[tokio::test]
async fn a_composite_checksum_sent_without_its_part_count_completes_the_upload() {
    let (client, bucket) = new_bucket("cksminio").await;
    let parts = [payload(5 * MIB, 160), payload(77 * KIB, 161)];
    let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    for algorithm in [
        ChecksumAlgorithm::Crc32,
        ChecksumAlgorithm::Crc32C,
        ChecksumAlgorithm::Sha1,
        ChecksumAlgorithm::Sha256,
    ] {
        let name = algorithm.as_str().to_string();
        let key = format!("minio-go-{name}.bin");
        let id = ok(
            client
                .create_multipart_upload()
                .bucket(&bucket)
                .key(&key)
                .checksum_algorithm(algorithm.clone())
                .send()
                .await,
            &format!("Create {name}"),
        )
        .upload_id()
        .unwrap()
        .to_string();
        let mut completed = Vec::new();
        for (i, part) in parts.iter().enumerate() {
            let n = i as i32 + 1;
            let out = ok(
                client
                    .upload_part()
                    .bucket(&bucket)
                    .key(&key)
                    .upload_id(&id)
                    .part_number(n)
                    .checksum_algorithm(algorithm.clone())
                    .body(part.clone().into())
                    .send()
                    .await,
                &format!("UploadPart {n} {name}"),
            );
            completed.push(
                CompletedPart::builder()
                    .part_number(n)
                    .e_tag(out.e_tag().unwrap())
                    .build(),
            );
        }
        let with_count = composite_checksum(&name, &refs);
        let (sent, count) = with_count.rsplit_once('-').unwrap();
        assert_eq!(count, "2");
        let complete = |value: String| {
            let request = client
                .complete_multipart_upload()
                .bucket(&bucket)
                .key(&key)
                .upload_id(&id)
                .multipart_upload(
                    CompletedMultipartUpload::builder()
                        .set_parts(Some(completed.clone()))
                        .build(),
                );
            match algorithm {
                ChecksumAlgorithm::Crc32 => request.checksum_crc32(value),
                ChecksumAlgorithm::Crc32C => request.checksum_crc32_c(value),
                ChecksumAlgorithm::Sha1 => request.checksum_sha1(value),
                _ => request.checksum_sha256(value),
            }
            .send()
        };
        let wrong = checksum_b64(&name, b"not the parts' checksums");
        assert_s3_error(
            complete(wrong).await,
            400,
            "BadDigest",
            &format!("Complete {name} with a wrong composite checksum"),
        );
        let out = ok(
            complete(sent.to_string()).await,
            &format!("Complete {name} with the composite checksum minio-go sends"),
        );
        let got = pick(
            &algorithm,
            out.checksum_crc32(),
            out.checksum_crc32_c(),
            out.checksum_crc64_nvme(),
            out.checksum_sha1(),
            out.checksum_sha256(),
        );
        assert_eq!(got.as_deref(), Some(with_count.as_str()), "{name}");
        assert_object(&client, &bucket, &key, &parts.concat()).await;
    }
}

#[tokio::test]
async fn full_object_checksum_with_a_hash_algorithm_is_refused() {
    let (client, bucket) = new_bucket("cksfullsha").await;
    assert_s3_error(
        client
            .create_multipart_upload()
            .bucket(&bucket)
            .key("k")
            .checksum_algorithm(ChecksumAlgorithm::Sha256)
            .checksum_type(ChecksumType::FullObject)
            .send()
            .await,
        400,
        "InvalidRequest",
        "CreateMultipartUpload SHA256 with x-amz-checksum-type: FULL_OBJECT",
    );
}

#[tokio::test]
async fn part_with_a_wrong_checksum_is_bad_digest_and_not_stored() {
    let (client, bucket) = new_bucket("cksbad").await;
    let key = "k";
    let create = ok(
        client
            .create_multipart_upload()
            .bucket(&bucket)
            .key(key)
            .checksum_algorithm(ChecksumAlgorithm::Crc32C)
            .send()
            .await,
        "Create",
    );
    let id = create.upload_id().unwrap().to_string();
    let good = payload(MIB, 150);
    ok(
        client
            .upload_part()
            .bucket(&bucket)
            .key(key)
            .upload_id(&id)
            .part_number(1)
            .checksum_algorithm(ChecksumAlgorithm::Crc32C)
            .body(good.clone().into())
            .send()
            .await,
        "UploadPart 1 with CRC32C",
    );
    let bad = payload(MIB, 151);
    let wrong = checksum_b64("CRC32C", b"other bytes");
    for n in [1, 2] {
        let url = server().url(&format!("/{bucket}/{key}?partNumber={n}&uploadId={id}"));
        let resp = signed_send(
            &Signer::test(),
            "PUT",
            &url,
            &hdrs(&[("x-amz-checksum-crc32c", &wrong)]),
            bad.clone(),
        )
        .await;
        assert_eq!(
            resp.status,
            400,
            "part {n} with a wrong x-amz-checksum-crc32c: {}",
            resp.text()
        );
        assert_eq!(resp.xml_element("Code").as_deref(), Some("BadDigest"));
    }
    let listed = list_all_parts(&client, &bucket, key, &id, None).await;
    assert_eq!(
        numbers(&listed),
        vec![1],
        "the rejected part 2 is not listed"
    );
    assert_eq!(
        listed[0].e_tag(),
        Some(quoted_md5(&good).as_str()),
        "the rejected part 1 did not replace the stored one"
    );
    assert_eq!(
        listed[0].checksum_crc32_c(),
        Some(checksum_b64("CRC32C", &good).as_str())
    );
}

// -------------------------------------------------------------------------------------------
// S3's rules and errors.

#[tokio::test]
async fn non_last_part_below_5_mib_is_entity_too_small() {
    let (client, bucket) = new_bucket("toosmall").await;
    let key = "k";
    let p1 = payload(5 * MIB - 1, 160);
    let p2 = payload(KIB, 161);
    let id = create_upload(&client, &bucket, key).await;
    let e1 = upload_part(&client, &bucket, key, &id, 1, &p1).await;
    let e2 = upload_part(&client, &bucket, key, &id, 2, &p2).await;
    assert_s3_error(
        complete_req(&client, &bucket, key, &id, &[(1, &e1), (2, &e2)])
            .send()
            .await,
        400,
        "EntityTooSmall",
        "Complete with a 5 MiB - 1 byte first part",
    );
    assert_s3_error(
        client.get_object().bucket(&bucket).key(key).send().await,
        404,
        "NoSuchKey",
        "GET after EntityTooSmall",
    );
    // The upload survives; the small part is fine as the last (only) one.
    ok(
        complete_req(&client, &bucket, key, &id, &[(1, &e1)])
            .send()
            .await,
        "Complete with the small part last",
    );
    assert_object(&client, &bucket, key, &p1).await;
}

#[tokio::test]
async fn part_numbers_outside_1_to_10000_are_invalid_argument() {
    let (client, bucket) = new_bucket("partnumbers").await;
    let key = "k";
    let id = create_upload(&client, &bucket, key).await;
    for n in [0, 10_001, -1] {
        assert_s3_error(
            client
                .upload_part()
                .bucket(&bucket)
                .key(key)
                .upload_id(&id)
                .part_number(n)
                .body(b"x".to_vec().into())
                .send()
                .await,
            400,
            "InvalidArgument",
            &format!("UploadPart part number {n}"),
        );
    }
    let p1 = payload(5 * MIB, 170);
    let p_last = payload(10, 171);
    let e1 = upload_part(&client, &bucket, key, &id, 1, &p1).await;
    let e_last = upload_part(&client, &bucket, key, &id, 10_000, &p_last).await;
    let listed = list_all_parts(&client, &bucket, key, &id, None).await;
    assert_eq!(numbers(&listed), vec![1, 10_000]);
    let out = ok(
        complete_req(&client, &bucket, key, &id, &[(1, &e1), (10_000, &e_last)])
            .send()
            .await,
        "Complete with parts 1 and 10000",
    );
    assert_eq!(out.e_tag(), Some(multipart_etag(&[&p1, &p_last]).as_str()));
    assert_object(&client, &bucket, key, &[p1.as_slice(), &p_last].concat()).await;
}

/// 5 GiB + 1 byte.
const ABOVE_5_GIB: u64 = 5 * 1024 * 1024 * 1024 + 1;

#[tokio::test]
async fn part_announced_above_5_gib_is_entity_too_large_before_any_body() {
    let (client, bucket) = new_bucket("toolarge").await;
    let key = "k";
    let id = create_upload(&client, &bucket, key).await;
    let resp = send_head_only(
        &server().addr(),
        "PUT",
        &format!("/{bucket}/{key}?partNumber=1&uploadId={id}"),
        &[],
        ABOVE_5_GIB,
        Duration::from_secs(15),
    )
    .await;
    assert_eq!(
        resp.status,
        400,
        "UploadPart with Content-Length {ABOVE_5_GIB}: {}",
        resp.text()
    );
    assert_eq!(
        resp.xml_element("Code").as_deref(),
        Some("EntityTooLarge"),
        "{}",
        resp.text()
    );
    assert!(list_all_parts(&client, &bucket, key, &id, None)
        .await
        .is_empty());
    // The upload still works.
    let e1 = upload_part(&client, &bucket, key, &id, 1, b"fine").await;
    ok(
        complete_req(&client, &bucket, key, &id, &[(1, &e1)])
            .send()
            .await,
        "Complete after the refused part",
    );
}

#[tokio::test]
async fn put_object_announced_above_5_gib_is_entity_too_large_before_any_body() {
    let (_client, bucket) = new_bucket("toolargeput").await;
    let resp = send_head_only(
        &server().addr(),
        "PUT",
        &format!("/{bucket}/huge"),
        &[],
        ABOVE_5_GIB,
        Duration::from_secs(15),
    )
    .await;
    assert_eq!(
        resp.status,
        400,
        "PutObject with Content-Length {ABOVE_5_GIB}: {}",
        resp.text()
    );
    assert_eq!(
        resp.xml_element("Code").as_deref(),
        Some("EntityTooLarge"),
        "{}",
        resp.text()
    );
}

#[tokio::test]
async fn complete_with_a_missing_part_or_wrong_etag_is_invalid_part() {
    let (client, bucket) = new_bucket("invalidpart").await;
    let key = "k";
    let p1 = payload(5 * MIB, 180);
    let id = create_upload(&client, &bucket, key).await;
    let e1 = upload_part(&client, &bucket, key, &id, 1, &p1).await;
    let fake = "\"0123456789abcdef0123456789abcdef\"";
    assert_s3_error(
        complete_req(&client, &bucket, key, &id, &[(1, &e1), (2, fake)])
            .send()
            .await,
        400,
        "InvalidPart",
        "Complete listing a part never uploaded",
    );
    assert_s3_error(
        complete_req(&client, &bucket, key, &id, &[(1, fake)])
            .send()
            .await,
        400,
        "InvalidPart",
        "Complete with a wrong ETag",
    );
    ok(
        complete_req(&client, &bucket, key, &id, &[(1, &e1)])
            .send()
            .await,
        "Complete with the right part",
    );
    assert_object(&client, &bucket, key, &p1).await;
}

#[tokio::test]
async fn complete_with_parts_out_of_order_is_invalid_part_order() {
    let (client, bucket) = new_bucket("partorder").await;
    let key = "k";
    let p1 = payload(5 * MIB, 190);
    let p2 = payload(KIB, 191);
    let id = create_upload(&client, &bucket, key).await;
    let e1 = upload_part(&client, &bucket, key, &id, 1, &p1).await;
    let e2 = upload_part(&client, &bucket, key, &id, 2, &p2).await;
    assert_s3_error(
        complete_req(&client, &bucket, key, &id, &[(2, &e2), (1, &e1)])
            .send()
            .await,
        400,
        "InvalidPartOrder",
        "Complete with parts 2, 1",
    );
    assert_s3_error(
        complete_req(&client, &bucket, key, &id, &[(1, &e1), (1, &e1)])
            .send()
            .await,
        400,
        "InvalidPartOrder",
        "Complete with part 1 twice",
    );
    ok(
        complete_req(&client, &bucket, key, &id, &[(1, &e1), (2, &e2)])
            .send()
            .await,
        "Complete in order",
    );
    assert_object(&client, &bucket, key, &[p1.as_slice(), &p2].concat()).await;
}

#[tokio::test]
async fn completed_or_aborted_upload_is_no_such_upload_for_every_call() {
    let (client, bucket) = new_bucket("nosuchupload").await;
    put(&client, &bucket, "src", b"copy source").await;
    let id_done = create_upload(&client, &bucket, "done").await;
    let e = upload_part(&client, &bucket, "done", &id_done, 1, b"x").await;
    ok(
        complete_req(&client, &bucket, "done", &id_done, &[(1, &e)])
            .send()
            .await,
        "Complete",
    );
    let id_gone = create_upload(&client, &bucket, "gone").await;
    ok(
        client
            .abort_multipart_upload()
            .bucket(&bucket)
            .key("gone")
            .upload_id(&id_gone)
            .send()
            .await,
        "Abort",
    );
    for (key, id, when) in [
        ("done", &id_done, "after Complete"),
        ("gone", &id_gone, "after Abort"),
    ] {
        assert_s3_error(
            client
                .upload_part()
                .bucket(&bucket)
                .key(key)
                .upload_id(id)
                .part_number(2)
                .body(b"late".to_vec().into())
                .send()
                .await,
            404,
            "NoSuchUpload",
            &format!("UploadPart {when}"),
        );
        assert_s3_error(
            client
                .upload_part_copy()
                .bucket(&bucket)
                .key(key)
                .upload_id(id)
                .part_number(2)
                .copy_source(format!("/{bucket}/src"))
                .send()
                .await,
            404,
            "NoSuchUpload",
            &format!("UploadPartCopy {when}"),
        );
        assert_s3_error(
            client
                .list_parts()
                .bucket(&bucket)
                .key(key)
                .upload_id(id)
                .send()
                .await,
            404,
            "NoSuchUpload",
            &format!("ListParts {when}"),
        );
        assert_s3_error(
            client
                .abort_multipart_upload()
                .bucket(&bucket)
                .key(key)
                .upload_id(id)
                .send()
                .await,
            404,
            "NoSuchUpload",
            &format!("AbortMultipartUpload {when}"),
        );
    }
}

#[tokio::test]
async fn create_options_are_kept_on_the_completed_object() {
    let (client, bucket) = new_bucket("createopts").await;
    let key = "ckpt/model.safetensors";
    let create = ok(
        client
            .create_multipart_upload()
            .bucket(&bucket)
            .key(key)
            .content_type("application/x-checkpoint")
            .cache_control("no-cache")
            .content_disposition("attachment; filename=\"model.safetensors\"")
            .metadata("step", "1000")
            .metadata("run", "exp-7")
            .send()
            .await,
        "Create with metadata",
    );
    let id = create.upload_id().unwrap().to_string();
    let p1 = payload(2 * MIB, 200);
    let e1 = upload_part(&client, &bucket, key, &id, 1, &p1).await;
    ok(
        complete_req(&client, &bucket, key, &id, &[(1, &e1)])
            .send()
            .await,
        "Complete",
    );
    let head = ok(
        client.head_object().bucket(&bucket).key(key).send().await,
        "HEAD",
    );
    assert_eq!(head.content_type(), Some("application/x-checkpoint"));
    assert_eq!(head.cache_control(), Some("no-cache"));
    assert_eq!(
        head.content_disposition(),
        Some("attachment; filename=\"model.safetensors\"")
    );
    let meta = head.metadata().cloned().unwrap_or_default();
    assert_eq!(meta.get("step").map(String::as_str), Some("1000"));
    assert_eq!(meta.get("run").map(String::as_str), Some("exp-7"));
    assert_eq!(meta.len(), 2, "user metadata: {meta:?}");
    let get = ok(
        client.get_object().bucket(&bucket).key(key).send().await,
        "GET",
    );
    assert_eq!(get.content_type(), Some("application/x-checkpoint"));
    assert_eq!(get.metadata().cloned().unwrap_or_default(), meta);
}

#[tokio::test]
async fn tagging_given_at_create_is_kept() {
    let (client, bucket) = new_bucket("createtags").await;
    let key = "tagged";
    let create = ok(
        client
            .create_multipart_upload()
            .bucket(&bucket)
            .key(key)
            .tagging("team=ml&run=7")
            .send()
            .await,
        "CreateMultipartUpload with x-amz-tagging",
    );
    let id = create.upload_id().unwrap().to_string();
    let e1 = upload_part(&client, &bucket, key, &id, 1, b"tagged data").await;
    ok(
        complete_req(&client, &bucket, key, &id, &[(1, &e1)])
            .send()
            .await,
        "Complete",
    );
    let get = ok(
        client.get_object().bucket(&bucket).key(key).send().await,
        "GET",
    );
    assert_eq!(
        get.tag_count(),
        Some(2),
        "x-amz-tagging-count of the completed object"
    );
}

/// GetObjectAttributes: only the attributes asked for; a multipart object's parts with their
/// sizes and checksums, paged by max-parts; a single PUT has no parts to list.
#[tokio::test]
async fn get_object_attributes_answers_what_is_asked() {
    use aws_sdk_s3::types::ObjectAttributes as A;
    let (client, bucket) = new_bucket("attrs").await;
    let key = "ckpt";
    let parts = [payload(5 * MIB, 51), payload(5 * MIB, 52), payload(100, 53)];
    let id = ok(
        client
            .create_multipart_upload()
            .bucket(&bucket)
            .key(key)
            .checksum_algorithm(ChecksumAlgorithm::Crc32)
            .send()
            .await,
        "Create",
    )
    .upload_id()
    .unwrap()
    .to_string();
    let mut completed = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let out = ok(
            client
                .upload_part()
                .bucket(&bucket)
                .key(key)
                .upload_id(&id)
                .part_number(i as i32 + 1)
                .checksum_algorithm(ChecksumAlgorithm::Crc32)
                .body(part.clone().into())
                .send()
                .await,
            "UploadPart",
        );
        completed.push(
            CompletedPart::builder()
                .part_number(i as i32 + 1)
                .e_tag(out.e_tag().unwrap())
                .checksum_crc32(out.checksum_crc32().unwrap())
                .build(),
        );
    }
    ok(
        client
            .complete_multipart_upload()
            .bucket(&bucket)
            .key(key)
            .upload_id(&id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(completed))
                    .build(),
            )
            .send()
            .await,
        "Complete",
    );
    let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();

    let all = ok(
        client
            .get_object_attributes()
            .bucket(&bucket)
            .key(key)
            .object_attributes(A::Etag)
            .object_attributes(A::Checksum)
            .object_attributes(A::ObjectParts)
            .object_attributes(A::StorageClass)
            .object_attributes(A::ObjectSize)
            .max_parts(2)
            .send()
            .await,
        "GetObjectAttributes",
    );
    assert_eq!(all.e_tag(), Some(multipart_etag(&refs).trim_matches('"')));
    assert_eq!(
        all.object_size(),
        Some(parts.iter().map(|p| p.len() as i64).sum())
    );
    assert_eq!(all.storage_class().map(|c| c.as_str()), Some("STANDARD"));
    let checksum = all.checksum().expect("Checksum");
    assert_eq!(
        checksum.checksum_crc32(),
        Some(composite_checksum("CRC32", &refs).as_str())
    );
    let listed = all.object_parts().expect("ObjectParts");
    assert_eq!(listed.total_parts_count(), Some(3));
    assert_eq!(listed.is_truncated(), Some(true));
    assert_eq!(listed.next_part_number_marker(), Some("2"));
    let first: Vec<(Option<i32>, Option<i64>)> = listed
        .parts()
        .iter()
        .map(|p| (p.part_number(), p.size()))
        .collect();
    assert_eq!(
        first,
        [
            (Some(1), Some(5 * MIB as i64)),
            (Some(2), Some(5 * MIB as i64))
        ]
    );
    assert_eq!(
        listed.parts()[0].checksum_crc32(),
        Some(checksum_b64("CRC32", &parts[0]).as_str())
    );
    let rest = ok(
        client
            .get_object_attributes()
            .bucket(&bucket)
            .key(key)
            .object_attributes(A::ObjectParts)
            .part_number_marker("2")
            .send()
            .await,
        "GetObjectAttributes after part 2",
    );
    assert!(rest.e_tag().is_none(), "only what is asked for");
    let rest = rest.object_parts().expect("ObjectParts");
    assert_eq!(rest.parts().len(), 1);
    assert_eq!(rest.parts()[0].size(), Some(100));

    // A single PUT: no parts; a missing attributes header is refused.
    put(&client, &bucket, "single", b"abc").await;
    let single = ok(
        client
            .get_object_attributes()
            .bucket(&bucket)
            .key("single")
            .object_attributes(A::ObjectParts)
            .object_attributes(A::ObjectSize)
            .send()
            .await,
        "single",
    );
    assert!(single.object_parts().is_none());
    assert_eq!(single.object_size(), Some(3));
    assert_s3_error(
        client
            .get_object_attributes()
            .bucket(&bucket)
            .key("nothing")
            .object_attributes(A::Etag)
            .send()
            .await,
        404,
        "NoSuchKey",
        "missing key",
    );
}
