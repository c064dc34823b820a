//! Several nodes: three `strata` processes on loopback, three drive folders each, one 6+3
//! erasure set across them. Any node serves any request; losing a node (SIGKILL) costs
//! nothing; a node that comes back gets what it missed; the drive service admits only
//! callers holding the cluster secret.

mod common;

use std::time::{Duration, Instant};

use aws_sdk_s3::error::ProvideErrorMetadata;
use common::*;

const EC: &str = "6+3";
const BUCKET: &str = "cluster-bucket";

/// What every node of the cluster reads for `key`: the same bytes.
async fn read_on_every_node(cluster: &Cluster, live: &[usize], key: &str, want: &[u8]) {
    for &i in live {
        let client = cluster.nodes[i].client();
        assert_object(&client, BUCKET, key, want).await;
    }
}

fn shard_count(drives: &[std::path::PathBuf]) -> usize {
    drives.iter().map(|d| shard_files(d).len()).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_node_serves_and_losing_one_node_costs_nothing() {
    let cluster = Cluster::start(3, 3, EC);
    let clients: Vec<_> = cluster.nodes.iter().map(TestServer::client).collect();
    create_bucket(&clients[0], BUCKET).await;

    // Written through each node in turn: empty, inline, several blocks.
    let objects = [
        ("empty", Vec::new()),
        ("inline", payload(1000, 1)),
        ("blocks", payload(3 * MIB + 17, 2)),
    ];
    for (i, (key, data)) in objects.iter().enumerate() {
        put(&clients[i % 3], BUCKET, key, data).await;
    }
    for (key, data) in &objects {
        read_on_every_node(&cluster, &[0, 1, 2], key, data).await;
    }
    for (i, drives) in cluster.drives.iter().enumerate() {
        assert_eq!(
            shard_count(drives),
            3,
            "node {} holds its three shards of the 3 MiB object",
            i + 1
        );
    }
    for client in &clients {
        let mut keys = list_all_keys(client, BUCKET, None).await;
        keys.sort();
        assert_eq!(keys, ["blocks", "empty", "inline"]);
    }

    // Node 3 dies: reads, writes and deletes go on through the other two.
    cluster.nodes[2].kill();
    for (key, data) in &objects {
        read_on_every_node(&cluster, &[0, 1], key, data).await;
    }
    let missed = payload(2 * MIB + 5, 3);
    put(
        &clients[1],
        BUCKET,
        "written-while-node-3-was-down",
        &missed,
    )
    .await;
    clients[0]
        .delete_object()
        .bucket(BUCKET)
        .key("inline")
        .send()
        .await
        .expect("delete with a node down");
    read_on_every_node(&cluster, &[0, 1], "written-while-node-3-was-down", &missed).await;

    // Node 3 comes back and is healed (by itself at its start, or by the others when its
    // drives answer again): its drives get the new object's shards.
    cluster.nodes[2].restart();
    let deadline = Instant::now() + Duration::from_secs(60);
    while shard_count(&cluster.drives[2]) < 6 {
        assert!(
            Instant::now() < deadline,
            "node 3 did not heal what it missed; its log:\n{}",
            cluster.nodes[2].log_tail(30)
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    // And its copies of the object deleted meanwhile are removed (by whichever node heals
    // first, once no other node's commit can still be answered: about 10 s).
    let purged = |node: &TestServer| {
        node.log()
            .contains("heal: removed the record of a deleted object")
    };
    while !cluster.nodes.iter().any(purged) {
        assert!(
            Instant::now() < deadline,
            "node 3 kept the deleted object's records; its log:\n{}",
            cluster.nodes[2].log_tail(30)
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    // Now node 1 dies: the object written while node 3 was down reads back from nodes 2
    // and 3, so node 3 really holds its shards, and the deleted object stays deleted. Node 2
    // must have seen node 3 answer again first: until its pings do, it serves around node
    // 3's drives, and without node 1 it would rightly answer 503.
    wait_ready(&cluster.nodes[1], 200, r#""online":9"#).await;
    cluster.nodes[0].kill();
    read_on_every_node(&cluster, &[1, 2], "written-while-node-3-was-down", &missed).await;
    read_on_every_node(&cluster, &[1, 2], "blocks", &objects[2].1).await;
    let gone = cluster.nodes[2]
        .client()
        .get_object()
        .bucket(BUCKET)
        .key("inline")
        .send()
        .await;
    assert_s3_error(
        gone,
        404,
        "NoSuchKey",
        "a key deleted while node 3 was down",
    );
}

#[tokio::test]
async fn a_layout_where_one_lost_node_stops_writes_is_refused() {
    // Two nodes of three drives at 4+2: each node would hold three drives of the set, and
    // losing one would leave three, fewer than a write needs.
    let (_root, ports, drives, layout) = Cluster::plan(2, 3);
    let refused = TestServer::try_start(node_options(ports[0], &drives[0], &layout, "4+2"))
        .err()
        .expect("the start is refused");
    assert!(refused.exited_nonzero());
    assert!(
        refused.output.contains("--allow-node-loss-risk"),
        "the refusal says how to accept the risk: {}",
        refused.output
    );
}

#[tokio::test]
async fn the_drive_service_admits_only_nodes_holding_the_secret() {
    let cluster = Cluster::start(3, 3, EC);
    let address = cluster.nodes[0].addr();
    let (host, port) = address.rsplit_once(':').unwrap();
    let drive_port: u16 = port.parse::<u16>().unwrap() + 100;
    let url = format!("http://{host}:{drive_port}/_strata/rpc/v2/meta_scan");
    let client = reqwest::Client::new();
    let unsigned = client.post(&url).body("anything").send().await.unwrap();
    assert_eq!(unsigned.status(), 401, "an unsigned drive call is refused");
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        .to_string();
    let forged = client
        .post(&url)
        .header("x-strata-time", now_ms)
        .header("x-strata-nonce", "0123456789abcdef0123456789abcdef")
        .header(
            "x-strata-signature",
            "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        )
        .body("anything")
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 401, "a forged drive call is refused");
}

/// The drive port listens on `--drive-address` and keeps the S3 listener's limits: past the
/// connection cap a connection is closed at once, and one that sends no request in time is
/// closed (before, there was no cap, and one that never finished its request head held a
/// socket forever). 300 idle connections against a cap of 200 stand in for thousands.
#[tokio::test]
async fn the_drive_port_listens_where_told_and_closes_idle_connections() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let plan = Cluster::plan(3, 3);
    let ports = plan.1.clone();
    // Node 1 serves S3 on 127.0.0.2 only, and its drives on 127.0.0.1, where the layout
    // (127.0.0.1:port) sends its peers.
    let cluster = Cluster::start_planned(plan, EC, |i, options| {
        options
            .env
            .push(("STRATA_HEADER_TIMEOUT_SECS".into(), "1".into()));
        if i == 0 {
            (options.env).push(("STRATA_MAX_CONNECTIONS".into(), "200".into()));
            options.address = format!("127.0.0.2:{}", ports[0]);
            options.extra_args = vec![
                "--node".into(),
                format!("127.0.0.1:{}", ports[0]),
                "--drive-address".into(),
                "127.0.0.1".into(),
            ];
        }
    });
    let drive_port = ports[0] + 100;
    assert!(
        tokio::net::TcpStream::connect(("127.0.0.2", drive_port))
            .await
            .is_err(),
        "the drive service is not on the S3 address"
    );
    let unsigned = reqwest::Client::new()
        .post(format!(
            "http://127.0.0.1:{drive_port}/_strata/rpc/v2/meta_scan"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(unsigned.status(), 401);

    // The set spans all three nodes: a write through node 1 and a read through node 2.
    let client = cluster.nodes[0].client();
    create_bucket(&client, BUCKET).await;
    put(&client, BUCKET, "k", b"across nodes").await;
    read_on_every_node(&cluster, &[1, 2], "k", b"across nodes").await;

    // 300 connections that send nothing: those past the cap are closed at once, the rest
    // once the header timeout passes.
    let mut idle = Vec::new();
    for _ in 0..300 {
        let socket = tokio::net::TcpStream::connect(("127.0.0.1", drive_port)).await;
        idle.push(socket.unwrap());
    }
    // Looked at all together, well within the header timeout (1 s).
    let looks = (idle.iter_mut()).map(|socket| closed_within(socket, Duration::from_millis(300)));
    let closed_at_once = (futures::future::join_all(looks).await.into_iter())
        .filter(|&closed| closed)
        .count();
    assert!(
        (100..300).contains(&closed_at_once),
        "{closed_at_once} of 300 closed at once, over a cap of 200"
    );
    for socket in &mut idle {
        assert!(closed_within(socket, Duration::from_secs(10)).await);
    }
    drop(idle);

    // Half a request head, then nothing: closed once the header timeout passes.
    let mut socket = tokio::net::TcpStream::connect(("127.0.0.1", drive_port))
        .await
        .unwrap();
    socket.write_all(b"POST /_strata/rpc/v2/").await.unwrap();
    let mut buffer = [0u8; 256];
    let closed = tokio::time::timeout(Duration::from_secs(10), socket.read(&mut buffer)).await;
    assert!(
        matches!(closed, Ok(Ok(0)) | Ok(Err(_))),
        "the connection was not closed: {closed:?}"
    );
}

/// Whether the other end closes `socket` (or resets it) within `limit`.
async fn closed_within(socket: &mut tokio::net::TcpStream, limit: Duration) -> bool {
    use tokio::io::AsyncReadExt;
    let mut buffer = [0u8; 16];
    let read = tokio::time::timeout(limit, socket.read(&mut buffer)).await;
    matches!(read, Ok(Ok(0)) | Ok(Err(_)))
}

/// `/health/ready` of one node, unauthenticated as a load balancer asks.
async fn ready(node: &TestServer) -> (u16, String) {
    let response = reqwest::get(node.url("/health/ready")).await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

/// Waits (up to 30 s) for node's readiness to answer `status` with `detail` in its body.
async fn wait_ready(node: &TestServer, status: u16, detail: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (now, body) = ready(node).await;
        if now == status && body.contains(detail) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "readiness stayed {now}, wanted {status} with {detail}: {body}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test]
async fn readiness_follows_the_other_nodes() {
    let cluster = Cluster::start(3, 3, EC);
    let first = &cluster.nodes[0];
    wait_ready(first, 200, r#""online":9"#).await;

    // One node down: 6 of 9 drives answer, as many as a write needs.
    let gone = cluster.nodes[2].endpoint().replace("http://", "");
    cluster.nodes[2].kill();
    wait_ready(first, 200, r#""online":6"#).await;
    // And `strata admin info` says which node is down, as node 1's pings see it.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let info = strata_admin(first, &["info"]);
        let table = String::from_utf8_lossy(&info.stdout).into_owned();
        let row = table.lines().find(|l| l.trim_start().starts_with(&gone));
        if row.is_some_and(|row| row.contains("down")) {
            assert!(table.contains("no etcd"), "{table}");
            break;
        }
        assert!(Instant::now() < deadline, "{gone} not shown down:\n{table}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    // Two down: node 1 alone cannot take writes, and says so.
    cluster.nodes[1].kill();
    wait_ready(first, 503, "set 1 has 3 of 9 drives online, writes need 6").await;

    // Back: ready again, and writes go through.
    cluster.nodes[1].restart();
    wait_ready(first, 200, r#""online":6"#).await;
    let client = first.client();
    create_bucket(&client, BUCKET).await;
    put(&client, BUCKET, "after", b"back").await;
    assert_object(&cluster.nodes[1].client(), BUCKET, "after", b"back").await;
}

#[tokio::test]
async fn a_node_whose_drives_come_back_blank_never_decides_a_key_is_gone() {
    // Two nodes of three drives at 4+2, the risk accepted: each node holds three drives of
    // the set, more than its parity, so three blank drives would outvote the three that
    // hold an object if they could vote that it is absent.
    let (_root, ports, drives, layout) = Cluster::plan(2, 3);
    let start = |i: usize| {
        TestServer::start_with(ServerOptions {
            extra_args: vec!["--allow-node-loss-risk".into()],
            ..node_options(ports[i], &drives[i], &layout, "4+2")
        })
    };
    let (first, second) = (start(0), start(1));
    let client = first.client();
    create_bucket(&client, BUCKET).await;
    let data = payload(300 * KIB, 9);
    put(&client, BUCKET, "kept", &data).await;
    let held = shard_count(&drives[0]);
    assert_eq!(held, 3, "node 1 holds three shards");

    // Node 2 loses its disks: same folders, empty, and it starts again.
    second.kill();
    for folder in &drives[1] {
        std::fs::remove_dir_all(folder).unwrap();
        std::fs::create_dir_all(folder).unwrap();
    }
    second.restart();

    // Three shards are not enough to read (4 needed): the answer is 503, never 404, and
    // node 1's shards stay, whatever the heal passes of both nodes try meanwhile.
    for _ in 0..8 {
        let got = client.get_object().bucket(BUCKET).key("kept").send().await;
        assert_s3_status(got, 503, "an object whose shards are on too few drives");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(shard_count(&drives[0]), held, "node 1 kept its shards");
    assert!(
        second
            .log()
            .contains("formatted an empty drive into its position"),
        "node 2's blank drives joined as replacements: {}",
        second.log_tail(20)
    );
}

/// A deployment with users but no bucket yet is not new either: a node whose drives come
/// back blank while the other holds a user joins them as replacements, so they never vote
/// the user absent.
#[tokio::test]
async fn a_node_whose_drives_come_back_blank_beside_only_users_joins_them_as_replacements() {
    let (_root, ports, drives, layout) = Cluster::plan(2, 3);
    let start = |i: usize| {
        TestServer::start_with(ServerOptions {
            extra_args: vec!["--allow-node-loss-risk".into()],
            ..node_options(ports[i], &drives[i], &layout, "4+2")
        })
    };
    let (first, second) = (start(0), start(1));
    let added = strata_admin(
        &first,
        &["user", "add", "trainer", "--secret", "trainer-secret-1234"],
    );
    assert!(added.status.success(), "{added:?}");

    second.kill();
    for folder in &drives[1] {
        std::fs::remove_dir_all(folder).unwrap();
        std::fs::create_dir_all(folder).unwrap();
    }
    second.restart();
    assert!(
        second
            .run_log()
            .contains("formatted an empty drive into its position"),
        "node 2's blank drives joined as replacements: {}",
        second.log_tail(20)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_certificates_nodes_speak_tls_to_each_other() {
    let ca = Ca::new("strata test cluster CA");
    let (cert, key, _) = ca.server_cert("strata node");
    let certs = tempfile::tempdir().unwrap();
    write_certs(certs.path(), &cert, &key);
    // Every node trusts the authority in CAs/ when it calls another.
    std::fs::create_dir(certs.path().join("CAs")).unwrap();
    std::fs::write(certs.path().join("CAs/ca.crt"), &ca.pem).unwrap();

    let (_root, ports, drives, layout) = Cluster::plan(3, 3);
    let nodes: Vec<TestServer> = (0..3)
        .map(|i| {
            let mut options = node_options(ports[i], &drives[i], &layout, EC);
            options.extra_args = vec!["--certs-dir".into(), certs.path().display().to_string()];
            TestServer::start_with(options)
        })
        .collect();
    let first = https_client(&nodes[0].endpoint(), &ca.pem);
    let second = https_client(&nodes[1].endpoint(), &ca.pem);
    create_bucket(&first, BUCKET).await;
    let body: Vec<u8> = (0..300_000u32).map(|i| (i % 253) as u8).collect();
    put(&first, BUCKET, "over-tls", &body).await;
    assert_object(&second, BUCKET, "over-tls", &body).await;
    // Six of each object's nine shards went to the other nodes' drives, over TLS.
    assert_eq!(shard_count(&drives[1]) + shard_count(&drives[2]), 6);

    // The drive port speaks only TLS: a plain HTTP call is told so, and served nothing.
    let drive_port = ports[1] + 100;
    let plain = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{drive_port}/_strata/rpc/v2/ping"))
        .timeout(Duration::from_secs(5))
        .send()
        .await;
    if let Ok(answer) = plain {
        assert_eq!(answer.status(), 400);
        let text = answer.text().await.unwrap();
        assert!(text.contains("HTTP request to an HTTPS server"), "{text}");
    }
}

/// A conditional delete (`If-Match` on the ETag a reader listed) through one node racing an
/// overwrite of the key through another, in a versioned bucket, round after round: the delete
/// is either refused (412, and no delete marker exists) or its delete marker lies below the
/// overwrite, over the version it named. A condition judged apart from the commit would let
/// the marker land over the overwrite it never saw.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conditional_delete_racing_an_overwrite_on_another_node_removes_only_what_it_named() {
    const ROUNDS: u32 = 30;
    let cluster = Cluster::start(3, 3, EC);
    let (writer, deleter) = (cluster.nodes[1].client(), cluster.nodes[2].client());
    create_bucket(&writer, BUCKET).await;
    let versioning = aws_sdk_s3::types::VersioningConfiguration::builder()
        .status(aws_sdk_s3::types::BucketVersioningStatus::Enabled)
        .build();
    (writer.put_bucket_versioning())
        .bucket(BUCKET)
        .versioning_configuration(versioning)
        .send()
        .await
        .unwrap();
    // A delete is quicker than a PUT: its start is swept across the time a PUT takes, so
    // early deletes win, late ones find the overwrite, and those between race its commit.
    let started = Instant::now();
    put(&writer, BUCKET, "calibration", &payload(64 * 1024, 9)).await;
    let put_time = started.elapsed();

    let (mut deleted, mut refused) = (0, 0);
    for round in 0..ROUNDS {
        let key = format!("ckpt-{round}");
        let listed = put(&cluster.nodes[0].client(), BUCKET, &key, b"old").await;
        let delay = put_time * (round % 10) / 8;
        let new = payload(64 * 1024, u64::from(round));
        let (overwrite, delete) = tokio::join!(put(&writer, BUCKET, &key, &new), async {
            tokio::time::sleep(delay).await;
            (deleter.delete_object())
                .bucket(BUCKET)
                .key(&key)
                .if_match(&listed)
                .send()
                .await
        });
        let versions = (deleter.list_object_versions())
            .bucket(BUCKET)
            .prefix(&key)
            .send()
            .await
            .unwrap();
        let latest_etag = (versions.versions())
            .iter()
            .find(|v| v.is_latest() == Some(true))
            .and_then(|v| v.e_tag().map(str::to_string));
        let markers = versions.delete_markers();
        assert_eq!(
            latest_etag.as_deref(),
            Some(overwrite.as_str()),
            "round {round}: the acknowledged overwrite is not the current version"
        );
        match delete {
            Ok(answer) => {
                deleted += 1;
                assert_eq!(answer.delete_marker(), Some(true), "round {round}");
                assert_eq!(markers.len(), 1, "round {round}: {markers:?}");
                assert_eq!(
                    markers[0].version_id(),
                    answer.version_id(),
                    "round {round}"
                );
            }
            Err(e) => {
                assert_eq!(e.code(), Some("PreconditionFailed"), "round {round}: {e:?}");
                refused += 1;
                assert!(
                    markers.is_empty(),
                    "round {round}: a refused delete left {markers:?}"
                );
            }
        }
    }
    assert!(
        deleted > 0 && refused > 0,
        "both sides win some rounds: {deleted} deleted, {refused} refused"
    );
}

/// Appends at one offset through every node at once, round after round: exactly one wins,
/// the others are told the offset no longer holds, and the object is the base plus the
/// winner's bytes. Appends judged apart from their commit would let two land, one over the
/// other, each acknowledged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_racing_at_one_offset_through_different_nodes_have_exactly_one_winner() {
    const ROUNDS: u64 = 10;
    let cluster = Cluster::start(3, 3, EC);
    let clients: Vec<_> = cluster.nodes.iter().map(|n| n.client()).collect();
    create_bucket(&clients[0], BUCKET).await;
    for round in 0..ROUNDS {
        let key = format!("log-{round}");
        let base = payload(200 * 1024, round);
        put(&clients[0], BUCKET, &key, &base).await;
        let segments: Vec<Vec<u8>> = (0..clients.len() as u64)
            .map(|i| payload(64 * 1024, 100 * round + i))
            .collect();
        let appends = clients.iter().zip(&segments).map(|(client, segment)| {
            (client.put_object())
                .bucket(BUCKET)
                .key(&key)
                .write_offset_bytes(base.len() as i64)
                .body(segment.clone().into())
                .send()
        });
        let answers = futures::future::join_all(appends).await;
        let winners: Vec<usize> = (answers.iter().enumerate())
            .filter_map(|(i, a)| a.is_ok().then_some(i))
            .collect();
        assert_eq!(winners.len(), 1, "round {round}: {answers:?}");
        for answer in &answers {
            if let Err(e) = answer {
                assert_eq!(e.code(), Some("InvalidWriteOffset"), "round {round}: {e:?}");
            }
        }
        let expected = [base.as_slice(), &segments[winners[0]]].concat();
        for client in &clients {
            let got = get(client, BUCKET, &key).await;
            assert_same_bytes(&got, &expected, &format!("round {round}"));
        }
    }
}
