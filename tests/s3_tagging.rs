//! Object and bucket tagging as AWS S3 documents it: PutObjectTagging / GetObjectTagging /
//! DeleteObjectTagging (`?tagging` on a key), `x-amz-tagging` on PutObject and
//! CreateMultipartUpload, `x-amz-tagging-count` on GET and HEAD, S3's tag limits
//! (10 object tags, 50 bucket tags, 128-character keys, 256-character values, no key twice),
//! and PutBucketTagging / GetBucketTagging / DeleteBucketTagging (`?tagging` on a bucket),
//! including a restart.

mod common;

use std::time::Duration;

use aws_sdk_s3::types::{Tag, Tagging};
use aws_sdk_s3::Client;
use common::*;

fn tag_set(pairs: &[(&str, &str)]) -> Tagging {
    owned_tag_set(
        &pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<Vec<_>>(),
    )
}

fn owned_tag_set(pairs: &[(String, String)]) -> Tagging {
    let tags = pairs
        .iter()
        .map(|(k, v)| Tag::builder().key(k).value(v).build().expect("tag"))
        .collect();
    Tagging::builder()
        .set_tag_set(Some(tags))
        .build()
        .expect("tagging")
}

/// `n` distinct tags `k00=v00`, `k01=v01`, ...
fn numbered_tags(n: usize) -> Vec<(String, String)> {
    (0..n)
        .map(|i| (format!("k{i:02}"), format!("v{i:02}")))
        .collect()
}

fn sorted(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    out.sort();
    out
}

fn sorted_tags(tags: &[Tag]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = tags
        .iter()
        .map(|t| (t.key().to_string(), t.value().to_string()))
        .collect();
    out.sort();
    out
}

/// GetObjectTagging, as sorted `(key, value)` pairs (S3 documents no order).
async fn object_tags(client: &Client, bucket: &str, key: &str) -> Vec<(String, String)> {
    let out = ok(
        client
            .get_object_tagging()
            .bucket(bucket)
            .key(key)
            .send()
            .await,
        &format!("GetObjectTagging {bucket}/{key}"),
    );
    sorted_tags(out.tag_set())
}

async fn put_object_tags(client: &Client, bucket: &str, key: &str, pairs: &[(&str, &str)]) {
    ok(
        client
            .put_object_tagging()
            .bucket(bucket)
            .key(key)
            .tagging(tag_set(pairs))
            .send()
            .await,
        &format!("PutObjectTagging {bucket}/{key}"),
    );
}

async fn bucket_tags(client: &Client, bucket: &str) -> Vec<(String, String)> {
    let out = ok(
        client.get_bucket_tagging().bucket(bucket).send().await,
        &format!("GetBucketTagging {bucket}"),
    );
    sorted_tags(out.tag_set())
}

/// `x-amz-tagging-count` of GET and HEAD (None when the header is absent).
async fn tag_counts(client: &Client, bucket: &str, key: &str) -> (Option<i32>, Option<i32>) {
    let get = ok(
        client.get_object().bucket(bucket).key(key).send().await,
        "GetObject",
    );
    let head = ok(
        client.head_object().bucket(bucket).key(key).send().await,
        "HeadObject",
    );
    (get.tag_count(), head.tag_count())
}

/// ETag, Size and LastModified of `key` in ListObjectsV2.
async fn listed_entry(
    client: &Client,
    bucket: &str,
    key: &str,
) -> (
    Option<String>,
    Option<i64>,
    Option<aws_sdk_s3::primitives::DateTime>,
) {
    let listed = ok(
        client
            .list_objects_v2()
            .bucket(bucket)
            .prefix(key)
            .send()
            .await,
        "ListObjectsV2",
    );
    let entry = listed
        .contents()
        .iter()
        .find(|o| o.key() == Some(key))
        .unwrap_or_else(|| panic!("{key} not listed"));
    (
        entry.e_tag().map(str::to_owned),
        entry.size(),
        entry.last_modified().cloned(),
    )
}

fn object_url(bucket: &str, key: &str, query: &str) -> String {
    server().url(&format!("/{bucket}/{}{query}", url_encode_key(key)))
}

// ---- object tagging ----

