//! A node cut off from the others and from etcd by a network partition (the harness's proxies,
//! `common::Network`, black-hole its traffic both ways): the two nodes on the majority side
//! hold six drives of the 6+3 set and go on taking writes; the cut-off node holds three and
//! must answer 503, never what it held before the partition. Once the partition heals it
//! serves again, every write acknowledged meanwhile reads back identical through every node,
//! nothing deleted comes back, and listings agree with reads. A node cut off from etcd alone
//! goes on serving objects, and sees a bucket deleted elsewhere within seconds.

mod common;

use std::time::{Duration, Instant};

use aws_sdk_s3::Client;
use common::*;

const EC: &str = "6+3";
const BUCKET: &str = "split";
/// Above the inline limit, so every object leaves a shard file on every drive.
const SIZE: usize = 200 * 1024;

fn body(i: usize) -> Vec<u8> {
    (0..SIZE).map(|b| (b * 31 + i * 7) as u8).collect()
}

async fn ready(node: &TestServer) -> u16 {
    let response = reqwest::get(node.url("/health/ready")).await.unwrap();
    response.status().as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_node_answers_503_never_stale_and_catches_up_once_the_partition_heals() {
    let etcd = EtcdServer::start();
    let (cluster, network) = Cluster::start_partitionable(3, 3, EC, Some(&etcd));
    // A hung node fails the test rather than stalling it.
    let clients: Vec<Client> = (cluster.nodes.iter())
        .map(|node| giving_up_after(&node.client(), Duration::from_secs(20)))
        .collect();
    create_bucket(&clients[0], BUCKET).await;
    for i in 0..4 {
        put(&clients[0], BUCKET, &format!("kept-{i}"), &body(i)).await;
        put(&clients[0], BUCKET, &format!("changed-{i}"), &body(i)).await;
        put(&clients[0], BUCKET, &format!("deleted-{i}"), &body(i)).await;
    }

    network.isolate(2);
    // At once, before the cut-off node can tell its peers are gone, its calls to their drives
    // hang until their deadline: still 503, not what it holds.
    let cut_off = &clients[2];
    let got = cut_off
        .get_object()
        .bucket(BUCKET)
        .key("kept-0")
        .send()
        .await;
    assert_s3_status(got, 503, "GET on the node just cut off");

    // The majority side: writes, overwrites and deletes go on through either node.
    let started = Instant::now();
    for i in 0..4 {
        let client = &clients[i % 2];
        put(client, BUCKET, &format!("changed-{i}"), &body(100 + i)).await;
        put(client, BUCKET, &format!("added-{i}"), &body(200 + i)).await;
        ok(
            (client.delete_object())
                .bucket(BUCKET)
                .key(format!("deleted-{i}"))
                .send()
                .await,
            "delete on the majority side",
        );
    }
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(20),
        "the majority side waited on the cut-off node: {took:?}"
    );
    assert_object(&clients[1], BUCKET, "changed-0", &body(100)).await;
    assert_eq!(ready(&cluster.nodes[0]).await, 200);

    // Long enough for each side to find the other down, whatever the writes took.
    tokio::time::sleep(Duration::from_secs(3)).await;

    // The cut-off node: what it holds is three drives and possibly stale; it answers 503.
    for i in 0..4 {
        for key in [format!("changed-{i}"), format!("deleted-{i}")] {
            let got = cut_off.get_object().bucket(BUCKET).key(&key).send().await;
            assert_s3_status(got, 503, &format!("GET {key} on the cut-off node"));
        }
    }
    let written = (cut_off.put_object())
        .bucket(BUCKET)
        .key("from-the-minority")
        .body(body(999).into())
        .send()
        .await;
    assert_s3_status(written, 503, "PUT on the cut-off node");
    let listed = cut_off.list_objects_v2().bucket(BUCKET).send().await;
    assert_s3_status(listed, 503, "listing on the cut-off node");
    assert_eq!(ready(&cluster.nodes[2]).await, 503);

    // Healed: the node serves again within seconds (its peers' drives are not held against
    // it for calls the partition swallowed), and gets the shards it missed.
    network.heal();
    let healed_at = Instant::now();
    loop {
        let got = cut_off
            .get_object()
            .bucket(BUCKET)
            .key("added-0")
            .send()
            .await;
        if got.is_ok() {
            break;
        }
        assert!(
            healed_at.elapsed() < Duration::from_secs(8),
            "the node does not serve again after the partition: {}",
            describe(&got.unwrap_err())
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    loop {
        let (on_it, on_first) = (
            shard_files_on(&cluster.drives[2]),
            shard_files_on(&cluster.drives[0]),
        );
        if on_it == on_first {
            break;
        }
        assert!(
            healed_at.elapsed() < Duration::from_secs(60),
            "the node did not catch up: {on_it} shard files on it, {on_first} on node 1"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let mut expected: Vec<String> = (0..4)
        .flat_map(|i| {
            [
                format!("added-{i}"),
                format!("changed-{i}"),
                format!("kept-{i}"),
            ]
        })
        .collect();
    expected.sort();
    for client in &clients {
        for i in 0..4 {
            assert_object(client, BUCKET, &format!("kept-{i}"), &body(i)).await;
            assert_object(client, BUCKET, &format!("changed-{i}"), &body(100 + i)).await;
            assert_object(client, BUCKET, &format!("added-{i}"), &body(200 + i)).await;
            let gone = client
                .head_object()
                .bucket(BUCKET)
                .key(format!("deleted-{i}"))
                .send()
                .await;
            assert_s3_status(gone, 404, "a deleted object after the partition");
        }
        assert_eq!(list_all_keys(client, BUCKET, None).await, expected);
    }
}

fn shard_files_on(drives: &[std::path::PathBuf]) -> usize {
    drives.iter().map(|d| shard_files(d).len()).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_cut_off_from_etcd_alone_sees_changes_made_elsewhere_within_seconds() {
    let etcd = EtcdServer::start();
    let (cluster, network) = Cluster::start_partitionable(3, 3, EC, Some(&etcd));
    let clients: Vec<Client> = (cluster.nodes.iter())
        .map(|node| giving_up_after(&node.client(), Duration::from_secs(20)))
        .collect();
    create_bucket(&clients[0], "short-lived").await;
    create_bucket(&clients[0], BUCKET).await;
    put(&clients[2], BUCKET, "k", b"v").await;
    // Node 3 knows the bucket (cached) before it loses etcd.
    ok(
        clients[2].head_bucket().bucket("short-lived").send().await,
        "the bucket, through node 3",
    );

    network.cut_from_etcd(2);
    ok(
        clients[0]
            .delete_bucket()
            .bucket("short-lived")
            .send()
            .await,
        "delete through node 1",
    );
    // Node 3 hears of no change, but trusts what it cached only for a few seconds (5 s),
    // then reads the record again: etcd does not answer, the drives' copy does.
    let cut_at = Instant::now();
    loop {
        let seen = clients[2].head_bucket().bucket("short-lived").send().await;
        if status_of_head(&seen) == Some(404) {
            break;
        }
        assert!(
            cut_at.elapsed() < Duration::from_secs(15),
            "node 3 still serves a bucket deleted elsewhere: {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // Objects still flow through it, and settings wait for etcd.
    put(&clients[2], BUCKET, "k2", b"v2").await;
    assert_object(&clients[2], BUCKET, "k", b"v").await;
    let refused = clients[2].create_bucket().bucket("meanwhile").send().await;
    assert_s3_status(refused, 503, "a bucket made through a node without etcd");
}

fn status_of_head<T, E>(
    result: &Result<T, aws_sdk_s3::error::SdkError<E, aws_sdk_s3::config::http::HttpResponse>>,
) -> Option<u16> {
    match result {
        Ok(_) => Some(200),
        Err(e) => status_of(e),
    }
}
