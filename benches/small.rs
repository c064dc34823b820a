//! Small objects through HTTP, as a dataset loader sees them: PUT, GET, HEAD and DELETE of
//! 4 KiB and 64 KiB objects, signed, from 1, 8 and 32 concurrent clients, against the
//! release server over 9 drive folders (6+3). Prints objects per second, median and 99th
//! percentile latency, and the server's CPU time per operation.
//!
//! The baseline, in the same run and at the same concurrency, is what any durable store
//! must do at least for one object on these drives: write its 9 shards (size / 6 each) as
//! files and fdatasync them (PUT), read them (GET), stat one (HEAD), remove them (DELETE).
//!
//! Run: `cargo bench --bench small` (`SMALL_OBJECTS=N`: objects per cell, default 1,000).

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use common::request::{send, Payload};
use common::server::{print_warnings, Server};
use common::stats::median;
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

fn percentile(ms: &mut [f64], q: f64) -> f64 {
    ms.sort_by(f64::total_cmp);
    ms[((ms.len() - 1) as f64 * q).round() as usize]
}

/// Runs `op(i)` for `0..count` over `clients` concurrent workers; per-call milliseconds and
/// the wall time in seconds.
async fn timed<F, Fut>(count: usize, clients: usize, op: F) -> (Vec<f64>, f64)
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let op = Arc::new(op);
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..clients)
        .map(|_| {
            let (op, next) = (op.clone(), next.clone());
            tokio::spawn(async move {
                let mut ms = Vec::new();
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= count {
                        return ms;
                    }
                    let start = Instant::now();
                    op(i).await;
                    ms.push(start.elapsed().as_secs_f64() * 1e3);
                }
            })
        })
        .collect();
    let mut all = Vec::new();
    for worker in workers {
        all.extend(worker.await.expect("worker"));
    }
    (all, started.elapsed().as_secs_f64())
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
        let (client, endpoint, cell) = (client.clone(), server.endpoint.clone(), cell.to_string());
        let body = body.clone();
        let cpu_before = cpu_ms(server.pid());
        let (ms, seconds) = timed(count, clients, move |i| {
            let (client, method, body) = (client.clone(), method.clone(), body.clone());
            let url = format!("{endpoint}/small/{cell}/obj-{i:06}");
            async move {
                let payload = match method == Method::PUT {
                    true => &*body,
                    false => &Payload::empty(),
                };
                send(&client, method, &url, payload, &[]).await;
            }
        })
        .await;
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
}
