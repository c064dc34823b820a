//! Ports for servers the tests and benches start (also included by `benches/cluster.rs`).
//!
//! Every port is taken below the kernel's ephemeral range: a server restarted on its ports
//! must find them free, and a port the kernel hands out as the source of any connection
//! meanwhile (another test's, say) would not be.

use std::collections::HashSet;
use std::net::TcpListener;
use std::sync::Mutex;

/// Every port handed out in this process: a server stopped to be restarted on its ports
/// leaves them free, and another server of this test binary (an etcd started meanwhile, a
/// test running beside it) must not take them.
static HANDED_OUT: Mutex<Option<HashSet<u16>>> = Mutex::new(None);

/// Takes `wanted` (every port of one server) if none was handed out before and all are free.
fn take(wanted: &[u16]) -> bool {
    let mut handed_out = HANDED_OUT.lock().unwrap();
    let handed_out = handed_out.get_or_insert_with(HashSet::new);
    let fresh = wanted.iter().all(|port| !handed_out.contains(port));
    if fresh && wanted.iter().all(|&port| free(port)) {
        handed_out.extend(wanted);
        return true;
    }
    false
}

/// The ports this module picks from: from 10,000 to `margin` below the ephemeral range.
fn range(margin: u16) -> std::ops::Range<u16> {
    let ephemeral_start = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    10_000..ephemeral_start.saturating_sub(margin).max(10_001)
}

fn free(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

/// `count` distinct free ports (for servers that listen on one port each, such as etcd's).
pub fn free_ports(count: usize) -> Vec<u16> {
    let mut ports = Vec::new();
    while ports.len() < count {
        let port = rand::random_range(range(0));
        if take(&[port]) {
            ports.push(port);
        }
    }
    ports
}

/// `count` free ports, each with its port + 100 free too (a node's drive service).
pub fn free_port_pairs(count: usize) -> Vec<u16> {
    let mut ports = Vec::new();
    while ports.len() < count {
        let port: u16 = rand::random_range(range(100));
        if take(&[port, port + 100]) {
            ports.push(port);
        }
    }
    ports
}
