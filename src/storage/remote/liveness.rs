//! Whether another node answers at all, told apart from whether its drives do.
//!
//! Each node pings every other node's drive service once a second; the ping touches no
//! disk, so a busy or hung disk never makes a healthy node look dead. A node that misses
//! [`MISSES_TO_DOWN`] pings in a row is down: every call to any of its drives fails at once
//! (as [`DriveError::Offline`]) instead of each waiting out its drive deadline, so a node
//! that stopped (crashed, paused, cut off) costs requests nothing within a few seconds. The
//! first ping answered brings it back; the drive monitor then heals what it missed.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::RemoteDrive;
use crate::storage::DriveError;

/// How often a node is pinged, and how long a ping may take.
pub const PING_EVERY: Duration = Duration::from_secs(1);
/// Pings missed in a row before a node is down.
pub const MISSES_TO_DOWN: u32 = 2;

/// One other node, as this node sees it.
pub struct NodeLiveness {
    /// The node, as the layout names it.
    node: String,
    /// Calls the node's drive service (no drive in particular).
    pinger: RemoteDrive,
    /// Whether the node is down; calls in flight wait on it.
    down: tokio::sync::watch::Sender<bool>,
    misses: AtomicU32,
    /// When the node last missed a ping.
    last_miss: std::sync::Mutex<Option<std::time::Instant>>,
    /// Times the node answered again after missing pings.
    returns: AtomicU64,
}

impl NodeLiveness {
    /// A node reached through `pinger`, taken for up until pings say otherwise.
    pub fn new(node: String, pinger: RemoteDrive) -> Arc<Self> {
        Arc::new(Self {
            node,
            pinger,
            down: tokio::sync::watch::Sender::new(false),
            misses: AtomicU32::new(0),
            last_miss: std::sync::Mutex::new(None),
            returns: AtomicU64::new(0),
        })
    }

    pub fn node(&self) -> &str {
        &self.node
    }

    pub fn is_down(&self) -> bool {
        *self.down.borrow()
    }

    /// Resolves once the node is down (at once if it is).
    pub async fn until_down(&self) {
        let mut down = self.down.subscribe();
        // The sender lives as long as `self`, so waiting cannot fail.
        let _ = down.wait_for(|down| *down).await;
    }

    /// The error every call to a drive of a node that is down answers.
    pub fn refusal(&self, label: &str) -> DriveError {
        DriveError::Offline(format!("{label} (node {} is down)", self.node))
    }

    /// Pings the node once, waiting at most [`PING_EVERY`] (the server's `peer-liveness`
    /// job does so every [`PING_EVERY`]): whether it answered, `None` when a lost ping says
    /// nothing (this process was paused meanwhile).
    pub async fn ping(&self) -> Option<bool> {
        let sent = std::time::Instant::now();
        let answered = tokio::time::timeout(PING_EVERY, self.pinger.ping()).await;
        // A ping lost to this process's own pause says nothing of the node.
        if answered.is_err() && crate::storage::pause::paused_since(sent) {
            return None;
        }
        let answered = matches!(answered, Ok(Ok(())));
        self.heard(answered);
        Some(answered)
    }

    /// Takes one ping's outcome into account.
    fn heard(&self, answered: bool) {
        if answered {
            if self.misses.swap(0, Ordering::Relaxed) > 0 {
                self.returns.fetch_add(1, Ordering::Relaxed);
            }
            if self.down.send_replace(false) {
                tracing::info!(node = %self.node, "node answers again");
            }
            return;
        }
        *self.last_miss.lock().expect("not poisoned") = Some(std::time::Instant::now());
        let misses = self.misses.fetch_add(1, Ordering::Relaxed) + 1;
        if misses >= MISSES_TO_DOWN && !self.down.send_replace(true) {
            tracing::warn!(node = %self.node, misses, "node stopped answering: its drives are served around");
        }
    }
}

/// Calls to a node's drives overrun their deadline before the node is found down (cut off,
/// paused): its pings tell the drives are not to blame.
impl crate::storage::deadline::Reachability for NodeLiveness {
    fn missed_since(&self, since: std::time::Instant) -> bool {
        let last_miss = *self.last_miss.lock().expect("not poisoned");
        last_miss.is_some_and(|missed| missed >= since)
    }

    fn returns(&self) -> u64 {
        self.returns.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn liveness() -> Arc<NodeLiveness> {
        let auth = super::super::ClusterAuth::new(&[7; 32], "test").unwrap();
        let pinger = RemoteDrive::new(
            "http://127.0.0.1:1".into(),
            String::new(),
            auth,
            reqwest::Client::new(),
        );
        NodeLiveness::new("127.0.0.1:1".into(), pinger)
    }

    #[test]
    fn a_node_is_down_after_missed_pings_in_a_row_and_up_at_the_first_answer() {
        let node = liveness();
        node.heard(false);
        assert!(!node.is_down(), "one missed ping is not enough");
        node.heard(true);
        node.heard(false);
        assert!(
            !node.is_down(),
            "an answer in between starts the count again"
        );
        node.heard(false);
        assert!(node.is_down());
        node.heard(false);
        assert!(node.is_down());
        node.heard(true);
        assert!(!node.is_down());
    }
}
