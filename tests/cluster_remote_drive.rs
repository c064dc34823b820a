//! Remote drives: the drive service on a loopback port over local drive folders, reached
//! through `RemoteDrive`: every drive call, every drive error, the shard stream's promises
//! (durable at `finish`, nothing finished when the writer is dropped), an object store
//! whose set mixes local and remote drives (and loses the remote ones), and authentication
//! (wrong secret, replay, stale time).

use std::collections::HashMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use strata::body::ByteStream;
use strata::cluster::drive_service::drive_service;
use strata::erasure::ErasureSet;
use strata::object::{BucketName, GetOptions, ObjectKey, ObjectStore, PutOptions};
use strata::storage::remote::auth::{args_digest, Signable, SignedHeaders};
use strata::storage::remote::protocol::{self as wire, Call, Envelope};
use strata::storage::remote::ClusterAuth;
use strata::storage::{
    DataDir, Drive, DriveError, Format, LocalDrive, MetaOp, MetaTable, RemoteDrive, Replaced,
    ShardReader, ShardWriter,
};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use uuid::Uuid;

const SECRET: &[u8] = b"a cluster secret of at least 32 bytes, for tests";
const DEPLOYMENT_ID: &str = "remote-drive-tests";

fn auth() -> ClusterAuth {
    ClusterAuth::new(SECRET, DEPLOYMENT_ID).unwrap()
}

fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .tls_built_in_native_certs(false)
        .build()
        .unwrap()
}

/// Formats and opens a drive folder as position `drive_index` of one 6+3 set.
fn local_drive(root: &Path, drive_index: usize) -> Arc<LocalDrive> {
    let format = Format {
        version: 1,
        deployment_id: DEPLOYMENT_ID.into(),
        set_index: 0,
        drive_index,
        set_count: 1,
        data_shards: 6,
        parity_shards: 3,
        pool_index: 0,
        pool_id: None,
    };
    LocalDrive::write_format(root, &format).unwrap();
    Arc::new(LocalDrive::open(root).unwrap())
}

