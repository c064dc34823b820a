//! Digests of a body computed on their own thread beside the encoding: MD5 alone runs at
//! ~0.5 GB/s, so hashing inline would halve the speed of a single PUT.

use std::sync::Arc;

use bytes::Bytes;
use md5::{Digest, Md5};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::checksum::{ChecksumAlgorithm, ChecksumType};
use super::{ObjectError, StoredChecksum};
use crate::body::TrailerSlot;

/// Blocks queued to the hashing thread: bounded, so a slow hash slows the upload instead of
/// buffering it.
const HASH_QUEUE: usize = 2;

/// The checksum a client announced for a body.
#[derive(Debug, Clone)]
pub enum ExpectedChecksum {
    /// Sent up front in an `x-amz-checksum-*` header (base64).
    Value(ChecksumAlgorithm, String),
    /// Announced in `x-amz-trailer`; its value arrives after the body.
    Trailer(ChecksumAlgorithm, Arc<TrailerSlot>),
    /// Not sent by the client, but needed (a part of an upload with a checksum algorithm):
    /// computed and stored, nothing to compare.
    Compute(ChecksumAlgorithm),
}

impl ExpectedChecksum {
    pub fn algorithm(&self) -> ChecksumAlgorithm {
        match self {
            ExpectedChecksum::Value(a, _)
            | ExpectedChecksum::Trailer(a, _)
            | ExpectedChecksum::Compute(a) => *a,
        }
    }

    /// Compares the computed value with the announced one.
    pub fn check(&self, computed: &str) -> Result<StoredChecksum, ObjectError> {
        let algorithm = self.algorithm();
        let expected = match self {
            ExpectedChecksum::Value(_, v) => Some(v.as_str()),
            ExpectedChecksum::Trailer(_, slot) => slot.get(algorithm.header_name()),
            ExpectedChecksum::Compute(_) => Some(computed),
        };
        match expected {
            Some(v) if v == computed => Ok(StoredChecksum {
                algorithm,
                value: computed.to_string(),
                kind: ChecksumType::FullObject,
            }),
            Some(_) => Err(ObjectError::ChecksumMismatch(algorithm)),
            None => Err(ObjectError::InvalidArgument(format!(
                "the {} checksum announced in x-amz-trailer was not sent",
                algorithm.as_str()
            ))),
        }
    }
}

/// What the hashing thread found once the body ended.
pub struct BodyDigests {
    pub md5: [u8; 16],
    /// Base64 of the flexible checksum, when one was asked for.
    pub checksum: Option<String>,
}

/// Starts a blocking thread that hashes the blocks sent to it; the digests are ready once
/// every sender is gone.
pub fn start(
    algorithm: Option<ChecksumAlgorithm>,
) -> (mpsc::Sender<Bytes>, JoinHandle<BodyDigests>) {
    let (tx, mut rx) = mpsc::channel::<Bytes>(HASH_QUEUE);
    let task = tokio::task::spawn_blocking(move || {
        let mut md5 = Md5::new();
        let mut checksum = algorithm.map(ChecksumAlgorithm::hasher);
        while let Some(block) = rx.blocking_recv() {
            md5.update(&block);
            if let Some(hasher) = checksum.as_mut() {
                hasher.update(&block);
            }
        }
        BodyDigests {
            md5: md5.finalize().into(),
            checksum: checksum.map(|h| h.finish_base64()),
        }
    });
    (tx, task)
}
