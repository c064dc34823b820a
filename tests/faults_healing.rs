//! Healing against the real server: shards a read finds corrupt are rebuilt, a wiped or
//! replaced drive is formatted into its place and rebuilt while the server serves, a drive
//! that was away gets what it missed (and loses what was deleted meanwhile), and the scrub
//! repairs damage nobody reads. Proof of a heal is always on disk or by losing other drives:
//! after healing, the healed drive must be able to stand in for three others.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use aws_sdk_s3::Client;
use common::*;

/// Objects of every storage shape: inline, several blocks, multipart.
struct Fixture {
    bucket: String,
    objects: Vec<(String, Vec<u8>)>,
}

async fn write_fixture(client: &Client, tag: &str) -> Fixture {
    let bucket = unique_bucket(tag);
    create_bucket(client, &bucket).await;
    let mut objects = Vec::new();
    for (i, size) in [0, 1, 100 * KIB, 128 * KIB + 1, 3 * MIB + 5]
        .into_iter()
        .enumerate()
    {
        let key = format!("single/{size}");
        let data = payload(size, 500 + i as u64);
        put(client, &bucket, &key, &data).await;
        objects.push((key, data));
    }
    let (p1, p2) = (payload(5 * MIB, 601), payload(MIB + 3, 602));
    multipart_put(client, &bucket, "multipart/ckpt", &[&p1, &p2]).await;
    objects.push(("multipart/ckpt".into(), [p1, p2].concat()));
    Fixture { bucket, objects }
}

async fn verify(client: &Client, fixture: &Fixture, when: &str) {
    for (key, data) in &fixture.objects {
        let got = match client
            .get_object()
            .bucket(&fixture.bucket)
            .key(key)
            .send()
            .await
        {
            Ok(out) => out.body.collect().await.expect("body").into_bytes(),
            Err(e) => panic!("{when}: GET {key}: {}", describe(&e)),
        };
        assert_same_bytes(&got, data, &format!("{when}: {key}"));
    }
}

/// Shard file path (relative to the drive) → sha256 of its content.
fn shard_hashes(drive: &Path) -> BTreeMap<PathBuf, String> {
    shard_files(drive)
        .into_iter()
        .map(|path| {
            let hash = sha256_hex(&std::fs::read(&path).expect("read shard"));
            (path.strip_prefix(drive).unwrap().to_path_buf(), hash)
        })
        .collect()
}

