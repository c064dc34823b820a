//! Object versioning as AWS S3 documents it: PutBucketVersioning / GetBucketVersioning,
//! versions made by PUT, multipart completion and copy, reads and deletes by `versionId`,
//! delete markers (and their `x-amz-delete-marker` headers on 404 and 405 answers),
//! ListObjectVersions (order, IsLatest, prefix and delimiter, key-marker / version-id-marker
//! pagination), suspended buckets and the `null` version, DeleteObjects with version ids,
//! copies from a version, tagging of one version, and many writers on one key.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use aws_sdk_s3::types::{
    BucketVersioningStatus, CompletedMultipartUpload, CompletedPart, Delete, MetadataDirective,
    ObjectIdentifier, Tag, Tagging,
};
use aws_sdk_s3::Client;
use common::*;

/// A version id that is well formed but names no version.
const UNKNOWN_VERSION: &str = "0000000000000000000000000000beef";

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// A fresh bucket with versioning enabled.
async fn versioned_bucket(prefix: &str) -> (Client, String) {
    let (client, bucket) = new_bucket(prefix).await;
    set_versioning(&client, &bucket, BucketVersioningStatus::Enabled).await;
    (client, bucket)
}

/// GET of one version (the newest with `None`): its bytes and `x-amz-version-id`.
async fn get_version(
    client: &Client,
    bucket: &str,
    key: &str,
    version: Option<&str>,
) -> (Vec<u8>, Option<String>) {
    let out = ok(
        client
            .get_object()
            .bucket(bucket)
            .key(key)
            .set_version_id(version.map(str::to_string))
            .send()
            .await,
        &format!("GetObject {bucket}/{key} version {version:?}"),
    );
    let version_id = out.version_id().map(str::to_string);
    let body = out
        .body
        .collect()
        .await
        .expect("body")
        .into_bytes()
        .to_vec();
    (body, version_id)
}

/// DELETE; returns (`x-amz-delete-marker`, `x-amz-version-id`).
async fn delete(
    client: &Client,
    bucket: &str,
    key: &str,
    version: Option<&str>,
) -> (bool, Option<String>) {
    let out = ok(
        client
            .delete_object()
            .bucket(bucket)
            .key(key)
            .set_version_id(version.map(str::to_string))
            .send()
            .await,
        &format!("DeleteObject {bucket}/{key} version {version:?}"),
    );
    (
        out.delete_marker().unwrap_or(false),
        out.version_id().map(str::to_string),
    )
}

/// One listed version: key, version id, latest, delete marker.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Listed {
    key: String,
    version_id: String,
    is_latest: bool,
    delete_marker: bool,
}

fn listed(key: &str, version_id: &str, is_latest: bool, delete_marker: bool) -> Listed {
    Listed {
        key: key.into(),
        version_id: version_id.into(),
        is_latest,
        delete_marker,
    }
}

/// `<Version>` and `<DeleteMarker>` elements of a ListVersionsResult, in document order.
fn entries_in_order(xml: &str) -> Vec<Listed> {
    let mut out = Vec::new();
    let mut rest = xml;
    loop {
        let version = rest.find("<Version>");
        let marker = rest.find("<DeleteMarker>");
        let (start, tag) = match (version, marker) {
            (Some(v), Some(m)) if m < v => (m, "DeleteMarker"),
            (Some(v), _) => (v, "Version"),
            (None, Some(m)) => (m, "DeleteMarker"),
            (None, None) => return out,
        };
        let close = format!("</{tag}>");
        let end = rest[start..].find(&close).expect("closed element") + start;
        let element = &rest[start..end];
        out.push(Listed {
            key: xml_element(element, "Key").expect("Key"),
            version_id: xml_element(element, "VersionId").expect("VersionId"),
            is_latest: xml_element(element, "IsLatest").as_deref() == Some("true"),
            delete_marker: tag == "DeleteMarker",
        });
        rest = &rest[end + close.len()..];
    }
}

