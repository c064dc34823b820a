//! The fault suite: one test per promise of the issue "faults", each against the real server
//! on 9 drives (one 6+3 set), each keeping an independent record of what the server
//! acknowledged (key → length and SHA-256) and checking every object against it.
//!
//! - drive loss: drive folders removed, replaced by a plain file, made read-only (1..3 of 9
//!   keep every operation working; 4 answer 503; nothing stored is damaged once they return);
//! - hung drive: a shard file that blocks on open (a FIFO); the GET answers within the drive
//!   deadline and later requests do not wait for the drive at all;
//! - full disk: small tmpfs drives filled up (ENOSPC); writes commit with quorum or fail
//!   cleanly, and work again once space is freed;
//! - metadata bitrot: the metadata database of drives damaged while the server is down;
//! - crash consistency: SIGKILL at randomized points of PUT, CompleteMultipartUpload and
//!   DELETE, then restart (seeded: `STRATA_FAULT_SEED=N` replays a run, `STRATA_FAULT_KILLS`
//!   sets the number of kills);
//! - concurrency: many writers of one key, readers beside them.
//!
//! Faults that need root (mounts) are skipped with a printed reason where not permitted. Each
//! test prints `faults injected: N, objects checked: M, objects lost: 0` on stderr, even when
//! output is captured.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use aws_sdk_s3::Client;
use common::*;
use sha2::{Digest, Sha256};

// ---------------------------------------------------------------------------------------
// The independent record and the tally
// ---------------------------------------------------------------------------------------

/// What a key holds: nothing, or bytes of this length and SHA-256.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Content {
    Absent,
    Object { len: usize, sha256: [u8; 32] },
}

impl Content {
    fn of(data: &[u8]) -> Self {
        Content::Object {
            len: data.len(),
            sha256: Sha256::digest(data).into(),
        }
    }

    fn of_read(read: &Option<Vec<u8>>) -> Self {
        read.as_deref().map_or(Content::Absent, Content::of)
    }
}

impl fmt::Debug for Content {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Content::Absent => write!(f, "absent"),
            Content::Object { len, sha256 } => {
                write!(f, "{len} bytes sha256 {}…", hex::encode(&sha256[..6]))
            }
        }
    }
}

/// What the server acknowledged: key → content (absent keys are left out).
type Record = BTreeMap<String, Content>;

/// Counts faults and checks, collects losses, and prints the summary line.
struct Tally {
    name: &'static str,
    faults: usize,
    checked: usize,
    lost: Vec<String>,
}

impl Tally {
    fn new(name: &'static str) -> Self {
        Self {
            name,
            faults: 0,
            checked: 0,
            lost: Vec::new(),
        }
    }

    /// Checks one read against the contents the key may hold; returns what it holds.
    fn check(
        &mut self,
        when: &str,
        key: &str,
        read: Result<Option<Vec<u8>>, String>,
        allowed: &[Content],
    ) -> Option<Content> {
        self.checked += 1;
        match read {
            Ok(read) => {
                let got = Content::of_read(&read);
                if allowed.contains(&got) {
                    return Some(got);
                }
                self.lost.push(format!(
                    "{when}: {key} holds {got:?}, expected one of {allowed:?}"
                ));
            }
            Err(e) => self.lost.push(format!(
                "{when}: {key} unreadable (expected one of {allowed:?}): {e}"
            )),
        }
        None
    }

