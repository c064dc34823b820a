//! What a write quorum promises, under failures placed on chosen drives: an acknowledged
//! write is whole (data and record) on a write quorum of drives; a read never answers a
//! version that a newer, possibly acknowledged one supersedes; a settings change answered
//! with an error is in force nowhere, now or after a restart and a heal.
//!
//! In process, over nine simulated drives (one 6+3 set), each behind a `FaultyDrive`.

mod in_process;

use std::sync::Arc;

use in_process::*;
use strata::erasure::{ErasureError, ErasureSet};
use strata::object::{
    BucketName, CompleteOptions, CompletedPart, HealDepth, HealScope, ObjectError, ObjectStore,
    PutOptions, UploadOptions, Versioning, WriteCondition,
};
use strata::records::RecordSet;
use strata::storage::faulty::{Call, FaultyDrive};
use strata::storage::sim::{CrashController, Flushed};
use strata::storage::{Drive, MetaTable, OfflineDrive};

/// Above the inline limit: the data goes to shard files.
const LARGE: usize = 300 * KIB;
const BUCKET: &str = "quorum";

fn bucket() -> BucketName {
    bucket_named(BUCKET)
}

fn is_unavailable<T>(result: &Result<T, ObjectError>) -> bool {
    matches!(
        result,
        Err(ObjectError::Unavailable(
            ErasureError::ReadQuorum | ErasureError::WriteQuorum { .. }
        ))
    )
}

/// Nine simulated drives behind fault switches, and stores over them.
struct Drives {
    sim: CrashController,
    faulty: Vec<Arc<FaultyDrive>>,
}

impl Drives {
    fn new() -> Self {
        let sim = CrashController::new(9);
        let faulty = sim.drives().into_iter().map(FaultyDrive::new).collect();
        Self { sim, faulty }
    }

    /// A store over the drives; `away` ones are offline for it.
    fn store(&self, away: &[usize]) -> Arc<ObjectStore> {
        let drives = (self.faulty.iter().enumerate())
            .map(|(i, drive)| match away.contains(&i) {
                true => Arc::new(OfflineDrive::new(format!("away{i}"))) as Arc<dyn Drive>,
                false => drive.clone() as Arc<dyn Drive>,
            })
            .collect();
        store_over(drives, "quorum-tests")
    }

    fn fail(&self, drives: impl IntoIterator<Item = usize>, calls: &[Call]) {
        for i in drives {
            self.faulty[i].fail(calls);
        }
    }

    fn recover(&self) {
        self.faulty.iter().for_each(|d| d.recover());
    }

    /// A server that shares the drives with other servers (a commit must be answered
    /// within `commit_deadline`), each drive behind a fault switch of its own (and the
    /// shared one).
    fn shared_server(
        &self,
        commit_deadline: std::time::Duration,
    ) -> (Arc<ObjectStore>, Vec<Arc<FaultyDrive>>) {
        let faulty: Vec<Arc<FaultyDrive>> = (self.faulty.iter())
            .map(|d| FaultyDrive::new(d.clone()))
            .collect();
        let drives = faulty.iter().map(|d| d.clone() as Arc<dyn Drive>).collect();
        let set = RecordSet::from(ErasureSet::new(0, drives, PARITY, BLOCK_SIZE).unwrap())
            .shared_with_other_servers(commit_deadline);
        (ObjectStore::new(vec![set], "quorum-tests"), faulty)
    }
}

const DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);
const MS: std::time::Duration = std::time::Duration::from_millis(1);

/// PUT; the ETag.
async fn put(store: &ObjectStore, name: &str, data: &[u8]) -> Result<String, ObjectError> {
    let options = PutOptions::default();
    store
        .put_object(&bucket(), &key(name), body(data), options)
        .await
        .map(|record| record.etag)
}

