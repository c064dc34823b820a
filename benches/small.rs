//! Small objects through HTTP, as a dataset loader sees them: PUT, GET, HEAD and DELETE of
//! 4 KiB and 64 KiB objects, signed, from 1, 8 and 32 concurrent clients, against the
//! release server over 9 drive folders (6+3). Prints objects per second, median and 99th
//! percentile latency, and the server's CPU time per operation.
//!
//! The baseline, in the same run and at the same concurrency, is what any durable store
//! must do at least for one object on these drives: write its 9 shards (size / 6 each) as
//! files and fdatasync them (PUT), read them (GET), stat one (HEAD), remove them (DELETE).
//!
//! Then a fill, as a dataset upload: `SMALL_FILL` objects of 1 KiB (default 1,000,000) by 32
//! clients, in 1,000 folders of 1,000 keys: objects/s, latencies, server CPU per object, and
//! 1,000-key ListObjectsV2 pages over the filled bucket (median of 30), to set beside
//! `cargo bench --bench list`, whose million keys are written straight into the databases.
//! The server's peak RSS closes the run.
//!
//! Run: `cargo bench --bench small` (`SMALL_OBJECTS=N`: objects per cell, default 1,000;
//! `SMALL_FILL=0` skips the fill, which takes about ten minutes and 10 GB of disk).

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use common::request::{send, Payload};
use common::server::{print_warnings, Server};
use common::stats::{median, percentile, timed, timed_requests};
use reqwest::Method;

const SIZES: [usize; 2] = [4 << 10, 64 << 10];
const CLIENTS: [usize; 3] = [1, 8, 32];
const OPS: [&str; 4] = ["PUT", "GET", "HEAD", "DELETE"];

/// One operation over all objects of a cell: rate, latencies, server CPU per operation.
struct Figures {
    per_second: f64,
    p50_ms: f64,
    p99_ms: f64,
    cpu_ms: f64,
}

/// User plus system CPU time of a process so far, in milliseconds.
fn cpu_ms(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the whole line: 11 and 12 after the name.
    (ticks(11) + ticks(12)) * 1000.0 / 100.0
}

fn figures(mut ms: Vec<f64>, seconds: f64, cpu_ms: f64) -> Figures {
    let count = ms.len() as f64;
    Figures {
        per_second: count / seconds,
        p50_ms: percentile(&mut ms, 0.5),
        p99_ms: percentile(&mut ms, 0.99),
        cpu_ms: cpu_ms / count,
    }
}

/// The four operations on `count` objects of `size` through the server.
async fn through_server(
    server: &Server,
    cell: &str,
    size: usize,
    clients: usize,
    count: usize,
) -> Vec<Figures> {
    let client = reqwest::Client::new();
    let body = Arc::new(Payload::new(vec![7u8; size]));
    let mut out = Vec::new();
    for op in OPS {
        let method = match op {
            "PUT" => Method::PUT,
            "GET" => Method::GET,
            "HEAD" => Method::HEAD,
            _ => Method::DELETE,
        };
        let prefix = format!("{}/small/{cell}", server.endpoint);
        let cpu_before = cpu_ms(server.pid());
        let (ms, seconds) =
            timed_requests(&client, method, prefix, body.clone(), count, clients).await;
        out.push(figures(ms, seconds, cpu_ms(server.pid()) - cpu_before));
    }
    out
}

/// The same four operations done to plain files: 9 shards of size / 6 per object.
async fn on_raw_files(
    drives: &[PathBuf],
    cell: &str,
    size: usize,
    clients: usize,
    count: usize,
) -> Vec<Figures> {
    let shard = Arc::new(vec![7u8; size.div_ceil(6)]);
    let cell = cell.to_string();
    let files = move |drives: &[PathBuf], i: usize| -> Vec<PathBuf> {
        drives
            .iter()
            .map(|d| d.join("raw").join(format!("{cell}-{i:06}")))
            .collect()
    };
    for drive in drives {
        std::fs::create_dir_all(drive.join("raw")).expect("raw folder");
    }
    let mut out = Vec::new();
    for op in OPS {
        let (drives, shard, files) = (drives.to_vec(), shard.clone(), files.clone());
        let (ms, seconds) = timed(count, clients, move |i| {
            let (paths, shard) = (files(&drives, i), shard.clone());
            async move {
                let each = paths.into_iter().map(|path| {
                    let shard = shard.clone();
                    tokio::task::spawn_blocking(move || raw_op(op, &path, &shard))
                });
                for done in futures::future::join_all(each).await {
                    done.expect("raw op");
                }
            }
        })
        .await;
        out.push(figures(ms, seconds, f64::NAN));
    }
    out
}

