//! Blank drives are no evidence: a drive that joined its set empty (formatted into a failed
//! drive's place) and has not been healed since never counts as saying that a record is
//! gone — not for objects, versions, uploads, buckets or deployment-wide records. Beyond the
//! parity count of such drives the answer is "unavailable" (503), nothing is purged, and
//! when the real disks return every record reads back whole.
//!
//! In process, over nine simulated drives (one 6+3 set); `SimDrive::replace_blank` is what
//! the server does with an empty folder in a drive's place.

mod in_process;

use std::sync::Arc;

use in_process::*;
use strata::erasure::ErasureError;
use strata::object::{
    BucketName, CompleteOptions, CompletedPart, GetOptions, HealDepth, HealReport, HealScope,
    ObjectError, ObjectStore, PutOptions, UploadOptions, Versioning,
};
use strata::storage::sim::CrashController;
use strata::storage::{Drive, MetaOp, MetaTable, OfflineDrive};

const DEPLOYMENT_ID: &str = "blank-drives";

fn bucket(name: &str) -> BucketName {
    bucket_named(name)
}

fn store_on(drives: Vec<Arc<dyn Drive>>) -> Arc<ObjectStore> {
    store_over(drives, DEPLOYMENT_ID)
}

fn unavailable<T: std::fmt::Debug>(result: Result<T, ObjectError>, what: &str) {
    match result {
        Err(ObjectError::Unavailable(ErasureError::ReadQuorum)) => {}
        other => panic!("{what}: expected 503 (no read quorum), got {other:?}"),
    }
}

async fn read(store: &ObjectStore, b: &str, k: &str, version: Option<&str>) -> Vec<u8> {
    read_all(store, &bucket(b), &key(k), version)
        .await
        .unwrap_or_else(|e| panic!("GET {b}/{k} {version:?}: {e}"))
}

async fn heal_everything(store: &ObjectStore) -> HealReport {
    let mut report = store.heal_buckets().await.expect("heal buckets");
    let objects = store
        .heal_objects(&HealScope::default(), HealDepth::Quick, None, |_| {})
        .await
        .expect("heal objects");
    report.add(&objects);
    report.add(
        &store
            .heal_uploads(&HealScope::default())
            .await
            .expect("heal uploads"),
    );
    report
}

/// Everything a set holds, written over nine healthy drives.
struct Fixture {
    sim: CrashController,
    /// (key, bytes) in bucket `plain`.
    objects: Vec<(String, Vec<u8>)>,
    /// (version id, bytes) of key `ckpt` in bucket `versioned`, oldest first; then a delete
    /// marker hides them.
    versions: Vec<(String, Vec<u8>)>,
    upload_id: String,
}

impl Fixture {
    async fn new() -> Self {
        let sim = CrashController::new(9);
        let store = store_on(sim.drives());
        store.create_bucket(&bucket("plain")).await.unwrap();
        let mut objects = Vec::new();
        for (name, size, seed) in [("small", 1000, 1), ("blocks", 3 * BLOCK_SIZE + 77, 2)] {
            let data = payload(size, seed);
            store
                .put_object(
                    &bucket("plain"),
                    &key(name),
                    body(&data),
                    PutOptions::default(),
                )
                .await
                .unwrap();
            objects.push((name.to_string(), data));
        }
        store.create_bucket(&bucket("versioned")).await.unwrap();
        store
            .set_versioning(&bucket("versioned"), Versioning::Enabled)
            .await
            .unwrap();
        let mut versions = Vec::new();
        for (size, seed) in [(2 * BLOCK_SIZE, 3), (500, 4)] {
            let data = payload(size, seed);
            let record = store
                .put_object(
                    &bucket("versioned"),
                    &key("ckpt"),
                    body(&data),
                    PutOptions::default(),
                )
                .await
                .unwrap();
            versions.push((record.version_id.clone().unwrap(), data));
        }
        store
            .delete_object(&bucket("versioned"), &key("ckpt"), None)
            .await
            .unwrap();
        let (upload_id, _) = store
            .create_multipart_upload(&bucket("plain"), &key("upload"), UploadOptions::default())
            .await
            .unwrap();
        store
            .upload_part(
                &bucket("plain"),
                &key("upload"),
                &upload_id,
                1,
                body(&payload(5000, 5)),
                PutOptions::default(),
            )
            .await
            .unwrap();
        store
            .system_put("users/trainer", b"v1".to_vec())
            .await
            .unwrap();
        sim.sync();
        Self {
            sim,
            objects,
            versions,
            upload_id,
        }
    }

