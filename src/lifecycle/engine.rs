//! The lifecycle scanner: walks every bucket that has rules, asks the evaluator about each
//! object and upload, and acts through the object layer like any client. A pass keeps no
//! state between objects, so a restart in the middle simply scans again; every action is
//! checked against the object as it is at that moment (an object overwritten since it was
//! listed is not expired), so repeating a pass does no harm.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde::Serialize;

use super::evaluate::{abort_upload_rule, evaluate, Action, Clock};
use super::rules::LifecycleConfig;
use super::walk::{version_states, KeyWalk};
use crate::background::pace::{Pace, Pacer};
use crate::background::Worker;
use crate::object::{
    now_ms, BucketName, DeleteIf, ObjectError, ObjectKey, ObjectRecord, ObjectStore, UploadQuery,
};

/// Objects listed per page while scanning.
const PAGE: usize = 1000;

/// Deployment-wide records holding where an interrupted pass over a bucket goes on.
pub const CURSOR_PREFIX: &str = "lifecycle/cursor/";
/// Keys judged between two saves of a pass's cursor.
const CURSOR_EVERY: u64 = 1000;

/// Where a pass over a bucket goes on after a restart.
#[derive(Debug, Serialize, serde::Deserialize)]
struct PassCursor {
    /// The last key the pass judged with all its versions.
    after: String,
}

/// What the scanner did for one rule, for operators.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct RuleActivity {
    pub expired: u64,
    /// Noncurrent versions removed for good.
    pub versions_removed: u64,
    /// Delete markers removed once they hid nothing.
    pub markers_removed: u64,
    pub transitioned: u64,
    /// Transitions that failed (a tier down) and are retried.
    pub transitions_failed: u64,
    pub uploads_aborted: u64,
    /// Transitions asked for but not done: no tier of that name is configured.
    pub transitions_skipped: u64,
    pub last_action_ms: Option<i64>,
}

/// The scanner's view of one bucket.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BucketActivity {
    pub last_scan_ms: Option<i64>,
    pub objects_scanned: u64,
    pub rules: BTreeMap<String, RuleActivity>,
}

/// Shared record of what the scanner did, per bucket.
#[derive(Default)]
pub struct LifecycleStatus {
    buckets: Mutex<BTreeMap<String, BucketActivity>>,
}

impl LifecycleStatus {
    pub fn bucket(&self, name: &str) -> Option<BucketActivity> {
        self.buckets
            .lock()
            .expect("not poisoned")
            .get(name)
            .cloned()
    }

    /// Every bucket the scanner has acted on or scanned.
    pub fn all(&self) -> BTreeMap<String, BucketActivity> {
        self.buckets.lock().expect("not poisoned").clone()
    }

    fn record(&self, bucket: &str, rule: &str, change: impl FnOnce(&mut RuleActivity)) {
        let mut buckets = self.buckets.lock().expect("not poisoned");
        let activity = buckets
            .entry(bucket.to_string())
            .or_default()
            .rules
            .entry(rule.to_string())
            .or_default();
        change(activity);
        activity.last_action_ms = Some(now_ms());
    }
}

/// The lifecycle scanner, run as a background worker.
pub struct LifecycleScanner {
    pub store: Arc<ObjectStore>,
    /// How long a lifecycle day lasts (`STRATA_LIFECYCLE_DAY_SECONDS` in tests and demos).
    pub day: Duration,
    pub status: Arc<LifecycleStatus>,
    /// How hard a pass may work (`STRATA_LIFECYCLE_DUTY`).
    pub pace: Pace,
}

impl LifecycleScanner {
    fn clock(&self) -> Clock {
        Clock {
            now_ms: now_ms(),
            day_ms: self.day.as_millis() as i64,
        }
    }

