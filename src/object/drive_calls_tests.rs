//! What a small request costs in drive calls, counted through the simulated drives: the
//! figures the README quotes, and a ceiling so that a change that adds round trips fails.

use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;

use super::heal::purge::SourcesAsked;
use super::{BucketName, GetOptions, ObjectKey, ObjectRecord, ObjectStore, PutOptions, ReadIf};
use crate::erasure::ErasureSet;
use crate::storage::faulty::{Call, FaultyDrive};
use crate::storage::sim::CrashController;
use crate::storage::Drive;

const SMALL: usize = 4 << 10;

fn body(data: Bytes) -> crate::body::ByteStream {
    Box::pin(futures::stream::iter([Ok(data)]))
}

#[tokio::test]
async fn a_small_put_and_get_cost_few_drive_calls() {
    let sim = CrashController::new(9);
    let set = ErasureSet::new(0, sim.drives(), 3, 1 << 20).unwrap();
    let store = ObjectStore::new(vec![set], "calls");
    let bucket = BucketName::parse("calls").unwrap();
    store.create_bucket(&bucket).await.unwrap();
    let key = ObjectKey::parse("label.txt").unwrap();
    let data = Bytes::from(vec![7u8; SMALL]);
    // The key exists already: an overwrite is the common case (and the costlier one).
    store
        .put_object(&bucket, &key, body(data.clone()), PutOptions::default())
        .await
        .unwrap();

    sim.reset_calls();
    store
        .put_object(&bucket, &key, body(data.clone()), PutOptions::default())
        .await
        .unwrap();
    let put = sim.calls();
    let put_kinds = sim.calls_by_kind();

    sim.reset_calls();
    let got = store
        .get_object(&bucket, &key, GetOptions::default())
        .await
        .unwrap();
    let mut read = Vec::new();
    let mut stream = got.body;
    while let Some(piece) = stream.next().await {
        read.extend_from_slice(&piece.unwrap());
    }
    assert_eq!(read, data);
    let get = sim.calls();
    let get_kinds = sim.calls_by_kind();

    // A conditional GET that fails its condition is decided on the records alone.
    sim.reset_calls();
    let options = GetOptions {
        read_if: Some(ReadIf(std::sync::Arc::new(|_| false))),
        ..GetOptions::default()
    };
    let mut not_read = store.get_object(&bucket, &key, options).await.unwrap();
    assert!(not_read.body.next().await.is_none());
    let refused = sim.calls();
    assert_eq!(refused, 6, "{:?}", sim.calls_by_kind());

    sim.reset_calls();
    store.head_object(&bucket, &key, None).await.unwrap();
    let head = sim.calls();

    println!("small PUT: {put} drive calls {put_kinds:?}");
    println!("small GET: {get} drive calls {get_kinds:?}");
    println!("HEAD: {head} drive calls");
    assert!(put <= 18, "small PUT: {put} drive calls {put_kinds:?}");
    // A read quorum of drives that agree answers for the set (nine calls before).
    assert!(get <= 6, "small GET: {get} drive calls {get_kinds:?}");
    assert!(head <= 6, "HEAD: {head} drive calls");
}

async fn read_all(store: &ObjectStore, bucket: &BucketName, key: &ObjectKey) -> Vec<u8> {
    let got = store
        .get_object(bucket, key, GetOptions::default())
        .await
        .unwrap();
    let mut read = Vec::new();
    let mut stream = got.body;
    while let Some(piece) = stream.next().await {
        read.extend_from_slice(&piece.unwrap());
    }
    read
}

