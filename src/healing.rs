//! The server's healing: a drive monitor that takes back returning or replaced drives and
//! heals their sets, a healer for the objects reads found damaged, and a scrubber that reads
//! and verifies every shard at a bounded rate. The repair itself is the object layer's
//! (`ObjectStore::heal_object`); this module decides when to run it and keeps score.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde::Serialize;

use crate::background::Worker;
use crate::config::ServerConfig;
use crate::deployment::Deployment;
use crate::object::{now_ms, BucketName, HealDepth, HealReport, ObjectStore};

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

    /// Runs a heal pass over a bucket (and prefix) or everything, keeping the status current.
    pub async fn run_pass(
        &self,
        store: &ObjectStore,
        reason: &str,
        bucket: Option<&BucketName>,
        prefix: &str,
        depth: HealDepth,
        max_rate: Option<u64>,
    ) -> HealPass {
        let _one = self.one_at_a_time.lock().await;
        let mut pass = HealPass {
            reason: reason.to_string(),
            scope: bucket.map(|b| format!("{b}/{prefix}")).unwrap_or_default(),
            started_ms: now_ms(),
            ..HealPass::default()
        };
        self.status.lock().expect("not poisoned").running = Some(pass.clone());
        pass.objects_total = store.count_objects(bucket, prefix).await;
        if let Some(running) = &mut self.status.lock().expect("not poisoned").running {
            running.objects_total = pass.objects_total;
        }
        // Bucket and deployment-wide records first (objects are healed against them), then
        // the objects, then multipart uploads in progress.
        let result = async {
            let mut report = match bucket {
                None => store.heal_buckets().await?,
                Some(_) => HealReport::default(),
            };
            let records = report.clone();
            let objects = store
                .heal_objects(bucket, prefix, depth, max_rate, |objects| {
                    if let Some(running) = &mut self.status.lock().expect("not poisoned").running {
                        running.report = records.clone();
                        running.report.add(objects);
                    }
                })
                .await?;
            report.add(&objects);
            report.add(&store.heal_uploads(bucket, prefix).await?);
            Ok::<_, crate::object::ObjectError>(report)
        }
        .await;
        match result {
            Ok(report) => pass.report = report,
            Err(e) => pass.error = Some(e.to_string()),
        }
        pass.finished_ms = Some(now_ms());
        let mut status = self.status.lock().expect("not poisoned");
        status.running = None;
        status.last = Some(pass.clone());
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

    /// Heals, one by one, the objects that reads found damaged (the store's queue is taken
    /// once: `None` if it was taken already).
    pub fn spawn_read_healer(
        self: &Arc<Self>,
        store: Arc<ObjectStore>,
    ) -> Option<tokio::task::JoinHandle<()>> {
        let mut requests = store.take_heal_requests()?;
        let healer = self.clone();
        Some(tokio::spawn(async move {
            while let Some((bucket, key)) = requests.recv().await {
                match store.heal_object(&bucket, &key, HealDepth::Deep).await {
                    Ok(report) => {
                        if report.objects_healed > 0 {
                            tracing::info!(bucket = %bucket, key = %key, shards_rebuilt = report.shards_rebuilt, "healed an object a read found damaged");
                        }
                        let mut status = healer.status.lock().expect("not poisoned");
                        status.healed_after_reads.add(&report);
                    }
                    Err(e) => {
                        tracing::warn!(bucket = %bucket, key = %key, error = %e, "heal after read failed")
                    }
                }
            }
        }))
    }
}

/// Looks at the drives periodically; when a drive returns or an empty one replaces a failed
/// one, heals everything so the drive gets back what it missed.
pub struct DriveMonitor {
    pub deployment: Arc<Deployment>,
    pub config: ServerConfig,
    pub store: Arc<ObjectStore>,
    pub healer: Arc<Healer>,
    /// A drive came back or was formatted and its set is not healed yet.
    pub heal_pending: bool,
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
        // before a restart) needs a complete pass before it votes.
        let unhealed = self.deployment.unhealed_drives();
        if changes.iter().any(|c| c.needs_heal()) || !unhealed.is_empty() {
            self.heal_pending = true;
        }
        if !self.heal_pending {
            return Ok("drives unchanged".into());
        }
        let pass = self
            .healer
            .run_pass(
                &self.store,
                "drive returned or replaced",
                None,
                "",
                HealDepth::Quick,
                None,
            )
            .await;
        // A pass with anything it could not settle is tried again at the next look, and the
        // unhealed drives stay unhealed: they may lack what it could not settle.
        self.heal_pending = pass.error.is_some() || pass.report.unresolved > 0;
        if !self.heal_pending {
            self.deployment.healed(&unhealed).await;
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
                None,
                "",
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
