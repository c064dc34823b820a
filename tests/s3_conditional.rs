//! Conditional requests end to end with the AWS SDK: `If-Match`, `If-None-Match`,
//! `If-Modified-Since` and `If-Unmodified-Since` on GET and HEAD (with S3's precedence
//! rules), and conditional writes (`If-None-Match: *` create-once, `If-Match` compare-and-swap)
//! including many writers racing on one key.
//!
//! PutObject's basic create-once / wrong-ETag cases are in `s3_multipart.rs`
//! (`put_object_honours_if_none_match_and_if_match`); this file covers the rest.

mod common;

use std::fmt::Debug;

use aws_sdk_s3::config::http::HttpResponse;
use aws_sdk_s3::error::SdkError;
use aws_sdk_s3::primitives::DateTime;
use aws_sdk_s3::Client;
use common::*;

/// An ETag no object in these tests has.
const OTHER_ETAG: &str = "\"0123456789abcdef0123456789abcdef\"";

/// Asserts the call was answered `304 Not Modified` carrying the object's current `etag` and
/// no body, as S3 answers a conditional GET or HEAD whose object has not changed.
#[track_caller]
fn assert_not_modified<T: Debug, E: Debug>(
    res: Result<T, SdkError<E, HttpResponse>>,
    etag: &str,
    what: &str,
) {
    let err = match res {
        Ok(v) => panic!("{what}: expected 304 Not Modified, got success: {v:?}"),
        Err(e) => e,
    };
    let raw = err
        .raw_response()
        .unwrap_or_else(|| panic!("{what}: expected 304, no HTTP response: {err:?}"));
    assert_eq!(
        raw.status().as_u16(),
        304,
        "{what}: expected 304 Not Modified: {}",
        describe(&err)
    );
    assert_eq!(
        raw.headers().get("etag"),
        Some(etag),
        "{what}: a 304 carries the object's ETag"
    );
    let body = raw.body().bytes().unwrap_or_default();
    assert!(
        body.is_empty(),
        "{what}: a 304 has no body, got {} bytes",
        body.len()
    );
    // Nothing that describes a body goes with a 304: a checksum without a body makes SDKs
    // that validate checksums (boto3's defaults) fail instead of reporting the 304.
    for (name, _) in raw.headers() {
        assert!(
            !name.starts_with("x-amz-checksum") && name != "content-type",
            "{what}: a 304 carries {name}"
        );
    }
}

/// Stores `data` under `key` and returns its ETag and Last-Modified (as HEAD reports it).
async fn stored(client: &Client, bucket: &str, key: &str, data: &[u8]) -> (String, DateTime) {
    let etag = put(client, bucket, key, data).await;
    assert_eq!(etag, quoted_md5(data), "PUT ETag");
    let head = ok(
        client.head_object().bucket(bucket).key(key).send().await,
        "HeadObject",
    );
    let modified = *head.last_modified().expect("HEAD Last-Modified");
    (etag, modified)
}

/// Body of a successful GetObject.
async fn body_of(out: aws_sdk_s3::operation::get_object::GetObjectOutput) -> Vec<u8> {
    out.body
        .collect()
        .await
        .expect("GET body")
        .into_bytes()
        .to_vec()
}

fn shifted(t: &DateTime, secs: i64) -> DateTime {
    DateTime::from_secs(t.secs() + secs)
}

// -------------------------------------------------------------------------------------------
// Conditional GET and HEAD.