/// A read that asks only a read quorum of drives asks the others as soon as those
/// disagree: here three of them missed the last write, which the three others and the
/// drives not asked hold, and the GET answers it (a read of six alone could only say 503).
/// A rename or a DELETE in an unversioned bucket answers after its reads and one commit, as
/// a PUT does; the tombstone goes a moment later, with any others of the moment (before, a
/// second commit on every drive came first: 36 drive calls for a rename).
#[tokio::test]
async fn a_rename_or_delete_answers_after_one_commit_and_its_tombstone_goes_after() {
    let sim = CrashController::new(9);
    let set = ErasureSet::new(0, sim.drives(), 3, 1 << 20).unwrap();
    let store = ObjectStore::new(vec![set], "calls");
    let bucket = BucketName::parse("calls").unwrap();
    store.create_bucket(&bucket).await.unwrap();
    let (tmp, ckpt) = (
        ObjectKey::parse("ckpt.tmp").unwrap(),
        ObjectKey::parse("ckpt").unwrap(),
    );
    let data = Bytes::from(vec![7u8; 300 << 10]);
    let options = PutOptions::default();
    store
        .put_object(&bucket, &tmp, body(data.clone()), options)
        .await
        .unwrap();

    sim.reset_calls();
    let options = super::RenameOptions::default();
    store
        .rename_object(&bucket, &ckpt, &tmp, &options)
        .await
        .unwrap();
    // The test's runtime has one thread: nothing spawned ran yet.
    let renamed = sim.calls();
    assert!(
        renamed <= 27,
        "rename: {renamed} drive calls {:?}",
        sim.calls_by_kind()
    );

    store.tidied().await;
    let source_record = b"calls\0ckpt.tmp".to_vec();
    for i in 0..9 {
        let held =
            (sim.drive(i)).meta_get(crate::storage::MetaTable::Objects, source_record.clone());
        assert_eq!(held.await.unwrap(), None, "drive {i}");
    }
    assert_eq!(read_all(&store, &bucket, &ckpt).await, data);

    // So does a DELETE (27 drive calls before).
    let small = ObjectKey::parse("small").unwrap();
    let options = PutOptions::default();
    let data = Bytes::from(vec![7u8; SMALL]);
    (store.put_object(&bucket, &small, body(data), options).await).unwrap();
    sim.reset_calls();
    store.delete_object(&bucket, &small, None).await.unwrap();
    let deleted = sim.calls();
    assert!(
        deleted <= 18,
        "DELETE: {deleted} drive calls {:?}",
        sim.calls_by_kind()
    );
}

#[tokio::test]
async fn a_read_whose_first_drives_disagree_asks_the_others() {
    let sim = CrashController::new(9);
    let drives: Vec<_> = sim.drives().into_iter().map(FaultyDrive::new).collect();
    let as_drives = drives.iter().map(|d| d.clone() as Arc<dyn Drive>).collect();
    let set = ErasureSet::new(0, as_drives, 3, 1 << 20).unwrap();
    let store = ObjectStore::new(vec![set], "calls");
    let bucket = BucketName::parse("calls").unwrap();
    store.create_bucket(&bucket).await.unwrap();
    let key = ObjectKey::parse("ckpt").unwrap();
    // Of other sizes, so that a HEAD tells them apart.
    let (old, new) = (
        Bytes::from(vec![1u8; SMALL - 1]),
        Bytes::from(vec![2u8; SMALL]),
    );
    let put = |data: Bytes| store.put_object(&bucket, &key, body(data), PutOptions::default());
    put(old).await.unwrap();
    for drive in &drives[..3] {
        drive.fail(&[Call::MetaApply]);
    }
    put(new.clone()).await.unwrap();
    for drive in &drives {
        drive.recover();
    }
    assert_eq!(read_all(&store, &bucket, &key).await, new);
    let record = store.head_object(&bucket, &key, None).await.unwrap();
    assert_eq!(record.size, SMALL as u64);
}

/// A small object whose chunk on a drive asked first is damaged is read again from every
/// drive, and reads whole.
#[tokio::test]
async fn a_small_object_with_a_damaged_chunk_on_a_drive_asked_reads_whole() {
    let sim = CrashController::new(9);
    let set = ErasureSet::new(0, sim.drives(), 3, 1 << 20).unwrap();
    let store = ObjectStore::new(vec![set], "calls");
    let bucket = BucketName::parse("calls").unwrap();
    store.create_bucket(&bucket).await.unwrap();
    let key = ObjectKey::parse("sample").unwrap();
    let data = Bytes::from((0..SMALL).map(|i| i as u8).collect::<Vec<_>>());
    store
        .put_object(&bucket, &key, body(data.clone()), PutOptions::default())
        .await
        .unwrap();
    let record = store.head_object(&bucket, &key, None).await.unwrap();
    assert!(record.inline);
    // Drives 0 and 1 (asked first: they hold data shards) hold damaged chunks.
    let chunk_key = super::record::inline_key("calls", "sample", record.data_id);
    for drive in &sim.drives()[..2] {
        let table = crate::storage::MetaTable::Inline;
        let stored = drive
            .meta_get(table, chunk_key.clone())
            .await
            .unwrap()
            .unwrap();
        let damaged = stored.iter().map(|b| b ^ 0x5a).collect();
        let op = crate::storage::MetaOp::Put {
            table,
            key: chunk_key.clone(),
            value: damaged,
        };
        drive.meta_apply(vec![op]).await.unwrap();
    }
    assert_eq!(read_all(&store, &bucket, &key).await, data);
}