async fn read(store: &ObjectStore, name: &str) -> Result<Vec<u8>, ObjectError> {
    read_all(store, &bucket(), &key(name), None).await
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

/// A part whose shards could not be placed on a write quorum used to take the upload's whole
/// data folder with it (the parts already acknowledged included): only its own files go.
#[tokio::test]
async fn a_part_that_misses_its_quorum_leaves_the_parts_before_it() {
    let (drives, store) = with_bucket(false).await;
    let (upload_id, _) = store
        .create_multipart_upload(&bucket(), &key("ckpt"), UploadOptions::default())
        .await
        .unwrap();
    let upload = |number: u32, data: Vec<u8>| {
        let (store, upload_id) = (store.clone(), upload_id.clone());
        async move {
            let options = PutOptions::default();
            let part = (store.upload_part(
                &bucket(),
                &key("ckpt"),
                &upload_id,
                number,
                body(&data),
                options,
            ))
            .await;
            part.map(|p| CompletedPart {
                number,
                etag: p.etag,
            })
        }
    };
    let first = payload(5 * 1024 * KIB, 6);
    let part1 = upload(1, first.clone()).await.unwrap();
    drives.fail(0..4, &[Call::CommitStaged]);
    let part2 = upload(2, payload(LARGE, 7)).await;
    assert!(is_unavailable(&part2), "{part2:?}");
    drives.recover();
    let last = payload(LARGE, 8);
    let part2 = upload(2, last.clone()).await.unwrap();
    let options = CompleteOptions {
        parts: vec![part1, part2],
        ..CompleteOptions::default()
    };
    store
        .complete_multipart_upload(&bucket(), &key("ckpt"), &upload_id, options)
        .await
        .unwrap();
    assert!(read(&store, "ckpt").await.unwrap() == [first, last].concat());
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
        // A bucket whose keys cannot all be decided is not known to be empty: it stays.
        let deleted = degraded.delete_bucket(&bucket()).await;
        assert!(
            is_unavailable(&deleted),
            "versioned {versioned}: DeleteBucket: {deleted:?}"
        );

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

    // A DeleteBucket refused by four drives: the bucket stays, also after a heal.
    drives.fail(5..9, &[Call::MetaApply]);
    let deleted = store.delete_bucket(&bucket()).await;
    assert!(is_unavailable(&deleted), "{deleted:?}");
    drives.recover();
    assert!(store.bucket(&bucket()).await.is_ok(), "the next request");
    drives.store(&[]).heal_buckets().await.unwrap();
    assert!(
        drives.store(&[6, 7, 8]).bucket(&bucket()).await.is_ok(),
        "after a heal"
    );
}

/// One write of the race below, and how it ended.
struct Attempt {
    key: &'static str,
    data: Option<Vec<u8>>,
    outcome: Result<Option<String>, ObjectError>,
}

/// Server X's write has reached five drives and is on its way to a sixth when server Y
/// reads the key: Y's read agrees on the older value (five is short of a quorum). Y must
/// not take X's five drives for its own write: X then reaches its sixth drive and is
/// acknowledged, and had Y overwritten those five, both would be acknowledged and X's
/// version lost. Y is refused there, reads again once X is done and writes over X's value
/// (versioned: both versions stay; `If-Match` on the old ETag: Y's fails).
#[tokio::test]
async fn a_write_in_flight_on_another_server_is_not_written_over() {
    for versioned in [true, false] {
        let drives = Drives::new();
        let (x, x_drives) = drives.shared_server(DEADLINE);
        let (y, y_drives) = drives.shared_server(DEADLINE);
        y.create_bucket(&bucket()).await.unwrap();
        if versioned {
            y.set_versioning(&bucket(), Versioning::Enabled)
                .await
                .unwrap();
        }
        let old_etag = put(&y, "ckpt", b"old").await.unwrap();
        // X's commit: drives 0-4 at once, drive 5 after 300 ms, never drives 6-8. Y's
        // writes reach drive 5 after 600 ms, after X's.
        (6..9).for_each(|i| x_drives[i].fail(&[Call::MetaApply]));
        x_drives[5].slow_down_writes(300 * MS);
        y_drives[5].slow_down_writes(600 * MS);
        let condition = (!versioned).then(|| WriteCondition::IfMatch(old_etag.clone()));
        let write = |store: Arc<ObjectStore>, data: &'static [u8]| {
            let options = PutOptions {
                condition: condition.clone(),
                ..PutOptions::default()
            };
            tokio::spawn(async move {
                (store.put_object(&bucket(), &key("ckpt"), body(data), options))
                    .await
                    .map(|record| record.version_id)
            })
        };
        let x_write = write(x.clone(), b"from x");
        tokio::time::sleep(100 * MS).await;
        let y_write = write(y.clone(), b"from y");
        let (x_won, y_won) = (x_write.await.unwrap(), y_write.await.unwrap());
        let x_version = x_won.expect("X's write reached six drives");
        (0..9).for_each(|i| x_drives[i].recover());
        if versioned {
            let y_version = y_won.expect("Y's write goes on top of X's");
            for (version, data) in [(x_version, b"from x"), (y_version, b"from y")] {
                let got = read_all(&y, &bucket(), &key("ckpt"), version.as_deref()).await;
                assert_eq!(got.unwrap(), data, "version {version:?}");
            }
        } else {
            assert!(
                matches!(y_won, Err(ObjectError::PreconditionFailed)),
                "only one If-Match wins: {y_won:?}"
            );
            assert_eq!(read(&y, "ckpt").await.unwrap(), b"from x");
        }
    }
}

