//! A property of data placement and commit, over random per-drive failure patterns: a write
//! that is acknowledged is whole (its shard files and its record) on at least a write quorum
//! of drives; a write that is refused leaves the previous version reading back unchanged.

use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::record::{self, object_key, ObjectRecord};
use super::{BucketName, GetOptions, ObjectKey, ObjectStore, PutOptions, Versioning};
use crate::erasure::ErasureSet;
use crate::storage::faulty::{Call, FaultyDrive};
use crate::storage::sim::CrashController;
use crate::storage::{DataDir, Drive, MetaTable};

const PATTERNS: u64 = 60;
const SIZE: usize = 200 << 10;

fn payload(seed: u64) -> Bytes {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..SIZE).map(|_| rng.random::<u8>()).collect()
}

async fn read(store: &ObjectStore, bucket: &BucketName, key: &ObjectKey) -> Option<Bytes> {
    let result = store
        .get_object(bucket, key, GetOptions::default())
        .await
        .ok()?;
    let mut bytes = Vec::new();
    let mut body = result.body;
    while let Some(piece) = body.next().await {
        bytes.extend_from_slice(&piece.ok()?);
    }
    Some(bytes.into())
}

/// Drives that hold both the record of `data_id` as their current version and its shards.
async fn whole_on(
    drives: &[Arc<FaultyDrive>],
    bucket: &BucketRecordIds,
    data_id: uuid::Uuid,
) -> usize {
    let mut whole = 0;
    for drive in drives {
        let held = drive
            .meta_get(MetaTable::Objects, object_key(&bucket.name, "ckpt"))
            .await;
        let current = match held {
            Ok(Some(bytes)) => record::decode::<ObjectRecord>(&bytes).ok(),
            _ => None,
        };
        let dir = DataDir {
            bucket_id: bucket.id.clone(),
            data_id,
        };
        let shards = drive.open_shard(&dir, "part.1").await.is_ok();
        if current.is_some_and(|r| r.data_id == data_id) && shards {
            whole += 1;
        }
    }
    whole
}

/// One 6+3 set of simulated drives, each behind a [`FaultyDrive`], holding bucket `property`.
struct FaultySet {
    _sim: CrashController,
    faulty: Vec<Arc<FaultyDrive>>,
    store: Arc<ObjectStore>,
    bucket: BucketName,
    record: super::record::BucketRecord,
}

async fn faulty_set() -> FaultySet {
    let sim = CrashController::new(9);
    let faulty: Vec<Arc<FaultyDrive>> = sim.drives().into_iter().map(FaultyDrive::new).collect();
    let drives = faulty.iter().map(|d| d.clone() as Arc<dyn Drive>).collect();
    let set = ErasureSet::new(0, drives, 3, 64 << 10).unwrap();
    let store = ObjectStore::new(vec![set], "property");
    let bucket = BucketName::parse("property").unwrap();
    let record = store.create_bucket(&bucket).await.unwrap();
    FaultySet {
        _sim: sim,
        faulty,
        store,
        bucket,
        record,
    }
}

struct BucketRecordIds {
    name: String,
    id: String,
}

