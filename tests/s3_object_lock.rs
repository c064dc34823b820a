//! Object Lock as AWS S3 documents it, through the Rust SDK: buckets made with Object Lock
//! (versioned, never suspended), Put/GetObjectLockConfiguration and default retention,
//! retention and legal holds set by PUT headers, multipart uploads and the
//! Put/GetObjectRetention and Put/GetObjectLegalHold calls, GET/HEAD headers, deletes of
//! locked versions refused (and governance retention bypassed), DeleteObjects reporting locked
//! keys, and lifecycle never removing a locked version.

mod common;

use std::time::{Duration, Instant};

use aws_sdk_s3::primitives::DateTime;
use aws_sdk_s3::types::{
    BucketLifecycleConfiguration, BucketVersioningStatus, DefaultRetention, Delete,
    ExpirationStatus, LifecycleRule, LifecycleRuleFilter, NoncurrentVersionExpiration,
    ObjectIdentifier, ObjectLockConfiguration, ObjectLockEnabled, ObjectLockLegalHold,
    ObjectLockLegalHoldStatus, ObjectLockMode, ObjectLockRetention, ObjectLockRetentionMode,
    ObjectLockRule,
};
use aws_sdk_s3::Client;
use common::*;

const DAY: Duration = Duration::from_secs(24 * 3600);

/// A fresh bucket created with Object Lock enabled.
async fn locked_bucket(client: &Client, prefix: &str) -> String {
    let bucket = unique_bucket(prefix);
    ok(
        client
            .create_bucket()
            .bucket(&bucket)
            .object_lock_enabled_for_bucket(true)
            .send()
            .await,
        "CreateBucket with Object Lock",
    );
    bucket
}

/// A time `ahead` from now, at whole seconds (as S3 keeps retention dates).
fn from_now(ahead: Duration) -> DateTime {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + ahead.as_secs();
    DateTime::from_secs(secs as i64)
}

fn retention(mode: ObjectLockRetentionMode, until: DateTime) -> ObjectLockRetention {
    ObjectLockRetention::builder()
        .mode(mode)
        .retain_until_date(until)
        .build()
}

/// PUT with a retention; returns the new version's id.
async fn put_retained(
    client: &Client,
    bucket: &str,
    key: &str,
    mode: ObjectLockMode,
    until: DateTime,
) -> String {
    let out = ok(
        client
            .put_object()
            .bucket(bucket)
            .key(key)
            .body(payload(3000, 1).into())
            .object_lock_mode(mode)
            .object_lock_retain_until_date(until)
            .send()
            .await,
        &format!("PutObject {key} with a retention"),
    );
    out.version_id().expect("a version id").to_string()
}

async fn delete_version(
    client: &Client,
    bucket: &str,
    key: &str,
    version: &str,
    bypass: bool,
) -> Result<(), String> {
    client
        .delete_object()
        .bucket(bucket)
        .key(key)
        .version_id(version)
        .set_bypass_governance_retention(bypass.then_some(true))
        .send()
        .await
        .map(drop)
        .map_err(|e| code_of(&e).unwrap_or_else(|| describe(&e)))
}

async fn version_ids(client: &Client, bucket: &str, key: &str) -> Vec<String> {
    let out = ok(
        client
            .list_object_versions()
            .bucket(bucket)
            .prefix(key)
            .send()
            .await,
        "ListObjectVersions",
    );
    out.versions()
        .iter()
        .filter(|v| v.key() == Some(key))
        .filter_map(|v| v.version_id().map(str::to_string))
        .collect()
}

