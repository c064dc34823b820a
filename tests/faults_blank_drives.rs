//! Drives that come back blank never cost data. After a reboot in which some disks failed to
//! mount, their mount points are empty folders: the server formats them into their places
//! (or, when the set's other drives are mount points, leaves them alone), but a blank drive
//! never votes that anything is gone. Beyond the parity count of blank drives every lookup
//! answers 503 and nothing is purged; when the real disks return, every bucket and object
//! reads back identical. Within parity they are served around and healed as before.
//!
//! Real server, real folders; the failed-mount test mounts tmpfs drives where allowed.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use aws_sdk_s3::config::http::HttpResponse;
use aws_sdk_s3::Client;
use common::*;

const BUCKET: &str = "datasets";
/// The marker a drive carries while it is unhealed.
const UNHEALED_MARK: &str = ".strata/unhealed.json";

/// 30 objects: inline ones and some of several blocks.
async fn write_dataset(client: &Client) -> Vec<(String, Vec<u8>)> {
    create_bucket(client, BUCKET).await;
    let mut objects = Vec::new();
    for i in 0..30u64 {
        let size = match i % 5 {
            0 => 0,
            1 => 700,
            2 => 100 * KIB,
            3 => 200 * KIB + 3,
            _ => MIB + 17 * i as usize,
        };
        let key = format!("run-{}/shard-{i:02}", i % 3);
        let data = payload(size, 9000 + i);
        put(client, BUCKET, &key, &data).await;
        objects.push((key, data));
    }
    objects
}

/// Every bucket and object is there, byte for byte.
async fn assert_dataset(client: &Client, objects: &[(String, Vec<u8>)], when: &str) {
    let buckets = client
        .list_buckets()
        .send()
        .await
        .unwrap_or_else(|e| panic!("{when}: ListBuckets: {}", describe(&e)));
    let names: Vec<&str> = buckets.buckets().iter().filter_map(|b| b.name()).collect();
    assert_eq!(names, [BUCKET], "{when}: buckets");
    let mut keys: Vec<String> = objects.iter().map(|(k, _)| k.clone()).collect();
    keys.sort();
    assert_eq!(
        list_all_keys(client, BUCKET, None).await,
        keys,
        "{when}: listing"
    );
    for (key, data) in objects {
        let got = match client.get_object().bucket(BUCKET).key(key).send().await {
            Ok(out) => out.body.collect().await.expect("body").into_bytes(),
            Err(e) => panic!("{when}: GET {key}: {}", describe(&e)),
        };
        assert_same_bytes(&got, data, &format!("{when}: {key}"));
    }
}

/// Every way a client finds the bucket or an object answers 503: not NoSuchBucket, not
/// NoSuchKey, not an empty list.
async fn assert_unavailable(client: &Client, objects: &[(String, Vec<u8>)], when: &str) {
    let (key, _) = &objects[7];
    let statuses = [
        ("ListBuckets", failed(client.list_buckets().send().await)),
        (
            "HeadBucket",
            failed(client.head_bucket().bucket(BUCKET).send().await),
        ),
        (
            "GetObject",
            failed(client.get_object().bucket(BUCKET).key(key).send().await),
        ),
        (
            "HeadObject",
            failed(client.head_object().bucket(BUCKET).key(key).send().await),
        ),
        (
            "ListObjectsV2",
            failed(client.list_objects_v2().bucket(BUCKET).send().await),
        ),
    ];
    for (operation, status) in statuses {
        assert_eq!(status, Some(503), "{when}: {operation} must answer 503");
    }
}

/// The HTTP status of a failed request; `None` when it succeeded.
fn failed<T, E>(result: Result<T, aws_sdk_s3::error::SdkError<E, HttpResponse>>) -> Option<u16> {
    result.err().and_then(|e| status_of(&e))
}

/// Moves the drives aside and puts empty folders in their places (disks that did not
/// mount); returns where the originals went.
fn blank_drives(drives: &[PathBuf], indexes: &[usize]) -> Vec<(PathBuf, PathBuf)> {
    indexes
        .iter()
        .map(|&i| {
            let drive = drives[i].clone();
            let aside = drive.with_extension("original");
            std::fs::rename(&drive, &aside).expect("move the drive aside");
            std::fs::create_dir(&drive).expect("an empty folder in its place");
            (drive, aside)
        })
        .collect()
}