#[tokio::test]
async fn object_tags_put_get_replace_delete() {
    let (client, bucket) = new_bucket("objtags").await;
    let key = "dir/tagged object.bin";
    put(&client, &bucket, key, b"some data").await;

    // An object without tags: an empty TagSet, and no x-amz-tagging-count.
    assert_eq!(object_tags(&client, &bucket, key).await, vec![]);
    assert_eq!(
        tag_counts(&client, &bucket, key).await,
        (None, None),
        "x-amz-tagging-count of an untagged object (GET, HEAD)"
    );

    let first = [
        ("project", "strata"),
        ("stage", "raw"),
        ("empty", ""),
        ("chars", "a+b=c/d:e@f_g.h-i"),
        ("ünïcødé", "välüé ñ"),
    ];
    put_object_tags(&client, &bucket, key, &first).await;
    assert_eq!(object_tags(&client, &bucket, key).await, sorted(&first));
    assert_eq!(
        tag_counts(&client, &bucket, key).await,
        (Some(5), Some(5)),
        "x-amz-tagging-count after PutObjectTagging (GET, HEAD)"
    );

    // PutObjectTagging replaces the whole tag set; it does not merge.
    let second = [("stage", "clean"), ("owner", "ml")];
    put_object_tags(&client, &bucket, key, &second).await;
    assert_eq!(object_tags(&client, &bucket, key).await, sorted(&second));
    assert_eq!(tag_counts(&client, &bucket, key).await, (Some(2), Some(2)));

    ok(
        client
            .delete_object_tagging()
            .bucket(&bucket)
            .key(key)
            .send()
            .await,
        "DeleteObjectTagging",
    );
    assert_eq!(object_tags(&client, &bucket, key).await, vec![]);
    assert_eq!(
        tag_counts(&client, &bucket, key).await,
        (None, None),
        "x-amz-tagging-count after DeleteObjectTagging"
    );
    // Deleting the tags of an untagged object is fine too.
    ok(
        client
            .delete_object_tagging()
            .bucket(&bucket)
            .key(key)
            .send()
            .await,
        "DeleteObjectTagging of an untagged object",
    );
    assert_eq!(get(&client, &bucket, key).await, b"some data");
}

#[tokio::test]
async fn tag_values_keep_leading_and_trailing_spaces() {
    // Whitespace is an allowed tag character; a value is stored as given.
    let (client, bucket) = new_bucket("tagspace").await;
    put(&client, &bucket, "k", b"x").await;
    let tags = [("padded", "  two spaces each side  "), ("inner", "a  b")];
    put_object_tags(&client, &bucket, "k", &tags).await;
    assert_eq!(object_tags(&client, &bucket, "k").await, sorted(&tags));
}

#[tokio::test]
async fn object_tagging_wire_format_and_status_codes() {
    let (client, bucket) = new_bucket("tagwire").await;
    put(&client, &bucket, "k", b"x").await;
    let signer = Signer::test();
    let body = "<Tagging xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><TagSet>\
                <Tag><Key>team</Key><Value>ml + infra</Value></Tag>\
                <Tag><Key>tier</Key><Value>1</Value></Tag></TagSet></Tagging>";
    let resp = signed_send(
        &signer,
        "PUT",
        &object_url(&bucket, "k", "?tagging"),
        &[],
        body.as_bytes().to_vec(),
    )
    .await;
    assert_eq!(resp.status, 200, "PutObjectTagging status: {}", resp.text());

    let resp = signed_send(
        &signer,
        "GET",
        &object_url(&bucket, "k", "?tagging"),
        &[],
        vec![],
    )
    .await;
    assert_eq!(resp.status, 200, "GetObjectTagging: {}", resp.text());
    let xml = resp.text();
    assert!(
        xml.contains("<Tagging") && xml.contains("<TagSet>"),
        "GetObjectTagging body is a Tagging document: {xml}"
    );
    assert_eq!(xml_elements(&xml, "Key"), vec!["team", "tier"], "{xml}");
    assert_eq!(
        xml_elements(&xml, "Value"),
        vec!["ml + infra", "1"],
        "{xml}"
    );
    assert_eq!(
        object_tags(&client, &bucket, "k").await,
        sorted(&[("team", "ml + infra"), ("tier", "1")])
    );

    let head = signed_send(&signer, "HEAD", &object_url(&bucket, "k", ""), &[], vec![]).await;
    assert_eq!(head.header("x-amz-tagging-count").as_deref(), Some("2"));

    let resp = signed_send(
        &signer,
        "DELETE",
        &object_url(&bucket, "k", "?tagging"),
        &[],
        vec![],
    )
    .await;
    assert_eq!(
        resp.status,
        204,
        "DeleteObjectTagging status: {}",
        resp.text()
    );
    let head = signed_send(&signer, "HEAD", &object_url(&bucket, "k", ""), &[], vec![]).await;
    assert_eq!(head.status, 200);
    assert_eq!(
        head.header("x-amz-tagging-count"),
        None,
        "no x-amz-tagging-count once the tags are deleted"
    );
}