#[tokio::test]
async fn if_match_returns_the_object_only_when_the_etag_matches() {
    let (client, bucket) = new_bucket("ifmatch").await;
    let data = payload(300 * KIB, 1);
    let (etag, _) = stored(&client, &bucket, "obj", &data).await;

    let get = || client.get_object().bucket(&bucket).key("obj");
    let head = || client.head_object().bucket(&bucket).key("obj");

    // Matching: the current ETag, `*`, and a list that contains it.
    for value in [
        etag.clone(),
        "*".to_string(),
        format!("{OTHER_ETAG}, {etag}"),
    ] {
        let out = ok(
            get().if_match(&value).send().await,
            &format!("GET If-Match: {value}"),
        );
        assert_eq!(out.e_tag(), Some(etag.as_str()), "GET If-Match: {value}");
        assert_same_bytes(
            &body_of(out).await,
            &data,
            &format!("GET If-Match: {value}"),
        );
        let out = ok(
            head().if_match(&value).send().await,
            &format!("HEAD If-Match: {value}"),
        );
        assert_eq!(out.e_tag(), Some(etag.as_str()), "HEAD If-Match: {value}");
        assert_eq!(out.content_length(), Some(data.len() as i64));
    }

    // A ranged GET with a matching If-Match is still a 206 of that range.
    let out = ok(
        get().if_match(&etag).range("bytes=10-19").send().await,
        "ranged GET If-Match",
    );
    assert_eq!(out.content_range(), Some("bytes 10-19/307200"));
    assert_same_bytes(&body_of(out).await, &data[10..20], "ranged GET If-Match");

    // Not matching: 412 PreconditionFailed, for GET (with the XML code) and HEAD (no body).
    assert_s3_error(
        get().if_match(OTHER_ETAG).send().await,
        412,
        "PreconditionFailed",
        "GET If-Match of another ETag",
    );
    assert_s3_error(
        get().if_match(OTHER_ETAG).range("bytes=0-9").send().await,
        412,
        "PreconditionFailed",
        "ranged GET If-Match of another ETag",
    );
    assert_s3_status(
        head().if_match(OTHER_ETAG).send().await,
        412,
        "HEAD If-Match of another ETag",
    );
}

#[tokio::test]
async fn if_match_fails_once_the_object_is_overwritten() {
    let (client, bucket) = new_bucket("ifmatchold").await;
    let (old_etag, _) = stored(&client, &bucket, "obj", b"version one").await;
    let (new_etag, _) = stored(&client, &bucket, "obj", b"version two").await;
    assert_ne!(old_etag, new_etag);
    assert_s3_error(
        client
            .get_object()
            .bucket(&bucket)
            .key("obj")
            .if_match(&old_etag)
            .send()
            .await,
        412,
        "PreconditionFailed",
        "GET If-Match of the overwritten version's ETag",
    );
    let out = ok(
        client
            .get_object()
            .bucket(&bucket)
            .key("obj")
            .if_match(&new_etag)
            .send()
            .await,
        "GET If-Match of the current ETag",
    );
    assert_eq!(body_of(out).await, b"version two");
}

#[tokio::test]
async fn if_none_match_with_the_current_etag_is_304_with_etag_and_no_body() {
    let (client, bucket) = new_bucket("ifnone").await;
    // One erasure-coded object and one small (inline) one.
    for (key, size) in [("big", 2 * MIB + 3), ("small", 100)] {
        let data = payload(size, size as u64);
        let (etag, _) = stored(&client, &bucket, key, &data).await;
        let get = || client.get_object().bucket(&bucket).key(key);
        let head = || client.head_object().bucket(&bucket).key(key);

        for value in [
            etag.clone(),
            "*".to_string(),
            format!("{OTHER_ETAG}, {etag}"),
        ] {
            assert_not_modified(
                get().if_none_match(&value).send().await,
                &etag,
                &format!("GET {key} If-None-Match: {value}"),
            );
            let with_checksums = get().checksum_mode(aws_sdk_s3::types::ChecksumMode::Enabled);
            assert_not_modified(
                with_checksums.if_none_match(&value).send().await,
                &etag,
                &format!("GET {key} with checksums, If-None-Match: {value}"),
            );
            assert_not_modified(
                head().if_none_match(&value).send().await,
                &etag,
                &format!("HEAD {key} If-None-Match: {value}"),
            );
        }

        // Another ETag: the object, 200.
        let out = ok(
            get().if_none_match(OTHER_ETAG).send().await,
            &format!("GET {key} If-None-Match of another ETag"),
        );
        assert_eq!(out.e_tag(), Some(etag.as_str()));
        assert_same_bytes(
            &body_of(out).await,
            &data,
            &format!("GET {key} If-None-Match of another ETag"),
        );
        let out = ok(
            head().if_none_match(OTHER_ETAG).send().await,
            &format!("HEAD {key} If-None-Match of another ETag"),
        );
        assert_eq!(out.content_length(), Some(size as i64));
    }
}

