//! DeleteObjects: batch deletes with per-key results, quiet mode, and the body digest S3
//! requires.

mod common;

use aws_sdk_s3::types::{Delete, ObjectIdentifier};
use base64::Engine as _;
use common::*;
use md5::Digest as _;

async fn bucket_with(keys: &[&str]) -> (aws_sdk_s3::Client, String) {
    let client = server().client();
    let bucket = unique_bucket("batch");
    create_bucket(&client, &bucket).await;
    for key in keys {
        put(&client, &bucket, key, key.as_bytes()).await;
    }
    (client, bucket)
}

fn identifiers(keys: &[&str]) -> Delete {
    Delete::builder()
        .set_objects(Some(
            keys.iter()
                .map(|k| ObjectIdentifier::builder().key(*k).build().unwrap())
                .collect(),
        ))
        .build()
        .unwrap()
}

async fn listed(client: &aws_sdk_s3::Client, bucket: &str) -> Vec<String> {
    let out = ok(
        client.list_objects_v2().bucket(bucket).send().await,
        "ListObjectsV2",
    );
    out.contents()
        .iter()
        .filter_map(|o| o.key().map(str::to_string))
        .collect()
}

#[tokio::test]
async fn batch_delete_removes_the_named_keys_and_reports_each() {
    let (client, bucket) = bucket_with(&["a", "b", "c/d", "keep"]).await;
    let out = ok(
        client
            .delete_objects()
            .bucket(&bucket)
            .delete(identifiers(&["a", "b", "c/d", "never-existed"]))
            .send()
            .await,
        "DeleteObjects",
    );
    let mut deleted: Vec<&str> = out.deleted().iter().filter_map(|d| d.key()).collect();
    deleted.sort();
    // As in S3, a key that did not exist is reported deleted too.
    assert_eq!(deleted, ["a", "b", "c/d", "never-existed"]);
    assert!(out.errors().is_empty(), "{:?}", out.errors());
    assert_eq!(listed(&client, &bucket).await, ["keep"]);
}

#[tokio::test]
async fn quiet_mode_reports_only_errors() {
    let long_key = "k".repeat(1025);
    let (client, bucket) = bucket_with(&["x"]).await;
    let delete = Delete::builder()
        .quiet(true)
        .objects(ObjectIdentifier::builder().key("x").build().unwrap())
        .objects(ObjectIdentifier::builder().key(&long_key).build().unwrap())
        .build()
        .unwrap();
    let out = ok(
        client
            .delete_objects()
            .bucket(&bucket)
            .delete(delete)
            .send()
            .await,
        "DeleteObjects quiet",
    );
    assert!(out.deleted().is_empty(), "quiet mode lists no deleted keys");
    assert_eq!(out.errors().len(), 1, "{:?}", out.errors());
    assert_eq!(out.errors()[0].key(), Some(long_key.as_str()));
    assert_eq!(out.errors()[0].code(), Some("KeyTooLongError"));
    assert!(listed(&client, &bucket).await.is_empty());
}

#[tokio::test]
async fn batch_delete_needs_a_matching_body_digest() {
    let (_client, bucket) = bucket_with(&["a"]).await;
    let url = format!("{}/{bucket}?delete", server().endpoint());
    let body = b"<Delete><Object><Key>a</Key></Object></Delete>".to_vec();
    let signer = Signer::test();

    // No Content-MD5 and no checksum: refused, nothing deleted.
    let got = signed_send(&signer, "POST", &url, &[], body.clone()).await;
    assert_eq!(got.status, 400, "{}", String::from_utf8_lossy(&got.body));
    assert_eq!(
        xml_element(&got.text(), "Code").as_deref(),
        Some("InvalidRequest")
    );

    // A Content-MD5 of other bytes: BadDigest, nothing deleted.
    let wrong = base64::engine::general_purpose::STANDARD.encode(md5::Md5::digest(b"other"));
    let got = signed_send(
        &signer,
        "POST",
        &url,
        &hdrs(&[("content-md5", &wrong)]),
        body.clone(),
    )
    .await;
    assert_eq!(got.status, 400);
    assert_eq!(
        xml_element(&got.text(), "Code").as_deref(),
        Some("BadDigest")
    );
    let client = server().client();
    assert_eq!(listed(&client, &bucket).await, ["a"]);

    // The right Content-MD5: deleted.
    let right = base64::engine::general_purpose::STANDARD.encode(md5::Md5::digest(&body));
    let got = signed_send(
        &signer,
        "POST",
        &url,
        &hdrs(&[("content-md5", &right)]),
        body,
    )
    .await;
    assert_eq!(got.status, 200, "{}", String::from_utf8_lossy(&got.body));
    assert!(listed(&client, &bucket).await.is_empty());
}

#[tokio::test]
async fn more_than_1000_keys_is_malformed_xml() {
    let (client, bucket) = bucket_with(&[]).await;
    let keys: Vec<String> = (0..1001).map(|i| format!("k{i}")).collect();
    let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
    let res = client
        .delete_objects()
        .bucket(&bucket)
        .delete(identifiers(&refs))
        .send()
        .await;
    assert_s3_error(res, 400, "MalformedXML", "DeleteObjects with 1001 keys");
}