#[tokio::test]
async fn tagging_keeps_data_etag_and_last_modified() {
    let (client, bucket) = new_bucket("tagkeep").await;
    // Inline (small) and erasure-coded (several blocks) objects.
    for (key, size) in [("small", 100usize), ("large", 2 * MIB + 3)] {
        let data = payload(size, size as u64);
        let etag = ok(
            client
                .put_object()
                .bucket(&bucket)
                .key(key)
                .content_type("application/x-tag-test")
                .metadata("color", "blue")
                .body(data.clone().into())
                .send()
                .await,
            "PutObject",
        )
        .e_tag()
        .map(str::to_owned);
        assert_eq!(etag.as_deref(), Some(quoted_md5(&data).as_str()));
        let before = ok(
            client.head_object().bucket(&bucket).key(key).send().await,
            "HEAD before tagging",
        );
        let listed_before = listed_entry(&client, &bucket, key).await;
        // Last-Modified has one-second resolution: a rewrite now would show.
        tokio::time::sleep(Duration::from_millis(1100)).await;

        put_object_tags(&client, &bucket, key, &[("a", "1"), ("b", "2")]).await;
        let tagged = ok(
            client.head_object().bucket(&bucket).key(key).send().await,
            "HEAD after PutObjectTagging",
        );
        assert_eq!(tagged.e_tag(), before.e_tag(), "{key}: ETag after tagging");
        assert_eq!(
            tagged.last_modified(),
            before.last_modified(),
            "{key}: Last-Modified after tagging"
        );
        assert_eq!(tagged.content_length(), Some(size as i64));
        assert_eq!(tagged.content_type(), Some("application/x-tag-test"));
        assert_eq!(
            tagged
                .metadata()
                .and_then(|m| m.get("color"))
                .map(String::as_str),
            Some("blue"),
            "{key}: user metadata after tagging"
        );
        assert_object(&client, &bucket, key, &data).await;

        ok(
            client
                .delete_object_tagging()
                .bucket(&bucket)
                .key(key)
                .send()
                .await,
            "DeleteObjectTagging",
        );
        let untagged = ok(
            client.head_object().bucket(&bucket).key(key).send().await,
            "HEAD after DeleteObjectTagging",
        );
        assert_eq!(
            untagged.e_tag(),
            before.e_tag(),
            "{key}: ETag after untagging"
        );
        assert_eq!(
            untagged.last_modified(),
            before.last_modified(),
            "{key}: Last-Modified after untagging"
        );
        assert_object(&client, &bucket, key, &data).await;

        let listed_after = listed_entry(&client, &bucket, key).await;
        assert_eq!(
            listed_after, listed_before,
            "{key}: listed ETag, Size, LastModified"
        );
    }
}

#[tokio::test]
async fn put_with_x_amz_tagging_header() {
    let (client, bucket) = new_bucket("tagheader").await;
    ok(
        client
            .put_object()
            .bucket(&bucket)
            .key("h")
            .tagging("project=strata%20store&path=a%2Fb%3Dc&amp=x%26y&empty=")
            .body(b"data".to_vec().into())
            .send()
            .await,
        "PutObject with x-amz-tagging",
    );
    assert_eq!(
        object_tags(&client, &bucket, "h").await,
        sorted(&[
            ("project", "strata store"),
            ("path", "a/b=c"),
            ("amp", "x&y"),
            ("empty", ""),
        ]),
        "x-amz-tagging is URL-encoded key=value pairs"
    );
    assert_eq!(tag_counts(&client, &bucket, "h").await, (Some(4), Some(4)));

    // Overwriting the key without x-amz-tagging makes an untagged object.
    put(&client, &bucket, "h", b"new data").await;
    assert_eq!(object_tags(&client, &bucket, "h").await, vec![]);
    assert_eq!(tag_counts(&client, &bucket, "h").await, (None, None));

    // Exactly 10 tags are allowed on a PUT.
    let ten: Vec<String> = numbered_tags(10)
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    ok(
        client
            .put_object()
            .bucket(&bucket)
            .key("ten")
            .tagging(ten.join("&"))
            .body(b"x".to_vec().into())
            .send()
            .await,
        "PutObject with 10 tags",
    );
    assert_eq!(
        tag_counts(&client, &bucket, "ten").await,
        (Some(10), Some(10))
    );
}

