//! The server's healing: a drive monitor that takes back returning or replaced drives and
//! heals their sets, a healer for the objects reads found damaged, and a scrubber that reads
//! and verifies every shard at a bounded rate. The repair itself is the object layer's
//! (`ObjectStore::heal_object`); this module decides when to run it and keeps score.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde::Serialize;
use tokio::sync::watch;

use crate::background::{self, Worker};
use crate::config::ServerConfig;
use crate::deployment::Deployment;
use crate::object::{now_ms, HealDepth, HealReport, HealScope, ObjectStore};

/// One heal pass, as operators see it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct HealPass {
    /// What started it: "drive replaced", "scrub", "admin", ...
    pub reason: String,
    /// The bucket (and prefix) it covers; empty for everything.
    pub scope: String,
    pub started_ms: i64,
    pub finished_ms: Option<i64>,
    /// Objects the pass goes over, counted when it starts.
    pub objects_total: u64,
    pub report: HealReport,
    pub error: Option<String>,
}

/// The running and the last finished heal pass, and the count of objects healed after reads
/// found them damaged.
#[derive(Debug, Default, Serialize, Clone)]
pub struct HealStatus {
    pub running: Option<HealPass>,
    pub last: Option<HealPass>,
    pub healed_after_reads: HealReport,
    /// Objects reads found damaged, waiting to be healed.
    pub queued_after_reads: u64,
}

impl HealStatus {
    /// Objects known to wait for healing: those the running pass has still to go over, and
    /// those reads found damaged.
    pub fn objects_to_heal(&self) -> u64 {
        let running = self.running.as_ref().map_or(0, |pass| {
            pass.objects_total
                .saturating_sub(pass.report.objects_checked)
        });
        running + self.queued_after_reads
    }
}

/// Shared heal status; one heal pass runs at a time.
#[derive(Default)]
pub struct Healer {
    status: Mutex<HealStatus>,
    one_at_a_time: tokio::sync::Mutex<()>,
}

impl Healer {
    pub fn status(&self, store: &ObjectStore) -> HealStatus {
        let mut status = self.status.lock().expect("not poisoned").clone();
        status.queued_after_reads = store.heal_requests_queued();
        status
    }

    /// Runs a heal pass over `scope`, keeping the status current.
    pub async fn run_pass(
        &self,
        store: &ObjectStore,
        reason: &str,
        scope: &HealScope,
        depth: HealDepth,
        max_rate: Option<u64>,
    ) -> HealPass {
        let _one = self.one_at_a_time.lock().await;
        let mut pass = HealPass {
            reason: reason.to_string(),
            scope: scope.to_string(),
            started_ms: now_ms(),
            ..HealPass::default()
        };
        let running = RunningPass::start(&self.status, &pass);
        pass.objects_total = store.count_objects(scope).await;
        if let Some(running) = &mut self.status.lock().expect("not poisoned").running {
            running.objects_total = pass.objects_total;
        }
        // Bucket and deployment-wide records first (objects are healed against them), then
        // the objects, then multipart uploads in progress.
        let result = async {
            let mut report = match scope.bucket {
                None => store.heal_buckets().await?,
                Some(_) => HealReport::default(),
            };
            let records = report.clone();
            let objects = store
                .heal_objects(scope, depth, max_rate, |objects| {
                    if let Some(running) = &mut self.status.lock().expect("not poisoned").running {
                        running.report = records.clone();
                        running.report.add(objects);
                    }
                })
                .await?;
            report.add(&objects);
            report.add(&store.heal_uploads(scope).await?);
            Ok::<_, crate::object::ObjectError>(report)
        }
        .await;
        match result {
            Ok(report) => pass.report = report,
            Err(e) => pass.error = Some(e.to_string()),
        }
        running.finish(&mut pass);
        let r = &pass.report;
        tracing::info!(
            reason,
            objects = r.objects_checked,
            healed = r.objects_healed,
            shards_rebuilt = r.shards_rebuilt,
            records_repaired = r.records_repaired,
            stale_purged = r.stale_purged,
            unresolved = r.unresolved,
            error = pass.error.as_deref().unwrap_or(""),
            "heal pass done"
        );
        pass
    }

    /// The job that heals the objects reads found damaged (the store's queue is taken
    /// once: `None` if it was taken already).
    pub fn read_healer(self: &Arc<Self>, store: Arc<ObjectStore>) -> Option<ReadHealer> {
        let requests = store.take_heal_requests()?;
        Some(ReadHealer {
            store,
            healer: self.clone(),
            requests,
        })
    }
}

/// How soon an object a read found damaged is healed.
const READ_HEAL_INTERVAL: Duration = Duration::from_millis(250);

/// Heals, one by one, the objects that reads found damaged: each pass takes what the
/// store's queue holds.
pub struct ReadHealer {
    store: Arc<ObjectStore>,
    healer: Arc<Healer>,
    requests: tokio::sync::mpsc::Receiver<(crate::object::BucketName, crate::object::ObjectKey)>,
}

