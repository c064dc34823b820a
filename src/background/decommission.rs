//! Decommissions: the job that drains every pool being decommissioned, pass after pass,
//! paced, until a pass finds the pool empty; the pool is then retired and may be dropped
//! from the command line. The state lives where the pools are recorded (the drives, or etcd
//! in a cluster), so a drain cut short by a restart goes on at the next start, on whichever
//! node is elected for it.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::background::pace::{Pace, Pacer};
use crate::background::pool_states::{nodes_behind, record_pool_state};
use crate::background::published::Published;
use crate::background::Worker;
use crate::cluster::control::ControlPlane;
use crate::deployment::Deployment;
use crate::object::{
    now_ms, DrainPass, MoveCounts, MoveProgress, ObjectError, ObjectStore, PoolState,
};

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
    pub async fn published(
        store: &ObjectStore,
        pool_id: &str,
    ) -> Result<Option<DrainView>, ObjectError> {
        Published::look(store, &published_record(pool_id)).await
    }
}

/// Starts draining pool `index` (the caller checked the pools allow it): the drain's start is
/// counted here and published first, and only then is the pool recorded decommissioning. So
/// a node that drains it always finds its start published; one that counted from a start of
/// its own would have this one, published later, overtake its figures with nothing moved.
pub async fn start_drain(
    drains: &Drains,
    store: &ObjectStore,
    deployment: &Arc<Deployment>,
    control: Option<&ControlPlane>,
    index: usize,
) -> anyhow::Result<()> {
    drains.pools[index].start();
    let view = drains.pools[index].view().expect("a drain just started");
    let published = Published::new(published_record(&deployment.pools[index].id));
    (published.replace(store, &view).await).context("publishing the drain's start")?;
    let change = (PoolState::Active, PoolState::Decommissioning);
    record_pool_state(deployment, store, control, index, change).await
}

/// The deployment-wide record of a pool's drain's progress.
fn published_record(pool_id: &str) -> String {
    format!("pools/drain/{pool_id}")
}

impl PoolDrain {
    /// Before a pass: catches up with what was `published` of the drain (read now). An error
    /// when that cannot be read: a server taking over must not count afresh and publish
    /// nothing moved over what the last one moved.
    async fn catch_up_with(
        &self,
        store: &ObjectStore,
        published: &Published,
    ) -> Result<(), ObjectError> {
        self.catch_up(published.read(store).await?.as_ref());
        Ok(())
    }

    /// Before a pass: counts on from what was last published for the drain, when that is
    /// of a later start than this server's figures (another server drained, or the admin
    /// request that started the drain reached this one) or further along in the same one
    /// (another server drained while this one waited). Nothing published: counts afresh.
    fn catch_up(&self, published: Option<&DrainView>) {
        let Some(view) = published else {
            if self.started_ms.load(Ordering::Relaxed) == 0 {
                self.start();
                tracing::info!("no start of the drain is published: counted from now");
            }
            return;
        };
        let started_ms = self.started_ms.load(Ordering::Relaxed);
        let mine = self.progress.counts();
        let theirs = MoveCounts {
            keys: view.keys_moved,
            versions: view.versions_moved,
            bytes: view.bytes_moved,
            failures: view.failures,
        };
        let take = view.started_ms > started_ms
            || (view.started_ms == started_ms && theirs.keys > mine.keys);
        if take {
            // Rare (a start, or another node's drain taken over), and what to look for
            // when a drain's figures look wrong.
            tracing::info!(
                started_ms = view.started_ms,
                keys_moved = theirs.keys,
                own_started_ms = started_ms,
                own_keys_moved = mine.keys,
                "the drain counts on from the published figures"
            );
            self.progress.restore(theirs);
            self.started_ms.store(view.started_ms, Ordering::Relaxed);
        }
    }