/// A write on another server that reached five drives and died there (its undo did not
/// reach them either) blocks nobody for longer than a commit deadline: once it has been
/// seen for that long it can no longer be acknowledged, and a write goes over it.
#[tokio::test]
async fn a_write_cut_short_on_another_server_is_written_over_after_the_deadline() {
    let deadline = 400 * MS;
    let drives = Drives::new();
    let (x, x_drives) = drives.shared_server(deadline);
    let (y, _) = drives.shared_server(deadline);
    y.create_bucket(&bucket()).await.unwrap();
    put(&y, "ckpt", b"old").await.unwrap();
    // X's commit reaches drives 0-4 and then they fail, so its undo misses them.
    (0..5).for_each(|i| x_drives[i].fail_after(Call::MetaApply, 1));
    (5..9).for_each(|i| x_drives[i].fail(&[Call::MetaApply]));
    let cut_short = put(&x, "ckpt", b"from x").await;
    assert!(is_unavailable(&cut_short), "{cut_short:?}");
    assert_eq!(read(&y, "ckpt").await.unwrap(), b"old");

    let started = std::time::Instant::now();
    put(&y, "ckpt", b"from y").await.unwrap();
    assert!(
        started.elapsed() >= deadline,
        "the leftover was written over before the deadline: {:?}",
        started.elapsed()
    );
    assert_eq!(read(&y, "ckpt").await.unwrap(), b"from y");
}

/// A commit that takes longer than the deadline other servers wait for it is undone and
/// answered 503, even though a write quorum took it: they may have written over it already.
#[tokio::test]
async fn a_commit_past_its_deadline_is_undone() {
    let deadline = 200 * MS;
    let drives = Drives::new();
    let (x, x_drives) = drives.shared_server(deadline);
    x.create_bucket(&bucket()).await.unwrap();
    put(&x, "ckpt", b"old").await.unwrap();
    x_drives[0].slow_down_writes(3 * deadline);
    let late = put(&x, "ckpt", b"late").await;
    assert!(
        matches!(
            late,
            Err(ObjectError::Unavailable(ErasureError::CommitDeadline))
        ),
        "{late:?}"
    );
    x_drives[0].slow_down_writes(std::time::Duration::ZERO);
    let (other, _) = drives.shared_server(deadline);
    assert_eq!(read(&other, "ckpt").await.unwrap(), b"old");
}

/// A heal that runs while a bucket is being made finds its record on a few drives and none
/// on the others. It must not take that for a leftover and remove it: the creation may be
/// about to reach its quorum, and would then be acknowledged with its record on too few
/// drives. On one server, and on two sharing the drives.
#[tokio::test]
async fn a_heal_leaves_alone_a_record_being_made() {
    for shared in [false, true] {
        let drives = Drives::new();
        let (maker, maker_drives) = drives.shared_server(DEADLINE);
        let (maker, healer) = match shared {
            true => (maker, drives.shared_server(DEADLINE).0),
            false => {
                let alone = drives.store(&[]);
                (alone.clone(), alone)
            }
        };
        // The creation reaches drives 0-3 at once and the others after 500 ms.
        let slowed = match shared {
            true => &maker_drives,
            false => &drives.faulty,
        };
        slowed[4..]
            .iter()
            .for_each(|d| d.slow_down_writes(500 * MS));
        let create = tokio::spawn({
            let maker = maker.clone();
            async move { maker.create_bucket(&bucket()).await }
        });
        tokio::time::sleep(150 * MS).await;
        healer.heal_buckets().await.unwrap();
        create
            .await
            .unwrap()
            .expect("the creation reaches every drive");
        drives
            .faulty
            .iter()
            .for_each(|d| d.slow_down_writes(std::time::Duration::ZERO));
        let fresh = drives.store(&[0, 1, 2]);
        assert!(
            fresh.bucket(&bucket()).await.is_ok(),
            "shared {shared}: the bucket is on every drive but those the heal took it from"
        );
    }
}

/// A delete marker commits as a tombstone in the object records, removed once the versions
/// record holds the marker: on every drive, unless a later write replaced it there.
#[tokio::test]
async fn a_delete_marker_leaves_no_tombstone_behind() {
    let (drives, store) = with_bucket(true).await;
    put(&store, "ckpt", b"one").await.unwrap();
    store
        .delete_object(&bucket(), &key("ckpt"), None)
        .await
        .unwrap();
    let record_key = format!("{BUCKET}\0ckpt").into_bytes();
    for i in 0..9 {
        let held = drives
            .sim
            .drive(i)
            .meta_get(MetaTable::Objects, record_key.clone());
        assert_eq!(held.await.unwrap(), None, "drive {i}");
    }
    let got = read(&store, "ckpt").await;
    assert!(
        matches!(got, Err(ObjectError::DeleteMarker { .. })),
        "{got:?}"
    );
}

