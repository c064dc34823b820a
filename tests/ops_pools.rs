//! Server pools on one node: a deployment of 9 drives grows by a second pool of 9 at a
//! restart; everything written before reads back, new keys spread over both pools, a key
//! stays in the pool that holds it, and a start that drops or reorders a pool is refused.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use aws_sdk_s3::primitives::DateTime;
use aws_sdk_s3::types::{
    BucketVersioningStatus, ObjectLockLegalHoldStatus, ObjectLockMode, ServerSideEncryption,
    VersioningConfiguration,
};
use aws_sdk_s3::Client;
use common::*;

const METRICS_TOKEN: &str = "pools-test-metrics-token";
const KMS_KEY: &str = "pools-test-key:AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=";

fn options(drives: &[PathBuf], pools: &[&[PathBuf]]) -> ServerOptions {
    let drive_args = match pools {
        [] => None,
        pools => Some(
            (pools.iter())
                .flat_map(|pool| {
                    let folders: Vec<String> =
                        pool.iter().map(|d| d.display().to_string()).collect();
                    ["--pool".to_string(), folders.join(" ")]
                })
                .collect(),
        ),
    };
    ServerOptions {
        drives: Some(drives.to_vec()),
        drive_args,
        env: vec![
            ("STRATA_KMS_SECRET_KEY".into(), KMS_KEY.into()),
            ("STRATA_METRICS_TOKEN".into(), METRICS_TOKEN.into()),
        ],
        ..Default::default()
    }
}

/// `options` with pool `pool` (from 0) given its own erasure geometry (`ec=` in its
/// `--pool`).
fn with_ec(mut options: ServerOptions, pool: usize, ec: &str) -> ServerOptions {
    let args = options.drive_args.as_mut().expect("pools given");
    let value = &mut args[2 * pool + 1];
    *value = format!("ec={ec} {value}");
    options
}

/// Object data folders on `drives`' first drive: one per object written out of line.
fn data_folders(drive: &Path) -> usize {
    let data = drive.join("data");
    let Ok(buckets) = std::fs::read_dir(&data) else {
        return 0;
    };
    let mut count = 0;
    for bucket in buckets.flatten() {
        for fan in std::fs::read_dir(bucket.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            count += std::fs::read_dir(fan.path()).into_iter().flatten().count();
        }
    }
    count
}

/// What the test wrote, by bucket and key: the newest bytes (`None`: a delete marker).
type Written = BTreeMap<(String, String), Option<Vec<u8>>>;

