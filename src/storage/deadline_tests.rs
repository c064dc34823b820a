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
    /// Metadata reads block the blocking thread that runs them (as a disk stuck in a read
    /// does), where `hung` only never answers.
    blocks: Arc<AtomicBool>,
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
        let blocks = self.state.blocks.clone();
        crate::storage::handoff::run(move || {
            while blocks.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(5));
            }
            Ok(())
        })
        .await?;
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

/// A request's reads of its drives cross to one blocking thread together; a drive whose read
/// blocks that thread is still marked stalled at its deadline, and the drives queued behind
/// it answer long before it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drive_that_blocks_a_shared_hand_off_is_stalled_at_its_deadline_alone() {
    let (states, drives) = drives(Duration::from_secs(60));
    states[0].blocks.store(true, Ordering::SeqCst);
    let started = Instant::now();
    let reads = crate::storage::handoff::together(futures::future::join_all(drives.iter().map(
        |d| async {
            let got = d.meta_get(MetaTable::Objects, b"k".to_vec()).await;
            (got, started.elapsed())
        },
    )))
    .await;
    states[0].blocks.store(false, Ordering::SeqCst);

    let (first, took) = &reads[0];
    assert!(matches!(first, Err(DriveError::Offline(_))), "{first:?}");
    assert!(*took >= DEADLINE && *took < DEADLINE * 3, "took {took:?}");
    assert!(drives[0].is_stalled());
    for (i, (got, took)) in reads.iter().enumerate().skip(1) {
        assert!(matches!(got, Ok(None)), "drive {i}: {got:?}");
        assert!(*took < DEADLINE / 2, "drive {i} took {took:?}");
        assert!(!drives[i].is_stalled(), "drive {i}");
    }
}
