//! The ETag and checksum of an object made of parts (a multipart upload, or appended
//! segments), computed from its parts' own.

use base64::Engine;
use md5::{Digest, Md5};

use super::checksum::{ChecksumAlgorithm, ChecksumType};
use crate::object::record::{PartInfo, StoredChecksum};

/// The CRC of the whole object, combined from its parts' CRCs; `None` for other algorithms
/// or when a part has no CRC of that algorithm.
pub(in crate::object) fn whole_object_crc(
    algorithm: ChecksumAlgorithm,
    parts: &[PartInfo],
) -> Option<String> {
    let mut combined = algorithm.hasher().finish_base64();
    for part in parts {
        let value = part
            .checksum
            .as_ref()
            .filter(|c| c.algorithm == algorithm)?;
        combined = algorithm.combine_base64(&combined, &value.value, part.size)?;
    }
    Some(combined)
}

/// The checksum of an object made of `parts` (their sizes the plaintext's), from theirs:
/// COMPOSITE (the checksum of the concatenated binary part checksums, with the part count
/// appended) or FULL_OBJECT (the CRCs of the parts combined into the CRC of the whole body);
/// `None` when a part has no checksum of that algorithm.
pub(in crate::object) fn checksum_of_parts(
    algorithm: ChecksumAlgorithm,
    kind: ChecksumType,
    parts: &[PartInfo],
) -> Option<StoredChecksum> {
    let values: Vec<&str> = parts
        .iter()
        .map(|p| {
            p.checksum
                .as_ref()
                .filter(|c| c.algorithm == algorithm)
                .map(|c| c.value.as_str())
        })
        .collect::<Option<_>>()?;
    let value = match kind {
        ChecksumType::Composite => {
            let mut hasher = algorithm.hasher();
            for value in values {
                let raw = base64::engine::general_purpose::STANDARD
                    .decode(value)
                    .ok()?;
                hasher.update(&raw);
            }
            format!("{}-{}", hasher.finish_base64(), parts.len())
        }
        ChecksumType::FullObject => whole_object_crc(algorithm, parts)?,
    };
    Some(StoredChecksum {
        algorithm,
        value,
        kind,
    })
}

/// Whether `sent`, the whole object's checksum a client sent with CompleteMultipartUpload,
/// is the object's: its `stored` checksum, a COMPOSITE one without the `-N` part count
/// (minio-go sends the checksum of the parts' checksums so, as AWS takes it), or for a CRC
/// the whole object's CRC, which the parts' CRCs give whatever the upload's checksum type.
pub(in crate::object) fn sent_checksum_matches(
    algorithm: ChecksumAlgorithm,
    sent: &str,
    stored: Option<&StoredChecksum>,
    parts: &[PartInfo],
) -> bool {
    let as_stored = stored
        .filter(|c| c.algorithm == algorithm)
        .is_some_and(|c| {
            let without_count = match c.kind {
                ChecksumType::Composite => c.value.rsplit_once('-').map(|(value, _)| value),
                ChecksumType::FullObject => None,
            };
            c.value == sent || without_count == Some(sent)
        });
    as_stored || whole_object_crc(algorithm, parts).as_deref() == Some(sent)
}

/// The ETag of an object made of `parts`: the MD5 of their binary ETags, and their count.
pub(in crate::object) fn etag_of_parts(parts: &[PartInfo]) -> String {
    let mut md5s = Md5::new();
    for part in parts {
        md5s.update(hex::decode(&part.etag).unwrap_or_default());
    }
    format!("{}-{}", hex::encode(md5s.finalize()), parts.len())
}
