//! A deadline on every drive call. A drive that stops answering (a dying disk retrying a
//! sector, a hung controller or network mount, a file that blocks on open) would otherwise
//! hold every request that touches it; with this wrapper a call that misses the deadline
//! fails as [`DriveError::Offline`], so the erasure set serves the request from the other
//! drives, and the drive is marked stalled.
//!
//! While stalled, every call fails at once: one hung drive costs the deadline once, not on
//! every request. After a cool-down one call is let through as a probe; when it answers in
//! time (successfully or with an ordinary error) the drive is back in service.
//!
//! Another node's drive is not blamed for its node ([`Reachability`]): when the node stops
//! answering as a whole (cut off, paused), calls overrun their deadline before the node is
//! found down, and the drive itself was never at fault.
//!
//! The blocking call that hung cannot be cancelled (it runs on the blocking pool); it stays
//! stuck until the drive answers. Only the waiting for it is bounded.

use std::future::Future;
use std::ops::Bound;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use uuid::Uuid;

use super::pause;
use super::{
    DataDir, DiskInfo, Drive, DriveError, MetaOp, MetaTable, Replaced, ScanPage, ShardReader,
    ShardWriter,
};

tokio::task_local! {
    /// When the drive call this task is making must be answered.
    static ANSWER_BY: Instant;
}

/// Runs `work` as a drive call that must be answered by `by`: the calls to another node's
/// drive made within it carry what is left of that time, so that the serving node neither
/// starts one its caller has given up on nor works on it past that.
pub async fn answer_by<F: Future>(by: Instant, work: F) -> F::Output {
    ANSWER_BY.scope(by, work).await
}

/// What is left of the deadline of the drive call this task is making; `None` outside one.
pub fn time_left() -> Option<Duration> {
    (ANSWER_BY.try_with(|by| by.saturating_duration_since(Instant::now()))).ok()
}

/// The longest pause between two probes of a stalled drive.
const MAX_COOL_DOWN: Duration = Duration::from_secs(60);

/// What tells another node's drive failing from the node failing as a whole (cut off,
/// paused): its pings. A call that overran its deadline while the node missed a ping blames
/// the node, whose liveness then answers for all its drives, not the drive; and a drive
/// stalled before the node answered again after missing pings is back in service with it.
pub trait Reachability: Send + Sync {
    /// Whether the node missed a ping at some moment since `since`.
    fn missed_since(&self, since: Instant) -> bool;
    /// How many times the node answered again after missing pings.
    fn returns(&self) -> u64;
}

/// A [`Drive`] whose every call, including the writes of the shard files it creates and the
/// reads of those it opens, must answer within a deadline.
pub struct DeadlineDrive {
    inner: Arc<dyn Drive>,
    health: Arc<Health>,
}

impl DeadlineDrive {
    /// Wraps `inner`; a stalled drive is probed again after 10× the deadline (at most a
    /// minute, at least the deadline).
    pub fn new(inner: Arc<dyn Drive>, deadline: Duration) -> Self {
        let cool_down = (deadline * 10).min(MAX_COOL_DOWN).max(deadline);
        Self::with_cool_down(inner, deadline, cool_down)
    }

    /// Wraps `inner` with an explicit pause between probes of a stalled drive.
    pub fn with_cool_down(inner: Arc<dyn Drive>, deadline: Duration, cool_down: Duration) -> Self {
        pause::start();
        Self {
            health: Arc::new(Health {
                label: inner.label().to_string(),
                deadline,
                cool_down,
                stall: Mutex::new(None),
                node: None,
            }),
            inner,
        }
    }

    /// Another node's drive, not blamed for what `node` says of the node as a whole.
    pub fn on_node(mut self, node: Arc<dyn Reachability>) -> Self {
        let health = Arc::get_mut(&mut self.health).expect("not shared yet");
        health.node = Some(node);
        self
    }

    pub fn deadline(&self) -> Duration {
        self.health.deadline
    }
}

/// Since when a drive is stalled, and when the next probe may go through.
#[derive(Debug, Clone, Copy)]
struct Stall {
    since: Instant,
    next_probe: Instant,
    /// [`Reachability::returns`] of the drive's node when the drive stalled.
    node_returns: u64,
}

/// The deadline and stall state of one drive, shared with the files it opened.
struct Health {
    label: String,
    deadline: Duration,
    cool_down: Duration,
    stall: Mutex<Option<Stall>>,
    /// For another node's drive, what its pings say of the node.
    node: Option<Arc<dyn Reachability>>,
}

impl Health {
    fn node_returns(&self) -> u64 {
        self.node.as_ref().map_or(0, |n| n.returns())
    }