/// ListParts reads part records a page at a time; where drives disagree (drive 0 missed
/// some parts, so its pages reach further than the others'), every page still lists each
/// part exactly once, in order.
#[tokio::test]
async fn parts_are_listed_a_page_at_a_time_where_drives_disagree() {
    let (drives, store) = with_bucket(false).await;
    let (upload_id, _) = store
        .create_multipart_upload(&bucket(), &key("paged"), UploadOptions::default())
        .await
        .unwrap();
    for number in 1..=14u32 {
        let missed_by_drive_0 = [2, 5, 6, 11].contains(&number);
        if missed_by_drive_0 {
            drives.fail([0], &[Call::MetaApply]);
        }
        let data = payload(1000, number as u8);
        store
            .upload_part(
                &bucket(),
                &key("paged"),
                &upload_id,
                number,
                body(&data),
                PutOptions::default(),
            )
            .await
            .unwrap();
        drives.recover();
    }
    for max in [1, 2, 3, 5, 14, 20] {
        let (mut listed, mut marker) = (Vec::new(), 0);
        loop {
            let page = store
                .list_parts(&bucket(), &key("paged"), &upload_id, marker, max)
                .await
                .unwrap();
            assert!(page.parts.len() <= max);
            listed.extend(page.parts.iter().map(|p| p.info.number));
            if !page.truncated {
                break;
            }
            marker = *listed.last().unwrap();
        }
        assert_eq!(listed, (1..=14).collect::<Vec<_>>(), "max {max}");
    }
}

/// Two object stores over the same drives, as two servers would be: their key locks know
/// nothing of each other, so only the drives' conditional commits keep racing writers
/// apart. Each round, 16 writers on 4 keys: creates with `If-None-Match: *`, swaps with
/// `If-Match`, plain PUTs racing a DELETE, and PUTs to a versioned key. Conditional writers
/// have exactly one winner a round, every acknowledged write reads back (or was replaced by
/// one that does), nothing half-written is read, and a power cut changes none of that.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_servers_over_the_same_drives_never_both_win() {
    const ROUNDS: u8 = 5;
    let drives = Drives::new();
    // Metadata calls that take a while, as on real disks: the servers' reads and commits
    // overlap.
    for drive in &drives.faulty {
        drive.slow_down(std::time::Duration::from_millis(2));
    }
    let servers = [
        drives.shared_server(DEADLINE).0,
        drives.shared_server(DEADLINE).0,
    ];
    let versioned = BucketName::parse("quorum-versions").unwrap();
    servers[0].create_bucket(&bucket()).await.unwrap();
    servers[1].create_bucket(&versioned).await.unwrap();
    servers[0]
        .set_versioning(&versioned, Versioning::Enabled)
        .await
        .unwrap();
    // A server holds the bucket records it agreed on in memory: another server's change
    // reaches it through a notice (in a cluster, a watch on the bucket records).
    servers[1].forget_agreed_buckets();
    let mut swap_etag = put(&servers[0], "swap", b"start").await.unwrap();
    let mut swap_data = Vec::new();
    let mut plain_now: Option<Vec<u8>> = None;
    let mut versions: Vec<(String, Vec<u8>)> = Vec::new();

    for round in 0..ROUNDS {
        let _ = servers[0]
            .delete_object(&bucket(), &key("create"), None)
            .await;
        let mut tasks = Vec::new();
        for writer in 0..16u8 {
            // Each key gets writers on both servers.
            let store = servers[usize::from(writer / 4 % 2)].clone();
            let seed = round * 16 + writer;
            // Small (inline) and large (shard files) bodies alternate.
            let size = if writer % 3 == 0 {
                LARGE
            } else {
                1000 + usize::from(writer)
            };
            let data = payload(size, seed);
            let (swap, versioned) = (swap_etag.clone(), versioned.clone());
            tasks.push(tokio::spawn(async move {
                let (key_name, condition, bucket_name) = match writer % 4 {
                    0 => ("create", Some(WriteCondition::IfNoneMatch), bucket()),
                    1 => ("swap", Some(WriteCondition::IfMatch(swap)), bucket()),
                    2 => ("plain", None, bucket()),
                    _ => ("ckpt", None, versioned),
                };
                if key_name == "plain" && writer == 2 {
                    let deleted = store.delete_object(&bucket(), &key("plain"), None).await;
                    return Attempt {
                        key: key_name,
                        data: None,
                        outcome: deleted.map(|_| None),
                    };
                }
                let options = PutOptions {
                    condition,
                    ..PutOptions::default()
                };
                let outcome = store
                    .put_object(&bucket_name, &key(key_name), body(&data), options)
                    .await
                    .map(|record| Some(record.version_id.unwrap_or(record.etag)));
                Attempt {
                    key: key_name,
                    data: Some(data),
                    outcome,
                }
            }));
        }
        let mut attempts = Vec::new();
        for task in tasks {
            attempts.push(task.await.unwrap());
        }
        let won = |name: &str| -> Vec<&Attempt> {
            (attempts.iter())
                .filter(|a| a.key == name && a.outcome.is_ok())
                .collect()
        };
        for conditional in ["create", "swap"] {
            let winners = won(conditional);
            assert_eq!(winners.len(), 1, "round {round}: {conditional} winners");
            for loser in attempts.iter().filter(|a| a.key == conditional) {
                assert!(
                    matches!(
                        loser.outcome,
                        Ok(_) | Err(ObjectError::PreconditionFailed | ObjectError::Conflict)
                    ),
                    "round {round}: {conditional}: {:?}",
                    loser.outcome.as_ref().err()
                );
            }
            for server in &servers {
                let got = read(server, conditional).await.unwrap();
                assert!(
                    &got == winners[0].data.as_ref().unwrap(),
                    "round {round}: {conditional}"
                );
            }
        }
        swap_etag = (won("swap")[0].outcome.as_ref().unwrap().clone()).unwrap();
        swap_data = won("swap")[0].data.clone().unwrap();

        // The plain key holds one of the acknowledged writes, or nothing if the delete was
        // acknowledged, or what it held if nothing was.
        let plain = won("plain");
        let got = read(&servers[round as usize % 2], "plain").await.ok();
        let possible = |got: &Option<Vec<u8>>| match got {
            None => {
                plain.iter().any(|a| a.data.is_none()) || (plain.is_empty() && plain_now.is_none())
            }
            Some(bytes) => {
                plain.iter().any(|a| a.data.as_ref() == Some(bytes))
                    || (plain.is_empty() && plain_now.as_ref() == Some(bytes))
            }
        };
        assert!(
            possible(&got),
            "round {round}: the plain key holds something nobody wrote last"
        );
        plain_now = got;

        for attempt in won("ckpt") {
            let id = attempt.outcome.as_ref().unwrap().clone().unwrap();
            versions.push((id, attempt.data.clone().unwrap()));
        }
        assert!(
            !won("ckpt").is_empty(),
            "round {round}: some versioned PUT succeeds"
        );
    }

    // Every acknowledged version reads back whole from both servers, and after a power cut.
    let check_versions =
        |stores: [Arc<ObjectStore>; 2], versioned: BucketName, when: &'static str| {
            let versions = versions.clone();
            async move {
                for (i, (id, data)) in versions.iter().enumerate() {
                    let bytes = read_all(&stores[i % 2], &versioned, &key("ckpt"), Some(id))
                        .await
                        .unwrap_or_else(|e| panic!("version {i} ({id}) {when}: {e}"));
                    assert!(bytes == *data, "version {id} differs");
                }
            }
        };
    check_versions(servers.clone(), versioned.clone(), "before the power cut").await;
    drives.sim.crash(Flushed::RandomSubset(7));
    let rebooted = [drives.store(&[]), drives.store(&[])];
    check_versions(rebooted.clone(), versioned.clone(), "after the power cut").await;
    assert!(read(&rebooted[0], "swap").await.unwrap() == swap_data);
}

