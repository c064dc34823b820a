//! Background work: each job implements [`Worker`] and runs on its own task, one pass at a
//! time, with a pause between passes. Every job is spawned into the server's [`Jobs`], which
//! `strata admin jobs` lists with where each stands: healing and scrubbing, lifecycle, usage,
//! stale uploads, the control plane's loops, other nodes' liveness, users and policies read
//! again, the key service, and the TLS certificate's reload.

pub mod certificates;
pub mod control_plane;
pub mod decommission;
pub mod healing;
pub mod identities;
pub mod pace;
pub mod peers;
pub mod pool_states;
pub mod published;
pub mod rebalance;
pub mod stale_uploads;
pub mod usage;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::object::now_ms;

/// A background job that the server runs periodically.
#[async_trait]
pub trait Worker: Send + 'static {
    fn name(&self) -> &'static str;
    /// The pause between two passes (asked again before each).
    fn interval(&self) -> Duration;
    /// The pause before the first pass: an interval, unless the job is what the server
    /// waits on (its records' authority, its users).
    fn first_pass_after(&self) -> Duration {
        self.interval()
    }
    /// One pass; returns a line for the log.
    async fn run_once(&mut self) -> anyhow::Result<String>;
}

/// The background jobs of one server, as `strata admin jobs` lists them.
#[derive(Default)]
pub struct Jobs {
    listed: Mutex<Vec<Arc<Mutex<JobStatus>>>>,
}

/// Where one job stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobStatus {
    /// What the job is (its election's name in a cluster); a tier pool's jobs carry the tier.
    pub name: String,
    /// Whether a pass is running now.
    pub running: bool,
    pub interval_secs: u64,
    /// Passes done (failed ones included) since the server started.
    pub passes: u64,
    pub failures: u64,
    /// When the last pass started and ended (milliseconds since the epoch).
    pub last_started_ms: Option<i64>,
    pub last_finished_ms: Option<i64>,
    /// What the last pass reported: its summary, or why it failed.
    pub last_outcome: Option<String>,
}

impl Jobs {
    /// Every job, in the order it was started.
    pub fn list(&self) -> Vec<JobStatus> {
        let listed = self.listed.lock().unwrap();
        listed
            .iter()
            .map(|job| job.lock().unwrap().clone())
            .collect()
    }

    /// Runs `worker` until the server stops (or the handle is aborted), listed under its own
    /// name after `owner` (e.g. the tier whose drives it heals).
    pub fn spawn(
        &self,
        owner: Option<&str>,
        mut worker: impl Worker,
    ) -> tokio::task::JoinHandle<()> {
        let name = match owner {
            Some(owner) => format!("{owner}/{}", worker.name()),
            None => worker.name().to_string(),
        };
        let status = Arc::new(Mutex::new(JobStatus {
            name,
            running: false,
            interval_secs: worker.interval().as_secs(),
            passes: 0,
            failures: 0,
            last_started_ms: None,
            last_finished_ms: None,
            last_outcome: None,
        }));
        self.listed.lock().unwrap().push(status.clone());
        tokio::spawn(async move {
            let mut pause = worker.first_pass_after();
            loop {
                tokio::time::sleep(pause).await;
                pause = worker.interval();
                {
                    let mut status = status.lock().unwrap();
                    status.running = true;
                    status.last_started_ms = Some(now_ms());
                }
                let outcome = worker.run_once().await;
                let mut status = status.lock().unwrap();
                status.running = false;
                status.passes += 1;
                status.last_finished_ms = Some(now_ms());
                match outcome {
                    Ok(summary) => {
                        tracing::debug!(worker = worker.name(), %summary, "pass done");
                        status.last_outcome = Some(summary);
                    }
                    Err(e) => {
                        tracing::warn!(worker = worker.name(), error = %e, "pass failed");
                        status.failures += 1;
                        status.last_outcome = Some(format!("failed: {e:#}"));
                    }
                }
            }
        })
    }
}

/// A worker that must run on one node of a cluster at a time: its passes run only while this
/// node holds the job's election (see `crate::cluster::control`).
pub struct Elected<W> {
    pub worker: W,
    pub held: tokio::sync::watch::Receiver<bool>,
}

#[async_trait]
impl<W: Worker> Worker for Elected<W> {
    fn name(&self) -> &'static str {
        self.worker.name()
    }

    fn interval(&self) -> Duration {
        self.worker.interval()
    }

    fn first_pass_after(&self) -> Duration {
        self.worker.first_pass_after()
    }

    /// A pass stops where it is when this node loses the election ([`while_held`]).
    async fn run_once(&mut self) -> anyhow::Result<String> {
        if !*self.held.borrow_and_update() {
            return Ok("another node holds this job".into());
        }
        let held = [self.held.clone()];
        (while_held(&held, self.worker.run_once()).await).unwrap_or_else(stopped)
    }
}