#[tokio::test]
async fn acknowledged_writes_are_whole_on_a_quorum_and_refused_ones_change_nothing() {
    let (mut acknowledged, mut refused) = (0, 0);
    for pattern in 0..PATTERNS {
        let mut rng = StdRng::seed_from_u64(pattern);
        let FaultySet {
            _sim,
            faulty,
            store,
            bucket,
            record,
        } = faulty_set().await;
        if pattern % 2 == 1 {
            store
                .set_versioning(&bucket, Versioning::Enabled)
                .await
                .unwrap();
        }
        let ids = BucketRecordIds {
            name: record.name.clone(),
            id: record.id.clone(),
        };
        let key = ObjectKey::parse("ckpt").unwrap();
        let old = payload(pattern * 2);
        let body = |data: Bytes| -> crate::body::ByteStream {
            Box::pin(futures::stream::iter([Ok(data)]))
        };
        store
            .put_object(&bucket, &key, body(old.clone()), PutOptions::default())
            .await
            .unwrap();

        for drive in &faulty {
            for (call, chance) in [
                (Call::CreateStagedFile, 0.1),
                (Call::CommitStaged, 0.2),
                (Call::MetaApply, 0.2),
            ] {
                if rng.random_bool(chance) {
                    drive.fail(&[call]);
                }
            }
        }
        let new = payload(pattern * 2 + 1);
        let written = store
            .put_object(&bucket, &key, body(new.clone()), PutOptions::default())
            .await;
        faulty.iter().for_each(|d| d.recover());
        match written {
            Ok(record) => {
                acknowledged += 1;
                let whole = whole_on(&faulty, &ids, record.data_id).await;
                assert!(
                    whole >= 6,
                    "pattern {pattern}: acknowledged, whole on {whole}"
                );
                assert!(
                    read(&store, &bucket, &key).await == Some(new),
                    "pattern {pattern}"
                );
            }
            Err(_) => {
                refused += 1;
                let got = read(&store, &bucket, &key).await;
                assert!(
                    got == Some(old),
                    "pattern {pattern}: refused, old version changed"
                );
            }
        }
    }
    // Both outcomes are exercised.
    assert!(
        acknowledged > 10 && refused > 10,
        "{acknowledged} / {refused}"
    );
}

/// A delete that misses its write quorum is put back on the drives that took it, but not at
/// once: a reader in between must not find the object gone, or it could find it back after
/// the undo. Here the undo never comes (the drives that took the delete fail from then on,
/// as after a crash): the object must still read back whole, in a versioned bucket too.
#[tokio::test]
async fn a_delete_refused_for_want_of_quorum_is_never_seen_done() {
    for versioned in [false, true] {
        let FaultySet {
            _sim,
            faulty,
            store,
            bucket,
            ..
        } = faulty_set().await;
        if versioned {
            (store.set_versioning(&bucket, Versioning::Enabled))
                .await
                .unwrap();
        }
        let key = ObjectKey::parse("ckpt").unwrap();
        let data = payload(7);
        let body: crate::body::ByteStream = Box::pin(futures::stream::iter([Ok(data.clone())]));
        (store.put_object(&bucket, &key, body, PutOptions::default()))
            .await
            .unwrap();

        // Five drives take the delete and then fail its undo; four refuse it.
        for (i, drive) in faulty.iter().enumerate() {
            match i < 5 {
                true => drive.fail_after(Call::MetaApply, 1),
                false => drive.fail(&[Call::MetaApply]),
            }
        }
        let deleted = store.delete_object(&bucket, &key, None).await;
        assert!(deleted.is_err(), "versioned {versioned}: {deleted:?}");
        faulty.iter().for_each(|d| d.fail(&[Call::MetaApply]));
        assert_eq!(
            read(&store, &bucket, &key).await,
            Some(data),
            "versioned {versioned}: a refused delete was taken for done"
        );
    }
}

/// Drives that hold any record of `key` in `bucket`.
async fn records_on(drives: &[Arc<FaultyDrive>], bucket: &str, key: &str) -> usize {
    let mut held = 0;
    for drive in drives {
        let got = drive
            .meta_get(MetaTable::Objects, object_key(bucket, key))
            .await;
        held += usize::from(matches!(got, Ok(Some(_))));
    }
    held
}

/// A multipart upload whose record misses its write quorum is refused, and the drives that
/// took its record are put back as they were: none keeps an upload that was never begun.
#[tokio::test]
async fn an_upload_begun_below_its_write_quorum_leaves_no_record() {
    let FaultySet {
        _sim,
        faulty,
        store,
        bucket,
        ..
    } = faulty_set().await;
    let key = ObjectKey::parse("ckpt").unwrap();
    // Five of nine drives take the record: the write quorum of 6+3 is six.
    for drive in &faulty[..4] {
        drive.fail(&[Call::MetaApply]);
    }
    let begun = store
        .create_multipart_upload(&bucket, &key, Default::default())
        .await;
    faulty.iter().for_each(|d| d.recover());
    assert!(begun.is_err(), "an upload begun on five drives of nine");
    for drive in &faulty {
        let uploads = drive
            .meta_scan(
                MetaTable::Uploads,
                std::ops::Bound::Unbounded,
                Vec::new(),
                10,
            )
            .await
            .unwrap();
        assert!(
            uploads.is_empty(),
            "{} keeps {} upload records",
            drive.label(),
            uploads.len()
        );
    }
}

