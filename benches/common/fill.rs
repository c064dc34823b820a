//! Filling a bucket with zero-byte objects without PUTs: a million keys by PUT would take
//! hours (a durable transaction on 9 drives per key), so the records go straight into every
//! drive's metadata database, `FILL_BATCH` keys per transaction, exactly as a PUT of an
//! empty body leaves them (record and empty inline chunk). The stored form is copied from
//! one real PUT, after checking that this file writes records and keys byte for byte as the
//! store does.

use futures::future::join_all;
use strata::object::{ObjectKey, ObjectRecord, ObjectStore, PutOptions};
use strata::storage::{MetaOp, MetaTable};

use super::store::bucket;

/// Holds the one object written by a real PUT, whose stored form the fill copies.
const TEMPLATE_BUCKET: &str = "template";
const TEMPLATE_KEY: &str = "empty";
/// Keys per metadata transaction while filling.
const FILL_BATCH: usize = 25_000;
/// Format byte in front of every stored record (`src/object/record.rs`); checked against a
/// record the server wrote before the fill uses it.
const RECORD_VERSION: u8 = 1;

/// Database key of an object (`src/object/record.rs`): bucket, NUL, key.
fn object_key(bucket: &str, key: &str) -> Vec<u8> {
    [bucket.as_bytes(), &[0], key.as_bytes()].concat()
}

/// Database key of an inline object's chunk: the object key, NUL, the data id.
fn inline_key(bucket: &str, key: &str, data_id: uuid::Uuid) -> Vec<u8> {
    [object_key(bucket, key).as_slice(), &[0], data_id.as_bytes()].concat()
}

fn encode(record: &ObjectRecord) -> Vec<u8> {
    let mut out = vec![RECORD_VERSION];
    out.extend(rmp_serde::to_vec_named(record).expect("record serialises"));
    out
}

/// Creates `buckets` and the template bucket and PUTs one empty object for real; returns its
/// record, after checking that this file writes records and keys byte for byte as the store
/// does.
pub async fn template(store: &ObjectStore, buckets: &[&str]) -> ObjectRecord {
    for name in buckets.iter().chain([&TEMPLATE_BUCKET]) {
        store.create_bucket(&bucket(name)).await.expect("bucket");
    }
    let empty: strata::body::ByteStream = Box::pin(futures::stream::empty());
    let key = ObjectKey::parse(TEMPLATE_KEY).expect("valid key");
    store
        .put_object(&bucket(TEMPLATE_BUCKET), &key, empty, PutOptions::default())
        .await
        .expect("PUT of the template");
    let first_drive = &store.sets()[0].drives()[0];
    let stored = (first_drive.meta_get(
        MetaTable::Objects,
        object_key(TEMPLATE_BUCKET, TEMPLATE_KEY),
    ))
    .await
    .expect("drive answers")
    .expect("the object key layout matches the store's");
    let record: ObjectRecord = rmp_serde::from_slice(&stored[1..]).expect("record decodes");
    assert!(
        encode(&record) == stored,
        "the record encoding changed: update encode() in benches/common/fill.rs"
    );
    assert!(record.inline && record.size == 0 && record.superseded.is_none());
    let chunk = (first_drive.meta_get(
        MetaTable::Inline,
        inline_key(TEMPLATE_BUCKET, TEMPLATE_KEY, record.data_id),
    ))
    .await
    .expect("drive answers")
    .expect("the inline key layout matches the store's");
    assert!(chunk.is_empty(), "an empty object has empty inline chunks");
    record
}

/// Puts keys `key(0)..key(count)` in `bucket` on every drive, copies of `template`,
/// `FILL_BATCH` keys per transaction.
pub async fn fill(
    store: &ObjectStore,
    template: &ObjectRecord,
    bucket: &str,
    count: usize,
    key: impl Fn(usize) -> String,
) {
    let set = &store.sets()[0];
    let mut start = 0;
    while start < count {
        let end = (start + FILL_BATCH).min(count);
        // Sorted, so each transaction inserts in key order.
        let mut keys: Vec<String> = (start..end).map(&key).collect();
        keys.sort_unstable();
        let mut ops = Vec::with_capacity(2 * keys.len());
        for key in &keys {
            let mut record = template.clone();
            record.data_id = uuid::Uuid::now_v7();
            ops.push(MetaOp::Put {
                table: MetaTable::Inline,
                key: inline_key(bucket, key, record.data_id),
                value: Vec::new(),
            });
            ops.push(MetaOp::Put {
                table: MetaTable::Objects,
                key: object_key(bucket, key),
                value: encode(&record),
            });
        }
        let drives = set.drives();
        let applied = join_all(drives.iter().map(|d| d.meta_apply(ops.clone()))).await;
        for result in applied {
            result.expect("fill transaction");
        }
        start = end;
    }
}
