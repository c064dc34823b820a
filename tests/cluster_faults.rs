//! Whole nodes failing in ways a crash test does not show: a node paused with SIGSTOP (a
//! long GC pause, a frozen VM) holds its connections open and answers nothing; a node whose
//! disks are all replaced by empty ones comes back with nothing. Three `strata` processes on
//! loopback, three drive folders each, one 6+3 set.

mod common;

use std::time::{Duration, Instant};

use common::*;

const EC: &str = "6+3";
const BUCKET: &str = "paused";
/// Above the inline limit, so every object leaves a shard file on every drive.
const SIZE: usize = 200 * 1024;

fn body(i: usize) -> Vec<u8> {
    (0..SIZE).map(|b| (b * 31 + i * 7) as u8).collect()
}

fn shard_count(drives: &[std::path::PathBuf]) -> usize {
    drives.iter().map(|d| shard_files(d).len()).sum()
}

async fn ready_body(node: &TestServer) -> String {
    let response = reqwest::get(node.url("/health/ready")).await.unwrap();
    response.text().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_node_is_served_around_within_seconds_and_catches_up_when_it_resumes() {
    let (_root, ports, drives, layout) = Cluster::plan(3, 3);
    let nodes: Vec<TestServer> = (0..3)
        .map(|i| {
            let mut options = node_options(ports[i], &drives[i], &layout, EC);
            // The drive deadline at its default (30 s): only telling that the node as a
            // whole stopped answering keeps a pause from holding requests that long.
            options
                .env
                .retain(|(name, _)| name != "STRATA_DRIVE_TIMEOUT_SECS");
            TestServer::start_with(options)
        })
        .collect();
    let (first, second) = (nodes[0].client(), nodes[1].client());
    create_bucket(&first, BUCKET).await;
    for i in 0..5 {
        put(&first, BUCKET, &format!("before-{i}"), &body(i)).await;
    }

    nodes[2].signal("-STOP");
    tokio::time::sleep(Duration::from_secs(4)).await;
    // Writes, reads and listings go on through the two other nodes, none of them waiting
    // for the paused node's drives.
    let started = Instant::now();
    for i in 0..5 {
        let client = if i % 2 == 0 { &first } else { &second };
        put(client, BUCKET, &format!("paused-{i}"), &body(100 + i)).await;
        assert_object(client, BUCKET, &format!("before-{i}"), &body(i)).await;
    }
    let listed = second
        .list_objects_v2()
        .bucket(BUCKET)
        .send()
        .await
        .unwrap();
    assert_eq!(listed.key_count(), Some(10));
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(15),
        "requests waited for the paused node: {took:?} (the drive deadline is 30 s)"
    );
    // The liveness check counts its drives out within seconds (polled: on a loaded machine
    // its next probe may come a little after the requests above).
    let counted_by = Instant::now() + Duration::from_secs(20);
    while !ready_body(&nodes[0]).await.contains(r#""online":6"#) {
        assert!(
            Instant::now() < counted_by,
            "node 1 counts the paused node's drives out"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    // Resumed: its drives are taken back and given what they missed.
    nodes[2].signal("-CONT");
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let healed = shard_count(&drives[2]) == shard_count(&drives[0]);
        if healed && ready_body(&nodes[0]).await.contains(r#""online":9"#) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the resumed node did not catch up: {} shard files on it, {} on node 1",
            shard_count(&drives[2]),
            shard_count(&drives[0])
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(
        shard_count(&drives[2]),
        10 * 3,
        "a shard per object and drive"
    );
    let third = nodes[2].client();
    for i in 0..5 {
        assert_object(&third, BUCKET, &format!("paused-{i}"), &body(100 + i)).await;
        assert_object(&third, BUCKET, &format!("before-{i}"), &body(i)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_paused_longer_than_its_drive_deadline_blames_no_drive_when_it_resumes() {
    // Drive deadline 2 s (the harness's), a pause of 5 s with requests in flight through the
    // paused node: on resuming, its calls have all overrun their deadlines, through no fault
    // of any drive.
    let cluster = Cluster::start(3, 3, EC);
    let paused = &cluster.nodes[2];
    let client = paused.client();
    create_bucket(&client, BUCKET).await;
    // Three times, as whether a call is caught mid-way differs from pause to pause.
    for pause in 0..3 {
        let busy: Vec<_> = (0..8)
            .map(|worker| {
                let client = client.clone();
                tokio::spawn(async move {
                    for i in 0.. {
                        let sent = (client.put_object())
                            .bucket(BUCKET)
                            .key(format!("busy-{pause}-{worker}-{i}"))
                            .body(body(i).into())
                            .send()
                            .await;
                        if sent.is_err() {
                            break;
                        }
                    }
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(300)).await;
        paused.signal("-STOP");
        tokio::time::sleep(Duration::from_secs(3)).await;
        paused.signal("-CONT");
        for worker in busy {
            worker.abort();
        }

        // At once, not after a cool-down of the drives it would have blamed.
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            let put = (client.put_object())
                .bucket(BUCKET)
                .key("after")
                .body(body(pause).into())
                .send()
                .await;
            if put.is_ok() && ready_body(paused).await.contains(r#""online":9"#) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "after pause {pause} the resumed node still serves around its drives: {put:?} {}",
                ready_body(paused).await
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert_object(&client, BUCKET, "after", &body(pause)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_whose_drives_are_wiped_is_healed_while_the_cluster_serves() {
    let cluster = Cluster::start(3, 3, EC);
    let clients: Vec<_> = cluster.nodes.iter().map(TestServer::client).collect();
    create_bucket(&clients[0], BUCKET).await;
    for i in 0..6 {
        put(&clients[i % 3], BUCKET, &format!("before-{i}"), &body(i)).await;
    }

    // Node 3 loses its disks: new, empty ones in their place, and it starts again.
    cluster.nodes[2].kill();
    for folder in &cluster.drives[2] {
        std::fs::remove_dir_all(folder).unwrap();
        std::fs::create_dir_all(folder).unwrap();
    }
    cluster.nodes[2].restart();

    // Meanwhile every node serves, the wiped one too, from the drives that hold the data.
    for i in 0..6 {
        put(
            &clients[i % 3],
            BUCKET,
            &format!("during-{i}"),
            &body(100 + i),
        )
        .await;
        for client in &clients {
            assert_object(client, BUCKET, &format!("before-{i}"), &body(i)).await;
        }
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while shard_count(&cluster.drives[2]) < 12 * 3 {
        assert!(
            Instant::now() < deadline,
            "the wiped drives were not healed: {} shard files of 36",
            shard_count(&cluster.drives[2])
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    // The healed drives stand in for another node's: with node 1 gone, nodes 2 and 3 hold
    // six drives, and every object reads back whole through either.
    cluster.nodes[0].kill();
    for client in &clients[1..] {
        for i in 0..6 {
            assert_object(client, BUCKET, &format!("before-{i}"), &body(i)).await;
            assert_object(client, BUCKET, &format!("during-{i}"), &body(100 + i)).await;
        }
        let listed = list_all_keys(client, BUCKET, None).await;
        assert_eq!(listed.len(), 12, "{listed:?}");
    }
}
