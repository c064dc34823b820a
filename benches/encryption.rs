//! SSE's package encryption over a 64 MiB body, beside a plain copy of the same stream
//! measured in the same run. Rates are GB/s (10^9 B/s) of plaintext.
//!
//! The body arrives as 1 MiB chunks, as the server's body streams deliver it. The baseline
//! copies each chunk into a buffer (what any stage that owns the bytes costs); encryption
//! copies each chunk into its package buffer and seals it in place; decryption reassembles
//! sealed packages from the chunks and opens them in place.
//!
//! Run: `cargo bench --bench encryption`. Criterion prints its own estimates; the `summary:`
//! lines at the end are medians of 5 runs, each alternating with the copy so that the ratio
//! compares figures taken moments apart on a shared, noisy machine.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use futures::executor::block_on;
use futures::StreamExt;
use rand::RngCore;
use strata::body::ByteStream;
use strata::encryption::{decrypt_stream, encrypt_stream, sealed_range, ObjectKey, PackageKey};

const BODY: usize = 64 << 20;
const CHUNK: usize = 1 << 20;

struct Fixture {
    key: PackageKey,
    plain_chunks: Vec<Bytes>,
    sealed_chunks: Vec<Bytes>,
}

impl Fixture {
    fn new() -> Self {
        let mut plain = vec![0u8; BODY];
        rand::rng().fill_bytes(&mut plain);
        let plain = Bytes::from(plain);
        let key = ObjectKey::generate().object_package_key();
        let plain_chunks = chunks(&plain);
        let sealed: Vec<u8> = block_on(
            encrypt_stream(&key, stream(&plain_chunks))
                .map(|package| package.expect("encrypts"))
                .collect::<Vec<Bytes>>(),
        )
        .concat();
        let sealed_chunks = chunks(&Bytes::from(sealed));
        Self {
            key,
            plain_chunks,
            sealed_chunks,
        }
    }

    /// Reads the body as a plain copy: the baseline.
    fn copy(&self, dst: &mut Vec<u8>) -> Duration {
        timed(|| {
            block_on(async {
                dst.clear();
                let mut body = stream(&self.plain_chunks);
                while let Some(chunk) = body.next().await {
                    dst.extend_from_slice(&chunk.expect("reads"));
                }
                dst.len()
            })
        })
    }

    fn encrypt(&self) -> Duration {
        timed(|| drain(encrypt_stream(&self.key, stream(&self.plain_chunks))))
    }

    fn decrypt(&self) -> Duration {
        let total = BODY as u64;
        let range = sealed_range(0, total, total);
        timed(|| {
            drain(decrypt_stream(
                &self.key,
                &range,
                total,
                stream(&self.sealed_chunks),
                total,
            ))
        })
    }
}

fn chunks(body: &Bytes) -> Vec<Bytes> {
    (0..body.len())
        .step_by(CHUNK)
        .map(|start| body.slice(start..(start + CHUNK).min(body.len())))
        .collect()
}

/// A body stream over prepared chunks (cloning a `Bytes` is a reference count).
fn stream(chunks: &[Bytes]) -> ByteStream {
    let owned: Vec<std::io::Result<Bytes>> = chunks.iter().cloned().map(Ok).collect();
    Box::pin(futures::stream::iter(owned))
}

/// Consumes a stream, returning how many bytes it yielded.
fn drain(body: ByteStream) -> usize {
    block_on(async {
        let mut body = body;
        let mut len = 0;
        while let Some(chunk) = body.next().await {
            len += black_box(chunk.expect("streams")).len();
        }
        len
    })
}

fn timed<T>(work: impl FnOnce() -> T) -> Duration {
    let start = Instant::now();
    black_box(work());
    start.elapsed()
}

fn encryption(c: &mut Criterion) {
    let f = Fixture::new();
    let mut dst = Vec::with_capacity(BODY);
    let mut group = c.benchmark_group("sse_64MiB");
    group
        .throughput(Throughput::BytesDecimal(BODY as u64))
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(4));
    group.bench_function("plain copy (baseline)", |b| {
        b.iter_custom(|n| (0..n).map(|_| f.copy(&mut dst)).sum())
    });
    group.bench_function("encrypt_stream", |b| {
        b.iter_custom(|n| (0..n).map(|_| f.encrypt()).sum())
    });
    group.bench_function("decrypt_stream", |b| {
        b.iter_custom(|n| (0..n).map(|_| f.decrypt()).sum())
    });
    group.finish();

    println!("summary: SSE packages, 64 MiB body in 1 MiB chunks, GB/s of plaintext, median of {RUNS} runs");
    let mut copy_rates = Vec::new();
    let rows: [(&str, &dyn Fn() -> Duration); 2] = [
        ("encrypt_stream", &|| f.encrypt()),
        ("decrypt_stream", &|| f.decrypt()),
    ];
    for (name, op) in rows {
        let (mut rates, mut ratios) = (Vec::new(), Vec::new());
        for _ in 0..RUNS {
            let copy = gbps(f.copy(&mut dst));
            let rate = gbps(op());
            copy_rates.push(copy);
            rates.push(rate);
            ratios.push(rate / copy);
        }
        println!(
            "summary: {name:<24} {:6.2} GB/s  {:.3}x plain copy",
            median(&mut rates),
            median(&mut ratios)
        );
    }
    println!(
        "summary: {:<24} {:6.2} GB/s  (baseline)",
        "plain copy",
        median(&mut copy_rates)
    );
}

const RUNS: usize = 5;

fn gbps(spent: Duration) -> f64 {
    BODY as f64 / spent.as_secs_f64() / 1e9
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

criterion_group!(benches, encryption);
criterion_main!(benches);
