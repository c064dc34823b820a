//! Rebalances: the job that evens the server pools' used fractions, pass after pass, paced,
//! until a pass finds nothing to move (see [`crate::object::ObjectStore::rebalance_pass`]).
//! An operator starts and stops it, on any node; its state is a deployment-wide record, so a
//! rebalance cut short by a restart goes on at the next start, and in a cluster the one node
//! elected for it reads that record before every pass and after every key it moves.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::background::pace::{Pace, Pacer};
use crate::background::published::Published;
use crate::background::Worker;
use crate::object::{now_ms, MoveCounts, MoveProgress, ObjectError, ObjectStore, RebalancePass};

/// The pause between passes.
const INTERVAL: Duration = Duration::from_secs(2);

/// The deployment-wide record of the last rebalance.
const RECORD: &str = "pools/rebalance";

/// What the node that rebalances moved, published for the others.
const PROGRESS_RECORD: &str = "pools/rebalance/progress";

/// Where the last rebalance stands, as recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RebalanceState {
    Running,
    /// An operator stopped it.
    Stopped,
    /// The pools were even, or as even as moving keys can make them.
    Completed,
}

impl RebalanceState {
    pub fn as_str(self) -> &'static str {
        match self {
            RebalanceState::Running => "running",
            RebalanceState::Stopped => "stopped",
            RebalanceState::Completed => "completed",
        }
    }
}

/// The last rebalance, as the deployment records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RebalanceRecord {
    pub state: RebalanceState,
    /// Unix milliseconds.
    pub started_ms: i64,
    pub ended_ms: Option<i64>,
}

/// What a rebalance moved, as the node that runs it publishes it.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
struct PublishedProgress {
    /// The start of the rebalance the figures are of (Unix milliseconds).
    started_ms: i64,
    #[serde(flatten)]
    moved: MoveCounts,
}

/// The rebalance as this server knows it: the record, as last read, and what this server
/// moved since it started it (or started).
#[derive(Debug, Default)]
pub struct Rebalancing {
    /// `None` until read from the deployment (or when none ever ran).
    record: Mutex<Option<RebalanceRecord>>,
    pub progress: MoveProgress,
    /// The start (Unix milliseconds) of the rebalance `progress` counts for: another node
    /// may have started a new one since.
    counting: AtomicI64,
    pub last_pass: Mutex<Option<RebalancePass>>,
}

impl Rebalancing {
    pub fn record(&self) -> Option<RebalanceRecord> {
        *self.record.lock().expect("rebalance")
    }

    /// Whether passes should go on (read on every key a pass considers).
    pub fn is_running(&self) -> bool {
        self.record()
            .is_some_and(|r| r.state == RebalanceState::Running)
    }

    /// What the node that rebalances last published of what it moved.
    pub async fn published(store: &ObjectStore) -> Option<MoveCounts> {
        let progress: PublishedProgress = Published::look(store, PROGRESS_RECORD).await.ok()??;
        Some(progress.moved)
    }

    /// Before a pass of the rebalance that started at `started_ms`: counts on from what
    /// was `published` of it (read now) when that is further along (another node ran it
    /// until now). An error when that cannot be read: the pass must not publish its own
    /// figures over further ones.
    async fn catch_up(
        &self,
        store: &ObjectStore,
        published: &Published,
        started_ms: i64,
    ) -> Result<(), ObjectError> {
        let published: Option<PublishedProgress> = published.read(store).await?;
        if let Some(theirs) = published.filter(|p| p.started_ms == started_ms) {
            if theirs.moved.keys > self.progress.counts().keys {
                self.progress.restore(theirs.moved);
            }
        }
        Ok(())
    }

    /// What this server counted, to publish.
    fn to_publish(&self) -> PublishedProgress {
        PublishedProgress {
            started_ms: self.counting.load(Ordering::Relaxed),
            moved: self.progress.counts(),
        }
    }

    /// Reads the recorded rebalance again (another node may have started or stopped it).
    pub async fn load(&self, store: &ObjectStore) -> Result<(), ObjectError> {
        let recorded = match store.system_get(RECORD).await? {
            Some(bytes) => serde_json::from_slice(&bytes).ok(),
            None => None,
        };
        *self.record.lock().expect("rebalance") = recorded;
        Ok(())
    }

    /// Starts a rebalance (the caller checked the pools allow one): recorded first, then
    /// counted afresh.
    pub async fn start(&self, store: &ObjectStore) -> Result<RebalanceRecord, ObjectError> {
        let record = RebalanceRecord {
            state: RebalanceState::Running,
            started_ms: now_ms(),
            ended_ms: None,
        };
        self.write(store, record).await?;
        self.count_for(&record);
        // The figures say which start they are of: stale ones are never taken for these.
        let published = Published::new(PROGRESS_RECORD.into());
        if let Err(e) = published.replace(store, &self.to_publish()).await {
            tracing::warn!(error = %e, "could not publish the rebalance's start");
        }
        Ok(record)
    }

    /// Counts afresh if `record` is another rebalance than the one counted.
    fn count_for(&self, record: &RebalanceRecord) {
        if self.counting.swap(record.started_ms, Ordering::Relaxed) != record.started_ms {
            self.progress.reset();
            *self.last_pass.lock().expect("rebalance") = None;
        }
    }