/// A signed raw request to the shared server.
async fn raw(
    method: &str,
    path_and_query: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> RawResponse {
    signed_send(
        &Signer::test(),
        method,
        &server().url(path_and_query),
        &hdrs(headers),
        body.to_vec(),
    )
    .await
}

/// ListObjectVersions by raw request, its entries in document order.
async fn raw_versions(bucket: &str, query: &str) -> (RawResponse, Vec<Listed>) {
    let resp = raw("GET", &format!("/{bucket}?versions{query}"), &[], b"").await;
    assert_eq!(
        resp.status,
        200,
        "ListObjectVersions {query}: {}",
        resp.text()
    );
    let entries = entries_in_order(&resp.text());
    (resp, entries)
}

/// Every version and delete marker under `prefix`, following the markers page by page with
/// `max_keys` per page; asserts each page's size and that no entry comes twice.
async fn all_versions(
    client: &Client,
    bucket: &str,
    prefix: Option<&str>,
    max_keys: i32,
) -> Vec<Listed> {
    let mut out: Vec<Listed> = Vec::new();
    let mut key_marker: Option<String> = None;
    let mut version_marker: Option<String> = None;
    for page in 0.. {
        assert!(page < 10_000, "ListObjectVersions never ends");
        let res = ok(
            client
                .list_object_versions()
                .bucket(bucket)
                .set_prefix(prefix.map(str::to_string))
                .max_keys(max_keys)
                .set_key_marker(key_marker.clone())
                .set_version_id_marker(version_marker.clone())
                .send()
                .await,
            &format!("ListObjectVersions {bucket} page {page}"),
        );
        let mut got: Vec<Listed> = res
            .versions()
            .iter()
            .map(|v| Listed {
                key: v.key().unwrap_or_default().to_string(),
                version_id: v.version_id().unwrap_or_default().to_string(),
                is_latest: v.is_latest().unwrap_or(false),
                delete_marker: false,
            })
            .chain(res.delete_markers().iter().map(|m| Listed {
                key: m.key().unwrap_or_default().to_string(),
                version_id: m.version_id().unwrap_or_default().to_string(),
                is_latest: m.is_latest().unwrap_or(false),
                delete_marker: true,
            }))
            .collect();
        assert!(
            got.len() <= max_keys as usize,
            "page {page}: {} entries for max-keys {max_keys}",
            got.len()
        );
        for entry in &got {
            assert!(
                !out.iter()
                    .any(|o| o.key == entry.key && o.version_id == entry.version_id),
                "page {page}: {entry:?} listed twice"
            );
        }
        out.append(&mut got);
        if res.is_truncated() != Some(true) {
            break;
        }
        key_marker = res.next_key_marker().map(str::to_string);
        version_marker = res.next_version_id_marker().map(str::to_string);
        assert!(
            key_marker.is_some(),
            "page {page}: truncated without NextKeyMarker"
        );
    }
    out
}

/// The header of a failed SDK call's raw answer.
fn error_header<E>(
    err: &aws_sdk_s3::error::SdkError<E, aws_sdk_s3::config::http::HttpResponse>,
    name: &str,
) -> Option<String> {
    err.raw_response()
        .and_then(|r| r.headers().get(name))
        .map(str::to_string)
}

fn tagging(pairs: &[(&str, &str)]) -> Tagging {
    let tags = pairs
        .iter()
        .map(|(k, v)| Tag::builder().key(*k).value(*v).build().expect("tag"))
        .collect();
    Tagging::builder()
        .set_tag_set(Some(tags))
        .build()
        .expect("tagging")
}

fn identifier(key: &str, version: Option<&str>) -> ObjectIdentifier {
    ObjectIdentifier::builder()
        .key(key)
        .set_version_id(version.map(str::to_string))
        .build()
        .expect("object identifier")
}

// ---------------------------------------------------------------------------------------
// Bucket versioning configuration
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn versioning_is_enabled_suspended_and_reported() {
    let (client, bucket) = new_bucket("vconfig").await;
    // Never versioned: an empty configuration, no Status.
    let out = ok(
        client.get_bucket_versioning().bucket(&bucket).send().await,
        "GetBucketVersioning (never versioned)",
    );
    assert_eq!(out.status(), None);
    assert_eq!(out.mfa_delete(), None);
    let resp = raw("GET", &format!("/{bucket}?versioning"), &[], b"").await;
    assert_eq!(resp.status, 200);
    assert!(
        resp.text().contains("<VersioningConfiguration") && !resp.text().contains("<Status>"),
        "never-versioned bucket: {}",
        resp.text()
    );

    for status in [
        BucketVersioningStatus::Enabled,
        BucketVersioningStatus::Suspended,
        BucketVersioningStatus::Enabled,
    ] {
        set_versioning(&client, &bucket, status.clone()).await;
        let out = ok(
            client.get_bucket_versioning().bucket(&bucket).send().await,
            "GetBucketVersioning",
        );
        assert_eq!(out.status(), Some(&status));
    }

    // Without Content-MD5, as S3 allows for this body; MfaDelete Disabled is accepted.
    let body = b"<VersioningConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
                 <Status>Suspended</Status><MfaDelete>Disabled</MfaDelete></VersioningConfiguration>";
    let resp = raw("PUT", &format!("/{bucket}?versioning"), &[], body).await;
    assert_eq!(resp.status, 200, "{}", resp.text());
    let out = ok(
        client.get_bucket_versioning().bucket(&bucket).send().await,
        "GetBucketVersioning",
    );
    assert_eq!(out.status(), Some(&BucketVersioningStatus::Suspended));
}

#[tokio::test]
async fn bad_versioning_configurations_are_refused() {
    let (client, bucket) = new_bucket("vconfig-bad").await;
    let path = format!("/{bucket}?versioning");
    for body in [
        "<VersioningConfiguration><Status>Disabled</Status></VersioningConfiguration>",
        "<VersioningConfiguration><Status>enabled</Status></VersioningConfiguration>",
        "<VersioningConfiguration></VersioningConfiguration>",
        "<VersioningConfiguration><Status>Enabled</Status>",
        "<VersioningConfiguration><Status>Enabled</Status><MfaDelete>Maybe</MfaDelete></VersioningConfiguration>",
    ] {
        let resp = raw("PUT", &path, &[], body.as_bytes()).await;
        assert_eq!(
            (resp.status, resp.xml_element("Code").as_deref()),
            (400, Some("MalformedXML")),
            "{body}: {}",
            resp.text()
        );
    }
    // MFA Delete needs an MFA device, which Strata has not: AWS's answer to a request
    // without a valid MFA.
    let body = b"<VersioningConfiguration><Status>Enabled</Status><MfaDelete>Enabled</MfaDelete></VersioningConfiguration>";
    let resp = raw("PUT", &path, &[], body).await;
    assert_eq!(
        (resp.status, resp.xml_element("Code").as_deref()),
        (403, Some("AccessDenied")),
        "MfaDelete Enabled: {}",
        resp.text()
    );
    // A wrong Content-MD5 is still checked.
    let body = b"<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>";
    let resp = raw(
        "PUT",
        &path,
        &[("content-md5", "1B2M2Y8AsgTpgAmY7PhCfg==")],
        body,
    )
    .await;
    assert_eq!(resp.xml_element("Code").as_deref(), Some("BadDigest"));
    // None of these changed anything.
    let out = ok(
        client.get_bucket_versioning().bucket(&bucket).send().await,
        "GetBucketVersioning",
    );
    assert_eq!(out.status(), None);
    // A missing bucket.
    let resp = raw("GET", "/no-such-bucket-versioning-x?versioning", &[], b"").await;
    assert_eq!(resp.status, 404);
    assert_eq!(resp.xml_element("Code").as_deref(), Some("NoSuchBucket"));
}

// ---------------------------------------------------------------------------------------
// Versions, reads by id, delete markers
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn every_put_makes_a_version_readable_by_its_id() {
    let (client, bucket) = versioned_bucket("vputs").await;
    let first = payload(1000, 1);
    let second = payload(300 * KIB, 2); // Beyond the inline limit: data in shard files.
    let v1 = put_new_version(&client, &bucket, "doc", &first).await;
    let v2 = put_new_version(&client, &bucket, "doc", &second).await;
    assert_ne!(v1, v2);

    let (body, shown) = get_version(&client, &bucket, "doc", None).await;
    assert_same_bytes(&body, &second, "GET newest");
    assert_eq!(
        shown.as_deref(),
        Some(v2.as_str()),
        "GET newest: x-amz-version-id"
    );
    for (id, want) in [(&v1, &first), (&v2, &second)] {
        let (body, shown) = get_version(&client, &bucket, "doc", Some(id)).await;
        assert_same_bytes(&body, want, &format!("GET ?versionId={id}"));
        assert_eq!(shown.as_deref(), Some(id.as_str()));
        let head = ok(
            client
                .head_object()
                .bucket(&bucket)
                .key("doc")
                .version_id(id)
                .send()
                .await,
            "HeadObject ?versionId",
        );
        assert_eq!(head.content_length(), Some(want.len() as i64));
        assert_eq!(head.version_id(), Some(id.as_str()));
        assert_eq!(head.e_tag(), Some(quoted_md5(want).as_str()));
    }
    // A range of an older version.
    let out = ok(
        client
            .get_object()
            .bucket(&bucket)
            .key("doc")
            .version_id(&v1)
            .range("bytes=10-19")
            .send()
            .await,
        "ranged GET of v1",
    );
    let body = out.body.collect().await.expect("body").into_bytes();
    assert_same_bytes(&body, &first[10..20], "ranged GET of v1");
}

#[tokio::test]
async fn multipart_completion_answers_its_version() {
    let (client, bucket) = versioned_bucket("vmultipart").await;
    let v1 = put_new_version(&client, &bucket, "big", b"small first").await;
    let part = payload(5 * MIB, 7);
    let upload = ok(
        client
            .create_multipart_upload()
            .bucket(&bucket)
            .key("big")
            .send()
            .await,
        "CreateMultipartUpload",
    );
    let upload_id = upload.upload_id().expect("upload id");
    let uploaded = ok(
        client
            .upload_part()
            .bucket(&bucket)
            .key("big")
            .upload_id(upload_id)
            .part_number(1)
            .body(part.clone().into())
            .send()
            .await,
        "UploadPart",
    );
    let done = ok(
        client
            .complete_multipart_upload()
            .bucket(&bucket)
            .key("big")
            .upload_id(upload_id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .parts(
                        CompletedPart::builder()
                            .part_number(1)
                            .e_tag(uploaded.e_tag().unwrap_or_default())
                            .build(),
                    )
                    .build(),
            )
            .send()
            .await,
        "CompleteMultipartUpload",
    );
    let v2 = done.version_id().expect("x-amz-version-id").to_string();
    assert_ne!(v1, v2);
    let (body, _) = get_version(&client, &bucket, "big", Some(&v2)).await;
    assert_same_bytes(&body, &part, "multipart version");
    let (body, _) = get_version(&client, &bucket, "big", Some(&v1)).await;
    assert_eq!(body, b"small first");
}

#[tokio::test]
async fn a_delete_leaves_a_marker_that_hides_the_key() {
    let (client, bucket) = versioned_bucket("vmarker").await;
    let v1 = put_new_version(&client, &bucket, "k", b"kept").await;

    let (is_marker, marker) = delete(&client, &bucket, "k", None).await;
    assert!(
        is_marker,
        "DELETE in a versioned bucket answers x-amz-delete-marker: true"
    );
    let marker = marker.expect("the marker's version id");
    assert_ne!(marker, v1);

    // GET and HEAD: 404, telling the client a marker hides the key.
    let err = client
        .get_object()
        .bucket(&bucket)
        .key("k")
        .send()
        .await
        .expect_err("GET of a deleted key");
    assert_eq!(status_of(&err), Some(404));
    assert_eq!(code_of(&err).as_deref(), Some("NoSuchKey"));
    assert_eq!(
        error_header(&err, "x-amz-delete-marker").as_deref(),
        Some("true")
    );
    assert_eq!(error_header(&err, "x-amz-version-id"), Some(marker.clone()));
    let err = client
        .head_object()
        .bucket(&bucket)
        .key("k")
        .send()
        .await
        .expect_err("HEAD of a deleted key");
    assert_eq!(status_of(&err), Some(404));
    assert_eq!(
        error_header(&err, "x-amz-delete-marker").as_deref(),
        Some("true")
    );
    assert_eq!(error_header(&err, "x-amz-version-id"), Some(marker.clone()));
    // The raw answer, as any client sees it.
    let resp = raw("GET", &format!("/{bucket}/k"), &[], b"").await;
    assert_eq!(resp.status, 404);
    assert_eq!(resp.header("x-amz-delete-marker").as_deref(), Some("true"));
    assert_eq!(resp.header("x-amz-version-id"), Some(marker.clone()));

    // Naming the marker: 405, with the same headers.
    let err = client
        .get_object()
        .bucket(&bucket)
        .key("k")
        .version_id(&marker)
        .send()
        .await
        .expect_err("GET of the marker by id");
    assert_eq!(status_of(&err), Some(405));
    assert_eq!(code_of(&err).as_deref(), Some("MethodNotAllowed"));
    assert_eq!(
        error_header(&err, "x-amz-delete-marker").as_deref(),
        Some("true")
    );
    assert_eq!(error_header(&err, "x-amz-version-id"), Some(marker.clone()));
    let resp = raw("HEAD", &format!("/{bucket}/k?versionId={marker}"), &[], b"").await;
    assert_eq!(resp.status, 405);
    assert_eq!(resp.header("x-amz-delete-marker").as_deref(), Some("true"));

    // The older version is still there, by id.
    let (body, _) = get_version(&client, &bucket, "k", Some(&v1)).await;
    assert_eq!(body, b"kept");

    // Deleting the marker by id brings the key back.
    let (was_marker, removed) = delete(&client, &bucket, "k", Some(&marker)).await;
    assert!(
        was_marker,
        "removing a marker answers x-amz-delete-marker: true"
    );
    assert_eq!(removed.as_deref(), Some(marker.as_str()));
    let (body, shown) = get_version(&client, &bucket, "k", None).await;
    assert_eq!(body, b"kept");
    assert_eq!(shown, Some(v1.clone()));

    // Deleting a version by id removes it for good, and answers its id.
    let (was_marker, removed) = delete(&client, &bucket, "k", Some(&v1)).await;
    assert!(!was_marker);
    assert_eq!(removed, Some(v1.clone()));
    let err = client
        .get_object()
        .bucket(&bucket)
        .key("k")
        .send()
        .await
        .expect_err("GET after every version is gone");
    assert_eq!(status_of(&err), Some(404));
    assert_eq!(error_header(&err, "x-amz-delete-marker"), None);
    assert_s3_error(
        client
            .get_object()
            .bucket(&bucket)
            .key("k")
            .version_id(&v1)
            .send()
            .await,
        404,
        "NoSuchVersion",
        "GET of a removed version",
    );
    // Deleting a version that is not there is no error, as in S3.
    let (_, removed) = delete(&client, &bucket, "k", Some(UNKNOWN_VERSION)).await;
    assert_eq!(removed.as_deref(), Some(UNKNOWN_VERSION));
}

#[tokio::test]
async fn bad_version_ids_are_invalid_and_unknown_ones_missing() {
    let (client, bucket) = versioned_bucket("vbadid").await;
    put_new_version(&client, &bucket, "k", b"x").await;
    for bad in ["not-a-version", "zz", "0000000000000000000000000000beefX"] {
        assert_s3_error(
            client
                .get_object()
                .bucket(&bucket)
                .key("k")
                .version_id(bad)
                .send()
                .await,
            400,
            "InvalidArgument",
            &format!("GET ?versionId={bad}"),
        );
        assert_s3_error(
            client
                .delete_object()
                .bucket(&bucket)
                .key("k")
                .version_id(bad)
                .send()
                .await,
            400,
            "InvalidArgument",
            &format!("DELETE ?versionId={bad}"),
        );
        assert_s3_error(
            client
                .get_object_tagging()
                .bucket(&bucket)
                .key("k")
                .version_id(bad)
                .send()
                .await,
            400,
            "InvalidArgument",
            &format!("GetObjectTagging ?versionId={bad}"),
        );
        assert_s3_status(
            client
                .head_object()
                .bucket(&bucket)
                .key("k")
                .version_id(bad)
                .send()
                .await,
            400,
            &format!("HEAD ?versionId={bad}"),
        );
    }
    let resp = raw("GET", &format!("/{bucket}/k?versionId=bad-id"), &[], b"").await;
    assert_eq!(
        resp.xml_element("Message").as_deref(),
        Some("Invalid version id specified")
    );

    assert_s3_error(
        client
            .get_object()
            .bucket(&bucket)
            .key("k")
            .version_id(UNKNOWN_VERSION)
            .send()
            .await,
        404,
        "NoSuchVersion",
        "GET of an unknown version",
    );
    assert_s3_status(
        client
            .head_object()
            .bucket(&bucket)
            .key("k")
            .version_id(UNKNOWN_VERSION)
            .send()
            .await,
        404,
        "HEAD of an unknown version",
    );
    // The null version of a key that has none.
    assert_s3_error(
        client
            .get_object()
            .bucket(&bucket)
            .key("k")
            .version_id("null")
            .send()
            .await,
        404,
        "NoSuchVersion",
        "GET ?versionId=null with no null version",
    );
    // A version of a key that does not exist at all.
    assert_s3_error(
        client
            .get_object()
            .bucket(&bucket)
            .key("nothing-here")
            .version_id(UNKNOWN_VERSION)
            .send()
            .await,
        404,
        "NoSuchVersion",
        "GET of a version of a missing key",
    );
}

// ---------------------------------------------------------------------------------------
// Unversioned, suspended, and the null version
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn unversioned_buckets_answer_without_version_headers() {
    let (client, bucket) = new_bucket("vnone").await;
    assert_eq!(put_version(&client, &bucket, "k", b"one").await, None);
    let (body, shown) = get_version(&client, &bucket, "k", None).await;
    assert_eq!((body.as_slice(), shown), (&b"one"[..], None));
    let head = ok(
        client.head_object().bucket(&bucket).key("k").send().await,
        "HEAD",
    );
    assert_eq!(head.version_id(), None);
    // The null version can still be named, as in S3.
    let (body, shown) = get_version(&client, &bucket, "k", Some("null")).await;
    assert_eq!(body, b"one");
    assert_eq!(shown.as_deref(), Some("null"));
    let (is_marker, version) = delete(&client, &bucket, "k", None).await;
    assert!(!is_marker);
    assert_eq!(version, None);
    assert_s3_error(
        client.get_object().bucket(&bucket).key("k").send().await,
        404,
        "NoSuchKey",
        "GET after DELETE (unversioned)",
    );
    let resp = raw("GET", &format!("/{bucket}/k"), &[], b"").await;
    assert_eq!(resp.header("x-amz-delete-marker"), None);
}

#[tokio::test]
async fn a_key_written_before_enabling_is_the_null_version() {
    let (client, bucket) = new_bucket("vnull").await;
    put_version(&client, &bucket, "k", b"before").await;
    set_versioning(&client, &bucket, BucketVersioningStatus::Enabled).await;
    // Read back in a versioned bucket, the old object shows as the null version.
    let (body, shown) = get_version(&client, &bucket, "k", None).await;
    assert_eq!(body, b"before");
    assert_eq!(shown.as_deref(), Some("null"));

    let v1 = put_new_version(&client, &bucket, "k", b"after").await;
    assert_ne!(v1, "null");
    let (body, _) = get_version(&client, &bucket, "k", Some("null")).await;
    assert_eq!(body, b"before");
    let (body, _) = get_version(&client, &bucket, "k", None).await;
    assert_eq!(body, b"after");

    let mut got = all_versions(&client, &bucket, None, 1000).await;
    got.sort();
    let mut want = vec![
        listed("k", &v1, true, false),
        listed("k", "null", false, false),
    ];
    want.sort();
    assert_eq!(got, want);

    // Deleting the null version by its name.
    let (_, removed) = delete(&client, &bucket, "k", Some("null")).await;
    assert_eq!(removed.as_deref(), Some("null"));
    assert_s3_error(
        client
            .get_object()
            .bucket(&bucket)
            .key("k")
            .version_id("null")
            .send()
            .await,
        404,
        "NoSuchVersion",
        "GET of the deleted null version",
    );
    let got = all_versions(&client, &bucket, None, 1000).await;
    assert_eq!(got, vec![listed("k", &v1, true, false)]);
}

#[tokio::test]
async fn a_suspended_bucket_replaces_the_null_version_and_keeps_the_others() {
    let (client, bucket) = versioned_bucket("vsuspend").await;
    let v1 = put_new_version(&client, &bucket, "k", b"versioned").await;
    set_versioning(&client, &bucket, BucketVersioningStatus::Suspended).await;

    // S3 answers a PUT to a suspended bucket without x-amz-version-id (the PutObject
    // reference's "versioning suspended" sample); the write is the null version.
    assert_eq!(put_version(&client, &bucket, "k", b"null one").await, None);
    let (body, shown) = get_version(&client, &bucket, "k", None).await;
    assert_eq!(body, b"null one");
    assert_eq!(
        shown.as_deref(),
        Some("null"),
        "GET shows the null version's id"
    );
    assert_eq!(put_version(&client, &bucket, "k", b"null two").await, None);

    let (body, _) = get_version(&client, &bucket, "k", Some("null")).await;
    assert_eq!(
        body, b"null two",
        "the second null write replaced the first"
    );
    let (body, _) = get_version(&client, &bucket, "k", Some(&v1)).await;
    assert_eq!(
        body, b"versioned",
        "versions from before the suspension stay"
    );
    let mut got = all_versions(&client, &bucket, None, 1000).await;
    got.sort();
    let mut want = vec![
        listed("k", "null", true, false),
        listed("k", &v1, false, false),
    ];
    want.sort();
    assert_eq!(got, want);

    // A DELETE while suspended: the null version gives way to a null delete marker.
    let (is_marker, version) = delete(&client, &bucket, "k", None).await;
    assert!(is_marker);
    assert_eq!(version.as_deref(), Some("null"));
    assert_s3_error(
        client.get_object().bucket(&bucket).key("k").send().await,
        404,
        "NoSuchKey",
        "GET after a suspended DELETE",
    );
    let mut got = all_versions(&client, &bucket, None, 1000).await;
    got.sort();
    let mut want = vec![
        listed("k", "null", true, true),
        listed("k", &v1, false, false),
    ];
    want.sort();
    assert_eq!(got, want);

    // Enabling again: new versions get ids, the null marker stays below them.
    set_versioning(&client, &bucket, BucketVersioningStatus::Enabled).await;
    let v2 = put_new_version(&client, &bucket, "k", b"again").await;
    let got = all_versions(&client, &bucket, None, 1000).await;
    assert_eq!(got.len(), 3, "{got:?}");
    assert!(got.contains(&listed("k", &v2, true, false)), "{got:?}");
}

// ---------------------------------------------------------------------------------------
// ListObjectVersions
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn versions_are_listed_by_key_then_newest_first() {
    let (client, bucket) = versioned_bucket("vlist").await;
    let a1 = put_new_version(&client, &bucket, "a", b"a1").await;
    let a2 = put_new_version(&client, &bucket, "a", b"a2").await;
    let a3 = put_new_version(&client, &bucket, "a", b"a3").await;
    let b1 = put_new_version(&client, &bucket, "b", b"b1").await;
    let (_, b_marker) = delete(&client, &bucket, "b", None).await;
    let b_marker = b_marker.expect("marker id");
    let c1 = put_new_version(&client, &bucket, "c", b"c1").await;

    let (resp, entries) = raw_versions(&bucket, "").await;
    assert_eq!(
        entries,
        vec![
            listed("a", &a3, true, false),
            listed("a", &a2, false, false),
            listed("a", &a1, false, false),
            listed("b", &b_marker, true, true),
            listed("b", &b1, false, false),
            listed("c", &c1, true, false),
        ]
    );
    let text = resp.text();
    assert!(text.contains("<ListVersionsResult"), "{text}");
    assert_eq!(resp.xml_element("Name"), Some(bucket.clone()));
    assert_eq!(resp.xml_element("MaxKeys").as_deref(), Some("1000"));
    assert_eq!(resp.xml_element("IsTruncated").as_deref(), Some("false"));
    assert_eq!(resp.xml_element("KeyMarker").unwrap_or_default(), "");
    assert!(text.contains("<VersionIdMarker"), "{text}");
    assert!(!text.contains("<NextKeyMarker>"), "{text}");
    // A version's details.
    let version = &text[text.find("<Version>").unwrap()..];
    assert_eq!(xml_element(version, "ETag"), Some(quoted_md5(b"a3")));
    assert_eq!(xml_element(version, "Size").as_deref(), Some("2"));
    assert_eq!(
        xml_element(version, "StorageClass").as_deref(),
        Some("STANDARD")
    );
    assert!(xml_element(version, "LastModified").is_some_and(|t| t.ends_with('Z')));
    assert!(xml_element(version, "Owner").is_some());
    let marker = &text[text.find("<DeleteMarker>").unwrap()..];
    assert!(xml_element(marker, "Owner").is_some());
    assert!(xml_element(marker, "LastModified").is_some());

    // The SDK reads the same listing.
    let out = ok(
        client.list_object_versions().bucket(&bucket).send().await,
        "ListObjectVersions",
    );
    assert_eq!(out.versions().len(), 5);
    assert_eq!(out.delete_markers().len(), 1);
    assert_eq!(
        out.delete_markers()[0].version_id(),
        Some(b_marker.as_str())
    );
    assert_eq!(out.delete_markers()[0].is_latest(), Some(true));
    assert_eq!(out.versions()[0].e_tag(), Some(quoted_md5(b"a3").as_str()));
    assert_eq!(out.versions()[0].size(), Some(2));
}

#[tokio::test]
async fn versions_are_grouped_by_prefix_and_delimiter() {
    let (client, bucket) = versioned_bucket("vprefix").await;
    for key in [
        "photos/2024/a.jpg",
        "photos/2024/b.jpg",
        "photos/x.jpg",
        "photos/x.jpg",
        "docs/y.txt",
        "photos0",
    ] {
        put_new_version(&client, &bucket, key, key.as_bytes()).await;
    }
    delete(&client, &bucket, "photos/2025/gone.jpg", None).await;

    let out = ok(
        client
            .list_object_versions()
            .bucket(&bucket)
            .prefix("photos/")
            .delimiter("/")
            .send()
            .await,
        "ListObjectVersions prefix + delimiter",
    );
    let keys: Vec<&str> = out.versions().iter().filter_map(|v| v.key()).collect();
    assert_eq!(keys, ["photos/x.jpg", "photos/x.jpg"]);
    assert!(out.delete_markers().is_empty());
    let prefixes: Vec<&str> = out
        .common_prefixes()
        .iter()
        .filter_map(|p| p.prefix())
        .collect();
    assert_eq!(prefixes, ["photos/2024/", "photos/2025/"]);
    assert_eq!(out.prefix(), Some("photos/"));
    assert_eq!(out.delimiter(), Some("/"));

    // Prefix alone: every version under it, the marker included.
    let got = all_versions(&client, &bucket, Some("photos/"), 1000).await;
    assert_eq!(got.len(), 5, "{got:?}");
    assert!(got
        .iter()
        .any(|e| e.delete_marker && e.key == "photos/2025/gone.jpg"));

    // encoding-type=url encodes keys, prefixes and markers.
    put_new_version(&client, &bucket, "odd key+é", b"x").await;
    let (resp, entries) = raw_versions(&bucket, "&prefix=odd&encoding-type=url").await;
    assert_eq!(resp.xml_element("EncodingType").as_deref(), Some("url"));
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].key, "odd%20key%2B%C3%A9");
}

