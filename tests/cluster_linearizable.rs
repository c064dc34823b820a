//! Linearizability of single keys across nodes: clients on all three nodes of a cluster PUT,
//! GET, DELETE and write conditionally (`If-None-Match: *`, `If-Match`) on a few keys while
//! a node is killed and brought back, while another is paused with SIGSTOP first, and while
//! one is cut off by a network partition (each node's traffic to the others goes through the
//! harness's proxies, `common::Network`); each key's recorded history must be explained by one
//! register changing at one instant per operation (`common::linearizability`). Operations
//! that time out or fail with a 5xx count as maybe applied. Renames raced onto shared keys from
//! every node are checked the same way, each rename projected on the keys it touches.

mod common;
// Here only, not in `common`: its own unit tests then run once, in this binary.
#[path = "common/linearizability.rs"]
mod linearizability;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::BucketVersioningStatus;
use aws_sdk_s3::Client;
use common::*;
use linearizability::{check_keys, Event, Op, Outcome};
use rand::Rng;

const EC: &str = "6+3";
const BUCKET: &str = "registers";
const KEYS: [&str; 3] = ["a", "b", "c"];
const CLIENTS_PER_NODE: usize = 2;
const RUN: Duration = Duration::from_secs(14);
/// The answered operations a run needs to say anything; on a loaded machine the clients go
/// on after the faults (up to another `RUN`) until they have them.
const ENOUGH: usize = 100;

type Histories = Arc<Mutex<BTreeMap<String, Vec<Event>>>>;

fn etag(value: u64) -> String {
    format!("\"{}\"", hex::encode(md5_of(value.to_string().as_bytes())))
}

fn md5_of(bytes: &[u8]) -> [u8; 16] {
    use md5::Digest;
    md5::Md5::digest(bytes).into()
}

/// What an error says of whether the operation took effect.
fn outcome_of_error<E: ProvideErrorMetadata>(
    error: &aws_sdk_s3::error::SdkError<E, aws_sdk_s3::config::http::HttpResponse>,
    op: Op,
) -> Outcome {
    match (op, error.code(), status_of(error)) {
        (Op::Get, Some("NoSuchKey"), _) => Outcome::Read(None),
        (Op::PutIfAbsent { .. } | Op::PutIfMatch { .. }, Some("PreconditionFailed"), _) => {
            Outcome::Refused
        }
        (Op::PutIfMatch { .. }, Some("NoSuchKey"), _) => Outcome::Missing,
        // No answer, a server error, or a conflict between conditional writers: it may have
        // been applied.
        (_, _, None) => Outcome::Unknown,
        (_, _, Some(status)) if status >= 500 || status == 409 => Outcome::Unknown,
        (_, code, status) => panic!("unexpected answer to {op:?}: {status:?} {code:?}"),
    }
}

async fn perform(client: &Client, key: &str, op: Op) -> Outcome {
    let put = |value: u64| {
        (client.put_object())
            .bucket(BUCKET)
            .key(key)
            .body(ByteStream::from(value.to_string().into_bytes()))
    };
    match op {
        Op::Put { value } => match put(value).send().await {
            Ok(_) => Outcome::Done,
            Err(e) => outcome_of_error(&e, op),
        },
        Op::PutIfAbsent { value } => match put(value).if_none_match("*").send().await {
            Ok(_) => Outcome::Done,
            Err(e) => outcome_of_error(&e, op),
        },
        Op::PutIfMatch { expected, value } => {
            match put(value).if_match(etag(expected)).send().await {
                Ok(_) => Outcome::Done,
                Err(e) => outcome_of_error(&e, op),
            }
        }
        Op::Delete => match client.delete_object().bucket(BUCKET).key(key).send().await {
            Ok(_) => Outcome::Done,
            Err(e) => outcome_of_error(&e, op),
        },
        Op::Get => perform_get(client, BUCKET, key).await,
    }
}

fn answered(log: &Histories) -> usize {
    (log.lock().unwrap().values().flatten())
        .filter(|e| e.outcome != Outcome::Unknown)
        .count()
}

