//! What a second server pool costs a small read: 4 KiB GETs through `ObjectStore` from a
//! deployment of one pool (9 drive folders, 6+3) and from one of two pools (9 + 9), the same
//! keys in each, calls alternating between the two on this shared, noisy machine. With two
//! pools a GET first asks each pool whether it holds the key (goal: p50 within 1.2x of one
//! pool). A third deployment is filled while it has one pool and read after it grew a second
//! one: about half its keys are then looked for in the new pool first (until moved there).
//! HEAD of a missing key shows the cost of asking both pools when neither has it, and a PUT
//! of a new key what a write pays to find that no pool holds the key or an upload of it.
//! Then the first pool of that deployment (its 4 KiB keys and 64 objects of 4 MiB) is
//! drained into the second, unpaced: the decommission's rate in objects and bytes per
//! second. Last, a deployment filled the same way is rebalanced after it grew, unpaced:
//! passes until the pools are even, with their rate, and how much each pool holds at the end.
//!
//! Run: `cargo bench --bench pools`. Overrides (env): STRATA_BENCH_KEYS (keys per
//! deployment, 500), STRATA_BENCH_SAMPLES (timed calls per figure, 2000), STRATA_BENCH_PUTS
//! (new-key PUTs of each deployment, 300). The `summary:` line carries the ratios.

mod common;

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use futures::StreamExt;
use strata::object::{GetOptions, MoveProgress, ObjectKey, ObjectStore, PoolState, PutOptions};
use tokio::runtime::Runtime;

use common::env_or;
use common::stats::median;
use common::store::{bucket, open_pooled_store};

fn key(i: usize) -> ObjectKey {
    ObjectKey::parse(&format!("sample/{i:06}")).expect("valid key")
}

async fn get(store: &ObjectStore, i: usize) -> f64 {
    let started = Instant::now();
    let got = (store
        .get_object(&bucket("bench"), &key(i), GetOptions::default())
        .await)
        .expect("get");
    let mut body = got.body;
    let mut len = 0;
    while let Some(chunk) = body.next().await {
        len += chunk.expect("body").len();
    }
    assert_eq!(len, 4096);
    started.elapsed().as_secs_f64() * 1e3
}

async fn head_missing(store: &ObjectStore, i: usize) -> f64 {
    let missing = ObjectKey::parse(&format!("missing/{i}")).expect("valid key");
    let started = Instant::now();
    let head = store.head_object(&bucket("bench"), &missing, None).await;
    assert!(head.is_err(), "the key is absent");
    started.elapsed().as_secs_f64() * 1e3
}

/// A PUT of 4 KiB under a key no pool holds yet: with several pools the write asks each
/// pool whether it holds the key, then whether an upload of it is open there.
async fn put_new(store: &ObjectStore, n: usize, data: &Bytes) -> f64 {
    let name = ObjectKey::parse(&format!("new/{n:06}")).expect("valid key");
    let body = futures::stream::iter([Ok(data.clone())]);
    let started = Instant::now();
    (store
        .put_object(
            &bucket("bench"),
            &name,
            Box::pin(body),
            PutOptions::default(),
        )
        .await)
        .expect("put");
    started.elapsed().as_secs_f64() * 1e3
}

/// `keys` objects of 4 KiB and 64 of 4 MiB written while the deployment under `dir` had one
/// pool; the deployment, opened again with a second pool.
fn grown_deployment(runtime: &Runtime, dir: &std::path::Path, keys: usize) -> Arc<ObjectStore> {
    let pools = [
        common::drives(&dir.join("a")),
        common::drives(&dir.join("b")),
    ];
    let alone = open_pooled_store(&pools[..1]);
    let (small, large) = (
        Bytes::from(vec![7u8; 4096]),
        Bytes::from(vec![5u8; 4 << 20]),
    );
    runtime.block_on(async {
        alone.create_bucket(&bucket("bench")).await.expect("bucket");
        let names = (0..keys).map(|i| (key(i), small.clone()));
        let large_names = (0..64).map(|i| {
            let name = ObjectKey::parse(&format!("large/{i}")).expect("valid key");
            (name, large.clone())
        });
        for (name, data) in names.chain(large_names) {
            let body = futures::stream::iter([Ok(data)]);
            (alone
                .put_object(
                    &bucket("bench"),
                    &name,
                    Box::pin(body),
                    PutOptions::default(),
                )
                .await)
                .expect("put");
        }
    });
    drop(alone);
    open_pooled_store(&pools)
}