/// One server's commit of a new version reaches two drives, and the others late; meanwhile
/// another server adds a version of the key over the rest. The first server's commit then
/// fails there, and its retry commits the version, with the data it wrote. Before, the
/// second server took the version it saw on two drives for one its commit replaced and
/// deleted its data: the acknowledged version could not be read (the two-server race test
/// caught it about once in twenty runs on a loaded machine).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_version_whose_commit_another_server_overtook_keeps_its_data() {
    let drives = Drives::new();
    let (x, x_drives) = drives.shared_server(DEADLINE);
    let (y, _) = drives.shared_server(DEADLINE);
    let versioned = BucketName::parse("quorum-versions").unwrap();
    x.create_bucket(&versioned).await.unwrap();
    x.set_versioning(&versioned, Versioning::Enabled)
        .await
        .unwrap();
    y.forget_agreed_buckets();
    let put = |store: &Arc<ObjectStore>, data: Vec<u8>| {
        let (store, versioned) = (store.clone(), versioned.clone());
        async move {
            let options = PutOptions::default();
            let record = (store.put_object(&versioned, &key("ckpt"), body(&data), options)).await;
            record.map(|r| r.version_id.unwrap())
        }
    };
    let first = put(&x, payload(LARGE, 1)).await.unwrap();

    for drive in &x_drives[2..] {
        drive.slow_down_writes(400 * MS);
    }
    let record_key = b"quorum-versions\0ckpt".to_vec();
    let versions_on_0 = || drives.faulty[0].meta_get(MetaTable::Versions, record_key.clone());
    let before = versions_on_0().await.unwrap();
    let data = payload(LARGE, 2);
    let slow = tokio::spawn(put(&x, data.clone()));
    while versions_on_0().await.unwrap() == before {
        tokio::time::sleep(MS).await;
    }
    let overtaking = put(&y, payload(1000, 3)).await.unwrap();
    let committed = slow.await.unwrap().unwrap();

    for store in [&x, &y] {
        for (id, expected) in [(&first, payload(LARGE, 1)), (&committed, data.clone())] {
            let got = read_all(store, &versioned, &key("ckpt"), Some(id)).await;
            assert!(
                got.as_ref().ok() == Some(&expected),
                "version {id}: {:?}",
                got.err()
            );
        }
        let got = read_all(store, &versioned, &key("ckpt"), Some(&overtaking)).await;
        assert_eq!(got.unwrap(), payload(1000, 3));
    }
}