/// The drive service on a loopback port.
struct Served {
    url: String,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl Served {
    async fn start(drives: HashMap<String, Arc<dyn Drive>>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let target = listener.local_addr().unwrap().to_string();
        Self::start_on(listener, drives, target).await
    }

    /// Serving on `listener` calls signed for `target` (the address its peers call: a proxy's,
    /// say).
    async fn start_on(
        listener: tokio::net::TcpListener,
        drives: HashMap<String, Arc<dyn Drive>>,
        target: String,
    ) -> Self {
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        let router = drive_service(drives, auth(), target);
        let task = tokio::spawn(async move {
            axum::serve(listener, router)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
        });
        Self { url, stop, task }
    }

    fn remote(&self, drive_id: &str) -> RemoteDrive {
        RemoteDrive::new(self.url.clone(), drive_id.into(), auth(), http_client())
    }

    /// Stops accepting, closes every connection, and waits until it has.
    async fn stop(self) {
        let _ = self.stop.send(());
        self.task.await.unwrap();
    }
}

/// One local drive folder and the service serving it.
async fn one_served_drive() -> (tempfile::TempDir, Arc<LocalDrive>, Served, String) {
    let root = tempfile::tempdir().unwrap();
    let local = local_drive(root.path(), 0);
    let id = root.path().display().to_string();
    let drives = HashMap::from([(id.clone(), local.clone() as Arc<dyn Drive>)]);
    let served = Served::start(drives).await;
    (root, local, served, id)
}

fn put(table: MetaTable, key: &str, value: &str) -> MetaOp {
    MetaOp::Put {
        table,
        key: key.as_bytes().to_vec(),
        value: value.as_bytes().to_vec(),
    }
}

fn keys(page: Vec<(Vec<u8>, Vec<u8>)>) -> Vec<String> {
    let keys = page.into_iter().map(|(k, _)| String::from_utf8(k).unwrap());
    keys.collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_calls_round_trip() {
    let (_root, local, served, id) = one_served_drive().await;
    let remote = served.remote(&id);
    assert_eq!(remote.label(), format!("{}{id}", served.url));

    let objects = MetaTable::Objects;
    let replaced = remote
        .meta_apply(vec![
            put(objects, "a/1", "one"),
            put(objects, "a/2", "two"),
            put(objects, "a/b/3", "three"),
            put(objects, "b", "bee"),
            put(MetaTable::Inline, "a/1/x", "chunk"),
        ])
        .await
        .unwrap();
    assert_eq!(replaced.len(), 5);
    assert!(replaced.iter().all(|(_, _, held)| held.is_none()));
    // What the remote wrote is what the local drive holds, and the other way round.
    let held = local.meta_get(objects, b"a/2".to_vec()).await.unwrap();
    assert_eq!(held.as_deref(), Some(&b"two"[..]));
    let got = remote.meta_get(objects, b"b".to_vec()).await.unwrap();
    assert_eq!(got.as_deref(), Some(&b"bee"[..]));
    assert_eq!(
        remote.meta_get(objects, b"zz".to_vec()).await.unwrap(),
        None
    );

    let (found, related) = remote
        .meta_get_related(
            objects,
            b"a/1".to_vec(),
            (MetaTable::Inline, b"a/1/".to_vec()),
        )
        .await
        .unwrap();
    assert_eq!(found.as_deref(), Some(&b"one"[..]));
    assert_eq!(related, vec![(b"a/1/x".to_vec(), b"chunk".to_vec())]);

    let scan = |start: Bound<&str>, prefix: &str, limit| {
        remote.meta_scan(
            objects,
            start.map(|k| k.as_bytes().to_vec()),
            prefix.as_bytes().to_vec(),
            limit,
        )
    };
    assert_eq!(
        keys(scan(Bound::Unbounded, "a/", 10).await.unwrap()),
        ["a/1", "a/2", "a/b/3"]
    );
    assert_eq!(
        keys(scan(Bound::Excluded("a/1"), "a/", 1).await.unwrap()),
        ["a/2"]
    );
    let delimited = remote
        .meta_scan_delimited(objects, Bound::Unbounded, Vec::new(), b"/".to_vec(), 10)
        .await
        .unwrap();
    assert_eq!(keys(delimited), ["a/1", "b"]);

    // Expectations: the batch applies only while they hold, and a conflict changes nothing.
    let expect = |value: Option<&str>| MetaOp::Expect {
        table: objects,
        key: b"b".to_vec(),
        value: value.map(|v| v.as_bytes().to_vec()),
    };
    let stale = remote
        .meta_apply(vec![expect(None), put(objects, "b", "lost")])
        .await;
    assert!(matches!(stale, Err(DriveError::Conflict)), "{stale:?}");
    let replaced: Replaced = remote
        .meta_apply(vec![expect(Some("bee")), put(objects, "b", "won")])
        .await
        .unwrap();
    assert_eq!(
        replaced,
        vec![(objects, b"b".to_vec(), Some(b"bee".to_vec()))]
    );
    let deleted = remote
        .meta_apply(vec![MetaOp::DeletePrefix {
            table: objects,
            prefix: b"a/".to_vec(),
        }])
        .await
        .unwrap();
    assert!(deleted.is_empty());
    assert_eq!(keys(scan(Bound::Unbounded, "", 10).await.unwrap()), ["b"]);

    // Arguments of a few MiB pass (past axum's default limit of extractors); larger ones
    // are refused before they are sent.
    let large = "v".repeat(3 << 20);
    remote
        .meta_apply(vec![put(objects, "large", &large)])
        .await
        .unwrap();
    let got = remote.meta_get(objects, b"large".to_vec()).await.unwrap();
    assert_eq!(got.map(|v| v.len()), Some(3 << 20));
    let too_large = "v".repeat(wire::MAX_ARGS);
    let refused = remote.meta_apply(vec![put(objects, "x", &too_large)]).await;
    match refused {
        Err(DriveError::Io(e)) => assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput),
        other => panic!("{other:?}"),
    }

    let (remote_info, local_info) = (remote.disk_info().await.unwrap(), local.disk_info().await);
    assert_eq!(remote_info.total, local_info.unwrap().total);
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shard_files_round_trip() {
    let (_root, _local, served, id) = one_served_drive().await;
    let remote = served.remote(&id);
    let staging = Uuid::new_v4();
    let dir = DataDir {
        bucket_id: "bucket".into(),
        data_id: Uuid::new_v4(),
    };
    let big: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    let mut writer = remote.create_staged_file(staging, "part.1").await.unwrap();
    writer
        .write(vec![Bytes::from_static(b"he"), Bytes::from_static(b"llo")])
        .await
        .unwrap();
    writer.write(vec![Bytes::from(big.clone())]).await.unwrap();
    writer.finish().await.unwrap();
    let mut empty = remote.create_staged_file(staging, "part.2").await.unwrap();
    empty.finish().await.unwrap();
    remote.commit_staged(staging, &dir).await.unwrap();

    let reader = remote.open_shard(&dir, "part.1").await.unwrap();
    assert_eq!(&reader.read_at(1, 3).await.unwrap()[..], b"ell");
    let tail = reader.read_at(5, big.len()).await.unwrap();
    assert!(tail[..] == big[..], "the large write reads back whole");
    let short = reader.read_at(big.len() as u64, 10).await;
    assert!(matches!(short, Err(DriveError::ShortRead)), "{short:?}");
    let empty = remote.open_shard(&dir, "part.2").await.unwrap();
    assert!(empty.read_at(0, 0).await.unwrap().is_empty());

    let listed = remote.list_data_dirs().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].0, dir);

    let missing = remote.open_shard(&dir, "part.9").await;
    assert!(matches!(missing, Err(DriveError::NotFound)));
    // A shard that vanished after it was opened is not found either.
    remote.delete_data_file(&dir, "part.1").await.unwrap();
    let gone = reader.read_at(0, 1).await;
    assert!(matches!(gone, Err(DriveError::NotFound)), "{gone:?}");
    remote.delete_data_dir(&dir).await.unwrap();
    let gone = remote.open_shard(&dir, "part.2").await;
    assert!(matches!(gone, Err(DriveError::NotFound)));
    assert!(remote.list_data_dirs().await.unwrap().is_empty());

    // Names that would reach outside the drive's folders are refused by the serving node.
    let escaping = DataDir {
        bucket_id: "..".into(),
        data_id: dir.data_id,
    };
    let mut refused = [
        remote.open_shard(&escaping, "part.1").await.err(),
        remote.open_shard(&dir, "../../.strata").await.err(),
        remote.delete_data_file(&dir, "../x").await.err(),
    ];
    let escaping_names = ["part.1", "../../.strata"].map(String::from);
    let batch = remote.open_shards(&dir, &escaping_names).await;
    // The folder is gone by now: the plain name is answered for itself.
    assert!(
        matches!(batch[0], Err(DriveError::NotFound)),
        "{:?}",
        batch[0].as_ref().err()
    );
    let refused = [
        refused[0].take(),
        refused[1].take(),
        refused[2].take(),
        batch.into_iter().nth(1).and_then(Result::err),
    ];
    for refused in refused {
        assert!(
            matches!(&refused, Some(DriveError::Io(e)) if e.kind() == std::io::ErrorKind::InvalidInput),
            "{refused:?}"
        );
    }
    let mut writer = remote.create_staged_file(staging, "../x").await.unwrap();
    let refused = writer.finish().await;
    assert!(matches!(refused, Err(DriveError::Io(_))), "{refused:?}");

