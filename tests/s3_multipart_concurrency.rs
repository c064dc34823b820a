//! Multipart uploads under concurrency, crashes, expiry and drive loss (issue 4;
//! research/reliability.md 1.5): many parallel parts to one upload, racing completions of one
//! key, parts racing abort/complete (no orphaned shard files), a SIGKILLed server keeping
//! acknowledged parts, stale uploads expiring with their shards, degraded and parallel ranged
//! reads of a completed multipart object.
//!
//! Every test runs a server of its own, so shard-file counts on its drives are exact.

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use aws_sdk_s3::Client;
use common::*;

/// A server whose drives only this test touches, a client and a fresh bucket.
async fn own_server(prefix: &str, env: &[(&str, &str)]) -> (TestServer, Client, String) {
    let server = TestServer::start_with(ServerOptions {
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..ServerOptions::default()
    });
    let client = server.client();
    let bucket = unique_bucket(prefix);
    create_bucket(&client, &bucket).await;
    (server, client, bucket)
}

async fn create_upload(client: &Client, bucket: &str, key: &str) -> String {
    let out = ok(
        client
            .create_multipart_upload()
            .bucket(bucket)
            .key(key)
            .send()
            .await,
        &format!("CreateMultipartUpload {key}"),
    );
    out.upload_id().expect("UploadId").to_string()
}

fn completion(parts: &[(i32, String)]) -> CompletedMultipartUpload {
    CompletedMultipartUpload::builder()
        .set_parts(Some(
            parts
                .iter()
                .map(|(n, etag)| CompletedPart::builder().part_number(*n).e_tag(etag).build())
                .collect(),
        ))
        .build()
}

/// Uploads `parts` into a new upload (parts in sequence) and returns (upload id, ETags).
async fn upload_all(
    client: &Client,
    bucket: &str,
    key: &str,
    parts: &[&[u8]],
) -> (String, Vec<(i32, String)>) {
    let id = create_upload(client, bucket, key).await;
    let mut etags = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        let n = i as i32 + 1;
        etags.push((n, upload_part(client, bucket, key, &id, n, p).await));
    }
    (id, etags)
}

