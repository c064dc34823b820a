//! Crash consistency: the server is SIGKILLed while PUTs are in flight and restarted on the
//! same drives. Every acknowledged PUT must be readable; a key whose overwrite was in flight
//! holds either its last acknowledged content or the in-flight one, never an error or a mix.
//! (research/reliability.md 1.3; page-cache loss is not simulated: kill -9 keeps it.)

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;

/// Per key: the last acknowledged version and the version in flight (if any).
#[derive(Clone, Copy, Debug, Default)]
struct KeyState {
    acked: u64,
    in_flight: Option<u64>,
}

fn key_size(key_index: usize) -> usize {
    // Alternate inline and erasure-coded (multi-block) objects.
    if key_index.is_multiple_of(2) {
        50 * KIB
    } else {
        MIB + MIB / 2 + 3
    }
}

fn content(key_index: usize, version: u64) -> Vec<u8> {
    payload(key_size(key_index), (key_index as u64) << 32 | version)
}

#[tokio::test]
async fn kill_during_overwrites_keeps_old_or_new_content() {
    // Kill points spread over 8..250 ms after the writer starts; more rounds with
    // STRATA_CRASH_ROUNDS=N.
    let rounds: u64 = std::env::var("STRATA_CRASH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    kill_while_writing(1, 6, rounds).await;
}

/// Sixteen writers at once, each over its own keys: their metadata commits share drive
/// transactions (group commit), and a kill in the middle of one loses no acknowledged write
/// and mixes none.
#[tokio::test]
async fn kill_during_concurrent_overwrites_keeps_old_or_new_content() {
    kill_while_writing(16, 2, 6).await;
}

/// Rounds of: `writers` tasks overwrite their `keys_each` keys in turn until the server is
/// SIGKILLed; it restarts on the same drives and every key must hold its last acknowledged
/// content or the one in flight.
async fn kill_while_writing(writers: usize, keys_each: usize, rounds: u64) {
    let keys = writers * keys_each;
    let server = TestServer::start();
    let bucket = unique_bucket("crash");
    {
        let client = server.client();
        create_bucket(&client, &bucket).await;
        for k in 0..keys {
            put(&client, &bucket, &format!("key-{k}"), &content(k, 0)).await;
        }
    }
    let states = Arc::new(Mutex::new(vec![KeyState::default(); keys]));
    let mut next_version = 1u64;
    for round in 0..rounds {
        let delay_ms = 8 + (round * 47) % 243;
        let tasks: Vec<_> = (0..writers)
            .map(|w| {
                let (client, states, bucket) = (server.client(), states.clone(), bucket.clone());
                let mine = w * keys_each..(w + 1) * keys_each;
                let first = next_version;
                tokio::spawn(async move {
                    let mut version = first;
                    loop {
                        for k in mine.clone() {
                            states.lock().unwrap()[k].in_flight = Some(version);
                            let res = client
                                .put_object()
                                .bucket(&bucket)
                                .key(format!("key-{k}"))
                                .body(content(k, version).into())
                                .send()
                                .await;
                            match res {
                                Ok(_) => {
                                    let mut s = states.lock().unwrap();
                                    s[k].acked = version;
                                    s[k].in_flight = None;
                                }
                                // The server died: this write may or may not have landed.
                                Err(_) => return version + 1,
                            }
                            version += 1;
                        }
                    }
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        server.kill();
        for task in tasks {
            next_version = next_version.max(task.await.expect("writer task"));
        }

        server.restart();
        let client = server.client();
        let snapshot = states.lock().unwrap().clone();
        let mut observed = BTreeMap::new();
        for (k, state) in snapshot.iter().enumerate() {
            let key = format!("key-{k}");
            let out = client.get_object().bucket(&bucket).key(&key).send().await;
            let body = match out {
                Ok(o) => o
                    .body
                    .collect()
                    .await
                    .unwrap_or_else(|e| panic!("round {round}: GET {key} body: {e:?}"))
                    .into_bytes(),
                Err(e) => panic!(
                    "round {round}: GET {key} after restart failed ({state:?}): {}",
                    describe(&e)
                ),
            };
            let acked = content(k, state.acked);
            let matched = if body.as_ref() == acked.as_slice() {
                state.acked
            } else if let Some(v) = state.in_flight.filter(|&v| body.as_ref() == content(k, v)) {
                v
            } else {
                panic!(
                    "round {round}: {key} holds neither its acknowledged version {} nor the \
                     in-flight one {:?} ({} bytes, sha256 {})",
                    state.acked,
                    state.in_flight,
                    body.len(),
                    sha256_hex(&body)
                );
            };
            observed.insert(key, matched);
            // What is readable now is the new baseline.
            let mut s = states.lock().unwrap();
            s[k].acked = matched;
            s[k].in_flight = None;
        }
        let listed = list_all_keys(&client, &bucket, None).await;
        assert_eq!(
            listed.len(),
            keys,
            "round {round}: listing after restart: {listed:?}"
        );
        eprintln!("round {round} (kill after {delay_ms} ms): versions {observed:?}");
    }
}
