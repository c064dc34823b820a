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

use super::evaluate::{abort_upload_rule, evaluate, Action, Clock, VersionState};
use super::rules::LifecycleConfig;
use crate::background::Worker;
use crate::object::{
    now_ms, BucketName, ListEntry, ListQuery, ObjectKey, ObjectStore, UploadQuery,
};

/// Objects listed per page while scanning.
const PAGE: usize = 1000;

/// What the scanner did for one rule, for operators.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct RuleActivity {
    pub expired: u64,
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
}

impl LifecycleScanner {
    fn clock(&self) -> Clock {
        Clock {
            now_ms: now_ms(),
            day_ms: self.day.as_millis() as i64,
        }
    }

    async fn scan_bucket(
        &self,
        bucket: &BucketName,
        config: &LifecycleConfig,
    ) -> anyhow::Result<()> {
        let mut scanned = 0;
        let mut after = None;
        loop {
            let query = ListQuery {
                after: after.clone(),
                max_keys: PAGE,
                ..ListQuery::default()
            };
            let page = self.store.list_objects(bucket, &query).await?;
            for entry in &page.entries {
                let ListEntry::Object { key, record } = entry else {
                    continue;
                };
                scanned += 1;
                let version = VersionState {
                    key,
                    size: record.size,
                    tags: &record.tags,
                    modified_ms: record.modified_ms,
                    storage_class: record.storage_class.as_deref(),
                    is_latest: true,
                    ..VersionState::default()
                };
                match evaluate(config, &version, &self.clock()) {
                    Some(Action::Expire { rule }) => {
                        let key = ObjectKey::parse(key)?;
                        let judged = record.clone();
                        let deleted = self
                            .store
                            .delete_object_if(bucket, &key, |now| now.same_version(&judged))
                            .await?;
                        if deleted {
                            tracing::info!(bucket = %bucket, key = %key, rule, "lifecycle: expired");
                            self.status
                                .record(bucket.as_str(), &rule, |a| a.expired += 1);
                        }
                    }
                    Some(Action::Transition {
                        rule,
                        storage_class,
                    }) => {
                        tracing::warn!(bucket = %bucket, key, rule, storage_class, "lifecycle: no tier of that name is configured; transition skipped");
                        self.status
                            .record(bucket.as_str(), &rule, |a| a.transitions_skipped += 1);
                    }
                    // Noncurrent versions and delete markers need a versioned bucket.
                    Some(_) | None => {}
                }
            }
            match (page.truncated, page.entries.last()) {
                (true, Some(last)) => after = Some(last.name().to_string()),
                _ => break,
            }
        }
        self.abort_uploads(bucket, config).await?;
        let mut buckets = self.status.buckets.lock().expect("not poisoned");
        let activity = buckets.entry(bucket.to_string()).or_default();
        activity.last_scan_ms = Some(now_ms());
        activity.objects_scanned = scanned;
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