#[tokio::test]
async fn version_pages_visit_every_version_exactly_once() {
    let (client, bucket) = versioned_bucket("vpages").await;
    let mut want: BTreeSet<(String, String)> = BTreeSet::new();
    for k in 0..7 {
        let key = format!("key-{k}");
        for v in 0..=(k % 4) {
            let id =
                put_new_version(&client, &bucket, &key, format!("{key} v{v}").as_bytes()).await;
            want.insert((key.clone(), id));
        }
        if k % 3 == 0 {
            let (_, marker) = delete(&client, &bucket, &key, None).await;
            want.insert((key.clone(), marker.expect("marker id")));
        }
    }
    assert!(want.len() > 15);
    for max_keys in [1, 2, 3, 4, 7, 1000] {
        let got = all_versions(&client, &bucket, None, max_keys).await;
        let ids: BTreeSet<(String, String)> = got
            .iter()
            .map(|e| (e.key.clone(), e.version_id.clone()))
            .collect();
        assert_eq!(ids, want, "max-keys {max_keys}");
        assert_eq!(got.len(), want.len(), "max-keys {max_keys}: duplicates");
        // One latest entry per key.
        let mut latest: BTreeMap<&str, usize> = BTreeMap::new();
        for e in got.iter().filter(|e| e.is_latest) {
            *latest.entry(e.key.as_str()).or_default() += 1;
        }
        assert_eq!(latest.len(), 7, "max-keys {max_keys}: {latest:?}");
        assert!(latest.values().all(|n| *n == 1), "max-keys {max_keys}");
    }

    // The markers of a truncated page, in the XML.
    let (resp, entries) = raw_versions(&bucket, "&max-keys=2").await;
    assert_eq!(entries.len(), 2);
    assert_eq!(resp.xml_element("IsTruncated").as_deref(), Some("true"));
    assert_eq!(resp.xml_element("MaxKeys").as_deref(), Some("2"));
    assert_eq!(
        resp.xml_element("NextKeyMarker"),
        Some(entries[1].key.clone())
    );
    assert_eq!(
        resp.xml_element("NextVersionIdMarker"),
        Some(entries[1].version_id.clone())
    );
    // Resuming from a key marker alone starts after every version of that key.
    let (_, entries) = raw_versions(&bucket, "&key-marker=key-5").await;
    assert!(
        entries.iter().all(|e| e.key.as_str() > "key-5"),
        "{entries:?}"
    );
    assert_eq!(entries.first().map(|e| e.key.as_str()), Some("key-6"));
    // max-keys beyond 1000 is 1000, as in S3.
    let (resp, _) = raw_versions(&bucket, "&max-keys=5000").await;
    assert_eq!(resp.xml_element("MaxKeys").as_deref(), Some("1000"));
}

