//! What the network path between nodes costs: the same nine drive folders served by one
//! node, and as a cluster of three nodes on loopback (three folders each, one 6+3 set across
//! them, the control plane in an etcd the bench starts), every request sent to the first node, so that two thirds of each object's shards
//! travel over the drive RPC. Prints, for each and as cluster/single ratios: 4 KiB PUT and
//! GET at 1 and 32 concurrent clients (objects/s, p50, p99), and one 1 GiB object PUT and
//! GET (MB/s). Medians of `CLUSTER_RUNS` runs (default 3), alternating the two.
//!
//! On one machine the cluster cannot be faster: the nodes share the cores and the disk, and
//! add the RPC's copies and signatures. The goal: a small PUT's p50 within 1.5× of one node.
//!
//! With `CLUSTER_BASELINE_BIN=PATH` (a `strata` binary of a previous build), the same cluster
//! of that binary runs too, in turn with the others, and a column gives this build's figures
//! over the baseline's: what a change to the path between nodes costs, in one run.
//!
//! Run: `cargo bench --bench cluster` (`CLUSTER_OBJECTS=N` small objects per cell, default
//! 1,000; `CLUSTER_LARGE_MIB=N` the large object, default 1,024).

mod common;
#[path = "../tests/common/ports.rs"]
#[allow(dead_code)] // free_ports serves the test harness's etcd
mod ports;
use ports::free_port_pairs;

use std::path::PathBuf;
use std::sync::Arc;

use common::request::{get, send, Payload};
use common::server::{print_warnings, Server};
use common::stats::{median, percentile, timed_requests};
use common::{env_or, temp_dir};
use reqwest::Method;

const SMALL: usize = 4 << 10;
const CLIENTS: [usize; 2] = [1, 32];
const SECRET: &str = "bench-cluster-secret-0123456789abcdef";

/// A deployment under test: its servers (requests go to the first) and a name.
struct Deployment {
    name: &'static str,
    servers: Vec<Server>,
    _root: tempfile::TempDir,
}

fn single() -> Deployment {
    let root = temp_dir("cluster-bench-single-");
    let drives = common::drives(root.path());
    let server = Server::start(&drives, &[], print_warnings);
    Deployment {
        name: "one node",
        servers: vec![server],
        _root: root,
    }
}

/// A one-member etcd on loopback (Debian's `etcd-server`), killed on drop.
struct Etcd {
    child: std::process::Child,
    endpoint: String,
    _data: tempfile::TempDir,
}

