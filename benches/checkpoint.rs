//! The checkpoint verbs through `ObjectStore` over 9 drive folders (6+3, fdatasync, the
//! metadata commit), each beside a baseline taken in the same run:
//!
//! - RenameObject of a large object (10 GiB) vs a 4 KiB PUT: a rename moves no data, so it
//!   should cost about one small write (goal: p50 within 1.5x); and vs the rename of a 1 MiB
//!   object: its cost must not grow with the size (goal: within 1.2x).
//! - An append of 1 MiB to the large object vs a 1 MiB PUT (goal: p50 within 1.3x).
//! - GET of an object built from 1,000 appends of 1 MiB vs GET of the same bytes PUT at once
//!   (goal: at least 0.8x the rate).
//!
//! Run: `cargo bench --bench checkpoint`. Overrides (env): STRATA_BENCH_GIB (the large
//! object, 10), STRATA_BENCH_APPENDS (segments of the appended object, 1000),
//! STRATA_BENCH_SAMPLES (timed calls per latency figure, 40), STRATA_BENCH_RUNS (GET pairs,
//! 3). Latencies are medians of the samples, each call of a figure alternating with one of
//! its baseline on this shared, noisy machine; the `summary:` lines carry the ratios.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use rand::RngCore;
use strata::body::ByteStream;
use strata::object::{BucketName, GetOptions, ObjectKey, ObjectStore, PutOptions, RenameOptions};
use tokio::runtime::Runtime;

use common::env_or;
use common::stats::median;
use common::store::{bucket, open_store};

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;
/// Body chunk size, as a network read would hand them over.
const CHUNK: usize = 64 * KIB;

struct Bench {
    runtime: Runtime,
    store: Arc<ObjectStore>,
    bucket: BucketName,
    /// Random bytes: the disk must not see zeros, which virtual disks may shortcut.
    data: Bytes,
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::parse(name).expect("valid key")
}

/// `len` bytes of `data` from `at` on (wrapping), in network-sized chunks.
fn body(data: &Bytes, at: usize, len: usize) -> ByteStream {
    let data = data.clone();
    let chunks = (0..len.div_ceil(CHUNK)).map(move |i| {
        let start = (at + i * CHUNK) % (data.len() - CHUNK);
        let take = CHUNK.min(len - i * CHUNK);
        Ok(data.slice(start..start + take))
    });
    Box::pin(futures::stream::iter(chunks))
}

fn ms(elapsed: Duration) -> f64 {
    elapsed.as_secs_f64() * 1e3
}

impl Bench {
    fn put(&self, name: &str, len: usize, seed: usize) -> Duration {
        let key = key(name);
        let started = Instant::now();
        let put = self.store.put_object(
            &self.bucket,
            &key,
            body(&self.data, seed * 4099, len),
            PutOptions::default(),
        );
        self.runtime.block_on(put).expect("put");
        started.elapsed()
    }

    fn rename(&self, to: &str, from: &str) -> Duration {
        let (to, from, options) = (key(to), key(from), RenameOptions::default());
        let started = Instant::now();
        let rename = (self.store).rename_object(&self.bucket, &to, &from, &options);
        self.runtime.block_on(rename).expect("rename");
        started.elapsed()
    }

    fn append(&self, name: &str, offset: u64, len: usize) -> Duration {
        let key = key(name);
        let started = Instant::now();
        let append = self.store.append_object(
            &self.bucket,
            &key,
            offset,
            body(&self.data, offset as usize, len),
            PutOptions::default(),
        );
        self.runtime.block_on(append).expect("append");
        started.elapsed()
    }

    /// Reads the whole object; answers the seconds it took.
    fn get(&self, name: &str) -> f64 {
        let key = key(name);
        let started = Instant::now();
        self.runtime.block_on(async {
            let got = (self.store)
                .get_object(&self.bucket, &key, GetOptions::default())
                .await
                .expect("get");
            let mut body = got.body;
            while let Some(chunk) = body.next().await {
                std::hint::black_box(chunk.expect("body"));
            }
        });
        started.elapsed().as_secs_f64()
    }
}

