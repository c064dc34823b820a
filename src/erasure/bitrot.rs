//! Bitrot checksums: every shard chunk on a drive is preceded by the xxh3-128 of its bytes.
//!
//! The hash is not cryptographic on purpose: it guards against silent corruption, not an
//! adversary, and at ~20 GB/s it costs next to nothing beside the MD5 of the ETag.

use xxhash_rust::xxh3::xxh3_128;

/// Bytes of checksum in front of every shard chunk.
pub const CHECKSUM_LEN: usize = 16;

/// The checksum of one shard chunk, as stored.
pub fn checksum(shard: &[u8]) -> [u8; CHECKSUM_LEN] {
    xxh3_128(shard).to_le_bytes()
}

/// Returns the shard bytes of a stored chunk if its checksum matches, `None` if it is
/// corrupt or truncated.
pub fn verify(chunk: &[u8]) -> Option<&[u8]> {
    if chunk.len() < CHECKSUM_LEN {
        return None;
    }
    let (sum, shard) = chunk.split_at(CHECKSUM_LEN);
    (sum == checksum(shard)).then_some(shard)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_accepts_intact_and_rejects_damaged_chunks() {
        let mut chunk = checksum(b"shard bytes").to_vec();
        chunk.extend_from_slice(b"shard bytes");
        assert_eq!(verify(&chunk), Some(&b"shard bytes"[..]));
        for i in 0..chunk.len() {
            let mut bad = chunk.clone();
            bad[i] ^= 0x01;
            assert_eq!(verify(&bad), None, "flip at byte {i} went unnoticed");
        }
        assert_eq!(verify(&chunk[..10]), None);
        assert_eq!(verify(&chunk[..chunk.len() - 1]), None);
    }
}