/// A delete that reaches a quorum but not every drive leaves its tombstone (readers and
/// listings skip it); heal then removes the version the missed drives still hold, then the
/// tombstones, and the object stays deleted throughout. A delete that reaches every drive
/// leaves no record at all.
#[tokio::test]
async fn a_delete_missed_by_some_drives_stays_deleted_and_heal_clears_its_tombstone() {
    let FaultySet {
        _sim,
        faulty,
        store,
        bucket,
        ..
    } = faulty_set().await;
    let put = |name: &'static str| {
        let store = &store;
        let bucket = &bucket;
        async move {
            let body: crate::body::ByteStream = Box::pin(futures::stream::iter([Ok(payload(3))]));
            let key = ObjectKey::parse(name).unwrap();
            (store.put_object(bucket, &key, body, PutOptions::default()))
                .await
                .unwrap();
            key
        }
    };

    let everywhere = put("everywhere").await;
    store
        .delete_object(&bucket, &everywhere, None)
        .await
        .unwrap();
    store.tidied().await;
    assert_eq!(records_on(&faulty, "property", "everywhere").await, 0);

    let key = put("ckpt").await;
    faulty[6..].iter().for_each(|d| d.fail(&[Call::MetaApply]));
    store.delete_object(&bucket, &key, None).await.unwrap();
    faulty.iter().for_each(|d| d.recover());
    assert_eq!(
        records_on(&faulty, "property", "ckpt").await,
        9,
        "six tombstones, three stale copies"
    );
    assert_eq!(read(&store, &bucket, &key).await, None);
    let listed = store
        .list_objects(
            &bucket,
            &super::ListQuery {
                max_keys: 1000,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(listed.entries.is_empty(), "{:?}", listed.entries);

    let report = store
        .heal_object(&bucket, &key, super::HealDepth::Quick)
        .await
        .unwrap();
    assert_eq!(report.stale_purged, 9, "{report:?}");
    assert_eq!(records_on(&faulty, "property", "ckpt").await, 0);
    assert_eq!(read(&store, &bucket, &key).await, None);
}

/// A node reads the shards its own drives hold first: with this node's drives holding three
/// data shards and three parity shards, the other nodes' three data shards are not read.
#[tokio::test]
async fn reads_take_this_nodes_shards_first() {
    let FaultySet {
        _sim,
        faulty,
        store,
        bucket,
        ..
    } = faulty_set().await;
    let key = ObjectKey::parse("ckpt").unwrap();
    let data = payload(11);
    let body: crate::body::ByteStream = Box::pin(futures::stream::iter([Ok(data.clone())]));
    (store.put_object(&bucket, &key, body, PutOptions::default()))
        .await
        .unwrap();

    for drive in &faulty[..3] {
        drive.pass_for_remote();
    }
    assert_eq!(read(&store, &bucket, &key).await, Some(data));
    let reads: Vec<usize> = faulty.iter().map(|d| d.shard_reads()).collect();
    assert!(reads[..3].iter().all(|&r| r == 0), "{reads:?}");
    assert!(reads[3..].iter().all(|&r| r > 0), "{reads:?}");
}

/// A record this server cannot decode (one a newer release wrote, during a rolling upgrade)
/// is not an absence: a GET of it fails rather than answering 404, and a create-only PUT is
/// refused and leaves the record as it was, rather than taking the key for free.
#[tokio::test]
async fn a_record_in_a_newer_format_is_neither_absent_nor_overwritten() {
    let FaultySet {
        _sim,
        faulty,
        store,
        bucket,
        ..
    } = faulty_set().await;
    let key = ObjectKey::parse("newer").unwrap();
    let newer = vec![99, 1, 2, 3];
    for drive in &faulty {
        let op = crate::storage::MetaOp::Put {
            table: MetaTable::Objects,
            key: object_key(bucket.as_str(), "newer"),
            value: newer.clone(),
        };
        drive.meta_apply(vec![op]).await.unwrap();
    }

    let got = store.get_object(&bucket, &key, GetOptions::default()).await;
    let got = got.err().expect("the GET of an undecodable record fails");
    assert!(!matches!(got, super::ObjectError::NoSuchKey), "{got:?}");

    let data = payload(13);
    let body: crate::body::ByteStream = Box::pin(futures::stream::iter([Ok(data)]));
    let create_only = PutOptions {
        condition: Some(super::WriteCondition::IfNoneMatch),
        ..PutOptions::default()
    };
    let put = store.put_object(&bucket, &key, body, create_only).await;
    assert!(
        put.is_err(),
        "a create-only PUT over an undecodable record was taken"
    );
    for drive in &faulty {
        let held = drive
            .meta_get(MetaTable::Objects, object_key(bucket.as_str(), "newer"))
            .await;
        assert_eq!(held.unwrap().as_deref(), Some(&newer[..]));
    }
}

/// A drive that missed a bucket's deletion keeps the bucket's uploads; heal takes them away
/// (records and parts) and counts the pass settled only once every drive answered.
#[tokio::test]
async fn heal_ends_the_uploads_a_deleted_bucket_left_on_a_drive_that_missed_it() {
    let FaultySet {
        _sim,
        faulty,
        store,
        bucket,
        ..
    } = faulty_set().await;
    let key = ObjectKey::parse("ckpt").unwrap();
    let (upload_id, _) = (store.create_multipart_upload(&bucket, &key, Default::default()))
        .await
        .unwrap();
    let body: crate::body::ByteStream = Box::pin(futures::stream::iter([Ok(payload(5))]));
    (store.upload_part(&bucket, &key, &upload_id, 1, body, PutOptions::default()))
        .await
        .unwrap();
    let missed = &faulty[0];
    missed.fail(&[Call::MetaApply]);
    store.delete_bucket(&bucket).await.unwrap();
    let upload_key = record::upload_key(bucket.as_str(), "ckpt", &upload_id);
    let held = missed
        .meta_get(MetaTable::Uploads, upload_key.clone())
        .await;
    assert!(
        matches!(held, Ok(Some(_))),
        "the missed drive keeps the upload"
    );

    let pass = store
        .heal_uploads(&super::HealScope::default())
        .await
        .unwrap();
    assert_eq!(
        pass.unresolved, 1,
        "a drive that cannot be written may still hold it"
    );
    missed.recover();
    let pass = store
        .heal_uploads(&super::HealScope::default())
        .await
        .unwrap();
    assert_eq!(pass.unresolved, 0);
    for drive in &faulty {
        let upload = drive.meta_get(MetaTable::Uploads, upload_key.clone()).await;
        assert!(matches!(upload, Ok(None)), "{upload:?}");
        let parts = drive
            .meta_scan(
                MetaTable::Parts,
                std::ops::Bound::Unbounded,
                record::parts_prefix(&upload_id),
                10,
            )
            .await
            .unwrap();
        assert!(parts.is_empty(), "part records stay: {parts:?}");
    }
}

/// Object records under a name no bucket holds (a PUT that committed after DeleteBucket
/// found the bucket empty) went with their bucket: heal removes them, and a pass is settled
/// only once no drive may still hold them.
#[tokio::test]
async fn heal_removes_the_records_a_deleted_bucket_left() {
    let FaultySet {
        _sim,
        faulty,
        store,
        ..
    } = faulty_set().await;
    for drive in &faulty[..5] {
        let op = crate::storage::MetaOp::Put {
            table: MetaTable::Objects,
            key: object_key("gone", "leftover"),
            value: vec![1, 2, 3],
        };
        drive.meta_apply(vec![op]).await.unwrap();
    }
    let scope = super::HealScope::default();
    faulty[0].fail(&[Call::MetaApply]);
    let pass = store
        .heal_objects(&scope, super::HealDepth::Quick, None, |_| {})
        .await
        .unwrap();
    assert_eq!(
        pass.unresolved, 1,
        "a drive that cannot be written keeps it"
    );
    faulty[0].recover();
    let pass = store
        .heal_objects(&scope, super::HealDepth::Quick, None, |_| {})
        .await
        .unwrap();
    assert_eq!(pass.unresolved, 0, "{pass:?}");
    assert_eq!(records_on(&faulty, "gone", "leftover").await, 0);
}

/// A bucket made under the name of a deleted one starts empty, even when a PUT that raced
/// the deletion left its object's records behind (its data folder, referenced by nothing
/// now, goes with the orphans).
#[tokio::test]
async fn a_new_bucket_does_not_show_what_a_deleted_bucket_of_its_name_left() {
    let FaultySet {
        _sim,
        faulty,
        store,
        bucket,
        ..
    } = faulty_set().await;
    let key = ObjectKey::parse("ckpt").unwrap();
    let body: crate::body::ByteStream = Box::pin(futures::stream::iter([Ok(payload(7))]));
    (store.put_object(&bucket, &key, body, PutOptions::default()))
        .await
        .unwrap();
    // What the race leaves: the bucket record gone, the object's record still there.
    let unrecord = crate::storage::MetaOp::Delete {
        table: MetaTable::Buckets,
        key: bucket.as_str().as_bytes().to_vec(),
    };
    for drive in &faulty {
        drive.meta_apply(vec![unrecord.clone()]).await.unwrap();
    }
    store.forget_agreed_buckets();

    store.create_bucket(&bucket).await.unwrap();
    assert_eq!(read(&store, &bucket, &key).await, None);
    let listed = store
        .list_objects(
            &bucket,
            &super::ListQuery {
                max_keys: 1000,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(listed.entries.is_empty(), "{:?}", listed.entries);
    assert_eq!(records_on(&faulty, "property", "ckpt").await, 0);
}

/// A heal pass that could not scan a write quorum of drives may have missed keys a write
/// quorum committed, so it is not settled (before, the drives were left out of the scan
/// silently and the pass reported nothing unresolved, letting unhealed drives be marked
/// healed). Fewer unanswered drives hide no committed key: the pass settles.
#[tokio::test]
async fn a_heal_pass_that_could_not_scan_enough_drives_is_not_settled() {
    let FaultySet {
        _sim,
        faulty,
        store,
        bucket,
        ..
    } = faulty_set().await;
    let key = ObjectKey::parse("ckpt").unwrap();
    let body: crate::body::ByteStream = Box::pin(futures::stream::iter([Ok(payload(7))]));
    (store.put_object(&bucket, &key, body, PutOptions::default()))
        .await
        .unwrap();
    let scope = super::HealScope::default();
    let heal = || store.heal_objects(&scope, super::HealDepth::Quick, None, |_| {});
    for drive in &faulty[..6] {
        drive.fail(&[Call::MetaScan]);
    }
    let pass = heal().await.unwrap();
    assert_eq!(pass.unresolved, 6, "{pass:?}");
    faulty[0].recover();
    let pass = heal().await.unwrap();
    assert_eq!(pass.unresolved, 0, "five of nine unanswered: {pass:?}");
}

/// CreateBucket sweeps what a deleted bucket of its name left only when enough drives answer
/// its scan to see every record a write quorum committed; otherwise it waits (503) rather
/// than start the new bucket beside leftovers it could not see.
#[tokio::test]
async fn a_new_bucket_waits_while_too_few_drives_answer_the_sweep() {
    let FaultySet {
        _sim,
        faulty,
        store,
        ..
    } = faulty_set().await;
    let fresh = BucketName::parse("fresh").unwrap();
    for drive in &faulty[..6] {
        drive.fail(&[Call::MetaScan]);
    }
    let refused = store.create_bucket(&fresh).await;
    assert!(
        matches!(
            refused,
            Err(super::ObjectError::Unavailable(
                crate::erasure::ErasureError::ReadQuorum
            ))
        ),
        "{refused:?}"
    );
    faulty[0].recover();
    store.create_bucket(&fresh).await.unwrap();
}