fn main() {
    let large = env_or("STRATA_BENCH_GIB", 10usize) << 30;
    let appends = env_or("STRATA_BENCH_APPENDS", 1000usize);
    let samples = env_or("STRATA_BENCH_SAMPLES", 40usize);
    let runs = env_or("STRATA_BENCH_RUNS", 3usize);

    let dir = common::temp_dir("checkpoint-bench-");
    let store = open_store(&common::drives(dir.path()));
    let runtime = Runtime::new().expect("runtime starts");
    let bucket = bucket("bench");
    runtime
        .block_on(store.create_bucket(&bucket))
        .expect("bucket");
    let mut data = vec![0u8; 64 * MIB];
    rand::rng().fill_bytes(&mut data);
    let bench = Bench {
        runtime,
        store,
        bucket,
        data: data.into(),
    };

    println!(
        "writing the large object ({} GiB) and a 1 MiB one",
        large >> 30
    );
    let wrote = bench.put("large.tmp", large, 1);
    println!(
        "  large PUT: {:.1} s ({:.0} MB/s)",
        wrote.as_secs_f64(),
        large as f64 / wrote.as_secs_f64() / 1e6
    );
    bench.put("small.tmp", MIB, 2);

    // Rename: each sample moves both objects to the other name and back, beside a 4 KiB PUT.
    let (mut put_4k, mut rename_small, mut rename_large) = (vec![], vec![], vec![]);
    let names = [("large.tmp", "large"), ("small.tmp", "small")];
    for i in 0..samples {
        let ((large_from, large_to), (small_from, small_to)) = match i % 2 {
            0 => (names[0], names[1]),
            _ => ((names[0].1, names[0].0), (names[1].1, names[1].0)),
        };
        put_4k.push(ms(bench.put(&format!("small/{i}"), 4 * KIB, i)));
        rename_large.push(ms(bench.rename(large_to, large_from)));
        rename_small.push(ms(bench.rename(small_to, small_from)));
    }
    let large_name = if samples % 2 == 1 {
        "large"
    } else {
        "large.tmp"
    };
    let (put_4k, rename_small, rename_large) = (
        median(&put_4k),
        median(&rename_small),
        median(&rename_large),
    );
    println!("  PUT 4 KiB p50 {put_4k:.2} ms, rename 1 MiB p50 {rename_small:.2} ms, rename large p50 {rename_large:.2} ms");

    // Append 1 MiB to the large object, beside a 1 MiB PUT.
    let (mut put_1m, mut append_1m) = (vec![], vec![]);
    let mut size = large as u64;
    for i in 0..samples {
        put_1m.push(ms(bench.put(&format!("mib/{i}"), MIB, i)));
        append_1m.push(ms(bench.append(large_name, size, MIB)));
        size += MIB as u64;
    }
    let (put_1m, append_1m) = (median(&put_1m), median(&append_1m));
    println!(
        "  PUT 1 MiB p50 {put_1m:.2} ms, append 1 MiB to the large object p50 {append_1m:.2} ms"
    );

    // An object of `appends` segments of 1 MiB, and the same bytes PUT at once.
    println!("building an object of {appends} appends of 1 MiB");
    let built = Instant::now();
    bench.put("appended", MIB, 0);
    for i in 1..appends {
        bench.append("appended", (i * MIB) as u64, MIB);
    }
    println!("  built in {:.1} s", built.elapsed().as_secs_f64());
    bench.put("whole", appends * MIB, 0);
    let bytes = (appends * MIB) as f64;
    let (mut get_whole, mut get_appended) = (vec![], vec![]);
    for _ in 0..runs {
        get_whole.push(bytes / bench.get("whole") / 1e6);
        get_appended.push(bytes / bench.get("appended") / 1e6);
    }
    let (get_whole, get_appended) = (median(&get_whole), median(&get_appended));
    println!(
        "  GET of the PUT object {get_whole:.0} MB/s, of the appended one {get_appended:.0} MB/s"
    );

    let large_gib = large >> 30;
    println!(
        "summary: rename of {large_gib} GiB p50 / PUT 4 KiB p50 = {:.2}x (goal <= 1.5x)",
        rename_large / put_4k
    );
    println!(
        "summary: rename of {large_gib} GiB p50 / rename of 1 MiB p50 = {:.2}x (goal <= 1.2x)",
        rename_large / rename_small
    );
    println!(
        "summary: append of 1 MiB to {large_gib} GiB p50 / PUT 1 MiB p50 = {:.2}x (goal <= 1.3x)",
        append_1m / put_1m
    );
    println!(
        "summary: GET of {appends} appends / GET of one PUT = {:.2}x (goal >= 0.8x)",
        get_appended / get_whole
    );
}
