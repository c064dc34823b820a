//! What a write quorum promises, under failures placed on chosen drives: an acknowledged
//! write is whole (data and record) on a write quorum of drives; a read never answers a
//! version that a newer, possibly acknowledged one supersedes; a settings change answered
//! with an error is in force nowhere, now or after a restart and a heal.
//!
//! In process, over nine simulated drives (one 6+3 set), each behind a `FaultyDrive`.

use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use strata::body::ByteStream;
use strata::erasure::{ErasureError, ErasureSet};
use strata::object::{
    BucketName, CompleteOptions, CompletedPart, GetOptions, HealDepth, ObjectError, ObjectKey,
    ObjectStore, PutOptions, UploadOptions, Versioning, WriteCondition,
};
use strata::storage::faulty::{Call, FaultyDrive};
use strata::storage::sim::CrashController;
use strata::storage::{Drive, OfflineDrive};

const KIB: usize = 1024;
const BLOCK_SIZE: usize = 64 * KIB;
/// Above the inline limit: the data goes to shard files.
const LARGE: usize = 300 * KIB;
const BUCKET: &str = "quorum";

fn bucket() -> BucketName {
    BucketName::parse(BUCKET).unwrap()
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::parse(name).unwrap()
}

fn body(data: &[u8]) -> ByteStream {
    let data = Bytes::copy_from_slice(data);
    Box::pin(futures::stream::iter([Ok(data)]))
}

fn payload(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(13) ^ seed)
        .collect()
}

fn is_unavailable<T>(result: &Result<T, ObjectError>) -> bool {
    matches!(
        result,
        Err(ObjectError::Erasure(
            ErasureError::ReadQuorum | ErasureError::WriteQuorum { .. }
        ))
    )
}

/// Nine simulated drives behind fault switches, and stores over them.
struct Drives {
    faulty: Vec<Arc<FaultyDrive>>,
}

impl Drives {
    fn new() -> Self {
        let sim = CrashController::new(9);
        let faulty = sim.drives().into_iter().map(FaultyDrive::new).collect();
        Self { faulty }
    }

    /// A store over the drives; `away` ones are offline for it.
    fn store(&self, away: &[usize]) -> Arc<ObjectStore> {
        let drives = (self.faulty.iter().enumerate())
            .map(|(i, drive)| match away.contains(&i) {
                true => Arc::new(OfflineDrive::new(format!("away{i}"))) as Arc<dyn Drive>,
                false => drive.clone() as Arc<dyn Drive>,
            })
            .collect();
        let set = ErasureSet::new(0, drives, 3, BLOCK_SIZE).expect("6+3 set");
        ObjectStore::new(vec![set], "quorum-tests")
    }

    fn fail(&self, drives: impl IntoIterator<Item = usize>, calls: &[Call]) {
        for i in drives {
            self.faulty[i].fail(calls);
        }
    }

    fn recover(&self) {
        self.faulty.iter().for_each(|d| d.recover());
    }
}

/// PUT; the ETag.
async fn put(store: &ObjectStore, name: &str, data: &[u8]) -> Result<String, ObjectError> {
    let options = PutOptions::default();
    store
        .put_object(&bucket(), &key(name), body(data), options)
        .await
        .map(|record| record.etag)
}

async fn read(store: &ObjectStore, name: &str) -> Result<Vec<u8>, ObjectError> {
    let result = store
        .get_object(&bucket(), &key(name), GetOptions::default())
        .await?;
    let mut bytes = Vec::new();
    let mut stream = result.body;
    while let Some(piece) = stream.next().await {
        bytes.extend_from_slice(&piece.expect("body"));
    }
    Ok(bytes)
}

async fn with_bucket(versioned: bool) -> (Drives, Arc<ObjectStore>) {
    let drives = Drives::new();
    let store = drives.store(&[]);
    store.create_bucket(&bucket()).await.unwrap();
    if versioned {
        store
            .set_versioning(&bucket(), Versioning::Enabled)
            .await
            .unwrap();
    }
    (drives, store)
}

/// Shards on drives 3-8 (three failed to place theirs), records refused by drive 8: six
/// drives took each, only five took both. The write is refused and the old version stays.
#[tokio::test]
async fn shards_and_records_on_different_drives_do_not_make_a_quorum() {
    for versioned in [false, true] {
        let (drives, store) = with_bucket(versioned).await;
        let old = payload(LARGE, 1);
        put(&store, "ckpt", &old).await.unwrap();

        drives.fail(0..3, &[Call::CommitStaged]);
        drives.fail([8], &[Call::MetaApply]);
        let new = put(&store, "ckpt", &payload(LARGE, 2)).await;
        assert!(is_unavailable(&new), "versioned {versioned}: {new:?}");
        drives.recover();
        assert_eq!(
            read(&store, "ckpt").await.unwrap(),
            old,
            "versioned {versioned}"
        );

        // With only the shard placement failing, the write stands on the six drives that
        // hold both, and the other three keep the old record.
        drives.fail(0..3, &[Call::CommitStaged]);
        let newer = payload(LARGE, 3);
        put(&store, "ckpt", &newer).await.unwrap();
        drives.recover();
        assert_eq!(read(&store, "ckpt").await.unwrap(), newer);
        // The three without the shards can go: the six holders serve it alone.
        assert_eq!(
            read(&drives.store(&[0, 1, 2]), "ckpt").await.unwrap(),
            newer
        );
    }
}

