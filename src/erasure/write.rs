//! Streaming writes: blocks are encoded as they arrive and fanned out to every drive.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use uuid::Uuid;

use super::codec::ShardChunk;
use super::{Codec, ErasureError, ErasureSet};
use crate::body::ByteStream;
use crate::storage::{Drive, DriveError};

/// Blocks queued per drive: with the block being encoded, memory per write stays at a few
/// blocks whatever the object size, and a slow drive slows only its own request.
const QUEUE_DEPTH: usize = 2;

/// Where the encoded data of a write went.
#[derive(Debug)]
pub enum Encoded {
    /// Small enough to live in the metadata: one stored chunk per drive.
    Inline(Vec<Bytes>),
    /// Written to staging files; `holders[i]` says whether drive `i` has its shard file
    /// complete and durable.
    Staged { staging: Uuid, holders: Vec<bool> },
}

/// The result of writing one stream.
#[derive(Debug)]
pub struct WriteOutcome {
    /// Bytes of user data written.
    pub size: u64,
    pub encoded: Encoded,
}

/// One drive's writer task, fed through a bounded queue.
struct DriveFeed {
    queue: Option<mpsc::Sender<ShardChunk>>,
    task: JoinHandle<Result<(), DriveError>>,
}

fn start_feed(drive: Arc<dyn Drive>, staging: Uuid, name: String) -> DriveFeed {
    let (queue, mut chunks) = mpsc::channel::<ShardChunk>(QUEUE_DEPTH);
    let task = tokio::spawn(async move {
        let mut writer = drive.create_staged_file(staging, &name).await?;
        while let Some(chunk) = chunks.recv().await {
            let checksum = Bytes::copy_from_slice(&chunk.checksum);
            writer.write(vec![checksum, chunk.shard]).await?;
        }
        writer.finish().await
    });
    DriveFeed {
        queue: Some(queue),
        task,
    }
}

async fn encode(codec: &Arc<Codec>, block: Bytes) -> Vec<ShardChunk> {
    let codec = codec.clone();
    tokio::task::spawn_blocking(move || codec.encode_block(&block))
        .await
        .expect("encoding does not panic")
}

/// Bytes that writes in flight may hold in buffers (the block being filled, the block being
/// encoded, the chunks queued for each drive), shared by every set of a deployment: a write
/// that outgrows the inline size waits for its share before it buffers more, so that any
/// number of uploads stay within it (backpressure, not an error).
pub struct MemoryBudget {
    kib: Arc<tokio::sync::Semaphore>,
    total_kib: usize,
}

impl MemoryBudget {
    pub fn new(bytes: usize) -> Arc<Self> {
        let total_kib = (bytes / 1024).clamp(1, u32::MAX as usize);
        Arc::new(Self {
            kib: Arc::new(tokio::sync::Semaphore::new(total_kib)),
            total_kib,
        })
    }

    /// Waits until `bytes` (at most the whole budget) are free, and holds them until the
    /// answer is dropped.
    async fn reserve(&self, bytes: usize) -> tokio::sync::OwnedSemaphorePermit {
        let kib = bytes.div_ceil(1024).clamp(1, self.total_kib) as u32;
        self.kib
            .clone()
            .acquire_many_owned(kib)
            .await
            .expect("the budget's semaphore is never closed")
    }

    /// Bytes free now.
    pub fn available(&self) -> usize {
        self.kib.available_permits() * 1024
    }
}

impl ErasureSet {
    /// What one streaming write holds at most: the block being filled, one being encoded
    /// and `QUEUE_DEPTH` encoded blocks queued for each drive.
    fn write_footprint(&self) -> usize {
        let encoded = self.block_size * self.drives.len() / self.data_shards();
        self.block_size + (QUEUE_DEPTH + 1) * encoded
    }

