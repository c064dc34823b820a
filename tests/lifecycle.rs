//! Bucket lifecycle through the S3 API: rules put, read back and refused as S3 does, the
//! `x-amz-expiration` header, and the scanner expiring objects and aborting uploads with an
//! accelerated clock (`STRATA_LIFECYCLE_DAY_SECONDS=1`: one lifecycle day is one second).

mod common;

use std::time::{Duration, Instant};

use aws_sdk_s3::types::{
    AbortIncompleteMultipartUpload, BucketLifecycleConfiguration, ExpirationStatus,
    LifecycleExpiration, LifecycleRule, LifecycleRuleFilter, Transition, TransitionStorageClass,
};
use aws_sdk_s3::Client;
use common::*;

fn expire_rule(id: &str, prefix: &str, days: i32) -> LifecycleRule {
    LifecycleRule::builder()
        .id(id)
        .status(ExpirationStatus::Enabled)
        .filter(LifecycleRuleFilter::builder().prefix(prefix).build())
        .expiration(LifecycleExpiration::builder().days(days).build())
        .build()
        .unwrap()
}

async fn put_rules(client: &Client, bucket: &str, rules: Vec<LifecycleRule>) {
    ok(
        client
            .put_bucket_lifecycle_configuration()
            .bucket(bucket)
            .lifecycle_configuration(
                BucketLifecycleConfiguration::builder()
                    .set_rules(Some(rules))
                    .build()
                    .unwrap(),
            )
            .send()
            .await,
        "PutBucketLifecycleConfiguration",
    );
}

fn fast_days() -> ServerOptions {
    ServerOptions {
        env: vec![
            ("STRATA_LIFECYCLE_DAY_SECONDS".into(), "1".into()),
            ("STRATA_METRICS_AUTH".into(), "public".into()),
        ],
        ..ServerOptions::default()
    }
}

#[tokio::test]
async fn rules_are_stored_read_back_and_deleted() {
    let (client, bucket) = new_bucket("lc-rules").await;
    assert_s3_error(
        client
            .get_bucket_lifecycle_configuration()
            .bucket(&bucket)
            .send()
            .await,
        404,
        "NoSuchLifecycleConfiguration",
        "no rules yet",
    );
    let tiered = LifecycleRule::builder()
        .id("ckpt")
        .status(ExpirationStatus::Enabled)
        .filter(LifecycleRuleFilter::builder().prefix("ckpt/").build())
        .transitions(
            Transition::builder()
                .days(30)
                .storage_class(TransitionStorageClass::StandardIa)
                .build(),
        )
        .expiration(LifecycleExpiration::builder().days(90).build())
        .abort_incomplete_multipart_upload(
            AbortIncompleteMultipartUpload::builder()
                .days_after_initiation(7)
                .build(),
        )
        .build()
        .unwrap();
    put_rules(
        &client,
        &bucket,
        vec![tiered, expire_rule("logs", "logs/", 30)],
    )
    .await;
    // S3 announces the expiry on GET and HEAD: the midnight UTC after 30 days.
    put(&client, &bucket, "logs/app.log", b"line").await;
    let head = ok(
        client
            .head_object()
            .bucket(&bucket)
            .key("logs/app.log")
            .send()
            .await,
        "HEAD logs/app.log",
    );
    let modified = head.last_modified().unwrap().secs();
    let due = (modified + 30 * 86_400).div_euclid(86_400) * 86_400 + 86_400;
    let due = httpdate::fmt_http_date(std::time::UNIX_EPOCH + Duration::from_secs(due as u64));
    assert_eq!(
        head.expiration(),
        Some(format!("expiry-date=\"{due}\", rule-id=\"logs\"").as_str())
    );
    let got = ok(
        client
            .get_object()
            .bucket(&bucket)
            .key("logs/app.log")
            .send()
            .await,
        "GET logs/app.log",
    );
    assert_eq!(got.expiration(), head.expiration());
    let got = ok(
        client
            .get_bucket_lifecycle_configuration()
            .bucket(&bucket)
            .send()
            .await,
        "GetBucketLifecycleConfiguration",
    );
    let rules = got.rules();
    assert_eq!(rules.len(), 2);
    assert_eq!(rules[0].id(), Some("ckpt"));
    assert_eq!(rules[0].transitions()[0].days(), Some(30));
    assert_eq!(rules[0].expiration().and_then(|e| e.days()), Some(90));
    assert_eq!(
        rules[0]
            .abort_incomplete_multipart_upload()
            .and_then(|a| a.days_after_initiation()),
        Some(7)
    );
    assert_eq!(rules[1].filter().and_then(|f| f.prefix()), Some("logs/"));
    ok(
        client
            .delete_bucket_lifecycle()
            .bucket(&bucket)
            .send()
            .await,
        "DeleteBucketLifecycle",
    );
    assert_s3_error(
        client
            .get_bucket_lifecycle_configuration()
            .bucket(&bucket)
            .send()
            .await,
        404,
        "NoSuchLifecycleConfiguration",
        "after delete",
    );
}