#[tokio::test]
async fn put_with_invalid_x_amz_tagging_is_refused_and_stores_nothing() {
    let (client, bucket) = new_bucket("tagheaderbad").await;
    let eleven: Vec<String> = numbered_tags(11)
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let cases = [
        ("11 tags", eleven.join("&")),
        ("129-char key", format!("{}=v", "k".repeat(129))),
        ("257-char value", format!("k={}", "v".repeat(257))),
        ("duplicate key", "k=1&k=2".to_string()),
    ];
    for (i, (what, header)) in cases.iter().enumerate() {
        let key = format!("bad-{i}");
        assert_s3_error(
            client
                .put_object()
                .bucket(&bucket)
                .key(&key)
                .tagging(header)
                .body(b"x".to_vec().into())
                .send()
                .await,
            400,
            "InvalidTag",
            &format!("PutObject with x-amz-tagging: {what}"),
        );
        assert_s3_status(
            client.head_object().bucket(&bucket).key(&key).send().await,
            404,
            &format!("object after refused PUT ({what})"),
        );
    }
}

#[tokio::test]
async fn object_tag_limits() {
    let (client, bucket) = new_bucket("taglimits").await;
    put(&client, &bucket, "k", b"x").await;

    // The limits themselves are allowed: 10 tags, 128-character keys, 256-character values
    // (characters, not bytes: "é" is two bytes in UTF-8).
    let ten = numbered_tags(10);
    ok(
        client
            .put_object_tagging()
            .bucket(&bucket)
            .key("k")
            .tagging(owned_tag_set(&ten))
            .send()
            .await,
        "PutObjectTagging with 10 tags",
    );
    assert_eq!(object_tags(&client, &bucket, "k").await, ten);
    let long_key = "é".repeat(128);
    let long_value = "ü".repeat(256);
    let (ascii_key, ascii_value) = ("a".repeat(128), "b".repeat(256));
    let at_limit = [
        (long_key.as_str(), "v"),
        ("k", long_value.as_str()),
        (ascii_key.as_str(), ascii_value.as_str()),
    ];
    put_object_tags(&client, &bucket, "k", &at_limit).await;
    assert_eq!(object_tags(&client, &bucket, "k").await, sorted(&at_limit));

    // One past each limit: 400 InvalidTag, and the tag set stays as it was.
    let too_long_key = "k".repeat(129);
    let too_long_value = "v".repeat(257);
    let cases: Vec<(&str, Vec<(String, String)>)> = vec![
        ("11 tags", numbered_tags(11)),
        ("129-char key", vec![(too_long_key, "v".into())]),
        ("257-char value", vec![("k".into(), too_long_value)]),
        (
            "duplicate key",
            vec![("dup".into(), "1".into()), ("dup".into(), "2".into())],
        ),
    ];
    for (what, tags) in &cases {
        assert_s3_error(
            client
                .put_object_tagging()
                .bucket(&bucket)
                .key("k")
                .tagging(owned_tag_set(tags))
                .send()
                .await,
            400,
            "InvalidTag",
            &format!("PutObjectTagging: {what}"),
        );
        assert_eq!(
            object_tags(&client, &bucket, "k").await,
            sorted(&at_limit),
            "tags after refused PutObjectTagging ({what})"
        );
    }
    // A key must have at least one character.
    assert_s3_status(
        client
            .put_object_tagging()
            .bucket(&bucket)
            .key("k")
            .tagging(tag_set(&[("", "v")]))
            .send()
            .await,
        400,
        "PutObjectTagging with an empty key",
    );
}

#[tokio::test]
async fn object_tagging_of_missing_keys_and_buckets() {
    let (client, bucket) = new_bucket("tagmissing").await;
    assert_s3_error(
        client
            .get_object_tagging()
            .bucket(&bucket)
            .key("nope")
            .send()
            .await,
        404,
        "NoSuchKey",
        "GetObjectTagging of a missing key",
    );
    assert_s3_error(
        client
            .put_object_tagging()
            .bucket(&bucket)
            .key("nope")
            .tagging(tag_set(&[("a", "b")]))
            .send()
            .await,
        404,
        "NoSuchKey",
        "PutObjectTagging of a missing key",
    );
    assert_s3_error(
        client
            .delete_object_tagging()
            .bucket(&bucket)
            .key("nope")
            .send()
            .await,
        404,
        "NoSuchKey",
        "DeleteObjectTagging of a missing key",
    );
    // PutObjectTagging does not create the object.
    assert_s3_status(
        client
            .head_object()
            .bucket(&bucket)
            .key("nope")
            .send()
            .await,
        404,
        "HEAD after PutObjectTagging of a missing key",
    );
    // A deleted object's tags are gone with it.
    put(&client, &bucket, "gone", b"x").await;
    put_object_tags(&client, &bucket, "gone", &[("a", "b")]).await;
    ok(
        client
            .delete_object()
            .bucket(&bucket)
            .key("gone")
            .send()
            .await,
        "DeleteObject",
    );
    assert_s3_error(
        client
            .get_object_tagging()
            .bucket(&bucket)
            .key("gone")
            .send()
            .await,
        404,
        "NoSuchKey",
        "GetObjectTagging of a deleted key",
    );
    put(&client, &bucket, "gone", b"again").await;
    assert_eq!(
        object_tags(&client, &bucket, "gone").await,
        vec![],
        "a re-created key does not get the deleted object's tags"
    );

    let missing = unique_bucket("no-such-bucket");
    assert_s3_error(
        client
            .get_object_tagging()
            .bucket(&missing)
            .key("k")
            .send()
            .await,
        404,
        "NoSuchBucket",
        "GetObjectTagging in a missing bucket",
    );
    assert_s3_error(
        client
            .put_object_tagging()
            .bucket(&missing)
            .key("k")
            .tagging(tag_set(&[("a", "b")]))
            .send()
            .await,
        404,
        "NoSuchBucket",
        "PutObjectTagging in a missing bucket",
    );
}