async fn open_uploads(client: &Client, bucket: &str) -> Vec<(String, String)> {
    let out = ok(
        client.list_multipart_uploads().bucket(bucket).send().await,
        "ListMultipartUploads",
    );
    out.uploads()
        .iter()
        .map(|u| {
            (
                u.key().unwrap_or_default().to_string(),
                u.upload_id().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// Every shard file on the server's drives, for failure messages.
fn list_part_files(server: &TestServer) -> String {
    let files: Vec<String> = server
        .drives()
        .iter()
        .flat_map(|d| shard_files(d))
        .map(|p| p.display().to_string())
        .collect();
    files.join("\n")
}

/// Outcome of an SDK call as "ok" or "HTTP status code".
fn outcome<T, E: aws_sdk_s3::error::ProvideErrorMetadata + std::fmt::Debug>(
    res: &Result<T, aws_sdk_s3::error::SdkError<E, aws_sdk_s3::config::http::HttpResponse>>,
) -> String {
    match res {
        Ok(_) => "ok".to_string(),
        Err(e) => format!(
            "HTTP {} {}",
            status_of(e).map_or("-".to_string(), |s| s.to_string()),
            code_of(e).unwrap_or_else(|| format!("{e:?}").chars().take(200).collect())
        ),
    }
}

/// `count` concurrent ranged GETs per task, 8 tasks, each range crossing at least one part
/// boundary; every body must equal the slice of `whole`.
async fn parallel_ranged_gets(
    client: &Client,
    bucket: &str,
    key: &str,
    whole: &[u8],
    boundaries: &[usize],
    seed: u64,
    count: usize,
) {
    let whole = std::sync::Arc::new(whole.to_vec());
    let mut tasks = Vec::new();
    for t in 0..8u64 {
        let client = client.clone();
        let bucket = bucket.to_string();
        let key = key.to_string();
        let whole = whole.clone();
        let boundaries = boundaries.to_vec();
        tasks.push(tokio::spawn(async move {
            let mut rng = TestRng::new(seed * 1000 + t);
            for i in 0..count {
                let b = boundaries[rng.range(0, boundaries.len())];
                let start = b - rng.range(1, MIB + MIB / 2);
                let end = (b + rng.range(0, 3 * MIB)).min(whole.len() - 1);
                let what = format!("task {t} GET {i} bytes={start}-{end}");
                let out = ok(
                    client
                        .get_object()
                        .bucket(&bucket)
                        .key(&key)
                        .range(format!("bytes={start}-{end}"))
                        .send()
                        .await,
                    &what,
                );
                assert_eq!(
                    out.content_range(),
                    Some(format!("bytes {start}-{end}/{}", whole.len()).as_str()),
                    "{what}: Content-Range"
                );
                let body = out
                    .body
                    .collect()
                    .await
                    .unwrap_or_else(|e| panic!("{what}: body: {e:?}"))
                    .into_bytes();
                assert_same_bytes(&body, &whole[start..=end], &what);
            }
        }));
    }
    for t in tasks {
        t.await.expect("ranged GET task panicked");
    }
}

// -------------------------------------------------------------------------------------------

#[tokio::test]
async fn thirty_two_concurrent_parts_to_one_upload_all_succeed() {
    let (_server, client, bucket) = own_server("mp32", &[]).await;
    let key = "checkpoint/shard-0.bin";
    let id = create_upload(&client, &bucket, key).await;
    let parts: Vec<Vec<u8>> = (0..32).map(|i| payload(5 * MIB, 1000 + i)).collect();

    let started = Instant::now();
    let mut tasks = Vec::new();
    for (i, data) in parts.iter().enumerate() {
        let client = client.clone();
        let (bucket, key, id, data) = (bucket.clone(), key.to_string(), id.clone(), data.clone());
        tasks.push(tokio::spawn(async move {
            let n = i as i32 + 1;
            let t0 = Instant::now();
            let res = client
                .upload_part()
                .bucket(&bucket)
                .key(&key)
                .upload_id(&id)
                .part_number(n)
                .body(data.into())
                .send()
                .await;
            let took = t0.elapsed();
            match res {
                Ok(out) => Ok((n, out.e_tag().unwrap_or_default().to_string(), took)),
                Err(e) => Err(format!("part {n} after {took:?}: {}", describe(&e))),
            }
        }));
    }
    let mut etags = Vec::new();
    let mut failures = Vec::new();
    let mut slowest = Duration::ZERO;
    for t in tasks {
        match t.await.expect("upload task") {
            Ok((n, etag, took)) => {
                slowest = slowest.max(took);
                etags.push((n, etag));
            }
            Err(msg) => failures.push(msg),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of 32 concurrent UploadPart calls failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!(
        "32 x 5 MiB parts in parallel: {:?} total, slowest part {slowest:?}",
        started.elapsed()
    );
    etags.sort();
    for (n, etag) in &etags {
        assert_eq!(
            etag,
            &quoted_md5(&parts[*n as usize - 1]),
            "part {n} ETag is the part's MD5"
        );
    }

    let listed = ok(
        client
            .list_parts()
            .bucket(&bucket)
            .key(key)
            .upload_id(&id)
            .send()
            .await,
        "ListParts",
    );
    let numbers: Vec<i32> = listed
        .parts()
        .iter()
        .map(|p| p.part_number().unwrap())
        .collect();
    assert_eq!(
        numbers,
        (1..=32).collect::<Vec<_>>(),
        "ListParts after the burst"
    );

    let out = ok(
        client
            .complete_multipart_upload()
            .bucket(&bucket)
            .key(key)
            .upload_id(&id)
            .multipart_upload(completion(&etags))
            .send()
            .await,
        "Complete 32 parts",
    );
    let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    assert_eq!(
        out.e_tag(),
        Some(multipart_etag(&refs).as_str()),
        "Complete ETag"
    );
    assert_object(&client, &bucket, key, &parts.concat()).await;
}

#[tokio::test]
async fn concurrent_completes_to_one_key_leave_exactly_one_of_them() {
    let (server, client, bucket) = own_server("mprace", &[]).await;
    for round in 0..12u64 {
        let key = format!("ckpt/round-{round}");
        let a = [
            payload(5 * MIB, 2000 + round),
            payload(100 * KIB, 2100 + round),
        ];
        let b = [
            payload(5 * MIB, 2200 + round),
            payload(200 * KIB + 1, 2300 + round),
        ];
        let (id_a, etags_a) = upload_all(&client, &bucket, &key, &[&a[0], &a[1]]).await;
        let (id_b, etags_b) = upload_all(&client, &bucket, &key, &[&b[0], &b[1]]).await;
        let complete = |id: String, etags: Vec<(i32, String)>| {
            let client = client.clone();
            let (bucket, key) = (bucket.clone(), key.clone());
            async move {
                client
                    .complete_multipart_upload()
                    .bucket(&bucket)
                    .key(&key)
                    .upload_id(&id)
                    .multipart_upload(completion(&etags))
                    .send()
                    .await
            }
        };
        let (ra, rb) = tokio::join!(
            tokio::spawn(complete(id_a, etags_a)),
            tokio::spawn(complete(id_b, etags_b))
        );
        let (ra, rb) = (ra.expect("task"), rb.expect("task"));
        let etag_a = multipart_etag(&[&a[0], &a[1]]);
        let etag_b = multipart_etag(&[&b[0], &b[1]]);
        let ra = ok(ra, &format!("round {round}: Complete A"));
        let rb = ok(rb, &format!("round {round}: Complete B"));
        assert_eq!(ra.e_tag(), Some(etag_a.as_str()));
        assert_eq!(rb.e_tag(), Some(etag_b.as_str()));

        let head = ok(
            client.head_object().bucket(&bucket).key(&key).send().await,
            "HEAD",
        );
        let body = match client.get_object().bucket(&bucket).key(&key).send().await {
            Ok(out) => out
                .body
                .collect()
                .await
                .expect("GET body")
                .into_bytes()
                .to_vec(),
            Err(e) => {
                let first = describe(&e);
                tokio::time::sleep(Duration::from_secs(1)).await;
                let again = outcome(&client.get_object().bucket(&bucket).key(&key).send().await);
                panic!(
                    "round {round}: both Completes answered 200 and HEAD answers ETag {:?}, but \
                     GET fails: {first}\n1 s later GET: {again}\nshard files on the drives: {} \
                     (the objects of rounds 0..={round} need {})",
                    head.e_tag(),
                    count_part_files(server.drives()),
                    (round as usize + 1) * 2 * server.drives().len()
                );
            }
        };
        let whole_a = a.concat();
        let whole_b = b.concat();
        let etag = head.e_tag().unwrap_or_default();
        if body == whole_a {
            assert_eq!(etag, etag_a, "round {round}: body is A, ETag must be A's");
        } else if body == whole_b {
            assert_eq!(etag, etag_b, "round {round}: body is B, ETag must be B's");
        } else {
            panic!(
                "round {round}: the object is neither upload A nor upload B ({} bytes, sha256 \
                 {}; A {} bytes, B {} bytes)",
                body.len(),
                sha256_hex(&body),
                whole_a.len(),
                whole_b.len()
            );
        }
        assert!(
            open_uploads(&client, &bucket).await.is_empty(),
            "round {round}: uploads left open"
        );
        // The replaced object's shards go away: one object of 2 parts per round remains.
        let want = (round as usize + 1) * 2 * server.drives().len();
        let got = wait_for_part_files(server.drives(), want, Duration::from_secs(5)).await;
        assert_eq!(
            got, want,
            "round {round}: shard files after two racing Completes (the losing upload's data \
             must be removed)"
        );
    }
}

#[tokio::test]
async fn concurrent_completes_with_if_none_match_exactly_one_wins() {
    let (_server, client, bucket) = own_server("mpracecond", &[]).await;
    for round in 0..4u64 {
        let key = format!("write-once/{round}");
        let mut uploads = Vec::new();
        for i in 0..4u64 {
            let data = payload(MIB + i as usize, 3000 + round * 10 + i);
            let (id, etags) = upload_all(&client, &bucket, &key, &[&data]).await;
            uploads.push((id, etags, data));
        }
        let mut tasks = Vec::new();
        for (id, etags, _) in &uploads {
            let client = client.clone();
            let (bucket, key, id, etags) = (bucket.clone(), key.clone(), id.clone(), etags.clone());
            tasks.push(tokio::spawn(async move {
                client
                    .complete_multipart_upload()
                    .bucket(&bucket)
                    .key(&key)
                    .upload_id(&id)
                    .if_none_match("*")
                    .multipart_upload(completion(&etags))
                    .send()
                    .await
            }));
        }
        let mut winners = Vec::new();
        let mut outcomes = Vec::new();
        for (i, t) in tasks.into_iter().enumerate() {
            let res = t.await.expect("task");
            outcomes.push(outcome(&res));
            match &res {
                Ok(_) => winners.push(i),
                Err(e) => assert!(
                    status_of(e) == Some(412)
                        && code_of(e).as_deref() == Some("PreconditionFailed"),
                    "round {round}: losing Complete with If-None-Match: * must be 412 \
                     PreconditionFailed: {}",
                    describe(e)
                ),
            }
        }
        assert_eq!(
            winners.len(),
            1,
            "round {round}: exactly one of 4 racing Completes with If-None-Match: * wins; \
             outcomes {outcomes:?}"
        );
        let winner = &uploads[winners[0]].2;
        assert_object(&client, &bucket, &key, winner).await;
    }
}

#[tokio::test]
async fn concurrent_uploads_of_one_part_number_never_mix() {
    let (server, client, bucket) = own_server("mpsamepart", &[]).await;
    let before = count_part_files(server.drives());
    let key = "same-part";
    let id = create_upload(&client, &bucket, key).await;
    let versions: Vec<Vec<u8>> = (0..4).map(|i| payload(6 * MIB, 4000 + i)).collect();
    let mut tasks = Vec::new();
    for v in &versions {
        let client = client.clone();
        let (bucket, id, v) = (bucket.clone(), id.clone(), v.clone());
        tasks.push(tokio::spawn(async move {
            client
                .upload_part()
                .bucket(&bucket)
                .key(key)
                .upload_id(&id)
                .part_number(1)
                .body(v.into())
                .send()
                .await
        }));
    }
    for (i, t) in tasks.into_iter().enumerate() {
        ok(
            t.await.expect("task"),
            &format!("concurrent UploadPart 1, version {i}"),
        );
    }
    let p2 = payload(KIB, 4100);
    let e2 = upload_part(&client, &bucket, key, &id, 2, &p2).await;

    let listed = ok(
        client
            .list_parts()
            .bucket(&bucket)
            .key(key)
            .upload_id(&id)
            .send()
            .await,
        "ListParts",
    );
    let ones: Vec<_> = listed
        .parts()
        .iter()
        .filter(|p| p.part_number() == Some(1))
        .collect();
    assert_eq!(ones.len(), 1, "part 1 listed once");
    let listed_etag = ones[0].e_tag().unwrap().to_string();
    let winner = versions
        .iter()
        .find(|v| quoted_md5(v) == listed_etag)
        .unwrap_or_else(|| panic!("listed part 1 ETag {listed_etag} is none of the 4 uploads"));

    // The losers' ETags no longer name a stored part.
    for v in versions.iter().filter(|v| quoted_md5(v) != listed_etag) {
        assert_s3_error(
            client
                .complete_multipart_upload()
                .bucket(&bucket)
                .key(key)
                .upload_id(&id)
                .multipart_upload(completion(&[(1, quoted_md5(v)), (2, e2.clone())]))
                .send()
                .await,
            400,
            "InvalidPart",
            "Complete with a replaced part 1's ETag",
        );
    }
    ok(
        client
            .complete_multipart_upload()
            .bucket(&bucket)
            .key(key)
            .upload_id(&id)
            .multipart_upload(completion(&[(1, listed_etag.clone()), (2, e2)]))
            .send()
            .await,
        "Complete with the listed part 1",
    );
    assert_object(&client, &bucket, key, &[winner.as_slice(), &p2].concat()).await;

    // Only the two parts of the object keep shard files: one per part on each of 9 drives.
    let want = before + 2 * server.drives().len();
    let got = wait_for_part_files(server.drives(), want, Duration::from_secs(5)).await;
    assert_eq!(
        got,
        want,
        "shard files after 4 racing uploads of part 1 and Complete (replaced attempts must \
         leave none):\n{}",
        list_part_files(&server)
    );
}

#[tokio::test]
async fn upload_part_racing_abort_leaves_no_part_files() {
    let (server, client, bucket) = own_server("mpabortrace", &[]).await;
    let before = count_part_files(server.drives());
    for (round, delay_ms) in (0..=200u64).step_by(10).enumerate() {
        let key = format!("raced-{round}");
        let id = create_upload(&client, &bucket, &key).await;
        let mut tasks = Vec::new();
        for n in 1..=4i32 {
            let client = client.clone();
            let (bucket, key, id) = (bucket.clone(), key.clone(), id.clone());
            let data = payload(n as usize * MIB, 5000 + round as u64 * 10 + n as u64);
            tasks.push(tokio::spawn(async move {
                client
                    .upload_part()
                    .bucket(&bucket)
                    .key(&key)
                    .upload_id(&id)
                    .part_number(n)
                    .body(data.into())
                    .send()
                    .await
            }));
        }
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        ok(
            client
                .abort_multipart_upload()
                .bucket(&bucket)
                .key(&key)
                .upload_id(&id)
                .send()
                .await,
            &format!("round {round}: Abort {delay_ms} ms after 4 UploadParts started"),
        );
        // Checked after the drives, so a wrong answer still shows whether files leaked.
        let mut outcomes = Vec::new();
        let mut wrong_answers = Vec::new();
        for t in tasks {
            let res = t.await.expect("task");
            outcomes.push(outcome(&res));
            if let Err(e) = &res {
                if !(status_of(e) == Some(404) && code_of(e).as_deref() == Some("NoSuchUpload")) {
                    wrong_answers.push(describe(e));
                }
            }
        }
        eprintln!("abort race round {round} ({delay_ms} ms): parts {outcomes:?}");
        assert_s3_error(
            client
                .list_parts()
                .bucket(&bucket)
                .key(&key)
                .upload_id(&id)
                .send()
                .await,
            404,
            "NoSuchUpload",
            &format!("round {round}: ListParts after Abort"),
        );
        let got = wait_for_part_files(server.drives(), before, Duration::from_secs(5)).await;
        assert_eq!(
            got,
            before,
            "round {round} (Abort {delay_ms} ms after the parts started; part outcomes \
             {outcomes:?}): shard files left behind by the aborted upload:\n{}",
            list_part_files(&server)
        );
        assert!(
            wrong_answers.is_empty(),
            "round {round} (Abort {delay_ms} ms after the parts started): an UploadPart racing \
             Abort either succeeds or answers 404 NoSuchUpload; got:\n{}",
            wrong_answers.join("\n")
        );
    }
    assert!(open_uploads(&client, &bucket).await.is_empty());
}

#[tokio::test]
async fn upload_part_racing_complete_leaves_no_orphaned_part_files() {
    let (server, client, bucket) = own_server("mpcompleterace", &[]).await;
    let before = count_part_files(server.drives());
    for (round, delay_ms) in (0..=150u64).step_by(10).enumerate() {
        let key = format!("raced-{round}");
        let p1 = payload(5 * MIB, 6000 + round as u64);
        let p2 = payload(MIB, 6100 + round as u64);
        let (id, etags) = upload_all(&client, &bucket, &key, &[&p1, &p2]).await;
        // Late parts 3 and 4 race the Complete that lists only parts 1 and 2.
        let mut tasks = Vec::new();
        for n in 3..=4i32 {
            let client = client.clone();
            let (bucket, key, id) = (bucket.clone(), key.clone(), id.clone());
            let data = payload(
                (n as usize - 2) * 2 * MIB,
                6200 + round as u64 * 10 + n as u64,
            );
            tasks.push(tokio::spawn(async move {
                client
                    .upload_part()
                    .bucket(&bucket)
                    .key(&key)
                    .upload_id(&id)
                    .part_number(n)
                    .body(data.into())
                    .send()
                    .await
            }));
        }
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        ok(
            client
                .complete_multipart_upload()
                .bucket(&bucket)
                .key(&key)
                .upload_id(&id)
                .multipart_upload(completion(&etags))
                .send()
                .await,
            &format!("round {round}: Complete racing 2 UploadParts"),
        );
        // Checked after the drives, so a wrong answer still shows whether files leaked.
        let mut outcomes = Vec::new();
        let mut wrong_answers = Vec::new();
        for t in tasks {
            let res = t.await.expect("task");
            outcomes.push(outcome(&res));
            if let Err(e) = &res {
                if !(status_of(e) == Some(404) && code_of(e).as_deref() == Some("NoSuchUpload")) {
                    wrong_answers.push(describe(e));
                }
            }
        }
        eprintln!("complete race round {round} ({delay_ms} ms): late parts {outcomes:?}");
        assert_object(&client, &bucket, &key, &[p1.as_slice(), &p2].concat()).await;

        // The object's 2 parts keep one shard file per drive; the late parts none.
        let want = before + 2 * server.drives().len();
        let got = wait_for_part_files(server.drives(), want, Duration::from_secs(5)).await;
        assert_eq!(
            got,
            want,
            "round {round} (Complete {delay_ms} ms after parts 3, 4 started; their outcomes \
             {outcomes:?}): shard files besides the object's 2 parts:\n{}",
            list_part_files(&server)
        );
        ok(
            client
                .delete_object()
                .bucket(&bucket)
                .key(&key)
                .send()
                .await,
            "DeleteObject",
        );
        let got = wait_for_part_files(server.drives(), before, Duration::from_secs(5)).await;
        assert_eq!(
            got,
            before,
            "round {round}: shard files left after deleting the object:\n{}",
            list_part_files(&server)
        );
        assert!(
            wrong_answers.is_empty(),
            "round {round} (Complete {delay_ms} ms after parts 3, 4 started): an UploadPart \
             racing Complete either succeeds or answers 404 NoSuchUpload; got:\n{}",
            wrong_answers.join("\n")
        );
    }
}

#[tokio::test]
async fn killed_server_restarts_with_acknowledged_parts_completable() {
    let (server, client, bucket) = own_server("mpkill", &[]).await;
    let key = "ckpt/kill.bin";
    let p1 = payload(5 * MIB, 7001);
    let p2 = payload(5 * MIB + 3, 7002);
    let p3 = payload(16 * MIB, 7003);
    let id = create_upload(&client, &bucket, key).await;
    let e1 = upload_part(&client, &bucket, key, &id, 1, &p1).await;
    let e2 = upload_part(&client, &bucket, key, &id, 2, &p2).await;

    // Part 3 is in flight when the server dies (SIGKILL).
    let in_flight = {
        let client = client.clone();
        let (bucket, id, p3) = (bucket.clone(), id.clone(), p3.clone());
        tokio::spawn(async move {
            client
                .upload_part()
                .bucket(&bucket)
                .key(key)
                .upload_id(&id)
                .part_number(3)
                .body(p3.into())
                .send()
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(40)).await;
    server.kill();
    let p3_acked = in_flight.await.expect("task").is_ok();
    server.restart();
    let client = server.client();

    let uploads = open_uploads(&client, &bucket).await;
    assert_eq!(
        uploads,
        vec![(key.to_string(), id.clone())],
        "ListMultipartUploads after the restart"
    );
    let listed = ok(
        client
            .list_parts()
            .bucket(&bucket)
            .key(key)
            .upload_id(&id)
            .send()
            .await,
        "ListParts after the restart",
    );
    let parts: Vec<(i32, String, i64)> = listed
        .parts()
        .iter()
        .map(|p| {
            (
                p.part_number().unwrap(),
                p.e_tag().unwrap_or_default().to_string(),
                p.size().unwrap_or(-1),
            )
        })
        .collect();
    assert!(
        parts.len() >= 2,
        "acknowledged parts 1 and 2 must survive the kill; listed {parts:?}"
    );
    assert_eq!(
        parts[0],
        (1, e1.clone(), p1.len() as i64),
        "part 1 after the restart"
    );
    assert_eq!(
        parts[1],
        (2, e2.clone(), p2.len() as i64),
        "part 2 after the restart"
    );
    match parts.get(2) {
        None => assert!(
            !p3_acked,
            "part 3 was acknowledged but is not listed: {parts:?}"
        ),
        Some(p) => assert_eq!(
            p,
            &(3, quoted_md5(&p3), p3.len() as i64),
            "a part listed after the kill is whole"
        ),
    }
    assert!(parts.len() <= 3, "unexpected parts {parts:?}");

    let e3 = upload_part(&client, &bucket, key, &id, 3, &p3).await;
    let out = ok(
        client
            .complete_multipart_upload()
            .bucket(&bucket)
            .key(key)
            .upload_id(&id)
            .multipart_upload(completion(&[(1, e1), (2, e2), (3, e3)]))
            .send()
            .await,
        "Complete after the restart",
    );
    assert_eq!(out.e_tag(), Some(multipart_etag(&[&p1, &p2, &p3]).as_str()));
    assert_object(&client, &bucket, key, &[p1.as_slice(), &p2, &p3].concat()).await;
}

#[tokio::test]
async fn stale_uploads_expire_with_their_part_files() {
    let (server, client, bucket) = own_server(
        "mpstale",
        &[
            ("STRATA_STALE_UPLOAD_EXPIRY_SECS", "2"),
            ("STRATA_STALE_UPLOAD_SCAN_SECS", "1"),
        ],
    )
    .await;
    // A completed multipart object must not be touched by the cleanup.
    let k1 = payload(5 * MIB, 8001);
    let k2 = payload(MIB, 8002);
    multipart_put(&client, &bucket, "kept", &[&k1, &k2]).await;
    let with_object = count_part_files(server.drives());

    let key = "abandoned";
    let created = Instant::now();
    let id = create_upload(&client, &bucket, key).await;
    upload_part(&client, &bucket, key, &id, 1, &payload(2 * MIB, 8003)).await;
    assert!(
        count_part_files(server.drives()) > with_object,
        "the abandoned upload's part wrote shard files"
    );

    let deadline = created + Duration::from_secs(12);
    loop {
        let open = open_uploads(&client, &bucket).await;
        if open.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "upload still listed {:?} after its creation, with STRATA_STALE_UPLOAD_EXPIRY_SECS=2 \
             and STRATA_STALE_UPLOAD_SCAN_SECS=1: {open:?}",
            created.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    eprintln!(
        "stale upload gone {:?} after its creation",
        created.elapsed()
    );

    assert_s3_error(
        client
            .upload_part()
            .bucket(&bucket)
            .key(key)
            .upload_id(&id)
            .part_number(2)
            .body(b"late".to_vec().into())
            .send()
            .await,
        404,
        "NoSuchUpload",
        "UploadPart to an expired upload",
    );
    assert_s3_error(
        client
            .list_parts()
            .bucket(&bucket)
            .key(key)
            .upload_id(&id)
            .send()
            .await,
        404,
        "NoSuchUpload",
        "ListParts of an expired upload",
    );
    let got = wait_for_part_files(server.drives(), with_object, Duration::from_secs(5)).await;
    assert_eq!(
        got,
        with_object,
        "shard files of the expired upload remain:\n{}",
        list_part_files(&server)
    );
    assert_object(&client, &bucket, "kept", &[k1.as_slice(), &k2].concat()).await;
}

#[tokio::test]
async fn default_expiry_keeps_uploads_open() {
    // Without the variables the expiry is 7 days: an upload is still there after a few seconds.
    let (_server, client, bucket) = own_server("mpnostale", &[]).await;
    let id = create_upload(&client, &bucket, "open").await;
    let e1 = upload_part(&client, &bucket, "open", &id, 1, b"part").await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        open_uploads(&client, &bucket).await,
        vec![("open".to_string(), id.clone())]
    );
    ok(
        client
            .complete_multipart_upload()
            .bucket(&bucket)
            .key("open")
            .upload_id(&id)
            .multipart_upload(completion(&[(1, e1)]))
            .send()
            .await,
        "Complete",
    );
}

#[tokio::test]
async fn multipart_object_reads_back_with_three_drives_deleted() {
    let (server, client, bucket) = own_server("mpdegraded", &[]).await;
    let key = "ckpt/degraded.bin";
    let parts = [
        payload(5 * MIB, 9001),
        payload(5 * MIB, 9002),
        payload(3 * MIB + 7, 9003),
    ];
    let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    let etag = multipart_put(&client, &bucket, key, &refs).await;
    let whole = parts.concat();
    let boundaries = [5 * MIB, 10 * MIB];

    // One data drive, one more data drive, one parity drive.
    for i in [0usize, 4, 8] {
        let d = &server.drives()[i];
        std::fs::remove_dir_all(d).unwrap_or_else(|e| panic!("remove {}: {e}", d.display()));
    }
    for when in [
        "with 3 drives deleted",
        "after a restart with 3 drives missing",
    ] {
        if when.starts_with("after") {
            server.restart();
        }
        let client = server.client();
        assert_object(&client, &bucket, key, &whole).await;
        let head = ok(
            client.head_object().bucket(&bucket).key(key).send().await,
            "HEAD",
        );
        assert_eq!(head.e_tag(), Some(etag.as_str()), "{when}: ETag");
        let out = ok(
            client
                .get_object()
                .bucket(&bucket)
                .key(key)
                .part_number(2)
                .send()
                .await,
            &format!("{when}: GET partNumber=2"),
        );
        let body = out.body.collect().await.expect("body").into_bytes();
        assert_same_bytes(&body, &parts[1], &format!("{when}: GET partNumber=2"));
        parallel_ranged_gets(&client, &bucket, key, &whole, &boundaries, 11, 2).await;
    }
}

#[tokio::test]
async fn parallel_ranged_gets_across_part_boundaries_are_byte_identical() {
    let (_server, client, bucket) = own_server("mpranges", &[]).await;
    let key = "ckpt/ranged.bin";
    let parts = [
        payload(5 * MIB, 9101),
        payload(5 * MIB + 3, 9102),
        payload(5 * MIB, 9103),
        payload(2 * MIB + 1, 9104),
    ];
    let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    multipart_put(&client, &bucket, key, &refs).await;
    let whole = parts.concat();
    let mut boundaries = Vec::new();
    let mut offset = 0;
    for p in &parts[..parts.len() - 1] {
        offset += p.len();
        boundaries.push(offset);
    }
    let distinct: BTreeSet<usize> = boundaries.iter().copied().collect();
    assert_eq!(distinct.len(), 3);
    parallel_ranged_gets(&client, &bucket, key, &whole, &boundaries, 7, 4).await;
}
