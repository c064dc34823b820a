//! A tier on a second pool of local drives: its own deployment (format records, erasure sets,
//! placement seed) and its own object store, holding every tier object in one bucket.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::Context;
use async_trait::async_trait;

use super::body::exact_size;
use super::config::PoolConfig;
use crate::background::healing::{DriveMonitor, Healer, Scrubber};
use crate::body::ByteStream;
use crate::config::{HealingConfig, ServerConfig};
use crate::object::{
    BucketName, ByteRange, GetOptions, ListEntry, ListQuery, ObjectError, ObjectKey, ObjectStore,
    PutOptions, ReadSpan, Tier, TierError,
};

/// The bucket of the pool's own store that holds the tier objects, keyed by object name.
pub const POOL_BUCKET: &str = "strata-tier";

/// Keys per listing page when the tier is listed.
const LIST_PAGE: usize = 1000;

/// A tier on local drives that are not the server's own.
pub struct PoolTier {
    name: String,
    store: Arc<ObjectStore>,
    bucket: BucketName,
    /// The bucket is known to exist: puts skip the check.
    bucket_ready: AtomicBool,
    /// The pool's healers; they stop with the tier, which then closes its drives.
    healers: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for PoolTier {
    fn drop(&mut self) {
        for healer in &self.healers {
            healer.abort();
        }
    }
}

impl PoolTier {
    /// Opens the pool's drives (formatting empty ones on first use) and makes sure its bucket
    /// exists. Drives that cannot be used are served around, as for the server's own drives;
    /// a bucket that cannot be created yet is created by the first put.
    pub async fn open(
        name: &str,
        config: &PoolConfig,
        healing: &HealingConfig,
        jobs: &crate::background::Jobs,
    ) -> anyhow::Result<Self> {
        let server_config = pool_server_config(config, healing);
        let mut deployment = {
            let server_config = server_config.clone();
            tokio::task::spawn_blocking(move || {
                crate::deployment::open(&server_config, false, None)
            })
            .await
            .context("opening tier drives")?
            .with_context(|| format!("tier {name}"))?
        };
        for drive in &deployment.offline {
            tracing::warn!(tier = name, drive = %drive.display(), "tier drive offline; serving degraded");
        }
        let store = ObjectStore::new(std::mem::take(&mut deployment.sets), &deployment.id);
        let deployment = Arc::new(deployment);
        // The pool heals itself as the server's own drives do: what reads find damaged at
        // once, a drive replaced or back when the drive check sees it, everything else at
        // the periodic scrub.
        let healer = Arc::new(Healer::default());
        let mut healers: Vec<_> = (healer.read_healer(store.clone()).into_iter())
            .map(|read_healer| jobs.spawn(Some(name), read_healer))
            .collect();
        healers.push(jobs.spawn(
            Some(name),
            DriveMonitor {
                deployment: deployment.clone(),
                config: server_config,
                store: store.clone(),
                healer: healer.clone(),
                heal_pending: DriveMonitor::sets_formatted_at_start(&deployment),
                owned: None,
            },
        ));
        healers.push(jobs.spawn(
            Some(name),
            Scrubber {
                store: store.clone(),
                healer,
                interval: healing.scrub_interval,
                max_rate: healing.scrub_rate,
                orphan_age: healing.orphan_age,
            },
        ));
        let tier = Self {
            name: name.to_string(),
            store,
            bucket: BucketName::parse(POOL_BUCKET).expect("the pool bucket name is valid"),
            bucket_ready: AtomicBool::new(false),
            healers,
        };
        if let Err(e) = tier.ensure_bucket().await {
            tracing::warn!(tier = name, error = %e, "tier bucket not created yet; retrying on first put");
        }
        Ok(tier)
    }

    async fn ensure_bucket(&self) -> Result<(), TierError> {
        if self.bucket_ready.load(Ordering::Relaxed) {
            return Ok(());
        }
        let ready = match self.store.bucket(&self.bucket).await {
            Ok(_) => Ok(()),
            Err(ObjectError::NoSuchBucket) => match self.store.create_bucket(&self.bucket).await {
                Ok(_) | Err(ObjectError::BucketExists) => Ok(()),
                Err(e) => Err(self.error(POOL_BUCKET, e)),
            },
            Err(e) => Err(self.error(POOL_BUCKET, e)),
        };
        if ready.is_ok() {
            self.bucket_ready.store(true, Ordering::Relaxed);
        }
        ready
    }

    fn key(&self, object: &str) -> Result<ObjectKey, TierError> {
        ObjectKey::parse(object).map_err(|e| TierError::Failed {
            tier: self.name.clone(),
            reason: format!("object name {object:?}: {e}"),
        })
    }

