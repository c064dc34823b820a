//! Lifecycle transitions to tiers, end to end through the S3 API: a server with two tiers (a
//! second local drive pool, `WARM`, and another Strata server as a remote S3 tier, `COLD`),
//! rules from the aws CLI's JSON, and an accelerated clock. Objects age hot → WARM → COLD →
//! expired, read back identical at every stage; deletes reach the tier; a remote tier that is
//! down makes reads fail clearly and loses nothing; a pool drive replaced while the server
//! runs is rebuilt.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use aws_sdk_s3::Client;
use common::*;

/// The deployment master key of the tiered server (for SSE-S3 and SSE-KMS).
const MASTER_KEY: &str = "tier-test-key:AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=";

/// One lifecycle day, in seconds: long enough for the test to see every stage.
const DAY_SECONDS: u64 = 2;

/// A server with a `WARM` pool tier (4+2 over 6 folders) and a `COLD` tier on `remote`, in
/// bucket `archive` under `strata/`.
struct Tiered {
    server: TestServer,
    remote: TestServer,
    pool_drives: Vec<PathBuf>,
    _dir: tempfile::TempDir,
}

fn tiers_file(dir: &Path, pool_drives: &[PathBuf], remote: &TestServer) -> PathBuf {
    let doc = serde_json::json!({
        "tiers": [
            {
                "name": "WARM",
                "type": "pool",
                "drives": pool_drives,
                "data_shards": 4,
                "parity_shards": 2
            },
            {
                "name": "COLD",
                "type": "s3",
                "endpoint": remote.endpoint(),
                "bucket": "archive",
                "prefix": "strata/",
                "access_key": ACCESS_KEY,
                "secret_key": SECRET_KEY,
                "region": REGION
            }
        ]
    });
    let path = dir.join("tiers.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    path
}

async fn start_tiered() -> Tiered {
    // A fixed port: the remote tier is restarted where the tiers file says it is.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let remote = TestServer::start_with(ServerOptions {
        address: format!("127.0.0.1:{port}"),
        ..ServerOptions::default()
    });
    create_bucket(&remote.client(), "archive").await;
    let dir = tempfile::tempdir().unwrap();
    let pool_drives: Vec<PathBuf> = (1..=6)
        .map(|i| dir.path().join(format!("warm{i}")))
        .collect();
    let file = tiers_file(dir.path(), &pool_drives, &remote);
    let server = TestServer::start_with(ServerOptions {
        env: vec![
            (
                "STRATA_LIFECYCLE_DAY_SECONDS".into(),
                DAY_SECONDS.to_string(),
            ),
            ("STRATA_METRICS_AUTH".into(), "public".into()),
            ("STRATA_DRIVE_CHECK_SECS".into(), "1".into()),
            // For the encrypted objects' test.
            ("STRATA_KMS_SECRET_KEY".into(), MASTER_KEY.into()),
        ],
        extra_args: vec!["--tiers".into(), file.display().to_string()],
        ..ServerOptions::default()
    });
    Tiered {
        server,
        remote,
        pool_drives,
        _dir: dir,
    }
}

impl Tiered {
    async fn new_bucket(&self, prefix: &str) -> (Client, String) {
        let client = self.server.client();
        let bucket = unique_bucket(prefix);
        create_bucket(&client, &bucket).await;
        (client, bucket)
    }
}

/// Puts lifecycle rules written as the aws CLI's JSON, through `strata admin lifecycle set`
/// (which sends them as S3 XML).
fn set_rules(server: &TestServer, bucket: &str, rules_json: &str) {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), rules_json).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args([
            "admin",
            "--endpoint",
            &server.endpoint(),
            "lifecycle",
            "set",
        ])
        .arg(bucket)
        .arg(file.path())
        .env("STRATA_ROOT_USER", ACCESS_KEY)
        .env("STRATA_ROOT_PASSWORD", SECRET_KEY)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "strata admin lifecycle set: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The storage class HEAD reports (`STANDARD` when none is named), or `None` once gone.
async fn storage_class(client: &Client, bucket: &str, key: &str) -> Option<String> {
    match client.head_object().bucket(bucket).key(key).send().await {
        Ok(head) => Some(
            head.storage_class()
                .map(|c| c.as_str().to_string())
                .unwrap_or_else(|| "STANDARD".into()),
        ),
        Err(e) if e.raw_response().is_some_and(|r| r.status().as_u16() == 404) => None,
        Err(e) => panic!("HEAD {key}: {e:?}"),
    }
}

