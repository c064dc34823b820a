//! Whether each other node answers at all (see `storage::remote::liveness`): one ping every
//! [`PING_EVERY`], a job per node.

use std::sync::Weak;
use std::time::{Duration, Instant};

use anyhow::Context;
use async_trait::async_trait;

use crate::background::Worker;
use crate::storage::remote::{NodeLiveness, PING_EVERY};

pub struct PeerLiveness {
    pub peer: Weak<NodeLiveness>,
    /// How long the last ping took: the next starts a ping period after it started.
    last_took: Duration,
}

impl PeerLiveness {
    pub fn new(peer: Weak<NodeLiveness>) -> Self {
        PeerLiveness {
            peer,
            last_took: Duration::ZERO,
        }
    }
}

#[async_trait]
impl Worker for PeerLiveness {
    fn name(&self) -> &'static str {
        "peer-liveness"
    }

    fn interval(&self) -> Duration {
        PING_EVERY.saturating_sub(self.last_took)
    }

    async fn run_once(&mut self) -> anyhow::Result<String> {
        let peer = self.peer.upgrade().context("the server stopped")?;
        let started = Instant::now();
        let answered = peer.ping().await;
        self.last_took = started.elapsed();
        Ok(match (answered, peer.is_down()) {
            (None, _) => "this process was paused: the ping says nothing".into(),
            (Some(_), true) => "down: its drives are served around".into(),
            (Some(true), false) => "answers".into(),
            (Some(false), false) => "missed a ping".into(),
        })
    }
}
