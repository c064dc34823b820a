//! Server startup: drive-count and erasure-set layout, credentials safety, drive identity
//! checks (swapped drives, foreign drives), drive-argument forms, and restart durability.

mod common;

use std::path::{Path, PathBuf};

use aws_sdk_s3::Client;
use common::*;

/// Parsed `<drive>/.strata/format.json`.
#[derive(Debug)]
struct Format {
    deployment_id: String,
    set_index: u64,
    drive_index: u64,
}

fn read_format(drive: &Path) -> Format {
    let path = drive.join(".strata").join("format.json");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let v: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not JSON: {e}", path.display()));
    let field = |name: &str| {
        v.get(name)
            .unwrap_or_else(|| panic!("{}: no field {name}: {text}", path.display()))
            .clone()
    };
    let deployment_id = match field("deployment_id") {
        serde_json::Value::String(s) => s,
        other => other.to_string(),
    };
    Format {
        deployment_id,
        set_index: field("set_index")
            .as_u64()
            .unwrap_or_else(|| panic!("{}: set_index not a number: {text}", path.display())),
        drive_index: field("drive_index")
            .as_u64()
            .unwrap_or_else(|| panic!("{}: drive_index not a number: {text}", path.display())),
    }
}

/// True if `text` contains `word` delimited by non-alphanumeric characters.
fn contains_word(text: &str, word: &str) -> bool {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .any(|w| w == word)
}

#[track_caller]
fn expect_refusal(result: Result<TestServer, StartFailure>, what: &str) -> StartFailure {
    match result {
        Ok(server) => {
            let log = server.log();
            server.kill();
            panic!("{what}: the server started but must refuse; output:\n{log}");
        }
        Err(f) => {
            assert!(
                f.exited_nonzero(),
                "{what}: want a non-zero exit, got {:?}; output:\n{}",
                f.status,
                f.output
            );
            f
        }
    }
}

async fn write_objects(client: &Client, bucket: &str) -> Vec<(String, Vec<u8>)> {
    create_bucket(client, bucket).await;
    let mut objects = Vec::new();
    for (i, size) in [0usize, 5, 100 * KIB, 128 * KIB + 1, 2 * MIB + 3]
        .into_iter()
        .enumerate()
    {
        let key = format!("obj/{size}");
        let data = payload(size, 10 + i as u64);
        put(client, bucket, &key, &data).await;
        objects.push((key, data));
    }
    let p1 = payload(5 * MIB, 20);
    let p2 = payload(KIB + 1, 21);
    multipart_put(client, bucket, "obj/multipart", &[&p1, &p2]).await;
    objects.push(("obj/multipart".to_string(), [p1, p2].concat()));
    objects
}

async fn verify_objects(client: &Client, bucket: &str, objects: &[(String, Vec<u8>)]) {
    for (key, data) in objects {
        assert_object(client, bucket, key, data).await;
    }
    let mut want: Vec<String> = objects.iter().map(|(k, _)| k.clone()).collect();
    want.sort();
    assert_eq!(list_all_keys(client, bucket, None).await, want, "listing");
}

#[tokio::test]
async fn drive_count_not_a_multiple_of_the_set_size_is_refused() {
    let f = expect_refusal(
        TestServer::try_start(ServerOptions {
            drive_count: 8,
            ..Default::default()
        }),
        "8 drives with 6+3",
    );
    assert!(
        contains_word(&f.output, "8"),
        "message should name the drive count 8; output:\n{}",
        f.output
    );

    let f = expect_refusal(
        TestServer::try_start(ServerOptions {
            drive_count: 9,
            ec: Some("4+2".into()),
            ..Default::default()
        }),
        "9 drives with 4+2",
    );
    assert!(
        contains_word(&f.output, "9"),
        "message should name the drive count 9; output:\n{}",
        f.output
    );
}

#[tokio::test]
async fn ec_4_plus_2_with_6_drives_serves_and_survives_two_lost_drives() {
    let server = TestServer::start_with(ServerOptions {
        drive_count: 6,
        ec: Some("4+2".into()),
        ..Default::default()
    });
    let client = server.client();
    let bucket = unique_bucket("ec42");
    let objects = write_objects(&client, &bucket).await;
    verify_objects(&client, &bucket, &objects).await;

    let mut deployment = None;
    for (i, d) in server.drives().iter().enumerate() {
        let f = read_format(d);
        assert_eq!(f.set_index, 0, "{}: set_index", d.display());
        assert_eq!(
            deployment.get_or_insert(f.deployment_id.clone()),
            &f.deployment_id
        );
        // 2 single-PUT objects above 128 KiB and one multipart object have shards everywhere.
        let shards = shard_files(d);
        assert!(
            shards.len() >= 3,
            "drive {} has shard files {shards:?}",
            i + 1
        );
    }

    // Parity 2: two drives may go.
    for i in [0, 3] {
        std::fs::remove_dir_all(&server.drives()[i]).unwrap();
    }
    verify_objects(&client, &bucket, &objects).await;
}