async fn fill_one_pool(client: &Client) -> (Written, String) {
    let mut written = Written::new();
    for bucket in ["plain", "versioned", "locked", "encrypted"] {
        let mut create = client.create_bucket().bucket(bucket);
        if bucket == "locked" {
            create = create.object_lock_enabled_for_bucket(true);
        }
        ok(create.send().await, bucket);
    }
    ok(
        client
            .put_bucket_versioning()
            .bucket("versioned")
            .versioning_configuration(
                VersioningConfiguration::builder()
                    .status(BucketVersioningStatus::Enabled)
                    .build(),
            )
            .send()
            .await,
        "versioning",
    );
    for i in 0..120 {
        let (key, data) = (format!("small/{i:03}"), payload(1 + i * 37, i as u64));
        put(client, "plain", &key, &data).await;
        written.insert(("plain".into(), key), Some(data));
    }
    for i in 0..6 {
        let (key, data) = (format!("large/{i}"), payload(300 * KIB + i, 100 + i as u64));
        put(client, "plain", &key, &data).await;
        written.insert(("plain".into(), key), Some(data));
    }
    let parts = [payload(5 * MIB, 7), payload(1234, 8)];
    multipart_put(client, "plain", "multipart", &[&parts[0], &parts[1]]).await;
    written.insert(("plain".into(), "multipart".into()), Some(parts.concat()));
    for i in 0..40 {
        let key = format!("v/{i:02}");
        put(client, "versioned", &key, &payload(100, 1)).await;
        let data = payload(200 + i, 2);
        put(client, "versioned", &key, &data).await;
        let newest = match i % 4 {
            0 => {
                ok(
                    client
                        .delete_object()
                        .bucket("versioned")
                        .key(&key)
                        .send()
                        .await,
                    "delete marker",
                );
                None
            }
            _ => Some(data),
        };
        written.insert(("versioned".into(), key), newest);
    }
    let until = DateTime::from_secs(time_now() + 86_400);
    for i in 0..10 {
        let (key, data) = (format!("held/{i}"), payload(5000, 300 + i as u64));
        ok(
            client
                .put_object()
                .bucket("locked")
                .key(&key)
                .object_lock_mode(ObjectLockMode::Governance)
                .object_lock_retain_until_date(until)
                .object_lock_legal_hold_status(ObjectLockLegalHoldStatus::On)
                .body(data.clone().into())
                .send()
                .await,
            "locked put",
        );
        written.insert(("locked".into(), key), Some(data));
    }
    for i in 0..24 {
        let (key, data) = (format!("sse/{i}"), payload(10 + i * 9000, 400 + i as u64));
        ok(
            client
                .put_object()
                .bucket("encrypted")
                .key(&key)
                .server_side_encryption(ServerSideEncryption::Aes256)
                .body(data.clone().into())
                .send()
                .await,
            "SSE-S3 put",
        );
        written.insert(("encrypted".into(), key), Some(data));
    }
    let upload = ok(
        client
            .create_multipart_upload()
            .bucket("plain")
            .key("unfinished")
            .send()
            .await,
        "an upload left open",
    );
    (written, upload.upload_id().unwrap().to_string())
}

fn time_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