/// Waits until `check` holds, or fails with `what` after `timeout`.
async fn eventually(what: &str, timeout: Duration, mut check: impl FnMut() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(started.elapsed() < timeout, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Moves drive folders aside (a drive pulled out); returns where they went.
fn pull_drives(server: &TestServer, indexes: &[usize]) -> Vec<(PathBuf, PathBuf)> {
    indexes
        .iter()
        .map(|&i| {
            let drive = server.drives()[i].clone();
            let aside = drive.with_extension("pulled");
            std::fs::rename(&drive, &aside).expect("move drive aside");
            (drive, aside)
        })
        .collect()
}

fn put_back(pulled: &[(PathBuf, PathBuf)]) {
    for (drive, aside) in pulled {
        std::fs::rename(aside, drive).expect("put drive back");
    }
}

/// Heal passes the server has finished, from its log.
fn heal_passes(server: &TestServer) -> usize {
    server.log().matches("heal pass done").count()
}

/// The disk at `drive` dies and an empty one takes its place while the server runs; returns
/// once the heal pass that follows has finished.
async fn replace_drive_and_heal(server: &TestServer, drive: &Path) {
    std::fs::remove_dir_all(drive).unwrap();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    std::fs::create_dir_all(drive).unwrap();
    eventually(
        "the heal pass after the replacement",
        Duration::from_secs(60),
        || heal_passes(server) >= 1,
    )
    .await;
}

fn fast_checks() -> ServerOptions {
    ServerOptions {
        env: vec![("STRATA_DRIVE_CHECK_SECS".into(), "1".into())],
        ..ServerOptions::default()
    }
}

#[tokio::test]
async fn shards_a_read_finds_corrupt_are_rebuilt_on_disk() {
    let server = TestServer::start();
    let client = server.client();
    let fixture = write_fixture(&client, "heal-read").await;
    let damaged = [1, 7];
    let before: Vec<_> = damaged
        .iter()
        .map(|&i| shard_hashes(&server.drives()[i]))
        .collect();
    for &i in &damaged {
        for file in shard_files(&server.drives()[i]) {
            flip_bytes(&file);
        }
    }
    verify(&client, &fixture, "reads around the corruption").await;
    for (n, &i) in damaged.iter().enumerate() {
        let drive = server.drives()[i].clone();
        eventually(
            "the corrupt shards to be rewritten",
            Duration::from_secs(30),
            || shard_hashes(&drive) == before[n],
        )
        .await;
    }
}

#[tokio::test]
async fn a_wiped_drive_is_formatted_into_place_and_rebuilt_while_serving() {
    let server = TestServer::start_with(fast_checks());
    let client = server.client();
    let fixture = write_fixture(&client, "heal-wipe").await;
    let wiped = server.drives()[2].clone();
    let before = shard_hashes(&wiped);
    assert!(!before.is_empty());

    // The disk dies and an empty one takes its place, with the server running.
    replace_drive_and_heal(&server, &wiped).await;
    assert_eq!(
        shard_hashes(&wiped),
        before,
        "the rebuilt shards are the originals"
    );
    assert!(wiped.join(".strata/format.json").exists());
    verify(&client, &fixture, "after the rebuild").await;

    // Inline objects and records were rebuilt too: the new drive can stand in for three others.
    let pulled = pull_drives(&server, &[0, 4, 8]);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    verify(
        &client,
        &fixture,
        "rebuilt drive standing in for three pulled ones",
    )
    .await;
    put_back(&pulled);
}

#[tokio::test]
async fn a_returning_drive_gets_what_it_missed_and_loses_what_was_deleted() {
    let server = TestServer::start_with(fast_checks());
    let client = server.client();
    let mut fixture = write_fixture(&client, "heal-return").await;
    let away = pull_drives(&server, &[5]);
    tokio::time::sleep(Duration::from_millis(1500)).await;

    // While it is away: new objects, an overwrite, deletes.
    for (i, size) in [10 * KIB, 2 * MIB + 1].into_iter().enumerate() {
        let key = format!("while-away/{i}");
        let data = payload(size, 700 + i as u64);
        put(&client, &fixture.bucket, &key, &data).await;
        fixture.objects.push((key, data));
    }
    let replaced = payload(MIB + 11, 800);
    put(&client, &fixture.bucket, "single/1", &replaced).await;
    fixture.objects[1].1 = replaced;
    let deleted = ["single/3145733", "single/100"];
    for key in deleted {
        client
            .delete_object()
            .bucket(&fixture.bucket)
            .key(key)
            .send()
            .await
            .unwrap();
        fixture.objects.retain(|(k, _)| k != key);
    }
    let stale_shards = shard_files(&away[0].1).len();

    put_back(&away);
    let returned = server.drives()[5].clone();
    eventually(
        "the heal pass after the return",
        Duration::from_secs(60),
        || heal_passes(&server) >= 1,
    )
    .await;
    // The deleted objects' shards went, the new objects' shards came: the multipart
    // object's 2 parts, the 128 KiB + 1 object, the 1 MiB overwrite and the 2 MiB object.
    assert_eq!(shard_files(&returned).len(), 5);
    assert!(stale_shards > 0);

    // Deleted stays deleted, even where the stale drive counts.
    let pulled = pull_drives(&server, &[0, 1, 2]);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    verify(&client, &fixture, "returned drive standing in for three").await;
    for key in deleted {
        assert_s3_status(
            client
                .head_object()
                .bucket(&fixture.bucket)
                .key(key)
                .send()
                .await,
            404,
            &format!("deleted {key} came back"),
        );
    }
    let listed = list_all_keys(&client, &fixture.bucket, None).await;
    for key in deleted {
        assert!(
            !listed.contains(&key.to_string()),
            "{key} listed after delete"
        );
    }
    put_back(&pulled);
}

#[tokio::test]
async fn the_scrub_repairs_damage_nobody_reads() {
    let server = TestServer::start_with(ServerOptions {
        env: vec![
            ("STRATA_SCRUB_INTERVAL_SECS".into(), "2".into()),
            ("STRATA_SCRUB_BYTES_PER_SEC".into(), "104857600".into()),
        ],
        ..ServerOptions::default()
    });
    let client = server.client();
    let fixture = write_fixture(&client, "heal-scrub").await;
    let drive = server.drives()[4].clone();
    let before = shard_hashes(&drive);
    for file in shard_files(&drive) {
        flip_bytes(&file);
    }
    eventually(
        "the scrub to repair the shards",
        Duration::from_secs(60),
        || shard_hashes(&drive) == before,
    )
    .await;
    assert!(server.log().contains("scrub"), "the scrub pass is logged");
    verify(&client, &fixture, "after the scrub").await;
}

#[tokio::test]
async fn drives_late_at_start_are_never_purged_from() {
    let server = TestServer::start_with(fast_checks());
    let client = server.client();
    let fixture = write_fixture(&client, "heal-late").await;
    server.kill();
    // Four drives come online late: the set has no quorum at start and must decide nothing.
    let late: Vec<_> = [0, 2, 4, 6]
        .iter()
        .map(|&i| {
            let drive = server.drives()[i].clone();
            let aside = drive.with_extension("late");
            std::fs::rename(&drive, &aside).unwrap();
            (drive, aside)
        })
        .collect();
    server.restart();
    let client = server.client();
    tokio::time::sleep(Duration::from_secs(4)).await;
    for (drive, aside) in &late {
        std::fs::rename(aside, drive).unwrap();
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    verify(&client, &fixture, "after the late drives returned").await;
    let shards: usize = server.drives().iter().map(|d| shard_files(d).len()).sum();
    assert_eq!(shards, 9 * 4, "every shard file is still there");
}

#[tokio::test]
async fn orphaned_data_folders_are_collected_and_live_ones_kept() {
    let server = TestServer::start_with(ServerOptions {
        env: vec![
            ("STRATA_SCRUB_INTERVAL_SECS".into(), "2".into()),
            ("STRATA_ORPHAN_MIN_AGE_SECS".into(), "0".into()),
        ],
        ..ServerOptions::default()
    });
    let client = server.client();
    let fixture = write_fixture(&client, "heal-orphans").await;
    // A write cut short after its shards were placed: a data folder no record names.
    let mut orphans = Vec::new();
    for drive in server.drives() {
        let live = shard_files(drive)[0].parent().unwrap().to_path_buf();
        let bucket_dir = live.parent().unwrap().parent().unwrap();
        let orphan = bucket_dir
            .join("ff")
            .join("ffffffffffffffffffffffffffffffff");
        copy_dir_all(&live, &orphan);
        orphans.push(orphan);
    }
    eventually(
        "the orphaned folders to be collected",
        Duration::from_secs(60),
        || orphans.iter().all(|o| !o.exists()),
    )
    .await;
    verify(&client, &fixture, "live objects after the collection").await;
    let shards: usize = server.drives().iter().map(|d| shard_files(d).len()).sum();
    assert_eq!(shards, 9 * 4, "every live shard file is still there");
}

#[tokio::test]
async fn every_version_and_delete_marker_is_rebuilt_on_a_wiped_drive() {
    use aws_sdk_s3::types::BucketVersioningStatus;
    let server = TestServer::start_with(fast_checks());
    let client = server.client();
    let bucket = unique_bucket("heal-versions");
    create_bucket(&client, &bucket).await;
    set_versioning(&client, &bucket, BucketVersioningStatus::Enabled).await;
    // Three versions of a key (inline, several blocks, inline), and a key whose newest
    // version is a delete marker over data.
    let mut versions = Vec::new();
    for (i, size) in [10 * KIB, 2 * MIB + 7, 1].into_iter().enumerate() {
        let data = payload(size, 900 + i as u64);
        let out = client
            .put_object()
            .bucket(&bucket)
            .key("model.bin")
            .body(data.clone().into())
            .send()
            .await
            .unwrap();
        versions.push(("model.bin", out.version_id().unwrap().to_string(), data));
    }
    let hidden = payload(MIB, 950);
    let out = client
        .put_object()
        .bucket(&bucket)
        .key("hidden.bin")
        .body(hidden.clone().into())
        .send()
        .await
        .unwrap();
    versions.push(("hidden.bin", out.version_id().unwrap().to_string(), hidden));
    ok(
        client
            .delete_object()
            .bucket(&bucket)
            .key("hidden.bin")
            .send()
            .await,
        "DELETE (a delete marker)",
    );

    let wiped = server.drives()[4].clone();
    let before = shard_hashes(&wiped);
    replace_drive_and_heal(&server, &wiped).await;
    assert_eq!(
        shard_hashes(&wiped),
        before,
        "noncurrent shards rebuilt too"
    );

    // The rebuilt drive stands in for three others: every version and the marker are there.
    let pulled = pull_drives(&server, &[0, 1, 2]);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    for (key, id, data) in &versions {
        let got = client
            .get_object()
            .bucket(&bucket)
            .key(*key)
            .version_id(id)
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {key}?versionId={id}: {}", describe(&e)));
        assert_same_bytes(
            &got.body.collect().await.unwrap().into_bytes(),
            data,
            &format!("{key} version {id} from the rebuilt drive"),
        );
    }
    assert_s3_error(
        client
            .get_object()
            .bucket(&bucket)
            .key("hidden.bin")
            .send()
            .await,
        404,
        "NoSuchKey",
        "the delete marker was rebuilt",
    );
    let listed = ok(
        client.list_object_versions().bucket(&bucket).send().await,
        "ListObjectVersions",
    );
    assert_eq!(listed.versions().len(), 4);
    assert_eq!(listed.delete_markers().len(), 1);
    put_back(&pulled);
}

/// Three drives die between appends and empty ones take their places while more segments
/// arrive: the heal rebuilds every segment on them, those written before the loss (whose
/// shard files sit in the object's folder beside newer ones) and those written without them.
/// Proof: the three rebuilt drives then stand in for three others.
#[tokio::test]
async fn appended_segments_are_rebuilt_on_drives_lost_mid_appends() {
    let server = TestServer::start_with(fast_checks());
    let client = server.client();
    let bucket = unique_bucket("heal-appends");
    create_bucket(&client, &bucket).await;
    let mut object = payload(300 * KIB, 1);
    put(&client, &bucket, "log", &object).await;
    for i in 0..3 {
        let segment = payload(700 * KIB + i, 10 + i as u64);
        append(&client, &bucket, "log", object.len(), &segment).await;
        object.extend_from_slice(&segment);
    }

    let lost = [1, 4, 7];
    for &i in &lost {
        std::fs::remove_dir_all(&server.drives()[i]).unwrap();
    }
    tokio::time::sleep(Duration::from_millis(2500)).await;
    for i in 0..3 {
        let segment = payload(MIB + i, 20 + i as u64);
        append(&client, &bucket, "log", object.len(), &segment).await;
        object.extend_from_slice(&segment);
    }
    assert_same_bytes(
        &get(&client, &bucket, "log").await,
        &object,
        "with three drives lost",
    );
    let passes = heal_passes(&server);
    for &i in &lost {
        std::fs::create_dir_all(&server.drives()[i]).unwrap();
    }
    eventually(
        "the heal pass after the replacements",
        Duration::from_secs(60),
        || heal_passes(&server) > passes,
    )
    .await;
    for &i in &lost {
        assert_eq!(
            shard_files(&server.drives()[i]).len(),
            7,
            "drive {i}: one shard file per segment"
        );
    }

    let pulled = pull_drives(&server, &[0, 3, 8]);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let got = get(&client, &bucket, "log").await;
    assert_same_bytes(
        &got,
        &object,
        "the rebuilt drives standing in for three others",
    );
    put_back(&pulled);
}