#[tokio::test]
async fn malformed_tagging_documents_are_malformed_xml() {
    let (client, bucket) = new_bucket("tagxml").await;
    put(&client, &bucket, "k", b"x").await;
    put_object_tags(&client, &bucket, "k", &[("keep", "me")]).await;
    let signer = Signer::test();
    for body in [
        "this is not xml",
        "<Tagging><TagSet><Tag><Key>k</Key><Value>v</Value></Tag>",
        "<Tagging><TagSet><Tag><Value>no key</Value></Tag></TagSet></Tagging>",
    ] {
        let resp = signed_send(
            &signer,
            "PUT",
            &object_url(&bucket, "k", "?tagging"),
            &[],
            body.as_bytes().to_vec(),
        )
        .await;
        assert_eq!(
            (resp.status, resp.xml_element("Code").as_deref()),
            (400, Some("MalformedXML")),
            "PutObjectTagging with body {body:?}: {}",
            resp.text()
        );
        let resp = signed_send(
            &signer,
            "PUT",
            &server().url(&format!("/{bucket}?tagging")),
            &[],
            body.as_bytes().to_vec(),
        )
        .await;
        assert_eq!(
            (resp.status, resp.xml_element("Code").as_deref()),
            (400, Some("MalformedXML")),
            "PutBucketTagging with body {body:?}: {}",
            resp.text()
        );
    }
    assert_eq!(
        object_tags(&client, &bucket, "k").await,
        sorted(&[("keep", "me")]),
        "tags after refused documents"
    );
    assert_s3_error(
        client.get_bucket_tagging().bucket(&bucket).send().await,
        404,
        "NoSuchTagSet",
        "bucket tags after refused documents",
    );
}

#[tokio::test]
async fn multipart_upload_tags_given_at_create() {
    let (client, bucket) = new_bucket("tagmpu").await;
    let key = "multi";
    let create = ok(
        client
            .create_multipart_upload()
            .bucket(&bucket)
            .key(key)
            .tagging("team=ml&run=7&note=hello%20world")
            .send()
            .await,
        "CreateMultipartUpload with x-amz-tagging",
    );
    let id = create.upload_id().unwrap().to_string();
    let part1 = payload(5 * MIB, 1);
    let part2 = payload(1000, 2);
    let e1 = upload_part(&client, &bucket, key, &id, 1, &part1).await;
    let e2 = upload_part(&client, &bucket, key, &id, 2, &part2).await;
    use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
    ok(
        client
            .complete_multipart_upload()
            .bucket(&bucket)
            .key(key)
            .upload_id(&id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .parts(CompletedPart::builder().part_number(1).e_tag(e1).build())
                    .parts(CompletedPart::builder().part_number(2).e_tag(e2).build())
                    .build(),
            )
            .send()
            .await,
        "CompleteMultipartUpload",
    );
    assert_eq!(
        object_tags(&client, &bucket, key).await,
        sorted(&[("team", "ml"), ("run", "7"), ("note", "hello world")])
    );
    assert_eq!(tag_counts(&client, &bucket, key).await, (Some(3), Some(3)));
    let etag_before = ok(
        client.head_object().bucket(&bucket).key(key).send().await,
        "HEAD",
    )
    .e_tag()
    .map(str::to_owned);
    put_object_tags(&client, &bucket, key, &[("team", "infra")]).await;
    let after = ok(
        client.head_object().bucket(&bucket).key(key).send().await,
        "HEAD",
    );
    assert_eq!(after.e_tag().map(str::to_owned), etag_before);
    assert_eq!(after.tag_count(), Some(1));
    let mut whole = part1.clone();
    whole.extend_from_slice(&part2);
    assert_object(&client, &bucket, key, &whole).await;

    // Too many tags at CreateMultipartUpload: refused, no upload is started.
    let eleven: Vec<String> = numbered_tags(11)
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    assert_s3_error(
        client
            .create_multipart_upload()
            .bucket(&bucket)
            .key("too-many")
            .tagging(eleven.join("&"))
            .send()
            .await,
        400,
        "InvalidTag",
        "CreateMultipartUpload with 11 tags",
    );
    let uploads = ok(
        client.list_multipart_uploads().bucket(&bucket).send().await,
        "ListMultipartUploads",
    );
    assert!(
        uploads
            .uploads()
            .iter()
            .all(|u| u.key() != Some("too-many")),
        "a refused CreateMultipartUpload left an upload: {:?}",
        uploads.uploads()
    );
}

