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
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

    use futures::StreamExt;

    use super::*;
    use crate::erasure::{ErasureSet, DEFAULT_BLOCK_SIZE};
    use crate::object::{BucketName, GetOptions, ObjectKey, ObjectStore, PutOptions};
    use crate::storage::sim::CrashController;

    const DEADLINE: Duration = Duration::from_millis(150);

    /// A drive that hangs (on every call, and in the files it opened) while `hung` is set,
    /// and counts the calls that reach it.
    struct Hanging {
        inner: Arc<dyn Drive>,
        state: Arc<HangState>,
    }

    #[derive(Default)]
    struct HangState {
        hung: AtomicBool,
        calls: AtomicUsize,
    }

    impl HangState {
        async fn enter(&self) {
            self.calls.fetch_add(1, Ordering::SeqCst);
            if self.hung.load(Ordering::SeqCst) {
                std::future::pending::<()>().await;
            }
        }
    }

    struct HangingWriter(Box<dyn ShardWriter>, Arc<HangState>);
    struct HangingReader(Box<dyn ShardReader>, Arc<HangState>);

    #[async_trait]
    impl ShardWriter for HangingWriter {
        async fn write(&mut self, pieces: Vec<Bytes>) -> Result<(), DriveError> {
            self.1.enter().await;
            self.0.write(pieces).await
        }
        async fn finish(&mut self) -> Result<(), DriveError> {
            self.1.enter().await;
            self.0.finish().await
        }
    }

    #[async_trait]
    impl ShardReader for HangingReader {
        async fn read_at(&self, offset: u64, len: usize) -> Result<Bytes, DriveError> {
            self.1.enter().await;
            self.0.read_at(offset, len).await
        }
    }

    #[async_trait]
    impl Drive for Hanging {
        fn label(&self) -> &str {
            self.inner.label()
        }
        async fn create_staged_file(
            &self,
            staging: Uuid,
            name: &str,
        ) -> Result<Box<dyn ShardWriter>, DriveError> {
            self.state.enter().await;
            let w = self.inner.create_staged_file(staging, name).await?;
            Ok(Box::new(HangingWriter(w, self.state.clone())))
        }
        async fn commit_staged(&self, staging: Uuid, dir: &DataDir) -> Result<(), DriveError> {
            self.state.enter().await;
            self.inner.commit_staged(staging, dir).await
        }
        async fn remove_staged(&self, staging: Uuid) -> Result<(), DriveError> {
            self.state.enter().await;
            self.inner.remove_staged(staging).await
        }
        async fn open_shard(
            &self,
            dir: &DataDir,
            name: &str,
        ) -> Result<Box<dyn ShardReader>, DriveError> {
            self.state.enter().await;
            let r = self.inner.open_shard(dir, name).await?;
            Ok(Box::new(HangingReader(r, self.state.clone())))
        }
        async fn delete_data_dir(&self, dir: &DataDir) -> Result<(), DriveError> {
            self.state.enter().await;
            self.inner.delete_data_dir(dir).await
        }
        async fn delete_data_file(&self, dir: &DataDir, name: &str) -> Result<(), DriveError> {
            self.state.enter().await;
            self.inner.delete_data_file(dir, name).await
        }
        async fn link_data_dir(&self, from: &DataDir, to: &DataDir) -> Result<(), DriveError> {
            self.state.enter().await;
            self.inner.link_data_dir(from, to).await
        }
        async fn meta_get(
            &self,
            table: MetaTable,
            key: Vec<u8>,
        ) -> Result<Option<Vec<u8>>, DriveError> {
            self.state.enter().await;
            self.inner.meta_get(table, key).await
        }
        async fn meta_apply(&self, ops: Vec<MetaOp>) -> Result<Replaced, DriveError> {
            self.state.enter().await;
            self.inner.meta_apply(ops).await
        }
        async fn meta_scan(
            &self,
            table: MetaTable,
            start: Bound<Vec<u8>>,
            prefix: Vec<u8>,
            limit: usize,
        ) -> Result<Vec<(Vec<u8>, Vec<u8>)>, DriveError> {
            self.state.enter().await;
            self.inner.meta_scan(table, start, prefix, limit).await
        }
        async fn meta_scan_delimited(
            &self,
            table: MetaTable,
            start: Bound<Vec<u8>>,
            prefix: Vec<u8>,
            delimiter: Vec<u8>,
            limit: usize,
        ) -> Result<Vec<(Vec<u8>, Vec<u8>)>, DriveError> {
            self.state.enter().await;
            self.inner
                .meta_scan_delimited(table, start, prefix, delimiter, limit)
                .await
        }
    }

    /// Nine simulated drives, each behind a hang switch and a deadline.
    fn drives(cool_down: Duration) -> (Vec<Arc<HangState>>, Vec<Arc<DeadlineDrive>>) {
        let sim = CrashController::new(9);
        let mut states = Vec::new();
        let mut drives = Vec::new();
        for inner in sim.drives() {
            let state = Arc::new(HangState::default());
            let hanging = Arc::new(Hanging {
                inner,
                state: state.clone(),
            });
            states.push(state);
            drives.push(Arc::new(DeadlineDrive::with_cool_down(
                hanging, DEADLINE, cool_down,
            )));
        }
        (states, drives)
    }

    fn data_dir() -> DataDir {
        DataDir {
            bucket_id: "b".into(),
            data_id: Uuid::new_v4(),
        }
    }

    #[tokio::test]
    async fn answers_in_time_pass_through_unchanged() {
        let (_, drives) = drives(Duration::from_secs(60));
        let drive = &drives[0];
        assert_eq!(drive.label(), "sim0");
        let put = MetaOp::Put {
            table: MetaTable::Objects,
            key: b"k".to_vec(),
            value: b"v".to_vec(),
        };
        drive.meta_apply(vec![put]).await.unwrap();
        let got = drive.meta_get(MetaTable::Objects, b"k".to_vec()).await;
        assert_eq!(got.unwrap().as_deref(), Some(&b"v"[..]));
        let missing = drive.open_shard(&data_dir(), "part.1").await;
        assert!(matches!(missing, Err(DriveError::NotFound)));
        assert!(!drive.is_stalled(), "an ordinary error is an answer");
    }

    #[tokio::test]
    async fn a_hung_drive_fails_at_the_deadline_then_at_once_until_a_probe_answers() {
        let cool_down = Duration::from_millis(400);
        let (states, drives) = drives(cool_down);
        let (state, drive) = (&states[0], &drives[0]);
        state.hung.store(true, Ordering::SeqCst);

        let started = Instant::now();
        let got = drive.meta_get(MetaTable::Objects, b"k".to_vec()).await;
        let took = started.elapsed();
        assert!(
            matches!(got, Err(DriveError::Offline(ref l)) if l == "sim0"),
            "{got:?}"
        );
        assert!(took >= DEADLINE && took < DEADLINE * 4, "took {took:?}");
        assert!(drive.is_stalled());

        // Stalled: calls fail at once and never reach the drive.
        let reached = state.calls.load(Ordering::SeqCst);
        let started = Instant::now();
        for _ in 0..20 {
            let got = drive.meta_apply(Vec::new()).await;
            assert!(matches!(got, Err(DriveError::Offline(_))), "{got:?}");
        }
        assert!(started.elapsed() < DEADLINE, "{:?}", started.elapsed());
        assert_eq!(state.calls.load(Ordering::SeqCst), reached);

        // After the cool-down one probe goes through; still hung, it stalls the drive again.
        tokio::time::sleep(cool_down).await;
        let started = Instant::now();
        assert!(drive.remove_staged(Uuid::new_v4()).await.is_err());
        assert!(started.elapsed() >= DEADLINE);
        assert_eq!(state.calls.load(Ordering::SeqCst), reached + 1);
        let started = Instant::now();
        assert!(drive.remove_staged(Uuid::new_v4()).await.is_err());
        assert!(started.elapsed() < DEADLINE);

        // The drive recovers: the next probe answers and it is back in service.
        state.hung.store(false, Ordering::SeqCst);
        tokio::time::sleep(cool_down).await;
        drive.remove_staged(Uuid::new_v4()).await.unwrap();
        assert!(!drive.is_stalled());
        drive.meta_apply(Vec::new()).await.unwrap();
    }

    /// A node whose pings a test sets by hand.
    #[derive(Default)]
    struct Pings {
        returns: AtomicU64,
        last_miss: Mutex<Option<Instant>>,
    }

    impl Reachability for Pings {
        fn missed_since(&self, since: Instant) -> bool {
            self.last_miss.lock().unwrap().is_some_and(|m| m >= since)
        }
        fn returns(&self) -> u64 {
            self.returns.load(Ordering::SeqCst)
        }
    }

    fn on_node(pings: &Arc<Pings>) -> (Arc<HangState>, DeadlineDrive) {
        let sim = CrashController::new(1);
        let state = Arc::new(HangState::default());
        let hanging = Arc::new(Hanging {
            inner: sim.drives().remove(0),
            state: state.clone(),
        });
        let drive = DeadlineDrive::with_cool_down(hanging, DEADLINE, Duration::from_secs(60))
            .on_node(pings.clone());
        (state, drive)
    }

    #[tokio::test]
    async fn a_drive_stalled_before_its_node_answered_again_is_back_with_it() {
        let pings = Arc::new(Pings::default());
        let (state, drive) = on_node(&pings);
        state.hung.store(true, Ordering::SeqCst);
        assert!(drive.meta_apply(Vec::new()).await.is_err());
        assert!(
            drive.is_stalled(),
            "its node answered every ping: the drive is to blame"
        );
        state.hung.store(false, Ordering::SeqCst);
        assert!(
            drive.meta_apply(Vec::new()).await.is_err(),
            "stalled until the cool-down or its node's return"
        );

        pings.returns.fetch_add(1, Ordering::SeqCst);
        assert!(!drive.is_stalled());
        drive.meta_apply(Vec::new()).await.unwrap();
    }

    #[tokio::test]
    async fn a_call_that_overran_while_its_node_missed_pings_blames_no_drive() {
        let pings = Arc::new(Pings::default());
        let (state, drive) = on_node(&pings);
        state.hung.store(true, Ordering::SeqCst);
        let missing = tokio::spawn({
            let pings = pings.clone();
            async move {
                tokio::time::sleep(DEADLINE / 2).await;
                *pings.last_miss.lock().unwrap() = Some(Instant::now());
            }
        });
        assert!(drive.meta_apply(Vec::new()).await.is_err());
        missing.await.unwrap();
        assert!(!drive.is_stalled());
        state.hung.store(false, Ordering::SeqCst);
        drive.meta_apply(Vec::new()).await.unwrap();
    }

    #[tokio::test]
    async fn shard_reads_and_writes_of_a_hung_drive_have_the_deadline_too() {
        let (states, drives) = drives(Duration::from_secs(60));
        let (state, drive) = (&states[0], &drives[0]);
        let staging = Uuid::new_v4();
        let mut writer = drive.create_staged_file(staging, "part.1").await.unwrap();
        writer
            .write(vec![Bytes::from_static(b"abc")])
            .await
            .unwrap();
        state.hung.store(true, Ordering::SeqCst);
        let started = Instant::now();
        let got = writer.write(vec![Bytes::from_static(b"def")]).await;
        assert!(matches!(got, Err(DriveError::Offline(_))), "{got:?}");
        assert!(started.elapsed() >= DEADLINE);
        let started = Instant::now();
        assert!(writer.finish().await.is_err());
        assert!(started.elapsed() < DEADLINE, "stalled: fails at once");

        let (state, drive) = (&states[1], &drives[1]);
        let mut writer = drive.create_staged_file(staging, "part.1").await.unwrap();
        writer
            .write(vec![Bytes::from_static(b"abc")])
            .await
            .unwrap();
        writer.finish().await.unwrap();
        let dir = data_dir();
        drive.commit_staged(staging, &dir).await.unwrap();
        let reader = drive.open_shard(&dir, "part.1").await.unwrap();
        assert_eq!(&reader.read_at(1, 2).await.unwrap()[..], b"bc");
        state.hung.store(true, Ordering::SeqCst);
        let started = Instant::now();
        assert!(matches!(
            reader.read_at(0, 3).await,
            Err(DriveError::Offline(_))
        ));
        assert!(started.elapsed() >= DEADLINE && drive.is_stalled());
    }

    async fn collect(mut body: crate::body::ByteStream) -> Vec<u8> {
        let mut out = Vec::new();
        while let Some(chunk) = body.next().await {
            out.extend_from_slice(&chunk.unwrap());
        }
        out
    }

    #[tokio::test]
    async fn a_store_with_a_hung_drive_serves_every_request_in_bounded_time() {
        let (states, drives) = drives(Duration::from_secs(60));
        let set_drives = drives.iter().map(|d| d.clone() as Arc<dyn Drive>).collect();
        let set = ErasureSet::new(0, set_drives, 3, DEFAULT_BLOCK_SIZE).unwrap();
        let store = ObjectStore::new(vec![set], "deadline-test");
        let bucket = BucketName::parse("hung").unwrap();
        store.create_bucket(&bucket).await.unwrap();
        let data: Vec<u8> = (0..3 * DEFAULT_BLOCK_SIZE + 77)
            .map(|i| (i * 31 % 251) as u8)
            .collect();
        let body = |data: &[u8]| -> crate::body::ByteStream {
            let pieces: Vec<std::io::Result<Bytes>> = data
                .chunks(64 * 1024)
                .map(|c| Ok(Bytes::copy_from_slice(c)))
                .collect();
            Box::pin(futures::stream::iter(pieces))
        };
        let before = ObjectKey::parse("before").unwrap();
        store
            .put_object(&bucket, &before, body(&data), PutOptions::default())
            .await
            .unwrap();

        // Drive 1 (a data shard) hangs on everything: records, shard files, commits.
        states[0].hung.store(true, Ordering::SeqCst);
        let started = Instant::now();
        let got = store
            .get_object(&bucket, &before, GetOptions::default())
            .await
            .unwrap();
        assert_eq!(collect(got.body).await, data);
        let took = started.elapsed();
        assert!(took < DEADLINE * 4, "first GET took {took:?}");
        assert!(drives[0].is_stalled());

        // From now on the stalled drive costs nothing: writes, reads, deletes never reach it.
        let reached = states[0].calls.load(Ordering::SeqCst);
        let started = Instant::now();
        let during = ObjectKey::parse("during").unwrap();
        store
            .put_object(&bucket, &during, body(&data[1..]), PutOptions::default())
            .await
            .unwrap();
        let got = store
            .get_object(&bucket, &during, GetOptions::default())
            .await
            .unwrap();
        assert_eq!(collect(got.body).await, &data[1..]);
        store.delete_object(&bucket, &before, None).await.unwrap();
        assert_eq!(states[0].calls.load(Ordering::SeqCst), reached);
        let took = started.elapsed();
        assert!(
            took < DEADLINE * 4,
            "requests on a stalled drive took {took:?}"
        );
    }
}