    /// Prints the summary (past the test harness's capture) and fails on any loss.
    fn finish(self) {
        let line = format!(
            "fault suite, {}: faults injected: {}, objects checked: {}, objects lost: {}",
            self.name,
            self.faults,
            self.checked,
            self.lost.len()
        );
        let _ = writeln!(std::io::stderr(), "{line}");
        assert!(
            self.lost.is_empty(),
            "{line}\n{}",
            self.lost
                .iter()
                .take(30)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

/// Writes a note past the test harness's capture.
fn note(text: &str) {
    let _ = writeln!(std::io::stderr(), "fault suite: {text}");
}

/// GET: `Ok(Some(bytes))`, `Ok(None)` for 404 NoSuchKey, `Err` for anything else.
async fn read_object(client: &Client, bucket: &str, key: &str) -> Result<Option<Vec<u8>>, String> {
    match client.get_object().bucket(bucket).key(key).send().await {
        Ok(out) => out
            .body
            .collect()
            .await
            .map(|b| Some(b.into_bytes().to_vec()))
            .map_err(|e| format!("body cut short: {e:?}")),
        Err(e) if status_of(&e) == Some(404) && code_of(&e).as_deref() == Some("NoSuchKey") => {
            Ok(None)
        }
        Err(e) => Err(describe(&e)),
    }
}

/// Every key of the record reads back as recorded, and the listing is exactly the record.
async fn verify_record(
    client: &Client,
    bucket: &str,
    record: &Record,
    tally: &mut Tally,
    when: &str,
) {
    for (key, want) in record {
        let read = read_object(client, bucket, key).await;
        tally.check(when, key, read, &[*want]);
    }
    let listed = list_all_keys(client, bucket, None).await;
    let want: Vec<&String> = record.keys().collect();
    assert_eq!(
        listed.iter().collect::<Vec<_>>(),
        want,
        "{when}: the listing is not what was acknowledged"
    );
}

async fn put_recorded(client: &Client, bucket: &str, key: &str, data: &[u8], record: &mut Record) {
    put(client, bucket, key, data).await;
    record.insert(key.to_string(), Content::of(data));
}

/// Objects of every size class (empty, inline, just past inline, several blocks) and a
/// multipart one, under `prefix`.
async fn write_objects(
    client: &Client,
    bucket: &str,
    prefix: &str,
    seed: u64,
    record: &mut Record,
) {
    for (i, size) in [0, 1, 10 * KIB, 128 * KIB + 1, MIB + 1, 3 * MIB + 5]
        .into_iter()
        .enumerate()
    {
        let data = payload(size, seed + i as u64);
        put_recorded(client, bucket, &format!("{prefix}{size}"), &data, record).await;
    }
    let p1 = payload(5 * MIB, seed + 100);
    let p2 = payload(MIB + 7, seed + 101);
    let key = format!("{prefix}multipart");
    multipart_put(client, bucket, &key, &[&p1, &p2]).await;
    record.insert(key, Content::of(&[p1, p2].concat()));
}

/// Entries in the drives' staging folders.
fn staging_entries(drives: &[PathBuf]) -> Vec<PathBuf> {
    drives
        .iter()
        .flat_map(|drive| {
            std::fs::read_dir(drive.join(".strata").join("tmp"))
                .map(|entries| entries.flatten().map(|e| e.path()).collect::<Vec<_>>())
                .unwrap_or_default()
        })
        .collect()
}

/// Staging data that stays on the drives: what is still there after writes in flight (heals
/// of returned drives included) had 10 s to finish.
async fn staging_leftovers(drives: &[PathBuf]) -> Vec<PathBuf> {
    let started = Instant::now();
    loop {
        let entries = staging_entries(drives);
        if entries.is_empty() || started.elapsed() > Duration::from_secs(10) {
            return entries;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

// ---------------------------------------------------------------------------------------
// Mounts (root only)
// ---------------------------------------------------------------------------------------

fn run(program: &str, args: &[&str]) -> Result<(), String> {
    match Command::new(program).args(args).output() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(format!(
            "`{program} {}` failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Err(format!("`{program}` could not run: {e}")),
    }
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("temp paths are UTF-8")
}

/// Mounts made by a test, undone when it ends, panics included. Declare it after the temp
/// folder and before the server, so that the server is killed before the unmounts and the
/// folder removed after them.
#[derive(Default)]
struct Mounts(Vec<PathBuf>);

impl Mounts {
    fn tmpfs(&mut self, dir: &Path, size: &str) -> Result<(), String> {
        run(
            "mount",
            &[
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size}"),
                "tmpfs",
                path_str(dir),
            ],
        )?;
        self.0.push(dir.to_path_buf());
        Ok(())
    }

    /// Makes `dir` read-only (for new opens, renames, creations) with a read-only bind mount
    /// of it onto itself.
    fn read_only(&mut self, dir: &Path) -> Result<(), String> {
        run("mount", &["--bind", path_str(dir), path_str(dir)])?;
        self.0.push(dir.to_path_buf());
        run("mount", &["-o", "remount,bind,ro", path_str(dir)])
    }

    fn unmount(&mut self, dir: &Path) {
        if let Some(at) = self.0.iter().rposition(|d| d == dir) {
            self.0.remove(at);
            if run("umount", &[path_str(dir)]).is_err() {
                let _ = run("umount", &["-l", path_str(dir)]);
            }
        }
    }
}

impl Drop for Mounts {
    fn drop(&mut self) {
        while let Some(dir) = self.0.last().cloned() {
            self.unmount(&dir);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Drive loss
// ---------------------------------------------------------------------------------------

/// One round of every operation on a degraded set: new objects of every size class, an
/// overwrite, a delete, a multipart upload, then every object read back and listed.
async fn degraded_round(
    client: &Client,
    bucket: &str,
    round: usize,
    record: &mut Record,
    tally: &mut Tally,
) {
    let when = format!("{round} drive(s) gone");
    let seed = 10_000 * round as u64;
    for (i, size) in [0, 20 * KIB, 128 * KIB + 1, 2 * MIB + 9]
        .into_iter()
        .enumerate()
    {
        let data = payload(size, seed + i as u64);
        let key = format!("gone-{round}/{size}");
        put_recorded(client, bucket, &key, &data, record).await;
    }
    // Overwrite one object, delete another (both written while healthy).
    let overwrite = format!("before/{}", 3 * MIB + 5);
    let data = payload(MIB + 100 * round, seed + 50);
    put_recorded(client, bucket, &overwrite, &data, record).await;
    let victim = [
        "before/1".to_string(),
        format!("before/{}", 10 * KIB),
        format!("before/{}", MIB + 1),
    ][round - 1]
        .clone();
    ok(
        client
            .delete_object()
            .bucket(bucket)
            .key(&victim)
            .send()
            .await,
        &format!("{when}: DELETE {victim}"),
    );
    record.remove(&victim);
    let read = read_object(client, bucket, &victim).await;
    tally.check(&when, &victim, read, &[Content::Absent]);
    let p1 = payload(5 * MIB, seed + 60);
    let p2 = payload(KIB, seed + 61);
    let key = format!("gone-{round}/multipart");
    multipart_put(client, bucket, &key, &[&p1, &p2]).await;
    record.insert(key, Content::of(&[p1, p2].concat()));
    verify_record(client, bucket, record, tally, &when).await;
}

/// GET, PUT and DELETE answer 503 ServiceUnavailable.
#[track_caller]
fn assert_unavailable<T: fmt::Debug, E: aws_sdk_s3::error::ProvideErrorMetadata + fmt::Debug>(
    result: Result<T, aws_sdk_s3::error::SdkError<E, aws_sdk_s3::config::http::HttpResponse>>,
    what: &str,
) {
    assert_s3_error(result, 503, "ServiceUnavailable", what);
}

#[tokio::test]
async fn drive_loss_up_to_three_keeps_every_operation_working_four_is_503() {
    let mut tally = Tally::new("drive loss");
    let (tmp, drives) = TestServer::temp_drives(9);
    let mut mounts = Mounts::default();
    let server = TestServer::start_with(ServerOptions {
        drives: Some(drives.clone()),
        // Returned drives are taken back within a second.
        env: vec![("STRATA_DRIVE_CHECK_SECS".into(), "1".into())],
        ..ServerOptions::default()
    });
    let client = server.client();
    let bucket = unique_bucket("loss");
    create_bucket(&client, &bucket).await;
    let mut record = Record::new();
    write_objects(&client, &bucket, "before/", 1, &mut record).await;
    verify_record(&client, &bucket, &record, &mut tally, "healthy").await;

    let aside = |i: usize| tmp.path().join(format!("d{}.aside", i + 1));
    let move_aside = |i: usize| {
        std::fs::rename(&drives[i], aside(i))
            .unwrap_or_else(|e| panic!("move {} aside: {e}", drives[i].display()));
    };

    // 1 gone: drive 2's folder removed (moved aside, to be put back as it was).
    move_aside(1);
    tally.faults += 1;
    degraded_round(&client, &bucket, 1, &mut record, &mut tally).await;

    // 2 gone: drive 5's folder replaced by a plain file.
    move_aside(4);
    std::fs::write(&drives[4], b"not a drive").unwrap();
    tally.faults += 1;
    degraded_round(&client, &bucket, 2, &mut record, &mut tally).await;

    // 3 gone: drive 8 read-only: new files, renames and removals fail with EROFS. (A
    // read-only bind mount leaves files opened before writable, so the metadata database
    // of the drive still takes writes: only its shard files are refused.)
    let read_only = match mounts.read_only(&drives[7]) {
        Ok(()) => {
            assert!(
                std::fs::write(drives[7].join("probe"), b"x").is_err(),
                "the read-only mount took a write"
            );
            true
        }
        Err(reason) => {
            note(&format!(
                "read-only drive variant skipped ({reason}); drive 8 is removed instead"
            ));
            move_aside(7);
            false
        }
    };
    tally.faults += 1;
    degraded_round(&client, &bucket, 3, &mut record, &mut tally).await;

    // 4 gone: drives 1, 2, 5, 8 (the read-only one is removed outright, so reads fail too).
    if read_only {
        mounts.unmount(&drives[7]);
        move_aside(7);
    }
    move_aside(0);
    tally.faults += 1;
    for key in record.keys() {
        assert_unavailable(
            client.get_object().bucket(&bucket).key(key).send().await,
            &format!("4 gone: GET {key}"),
        );
    }
    for (i, size) in [10, 100 * KIB, 2 * MIB + 3].into_iter().enumerate() {
        assert_unavailable(
            client
                .put_object()
                .bucket(&bucket)
                .key(format!("gone-4/{size}"))
                .body(payload(size, 40_000 + i as u64).into())
                .send()
                .await,
            &format!("4 gone: PUT {size} bytes"),
        );
    }
    let (existing, _) = record.iter().next().expect("objects stored");
    assert_unavailable(
        client
            .put_object()
            .bucket(&bucket)
            .key(existing)
            .body(payload(MIB, 40_100).into())
            .send()
            .await,
        "4 gone: overwrite",
    );
    assert_unavailable(
        client
            .delete_object()
            .bucket(&bucket)
            .key(existing)
            .send()
            .await,
        "4 gone: DELETE",
    );
    match client.list_objects_v2().bucket(&bucket).send().await {
        Err(e) => assert_eq!(status_of(&e), Some(503), "4 gone: LIST: {}", describe(&e)),
        Ok(out) => {
            note("drive loss: with 4 drives gone LIST still answers");
            let listed: Vec<&str> = out.contents().iter().filter_map(|o| o.key()).collect();
            let want: Vec<&str> = record.keys().map(String::as_str).collect();
            assert_eq!(listed, want, "4 gone: a LIST that answers must be right");
        }
    }

    // The drives return as they were: nothing stored is damaged.
    std::fs::remove_file(&drives[4]).unwrap();
    for i in [0, 1, 4, 7] {
        std::fs::rename(aside(i), &drives[i]).unwrap();
    }
    let back = Instant::now();
    let first = record.keys().next().expect("objects stored").clone();
    while read_object(&client, &bucket, &first).await.is_err() {
        assert!(
            back.elapsed() < Duration::from_secs(30),
            "the returned drives were not taken back within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    verify_record(&client, &bucket, &record, &mut tally, "drives returned").await;
    put_recorded(
        &client,
        &bucket,
        "after/return",
        &payload(2 * MIB, 50_000),
        &mut record,
    )
    .await;
    server.restart();
    let client = server.client();
    verify_record(
        &client,
        &bucket,
        &record,
        &mut tally,
        "drives returned, restart",
    )
    .await;
    let leftovers = staging_leftovers(&drives).await;
    assert!(
        leftovers.is_empty(),
        "staging data left behind: {leftovers:?}"
    );
    drop(server);
    drop(mounts);
    tally.finish();
}

// ---------------------------------------------------------------------------------------
// Hung drive
// ---------------------------------------------------------------------------------------

/// Lets a reader blocked in `open()` of a FIFO go on: opening it read-write (through a hard
/// link, in case the server replaced the name) counts as a writer.
struct FifoRelease(PathBuf);

impl Drop for FifoRelease {
    fn drop(&mut self) {
        let _ = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&self.0);
        let _ = std::fs::remove_file(&self.0);
    }
}

#[tokio::test]
async fn hung_drive_is_served_around_within_the_deadline() {
    const DEADLINE: Duration = Duration::from_secs(2);
    let mut tally = Tally::new("hung drive");
    let server = TestServer::start_with(ServerOptions {
        env: vec![("STRATA_DRIVE_TIMEOUT_SECS".into(), "2".into())],
        ..ServerOptions::default()
    });
    let client = server.client();
    let bucket = unique_bucket("hung");
    create_bucket(&client, &bucket).await;
    let mut record = Record::new();
    // The object whose shard on drive 1 will hang: the only shard file there so far.
    put_recorded(
        &client,
        &bucket,
        "large",
        &payload(2 * MIB + 3, 1),
        &mut record,
    )
    .await;
    let shards = shard_files(&server.drives()[0]);
    assert_eq!(shards.len(), 1, "{shards:?}");
    put_recorded(
        &client,
        &bucket,
        "inline",
        &payload(20 * KIB, 2),
        &mut record,
    )
    .await;
    put_recorded(&client, &bucket, "other", &payload(MIB + 5, 3), &mut record).await;

    // Drive 1's shard becomes a FIFO: open() blocks until a writer comes, which none does.
    let shard = &shards[0];
    std::fs::remove_file(shard).unwrap();
    run("mkfifo", &[path_str(shard)]).expect("mkfifo");
    let link = server.drives()[0].with_extension("fifo");
    std::fs::hard_link(shard, &link).unwrap();
    let release = FifoRelease(link);
    tally.faults += 1;

    // The first GET waits for the deadline, then reads from the other drives.
    let started = Instant::now();
    let read = read_object(&client, &bucket, "large").await;
    let took = started.elapsed();
    tally.check("hung", "large", read, &[record["large"]]);
    assert!(
        took >= DEADLINE - Duration::from_millis(200),
        "the GET took {took:?}: the FIFO did not hang the drive, so nothing was tested"
    );
    assert!(
        took < DEADLINE + Duration::from_secs(6),
        "the GET of an object with a hung shard took {took:?} (deadline {DEADLINE:?})"
    );
    let log = server.run_log();
    assert!(
        log.lines()
            .any(|l| l.contains("did not answer in time") && l.contains("d1")),
        "no log line marking drive 1 stalled:\n{log}"
    );
    // Operators see it: `strata admin info` reports the drive stalled.
    let info = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["admin", "--endpoint", &server.endpoint(), "info", "--json"])
        .env("STRATA_ROOT_USER", ACCESS_KEY)
        .env("STRATA_ROOT_PASSWORD", SECRET_KEY)
        .output()
        .expect("run strata admin info");
    let info = String::from_utf8_lossy(&info.stdout);
    assert!(
        info.contains("\"stalled\""),
        "admin info does not show the stalled drive: {info}"
    );

    // The drive is marked stalled: nothing waits for it any more.
    let fast = DEADLINE - Duration::from_millis(500);
    let timed = |what: &str, started: Instant| {
        let took = started.elapsed();
        assert!(
            took < fast,
            "{what} took {took:?} with drive 1 stalled: it waited for the drive"
        );
    };
    for key in ["large", "inline", "other"] {
        let started = Instant::now();
        let read = read_object(&client, &bucket, key).await;
        tally.check("stalled", key, read, &[record[key]]);
        timed(&format!("GET {key}"), started);
    }
    let started = Instant::now();
    put_recorded(&client, &bucket, "new", &payload(2 * MIB, 4), &mut record).await;
    timed("PUT", started);
    let started = Instant::now();
    let read = read_object(&client, &bucket, "new").await;
    tally.check("stalled", "new", read, &[record["new"]]);
    timed("GET new", started);
    let started = Instant::now();
    ok(
        client
            .delete_object()
            .bucket(&bucket)
            .key("other")
            .send()
            .await,
        "DELETE",
    );
    record.remove("other");
    timed("DELETE", started);
    let started = Instant::now();
    verify_record(&client, &bucket, &record, &mut tally, "stalled").await;
    timed("GET every object and LIST", started);
    note(&format!(
        "hung drive: first GET {took:?} (deadline {DEADLINE:?}), later requests each < {fast:?}"
    ));
    // The blocked open() returns; its thread is free again.
    drop(release);
    drop(server);
    tally.finish();
}

// ---------------------------------------------------------------------------------------
// Full disk
// ---------------------------------------------------------------------------------------

/// Fills a drive's filesystem with a ballast file until ENOSPC.
fn fill(drive: &Path) -> u64 {
    let path = drive.join("ballast");
    let mut file = std::fs::File::create(&path).expect("create ballast");
    let mut written = 0u64;
    for chunk in [MIB, 4 * KIB] {
        let block = vec![0xA5u8; chunk];
        loop {
            match file.write(&block) {
                Ok(0) => break,
                Ok(n) => written += n as u64,
                Err(e) if e.kind() == std::io::ErrorKind::StorageFull => break,
                Err(e) => panic!("ballast on {}: {e}", drive.display()),
            }
        }
    }
    written
}

/// A write on a set with too many full drives: it commits, or fails with 507
/// XStrataStorageFull or 503 ServiceUnavailable.
async fn put_or_clean_failure(
    client: &Client,
    bucket: &str,
    key: &str,
    data: &[u8],
    record: &mut Record,
) -> String {
    match client
        .put_object()
        .bucket(bucket)
        .key(key)
        .body(data.to_vec().into())
        .send()
        .await
    {
        Ok(_) => {
            record.insert(key.to_string(), Content::of(data));
            "200".into()
        }
        Err(e) => {
            let (status, code) = (status_of(&e), code_of(&e));
            assert!(
                matches!(
                    (status, code.as_deref()),
                    (Some(507), Some("XStrataStorageFull"))
                        | (Some(503), Some("ServiceUnavailable"))
                ),
                "PUT {key} on full drives: want 507 XStrataStorageFull or 503, got {}",
                describe(&e)
            );
            format!("{} {}", status.unwrap_or(0), code.unwrap_or_default())
        }
    }
}

/// Drives 1-4 on 32 MiB filesystems of their own, filled one after the other: with 1..3
/// full every write commits with quorum on the others, with 4 full writes fail cleanly, and
/// what is stored stays readable throughout. Then the ballast is deleted and, after a
/// restart if `restart_when_freed`, writes work again and no staging data is left behind.
async fn full_disk_scenario(name: &'static str, restart_when_freed: bool) {
    let mut tally = Tally::new(name);
    let (_tmp, drives) = TestServer::temp_drives(9);
    let mut mounts = Mounts::default();
    for drive in &drives[..4] {
        if let Err(reason) = mounts.tmpfs(drive, "32m") {
            note(&format!(
                "{name}: skipped, a size-limited tmpfs cannot be mounted here ({reason})"
            ));
            return;
        }
    }
    let server = TestServer::start_with(ServerOptions {
        drives: Some(drives.clone()),
        ..ServerOptions::default()
    });
    let client = server.client();
    let bucket = unique_bucket("full");
    create_bucket(&client, &bucket).await;
    let mut record = Record::new();
    write_objects(&client, &bucket, "before/", 1, &mut record).await;

    // 1..3 full: every write commits with quorum on the others.
    for (n, drive) in drives[..3].iter().enumerate() {
        let n = n + 1;
        fill(drive);
        tally.faults += 1;
        for (i, size) in [10 * KIB, 300 * KIB, 2 * MIB + 3].into_iter().enumerate() {
            let data = payload(size, 1000 * n as u64 + i as u64);
            put_recorded(
                &client,
                &bucket,
                &format!("full-{n}/{size}"),
                &data,
                &mut record,
            )
            .await;
        }
        let overwrite = format!("before/{}", 3 * MIB + 5);
        let data = payload(MIB + n, 1000 * n as u64 + 50);
        put_recorded(&client, &bucket, &overwrite, &data, &mut record).await;
        let victim = format!("before/{}", [1, 10 * KIB, MIB + 1][n - 1]);
        ok(
            client
                .delete_object()
                .bucket(&bucket)
                .key(&victim)
                .send()
                .await,
            &format!("{n} full: DELETE"),
        );
        record.remove(&victim);
        verify_record(&client, &bucket, &record, &mut tally, &format!("{n} full")).await;
    }

    // 4 full: writes fail cleanly (or commit), and what is stored stays readable.
    fill(&drives[3]);
    tally.faults += 1;
    let mut outcomes = Vec::new();
    for (i, size) in [10 * KIB, 300 * KIB, 2 * MIB + 3].into_iter().enumerate() {
        let data = payload(size, 4000 + i as u64);
        let key = format!("full-4/{size}");
        let outcome = put_or_clean_failure(&client, &bucket, &key, &data, &mut record).await;
        outcomes.push(format!("PUT {size}: {outcome}"));
    }
    note(&format!(
        "{name}: with 4 drives full: {}",
        outcomes.join(", ")
    ));
    verify_record(&client, &bucket, &record, &mut tally, "4 full").await;

    // Space freed: writes work again and no staging data is left behind.
    for drive in &drives[..4] {
        std::fs::remove_file(drive.join("ballast")).unwrap();
    }
    let leftovers = if restart_when_freed {
        server.restart();
        Vec::new()
    } else {
        staging_leftovers(&drives).await
    };
    let client = server.client();
    for (i, size) in [10 * KIB, 300 * KIB, 2 * MIB + 3].into_iter().enumerate() {
        let data = payload(size, 5000 + i as u64);
        let key = format!("freed/{size}");
        let put = client
            .put_object()
            .bucket(&bucket)
            .key(&key)
            .body(data.clone().into())
            .send()
            .await;
        if let Err(e) = put {
            panic!(
                "space freed{}: PUT {size} bytes still fails: {}",
                if restart_when_freed {
                    " and restarted"
                } else {
                    " (no restart)"
                },
                describe(&e)
            );
        }
        record.insert(key, Content::of(&data));
    }
    verify_record(&client, &bucket, &record, &mut tally, "space freed").await;
    assert!(
        leftovers.is_empty(),
        "staging data left on the drives after writes that met full drives: {leftovers:?}"
    );
    server.restart();
    let client = server.client();
    verify_record(
        &client,
        &bucket,
        &record,
        &mut tally,
        "space freed, restart",
    )
    .await;
    drop(server);
    drop(mounts);
    tally.finish();
}

#[tokio::test]
async fn full_disk_writes_commit_with_quorum_or_fail_cleanly() {
    full_disk_scenario("full disk", true).await;
}

#[tokio::test]
async fn full_disk_space_freed_is_usable_again_without_restart() {
    full_disk_scenario("full disk, no restart", false).await;
}

// ---------------------------------------------------------------------------------------
// Metadata bitrot
// ---------------------------------------------------------------------------------------

/// Flips one bit in every copy of `needle` in a file; returns how many it found.
fn flip_in_every(path: &Path, needle: &[u8]) -> usize {
    let mut data = std::fs::read(path).unwrap();
    let hits: Vec<usize> = data
        .windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(i, _)| i)
        .collect();
    for &at in &hits {
        data[at + needle.len() - 1] ^= 0x02;
    }
    std::fs::write(path, data).unwrap();
    hits.len()
}

#[tokio::test]
async fn metadata_bitrot_on_three_drives_loses_nothing() {
    let mut tally = Tally::new("metadata bitrot");
    let server = TestServer::start();
    let client = server.client();
    let bucket = unique_bucket("metarot");
    create_bucket(&client, &bucket).await;
    let mut record = Record::new();
    write_objects(&client, &bucket, "before/", 1, &mut record).await;
    // Many inline objects: they live in the metadata databases only.
    for i in 0..40 {
        let data = payload(1 + i * 997, 100 + i as u64);
        put_recorded(&client, &bucket, &format!("inline/{i}"), &data, &mut record).await;
    }
    server.kill();
    let meta = |i: usize| server.drives()[i].join(".strata").join("meta.redb");
    // Drive 2: bytes flipped all through, header included; drive 5: one bit of a record key
    // (a silent change of a key name unless the database checks its pages); drive 9: cut to
    // half its length.
    flip_bytes(&meta(1));
    assert!(
        flip_in_every(&meta(4), b"inline/17") > 0,
        "no record key found"
    );
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(meta(8))
        .unwrap();
    file.set_len(file.metadata().unwrap().len() / 2).unwrap();
    drop(file);
    tally.faults += 3;

    server.restart();
    let client = server.client();
    verify_record(&client, &bucket, &record, &mut tally, "metadata damaged").await;
    // Writes, overwrites and deletes still work.
    put_recorded(
        &client,
        &bucket,
        "after/new",
        &payload(MIB + 1, 7),
        &mut record,
    )
    .await;
    put_recorded(&client, &bucket, "inline/0", &payload(99, 8), &mut record).await;
    ok(
        client
            .delete_object()
            .bucket(&bucket)
            .key("inline/1")
            .send()
            .await,
        "DELETE",
    );
    record.remove("inline/1");
    verify_record(&client, &bucket, &record, &mut tally, "after writes").await;
    server.restart();
    let client = server.client();
    verify_record(&client, &bucket, &record, &mut tally, "second restart").await;
    drop(server);
    tally.finish();
}

// ---------------------------------------------------------------------------------------
// Crash consistency
// ---------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum OpKind {
    Put,
    Complete,
    Delete,
}

/// Per key: what was acknowledged, and the content of the operation in flight, if any.
#[derive(Clone, Copy, Debug)]
struct KeyState {
    acked: Content,
    in_flight: Option<Content>,
}

fn acked(content: Content) -> KeyState {
    KeyState {
        acked: content,
        in_flight: None,
    }
}

/// The crash test's record, shared with the writer task.
type States = Arc<Mutex<BTreeMap<String, KeyState>>>;

/// How long the requests the killer aims at took, per kind: kill delays are drawn within the
/// recent ones.
type Timings = Arc<Mutex<BTreeMap<OpKind, Vec<Duration>>>>;

/// The median of the last requests of a kind.
fn typical(timings: &Timings, kind: OpKind) -> Duration {
    let timings = timings.lock().unwrap();
    let all = &timings[&kind];
    let mut recent = all[all.len().saturating_sub(15)..].to_vec();
    recent.sort();
    recent[recent.len() / 2]
}

/// Content for a PUT: sizes that are empty, inline, just past inline and several blocks.
fn put_content(version: u64) -> Vec<u8> {
    const SIZES: [usize; 5] = [0, 50 * KIB, 128 * KIB + 1, MIB + MIB / 2 + 3, 2 * MIB + 17];
    payload(SIZES[(version % 5) as usize], version)
}

/// Parts for a multipart upload: one small part, one of a block and more, or a 5 MiB part
/// and a small one.
fn multipart_parts(version: u64) -> Vec<Vec<u8>> {
    match version % 3 {
        0 => vec![payload(100 * KIB + 1, version)],
        1 => vec![payload(MIB + 3, version)],
        _ => vec![payload(5 * MIB, version), payload(KIB + 1, version + 1)],
    }
}

/// Creates an upload and uploads its parts; returns its id and the completed-part list.
async fn prepare_upload(
    client: &Client,
    bucket: &str,
    key: &str,
    parts: &[Vec<u8>],
) -> Result<(String, Vec<CompletedPart>), String> {
    let created = client
        .create_multipart_upload()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .map_err(|e| describe(&e))?;
    let upload_id = created.upload_id().unwrap_or_default().to_string();
    let mut completed = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let n = i as i32 + 1;
        let out = client
            .upload_part()
            .bucket(bucket)
            .key(key)
            .upload_id(&upload_id)
            .part_number(n)
            .body(part.clone().into())
            .send()
            .await
            .map_err(|e| describe(&e))?;
        completed.push(
            CompletedPart::builder()
                .part_number(n)
                .e_tag(out.e_tag().unwrap_or_default())
                .build(),
        );
    }
    Ok((upload_id, completed))
}

async fn complete_upload(
    client: &Client,
    bucket: &str,
    key: &str,
    upload_id: &str,
    parts: Vec<CompletedPart>,
) -> Result<(), String> {
    client
        .complete_multipart_upload()
        .bucket(bucket)
        .key(key)
        .upload_id(upload_id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .set_parts(Some(parts))
                .build(),
        )
        .send()
        .await
        .map(drop)
        .map_err(|e| describe(&e))
}

/// Runs operations of one kind on random keys until the server dies.
struct CrashWriter {
    client: Client,
    bucket: String,
    keys: Vec<String>,
    kind: OpKind,
    states: States,
    timings: Timings,
    /// Told just before each request of the kind is sent: the killer counts them.
    started: tokio::sync::mpsc::UnboundedSender<()>,
}

impl CrashWriter {
    fn set_in_flight(&self, key: &str, content: Content) {
        self.states.lock().unwrap().get_mut(key).unwrap().in_flight = Some(content);
    }

    /// Returns the next free version once a request failed (the server died).
    async fn run(self, mut version: u64, seed: u64) -> u64 {
        let mut rng = TestRng::new(seed);
        let (client, bucket) = (&self.client, self.bucket.as_str());
        loop {
            let key = self.keys[rng.range(0, self.keys.len())].clone();
            version += 1;
            // A key already deleted is written first, outside the aim of the killer.
            if self.kind == OpKind::Delete
                && self.states.lock().unwrap()[&key].acked == Content::Absent
            {
                let data = put_content(version);
                self.set_in_flight(&key, Content::of(&data));
                if client
                    .put_object()
                    .bucket(bucket)
                    .key(&key)
                    .body(data.clone().into())
                    .send()
                    .await
                    .is_err()
                {
                    return version + 1;
                }
                *self.states.lock().unwrap().get_mut(&key).unwrap() = acked(Content::of(&data));
                continue;
            }
            // Multipart uploads are prepared outside the aim of the killer too.
            let upload = match self.kind {
                OpKind::Complete => {
                    let parts = multipart_parts(version);
                    match prepare_upload(client, bucket, &key, &parts).await {
                        Ok((id, completed)) => Some((id, completed, Content::of(&parts.concat()))),
                        Err(_) => return version + 1,
                    }
                }
                _ => None,
            };
            let data = put_content(version);
            let new = match (&upload, self.kind) {
                (Some((_, _, whole)), _) => *whole,
                (None, OpKind::Delete) => Content::Absent,
                (None, _) => Content::of(&data),
            };
            self.set_in_flight(&key, new);
            let _ = self.started.send(());
            let sent = Instant::now();
            let result = match upload {
                Some((id, completed, _)) => {
                    complete_upload(client, bucket, &key, &id, completed).await
                }
                None if self.kind == OpKind::Delete => client
                    .delete_object()
                    .bucket(bucket)
                    .key(&key)
                    .send()
                    .await
                    .map(drop)
                    .map_err(|e| describe(&e)),
                None => client
                    .put_object()
                    .bucket(bucket)
                    .key(&key)
                    .body(data.into())
                    .send()
                    .await
                    .map(drop)
                    .map_err(|e| describe(&e)),
            };
            match result {
                Ok(()) => {
                    *self.states.lock().unwrap().get_mut(&key).unwrap() = acked(new);
                    let mut timings = self.timings.lock().unwrap();
                    timings.entry(self.kind).or_default().push(sent.elapsed());
                }
                // The server died: the operation in flight may or may not have landed.
                Err(_) => return version + 1,
            }
        }
    }
}

#[tokio::test]
async fn crash_consistency_under_sigkill_at_random_points() {
    let seed: u64 = std::env::var("STRATA_FAULT_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                % 1_000_000_007
        });
    // Kills that must land while an operation is in flight, a third of them per kind.
    let wanted: usize = std::env::var("STRATA_FAULT_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(54);
    let per_kind = wanted.div_ceil(3);
    note(&format!(
        "crash consistency: seed {seed} (replay with STRATA_FAULT_SEED={seed}); \
         {wanted} kills wanted during PUT, CompleteMultipartUpload and DELETE"
    ));
    let mut rng = TestRng::new(seed);
    let mut tally = Tally::new("crash consistency");
    let server = TestServer::start();
    let bucket = unique_bucket("crash");
    let client = server.client();
    create_bucket(&client, &bucket).await;

    // Four keys per kind of operation; every key starts with an acknowledged object. The
    // warm-up requests give the first estimates of how long each kind takes.
    let kinds = [OpKind::Put, OpKind::Complete, OpKind::Delete];
    let keys_of = |kind: OpKind| -> Vec<String> {
        (0..4)
            .map(|i| format!("{kind:?}/{i}").to_lowercase())
            .collect()
    };
    let states: States = Arc::default();
    let timings: Timings = Arc::default();
    let mut version = 0u64;
    let timed = |kind: OpKind, took: Duration| {
        timings.lock().unwrap().entry(kind).or_default().push(took);
    };
    for kind in kinds {
        for key in keys_of(kind) {
            version += 1;
            let data = put_content(version);
            let sent = Instant::now();
            put(&client, &bucket, &key, &data).await;
            timed(OpKind::Put, sent.elapsed());
            states
                .lock()
                .unwrap()
                .insert(key, acked(Content::of(&data)));
        }
    }
    for i in 0..3u64 {
        let parts = multipart_parts(1_000_000 + i);
        let (id, completed) = prepare_upload(&client, &bucket, "warm-up", &parts)
            .await
            .unwrap();
        let sent = Instant::now();
        complete_upload(&client, &bucket, "warm-up", &id, completed)
            .await
            .unwrap();
        timed(OpKind::Complete, sent.elapsed());
        let sent = Instant::now();
        ok(
            client
                .delete_object()
                .bucket(&bucket)
                .key("warm-up")
                .send()
                .await,
            "warm-up DELETE",
        );
        timed(OpKind::Delete, sent.elapsed());
    }

    // Kill points: the killer waits for the n-th request of the round's kind to be sent,
    // then for a random part of the typical length of such a request (a kill that comes
    // after the request lands in the next one or between two).
    let mut landed: BTreeMap<OpKind, usize> = kinds.iter().map(|&k| (k, 0)).collect();
    let mut between = 0usize;
    let run_started = Instant::now();
    let mut round = 0usize;
    while landed.values().sum::<usize>() < wanted || landed.values().any(|&n| n < per_kind) {
        assert!(
            round < 3 * wanted,
            "{round} kills, only {landed:?} during an operation (seed {seed})"
        );
        let kind = *kinds
            .iter()
            .min_by_key(|k| (landed[k] >= per_kind, (**k as usize + 3 - round % 3) % 3))
            .unwrap();
        let nth = rng.range(1, 4);
        let typical = typical(&timings, kind);
        let delay =
            Duration::from_micros(rng.range(0, typical.as_micros().max(1000) as usize) as u64);
        let (started_tx, mut started_rx) = tokio::sync::mpsc::unbounded_channel();
        let writer = CrashWriter {
            client: server.client(),
            bucket: bucket.clone(),
            keys: keys_of(kind),
            kind,
            states: states.clone(),
            timings: timings.clone(),
            started: started_tx,
        };
        let writer = tokio::spawn(writer.run(version, rng.next_u64()));
        for _ in 0..nth {
            started_rx.recv().await.expect("the writer runs");
        }
        tokio::time::sleep(delay).await;
        server.kill();
        tally.faults += 1;
        version = writer.await.expect("writer task");
        let snapshot = states.lock().unwrap().clone();
        // Whether the kill hit a request of the round's kind (a DELETE round also re-writes
        // deleted keys first).
        let hit = snapshot.values().any(|s| match kind {
            OpKind::Delete => s.in_flight == Some(Content::Absent),
            _ => s.in_flight.is_some(),
        });
        match hit {
            true => *landed.get_mut(&kind).unwrap() += 1,
            false => between += 1,
        }

        server.restart();
        let client = server.client();
        let when = format!("kill {round} ({kind:?} {nth} +{delay:?} of {typical:?}, seed {seed})");
        let mut readable = BTreeSet::new();
        for (key, state) in &snapshot {
            let mut allowed = vec![state.acked];
            allowed.extend(state.in_flight);
            let read = read_object(&client, &bucket, key).await;
            let now = tally
                .check(&when, key, read, &allowed)
                .unwrap_or(state.acked);
            if now != Content::Absent {
                readable.insert(key.clone());
            }
            // What is readable now is the new baseline.
            states.lock().unwrap().insert(key.clone(), acked(now));
        }
        // Listed exactly when readable: never an object that lists but cannot be read.
        let listed: BTreeSet<String> = list_all_keys(&client, &bucket, None)
            .await
            .into_iter()
            .collect();
        if listed != readable {
            tally
                .lost
                .push(format!("{when}: listed {listed:?}, readable {readable:?}"));
        }
        round += 1;
    }
    note(&format!(
        "crash consistency: {round} kills in {:?}: during {landed:?}, elsewhere {between}",
        run_started.elapsed()
    ));
    drop(server);
    tally.finish();
}

// ---------------------------------------------------------------------------------------
// Concurrency
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn concurrent_writers_of_one_key_leave_exactly_one_whole_winner() {
    const WRITERS: usize = 12;
    const ROUNDS: usize = 3;
    let mut tally = Tally::new("concurrent writers");
    let server = TestServer::start();
    let client = server.client();
    let bucket = unique_bucket("contend");
    create_bucket(&client, &bucket).await;
    let first = payload(10, 0);
    put(&client, &bucket, "hot", &first).await;
    let mut current = Content::of(&first);

    for round in 0..ROUNDS {
        // Every writer sends its own content, inline and multi-block sizes mixed.
        let contents: Vec<Vec<u8>> = (0..WRITERS)
            .map(|w| {
                let size = [30 * KIB, MIB + 7, 128 * KIB + 1, 2 * MIB + 1][w % 4];
                payload(size + w, (round * 100 + w) as u64 + 1)
            })
            .collect();
        let mut allowed: Vec<Content> = contents.iter().map(|c| Content::of(c)).collect();
        allowed.push(current);
        let allowed = Arc::new(allowed);
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let readers: Vec<_> = (0..4)
            .map(|_| {
                let (client, bucket) = (client.clone(), bucket.clone());
                let (allowed, done) = (allowed.clone(), done.clone());
                tokio::spawn(async move {
                    let mut reads = Vec::new();
                    while !done.load(std::sync::atomic::Ordering::SeqCst) {
                        reads.push(read_object(&client, &bucket, "hot").await);
                    }
                    (reads, allowed)
                })
            })
            .collect();
        let writers: Vec<_> = contents
            .iter()
            .map(|data| {
                let (client, bucket, data) = (client.clone(), bucket.clone(), data.clone());
                tokio::spawn(async move {
                    client
                        .put_object()
                        .bucket(&bucket)
                        .key("hot")
                        .body(data.into())
                        .send()
                        .await
                        .map_err(|e| describe(&e))
                })
            })
            .collect();
        for (w, writer) in writers.into_iter().enumerate() {
            if let Err(e) = writer.await.unwrap() {
                panic!("round {round}: writer {w} failed: {e}");
            }
        }
        tally.faults += WRITERS;
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        for reader in readers {
            let (reads, allowed) = reader.await.unwrap();
            for read in reads {
                tally.check(&format!("round {round}, during"), "hot", read, &allowed);
            }
        }
        // Exactly one of the writers won, whole, and only its data is left on the drives.
        let read = read_object(&client, &bucket, "hot").await;
        let winners = &allowed[..WRITERS];
        if let Some(winner) = tally.check(&format!("round {round}, after"), "hot", read, winners) {
            current = winner;
            let w = winners.iter().position(|c| *c == winner).unwrap();
            let head = ok(
                client.head_object().bucket(&bucket).key("hot").send().await,
                "HEAD",
            );
            assert_eq!(head.e_tag(), Some(quoted_md5(&contents[w]).as_str()));
            let shards = shard_files(&server.drives()[0]).len();
            let want = usize::from(contents[w].len() > 128 * KIB);
            assert_eq!(
                shards, want,
                "round {round}: shard files of the losers left on drive 1"
            );
        }
        assert_eq!(list_all_keys(&client, &bucket, None).await, ["hot"]);
    }
    drop(server);
    tally.finish();
}
