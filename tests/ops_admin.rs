//! The operator's view against the real server: the unauthenticated health endpoints, and
//! `strata admin info` / `strata admin heal` (the binary) against a running server.
//! Every test has its own server, with the drive monitor looking every second.

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::*;

/// How long the drive monitor (every second here) may take to notice a change.
const NOTICE_TIMEOUT: Duration = Duration::from_secs(20);

fn start() -> TestServer {
    TestServer::start_with(ServerOptions {
        env: vec![("STRATA_DRIVE_CHECK_SECS".into(), "1".into())],
        ..ServerOptions::default()
    })
}

/// Runs `strata admin ARGS --endpoint <server>` with the given root credentials.
fn admin_as(server: &TestServer, user: &str, password: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("admin")
        .args(args)
        .arg("--endpoint")
        .arg(server.endpoint())
        .env("STRATA_ROOT_USER", user)
        .env("STRATA_ROOT_PASSWORD", password)
        .env("NO_COLOR", "1")
        .output()
        .expect("run strata admin")
}

fn admin(server: &TestServer, args: &[&str]) -> Output {
    admin_as(server, ACCESS_KEY, SECRET_KEY, args)
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[track_caller]
fn assert_success(output: &Output, what: &str) {
    assert!(
        output.status.success(),
        "{what}: exit {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        stdout(output),
        stderr(output)
    );
}

/// `strata admin info --json`, parsed.
fn info_json(server: &TestServer) -> serde_json::Value {
    let output = admin(server, &["info", "--json"]);
    assert_success(&output, "admin info --json");
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("info --json is not JSON: {e}\n{}", stdout(&output)))
}

/// Every drive of the `info` answer, in order.
fn drives_of(info: &serde_json::Value) -> Vec<serde_json::Value> {
    info["sets"]
        .as_array()
        .expect("sets")
        .iter()
        .flat_map(|set| set["drives"].as_array().expect("drives").clone())
        .collect()
}

fn drive_state(info: &serde_json::Value, drive: &Path) -> String {
    let path = drive.display().to_string();
    drives_of(info)
        .into_iter()
        .find(|d| d["path"] == path.as_str())
        .unwrap_or_else(|| panic!("{path} not in info: {info}"))["state"]
        .as_str()
        .expect("state is a string")
        .to_string()
}