#[tokio::test]
async fn a_bucket_made_with_object_lock_is_versioned_for_good_and_reports_its_configuration() {
    let client = server().client();
    let bucket = locked_bucket(&client, "lock-config").await;
    let versioning = ok(
        client.get_bucket_versioning().bucket(&bucket).send().await,
        "GetBucketVersioning",
    );
    assert_eq!(versioning.status(), Some(&BucketVersioningStatus::Enabled));
    let config = ok(
        client
            .get_object_lock_configuration()
            .bucket(&bucket)
            .send()
            .await,
        "GetObjectLockConfiguration",
    );
    let config = config.object_lock_configuration().expect("a configuration");
    assert_eq!(
        config.object_lock_enabled(),
        Some(&ObjectLockEnabled::Enabled)
    );
    assert!(config.rule().is_none(), "no default retention yet");

    // A default retention, read back as put.
    let rule = ObjectLockRule::builder()
        .default_retention(
            DefaultRetention::builder()
                .mode(ObjectLockRetentionMode::Governance)
                .days(3)
                .build(),
        )
        .build();
    let with_rule = ObjectLockConfiguration::builder()
        .object_lock_enabled(ObjectLockEnabled::Enabled)
        .rule(rule)
        .build();
    ok(
        client
            .put_object_lock_configuration()
            .bucket(&bucket)
            .object_lock_configuration(with_rule)
            .send()
            .await,
        "PutObjectLockConfiguration",
    );
    let config = ok(
        client
            .get_object_lock_configuration()
            .bucket(&bucket)
            .send()
            .await,
        "GetObjectLockConfiguration",
    );
    let default = config
        .object_lock_configuration()
        .and_then(|c| c.rule())
        .and_then(|r| r.default_retention())
        .expect("the default retention");
    assert_eq!(default.mode(), Some(&ObjectLockRetentionMode::Governance));
    assert_eq!((default.days(), default.years()), (Some(3), None));

    // Versioning stays enabled.
    let suspend = client
        .put_bucket_versioning()
        .bucket(&bucket)
        .versioning_configuration(
            aws_sdk_s3::types::VersioningConfiguration::builder()
                .status(BucketVersioningStatus::Suspended)
                .build(),
        )
        .send()
        .await;
    assert_s3_error(
        suspend,
        409,
        "InvalidBucketState",
        "suspending a lock bucket",
    );

    // A plain bucket has no configuration, and gets one only once versioned.
    let (client, plain) = new_bucket("lock-plain").await;
    assert_s3_error(
        client
            .get_object_lock_configuration()
            .bucket(&plain)
            .send()
            .await,
        404,
        "ObjectLockConfigurationNotFoundError",
        "GetObjectLockConfiguration of a plain bucket",
    );
    let enable = || {
        client
            .put_object_lock_configuration()
            .bucket(&plain)
            .object_lock_configuration(
                ObjectLockConfiguration::builder()
                    .object_lock_enabled(ObjectLockEnabled::Enabled)
                    .build(),
            )
            .send()
    };
    assert_s3_error(
        enable().await,
        409,
        "InvalidBucketState",
        "Object Lock on an unversioned bucket",
    );
    set_versioning(&client, &plain, BucketVersioningStatus::Enabled).await;
    ok(enable().await, "Object Lock on a versioned bucket");
}