impl Etcd {
    fn start() -> Etcd {
        let data = temp_dir("cluster-bench-etcd-");
        let (client, peer) = (free_port_pairs(1)[0], free_port_pairs(1)[0] + 100);
        let endpoint = format!("http://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let child = std::process::Command::new("etcd")
            .args(["--name", "bench", "--log-level", "warn"])
            .arg("--data-dir")
            .arg(data.path())
            .args([
                "--listen-client-urls",
                &endpoint,
                "--advertise-client-urls",
                &endpoint,
            ])
            .args(["--listen-peer-urls", &peer_url])
            .args(["--initial-advertise-peer-urls", &peer_url])
            .args(["--initial-cluster", &format!("bench={peer_url}")])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("etcd is installed (Debian's etcd-server)");
        // The nodes wait for etcd to answer, so no wait is needed here.
        Etcd {
            child,
            endpoint,
            _data: data,
        }
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Three nodes of three drives on loopback, each its S3 port and that port + 100 free.
fn cluster(etcd: &Etcd) -> Deployment {
    cluster_of(env!("CARGO_BIN_EXE_strata").as_ref(), "3 nodes", etcd)
}

/// The same cluster of the `strata` binary at `binary`.
fn cluster_of(binary: &std::path::Path, name: &'static str, etcd: &Etcd) -> Deployment {
    let root = temp_dir("cluster-bench-nodes-");
    let ports = free_port_pairs(3);
    let layout: Vec<String> = (ports.iter().enumerate())
        .map(|(i, port)| {
            let base: PathBuf = root.path().join(format!("n{}", i + 1));
            format!("http://127.0.0.1:{port}{}/d{{1...3}}", base.display())
        })
        .collect();
    let servers = ports
        .iter()
        .map(|port| {
            let mut args = vec!["--address".to_string(), format!("127.0.0.1:{port}")];
            args.extend(["--etcd".to_string(), etcd.endpoint.clone()]);
            args.extend(layout.iter().cloned());
            let env = [("STRATA_CLUSTER_SECRET", SECRET)];
            Server::start_binary(binary, &args, &env, print_warnings)
        })
        .collect();
    Deployment {
        name,
        servers,
        _root: root,
    }
}

/// One run's figures, by name: objects/s, p50 and p99 ms, MB/s.
type Figures = Vec<(String, f64)>;

async fn run(deployment: &Deployment, count: usize, large: &Arc<Payload>, run: usize) -> Figures {
    let client = reqwest::Client::new();
    let endpoint = deployment.servers[0].endpoint.clone();
    let bucket = format!("{endpoint}/bench-{run}");
    send(&client, Method::PUT, &bucket, &Payload::empty(), &[]).await;
    let body = Arc::new(Payload::new(vec![7u8; SMALL]));
    let mut out = Vec::new();
    for clients in CLIENTS {
        for method in [Method::PUT, Method::GET] {
            let prefix = format!("{bucket}/c{clients}");
            let (mut ms, seconds) = timed_requests(
                &client,
                method.clone(),
                prefix,
                body.clone(),
                count,
                clients,
            )
            .await;
            let rate = ms.len() as f64 / seconds;
            let cell = format!("4 KiB {method} x{clients}");
            out.push((format!("{cell} obj/s"), rate));
            out.push((format!("{cell} p50 ms"), percentile(&mut ms, 0.5)));
            out.push((format!("{cell} p99 ms"), percentile(&mut ms, 0.99)));
        }
    }
    let url = format!("{bucket}/large");
    let mib = large.body.len() as f64 / 1e6;
    let (_, put) = send(&client, Method::PUT, &url, large, &[]).await;
    out.push((
        "1 GiB-class PUT MB/s".into(),
        mib / put.elapsed().as_secs_f64(),
    ));
    let (body, got) = get(&client, &url).await;
    assert_eq!(body.len(), large.body.len());
    out.push((
        "1 GiB-class GET MB/s".into(),
        mib / got.elapsed().as_secs_f64(),
    ));
    out
}

#[tokio::main]
async fn main() {
    let count: usize = env_or("CLUSTER_OBJECTS", 1000);
    let large_mib: usize = env_or("CLUSTER_LARGE_MIB", 1024);
    let runs: usize = env_or("CLUSTER_RUNS", 3);
    let large = Arc::new(Payload::new(
        (0..large_mib << 20)
            .map(|i| (i * 31 % 251) as u8)
            .collect::<Vec<u8>>(),
    ));
    let single = single();
    let etcd = Etcd::start();
    let cluster = cluster(&etcd);
    // The baseline's nodes keep their layout in an etcd of their own.
    let baseline_bin = std::env::var_os("CLUSTER_BASELINE_BIN").map(PathBuf::from);
    let baseline_etcd = baseline_bin.as_ref().map(|_| Etcd::start());
    let baseline = (baseline_bin.as_deref())
        .zip(baseline_etcd.as_ref())
        .map(|(bin, etcd)| cluster_of(bin, "baseline", etcd));
    let mut deployments = vec![&single, &cluster];
    deployments.extend(baseline.as_ref());
    let mut figures: Vec<Vec<Figures>> = vec![Vec::new(); deployments.len()];
    for i in 0..runs {
        for (deployment, runs) in deployments.iter().zip(&mut figures) {
            runs.push(run(deployment, count, &large, i).await);
        }
    }
    let names: Vec<String> = figures[0][0].iter().map(|(n, _)| n.clone()).collect();
    println!(
        "\n{count} objects of 4 KiB per cell, a {large_mib} MiB object, medians of {runs} runs; requests to the first node\n"
    );
    print!(
        "{:<28} {:>12} {:>12} {:>14}",
        "", single.name, cluster.name, "cluster/single"
    );
    match &baseline {
        Some(baseline) => println!(" {:>12} {:>14}", baseline.name, "this/baseline"),
        None => println!(),
    }
    for (index, name) in names.iter().enumerate() {
        let of = |runs: &Vec<Figures>| median(&runs.iter().map(|r| r[index].1).collect::<Vec<_>>());
        let (one, three) = (of(&figures[0]), of(&figures[1]));
        print!("{name:<28} {one:>12.1} {three:>12.1} {:>14.2}", three / one);
        match figures.get(2) {
            Some(base) => {
                let base = of(base);
                println!(" {base:>12.1} {:>14.2}", three / base);
            }
            None => println!(),
        }
    }
}