fn raw_op(op: &str, path: &Path, shard: &[u8]) {
    use std::io::{Read, Write};
    match op {
        "PUT" => {
            let mut file = std::fs::File::create(path).expect("create");
            file.write_all(shard).expect("write");
            file.sync_data().expect("fdatasync");
        }
        "GET" => {
            let mut bytes = Vec::new();
            std::fs::File::open(path)
                .and_then(|mut f| f.read_to_end(&mut bytes))
                .expect("read");
        }
        "HEAD" => {
            std::fs::metadata(path).expect("stat");
        }
        _ => std::fs::remove_file(path).expect("remove"),
    }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let count: usize = common::env_or("SMALL_OBJECTS", 1000);
    let root = common::temp_dir("small-bench-");
    let drives = common::drives(root.path());
    let server = Server::start(&drives, &[], print_warnings);
    let client = reqwest::Client::new();
    send(
        &client,
        Method::PUT,
        &format!("{}/small", server.endpoint),
        &Payload::empty(),
        &[],
    )
    .await;

    println!(
        "{count} objects per cell; Strata / raw files (9 shard files per object, fdatasync'd)"
    );
    println!("| size | clients | op | objects/s | raw objects/s | ratio | p50 ms | p99 ms | server CPU ms/op |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut cpu = Vec::new();
    for size in SIZES {
        for clients in CLIENTS {
            let cell = format!("{}k-{clients}", size >> 10);
            let strata = through_server(&server, &cell, size, clients, count).await;
            let raw = on_raw_files(&drives, &cell, size, clients, count).await;
            for ((op, s), r) in OPS.iter().zip(&strata).zip(&raw) {
                println!(
                    "| {} KiB | {clients} | {op} | {:.0} | {:.0} | {:.2} | {:.2} | {:.2} | {:.2} |",
                    size >> 10,
                    s.per_second,
                    r.per_second,
                    s.per_second / r.per_second,
                    s.p50_ms,
                    s.p99_ms,
                    s.cpu_ms
                );
                cpu.push(s.cpu_ms);
            }
        }
    }
    println!(
        "summary: median server CPU per operation {:.2} ms",
        median(&cpu)
    );

    let fill_count: usize = common::env_or("SMALL_FILL", 1_000_000);
    if fill_count > 0 {
        fill_and_list(&server, fill_count).await;
    }
    println!("server peak RSS: {} MiB", peak_rss_kib(server.pid()) / 1024);
}

/// Keys per folder of the fill, and the size of its objects.
const FILL_FOLDER: usize = 1000;
const FILL_SIZE: usize = 1 << 10;
const FILL_CLIENTS: usize = 32;
/// Timed pages per listing of the filled bucket.
const LIST_RUNS: usize = 30;

fn fill_key(i: usize) -> String {
    format!("fill/{:04}/{i:07}", i / FILL_FOLDER)
}

/// Fills a bucket with `count` 1 KiB objects by PUT, then times listing pages over it.
async fn fill_and_list(server: &Server, count: usize) {
    let client = reqwest::Client::new();
    let endpoint = server.endpoint.clone();
    send(
        &client,
        Method::PUT,
        &format!("{endpoint}/fill"),
        &Payload::empty(),
        &[],
    )
    .await;
    let body = Arc::new(Payload::new(vec![7u8; FILL_SIZE]));
    let cpu_before = cpu_ms(server.pid());
    let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let (ms, seconds) = timed(count, FILL_CLIENTS, move |i| {
        let (client, body, done) = (client.clone(), body.clone(), done.clone());
        let url = format!("{endpoint}/fill/{}", fill_key(i));
        async move {
            send(&client, Method::PUT, &url, &body, &[]).await;
            let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            if n % 100_000 == 0 {
                let rate = n as f64 / started.elapsed().as_secs_f64();
                eprintln!("filled {n} objects ({rate:.0}/s)");
            }
        }
    })
    .await;
    let fill = figures(ms, seconds, cpu_ms(server.pid()) - cpu_before);
    println!(
        "\nfill: {count} objects of 1 KiB by {FILL_CLIENTS} clients in {seconds:.0} s: \
         {:.0} objects/s, p50 {:.2} ms, p99 {:.2} ms, server CPU {:.2} ms/object",
        fill.per_second, fill.p50_ms, fill.p99_ms, fill.cpu_ms
    );

    let folders = count.div_ceil(FILL_FOLDER);
    let middle = fill_key(count / 2);
    let listings = [
        (
            "first page, no delimiter",
            "list-type=2&prefix=fill/".to_string(),
        ),
        (
            "mid-bucket, no delimiter",
            format!(
                "list-type=2&prefix=fill/&start-after={}",
                middle.replace('/', "%2F")
            ),
        ),
        (
            "folders with delimiter `/`",
            "list-type=2&prefix=fill/&delimiter=%2F".to_string(),
        ),
    ];
    println!("| 1,000-key page over {count} keys in {folders} folders | median ms | p90 ms |");
    println!("|---|---|---|");
    let client = reqwest::Client::new();
    for (name, query) in listings {
        let url = format!("{}/fill?{query}&max-keys=1000", server.endpoint);
        let mut ms = Vec::new();
        for run in 0..LIST_RUNS + 3 {
            let (page, span) = common::request::get(&client, &url).await;
            let xml = String::from_utf8_lossy(&page);
            let listed = xml.matches("<Key>").count() + xml.matches("<Prefix>fill/").count();
            assert!(
                listed >= folders.min(FILL_FOLDER),
                "{name}: {listed} entries"
            );
            if run >= 3 {
                ms.push(span.ms());
            }
        }
        println!(
            "| {name} | {:.2} | {:.2} |",
            median(&ms),
            percentile(&mut ms, 0.9)
        );
    }
}

/// The most memory the process has held, in KiB (`VmHWM`).
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}
