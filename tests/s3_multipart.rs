//! Multipart uploads: create, upload parts, complete (body and ETag), abort, re-uploaded parts.

mod common;

use std::sync::OnceLock;

use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use aws_sdk_s3::Client;
use common::*;

fn server() -> &'static TestServer {
    static SERVER: OnceLock<TestServer> = OnceLock::new();
    SERVER.get_or_init(TestServer::start)
}

async fn new_bucket(prefix: &str) -> (Client, String) {
    let client = server().client();
    let bucket = unique_bucket(prefix);
    create_bucket(&client, &bucket).await;
    (client, bucket)
}

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

/// Uploads one part; asserts its ETag is the part's MD5 and returns it.
async fn upload_part(
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
        &format!("UploadPart {n}"),
    );
    let etag = out.e_tag().expect("part ETag").to_string();
    assert_eq!(etag, quoted_md5(data), "part {n} ETag is the part's MD5");
    etag
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