fn main() {
    let keys = env_or("STRATA_BENCH_KEYS", 500usize);
    let samples = env_or("STRATA_BENCH_SAMPLES", 2000usize);
    let (one_dir, two_dir) = (
        common::temp_dir("pools-one-"),
        common::temp_dir("pools-two-"),
    );
    let one = open_pooled_store(&[common::drives(one_dir.path())]);
    let two = open_pooled_store(&[
        common::drives(&two_dir.path().join("a")),
        common::drives(&two_dir.path().join("b")),
    ]);
    assert_eq!(two.pools().len(), 2);
    let runtime = Runtime::new().expect("runtime starts");
    let data = Bytes::from(vec![7u8; 4096]);
    runtime.block_on(async {
        for store in [&one, &two] {
            store.create_bucket(&bucket("bench")).await.expect("bucket");
            for i in 0..keys {
                let body = futures::stream::iter([Ok(data.clone())]);
                (store
                    .put_object(
                        &bucket("bench"),
                        &key(i),
                        Box::pin(body),
                        PutOptions::default(),
                    )
                    .await)
                    .expect("put");
            }
        }
    });
    let grown_dir = common::temp_dir("pools-grown-");
    let grown = grown_deployment(&runtime, grown_dir.path(), keys);
    println!("{keys} keys of 4 KiB in each deployment; {samples} GETs of each, alternating");
    let stores: [&Arc<ObjectStore>; 3] = [&one, &two, &grown];
    let (mut gets, mut heads) = ([vec![], vec![], vec![]], [vec![], vec![], vec![]]);
    runtime.block_on(async {
        for n in 0..samples {
            let i = (n * 7919) % keys;
            for (which, store) in stores.iter().enumerate() {
                gets[which].push(get(store, i).await);
                heads[which].push(head_missing(store, n).await);
            }
        }
    });
    let [get_one, get_two, get_grown] = gets.map(|ms| median(&ms));
    let [head_one, head_two, _] = heads.map(|ms| median(&ms));
    println!(
        "4 KiB GET p50: one pool {get_one:.3} ms, two pools {get_two:.3} ms, \
         keys written before the second pool {get_grown:.3} ms"
    );
    println!("HEAD of a missing key p50: one pool {head_one:.3} ms, two pools {head_two:.3} ms");
    let puts = env_or("STRATA_BENCH_PUTS", 300usize);
    let (mut put_one, mut put_two) = (vec![], vec![]);
    runtime.block_on(async {
        for n in 0..puts {
            put_one.push(put_new(&one, n, &data).await);
            put_two.push(put_new(&two, n, &data).await);
        }
    });
    let (put_one, put_two) = (median(&put_one), median(&put_two));
    println!(
        "4 KiB PUT of a new key p50 ({puts} of each, alternating): one pool {put_one:.3} ms, \
         two pools {put_two:.3} ms"
    );
    grown.pools()[0].set_state(PoolState::Decommissioning);
    let progress = MoveProgress::default();
    let started = Instant::now();
    let pass = runtime
        .block_on(grown.drain_pass(0, &progress, || async {}))
        .expect("drain");
    let took = started.elapsed().as_secs_f64();
    assert!(pass.drained(), "{pass:?}");
    let moved = progress.keys.load(std::sync::atomic::Ordering::Relaxed);
    let bytes = progress.bytes.load(std::sync::atomic::Ordering::Relaxed);
    println!(
        "drain of the first pool: {moved} objects, {:.0} MiB in {took:.1} s: {:.0} objects/s, {:.0} MB/s",
        bytes as f64 / (1 << 20) as f64,
        moved as f64 / took,
        bytes as f64 / took / 1e6
    );
    drop(grown);
    let rebalanced_dir = common::temp_dir("pools-rebalanced-");
    let rebalanced = grown_deployment(&runtime, rebalanced_dir.path(), keys);
    let progress = MoveProgress::default();
    let started = Instant::now();
    let mut passes = 0;
    loop {
        passes += 1;
        let pass = runtime
            .block_on(rebalanced.rebalance_pass(&progress, || true, || async {}))
            .expect("rebalance");
        if pass.balanced() {
            let used: Vec<String> = (pass.usage.iter().flatten())
                .map(|u| format!("{:.0} MiB", u.bytes as f64 / (1 << 20) as f64))
                .collect();
            let took = started.elapsed().as_secs_f64();
            let moved = progress.keys.load(std::sync::atomic::Ordering::Relaxed);
            let bytes = progress.bytes.load(std::sync::atomic::Ordering::Relaxed);
            println!(
                "rebalance after the second pool was added: {moved} objects, {:.0} MiB in \
                 {took:.1} s over {passes} passes: {:.0} objects/s, {:.0} MB/s; the pools then \
                 hold {}",
                bytes as f64 / (1 << 20) as f64,
                moved as f64 / took,
                bytes as f64 / took / 1e6,
                used.join(" and ")
            );
            break;
        }
    }
    println!(
        "summary: 4 KiB GET two pools / one pool {:.2}x (goal <= 1.2x); keys from before the \
         second pool {:.2}x; missing-key HEAD {:.2}x; new-key 4 KiB PUT {:.2}x",
        get_two / get_one,
        get_grown / get_one,
        head_two / head_one,
        put_two / put_one
    );
}