#[async_trait]
impl Worker for ReadHealer {
    fn name(&self) -> &'static str {
        "read-healer"
    }

    fn interval(&self) -> Duration {
        READ_HEAL_INTERVAL
    }

    async fn run_once(&mut self) -> anyhow::Result<String> {
        let (mut healed, mut failed) = (0, 0);
        while let Ok((bucket, key)) = self.requests.try_recv() {
            match self.store.heal_object(&bucket, &key, HealDepth::Deep).await {
                Ok(report) => {
                    if report.objects_healed > 0 {
                        healed += 1;
                        tracing::info!(bucket = %bucket, key = %key, shards_rebuilt = report.shards_rebuilt, "healed an object a read found damaged");
                    }
                    let mut status = self.healer.status.lock().expect("not poisoned");
                    status.healed_after_reads.add(&report);
                }
                Err(e) => {
                    failed += 1;
                    tracing::warn!(bucket = %bucket, key = %key, error = %e, "heal after read failed")
                }
            }
        }
        Ok(format!("{healed} healed after reads, {failed} failed"))
    }
}

/// The status's running pass, for as long as the pass runs: whether it finishes or is dropped
/// (its node lost the election, the server stops), it becomes the last pass, so no pass is
/// shown running that no longer runs.
struct RunningPass<'a> {
    status: &'a Mutex<HealStatus>,
}

impl<'a> RunningPass<'a> {
    fn start(status: &'a Mutex<HealStatus>, pass: &HealPass) -> Self {
        status.lock().expect("not poisoned").running = Some(pass.clone());
        RunningPass { status }
    }

    fn finish(self, pass: &mut HealPass) {
        pass.finished_ms = Some(now_ms());
        let mut status = self.status.lock().expect("not poisoned");
        status.running = None;
        status.last = Some(pass.clone());
    }
}

impl Drop for RunningPass<'_> {
    fn drop(&mut self) {
        let mut status = self.status.lock().expect("not poisoned");
        if let Some(mut stopped) = status.running.take() {
            stopped.finished_ms = Some(now_ms());
            stopped.error = Some("stopped before it finished".into());
            status.last = Some(stopped);
        }
    }
}

/// Looks at the drives periodically; when a drive returns or an empty one replaces a failed
/// one, heals its set so the drive gets back what it missed. In a cluster with a control
/// plane each set is healed by the one node elected for it (every node sees another node's
/// drives come back; without etcd each of them heals, which is safe, only done twice).
pub struct DriveMonitor {
    pub deployment: Arc<Deployment>,
    pub config: ServerConfig,
    pub store: Arc<ObjectStore>,
    pub healer: Arc<Healer>,
    /// The sets with a drive that came back or was formatted, not healed yet.
    pub heal_pending: BTreeSet<usize>,
    /// Per set, whether this node holds the election to heal it; `None`: it heals them all.
    pub owned: Option<Vec<watch::Receiver<bool>>>,
}

impl DriveMonitor {
    /// The sets of the drives formatted at this start: they need everything.
    pub fn sets_formatted_at_start(deployment: &Deployment) -> BTreeSet<usize> {
        (deployment.formatted.iter())
            .filter_map(|drive| deployment.set_of(drive))
            .collect()
    }

    /// The job a node stands for to heal set `index`.
    pub fn election(index: usize) -> String {
        format!("heal-set-{}", index + 1)
    }

    fn owns(&self, set: usize) -> bool {
        (self.owned.as_ref()).is_none_or(|owned| owned.get(set).is_some_and(|held| *held.borrow()))
    }
}

#[async_trait]
impl Worker for DriveMonitor {
    fn name(&self) -> &'static str {
        "drive-monitor"
    }

    fn interval(&self) -> Duration {
        self.config.healing.drive_check
    }

    async fn run_once(&mut self) -> anyhow::Result<String> {
        let deployment = self.deployment.clone();
        let mut changes = tokio::task::spawn_blocking(move || deployment.check_drives()).await?;
        changes.extend(self.deployment.check_remote_drives().await);
        if !changes.is_empty() {
            // With drives gone or back, the buckets may agree differently (or not at all).
            self.store.forget_agreed_buckets();
        }
        // A drive unhealed now (formatted in, its database made anew, or still unhealed from
        // before a restart) needs a complete pass of its set before it votes.
        let unhealed = self.deployment.unhealed_drives();
        let set_of = |drive: &std::path::Path| self.deployment.set_of(drive);
        let returned = (changes.iter().filter(|c| c.needs_heal())).filter_map(|c| set_of(c.path()));
        let unhealed_sets = unhealed
            .iter()
            .map(|&position| self.deployment.drives[position].set_index);
        self.heal_pending.extend(returned.chain(unhealed_sets));
        let ours: Vec<usize> = (self.heal_pending.iter().copied())
            .filter(|&set| self.owns(set))
            .collect();
        if ours.is_empty() {
            return Ok(match self.heal_pending.is_empty() {
                true => "drives unchanged".into(),
                false => "sets to heal are another node's".into(),
            });
        }
        let scope = HealScope::of_sets(ours.clone());
        let pass = self.healer.run_pass(
            &self.store,
            "drive returned or replaced",
            &scope,
            HealDepth::Quick,
            None,
        );
        // Stopped when this node loses one of the sets' elections: their new holder heals it.
        let held: Vec<_> = (self.owned.iter().flatten().enumerate())
            .filter(|(set, _)| ours.contains(set))
            .map(|(_, held)| held.clone())
            .collect();
        let Some(pass) = background::while_held(&held, pass).await else {
            return background::stopped();
        };
        // A pass with anything it could not settle is tried again at the next look, and the
        // unhealed drives stay unhealed: they may lack what it could not settle.
        if pass.error.is_none() && pass.report.unresolved == 0 {
            for set in &ours {
                self.heal_pending.remove(set);
            }
            let healed: Vec<usize> = (unhealed.into_iter())
                .filter(|&position| ours.contains(&self.deployment.drives[position].set_index))
                .collect();
            self.deployment.healed(&healed).await;
        }
        Ok(format!("healed {} objects", pass.report.objects_healed))
    }
}