    // Staged files that are never committed go with their folder.
    let abandoned = Uuid::new_v4();
    let mut writer = remote
        .create_staged_file(abandoned, "part.1")
        .await
        .unwrap();
    writer.write(vec![Bytes::from_static(b"x")]).await.unwrap();
    writer.finish().await.unwrap();
    remote.remove_staged(abandoned).await.unwrap();
    let nothing = remote.commit_staged(abandoned, &dir).await;
    assert!(matches!(nothing, Err(DriveError::NotFound)), "{nothing:?}");
    served.stop().await;
}

/// The parts of one read are opened in one call to the node, each name answered for itself.
/// The calls a drive service was asked, by name; `older_release`: it does not know the
/// batched open (as a node of an older release), which it answers as such a node would.
struct CountedService {
    url: String,
    calls: Arc<std::sync::Mutex<Vec<String>>>,
    server: tokio::task::JoinHandle<()>,
}

async fn counted_service(
    drives: HashMap<String, Arc<dyn Drive>>,
    older_release: bool,
) -> CountedService {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let calls = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = calls.clone();
    let router = drive_service(drives, auth(), listener.local_addr().unwrap().to_string()).layer(
        axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                let seen = seen.clone();
                async move {
                    let call = request
                        .uri()
                        .path()
                        .rsplit('/')
                        .next()
                        .unwrap_or("")
                        .to_string();
                    seen.lock().unwrap().push(call.clone());
                    if older_release && call == "open_shards" {
                        let unknown = (axum::http::StatusCode::NOT_FOUND, "unknown call");
                        return axum::response::IntoResponse::into_response(unknown);
                    }
                    next.run(request).await
                }
            },
        ),
    );
    let server = tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    CountedService { url, calls, server }
}

/// Two shard files, `part.1` ("hello") and an empty `part.2`, in a data folder of `remote`.
async fn two_shard_files(remote: &RemoteDrive) -> DataDir {
    let staging = Uuid::new_v4();
    let dir = DataDir {
        bucket_id: "bucket".into(),
        data_id: Uuid::new_v4(),
    };
    for (name, data) in [("part.1", &b"hello"[..]), ("part.2", &b""[..])] {
        let mut writer = remote.create_staged_file(staging, name).await.unwrap();
        writer
            .write(vec![Bytes::copy_from_slice(data)])
            .await
            .unwrap();
        writer.finish().await.unwrap();
    }
    remote.commit_staged(staging, &dir).await.unwrap();
    dir
}