    fn node_missed_since(&self, since: Instant) -> bool {
        self.node.as_ref().is_some_and(|n| n.missed_since(since))
    }

    fn offline(&self) -> DriveError {
        DriveError::Offline(self.label.clone())
    }

    /// Runs one call under the deadline. `work` is lazy: a call refused because the drive is
    /// stalled never reaches the drive.
    async fn call<T>(
        &self,
        operation: &'static str,
        work: impl Future<Output = Result<T, DriveError>>,
    ) -> Result<T, DriveError> {
        let started = self.admit()?;
        let mut work = std::pin::pin!(answer_by(started + self.deadline, work));
        let mut window = started;
        loop {
            match tokio::time::timeout(self.deadline, &mut work).await {
                Ok(result) => {
                    self.answered(started);
                    return result;
                }
                // This process stood still meanwhile (stopped, frozen): the drive had no
                // fair chance, so the call gets a fresh deadline and the drive no blame.
                Err(_) if pause::paused_since(window) => {
                    tracing::info!(drive = %self.label, operation, "this process was paused during a drive call; waiting for it again");
                    window = Instant::now();
                }
                // The node as a whole stopped answering meanwhile: its liveness answers for
                // its drives, this one is not to blame.
                Err(_) if self.node_missed_since(started) => return Err(self.offline()),
                Err(_) => {
                    self.missed(operation);
                    return Err(self.offline());
                }
            }
        }
    }

    /// Lets a call through unless the drive is stalled; a stalled drive lets one probe
    /// through per cool-down.
    fn admit(&self) -> Result<Instant, DriveError> {
        let now = Instant::now();
        let mut stall = self.stall.lock().expect("not poisoned");
        match stall.as_mut() {
            None => Ok(now),
            Some(stalled) if stalled.node_returns != self.node_returns() => {
                *stall = None;
                tracing::info!(drive = %self.label, "the stalled drive's node answers again; back in service");
                Ok(now)
            }
            Some(stall) if now >= stall.next_probe => {
                stall.next_probe = now + self.cool_down;
                tracing::info!(drive = %self.label, "probing a stalled drive");
                Ok(now)
            }
            Some(_) => Err(self.offline()),
        }
    }

    /// A call answered in time. If it started after the drive stalled (it was a probe), the
    /// drive is back; calls that started before prove nothing about the stall.
    fn answered(&self, started: Instant) {
        let mut stall = self.stall.lock().expect("not poisoned");
        if stall.is_some_and(|s| started >= s.since) {
            *stall = None;
            tracing::info!(drive = %self.label, "stalled drive answers again; back in service");
        }
    }

    /// A call missed the deadline: the drive is stalled until a probe answers.
    fn missed(&self, operation: &'static str) {
        let now = Instant::now();
        let mut stall = self.stall.lock().expect("not poisoned");
        let next_probe = now + self.cool_down;
        match stall.as_mut() {
            Some(stall) => stall.next_probe = next_probe,
            None => {
                *stall = Some(Stall {
                    since: now,
                    next_probe,
                    node_returns: self.node_returns(),
                });
                tracing::warn!(
                    drive = %self.label,
                    operation,
                    deadline_ms = self.deadline.as_millis() as u64,
                    retry_in_ms = self.cool_down.as_millis() as u64,
                    "drive did not answer in time; marked offline, serving from the other drives"
                );
            }
        }
    }
}

struct DeadlineWriter {
    inner: Box<dyn ShardWriter>,
    health: Arc<Health>,
}

#[async_trait]
impl ShardWriter for DeadlineWriter {
    async fn write(&mut self, pieces: Vec<Bytes>) -> Result<(), DriveError> {
        self.health
            .call("shard write", self.inner.write(pieces))
            .await
    }

    async fn finish(&mut self) -> Result<(), DriveError> {
        self.health.call("shard finish", self.inner.finish()).await
    }
}

struct DeadlineReader {
    inner: Box<dyn ShardReader>,
    health: Arc<Health>,
}

#[async_trait]
impl ShardReader for DeadlineReader {
    async fn read_at(&self, offset: u64, len: usize) -> Result<Bytes, DriveError> {
        self.health
            .call("shard read", self.inner.read_at(offset, len))
            .await
    }
}

#[async_trait]
impl Drive for DeadlineDrive {
    fn label(&self) -> &str {
        &self.health.label
    }

    async fn disk_info(&self) -> Result<DiskInfo, DriveError> {
        self.health.call("disk info", self.inner.disk_info()).await
    }

    /// Whether the drive missed a deadline and has not answered a probe since.
    fn is_stalled(&self) -> bool {
        let stall = *self.health.stall.lock().expect("not poisoned");
        stall.is_some_and(|s| s.node_returns == self.health.node_returns())
    }

