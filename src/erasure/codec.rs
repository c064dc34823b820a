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

    /// Encodes one block into one stored chunk per drive: checksum, then shard bytes.
    pub fn encode_block(&self, block: &[u8]) -> Vec<Bytes> {
        let shard_len = self.shard_len(block.len());
        let mut chunks: Vec<BytesMut> = (0..self.total_shards())
            .map(|i| {
                let mut chunk = BytesMut::zeroed(CHECKSUM_LEN + shard_len);
                if i < self.data_shards {
                    let start = (i * shard_len).min(block.len());
                    let end = ((i + 1) * shard_len).min(block.len());
                    chunk[CHECKSUM_LEN..CHECKSUM_LEN + end - start]
                        .copy_from_slice(&block[start..end]);
                }
                chunk
            })
            .collect();
        if shard_len > 0 {
            let (data, parity) = chunks.split_at_mut(self.data_shards);
            let data: Vec<&[u8]> = data.iter().map(|c| &c[CHECKSUM_LEN..]).collect();
            let mut parity: Vec<&mut [u8]> =
                parity.iter_mut().map(|c| &mut c[CHECKSUM_LEN..]).collect();
            self.rs
                .encode_sep(&data, &mut parity)
                .expect("shards have equal, non-zero lengths");
        }
        chunks
            .into_iter()
            .map(|mut chunk| {
                let sum = bitrot::checksum(&chunk[CHECKSUM_LEN..]);
                chunk[..CHECKSUM_LEN].copy_from_slice(&sum);
                chunk.freeze()
            })
            .collect()
    }

    /// Rebuilds a block of `block_len` bytes from verified shards (`None` = missing).
    /// Needs at least `data_shards` of them.
    pub fn decode_block(
        &self,
        mut shards: Vec<Option<Vec<u8>>>,
        block_len: usize,
    ) -> Result<Bytes, ErasureError> {
        if shards[..self.data_shards].iter().any(Option::is_none) {
            self.rs
                .reconstruct_data(&mut shards)
                .map_err(|_| ErasureError::ReadQuorum)?;
        }
        let mut block = BytesMut::with_capacity(block_len);
        for shard in shards.into_iter().take(self.data_shards) {
            let shard = shard.expect("reconstructed");
            let take = (block_len - block.len()).min(shard.len());
            block.extend_from_slice(&shard[..take]);
        }
        Ok(block.freeze())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 31 % 251) as u8).collect()
    }

    fn verified(chunks: &[Bytes]) -> Vec<Option<Vec<u8>>> {
        chunks
            .iter()
            .map(|c| Some(bitrot::verify(c).expect("fresh chunk verifies").to_vec()))
            .collect()
    }

    #[test]
    fn any_parity_count_of_missing_shards_is_recovered() {
        let codec = Codec::new(6, 3).unwrap();
        for len in [1, 5, 6, 7, 1000, 174_763, 1 << 20] {
            let block = payload(len);
            let chunks = codec.encode_block(&block);
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
                let decoded = codec.decode_block(shards, len).unwrap();
                assert_eq!(&decoded[..], &block[..], "len {len} mask {mask:09b}");
            }
        }
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
            codec.decode_block(shards, block.len()),
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
                &codec.decode_block(shards, block.len()).unwrap()[..],
                &block[..]
            );
        }
    }
}
