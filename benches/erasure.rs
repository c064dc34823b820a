//! Erasure coding of one 1 MiB block, 6+3, beside memcpy of the same 1 MiB measured in the
//! same run. Rates are GB/s (10^9 B/s) of user data, i.e. of the 1 MiB block.
//!
//! Run: `cargo bench --bench erasure`. Criterion prints its own estimates; the `summary:` lines
//! at the end are medians of 7 runs, each run alternating with memcpy so that the ratio compares
//! figures taken moments apart on a shared, noisy machine.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rand::RngCore;
use strata::erasure::{Codec, ErasureSet, PartReader, ShardSource, CHECKSUM_LEN};
use strata::storage::{Drive, OfflineDrive};
use tokio::runtime::Runtime;

const BLOCK: usize = 1 << 20;
const DATA: usize = 6;
const PARITY: usize = 3;
/// Data shards dropped for the degraded rows: as many as parity can stand in for.
const LOST: usize = 3;

struct Fixture {
    codec: Codec,
    block: Bytes,
    /// Verified shards of `block`, as `decode_block_pieces` takes them: all, or the first `LOST` missing.
    healthy_shards: Vec<Option<Bytes>>,
    degraded_shards: Vec<Option<Bytes>>,
    /// The server's read path (bitrot verify, then join or reconstruct) over in-memory chunks.
    healthy: PartReader,
    degraded: PartReader,
    runtime: Runtime,
}

impl Fixture {
    fn new() -> Self {
        let codec = Codec::new(DATA, PARITY).expect("6+3 is a valid geometry");
        let mut block = vec![0u8; BLOCK];
        rand::rng().fill_bytes(&mut block);
        let block = Bytes::from(block);
        let chunks: Vec<Bytes> = codec
            .encode_block(&block)
            .iter()
            .map(|c| c.to_bytes())
            .collect();
        let shards = |lost: usize| {
            chunks
                .iter()
                .enumerate()
                .map(|(i, c)| (i >= lost).then(|| c.slice(CHECKSUM_LEN..)))
                .collect()
        };
        // A set of placeholder drives: the readers only touch the inline chunks given here.
        let drives: Vec<Arc<dyn Drive>> = (0..DATA + PARITY)
            .map(|i| Arc::new(OfflineDrive::new(format!("d{i}"))) as Arc<dyn Drive>)
            .collect();
        let set = ErasureSet::new(0, drives, PARITY, BLOCK).expect("set builds");
        let reader = |lost: usize| {
            let sources = chunks
                .iter()
                .enumerate()
                .map(|(i, c)| (i >= lost).then(|| ShardSource::Inline(c.clone())))
                .collect();
            set.part_reader(BLOCK as u64, sources)
                .expect("enough shards")
        };
        Self {
            healthy: reader(0),
            degraded: reader(LOST),
            healthy_shards: shards(0),
            degraded_shards: shards(LOST),
            codec,
            block,
            // The degraded read reconstructs on tokio's blocking pool, as in the server.
            runtime: tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("runtime starts"),
        }
    }

    fn read(&self, reader: &PartReader) -> Bytes {
        let block = self.runtime.block_on(reader.read_block(0)).expect("reads");
        assert_eq!(block.len(), BLOCK);
        block
    }
}

/// One benchmark row: times a single 1 MiB operation, leaving any setup out of the timing.
type Row<'a> = (&'static str, Box<dyn FnMut() -> Duration + 'a>);

fn erasure(c: &mut Criterion) {
    let f = Fixture::new();
    let mut dst = vec![0u8; BLOCK];
    // Shards are cloned (untimed) right before each decode, so they are hot in cache, as in
    // `read_block`, which has just verified and copied them.
    let decode = |shards: &Vec<Option<Bytes>>| {
        let shards = shards.clone();
        timed(|| f.codec.decode_block_pieces(shards, BLOCK).expect("decodes"))
    };
    let mut rows: Vec<Row> = vec![
        (
            "encode (split + RS parity + xxh3 x9)",
            Box::new(|| timed(|| f.codec.encode_block(black_box(&f.block)))),
        ),
        (
            "decode_block_pieces, healthy (slices, no copy)",
            Box::new(|| decode(&f.healthy_shards)),
        ),
        (
            "decode_block_pieces, 3 data lost (RS)",
            Box::new(|| decode(&f.degraded_shards)),
        ),
        (
            "read_block, healthy (xxh3 verify 6 + join)",
            Box::new(|| timed(|| f.read(&f.healthy))),
        ),
        (
            "read_block, 3 data lost (verify 6 + RS)",
            Box::new(|| timed(|| f.read(&f.degraded))),
        ),
    ];
    let mut memcpy = || timed(|| dst.copy_from_slice(black_box(&f.block)));

    let mut group = c.benchmark_group("erasure_6+3_1MiB");
    group
        .throughput(Throughput::BytesDecimal(BLOCK as u64))
        .sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(1500));
    group.bench_function("memcpy", |b| {
        b.iter_custom(|n| (0..n).map(|_| memcpy()).sum())
    });
    for (name, op) in &mut rows {
        group.bench_function(*name, |b| b.iter_custom(|n| (0..n).map(|_| op()).sum()));
    }
    group.finish();

    // Each run of a row alternates with a run of memcpy, so that the ratio compares figures
    // taken moments apart on a shared, noisy machine.
    println!("summary: erasure 6+3, 1 MiB block, GB/s of user data, median of {RUNS} runs");
    let mut copy_rates = Vec::new();
    for (name, op) in &mut rows {
        let (mut rates, mut ratios) = (Vec::new(), Vec::new());
        for _ in 0..RUNS {
            let copy = gbps(&mut memcpy);
            let rate = gbps(op);
            copy_rates.push(copy);
            rates.push(rate);
            ratios.push(rate / copy);
        }
        println!(
            "summary: {name:<44} {:6.2} GB/s  {:.3}x memcpy",
            median(&mut rates),
            median(&mut ratios)
        );
    }
    println!(
        "summary: {:<44} {:6.2} GB/s  (baseline, hot 1 MiB)",
        "memcpy (copy_from_slice)",
        median(&mut copy_rates)
    );
}

const RUNS: usize = 7;
/// Timed work per run: long enough to average out timer and scheduler jitter.
const RUN_TIME: Duration = Duration::from_millis(60);

fn timed<T>(work: impl FnOnce() -> T) -> Duration {
    let start = Instant::now();
    black_box(work());
    start.elapsed()
}

/// Rate of one run: calls `op` (which times one 1 MiB operation) until `RUN_TIME` is spent.
fn gbps(op: &mut impl FnMut() -> Duration) -> f64 {
    let (mut spent, mut blocks) = (Duration::ZERO, 0u32);
    while spent < RUN_TIME {
        spent += op();
        blocks += 1;
    }
    f64::from(blocks) * BLOCK as f64 / spent.as_secs_f64() / 1e9
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

criterion_group!(benches, erasure);
criterion_main!(benches);