/// The same in an unversioned bucket: the overtaken PUT's retry writes over the other
/// server's, and the key reads as the retried PUT wrote it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_put_whose_commit_another_server_overtook_keeps_its_data() {
    let drives = Drives::new();
    let (x, x_drives) = drives.shared_server(DEADLINE);
    let (y, _) = drives.shared_server(DEADLINE);
    x.create_bucket(&bucket()).await.unwrap();
    y.forget_agreed_buckets();
    put(&x, "plain", &payload(LARGE, 1)).await.unwrap();

    for drive in &x_drives[2..] {
        drive.slow_down_writes(400 * MS);
    }
    let record_key = format!("{BUCKET}\0plain").into_bytes();
    let record_on_0 = || drives.faulty[0].meta_get(MetaTable::Objects, record_key.clone());
    let before = record_on_0().await.unwrap();
    let data = payload(LARGE, 2);
    let slow = {
        let (x, data) = (x.clone(), data.clone());
        tokio::spawn(async move { put(&x, "plain", &data).await })
    };
    while record_on_0().await.unwrap() == before {
        tokio::time::sleep(MS).await;
    }
    put(&y, "plain", &payload(1000, 3)).await.unwrap();
    slow.await.unwrap().unwrap();
    for store in [&x, &y] {
        let got = read(store, "plain").await;
        assert!(got.as_ref().ok() == Some(&data), "{:?}", got.err());
    }
}

/// The same for a part: an UploadPart through one server whose commit reaches two drives
/// and the others late, overtaken by an upload of the same part through another server. The
/// first one's retry commits its part, and the upload completes with it, whole. Before, the
/// other server deleted the part's file as one its commit replaced.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_part_whose_commit_another_server_overtook_keeps_its_file() {
    let drives = Drives::new();
    let (x, x_drives) = drives.shared_server(DEADLINE);
    let (y, _) = drives.shared_server(DEADLINE);
    x.create_bucket(&bucket()).await.unwrap();
    y.forget_agreed_buckets();
    let (upload_id, _) = x
        .create_multipart_upload(&bucket(), &key("parted"), UploadOptions::default())
        .await
        .unwrap();
    let upload_part = |store: &Arc<ObjectStore>, data: Vec<u8>| {
        let (store, upload_id) = (store.clone(), upload_id.clone());
        async move {
            let options = PutOptions::default();
            (store.upload_part(
                &bucket(),
                &key("parted"),
                &upload_id,
                1,
                body(&data),
                options,
            ))
            .await
            .map(|part| part.etag)
        }
    };

    for drive in &x_drives[2..] {
        drive.slow_down_writes(400 * MS);
    }
    let parts_on_0 = || {
        let unbounded = std::ops::Bound::Unbounded;
        drives.faulty[0].meta_scan(MetaTable::Parts, unbounded, Vec::new(), 10)
    };
    let data = payload(LARGE, 2);
    let slow = tokio::spawn(upload_part(&x, data.clone()));
    while parts_on_0().await.unwrap().is_empty() {
        tokio::time::sleep(MS).await;
    }
    upload_part(&y, payload(LARGE, 3)).await.unwrap();
    let etag = slow.await.unwrap().unwrap();
    for drive in &x_drives {
        drive.slow_down_writes(std::time::Duration::ZERO);
    }
    (x.complete_multipart_upload(
        &bucket(),
        &key("parted"),
        &upload_id,
        completing_part_one(&etag),
    ))
    .await
    .unwrap();
    for store in [&x, &y] {
        let got = read(store, "parted").await;
        assert!(got.as_ref().ok() == Some(&data), "{:?}", got.err());
    }
}

/// Two servers sharing the drives, their metadata calls slowed down so that their reads and
/// commits overlap, and a bucket made through the first.
async fn two_slow_servers() -> (Drives, [Arc<ObjectStore>; 2]) {
    let drives = Drives::new();
    for drive in &drives.faulty {
        drive.slow_down(std::time::Duration::from_millis(1));
    }
    let servers = [
        drives.shared_server(DEADLINE).0,
        drives.shared_server(DEADLINE).0,
    ];
    servers[0].create_bucket(&bucket()).await.unwrap();
    servers[1].forget_agreed_buckets();
    (drives, servers)
}