#[tokio::test]
async fn compliance_retention_keeps_a_version_from_everyone_until_its_date() {
    let client = server().client();
    let bucket = locked_bucket(&client, "lock-compliance").await;
    let until = from_now(DAY);
    let id = put_retained(&client, &bucket, "ckpt", ObjectLockMode::Compliance, until).await;

    let head = ok(
        client
            .head_object()
            .bucket(&bucket)
            .key("ckpt")
            .send()
            .await,
        "HEAD",
    );
    assert_eq!(head.object_lock_mode(), Some(&ObjectLockMode::Compliance));
    assert_eq!(head.object_lock_retain_until_date(), Some(&until));
    let got = ok(
        client
            .get_object_retention()
            .bucket(&bucket)
            .key("ckpt")
            .version_id(&id)
            .send()
            .await,
        "GetObjectRetention",
    );
    let got = got.retention().expect("a retention");
    assert_eq!(got.mode(), Some(&ObjectLockRetentionMode::Compliance));
    assert_eq!(got.retain_until_date(), Some(&until));

    // Nobody removes it, bypass or not.
    for bypass in [false, true] {
        assert_eq!(
            delete_version(&client, &bucket, "ckpt", &id, bypass).await,
            Err("AccessDenied".to_string()),
            "bypass {bypass}"
        );
    }
    // A delete without a version id leaves a delete marker; the version stays readable.
    ok(
        client
            .delete_object()
            .bucket(&bucket)
            .key("ckpt")
            .send()
            .await,
        "DELETE without a version id",
    );
    let read = ok(
        client
            .get_object()
            .bucket(&bucket)
            .key("ckpt")
            .version_id(&id)
            .send()
            .await,
        "GET of the locked version",
    );
    let bytes = read.body.collect().await.unwrap().into_bytes();
    assert_eq!(bytes.as_ref(), payload(3000, 1).as_slice());

    // The retention can grow, never shrink or weaken.
    let set = |mode, until, bypass: bool| {
        client
            .put_object_retention()
            .bucket(&bucket)
            .key("ckpt")
            .version_id(&id)
            .retention(retention(mode, until))
            .set_bypass_governance_retention(bypass.then_some(true))
            .send()
    };
    let shorter = from_now(Duration::from_secs(3600));
    assert_s3_error(
        set(ObjectLockRetentionMode::Compliance, shorter, true).await,
        403,
        "AccessDenied",
        "shortening a compliance retention",
    );
    assert_s3_error(
        set(ObjectLockRetentionMode::Governance, until, true).await,
        403,
        "AccessDenied",
        "weakening a compliance retention",
    );
    let longer = from_now(DAY * 2);
    ok(
        set(ObjectLockRetentionMode::Compliance, longer, false).await,
        "lengthening a compliance retention",
    );
    let head = ok(
        client
            .head_object()
            .bucket(&bucket)
            .key("ckpt")
            .version_id(&id)
            .send()
            .await,
        "HEAD of the version",
    );
    assert_eq!(head.object_lock_retain_until_date(), Some(&longer));
}

#[tokio::test]
async fn governance_retention_yields_only_to_a_request_that_bypasses_it() {
    let client = server().client();
    let bucket = locked_bucket(&client, "lock-governance").await;
    let until = from_now(DAY);
    let id = put_retained(&client, &bucket, "g", ObjectLockMode::Governance, until).await;
    assert_eq!(
        delete_version(&client, &bucket, "g", &id, false).await,
        Err("AccessDenied".to_string())
    );
    // Shortening needs the bypass too.
    let shorter = retention(
        ObjectLockRetentionMode::Governance,
        from_now(Duration::from_secs(60)),
    );
    assert_s3_error(
        client
            .put_object_retention()
            .bucket(&bucket)
            .key("g")
            .retention(shorter.clone())
            .send()
            .await,
        403,
        "AccessDenied",
        "shortening without bypass",
    );
    ok(
        client
            .put_object_retention()
            .bucket(&bucket)
            .key("g")
            .retention(shorter)
            .bypass_governance_retention(true)
            .send()
            .await,
        "shortening with bypass",
    );
    assert_eq!(
        delete_version(&client, &bucket, "g", &id, true).await,
        Ok(())
    );
    assert!(version_ids(&client, &bucket, "g").await.is_empty());
}