// ---- bucket tagging ----

#[tokio::test]
async fn bucket_tags_put_get_replace_delete() {
    let (client, bucket) = new_bucket("buckettags").await;
    assert_s3_error(
        client.get_bucket_tagging().bucket(&bucket).send().await,
        404,
        "NoSuchTagSet",
        "GetBucketTagging before any PutBucketTagging",
    );

    let first = [
        ("cost-center", "1234"),
        ("env", "prod"),
        ("owner", "ml team"),
    ];
    ok(
        client
            .put_bucket_tagging()
            .bucket(&bucket)
            .tagging(tag_set(&first))
            .send()
            .await,
        "PutBucketTagging",
    );
    assert_eq!(bucket_tags(&client, &bucket).await, sorted(&first));

    // Bucket tags are not object tags.
    put(&client, &bucket, "obj", b"x").await;
    assert_eq!(object_tags(&client, &bucket, "obj").await, vec![]);
    put_object_tags(&client, &bucket, "obj", &[("object", "tag")]).await;
    assert_eq!(bucket_tags(&client, &bucket).await, sorted(&first));

    // A PUT replaces the whole set.
    let second = [("env", "dev")];
    ok(
        client
            .put_bucket_tagging()
            .bucket(&bucket)
            .tagging(tag_set(&second))
            .send()
            .await,
        "PutBucketTagging (replace)",
    );
    assert_eq!(bucket_tags(&client, &bucket).await, sorted(&second));

    // Another bucket has none.
    let (_, other) = new_bucket("buckettags-other").await;
    assert_s3_error(
        client.get_bucket_tagging().bucket(&other).send().await,
        404,
        "NoSuchTagSet",
        "GetBucketTagging of an untagged bucket",
    );

    ok(
        client.delete_bucket_tagging().bucket(&bucket).send().await,
        "DeleteBucketTagging",
    );
    assert_s3_error(
        client.get_bucket_tagging().bucket(&bucket).send().await,
        404,
        "NoSuchTagSet",
        "GetBucketTagging after DeleteBucketTagging",
    );
    ok(
        client.delete_bucket_tagging().bucket(&bucket).send().await,
        "DeleteBucketTagging when there are no tags",
    );
    assert_eq!(
        object_tags(&client, &bucket, "obj").await,
        sorted(&[("object", "tag")]),
        "object tags after DeleteBucketTagging"
    );
}

#[tokio::test]
async fn bucket_tagging_wire_format_and_status_codes() {
    let (_, bucket) = new_bucket("buckettagwire").await;
    let signer = Signer::test();
    let url = server().url(&format!("/{bucket}?tagging"));
    let body = "<Tagging xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><TagSet>\
                <Tag><Key>env</Key><Value>prod</Value></Tag></TagSet></Tagging>";
    let resp = signed_send(&signer, "PUT", &url, &[], body.as_bytes().to_vec()).await;
    assert_eq!(resp.status, 204, "PutBucketTagging status: {}", resp.text());
    let resp = signed_send(&signer, "GET", &url, &[], vec![]).await;
    assert_eq!(resp.status, 200, "GetBucketTagging: {}", resp.text());
    let xml = resp.text();
    assert!(
        xml.contains("<Tagging") && xml.contains("<TagSet>"),
        "GetBucketTagging body: {xml}"
    );
    assert_eq!(xml_elements(&xml, "Key"), vec!["env"]);
    assert_eq!(xml_elements(&xml, "Value"), vec!["prod"]);
    let resp = signed_send(&signer, "DELETE", &url, &[], vec![]).await;
    assert_eq!(
        resp.status,
        204,
        "DeleteBucketTagging status: {}",
        resp.text()
    );
    let resp = signed_send(&signer, "GET", &url, &[], vec![]).await;
    assert_eq!(
        (resp.status, resp.xml_element("Code").as_deref()),
        (404, Some("NoSuchTagSet")),
        "GetBucketTagging after delete: {}",
        resp.text()
    );
}