    /// Starts counting afresh.
    fn start(&self) {
        self.progress.reset();
        self.started_ms.store(now_ms(), Ordering::Relaxed);
        *self.last_pass.lock().expect("drain") = None;
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
            let published = Published::new(published_record(&self.deployment.pools[index].id));
            // A drain this node takes over goes on counting from what the last one to
            // drain published.
            if let Err(e) = drain.catch_up_with(&self.store, &published).await {
                done.push(format!(
                    "pool {}: where its drain stands cannot be read ({e}); trying again",
                    index + 1
                ));
                continue;
            }
            let pacer =
                tokio::sync::Mutex::new(Pacer::new(Pace::configured(Some(self.duty), None)));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::background::faulty_store;
    use crate::storage::faulty::Call;

    fn published(started_ms: i64, keys_moved: u64) -> DrainView {
        DrainView {
            started_ms,
            keys_moved,
            versions_moved: keys_moved,
            bytes_moved: keys_moved * 100,
            ..DrainView::default()
        }
    }

    #[test]
    fn a_server_that_started_a_drain_another_ran_counts_on_from_what_that_one_published() {
        // The admin request started the drain here; another server was elected and moved
        // every key, then stopped; this one takes over and finds nothing left to move.
        let drains = Drains::new(1);
        let drain = drains.pool(0);
        drain.start();
        let started_ms = drain.started_ms.load(Ordering::Relaxed);
        drain.catch_up(Some(&published(started_ms, 40)));
        let view = drain.view().unwrap();
        assert_eq!((view.started_ms, view.keys_moved), (started_ms, 40));
        assert_eq!(view.bytes_moved, 4000);
    }

    #[test]
    fn a_server_that_never_drained_takes_the_published_figures_and_its_own_are_kept() {
        let drains = Drains::new(1);
        let drain = drains.pool(0);
        drain.catch_up(Some(&published(1_000, 7)));
        assert_eq!(drain.view().unwrap().keys_moved, 7);
        // Its own counting went further than what it last published: kept.
        drain.progress.restore(MoveCounts {
            keys: 9,
            ..MoveCounts::default()
        });
        drain.catch_up(Some(&published(1_000, 7)));
        assert_eq!(drain.view().unwrap().keys_moved, 9);
        // Figures of an older start count for nothing.
        drain.catch_up(Some(&published(500, 70)));
        assert_eq!(drain.view().unwrap().keys_moved, 9);
    }

    #[test]
    fn a_drain_started_again_is_counted_afresh_by_the_server_that_drained_before() {
        // This server drained, then the drain was cancelled and started again through
        // another: the new start's published figures (nothing moved) replace its own.
        let drains = Drains::new(1);
        let drain = drains.pool(0);
        drain.catch_up(Some(&published(1_000, 30)));
        drain.catch_up(Some(&published(2_000, 0)));
        let view = drain.view().unwrap();
        assert_eq!((view.started_ms, view.keys_moved), (2_000, 0));
    }

    /// Before, an unreadable record was taken for nothing published: a server that took the
    /// drain over after a restart, while a node was down, counted afresh from zero and
    /// published that over the figures of the drain that had moved every key.
    #[tokio::test]
    async fn a_server_that_cannot_read_the_published_figures_does_not_count_afresh() {
        let (_sim, drives, store) = faulty_store();
        let record = || Published::new(published_record("pool-1"));
        record()
            .replace(&store, &published(1_000, 40))
            .await
            .unwrap();

        let drains = Drains::new(1);
        let drain = drains.pool(0);
        for drive in &drives[..4] {
            drive.fail(&[Call::MetaGet]);
        }
        assert!(drain.catch_up_with(&store, &record()).await.is_err());
        assert!(drain.view().is_none(), "{:?}", drain.view());
        for drive in &drives {
            drive.recover();
        }
        drain.catch_up_with(&store, &record()).await.unwrap();
        let view = drain.view().unwrap();
        assert_eq!((view.started_ms, view.keys_moved), (1_000, 40));

        // Figures this server cannot decode (a newer release's) are no more nothing
        // published than figures it cannot read.
        let undecodable = published_record("pool-2");
        store
            .system_put(&undecodable, b"{\"started\": [".to_vec())
            .await
            .unwrap();
        assert!(Drains::new(1)
            .pool(0)
            .catch_up_with(&store, &Published::new(undecodable))
            .await
            .is_err());
    }

    /// Before, the pool was recorded decommissioning first and the drain's start published
    /// after: a node that drained in between counted from a start of its own, and the start,
    /// published late, overtook its figures with nothing moved (every node then told of a
    /// drain that had moved no key).
    #[tokio::test]
    async fn a_pool_drains_only_once_the_drain_start_is_published() {
        let dir = tempfile::tempdir().unwrap();
        let (deployment, _, _) = crate::background::test_deployment(dir.path());
        let (_sim, drives, store) = faulty_store();
        let drains = Drains::new(1);
        for drive in &drives[..4] {
            drive.fail(&[Call::MetaApply]);
        }
        let refused = start_drain(&drains, &store, &deployment, None, 0).await;
        assert!(refused.is_err(), "{refused:?}");
        assert_eq!(store.pools()[0].state(), PoolState::Active);

        for drive in &drives {
            drive.recover();
        }
        start_drain(&drains, &store, &deployment, None, 0)
            .await
            .unwrap();
        assert_eq!(store.pools()[0].state(), PoolState::Decommissioning);
        // Whichever node drains it counts from that start.
        let elsewhere = Drains::new(1);
        let published = Published::new(published_record(&deployment.pools[0].id));
        (elsewhere.pool(0).catch_up_with(&store, &published).await).unwrap();
        let started_ms = |drains: &Drains| drains.pool(0).view().unwrap().started_ms;
        assert_eq!(started_ms(&elsewhere), started_ms(&drains));
    }

    #[test]
    fn with_nothing_published_a_drain_is_counted_from_its_start_here() {
        let drains = Drains::new(1);
        let drain = drains.pool(0);
        assert!(drain.view().is_none());
        drain.catch_up(None);
        let view = drain.view().unwrap();
        assert!(view.started_ms > 0 && view.keys_moved == 0, "{view:?}");
    }
}
