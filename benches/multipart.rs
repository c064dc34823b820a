//! Multipart upload of a large checkpoint through the real HTTP path: the release `strata`
//! binary over 9 fresh drive folders, driven by the AWS Rust SDK with P UploadPart calls in
//! flight at a time, beside the raw sequential write bandwidth of the same disk measured in the
//! same run (the ceiling: 9/6 of the user bytes must reach the disk).
//!
//! Run: `cargo bench --bench multipart`. Overrides (env): STRATA_BENCH_GIB (object size, 2),
//! STRATA_BENCH_PARALLEL (parts in flight, 16), STRATA_BENCH_PART_MIB (part size, 64),
//! STRATA_BENCH_RUNS (upload/raw pairs, 3). The `summary:` lines are medians over the runs.
//! MB/s are 10^6 bytes of user data per second.

mod common;

use std::fs::{self, File};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_s3::config::retry::RetryConfig;
use aws_sdk_s3::config::{BehaviorVersion, Credentials, Region, StalledStreamProtectionConfig};
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use aws_sdk_s3::Client;
use bytes::Bytes;
use rand::{Rng, RngCore};
use tokio::sync::Semaphore;

use common::server::Server;
use common::{env_or, DATA, PARITY, PASSWORD, REGION, USER};

const MIB: usize = 1 << 20;
const GIB: f64 = (1u64 << 30) as f64;
/// Write size of the raw-disk baseline (dd-like).
const RAW_WRITE: usize = 4 * MIB;
/// Bytes at the start of each part that carry its number, so no two parts are equal.
const PREFIX: usize = 8;
const BUCKET: &str = "bench";
const KEY: &str = "checkpoints/model.safetensors";
const RSS_GOAL: u64 = 512 * MIB as u64;
const RATIO_GOAL: f64 = 0.70;

/// The object: `size` bytes cut into parts of `part` bytes (the last may be shorter). Every
/// part is `base` with its first `PREFIX` bytes replaced by the part number.
struct Layout {
    size: usize,
    part: usize,
    base: Bytes,
}

impl Layout {
    fn parts(&self) -> usize {
        self.size.div_ceil(self.part)
    }

    /// Body of part `i` (0-based). Built when sent, not held for the whole object, so the
    /// client stays at P parts in memory even for 8 GiB.
    fn body(&self, i: usize) -> Bytes {
        let len = self.part.min(self.size - i * self.part);
        let mut body = self.base[..len].to_vec();
        body[..PREFIX].copy_from_slice(&(i as u64).to_le_bytes());
        body.into()
    }

    /// The object's bytes `at..at + len`, for checking ranged GETs.
    fn expected(&self, at: usize, len: usize) -> Vec<u8> {
        (at..at + len)
            .map(|o| {
                let (i, off) = (o / self.part, o % self.part);
                match off < PREFIX {
                    true => (i as u64).to_le_bytes()[off],
                    false => self.base[off],
                }
            })
            .collect()
    }
}

/// A line of /proc/<pid>/status in bytes (`VmRSS`, `VmHWM`); 0 if it cannot be read.
fn status_bytes(pid: u32, field: &str) -> u64 {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// Max VmRSS of `pid` sampled every 100 ms until `stop` is set.
fn sample_rss(pid: u32, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut max = 0;
        while !stop.load(Ordering::Relaxed) {
            max = max.max(status_bytes(pid, "VmRSS"));
            std::thread::sleep(Duration::from_millis(100));
        }
        max
    })
}

fn client(endpoint: &str) -> Client {
    let config = aws_sdk_s3::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .http_client(aws_smithy_http_client::Builder::new().build_http())
        .region(Region::new(REGION))
        .endpoint_url(endpoint)
        .force_path_style(true)
        .credentials_provider(Credentials::new(USER, PASSWORD, None, None, "bench"))
        // A failure must show, not be retried into a slower figure.
        .retry_config(RetryConfig::standard().with_max_attempts(1))
        // Parts queue behind each other in the server; a slow part is a figure, not an error.
        .stalled_stream_protection(StalledStreamProtectionConfig::disabled())
        .build();
    Client::from_conf(config)
}

struct Upload {
    elapsed: Duration,
    complete: Duration,
    max_rss: u64,
}