async fn wait_for_class(
    client: &Client,
    bucket: &str,
    key: &str,
    want: Option<&str>,
    timeout: Duration,
) {
    // A move needs a scanner pass and a copy, which on a loaded two-core machine can take
    // far longer than the lifecycle days a rule counts: the wait ends as soon as it is done.
    let deadline = Instant::now() + timeout.max(Duration::from_secs(60));
    loop {
        let class = storage_class(client, bucket, key).await;
        if class.as_deref() == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{key}: storage class {class:?}, waiting for {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Object names the remote tier's bucket holds.
async fn remote_objects(remote: &TestServer) -> Vec<String> {
    list_all_keys(&remote.client(), "archive", None).await
}

/// Reads the whole object and a range, and checks both against `want`.
async fn assert_reads(client: &Client, bucket: &str, key: &str, want: &[u8], stage: &str) {
    let got = get(client, bucket, key).await;
    assert_same_bytes(&got, want, &format!("{key} at {stage}"));
    let range = client
        .get_object()
        .bucket(bucket)
        .key(key)
        .range("bytes=1000-300999")
        .send()
        .await
        .unwrap_or_else(|e| panic!("range GET at {stage}: {e:?}"));
    let part = range.body.collect().await.unwrap().into_bytes();
    assert_same_bytes(
        &part,
        &want[1000..301_000],
        &format!("{key} range at {stage}"),
    );
}

/// The checkpoints' rule in full: WARM after a day, COLD after three, and, with
/// `expire`, gone after five.
fn checkpoint_rule(expire: bool) -> String {
    let expiration = if expire {
        r#", "Expiration": {"Days": 5}"#
    } else {
        ""
    };
    format!(
        r#"{{"Rules": [{{
            "ID": "checkpoints",
            "Status": "Enabled",
            "Filter": {{"Prefix": "ckpt/"}},
            "Transitions": [
                {{"Days": 1, "StorageClass": "WARM"}},
                {{"Days": 3, "StorageClass": "COLD"}}
            ]{expiration}
        }}]}}"#
    )
}

#[tokio::test]
async fn objects_age_from_hot_to_warm_to_cold_to_expired_and_read_back_identical() {
    let tiered = start_tiered().await;
    let (client, bucket) = tiered.new_bucket("tiers").await;
    set_rules(
        &tiered.server,
        &bucket,
        r#"{"Rules": [{
            "ID": "checkpoints",
            "Status": "Enabled",
            "Filter": {"Prefix": "ckpt/"},
            "Transitions": [{"Days": 1, "StorageClass": "WARM"}]
        }]}"#,
    );
    let data = payload(3 * MIB + 12_345, 7);
    let etag = put(&client, &bucket, "ckpt/step-1000.bin", &data).await;
    put(&client, &bucket, "keep/notes.bin", &data).await;
    // Small objects live in the metadata records: moving them would save nothing.
    let small = payload(100 * KIB, 8);
    put(&client, &bucket, "ckpt/small.json", &small).await;
    let meta = client
        .head_object()
        .bucket(&bucket)
        .key("ckpt/step-1000.bin")
        .send()
        .await
        .unwrap();
    assert_eq!(meta.e_tag(), Some(etag.as_str()));
    assert_reads(&client, &bucket, "ckpt/step-1000.bin", &data, "hot").await;

    let day = Duration::from_secs(DAY_SECONDS);
    wait_for_class(
        &client,
        &bucket,
        "ckpt/step-1000.bin",
        Some("WARM"),
        day * 4,
    )
    .await;
    assert_reads(&client, &bucket, "ckpt/step-1000.bin", &data, "WARM").await;
    let head = client
        .head_object()
        .bucket(&bucket)
        .key("ckpt/step-1000.bin")
        .send()
        .await
        .unwrap();
    assert_eq!(
        head.e_tag(),
        Some(etag.as_str()),
        "the ETag survives tiering"
    );
    assert_eq!(head.content_length(), Some(data.len() as i64));
    // The shards left the hot drives: only the object outside the rule keeps files there.
    let hot_shards = || -> usize {
        tiered
            .server
            .drives()
            .iter()
            .map(|d| shard_files(d).len())
            .sum()
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while hot_shards() != 9 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        hot_shards(),
        9,
        "one object's shards, one per drive, stay hot"
    );
    assert_eq!(
        storage_class(&client, &bucket, "ckpt/small.json")
            .await
            .as_deref(),
        Some("STANDARD"),
        "an object of 128 KiB or less is not transitioned"
    );
    assert_object(&client, &bucket, "ckpt/small.json", &small).await;

    // The rule grows a stage only once the object was seen in the last one: a scanner
    // pass that comes late on a loaded machine rightly skips a stage whose time is past.
    set_rules(&tiered.server, &bucket, &checkpoint_rule(false));
    wait_for_class(
        &client,
        &bucket,
        "ckpt/step-1000.bin",
        Some("COLD"),
        day * 4,
    )
    .await;
    assert_reads(&client, &bucket, "ckpt/step-1000.bin", &data, "COLD").await;
    assert_eq!(
        remote_objects(&tiered.remote).await.len(),
        1,
        "the object is in COLD"
    );

    set_rules(&tiered.server, &bucket, &checkpoint_rule(true));
    wait_for_class(&client, &bucket, "ckpt/step-1000.bin", None, day * 4).await;
    assert!(
        remote_objects(&tiered.remote).await.is_empty(),
        "expiry removed the tier's copy"
    );
    assert_eq!(
        storage_class(&client, &bucket, "keep/notes.bin")
            .await
            .as_deref(),
        Some("STANDARD"),
        "objects outside the rule stay where they are"
    );
    let metrics = reqwest::get(tiered.server.url("/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("strata_lifecycle_transitioned_total{bucket=\"")
            && metrics
                .lines()
                .any(|l| l.starts_with("strata_lifecycle_transitioned_total") && l.ends_with(" 2")),
        "two transitions counted:\n{metrics}"
    );

    // Nothing is left in the warm pool either: open it as the server does, after it stops.
    let pool_drives = tiered.pool_drives.clone();
    drop(tiered);
    let config = strata::tier::TierConfig {
        name: "WARM".into(),
        kind: strata::tier::TierKind::Pool(strata::tier::PoolConfig {
            drives: pool_drives,
            data_shards: 4,
            parity_shards: 2,
            block_size: strata::erasure::DEFAULT_BLOCK_SIZE,
        }),
    };
    let warm = strata::tier::build_tier(&config, &Default::default(), &Default::default())
        .await
        .unwrap();
    assert!(warm.list().await.unwrap().is_empty(), "WARM was emptied");
}

