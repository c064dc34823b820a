//! Reed-Solomon coding of one erasure block into data + parity shards.

use bytes::{Bytes, BytesMut};
use reed_solomon_erasure::galois_8::ReedSolomon;

use super::bitrot::{self, CHECKSUM_LEN};
use super::ErasureError;

/// Splits blocks into shards and puts them back together. The kernel (reed-solomon-erasure
/// with SIMD) sits behind this type so a faster one can be swapped in by benchmark.
pub struct Codec {
    rs: ReedSolomon,
    data_shards: usize,
    parity_shards: usize,
}

impl Codec {
    pub fn new(data_shards: usize, parity_shards: usize) -> Result<Self, ErasureError> {
        let rs = ReedSolomon::new(data_shards, parity_shards)
            .map_err(|e| ErasureError::Codec(format!("{e:?}")))?;
        Ok(Self {
            rs,
            data_shards,
            parity_shards,
        })
    }

    pub fn data_shards(&self) -> usize {
        self.data_shards
    }

    pub fn total_shards(&self) -> usize {
        self.data_shards + self.parity_shards
    }

    /// Length of each shard of a block of `block_len` bytes (the last data shard is padded).
    pub fn shard_len(&self, block_len: usize) -> usize {
        block_len.div_ceil(self.data_shards)
    }

    /// Encodes one block into one chunk per drive. Data shards are slices of the block
    /// itself (only the last one is copied, to pad it), so encoding copies no data.
    pub fn encode_block(&self, block: &Bytes) -> Vec<ShardChunk> {
        let shard_len = self.shard_len(block.len());
        let mut data: Vec<Bytes> = (0..self.data_shards)
            .map(|i| {
                let start = (i * shard_len).min(block.len());
                let end = ((i + 1) * shard_len).min(block.len());
                if end - start == shard_len {
                    block.slice(start..end)
                } else {
                    let mut padded = BytesMut::zeroed(shard_len);
                    padded[..end - start].copy_from_slice(&block[start..end]);
                    padded.freeze()
                }
            })
            .collect();
        let mut parity: Vec<Vec<u8>> = vec![vec![0; shard_len]; self.parity_shards];
        if shard_len > 0 {
            self.rs
                .encode_sep(&data, &mut parity)
                .expect("shards have equal, non-zero lengths");
        }
        data.extend(parity.into_iter().map(Bytes::from));
        data.into_iter()
            .map(|shard| ShardChunk {
                checksum: bitrot::checksum(&shard),
                shard,
            })
            .collect()
    }

    /// Rebuilds a block of `block_len` bytes from verified shards (`None` = missing; at
    /// least `data_shards` are needed), as consecutive pieces: the data shards themselves
    /// (cut to `block_len`) when all of them were read, so a read that streams the pieces
    /// out copies no byte; else the data shards rebuilt from the others.
    pub fn decode_block_pieces(
        &self,
        shards: Vec<Option<Bytes>>,
        block_len: usize,
    ) -> Result<Vec<Bytes>, ErasureError> {
        let data: Vec<Bytes> = if shards[..self.data_shards].iter().all(Option::is_some) {
            shards
                .into_iter()
                .take(self.data_shards)
                .flatten()
                .collect()
        } else {
            let mut owned: Vec<Option<Vec<u8>>> =
                shards.into_iter().map(|s| s.map(|s| s.to_vec())).collect();
            self.rs
                .reconstruct_data(&mut owned)
                .map_err(|_| ErasureError::ReadQuorum)?;
            (owned.into_iter().take(self.data_shards))
                .map(|shard| Bytes::from(shard.expect("reconstructed")))
                .collect()
        };
        let mut left = block_len;
        Ok(data
            .into_iter()
            .map(|shard| {
                let take = left.min(shard.len());
                left -= take;
                shard.slice(..take)
            })
            .filter(|piece| !piece.is_empty())
            .collect())
    }
}

