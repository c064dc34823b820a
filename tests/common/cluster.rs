//! Several `strata` processes on loopback forming one cluster: each node its own port, its
//! own drive folders and the same layout arguments, as an operator would start them.

use super::ports::free_port_pairs;
use std::path::PathBuf;

use super::{Network, ServerOptions, TestServer};

/// The secret the test nodes share.
pub const CLUSTER_SECRET: &str = "strata-test-cluster-secret-0123456789abcdef";

/// Nodes started with one layout; node `i` serves S3 on its port and its drives on the port
/// plus 100.
pub struct Cluster {
    pub nodes: Vec<TestServer>,
    /// Each node's drive folders.
    pub drives: Vec<Vec<PathBuf>>,
    /// The layout arguments every node was started with.
    pub layout: Vec<String>,
    _root: tempfile::TempDir,
}

impl Cluster {
    /// `nodes` processes with `drives_per_node` folders each, erasure coded `ec`.
    pub fn start(nodes: usize, drives_per_node: usize, ec: &str) -> Cluster {
        Self::start_with_args(nodes, drives_per_node, ec, &[])
    }

    /// The same, every node also joining the control plane in `etcd`.
    pub fn start_with_etcd(
        nodes: usize,
        drives_per_node: usize,
        ec: &str,
        etcd: &super::EtcdServer,
    ) -> Cluster {
        Self::start_with_args(nodes, drives_per_node, ec, &["--etcd", &etcd.endpoint()])
    }

    /// The same, every node also given the environment variables `env`.
    pub fn start_with_etcd_and_env(
        nodes: usize,
        drives_per_node: usize,
        ec: &str,
        etcd: &super::EtcdServer,
        env: &[(&str, &str)],
    ) -> Cluster {
        let plan = Self::plan(nodes, drives_per_node);
        Self::start_planned(plan, ec, |_, options| {
            options.extra_args = vec!["--etcd".into(), etcd.endpoint()];
            (options.env).extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        })
    }

    /// The same, each node sending what it sends to the others and to etcd (if any) through
    /// the returned network, which a test can cut (see [`Network`]).
    pub fn start_partitionable(
        nodes: usize,
        drives_per_node: usize,
        ec: &str,
        etcd: Option<&super::EtcdServer>,
    ) -> (Cluster, Network) {
        let (root, ports, drives, layout) = Self::plan(nodes, drives_per_node);
        let addresses = (ports.iter())
            .map(|port| {
                vec![
                    format!("127.0.0.1:{port}"),
                    format!("127.0.0.1:{}", port + 100),
                ]
            })
            .collect();
        let network = Network::start(addresses);
        let args: Vec<String> = etcd
            .map(|etcd| vec!["--etcd".to_string(), etcd.endpoint()])
            .unwrap_or_default();
        let cluster = Self::start_planned((root, ports, drives, layout), ec, |i, options| {
            options.env.extend(network.env_for(i));
            options.extra_args = args.clone();
        });
        (cluster, network)
    }

    fn start_with_args(nodes: usize, drives_per_node: usize, ec: &str, args: &[&str]) -> Cluster {
        let plan = Self::plan(nodes, drives_per_node);
        Self::start_planned(plan, ec, |_, options| {
            options.extra_args = args.iter().map(|a| a.to_string()).collect();
        })
    }

    /// Starts the nodes of a plan, node `i`'s options adjusted by `adjust(i, ..)`.
    pub fn start_planned(
        (root, ports, drives, layout): (
            tempfile::TempDir,
            Vec<u16>,
            Vec<Vec<PathBuf>>,
            Vec<String>,
        ),
        ec: &str,
        adjust: impl Fn(usize, &mut ServerOptions),
    ) -> Cluster {
        let nodes = (0..ports.len())
            .map(|i| {
                let mut options = node_options(ports[i], &drives[i], &layout, ec);
                adjust(i, &mut options);
                TestServer::start_with(options)
            })
            .collect();
        Cluster {
            nodes,
            drives,
            layout,
            _root: root,
        }
    }

    /// Drive folders, free ports and layout arguments for a cluster not started yet.
    pub fn plan(
        nodes: usize,
        drives_per_node: usize,
    ) -> (tempfile::TempDir, Vec<u16>, Vec<Vec<PathBuf>>, Vec<String>) {
        let root = tempfile::Builder::new()
            .prefix("strata-cluster-")
            .tempdir()
            .expect("temp dir");
        let ports = free_port_pairs(nodes);
        let mut drives = Vec::new();
        let mut layout = Vec::new();
        for (i, port) in ports.iter().enumerate() {
            let folders: Vec<PathBuf> = (1..=drives_per_node)
                .map(|d| {
                    root.path()
                        .join(format!("n{}", i + 1))
                        .join(format!("d{d}"))
                })
                .collect();
            for folder in &folders {
                std::fs::create_dir_all(folder).expect("drive folder");
            }
            let base = root.path().join(format!("n{}", i + 1));
            layout.push(format!(
                "http://127.0.0.1:{port}{}/d{{1...{drives_per_node}}}",
                base.display()
            ));
            drives.push(folders);
        }
        (root, ports, drives, layout)
    }
}

/// How node `port` of a cluster with `layout` is started.
pub fn node_options(port: u16, drives: &[PathBuf], layout: &[String], ec: &str) -> ServerOptions {
    ServerOptions {
        address: format!("127.0.0.1:{port}"),
        ec: Some(ec.to_string()),
        drives: Some(drives.to_vec()),
        drive_args: Some(layout.to_vec()),
        env: vec![
            ("STRATA_CLUSTER_SECRET".into(), CLUSTER_SECRET.into()),
            // A node that stops answering is noticed within a second or two.
            ("STRATA_DRIVE_TIMEOUT_SECS".into(), "2".into()),
            ("STRATA_DRIVE_CHECK_SECS".into(), "1".into()),
        ],
        ..ServerOptions::default()
    }
}
