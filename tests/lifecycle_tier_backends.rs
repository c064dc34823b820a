//! Tier backends through the `Tier` trait: a second local drive pool over temporary folders,
//! and a remote S3 tier against a real Strata server. Both must give back exactly the bytes
//! they were given, list exactly what they hold, and say whether a failure is a missing
//! object, an unreachable tier or a refusal.

mod common;

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use strata::body::ByteStream;
use strata::config::HealingConfig;
use strata::object::{Tier, TierError};
use strata::tier::{build_tiers, load_tiers, RemoteConfig, RemoteS3Tier};

use common::*;

/// A body made of `data` in 256 KiB chunks, as the object layer streams it.
fn body(data: &[u8]) -> ByteStream {
    let chunks: Vec<std::io::Result<Bytes>> = data
        .chunks(256 * KIB)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    Box::pin(futures::stream::iter(chunks))
}

async fn read_all(mut stream: ByteStream) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(chunk) = stream.next().await {
        out.extend_from_slice(&chunk.expect("tier body chunk"));
    }
    out
}

/// An object name as transitions make them: `<bucket-id>/<data-id>`.
fn object_name() -> String {
    format!("{}/{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4())
}

#[track_caller]
fn assert_missing<T>(result: Result<T, TierError>, what: &str) {
    match result {
        Err(TierError::Missing { .. }) => {}
        Err(e) => panic!("{what}: expected Missing, got {e:?}"),
        Ok(_) => panic!("{what}: expected Missing, got success"),
    }
}

#[track_caller]
fn assert_failed<T>(result: Result<T, TierError>, what: &str) -> String {
    match result {
        Err(TierError::Failed { reason, .. }) => reason,
        Err(e) => panic!("{what}: expected Failed, got {e:?}"),
        Ok(_) => panic!("{what}: expected Failed, got success"),
    }
}

#[track_caller]
fn assert_unavailable<T>(result: Result<T, TierError>, what: &str) {
    match result {
        Err(TierError::Unavailable { .. }) => {}
        Err(e) => panic!("{what}: expected Unavailable, got {e:?}"),
        Ok(_) => panic!("{what}: expected Unavailable, got success"),
    }
}

async fn sorted_list(tier: &dyn Tier) -> Vec<String> {
    let mut names = tier.list().await.expect("list");
    names.sort();
    names
}

/// What every tier promises, from an empty tier back to an empty tier.
async fn check_contract(tier: &dyn Tier) {
    assert!(sorted_list(tier).await.is_empty(), "a new tier is empty");
    let big = payload(3 * MIB + 12_345, 1);
    let small = payload(1000, 2);
    let objects = [
        (object_name(), big.clone()),
        (object_name(), small),
        (object_name(), Vec::new()),
    ];
    for (name, data) in &objects {
        tier.put(name, body(data), data.len() as u64)
            .await
            .unwrap_or_else(|e| panic!("put {name} ({} bytes): {e}", data.len()));
    }
    for (name, data) in &objects {
        let whole = tier
            .get(name, 0, data.len() as u64)
            .await
            .expect("get whole");
        assert_same_bytes(&read_all(whole).await, data, &format!("whole {name}"));
    }

    let (big_name, len) = (&objects[0].0, big.len() as u64);
    let ranges = [
        (0, 1),
        (MIB as u64 - 1, MIB as u64 + 1),
        (123, 2 * MIB as u64 + 7),
        (len - 10, len),
        (5, 5),
        (len, len),
    ];
    for (start, end) in ranges {
        let got = tier.get(big_name, start, end).await.expect("get range");
        let want = &big[start as usize..end as usize];
        assert_same_bytes(&read_all(got).await, want, &format!("range {start}..{end}"));
    }
    assert_failed(
        tier.get(big_name, len - 1, len + 5).await,
        "range past the end",
    );

    let mut names: Vec<String> = objects.iter().map(|(n, _)| n.clone()).collect();
    names.sort();
    assert_eq!(
        sorted_list(tier).await,
        names,
        "list shows exactly what was put"
    );

    // A body longer or shorter than announced is refused and leaves nothing behind.
    let wrong = object_name();
    for size in [big.len() as u64 + 1, big.len() as u64 - 1, 0] {
        assert_failed(
            tier.put(&wrong, body(&big), size).await,
            &format!("put {size} of {len}"),
        );
        assert_missing(tier.get(&wrong, 0, 1).await, "get after a refused put");
    }
    assert_eq!(
        sorted_list(tier).await,
        names,
        "a refused put leaves nothing"
    );

    for (name, _) in &objects {
        tier.delete(name).await.expect("delete");
        assert_missing(tier.get(name, 0, 1).await, "get after delete");
        tier.delete(name).await.expect("deleting again succeeds");
    }
    tier.delete(&object_name())
        .await
        .expect("deleting a never-stored object succeeds");
    assert!(sorted_list(tier).await.is_empty(), "everything deleted");
}

fn write_tiers_file(dir: &Path, json: &str) -> std::path::PathBuf {
    let path = dir.join("tiers.json");
    std::fs::write(&path, json).expect("write tiers file");
    path
}

async fn pool_tier(dir: &Path) -> Arc<dyn Tier> {
    let drives: Vec<String> = (1..=6)
        .map(|i| format!("{:?}", dir.join(format!("c{i}")).display().to_string()))
        .collect();
    let json = format!(
        r#"{{"tiers": [{{"name": "COLD", "type": "pool", "drives": [{}],
            "data_shards": 4, "parity_shards": 2, "block_size": 262144}}]}}"#,
        drives.join(", ")
    );
    let configs = load_tiers(&write_tiers_file(dir, &json)).expect("load tiers");
    let tiers = build_tiers(&configs, &HealingConfig::default(), &Default::default())
        .await
        .expect("build tiers");
    tiers.get("COLD").expect("COLD is built").clone()
}