#[tokio::test]
async fn a_legal_hold_keeps_a_version_until_it_is_released() {
    let client = server().client();
    let bucket = locked_bucket(&client, "lock-hold").await;
    let held = ok(
        client
            .put_object()
            .bucket(&bucket)
            .key("h")
            .body(b"held".to_vec().into())
            .object_lock_legal_hold_status(ObjectLockLegalHoldStatus::On)
            .send()
            .await,
        "PUT with a legal hold",
    );
    let id = held.version_id().unwrap().to_string();
    let head = ok(
        client.head_object().bucket(&bucket).key("h").send().await,
        "HEAD",
    );
    assert_eq!(
        head.object_lock_legal_hold_status(),
        Some(&ObjectLockLegalHoldStatus::On)
    );
    assert!(head.object_lock_mode().is_none(), "no retention");
    for bypass in [false, true] {
        assert_eq!(
            delete_version(&client, &bucket, "h", &id, bypass).await,
            Err("AccessDenied".to_string())
        );
    }
    let hold = |status| {
        client
            .put_object_legal_hold()
            .bucket(&bucket)
            .key("h")
            .version_id(&id)
            .legal_hold(ObjectLockLegalHold::builder().status(status).build())
            .send()
    };
    ok(
        hold(ObjectLockLegalHoldStatus::Off).await,
        "releasing the hold",
    );
    let got = ok(
        client
            .get_object_legal_hold()
            .bucket(&bucket)
            .key("h")
            .version_id(&id)
            .send()
            .await,
        "GetObjectLegalHold",
    );
    assert_eq!(
        got.legal_hold().and_then(|h| h.status()),
        Some(&ObjectLockLegalHoldStatus::Off)
    );
    assert_eq!(
        delete_version(&client, &bucket, "h", &id, false).await,
        Ok(())
    );

    // A version that never had a hold or a retention has no configuration to show.
    let plain = put_new_version(&client, &bucket, "p", b"plain").await;
    assert_s3_error(
        client
            .get_object_legal_hold()
            .bucket(&bucket)
            .key("p")
            .version_id(&plain)
            .send()
            .await,
        404,
        "NoSuchObjectLockConfiguration",
        "GetObjectLegalHold of a version without one",
    );
    assert_s3_error(
        client
            .get_object_retention()
            .bucket(&bucket)
            .key("p")
            .send()
            .await,
        404,
        "NoSuchObjectLockConfiguration",
        "GetObjectRetention of a version without one",
    );
}

#[tokio::test]
async fn the_default_retention_applies_to_puts_copies_and_multipart_uploads() {
    let client = server().client();
    let bucket = locked_bucket(&client, "lock-default").await;
    let rule = ObjectLockRule::builder()
        .default_retention(
            DefaultRetention::builder()
                .mode(ObjectLockRetentionMode::Governance)
                .days(1)
                .build(),
        )
        .build();
    ok(
        client
            .put_object_lock_configuration()
            .bucket(&bucket)
            .object_lock_configuration(
                ObjectLockConfiguration::builder()
                    .object_lock_enabled(ObjectLockEnabled::Enabled)
                    .rule(rule)
                    .build(),
            )
            .send()
            .await,
        "PutObjectLockConfiguration",
    );
    let before = from_now(DAY);
    put_new_version(&client, &bucket, "single", b"one").await;
    multipart_put(
        &client,
        &bucket,
        "multi",
        &[&payload(5 * MIB, 2)[..], &payload(1000, 3)[..]],
    )
    .await;
    ok(
        client
            .copy_object()
            .bucket(&bucket)
            .key("copy")
            .copy_source(format!("{bucket}/single"))
            .send()
            .await,
        "CopyObject",
    );
    let after = from_now(DAY + Duration::from_secs(1));
    for key in ["single", "multi", "copy"] {
        let head = ok(
            client.head_object().bucket(&bucket).key(key).send().await,
            key,
        );
        assert_eq!(
            head.object_lock_mode(),
            Some(&ObjectLockMode::Governance),
            "{key}"
        );
        let until = head.object_lock_retain_until_date().expect("a date").secs();
        assert!(
            (before.secs()..=after.secs()).contains(&until),
            "{key}: retained until {until}, expected one day from now"
        );
        let id = head.version_id().unwrap().to_string();
        assert_eq!(
            delete_version(&client, &bucket, key, &id, false).await,
            Err("AccessDenied".to_string()),
            "{key}"
        );
    }
}