/// A heal or purge that drops a renamed version's folder from every drive asks the key the
/// rename took it from once, not once per drive (nine reads of nine drives each, before).
#[tokio::test]
async fn dropping_a_renamed_folder_from_every_drive_asks_its_source_once() {
    let sim = CrashController::new(9);
    let set = ErasureSet::new(0, sim.drives(), 3, 1 << 20).unwrap();
    let store = ObjectStore::new(vec![set], "calls");
    let bucket = BucketName::parse("calls").unwrap();
    let bucket_record = store.create_bucket(&bucket).await.unwrap();
    let source = ObjectKey::parse("ckpt.tmp").unwrap();
    let data = Bytes::from(vec![7u8; 300 << 10]);
    store
        .put_object(&bucket, &source, body(data.clone()), PutOptions::default())
        .await
        .unwrap();
    let held = store.head_object(&bucket, &source, None).await.unwrap();
    // A version a rename made of it, as drives that missed the rename's end may drop it.
    let renamed = ObjectRecord {
        data_from: Some(source.as_str().into()),
        ..held
    };
    let key = ObjectKey::parse("ckpt").unwrap();
    let mut sources = SourcesAsked::default();
    sim.reset_calls();
    for i in 0..9 {
        let owner = (&bucket_record, &key);
        (store.drop_version_on(&store.sets[0], i, owner, &renamed, &mut sources)).await;
    }
    let reads = sim.calls_by_kind().get("meta_get").copied().unwrap_or(0);
    assert_eq!(reads, 9, "{:?}", sim.calls_by_kind());
    // The source holds the folder still: nothing was dropped.
    let got = store.get_object(&bucket, &source, GetOptions::default());
    let mut stream = got.await.unwrap().body;
    let mut read = Vec::new();
    while let Some(piece) = stream.next().await {
        read.extend_from_slice(&piece.unwrap());
    }
    assert!(read == data);
}

/// A GET of an object of many segments (appends) opens its shard files a batch of parts at
/// a time while the batch before is read: it never holds every part's files open at once.
/// (Before, a 10,000-segment GET opened all 90,000 shard files before its first byte.)
#[tokio::test]
async fn a_get_of_many_segments_holds_a_few_batches_of_files_open() {
    const SEGMENTS: usize = 400;
    let sim = CrashController::new(9);
    let faulty: Vec<Arc<FaultyDrive>> = sim.drives().into_iter().map(FaultyDrive::new).collect();
    let drives = faulty.iter().map(|d| d.clone() as Arc<dyn Drive>).collect();
    let set = ErasureSet::new(0, drives, 3, 1 << 20).unwrap();
    let store = ObjectStore::new(vec![set], "calls");
    let bucket = BucketName::parse("calls").unwrap();
    store.create_bucket(&bucket).await.unwrap();
    let key = ObjectKey::parse("log").unwrap();
    let mut whole = Vec::new();
    for i in 0..SEGMENTS {
        let segment = Bytes::from(vec![i as u8; 1 << 10]);
        let appended = store.append_object(
            &bucket,
            &key,
            whole.len() as u64,
            body(segment.clone()),
            PutOptions::default(),
        );
        appended.await.unwrap();
        whole.extend_from_slice(&segment);
    }

    let got = store.get_object(&bucket, &key, GetOptions::default());
    let mut stream = got.await.unwrap().body;
    let mut read = Vec::new();
    while let Some(piece) = stream.next().await {
        read.extend_from_slice(&piece.unwrap());
    }
    assert!(read == whole, "the object reads back whole");
    // Batches of 64 parts, two opened ahead of the one being read: one shard file per part
    // on each drive, a few more for the reads ahead across the parts' ends.
    let most = faulty.iter().map(|d| d.most_open_files()).max().unwrap();
    assert!(
        most > 0 && most <= 3 * 64 + 8,
        "{most} shard files open on one drive"
    );
    // The parity shards of a healthy set are never opened.
    let parity: Vec<usize> = faulty[6..].iter().map(|d| d.most_open_files()).collect();
    assert_eq!(parity, [0, 0, 0], "parity shard files opened");

    // A data drive whose shards cannot be opened: the parity shards are opened instead,
    // when the reads need them, and the object still reads whole.
    faulty[0].fail(&[Call::OpenShard]);
    let got = store.get_object(&bucket, &key, GetOptions::default());
    let mut stream = got.await.unwrap().body;
    let mut read = Vec::new();
    while let Some(piece) = stream.next().await {
        read.extend_from_slice(&piece.unwrap());
    }
    assert!(read == whole, "the object reads back whole from parity");
    let parity: Vec<usize> = faulty[6..].iter().map(|d| d.most_open_files()).collect();
    assert!(parity[0] > 0, "{parity:?}");
}