#[tokio::test]
async fn pool_tier_keeps_exactly_what_it_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let tier = pool_tier(dir.path()).await;
    assert_eq!(tier.name(), "COLD");
    check_contract(tier.as_ref()).await;
    // The pool answers empty reads from the record, so they too see a missing object (a
    // remote tier answers them without a request).
    assert_missing(
        tier.get(&object_name(), 0, 0).await,
        "empty get of a missing object",
    );
}

#[tokio::test]
async fn pool_tier_objects_survive_reopening_its_drives() {
    let dir = tempfile::tempdir().unwrap();
    let data = payload(MIB + 7, 3);
    let name = object_name();
    {
        let tier = pool_tier(dir.path()).await;
        tier.put(&name, body(&data), data.len() as u64)
            .await
            .expect("put");
    }
    // The dropped tier's healers stop at their next turn, and with them its hold on the drives.
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let tier = pool_tier(dir.path()).await;
    assert_eq!(sorted_list(tier.as_ref()).await, vec![name.clone()]);
    let got = tier.get(&name, 0, data.len() as u64).await.expect("get");
    assert_same_bytes(&read_all(got).await, &data, "after reopening");
}

fn remote_config(server: &TestServer, bucket: &str, secret_key: &str) -> RemoteConfig {
    RemoteConfig {
        endpoint: server.endpoint(),
        bucket: bucket.to_string(),
        prefix: "strata/".to_string(),
        access_key: ACCESS_KEY.to_string(),
        secret_key: secret_key.to_string(),
        region: REGION.to_string(),
        part_size: strata::tier::DEFAULT_PART_SIZE,
    }
}

#[tokio::test]
async fn remote_tier_keeps_exactly_what_it_is_given() {
    let (client, bucket) = new_bucket("tier-remote").await;
    // An object outside the prefix is not the tier's.
    put(&client, &bucket, "elsewhere/x", b"not a tier object").await;

    let dir = tempfile::tempdir().unwrap();
    let json = format!(
        r#"{{"tiers": [{{"name": "ARCHIVE", "type": "s3", "endpoint": "{}", "bucket": "{bucket}",
            "prefix": "strata/", "access_key": "{ACCESS_KEY}", "secret_key": "{SECRET_KEY}"}}]}}"#,
        server().endpoint()
    );
    let configs = load_tiers(&write_tiers_file(dir.path(), &json)).expect("load tiers");
    let tiers = build_tiers(&configs, &HealingConfig::default(), &Default::default())
        .await
        .expect("build tiers");
    let tier = tiers.get("ARCHIVE").expect("ARCHIVE is built");
    assert_eq!(tier.name(), "ARCHIVE");

    let name = object_name();
    tier.put(&name, body(b"hello"), 5).await.expect("put");
    assert_eq!(
        list_all_keys(&client, &bucket, None).await,
        ["elsewhere/x".to_string(), format!("strata/{name}")],
        "tier objects live under the prefix"
    );
    tier.delete(&name).await.expect("delete");

    check_contract(tier.as_ref()).await;
}

#[tokio::test]
async fn remote_tier_refusals_are_failures_not_missing_objects() {
    let (client, bucket) = new_bucket("tier-refused").await;
    let name = object_name();
    put(&client, &bucket, &format!("strata/{name}"), b"abc").await;

    let wrong = RemoteS3Tier::new(
        "ARCHIVE",
        &remote_config(server(), &bucket, "wrong-secret-0123"),
    )
    .expect("tier");
    let reason = assert_failed(wrong.get(&name, 0, 3).await, "get with a wrong secret");
    assert!(reason.contains("SignatureDoesNotMatch"), "{reason}");
    assert_failed(wrong.list().await, "list with a wrong secret");
    assert_failed(wrong.delete(&name).await, "delete with a wrong secret");
    assert_failed(
        wrong.put(&object_name(), body(b"xyz"), 3).await,
        "put with a wrong secret",
    );
    let big = payload(2 * MIB, 4);
    assert_failed(
        wrong
            .put(&object_name(), body(&big), big.len() as u64)
            .await,
        "large put with a wrong secret",
    );

    // A bucket that is gone is a configuration problem: the objects are not "missing".
    let gone = RemoteS3Tier::new(
        "ARCHIVE",
        &remote_config(server(), "no-such-bucket-tier", SECRET_KEY),
    )
    .expect("tier");
    let reason = assert_failed(gone.get(&name, 0, 3).await, "get from a missing bucket");
    assert!(reason.contains("NoSuchBucket"), "{reason}");
    assert_failed(gone.list().await, "list of a missing bucket");
}