#[tokio::test]
async fn if_none_match_returns_the_new_version_after_an_overwrite() {
    // A cache revalidating with the ETag it holds gets the new content once the key changes.
    let (client, bucket) = new_bucket("ifnonenew").await;
    let (cached_etag, _) = stored(&client, &bucket, "obj", b"cached").await;
    let (new_etag, _) = stored(&client, &bucket, "obj", b"fresh content").await;
    let out = ok(
        client
            .get_object()
            .bucket(&bucket)
            .key("obj")
            .if_none_match(&cached_etag)
            .send()
            .await,
        "GET If-None-Match of the cached (old) ETag",
    );
    assert_eq!(out.e_tag(), Some(new_etag.as_str()));
    assert_eq!(body_of(out).await, b"fresh content");
}

#[tokio::test]
async fn if_modified_since_is_304_unless_modified_after_the_date() {
    let (client, bucket) = new_bucket("ifmodsince").await;
    let data = payload(200 * KIB, 2);
    let (etag, modified) = stored(&client, &bucket, "obj", &data).await;
    let get = || client.get_object().bucket(&bucket).key("obj");
    let head = || client.head_object().bucket(&bucket).key("obj");

    // Not modified since its own Last-Modified, nor since a later time.
    for (label, since) in [
        ("its Last-Modified", modified),
        ("an hour after", shifted(&modified, 3600)),
    ] {
        assert_not_modified(
            get().if_modified_since(since).send().await,
            &etag,
            &format!("GET If-Modified-Since {label}"),
        );
        assert_not_modified(
            head().if_modified_since(since).send().await,
            &etag,
            &format!("HEAD If-Modified-Since {label}"),
        );
    }

    // Modified since an earlier time: the object.
    for (label, since) in [
        ("a second before", shifted(&modified, -1)),
        ("a day before", shifted(&modified, -86_400)),
    ] {
        let out = ok(
            get().if_modified_since(since).send().await,
            &format!("GET If-Modified-Since {label}"),
        );
        assert_same_bytes(
            &body_of(out).await,
            &data,
            &format!("GET If-Modified-Since {label}"),
        );
        let out = ok(
            head().if_modified_since(since).send().await,
            &format!("HEAD If-Modified-Since {label}"),
        );
        assert_eq!(out.e_tag(), Some(etag.as_str()));
    }
}

#[tokio::test]
async fn if_unmodified_since_is_412_when_modified_after_the_date() {
    let (client, bucket) = new_bucket("ifunmod").await;
    let data = payload(200 * KIB, 3);
    let (etag, modified) = stored(&client, &bucket, "obj", &data).await;
    let get = || client.get_object().bucket(&bucket).key("obj");
    let head = || client.head_object().bucket(&bucket).key("obj");

    for (label, since) in [
        ("a second before", shifted(&modified, -1)),
        ("a day before", shifted(&modified, -86_400)),
    ] {
        assert_s3_error(
            get().if_unmodified_since(since).send().await,
            412,
            "PreconditionFailed",
            &format!("GET If-Unmodified-Since {label}"),
        );
        assert_s3_status(
            head().if_unmodified_since(since).send().await,
            412,
            &format!("HEAD If-Unmodified-Since {label}"),
        );
    }

    for (label, since) in [
        ("its Last-Modified", modified),
        ("an hour after", shifted(&modified, 3600)),
    ] {
        let out = ok(
            get().if_unmodified_since(since).send().await,
            &format!("GET If-Unmodified-Since {label}"),
        );
        assert_same_bytes(
            &body_of(out).await,
            &data,
            &format!("GET If-Unmodified-Since {label}"),
        );
        let out = ok(
            head().if_unmodified_since(since).send().await,
            &format!("HEAD If-Unmodified-Since {label}"),
        );
        assert_eq!(out.e_tag(), Some(etag.as_str()));
    }
}