#[tokio::test]
async fn eighteen_drives_form_two_sets_and_objects_spread_over_both() {
    let server = TestServer::start_with(ServerOptions {
        drive_count: 18,
        ..Default::default()
    });
    let client = server.client();
    let bucket = unique_bucket("twosets");
    create_bucket(&client, &bucket).await;
    let mut objects = Vec::new();
    for i in 0..20 {
        let key = format!("spread/object-{i:02}");
        let data = payload(200 * KIB, 100 + i);
        put(&client, &bucket, &key, &data).await;
        objects.push((key, data));
    }
    verify_objects(&client, &bucket, &objects).await;

    // format.json: one deployment, drives 1-9 in set 0, 10-18 in set 1.
    let formats: Vec<Format> = server.drives().iter().map(|d| read_format(d)).collect();
    for (i, f) in formats.iter().enumerate() {
        assert_eq!(
            f.deployment_id,
            formats[0].deployment_id,
            "drive {} deployment",
            i + 1
        );
        assert_eq!(
            f.set_index,
            (i / 9) as u64,
            "drive {} set_index: {f:?}",
            i + 1
        );
    }
    for set in 0..2 {
        let mut idx: Vec<u64> = formats[set * 9..set * 9 + 9]
            .iter()
            .map(|f| f.drive_index)
            .collect();
        idx.sort_unstable();
        idx.dedup();
        assert_eq!(
            idx.len(),
            9,
            "set {set}: drive_index values are not distinct: {formats:?}"
        );
    }

    // Each object lives in exactly one set, with one shard on each of its 9 drives.
    let counts: Vec<usize> = server
        .drives()
        .iter()
        .map(|d| shard_files(d).len())
        .collect();
    let (set0, set1) = counts.split_at(9);
    assert!(
        set0.iter().all(|&c| c == set0[0]) && set1.iter().all(|&c| c == set1[0]),
        "shard counts differ within a set: {counts:?}"
    );
    assert!(
        set0[0] > 0 && set1[0] > 0,
        "objects not spread over both sets: {counts:?}"
    );
    assert_eq!(
        set0[0] + set1[0],
        20,
        "each object in exactly one set: {counts:?}"
    );

    // Placement is stable across a restart.
    server.restart();
    let client = server.client();
    verify_objects(&client, &bucket, &objects).await;
}

#[tokio::test]
async fn default_credentials_refuse_a_non_loopback_address() {
    let f = expect_refusal(
        TestServer::try_start(ServerOptions {
            set_credentials: false,
            address: "0.0.0.0:0".into(),
            ..Default::default()
        }),
        "default credentials on 0.0.0.0",
    );
    assert!(
        f.output.contains("STRATA_ROOT_USER") && f.output.contains("STRATA_ROOT_PASSWORD"),
        "message should say to set STRATA_ROOT_USER/STRATA_ROOT_PASSWORD; output:\n{}",
        f.output
    );
}

