//! Healing one part: finding the drives whose shards are missing or damaged, and rebuilding
//! their shards from the others. Rebuilt shards are the original ones: encoding is
//! deterministic, so re-encoding the decoded block gives back every drive's exact chunk.

use bytes::Bytes;
use futures::future::join_all;
use uuid::Uuid;

use super::bitrot::{self, CHECKSUM_LEN};
use super::{ErasureError, ErasureSet, ShardSource};
use crate::storage::DataDir;

impl ErasureSet {
    /// Byte offset and length of block `index`'s chunk in a shard of a part of `size` bytes.
    fn chunk_span(&self, size: u64, index: u64) -> (u64, usize) {
        let block_start = index * self.block_size as u64;
        let block_len = (size - block_start).min(self.block_size as u64) as usize;
        let full_chunk = CHECKSUM_LEN + self.codec.shard_len(self.block_size);
        (
            index * full_chunk as u64,
            CHECKSUM_LEN + self.codec.shard_len(block_len),
        )
    }

    fn block_count(&self, size: u64) -> u64 {
        size.div_ceil(self.block_size as u64)
    }

    /// Reads and verifies every chunk of a part on every drive: `true` where the drive's
    /// whole shard is present and passes its bitrot checksums.
    pub async fn verify_sources(&self, size: u64, sources: &[Option<ShardSource>]) -> Vec<bool> {
        join_all(sources.iter().map(|source| async move {
            let Some(source) = source else { return false };
            for index in 0..self.block_count(size) {
                let (offset, len) = self.chunk_span(size, index);
                match source.read(offset, len).await {
                    Ok(chunk) if bitrot::verify(&chunk).is_some() => {}
                    _ => return false,
                }
            }
            true
        }))
        .await
    }

    /// Rebuilds a file-backed part's shards for the `targets` drives into staging folder
    /// `staging`, decoding each block from `sources` (the drives with good shards). Returns,
    /// per drive, whether its rebuilt shard file is staged and durable.
    pub async fn rebuild_part(
        &self,
        size: u64,
        sources: Vec<Option<ShardSource>>,
        targets: &[bool],
        staging: Uuid,
        file_name: &str,
    ) -> Result<Vec<bool>, ErasureError> {
        let reader = self.part_reader(size, sources)?;
        let mut writers = join_all(self.drives.iter().zip(targets).map(|(drive, &target)| {
            let drive = drive.clone();
            async move {
                if !target {
                    return None;
                }
                drive.create_staged_file(staging, file_name).await.ok()
            }
        }))
        .await;
        for index in 0..self.block_count(size) {
            let block = reader.read_block(index).await?;
            let codec = self.codec.clone();
            let chunks = tokio::task::spawn_blocking(move || codec.encode_block(&block))
                .await
                .map_err(|e| ErasureError::Codec(e.to_string()))?;
            let writes = writers
                .iter_mut()
                .zip(chunks)
                .map(|(writer, chunk)| async move {
                    if let Some(w) = writer {
                        let checksum = Bytes::copy_from_slice(&chunk.checksum);
                        if w.write(vec![checksum, chunk.shard]).await.is_err() {
                            *writer = None;
                        }
                    }
                });
            join_all(writes).await;
        }
        let finished = join_all(writers.iter_mut().map(|writer| async move {
            match writer {
                Some(w) => w.finish().await.is_ok(),
                None => false,
            }
        }))
        .await;
        Ok(finished)
    }

    /// Rebuilds every drive's inline chunk of a small object from the good ones.
    pub async fn rebuild_inline(
        &self,
        size: u64,
        sources: Vec<Option<ShardSource>>,
    ) -> Result<Vec<Bytes>, ErasureError> {
        if size == 0 {
            return Ok(vec![Bytes::new(); self.drives.len()]);
        }
        let reader = self.part_reader(size, sources)?;
        let block = reader.read_block(0).await?;
        Ok(self
            .codec
            .encode_block(&block)
            .iter()
            .map(|chunk| chunk.to_bytes())
            .collect())
    }

    /// Opens one part's shard files on every drive that may hold them.
    pub async fn open_all_shards(
        &self,
        dir: &DataDir,
        file_name: &str,
    ) -> Vec<Option<ShardSource>> {
        self.open_shards(dir, file_name, &vec![true; self.drives.len()])
            .await
    }
}