/// One multipart upload of the whole object, `parallel` parts in flight.
async fn upload(client: &Client, layout: &Arc<Layout>, parallel: usize, pid: u32) -> Upload {
    let id = client
        .create_multipart_upload()
        .bucket(BUCKET)
        .key(KEY)
        .send()
        .await
        .expect("CreateMultipartUpload")
        .upload_id
        .expect("upload id");
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = sample_rss(pid, stop.clone());
    let start = Instant::now();
    let slots = Arc::new(Semaphore::new(parallel));
    let mut tasks = Vec::new();
    for i in 0..layout.parts() {
        let permit = slots.clone().acquire_owned().await.expect("semaphore open");
        let (client, layout, id) = (client.clone(), layout.clone(), id.clone());
        tasks.push(tokio::spawn(async move {
            let out = client
                .upload_part()
                .bucket(BUCKET)
                .key(KEY)
                .upload_id(id)
                .part_number(i as i32 + 1)
                .body(ByteStream::from(layout.body(i)))
                // UNSIGNED-PAYLOAD, as SDKs send large bodies over TLS: a SHA-256 of every
                // byte on both sides would measure hashing, not the store. The SDK's default
                // CRC32 checksum header stays, and the server verifies it.
                .customize()
                .disable_payload_signing()
                .send()
                .await
                .unwrap_or_else(|e| panic!("UploadPart {}: {e:?}", i + 1));
            drop(permit);
            CompletedPart::builder()
                .part_number(i as i32 + 1)
                .e_tag(out.e_tag.expect("part ETag"))
                .build()
        }));
    }
    let mut parts = Vec::new();
    for task in tasks {
        parts.push(task.await.expect("part task"));
    }
    let complete_start = Instant::now();
    client
        .complete_multipart_upload()
        .bucket(BUCKET)
        .key(KEY)
        .upload_id(id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .set_parts(Some(parts))
                .build(),
        )
        .send()
        .await
        .expect("CompleteMultipartUpload");
    let complete = complete_start.elapsed();
    let elapsed = start.elapsed();
    stop.store(true, Ordering::Relaxed);
    Upload {
        elapsed,
        complete,
        max_rss: sampler.join().expect("sampler"),
    }
}

/// HEAD (size, multipart ETag) and 3 random 1 MiB ranges compared with the generated bytes.
async fn verify(client: &Client, layout: &Layout) {
    let head = client
        .head_object()
        .bucket(BUCKET)
        .key(KEY)
        .send()
        .await
        .expect("HeadObject");
    assert_eq!(head.content_length, Some(layout.size as i64), "object size");
    let etag = head.e_tag.expect("ETag");
    let suffix = format!("-{}", layout.parts());
    assert!(etag.trim_matches('"').ends_with(&suffix), "ETag {etag}");
    let len = MIB.min(layout.size);
    for _ in 0..3 {
        let at = rand::rng().random_range(0..=layout.size - len);
        let got = client
            .get_object()
            .bucket(BUCKET)
            .key(KEY)
            .range(format!("bytes={at}-{}", at + len - 1))
            .send()
            .await
            .expect("GetObject range")
            .body
            .collect()
            .await
            .expect("range body")
            .into_bytes();
        assert!(got[..] == layout.expected(at, len)[..], "bytes at {at}");
    }
    println!(
        "verified: HEAD size {} ETag {etag}, 3 random 1 MiB ranges match",
        layout.size
    );
}

/// Time to write `size` x 9/6 bytes to 9 files in `dir`, one thread per file, 4 MiB writes
/// then fdatasync: what the disk takes for the shards of `size` user bytes.
fn raw_write(dir: &Path, size: usize, data: &[u8]) -> Duration {
    fs::create_dir_all(dir).expect("raw folder");
    let per_file = size.div_ceil(DATA);
    let start = Instant::now();
    std::thread::scope(|scope| {
        for i in 0..DATA + PARITY {
            let path = dir.join(format!("shard-{i}"));
            scope.spawn(move || {
                let mut file = File::create(path).expect("create raw file");
                let mut written = 0;
                while written < per_file {
                    let len = RAW_WRITE.min(per_file - written);
                    // Varying bytes per file and write, as shard files would hold.
                    let at = (i * 7919 + written / RAW_WRITE * 4099) % (data.len() - RAW_WRITE);
                    file.write_all(&data[at..at + len]).expect("write");
                    written += len;
                }
                file.sync_data().expect("fdatasync");
            });
        }
    });
    let elapsed = start.elapsed();
    fs::remove_dir_all(dir).expect("remove raw files");
    elapsed
}

fn mbps(bytes: usize, time: Duration) -> f64 {
    bytes as f64 / time.as_secs_f64() / 1e6
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    (v[(n - 1) / 2] + v[n / 2]) / 2.0
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / MIB as f64
}