#[tokio::test]
async fn default_credentials_work_on_loopback_with_a_warning() {
    let server = TestServer::start_with(ServerOptions {
        set_credentials: false,
        ..Default::default()
    });
    assert!(
        server.log().to_ascii_lowercase().contains("warn"),
        "no warning logged about default credentials; output:\n{}",
        server.log()
    );
    let client = server.client_with(DEFAULT_ACCESS_KEY, DEFAULT_SECRET_KEY);
    let bucket = unique_bucket("defaults");
    create_bucket(&client, &bucket).await;
    put(&client, &bucket, "k", b"default creds").await;
    assert_object(&client, &bucket, "k", b"default creds").await;
    // The test credentials are not configured on this server.
    assert_s3_error(
        server.client().list_buckets().send().await,
        403,
        "InvalidAccessKeyId",
        "test credentials against a default-credentials server",
    );

    // Web pages could sign with the public defaults: whatever a browser sends on their
    // behalf (a form post, a cross-origin request) is refused, signed or not.
    let form = reqwest::multipart::Form::new()
        .text("key", "from-a-page")
        .part(
            "file",
            reqwest::multipart::Part::bytes(b"x".to_vec()).file_name("f"),
        );
    let posted = reqwest::Client::new()
        .post(server.url(&format!("/{bucket}")))
        .header("origin", "https://evil.example")
        .header("sec-fetch-site", "cross-site")
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), 403);
    assert!(posted.text().await.unwrap().contains("default credentials"));
    let signer = Signer::new(DEFAULT_ACCESS_KEY, DEFAULT_SECRET_KEY);
    let url = server.url(&format!("/{bucket}/k"));
    let mut headers = vec![("sec-fetch-site".to_string(), "cross-site".to_string())];
    let (signed, _) = signer.sign("GET", &url, &headers, &sha256_hex(b""));
    headers.extend(signed);
    assert_eq!(
        raw_send("GET", &url, &headers, Vec::new()).await.status,
        403
    );
    assert_object(&client, &bucket, "k", b"default creds").await;
    let listed = client
        .list_objects_v2()
        .bucket(&bucket)
        .send()
        .await
        .unwrap();
    assert_eq!(listed.contents().len(), 1, "the form stored nothing");
}

#[tokio::test]
async fn swapped_drives_are_refused_and_nothing_is_damaged() {
    let server = TestServer::start();
    let client = server.client();
    let bucket = unique_bucket("swap");
    let objects = write_objects(&client, &bucket).await;
    server.kill();

    let mut swapped: Vec<PathBuf> = server.drives().to_vec();
    swapped.swap(0, 1);
    let f = expect_refusal(
        TestServer::try_start(ServerOptions {
            drives: Some(swapped.clone()),
            ..Default::default()
        }),
        "drives 1 and 2 swapped",
    );
    let d1 = server.drives()[0].display().to_string();
    let d2 = server.drives()[1].display().to_string();
    assert!(
        f.output.contains(&d1) || f.output.contains(&d2),
        "message should name a swapped drive ({d1} or {d2}); output:\n{}",
        f.output
    );

    // Swapping data and parity drives is refused too.
    let mut swapped: Vec<PathBuf> = server.drives().to_vec();
    swapped.swap(2, 7);
    let f = expect_refusal(
        TestServer::try_start(ServerOptions {
            drives: Some(swapped),
            ..Default::default()
        }),
        "drives 3 and 8 swapped",
    );
    let d3 = server.drives()[2].display().to_string();
    let d8 = server.drives()[7].display().to_string();
    assert!(
        f.output.contains(&d3) || f.output.contains(&d8),
        "message should name a swapped drive ({d3} or {d8}); output:\n{}",
        f.output
    );

    // In the right order again, everything is intact.
    server.restart();
    let client = server.client();
    verify_objects(&client, &bucket, &objects).await;
}

#[tokio::test]
async fn drive_from_another_deployment_is_refused() {
    let a = TestServer::start();
    let b = TestServer::start();
    let bucket = unique_bucket("foreign");
    write_objects(&a.client(), &bucket).await;
    write_objects(&b.client(), &bucket).await;
    a.kill();
    b.kill();
    assert_ne!(
        read_format(&a.drives()[2]).deployment_id,
        read_format(&b.drives()[2]).deployment_id,
        "two fresh servers share a deployment id"
    );

    // Replace B's third drive with A's third drive (same position, other deployment).
    let target = b.drives()[2].clone();
    std::fs::remove_dir_all(&target).unwrap();
    copy_dir_all(&a.drives()[2], &target);

    let f = b
        .try_restart()
        .err()
        .unwrap_or_else(|| panic!("server started with a foreign drive; output:\n{}", b.log()));
    assert!(
        f.exited_nonzero(),
        "want non-zero exit, got {:?}; output:\n{}",
        f.status,
        f.output
    );
    let path = target.display().to_string();
    assert!(
        f.output.contains(&path),
        "message should name the foreign drive {path}; output:\n{}",
        f.output
    );
}