#[tokio::test]
async fn if_match_true_overrides_a_false_if_unmodified_since() {
    // AWS: If-Match true and If-Unmodified-Since false → 200 OK with the data.
    let (client, bucket) = new_bucket("precmatch").await;
    let data = payload(150 * KIB, 4);
    let (etag, modified) = stored(&client, &bucket, "obj", &data).await;
    let long_ago = shifted(&modified, -86_400);

    let out = ok(
        client
            .get_object()
            .bucket(&bucket)
            .key("obj")
            .if_match(&etag)
            .if_unmodified_since(long_ago)
            .send()
            .await,
        "GET If-Match (true) + If-Unmodified-Since (false)",
    );
    assert_same_bytes(
        &body_of(out).await,
        &data,
        "GET If-Match + If-Unmodified-Since",
    );
    let out = ok(
        client
            .head_object()
            .bucket(&bucket)
            .key("obj")
            .if_match(&etag)
            .if_unmodified_since(long_ago)
            .send()
            .await,
        "HEAD If-Match (true) + If-Unmodified-Since (false)",
    );
    assert_eq!(out.e_tag(), Some(etag.as_str()));

    // If-Match false still fails, whatever If-Unmodified-Since says.
    assert_s3_error(
        client
            .get_object()
            .bucket(&bucket)
            .key("obj")
            .if_match(OTHER_ETAG)
            .if_unmodified_since(shifted(&modified, 3600))
            .send()
            .await,
        412,
        "PreconditionFailed",
        "GET If-Match (false) + If-Unmodified-Since (true)",
    );
}

#[tokio::test]
async fn if_none_match_false_overrides_a_true_if_modified_since() {
    // AWS: If-None-Match false (the ETag matches) and If-Modified-Since true → 304.
    let (client, bucket) = new_bucket("precnone").await;
    let data = payload(150 * KIB, 5);
    let (etag, modified) = stored(&client, &bucket, "obj", &data).await;
    let long_ago = shifted(&modified, -86_400);

    assert_not_modified(
        client
            .get_object()
            .bucket(&bucket)
            .key("obj")
            .if_none_match(&etag)
            .if_modified_since(long_ago)
            .send()
            .await,
        &etag,
        "GET If-None-Match (false) + If-Modified-Since (true)",
    );
    assert_not_modified(
        client
            .head_object()
            .bucket(&bucket)
            .key("obj")
            .if_none_match(&etag)
            .if_modified_since(long_ago)
            .send()
            .await,
        &etag,
        "HEAD If-None-Match (false) + If-Modified-Since (true)",
    );
}

#[tokio::test]
async fn conditional_get_of_a_missing_key_is_no_such_key() {
    let (client, bucket) = new_bucket("ifmissing").await;
    assert_s3_error(
        client
            .get_object()
            .bucket(&bucket)
            .key("absent")
            .if_match(OTHER_ETAG)
            .send()
            .await,
        404,
        "NoSuchKey",
        "GET If-Match of a missing key",
    );
    assert_s3_error(
        client
            .get_object()
            .bucket(&bucket)
            .key("absent")
            .if_none_match("*")
            .send()
            .await,
        404,
        "NoSuchKey",
        "GET If-None-Match: * of a missing key",
    );
    assert_s3_status(
        client
            .head_object()
            .bucket(&bucket)
            .key("absent")
            .if_match(OTHER_ETAG)
            .send()
            .await,
        404,
        "HEAD If-Match of a missing key",
    );
}

#[tokio::test]
async fn unparseable_condition_dates_are_ignored() {
    // RFC 9110 and S3: an If-Modified-Since / If-Unmodified-Since that is not an HTTP date is
    // ignored, so the object is returned.
    let (client, bucket) = new_bucket("ifbaddate").await;
    let data = payload(10 * KIB, 6);
    put(&client, &bucket, "obj", &data).await;
    let url = server().url(&format!("/{bucket}/obj"));
    for name in ["if-modified-since", "if-unmodified-since"] {
        for value in ["yesterday", "2024-01-01T00:00:00Z"] {
            let resp = signed_send(
                &Signer::test(),
                "GET",
                &url,
                &hdrs(&[(name, value)]),
                Vec::new(),
            )
            .await;
            assert_eq!(resp.status, 200, "GET {name}: {value}: {}", resp.text());
            assert_same_bytes(&resp.body, &data, &format!("GET {name}: {value}"));
        }
    }
}

// -------------------------------------------------------------------------------------------
// Conditional writes.

