//! Bucket usage: the objects and bytes of every bucket, counted in the background by walking
//! each bucket's listing, so that a metrics scrape only reads the last count. Counting on
//! every scrape would cost a full listing of every bucket each time. In a cluster with a
//! control plane one node, elected, counts and publishes its count as a deployment-wide
//! record; the others take it from there.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::background::{self, Worker};
use crate::object::{
    BucketName, ListEntry, ListQuery, ObjectError, ObjectStore, PoolUsage, VersionEntry,
    VersionsQuery,
};

/// Keys per listing page while counting: the API's own page size.
const PAGE: usize = 1000;
/// The first count starts this soon after the server (or the configured interval, if shorter).
const FIRST_SCAN_DELAY: Duration = Duration::from_secs(5);

/// The deployment-wide record the elected counter publishes its count in.
const PUBLISHED: &str = "usage/latest";

/// What one bucket holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BucketUsage {
    pub objects: u64,
    /// Bytes of user data (object sizes).
    pub bytes: u64,
    /// Versions other than the current ones, delete markers left out (versioned buckets).
    pub noncurrent_versions: u64,
    pub noncurrent_bytes: u64,
}

/// The result of one finished count of every bucket.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UsageSnapshot {
    /// By bucket name.
    pub buckets: BTreeMap<String, BucketUsage>,
    /// What each server pool holds, by its place in the list; empty with one pool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pools: Vec<Option<PoolUsage>>,
    /// When the count finished.
    pub finished: SystemTime,
    /// How long it took.
    pub took: Duration,
}

/// The latest count, shared between the scanner and the metrics exporter.
#[derive(Debug, Default)]
pub struct Usage {
    latest: Mutex<Option<UsageSnapshot>>,
}

impl Usage {
    /// The last finished count; `None` until the first one finishes.
    pub fn latest(&self) -> Option<UsageSnapshot> {
        self.latest.lock().expect("not poisoned").clone()
    }

    fn set(&self, snapshot: UsageSnapshot) {
        *self.latest.lock().expect("not poisoned") = Some(snapshot);
    }
}

/// Counts every bucket's objects and bytes periodically.
pub struct UsageScanner {
    pub store: Arc<ObjectStore>,
    pub usage: Arc<Usage>,
    pub interval: Duration,
    /// Passes run so far: the first comes soon after the start.
    pub passes: u64,
    /// In a cluster with a control plane, whether this node holds the election to count;
    /// `None`: it counts for itself.
    pub elected: Option<watch::Receiver<bool>>,
}

impl UsageScanner {
    pub fn new(store: Arc<ObjectStore>, usage: Arc<Usage>, interval: Duration) -> Self {
        Self {
            store,
            usage,
            interval,
            passes: 0,
            elected: None,
        }
    }

    /// Counts only while `elected` says this node holds the job, publishing each count;
    /// otherwise takes the published one.
    pub fn when_elected(mut self, elected: watch::Receiver<bool>) -> Self {
        self.elected = Some(elected);
        self
    }

    /// Takes the count the elected node published last.
    async fn take_published(&self) -> anyhow::Result<String> {
        let Some(published) = self.store.system_get(PUBLISHED).await? else {
            return Ok("no count published yet".into());
        };
        let snapshot: UsageSnapshot = serde_json::from_slice(&published)?;
        let buckets = snapshot.buckets.len();
        self.usage.set(snapshot);
        Ok(format!("took the published count of {buckets} buckets"))
    }
}

/// Counts one bucket by walking its listing a page at a time (and its versions, when it
/// keeps them).
pub async fn count_bucket(
    store: &ObjectStore,
    bucket: &BucketName,
) -> Result<BucketUsage, ObjectError> {
    let mut usage = BucketUsage::default();
    if store.bucket(bucket).await?.settings.versioning.is_some() {
        count_versions(store, bucket, &mut usage).await?;
    }
    let mut query = ListQuery {
        max_keys: PAGE,
        ..ListQuery::default()
    };
    loop {
        let page = store.list_objects(bucket, &query).await?;
        for entry in &page.entries {
            if let ListEntry::Object { record, .. } = entry {
                usage.objects += 1;
                usage.bytes += record.content_length();
            }
        }
        match page.entries.last() {
            Some(last) if page.truncated => query.after = Some(last.name().to_string()),
            _ => return Ok(usage),
        }
    }
}

