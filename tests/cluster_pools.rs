//! Server pools of several nodes, with the pool list in etcd: a cluster of three nodes grows
//! by a second pool of three nodes through a rolling restart while a client writes and
//! reads, the pools are rebalanced while the client overwrites keys through every node,
//! then its first pool (2+1) is decommissioned into the new one (4+2), a node killed
//! mid-drain and restarted, and dropped from the command line. Nothing is lost.

mod common;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_s3::types::{BucketVersioningStatus, VersioningConfiguration};
use aws_sdk_s3::Client;
use common::*;
use serde_json::Value;

const EC: &str = "2+1";
const DRIVES_PER_NODE: usize = 2;

/// Six nodes' ports and drive folders; the first three form pool 1, the others pool 2.
struct Plan {
    _root: tempfile::TempDir,
    ports: Vec<u16>,
    drives: Vec<Vec<PathBuf>>,
    /// Each node's drive URL argument.
    urls: Vec<String>,
}

impl Plan {
    fn new() -> Plan {
        let root = tempfile::Builder::new()
            .prefix("strata-pools-")
            .tempdir()
            .unwrap();
        let ports = ports::free_port_pairs(6);
        let mut drives = Vec::new();
        let mut urls = Vec::new();
        for (i, port) in ports.iter().enumerate() {
            let base = root.path().join(format!("n{}", i + 1));
            let folders: Vec<PathBuf> = (1..=DRIVES_PER_NODE)
                .map(|d| base.join(format!("d{d}")))
                .collect();
            for folder in &folders {
                std::fs::create_dir_all(folder).unwrap();
            }
            urls.push(format!(
                "http://127.0.0.1:{port}{}/d{{1...{DRIVES_PER_NODE}}}",
                base.display()
            ));
            drives.push(folders);
        }
        Plan {
            _root: root,
            ports,
            drives,
            urls,
        }
    }

    /// `--pool "..."` for each of `pools`: its nodes (indexes), and its own erasure
    /// geometry if it has one.
    fn pool_args(&self, pools: &[(&[usize], Option<&str>)]) -> Vec<String> {
        (pools.iter())
            .flat_map(|(nodes, ec)| {
                let urls = nodes.iter().map(|&n| self.urls[n].clone());
                let geometry = ec.map(|ec| format!("ec={ec}"));
                let args: Vec<String> = geometry.into_iter().chain(urls).collect();
                ["--pool".to_string(), args.join(" ")]
            })
            .collect()
    }

    /// Node `i` started with `drive_args`.
    fn start(&self, i: usize, drive_args: Vec<String>, etcd: &EtcdServer) -> TestServer {
        let layout: Vec<String> = Vec::new();
        let mut options = node_options(self.ports[i], &self.drives[i], &layout, EC);
        options.drive_args = Some(drive_args);
        options.extra_args = vec!["--etcd".into(), etcd.endpoint()];
        options
            .env
            .push(("STRATA_DECOMMISSION_DUTY".into(), "0.3".into()));
        TestServer::start_with(options)
    }
}

/// `strata admin info --json` through `node`.
fn info(node: &TestServer) -> Value {
    let output = strata_admin(node, &["info", "--json"]);
    assert!(output.status.success(), "{output:?}");
    serde_json::from_slice(&output.stdout).expect("info is JSON")
}