    /// Every record of the fixture reads back whole from `store`.
    async fn assert_whole(&self, store: &ObjectStore, when: &str) {
        let names: Vec<String> = store
            .list_buckets()
            .await
            .unwrap_or_else(|e| panic!("{when}: ListBuckets: {e}"))
            .into_iter()
            .map(|b| b.name)
            .collect();
        assert_eq!(names, ["plain", "versioned"], "{when}: buckets");
        for (name, data) in &self.objects {
            assert!(
                read(store, "plain", name, None).await == *data,
                "{when}: plain/{name} differs"
            );
        }
        for (id, data) in &self.versions {
            assert!(
                read(store, "versioned", "ckpt", Some(id)).await == *data,
                "{when}: version {id} differs"
            );
        }
        match store
            .get_object(&bucket("versioned"), &key("ckpt"), GetOptions::default())
            .await
        {
            Err(ObjectError::DeleteMarker { .. }) => {}
            other => panic!(
                "{when}: the delete marker should hide ckpt, got {:?}",
                other.map(|r| r.record)
            ),
        }
        let parts = store
            .list_parts(&bucket("plain"), &key("upload"), &self.upload_id, 0, 100)
            .await
            .unwrap_or_else(|e| panic!("{when}: ListParts: {e}"));
        assert_eq!(parts.parts.len(), 1, "{when}: the upload's part");
        assert_eq!(
            store.system_get("users/trainer").await.unwrap().as_deref(),
            Some(&b"v1"[..]),
            "{when}: the system record"
        );
    }
}

/// Copies the bucket records from a drive that holds them onto `targets`, as the bucket
/// step of a heal pass would before it reaches the objects.
async fn copy_bucket_records(sim: &CrashController, from: usize, targets: &[usize]) {
    for name in ["plain", "versioned"] {
        let value = sim
            .drive(from)
            .meta_get(MetaTable::Buckets, name.as_bytes().to_vec())
            .await
            .unwrap()
            .expect("bucket record");
        for &target in targets {
            let put = MetaOp::Put {
                table: MetaTable::Buckets,
                key: name.as_bytes().to_vec(),
                value: value.clone(),
            };
            sim.drive(target).meta_apply(vec![put]).await.unwrap();
        }
    }
}

#[tokio::test]
async fn four_blank_drives_make_every_lookup_unavailable_and_purge_nothing() {
    let fixture = Fixture::new().await;
    let originals = fixture.sim.fork();
    for blank in 0..4 {
        fixture.sim.drive(blank).replace_blank();
    }
    let store = store_on(fixture.sim.drives());

    // Buckets and deployment-wide records: 5 drives hold them, 4 know nothing.
    unavailable(store.bucket(&bucket("plain")).await, "bucket lookup");
    unavailable(store.list_buckets().await, "ListBuckets");
    unavailable(store.system_get("users/trainer").await, "system record");

    // Objects, versions and uploads, with the bucket records already back on the blank
    // drives (as midway through a heal): still no vote from them.
    copy_bucket_records(&fixture.sim, 5, &[0, 1, 2, 3]).await;
    let store = store_on(fixture.sim.drives());
    for (name, _) in &fixture.objects {
        let get = store
            .get_object(&bucket("plain"), &key(name), GetOptions::default())
            .await;
        unavailable(get.map(|r| r.record), &format!("GET plain/{name}"));
    }
    let old_version = Some(fixture.versions[0].0.as_str());
    unavailable(
        store
            .head_object(&bucket("versioned"), &key("ckpt"), old_version)
            .await,
        "HEAD of a version",
    );
    unavailable(
        store
            .list_parts(&bucket("plain"), &key("upload"), &fixture.upload_id, 0, 100)
            .await
            .map(|p| p.parts.len()),
        "ListParts",
    );

    // Healing decides nothing from blank drives: everything is left for later.
    let report = heal_everything(&store).await;
    assert_eq!(report.stale_purged, 0, "{report:?}");
    assert!(report.unresolved > 0, "{report:?}");

    // The real disks come back: nothing was lost on the five that stayed.
    let mut drives = originals.drives()[..4].to_vec();
    drives.extend_from_slice(&fixture.sim.drives()[4..]);
    fixture
        .assert_whole(&store_on(drives), "after the originals returned")
        .await;
}