/// Polls until `check` holds; panics with `what` after the timeout.
async fn eventually<F: FnMut() -> bool>(what: &str, mut check: F) {
    let deadline = Instant::now() + NOTICE_TIMEOUT;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

async fn get_status(server: &TestServer, path: &str) -> (u16, String) {
    let response = raw_send("GET", &server.url(path), &[], Vec::new()).await;
    (response.status, response.text())
}

/// Polls an unsigned GET of `path` until it answers `want`; returns that body.
async fn wait_for_status(server: &TestServer, path: &str, want: u16) -> String {
    let deadline = Instant::now() + NOTICE_TIMEOUT;
    loop {
        let (status, body) = get_status(server, path).await;
        if status == want {
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "{path}: want {want}, still {status}: {body}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test]
async fn health_live_and_ready_follow_write_quorum() {
    let server = start();
    assert_eq!(get_status(&server, "/health/live").await.0, 200);
    let (status, body) = get_status(&server, "/health/ready").await;
    assert_eq!(status, 200, "ready with 9 drives: {body}");
    assert!(body.contains("\"ready\""), "{body}");

    // 4 of 9 drives (of a 6+3 set) gone: writes lose quorum.
    let removed = &server.drives()[..4];
    for drive in removed {
        std::fs::remove_dir_all(drive).expect("remove drive folder");
    }
    let body = wait_for_status(&server, "/health/ready", 503).await;
    assert!(body.contains("set 1 has 5 of 9 drives online"), "{body}");
    assert_eq!(get_status(&server, "/health/live").await.0, 200, "live");

    // Empty folders put back are formatted into their places: ready again.
    for drive in removed {
        std::fs::create_dir_all(drive).expect("recreate drive folder");
    }
    wait_for_status(&server, "/health/ready", 200).await;
}

#[tokio::test]
async fn a_signed_get_of_health_live_is_an_s3_request() {
    let server = start();
    let client = server.client();
    create_bucket(&client, "health").await;
    put(&client, "health", "live", b"an object, not a probe").await;
    assert_eq!(
        get(&client, "health", "live").await,
        b"an object, not a probe"
    );
    let signed = signed_send(
        &Signer::test(),
        "GET",
        &server.url("/health/live"),
        &[],
        Vec::new(),
    )
    .await;
    assert_eq!(signed.status, 200);
    assert_eq!(signed.text(), "an object, not a probe");
    // Unsigned, the same path is the probe.
    let (status, body) = get_status(&server, "/health/live").await;
    assert_eq!((status, body.as_str()), (200, r#"{"status":"live"}"#));
}

#[tokio::test]
async fn admin_info_lists_every_drive_online_with_its_space() {
    let server = start();
    let output = admin(&server, &["info"]);
    assert_success(&output, "admin info");
    let table = stdout(&output);
    assert!(table.contains("9/9 drives online"), "{table}");
    assert!(
        table.contains("objects to heal: 0"),
        "a healthy deployment has nothing to heal: {table}"
    );
    for drive in server.drives() {
        let path = drive.display().to_string();
        let row = table
            .lines()
            .find(|line| line.split_whitespace().next() == Some(path.as_str()))
            .unwrap_or_else(|| panic!("no row for {path}:\n{table}"));
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells[1], "online", "{row}");
        // used, free and total in human units, e.g. `1.20 GiB`.
        assert_eq!(cells.len(), 8, "{row}");
        for unit in [cells[3], cells[5], cells[7]] {
            assert!(unit.ends_with('B'), "sizes in {row}");
        }
    }

    let info = info_json(&server);
    let drives = drives_of(&info);
    assert_eq!(drives.len(), 9, "{info}");
    assert_eq!(info["ready"], true);
    assert_eq!(info["sets"][0]["write_quorum"], 6);
    assert_eq!(info["heal"]["objects_to_heal"], 0);
    for drive in &drives {
        assert_eq!(drive["state"], "online", "{drive}");
        let total = drive["total_bytes"].as_u64().expect("total");
        let free = drive["free_bytes"].as_u64().expect("free");
        let used = drive["used_bytes"].as_u64().expect("used");
        assert!(total > 0 && free <= total && used <= total, "{drive}");
    }

    // The same answer for a hand-signed request; none without a signature.
    let signed = signed_send(
        &Signer::test(),
        "GET",
        &server.url("/_strata/admin/v1/info"),
        &[],
        Vec::new(),
    )
    .await;
    assert_eq!(signed.status, 200, "{}", signed.text());
    let anonymous = raw_send(
        "GET",
        &server.url("/_strata/admin/v1/info"),
        &[],
        Vec::new(),
    )
    .await;
    assert_eq!(anonymous.status, 403);
    assert_eq!(
        anonymous.xml_element("Code").as_deref(),
        Some("AccessDenied")
    );
}

#[tokio::test]
async fn admin_info_shows_a_deleted_drive_offline() {
    let server = start();
    let gone = server.drives()[4].clone();
    std::fs::remove_dir_all(&gone).expect("remove drive folder");
    eventually("the drive shows offline", || {
        drive_state(&info_json(&server), &gone) == "offline"
    })
    .await;
    let output = admin(&server, &["info"]);
    assert_success(&output, "admin info");
    let table = stdout(&output);
    assert!(table.contains("8/9 drives online"), "{table}");
    let path = gone.display().to_string();
    let row = table
        .lines()
        .find(|line| line.split_whitespace().next() == Some(path.as_str()))
        .unwrap_or_else(|| panic!("no row for {path}:\n{table}"));
    assert_eq!(
        row.split_whitespace().collect::<Vec<_>>()[1..],
        ["offline", "-", "-", "-"],
        "{row}"
    );
    // 8 of 9 still have write quorum (6).
    assert_eq!(get_status(&server, "/health/ready").await.0, 200);
}

/// The number after `name` in the heal summary.
fn summary_count(summary: &str, name: &str) -> u64 {
    let line = summary
        .lines()
        .find(|l| l.trim_start().starts_with(name))
        .unwrap_or_else(|| panic!("no {name:?} in:\n{summary}"));
    line.trim_start()[name.len()..]
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("no count in {line:?}"))
}

#[tokio::test]
async fn admin_heal_rebuilds_deleted_shard_files() {
    let server = start();
    let client = server.client();
    let bucket = unique_bucket("heal");
    create_bucket(&client, &bucket).await;
    let mut objects = Vec::new();
    for i in 0..4u64 {
        let data = payload(MIB + 100 * i as usize, 500 + i);
        let key = format!("big/{i}");
        put(&client, &bucket, &key, &data).await;
        objects.push((key, data));
    }
    let damaged = &server.drives()[..2];
    let mut deleted = Vec::new();
    for drive in damaged {
        let files = shard_files(drive);
        assert!(!files.is_empty(), "no shard files on {}", drive.display());
        for file in files {
            std::fs::remove_file(&file).expect("delete shard file");
            deleted.push(file);
        }
    }

    let output = admin(&server, &["heal", &bucket]);
    assert_success(&output, "admin heal");
    let summary = stdout(&output);
    assert!(summary.contains(&format!("Healed {bucket}/")), "{summary}");
    assert_eq!(summary_count(&summary, "objects checked"), 4, "{summary}");
    assert!(
        summary_count(&summary, "shards rebuilt") >= deleted.len() as u64,
        "{summary}"
    );
    assert_eq!(summary_count(&summary, "unresolved"), 0, "{summary}");
    for file in &deleted {
        assert!(file.exists(), "{} not rebuilt", file.display());
    }
    for (key, data) in &objects {
        assert_object(&client, &bucket, key, data).await;
    }

    // A deep pass over everything finds nothing left to do, and says how it went.
    let output = admin(&server, &["heal", "--deep"]);
    assert_success(&output, "admin heal --deep");
    let summary = stdout(&output);
    assert!(summary.contains("Healed everything (deep)"), "{summary}");
    assert_eq!(summary_count(&summary, "shards rebuilt"), 0, "{summary}");
    let info = info_json(&server);
    assert_eq!(info["heal"]["last"]["reason"], "admin", "{info}");
    assert_eq!(info["heal"]["last"]["scope"], "", "{info}");
}

#[tokio::test]
async fn admin_heal_of_a_missing_bucket_fails() {
    let server = start();
    let output = admin(&server, &["heal", "no-such-bucket/some/prefix"]);
    assert!(!output.status.success(), "{}", stdout(&output));
    assert!(
        stderr(&output).contains("NoSuchBucket"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test]
async fn admin_with_wrong_credentials_prints_the_s3_error() {
    let server = start();
    let output = admin_as(&server, ACCESS_KEY, "not-the-secret-at-all", &["info"]);
    assert!(!output.status.success(), "{}", stdout(&output));
    assert!(
        stderr(&output).contains("SignatureDoesNotMatch"),
        "{}",
        stderr(&output)
    );
    let output = admin_as(&server, "nobody", "not-the-secret-at-all", &["heal"]);
    assert!(!output.status.success(), "{}", stdout(&output));
    assert!(
        stderr(&output).contains("InvalidAccessKeyId"),
        "{}",
        stderr(&output)
    );
}

/// The admin API takes requests signed in their headers with the SHA-256 of their body, as
/// `strata admin` sends them: not a presigned URL (a web page can make a browser open one),
/// not a header signature over an unsigned body.
#[tokio::test]
async fn the_admin_api_takes_only_header_signatures_over_the_body() {
    let server = start();
    let url = server.url("/_strata/admin/v1/info");
    let signer = Signer::new(ACCESS_KEY, SECRET_KEY);

    let hash = sha256_hex(b"");
    let (headers, _) = signer.sign("GET", &url, &[], &hash);
    let signed = raw_send("GET", &url, &headers, Vec::new()).await;
    assert_eq!(signed.status, 200, "{}", signed.text());

    let (headers, _) = signer.sign("GET", &url, &[], "UNSIGNED-PAYLOAD");
    let unsigned_body = raw_send("GET", &url, &headers, Vec::new()).await;
    assert_eq!(unsigned_body.status, 403, "{}", unsigned_body.text());

    let presigned = raw_send("GET", &signer.presign("GET", &url), &[], Vec::new()).await;
    assert_eq!(presigned.status, 403, "{}", presigned.text());
    assert_eq!(
        presigned.xml_element("Code").as_deref(),
        Some("AccessDenied")
    );
    // The same kind of URL still works for S3.
    let bucket = server.url("/presigned-bucket");
    let (headers, _) = signer.sign("PUT", &bucket, &[], &hash);
    assert_eq!(
        raw_send("PUT", &bucket, &headers, Vec::new()).await.status,
        200
    );
    let listing = raw_send("GET", &signer.presign("GET", &bucket), &[], Vec::new()).await;
    assert_eq!(listing.status, 200, "{}", listing.text());
}

/// `strata admin jobs` lists every background job of the server, and a job's passes show as
/// they run (the drive monitor looks every second here).
#[test]
fn jobs_lists_every_background_job_with_its_passes() {
    let server = TestServer::start_with(ServerOptions {
        env: vec![
            ("STRATA_DRIVE_CHECK_SECS".into(), "1".into()),
            (
                "STRATA_KMS_SECRET_KEY".into(),
                "admin-test-key:AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=".into(),
            ),
        ],
        ..ServerOptions::default()
    });
    let names = [
        "stale-upload-cleaner",
        "drive-monitor",
        "scrubber",
        "lifecycle",
        "usage-scanner",
        "read-healer",
        "heal-metrics-sampler",
        "identity-reload",
        "key-service",
    ];
    let deadline = Instant::now() + NOTICE_TIMEOUT;
    let monitor = loop {
        let output = admin(&server, &["jobs", "--json"]);
        assert_success(&output, "admin jobs --json");
        let jobs: Vec<serde_json::Value> = serde_json::from_str(&stdout(&output)).unwrap();
        let listed: Vec<&str> = jobs.iter().map(|j| j["name"].as_str().unwrap()).collect();
        for name in names {
            assert!(listed.contains(&name), "{name} is not listed: {listed:?}");
        }
        let monitor = jobs.iter().find(|j| j["name"] == "drive-monitor").unwrap();
        if monitor["passes"].as_u64().unwrap() >= 2 {
            break monitor.clone();
        }
        assert!(
            Instant::now() < deadline,
            "the drive monitor never ran: {monitor}"
        );
        std::thread::sleep(Duration::from_millis(300));
    };
    assert_eq!(monitor["interval_secs"], 1);
    assert_eq!(monitor["failures"], 0, "{monitor}");
    assert!(monitor["last_outcome"].is_string(), "{monitor}");
    assert!(
        monitor["last_finished_ms"].as_i64().unwrap() > 0,
        "{monitor}"
    );

    let output = admin(&server, &["jobs"]);
    assert_success(&output, "admin jobs");
    let table = stdout(&output);
    assert!(table.starts_with("JOB"), "{table}");
    for name in names {
        assert!(
            table.lines().any(|line| line.starts_with(name)),
            "{name} has no line in:\n{table}"
        );
    }
    let monitor_line = table
        .lines()
        .find(|l| l.starts_with("drive-monitor"))
        .unwrap();
    assert!(monitor_line.contains(" ago: "), "{monitor_line}");
}