/// Adds the noncurrent versions of a versioned bucket to its usage.
async fn count_versions(
    store: &ObjectStore,
    bucket: &BucketName,
    usage: &mut BucketUsage,
) -> Result<(), ObjectError> {
    let mut query = VersionsQuery {
        max_keys: PAGE,
        ..VersionsQuery::default()
    };
    loop {
        let page = store.list_object_versions(bucket, &query).await?;
        for entry in &page.entries {
            match entry {
                VersionEntry::Version {
                    record, is_latest, ..
                } if !is_latest && !record.delete_marker => {
                    usage.noncurrent_versions += 1;
                    usage.noncurrent_bytes += record.content_length();
                }
                _ => {}
            }
        }
        if !page.truncated {
            return Ok(());
        }
        query.key_marker = page.next_key_marker;
        query.version_id_marker = page.next_version_id_marker;
    }
}

#[async_trait]
impl Worker for UsageScanner {
    fn name(&self) -> &'static str {
        "usage-scanner"
    }

    fn interval(&self) -> Duration {
        if self.passes == 0 {
            FIRST_SCAN_DELAY.min(self.interval)
        } else {
            self.interval
        }
    }

    async fn run_once(&mut self) -> anyhow::Result<String> {
        self.passes += 1;
        if self.elected.as_ref().is_some_and(|held| !*held.borrow()) {
            return self.take_published().await;
        }
        // Stopped when this node loses the election: the new holder counts.
        (background::while_held(self.elected.as_slice(), self.count_and_publish()).await)
            .unwrap_or_else(background::stopped)
    }
}

impl UsageScanner {
    /// What each pool holds, when there are several (`None` for a pool that could not be
    /// counted).
    async fn count_pools(&self) -> Vec<Option<PoolUsage>> {
        let pools = self.store.pools();
        if pools.len() < 2 {
            return Vec::new();
        }
        let mut counted = Vec::with_capacity(pools.len());
        for (index, pool) in pools.iter().enumerate() {
            counted.push(match self.store.pool_usage(pool).await {
                Ok(usage) => Some(usage),
                Err(e) => {
                    tracing::warn!(pool = index + 1, error = %e, "counting the server pool's keys failed");
                    None
                }
            });
        }
        counted
    }

    /// Counts every bucket, and publishes the count when elected to.
    async fn count_and_publish(&self) -> anyhow::Result<String> {
        let started = Instant::now();
        let previous = self.usage.latest().map(|s| s.buckets).unwrap_or_default();
        let mut buckets = BTreeMap::new();
        let mut failed = 0;
        for record in self.store.list_buckets().await? {
            let Ok(name) = BucketName::parse(&record.name) else {
                continue;
            };
            match count_bucket(&self.store, &name).await {
                Ok(usage) => {
                    buckets.insert(record.name, usage);
                }
                // Deleted while we counted.
                Err(ObjectError::NoSuchBucket) => {}
                Err(e) => {
                    // Keep the last count rather than report the bucket empty.
                    tracing::warn!(bucket = %record.name, error = %e, "counting bucket usage failed");
                    failed += 1;
                    if let Some(usage) = previous.get(&record.name) {
                        buckets.insert(record.name, *usage);
                    }
                }
            }
        }
        let (count, objects) = (
            buckets.len(),
            buckets.values().map(|u| u.objects).sum::<u64>(),
        );
        let snapshot = UsageSnapshot {
            buckets,
            pools: self.count_pools().await,
            finished: SystemTime::now(),
            took: started.elapsed(),
        };
        if self.elected.is_some() {
            let published = serde_json::to_vec(&snapshot)?;
            if let Err(e) = self.store.system_put(PUBLISHED, published).await {
                tracing::warn!(error = %e, "could not publish the usage count to the other nodes");
            }
        }
        self.usage.set(snapshot);
        Ok(format!(
            "counted {objects} objects in {count} buckets ({failed} could not be listed)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::background::test_deployment;

    /// The elected counter stops counting (and publishes nothing) when its node loses the
    /// election.
    #[tokio::test]
    async fn the_usage_count_stops_when_its_node_loses_the_election() {
        let dir = tempfile::tempdir().unwrap();
        let (_, store, _) = test_deployment(dir.path());
        store
            .create_bucket(&BucketName::parse("data").unwrap())
            .await
            .unwrap();
        let (held_tx, held) = watch::channel(true);
        let usage = Arc::new(Usage::default());
        let mut scanner = UsageScanner::new(store.clone(), usage.clone(), Duration::from_secs(60))
            .when_elected(held);
        {
            let pass = scanner.run_once();
            let mut pass = std::pin::pin!(pass);
            assert!(futures::poll!(pass.as_mut()).is_pending());
            held_tx.send_replace(false);
            assert_eq!(
                pass.await.unwrap(),
                "stopped: this node no longer holds this job"
            );
        }
        assert!(
            usage.latest().is_none(),
            "a stopped count was taken as done"
        );
        assert_eq!(store.system_get(PUBLISHED).await.unwrap(), None);
    }
}