/// One client: random operations on random keys until `until` (and past it, up to another
/// `RUN`, while the clients together have fewer than `ENOUGH` answered), each recorded.
async fn run_client(id: usize, client: Client, start: Instant, until: Instant, log: Histories) {
    let mut sequence = 0u64;
    // The last value this client saw on each key: what its If-Match writes expect.
    let mut seen: BTreeMap<&str, u64> = BTreeMap::new();
    let go_on = || {
        let now = Instant::now();
        now < until || (now < until + RUN && answered(&log) < ENOUGH)
    };
    while go_on() {
        let key = KEYS[rand::rng().random_range(0..KEYS.len())];
        sequence += 1;
        let value = (id as u64 + 1) * 1_000_000 + sequence;
        let op = match rand::rng().random_range(0..10) {
            0..=3 => Op::Put { value },
            4..=6 => Op::Get,
            7 => Op::Delete,
            8 => Op::PutIfAbsent { value },
            _ => match seen.get(key) {
                Some(&expected) => Op::PutIfMatch { expected, value },
                None => Op::PutIfAbsent { value },
            },
        };
        let invoked = start.elapsed().as_nanos() as u64;
        let outcome = perform(&client, key, op).await;
        let returned = (outcome != Outcome::Unknown).then(|| start.elapsed().as_nanos() as u64);
        match (op, outcome) {
            (_, Outcome::Read(Some(v))) => {
                seen.insert(key, v);
            }
            (
                Op::Put { value } | Op::PutIfAbsent { value } | Op::PutIfMatch { value, .. },
                Outcome::Done,
            ) => {
                seen.insert(key, value);
            }
            _ => {}
        }
        let event = Event {
            client: id,
            op,
            outcome,
            invoked,
            returned,
        };
        log.lock()
            .unwrap()
            .entry(key.to_string())
            .or_default()
            .push(event);
        if outcome == Outcome::Unknown {
            // The node is likely down: do not pile up operations that may or may not count.
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

/// The faults a run goes through while the clients work.
#[derive(Clone, Copy)]
enum Faults {
    /// A node killed, and started again.
    Kill,
    /// A node paused past its peers' liveness timeout and resumed, its commits in flight
    /// going on late; then another killed and started again.
    PauseThenKill,
    /// A node cut off from the others by the network, both ways, then joined again.
    Partition,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_keys_stay_linearizable_across_nodes_while_one_is_killed_and_restarted() {
    linearizable_under(Faults::Kill).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_keys_stay_linearizable_across_nodes_while_nodes_pause_and_die() {
    linearizable_under(Faults::PauseThenKill).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_keys_stay_linearizable_across_nodes_while_one_is_partitioned_away() {
    linearizable_under(Faults::Partition).await;
}

async fn linearizable_under(faults: Faults) {
    let (cluster, network) = Cluster::start_partitionable(3, 3, EC, None);
    create_bucket(&cluster.nodes[0].client(), BUCKET).await;
    let log: Histories = Arc::default();
    let start = Instant::now();
    let until = start + RUN;
    let mut clients = Vec::new();
    for (index, node) in cluster.nodes.iter().enumerate() {
        for c in 0..CLIENTS_PER_NODE {
            let id = index * CLIENTS_PER_NODE + c;
            // An answer later than this counts as unknown.
            let client = giving_up_after(&node.client(), Duration::from_secs(6));
            clients.push(tokio::spawn(run_client(
                id,
                client,
                start,
                until,
                log.clone(),
            )));
        }
    }
    match faults {
        Faults::Kill => {
            tokio::time::sleep(RUN / 3).await;
            cluster.nodes[2].kill();
            tokio::time::sleep(RUN / 3).await;
            cluster.nodes[2].restart();
        }
        Faults::Partition => {
            tokio::time::sleep(RUN / 3).await;
            network.isolate(2);
            tokio::time::sleep(RUN / 3).await;
            network.heal();
        }
        Faults::PauseThenKill => {
            tokio::time::sleep(RUN / 5).await;
            cluster.nodes[1].signal("-STOP");
            tokio::time::sleep(RUN / 5).await;
            cluster.nodes[1].signal("-CONT");
            tokio::time::sleep(RUN / 10).await;
            cluster.nodes[2].kill();
            tokio::time::sleep(RUN / 5).await;
            cluster.nodes[2].restart();
        }
    }
    for client in clients {
        client.await.unwrap();
    }

    let histories = log.lock().unwrap().clone();
    let total: usize = histories.values().map(Vec::len).sum();
    let determinate = answered(&log);
    assert!(
        determinate >= ENOUGH,
        "too few operations answered to say anything: {determinate} of {total}"
    );
    eprintln!(
        "{total} operations on {} keys, {determinate} answered",
        histories.len()
    );
    if let Err(why) = check_keys(&histories) {
        panic!("not linearizable ({total} operations): {why}");
    }

    // Afterwards every node reads the same value of each key.
    for key in KEYS {
        let mut answers = Vec::new();
        for node in &cluster.nodes {
            let read = perform(&node.client(), key, Op::Get).await;
            answers.push(read);
        }
        assert!(
            answers.windows(2).all(|w| w[0] == w[1]),
            "nodes disagree on {key} after the run: {answers:?}"
        );
    }
}

/// The checkpoint pattern, raced: clients spread over the three nodes each PUT a fresh
/// `tmp/<value>` and rename it onto a shared checkpoint key (every third rename only if the
/// checkpoint still holds the value the client last saw there: `If-Match` on the
/// destination), reading the checkpoint and their own source between renames, in an
/// unversioned and a versioned bucket. Projected on each key, a rename is one register write:
/// on the checkpoint a PUT of the source's value (a conditional one under `If-Match`), on the
/// source a DELETE; each key's history must be linearizable, the destination's and every
/// source's. Eight clients share each checkpoint key: enough to race through every node,
/// while the check of a key stays bounded (its search grows with the writers in flight at
/// once on one key, and 32 at once took minutes in a debug build).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renames_onto_shared_keys_from_many_clients_through_every_node_stay_linearizable() {
    const CLIENTS: usize = 32;
    const CHECKPOINTS: usize = 4;
    const ROUNDS: u64 = 3;
    let cluster = Cluster::start(3, 3, EC);
    let admin = cluster.nodes[0].client();
    let buckets = ["renames", "renames-versioned"];
    for bucket in buckets {
        create_bucket(&admin, bucket).await;
    }
    set_versioning(&admin, buckets[1], BucketVersioningStatus::Enabled).await;
    let log: Histories = Arc::default();
    let start = Instant::now();
    let clients: Vec<_> = (0..CLIENTS)
        .map(|id| {
            let node = &cluster.nodes[id % cluster.nodes.len()];
            let client = giving_up_after(&node.client(), Duration::from_secs(20));
            let log = log.clone();
            tokio::spawn(async move {
                for round in 0..ROUNDS {
                    let bucket = buckets[(id + round as usize) % buckets.len()];
                    let ckpt = format!("ckpt-{}", id % CHECKPOINTS);
                    rename_round(&client, bucket, &ckpt, id, round, start, &log).await;
                }
            })
        })
        .collect();
    for client in clients {
        client.await.unwrap();
    }

    let histories = log.lock().unwrap().clone();
    let renames = (histories.iter())
        .filter(|(key, _)| key.contains("/ckpt-"))
        .flat_map(|(_, events)| events)
        .filter(|e| !matches!(e.op, Op::Get))
        .count();
    assert_eq!(renames as u64, CLIENTS as u64 * ROUNDS);
    let determinate = answered(&log);
    eprintln!(
        "{renames} renames, {determinate} answered operations on {} keys",
        histories.len()
    );
    if let Err(why) = check_keys(&histories) {
        panic!("renames are not linearizable: {why}");
    }
    // Every node then reads the same checkpoints.
    for bucket in buckets {
        for ckpt in (0..CHECKPOINTS).map(|n| format!("ckpt-{n}")) {
            let mut answers = Vec::new();
            for node in &cluster.nodes {
                answers.push(read_value(&node.client(), bucket, &ckpt).await);
            }
            assert!(
                answers.windows(2).all(|w| w[0] == w[1]) && answers[0].is_some(),
                "nodes disagree on {bucket}/{ckpt} after the run: {answers:?}"
            );
        }
    }
}

/// The value at `bucket/key` (None: NoSuchKey, or no answer); any other answer is a failure.
async fn read_value(client: &Client, bucket: &str, key: &str) -> Option<u64> {
    match client.get_object().bucket(bucket).key(key).send().await {
        Ok(found) => {
            let body = found.body.collect().await.expect("body").into_bytes();
            Some(String::from_utf8(body.to_vec()).unwrap().parse().unwrap())
        }
        Err(e) if e.code() == Some("NoSuchKey") => None,
        Err(e) if status_of(&e).is_none_or(|status| status >= 500) => None,
        Err(e) => panic!("GET {bucket}/{key}: {}", describe(&e)),
    }
}

/// One client's round: PUT its source, rename it onto `ckpt`, read the source, read `ckpt`.
async fn rename_round(
    client: &Client,
    bucket: &str,
    ckpt: &str,
    id: usize,
    round: u64,
    start: Instant,
    log: &Histories,
) {
    let value = (id as u64 + 1) * 1_000 + round;
    let source = format!("tmp/{value}");
    let (source_key, ckpt_key) = (format!("{bucket}/{source}"), format!("{bucket}/{ckpt}"));
    let now = || start.elapsed().as_nanos() as u64;
    let record = |key: &str, op: Op, outcome: Outcome, invoked: u64| {
        let returned = (outcome != Outcome::Unknown).then(now);
        let event = Event {
            client: id,
            op,
            outcome,
            invoked,
            returned,
        };
        log.lock()
            .unwrap()
            .entry(key.to_string())
            .or_default()
            .push(event);
    };

    let invoked = now();
    let put = (client.put_object().bucket(bucket).key(&source))
        .body(ByteStream::from(value.to_string().into_bytes()))
        .send()
        .await;
    let put = put
        .map(drop)
        .map_err(|e| outcome_of_error(&e, Op::Put { value }));
    record(
        &source_key,
        Op::Put { value },
        put.err().unwrap_or(Outcome::Done),
        invoked,
    );

    // Every third rename is conditional on the checkpoint the client last read.
    let seen = match round % 3 {
        2 => read_value(client, bucket, ckpt).await,
        _ => None,
    };
    let onto = match seen {
        Some(expected) => Op::PutIfMatch { expected, value },
        None => Op::Put { value },
    };
    let mut rename = (client.rename_object().bucket(bucket).key(ckpt))
        .rename_source(format!("{bucket}/{source}"));
    if let Some(expected) = seen {
        rename = rename.destination_if_match(etag(expected));
    }
    let invoked = now();
    let outcome = match rename.send().await {
        Ok(_) => Outcome::Done,
        Err(e) => match (e.code(), status_of(&e)) {
            (Some("PreconditionFailed"), _) if seen.is_some() => Outcome::Refused,
            (_, None) => Outcome::Unknown,
            (_, Some(status)) if status >= 500 || status == 409 => Outcome::Unknown,
            _ => panic!("rename {source} onto {ckpt}: {}", describe(&e)),
        },
    };
    record(&ckpt_key, onto, outcome, invoked);
    // On the source the rename is a DELETE; a refused one did nothing there.
    if outcome != Outcome::Refused {
        record(&source_key, Op::Delete, outcome, invoked);
    }

    for key in [source.as_str(), ckpt] {
        let invoked = now();
        let read = perform_get(client, bucket, key).await;
        record(&format!("{bucket}/{key}"), Op::Get, read, invoked);
    }
}

async fn perform_get(client: &Client, bucket: &str, key: &str) -> Outcome {
    match client.get_object().bucket(bucket).key(key).send().await {
        Ok(found) => match found.body.collect().await {
            Ok(body) => {
                let text = String::from_utf8(body.into_bytes().to_vec()).unwrap();
                Outcome::Read(Some(text.parse().expect("a value a client wrote")))
            }
            Err(_) => Outcome::Unknown,
        },
        Err(e) => outcome_of_error(&e, Op::Get),
    }
}
