//! The whole single-PUT pipeline through `ObjectStore::put_object` (MD5 ETag, 6+3 encode,
//! xxh3 bitrot, writes to 9 drive folders with fdatasync, metadata commit) for a 256 MiB
//! object arriving in 64 KiB chunks, each figure beside a baseline measured in the same run:
//!
//! - 1 PUT vs MD5 alone over the same bytes: a single PUT cannot beat its ETag hash.
//! - 2 and 4 concurrent PUTs vs raw writes of the same shard bytes (user bytes x 9/6) to 9
//!   files on the same filesystem, 4 MiB writes + fdatasync, one thread per file: the disk
//!   ceiling.
//!
//! Rates are GB/s (10^9 B/s) of user data unless marked "disk". The drive folders live under
//! `CARGO_TARGET_TMPDIR` (target/tmp, on the repository's disk: /tmp may be tmpfs).
//!
//! Run: `cargo bench --bench put`. The `summary:` lines at the end are medians of 5 runs, each
//! run of the pipeline alternating with a run of its baseline on this shared, noisy machine.

mod common;

use std::fs::{self, File};
use std::hint::black_box;
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use futures::future::join_all;
use rand::RngCore;
use strata::body::ByteStream;
use strata::object::{BucketName, ObjectKey, ObjectStore, PutOptions};
use tempfile::TempDir;
use tokio::runtime::Runtime;

use common::stats::median;
use common::store::{bucket, open_store};
use common::{DATA, PARITY};

const OBJECT: usize = 256 << 20;
/// Body chunk size, as a network read would hand them over.
const CHUNK: usize = 64 << 10;
/// Write size of the raw-disk baseline.
const RAW_WRITE: usize = 4 << 20;
/// Summary runs per figure: 5 rather than 7 keeps `cargo bench --bench put` under 3 minutes.
const RUNS: usize = 5;

struct Fixture {
    /// Drive folders `d1`..`d9` and the raw baseline's files; removed on drop.
    dir: TempDir,
    runtime: Runtime,
    store: Arc<ObjectStore>,
    bucket: BucketName,
    /// Random bytes: the disk must not see zeros, which virtual disks may shortcut.
    data: Bytes,
}

impl Fixture {
    fn new() -> Self {
        let dir = common::temp_dir("put-bench-");
        let store = open_store(&common::drives(dir.path()));
        let bucket = bucket("bench");
        // Multi-threaded like the server: one worker per core, blocking pool for drive I/O.
        let runtime = Runtime::new().expect("runtime starts");
        runtime
            .block_on(store.create_bucket(&bucket))
            .expect("bucket");
        let mut data = vec![0u8; OBJECT];
        rand::rng().fill_bytes(&mut data);
        Self {
            dir,
            runtime,
            store,
            bucket,
            data: data.into(),
        }
    }

    /// Time for `n` concurrent PUTs of the object, each on its own task like separate requests.
    fn put(&self, n: usize) -> Duration {
        self.runtime.block_on(async {
            let keys: Vec<ObjectKey> = (0..n)
                .map(|i| ObjectKey::parse(&format!("object-{i}")).expect("valid key"))
                .collect();
            let start = Instant::now();
            let puts = keys.iter().map(|key| {
                let (store, bucket, key) = (self.store.clone(), self.bucket.clone(), key.clone());
                let body = body(self.data.clone());
                tokio::spawn(async move {
                    store
                        .put_object(&bucket, &key, body, PutOptions::default())
                        .await
                })
            });
            for put in join_all(puts).await {
                put.expect("task").expect("put");
            }
            let elapsed = start.elapsed();
            // Not timed: deleting keeps the disk from filling up over the runs.
            for key in &keys {
                self.store
                    .delete_object(&self.bucket, key, None)
                    .await
                    .expect("delete");
            }
            elapsed
        })
    }

    /// Time to write the shard bytes of `n` objects (n x 9/6 x 256 MiB) to 9 files, one
    /// thread per file, 4 MiB writes then fdatasync: the pipeline's disk ceiling.
    fn raw_write(&self, n: usize) -> Duration {
        let dir = self.dir.path().join("raw");
        fs::create_dir_all(&dir).expect("raw folder");
        let per_file = raw_bytes(n) / (DATA + PARITY);
        let start = Instant::now();
        std::thread::scope(|scope| {
            for i in 0..DATA + PARITY {
                let (path, data) = (dir.join(format!("shard-{i}")), &self.data);
                scope.spawn(move || {
                    let mut file = File::create(path).expect("create");
                    let mut written = 0;
                    while written < per_file {
                        let len = RAW_WRITE.min(per_file - written);
                        // Different bytes per file and write, as shard files would hold.
                        let at = (i * per_file + written) % (data.len() - RAW_WRITE);
                        file.write_all(&data[at..at + len]).expect("write");
                        written += len;
                    }
                    file.sync_data().expect("fdatasync");
                });
            }
        });
        let elapsed = start.elapsed();
        fs::remove_dir_all(&dir).expect("remove raw files");
        elapsed
    }