/// The same for a multipart part: its record goes only where its shards are.
#[tokio::test]
async fn a_part_counts_only_drives_that_hold_its_shards_and_record() {
    let (drives, store) = with_bucket(false).await;
    let (upload_id, _) = store
        .create_multipart_upload(&bucket(), &key("big"), UploadOptions::default())
        .await
        .unwrap();
    drives.fail(0..3, &[Call::CommitStaged]);
    drives.fail([8], &[Call::MetaApply]);
    let part = store
        .upload_part(
            &bucket(),
            &key("big"),
            &upload_id,
            1,
            body(&payload(LARGE, 4)),
            PutOptions::default(),
        )
        .await;
    assert!(is_unavailable(&part), "{part:?}");
    drives.recover();
    let listed = store
        .list_parts(&bucket(), &key("big"), &upload_id, 0, 10)
        .await
        .unwrap();
    assert!(listed.parts.is_empty(), "a refused part is not listed");

    // Placed on 3-8 only: the part stands there, and completion commits the object on
    // those drives alone.
    drives.fail(0..3, &[Call::CommitStaged]);
    let data = payload(LARGE, 5);
    let part = store
        .upload_part(
            &bucket(),
            &key("big"),
            &upload_id,
            1,
            body(&data),
            PutOptions::default(),
        )
        .await
        .unwrap();
    drives.recover();
    let options = CompleteOptions {
        parts: vec![CompletedPart {
            number: 1,
            etag: part.etag,
        }],
        ..CompleteOptions::default()
    };
    store
        .complete_multipart_upload(&bucket(), &key("big"), &upload_id, options)
        .await
        .unwrap();
    assert_eq!(read(&drives.store(&[0, 1, 2]), "big").await.unwrap(), data);
    let record = drives.faulty[0]
        .meta_get(strata::storage::MetaTable::Objects, b"quorum\0big".to_vec())
        .await
        .unwrap();
    assert!(record.is_none(), "a drive without the shards has no record");
}

/// A newer version acknowledged on six drives, one of which is lost: five hold it, eight
/// hold the older one. Reads, conditional writes and heals must not go back to the older.
#[tokio::test]
async fn a_newer_acknowledged_version_is_never_passed_over() {
    for versioned in [false, true] {
        let (drives, store) = with_bucket(versioned).await;
        let old = payload(LARGE, 6);
        let old_etag = put(&store, "ckpt", &old).await.unwrap();
        drives.fail(6..9, &[Call::MetaApply]);
        let new = payload(LARGE, 7);
        put(&store, "ckpt", &new).await.unwrap();
        drives.recover();

        let degraded = drives.store(&[0]);
        let got = read(&degraded, "ckpt").await;
        assert!(
            is_unavailable(&got),
            "versioned {versioned}: must be 503, got {:?}",
            got.map(|b| b == old)
        );
        let options = PutOptions {
            condition: Some(WriteCondition::IfMatch(old_etag)),
            ..PutOptions::default()
        };
        let overwrite = degraded
            .put_object(&bucket(), &key("ckpt"), body(b"x"), options)
            .await;
        assert!(
            is_unavailable(&overwrite),
            "versioned {versioned}: If-Match on the old ETag"
        );
        let healed = degraded
            .heal_object(&bucket(), &key("ckpt"), HealDepth::Quick)
            .await
            .unwrap();
        assert_eq!(healed.unresolved, 1, "versioned {versioned}: {healed:?}");

        // The lost drive is back: the acknowledged version is there.
        assert_eq!(
            read(&store, "ckpt").await.unwrap(),
            new,
            "versioned {versioned}"
        );
    }
}

/// A bucket settings change and a deployment-wide record change that miss the write quorum
/// are answered with an error and are in force nowhere: not on the next request, not after
/// a restart, not after a heal, even where a drive missed the undo.
#[tokio::test]
async fn settings_changes_answered_with_an_error_are_in_force_nowhere() {
    let (drives, store) = with_bucket(false).await;
    store
        .system_put("users/trainer", b"enabled".to_vec())
        .await
        .unwrap();
    let policy = |store: Arc<ObjectStore>| async move {
        store.bucket(&bucket()).await.unwrap().settings.policy
    };

    // Four drives refuse the change; two of those that took it lose the undo.
    drives.fail(5..9, &[Call::MetaApply]);
    for i in 0..2 {
        drives.faulty[i].fail_after(Call::MetaApply, 1);
    }
    let changed = store
        .update_bucket_settings(&bucket(), |settings| {
            settings.policy = Some("public".into());
            Ok(())
        })
        .await;
    assert!(is_unavailable(&changed), "{changed:?}");
    drives.recover();
    for i in 0..2 {
        drives.faulty[i].fail_after(Call::MetaApply, 1);
    }
    drives.fail(5..9, &[Call::MetaApply]);
    let disabled = store
        .system_put("users/trainer", b"disabled".to_vec())
        .await;
    assert!(is_unavailable(&disabled), "{disabled:?}");
    drives.recover();

    assert_eq!(policy(store.clone()).await, None, "the next request");
    let restarted = drives.store(&[]);
    assert_eq!(policy(restarted.clone()).await, None, "after a restart");
    // Even with three drives that refused the change away, the two that kept it cannot
    // put it in force.
    assert_eq!(policy(drives.store(&[6, 7, 8])).await, None);
    let report = restarted.heal_buckets().await.unwrap();
    assert!(report.records_repaired >= 2, "{report:?}");
    assert_eq!(policy(drives.store(&[])).await, None, "after a heal");
    assert_eq!(
        policy(drives.store(&[2, 3, 4])).await,
        None,
        "the heal reached 0 and 1"
    );
    let user = drives.store(&[2, 3, 4]).system_get("users/trainer").await;
    assert_eq!(user.unwrap().as_deref(), Some(&b"enabled"[..]));
}