#[tokio::test]
async fn lock_settings_are_checked_and_refused_where_object_lock_is_off() {
    let client = server().client();
    let (_, plain) = new_bucket("lock-refused").await;
    let until = from_now(DAY);
    assert_s3_error(
        client
            .put_object()
            .bucket(&plain)
            .key("k")
            .body(b"x".to_vec().into())
            .object_lock_mode(ObjectLockMode::Governance)
            .object_lock_retain_until_date(until)
            .send()
            .await,
        400,
        "InvalidRequest",
        "a retention in a bucket without Object Lock",
    );
    assert!(
        list_all_keys(&client, &plain, None).await.is_empty(),
        "nothing was stored"
    );
    put(&client, &plain, "k", b"x").await;
    assert_s3_error(
        client
            .put_object_retention()
            .bucket(&plain)
            .key("k")
            .retention(retention(ObjectLockRetentionMode::Governance, until))
            .send()
            .await,
        400,
        "InvalidRequest",
        "PutObjectRetention in a bucket without Object Lock",
    );

    let bucket = locked_bucket(&client, "lock-checked").await;
    assert_s3_error(
        client
            .put_object()
            .bucket(&bucket)
            .key("k")
            .body(b"x".to_vec().into())
            .object_lock_mode(ObjectLockMode::Governance)
            .send()
            .await,
        400,
        "InvalidArgument",
        "a mode without a date",
    );
    assert_s3_error(
        client
            .put_object()
            .bucket(&bucket)
            .key("k")
            .body(b"x".to_vec().into())
            .object_lock_mode(ObjectLockMode::Governance)
            .object_lock_retain_until_date(DateTime::from_secs(1_000_000_000))
            .send()
            .await,
        400,
        "InvalidArgument",
        "a date in the past",
    );
    assert!(version_ids(&client, &bucket, "k").await.is_empty());
}

#[tokio::test]
async fn delete_objects_keeps_locked_versions_and_deletes_the_others() {
    let client = server().client();
    let bucket = locked_bucket(&client, "lock-batch").await;
    let locked = put_retained(
        &client,
        &bucket,
        "locked",
        ObjectLockMode::Compliance,
        from_now(DAY),
    )
    .await;
    let free = put_new_version(&client, &bucket, "free", b"free").await;
    let objects = [("locked", &locked), ("free", &free)].map(|(key, id)| {
        ObjectIdentifier::builder()
            .key(key)
            .version_id(id.as_str())
            .build()
            .unwrap()
    });
    let out = ok(
        client
            .delete_objects()
            .bucket(&bucket)
            .delete(
                Delete::builder()
                    .set_objects(Some(objects.to_vec()))
                    .build()
                    .unwrap(),
            )
            .send()
            .await,
        "DeleteObjects",
    );
    let deleted: Vec<_> = out.deleted().iter().filter_map(|d| d.key()).collect();
    assert_eq!(deleted, ["free"]);
    let errors: Vec<_> = out
        .errors()
        .iter()
        .map(|e| (e.key().unwrap_or(""), e.code().unwrap_or("")))
        .collect();
    assert_eq!(errors, [("locked", "AccessDenied")]);
    assert_eq!(version_ids(&client, &bucket, "locked").await, [locked]);
    assert!(version_ids(&client, &bucket, "free").await.is_empty());
}

