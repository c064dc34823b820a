//! Decommissions: the job that drains every pool being decommissioned, pass after pass,
//! paced, until a pass finds the pool empty; the pool is then retired (recorded on the
//! drives) and may be dropped from the command line. The state lives on the drives, so a
//! drain cut short by a restart goes on at the next start.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use crate::background::pace::{Pace, Pacer};
use crate::background::Worker;
use crate::deployment::Deployment;
use crate::object::{now_ms, DrainPass, MoveProgress, ObjectStore, PoolState};

/// The pause between passes.
const INTERVAL: Duration = Duration::from_secs(2);

/// Where the drain of each pool stands (by the pool's place on the command line).
#[derive(Debug, Default)]
pub struct Drains {
    pools: Vec<PoolDrain>,
}

/// One pool's drain since this server started it (or started).
#[derive(Debug, Default)]
pub struct PoolDrain {
    pub progress: MoveProgress,
    /// When the drain (re)started here, in Unix milliseconds; 0 if it never did.
    pub started_ms: AtomicI64,
    pub last_pass: Mutex<Option<DrainPass>>,
}

impl Drains {
    pub fn new(pools: usize) -> Self {
        Drains {
            pools: (0..pools).map(|_| PoolDrain::default()).collect(),
        }
    }

    pub fn pool(&self, index: usize) -> &PoolDrain {
        &self.pools[index]
    }

    /// Starts counting a drain of pool `index` afresh.
    pub fn restart(&self, index: usize) {
        let drain = &self.pools[index];
        drain.progress.reset();
        drain.started_ms.store(now_ms(), Ordering::Relaxed);
        *drain.last_pass.lock().expect("drain") = None;
    }
}

/// The job.
pub struct Decommission {
    pub store: Arc<ObjectStore>,
    pub deployment: Arc<Deployment>,
    pub drains: Arc<Drains>,
    /// The share of time a drain works (`STRATA_DECOMMISSION_DUTY`).
    pub duty: f64,
}

#[async_trait]
impl Worker for Decommission {
    fn name(&self) -> &'static str {
        "pool-decommission"
    }

    fn interval(&self) -> Duration {
        INTERVAL
    }

    async fn run_once(&mut self) -> anyhow::Result<String> {
        let mut done = Vec::new();
        for (index, pool) in self.store.pools().iter().enumerate() {
            if pool.state() != PoolState::Decommissioning {
                continue;
            }
            let drain = self.drains.pool(index);
            if drain.started_ms.load(Ordering::Relaxed) == 0 {
                self.drains.restart(index);
            }
            let pacer =
                tokio::sync::Mutex::new(Pacer::new(Pace::configured(Some(self.duty), None)));
            let pace = || async { pacer.lock().await.work_done(1).await };
            let pass = self.store.drain_pass(index, &drain.progress, pace).await?;
            *drain.last_pass.lock().expect("drain") = Some(pass);
            if !pass.drained() {
                done.push(format!(
                    "pool {}: {} keys left, {} uploads open",
                    index + 1,
                    pass.keys_left,
                    pass.open_uploads
                ));
                continue;
            }
            let deployment = self.deployment.clone();
            tokio::task::spawn_blocking(move || {
                deployment.record_pool_state(index, PoolState::Retired)
            })
            .await??;
            pool.set_state(PoolState::Retired);
            tracing::info!(
                pool = index + 1,
                "the pool is drained and retired: it may be dropped from the command line"
            );
            done.push(format!("pool {} retired", index + 1));
        }
        Ok(match done.is_empty() {
            true => "no pool is being decommissioned".into(),
            false => done.join("; "),
        })
    }
}
