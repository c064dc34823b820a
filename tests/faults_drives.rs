//! Drive faults against the real server with 9 drives (6+3): drive folders really deleted
//! (while running and across restarts), shard files corrupted in place, and quorum loss.
//!
//! Promise under test (CONTRACT.md "Faults"): with up to 3 of 9 drives gone or corrupted
//! every object reads back byte-identical; with 4 gone GET/PUT answer 503 ServiceUnavailable,
//! never wrong bytes. Every test has its own server.

mod common;

use aws_sdk_s3::Client;
use common::*;

/// Objects written before a fault: inline ones (≤ 128 KiB), erasure-coded ones spanning
/// several 1 MiB blocks, and a multipart object.
struct Fixture {
    bucket: String,
    objects: Vec<(String, Vec<u8>)>,
}

const SINGLE_PUT_SIZES: &[usize] = &[1, 10 * KIB, 128 * KIB, 128 * KIB + 1, MIB + 1, 3 * MIB + 5];

async fn write_fixture(client: &Client) -> Fixture {
    let bucket = unique_bucket("faults");
    create_bucket(client, &bucket).await;
    let mut objects = Vec::new();
    for (i, &size) in SINGLE_PUT_SIZES.iter().enumerate() {
        let key = format!("single/{size}");
        let data = payload(size, 1000 + i as u64);
        put(client, &bucket, &key, &data).await;
        objects.push((key, data));
    }
    let p1 = payload(5 * MIB, 2001);
    let p2 = payload(MIB + 7, 2002);
    let key = "multipart/checkpoint".to_string();
    let etag = multipart_put(client, &bucket, &key, &[&p1, &p2]).await;
    assert_eq!(etag, multipart_etag(&[&p1, &p2]), "multipart ETag");
    objects.push((key, [p1, p2].concat()));
    Fixture { bucket, objects }
}

/// Every fixture object reads back byte-identical and is listed.
async fn verify_fixture(client: &Client, fixture: &Fixture, when: &str) {
    for (key, data) in &fixture.objects {
        let got = match client
            .get_object()
            .bucket(&fixture.bucket)
            .key(key)
            .send()
            .await
        {
            Ok(out) => match out.body.collect().await {
                Ok(b) => b.into_bytes(),
                Err(e) => panic!("{when}: GET {key}: body failed mid-stream: {e:?}"),
            },
            Err(e) => panic!(
                "{when}: GET {key} ({} bytes) failed: {}",
                data.len(),
                describe(&e)
            ),
        };
        assert_same_bytes(&got, data, &format!("{when}: GET {key}"));
        let head = ok(
            client
                .head_object()
                .bucket(&fixture.bucket)
                .key(key)
                .send()
                .await,
            &format!("{when}: HEAD {key}"),
        );
        assert_eq!(
            head.content_length(),
            Some(data.len() as i64),
            "{when}: HEAD {key}"
        );
    }
    let mut want: Vec<String> = fixture.objects.iter().map(|(k, _)| k.clone()).collect();
    want.sort();
    assert_eq!(
        list_all_keys(client, &fixture.bucket, None).await,
        want,
        "{when}: listing"
    );
}

fn remove_drives(server: &TestServer, indexes: &[usize]) {
    for &i in indexes {
        let d = &server.drives()[i];
        std::fs::remove_dir_all(d).unwrap_or_else(|e| panic!("remove {}: {e}", d.display()));
    }
}

#[tokio::test]
async fn three_drives_deleted_while_running_then_restart_degraded() {
    let server = TestServer::start();
    let client = server.client();
    let fixture = write_fixture(&client).await;
    verify_fixture(&client, &fixture, "healthy").await;

    // Drives 2, 4, 6: three data shards, so every large read needs parity.
    remove_drives(&server, &[1, 3, 5]);
    verify_fixture(&client, &fixture, "3 drives deleted while running").await;

    // Restart with the three folders still missing: the server must start degraded.
    server.restart();
    assert_degraded_warning(&server, &[1, 3, 5]);
    let client = server.client();
    verify_fixture(&client, &fixture, "restarted with 3 drives missing").await;
}