    /// Time for MD5 alone over the object, fed in the same 64 KiB chunks, with the MD5
    /// code the server uses (md5-many's single-stream path), so that the ratio measures the
    /// pipeline and not the choice of MD5 implementation.
    fn md5(&self) -> Duration {
        let start = Instant::now();
        let mut md5 = md5_many::Md5State::new();
        for chunk in self.data.chunks(CHUNK) {
            md5.update(chunk);
        }
        black_box(md5.finalize());
        start.elapsed()
    }
}

/// The object as a request body: 64 KiB chunks, all ready (the network is never the limit).
fn body(data: Bytes) -> ByteStream {
    let chunks = (0..data.len())
        .step_by(CHUNK)
        .map(move |at| Ok(data.slice(at..(at + CHUNK).min(data.len()))));
    Box::pin(futures::stream::iter(chunks))
}

/// Bytes of shard data that `n` objects put on disk.
fn raw_bytes(n: usize) -> usize {
    n * OBJECT * (DATA + PARITY) / DATA
}

/// User data the disk can take at `disk_gbps` of writes: 6 of every 9 bytes written are data.
fn user_ceiling(disk_gbps: f64) -> f64 {
    disk_gbps * DATA as f64 / (DATA + PARITY) as f64
}

fn gbps(bytes: usize, time: Duration) -> f64 {
    bytes as f64 / time.as_secs_f64() / 1e9
}

fn put(c: &mut Criterion) {
    let f = Fixture::new();
    let mut group = c.benchmark_group("put_256MiB");
    // An iteration takes about a second: the fewest samples criterion allows, one iteration
    // each after one warm-up iteration. Criterion warns that 10 samples need longer than the
    // measurement time asked for; that is expected, and keeps the whole run short.
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(1))
        .measurement_time(Duration::from_millis(100))
        .nresamples(10_000);
    let mut row = |name: String, bytes: usize, op: &dyn Fn() -> Duration| {
        group
            .throughput(Throughput::BytesDecimal(bytes as u64))
            .bench_function(name, |b| b.iter_custom(|n| (0..n).map(|_| op()).sum()));
    };
    row("md5_alone".into(), OBJECT, &|| f.md5());
    row("put_x1".into(), OBJECT, &|| f.put(1));
    for n in [2, 4] {
        row(format!("put_x{n}"), n * OBJECT, &|| f.put(n));
        row(format!("raw_disk_write_x{n}"), raw_bytes(n), &|| {
            f.raw_write(n)
        });
    }
    group.finish();

    println!(
        "summary: PUT of 256 MiB in 64 KiB chunks, 6+3 over 9 folders on one disk, \
         GB/s of user data, median of {RUNS} runs"
    );
    let (mut put, mut md5, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let (p, m) = (gbps(OBJECT, f.put(1)), gbps(OBJECT, f.md5()));
        put.push(p);
        md5.push(m);
        ratio.push(p / m);
    }
    println!(
        "summary: 1 PUT {:.3} GB/s | MD5 alone {:.3} GB/s | PUT/MD5 {:.2} (goal >= 0.9)",
        median(&put),
        median(&md5),
        median(&ratio)
    );
    for n in [2, 4] {
        let (mut put, mut disk, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..RUNS {
            let p = gbps(n * OBJECT, f.put(n));
            let d = gbps(raw_bytes(n), f.raw_write(n));
            put.push(p);
            disk.push(d);
            ratio.push(p / user_ceiling(d));
        }
        let disk = median(&disk);
        println!(
            "summary: {n} concurrent PUTs {:.3} GB/s aggregate | raw disk write {disk:.3} GB/s \
             = ceiling {:.3} GB/s of user data | PUT/ceiling {:.2} (goal >= 0.8)",
            median(&put),
            user_ceiling(disk),
            median(&ratio)
        );
    }
}

criterion_group!(benches, put);
criterion_main!(benches);
