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

impl ErasureSet {
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
        let mut block = BytesMut::with_capacity(self.block_size);
        let mut size = 0u64;
        let mut feeds: Option<Vec<DriveFeed>> = None;
        let staging = Uuid::new_v4();

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