async fn put_if_none_match(
    client: &Client,
    bucket: &str,
    key: &str,
    data: &[u8],
) -> Result<
    aws_sdk_s3::operation::put_object::PutObjectOutput,
    SdkError<aws_sdk_s3::operation::put_object::PutObjectError, HttpResponse>,
> {
    client
        .put_object()
        .bucket(bucket)
        .key(key)
        .if_none_match("*")
        .body(data.to_vec().into())
        .send()
        .await
}

async fn put_if_match(
    client: &Client,
    bucket: &str,
    key: &str,
    etag: &str,
    data: &[u8],
) -> Result<
    aws_sdk_s3::operation::put_object::PutObjectOutput,
    SdkError<aws_sdk_s3::operation::put_object::PutObjectError, HttpResponse>,
> {
    client
        .put_object()
        .bucket(bucket)
        .key(key)
        .if_match(etag)
        .body(data.to_vec().into())
        .send()
        .await
}

#[tokio::test]
async fn put_if_none_match_star_creates_once_and_again_after_delete() {
    let (client, bucket) = new_bucket("createonce").await;
    let first = payload(300 * KIB, 10);
    let out = ok(
        put_if_none_match(&client, &bucket, "ckpt", &first).await,
        "first PUT If-None-Match: *",
    );
    assert_eq!(out.e_tag(), Some(quoted_md5(&first).as_str()));
    assert_s3_error(
        put_if_none_match(&client, &bucket, "ckpt", b"second").await,
        412,
        "PreconditionFailed",
        "second PUT If-None-Match: *",
    );
    assert_object(&client, &bucket, "ckpt", &first).await;

    // Once the key is deleted it can be created again.
    ok(
        client
            .delete_object()
            .bucket(&bucket)
            .key("ckpt")
            .send()
            .await,
        "DeleteObject",
    );
    ok(
        put_if_none_match(&client, &bucket, "ckpt", b"recreated").await,
        "PUT If-None-Match: * after the key was deleted",
    );
    assert_object(&client, &bucket, "ckpt", b"recreated").await;
}

#[tokio::test]
async fn put_if_match_is_a_compare_and_swap_and_a_stale_etag_is_412() {
    let (client, bucket) = new_bucket("cas").await;
    let v1 = payload(200 * KIB, 20);
    let e1 = put(&client, &bucket, "state", &v1).await;

    // Two writers read v1; the first swaps it for v2.
    let v2 = payload(2 * MIB + 5, 21);
    let out = ok(
        put_if_match(&client, &bucket, "state", &e1, &v2).await,
        "PUT If-Match of the current ETag",
    );
    let e2 = out.e_tag().unwrap().to_string();
    assert_eq!(e2, quoted_md5(&v2));
    assert_object(&client, &bucket, "state", &v2).await;

    // The second writer still holds e1: refused, and v2 stays.
    assert_s3_error(
        put_if_match(&client, &bucket, "state", &e1, b"lost update").await,
        412,
        "PreconditionFailed",
        "PUT If-Match of a stale ETag",
    );
    assert_object(&client, &bucket, "state", &v2).await;

    // After re-reading, its swap goes through.
    let v3 = b"v3".to_vec();
    ok(
        put_if_match(&client, &bucket, "state", &e2, &v3).await,
        "PUT If-Match of the re-read ETag",
    );
    assert_object(&client, &bucket, "state", &v3).await;
}

#[tokio::test]
async fn put_if_match_on_a_missing_key_is_no_such_key() {
    let (client, bucket) = new_bucket("casmissing").await;
    assert_s3_error(
        put_if_match(&client, &bucket, "absent", OTHER_ETAG, b"data").await,
        404,
        "NoSuchKey",
        "PUT If-Match on a key that does not exist",
    );
    assert_s3_status(
        client
            .head_object()
            .bucket(&bucket)
            .key("absent")
            .send()
            .await,
        404,
        "the refused If-Match PUT must not create the key",
    );
    // Also after the key existed and was deleted.
    let etag = put(&client, &bucket, "gone", b"was here").await;
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
        put_if_match(&client, &bucket, "gone", &etag, b"data").await,
        404,
        "NoSuchKey",
        "PUT If-Match of the deleted object's ETag",
    );
}