#[tokio::test]
async fn bucket_tag_limits() {
    let (client, bucket) = new_bucket("buckettaglimits").await;
    let fifty = numbered_tags(50);
    ok(
        client
            .put_bucket_tagging()
            .bucket(&bucket)
            .tagging(owned_tag_set(&fifty))
            .send()
            .await,
        "PutBucketTagging with 50 tags",
    );
    assert_eq!(bucket_tags(&client, &bucket).await, fifty);

    let cases: Vec<(&str, Vec<(String, String)>)> = vec![
        ("51 tags", numbered_tags(51)),
        ("129-char key", vec![("k".repeat(129), "v".into())]),
        ("257-char value", vec![("k".into(), "v".repeat(257))]),
        (
            "duplicate key",
            vec![("dup".into(), "1".into()), ("dup".into(), "2".into())],
        ),
    ];
    for (what, tags) in &cases {
        assert_s3_error(
            client
                .put_bucket_tagging()
                .bucket(&bucket)
                .tagging(owned_tag_set(tags))
                .send()
                .await,
            400,
            "InvalidTag",
            &format!("PutBucketTagging: {what}"),
        );
        assert_eq!(
            bucket_tags(&client, &bucket).await,
            fifty,
            "bucket tags after refused PutBucketTagging ({what})"
        );
    }
    // 128-character keys and 256-character values are allowed.
    let (long_key, long_value) = ("k".repeat(128), "v".repeat(256));
    let at_limit = [(long_key.as_str(), long_value.as_str())];
    ok(
        client
            .put_bucket_tagging()
            .bucket(&bucket)
            .tagging(tag_set(&at_limit))
            .send()
            .await,
        "PutBucketTagging at the length limits",
    );
    assert_eq!(bucket_tags(&client, &bucket).await, sorted(&at_limit));
}

#[tokio::test]
async fn bucket_tagging_of_missing_buckets_and_recreated_buckets() {
    let client = server().client();
    let missing = unique_bucket("no-such-bucket");
    assert_s3_error(
        client.get_bucket_tagging().bucket(&missing).send().await,
        404,
        "NoSuchBucket",
        "GetBucketTagging of a missing bucket",
    );
    assert_s3_error(
        client
            .put_bucket_tagging()
            .bucket(&missing)
            .tagging(tag_set(&[("a", "b")]))
            .send()
            .await,
        404,
        "NoSuchBucket",
        "PutBucketTagging of a missing bucket",
    );
    assert_s3_error(
        client.delete_bucket_tagging().bucket(&missing).send().await,
        404,
        "NoSuchBucket",
        "DeleteBucketTagging of a missing bucket",
    );

    // A bucket deleted and created again under the same name starts without tags.
    let (client, bucket) = new_bucket("buckettag-recreate").await;
    ok(
        client
            .put_bucket_tagging()
            .bucket(&bucket)
            .tagging(tag_set(&[("old", "tag")]))
            .send()
            .await,
        "PutBucketTagging",
    );
    ok(
        client.delete_bucket().bucket(&bucket).send().await,
        "DeleteBucket",
    );
    create_bucket(&client, &bucket).await;
    assert_s3_error(
        client.get_bucket_tagging().bucket(&bucket).send().await,
        404,
        "NoSuchTagSet",
        "GetBucketTagging of a re-created bucket",
    );
}