#[tokio::test]
async fn version_listing_arguments_are_checked() {
    let (_, bucket) = versioned_bucket("vlistargs").await;
    for (query, code) in [
        ("&version-id-marker=null", "InvalidArgument"),
        ("&max-keys=-1", "InvalidArgument"),
        ("&max-keys=ten", "InvalidArgument"),
        ("&encoding-type=base64", "InvalidArgument"),
        (
            "&key-marker=a&version-id-marker=not-a-version",
            "InvalidArgument",
        ),
    ] {
        let resp = raw("GET", &format!("/{bucket}?versions{query}"), &[], b"").await;
        assert_eq!(
            (resp.status, resp.xml_element("Code").as_deref()),
            (400, Some(code)),
            "{query}: {}",
            resp.text()
        );
    }
    let resp = raw("GET", "/no-such-bucket-versions-x?versions", &[], b"").await;
    assert_eq!(resp.xml_element("Code").as_deref(), Some("NoSuchBucket"));
}

// ---------------------------------------------------------------------------------------
// Listings, emptiness
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn object_listings_hide_keys_whose_newest_version_is_a_marker() {
    let (client, bucket) = versioned_bucket("vhidden").await;
    put_new_version(&client, &bucket, "a", b"a").await;
    put_new_version(&client, &bucket, "b", b"b1").await;
    put_new_version(&client, &bucket, "b", b"b2").await;
    put_new_version(&client, &bucket, "c", b"c").await;
    let (_, marker) = delete(&client, &bucket, "b", None).await;
    delete(&client, &bucket, "never-written", None).await;

    assert_eq!(list_all_keys(&client, &bucket, None).await, ["a", "c"]);
    let v1 = ok(
        client.list_objects().bucket(&bucket).send().await,
        "ListObjects (V1)",
    );
    let keys: Vec<&str> = v1.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(keys, ["a", "c"]);
    // Paging past the hidden key.
    let page = ok(
        client
            .list_objects_v2()
            .bucket(&bucket)
            .max_keys(1)
            .start_after("a")
            .send()
            .await,
        "ListObjectsV2 after a",
    );
    let keys: Vec<&str> = page.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(keys, ["c"]);

    // Removing the marker shows the key again, with its newest version.
    delete(&client, &bucket, "b", marker.as_deref()).await;
    assert_eq!(list_all_keys(&client, &bucket, None).await, ["a", "b", "c"]);
    let listed = ok(
        client
            .list_objects_v2()
            .bucket(&bucket)
            .prefix("b")
            .send()
            .await,
        "ListObjectsV2 b",
    );
    assert_eq!(
        listed.contents()[0].e_tag(),
        Some(quoted_md5(b"b2").as_str())
    );
}

