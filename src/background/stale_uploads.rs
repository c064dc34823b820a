//! The stale-upload cleaner: multipart uploads left unfinished are aborted after a while.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::Worker;
use crate::object::ObjectStore;

/// Aborts multipart uploads nobody completed or aborted, and frees their shards.
pub struct StaleUploadCleaner {
    pub store: Arc<ObjectStore>,
    /// Uploads started longer ago than this are abandoned.
    pub expiry: Duration,
    pub interval: Duration,
}

#[async_trait]
impl Worker for StaleUploadCleaner {
    fn name(&self) -> &'static str {
        "stale-upload-cleaner"
    }

    fn interval(&self) -> Duration {
        self.interval
    }

    async fn run_once(&mut self) -> anyhow::Result<String> {
        let aborted = self.store.abort_stale_uploads(self.expiry).await?;
        if aborted > 0 {
            tracing::info!(aborted, "aborted stale multipart uploads");
        }
        Ok(format!("{aborted} stale uploads aborted"))
    }
}