#[tokio::test]
async fn deleting_a_tiered_object_removes_the_tier_copy_and_a_down_tier_loses_nothing() {
    let tiered = start_tiered().await;
    let (client, bucket) = tiered.new_bucket("tiers-del").await;
    set_rules(
        &tiered.server,
        &bucket,
        r#"{"Rules": [{"ID": "cold", "Status": "Enabled", "Filter": {"Prefix": ""},
            "Transitions": [{"Days": 1, "StorageClass": "COLD"}]}]}"#,
    );
    let first = payload(MIB + 1, 1);
    let second = payload(2 * MIB + 3, 2);
    put(&client, &bucket, "a.bin", &first).await;
    put(&client, &bucket, "b.bin", &second).await;
    put(&client, &bucket, "d.bin", &first).await;
    let wait = Duration::from_secs(DAY_SECONDS * 4);
    for key in ["a.bin", "b.bin", "d.bin"] {
        wait_for_class(&client, &bucket, key, Some("COLD"), wait).await;
    }
    assert_eq!(remote_objects(&tiered.remote).await.len(), 3);

    ok(
        client
            .delete_object()
            .bucket(&bucket)
            .key("a.bin")
            .send()
            .await,
        "DELETE a tiered object",
    );
    assert_eq!(
        remote_objects(&tiered.remote).await.len(),
        2,
        "the delete removed a.bin's copy in the tier"
    );

    // The remote tier goes down: reads fail with a clear 503, the object stays.
    tiered.remote.kill();
    let err = client
        .get_object()
        .bucket(&bucket)
        .key("b.bin")
        .send()
        .await
        .expect_err("the tier is down");
    assert_eq!(err.raw_response().map(|r| r.status().as_u16()), Some(503));
    assert_eq!(
        storage_class(&client, &bucket, "b.bin").await.as_deref(),
        Some("COLD"),
        "HEAD still answers from the record"
    );
    // A tiered object deleted meanwhile is gone at once; its tier copy goes once the tier
    // is back.
    ok(
        client
            .delete_object()
            .bucket(&bucket)
            .key("d.bin")
            .send()
            .await,
        "DELETE while the tier is down",
    );
    assert_eq!(storage_class(&client, &bucket, "d.bin").await, None);
    // Transitions due while the tier is down wait: the object stays hot and whole.
    let third = payload(MIB + 77, 3);
    put(&client, &bucket, "c.bin", &third).await;
    let failed = || async {
        let metrics = reqwest::get(tiered.server.url("/metrics"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        metrics
            .lines()
            .filter(|l| l.starts_with("strata_lifecycle_transitions_failed_total"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum::<u64>()
    };
    let deadline = Instant::now() + wait;
    while failed().await == 0 {
        assert!(Instant::now() < deadline, "no transition was attempted");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        storage_class(&client, &bucket, "c.bin").await.as_deref(),
        Some("STANDARD")
    );
    assert_object(&client, &bucket, "c.bin", &third).await;
    tiered.remote.restart();
    wait_for_class(&client, &bucket, "c.bin", Some("COLD"), wait).await;
    assert_object(&client, &bucket, "c.bin", &third).await;
    let deadline = Instant::now() + wait;
    while remote_objects(&tiered.remote).await.len() != 2 {
        assert!(
            Instant::now() < deadline,
            "d.bin's tier copy outlived the tier's outage"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    ok(
        client
            .delete_object()
            .bucket(&bucket)
            .key("c.bin")
            .send()
            .await,
        "DELETE c.bin",
    );
    assert_reads(
        &client,
        &bucket,
        "b.bin",
        &second,
        "COLD after the tier came back",
    )
    .await;

    // An overwrite replaces the tiered version: its tier copy goes too.
    put(&client, &bucket, "b.bin", &first).await;
    assert!(remote_objects(&tiered.remote).await.is_empty());
    assert_object(&client, &bucket, "b.bin", &first).await;
}

#[tokio::test]
async fn noncurrent_versions_move_to_a_tier_and_go_with_their_version() {
    use aws_sdk_s3::types::BucketVersioningStatus;
    let tiered = start_tiered().await;
    let (client, bucket) = tiered.new_bucket("tiers-versions").await;
    set_versioning(&client, &bucket, BucketVersioningStatus::Enabled).await;
    set_rules(
        &tiered.server,
        &bucket,
        r#"{"Rules": [{"ID": "old-to-cold", "Status": "Enabled", "Filter": {"Prefix": ""},
            "NoncurrentVersionTransitions": [{"NoncurrentDays": 1, "StorageClass": "COLD"}]}]}"#,
    );
    let old = payload(2 * MIB + 9, 11);
    let new = payload(MIB + 5, 12);
    let old_id = client
        .put_object()
        .bucket(&bucket)
        .key("w.bin")
        .body(old.clone().into())
        .send()
        .await
        .unwrap()
        .version_id()
        .unwrap()
        .to_string();
    put(&client, &bucket, "w.bin", &new).await;

    let class_of_old = || async {
        let listed = client
            .list_object_versions()
            .bucket(&bucket)
            .send()
            .await
            .unwrap();
        listed
            .versions()
            .iter()
            .find(|v| v.version_id() == Some(old_id.as_str()))
            .and_then(|v| v.storage_class().map(|c| c.as_str().to_string()))
    };
    let deadline = Instant::now() + Duration::from_secs(DAY_SECONDS * 4);
    while class_of_old().await.as_deref() != Some("COLD") {
        assert!(Instant::now() < deadline, "the old version never moved");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(remote_objects(&tiered.remote).await.len(), 1);
    assert_eq!(
        storage_class(&client, &bucket, "w.bin").await.as_deref(),
        Some("STANDARD"),
        "the current version stays hot"
    );
    let got = client
        .get_object()
        .bucket(&bucket)
        .key("w.bin")
        .version_id(&old_id)
        .send()
        .await
        .unwrap();
    assert_same_bytes(
        &got.body.collect().await.unwrap().into_bytes(),
        &old,
        "the old version read back from COLD",
    );
    assert_object(&client, &bucket, "w.bin", &new).await;

    ok(
        client
            .delete_object()
            .bucket(&bucket)
            .key("w.bin")
            .version_id(&old_id)
            .send()
            .await,
        "DELETE the tiered version",
    );
    assert!(
        remote_objects(&tiered.remote).await.is_empty(),
        "removing the version removed its tier copy"
    );
}

#[tokio::test]
async fn a_replaced_pool_drive_is_formatted_and_rebuilt_while_serving() {
    let tiered = start_tiered().await;
    let (client, bucket) = tiered.new_bucket("tiers-pool-heal").await;
    set_rules(
        &tiered.server,
        &bucket,
        r#"{"Rules": [{"ID": "warm", "Status": "Enabled", "Filter": {"Prefix": ""},
            "Transitions": [{"Days": 1, "StorageClass": "WARM"}]}]}"#,
    );
    let objects = [
        ("one.bin", payload(MIB + 3, 21)),
        ("two.bin", payload(3 * MIB + 5, 22)),
    ];
    for (key, data) in &objects {
        put(&client, &bucket, key, data).await;
    }
    let wait = Duration::from_secs(DAY_SECONDS * 4);
    for (key, _) in &objects {
        wait_for_class(&client, &bucket, key, Some("WARM"), wait).await;
    }
    let replaced = &tiered.pool_drives[0];
    let shards_before = shard_files(replaced).len();
    assert_eq!(shards_before, objects.len(), "one shard of each object");

    // The pool's first disk dies and an empty one takes its place while the server runs.
    std::fs::remove_dir_all(replaced).unwrap();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    std::fs::create_dir_all(replaced).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while shard_files(replaced).len() < shards_before {
        assert!(
            Instant::now() < deadline,
            "the replaced pool drive was not rebuilt"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // With two other pool drives gone (4+2), every read needs the rebuilt one: its shards
    // and its metadata records.
    for gone in &tiered.pool_drives[1..3] {
        std::fs::remove_dir_all(gone).unwrap();
    }
    for (key, data) in &objects {
        assert_object(&client, &bucket, key, data).await;
    }
}

/// Whether any file under `dirs` holds `needle`.
fn files_hold(dirs: &[PathBuf], needle: &[u8]) -> bool {
    fn walk(dir: &Path, needle: &[u8]) -> bool {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return false;
        };
        entries.flatten().any(|entry| {
            let path = entry.path();
            match path.is_dir() {
                true => walk(&path, needle),
                false => std::fs::read(&path)
                    .is_ok_and(|data| data.windows(needle.len()).any(|w| w == needle)),
            }
        })
    }
    dirs.iter().any(|dir| walk(dir, needle))
}

#[tokio::test]
async fn encrypted_objects_move_to_tiers_sealed_and_read_back() {
    use aws_sdk_s3::primitives::ByteStream;
    use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart, ServerSideEncryption};

    let tiered = start_tiered().await;
    let (client, bucket) = tiered.new_bucket("sealed").await;
    set_rules(
        &tiered.server,
        &bucket,
        r#"{"Rules": [{
            "ID": "sealed",
            "Status": "Enabled",
            "Filter": {"Prefix": "ckpt/"},
            "Transitions": [{"Days": 1, "StorageClass": "WARM"}]
        }]}"#,
    );
    let marker = b"SEALED-TIER-MARKER-0123456789|";
    let data: Vec<u8> = marker.iter().copied().cycle().take(3 * MIB).collect();
    client
        .put_object()
        .bucket(&bucket)
        .key("ckpt/single.bin")
        .server_side_encryption(ServerSideEncryption::Aes256)
        .body(ByteStream::from(data.clone()))
        .send()
        .await
        .unwrap();
    // A multipart SSE-KMS object: its parts are sealed separately.
    let first_part: Vec<u8> = marker.iter().copied().cycle().take(6 * MIB).collect();
    let parts = [first_part, data.clone()];
    let created = client
        .create_multipart_upload()
        .bucket(&bucket)
        .key("ckpt/parts.bin")
        .server_side_encryption(ServerSideEncryption::AwsKms)
        .send()
        .await
        .unwrap();
    let upload_id = created.upload_id().unwrap();
    let mut completed = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let number = i as i32 + 1;
        let uploaded = client
            .upload_part()
            .bucket(&bucket)
            .key("ckpt/parts.bin")
            .upload_id(upload_id)
            .part_number(number)
            .body(ByteStream::from(part.clone()))
            .send()
            .await
            .unwrap();
        completed.push(
            CompletedPart::builder()
                .part_number(number)
                .e_tag(uploaded.e_tag().unwrap())
                .build(),
        );
    }
    client
        .complete_multipart_upload()
        .bucket(&bucket)
        .key("ckpt/parts.bin")
        .upload_id(upload_id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .set_parts(Some(completed))
                .build(),
        )
        .send()
        .await
        .unwrap();
    let whole = parts.concat();

    let day = Duration::from_secs(DAY_SECONDS);
    for class in ["WARM", "COLD"] {
        if class == "COLD" {
            // COLD joins the rule once both were seen WARM (see the ageing test).
            set_rules(&tiered.server, &bucket, &checkpoint_rule(false));
        }
        for key in ["ckpt/single.bin", "ckpt/parts.bin"] {
            wait_for_class(&client, &bucket, key, Some(class), day * 6).await;
        }
        assert_reads(&client, &bucket, "ckpt/single.bin", &data, class).await;
        assert_reads(&client, &bucket, "ckpt/parts.bin", &whole, class).await;
        // Across the parts' boundary.
        let boundary = parts[0].len();
        let range = client
            .get_object()
            .bucket(&bucket)
            .key("ckpt/parts.bin")
            .range(format!("bytes={}-{}", boundary - 100, boundary + 100))
            .send()
            .await
            .unwrap();
        let got = range.body.collect().await.unwrap().into_bytes();
        assert_same_bytes(&got, &whole[boundary - 100..=boundary + 100], class);
    }
    // Neither tier holds the plaintext: the pool's drives and the remote server's.
    tiered.remote.kill();
    assert!(!files_hold(&tiered.pool_drives, &marker[..]));
    assert!(!files_hold(tiered.remote.drives(), &marker[..]));
}