#[tokio::test]
async fn a_bucket_holding_only_old_versions_or_markers_is_not_empty() {
    let (client, bucket) = versioned_bucket("vnotempty").await;
    let v1 = put_new_version(&client, &bucket, "k", b"x").await;
    let (_, marker) = delete(&client, &bucket, "k", None).await;
    let marker = marker.expect("marker");
    assert_eq!(
        list_all_keys(&client, &bucket, None).await,
        Vec::<String>::new()
    );
    assert_s3_error(
        client.delete_bucket().bucket(&bucket).send().await,
        409,
        "BucketNotEmpty",
        "DeleteBucket with a version and a marker left",
    );
    delete(&client, &bucket, "k", Some(&v1)).await;
    assert_s3_error(
        client.delete_bucket().bucket(&bucket).send().await,
        409,
        "BucketNotEmpty",
        "DeleteBucket with only a delete marker left",
    );
    delete(&client, &bucket, "k", Some(&marker)).await;
    ok(
        client.delete_bucket().bucket(&bucket).send().await,
        "DeleteBucket once every version is gone",
    );
}

// ---------------------------------------------------------------------------------------
// DeleteObjects, copies, tagging
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn delete_objects_takes_version_ids() {
    let (client, bucket) = versioned_bucket("vbatch").await;
    let k1 = put_new_version(&client, &bucket, "k", b"k1").await;
    let k2 = put_new_version(&client, &bucket, "k", b"k2").await;
    put_new_version(&client, &bucket, "m", b"m1").await;

    let out = ok(
        client
            .delete_objects()
            .bucket(&bucket)
            .delete(
                Delete::builder()
                    .objects(identifier("k", Some(&k1)))
                    .objects(identifier("m", None))
                    .objects(identifier("k", Some(UNKNOWN_VERSION)))
                    .objects(identifier("k", Some("not-a-version")))
                    .build()
                    .expect("delete"),
            )
            .send()
            .await,
        "DeleteObjects with versions",
    );
    let deleted = out.deleted();
    assert_eq!(deleted.len(), 3, "{deleted:?}");
    let by_version = deleted
        .iter()
        .find(|d| d.version_id() == Some(k1.as_str()))
        .expect("k1 deleted");
    assert_eq!(by_version.key(), Some("k"));
    assert_ne!(by_version.delete_marker(), Some(true));
    assert_eq!(by_version.delete_marker_version_id(), None);
    let marked = deleted
        .iter()
        .find(|d| d.key() == Some("m"))
        .expect("m deleted");
    assert_eq!(marked.delete_marker(), Some(true));
    assert_eq!(marked.version_id(), None);
    let m_marker = marked
        .delete_marker_version_id()
        .expect("DeleteMarkerVersionId")
        .to_string();
    assert!(deleted
        .iter()
        .any(|d| d.version_id() == Some(UNKNOWN_VERSION)));
    let errors = out.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].key(), Some("k"));
    assert_eq!(errors[0].version_id(), Some("not-a-version"));
    assert_eq!(errors[0].code(), Some("InvalidArgument"));

    let (body, _) = get_version(&client, &bucket, "k", None).await;
    assert_eq!(body, b"k2");
    assert_s3_error(
        client
            .get_object()
            .bucket(&bucket)
            .key("k")
            .version_id(&k1)
            .send()
            .await,
        404,
        "NoSuchVersion",
        "k1 after DeleteObjects",
    );
    assert_s3_error(
        client.get_object().bucket(&bucket).key("m").send().await,
        404,
        "NoSuchKey",
        "m after DeleteObjects",
    );

    // Removing the marker by version id: reported as a delete marker, with its id.
    let out = ok(
        client
            .delete_objects()
            .bucket(&bucket)
            .delete(
                Delete::builder()
                    .objects(identifier("m", Some(&m_marker)))
                    .objects(identifier("k", Some(&k2)))
                    .build()
                    .expect("delete"),
            )
            .send()
            .await,
        "DeleteObjects of a marker",
    );
    assert!(out.errors().is_empty(), "{:?}", out.errors());
    let removed = out
        .deleted()
        .iter()
        .find(|d| d.key() == Some("m"))
        .expect("m");
    assert_eq!(removed.version_id(), Some(m_marker.as_str()));
    assert_eq!(removed.delete_marker(), Some(true));
    assert_eq!(removed.delete_marker_version_id(), Some(m_marker.as_str()));
    let (body, _) = get_version(&client, &bucket, "m", None).await;
    assert_eq!(body, b"m1");
    assert_s3_error(
        client.get_object().bucket(&bucket).key("k").send().await,
        404,
        "NoSuchKey",
        "k after its versions were deleted",
    );

    // Quiet mode reports errors only.
    let out = ok(
        client
            .delete_objects()
            .bucket(&bucket)
            .delete(
                Delete::builder()
                    .quiet(true)
                    .objects(identifier("m", None))
                    .objects(identifier("m", Some("bogus")))
                    .build()
                    .expect("delete"),
            )
            .send()
            .await,
        "quiet DeleteObjects",
    );
    assert!(out.deleted().is_empty());
    assert_eq!(out.errors().len(), 1);
}