/// Reads and verifies every shard periodically, at a bounded rate, healing what fails.
pub struct Scrubber {
    pub store: Arc<ObjectStore>,
    pub healer: Arc<Healer>,
    pub interval: Duration,
    pub max_rate: u64,
    pub orphan_age: Duration,
}

#[async_trait]
impl Worker for Scrubber {
    fn name(&self) -> &'static str {
        "scrubber"
    }

    fn interval(&self) -> Duration {
        self.interval
    }

    async fn run_once(&mut self) -> anyhow::Result<String> {
        let pass = self
            .healer
            .run_pass(
                &self.store,
                "scrub",
                &HealScope::default(),
                HealDepth::Deep,
                Some(self.max_rate),
            )
            .await;
        // After the heal, so drives that missed a record have it again before folders that
        // only they hold are judged.
        let cutoff = std::time::SystemTime::now() - self.orphan_age;
        let orphans = self.store.collect_orphans(cutoff).await?;
        Ok(format!(
            "scrubbed {} objects, healed {}, removed {orphans} orphaned data folders",
            pass.report.objects_checked, pass.report.objects_healed
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::background::test_deployment;

    #[tokio::test]
    async fn a_pass_dropped_half_way_is_shown_stopped_not_running() {
        let dir = tempfile::tempdir().unwrap();
        let (_, store, _) = test_deployment(dir.path());
        let healer = Healer::default();
        let scope = HealScope::default();
        {
            let pass = healer.run_pass(&store, "test", &scope, HealDepth::Quick, None);
            let mut pass = std::pin::pin!(pass);
            assert!(futures::poll!(pass.as_mut()).is_pending());
            assert!(healer.status(&store).running.is_some());
        }
        let status = healer.status(&store);
        assert!(
            status.running.is_none(),
            "a dropped pass still shows running"
        );
        let last = status.last.expect("the dropped pass is the last");
        assert_eq!(last.error.as_deref(), Some("stopped before it finished"));
        assert!(last.finished_ms.is_some());

        let done = healer
            .run_pass(&store, "test", &scope, HealDepth::Quick, None)
            .await;
        assert_eq!(done.error, None);
        assert!(healer.status(&store).running.is_none());
    }

    /// A drive monitor healing sets this node was elected for stops when it loses one.
    #[tokio::test]
    async fn the_drive_monitor_stops_healing_a_set_when_its_node_loses_the_election() {
        let dir = tempfile::tempdir().unwrap();
        let (deployment, store, config) = test_deployment(dir.path());
        let (held_tx, held) = watch::channel(true);
        let healer = Arc::new(Healer::default());
        let mut monitor = DriveMonitor {
            deployment,
            config,
            store: store.clone(),
            healer: healer.clone(),
            heal_pending: BTreeSet::from([0]),
            owned: Some(vec![held]),
        };
        // A pass over a set this small may run from start to end between two looks at
        // the status on a loaded machine: it is then run again, until one is seen running.
        let mut tries = 0;
        loop {
            tries += 1;
            monitor.heal_pending.insert(0);
            let pass = monitor.run_once();
            let mut pass = std::pin::pin!(pass);
            let started = std::time::Instant::now();
            let mut ran_through = false;
            while healer.status(&store).running.is_none() {
                if futures::poll!(pass.as_mut()).is_ready() {
                    ran_through = true;
                    break;
                }
                assert!(
                    started.elapsed() < Duration::from_secs(10),
                    "no pass started"
                );
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            if ran_through {
                assert!(
                    tries < 20,
                    "every pass ran through before it was seen running"
                );
                continue;
            }
            held_tx.send_replace(false);
            assert_eq!(
                pass.await.unwrap(),
                "stopped: this node no longer holds this job"
            );
            break;
        }
        assert!(
            monitor.heal_pending.contains(&0),
            "a set whose heal stopped is still to heal"
        );
        let last = healer.status(&store).last.expect("the stopped pass");
        assert_eq!(last.error.as_deref(), Some("stopped before it finished"));
    }
}