/// Runs `work` while this node holds every election in `held`: `None` if it lost one first
/// (or the control plane stopped). Elected passes end there, rather than run on for hours
/// beside the new holder's; their commits are conditional and crash-safe, so an end at any
/// await is as safe as a crash. A loss seen when the work is ready too still wins.
pub async fn while_held<T>(
    held: &[tokio::sync::watch::Receiver<bool>],
    work: impl std::future::Future<Output = T>,
) -> Option<T> {
    if held.is_empty() {
        return Some(work.await);
    }
    let lost = held.iter().map(|held| {
        let mut held = held.clone();
        Box::pin(async move {
            let _ = held.wait_for(|held| !held).await;
        })
    });
    tokio::select! {
        biased;
        _ = futures::future::select_all(lost) => None,
        outcome = work => Some(outcome),
    }
}

/// What a pass stopped by a lost election reports.
pub fn stopped() -> anyhow::Result<String> {
    Ok("stopped: this node no longer holds this job".into())
}

/// A deployment of three local drives (2+1) in a temporary folder and its object store, for
/// the jobs' tests.
#[cfg(test)]
pub(crate) fn test_deployment(
    dir: &std::path::Path,
) -> (
    std::sync::Arc<crate::deployment::Deployment>,
    std::sync::Arc<crate::object::ObjectStore>,
    crate::config::ServerConfig,
) {
    let drives = (0..3).map(|i| dir.join(format!("d{i}"))).collect();
    let config = crate::config::ServerConfig::on_drives(drives, 2, 1);
    let mut deployment = crate::deployment::open(&config, false, None).expect("deployment opens");
    let store =
        crate::object::ObjectStore::new(std::mem::take(&mut deployment.sets), &deployment.id);
    (std::sync::Arc::new(deployment), store, config)
}

/// A store of one 6+3 set over simulated drives that can be told to fail, for the jobs'
/// tests: the simulation (keep it alive), the drives, the store.
#[cfg(test)]
pub(crate) fn faulty_store() -> (
    crate::storage::sim::CrashController,
    Vec<std::sync::Arc<crate::storage::faulty::FaultyDrive>>,
    std::sync::Arc<crate::object::ObjectStore>,
) {
    use crate::storage::faulty::FaultyDrive;
    let sim = crate::storage::sim::CrashController::new(9);
    let drives: Vec<_> = sim.drives().into_iter().map(FaultyDrive::new).collect();
    let set_drives = drives.iter().map(|d| d.clone() as _).collect();
    let set = crate::erasure::ErasureSet::new(0, set_drives, 3, 64 << 10).unwrap();
    (
        sim,
        drives,
        crate::object::ObjectStore::new(vec![set], "jobs"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pass that never ends by itself, like a scrub of a large deployment.
    struct Endless;

    #[async_trait]
    impl Worker for Endless {
        fn name(&self) -> &'static str {
            "endless"
        }

        fn interval(&self) -> Duration {
            Duration::from_secs(1)
        }

        async fn run_once(&mut self) -> anyhow::Result<String> {
            std::future::pending().await
        }
    }

    /// Before, a pass started while elected ran to its end whoever held the job by then.
    #[tokio::test]
    async fn a_pass_stops_when_its_node_loses_the_election() {
        let (held_tx, held) = tokio::sync::watch::channel(false);
        let mut elected = Elected {
            worker: Endless,
            held,
        };
        assert_eq!(
            elected.run_once().await.unwrap(),
            "another node holds this job"
        );
        held_tx.send_replace(true);
        let pass = tokio::spawn(async move { elected.run_once().await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!pass.is_finished(), "the pass runs while the job is held");
        held_tx.send_replace(false);
        let outcome = tokio::time::timeout(Duration::from_secs(5), pass)
            .await
            .expect("the pass stopped")
            .unwrap();
        assert_eq!(
            outcome.unwrap(),
            "stopped: this node no longer holds this job"
        );
    }

    /// Heal passes cover several sets: losing the election of any one of them stops the pass.
    #[tokio::test]
    async fn work_stops_when_any_one_of_its_elections_is_lost() {
        let (first_tx, first) = tokio::sync::watch::channel(true);
        let (second_tx, second) = tokio::sync::watch::channel(true);
        let held = [first, second];
        assert_eq!(while_held(&held, async { 7 }).await, Some(7));
        assert_eq!(while_held(&[], async { 8 }).await, Some(8));
        let endless = while_held(&held, std::future::pending::<()>());
        let losing = async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            second_tx.send_replace(false);
            std::future::pending::<()>().await
        };
        let stopped = tokio::time::timeout(Duration::from_secs(5), async {
            tokio::select! {
                outcome = endless => outcome,
                () = losing => unreachable!(),
            }
        });
        assert_eq!(stopped.await.expect("the work stopped"), None);
        drop(first_tx);
    }
}