    /// One pass over a bucket, from where an interrupted pass stopped if one did: every
    /// [`CURSOR_EVERY`] keys the pass records the last key it judged, so a restart goes on
    /// from there (and the next pass covers the keys before it).
    async fn scan_bucket(
        &self,
        bucket: &BucketName,
        config: &LifecycleConfig,
    ) -> anyhow::Result<()> {
        let cursor_key = format!("{CURSOR_PREFIX}{bucket}");
        let resume = self
            .store
            .system_get(&cursor_key)
            .await?
            .and_then(|bytes| serde_json::from_slice::<PassCursor>(&bytes).ok());
        if let Some(cursor) = &resume {
            tracing::info!(bucket = %bucket, after = cursor.after, "lifecycle: resuming an interrupted pass");
        }
        let resumed = resume.is_some();
        let mut walk = KeyWalk::new(&self.store, bucket, resume.map(|c| c.after)).await?;
        let (mut scanned, mut keys) = (0, 0u64);
        let mut pacer = Pacer::new(self.pace);
        while let Some((key, versions)) = walk.next_key().await? {
            scanned += versions.len() as u64;
            self.judge(bucket, config, &key, &versions).await?;
            keys += 1;
            if keys.is_multiple_of(CURSOR_EVERY) {
                let cursor = PassCursor { after: key };
                self.store
                    .system_put(&cursor_key, serde_json::to_vec(&cursor)?)
                    .await?;
            }
            pacer.work_done(versions.len() as u64).await;
        }
        if resumed || keys >= CURSOR_EVERY {
            self.store.system_delete(&cursor_key).await?;
        }
        self.abort_uploads(bucket, config).await?;
        let mut buckets = self.status.buckets.lock().expect("not poisoned");
        let activity = buckets.entry(bucket.to_string()).or_default();
        activity.last_scan_ms = Some(now_ms());
        activity.objects_scanned = scanned;
        Ok(())
    }