#[tokio::test]
async fn bad_rules_are_refused_and_the_old_ones_kept() {
    let (client, bucket) = new_bucket("lc-bad").await;
    put_rules(&client, &bucket, vec![expire_rule("keep", "a/", 5)]).await;
    let put = |rules: Vec<LifecycleRule>| {
        client
            .put_bucket_lifecycle_configuration()
            .bucket(&bucket)
            .lifecycle_configuration(
                BucketLifecycleConfiguration::builder()
                    .set_rules(Some(rules))
                    .build()
                    .unwrap(),
            )
            .send()
    };
    assert_s3_error(
        put(vec![expire_rule("x", "a/", 1), expire_rule("x", "b/", 1)]).await,
        400,
        "InvalidArgument",
        "duplicate IDs",
    );
    assert_s3_error(
        put(vec![expire_rule("zero", "a/", 0)]).await,
        400,
        "InvalidArgument",
        "days 0",
    );
    let late_transition = LifecycleRule::builder()
        .id("t")
        .status(ExpirationStatus::Enabled)
        .filter(LifecycleRuleFilter::builder().prefix("").build())
        .transitions(
            Transition::builder()
                .days(60)
                .storage_class(TransitionStorageClass::Glacier)
                .build(),
        )
        .expiration(LifecycleExpiration::builder().days(30).build())
        .build()
        .unwrap();
    assert_s3_error(
        put(vec![late_transition]).await,
        400,
        "InvalidArgument",
        "transition after expiration",
    );
    let got = ok(
        client
            .get_bucket_lifecycle_configuration()
            .bucket(&bucket)
            .send()
            .await,
        "GetBucketLifecycleConfiguration",
    );
    assert_eq!(got.rules()[0].id(), Some("keep"), "the old rules stay");
}

