//! The lifecycle scanner is resumable: a pass cut short (the process killed, here its task
//! aborted) leaves a cursor behind, and the next pass goes on after it instead of starting
//! over. The store runs in-process over simulated drives so that thousands of keys take
//! little time.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use strata::background::Worker;
use strata::erasure::ErasureSet;
use strata::lifecycle::engine::CURSOR_PREFIX;
use strata::lifecycle::{LifecycleScanner, LifecycleStatus};
use strata::object::{BucketName, ListQuery, ObjectKey, ObjectStore, PutOptions};
use strata::storage::sim::CrashController;

const KEYS: usize = 2500;
const RULES: &str = "<LifecycleConfiguration><Rule><ID>all</ID><Filter><Prefix></Prefix></Filter>\
    <Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule></LifecycleConfiguration>";

fn scanner(store: &Arc<ObjectStore>, status: &Arc<LifecycleStatus>) -> LifecycleScanner {
    LifecycleScanner {
        store: store.clone(),
        // A millisecond-long day: every object is due at once.
        day: Duration::from_millis(1),
        status: status.clone(),
        pace: strata::lifecycle::Pace::unpaced(),
    }
}

fn expired(status: &LifecycleStatus, bucket: &str) -> u64 {
    status
        .bucket(bucket)
        .and_then(|b| b.rules.get("all").map(|r| r.expired))
        .unwrap_or(0)
}

async fn remaining(store: &ObjectStore, bucket: &BucketName) -> Vec<String> {
    let mut keys = Vec::new();
    let mut query = ListQuery {
        max_keys: 1000,
        ..ListQuery::default()
    };
    loop {
        let page = store.list_objects(bucket, &query).await.unwrap();
        keys.extend(page.entries.iter().map(|e| e.name().to_string()));
        if !page.truncated {
            return keys;
        }
        query.after = keys.last().cloned();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_pass_goes_on_from_its_cursor() {
    let drives = CrashController::new(9);
    let open = || {
        let set = ErasureSet::new(0, drives.drives(), 3, 1 << 20).unwrap();
        ObjectStore::new(vec![set], "resume-test")
    };
    let store = open();
    let bucket = BucketName::parse("logs").unwrap();
    store.create_bucket(&bucket).await.unwrap();
    for i in 0..KEYS {
        let key = ObjectKey::parse(&format!("k{i:05}")).unwrap();
        let body = Box::pin(futures::stream::once(async {
            Ok(Bytes::from_static(b"x"))
        }));
        store
            .put_object(&bucket, &key, body, PutOptions::default())
            .await
            .unwrap();
    }
    store
        .update_bucket_settings(&bucket, |s| {
            s.lifecycle = Some(RULES.into());
            Ok(())
        })
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;

    // The first pass is cut short once it has expired more than a cursor's worth of keys.
    let status = Arc::new(LifecycleStatus::default());
    let mut first = scanner(&store, &status);
    let pass = tokio::spawn(async move { first.run_once().await });
    let started = Instant::now();
    while expired(&status, "logs") < 1200 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the pass stalled"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    pass.abort();
    let _ = pass.await;
    let cut_at = expired(&status, "logs");
    assert!(
        cut_at < KEYS as u64,
        "the pass was cut short ({cut_at} expired)"
    );
    let cursor = store
        .system_get(&format!("{CURSOR_PREFIX}logs"))
        .await
        .unwrap()
        .expect("an interrupted pass leaves its cursor");
    let cursor: serde_json::Value = serde_json::from_slice(&cursor).unwrap();
    assert_eq!(
        cursor["after"], "k00999",
        "saved after the first 1,000 keys"
    );

    // A restarted server (a new store over the same drives) goes on after the cursor.
    let store = open();
    let status = Arc::new(LifecycleStatus::default());
    scanner(&store, &status).run_once().await.unwrap();
    let resumed = status.bucket("logs").unwrap().objects_scanned;
    // The keys after the cursor the first pass had not expired (one delete may have been in
    // flight when it was cut).
    let left_after_cursor = (KEYS - 1000) as u64 - (cut_at - 1000);
    assert!(
        (left_after_cursor.saturating_sub(1)..=left_after_cursor).contains(&resumed),
        "the resumed pass looked at {resumed} keys, not only the {left_after_cursor} after the cursor"
    );
    assert!(
        remaining(&store, &bucket).await.is_empty(),
        "every key expired"
    );
    assert!(
        store
            .system_get(&format!("{CURSOR_PREFIX}logs"))
            .await
            .unwrap()
            .is_none(),
        "a finished pass leaves no cursor"
    );
}