#[tokio::test]
async fn copies_read_the_version_they_name() {
    let (client, bucket) = versioned_bucket("vcopy").await;
    let old = payload(200 * KIB, 11);
    let v1 = put_new_version(&client, &bucket, "src", &old).await;
    let v2 = put_new_version(&client, &bucket, "src", b"newer").await;

    // Copy of an older version to another key.
    let out = ok(
        client
            .copy_object()
            .bucket(&bucket)
            .key("copied")
            .copy_source(format!("{bucket}/src?versionId={v1}"))
            .send()
            .await,
        "CopyObject from v1",
    );
    assert_eq!(out.copy_source_version_id(), Some(v1.as_str()));
    let copied = out
        .version_id()
        .expect("x-amz-version-id of the copy")
        .to_string();
    let (body, shown) = get_version(&client, &bucket, "copied", None).await;
    assert_same_bytes(&body, &old, "copy of v1");
    assert_eq!(shown, Some(copied));

    // Without a version id, the newest version is copied, and named.
    let out = ok(
        client
            .copy_object()
            .bucket(&bucket)
            .key("copied-newest")
            .copy_source(format!("{bucket}/src"))
            .send()
            .await,
        "CopyObject of the newest",
    );
    assert_eq!(out.copy_source_version_id(), Some(v2.as_str()));
    let (body, _) = get_version(&client, &bucket, "copied-newest", None).await;
    assert_eq!(body, b"newer");

    // Restoring an old version onto its own key makes a new version and keeps the others.
    let out = ok(
        client
            .copy_object()
            .bucket(&bucket)
            .key("src")
            .copy_source(format!("{bucket}/src?versionId={v1}"))
            .send()
            .await,
        "CopyObject restoring v1",
    );
    let v3 = out.version_id().expect("restored version id").to_string();
    assert!(v3 != v1 && v3 != v2);
    let (body, _) = get_version(&client, &bucket, "src", None).await;
    assert_same_bytes(&body, &old, "restored v1");
    let (body, _) = get_version(&client, &bucket, "src", Some(&v2)).await;
    assert_eq!(body, b"newer");

    // A copy onto itself that replaces the metadata is a new version too.
    let out = ok(
        client
            .copy_object()
            .bucket(&bucket)
            .key("src")
            .copy_source(format!("{bucket}/src"))
            .metadata_directive(MetadataDirective::Replace)
            .metadata("color", "blue")
            .send()
            .await,
        "CopyObject onto itself, REPLACE",
    );
    let v4 = out.version_id().expect("new version id").to_string();
    assert_ne!(v4, v3);
    let head = ok(
        client.head_object().bucket(&bucket).key("src").send().await,
        "HEAD src",
    );
    assert_eq!(head.version_id(), Some(v4.as_str()));
    assert_eq!(
        head.metadata()
            .and_then(|m| m.get("color"))
            .map(String::as_str),
        Some("blue")
    );
    let head = ok(
        client
            .head_object()
            .bucket(&bucket)
            .key("src")
            .version_id(&v3)
            .send()
            .await,
        "HEAD src v3",
    );
    assert!(head.metadata().is_none_or(|m| m.get("color").is_none()));
    let versions = all_versions(&client, &bucket, Some("src"), 1000).await;
    assert_eq!(versions.len(), 4, "{versions:?}");

    // Errors: a marker named as the source, an unknown version, a bad one.
    let (_, marker) = delete(&client, &bucket, "copied", None).await;
    let marker = marker.expect("marker");
    assert_s3_error(
        client
            .copy_object()
            .bucket(&bucket)
            .key("x")
            .copy_source(format!("{bucket}/copied?versionId={marker}"))
            .send()
            .await,
        400,
        "InvalidRequest",
        "copy from a delete marker by id",
    );
    assert_s3_error(
        client
            .copy_object()
            .bucket(&bucket)
            .key("x")
            .copy_source(format!("{bucket}/copied"))
            .send()
            .await,
        404,
        "NoSuchKey",
        "copy from a key hidden by a marker",
    );
    assert_s3_error(
        client
            .copy_object()
            .bucket(&bucket)
            .key("x")
            .copy_source(format!("{bucket}/src?versionId={UNKNOWN_VERSION}"))
            .send()
            .await,
        404,
        "NoSuchVersion",
        "copy from an unknown version",
    );
    assert_s3_error(
        client
            .copy_object()
            .bucket(&bucket)
            .key("x")
            .copy_source(format!("{bucket}/src?versionId=bogus"))
            .send()
            .await,
        400,
        "InvalidArgument",
        "copy from a bad version id",
    );
}