/// Opens `part.1`, `part.9` (missing) and `part.2`: each answered for itself.
async fn open_three(remote: &RemoteDrive, dir: &DataDir) {
    let names = ["part.1", "part.9", "part.2"].map(String::from);
    let mut opened = remote.open_shards(dir, &names).await.into_iter();
    let first = opened.next().unwrap().unwrap();
    assert!(matches!(opened.next(), Some(Err(DriveError::NotFound))));
    let empty = opened.next().unwrap().unwrap();
    assert!(opened.next().is_none());
    assert_eq!(&first.read_at(0, 5).await.unwrap()[..], b"hello");
    assert!(empty.read_at(0, 0).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shard_files_of_a_read_are_opened_in_one_call() {
    let root = tempfile::tempdir().unwrap();
    let local = local_drive(root.path(), 0);
    let id = root.path().display().to_string();
    let drives = HashMap::from([(id.clone(), local.clone() as Arc<dyn Drive>)]);
    let service = counted_service(drives, false).await;
    let remote = RemoteDrive::new(service.url.clone(), id, auth(), http_client());
    let dir = two_shard_files(&remote).await;

    service.calls.lock().unwrap().clear();
    open_three(&remote, &dir).await;
    let calls = std::mem::take(&mut *service.calls.lock().unwrap());
    assert_eq!(calls[0], "open_shards");
    assert!(!calls.contains(&"open_shard".to_string()), "{calls:?}");

    // A drive the node does not serve fails every file with the one call: asked again file
    // by file, it would fail as many times more.
    let unserved = RemoteDrive::new(
        service.url.clone(),
        "/not/here".into(),
        auth(),
        http_client(),
    );
    let names = ["part.1", "part.2"].map(String::from);
    let opened = unserved.open_shards(&dir, &names).await;
    assert!(
        (opened.iter()).all(|o| matches!(o, Err(DriveError::Offline(_)))),
        "{:?}",
        opened.iter().map(|o| o.as_ref().err()).collect::<Vec<_>>()
    );
    assert_eq!(*service.calls.lock().unwrap(), ["open_shards"]);
    service.server.abort();
}

/// A node of an older release does not know the batched open: it is asked file by file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_cannot_open_files_together_is_asked_file_by_file() {
    let root = tempfile::tempdir().unwrap();
    let local = local_drive(root.path(), 0);
    let id = root.path().display().to_string();
    let drives = HashMap::from([(id.clone(), local.clone() as Arc<dyn Drive>)]);
    let service = counted_service(drives, true).await;
    let remote = RemoteDrive::new(service.url.clone(), id, auth(), http_client());
    let dir = two_shard_files(&remote).await;

    service.calls.lock().unwrap().clear();
    open_three(&remote, &dir).await;
    let mut calls = std::mem::take(&mut *service.calls.lock().unwrap());
    calls.retain(|call| call.starts_with("open_shard"));
    calls.sort();
    assert_eq!(
        calls,
        ["open_shard", "open_shard", "open_shard", "open_shards"]
    );
    service.server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_drives_and_stopped_servers_are_offline() {
    let (_root, _local, served, _id) = one_served_drive().await;
    let unknown = served.remote("/not/served/here");
    let got = unknown.meta_get(MetaTable::Objects, b"k".to_vec()).await;
    match got {
        Err(DriveError::Offline(label)) => assert_eq!(label, unknown.label()),
        other => panic!("{other:?}"),
    }
    let url = served.url.clone();
    served.stop().await;
    let stopped = RemoteDrive::new(url, "/any".into(), auth(), http_client());
    let got = stopped.meta_get(MetaTable::Objects, b"k".to_vec()).await;
    assert!(matches!(got, Err(DriveError::Offline(_))), "{got:?}");
    let mut writer = stopped
        .create_staged_file(Uuid::new_v4(), "part.1")
        .await
        .unwrap();
    let written = async {
        writer.write(vec![Bytes::from_static(b"x")]).await?;
        writer.finish().await
    };
    assert!(matches!(written.await, Err(DriveError::Offline(_))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_unhealed_flag_follows_the_serving_drive() {
    let root = tempfile::tempdir().unwrap();
    LocalDrive::mark_unhealed(root.path(), "joined blank").unwrap();
    let local = local_drive(root.path(), 0);
    let id = root.path().display().to_string();
    let served = Served::start(HashMap::from([(id.clone(), local as Arc<dyn Drive>)])).await;
    let remote = served.remote(&id);
    // Not known before the first answer.
    assert!(!remote.is_unhealed());
    assert!(remote.refresh_unhealed().await.unwrap());
    assert!(remote.is_unhealed());
    let absent = remote.meta_get(MetaTable::Objects, b"k".to_vec()).await;
    match absent {
        Err(DriveError::Unhealed(label)) => assert_eq!(label, remote.label()),
        other => panic!("{other:?}"),
    }
    remote.mark_healed().await.unwrap();
    assert!(!remote.is_unhealed());
    assert_eq!(
        remote
            .meta_get(MetaTable::Objects, b"k".to_vec())
            .await
            .unwrap(),
        None
    );
    served.stop().await;
}

/// A drive that answers `meta_get` with the error its key names, and keeps count of the
/// shard files it was asked to finish; a shard named `full` fails its first write.
#[derive(Default)]
struct Scripted {
    finished: Arc<AtomicUsize>,
    written: Arc<AtomicUsize>,
}

fn scripted_error(key: &[u8]) -> DriveError {
    match key {
        b"offline" => DriveError::Offline("/served/label".into()),
        b"not_found" => DriveError::NotFound,
        b"unhealed" => DriveError::Unhealed("/served/label".into()),
        b"short_read" => DriveError::ShortRead,
        b"conflict" => DriveError::Conflict,
        b"full" => DriveError::Full,
        b"database" => DriveError::Database("table gone".into()),
        b"io_denied" => DriveError::Io(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "denied",
        )),
        _ => DriveError::Io(std::io::Error::from_raw_os_error(libc::EIO)),
    }
}

struct ScriptedWriter {
    name: String,
    finished: Arc<AtomicUsize>,
    written: Arc<AtomicUsize>,
}

#[async_trait]
impl ShardWriter for ScriptedWriter {
    async fn write(&mut self, pieces: Vec<Bytes>) -> Result<(), DriveError> {
        if self.name == "full" {
            return Err(DriveError::Full);
        }
        let len: usize = pieces.iter().map(Bytes::len).sum();
        self.written.fetch_add(len, Ordering::SeqCst);
        Ok(())
    }
    async fn finish(&mut self) -> Result<(), DriveError> {
        self.finished.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

#[async_trait]
impl Drive for Scripted {
    fn label(&self) -> &str {
        "/served/label"
    }
    async fn create_staged_file(
        &self,
        _: Uuid,
        name: &str,
    ) -> Result<Box<dyn ShardWriter>, DriveError> {
        Ok(Box::new(ScriptedWriter {
            name: name.into(),
            finished: self.finished.clone(),
            written: self.written.clone(),
        }))
    }
    async fn commit_staged(&self, _: Uuid, _: &DataDir) -> Result<(), DriveError> {
        Ok(())
    }
    async fn remove_staged(&self, _: Uuid) -> Result<(), DriveError> {
        Ok(())
    }
    async fn open_shard(&self, _: &DataDir, _: &str) -> Result<Box<dyn ShardReader>, DriveError> {
        Err(DriveError::NotFound)
    }
    async fn delete_data_dir(&self, _: &DataDir) -> Result<(), DriveError> {
        Ok(())
    }
    async fn delete_data_file(&self, _: &DataDir, _: &str) -> Result<(), DriveError> {
        Ok(())
    }
    async fn link_data_dir(&self, _: &DataDir, _: &DataDir) -> Result<(), DriveError> {
        Ok(())
    }
    async fn meta_get(&self, _: MetaTable, key: Vec<u8>) -> Result<Option<Vec<u8>>, DriveError> {
        Err(scripted_error(&key))
    }
    async fn meta_apply(&self, _: Vec<MetaOp>) -> Result<Replaced, DriveError> {
        Ok(Vec::new())
    }
    async fn meta_scan(
        &self,
        _: MetaTable,
        _: Bound<Vec<u8>>,
        _: Vec<u8>,
        _: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>, DriveError> {
        Ok(Vec::new())
    }
    async fn meta_scan_delimited(
        &self,
        _: MetaTable,
        _: Bound<Vec<u8>>,
        _: Vec<u8>,
        _: Vec<u8>,
        _: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>, DriveError> {
        Ok(Vec::new())
    }
}

async fn serve_scripted() -> (Arc<Scripted>, Served, RemoteDrive) {
    let scripted = Arc::new(Scripted::default());
    let drives = HashMap::from([("/s".to_string(), scripted.clone() as Arc<dyn Drive>)]);
    let served = Served::start(drives).await;
    let remote = served.remote("/s");
    (scripted, served, remote)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_drive_error_crosses_the_wire() {
    let (_scripted, served, remote) = serve_scripted().await;
    let keys = [
        "offline",
        "not_found",
        "unhealed",
        "short_read",
        "conflict",
        "full",
        "database",
        "io_denied",
        "io_raw",
    ];
    for key in keys {
        let sent = scripted_error(key.as_bytes());
        let got = remote
            .meta_get(MetaTable::Objects, key.as_bytes().to_vec())
            .await
            .unwrap_err();
        assert_eq!(
            std::mem::discriminant(&got),
            std::mem::discriminant(&sent),
            "{key}: {got:?}"
        );
        match (&got, &sent) {
            // Labels name the drive as the caller knows it.
            (DriveError::Offline(label) | DriveError::Unhealed(label), _) => {
                assert_eq!(label, remote.label())
            }
            (DriveError::Io(got), DriveError::Io(sent)) => {
                assert_eq!(got.kind(), sent.kind(), "{key}");
                assert_eq!(got.to_string(), sent.to_string(), "{key}");
            }
            _ => assert_eq!(got.to_string(), sent.to_string(), "{key}"),
        }
    }
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finish_answers_after_the_remote_finish_and_a_dropped_writer_finishes_nothing() {
    let (scripted, served, remote) = serve_scripted().await;
    let mut writer = remote
        .create_staged_file(Uuid::new_v4(), "a")
        .await
        .unwrap();
    writer
        .write(vec![Bytes::from(vec![1; 1000])])
        .await
        .unwrap();
    writer.finish().await.unwrap();
    assert_eq!(scripted.finished.load(Ordering::SeqCst), 1);
    assert_eq!(scripted.written.load(Ordering::SeqCst), 1000);

    let mut dropped = remote
        .create_staged_file(Uuid::new_v4(), "b")
        .await
        .unwrap();
    dropped
        .write(vec![Bytes::from(vec![2; 5000])])
        .await
        .unwrap();
    drop(dropped);
    // Whatever reached the serving node, it was never told to finish.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(scripted.finished.load(Ordering::SeqCst), 1);

    // A write that fails on the serving node fails the writer, at the latest at `finish`.
    let mut failing = remote
        .create_staged_file(Uuid::new_v4(), "full")
        .await
        .unwrap();
    let outcome = async {
        for _ in 0..8 {
            failing.write(vec![Bytes::from(vec![3; 64 << 10])]).await?;
        }
        failing.finish().await
    };
    let outcome = outcome.await;
    assert!(matches!(outcome, Err(DriveError::Full)), "{outcome:?}");
    assert_eq!(scripted.finished.load(Ordering::SeqCst), 1);
    served.stop().await;
}

/// Deterministic bytes, distinct per seed.
fn payload(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_add(1);
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

fn body(data: &[u8]) -> ByteStream {
    let pieces: Vec<std::io::Result<Bytes>> = data
        .chunks(64 << 10)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    Box::pin(futures::stream::iter(pieces))
}

async fn read_whole(store: &ObjectStore, bucket: &BucketName, key: &str) -> Vec<u8> {
    let key = ObjectKey::parse(key).unwrap();
    let got = store
        .get_object(bucket, &key, GetOptions::default())
        .await
        .unwrap();
    let mut bytes = Vec::new();
    let mut stream = got.body;
    while let Some(piece) = stream.next().await {
        bytes.extend_from_slice(&piece.unwrap());
    }
    bytes
}

/// A 6+3 set whose drives 2, 5 and 8 are another node's: objects inline and in shard files
/// read back byte for byte, and still do with that node gone (six local drives left).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_erasure_set_spans_local_and_remote_drives() {
    let roots: Vec<tempfile::TempDir> = (0..9).map(|_| tempfile::tempdir().unwrap()).collect();
    let remote_positions = [2, 5, 8];
    let mut served_drives = HashMap::new();
    let mut local_drives = HashMap::new();
    for (index, root) in roots.iter().enumerate() {
        let drive = local_drive(root.path(), index) as Arc<dyn Drive>;
        match remote_positions.contains(&index) {
            true => served_drives.insert(root.path().display().to_string(), drive),
            false => local_drives.insert(index, drive),
        };
    }
    let served = Served::start(served_drives).await;
    let drives: Vec<Arc<dyn Drive>> = (0..9)
        .map(|index| match local_drives.remove(&index) {
            Some(local) => local,
            None => Arc::new(served.remote(&roots[index].path().display().to_string())) as _,
        })
        .collect();
    let set = ErasureSet::new(0, drives, 3, 1 << 20).unwrap();
    let store = ObjectStore::new(vec![set], DEPLOYMENT_ID);
    let bucket = BucketName::parse("spanning").unwrap();
    store.create_bucket(&bucket).await.unwrap();

    let objects = [("empty", 0), ("small", 1000), ("large", 3 << 20)];
    for (seed, (name, len)) in objects.iter().enumerate() {
        let data = payload(*len, seed as u64);
        let key = ObjectKey::parse(name).unwrap();
        let stored = store
            .put_object(&bucket, &key, body(&data), PutOptions::default())
            .await
            .unwrap();
        assert_eq!(stored.size, *len as u64);
    }
    for (seed, (name, len)) in objects.iter().enumerate() {
        let got = read_whole(&store, &bucket, name).await;
        assert!(got == payload(*len, seed as u64), "{name} reads back");
    }
    // The large object's shards are files on the remote drives' folders too.
    let remote_files = remote_positions
        .iter()
        .filter(|&&i| has_data_files(&roots[i].path().join("data")))
        .count();
    assert_eq!(remote_files, 3);

    served.stop().await;
    for (seed, (name, len)) in objects.iter().enumerate() {
        let got = read_whole(&store, &bucket, name).await;
        assert!(
            got == payload(*len, seed as u64),
            "{name} reads back without the peer"
        );
    }
}

fn has_data_files(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|entry| {
        let path = entry.path();
        match path.is_dir() {
            true => has_data_files(&path),
            false => true,
        }
    })
}

/// The signature headers of a call to `path` of the drive service at `target`.
fn sign(
    signer: &ClusterAuth,
    path: &str,
    target: &str,
    args: &[u8],
    at: SystemTime,
) -> SignedHeaders {
    let digest = args_digest(args);
    let signable = Signable {
        method: "POST",
        path,
        target,
        args_digest: &digest,
        deadline: "",
    };
    signer.sign(&signable, at)
}

/// A raw, signed `disk_info` call, to replay and tamper with.
async fn raw_call(
    url: &str,
    drive_id: &str,
    signer: &ClusterAuth,
    signed_at: SystemTime,
) -> (reqwest::RequestBuilder, Vec<u8>) {
    let path = Call::DiskInfo.path();
    let args = wire::encode(&Envelope {
        drive: drive_id.to_string(),
        args: (),
    })
    .unwrap();
    let target = url.trim_start_matches("http://");
    let signed = sign(signer, &path, target, &args, signed_at);
    let request = http_client()
        .post(format!("{url}{path}"))
        .header(wire::NONCE_HEADER, signed.nonce_hex())
        .header(wire::TIME_HEADER, signed.time)
        .header(wire::SIGNATURE_HEADER, signed.signature)
        .header(wire::ARGS_DIGEST_HEADER, signed.args_digest)
        .body(args.clone());
    (request, args)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_with_a_wrong_secret_a_replay_or_a_stale_time_are_refused() {
    let (_root, _local, served, id) = one_served_drive().await;

    // A node with another secret reaches nothing.
    let intruder_auth = ClusterAuth::new(&[7u8; 32], DEPLOYMENT_ID).unwrap();
    let intruder = RemoteDrive::new(
        served.url.clone(),
        id.clone(),
        intruder_auth.clone(),
        http_client(),
    );
    let refused = intruder.meta_get(MetaTable::Objects, b"k".to_vec()).await;
    match refused {
        Err(DriveError::Io(e)) => assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied),
        other => panic!("{other:?}"),
    }
    let (request, _) = raw_call(&served.url, &id, &intruder_auth, SystemTime::now()).await;
    let answer = request.send().await.unwrap();
    assert_eq!(answer.status(), reqwest::StatusCode::UNAUTHORIZED);
    assert_eq!(answer.text().await.unwrap(), "bad signature");

    // A captured request is accepted once.
    let (request, _) = raw_call(&served.url, &id, &auth(), SystemTime::now()).await;
    let replay = request.try_clone().unwrap();
    assert_eq!(
        request.send().await.unwrap().status(),
        reqwest::StatusCode::OK
    );
    let answer = replay.send().await.unwrap();
    assert_eq!(answer.status(), reqwest::StatusCode::UNAUTHORIZED);
    assert_eq!(answer.text().await.unwrap(), "request replayed");

    // Signed for another node (captured on its way there): refused here.
    let args = wire::encode(&Envelope {
        drive: id.clone(),
        args: (),
    })
    .unwrap();
    let path = Call::DiskInfo.path();
    let elsewhere = sign(&auth(), &path, "127.0.0.1:1", &args, SystemTime::now());
    let answer = http_client()
        .post(format!("{}{path}", served.url))
        .header(wire::NONCE_HEADER, elsewhere.nonce_hex())
        .header(wire::TIME_HEADER, elsewhere.time)
        .header(wire::SIGNATURE_HEADER, elsewhere.signature)
        .header(wire::ARGS_DIGEST_HEADER, elsewhere.args_digest)
        .body(args)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), reqwest::StatusCode::UNAUTHORIZED);
    assert_eq!(answer.text().await.unwrap(), "bad signature");

    // Signed two minutes ago (or captured then): refused.
    let two_minutes_ago = SystemTime::now() - Duration::from_secs(120);
    let (request, _) = raw_call(&served.url, &id, &auth(), two_minutes_ago).await;
    let answer = request.send().await.unwrap();
    assert_eq!(answer.status(), reqwest::StatusCode::UNAUTHORIZED);
    assert_eq!(
        answer.text().await.unwrap(),
        "request time outside the window"
    );

    // Arguments past the limit are not read whole, signed or not.
    let path = Call::MetaApply.path();
    let too_large = vec![0u8; wire::MAX_ARGS + 1];
    let target = served.url.trim_start_matches("http://");
    let signed = sign(&auth(), &path, target, &too_large, SystemTime::now());
    let answer = http_client()
        .post(format!("{}{path}", served.url))
        .header(wire::NONCE_HEADER, signed.nonce_hex())
        .header(wire::TIME_HEADER, signed.time)
        .header(wire::SIGNATURE_HEADER, signed.signature)
        .header(wire::ARGS_DIGEST_HEADER, signed.args_digest)
        .body(too_large)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), reqwest::StatusCode::BAD_REQUEST);

    // A body other than the one whose digest was signed is refused.
    let (request, _) = raw_call(&served.url, &id, &auth(), SystemTime::now()).await;
    let mut request = request.build().unwrap();
    *request.body_mut() = Some(b"other arguments".to_vec().into());
    let answer = http_client().execute(request).await.unwrap();
    assert_eq!(answer.status(), reqwest::StatusCode::BAD_REQUEST);
    assert_eq!(
        answer.text().await.unwrap(),
        "arguments differ from their digest"
    );

    // Unsigned, or to a call that does not exist.
    let unsigned = http_client()
        .post(format!("{}{}", served.url, Call::DiskInfo.path()))
        .send()
        .await
        .unwrap();
    assert_eq!(unsigned.status(), reqwest::StatusCode::UNAUTHORIZED);
    let unknown = http_client()
        .post(format!("{}{}config", served.url, wire::RPC_PREFIX))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), reqwest::StatusCode::NOT_FOUND);
    served.stop().await;
}

/// How a man in the middle changes what passes: the call's path and the request body, or the
/// answer's.
type Rewrite = fn(&str, Bytes) -> Bytes;

/// A drive service behind a man in the middle without the secret: every request and answer
/// passes through `rewrite_request` and `rewrite_answer`. The service takes calls signed for
/// the proxy's address, as a node does for the address its peers call.
async fn served_behind(
    drives: HashMap<String, Arc<dyn Drive>>,
    rewrite_request: Rewrite,
    rewrite_answer: Rewrite,
) -> (Served, String) {
    let front = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy_url = format!("http://{}", front.local_addr().unwrap());
    let back = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let served = Served::start_on(back, drives, front.local_addr().unwrap().to_string()).await;
    let to = served.url.clone();
    let relay = move |request: axum::extract::Request| {
        let to = to.clone();
        async move {
            let (parts, body) = request.into_parts();
            let path = parts.uri.path().to_string();
            let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
            let mut forwarded = http_client()
                .post(format!("{to}{path}"))
                .body(rewrite_request(&path, body));
            for (name, value) in &parts.headers {
                if name != "host" && name != "content-length" {
                    forwarded = forwarded.header(name, value);
                }
            }
            let answer = forwarded.send().await.unwrap();
            let mut relayed = axum::http::Response::builder().status(answer.status());
            for (name, value) in answer.headers() {
                if name != "content-length" {
                    relayed = relayed.header(name, value);
                }
            }
            let body = rewrite_answer(&path, answer.bytes().await.unwrap());
            relayed.body(axum::body::Body::from(body)).unwrap()
        }
    };
    tokio::spawn(async move {
        axum::serve(front, axum::Router::new().fallback(relay))
            .await
            .unwrap();
    });
    (served, proxy_url)
}

fn untouched(_: &str, body: Bytes) -> Bytes {
    body
}

/// Flips the last byte of `body` when `path` is `call`'s.
fn flip_last_byte_of(call: Call, path: &str, body: Bytes) -> Bytes {
    let mut body = body.to_vec();
    if path == call.path() {
        if let Some(last) = body.last_mut() {
            *last ^= 1;
        }
    }
    body.into()
}

/// Forged answers are refused: shard bytes read through a man in the middle that changes them
/// (here without even recomputing a checksum) fail instead of reading back wrong, and so do
/// changed metadata answers. Before, any 200 body was taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_changed_on_the_way_are_refused() {
    let root = tempfile::tempdir().unwrap();
    let local = local_drive(root.path(), 0);
    let id = root.path().display().to_string();
    let dir = DataDir {
        bucket_id: "bucket".into(),
        data_id: Uuid::new_v4(),
    };
    let staging = Uuid::new_v4();
    let mut writer = local.create_staged_file(staging, "part.1").await.unwrap();
    writer
        .write(vec![Bytes::from_static(b"shard bytes")])
        .await
        .unwrap();
    writer.finish().await.unwrap();
    local.commit_staged(staging, &dir).await.unwrap();
    let drives = HashMap::from([(id.clone(), local.clone() as Arc<dyn Drive>)]);

    let flip_reads: Rewrite = |path, body| flip_last_byte_of(Call::ReadShard, path, body);
    let (served, proxy) = served_behind(drives.clone(), untouched, flip_reads).await;
    let remote = RemoteDrive::new(proxy, id.clone(), auth(), http_client());
    let reader = remote.open_shard(&dir, "part.1").await.unwrap();
    let forged = reader.read_at(0, 11).await;
    assert!(
        matches!(&forged, Err(DriveError::Io(e)) if e.kind() == std::io::ErrorKind::InvalidData),
        "{forged:?}"
    );
    served.stop().await;

    let flip_metadata: Rewrite = |path, body| flip_last_byte_of(Call::DiskInfo, path, body);
    let (served, proxy) = served_behind(drives.clone(), untouched, flip_metadata).await;
    let remote = RemoteDrive::new(proxy, id.clone(), auth(), http_client());
    let forged = remote.disk_info().await;
    assert!(matches!(&forged, Err(DriveError::Io(_))), "{forged:?}");
    // The same proxy passes what it leaves alone.
    let reader = remote.open_shard(&dir, "part.1").await.unwrap();
    assert_eq!(&reader.read_at(0, 11).await.unwrap()[..], b"shard bytes");
    served.stop().await;
}

/// A shard stream changed on the way is never finished: the serving node checks the finish
/// frame's signature of every byte before it runs `finish`, and the writer is told, so the
/// drive does not count as holding its shard and its staged file is never committed. Before,
/// a forger recomputing the (unkeyed) bitrot checksums got chosen bytes stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_stream_changed_on_the_way_is_never_finished() {
    let root = tempfile::tempdir().unwrap();
    let local = local_drive(root.path(), 0);
    let id = root.path().display().to_string();
    let drives = HashMap::from([(id.clone(), local.clone() as Arc<dyn Drive>)]);
    // The first write frame's first payload byte: after its 5-byte header.
    let change_the_shard: Rewrite = |path, body| {
        let mut body = body.to_vec();
        if path == Call::CreateStagedFile.path() && body.len() > 5 {
            body[5] ^= 1;
        }
        body.into()
    };
    for (rewrite, changed) in [(untouched as Rewrite, false), (change_the_shard, true)] {
        let (served, proxy) = served_behind(drives.clone(), rewrite, untouched).await;
        let remote = RemoteDrive::new(proxy, id.clone(), auth(), http_client());
        let mut writer = remote
            .create_staged_file(Uuid::new_v4(), "part.1")
            .await
            .unwrap();
        writer
            .write(vec![
                Bytes::from_static(b"shard "),
                Bytes::from_static(b"bytes"),
            ])
            .await
            .unwrap();
        let finished = writer.finish().await;
        match changed {
            false => assert!(finished.is_ok(), "{finished:?}"),
            true => assert!(
                matches!(&finished, Err(DriveError::Io(e)) if e.to_string().contains("differs from its signature")),
                "{finished:?}"
            ),
        }
        served.stop().await;
    }
}

/// One who cannot sign costs the service no memory: the signature is checked before a byte of
/// the body is read, so a request announcing 4 MiB that never come is answered at once.
/// Before, every such request held 4 MiB of buffer (and its socket) until its body ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_cannot_sign_is_refused_before_its_body_is_read() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (_root, _local, served, _id) = one_served_drive().await;
    let address = served.url.trim_start_matches("http://");
    let now_ms = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: {address}\r\n{}: {now_ms}\r\n{}: {}\r\n{}: {}\r\n{}: {}\r\n\
         Content-Length: {}\r\n\r\n",
        Call::MetaGet.path(),
        wire::TIME_HEADER,
        wire::NONCE_HEADER,
        "7".repeat(32),
        wire::SIGNATURE_HEADER,
        "0".repeat(64),
        wire::ARGS_DIGEST_HEADER,
        "0".repeat(64),
        wire::MAX_ARGS,
    );
    let mut socket = tokio::net::TcpStream::connect(address).await.unwrap();
    socket.write_all(head.as_bytes()).await.unwrap();
    let mut answer = vec![0u8; 1024];
    let read = tokio::time::timeout(Duration::from_secs(5), socket.read(&mut answer))
        .await
        .expect("answered without waiting for the body")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer[..read]);
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    assert!(answer.ends_with("bad signature"), "{answer}");
    drop(socket);
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_carries_its_deadline_and_the_serving_node_keeps_to_it() {
    use std::time::Instant;
    use strata::storage::answer_by;
    use strata::storage::faulty::FaultyDrive;

    let root = tempfile::tempdir().unwrap();
    let local = local_drive(root.path(), 0);
    let slow = FaultyDrive::new(local.clone() as Arc<dyn Drive>);
    let drives = HashMap::from([("/d".to_string(), slow.clone() as Arc<dyn Drive>)]);
    let served = Served::start(drives).await;
    let remote = served.remote("/d");
    let objects = MetaTable::Objects;
    let held = |key: &'static str| {
        let local = local.clone();
        async move {
            local
                .meta_get(objects, key.as_bytes().to_vec())
                .await
                .unwrap()
        }
    };

    // It arrives with no time left: the serving node does not start it.
    let late = answer_by(
        Instant::now(),
        remote.meta_apply(vec![put(objects, "late", "x")]),
    );
    assert!(matches!(late.await, Err(DriveError::Offline(_))));
    assert_eq!(held("late").await, None);

    // Its time runs out while the serving drive is slow: the serving node gives up with its
    // caller, and the write never lands.
    slow.slow_down_writes(Duration::from_secs(2));
    let by = Instant::now() + Duration::from_millis(300);
    let started = Instant::now();
    let cut = answer_by(by, remote.meta_apply(vec![put(objects, "slow", "x")])).await;
    assert!(matches!(cut, Err(DriveError::Offline(_))), "{cut:?}");
    assert!(started.elapsed() < Duration::from_secs(1));
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(held("slow").await, None, "applied after its caller gave up");

    // With time enough, the same slow call is done.
    let by = Instant::now() + Duration::from_secs(10);
    answer_by(by, remote.meta_apply(vec![put(objects, "patient", "x")]))
        .await
        .unwrap();
    assert_eq!(held("patient").await.as_deref(), Some(&b"x"[..]));
    served.stop().await;
}