#[tokio::test]
async fn restart_keeps_every_object_and_bucket() {
    let server = TestServer::start();
    let client = server.client();
    let bucket = unique_bucket("restart");
    let objects = write_objects(&client, &bucket).await;
    let empty_bucket = unique_bucket("restart-empty");
    create_bucket(&client, &empty_bucket).await;
    // A deleted object stays deleted.
    put(&client, &bucket, "deleted", b"gone").await;
    ok(
        client
            .delete_object()
            .bucket(&bucket)
            .key("deleted")
            .send()
            .await,
        "DELETE",
    );

    // Formatted on first start: one deployment, set 0, distinct drive indexes.
    let formats: Vec<Format> = server.drives().iter().map(|d| read_format(d)).collect();
    let mut idx: Vec<u64> = formats.iter().map(|f| f.drive_index).collect();
    idx.sort_unstable();
    idx.dedup();
    assert_eq!(idx.len(), 9, "drive_index not distinct: {formats:?}");
    assert!(formats
        .iter()
        .all(|f| f.deployment_id == formats[0].deployment_id && f.set_index == 0));

    for round in 0..2 {
        server.restart();
        let client = server.client();
        verify_objects(&client, &bucket, &objects).await;
        let list = ok(client.list_buckets().send().await, "ListBuckets");
        for b in [&bucket, &empty_bucket] {
            assert!(
                list.buckets().iter().any(|x| x.name() == Some(b.as_str())),
                "restart {round}: bucket {b} missing"
            );
        }
        assert_s3_error(
            client
                .get_object()
                .bucket(&bucket)
                .key("deleted")
                .send()
                .await,
            404,
            "NoSuchKey",
            "deleted object after restart",
        );
        // format.json is not rewritten with a new identity.
        for (d, before) in server.drives().iter().zip(&formats) {
            let after = read_format(d);
            assert_eq!(after.deployment_id, before.deployment_id, "{}", d.display());
            assert_eq!(after.drive_index, before.drive_index, "{}", d.display());
        }
    }
}

#[tokio::test]
async fn drive_range_argument_expands() {
    let (_tmp, drives) = TestServer::temp_drives(9);
    let base = drives[0].parent().unwrap().to_path_buf();
    let server = TestServer::start_with(ServerOptions {
        drives: Some(drives.clone()),
        drive_args: Some(vec![format!("{}/d{{1...9}}", base.display())]),
        ..Default::default()
    });
    let client = server.client();
    let bucket = unique_bucket("range");
    create_bucket(&client, &bucket).await;
    let data = payload(MIB + 1, 1);
    put(&client, &bucket, "k", &data).await;
    assert_object(&client, &bucket, "k", &data).await;
    for d in &drives {
        read_format(d);
        assert!(
            !shard_files(d).is_empty(),
            "{}: no shard of the object",
            d.display()
        );
    }
}

#[tokio::test]
async fn no_drive_arguments_uses_data_d1_to_d9_in_the_working_directory() {
    let cwd = tempfile::tempdir().unwrap();
    let drives: Vec<PathBuf> = (1..=9)
        .map(|i| cwd.path().join(format!("data/d{i}")))
        .collect();
    let server = TestServer::start_with(ServerOptions {
        drives: Some(drives.clone()),
        drive_args: Some(Vec::new()),
        current_dir: Some(cwd.path().to_path_buf()),
        ..Default::default()
    });
    let client = server.client();
    let bucket = unique_bucket("defaultdrives");
    create_bucket(&client, &bucket).await;
    put(&client, &bucket, "k", b"default drives").await;
    assert_object(&client, &bucket, "k", b"default drives").await;
    for d in &drives {
        read_format(d);
    }
}

#[tokio::test]
async fn custom_block_size_round_trips() {
    let server = TestServer::start_with(ServerOptions {
        extra_args: vec!["--block-size".into(), "65536".into()],
        ..Default::default()
    });
    let client = server.client();
    let bucket = unique_bucket("blocksize");
    create_bucket(&client, &bucket).await;
    let data = payload(MIB + 3, 5);
    put(&client, &bucket, "k", &data).await;
    assert_object(&client, &bucket, "k", &data).await;
    let out = ok(
        client
            .get_object()
            .bucket(&bucket)
            .key("k")
            .range("bytes=65530-131080")
            .send()
            .await,
        "ranged GET across 64 KiB blocks",
    );
    let body = out.body.collect().await.unwrap().into_bytes();
    assert_same_bytes(&body, &data[65530..=131080], "range across 64 KiB blocks");
    // Survives losing 3 drives with the small blocks too.
    for i in [0, 1, 2] {
        std::fs::remove_dir_all(&server.drives()[i]).unwrap();
    }
    assert_object(&client, &bucket, "k", &data).await;
}