#[tokio::test]
async fn upload_part_copy_reads_the_version_it_names() {
    let (client, bucket) = versioned_bucket("vpartcopy").await;
    let old = payload(6 * MIB, 21);
    let v1 = put_new_version(&client, &bucket, "src", &old).await;
    put_new_version(&client, &bucket, "src", b"newer, smaller").await;
    let (_, dest) = new_bucket("vpartcopy-dest").await;

    let upload = ok(
        client
            .create_multipart_upload()
            .bucket(&dest)
            .key("assembled")
            .send()
            .await,
        "CreateMultipartUpload",
    );
    let upload_id = upload.upload_id().expect("upload id");
    let part = ok(
        client
            .upload_part_copy()
            .bucket(&dest)
            .key("assembled")
            .upload_id(upload_id)
            .part_number(1)
            .copy_source(format!("{bucket}/src?versionId={v1}"))
            .copy_source_range("bytes=0-5242879")
            .send()
            .await,
        "UploadPartCopy from v1",
    );
    assert_eq!(part.copy_source_version_id(), Some(v1.as_str()));
    let etag = part
        .copy_part_result()
        .and_then(|r| r.e_tag())
        .unwrap_or_default()
        .to_string();
    let done = ok(
        client
            .complete_multipart_upload()
            .bucket(&dest)
            .key("assembled")
            .upload_id(upload_id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .parts(CompletedPart::builder().part_number(1).e_tag(etag).build())
                    .build(),
            )
            .send()
            .await,
        "CompleteMultipartUpload",
    );
    assert_eq!(
        done.version_id(),
        None,
        "the destination bucket is unversioned"
    );
    assert_object(&client, &dest, "assembled", &old[..5 * MIB]).await;
}