fn pool_states(node: &TestServer) -> Vec<String> {
    let info = info(node);
    (info["pools"].as_array().into_iter().flatten())
        .map(|pool| pool["state"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn wait_for_states(node: &TestServer, want: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let states = pool_states(node);
        if states == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "pool states stayed {states:?}, wanted {want:?}; log:\n{}",
            node.log_tail(40)
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// `strata admin pool rebalance status --json` through `node`.
fn rebalance_status(node: &TestServer) -> Value {
    let output = strata_admin(node, &["pool", "rebalance", "status", "--json"]);
    assert!(output.status.success(), "{output:?}");
    serde_json::from_slice(&output.stdout).expect("the status is JSON")
}

/// Each pool's used fraction, as a rebalance status counts it.
fn used_fractions(status: &Value) -> Vec<f64> {
    (status["pools"].as_array().unwrap().iter())
        .map(|pool| {
            let usage = &pool["usage"];
            usage["bytes"].as_f64().unwrap() / usage["capacity"].as_f64().unwrap()
        })
        .collect()
}

/// `client` with the SDK's default retries (standard mode, 3 attempts).
fn retrying(client: &Client) -> Client {
    let config = client.config().to_builder();
    Client::from_conf(
        config
            .retry_config(aws_sdk_s3::config::retry::RetryConfig::standard())
            .build(),
    )
}

/// What was written: (bucket, key) → newest bytes.
type Written = Arc<Mutex<Vec<(String, String, Vec<u8>)>>>;

/// A client that writes a new key and reads an earlier one, over and over, through the
/// nodes marked serving (as a load balancer would, around a node being restarted).
async fn write_and_read(
    clients: Arc<Mutex<Vec<Option<Client>>>>,
    written: Written,
    stop: Arc<AtomicBool>,
    failures: Arc<Mutex<Vec<String>>>,
    (seed, patience): (u64, usize),
) -> usize {
    let turn = AtomicUsize::new(0);
    let mut count = 0;
    while !stop.load(Ordering::Relaxed) {
        let pick = || {
            let clients = clients.lock().unwrap();
            let serving: Vec<&Client> = clients.iter().flatten().collect();
            serving[turn.fetch_add(1, Ordering::Relaxed) % serving.len()].clone()
        };
        let key = format!("rolling/{count:04}");
        let data = payload(3000 + count * 7, count as u64 + seed);
        let mut put = pick()
            .put_object()
            .bucket("plain")
            .key(&key)
            .body(data.clone().into())
            .send()
            .await;
        // A patient client tries a request it was told to retry (503) again, for a while: a
        // key written while a node was down, not healed yet, has no shard to spare while
        // another node is down.
        for _ in 0..patience {
            match &put {
                Err(e) if e.raw_response().is_some_and(|r| r.status().as_u16() == 503) => {
                    tokio::time::sleep(Duration::from_millis(250)).await;
                    put = (pick().put_object().bucket("plain").key(&key))
                        .body(data.clone().into())
                        .send()
                        .await;
                }
                _ => break,
            }
        }
        match put {
            Ok(_) => (written.lock().unwrap()).push(("plain".into(), key, data)),
            Err(e) => failures.lock().unwrap().push(format!("PUT {key}: {e:?}")),
        }
        // An earlier key, with its newest bytes.
        let earlier = {
            let written = written.lock().unwrap();
            let (bucket, key, _) = written[count * 31 % written.len()].clone();
            let newest = written
                .iter()
                .rev()
                .find(|(b, k, _)| *b == bucket && *k == key);
            newest.expect("written").clone()
        };
        let mut got = pick()
            .get_object()
            .bucket(&earlier.0)
            .key(&earlier.1)
            .send()
            .await;
        for _ in 0..patience {
            match &got {
                Err(e) if e.raw_response().is_some_and(|r| r.status().as_u16() == 503) => {
                    tokio::time::sleep(Duration::from_millis(250)).await;
                    got = (pick().get_object().bucket(&earlier.0).key(&earlier.1))
                        .send()
                        .await;
                }
                _ => break,
            }
        }
        match got {
            Ok(got) => {
                let body = got.body.collect().await.unwrap().into_bytes();
                if body.as_ref() != earlier.2.as_slice() {
                    failures
                        .lock()
                        .unwrap()
                        .push(format!("GET {}: other bytes", earlier.1));
                }
            }
            Err(e) => failures
                .lock()
                .unwrap()
                .push(format!("GET {}: {e:?}", earlier.1)),
        }
        count += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    count
}

/// Every key's newest bytes, and the versioned bucket's history, read through `node`.
async fn assert_everything_reads(
    client: &Client,
    written: &[(String, String, Vec<u8>)],
    versions: &[(String, Vec<u8>)],
) {
    let mut newest = std::collections::BTreeMap::new();
    for (bucket, key, data) in written {
        newest.insert((bucket.clone(), key.clone()), data.clone());
    }
    for ((bucket, key), data) in &newest {
        assert_object(client, bucket, key, data).await;
    }
    let listed = ok(
        client
            .list_object_versions()
            .bucket("versioned")
            .send()
            .await,
        "ListObjectVersions",
    );
    assert_eq!(listed.versions().len(), versions.len());
    assert_eq!(listed.delete_markers().len(), 1);
    let newest = (listed.versions().iter()).find(|v| v.is_latest() == Some(true));
    let newest = newest.and_then(|v| v.version_id()).unwrap_or_default();
    assert_eq!(
        newest,
        versions.last().unwrap().0,
        "the newest version is current"
    );
    for (version_id, data) in versions {
        let got = ok(
            client
                .get_object()
                .bucket("versioned")
                .key("history")
                .version_id(version_id)
                .send()
                .await,
            "GET of an older version",
        );
        let body = got.body.collect().await.unwrap().into_bytes();
        assert_eq!(body.as_ref(), data.as_slice(), "version {version_id}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_grows_by_a_pool_online_and_retires_its_first() {
    let etcd = EtcdServer::start();
    let plan = Plan::new();
    let first: &[usize] = &[0, 1, 2];
    let second: &[usize] = &[3, 4, 5];
    // Pool 1 as any cluster starts: its drives as plain arguments.
    let old_args: Vec<String> = first.iter().map(|&n| plan.urls[n].clone()).collect();
    let mut nodes: Vec<Option<TestServer>> = (first.iter())
        .map(|&n| Some(plan.start(n, old_args.clone(), &etcd)))
        .collect();
    let client = nodes[0].as_ref().unwrap().client();
    ok(
        client.create_bucket().bucket("plain").send().await,
        "create",
    );
    ok(
        client.create_bucket().bucket("versioned").send().await,
        "create",
    );
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
    let written: Written = Arc::default();
    for i in 0..20 {
        let (key, data) = (format!("before/{i:02}"), payload(500 + i * 4000, i as u64));
        put(&client, "plain", &key, &data).await;
        written.lock().unwrap().push(("plain".into(), key, data));
    }
    let big = payload(12 * MIB, 99);
    put(&client, "plain", "big", &big).await;
    written
        .lock()
        .unwrap()
        .push(("plain".into(), "big".into(), big));
    let mut versions = Vec::new();
    for i in 0..3 {
        let data = payload(2000 + i, 40 + i as u64);
        let put = ok(
            client
                .put_object()
                .bucket("versioned")
                .key("history")
                .body(data.clone().into())
                .send()
                .await,
            "a version",
        );
        versions.push((put.version_id().unwrap().to_string(), data));
    }
    ok(
        client
            .delete_object()
            .bucket("versioned")
            .key("history")
            .send()
            .await,
        "a delete marker",
    );

    // A writer and a reader go on through the serving nodes for the whole roll.
    let clients: Arc<Mutex<Vec<Option<Client>>>> = Arc::new(Mutex::new(
        (0..6)
            .map(|i| {
                nodes
                    .get(i)
                    .and_then(|n| n.as_ref())
                    .map(TestServer::client)
            })
            .collect(),
    ));
    let (stop, failures) = (Arc::new(AtomicBool::new(false)), Arc::default());
    let traffic = tokio::spawn(write_and_read(
        clients.clone(),
        written.clone(),
        stop.clone(),
        Arc::clone(&failures),
        (0, 0),
    ));

    // The new pool's nodes start with both pools: the pool joins, taking no keys yet.
    // The new pool has its own geometry: one set of 4+2 over its three nodes.
    let both = plan.pool_args(&[(first, None), (second, Some("4+2"))]);
    for &n in second {
        nodes.push(Some(plan.start(n, both.clone(), &etcd)));
    }
    wait_for_states(nodes[3].as_ref().unwrap(), &["active", "joining"]);
    for &n in second {
        clients.lock().unwrap()[n] = Some(nodes[n].as_ref().unwrap().client());
    }
    // An old node restarted with the old arguments is refused now.
    // (Tried below on a stopped node, so that no request is cut.)
    for &n in first {
        clients.lock().unwrap()[n] = None;
        tokio::time::sleep(Duration::from_millis(300)).await;
        nodes[n].take().unwrap().kill();
        if n == 0 {
            let mut options = node_options(plan.ports[n], &plan.drives[n], &old_args, EC);
            options.extra_args = vec!["--etcd".into(), etcd.endpoint()];
            let refused = TestServer::try_start(options).err().expect("refused");
            assert!(
                refused.output.contains("must be given"),
                "{}",
                refused.output
            );
        }
        let node = plan.start(n, both.clone(), &etcd);
        // As an operator does before the next restart: the node's drives get what was
        // written while it was down (at 2+1 a set has no shard to spare for a second node).
        let healed = strata_admin(&node, &["heal"]);
        assert!(healed.status.success(), "{healed:?}");
        clients.lock().unwrap()[n] = Some(node.client());
        nodes[n] = Some(node);
    }
    for node in nodes.iter().flatten() {
        wait_for_states(node, &["active", "active"]);
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, Ordering::Relaxed);
    let rounds = traffic.await.unwrap();
    let failed = failures.lock().unwrap().clone();
    assert!(
        failed.is_empty(),
        "{} of {rounds} rounds failed: {failed:?}",
        failed.len()
    );
    assert!(rounds > 20, "only {rounds} rounds");
    // New keys land in the new pool too.
    let client = nodes[4].as_ref().unwrap().client();
    for i in 0..30 {
        let (key, data) = (
            format!("after/{i:02}"),
            payload(300_000 + i, 500 + i as u64),
        );
        put(&client, "plain", &key, &data).await;
        written.lock().unwrap().push(("plain".into(), key, data));
    }
    let holds_data = |nodes: &[usize]| {
        (nodes.iter())
            .flat_map(|&n| &plan.drives[n])
            .flat_map(|d| {
                std::fs::read_dir(d.join("data"))
                    .into_iter()
                    .flatten()
                    .flatten()
            })
            .any(|bucket| std::fs::read_dir(bucket.path()).is_ok_and(|mut d| d.next().is_some()))
    };
    assert!(holds_data(second), "no new key went to the new pool");

    // The pools are rebalanced: started through a node of pool 2, run by whichever node
    // is elected, watched through a node of pool 1, while the client overwrites keys
    // through every node (a write that races its key's move is told to retry, 503).
    let uneven = used_fractions(&rebalance_status(nodes[0].as_ref().unwrap()));
    assert!(
        uneven[0] > uneven[1],
        "pool 1 holds the keys from before: {uneven:?}"
    );
    let started = strata_admin(nodes[4].as_ref().unwrap(), &["pool", "rebalance", "start"]);
    assert!(started.status.success(), "{started:?}");
    {
        let mut clients = clients.lock().unwrap();
        for client in clients.iter_mut().flatten() {
            *client = retrying(client);
        }
    }
    stop.store(false, Ordering::Relaxed);
    let traffic = tokio::spawn(write_and_read(
        clients.clone(),
        written.clone(),
        stop.clone(),
        Arc::clone(&failures),
        (500, 20),
    ));
    let history = payload(2400, 66);
    let put = ok(
        client
            .put_object()
            .bucket("versioned")
            .key("history")
            .body(history.clone().into())
            .send()
            .await,
        "a version written during the rebalance",
    );
    versions.push((put.version_id().unwrap().to_string(), history));
    // Long enough for writes to meet moves; the rest of the rebalance runs alone.
    tokio::time::sleep(Duration::from_secs(8)).await;
    stop.store(true, Ordering::Relaxed);
    let rounds = traffic.await.unwrap();
    let failed = failures.lock().unwrap().clone();
    assert!(
        failed.is_empty(),
        "{} of {rounds} rounds failed: {failed:?}",
        failed.len()
    );
    let deadline = Instant::now() + Duration::from_secs(120);
    let evened = loop {
        let status = rebalance_status(nodes[0].as_ref().unwrap());
        if status["state"] == "completed" {
            // Counted by the node that moved the keys, read through another.
            assert!(status["keys_moved"].as_u64() > Some(0), "{status}");
            break used_fractions(&status);
        }
        assert!(
            Instant::now() < deadline,
            "the rebalance did not complete: {status}"
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    let gap = |f: &[f64]| (f[0] - f[1]).abs();
    assert!(
        evened[1] > uneven[1] && gap(&evened) < gap(&uneven),
        "from {uneven:?} to {evened:?}"
    );
    {
        let written: Vec<_> = written.lock().unwrap().clone();
        for n in [1, 5] {
            let client = nodes[n].as_ref().unwrap().client();
            assert_everything_reads(&client, &written, &versions).await;
        }
    }

    // Pool 1 is decommissioned; a node of it is killed in the middle and comes back.
    let started = strata_admin(
        nodes[1].as_ref().unwrap(),
        &["pool", "decommission", "start", "1"],
    );
    assert!(started.status.success(), "{started:?}");
    // The client goes on meanwhile, overwriting the keys as they move: a write that races
    // the move of its key on another node may be told to retry (503) while a node is down,
    // never told it succeeded when it did not.
    stop.store(false, Ordering::Relaxed);
    let traffic = tokio::spawn(write_and_read(
        clients.clone(),
        written.clone(),
        stop.clone(),
        Arc::clone(&failures),
        (1000, 20),
    ));
    for node in nodes.iter().flatten() {
        wait_for_states(node, &["decommissioning", "active"]);
    }
    let history = payload(2500, 77);
    let put = ok(
        client
            .put_object()
            .bucket("versioned")
            .key("history")
            .body(history.clone().into())
            .send()
            .await,
        "a version written during the drain",
    );
    versions.push((put.version_id().unwrap().to_string(), history));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    clients.lock().unwrap()[2] = None;
    // What was sent to the node before the balancer left it out is answered first.
    tokio::time::sleep(Duration::from_millis(300)).await;
    nodes[2].as_ref().unwrap().kill();
    tokio::time::sleep(Duration::from_secs(3)).await;
    nodes[2].as_ref().unwrap().restart();
    clients.lock().unwrap()[2] = Some(retrying(&nodes[2].as_ref().unwrap().client()));
    for node in nodes.iter().flatten() {
        wait_for_states(node, &["retired", "active"]);
        // Whichever node drained the pool, every node tells how it went.
        let drain = &info(node)["pools"][0]["decommission"];
        assert!(drain["keys_moved"].as_u64() > Some(0), "{drain}");
        assert_eq!(drain["keys_left"], 0, "{drain}");
    }
    stop.store(true, Ordering::Relaxed);
    let rounds = traffic.await.unwrap();
    let failed = failures.lock().unwrap().clone();
    assert!(
        failed.is_empty(),
        "{} of {rounds} rounds failed: {failed:?}",
        failed.len()
    );
    let written: Vec<_> = written.lock().unwrap().clone();
    for node in nodes.iter().flatten() {
        assert_everything_reads(&node.client(), &written, &versions).await;
    }

    // Pool 1's nodes stop and leave the arguments; the others restart without it.
    for &n in first {
        nodes[n].take().unwrap().kill();
    }
    let alone = plan.pool_args(&[(second, Some("4+2"))]);
    for &n in second {
        nodes[n].take().unwrap().kill();
        nodes[n] = Some(plan.start(n, alone.clone(), &etcd));
    }
    for &n in second {
        let node = nodes[n].as_ref().unwrap();
        assert_eq!(pool_states(node), ["active"]);
        assert_everything_reads(&node.client(), &written, &versions).await;
    }
}
