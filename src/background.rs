//! Background work: each job implements [`Worker`] and runs on its own task, one pass at a
//! time, with a pause between passes.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::object::ObjectStore;

/// A background job that the server runs periodically.
#[async_trait]
pub trait Worker: Send + 'static {
    fn name(&self) -> &'static str;
    /// The pause between two passes.
    fn interval(&self) -> Duration;
    /// One pass; returns a line for the log.
    async fn run_once(&mut self) -> anyhow::Result<String>;
}

/// Runs a worker until the server stops.
pub fn spawn(mut worker: impl Worker) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(worker.interval()).await;
            match worker.run_once().await {
                Ok(summary) => tracing::debug!(worker = worker.name(), %summary, "pass done"),
                Err(e) => tracing::warn!(worker = worker.name(), error = %e, "pass failed"),
            }
        }
    })
}

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

    async fn run_once(&mut self) -> anyhow::Result<String> {
        if !*self.held.borrow() {
            return Ok("another node holds this job".into());
        }
        self.worker.run_once().await
    }
}