    /// Ends the running rebalance as `state`; what moved stays moved. `None` when none runs
    /// (another node may have ended it first: the record changes only if it still says
    /// running).
    pub async fn end(
        &self,
        store: &ObjectStore,
        state: RebalanceState,
    ) -> Result<Option<RebalanceRecord>, ObjectError> {
        let Some(running) = self.record().filter(|r| r.state == RebalanceState::Running) else {
            return Ok(None);
        };
        let ended = RebalanceRecord {
            state,
            ended_ms: Some(now_ms()),
            ..running
        };
        let expected = serde_json::to_vec(&running).expect("a record serializes");
        let bytes = serde_json::to_vec(&ended).expect("a record serializes");
        if !store.system_put_if(RECORD, Some(&expected), bytes).await? {
            self.load(store).await?;
            return Ok(None);
        }
        *self.record.lock().expect("rebalance") = Some(ended);
        Ok(Some(ended))
    }

    async fn write(&self, store: &ObjectStore, record: RebalanceRecord) -> Result<(), ObjectError> {
        let bytes = serde_json::to_vec(&record).expect("a record serializes");
        store.system_put(RECORD, bytes).await?;
        *self.record.lock().expect("rebalance") = Some(record);
        Ok(())
    }
}

/// The job (one node's in a cluster: it is elected).
pub struct Rebalance {
    pub store: Arc<ObjectStore>,
    pub rebalancing: Arc<Rebalancing>,
    /// The share of time it works (`STRATA_DECOMMISSION_DUTY`, which paces every move of
    /// keys between pools).
    pub duty: f64,
}

#[async_trait]
impl Worker for Rebalance {
    fn name(&self) -> &'static str {
        "pool-rebalance"
    }

    fn interval(&self) -> Duration {
        INTERVAL
    }

    async fn run_once(&mut self) -> anyhow::Result<String> {
        let rebalancing = &self.rebalancing;
        rebalancing.load(&self.store).await?;
        let Some(running) = rebalancing
            .record()
            .filter(|r| r.state == RebalanceState::Running)
        else {
            return Ok("no rebalance is running".into());
        };
        rebalancing.count_for(&running);
        let published = Published::new(PROGRESS_RECORD.into());
        rebalancing
            .catch_up(&self.store, &published, running.started_ms)
            .await?;
        let pacer = tokio::sync::Mutex::new(Pacer::new(Pace::configured(Some(self.duty), None)));
        let store = &self.store;
        // A stop asked on another node is heard after the next key.
        let pace = || async {
            pacer.lock().await.work_done(1).await;
            if let Err(e) = rebalancing.load(store).await {
                tracing::warn!(error = %e, "could not read the rebalance's record");
            }
            published
                .write(store, &rebalancing.to_publish(), false)
                .await;
        };
        let keep_going = || rebalancing.is_running();
        let pass = (self.store)
            .rebalance_pass(&rebalancing.progress, keep_going, pace)
            .await?;
        published
            .write(store, &rebalancing.to_publish(), true)
            .await;
        *rebalancing.last_pass.lock().expect("rebalance") = Some(pass.clone());
        if !pass.balanced() || !rebalancing.is_running() {
            return Ok(format!(
                "moved {} keys; {} left for the next pass",
                pass.keys_moved, pass.keys_left
            ));
        }
        rebalancing
            .end(&self.store, RebalanceState::Completed)
            .await?;
        tracing::info!("the server pools are even: the rebalance is complete");
        Ok("the pools are even: rebalance complete".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::erasure::ErasureSet;
    use crate::storage::sim::CrashController;

    fn store() -> (CrashController, Arc<ObjectStore>) {
        let sim = CrashController::new(9);
        let set = ErasureSet::new(0, sim.drives(), 3, 64 << 10).unwrap();
        (sim, ObjectStore::new(vec![set], "rebalance"))
    }

    fn keys(n: u64) -> MoveCounts {
        MoveCounts {
            keys: n,
            ..MoveCounts::default()
        }
    }

    #[tokio::test]
    async fn a_server_that_takes_over_a_rebalance_counts_on_from_what_was_published() {
        let (_sim, store) = store();
        // Started through this server; another ran it, moved 12 keys and stopped.
        let here = Rebalancing::default();
        let record = here.start(&store).await.unwrap();
        let runner = Rebalancing::default();
        runner.count_for(&record);
        runner.progress.restore(keys(12));
        Published::new(PROGRESS_RECORD.into())
            .replace(&store, &runner.to_publish())
            .await
            .unwrap();
        let published = Published::new(PROGRESS_RECORD.into());
        here.catch_up(&store, &published, record.started_ms)
            .await
            .unwrap();
        assert_eq!(here.progress.counts().keys, 12);
        assert_eq!(Rebalancing::published(&store).await, Some(keys(12)));
        // Figures of another rebalance count for nothing.
        let other = Rebalancing::default();
        (other
            .catch_up(&store, &published, record.started_ms + 1)
            .await)
            .unwrap();
        assert_eq!(other.progress.counts().keys, 0);
    }

    /// Before, an unreadable record counted as nothing published: the server taking over
    /// went on from zero and published that over what the last one moved.
    #[tokio::test]
    async fn a_server_that_cannot_read_the_published_figures_does_not_pass() {
        use crate::storage::faulty::Call;

        let (_sim, drives, store) = crate::background::faulty_store();
        let runner = Rebalancing::default();
        let record = runner.start(&store).await.unwrap();
        runner.progress.restore(keys(12));
        Published::new(PROGRESS_RECORD.into())
            .replace(&store, &runner.to_publish())
            .await
            .unwrap();

        let published = Published::new(PROGRESS_RECORD.into());
        let taking_over = Rebalancing::default();
        taking_over.count_for(&record);
        for drive in &drives[..4] {
            drive.fail(&[Call::MetaGet]);
        }
        assert!(taking_over
            .catch_up(&store, &published, record.started_ms)
            .await
            .is_err());
        for drive in &drives {
            drive.recover();
        }
        taking_over
            .catch_up(&store, &published, record.started_ms)
            .await
            .unwrap();
        assert_eq!(taking_over.progress.counts().keys, 12);
    }
}