    /// Writes a stream as one shard file named `file_name` per drive, or inline when the
    /// whole stream is at most `inline_limit` bytes. Every block also goes to `tap` (the
    /// caller hashes them there, beside the encoding). Nothing is visible until the caller
    /// commits the staged files and the metadata; on error nothing is left behind.
    pub async fn write_stream(
        &self,
        mut body: ByteStream,
        file_name: &str,
        inline_limit: usize,
        tap: mpsc::Sender<Bytes>,
    ) -> Result<WriteOutcome, ErasureError> {
        let mut block = BytesMut::with_capacity(inline_limit.min(self.block_size));
        let mut size = 0u64;
        let mut feeds: Option<Vec<DriveFeed>> = None;
        let staging = Uuid::new_v4();
        // Taken when the write outgrows the inline size, held until it ends.
        let mut budget = None;

        let result: Result<(), ErasureError> = async {
            loop {
                let next = body.next().await;
                let chunk = match next {
                    Some(Ok(chunk)) => chunk,
                    Some(Err(e)) => return Err(ErasureError::Body(e)),
                    None => break,
                };
                size += chunk.len() as u64;
                let mut rest = &chunk[..];
                if budget.is_none() && size > inline_limit as u64 {
                    if let Some(memory) = &self.memory {
                        budget = Some(memory.reserve(self.write_footprint()).await);
                    }
                }
                while !rest.is_empty() {
                    let take = (self.block_size - block.len()).min(rest.len());
                    block.extend_from_slice(&rest[..take]);
                    rest = &rest[take..];
                    if block.len() == self.block_size {
                        let full =
                            std::mem::replace(&mut block, BytesMut::with_capacity(self.block_size))
                                .freeze();
                        let _ = tap.send(full.clone()).await;
                        let feeds =
                            feeds.get_or_insert_with(|| self.start_feeds(staging, file_name));
                        self.send_block(feeds, full).await?;
                    }
                }
            }
            Ok(())
        }
        .await;

        if let Err(e) = result {
            if let Some(feeds) = feeds {
                self.abandon(feeds, staging).await;
            }
            return Err(e);
        }

        let last = block.freeze();
        if !last.is_empty() {
            let _ = tap.send(last.clone()).await;
        }
        drop(tap);
        let mut feeds = match feeds {
            Some(feeds) => feeds,
            None if last.len() <= inline_limit => {
                let chunks = if last.is_empty() {
                    vec![Bytes::new(); self.drives.len()]
                } else {
                    let chunks = encode(&self.codec, last).await;
                    chunks.iter().map(ShardChunk::to_bytes).collect()
                };
                return Ok(WriteOutcome {
                    size,
                    encoded: Encoded::Inline(chunks),
                });
            }
            None => self.start_feeds(staging, file_name),
        };
        if !last.is_empty() {
            if let Err(e) = self.send_block(&mut feeds, last).await {
                self.abandon(feeds, staging).await;
                return Err(e);
            }
        }
        self.finish(feeds, staging, size).await
    }

    fn start_feeds(&self, staging: Uuid, file_name: &str) -> Vec<DriveFeed> {
        self.drives
            .iter()
            .map(|drive| start_feed(drive.clone(), staging, file_name.to_string()))
            .collect()
    }

    /// Encodes a block and queues each drive's chunk; a drive whose writer failed is dropped
    /// from the write, and the write fails as soon as fewer than a quorum remain.
    async fn send_block(&self, feeds: &mut [DriveFeed], block: Bytes) -> Result<(), ErasureError> {
        let chunks = encode(&self.codec, block).await;
        for (feed, chunk) in feeds.iter_mut().zip(chunks) {
            if let Some(queue) = &feed.queue {
                if queue.send(chunk).await.is_err() {
                    feed.queue = None;
                }
            }
        }
        let alive = feeds.iter().filter(|f| f.queue.is_some()).count();
        if alive < self.write_quorum() {
            return Err(ErasureError::WriteQuorum {
                ok: alive,
                needed: self.write_quorum(),
            });
        }
        Ok(())
    }