    fn is_unhealed(&self) -> bool {
        self.inner.is_unhealed()
    }
    fn is_remote(&self) -> bool {
        self.inner.is_remote()
    }

    async fn mark_healed(&self) -> Result<(), DriveError> {
        self.health
            .call("mark healed", self.inner.mark_healed())
            .await
    }

    async fn list_data_dirs(&self) -> Result<Vec<(DataDir, std::time::SystemTime)>, DriveError> {
        self.health
            .call("list data dirs", self.inner.list_data_dirs())
            .await
    }

    async fn create_staged_file(
        &self,
        staging: Uuid,
        name: &str,
    ) -> Result<Box<dyn ShardWriter>, DriveError> {
        let inner = self
            .health
            .call(
                "create staged file",
                self.inner.create_staged_file(staging, name),
            )
            .await?;
        Ok(Box::new(DeadlineWriter {
            inner,
            health: self.health.clone(),
        }))
    }

    async fn commit_staged(&self, staging: Uuid, dir: &DataDir) -> Result<(), DriveError> {
        self.health
            .call("commit staged", self.inner.commit_staged(staging, dir))
            .await
    }

    async fn remove_staged(&self, staging: Uuid) -> Result<(), DriveError> {
        self.health
            .call("remove staged", self.inner.remove_staged(staging))
            .await
    }

    async fn open_shard(
        &self,
        dir: &DataDir,
        name: &str,
    ) -> Result<Box<dyn ShardReader>, DriveError> {
        let inner = self
            .health
            .call("open shard", self.inner.open_shard(dir, name))
            .await?;
        Ok(Box::new(DeadlineReader {
            inner,
            health: self.health.clone(),
        }))
    }
    async fn open_shards(
        &self,
        dir: &DataDir,
        names: &[String],
    ) -> Vec<Result<Box<dyn ShardReader>, DriveError>> {
        let opened = (self.health)
            .call("open shards", async {
                Ok(self.inner.open_shards(dir, names).await)
            })
            .await;
        match opened {
            Ok(readers) => (readers.into_iter())
                .map(|reader| {
                    Ok(Box::new(DeadlineReader {
                        inner: reader?,
                        health: self.health.clone(),
                    }) as Box<dyn ShardReader>)
                })
                .collect(),
            Err(e) => names.iter().map(|_| Err(e.copied())).collect(),
        }
    }

    async fn delete_data_dir(&self, dir: &DataDir) -> Result<(), DriveError> {
        self.health
            .call("delete data dir", self.inner.delete_data_dir(dir))
            .await
    }

    async fn link_data_dir(&self, from: &DataDir, to: &DataDir) -> Result<(), DriveError> {
        self.health
            .call("link data dir", self.inner.link_data_dir(from, to))
            .await
    }

    async fn delete_data_file(&self, dir: &DataDir, name: &str) -> Result<(), DriveError> {
        self.health
            .call("delete data file", self.inner.delete_data_file(dir, name))
            .await
    }

    async fn meta_get(
        &self,
        table: MetaTable,
        key: Vec<u8>,
    ) -> Result<Option<Vec<u8>>, DriveError> {
        self.health
            .call("metadata get", self.inner.meta_get(table, key))
            .await
    }

    async fn meta_get_related(
        &self,
        table: MetaTable,
        key: Vec<u8>,
        related: (MetaTable, Vec<u8>),
    ) -> Result<(Option<Vec<u8>>, ScanPage), DriveError> {
        self.health
            .call(
                "metadata read",
                self.inner.meta_get_related(table, key, related),
            )
            .await
    }

    async fn meta_apply(&self, ops: Vec<MetaOp>) -> Result<Replaced, DriveError> {
        self.health
            .call("metadata apply", self.inner.meta_apply(ops))
            .await
    }

    async fn meta_scan(
        &self,
        table: MetaTable,
        start: Bound<Vec<u8>>,
        prefix: Vec<u8>,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>, DriveError> {
        self.health
            .call(
                "metadata scan",
                self.inner.meta_scan(table, start, prefix, limit),
            )
            .await
    }

    async fn meta_scan_delimited(
        &self,
        table: MetaTable,
        start: Bound<Vec<u8>>,
        prefix: Vec<u8>,
        delimiter: Vec<u8>,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>, DriveError> {
        self.health
            .call(
                "metadata scan",
                self.inner
                    .meta_scan_delimited(table, start, prefix, delimiter, limit),
            )
            .await
    }
}

#[cfg(test)]
#[path = "deadline_tests.rs"]
mod tests;