/// In an unversioned bucket a rename of an object whose data is in a tier passes the tier
/// copy to the new name, untouched: read back whole through it, deleted with it. In a
/// versioned one (where both names would hold the copy) it is still refused.
#[tokio::test]
async fn a_tiered_object_renamed_keeps_its_tier_copy() {
    let tiered = start_tiered().await;
    let (client, bucket) = tiered.new_bucket("tiers-mv").await;
    set_rules(
        &tiered.server,
        &bucket,
        r#"{"Rules": [{"ID": "cold", "Status": "Enabled", "Filter": {"Prefix": ""},
            "Transitions": [{"Days": 1, "StorageClass": "COLD"}]}]}"#,
    );
    let data = payload(2 * MIB + 5, 9);
    put(&client, &bucket, "ckpt.tmp", &data).await;
    let wait = Duration::from_secs(DAY_SECONDS * 4);
    wait_for_class(&client, &bucket, "ckpt.tmp", Some("COLD"), wait).await;
    assert_eq!(remote_objects(&tiered.remote).await.len(), 1);

    ok(
        client
            .rename_object()
            .bucket(&bucket)
            .key("ckpt")
            .rename_source(format!("{bucket}/ckpt.tmp"))
            .send()
            .await,
        "RenameObject of a tiered object",
    );
    assert_eq!(storage_class(&client, &bucket, "ckpt.tmp").await, None);
    assert_eq!(
        storage_class(&client, &bucket, "ckpt").await.as_deref(),
        Some("COLD")
    );
    assert_reads(&client, &bucket, "ckpt", &data, "renamed in COLD").await;
    assert_eq!(
        remote_objects(&tiered.remote).await.len(),
        1,
        "the tier copy passed to the new name"
    );
    ok(
        client
            .delete_object()
            .bucket(&bucket)
            .key("ckpt")
            .send()
            .await,
        "DELETE",
    );
    assert!(
        remote_objects(&tiered.remote).await.is_empty(),
        "deleted with its new name"
    );

    let (client, versioned) = tiered.new_bucket("tiers-mv-v").await;
    ok(
        client
            .put_bucket_versioning()
            .bucket(&versioned)
            .versioning_configuration(
                aws_sdk_s3::types::VersioningConfiguration::builder()
                    .status(aws_sdk_s3::types::BucketVersioningStatus::Enabled)
                    .build(),
            )
            .send()
            .await,
        "versioning",
    );
    set_rules(
        &tiered.server,
        &versioned,
        r#"{"Rules": [{"ID": "cold", "Status": "Enabled", "Filter": {"Prefix": ""},
            "Transitions": [{"Days": 1, "StorageClass": "COLD"}]}]}"#,
    );
    put(&client, &versioned, "ckpt.tmp", &data).await;
    wait_for_class(&client, &versioned, "ckpt.tmp", Some("COLD"), wait).await;
    let refused = client
        .rename_object()
        .bucket(&versioned)
        .key("ckpt")
        .rename_source(format!("{versioned}/ckpt.tmp"))
        .send()
        .await;
    assert_s3_error(refused, 501, "NotImplemented", "a tiered version renamed");
    assert_reads(&client, &versioned, "ckpt.tmp", &data, "left in place").await;
}