    /// What an object-layer error means to a tier's caller: missing, try again, or broken.
    fn error(&self, object: &str, err: ObjectError) -> TierError {
        let tier = self.name.clone();
        match err {
            ObjectError::NoSuchKey | ObjectError::NoSuchBucket => TierError::Missing {
                tier,
                object: object.to_string(),
            },
            ObjectError::Unavailable(_) | ObjectError::DriveFull => TierError::Unavailable {
                tier,
                reason: err.to_string(),
            },
            other => TierError::Failed {
                tier,
                reason: other.to_string(),
            },
        }
    }
}

/// The pool as a deployment of its own: only the drive and erasure fields matter to
/// `deployment::open`; the rest are defaults it never reads.
fn pool_server_config(config: &PoolConfig, healing: &HealingConfig) -> ServerConfig {
    ServerConfig {
        block_size: config.block_size,
        healing: healing.clone(),
        ..ServerConfig::on_drives(
            config.drives.clone(),
            config.data_shards,
            config.parity_shards,
        )
    }
}

#[async_trait]
impl Tier for PoolTier {
    fn name(&self) -> &str {
        &self.name
    }

    async fn put(&self, object: &str, body: ByteStream, size: u64) -> Result<(), TierError> {
        let key = self.key(object)?;
        self.ensure_bucket().await?;
        // A body of the wrong length fails before the commit, so nothing is left behind.
        let (body, fault) = exact_size(body, size);
        let stored = self
            .store
            .put_object(&self.bucket, &key, body, PutOptions::default())
            .await;
        let record = match (stored, fault.get()) {
            (Ok(record), None) => record,
            (stored, Some(reason)) => {
                // The object layer reads bodies to their end, so this is belt and braces.
                if stored.is_ok() {
                    let _ = self.store.delete_object(&self.bucket, &key, None).await;
                }
                return Err(TierError::Failed {
                    tier: self.name.clone(),
                    reason: reason.to_string(),
                });
            }
            (Err(e), None) => return Err(self.error(object, e)),
        };
        if record.size != size {
            let _ = self.store.delete_object(&self.bucket, &key, None).await;
            return Err(TierError::Failed {
                tier: self.name.clone(),
                reason: format!("stored {} bytes of {size}", record.size),
            });
        }
        Ok(())
    }

    async fn get(&self, object: &str, start: u64, end: u64) -> Result<ByteStream, TierError> {
        let key = self.key(object)?;
        let failed = |reason: String| TierError::Failed {
            tier: self.name.clone(),
            reason: format!("{object}: {reason}"),
        };
        if start > end {
            return Err(failed(format!("bad span {start}..{end}")));
        }
        // S3 ranges cannot be empty; an empty read only needs the object to exist.
        if start == end {
            let record = self
                .store
                .head_object(&self.bucket, &key, None)
                .await
                .map_err(|e| self.error(object, e))?;
            if end > record.size {
                return Err(failed(format!(
                    "span {start}..{end} beyond {} bytes",
                    record.size
                )));
            }
            return Ok(Box::pin(futures::stream::empty()));
        }
        let options = GetOptions {
            span: Some(ReadSpan::Range(ByteRange::From {
                first: start,
                last: Some(end - 1),
            })),
            ..Default::default()
        };
        let got = self
            .store
            .get_object(&self.bucket, &key, options)
            .await
            .map_err(|e| match e {
                ObjectError::InvalidRange(size) => {
                    failed(format!("span {start}..{end} beyond {size} bytes"))
                }
                e => self.error(object, e),
            })?;
        // A range past the end is clipped by S3 rules; a tier reader wants all it asked for.
        if got.range != Some((start, end)) {
            return Err(failed(format!(
                "span {start}..{end} beyond {} bytes",
                got.record.size
            )));
        }
        Ok(got.body)
    }

    async fn delete(&self, object: &str) -> Result<(), TierError> {
        let key = self.key(object)?;
        match self.store.delete_object(&self.bucket, &key, None).await {
            Ok(_) | Err(ObjectError::NoSuchBucket) => Ok(()),
            Err(e) => Err(self.error(object, e)),
        }
    }

    async fn list(&self) -> Result<Vec<String>, TierError> {
        let mut names = Vec::new();
        let mut query = ListQuery {
            max_keys: LIST_PAGE,
            ..Default::default()
        };
        loop {
            let page = match self.store.list_objects(&self.bucket, &query).await {
                Ok(page) => page,
                Err(ObjectError::NoSuchBucket) => return Ok(names),
                Err(e) => return Err(self.error(POOL_BUCKET, e)),
            };
            let last = page.entries.last().map(|e| e.name().to_string());
            names.extend(page.entries.into_iter().filter_map(|entry| match entry {
                ListEntry::Object { key, .. } => Some(key),
                ListEntry::CommonPrefix(_) => None,
            }));
            match last {
                Some(last) if page.truncated => query.after = Some(last),
                _ => return Ok(names),
            }
        }
    }
}
