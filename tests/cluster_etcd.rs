//! Several nodes with their control plane in etcd: three `strata` processes on loopback
//! (three drive folders each, one 6+3 set) and a one-member etcd started by the harness.
//! The layout is checked against etcd before any drive is touched; nodes register on leases
//! and elect one owner per once-per-cluster job; a user changed on one node is in force on
//! the others at once; with etcd away, data flows and settings answer 503; bucket records,
//! users and policies are decided in etcd, which takes them from the drives when it has none.

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

const EC: &str = "6+3";

/// `strata admin info --json` through `node`.
fn info(node: &TestServer) -> Value {
    let output = strata_admin(node, &["info", "--json"]);
    assert!(output.status.success(), "{output:?}");
    serde_json::from_slice(&output.stdout).expect("info is JSON")
}

/// Each node's state in `info`, by node.
fn node_states(info: &Value) -> Vec<(String, String)> {
    let nodes = info["cluster"]["nodes"]
        .as_array()
        .expect("a cluster section");
    (nodes.iter())
        .map(|n| {
            let field = |name: &str| n[name].as_str().unwrap_or_default().to_string();
            (field("node"), field("state"))
        })
        .collect()
}

/// The node running `job`, as `info` says.
fn holder(info: &Value, job: &str) -> Option<String> {
    let elected = info["cluster"]["elected"].as_array()?;
    (elected.iter())
        .find(|pair| pair[0] == job)
        .and_then(|pair| pair[1].as_str().map(str::to_string))
}