#[tokio::test]
async fn put_if_none_match_with_an_etag_is_not_implemented() {
    // S3 supports only `*` for If-None-Match on writes.
    let (client, bucket) = new_bucket("inmetag").await;
    let res = client
        .put_object()
        .bucket(&bucket)
        .key("k")
        .if_none_match(OTHER_ETAG)
        .body(b"x".to_vec().into())
        .send()
        .await;
    assert_s3_error(res, 501, "NotImplemented", "PUT If-None-Match: <etag>");
    assert_s3_status(
        client.head_object().bucket(&bucket).key("k").send().await,
        404,
        "the refused PUT must not create the key",
    );
}

/// Runs `writers` concurrent PUTs of distinct payloads of `size` bytes to one key, each made
/// by `send(i, data)`; asserts exactly one succeeded, the others were 412 PreconditionFailed,
/// and the stored object is the winner's.
async fn race<F, Fut>(client: &Client, bucket: &str, key: &str, size: usize, seed: u64, send: F)
where
    F: Fn(usize, Vec<u8>) -> Fut,
    Fut: std::future::Future<
            Output = Result<
                aws_sdk_s3::operation::put_object::PutObjectOutput,
                SdkError<aws_sdk_s3::operation::put_object::PutObjectError, HttpResponse>,
            >,
        > + Send
        + 'static,
{
    const WRITERS: usize = 8;
    let datas: Vec<Vec<u8>> = (0..WRITERS)
        .map(|i| payload(size + i, seed * 100 + i as u64))
        .collect();
    let tasks: Vec<_> = datas
        .iter()
        .enumerate()
        .map(|(i, d)| tokio::spawn(send(i, d.clone())))
        .collect();
    let mut winners = Vec::new();
    let mut outcomes = Vec::new();
    for (i, t) in tasks.into_iter().enumerate() {
        let res = t.await.expect("writer task");
        match &res {
            Ok(out) => {
                outcomes.push("200".to_string());
                assert_eq!(
                    out.e_tag(),
                    Some(quoted_md5(&datas[i]).as_str()),
                    "{key}: winner's ETag"
                );
                winners.push(i);
            }
            Err(e) => {
                outcomes.push(format!("{:?} {:?}", status_of(e), code_of(e)));
                assert!(
                    status_of(e) == Some(412)
                        && code_of(e).as_deref() == Some("PreconditionFailed"),
                    "{key}: a losing conditional PUT must be 412 PreconditionFailed: {}",
                    describe(e)
                );
            }
        }
    }
    assert_eq!(
        winners.len(),
        1,
        "{key}: exactly one of {WRITERS} racing conditional PUTs wins; outcomes {outcomes:?}"
    );
    assert_object(client, bucket, key, &datas[winners[0]]).await;
}

#[tokio::test]
async fn concurrent_if_none_match_writers_exactly_one_wins() {
    let (client, bucket) = new_bucket("racecreate").await;
    // Small (inline) and erasure-coded objects; several rounds so the writers really overlap.
    for (round, size) in [100, 100, 300 * KIB, 3 * MIB].into_iter().enumerate() {
        let key = format!("once/{round}");
        let send = |_, data: Vec<u8>| {
            let (client, bucket, key) = (client.clone(), bucket.clone(), key.clone());
            async move { put_if_none_match(&client, &bucket, &key, &data).await }
        };
        race(&client, &bucket, &key, size, round as u64, send).await;
    }
}

#[tokio::test]
async fn concurrent_if_match_swaps_of_one_etag_exactly_one_wins() {
    let (client, bucket) = new_bucket("racecas").await;
    for (round, size) in [100, 300 * KIB, 3 * MIB].into_iter().enumerate() {
        let key = format!("cas/{round}");
        let etag = put(&client, &bucket, &key, b"base").await;
        let send = |_, data: Vec<u8>| {
            let (client, bucket, key, etag) =
                (client.clone(), bucket.clone(), key.clone(), etag.clone());
            async move { put_if_match(&client, &bucket, &key, &etag, &data).await }
        };
        race(&client, &bucket, &key, size, 50 + round as u64, send).await;
    }
}