async fn assert_all_read_back(client: &Client, written: &Written) {
    for ((bucket, key), newest) in written {
        match newest {
            Some(data) => assert_object(client, bucket, key, data).await,
            None => {
                let got = client.get_object().bucket(bucket).key(key).send().await;
                assert_s3_error(got, 404, "NoSuchKey", &format!("{bucket}/{key} deleted"));
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_pool_added_at_a_restart_serves_old_keys_and_takes_new_ones() {
    let (_tmp, drives) = TestServer::temp_drives(18);
    let (first, second) = drives.split_at(9);
    let server = TestServer::start_with(options(first, &[]));
    let client = server.client();
    let (mut written, upload_id) = fill_one_pool(&client).await;
    let part = payload(5 * MIB, 9);
    let uploaded = ok(
        client
            .upload_part()
            .bucket("plain")
            .key("unfinished")
            .upload_id(&upload_id)
            .part_number(1)
            .body(part.clone().into())
            .send()
            .await,
        "a part before the pool is added",
    );
    server.kill();

    let server = TestServer::start_with(options(&drives, &[first, second]));
    let client = server.client();
    assert_all_read_back(&client, &written).await;
    let versions = ok(
        client
            .list_object_versions()
            .bucket("versioned")
            .send()
            .await,
        "ListObjectVersions",
    );
    assert_eq!(
        versions.versions().len(),
        80,
        "two versions of each of 40 keys"
    );
    assert_eq!(versions.delete_markers().len(), 10);

    // Bucket settings change over both pools, and buckets come and go.
    ok(
        client
            .put_bucket_versioning()
            .bucket("plain")
            .versioning_configuration(
                VersioningConfiguration::builder()
                    .status(BucketVersioningStatus::Suspended)
                    .build(),
            )
            .send()
            .await,
        "versioning of an old bucket on two pools",
    );
    create_bucket(&client, "fresh").await;
    for i in 0..20 {
        put(&client, "fresh", &format!("k{i}"), b"x").await;
    }
    assert_s3_error(
        client.delete_bucket().bucket("fresh").send().await,
        409,
        "BucketNotEmpty",
        "a bucket with keys in either pool",
    );
    for i in 0..20 {
        ok(
            client
                .delete_object()
                .bucket("fresh")
                .key(format!("k{i}"))
                .send()
                .await,
            "delete",
        );
    }
    ok(
        client.delete_bucket().bucket("fresh").send().await,
        "delete bucket",
    );

    // New keys, written out of line, land in both pools; overwrites of old keys stay in
    // the first pool, so the second holds only new keys.
    assert_eq!(data_folders(&second[0]), 0);
    let before_first = data_folders(&first[0]);
    let mut expected: Vec<String> = written
        .keys()
        .filter(|(bucket, _)| bucket == "plain")
        .map(|(_, key)| key.clone())
        .collect();
    for i in 0..6 {
        let (key, data) = (format!("large/{i}"), payload(200 * KIB, 900 + i as u64));
        put(&client, "plain", &key, &data).await;
        written.insert(("plain".into(), key), Some(data));
    }
    assert_eq!(
        data_folders(&second[0]),
        0,
        "an overwrite went to another pool"
    );
    for i in 0..60 {
        let key = format!("new/{i:02}");
        put(&client, "plain", &key, &payload(130 * KIB, 1000 + i as u64)).await;
        expected.push(key);
    }
    let (in_first, in_second) = (
        data_folders(&first[0]) - before_first,
        data_folders(&second[0]),
    );
    assert_eq!(in_first + in_second, 60, "each new key has one data folder");
    assert!(
        in_first >= 10 && in_second >= 10,
        "new keys spread over both pools of equal free space: {in_first} and {in_second}"
    );
    for i in 0..60 {
        let key = format!("new/{i:02}");
        assert_object(&client, "plain", &key, &payload(130 * KIB, 1000 + i as u64)).await;
    }

    // The upload begun on one pool finishes on two, where it was begun.
    let second_part = payload(777, 10);
    let two = ok(
        client
            .upload_part()
            .bucket("plain")
            .key("unfinished")
            .upload_id(&upload_id)
            .part_number(2)
            .body(second_part.clone().into())
            .send()
            .await,
        "a part after the pool is added",
    );
    use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
    let parts = [(1, uploaded.e_tag().unwrap()), (2, two.e_tag().unwrap())];
    ok(
        client
            .complete_multipart_upload()
            .bucket("plain")
            .key("unfinished")
            .upload_id(&upload_id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(
                        (parts.iter())
                            .map(|(n, etag)| {
                                CompletedPart::builder()
                                    .part_number(*n)
                                    .e_tag(*etag)
                                    .build()
                            })
                            .collect(),
                    ))
                    .build(),
            )
            .send()
            .await,
        "complete",
    );
    let finished = [part, second_part].concat();
    assert_object(&client, "plain", "unfinished", &finished).await;
    expected.push("unfinished".into());

    // Listings merge both pools, in order, across pages, each key once.
    expected.sort();
    let mut listed = Vec::new();
    let mut token = None;
    loop {
        let page = ok(
            client
                .list_objects_v2()
                .bucket("plain")
                .max_keys(17)
                .set_continuation_token(token)
                .send()
                .await,
            "list",
        );
        listed.extend(page.contents().iter().map(|o| o.key().unwrap().to_string()));
        match page.next_continuation_token() {
            Some(next) => token = Some(next.to_string()),
            None => break,
        }
    }
    assert_eq!(listed, expected);

    // A delete in the second pool and a new version of a versioned key are where they were.
    ok(
        client
            .delete_object()
            .bucket("plain")
            .key("new/00")
            .send()
            .await,
        "delete",
    );
    assert_s3_error(
        client
            .get_object()
            .bucket("plain")
            .key("new/00")
            .send()
            .await,
        404,
        "NoSuchKey",
        "deleted",
    );
    let newest = payload(321, 77);
    put(&client, "versioned", "v/00", &newest).await;
    written.insert(("versioned".into(), "v/00".into()), Some(newest.clone()));
    let versions = ok(
        client
            .list_object_versions()
            .bucket("versioned")
            .prefix("v/00")
            .send()
            .await,
        "versions of one key",
    );
    assert_eq!(
        versions.versions().len(),
        3,
        "the new version joins its key's history"
    );
    assert_object(&client, "versioned", "v/00", &newest).await;
    server.kill();

    // The pools stay as recorded: one dropped, or given in another order, is refused.
    let dropped = TestServer::try_start(options(first, &[first]));
    let refused = expect_refused(dropped, "a start without the second pool");
    assert!(refused.contains("cannot be dropped"), "{refused}");
    let swapped = TestServer::try_start(options(&drives, &[second, first]));
    let refused = expect_refused(swapped, "a start with the pools swapped");
    assert!(refused.contains("original order"), "{refused}");
    let plain = TestServer::try_start(options(first, &[]));
    expect_refused(plain, "a start of the first pool's drives alone");
    // A pool keeps the geometry its drives were formatted with.
    let recoded = with_ec(options(&drives, &[first, second]), 1, "5+4");
    let refused = expect_refused(TestServer::try_start(recoded), "another geometry");
    assert!(
        refused.contains("formatted for 1 set(s) of 6+3") && refused.contains("5+4"),
        "{refused}"
    );

    // And everything still reads after a restart as recorded, which shows both pools.
    let server = TestServer::start_with(options(&drives, &[first, second]));
    let client = server.client();
    let listed = strata_admin(&server, &["pool", "list"]);
    let table = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.status.success(), "{table}");
    let rows: Vec<&str> = table.lines().skip(1).collect();
    assert_eq!(rows.len(), 2, "{table}");
    assert!(
        rows[0].starts_with("1 ") && rows[0].contains("active"),
        "{table}"
    );
    assert!(
        rows[1].starts_with("2 ") && rows[1].contains("active"),
        "{table}"
    );
    let authorization = [(
        "authorization".to_string(),
        format!("Bearer {METRICS_TOKEN}"),
    )];
    let metrics = raw_send("GET", &server.url("/metrics"), &authorization, Vec::new()).await;
    for pool in ["1", "2"] {
        let series = format!("strata_pool_free_bytes{{pool=\"{pool}\",state=\"active\"}}");
        assert!(
            metrics.text().contains(&series),
            "{series} in {}",
            metrics.text()
        );
    }
    assert_object(&client, "plain", "unfinished", &finished).await;
    assert_object(&client, "plain", "new/59", &payload(130 * KIB, 1059)).await;
    assert_all_read_back(&client, &written).await;
}

fn expect_refused(result: Result<TestServer, StartFailure>, what: &str) -> String {
    match result {
        Ok(server) => {
            let log = server.log();
            server.kill();
            panic!("{what}: the server started but must refuse; output:\n{log}");
        }
        Err(failure) => {
            assert!(failure.exited_nonzero(), "{what}: {:?}", failure.status);
            failure.output
        }
    }
}

/// `strata admin pool decommission status 1 --json`, parsed.
fn drain_status(server: &TestServer) -> serde_json::Value {
    let out = strata_admin(server, &["pool", "decommission", "status", "1", "--json"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn wait_for(what: &str, server: &TestServer, done: impl Fn(&serde_json::Value) -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    loop {
        let status = drain_status(server);
        if done(&status) {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{what}: {status}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_is_drained_while_it_serves_resumes_after_a_kill_and_is_dropped() {
    // The second pool is coded 4+2: every key is coded anew as it moves.
    let (_tmp, drives) = TestServer::temp_drives(15);
    let (first, second) = drives.split_at(9);
    let server = TestServer::start_with(options(first, &[]));
    let (mut written, upload_id) = fill_one_pool(&server.client()).await;
    server.kill();

    // A slow drain first, so that the kill comes in the middle of it.
    let mut slow = with_ec(options(&drives, &[first, second]), 1, "4+2");
    slow.env
        .push(("STRATA_DECOMMISSION_DUTY".into(), "0.02".into()));
    let server = TestServer::start_with(slow);
    let client = server.client();
    let refused = strata_admin(&server, &["pool", "decommission", "start", "3"]);
    assert!(!refused.status.success(), "there is no pool 3");
    let started = strata_admin(&server, &["pool", "decommission", "start", "1"]);
    let said = String::from_utf8_lossy(&started.stdout);
    assert!(
        started.status.success() && said.contains("decommissioning"),
        "{said}"
    );
    let again = strata_admin(&server, &["pool", "decommission", "start", "1"]);
    assert!(!again.status.success(), "a pool is drained once at a time");
    let (started, said) = rebalance(&server, &["start"]);
    assert!(
        !started && said.contains("being decommissioned"),
        "no rebalance during a drain: {said}"
    );
    // Clients are served meanwhile: overwrites and new keys, read back at once.
    for i in 0..30 {
        let (key, data) = (format!("small/{i:03}"), payload(77 + i, 5000 + i as u64));
        put(&client, "plain", &key, &data).await;
        assert_object(&client, "plain", &key, &data).await;
        written.insert(("plain".into(), key), Some(data));
    }
    wait_for("a few keys moved", &server, |s| {
        s["decommission"]["keys_moved"].as_u64() > Some(5)
    });
    server.kill();

    let mut fast = with_ec(options(&drives, &[first, second]), 1, "4+2");
    fast.env
        .push(("STRATA_DECOMMISSION_DUTY".into(), "1".into()));
    let server = TestServer::start_with(fast);
    let client = server.client();
    // The drain goes on by itself after the restart, and waits for the open upload.
    wait_for("the upload waited for", &server, |s| {
        s["state"] == "decommissioning"
            && s["decommission"]["open_uploads"] == 1
            && s["decommission"]["keys_left"] == 0
    });
    let human = strata_admin(&server, &["pool", "decommission", "status", "1"]);
    let line = String::from_utf8_lossy(&human.stdout);
    assert!(
        line.contains("waiting for 1 multipart uploads to end"),
        "{line}"
    );
    assert!(line.contains("100%"), "{line}");
    let part = payload(5 * MIB, 11);
    let uploaded = ok(
        client
            .upload_part()
            .bucket("plain")
            .key("unfinished")
            .upload_id(&upload_id)
            .part_number(1)
            .body(part.clone().into())
            .send()
            .await,
        "a part of an upload begun in the drained pool",
    );
    use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
    let done = CompletedPart::builder()
        .part_number(1)
        .e_tag(uploaded.e_tag().unwrap())
        .build();
    ok(
        client
            .complete_multipart_upload()
            .bucket("plain")
            .key("unfinished")
            .upload_id(&upload_id)
            .multipart_upload(CompletedMultipartUpload::builder().parts(done).build())
            .send()
            .await,
        "complete",
    );
    written.insert(("plain".into(), "unfinished".into()), Some(part));
    wait_for("the pool retired", &server, |s| s["state"] == "retired");
    assert_all_read_back(&client, &written).await;
    let versions = ok(
        client
            .list_object_versions()
            .bucket("versioned")
            .send()
            .await,
        "ListObjectVersions",
    );
    assert_eq!(versions.versions().len(), 80);
    assert_eq!(versions.delete_markers().len(), 10);
    assert_eq!(data_folders(&first[0]), 0, "the drained pool keeps no data");
    let authorization = [(
        "authorization".to_string(),
        format!("Bearer {METRICS_TOKEN}"),
    )];
    let metrics = raw_send("GET", &server.url("/metrics"), &authorization, Vec::new()).await;
    assert!(
        metrics
            .text()
            .contains(r#"strata_pool_total_bytes{pool="1",state="retired"}"#),
        "{}",
        metrics.text()
    );
    server.kill();

    // The retired pool leaves the command line; everything reads from the other.
    let server = TestServer::start_with(with_ec(options(second, &[second]), 0, "4+2"));
    let client = server.client();
    assert_all_read_back(&client, &written).await;
    let (started, said) = rebalance(&server, &["start"]);
    assert!(
        !started && said.contains("two active pools"),
        "one pool: {said}"
    );
    let listed = strata_admin(&server, &["pool", "list"]);
    let table = String::from_utf8_lossy(&listed.stdout);
    assert_eq!(table.lines().count(), 2, "one pool: {table}");
    put(&client, "plain", "after", b"written after the drop").await;
    server.kill();
    let old_alone = TestServer::try_start(options(first, &[first]));
    let refused = expect_refused(old_alone, "the retired pool alone");
    assert!(refused.contains("must be given"), "{refused}");
}

/// `strata admin pool rebalance ARGS`, its output parsed when `--json` is among them.
fn rebalance(server: &TestServer, args: &[&str]) -> (bool, String) {
    let args: Vec<&str> = ["pool", "rebalance"].iter().chain(args).copied().collect();
    let out = strata_admin(server, &args);
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

fn rebalance_status(server: &TestServer) -> serde_json::Value {
    let (done, text) = rebalance(server, &["status", "--json"]);
    assert!(done, "{text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn wait_for_rebalance(what: &str, server: &TestServer, done: impl Fn(&serde_json::Value) -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    loop {
        let status = rebalance_status(server);
        if done(&status) {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{what}: {status}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// Each pool's bytes of data, as the status's last count gives them.
fn pool_bytes(status: &serde_json::Value) -> Vec<u64> {
    (status["pools"].as_array().unwrap().iter())
        .map(|pool| pool["usage"]["bytes"].as_u64().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebalance_evens_a_new_pool_keeps_the_newest_bytes_stops_and_resumes() {
    let (_tmp, drives) = TestServer::temp_drives(18);
    let (first, second) = drives.split_at(9);
    let server = TestServer::start_with(options(first, &[]));
    let client = server.client();
    let mut written = Written::new();
    ok(client.create_bucket().bucket("data").send().await, "bucket");
    for i in 0..90 {
        let (key, data) = (
            format!("shard/{i:03}"),
            payload(130 * KIB + i * 500, i as u64),
        );
        put(&client, "data", &key, &data).await;
        written.insert(("data".into(), key), Some(data));
    }
    server.kill();

    let mut slow = options(&drives, &[first, second]);
    slow.env
        .push(("STRATA_DECOMMISSION_DUTY".into(), "0.05".into()));
    let server = TestServer::start_with(slow.clone());
    let client = server.client();
    let before = rebalance_status(&server);
    assert_eq!(before["state"], "none", "{before}");
    let bytes = pool_bytes(&before);
    assert!(
        bytes[0] > 90 * 130 * KIB as u64 && bytes[1] == 0,
        "{before}"
    );

    // Started, then stopped: what moved stays, and nothing more moves.
    let (started, said) = rebalance(&server, &["start"]);
    assert!(started && said.contains("rebalance running"), "{said}");
    let (again, said) = rebalance(&server, &["start"]);
    assert!(!again && said.contains("running already"), "{said}");
    let drain = strata_admin(&server, &["pool", "decommission", "start", "1"]);
    assert!(
        !drain.status.success(),
        "a decommission waits for the rebalance"
    );
    wait_for_rebalance("a few keys moved", &server, |s| {
        s["keys_moved"].as_u64() > Some(3)
    });
    let (stopped, said) = rebalance(&server, &["stop"]);
    assert!(stopped && said.contains("rebalance stopped"), "{said}");
    std::thread::sleep(std::time::Duration::from_secs(1));
    let moved = rebalance_status(&server)["keys_moved"].clone();
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert_eq!(
        rebalance_status(&server)["keys_moved"],
        moved,
        "moves after the stop"
    );
    assert_all_read_back(&client, &written).await;

    // Started again with a writer overwriting keys as they move, then killed mid-way.
    let (started, said) = rebalance(&server, &["start"]);
    assert!(started, "{said}");
    let writer = {
        let client = client.clone();
        tokio::spawn(async move {
            let mut last = Written::new();
            for round in 0..6u64 {
                for i in (0..90).step_by(9) {
                    let key = format!("shard/{i:03}");
                    let data = payload(140 * KIB, 1000 * round + i as u64);
                    put(&client, "data", &key, &data).await;
                    last.insert(("data".into(), key), Some(data));
                }
            }
            last
        })
    };
    wait_for_rebalance("more keys moved", &server, |s| {
        s["keys_moved"].as_u64() > Some(5)
    });
    written.extend(writer.await.unwrap());
    assert_all_read_back(&client, &written).await;
    server.kill();

    // The rebalance goes on by itself after the restart, until the pools are even.
    let mut fast = slow;
    fast.env
        .retain(|(name, _)| name != "STRATA_DECOMMISSION_DUTY");
    let server = TestServer::start_with(fast.clone());
    let client = server.client();
    wait_for_rebalance("the rebalance completed", &server, |s| {
        s["state"] == "completed"
    });
    let (_, human) = rebalance(&server, &["status"]);
    assert!(human.contains("rebalance completed"), "{human}");
    server.kill();
    // Counted afresh at the next start.
    fast.env.push(("STRATA_USAGE_SCAN_SECS".into(), "1".into()));
    let server = TestServer::start_with(fast);
    let client_after = server.client();
    let after = rebalance_status(&server);
    assert_eq!(after["state"], "completed", "{after}");
    let bytes = pool_bytes(&after);
    let (low, high) = (bytes[0].min(bytes[1]), bytes[0].max(bytes[1]));
    assert!(
        (high - low) as f64 <= 0.1 * high as f64,
        "used bytes within 10 % of each other: {after}"
    );
    let folders = (data_folders(&first[0]), data_folders(&second[0]));
    assert!(
        folders.0 > 20 && folders.1 > 20,
        "data folders in each pool: {folders:?}"
    );
    drop(client);
    assert_all_read_back(&client_after, &written).await;
    let listed = ok(
        client_after.list_objects_v2().bucket("data").send().await,
        "ListObjectsV2",
    );
    assert_eq!(listed.contents().len(), 90, "each key once");
    // The usage scanner counts each pool's keys: together, every key once.
    let authorization = [(
        "authorization".to_string(),
        format!("Bearer {METRICS_TOKEN}"),
    )];
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let counts = loop {
        let metrics = raw_send("GET", &server.url("/metrics"), &authorization, Vec::new()).await;
        // By pool: the exposition's order of a family's series is not the pools'.
        let text = metrics.text();
        let counts: Vec<u64> = (1..=2)
            .filter_map(|pool| {
                let series = format!("strata_pool_objects{{pool=\"{pool}\"");
                let line = text.lines().find(|l| l.starts_with(&series))?;
                line.rsplit(' ').next()?.parse().ok()
            })
            .collect();
        if counts.len() == 2 || std::time::Instant::now() > deadline {
            break counts;
        }
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    };
    assert!(
        counts.len() == 2 && counts.iter().sum::<u64>() == 90 && counts.iter().all(|&n| n > 20),
        "{counts:?}"
    );
    let table = strata_admin(&server, &["pool", "list"]);
    let table = String::from_utf8_lossy(&table.stdout);
    let objects: Vec<u64> = (table.lines().skip(1))
        .map(|line| line.split_whitespace().nth(4).unwrap().parse().unwrap())
        .collect();
    assert_eq!(objects, counts, "{table}");
    server.kill();
}