/// An upload of `key` through `store` with one part of `data`; its id and the part's ETag.
async fn upload_with_one_part(
    store: &ObjectStore,
    key_name: &str,
    data: &[u8],
) -> (String, String) {
    let (upload_id, _) = store
        .create_multipart_upload(&bucket(), &key(key_name), UploadOptions::default())
        .await
        .unwrap();
    let part = store
        .upload_part(
            &bucket(),
            &key(key_name),
            &upload_id,
            1,
            body(data),
            PutOptions::default(),
        )
        .await
        .unwrap();
    (upload_id, part.etag)
}

fn completing_part_one(etag: &str) -> CompleteOptions {
    CompleteOptions {
        parts: vec![CompletedPart {
            number: 1,
            etag: etag.to_string(),
        }],
        ..CompleteOptions::default()
    }
}

/// CompleteMultipartUpload through one server racing AbortMultipartUpload of the same upload
/// through another (a client's abort, or the elected node's stale-upload cleaner): at most
/// one of them is answered 200, the other NoSuchUpload (or an error that changed nothing),
/// and an acknowledged completion reads back whole through both servers. Upload state used
/// to be guarded by one process's locks alone: both were answered 200 and the abort deleted
/// the folder of the object just acknowledged.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn complete_racing_abort_on_another_server_has_one_winner_and_loses_nothing() {
    const ROUNDS: u16 = 200;
    let (_drives, servers) = two_slow_servers().await;
    // An abort is cheaper than a completion, so starting both at once lets the abort win
    // nearly always on a slow machine. The abort's start is swept across the time an
    // uncontested completion takes here: early aborts win, late ones find it done, and the
    // ones between race inside the completion's commit.
    let completion_time = {
        let data = payload(LARGE, 0);
        let (upload_id, etag) = upload_with_one_part(&servers[0], "calibration", &data).await;
        let started = std::time::Instant::now();
        servers[0]
            .complete_multipart_upload(
                &bucket(),
                &key("calibration"),
                &upload_id,
                completing_part_one(&etag),
            )
            .await
            .unwrap();
        started.elapsed()
    };
    let (mut completed, mut aborted) = (0, 0);
    for round in 0..ROUNDS {
        let name = format!("race-{round}");
        let data = payload(LARGE, round as u8);
        let (upload_id, etag) = upload_with_one_part(&servers[0], &name, &data).await;
        let (a, b) = (servers[0].clone(), servers[1].clone());
        let abort_delay = completion_time * u32::from(round % 10) / 8;
        let (complete, abort) = tokio::join!(
            {
                let (name, upload_id, etag) = (name.clone(), upload_id.clone(), etag.clone());
                async move {
                    a.complete_multipart_upload(
                        &bucket(),
                        &key(&name),
                        &upload_id,
                        completing_part_one(&etag),
                    )
                    .await
                }
            },
            {
                let (name, upload_id) = (name.clone(), upload_id.clone());
                async move {
                    tokio::time::sleep(abort_delay).await;
                    b.abort_multipart_upload(&bucket(), &key(&name), &upload_id)
                        .await
                }
            }
        );
        assert!(
            !(complete.is_ok() && abort.is_ok()),
            "round {round}: both the completion and the abort were answered 200"
        );
        match &abort {
            Ok(()) | Err(ObjectError::NoSuchUpload | ObjectError::Conflict) => {}
            Err(e) => panic!("round {round}: abort answered {e}"),
        }
        if complete.is_ok() {
            completed += 1;
            for server in &servers {
                let got = read(server, &name).await;
                assert!(
                    got.as_ref().is_ok_and(|got| *got == data),
                    "round {round}: an acknowledged completion does not read back: {:?}",
                    got.err()
                );
            }
        } else {
            assert!(
                matches!(
                    complete,
                    Err(ObjectError::NoSuchUpload | ObjectError::Conflict)
                ),
                "round {round}: complete answered {:?}",
                complete.err()
            );
        }
        if abort.is_ok() {
            aborted += 1;
            let got = read(&servers[round as usize % 2], &name).await;
            assert!(
                matches!(got, Err(ObjectError::NoSuchKey)),
                "round {round}: an aborted upload left an object: {:?}",
                got.map(|b| b.len())
            );
        }
    }
    // Both sides of the race win some rounds: the test races for real.
    assert!(
        completed > 0 && aborted > 0,
        "{completed} completed, {aborted} aborted"
    );
}

