use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;

use super::*;
use crate::body::ByteStream;
use crate::kms::{BuiltinKms, MasterKey, MemoryCatalog};

async fn kms() -> BuiltinKms {
    let master = MasterKey::generate("test-master").expect("valid name");
    BuiltinKms::open(master, Arc::new(MemoryCatalog::new()))
        .await
        .expect("opens")
}

fn same_key(a: &ObjectKey, b: &ObjectKey) -> bool {
    a.object_package_key().bytes() == b.object_package_key().bytes()
}

/// Records survive both serialisations the server may store them in.
fn round_trip(record: &Sse) -> Sse {
    let json: Sse =
        serde_json::from_str(&serde_json::to_string(record).expect("json")).expect("json back");
    assert_eq!(&json, record);
    let packed = rmp_serde::to_vec_named(record).expect("msgpack");
    let back: Sse = rmp_serde::from_slice(&packed).expect("msgpack back");
    assert_eq!(&back, record);
    back
}

#[tokio::test]
async fn sse_s3_records_reopen_only_for_their_object() {
    let kms = kms().await;
    let (key, record) = Sse::new_s3(&kms, "bucket", "a/b.txt").await.expect("seals");
    assert_eq!(record.kind(), SseKind::S3);
    let record = round_trip(&record);
    let opened = record
        .open(&kms, None, "bucket", "a/b.txt")
        .await
        .expect("opens");
    assert!(same_key(&key, &opened));
    for (bucket, object) in [("bucket", "a/b.txt2"), ("bucket2", "a/b.txt")] {
        let moved = record.open(&kms, None, bucket, object).await;
        assert!(matches!(moved, Err(EncryptionError::Unseal)), "{moved:?}");
    }
    let customer = CustomerKey::from_bytes([1; 32]);
    let result = record
        .open(&kms, Some(&customer), "bucket", "a/b.txt")
        .await;
    assert!(matches!(
        result,
        Err(EncryptionError::CustomerKeyNotApplicable)
    ));
}

#[tokio::test]
async fn sse_kms_records_need_their_key_and_context() {
    let kms = kms().await;
    kms.create_key("tenant-a").await.expect("creates");
    let mut requested = EncryptionContext::new();
    requested.insert("project".into(), "x".into());
    let context = kms_context("bkt", Some("obj"), requested);
    assert_eq!(context["aws:s3:arn"], "arn:aws:s3:::bkt/obj");
    assert_eq!(
        kms_context("bkt", None, EncryptionContext::new())["aws:s3:arn"],
        "arn:aws:s3:::bkt"
    );

    let (key, record) = Sse::new_kms(&kms, Some("tenant-a"), context.clone(), "bkt", "obj")
        .await
        .expect("seals");
    let record = round_trip(&record);
    let opened = record.open(&kms, None, "bkt", "obj").await.expect("opens");
    assert!(same_key(&key, &opened));

    // Without a key id, the default key.
    let (_, default) = Sse::new_kms(&kms, None, context.clone(), "bkt", "obj")
        .await
        .expect("seals");
    assert!(matches!(&default, Sse::Kms { key_id, .. } if key_id == "test-master"));

    // An edited context in the record does not open.
    let Sse::Kms {
        key_id,
        sealed_data_key,
        sealed,
        bucket_key,
        ..
    } = record.clone()
    else {
        unreachable!("a KMS record")
    };
    let edited = Sse::Kms {
        key_id,
        sealed_data_key,
        sealed,
        bucket_key,
        context: kms_context("bkt", Some("obj"), EncryptionContext::new()),
    };
    let result = edited.open(&kms, None, "bkt", "obj").await;
    assert!(matches!(
        result,
        Err(EncryptionError::Kms(KmsError::Tampered))
    ));

    kms.disable_key("tenant-a").await.expect("disables");
    let result = record.open(&kms, None, "bkt", "obj").await;
    assert!(matches!(
        result,
        Err(EncryptionError::Kms(KmsError::KeyDisabled(_)))
    ));
    let result = Sse::new_kms(&kms, Some("missing"), context, "bkt", "obj").await;
    assert!(matches!(
        result,
        Err(EncryptionError::Kms(KmsError::NoSuchKey(_)))
    ));
}

#[tokio::test]
async fn sse_c_records_open_only_with_the_clients_key() {
    let kms = kms().await;
    let customer = CustomerKey::from_bytes([0x5a; 32]);
    let (key, record) = Sse::seal_customer(&customer, "b", "o");
    let record = round_trip(&record);
    let json = serde_json::to_string(&record).expect("json");
    assert!(
        !json.contains(&BASE64.encode([0x5a; 32])),
        "the key is not stored"
    );

    let opened = record
        .open(&kms, Some(&customer), "b", "o")
        .await
        .expect("opens");
    assert!(same_key(&key, &opened));
    let wrong = CustomerKey::from_bytes([0x5b; 32]);
    let result = record.open(&kms, Some(&wrong), "b", "o").await;
    assert!(matches!(result, Err(EncryptionError::CustomerKeyMismatch)));
    let result = record.open(&kms, None, "b", "o").await;
    assert!(matches!(result, Err(EncryptionError::CustomerKeyRequired)));
    let result = record.open_customer(&customer, "b", "other");
    assert!(matches!(result, Err(EncryptionError::Unseal)));
}

#[tokio::test]
async fn an_object_written_under_a_record_reads_back_after_reopening() {
    let kms = kms().await;
    let (key, record) = Sse::new_s3(&kms, "b", "o").await.expect("seals");
    let plain: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let input: ByteStream = Box::pin(futures::stream::iter([Ok(Bytes::from(plain.clone()))]));
    let sealed: Vec<Bytes> = encrypt_stream(&key.object_package_key(), input)
        .map(|chunk| chunk.expect("encrypts"))
        .collect()
        .await;
    drop(key);

    let reopened = record.open(&kms, None, "b", "o").await.expect("opens");
    let total = plain.len() as u64;
    let range = sealed_range(100_000, 50_000, total);
    let all: Vec<u8> = sealed.iter().flat_map(|c| c.iter().copied()).collect();
    let start = range.sealed_offset as usize;
    let slice = Bytes::copy_from_slice(&all[start..start + range.sealed_len as usize]);
    let stream: ByteStream = Box::pin(futures::stream::iter([Ok(slice)]));
    let out: Vec<u8> = decrypt_stream(
        &reopened.object_package_key(),
        &range,
        total,
        stream,
        50_000,
    )
    .map(|chunk| chunk.expect("decrypts"))
    .collect::<Vec<Bytes>>()
    .await
    .concat();
    assert!(out == plain[100_000..150_000]);
}