/// The restart logged a warning naming at least one of the missing drives.
#[track_caller]
fn assert_degraded_warning(server: &TestServer, missing: &[usize]) {
    let log = server.run_log();
    let warned = log.lines().any(|line| {
        line.to_ascii_lowercase().contains("warn")
            && missing
                .iter()
                .any(|&i| line.contains(&*server.drives()[i].to_string_lossy()))
    });
    assert!(
        warned,
        "no warning naming a missing drive at startup; output:\n{log}"
    );
}

#[tokio::test]
async fn three_drives_replaced_by_empty_ones_at_start_are_formatted_and_healed() {
    let server = TestServer::start_with(ServerOptions {
        env: vec![("STRATA_DRIVE_CHECK_SECS".into(), "1".into())],
        ..ServerOptions::default()
    });
    let client = server.client();
    let fixture = write_fixture(&client).await;
    let shards_per_drive = shard_files(&server.drives()[3]).len();

    server.kill();
    // Parity drives 7 and 9 plus data drive 1, replaced by empty folders (swapped disks).
    for i in [0, 6, 8] {
        let d = &server.drives()[i];
        std::fs::remove_dir_all(d).unwrap();
        std::fs::create_dir_all(d).unwrap();
    }
    server.restart();
    let log = server.run_log();
    for i in [0, 6, 8] {
        let drive = server.drives()[i].to_string_lossy().to_string();
        assert!(
            log.lines()
                .any(|l| l.contains("formatted an empty drive") && l.contains(&drive)),
            "no log line formatting {drive}; output:\n{log}"
        );
    }
    let client = server.client();
    verify_fixture(&client, &fixture, "restarted with 3 empty drives").await;
    let started = std::time::Instant::now();
    while [0, 6, 8]
        .iter()
        .any(|&i| shard_files(&server.drives()[i]).len() < shards_per_drive)
    {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "the replaced drives were not healed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn corrupted_shards_on_three_drives_are_read_around() {
    let server = TestServer::start();
    let client = server.client();
    let fixture = write_fixture(&client).await;

    // Drives 1, 3, 5 (data shards 0, 2, 4): flip bytes in every shard file.
    for i in [0, 2, 4] {
        let drive = &server.drives()[i];
        let files = shard_files(drive);
        // 3 single-PUT objects above 128 KiB and the multipart object have shards here.
        assert!(
            files.len() >= 4,
            "expected shard files (part.*) under {}/data, found {files:?}",
            drive.display()
        );
        for f in &files {
            flip_bytes(f);
        }
    }
    verify_fixture(&client, &fixture, "shards corrupted on 3 drives").await;
    // Reading twice must give the same answer (no half-applied repair).
    verify_fixture(
        &client,
        &fixture,
        "shards corrupted on 3 drives, second read",
    )
    .await;

    // Still good after a restart (nothing cached).
    server.restart();
    let client = server.client();
    verify_fixture(&client, &fixture, "corrupted shards, after restart").await;
}

#[tokio::test]
async fn corruption_and_missing_drives_combined_up_to_three() {
    // One drive deleted, two drives corrupted: still within parity 3.
    let server = TestServer::start();
    let client = server.client();
    let fixture = write_fixture(&client).await;
    remove_drives(&server, &[8]);
    for i in [0, 5] {
        for f in shard_files(&server.drives()[i]) {
            flip_bytes(&f);
        }
    }
    verify_fixture(&client, &fixture, "1 drive deleted + 2 corrupted").await;
}

/// GET must answer 503 ServiceUnavailable, decided before any body byte is sent.
async fn assert_get_unavailable(client: &Client, bucket: &str, key: &str, want: &[u8]) {
    match client.get_object().bucket(bucket).key(key).send().await {
        Ok(out) => match out.body.collect().await {
            Ok(b) => {
                let b = b.into_bytes();
                panic!(
                    "GET {key} with 4 drives gone answered 200 with {} bytes ({}), want 503",
                    b.len(),
                    if b.as_ref() == want {
                        "correct bytes"
                    } else {
                        "WRONG BYTES"
                    }
                )
            }
            Err(e) => panic!("GET {key} with 4 drives gone: 200 then a broken body: {e:?}"),
        },
        Err(e) => {
            assert_eq!(
                status_of(&e),
                Some(503),
                "GET {key} with 4 drives gone: want 503; got {}",
                describe(&e)
            );
            assert_eq!(
                code_of(&e).as_deref(),
                Some("ServiceUnavailable"),
                "GET {key} with 4 drives gone: S3 error code; {}",
                describe(&e)
            );
        }
    }
}

#[tokio::test]
async fn four_drives_deleted_is_service_unavailable_never_wrong_bytes() {
    let server = TestServer::start();
    let client = server.client();
    let fixture = write_fixture(&client).await;

    remove_drives(&server, &[0, 1, 2, 3]);

    // Inline objects included: 5 metadata copies are below the read quorum.
    for (key, data) in &fixture.objects {
        assert_get_unavailable(&client, &fixture.bucket, key, data).await;
    }

    // The 503 is an S3 XML error (raw request to see the body).
    let large_key = "single/3145733";
    assert!(fixture.objects.iter().any(|(k, _)| k == large_key));
    let resp = signed_send(
        &Signer::test(),
        "GET",
        &server.url(&format!("/{}/{large_key}", fixture.bucket)),
        &[],
        Vec::new(),
    )
    .await;
    assert_eq!(
        resp.status,
        503,
        "raw GET with 4 drives gone: {}",
        resp.text()
    );
    assert_eq!(
        resp.xml_element("Code").as_deref(),
        Some("ServiceUnavailable"),
        "raw GET body: {}",
        resp.text()
    );

    // PUTs of every size class fail with 503 and leave nothing readable behind.
    for (i, size) in [10usize, 100 * KIB, 2 * MIB + 3].into_iter().enumerate() {
        let key = format!("new/{size}");
        assert_s3_error(
            client
                .put_object()
                .bucket(&fixture.bucket)
                .key(&key)
                .body(payload(size, 3000 + i as u64).into())
                .send()
                .await,
            503,
            "ServiceUnavailable",
            &format!("PUT {size} bytes with 4 drives gone"),
        );
    }
    // Overwriting an existing object fails too.
    assert_s3_error(
        client
            .put_object()
            .bucket(&fixture.bucket)
            .key(large_key)
            .body(payload(MIB, 4000).into())
            .send()
            .await,
        503,
        "ServiceUnavailable",
        "overwrite with 4 drives gone",
    );
}

#[tokio::test]
async fn writes_succeed_with_three_drives_gone() {
    let server = TestServer::start();
    let client = server.client();
    let fixture = write_fixture(&client).await;

    // Mixed: data drives 1 and 5, parity drive 9.
    remove_drives(&server, &[0, 4, 8]);

    let mut written = Vec::new();
    for (i, size) in [0usize, 1, 64 * KIB, 128 * KIB + 1, 2 * MIB + 9]
        .into_iter()
        .enumerate()
    {
        let key = format!("degraded/{size}");
        let data = payload(size, 5000 + i as u64);
        let etag = put(&client, &fixture.bucket, &key, &data).await;
        assert_eq!(etag, quoted_md5(&data), "PUT ETag with 3 drives gone");
        assert_object(&client, &fixture.bucket, &key, &data).await;
        written.push((key, data));
    }
    // Multipart while degraded.
    let p1 = payload(5 * MIB, 5101);
    let p2 = payload(3 * KIB, 5102);
    let key = "degraded/multipart".to_string();
    let etag = multipart_put(&client, &fixture.bucket, &key, &[&p1, &p2]).await;
    assert_eq!(etag, multipart_etag(&[&p1, &p2]));
    let whole = [p1, p2].concat();
    assert_object(&client, &fixture.bucket, &key, &whole).await;
    written.push((key, whole));

    // Overwrite and delete while degraded.
    let (ow_key, _) = fixture.objects[4].clone();
    let ow_data = payload(MIB + 100, 5200);
    put(&client, &fixture.bucket, &ow_key, &ow_data).await;
    assert_object(&client, &fixture.bucket, &ow_key, &ow_data).await;
    let (del_key, _) = fixture.objects[5].clone();
    ok(
        client
            .delete_object()
            .bucket(&fixture.bucket)
            .key(&del_key)
            .send()
            .await,
        "DELETE with 3 drives gone",
    );
    assert_s3_error(
        client
            .get_object()
            .bucket(&fixture.bucket)
            .key(&del_key)
            .send()
            .await,
        404,
        "NoSuchKey",
        "GET deleted key with 3 drives gone",
    );

    let mut all = Fixture {
        bucket: fixture.bucket.clone(),
        objects: fixture
            .objects
            .iter()
            .filter(|(k, _)| *k != del_key && *k != ow_key)
            .cloned()
            .collect(),
    };
    all.objects.push((ow_key.clone(), ow_data));
    all.objects.extend(written);
    verify_fixture(&client, &all, "after degraded writes").await;

    // A new bucket can be created and used while degraded.
    let bucket2 = unique_bucket("degraded-new");
    create_bucket(&client, &bucket2).await;
    put(&client, &bucket2, "k", b"new bucket while degraded").await;
    assert_object(&client, &bucket2, "k", b"new bucket while degraded").await;

    // Everything survives a restart with the same 3 drives still missing.
    server.restart();
    let client = server.client();
    verify_fixture(&client, &all, "degraded writes, after restart").await;
    assert_object(&client, &bucket2, "k", b"new bucket while degraded").await;
}

#[tokio::test]
async fn shard_files_follow_the_documented_layout() {
    // CONTRACT.md: drive i of a set holds shard i-1 (drives 1-6 data, 7-9 parity); a shard
    // file holds, per 1 MiB block, a 16-byte xxh3-128 checksum then the shard bytes. The fault
    // tests above rely on this to corrupt the right files.
    let server = TestServer::start();
    let client = server.client();
    let bucket = unique_bucket("layout");
    create_bucket(&client, &bucket).await;
    // 600 KiB: one block, split into 6 data shards of exactly 100 KiB (no padding).
    let data = payload(600 * KIB, 77);
    put(&client, &bucket, "one-block", &data).await;
    let shard_len = 100 * KIB;
    for (i, drive) in server.drives().iter().enumerate() {
        let files = shard_files(drive);
        assert_eq!(files.len(), 1, "drive {}: one shard file: {files:?}", i + 1);
        let bytes = std::fs::read(&files[0]).unwrap();
        assert_eq!(bytes.len(), 16 + shard_len, "drive {}: file length", i + 1);
        let (sum, shard) = bytes.split_at(16);
        let hash = xxhash_rust::xxh3::xxh3_128(shard);
        assert!(
            sum == hash.to_le_bytes() || sum == hash.to_be_bytes(),
            "drive {}: first 16 bytes are not the xxh3-128 of the shard",
            i + 1
        );
        if i < 6 {
            assert_same_bytes(
                shard,
                &data[i * shard_len..(i + 1) * shard_len],
                &format!("drive {} holds data shard {i}", i + 1),
            );
        }
    }
    // Inline objects (<= 128 KiB) create no shard files.
    put(&client, &bucket, "inline", &payload(128 * KIB, 78)).await;
    for (i, drive) in server.drives().iter().enumerate() {
        assert_eq!(
            shard_files(drive).len(),
            1,
            "drive {}: inline object wrote shards",
            i + 1
        );
    }
}

#[tokio::test]
async fn shard_files_deleted_truncated_or_zeroed_on_three_drives() {
    // Other kinds of shard damage (research/reliability.md 1.2), one per drive.
    let server = TestServer::start();
    let client = server.client();
    let fixture = write_fixture(&client).await;
    for f in shard_files(&server.drives()[1]) {
        std::fs::remove_file(&f).unwrap();
    }
    for f in shard_files(&server.drives()[3]) {
        let len = std::fs::metadata(&f).unwrap().len();
        let file = std::fs::OpenOptions::new().write(true).open(&f).unwrap();
        file.set_len((len / 3).min(10 * 1024)).unwrap();
    }
    for f in shard_files(&server.drives()[7]) {
        let len = std::fs::metadata(&f).unwrap().len() as usize;
        std::fs::write(&f, vec![0u8; len]).unwrap();
    }
    verify_fixture(
        &client,
        &fixture,
        "shards deleted/truncated/zeroed on 3 drives",
    )
    .await;
}

#[tokio::test]
async fn metadata_database_lost_on_three_drives() {
    // A drive that keeps its format but lost meta.redb (inline objects live there).
    let server = TestServer::start();
    let client = server.client();
    let fixture = write_fixture(&client).await;
    server.kill();
    for i in [2, 4, 6] {
        let db = server.drives()[i].join(".strata").join("meta.redb");
        assert!(db.exists(), "{} missing before the test", db.display());
        std::fs::remove_file(&db).unwrap();
    }
    server.restart();
    let client = server.client();
    verify_fixture(&client, &fixture, "meta.redb deleted on 3 drives").await;
}
