//! Linearizability of single keys across nodes: clients on all three nodes of a cluster PUT,
//! GET, DELETE and write conditionally (`If-None-Match: *`, `If-Match`) on a few keys while
//! a node is killed and brought back, while another is paused with SIGSTOP first, and while
//! one is cut off by a network partition (each node's traffic to the others goes through the
//! harness's proxies, `common::Network`); each key's recorded history must be explained by one
//! register changing at one instant per operation (`common::linearizability`). Operations
//! that time out or fail with a 5xx count as maybe applied.

mod common;
// Here only, not in `common`: its own unit tests then run once, in this binary.
#[path = "common/linearizability.rs"]
mod linearizability;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::primitives::ByteStream;
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
        Op::Get => match client.get_object().bucket(BUCKET).key(key).send().await {
            Ok(found) => match found.body.collect().await {
                Ok(body) => {
                    let text = String::from_utf8(body.into_bytes().to_vec()).unwrap();
                    Outcome::Read(Some(text.parse().expect("a value a client wrote")))
                }
                Err(_) => Outcome::Unknown,
            },
            Err(e) => outcome_of_error(&e, op),
        },
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