    /// Asks the evaluator about every version of one key (newest first) and acts on each
    /// answer. Every action re-checks, under the key's lock, that the version is still the
    /// one judged.
    async fn judge(
        &self,
        bucket: &BucketName,
        config: &LifecycleConfig,
        key: &str,
        versions: &[ObjectRecord],
    ) -> anyhow::Result<()> {
        let clock = self.clock();
        let object_key = ObjectKey::parse(key)?;
        for (record, state) in versions.iter().zip(version_states(key, versions)) {
            let Some(action) = evaluate(config, &state, &clock) else {
                continue;
            };
            let same = DeleteIf::Same(Box::new(record.clone()));
            let version_id = record.version_id_str();
            match action {
                Action::Expire { rule } => {
                    if self
                        .store
                        .delete_object_if(bucket, &object_key, &same)
                        .await?
                    {
                        tracing::info!(bucket = %bucket, key, rule, "lifecycle: expired");
                        self.status
                            .record(bucket.as_str(), &rule, |a| a.expired += 1);
                    }
                }
                Action::DeleteVersion { rule } => {
                    // Object Lock outranks lifecycle: a locked version stays, and is judged
                    // again next pass.
                    let removed = match self
                        .store
                        .remove_version_if(bucket, &object_key, version_id, false, &same)
                        .await
                    {
                        Err(ObjectError::ObjectLocked) => {
                            tracing::debug!(bucket = %bucket, key, version_id, rule, "lifecycle: version kept by Object Lock");
                            continue;
                        }
                        removed => removed?,
                    };
                    if removed.version_id.is_some() {
                        tracing::info!(bucket = %bucket, key, version_id, rule, "lifecycle: removed a noncurrent version");
                        self.status
                            .record(bucket.as_str(), &rule, |a| a.versions_removed += 1);
                    }
                }
                Action::RemoveDeleteMarker { rule } => {
                    let removed = self
                        .store
                        .remove_version_if(bucket, &object_key, version_id, false, &same)
                        .await?;
                    if removed.version_id.is_some() {
                        tracing::info!(bucket = %bucket, key, version_id, rule, "lifecycle: removed an expired delete marker");
                        self.status
                            .record(bucket.as_str(), &rule, |a| a.markers_removed += 1);
                    }
                }
                Action::Transition {
                    rule,
                    storage_class,
                } => {
                    if self.store.tiers().get(&storage_class).is_none() {
                        tracing::warn!(bucket = %bucket, key, rule, storage_class, "lifecycle: no tier of that name is configured; transition skipped");
                        self.status
                            .record(bucket.as_str(), &rule, |a| a.transitions_skipped += 1);
                        continue;
                    }
                    let version = record.version_id.is_some().then_some(version_id);
                    let unchanged = |now: &ObjectRecord| now.same_version(record);
                    let moved = self
                        .store
                        .transition_object(bucket, &object_key, version, &storage_class, unchanged)
                        .await;
                    match moved {
                        Ok(true) => {
                            tracing::info!(bucket = %bucket, key, version_id, rule, storage_class, "lifecycle: transitioned");
                            self.status
                                .record(bucket.as_str(), &rule, |a| a.transitioned += 1);
                        }
                        Ok(false) => {}
                        // A tier that is down: the object stays where it is, retried next pass.
                        Err(e) => {
                            tracing::warn!(bucket = %bucket, key, rule, storage_class, error = %e, "lifecycle: transition failed; retried next pass");
                            self.status
                                .record(bucket.as_str(), &rule, |a| a.transitions_failed += 1);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    async fn abort_uploads(
        &self,
        bucket: &BucketName,
        config: &LifecycleConfig,
    ) -> anyhow::Result<()> {
        if config
            .rules
            .iter()
            .all(|r| r.abort_uploads_after_days.is_none())
        {
            return Ok(());
        }
        let mut query = UploadQuery {
            max_uploads: PAGE,
            ..UploadQuery::default()
        };
        loop {
            let page = self.store.list_multipart_uploads(bucket, &query).await?;
            for upload in &page.uploads {
                let Some(rule) =
                    abort_upload_rule(config, &upload.key, upload.initiated_ms, &self.clock())
                else {
                    continue;
                };
                let key = ObjectKey::parse(&upload.key)?;
                match self
                    .store
                    .abort_multipart_upload(bucket, &key, &upload.upload_id)
                    .await
                {
                    Ok(()) => {
                        tracing::info!(bucket = %bucket, key = %key, upload = %upload.upload_id, rule, "lifecycle: aborted an incomplete multipart upload");
                        self.status
                            .record(bucket.as_str(), rule, |a| a.uploads_aborted += 1);
                    }
                    // Completed or aborted meanwhile.
                    Err(crate::object::ObjectError::NoSuchUpload) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            match (page.truncated, page.uploads.last()) {
                (true, Some(last)) => {
                    query.key_marker = Some(last.key.clone());
                    query.upload_id_marker = Some(last.upload_id.clone());
                }
                _ => break,
            }
        }
        Ok(())
    }
}

#[async_trait]
impl Worker for LifecycleScanner {
    fn name(&self) -> &'static str {
        "lifecycle"
    }

    /// A pass every 1/24 of a lifecycle day (hourly for real days), at least every second.
    fn interval(&self) -> Duration {
        (self.day / 24).clamp(Duration::from_secs(1), Duration::from_secs(3600))
    }

    async fn run_once(&mut self) -> anyhow::Result<String> {
        match self.store.remove_tier_orphans().await {
            Ok((0, 0)) => {}
            Ok((removed, left)) => {
                tracing::info!(
                    removed,
                    left,
                    "lifecycle: tier copies of removed versions, left while their tier was down"
                )
            }
            Err(e) => {
                tracing::warn!(error = %e, "lifecycle: could not read the tier copies left to remove")
            }
        }
        let mut scanned = 0;
        for bucket in self.store.list_buckets().await? {
            let Some(xml) = bucket.settings.lifecycle.as_deref() else {
                continue;
            };
            let config = match LifecycleConfig::from_xml(xml) {
                Ok(config) => config,
                Err(e) => {
                    tracing::warn!(bucket = %bucket.name, error = %e, "lifecycle: stored rules do not parse; bucket skipped");
                    continue;
                }
            };
            let name = BucketName::parse(&bucket.name)?;
            if let Err(e) = self.scan_bucket(&name, &config).await {
                tracing::warn!(bucket = %bucket.name, error = %e, "lifecycle: scan failed; retried next pass");
            }
            scanned += 1;
        }
        Ok(format!("{scanned} buckets with rules scanned"))
    }
}
