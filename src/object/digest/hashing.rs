//! Digests of a body computed on their own thread beside the encoding: MD5 alone runs at
//! ~0.5 GB/s, so hashing inline would halve the speed of a single PUT.

use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::body::TrailerSlot;
use crate::object::digest::checksum::{ChecksumAlgorithm, ChecksumType};
use crate::object::digest::md5_lanes::Md5Lanes;
use crate::object::{ObjectError, StoredChecksum};

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

/// The body, each chunk also sent to `tap` as it passes (for digests of a body that is
/// sealed before it is written).
pub fn tapped(body: crate::body::ByteStream, tap: mpsc::Sender<Bytes>) -> crate::body::ByteStream {
    use futures::StreamExt;
    Box::pin(body.then(move |chunk| {
        let tap = tap.clone();
        async move {
            if let Ok(chunk) = &chunk {
                let _ = tap.send(chunk.clone()).await;
            }
            chunk
        }
    }))
}

/// Starts hashing the blocks sent to the returned sender: MD5 on the store's shared
/// hashing thread, the flexible checksum on the blocking pool. The digests are ready once
/// every sender is gone.
pub fn start(
    md5: &Md5Lanes,
    algorithm: Option<ChecksumAlgorithm>,
) -> (mpsc::Sender<Bytes>, JoinHandle<Option<BodyDigests>>) {
    let (tx, mut rx) = mpsc::channel::<Bytes>(HASH_QUEUE);
    let md5 = md5.stream();
    let task = tokio::spawn(async move {
        let mut checksum = algorithm.map(ChecksumAlgorithm::hasher);
        while let Some(block) = rx.recv().await {
            md5.update(block.clone()).await;
            if let Some(mut hasher) = checksum.take() {
                let hashed = tokio::task::spawn_blocking(move || {
                    hasher.update(&block);
                    hasher
                });
                checksum = Some(hashed.await.ok()?);
            }
        }
        Some(BodyDigests {
            md5: md5.finish().await?,
            checksum: checksum.map(|h| h.finish_base64()),
        })
    });
    (tx, task)
}