/// Polls `check` every 200 ms until it holds; fails after `limit` with `what`.
async fn eventually(limit: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !check() {
        assert!(Instant::now() < deadline, "not within {limit:?}: {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn probe(node: &TestServer, path: &str) -> (u16, String) {
    let response = reqwest::get(node.url(path)).await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

fn node_name(node: &TestServer) -> String {
    node.endpoint().trim_start_matches("http://").to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_register_and_each_job_runs_on_one_elected_node() {
    let etcd = EtcdServer::start();
    let cluster = Cluster::start_with_etcd(3, 3, EC, &etcd);
    let names: Vec<String> = cluster.nodes.iter().map(node_name).collect();

    let mut seen = Value::Null;
    eventually(
        Duration::from_secs(20),
        "every node up, both jobs held",
        || {
            seen = info(&cluster.nodes[0]);
            node_states(&seen).iter().all(|(_, state)| state == "up")
                && holder(&seen, "lifecycle").is_some()
                && holder(&seen, "stale-upload-cleaner").is_some()
                && holder(&seen, "scrubber").is_some()
        },
    )
    .await;
    let states: Vec<String> = node_states(&seen).into_iter().map(|(n, _)| n).collect();
    assert_eq!(states, names, "info lists the layout's nodes in order");
    // Each node lists its control plane's loops among its jobs, and a liveness job for each
    // other node; the records come to be decided in etcd.
    for node in &cluster.nodes {
        let jobs_of = || -> Vec<Value> {
            let output = strata_admin(node, &["jobs", "--json"]);
            serde_json::from_slice(&output.stdout).unwrap()
        };
        let adopted = |jobs: &[Value]| {
            (jobs.iter()).any(|job| {
                job["name"] == "etcd-records-adoption"
                    && job["last_outcome"] == "etcd decides the records"
            })
        };
        let mut jobs = jobs_of();
        eventually(Duration::from_secs(10), "the records adopted", || {
            jobs = jobs_of();
            adopted(&jobs)
        })
        .await;
        let named = |name: &str| jobs.iter().find(|job| job["name"] == name);
        for name in [
            "etcd-lease-renewal",
            "election-lapse-check",
            "etcd-records-adoption",
            "etcd-change-watch",
            "identity-reload",
        ] {
            assert!(named(name).is_some(), "{name} is not listed: {jobs:?}");
        }
        let pinged = (jobs.iter())
            .filter(|job| job["name"].as_str().unwrap().ends_with("/peer-liveness"))
            .count();
        assert_eq!(pinged, cluster.nodes.len() - 1, "{jobs:?}");
    }
    // Every node sees the same owners.
    let owner = holder(&seen, "lifecycle").unwrap();
    assert!(names.contains(&owner));
    for node in &cluster.nodes[1..] {
        assert_eq!(holder(&info(node), "lifecycle").as_deref(), Some(&*owner));
    }

    // The owner dies: within the lease's TTL it is down and another node runs the job.
    let index = names.iter().position(|n| *n == owner).unwrap();
    cluster.nodes[index].kill();
    let witness = &cluster.nodes[(index + 1) % 3];
    eventually(
        Duration::from_secs(30),
        "the job moves to a live node",
        || {
            seen = info(witness);
            let states = node_states(&seen);
            states[index].1 == "down"
                && holder(&seen, "lifecycle").is_some_and(|h| h != owner && names.contains(&h))
        },
    )
    .await;
    let table = strata_admin(witness, &["info"]);
    let table = String::from_utf8_lossy(&table.stdout).into_owned();
    let row = table.lines().find(|l| l.trim_start().starts_with(&owner));
    let row = row.unwrap_or_else(|| panic!("no row for {owner}:\n{table}"));
    assert!(row.contains("down"), "{table}");
    assert!(table.contains("lifecycle runs on"), "{table}");
}

/// When this node's log says it started or stopped holding `job` (`held`): the line's
/// timestamp (RFC 3339, UTC, fixed width, so timestamps compare as text).
fn election_logged(node: &TestServer, job: &str, held: bool) -> Option<String> {
    let wanted = format!("election job=\"{job}\" held={held}");
    (node.run_log().lines())
        .find(|line| line.contains(&wanted))
        .and_then(|line| line.split_whitespace().next().map(str::to_string))
}

/// A node that etcd stops answering gives its jobs up before its lease can lapse, so no two
/// nodes hold a job at once: the renewal hangs on the silent etcd for its timeout, and the
/// jobs went only after it returned, a second past the lease (the next holder had it by
/// then).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_etcd_stops_answering_gives_its_jobs_up_before_another_takes_them() {
    let etcd = EtcdServer::start();
    let (cluster, network) = Cluster::start_partitionable(3, 3, EC, Some(&etcd));
    let names: Vec<String> = cluster.nodes.iter().map(node_name).collect();
    let mut owner = None;
    eventually(Duration::from_secs(20), "the lifecycle job held", || {
        owner = holder(&info(&cluster.nodes[0]), "lifecycle");
        owner.is_some()
    })
    .await;
    let owner = names
        .iter()
        .position(|n| Some(n) == owner.as_ref())
        .unwrap();

    network.cut_from_etcd(owner);
    let mut taken = None;
    eventually(
        Duration::from_secs(40),
        "another node takes the job",
        || {
            taken = (0..3)
                .filter(|&i| i != owner)
                .find_map(|i| election_logged(&cluster.nodes[i], "lifecycle", true));
            taken.is_some()
        },
    )
    .await;
    let given_up = election_logged(&cluster.nodes[owner], "lifecycle", false)
        .expect("the cut-off node gave the job up");
    assert!(
        given_up < taken.clone().unwrap(),
        "the cut-off node held the job until {given_up}, after another took it at {taken:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_changed_on_one_node_is_in_force_on_the_others_at_once() {
    let etcd = EtcdServer::start();
    let cluster = Cluster::start_with_etcd(3, 3, EC, &etcd);
    // Users are read again from the drives only every 30 s: the watch must carry the change.
    let added = strata_admin(
        &cluster.nodes[0],
        &["user", "add", "bob", "--secret", "bob-secret-123"],
    );
    assert!(added.status.success(), "{added:?}");
    // Known but allowed nothing: AccessDenied, no longer InvalidAccessKeyId.
    answers_within(&cluster.nodes[1], "AccessDenied").await;

    let removed = strata_admin(&cluster.nodes[0], &["user", "remove", "bob"]);
    assert!(removed.status.success(), "{removed:?}");
    answers_within(&cluster.nodes[2], "InvalidAccessKeyId").await;
}

/// Waits up to 2 s for `node` to answer bob's ListBuckets with the error `code`.
async fn answers_within(node: &TestServer, code: &str) {
    let bob = node.client_with("bob", "bob-secret-123");
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let error = bob
            .list_buckets()
            .send()
            .await
            .expect_err("bob holds no policy");
        let now = error.into_service_error().meta().code().map(str::to_string);
        if now.as_deref() == Some(code) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{} still answers {now:?}",
            node.endpoint()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_node_started_with_another_layout_is_refused_before_touching_its_drives() {
    let etcd = EtcdServer::start();
    let (_root, ports, drives, layout) = Cluster::plan(3, 3);
    let mut first = node_options(ports[0], &drives[0], &layout, EC);
    first.extra_args = vec!["--etcd".into(), etcd.endpoint()];
    let _first = TestServer::start_with(first);

    let mut other = node_options(ports[1], &drives[1], &layout, "5+4");
    other.extra_args = vec!["--etcd".into(), etcd.endpoint()];
    let refused = TestServer::try_start(other)
        .err()
        .expect("a node with another layout is refused");
    assert!(refused.exited_nonzero());
    assert!(
        refused.output.contains("do not match the cluster's layout")
            && refused
                .output
                .contains("erasure coding 5+4 here, 6+3 in the cluster"),
        "the refusal says what differs: {}",
        refused.output
    );
    for drive in &drives[1] {
        assert!(
            std::fs::read_dir(drive).unwrap().next().is_none(),
            "{} was touched",
            drive.display()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_etcd_away_data_flows_and_settings_wait() {
    let etcd = EtcdServer::start();
    let cluster = Cluster::start_with_etcd(3, 3, EC, &etcd);
    let (first, second) = (cluster.nodes[0].client(), cluster.nodes[1].client());
    create_bucket(&first, "kept").await;
    put(&first, "kept", "before", b"written with etcd up").await;

    etcd.stop();
    // Once the lease can no longer be vouched for, the node says it is not ready, while the
    // cluster as a whole still takes writes.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, body) = probe(&cluster.nodes[0], "/health/ready").await;
        if status == 503 && body.contains("etcd") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still ready without etcd: {body}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(probe(&cluster.nodes[0], "/health/cluster").await.0, 200);

    // Objects of existing buckets: written and read as before, through any node.
    put(&second, "kept", "during", b"written with etcd away").await;
    assert_object(&first, "kept", "during", b"written with etcd away").await;
    assert_object(&second, "kept", "before", b"written with etcd up").await;
    // Settings cannot change: the other nodes could not hear of it.
    let refused = first.create_bucket().bucket("new").send().await;
    let refused = refused.expect_err("no bucket is made with etcd away");
    assert_eq!(
        refused.into_service_error().meta().code(),
        Some("ServiceUnavailable")
    );
    let versioning = aws_sdk_s3::types::VersioningConfiguration::builder()
        .status(aws_sdk_s3::types::BucketVersioningStatus::Enabled)
        .build();
    let refused = (first.put_bucket_versioning())
        .bucket("kept")
        .versioning_configuration(versioning)
        .send()
        .await;
    assert_eq!(
        refused
            .expect_err("no settings change")
            .into_service_error()
            .meta()
            .code(),
        Some("ServiceUnavailable")
    );

    // etcd back: ready again, and settings change again.
    etcd.restart();
    let deadline = Instant::now() + Duration::from_secs(20);
    while probe(&cluster.nodes[0], "/health/ready").await.0 != 200 {
        assert!(
            Instant::now() < deadline,
            "not ready again after etcd came back"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    create_bucket(&first, "new").await;
    let listed = second.list_buckets().send().await.unwrap();
    let names: Vec<_> = listed.buckets().iter().filter_map(|b| b.name()).collect();
    assert_eq!(names, ["kept", "new"]);
    assert_object(&second, "kept", "during", b"written with etcd away").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bucket_changed_on_one_node_is_in_force_on_the_others_at_once() {
    let etcd = EtcdServer::start();
    let cluster = Cluster::start_with_etcd(3, 3, EC, &etcd);
    let (first, second) = (cluster.nodes[0].client(), cluster.nodes[1].client());
    create_bucket(&first, "settings").await;
    create_bucket(&first, "doomed").await;
    // The heal passes every node runs at start forget what they agreed on when they end:
    // let them end, so that only a notice can make node 2 read the records again.
    tokio::time::sleep(Duration::from_secs(3)).await;
    // Node 2 serves both buckets, and so holds their records in its cache (trusted for 5 s
    // without a notice).
    put(&second, "settings", "warm", b"x").await;
    second.head_bucket().bucket("doomed").send().await.unwrap();

    let versioning = aws_sdk_s3::types::VersioningConfiguration::builder()
        .status(aws_sdk_s3::types::BucketVersioningStatus::Enabled)
        .build();
    (first.put_bucket_versioning())
        .bucket("settings")
        .versioning_configuration(versioning)
        .send()
        .await
        .unwrap();
    first.delete_bucket().bucket("doomed").send().await.unwrap();

    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let written = (second.put_object())
            .bucket("settings")
            .key("versioned")
            .body(b"y".to_vec().into())
            .send()
            .await
            .unwrap();
        if written.version_id().is_some_and(|v| v != "null") {
            break;
        }
        assert!(Instant::now() < deadline, "node 2 still writes unversioned");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    while second.head_bucket().bucket("doomed").send().await.is_ok() {
        assert!(
            Instant::now() < deadline,
            "node 2 still serves the deleted bucket"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_one_etcd_member_of_three_changes_nothing() {
    let etcd = EtcdServer::start_members(3);
    let cluster = Cluster::start_with_etcd(3, 3, EC, &etcd);
    let first = cluster.nodes[0].client();
    create_bucket(&first, "steady").await;

    // The member every node asks first goes: calls move to the next one, the watches too.
    etcd.stop_member(0);
    let added = strata_admin(
        &cluster.nodes[0],
        &["user", "add", "bob", "--secret", "bob-secret-123"],
    );
    assert!(added.status.success(), "{added:?}");
    answers_within(&cluster.nodes[1], "AccessDenied").await;
    create_bucket(&first, "during").await;
    // Leases are renewed on the others in time: no node ever says it is not ready.
    let deadline = Instant::now() + Duration::from_secs(12);
    while Instant::now() < deadline {
        for node in &cluster.nodes {
            let (status, body) = probe(node, "/health/ready").await;
            assert_eq!(status, 200, "{}: {body}", node.endpoint());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let listed = cluster.nodes[2]
        .client()
        .list_buckets()
        .send()
        .await
        .unwrap();
    let names: Vec<_> = listed.buckets().iter().filter_map(|b| b.name()).collect();
    assert_eq!(names, ["during", "steady"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_made_and_disabled_on_one_node_are_in_force_on_the_others() {
    let etcd = EtcdServer::start();
    let key = "cluster-test-key:AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=";
    let cluster =
        Cluster::start_with_etcd_and_env(3, 3, EC, &etcd, &[("STRATA_KMS_SECRET_KEY", key)]);
    let nodes = cluster.nodes.as_slice();
    create_bucket(&nodes[0].client(), "sealed").await;
    // A key unknown here is looked up in the catalog again; a key disabled elsewhere is
    // not, and the catalog is read again only every 30 s: the notice must carry that.
    // Each node opens its key service once the cluster can answer for the catalog.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let made = strata_admin(&nodes[0], &["kms", "key", "create", "datasets"]);
        if made.status.success() {
            break;
        }
        assert!(Instant::now() < deadline, "{made:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let second = nodes[1].client();
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let put = (second.put_object())
            .bucket("sealed")
            .key("obj")
            .server_side_encryption(aws_sdk_s3::types::ServerSideEncryption::AwsKms)
            .ssekms_key_id("datasets")
            .body(b"under the new key".to_vec().into())
            .send()
            .await;
        match put {
            Ok(_) => break,
            Err(e) => {
                let code = e.into_service_error().meta().code().map(str::to_string);
                assert!(
                    Instant::now() < deadline,
                    "node 2 still refuses the key: {code:?}"
                );
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_object(&nodes[2].client(), "sealed", "obj", b"under the new key").await;

    let disabled = strata_admin(&nodes[0], &["kms", "key", "disable", "datasets"]);
    assert!(disabled.status.success(), "{disabled:?}");
    let third = nodes[2].client();
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let read = third.get_object().bucket("sealed").key("obj").send().await;
        if read.is_err() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "node 3 still opens data keys of a disabled key"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A record value as etcd holds it, without its seal (3 bytes of marker, a 32-byte tag):
/// the bytes the drives hold.
fn unsealed(stored: &[u8]) -> &[u8] {
    assert!(stored.starts_with(b"\xffS1"), "a sealed record");
    &stored[35..]
}

/// A bucket record as etcd holds it: the bytes the drives hold too (a format version byte,
/// then MessagePack), sealed.
async fn bucket_in_etcd(etcd: &EtcdServer, name: &str) -> Option<Value> {
    let value = etcd.get(&format!("/strata/records/buckets/{name}")).await?;
    Some(rmp_serde::from_slice(&unsealed(&value)[1..]).expect("a bucket record"))
}

/// Whoever can write to etcd without the cluster secret cannot make a node believe a record:
/// a bucket record copied under another name is no bucket, a record without the seal (a
/// value from before records were sealed, or forged) is replaced by the drives' copy, and a
/// public policy forged into a bucket's record is not obeyed. Before, etcd's word was taken
/// as it stood: the copy answered as a bucket, the policy made the bucket public.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_written_to_etcd_without_the_secret_is_not_believed() {
    let etcd = EtcdServer::start();
    let cluster = Cluster::start_with_etcd(3, 3, EC, &etcd);
    let client = cluster.nodes[0].client();
    create_bucket(&client, "real").await;
    put(&client, "real", "k", b"kept").await;
    let sealed = etcd.get("/strata/records/buckets/real").await.unwrap();

    // The real bucket's record, copied under another name.
    etcd.put("/strata/records/buckets/forged", &sealed).await;
    let forged = cluster.nodes[1]
        .client()
        .head_bucket()
        .bucket("forged")
        .send()
        .await;
    assert_s3_status(forged, 404, "a bucket record moved to another name");

    // The record without its seal, as before records were sealed (or a forger's): the drives'
    // copy goes in its place, and the bucket serves on.
    etcd.put("/strata/records/buckets/real", unsealed(&sealed))
        .await;
    let other = cluster.nodes[2].client();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let _ = other.head_bucket().bucket("real").send().await;
        let held = etcd.get("/strata/records/buckets/real").await.unwrap();
        if held == sealed {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the drives' copy was not put back"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_object(&other, "real", "k", b"kept").await;

    // A public policy forged into the bucket's record is not obeyed: the bucket stays private.
    let anonymous = |node: &TestServer| reqwest::get(node.url("/real/k"));
    assert_eq!(anonymous(&cluster.nodes[1]).await.unwrap().status(), 403);
    let mut record: Value = rmp_serde::from_slice(&unsealed(&sealed)[1..]).unwrap();
    let policy = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::real/*"}]}"#;
    record["settings"]["policy"] = Value::String(policy.into());
    record["revision"] = (record["revision"].as_u64().unwrap() + 1).into();
    let forged = [&[1u8][..], &rmp_serde::to_vec_named(&record).unwrap()].concat();
    etcd.put("/strata/records/buckets/real", &forged).await;
    etcd.put("/strata/changes/bucket", b"bucket\nreal\nsomeone")
        .await;
    for _ in 0..12 {
        for node in &cluster.nodes {
            let answer = anonymous(node).await.unwrap();
            assert_eq!(answer.status(), 403, "a forged public policy was obeyed");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_are_decided_in_etcd_which_a_new_etcd_takes_from_the_drives() {
    // A cluster that ran without etcd: its buckets and users are on its drives only.
    let (_root, ports, drives, layout) = Cluster::plan(3, 3);
    let start = |i: usize, etcd: Option<&EtcdServer>| {
        let mut options = node_options(ports[i], &drives[i], &layout, EC);
        if let Some(etcd) = etcd {
            options.extra_args = vec!["--etcd".into(), etcd.endpoint()];
        }
        TestServer::start_with(options)
    };
    let nodes: Vec<TestServer> = (0..3).map(|i| start(i, None)).collect();
    create_bucket(&nodes[0].client(), "from-the-drives").await;
    put(&nodes[0].client(), "from-the-drives", "kept", b"kept").await;
    let added = strata_admin(
        &nodes[1],
        &["user", "add", "bob", "--secret", "bob-secret-123"],
    );
    assert!(added.status.success(), "{added:?}");
    drop(nodes);

    // Joined to etcd: the first node fills it from the drives.
    let etcd = EtcdServer::start();
    let nodes: Vec<TestServer> = (0..3).map(|i| start(i, Some(&etcd))).collect();
    let first = nodes[0].client();
    let deadline = Instant::now() + Duration::from_secs(20);
    while bucket_in_etcd(&etcd, "from-the-drives").await.is_none() {
        assert!(
            Instant::now() < deadline,
            "etcd was not filled from the drives"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        etcd.get("/strata/records/system/iam/user/bob")
            .await
            .is_some(),
        "the user is in etcd"
    );
    answers_within(&nodes[2], "AccessDenied").await;
    assert_object(&nodes[2].client(), "from-the-drives", "kept", b"kept").await;

    // Changes are compare-and-swaps in etcd: a setting changed through one node is the
    // record etcd holds, and a bucket made through another is there too.
    let enabled = aws_sdk_s3::types::BucketVersioningStatus::Enabled;
    set_versioning(&first, "from-the-drives", enabled).await;
    let record = bucket_in_etcd(&etcd, "from-the-drives").await.unwrap();
    assert_eq!(record["revision"], 1, "{record}");
    create_bucket(&nodes[1].client(), "made-in-etcd").await;
    assert!(bucket_in_etcd(&etcd, "made-in-etcd").await.is_some());

    // Two nodes changing one bucket's settings at once, round after round: both changes are
    // in force on a third node. (Whether a race was lost is timing: the compare-and-swap
    // itself is shown by `a_record_changes_in_etcd_only_over_the_value_it_was_decided_on`
    // and the object layer's retry by `object::authority`'s unit test; a blind put passed
    // this loop too.)
    use aws_sdk_s3::types::{BucketVersioningStatus, Tag, Tagging, VersioningConfiguration};
    let (a, b, c) = (nodes[1].client(), nodes[2].client(), nodes[0].client());
    for round in 0..6 {
        let status = match round % 2 {
            0 => BucketVersioningStatus::Suspended,
            _ => BucketVersioningStatus::Enabled,
        };
        let tag = Tag::builder()
            .key("round")
            .value(round.to_string())
            .build()
            .unwrap();
        let tagging = Tagging::builder().tag_set(tag).build().unwrap();
        let versioning = VersioningConfiguration::builder()
            .status(status.clone())
            .build();
        let (tagged, versioned) = tokio::join!(
            a.put_bucket_tagging()
                .bucket("from-the-drives")
                .tagging(tagging)
                .send(),
            b.put_bucket_versioning()
                .bucket("from-the-drives")
                .versioning_configuration(versioning)
                .send()
        );
        ok(tagged, "tagging");
        ok(versioned, "versioning");
        let tags = ok(
            c.get_bucket_tagging()
                .bucket("from-the-drives")
                .send()
                .await,
            "read the tags",
        );
        assert_eq!(
            tags.tag_set()[0].value(),
            round.to_string(),
            "round {round}"
        );
        let now = ok(
            c.get_bucket_versioning()
                .bucket("from-the-drives")
                .send()
                .await,
            "read versioning",
        );
        assert_eq!(now.status(), Some(&status), "round {round}");
    }

    // A deleted bucket is gone from every node; etcd keeps its tombstone, so that an etcd
    // that lost a record is never taken to have deleted it.
    ok(
        nodes[0]
            .client()
            .delete_bucket()
            .bucket("made-in-etcd")
            .send()
            .await,
        "delete a bucket",
    );
    let tombstone = etcd.get("/strata/records/buckets/made-in-etcd").await;
    assert_eq!(tombstone.as_deref().map(unsealed), Some(&b"deleted"[..]));
    let gone = nodes[2]
        .client()
        .head_bucket()
        .bucket("made-in-etcd")
        .send()
        .await;
    assert_s3_status(gone, 404, "a bucket deleted through another node");
}

#[tokio::test]
async fn a_record_changes_in_etcd_only_over_the_value_it_was_decided_on() {
    use strata::cluster::etcd::Etcd;
    let etcd = EtcdServer::start();
    let client = Etcd::new(vec![etcd.endpoint()]).unwrap();
    let key = "/strata/records/buckets/swapped";
    assert!(client.swap(key, None, Some(b"one")).await.unwrap());
    assert!(
        !client.swap(key, None, Some(b"again")).await.unwrap(),
        "created once"
    );
    assert!(
        !client
            .swap(key, Some(b"stale"), Some(b"two"))
            .await
            .unwrap(),
        "not over a value it does not hold"
    );
    assert!(client.swap(key, Some(b"one"), Some(b"two")).await.unwrap());
    assert_eq!(etcd.get(key).await.as_deref(), Some(&b"two"[..]));
    assert!(!client.swap(key, Some(b"one"), None).await.unwrap());
    assert!(client.swap(key, Some(b"two"), None).await.unwrap());
    assert_eq!(etcd.get(key).await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_set_is_healed_by_the_one_node_elected_for_it() {
    const SIZE: usize = 200 * 1024;
    let etcd = EtcdServer::start();
    let cluster = Cluster::start_with_etcd(3, 3, EC, &etcd);
    let names: Vec<String> = cluster.nodes.iter().map(node_name).collect();
    let mut owner = None;
    eventually(Duration::from_secs(20), "the set's healer elected", || {
        owner = holder(&info(&cluster.nodes[0]), "heal-set-1");
        owner.is_some()
    })
    .await;
    let owner = names
        .iter()
        .position(|n| Some(n) == owner.as_ref())
        .unwrap();
    let (away, third) = ((owner + 1) % 3, (owner + 2) % 3);

    // A node misses writes while it is down; once back, its drives get them.
    let client = cluster.nodes[third].client();
    create_bucket(&client, "healed").await;
    cluster.nodes[away].kill();
    for i in 0..4 {
        put(
            &client,
            "healed",
            &format!("missed-{i}"),
            &vec![i as u8; SIZE],
        )
        .await;
    }
    cluster.nodes[away].restart();
    let shards = |node: usize| -> usize {
        (cluster.drives[node].iter())
            .map(|drive| shard_files(drive).len())
            .sum()
    };
    eventually(Duration::from_secs(60), "the node's drives healed", || {
        shards(away) == 4 * 3
    })
    .await;

    // Only the elected node ran heal passes for it; every node saw the drives come back.
    let passes = |node: usize| {
        (cluster.nodes[node].log())
            .matches(r#"heal pass done reason="drive returned or replaced""#)
            .count()
    };
    // The shards are rebuilt before the pass logs that it is done.
    eventually(
        Duration::from_secs(20),
        "the owner's heal pass done",
        || passes(owner) > 0,
    )
    .await;
    assert_eq!(passes(third), 0, "{}", cluster.nodes[third].log_tail(30));
    assert_eq!(passes(away), 0, "{}", cluster.nodes[away].log_tail(30));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bucket_usage_is_counted_by_one_node_and_reported_by_all() {
    let etcd = EtcdServer::start();
    let env = [
        ("STRATA_USAGE_SCAN_SECS", "1"),
        ("STRATA_METRICS_AUTH", "public"),
    ];
    let cluster = Cluster::start_with_etcd_and_env(3, 3, EC, &etcd, &env);
    let nodes = cluster.nodes.as_slice();
    let client = nodes[0].client();
    create_bucket(&client, "counted").await;
    for i in 0..3 {
        put(&client, "counted", &format!("k{i}"), b"data").await;
    }
    let counted = r#"strata_bucket_objects{bucket="counted"} 3"#;
    for node in nodes {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let metrics = reqwest::get(node.url("/metrics")).await.unwrap();
            if metrics.text().await.unwrap().contains(counted) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{} reports no count",
                node.endpoint()
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
    // One count, the elected node's, published in etcd: every node reports the moment it
    // finished (nodes counting for themselves would each report their own).
    assert!(holder(&info(&nodes[0]), "usage-scanner").is_some());
    assert!(etcd
        .get("/strata/records/system/usage/latest")
        .await
        .is_some());
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut stamps = Vec::new();
        for node in nodes {
            let metrics = reqwest::get(node.url("/metrics")).await.unwrap();
            let text = metrics.text().await.unwrap();
            let stamp = (text.lines())
                .find_map(|l| l.strip_prefix("strata_usage_scan_timestamp_seconds "))
                .map(str::to_string);
            stamps.push(stamp);
        }
        if stamps[0].is_some() && stamps.windows(2).all(|w| w[0] == w[1]) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the nodes report different counts: {stamps:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A tiers file with one remote S3 tier in `bucket` of `remote`.
fn remote_tier_file(
    dir: &std::path::Path,
    name: &str,
    remote: &TestServer,
    bucket: &str,
) -> String {
    let doc = serde_json::json!({ "tiers": [{
        "name": "COLD",
        "type": "s3",
        "endpoint": remote.endpoint(),
        "bucket": bucket,
        "access_key": ACCESS_KEY,
        "secret_key": SECRET_KEY,
        "region": "us-east-1"
    }]});
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    path.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_node_must_be_given_the_same_tiers() {
    let remote = TestServer::start();
    create_bucket(&remote.client(), "cold").await;
    create_bucket(&remote.client(), "other").await;
    let dir = tempfile::tempdir().unwrap();
    let same = remote_tier_file(dir.path(), "same.json", &remote, "cold");
    let other = remote_tier_file(dir.path(), "other.json", &remote, "other");

    let etcd = EtcdServer::start();
    let (_root, ports, drives, layout) = Cluster::plan(3, 3);
    let options = |i: usize, tiers: Option<&str>| {
        let mut options = node_options(ports[i], &drives[i], &layout, EC);
        options.extra_args = vec!["--etcd".into(), etcd.endpoint()];
        if let Some(tiers) = tiers {
            options
                .extra_args
                .extend(["--tiers".into(), tiers.to_string()]);
        }
        options
    };
    let _first = TestServer::start_with(options(0, Some(&same)));
    let _second = TestServer::start_with(options(1, Some(&same)));
    for (tiers, differs) in [
        (Some(&other), "COLD (defined otherwise)"),
        (None, "COLD (the cluster has it, this node not)"),
    ] {
        let refused = TestServer::try_start(options(2, tiers.map(String::as_str)))
            .err()
            .expect("a node with other tiers is refused");
        assert!(refused.exited_nonzero());
        assert!(
            refused.output.contains("differ from the cluster's")
                && refused.output.contains(differs),
            "{}",
            refused.output
        );
    }

    // A pool of one node's folders cannot be a cluster's tier.
    let pool = dir.path().join("pool.json");
    let pool_drives: Vec<String> = (0..6)
        .map(|i| dir.path().join(format!("p{i}")).display().to_string())
        .collect();
    let doc = serde_json::json!({ "tiers": [{
        "name": "WARM", "type": "pool", "drives": pool_drives, "data_shards": 4, "parity_shards": 2
    }]});
    std::fs::write(&pool, serde_json::to_vec(&doc).unwrap()).unwrap();
    let refused = TestServer::try_start(options(2, Some(&pool.display().to_string())))
        .err()
        .expect("a pool tier in a cluster is refused");
    assert!(
        refused.output.contains("use a remote S3 tier"),
        "{}",
        refused.output
    );
}

/// The error `user` gets for ListBuckets through `node`: AccessDenied for a known user who
/// holds no policy, InvalidAccessKeyId for one the cluster does not know.
async fn user_is_answered(node: &TestServer, user: &str, secret: &str) -> Option<String> {
    let client = node.client_with(user, secret);
    let error = client.list_buckets().send().await.err()?;
    error.into_service_error().meta().code().map(str::to_string)
}

/// Makes the named key in the key service, once the cluster can answer for its catalog.
fn make_kms_key(node: &TestServer, name: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let made = strata_admin(node, &["kms", "key", "create", name]);
        if made.status.success() {
            return;
        }
        assert!(Instant::now() < deadline, "{made:?}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

async fn put_sealed(node: &TestServer, bucket: &str, key: &str, kms_key: &str, data: &[u8]) {
    let put = (node.client().put_object())
        .bucket(bucket)
        .key(key)
        .server_side_encryption(aws_sdk_s3::types::ServerSideEncryption::AwsKms)
        .ssekms_key_id(kms_key)
        .body(data.to_vec().into())
        .send()
        .await;
    put.unwrap_or_else(|e| panic!("SSE-KMS PUT under {kms_key}: {e:?}"));
}

/// What a restarted node serves after etcd lost changes: everything made before and since
/// reads back, a user removed since stays removed, and a full heal pass changes none of
/// that (it used to take every record etcd lacked away from the drives).
async fn assert_nothing_lost(
    node: &TestServer,
    buckets: &[&str],
    users: &[&str],
    sealed: &[(&str, &[u8])],
) {
    for bucket in buckets {
        let head = node.client().head_bucket().bucket(*bucket).send().await;
        assert!(head.is_ok(), "bucket {bucket}: {head:?}");
    }
    for user in users {
        let code = user_is_answered(node, user, &format!("{user}-secret-123")).await;
        assert_eq!(
            code.as_deref(),
            Some("AccessDenied"),
            "user {user} is known"
        );
    }
    let removed = user_is_answered(node, "removed", "removed-secret-123").await;
    assert_eq!(
        removed.as_deref(),
        Some("InvalidAccessKeyId"),
        "a removed user stays removed"
    );
    for (key, data) in sealed {
        assert_object(&node.client(), "sealed", key, data).await;
    }
}

/// etcd restored from a snapshot taken before a bucket, a user and a KMS key were made
/// (and a user removed), then, separately, its records deleted: the node restarted next
/// finds etcd behind the drives' copy and fills it again from them, before it takes etcd's
/// word; a full heal pass removes nothing etcd lacked; `strata admin info` says so. Before,
/// the bucket answered NoSuchBucket, the removed user was back, and the key catalog was
/// saved without the new key, whose objects no longer opened.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_etcd_that_forgot_is_filled_again_from_the_drives_and_deletes_nothing() {
    let etcd = EtcdServer::start();
    let master = "cluster-test-key:AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=";
    let cluster =
        Cluster::start_with_etcd_and_env(3, 3, EC, &etcd, &[("STRATA_KMS_SECRET_KEY", master)]);
    let nodes = cluster.nodes.as_slice();
    let add_user = |node: &TestServer, name: &str| {
        let secret = format!("{name}-secret-123");
        let added = strata_admin(node, &["user", "add", name, "--secret", &secret]);
        assert!(added.status.success(), "{added:?}");
    };
    create_bucket(&nodes[0].client(), "sealed").await;
    add_user(&nodes[0], "removed");
    make_kms_key(&nodes[0], "before");
    put_sealed(&nodes[0], "sealed", "old", "before", b"under the old key").await;
    let snapshot = tempfile::tempdir().unwrap();
    let snapshot = snapshot.path().join("etcd.db");
    etcd.save_snapshot(&snapshot);

    // Made (and removed) after the backup.
    create_bucket(&nodes[1].client(), "made-since").await;
    add_user(&nodes[1], "newcomer");
    make_kms_key(&nodes[1], "since");
    put_sealed(&nodes[1], "sealed", "new", "since", b"under the new key").await;
    let removed = strata_admin(&nodes[2], &["user", "remove", "removed"]);
    assert!(removed.status.success(), "{removed:?}");

    etcd.restore_snapshot(&snapshot);
    nodes[0].restart();
    let sealed: [(&str, &[u8]); 2] = [("old", b"under the old key"), ("new", b"under the new key")];
    let deadline = Instant::now() + Duration::from_secs(20);
    while bucket_in_etcd(&etcd, "made-since").await.is_none() {
        assert!(
            Instant::now() < deadline,
            "etcd was not filled again from the drives"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let healed = strata_admin(&nodes[0], &["heal"]);
    assert!(healed.status.success(), "{healed:?}");
    assert_nothing_lost(&nodes[0], &["sealed", "made-since"], &["newcomer"], &sealed).await;
    let info = strata_admin(&nodes[0], &["info", "--json"]);
    let info: Value = serde_json::from_slice(&info.stdout).expect("info as JSON");
    assert!(
        info["cluster"]["etcd_refills"].as_u64() >= Some(1),
        "{info}"
    );
    // A key made now keeps the keys made before: the catalog was filled again too.
    make_kms_key(&nodes[0], "after");
    put_sealed(
        &nodes[0],
        "sealed",
        "after",
        "after",
        b"under the key made after",
    )
    .await;

    // Separately: etcd's records deleted outright.
    create_bucket(&nodes[1].client(), "made-later").await;
    etcd.delete_prefix("/strata/records/").await;
    nodes[1].restart();
    let deadline = Instant::now() + Duration::from_secs(20);
    while bucket_in_etcd(&etcd, "made-later").await.is_none() {
        assert!(
            Instant::now() < deadline,
            "etcd was not filled again from the drives"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let healed = strata_admin(&nodes[1], &["heal"]);
    assert!(healed.status.success(), "{healed:?}");
    let buckets = ["sealed", "made-since", "made-later"];
    assert_nothing_lost(&nodes[1], &buckets, &["newcomer"], &sealed).await;
    assert_object(
        &nodes[1].client(),
        "sealed",
        "after",
        b"under the key made after",
    )
    .await;
}

/// A node whose drives were all replaced, started while its peers are away (after a site
/// power loss the node with new disks often boots first), formats them as unhealed
/// replacements, not as new drives that vote "absent": etcd remembers that it formatted
/// drives before. Once the others are back, a heal pass fills them and nothing is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wiped_node_started_alone_formats_its_drives_as_replacements() {
    let etcd = EtcdServer::start();
    let cluster = Cluster::start_with_etcd(3, 3, EC, &etcd);
    let client = cluster.nodes[0].client();
    create_bucket(&client, "kept").await;
    put(
        &client,
        "kept",
        "ckpt",
        b"written before the disks were replaced",
    )
    .await;
    for node in &cluster.nodes {
        node.kill();
    }
    for drive in &cluster.drives[0] {
        std::fs::remove_dir_all(drive).unwrap();
        std::fs::create_dir_all(drive).unwrap();
    }
    cluster.nodes[0].restart();
    let unhealed = || {
        (cluster.drives[0].iter())
            .filter(|drive| drive.join(".strata/unhealed.json").exists())
            .count()
    };
    assert_eq!(unhealed(), 3, "{}", cluster.nodes[0].log_tail(30));

    for node in &cluster.nodes[1..] {
        node.restart();
    }
    eventually(
        Duration::from_secs(60),
        "the replaced drives healed",
        || unhealed() == 0,
    )
    .await;
    for node in &cluster.nodes {
        let client = node.client();
        assert_object(
            &client,
            "kept",
            "ckpt",
            b"written before the disks were replaced",
        )
        .await;
    }
}

/// A client of the secured `etcd` proving itself with what `access` keeps of it.
fn secured_access(etcd: &EtcdServer) -> strata::cluster::etcd::EtcdAccess {
    let secured = etcd.secured.as_ref().expect("a secured etcd");
    let mut identity = std::fs::read(&secured.client_cert).unwrap();
    identity.extend(std::fs::read(&secured.client_key).unwrap());
    strata::cluster::etcd::EtcdAccess {
        endpoints: vec![etcd.endpoint()],
        ca_pem: Some(std::fs::read(&secured.ca).unwrap()),
        identity_pem: Some(identity.into()),
        user: Some((secured.user.clone(), secured.password.clone().into())),
    }
}

/// etcd over TLS with client certificates and its authentication on answers a client that
/// trusts its CA, shows a certificate and signs in, and takes a new token when etcd lets
/// the old one lapse; a client short of any of the three gets nothing.
#[tokio::test]
async fn a_secured_etcd_answers_only_a_client_that_proves_itself() {
    use strata::cluster::etcd::{Etcd, EtcdAccess};
    let etcd = EtcdServer::start_secured(2);
    let access = secured_access(&etcd);
    let client = Etcd::connect(access.clone()).unwrap();
    let key = "/strata/records/buckets/secured";
    assert!(client.swap(key, None, Some(b"one")).await.unwrap());
    // Unused for longer than its TTL, the token lapses; the client signs in again.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let held = client.get(key).await.unwrap().expect("the key");
    assert_eq!(held.value, b"one");

    let short_of = |change: fn(&mut EtcdAccess)| {
        let mut access = access.clone();
        change(&mut access);
        Etcd::connect(access).unwrap()
    };
    let no_ca = short_of(|a| a.ca_pem = None);
    let no_certificate = short_of(|a| a.identity_pem = None);
    let no_user = short_of(|a| a.user = None);
    let wrong_password = short_of(|a| {
        a.user = Some(("root".into(), "not-the-password".to_string().into()));
    });
    for (what, client) in [
        ("without the CA", no_ca),
        ("without a client certificate", no_certificate),
        ("without a user", no_user),
        ("with a wrong password", wrong_password),
    ] {
        let answer = client.get(key).await;
        assert!(answer.is_err(), "{what}: {answer:?}");
    }
}

/// Nodes given etcd's CA, a client certificate and an etcd user join a secured etcd and
/// decide their records in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_reach_a_secured_etcd_with_a_certificate_and_a_user() {
    let etcd = EtcdServer::start_secured(300);
    let secured = etcd.secured.as_ref().unwrap();
    let (_root, ports, drives, layout) = Cluster::plan(3, 3);
    let nodes: Vec<TestServer> = (0..3)
        .map(|i| {
            let mut options = node_options(ports[i], &drives[i], &layout, EC);
            let path = |p: &std::path::Path| p.display().to_string();
            options.extra_args = vec![
                "--etcd".into(),
                etcd.endpoint(),
                "--etcd-ca".into(),
                path(&secured.ca),
                "--etcd-cert".into(),
                path(&secured.client_cert),
                "--etcd-key".into(),
                path(&secured.client_key),
                "--etcd-user".into(),
                secured.user.clone(),
            ];
            (options.env).push(("STRATA_ETCD_PASSWORD".into(), secured.password.clone()));
            options
        })
        .map(TestServer::start_with)
        .collect();
    eventually(Duration::from_secs(20), "every node registered", || {
        node_states(&info(&nodes[0]))
            .iter()
            .all(|(_, state)| state == "up")
    })
    .await;
    let client = nodes[1].client();
    client
        .create_bucket()
        .bucket("guarded")
        .send()
        .await
        .unwrap();
    let etcd_client = strata::cluster::etcd::Etcd::connect(secured_access(&etcd)).unwrap();
    let record = etcd_client.get("/strata/records/buckets/guarded").await;
    assert!(record.unwrap().is_some(), "the bucket is decided in etcd");
}

/// Plain http:// to an etcd beyond this machine is refused at start, before any drive is
/// touched, unless --etcd-insecure acknowledges it.
#[tokio::test]
async fn plaintext_etcd_beyond_loopback_is_refused_unless_acknowledged() {
    let (_root, ports, drives, layout) = Cluster::plan(3, 3);
    let mut options = node_options(ports[0], &drives[0], &layout, EC);
    // TEST-NET-1: nothing answers there, which the acknowledged start below shows it tried.
    options.extra_args = vec!["--etcd".into(), "http://192.0.2.1:2379".into()];
    let refused = TestServer::try_start(options.clone())
        .err()
        .expect("plaintext beyond loopback is refused");
    assert!(refused.exited_nonzero());
    assert!(
        refused.output.contains("--etcd-insecure") && refused.output.contains("https://"),
        "the refusal says what to do: {}",
        refused.output
    );
    for drive in &drives[0] {
        assert!(std::fs::read_dir(drive).unwrap().next().is_none());
    }
    // Acknowledged, the node goes on to wait for etcd (nothing answers at 192.0.2.1).
    let mut node = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["server", "--address", &options.address, "--ec", EC])
        .args(["--etcd", "http://192.0.2.1:2379", "--etcd-insecure"])
        .args(&layout)
        .envs(options.env.iter().map(|(k, v)| (k, v)))
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("strata runs");
    let stderr = node.stderr.take().unwrap();
    let (lines, seen) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = lines.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut output = String::new();
    let waited = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match seen.recv_timeout(left) {
            Ok(line) if line.contains("waiting for etcd to answer") => break true,
            Ok(line) => output.push_str(&(line + "\n")),
            Err(_) => break false,
        }
    };
    let _ = node.kill();
    let _ = node.wait();
    assert!(waited, "acknowledged, it goes on to reach etcd: {output}");
}
