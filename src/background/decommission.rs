//! Decommissions: the job that drains every pool being decommissioned, pass after pass,
//! paced, until a pass finds the pool empty; the pool is then retired and may be dropped
//! from the command line. The state lives where the pools are recorded (the drives, or etcd
//! in a cluster), so a drain cut short by a restart goes on at the next start, on whichever
//! node is elected for it.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::background::pace::{Pace, Pacer};
use crate::background::pool_states::{nodes_behind, record_pool_state};
use crate::background::published::Published;
use crate::background::Worker;
use crate::cluster::control::ControlPlane;
use crate::deployment::Deployment;
use crate::object::{now_ms, DrainPass, MoveCounts, MoveProgress, ObjectStore, PoolState};

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

/// A pool's drain as the server that drains it did it since the drain (or the server)
/// started.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DrainView {
    /// Unix milliseconds.
    pub started_ms: i64,
    pub keys_moved: u64,
    pub versions_moved: u64,
    pub bytes_moved: u64,
    pub failures: u64,
    /// What the last pass over the pool left there (none yet: `None`).
    pub keys_left: Option<u64>,
    pub open_uploads: Option<u64>,
}

impl DrainView {
    /// What the node that drains the pool with id `pool_id` last published.
    pub async fn published(store: &ObjectStore, pool_id: &str) -> Option<DrainView> {
        Published::read(store, &published_record(pool_id)).await
    }

    /// Publishes `view` as the drain of the pool with id `pool_id` (a drain just started).
    pub async fn publish_now(store: &ObjectStore, pool_id: &str, view: &DrainView) {
        let published = Published::new(published_record(pool_id));
        published.write(store, view, true).await;
    }
}

/// The deployment-wide record of a pool's drain's progress.
fn published_record(pool_id: &str) -> String {
    format!("pools/drain/{pool_id}")
}

impl PoolDrain {
    /// Goes on counting a drain from `view`, as another server published it.
    fn resume(&self, view: &DrainView) {
        self.progress.restore(MoveCounts {
            keys: view.keys_moved,
            versions: view.versions_moved,
            bytes: view.bytes_moved,
            failures: view.failures,
        });
        self.started_ms.store(view.started_ms, Ordering::Relaxed);
    }

    /// Where the drain stands here; `None` when none started here.
    pub fn view(&self) -> Option<DrainView> {
        let started_ms = self.started_ms.load(Ordering::Relaxed);
        if started_ms == 0 {
            return None;
        }
        let last = *self.last_pass.lock().expect("drain");
        let moved = self.progress.counts();
        Some(DrainView {
            started_ms,
            keys_moved: moved.keys,
            versions_moved: moved.versions,
            bytes_moved: moved.bytes,
            failures: moved.failures,
            keys_left: last.map(|pass| pass.keys_left),
            open_uploads: last.map(|pass| pass.open_uploads),
        })
    }
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

/// The job (one node's in a cluster: it is elected).
pub struct Decommission {
    pub store: Arc<ObjectStore>,
    pub deployment: Arc<Deployment>,
    /// A cluster's control plane, where the pool states are recorded.
    pub control: Option<Arc<ControlPlane>>,
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
            // Every node must know the pool is drained, or one could still put a new key
            // in it.
            if let Some(control) = &self.control {
                if let Some(waiting) = nodes_behind(control).await? {
                    done.push(format!("pool {}: {waiting}", index + 1));
                    continue;
                }
            }
            let drain = self.drains.pool(index);
            let pool_id = &self.deployment.pools[index].id;
            if drain.started_ms.load(Ordering::Relaxed) == 0 {
                // A drain this node takes over (another drained before it stopped) goes on
                // counting from what that one published.
                match DrainView::published(&self.store, pool_id).await {
                    Some(view) => drain.resume(&view),
                    None => self.drains.restart(index),
                }
            }
            let pacer =
                tokio::sync::Mutex::new(Pacer::new(Pace::configured(Some(self.duty), None)));
            let published = Published::new(published_record(pool_id));
            let store = &self.store;
            let pace = || async {
                pacer.lock().await.work_done(1).await;
                if let Some(view) = drain.view() {
                    published.write(store, &view, false).await;
                }
            };
            let pass = self.store.drain_pass(index, &drain.progress, pace).await?;
            *drain.last_pass.lock().expect("drain") = Some(pass);
            if let Some(view) = drain.view() {
                published.write(store, &view, true).await;
            }
            if !pass.drained() {
                done.push(format!(
                    "pool {}: {} keys left, {} uploads open",
                    index + 1,
                    pass.keys_left,
                    pass.open_uploads
                ));
                continue;
            }
            let retire = (PoolState::Decommissioning, PoolState::Retired);
            let control = self.control.as_deref();
            record_pool_state(&self.deployment, &self.store, control, index, retire).await?;
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