#[tokio::test]
async fn one_version_can_be_tagged() {
    let (client, bucket) = versioned_bucket("vtags").await;
    let v1 = put_new_version(&client, &bucket, "k", b"one").await;
    let v2 = put_new_version(&client, &bucket, "k", b"two").await;

    let out = ok(
        client
            .put_object_tagging()
            .bucket(&bucket)
            .key("k")
            .version_id(&v1)
            .tagging(tagging(&[("state", "old")]))
            .send()
            .await,
        "PutObjectTagging v1",
    );
    assert_eq!(out.version_id(), Some(v1.as_str()));
    let got = ok(
        client
            .get_object_tagging()
            .bucket(&bucket)
            .key("k")
            .version_id(&v1)
            .send()
            .await,
        "GetObjectTagging v1",
    );
    assert_eq!(got.version_id(), Some(v1.as_str()));
    let tags: Vec<(&str, &str)> = got.tag_set().iter().map(|t| (t.key(), t.value())).collect();
    assert_eq!(tags, [("state", "old")]);
    // The newest version is untouched.
    let got = ok(
        client
            .get_object_tagging()
            .bucket(&bucket)
            .key("k")
            .send()
            .await,
        "GetObjectTagging newest",
    );
    assert_eq!(got.version_id(), Some(v2.as_str()));
    assert!(got.tag_set().is_empty());
    // Tagging keeps the version's id and data.
    let (body, shown) = get_version(&client, &bucket, "k", Some(&v1)).await;
    assert_eq!((body.as_slice(), shown), (&b"one"[..], Some(v1.clone())));
    let head = ok(
        client
            .head_object()
            .bucket(&bucket)
            .key("k")
            .version_id(&v1)
            .send()
            .await,
        "HEAD v1",
    );
    assert_eq!(head.tag_count(), Some(1));

    let out = ok(
        client
            .delete_object_tagging()
            .bucket(&bucket)
            .key("k")
            .version_id(&v1)
            .send()
            .await,
        "DeleteObjectTagging v1",
    );
    assert_eq!(out.version_id(), Some(v1.as_str()));
    let got = ok(
        client
            .get_object_tagging()
            .bucket(&bucket)
            .key("k")
            .version_id(&v1)
            .send()
            .await,
        "GetObjectTagging v1 after delete",
    );
    assert!(got.tag_set().is_empty());

    // Versions that are not there, or are markers.
    assert_s3_error(
        client
            .put_object_tagging()
            .bucket(&bucket)
            .key("k")
            .version_id(UNKNOWN_VERSION)
            .tagging(tagging(&[("a", "b")]))
            .send()
            .await,
        404,
        "NoSuchVersion",
        "PutObjectTagging of an unknown version",
    );
    let (_, marker) = delete(&client, &bucket, "k", None).await;
    assert_s3_error(
        client
            .get_object_tagging()
            .bucket(&bucket)
            .key("k")
            .version_id(marker.expect("marker"))
            .send()
            .await,
        405,
        "MethodNotAllowed",
        "GetObjectTagging of a delete marker",
    );
    assert_s3_error(
        client
            .get_object_tagging()
            .bucket(&bucket)
            .key("k")
            .send()
            .await,
        404,
        "NoSuchKey",
        "GetObjectTagging of a key hidden by a marker",
    );
}

// ---------------------------------------------------------------------------------------
// Concurrency
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn concurrent_writers_each_get_a_version_of_their_own() {
    const WRITERS: usize = 8;
    const PUTS: usize = 4;
    let (client, bucket) = versioned_bucket("vconcurrent").await;
    let mut tasks = Vec::new();
    for writer in 0..WRITERS {
        let (client, bucket) = (client.clone(), bucket.clone());
        tasks.push(tokio::spawn(async move {
            let mut acked = Vec::new();
            for i in 0..PUTS {
                // Some bodies inline in the metadata, some in shard files.
                let len = if (writer + i) % 3 == 0 {
                    200 * KIB
                } else {
                    1000 + writer
                };
                let data = payload(len, (writer * 100 + i) as u64);
                let id = put_new_version(&client, &bucket, "hot", &data).await;
                acked.push((id, data));
            }
            acked
        }));
    }
    let mut acked: Vec<(String, Vec<u8>)> = Vec::new();
    for task in tasks {
        acked.extend(task.await.expect("writer"));
    }
    let ids: BTreeSet<&str> = acked.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(
        ids.len(),
        WRITERS * PUTS,
        "every PUT got its own version id"
    );

    for (id, data) in &acked {
        let (body, shown) = get_version(&client, &bucket, "hot", Some(id)).await;
        assert_same_bytes(&body, data, &format!("version {id}"));
        assert_eq!(shown.as_deref(), Some(id.as_str()));
    }

    let listed = all_versions(&client, &bucket, None, 5).await;
    let listed_ids: Vec<&str> = listed.iter().map(|e| e.version_id.as_str()).collect();
    let listed_set: BTreeSet<&str> = listed_ids.iter().copied().collect();
    assert_eq!(listed_ids.len(), WRITERS * PUTS, "{listed:?}");
    assert_eq!(listed_set, ids);
    let latest: Vec<&Listed> = listed.iter().filter(|e| e.is_latest).collect();
    assert_eq!(latest.len(), 1);
    // The newest version listed is the one a plain GET reads.
    let (body, shown) = get_version(&client, &bucket, "hot", None).await;
    assert_eq!(shown.as_deref(), Some(latest[0].version_id.as_str()));
    let want = &acked
        .iter()
        .find(|(id, _)| *id == latest[0].version_id)
        .unwrap()
        .1;
    assert_same_bytes(&body, want, "newest version");
}

/// A small object's bytes live beside its record; a key with many small versions keeps
/// every version's, and a GET of the newest, or of any older one, still finds its own
/// (they were read in a page of the key's first eight and missed past it: 503).
#[tokio::test]
async fn the_newest_of_many_small_versions_is_read_back() {
    let (client, bucket) = versioned_bucket("many-small").await;
    let mut ids = Vec::new();
    for i in 0..40 {
        let body = format!("version {i}").into_bytes();
        ids.push(put_new_version(&client, &bucket, "k", &body).await);
        assert_eq!(get(&client, &bucket, "k").await, body, "after PUT {i}");
    }
    for (i, id) in ids.iter().enumerate() {
        let (body, _) = get_version(&client, &bucket, "k", Some(id)).await;
        assert_eq!(
            body,
            format!("version {i}").into_bytes(),
            "version {i} by id"
        );
    }
}