#[tokio::test]
async fn a_deleted_object_is_purged_only_once_its_delete_is_decided() {
    let fixture = Fixture::new().await;
    let (plain, small) = (bucket("plain"), key("small"));
    // Drives 0-2 are away while `small` is deleted; they come back holding it.
    let away = fixture.sim.fork();
    let mut drives: Vec<Arc<dyn Drive>> = (0..3)
        .map(|i| Arc::new(OfflineDrive::new(format!("away{i}"))) as Arc<dyn Drive>)
        .collect();
    drives.extend_from_slice(&fixture.sim.drives()[3..]);
    store_on(drives)
        .delete_object(&plain, &small, None)
        .await
        .unwrap();
    let back = |sim: &CrashController| {
        let mut drives = away.drives()[..3].to_vec();
        drives.extend_from_slice(&sim.drives()[3..]);
        store_on(drives)
    };

    // Four of the drives that saw the delete are now blank: only two with the history say
    // "gone", three stale ones say "here". Undecided: no purge, no answer.
    let four_blank = fixture.sim.fork();
    for blank in 3..7 {
        four_blank.drive(blank).replace_blank();
    }
    copy_bucket_records(&four_blank, 7, &[3, 4, 5, 6]).await;
    let store = back(&four_blank);
    unavailable(store.head_object(&plain, &small, None).await, "HEAD");
    let report = heal_everything(&store).await;
    assert_eq!(report.stale_purged, 0, "{report:?}");
    let stale = away
        .drive(0)
        .meta_get(MetaTable::Objects, b"plain\0small".to_vec())
        .await
        .unwrap();
    assert!(
        stale.is_some(),
        "the stale record must stay while undecided"
    );

    // One blank drive: five drives with the history hold the delete's tombstone, three stale
    // ones the object. A delete that reached only five drives (its undo still to come) looks
    // the same, so nothing is decided from it: no answer, no purge, never the object.
    let one_blank = fixture.sim.fork();
    one_blank.drive(3).replace_blank();
    copy_bucket_records(&one_blank, 7, &[3]).await;
    let store = back(&one_blank);
    unavailable(store.head_object(&plain, &small, None).await, "HEAD");
    let report = heal_everything(&store).await;
    assert_eq!(report.stale_purged, 0, "{report:?}");
    assert!(report.unresolved > 0, "{report:?}");

    // Deleting it again decides it: every drive takes the new tombstone, and heal clears
    // the stale copies it stands over.
    store.delete_object(&plain, &small, None).await.unwrap();
    assert!(matches!(
        store.head_object(&plain, &small, None).await,
        Err(ObjectError::NoSuchKey)
    ));
    let report = heal_everything(&store).await;
    assert!(report.stale_purged >= 3, "{report:?}");
    assert!(matches!(
        store.head_object(&plain, &small, None).await,
        Err(ObjectError::NoSuchKey)
    ));
    for drive in 0..3 {
        let stale = away
            .drive(drive)
            .meta_get(MetaTable::Objects, b"plain\0small".to_vec())
            .await
            .unwrap();
        assert!(
            stale.is_none(),
            "drive {drive} still holds the deleted object"
        );
    }
}

#[tokio::test]
async fn three_blank_drives_are_healed_then_stand_in_for_three_others() {
    let fixture = Fixture::new().await;
    for blank in 0..3 {
        fixture.sim.drive(blank).replace_blank();
    }
    let store = store_on(fixture.sim.drives());
    fixture
        .assert_whole(&store, "with three blank drives")
        .await;

    let report = heal_everything(&store).await;
    assert_eq!(report.unresolved, 0, "{report:?}");
    assert_eq!(report.stale_purged, 0, "{report:?}");
    assert!(report.records_repaired > 0, "{report:?}");
    for blank in 0..3 {
        assert!(fixture.sim.drive(blank).is_unhealed());
        fixture.sim.drive(blank).mark_healed().await.unwrap();
    }

    // The healed drives now carry the set: three of the others go away.
    let mut drives = fixture.sim.drives()[..6].to_vec();
    for i in 6..9 {
        drives.push(Arc::new(OfflineDrive::new(format!("gone{i}"))));
    }
    let store = store_on(drives);
    fixture
        .assert_whole(&store, "healed drives standing in for three others")
        .await;
    // The upload's part data was rebuilt too: it completes, and reads back, from them.
    let (plain, upload) = (bucket("plain"), key("upload"));
    let part = store
        .list_parts(&plain, &upload, &fixture.upload_id, 0, 100)
        .await
        .unwrap()
        .parts
        .remove(0);
    let options = CompleteOptions {
        parts: vec![CompletedPart {
            number: 1,
            etag: part.info.etag,
        }],
        ..CompleteOptions::default()
    };
    store
        .complete_multipart_upload(&plain, &upload, &fixture.upload_id, options)
        .await
        .unwrap();
    assert!(read(&store, "plain", "upload", None).await == payload(5000, 5));
}

#[tokio::test]
async fn an_unhealed_drive_answers_unknown_for_what_it_lacks_and_lists_nothing() {
    let sim = CrashController::new(1);
    let drive = sim.drive(0);
    drive.replace_blank();
    let put = MetaOp::Put {
        table: MetaTable::Objects,
        key: b"written-since".to_vec(),
        value: b"v".to_vec(),
    };
    drive.meta_apply(vec![put]).await.unwrap();
    // What it was given since it joined, it has; of anything else it knows nothing.
    let held = drive
        .meta_get(MetaTable::Objects, b"written-since".to_vec())
        .await
        .unwrap();
    assert_eq!(held.as_deref(), Some(&b"v"[..]));
    for table in [
        MetaTable::Objects,
        MetaTable::Versions,
        MetaTable::Uploads,
        MetaTable::Buckets,
        MetaTable::System,
    ] {
        let answer = drive.meta_get(table, b"anything".to_vec()).await;
        assert!(
            matches!(answer, Err(strata::storage::DriveError::Unhealed(_))),
            "{table:?}: {answer:?}"
        );
    }
    let scan = drive
        .meta_scan(MetaTable::Objects, std::ops::Bound::Unbounded, vec![], 10)
        .await;
    assert!(matches!(
        scan,
        Err(strata::storage::DriveError::Unhealed(_))
    ));
    drive.mark_healed().await.unwrap();
    assert!(!drive.is_unhealed());
    let absent = drive
        .meta_get(MetaTable::Objects, b"anything".to_vec())
        .await
        .unwrap();
    assert!(absent.is_none(), "a healed drive says what is absent");
}