/// One drive's part of an encoded block: the shard and its bitrot checksum. On a drive it
/// is stored as the checksum followed by the shard.
#[derive(Debug, Clone)]
pub struct ShardChunk {
    pub checksum: [u8; CHECKSUM_LEN],
    pub shard: Bytes,
}

impl ShardChunk {
    /// The chunk as stored: checksum, then shard bytes.
    pub fn to_bytes(&self) -> Bytes {
        let mut out = BytesMut::with_capacity(CHECKSUM_LEN + self.shard.len());
        out.extend_from_slice(&self.checksum);
        out.extend_from_slice(&self.shard);
        out.freeze()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(len: usize) -> Bytes {
        (0..len).map(|i| (i * 31 % 251) as u8).collect()
    }

    fn verified(chunks: &[ShardChunk]) -> Vec<Option<Bytes>> {
        chunks
            .iter()
            .map(|c| {
                let stored = c.to_bytes();
                assert!(bitrot::verify(&stored).is_some(), "fresh chunk verifies");
                Some(stored.slice(CHECKSUM_LEN..))
            })
            .collect()
    }

    #[test]
    fn any_parity_count_of_missing_shards_is_recovered() {
        let codec = Codec::new(6, 3).unwrap();
        for len in [1, 5, 6, 7, 1000, 174_763, 1 << 20] {
            let block = payload(len);
            let chunks = codec.encode_block(&block);
            for (i, chunk) in chunks.iter().take(6).enumerate() {
                let start = (i * codec.shard_len(len)).min(len);
                let end = ((i + 1) * codec.shard_len(len)).min(len);
                assert_eq!(&chunk.shard[..end - start], &block[start..end]);
            }
            assert_eq!(chunks.len(), 9);
            // Every combination of up to three lost shards.
            for mask in 0u32..(1 << 9) {
                if mask.count_ones() > 3 {
                    continue;
                }
                let mut shards = verified(&chunks);
                for (i, shard) in shards.iter_mut().enumerate() {
                    if mask & (1 << i) != 0 {
                        *shard = None;
                    }
                }
                let decoded = codec.decode_block_pieces(shards, len).unwrap().concat();
                assert_eq!(&decoded[..], &block[..], "len {len} mask {mask:09b}");
            }
        }
    }

    #[test]
    fn a_block_whose_data_shards_were_all_read_is_those_shards_uncopied() {
        let codec = Codec::new(6, 3).unwrap();
        let block = payload(1_000_003);
        let shards = verified(&codec.encode_block(&block));
        let read: Vec<*const u8> = shards
            .iter()
            .take(6)
            .flatten()
            .map(|s| s.as_ptr())
            .collect();
        let pieces = codec.decode_block_pieces(shards, block.len()).unwrap();
        let pieces_at: Vec<*const u8> = pieces.iter().map(|p| p.as_ptr()).collect();
        assert_eq!(pieces_at, read);
        assert_eq!(pieces.concat(), &block[..]);
    }

    #[test]
    fn four_missing_shards_are_an_error_not_wrong_bytes() {
        let codec = Codec::new(6, 3).unwrap();
        let block = payload(4096);
        let mut shards = verified(&codec.encode_block(&block));
        for shard in shards.iter_mut().take(4) {
            *shard = None;
        }
        assert!(matches!(
            codec.decode_block_pieces(shards, block.len()),
            Err(ErasureError::ReadQuorum)
        ));
    }

    #[test]
    fn other_geometries_round_trip() {
        for (d, p) in [(2, 1), (4, 2), (8, 4), (12, 4)] {
            let codec = Codec::new(d, p).unwrap();
            let block = payload(99_999);
            let mut shards = verified(&codec.encode_block(&block));
            for shard in shards.iter_mut().take(p) {
                *shard = None;
            }
            assert_eq!(
                &codec
                    .decode_block_pieces(shards, block.len())
                    .unwrap()
                    .concat()[..],
                &block[..]
            );
        }
    }
}