#[tokio::test]
async fn bucket_and_object_tags_survive_a_restart() {
    // Two erasure sets, so the bucket's settings live on every set.
    let server = TestServer::start_with(ServerOptions {
        drive_count: 18,
        ..Default::default()
    });
    let client = server.client();
    let bucket = unique_bucket("tagrestart");
    let untagged = unique_bucket("tagrestart-none");
    create_bucket(&client, &bucket).await;
    create_bucket(&client, &untagged).await;
    let tags = numbered_tags(50);
    ok(
        client
            .put_bucket_tagging()
            .bucket(&bucket)
            .tagging(owned_tag_set(&tags))
            .send()
            .await,
        "PutBucketTagging",
    );
    let mut keys = Vec::new();
    for i in 0..8 {
        let key = format!("obj-{i}");
        put(&client, &bucket, &key, format!("data {i}").as_bytes()).await;
        put_object_tags(&client, &bucket, &key, &[("i", &i.to_string())]).await;
        keys.push(key);
    }

    server.restart();
    let client = server.client();
    assert_eq!(
        bucket_tags(&client, &bucket).await,
        tags,
        "bucket tags after restart"
    );
    assert_s3_error(
        client.get_bucket_tagging().bucket(&untagged).send().await,
        404,
        "NoSuchTagSet",
        "untagged bucket after restart",
    );
    for (i, key) in keys.iter().enumerate() {
        assert_eq!(
            object_tags(&client, &bucket, key).await,
            vec![("i".to_string(), i.to_string())],
            "object tags of {key} after restart"
        );
        assert_eq!(
            get(&client, &bucket, key).await,
            format!("data {i}").as_bytes()
        );
    }

    // A deletion is durable too.
    ok(
        client.delete_bucket_tagging().bucket(&bucket).send().await,
        "DeleteBucketTagging",
    );
    server.restart();
    let client = server.client();
    assert_s3_error(
        client.get_bucket_tagging().bucket(&bucket).send().await,
        404,
        "NoSuchTagSet",
        "GetBucketTagging after delete and restart",
    );
}

// ---- body integrity ----

/// Headers claiming a digest of some other body: a Content-MD5, or a CRC32 flexible checksum.
fn wrong_digests() -> Vec<(&'static str, Vec<(String, String)>)> {
    let other = b"<Tagging><TagSet></TagSet></Tagging>";
    vec![
        (
            "Content-MD5",
            hdrs(&[("content-md5", &b64(&md5_bytes(other)))]),
        ),
        (
            "x-amz-checksum-crc32",
            hdrs(&[("x-amz-checksum-crc32", &checksum_b64("CRC32", other))]),
        ),
    ]
}

#[tokio::test]
async fn tagging_bodies_that_do_not_match_their_digest_are_refused() {
    let (client, bucket) = new_bucket("tagdigest").await;
    put(&client, &bucket, "k", b"x").await;
    put_object_tags(&client, &bucket, "k", &[("keep", "me")]).await;
    let body = "<Tagging><TagSet><Tag><Key>corrupt</Key><Value>1</Value></Tag></TagSet></Tagging>";
    let signer = Signer::test();
    let mut wrong = Vec::new();
    for (what, headers) in wrong_digests() {
        for (operation, url) in [
            ("PutObjectTagging", object_url(&bucket, "k", "?tagging")),
            (
                "PutBucketTagging",
                server().url(&format!("/{bucket}?tagging")),
            ),
        ] {
            let resp = signed_send(&signer, "PUT", &url, &headers, body.as_bytes().to_vec()).await;
            let got = (resp.status, resp.xml_element("Code"));
            if got != (400, Some("BadDigest".to_string())) {
                wrong.push(format!("{operation} with a wrong {what}: got {got:?}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "expected 400 BadDigest:\n{}",
        wrong.join("\n")
    );
    assert_eq!(
        object_tags(&client, &bucket, "k").await,
        sorted(&[("keep", "me")])
    );
    assert_s3_error(
        client.get_bucket_tagging().bucket(&bucket).send().await,
        404,
        "NoSuchTagSet",
        "bucket tags after refused PUTs",
    );
}

/// S3 returns a tag set sorted by key, whatever order it was given in.
#[tokio::test]
async fn tag_sets_come_back_sorted_by_key() {
    let (client, bucket) = new_bucket("tagorder").await;
    put(&client, &bucket, "k", b"x").await;
    let given = [("zeta", "1"), ("alpha", "2"), ("Mid", "3"), ("beta", "4")];
    put_object_tags(&client, &bucket, "k", &given).await;
    let out = ok(
        client
            .get_object_tagging()
            .bucket(&bucket)
            .key("k")
            .send()
            .await,
        "GetObjectTagging",
    );
    let keys: Vec<&str> = out.tag_set().iter().map(|t| t.key()).collect();
    assert_eq!(keys, ["Mid", "alpha", "beta", "zeta"]);
    ok(
        client
            .put_bucket_tagging()
            .bucket(&bucket)
            .tagging(tag_set(&given))
            .send()
            .await,
        "PutBucketTagging",
    );
    let out = ok(
        client.get_bucket_tagging().bucket(&bucket).send().await,
        "GetBucketTagging",
    );
    let keys: Vec<&str> = out.tag_set().iter().map(|t| t.key()).collect();
    assert_eq!(keys, ["Mid", "alpha", "beta", "zeta"]);
}