/// A retried UploadPart (an SDK resending a part it timed out on: same bytes, same ETag)
/// through one server racing CompleteMultipartUpload through another: every acknowledged
/// completion reads back whole, whichever copy of the part it took. The part's commit used to
/// delete the file it replaced whatever had happened meanwhile: the completed object then
/// referenced a deleted file.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_retried_part_racing_complete_on_another_server_never_takes_the_objects_data() {
    const ROUNDS: u16 = 200;
    let (_drives, servers) = two_slow_servers().await;
    let mut completed = 0;
    for round in 0..ROUNDS {
        let name = format!("retry-{round}");
        let data = payload(LARGE, round as u8);
        let (upload_id, etag) = upload_with_one_part(&servers[0], &name, &data).await;
        let (a, b) = (servers[0].clone(), servers[1].clone());
        let (complete, part) = tokio::join!(
            {
                let (name, upload_id, etag) = (name.clone(), upload_id.clone(), etag.clone());
                async move {
                    a.complete_multipart_upload(
                        &bucket(),
                        &key(&name),
                        &upload_id,
                        completing_part_one(&etag),
                    )
                    .await
                }
            },
            {
                let (name, upload_id, data) = (name.clone(), upload_id.clone(), data.clone());
                async move {
                    b.upload_part(
                        &bucket(),
                        &key(&name),
                        &upload_id,
                        1,
                        body(&data),
                        PutOptions::default(),
                    )
                    .await
                }
            }
        );
        if let Ok(part) = &part {
            assert_eq!(
                part.etag, etag,
                "round {round}: the same bytes, the same ETag"
            );
        }
        match complete {
            Ok(_) => {
                completed += 1;
                for server in &servers {
                    let got = read(server, &name).await;
                    assert!(
                        got.as_ref().is_ok_and(|got| *got == data),
                        "round {round}: an acknowledged completion does not read back: {:?}",
                        got.err()
                    );
                }
            }
            Err(e) => panic!("round {round}: complete answered {e}"),
        }
    }
    assert_eq!(completed, ROUNDS);
}

/// A heal that reads an upload while a completion is still reaching the drives never makes
/// it open again. The completion reaches drives 0-2 at once and 3-5 after 500 ms, and 6-8
/// not at all (it wins on six); the heal reads in between, when six drives still hold the
/// upload open. It used to put the upload back where the completion had taken it away,
/// which left it open on six drives once the completion won: listed, and aborted by the next
/// client or stale-upload cleaner, which deleted the completed object's data. Then a heal
/// once every drive answers brings the upload's end to 6-8 and leaves no trace of it.
#[tokio::test]
async fn a_heal_during_a_completion_never_opens_the_upload_again() {
    let drives = Drives::new();
    let (completer, completer_drives) = drives.shared_server(DEADLINE);
    let healer = drives.shared_server(DEADLINE).0;
    completer.create_bucket(&bucket()).await.unwrap();
    let data = payload(LARGE, 7);
    let (upload_id, etag) = upload_with_one_part(&completer, "healed", &data).await;
    completer_drives[3..6]
        .iter()
        .for_each(|d| d.slow_down_writes(500 * MS));
    completer_drives[6..]
        .iter()
        .for_each(|d| d.fail(&[Call::MetaApply]));
    let complete = tokio::spawn({
        let (completer, upload_id) = (completer.clone(), upload_id.clone());
        async move {
            let options = completing_part_one(&etag);
            (completer.complete_multipart_upload(&bucket(), &key("healed"), &upload_id, options))
                .await
        }
    });
    tokio::time::sleep(150 * MS).await;
    healer.heal_uploads(&HealScope::default()).await.unwrap();
    complete
        .await
        .unwrap()
        .expect("the completion wins on six drives");

    let listed = (healer.list_multipart_uploads(&bucket(), &Default::default()))
        .await
        .unwrap();
    assert!(listed.uploads.is_empty(), "a completed upload is listed");
    let aborted = (healer.abort_multipart_upload(&bucket(), &key("healed"), &upload_id)).await;
    assert!(
        matches!(aborted, Err(ObjectError::NoSuchUpload)),
        "{aborted:?}"
    );
    assert_eq!(read(&healer, "healed").await.unwrap(), data);

    healer.heal_uploads(&HealScope::default()).await.unwrap();
    for (i, drive) in drives.faulty.iter().enumerate() {
        let key = format!("{BUCKET}\0healed\0{upload_id}").into_bytes();
        let held = drive.meta_get(MetaTable::Uploads, key).await.unwrap();
        assert!(held.is_none(), "drive {i} still holds the upload's record");
    }
    let scope = HealScope::default();
    (healer.heal_objects(&scope, HealDepth::Quick, None, |_| {}))
        .await
        .unwrap();
    assert_eq!(
        read(&drives.store(&[0, 1, 2]), "healed").await.unwrap(),
        data
    );
}