#[tokio::test]
async fn remote_tier_reports_a_stopped_server_as_unavailable() {
    let server = TestServer::start();
    let client = server.client();
    let bucket = unique_bucket("tier-stopped");
    create_bucket(&client, &bucket).await;
    let tier =
        RemoteS3Tier::new("ARCHIVE", &remote_config(&server, &bucket, SECRET_KEY)).expect("tier");
    let name = object_name();
    tier.put(&name, body(b"abc"), 3).await.expect("put");

    server.kill();
    assert_unavailable(tier.get(&name, 0, 3).await, "get from a stopped server");
    assert_unavailable(tier.list().await, "list of a stopped server");
    assert_unavailable(tier.delete(&name).await, "delete on a stopped server");
    let data = payload(MIB, 5);
    assert_unavailable(
        tier.put(&object_name(), body(&data), data.len() as u64)
            .await,
        "put to a stopped server",
    );
}

/// Puts `count` one-byte objects and checks that `list` pages through all of them.
async fn check_listing_pages(tier: &dyn Tier, count: usize) {
    let mut names: Vec<String> = (0..count).map(|_| object_name()).collect();
    futures::stream::iter(&names)
        .for_each_concurrent(16, |name| async move {
            tier.put(name, body(b"x"), 1).await.expect("put");
        })
        .await;
    names.sort();
    assert_eq!(sorted_list(tier).await, names, "every page is listed");
}

#[tokio::test]
async fn listings_page_past_a_thousand_objects() {
    let dir = tempfile::tempdir().unwrap();
    check_listing_pages(pool_tier(dir.path()).await.as_ref(), 1003).await;

    let (_, bucket) = new_bucket("tier-pages").await;
    let remote =
        RemoteS3Tier::new("ARCHIVE", &remote_config(server(), &bucket, SECRET_KEY)).expect("tier");
    check_listing_pages(&remote, 1003).await;
}

#[tokio::test]
async fn a_pool_tier_serves_around_a_corrupt_shard_and_rebuilds_it() {
    let dir = tempfile::tempdir().unwrap();
    let tier = pool_tier(dir.path()).await;
    let data = payload(MIB + 99, 5);
    let name = object_name();
    tier.put(&name, body(&data), data.len() as u64)
        .await
        .expect("put");
    let drive = dir.path().join("c2");
    let shards = shard_files(&drive);
    assert_eq!(shards.len(), 1, "one shard file on each pool drive");
    let original = std::fs::read(&shards[0]).unwrap();
    flip_bytes(&shards[0]);

    let got = tier.get(&name, 0, data.len() as u64).await.expect("get");
    assert_same_bytes(&read_all(got).await, &data, "read around the bad shard");
    // The read reported the damage; the pool's healer rebuilds the shard.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::fs::read(&shards[0]).ok().as_deref() != Some(original.as_slice()) {
        assert!(
            std::time::Instant::now() < deadline,
            "the corrupt shard was never rebuilt"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn remote_tier_sends_large_objects_in_parts() {
    let (client, bucket) = new_bucket("tier-parts").await;
    let config = RemoteConfig {
        part_size: 5 * MIB as u64,
        ..remote_config(server(), &bucket, SECRET_KEY)
    };
    let tier = RemoteS3Tier::new("ARCHIVE", &config).expect("tier");
    // Three parts, the last one short; chunks that straddle the part boundaries.
    let data = payload(12 * MIB + 3, 21);
    let name = object_name();
    tier.put(&name, body(&data), data.len() as u64)
        .await
        .expect("multipart put");
    let stored = client
        .head_object()
        .bucket(&bucket)
        .key(format!("strata/{name}"))
        .send()
        .await
        .expect("HEAD on the remote");
    assert!(
        stored.e_tag().is_some_and(|e| e.ends_with("-3\"")),
        "stored as a 3-part upload: {:?}",
        stored.e_tag()
    );
    let got = tier.get(&name, 0, data.len() as u64).await.expect("get");
    assert_same_bytes(&read_all(got).await, &data, "multipart object");
    let (from, to) = (5 * MIB as u64 - 10, 10 * MIB as u64 + 10);
    let got = tier.get(&name, from, to).await.expect("range across parts");
    assert_same_bytes(
        &read_all(got).await,
        &data[from as usize..to as usize],
        "a range across part boundaries",
    );

    // A body shorter than announced fails, and leaves neither an object nor an upload.
    let short = object_name();
    let _ = assert_failed(
        tier.put(&short, body(&data[..11 * MIB]), data.len() as u64)
            .await,
        "a short multipart body",
    );
    assert_eq!(sorted_list(&tier).await, vec![name.clone()]);
    let uploads = client
        .list_multipart_uploads()
        .bucket(&bucket)
        .send()
        .await
        .expect("ListMultipartUploads");
    assert!(
        uploads.uploads().is_empty(),
        "the failed upload was aborted"
    );
}