    /// Closes every queue, waits for the shard files to be durable and checks the quorum.
    async fn finish(
        &self,
        feeds: Vec<DriveFeed>,
        staging: Uuid,
        size: u64,
    ) -> Result<WriteOutcome, ErasureError> {
        let results = close_feeds(feeds).await;
        let holders: Vec<bool> = results.iter().map(Result::is_ok).collect();
        if let Err(e) = self.require_write_quorum(&results) {
            self.remove_staged(staging).await;
            return Err(e);
        }
        for (drive, result) in self.drives.iter().zip(&results) {
            if let Err(e) = result {
                tracing::warn!(drive = drive.label(), error = %e, "shard write failed; object stored degraded");
            }
        }
        Ok(WriteOutcome {
            size,
            encoded: Encoded::Staged { staging, holders },
        })
    }

    async fn abandon(&self, feeds: Vec<DriveFeed>, staging: Uuid) {
        close_feeds(feeds).await;
        self.remove_staged(staging).await;
    }
}

async fn close_feeds(feeds: Vec<DriveFeed>) -> Vec<Result<(), DriveError>> {
    let tasks: Vec<_> = feeds
        .into_iter()
        .map(|mut feed| {
            feed.queue = None;
            feed.task
        })
        .collect();
    futures::future::join_all(tasks)
        .await
        .into_iter()
        .map(|joined| joined.unwrap_or_else(|e| Err(DriveError::Io(std::io::Error::other(e)))))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures::channel::mpsc as channel;

    use super::*;
    use crate::storage::sim::CrashController;

    /// A body fed by the test, one chunk at a time.
    fn fed_body() -> (channel::UnboundedSender<std::io::Result<Bytes>>, ByteStream) {
        let (feed, body) = channel::unbounded();
        (feed, Box::pin(body))
    }

    #[tokio::test]
    async fn writes_beyond_the_memory_budget_wait_for_it() {
        let drives = CrashController::new(9);
        let set = ErasureSet::new(0, drives.drives(), 3, 64 << 10).unwrap();
        // Room for exactly one large write at a time.
        let budget = MemoryBudget::new(set.write_footprint());
        let set = Arc::new(set.with_memory_budget(budget.clone()));
        let block = Bytes::from(vec![7u8; 64 << 10]);
        let start = |feed_first: bool| {
            let (feed, body) = fed_body();
            if feed_first {
                feed.unbounded_send(Ok(block.clone())).unwrap();
            }
            let set = set.clone();
            let (tap, mut tapped) = mpsc::channel(64);
            tokio::spawn(async move { while tapped.recv().await.is_some() {} });
            let write = tokio::spawn(async move { set.write_stream(body, "f", 1024, tap).await });
            (feed, write)
        };
        let (first_feed, first) = start(true);
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(
            budget.available(),
            0,
            "the first write holds the whole budget"
        );
        // A second large write waits before it buffers anything more.
        let (second_feed, second) = start(true);
        second_feed.unbounded_send(Ok(block.clone())).unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!second.is_finished());
        // A small write that fits inline is not held up by them.
        let (small_feed, small) = start(false);
        small_feed
            .unbounded_send(Ok(Bytes::from_static(b"tiny")))
            .unwrap();
        drop(small_feed);
        let small = tokio::time::timeout(Duration::from_secs(5), small).await;
        assert!(matches!(
            small.unwrap().unwrap().unwrap().encoded,
            Encoded::Inline(_)
        ));
        // Once the first ends, the second goes on.
        drop(first_feed);
        first.await.unwrap().unwrap();
        drop(second_feed);
        let second = tokio::time::timeout(Duration::from_secs(5), second).await;
        assert_eq!(
            second.unwrap().unwrap().unwrap().size,
            2 * block.len() as u64
        );
        assert_eq!(budget.available(), set.write_footprint() / 1024 * 1024);
    }
}
