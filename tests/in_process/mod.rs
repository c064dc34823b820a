//! Shared by the tests that run the object store in process over simulated drives: names,
//! bodies and payloads, a 6+3 store over given drives, and reading an object back whole.
#![allow(dead_code)]

use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use strata::body::ByteStream;
use strata::erasure::ErasureSet;
use strata::object::{BucketName, GetOptions, ObjectError, ObjectKey, ObjectStore};
use strata::storage::Drive;

pub const KIB: usize = 1024;
/// Small blocks, so that a few hundred KiB span several of them.
pub const BLOCK_SIZE: usize = 64 * KIB;
pub const PARITY: usize = 3;

pub fn bucket_named(name: &str) -> BucketName {
    BucketName::parse(name).unwrap()
}

pub fn key(name: &str) -> ObjectKey {
    ObjectKey::parse(name).unwrap()
}

/// A body as one piece.
pub fn body(data: &[u8]) -> ByteStream {
    let data = Bytes::copy_from_slice(data);
    Box::pin(futures::stream::iter([Ok(data)]))
}

/// Deterministic bytes, distinct per seed.
pub fn payload(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect()
}

/// A store over one set of the drives given (6+3 for nine).
pub fn store_over(drives: Vec<Arc<dyn Drive>>, deployment_id: &str) -> Arc<ObjectStore> {
    let set = ErasureSet::new(0, drives, PARITY, BLOCK_SIZE).expect("erasure set");
    ObjectStore::new(vec![set], deployment_id)
}

/// GET of a version (the newest when `None`), read whole.
pub async fn read_all(
    store: &ObjectStore,
    bucket: &BucketName,
    key: &ObjectKey,
    version: Option<&str>,
) -> Result<Vec<u8>, ObjectError> {
    let options = GetOptions {
        version_id: version.map(str::to_string),
        ..GetOptions::default()
    };
    let result = store.get_object(bucket, key, options).await?;
    let mut bytes = Vec::new();
    let mut stream = result.body;
    while let Some(piece) = stream.next().await {
        bytes.extend_from_slice(&piece.expect("body"));
    }
    Ok(bytes)
}