fn main() {
    let gib: f64 = env_or("STRATA_BENCH_GIB", 2.0);
    let parallel: usize = env_or("STRATA_BENCH_PARALLEL", 16);
    let part_mib: usize = env_or("STRATA_BENCH_PART_MIB", 64);
    let runs: usize = env_or("STRATA_BENCH_RUNS", 3);
    assert!(
        parallel >= 1 && runs >= 1 && part_mib >= 5,
        "need P >= 1, RUNS >= 1, S >= 5"
    );
    let size = ((gib * GIB) as usize).div_ceil(MIB) * MIB;
    let mut base = vec![0u8; part_mib * MIB];
    // Random bytes: the disk must not see zeros, which virtual disks may shortcut.
    rand::rng().fill_bytes(&mut base);
    let layout = Arc::new(Layout {
        size,
        part: part_mib * MIB,
        base: base.into(),
    });
    // Removed on drop, after the server (declared later, so dropped first) is stopped.
    let dir = common::temp_dir("multipart-bench-");
    // Everything the server logs, its startup lines too.
    let server = Server::start(&common::drives(dir.path()), &[], |line| {
        eprintln!("[strata] {line}")
    });
    let pid = server.pid();
    let command = format!(
        "STRATA_BENCH_GIB={gib} STRATA_BENCH_PARALLEL={parallel} STRATA_BENCH_PART_MIB={part_mib} \
         STRATA_BENCH_RUNS={runs} cargo bench --bench multipart"
    );
    println!(
        "multipart upload of {:.2} GiB in {} parts of {part_mib} MiB, {parallel} in flight, \
         UNSIGNED-PAYLOAD + CRC32; server {} (pid {pid}) over {}",
        size as f64 / GIB,
        layout.parts(),
        env!("CARGO_BIN_EXE_strata"),
        dir.path().display()
    );

    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let client = client(&server.endpoint);
    runtime.block_on(async {
        client
            .create_bucket()
            .bucket(BUCKET)
            .send()
            .await
            .expect("CreateBucket");
    });
    let (mut up, mut raw, mut ratio, mut complete) = (vec![], vec![], vec![], vec![]);
    let mut max_rss = 0;
    for run in 1..=runs {
        let u = runtime.block_on(upload(&client, &layout, parallel, pid));
        if run == 1 {
            runtime.block_on(verify(&client, &layout));
        }
        runtime.block_on(async {
            client
                .delete_object()
                .bucket(BUCKET)
                .key(KEY)
                .send()
                .await
                .expect("DeleteObject");
        });
        let r = raw_write(&dir.path().join("raw"), size, &layout.base);
        let (u_mbps, ceiling) = (mbps(size, u.elapsed), mbps(size, r));
        println!(
            "run {run}: upload {u_mbps:.0} MB/s ({:.2} s, complete {:.0} ms, max VmRSS {:.0} MiB) \
             | raw disk {:.0} MB/s = ceiling {ceiling:.0} MB/s of user data | ratio {:.2}",
            u.elapsed.as_secs_f64(),
            u.complete.as_secs_f64() * 1e3,
            mib(u.max_rss),
            mbps(size * (DATA + PARITY) / DATA, r),
            u_mbps / ceiling
        );
        up.push(u_mbps);
        raw.push(ceiling);
        ratio.push(u_mbps / ceiling);
        complete.push(u.complete.as_secs_f64() * 1e3);
        max_rss = max_rss.max(u.max_rss);
    }
    let hwm = status_bytes(pid, "VmHWM");
    let ratio = median(&mut ratio);
    let ceiling = median(&mut raw);
    println!("command: {command}");
    println!(
        "summary: multipart {gib} GiB, {parallel} x {part_mib} MiB parts in flight | upload {:.0} MB/s \
         | raw disk ceiling {ceiling:.0} MB/s of user data ({:.0} MB/s disk) | ratio {ratio:.2} \
         (goal >= {RATIO_GOAL:.2}: {}) | median of {runs}",
        median(&mut up),
        ceiling * (DATA + PARITY) as f64 / DATA as f64,
        if ratio >= RATIO_GOAL { "met" } else { "NOT met" },
    );
    println!(
        "summary: CompleteMultipartUpload {:.0} ms (median) | server peak RSS VmHWM {:.0} MiB, \
         max sampled VmRSS {:.0} MiB (goal < 512 MiB: {})",
        median(&mut complete),
        mib(hwm),
        mib(max_rss),
        if hwm < RSS_GOAL { "met" } else { "NOT met" },
    );
}