/// The real disks are mounted again: the blank folders go, the originals come back.
fn restore_originals(moved: &[(PathBuf, PathBuf)]) {
    for (drive, aside) in moved {
        std::fs::remove_dir_all(drive).expect("remove the blank drive");
        std::fs::rename(aside, drive).expect("put the original back");
    }
}

/// Waits until the server's current run has finished `count` heal passes.
async fn wait_for_heal_passes(server: &TestServer, count: usize) {
    eventually("heal passes", Duration::from_secs(60), || {
        server.run_log().matches("heal pass done").count() >= count
    })
    .await;
}

/// A server over nine fresh drives (looked at every `drive_check_secs`) that wrote the
/// dataset and was stopped.
async fn stopped_with_dataset(
    drive_check_secs: u64,
) -> (
    tempfile::TempDir,
    Vec<PathBuf>,
    TestServer,
    Vec<(String, Vec<u8>)>,
) {
    let (tmp, drives) = TestServer::temp_drives(9);
    let server = TestServer::start_with(options(&drives, drive_check_secs));
    let objects = write_dataset(&server.client()).await;
    server.kill();
    (tmp, drives, server, objects)
}

async fn eventually(what: &str, timeout: Duration, mut check: impl FnMut() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(started.elapsed() < timeout, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn options(drives: &[PathBuf], drive_check_secs: u64) -> ServerOptions {
    ServerOptions {
        drives: Some(drives.to_vec()),
        env: vec![(
            "STRATA_DRIVE_CHECK_SECS".into(),
            drive_check_secs.to_string(),
        )],
        ..ServerOptions::default()
    }
}

fn admin(server: &TestServer, args: &[&str]) -> Output {
    strata_admin(server, args)
}

/// Each drive's state in `strata admin info --json`, in order.
fn drive_states(server: &TestServer) -> Vec<String> {
    let output = admin(server, &["info", "--json"]);
    assert!(
        output.status.success(),
        "admin info: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let info: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    info["sets"][0]["drives"]
        .as_array()
        .expect("drives")
        .iter()
        .map(|d| d["state"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The reproduction, as an operator meets it: stop, four disks fail to mount, start,
/// stop a few seconds later, disks back, start.
#[tokio::test]
async fn four_blank_drives_at_start_lose_nothing_once_the_originals_return() {
    let (_tmp, drives, server, objects) = stopped_with_dataset(10).await;

    let moved = blank_drives(&drives, &[0, 1, 2, 3]);
    server.restart();
    assert_unavailable(&server.client(), &objects, "four blank drives").await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    server.kill();

    restore_originals(&moved);
    server.restart();
    assert_dataset(&server.client(), &objects, "the originals back").await;
}

/// The same, with the blank drives left in place through heal passes and a restart between
/// them: the restart must not turn them into voters, the passes must purge nothing.
#[tokio::test]
async fn blank_drives_stay_unhealed_through_heal_passes_and_restarts() {
    let (_tmp, drives, server, objects) = stopped_with_dataset(1).await;

    let moved = blank_drives(&drives, &[0, 1, 2, 3]);
    server.restart();
    wait_for_heal_passes(&server, 2).await;
    assert_unavailable(&server.client(), &objects, "after heal passes").await;
    assert!(
        server.run_log().contains("unresolved"),
        "heal passes report what they could not settle"
    );
    let states = drive_states(&server);
    assert_eq!(states[..4], ["healing"; 4], "{states:?}");

    // A restart in the middle: the formatted blank drives are still unhealed.
    server.restart();
    for (drive, _) in &moved {
        assert!(drive.join(UNHEALED_MARK).exists(), "{}", drive.display());
    }
    wait_for_heal_passes(&server, 2).await;
    assert_unavailable(&server.client(), &objects, "after a restart").await;
    server.kill();

    restore_originals(&moved);
    server.restart();
    assert_dataset(&server.client(), &objects, "the originals back").await;
}

/// Within the parity count blank drives are served around, healed, and then carry the set.
#[tokio::test]
async fn three_blank_drives_are_served_healed_and_then_stand_in_for_three_others() {
    let (_tmp, drives, server, objects) = stopped_with_dataset(1).await;

    let moved = blank_drives(&drives, &[0, 1, 2]);
    server.restart();
    assert_dataset(&server.client(), &objects, "three blank drives").await;
    eventually(
        "the blank drives to be healed",
        Duration::from_secs(60),
        || {
            moved
                .iter()
                .all(|(drive, _)| !drive.join(UNHEALED_MARK).exists())
        },
    )
    .await;
    assert_eq!(drive_states(&server), ["online"; 9]);
    assert!(
        moved
            .iter()
            .all(|(drive, _)| !shard_files(drive).is_empty()),
        "the healed drives hold shard files again"
    );

    // Three drives that were never blank go: the healed ones carry every object.
    server.kill();
    for drive in &drives[6..] {
        std::fs::rename(drive, drive.with_extension("pulled")).unwrap();
    }
    server.restart();
    assert_dataset(&server.client(), &objects, "healed drives standing in").await;
    for drive in &drives[6..] {
        std::fs::rename(drive.with_extension("pulled"), drive).unwrap();
    }
}

/// A drive whose metadata database is gone (deleted, or lost with a filesystem repair) holds
/// none of its set's history either: it is unhealed until a heal pass completes over it.
#[tokio::test]
async fn drives_that_lost_their_database_do_not_vote_until_healed() {
    let (_tmp, drives, server, objects) = stopped_with_dataset(1).await;

    let database = |i: usize| drives[i].join(".strata/meta.redb");
    for i in 0..4 {
        std::fs::rename(database(i), database(i).with_extension("saved")).unwrap();
    }
    server.restart();
    assert_unavailable(&server.client(), &objects, "four databases lost").await;
    wait_for_heal_passes(&server, 1).await;
    server.kill();
    for (i, drive) in drives[..4].iter().enumerate() {
        assert!(drive.join(UNHEALED_MARK).exists());
        std::fs::rename(database(i).with_extension("saved"), database(i)).unwrap();
    }

    // The databases are back: the drives hold everything, a heal pass finds it so, and
    // they vote (and list) again.
    server.restart();
    eventually("the drives to be healed", Duration::from_secs(60), || {
        (0..4).all(|i| !drives[i].join(UNHEALED_MARK).exists())
    })
    .await;
    assert_eq!(drive_states(&server), ["online"; 9]);
    assert_dataset(&server.client(), &objects, "databases restored").await;
}

/// Drives on filesystems of their own (tmpfs mounts): a drive whose disk does not mount
/// leaves an empty folder on the parent's filesystem, which is kept offline and
/// unformatted, shown in `strata admin info`, and formatted only on the operator's word or
/// when a real filesystem is mounted there. Needs root (mount); skipped without it.
#[tokio::test]
async fn an_empty_mount_point_is_not_formatted_until_an_operator_says_so() {
    let Some(mounts) = TmpfsDrives::mount(9) else {
        eprintln!("skipped: mounting tmpfs drives is not allowed here (the rule itself is unit-tested in deployment::mounts)");
        return;
    };
    let drives = mounts.drives.clone();
    let server = TestServer::start_with(options(&drives, 1));
    let objects = write_dataset(&server.client()).await;
    server.kill();

    // d1's disk does not mount: its mount point is an empty folder on the parent's disk.
    mounts.unmount(0);
    server.restart();
    assert_dataset(&server.client(), &objects, "d1 unmounted").await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        !drives[0].join(".strata").exists(),
        "an unmounted mount point must not be formatted"
    );
    assert_eq!(drive_states(&server)[0], "unmounted");
    let info = admin(&server, &["info"]);
    assert!(String::from_utf8_lossy(&info.stdout).contains("unmounted"));

    // The disk mounts again: it is taken back as it was.
    mounts.remount(0);
    eventually("d1 back in service", Duration::from_secs(30), || {
        drive_states(&server)[0] == "online"
    })
    .await;
    assert_dataset(&server.client(), &objects, "d1 mounted again").await;

    // The disk is gone for good: the operator formats the folder, and it is healed.
    server.kill();
    mounts.unmount(0);
    mounts.discard(0);
    server.restart();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!drives[0].join(".strata").exists());
    let path = drives[0].display().to_string();
    let formatted = admin(&server, &["drive", "format", &path]);
    assert!(
        formatted.status.success(),
        "drive format: {}",
        String::from_utf8_lossy(&formatted.stderr)
    );
    eventually("d1 formatted and healed", Duration::from_secs(60), || {
        drives[0].join(".strata/format.json").exists() && !drives[0].join(UNHEALED_MARK).exists()
    })
    .await;
    assert!(!shard_files(&drives[0]).is_empty(), "d1 was rebuilt");
    let again = admin(&server, &["drive", "format", &path]);
    assert!(
        !again.status.success(),
        "a drive in service is not formatted"
    );

    // A new disk mounted in a failed one's place is a replacement, formatted as before.
    server.kill();
    mounts.unmount(1);
    mounts.discard(1);
    mounts.mount_new(1);
    server.restart();
    eventually("d2 formatted and healed", Duration::from_secs(60), || {
        drives[1].join(".strata/format.json").exists() && !drives[1].join(UNHEALED_MARK).exists()
    })
    .await;
    assert_dataset(&server.client(), &objects, "a new disk in d2's place").await;
    server.kill();
}

/// Drive folders that are tmpfs mount points, unmounted (lazily) when dropped. A disk that
/// "does not mount" is moved aside (`mount --move`), keeping its content for a remount.
struct TmpfsDrives {
    _tmp: tempfile::TempDir,
    drives: Vec<PathBuf>,
    aside: Vec<PathBuf>,
}

impl TmpfsDrives {
    fn mount(count: usize) -> Option<Self> {
        let tmp = tempfile::Builder::new()
            .prefix("strata-mounts-")
            .tempdir()
            .ok()?;
        let mut mounts = Self {
            drives: (1..=count)
                .map(|i| tmp.path().join(format!("d{i}")))
                .collect(),
            aside: (1..=count)
                .map(|i| tmp.path().join(format!("aside{i}")))
                .collect(),
            _tmp: tmp,
        };
        for i in 0..count {
            std::fs::create_dir(&mounts.drives[i]).ok()?;
            std::fs::create_dir(&mounts.aside[i]).ok()?;
            if !run(
                "mount",
                &[
                    "-t",
                    "tmpfs",
                    "-o",
                    "size=256m",
                    "tmpfs",
                    path(&mounts.drives[i]),
                ],
            ) {
                mounts.drives.truncate(i);
                return None;
            }
        }
        Some(mounts)
    }

    /// The disk of drive `i` is no longer mounted at its folder.
    fn unmount(&self, i: usize) {
        assert!(run(
            "mount",
            &["--move", path(&self.drives[i]), path(&self.aside[i])]
        ));
    }

    fn remount(&self, i: usize) {
        assert!(run(
            "mount",
            &["--move", path(&self.aside[i]), path(&self.drives[i])]
        ));
    }

    /// The unmounted disk of drive `i` is gone for good.
    fn discard(&self, i: usize) {
        assert!(run("umount", &[path(&self.aside[i])]));
    }

    /// A new, empty disk is mounted at drive `i`'s folder.
    fn mount_new(&self, i: usize) {
        assert!(run(
            "mount",
            &[
                "-t",
                "tmpfs",
                "-o",
                "size=256m",
                "tmpfs",
                path(&self.drives[i])
            ]
        ));
    }
}

impl Drop for TmpfsDrives {
    fn drop(&mut self) {
        for folder in self.drives.iter().chain(&self.aside) {
            while run("umount", &["-l", path(folder)]) {}
        }
    }
}

fn path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 temp path")
}

/// Runs a command quietly; whether it succeeded.
fn run(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