#[tokio::test]
async fn objects_expire_on_the_accelerated_clock_and_others_stay() {
    let server = TestServer::start_with(fast_days());
    let client = server.client();
    let bucket = unique_bucket("lc-expire");
    create_bucket(&client, &bucket).await;
    put(&client, &bucket, "tmp/old", b"expires").await;
    put(&client, &bucket, "tmp/big", &payload(2 * MIB, 1)).await;
    put(&client, &bucket, "keep/forever", b"stays").await;
    put_rules(&client, &bucket, vec![expire_rule("tmp-1d", "tmp/", 1)]).await;

    let kept = ok(
        client
            .head_object()
            .bucket(&bucket)
            .key("keep/forever")
            .send()
            .await,
        "HEAD keep/forever",
    );
    assert_eq!(kept.expiration(), None, "no rule applies");

    let started = Instant::now();
    loop {
        let keys = list_all_keys(&client, &bucket, None).await;
        if keys == vec!["keep/forever".to_string()] {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "objects under a 1-day rule not gone within 10 s: {keys:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_s3_status(
        client
            .head_object()
            .bucket(&bucket)
            .key("tmp/big")
            .send()
            .await,
        404,
        "expired object",
    );
    assert_eq!(get(&client, &bucket, "keep/forever").await, b"stays");
    assert!(server.log().contains("lifecycle: expired"));
    // Counted in the metrics, by bucket and rule.
    let metrics = reqwest::get(server.url("/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let line = format!("strata_lifecycle_expired_total{{bucket=\"{bucket}\",rule=\"tmp-1d\"}} 2");
    assert!(metrics.contains(&line), "no {line:?} in:\n{metrics}");
}

#[tokio::test]
async fn incomplete_uploads_are_aborted_after_their_days() {
    let server = TestServer::start_with(fast_days());
    let client = server.client();
    let bucket = unique_bucket("lc-abort");
    create_bucket(&client, &bucket).await;
    let upload = ok(
        client
            .create_multipart_upload()
            .bucket(&bucket)
            .key("ckpt/partial")
            .send()
            .await,
        "CreateMultipartUpload",
    );
    let upload_id = upload.upload_id().unwrap().to_string();
    let rule = LifecycleRule::builder()
        .id("abort-1d")
        .status(ExpirationStatus::Enabled)
        .filter(LifecycleRuleFilter::builder().prefix("ckpt/").build())
        .abort_incomplete_multipart_upload(
            AbortIncompleteMultipartUpload::builder()
                .days_after_initiation(1)
                .build(),
        )
        .build()
        .unwrap();
    put_rules(&client, &bucket, vec![rule]).await;
    let started = Instant::now();
    loop {
        let uploads = ok(
            client.list_multipart_uploads().bucket(&bucket).send().await,
            "ListMultipartUploads",
        );
        if uploads.uploads().is_empty() {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "upload not aborted within 10 s"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_s3_error(
        client
            .list_parts()
            .bucket(&bucket)
            .key("ckpt/partial")
            .upload_id(&upload_id)
            .send()
            .await,
        404,
        "NoSuchUpload",
        "aborted upload",
    );
}

fn admin_stdout(server: &TestServer, args: &[&str]) -> String {
    let output = strata_admin(server, args);
    assert!(
        output.status.success(),
        "strata admin {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test]
async fn a_dry_run_lists_what_new_rules_would_do_and_status_shows_what_they_did() {
    let server = TestServer::start_with(fast_days());
    let client = server.client();
    let bucket = unique_bucket("lc-admin");
    create_bucket(&client, &bucket).await;
    for key in ["tmp/a", "tmp/b", "keep/c"] {
        put(&client, &bucket, key, key.as_bytes()).await;
    }
    // Older than a (one-second) lifecycle day and its rounding.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.json");
    std::fs::write(
        &rules,
        r#"{"Rules": [
            {"ID": "tmp", "Status": "Enabled", "Filter": {"Prefix": "tmp/"}, "Expiration": {"Days": 1}},
            {"ID": "keep", "Status": "Enabled", "Filter": {"Prefix": "keep/"}, "Expiration": {"Days": 3600}}
        ]}"#,
    )
    .unwrap();

    let dry: serde_json::Value = serde_json::from_str(&admin_stdout(
        &server,
        &[
            "lifecycle",
            "dry-run",
            &bucket,
            rules.to_str().unwrap(),
            "--json",
        ],
    ))
    .unwrap();
    assert_eq!(dry["due_now_count"], 2, "{dry}");
    let due: Vec<&str> = dry["due_now"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["key"].as_str().unwrap())
        .collect();
    assert_eq!(due, ["tmp/a", "tmp/b"]);
    assert_eq!(dry["upcoming"][0]["key"], "keep/c");
    assert_eq!(dry["upcoming"][0]["action"], "expire");
    assert_eq!(
        list_all_keys(&client, &bucket, None).await.len(),
        3,
        "a dry run changes nothing"
    );

    admin_stdout(
        &server,
        &["lifecycle", "set", &bucket, rules.to_str().unwrap()],
    );
    let started = Instant::now();
    while list_all_keys(&client, &bucket, None).await != ["keep/c"] {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "rules set from a file did not act"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    // The scan that expired them records its end once it is over.
    let status = loop {
        let status: serde_json::Value = serde_json::from_str(&admin_stdout(
            &server,
            &["lifecycle", "status", &bucket, "--json"],
        ))
        .unwrap();
        if status["last_scan_ms"].as_i64().is_some() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the scan never ended: {status}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let tmp = status["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "tmp")
        .unwrap();
    assert_eq!(tmp["expired"], 2, "{status}");
    assert!(tmp["last_action_ms"].as_i64().is_some());
    assert!(status["last_scan_ms"].as_i64().is_some());
    assert_eq!(status["plan"]["upcoming"][0]["key"], "keep/c");
    let table = admin_stdout(&server, &["lifecycle", "status", &bucket]);
    assert!(
        table.contains("rule tmp") && table.contains("keep/c"),
        "{table}"
    );
}

/// Every version of `key` as ListObjectVersions gives them: (version id, is delete marker),
/// newest first.
async fn versions_of(client: &Client, bucket: &str, key: &str) -> Vec<(String, bool)> {
    let listed = ok(
        client
            .list_object_versions()
            .bucket(bucket)
            .prefix(key)
            .send()
            .await,
        "ListObjectVersions",
    );
    let mut out: Vec<(i64, String, bool)> = Vec::new();
    for v in listed.versions() {
        if v.key() == Some(key) {
            let at = v.last_modified().map_or(0, |t| t.to_millis().unwrap());
            out.push((at, v.version_id().unwrap_or("").to_string(), false));
        }
    }
    for m in listed.delete_markers() {
        if m.key() == Some(key) {
            let at = m.last_modified().map_or(0, |t| t.to_millis().unwrap());
            out.push((at, m.version_id().unwrap_or("").to_string(), true));
        }
    }
    out.sort_by_key(|(at, _, _)| std::cmp::Reverse(*at));
    out.into_iter()
        .map(|(_, id, marker)| (id, marker))
        .collect()
}

#[tokio::test]
async fn versioned_buckets_lose_old_versions_and_lone_delete_markers_by_their_rules() {
    use aws_sdk_s3::types::{BucketVersioningStatus, NoncurrentVersionExpiration};
    let server = TestServer::start_with(fast_days());
    let client = server.client();
    let bucket = unique_bucket("lc-versions");
    create_bucket(&client, &bucket).await;
    set_versioning(&client, &bucket, BucketVersioningStatus::Enabled).await;
    let logs = LifecycleRule::builder()
        .id("logs")
        .status(ExpirationStatus::Enabled)
        .filter(LifecycleRuleFilter::builder().prefix("logs/").build())
        .noncurrent_version_expiration(
            NoncurrentVersionExpiration::builder()
                .noncurrent_days(1)
                .newer_noncurrent_versions(1)
                .build(),
        )
        .expiration(
            LifecycleExpiration::builder()
                .expired_object_delete_marker(true)
                .build(),
        )
        .build()
        .unwrap();
    put_rules(&client, &bucket, vec![logs, expire_rule("tmp", "tmp/", 1)]).await;

    // logs/a: three versions; the oldest goes, the newest noncurrent one is kept.
    let mut ids = Vec::new();
    for round in 0..3u64 {
        let data = payload(1000 + round as usize, round);
        let put = client
            .put_object()
            .bucket(&bucket)
            .key("logs/a")
            .body(data.into())
            .send()
            .await
            .unwrap();
        ids.push(put.version_id().unwrap().to_string());
    }
    // logs/lone: a delete of a missing key leaves a delete marker and nothing else.
    ok(
        client
            .delete_object()
            .bucket(&bucket)
            .key("logs/lone")
            .send()
            .await,
        "DELETE of a missing key",
    );
    assert_eq!(versions_of(&client, &bucket, "logs/lone").await.len(), 1);
    // tmp/x: expiry of the current version in a versioned bucket is a delete marker.
    let tmp = payload(5000, 9);
    put(&client, &bucket, "tmp/x", &tmp).await;

    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let a = versions_of(&client, &bucket, "logs/a").await;
        let lone = versions_of(&client, &bucket, "logs/lone").await;
        let x = versions_of(&client, &bucket, "tmp/x").await;
        let done = a.len() == 2 && lone.is_empty() && x.len() == 2;
        if done {
            let kept: Vec<&str> = a.iter().map(|(id, _)| id.as_str()).collect();
            assert_eq!(
                kept,
                vec![ids[2].as_str(), ids[1].as_str()],
                "the oldest went"
            );
            assert!(x[0].1, "tmp/x now ends in a delete marker");
            assert!(!x[1].1, "and keeps its data as a noncurrent version");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "logs/a {a:?}, logs/lone {lone:?}, tmp/x {x:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_s3_error(
        client
            .get_object()
            .bucket(&bucket)
            .key("tmp/x")
            .send()
            .await,
        404,
        "NoSuchKey",
        "an expired object in a versioned bucket",
    );
    let old = client
        .get_object()
        .bucket(&bucket)
        .key("tmp/x")
        .version_id(versions_of(&client, &bucket, "tmp/x").await[1].0.clone())
        .send()
        .await
        .unwrap();
    assert_same_bytes(
        &old.body.collect().await.unwrap().into_bytes(),
        &tmp,
        "the expired object's data, by version id",
    );
    let status = admin_stdout(&server, &["lifecycle", "status", &bucket, "--json"]);
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    let rule = |id: &str| {
        status["rules"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .cloned()
            .unwrap()
    };
    assert_eq!(rule("logs")["versions_removed"], 1);
    assert_eq!(rule("logs")["markers_removed"], 1);
    assert_eq!(rule("tmp")["expired"], 1);
}