#[tokio::test]
async fn lifecycle_never_removes_a_locked_version() {
    let server = TestServer::start_with(ServerOptions {
        env: vec![("STRATA_LIFECYCLE_DAY_SECONDS".into(), "1".into())],
        ..ServerOptions::default()
    });
    let client = server.client();
    let bucket = locked_bucket(&client, "lock-lifecycle").await;
    let locked = put_retained(
        &client,
        &bucket,
        "k",
        ObjectLockMode::Governance,
        from_now(DAY),
    )
    .await;
    let unlocked = put_new_version(&client, &bucket, "k", b"second").await;
    let current = put_new_version(&client, &bucket, "k", b"third").await;
    let rule = LifecycleRule::builder()
        .id("old-versions")
        .status(ExpirationStatus::Enabled)
        .filter(LifecycleRuleFilter::builder().prefix("").build())
        .noncurrent_version_expiration(
            NoncurrentVersionExpiration::builder()
                .noncurrent_days(1)
                .build(),
        )
        .build()
        .unwrap();
    ok(
        client
            .put_bucket_lifecycle_configuration()
            .bucket(&bucket)
            .lifecycle_configuration(
                BucketLifecycleConfiguration::builder()
                    .rules(rule)
                    .build()
                    .unwrap(),
            )
            .send()
            .await,
        "PutBucketLifecycleConfiguration",
    );
    let deadline = Instant::now() + Duration::from_secs(15);
    while version_ids(&client, &bucket, "k").await.contains(&unlocked) {
        assert!(
            Instant::now() < deadline,
            "the unlocked noncurrent version was never removed"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Passes go on; the locked version stays through several of them.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        version_ids(&client, &bucket, "k").await,
        [current, locked],
        "newest first: the current version and the locked one"
    );
}

/// `STRATA_MAX_RETENTION_DAYS` caps every retention a request sets: by PUT headers,
/// CreateMultipartUpload, PutObjectRetention and a bucket's default retention.
#[tokio::test]
async fn retention_beyond_the_deployment_maximum_is_refused() {
    let server = TestServer::start_with(ServerOptions {
        env: vec![("STRATA_MAX_RETENTION_DAYS".into(), "30".into())],
        ..ServerOptions::default()
    });
    let client = server.client();
    let bucket = locked_bucket(&client, "max-retention").await;
    let too_long = retention(ObjectLockRetentionMode::Compliance, from_now(60 * DAY));
    let put = client
        .put_object()
        .bucket(&bucket)
        .key("ckpt")
        .object_lock_mode(ObjectLockMode::Compliance)
        .object_lock_retain_until_date(*too_long.retain_until_date().unwrap())
        .body(b"weights".to_vec().into())
        .send()
        .await;
    let err = put.expect_err("60 days is past the maximum");
    assert_eq!(code_of(&err).as_deref(), Some("InvalidArgument"), "{err:?}");
    let upload = client
        .create_multipart_upload()
        .bucket(&bucket)
        .key("ckpt")
        .object_lock_mode(ObjectLockMode::Compliance)
        .object_lock_retain_until_date(*too_long.retain_until_date().unwrap())
        .send()
        .await;
    let err = upload.expect_err("60 days is past the maximum");
    assert_eq!(code_of(&err).as_deref(), Some("InvalidArgument"));

    let version = put_retained(
        &client,
        &bucket,
        "ckpt",
        ObjectLockMode::Compliance,
        from_now(10 * DAY),
    )
    .await;
    let longer = client
        .put_object_retention()
        .bucket(&bucket)
        .key("ckpt")
        .version_id(&version)
        .retention(too_long)
        .send()
        .await;
    let err = longer.expect_err("60 days is past the maximum");
    assert_eq!(code_of(&err).as_deref(), Some("InvalidArgument"));

    let default = |days: i32| {
        ObjectLockConfiguration::builder()
            .object_lock_enabled(ObjectLockEnabled::Enabled)
            .rule(
                ObjectLockRule::builder()
                    .default_retention(
                        DefaultRetention::builder()
                            .mode(ObjectLockRetentionMode::Governance)
                            .days(days)
                            .build(),
                    )
                    .build(),
            )
            .build()
    };
    let refused = client
        .put_object_lock_configuration()
        .bucket(&bucket)
        .object_lock_configuration(default(31))
        .send()
        .await;
    let err = refused.expect_err("31 days is past the maximum");
    assert_eq!(code_of(&err).as_deref(), Some("InvalidArgument"));
    ok(
        client
            .put_object_lock_configuration()
            .bucket(&bucket)
            .object_lock_configuration(default(30))
            .send()
            .await,
        "30 days is within the maximum",
    );
}
