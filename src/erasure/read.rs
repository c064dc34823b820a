//! Reads: data shards first, parity only when a shard is missing, unreadable or corrupt.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::future::join_all;
use futures::StreamExt;
use tokio::sync::OnceCell;

use super::bitrot::{self, CHECKSUM_LEN};
use super::{Codec, ErasureError, ErasureSet};
use crate::body::ByteStream;
use crate::storage::{DataDir, Drive, DriveError, ShardReader};

/// Blocks read ahead of the one being sent, so drive latency overlaps the network.
const READ_AHEAD: usize = 2;

/// Where one drive's shard chunks of a part can be read from.
pub enum ShardSource {
    /// Stored in the metadata record (small objects).
    Inline(Bytes),
    /// An open shard file.
    File(Box<dyn ShardReader>),
    /// A shard file opened at its first read: a parity shard, which a read of a healthy
    /// set never needs.
    Unopened(Box<UnopenedShard>),
}

/// A shard file to open when it is first read.
pub struct UnopenedShard {
    drive: Arc<dyn Drive>,
    dir: Arc<DataDir>,
    file: String,
    opened: OnceCell<Result<Box<dyn ShardReader>, DriveError>>,
}

impl UnopenedShard {
    async fn reader(&self) -> Result<&dyn ShardReader, DriveError> {
        let opened = (self.opened)
            .get_or_init(|| async {
                let file = std::slice::from_ref(&self.file);
                let mut opened = self.drive.open_shards(&self.dir, file).await;
                opened.pop().unwrap_or(Err(DriveError::NotFound))
            })
            .await;
        match opened {
            Ok(reader) => Ok(reader.as_ref()),
            Err(e) => Err(e.copied()),
        }
    }
}

impl ShardSource {
    pub(super) async fn read(&self, offset: u64, len: usize) -> Result<Bytes, DriveError> {
        match self {
            ShardSource::Inline(bytes) => {
                let start = offset as usize;
                bytes
                    .get(start..start + len)
                    .map(|_| bytes.slice(start..start + len))
                    .ok_or(DriveError::ShortRead)
            }
            ShardSource::File(reader) => reader.read_at(offset, len).await,
            ShardSource::Unopened(shard) => shard.reader().await?.read_at(offset, len).await,
        }
    }
}

/// Reads the blocks of one part (a shard file per drive, or inline chunks).
pub struct PartReader {
    codec: Arc<Codec>,
    block_size: usize,
    size: u64,
    sources: Vec<Option<ShardSource>>,
    labels: Vec<String>,
    /// Drives that are other nodes': read after this node's own.
    remote: Vec<bool>,
    /// Drives that failed during this read: not asked again.
    failed: Mutex<Vec<bool>>,
    /// Called once, at the first damaged or missing shard, so the part can be healed.
    on_damage: Option<Box<dyn Fn() + Send + Sync>>,
}

impl ErasureSet {
    /// Opens the shard files of one part on the drives that hold it.
    pub async fn open_shards(
        &self,
        dir: &DataDir,
        file_name: &str,
        holders: &[bool],
    ) -> Vec<Option<ShardSource>> {
        let mut parts = self
            .open_parts(dir, &[file_name.to_string()], holders)
            .await;
        parts.pop().expect("one part asked, one answered")
    }

    /// Opens the shard files of several parts on the drives that hold them, in one call per
    /// drive: for each part, a source per drive.
    pub async fn open_parts(
        &self,
        dir: &DataDir,
        files: &[String],
        holders: &[bool],
    ) -> Vec<Vec<Option<ShardSource>>> {
        let per_drive = join_all(self.drives.iter().zip(holders).map(
            |(drive, &holds)| async move {
                if !holds {
                    return files.iter().map(|_| None).collect::<Vec<_>>();
                }
                let opened = drive.open_shards(dir, files).await;
                (opened.into_iter())
                .map(|opened| match opened {
                    Ok(reader) => Some(ShardSource::File(reader)),
                    Err(e) => {
                        tracing::warn!(drive = drive.label(), error = %e, "shard file unavailable");
                        None
                    }
                })
                .collect()
            },
        ))
        .await;
        let mut parts: Vec<Vec<Option<ShardSource>>> = (0..files.len())
            .map(|_| Vec::with_capacity(per_drive.len()))
            .collect();
        for drive in per_drive {
            for (part, source) in parts.iter_mut().zip(drive) {
                part.push(source);
            }
        }
        parts
    }

    /// A reader over one part of `size` bytes. Fails with [`ErasureError::ReadQuorum`] when
    /// fewer drives than data shards can serve it.
    pub fn part_reader(
        &self,
        size: u64,
        sources: Vec<Option<ShardSource>>,
    ) -> Result<PartReader, ErasureError> {
        if size > 0 && sources.iter().flatten().count() < self.data_shards() {
            return Err(ErasureError::ReadQuorum);
        }
        Ok(PartReader {
            codec: self.codec.clone(),
            block_size: self.block_size,
            size,
            failed: Mutex::new(vec![false; sources.len()]),
            labels: self.drives.iter().map(|d| d.label().to_string()).collect(),
            remote: self.drives.iter().map(|d| d.is_remote()).collect(),
            sources,
            on_damage: None,
        })
    }
}

impl PartReader {
    /// Asks to be told (once) when a shard turns out missing, unreadable or corrupt.
    pub fn on_damage(mut self, report: impl Fn() + Send + Sync + 'static) -> Self {
        self.on_damage = Some(Box::new(report));
        self
    }

    /// Reads and verifies block `index`, reconstructing it from parity when needed.
    pub async fn read_block(&self, index: u64) -> Result<Bytes, ErasureError> {
        let pieces = self.read_block_pieces(index).await?;
        Ok(match &pieces[..] {
            [piece] => piece.clone(),
            _ => pieces.concat().into(),
        })
    }

    /// Block `index` as [`Codec::decode_block_pieces`] gives it: its data shards as read, when
    /// none had to be rebuilt.
    pub async fn read_block_pieces(&self, index: u64) -> Result<Vec<Bytes>, ErasureError> {
        let block_start = index * self.block_size as u64;
        let block_len = (self.size - block_start).min(self.block_size as u64) as usize;
        let chunk_len = CHECKSUM_LEN + self.codec.shard_len(block_len);
        let offset = index * (CHECKSUM_LEN + self.codec.shard_len(self.block_size)) as u64;
        let data_shards = self.codec.data_shards();

        let mut shards: Vec<Option<Bytes>> = vec![None; self.sources.len()];
        let mut verified = 0;
        // This node's own drives first, then the others'; among each, data shards come first
        // in drive order, so a healthy set of local drives never touches parity.
        let mut candidates = {
            let failed = self.failed.lock().expect("not poisoned");
            let mut available: Vec<usize> = (0..self.sources.len())
                .filter(|&i| self.sources[i].is_some() && !failed[i])
                .collect();
            in_read_order(&mut available, |i| self.remote[i]);
            available.into_iter()
        };
        while verified < data_shards {
            let batch: Vec<usize> = candidates.by_ref().take(data_shards - verified).collect();
            if batch.is_empty() {
                return Err(ErasureError::ReadQuorum);
            }
            let reads = join_all(batch.iter().map(|&i| {
                let source = self.sources[i].as_ref().expect("candidate has a source");
                source.read(offset, chunk_len)
            }))
            .await;
            for (i, read) in batch.into_iter().zip(reads) {
                let problem = match read {
                    Ok(chunk) if bitrot::verify(&chunk).is_some() => {
                        shards[i] = Some(chunk.slice(CHECKSUM_LEN..));
                        verified += 1;
                        continue;
                    }
                    Ok(_) => "bitrot checksum mismatch".to_string(),
                    Err(e) => e.to_string(),
                };
                tracing::warn!(drive = %self.labels[i], block = index, %problem, "shard unreadable, reading parity");
                let first = {
                    let mut failed = self.failed.lock().expect("not poisoned");
                    let first = !failed.contains(&true);
                    failed[i] = true;
                    first
                };
                if first {
                    if let Some(report) = &self.on_damage {
                        report();
                    }
                }
            }
        }
        if shards[..data_shards].iter().all(Option::is_some) {
            return self.codec.decode_block_pieces(shards, block_len);
        }
        let codec = self.codec.clone();
        tokio::task::spawn_blocking(move || codec.decode_block_pieces(shards, block_len))
            .await
            .map_err(|e| ErasureError::Codec(e.to_string()))?
    }

    /// Streams bytes `start..end` of the part.
    pub fn stream_range(self: Arc<Self>, start: u64, end: u64) -> ByteStream {
        stream_parts(futures::stream::iter([Ok((self, start, end))]))
    }
}

/// Bytes `start..end` of one part of a stored version, kept in the shard file `file`.
pub struct PartSpan {
    pub file: String,
    pub size: u64,
    pub start: u64,
    pub end: u64,
}

/// Parts whose shard files one drive call opens, and such batches opened ahead of the one
/// being read.
const PARTS_PER_OPEN: usize = 64;
const OPENS_AHEAD: usize = 2;

impl ErasureSet {
    /// Streams `spans` of the data folder `dir`, one after another, from the drives that
    /// hold it (`holders`). Shard files are opened a batch of parts at a time, while the
    /// batch before is read: an object of a thousand short segments neither waits for a
    /// thousand opens before its first byte nor holds a thousand files open. Only the shards
    /// a read asks first (the data shards, on a healthy set) are opened so; the others are
    /// opened if a read needs them. A shard file found missing on a drive that vouched for
    /// the version (`vouched`), or found damaged, is reported to `on_damage`; a parity shard
    /// never read is the scrubber's to check.
    pub fn stream_spans(
        &self,
        dir: DataDir,
        spans: Vec<PartSpan>,
        (holders, vouched): (Vec<bool>, Vec<bool>),
        on_damage: Arc<dyn Fn() + Send + Sync>,
    ) -> ByteStream {
        let (set, dir, holders, vouched) = (
            self.clone(),
            Arc::new(dir),
            Arc::new(holders),
            Arc::new(vouched),
        );
        let mut batches = Vec::new();
        let mut spans = spans.into_iter().peekable();
        while spans.peek().is_some() {
            batches.push(spans.by_ref().take(PARTS_PER_OPEN).collect::<Vec<_>>());
        }
        let parts = futures::stream::iter(batches)
            .map(move |batch| {
                let (set, dir, holders, vouched) =
                    (set.clone(), dir.clone(), holders.clone(), vouched.clone());
                let on_damage = on_damage.clone();
                async move {
                    let files: Vec<String> = batch.iter().map(|span| span.file.clone()).collect();
                    let first = set.first_to_read(&holders);
                    let opened = set.open_parts(&dir, &files, &first).await;
                    let readers = batch
                        .into_iter()
                        .zip(opened)
                        .map(move |(span, mut sources)| {
                            let lost = (sources.iter().zip(vouched.iter()).zip(first.iter())).any(
                                |((source, &vouched), &opened)| {
                                    opened && vouched && source.is_none()
                                },
                            );
                            for (i, source) in sources.iter_mut().enumerate() {
                                if holders[i] && !first[i] {
                                    *source =
                                        Some(ShardSource::Unopened(Box::new(UnopenedShard {
                                            drive: set.drives[i].clone(),
                                            dir: dir.clone(),
                                            file: span.file.clone(),
                                            opened: OnceCell::new(),
                                        })));
                                }
                            }
                            if lost {
                                on_damage();
                            }
                            let report = on_damage.clone();
                            let reader = set
                                .part_reader(span.size, sources)?
                                .on_damage(move || report());
                            Ok((Arc::new(reader), span.start, span.end))
                        });
                    futures::stream::iter(readers.collect::<Vec<_>>())
                }
            })
            .buffered(OPENS_AHEAD)
            .flatten();
        stream_parts(parts)
    }
}

impl ErasureSet {
    /// Of the drives that hold a part (`holders`), those a read asks first, as
    /// [`PartReader::read_block`] orders them: as many as there are data shards, this
    /// node's drives before other nodes', then in drive order (data shards first). As many
    /// as a read quorum of records, too.
    pub(crate) fn first_to_read(&self, holders: &[bool]) -> Vec<bool> {
        let mut order: Vec<usize> = (0..holders.len()).filter(|&i| holders[i]).collect();
        in_read_order(&mut order, |i| self.drives[i].is_remote());
        let mut first = vec![false; holders.len()];
        for &i in order.iter().take(self.data_shards()) {
            first[i] = true;
        }
        first
    }
}

/// Sorts drive indexes as reads ask them: this node's drives before other nodes', then in
/// drive order, so that data shards come before parity.
fn in_read_order(drives: &mut [usize], remote: impl Fn(usize) -> bool) {
    drives.sort_by_key(|&i| (remote(i), i));
}

/// Streams the byte ranges `(part, start, end)` one after another, reading blocks ahead
/// across the parts' ends as within a part: an object of many short parts (appends) keeps
/// its drives as busy as one of a single part.
fn stream_parts<S>(ranges: S) -> ByteStream
where
    S: futures::Stream<Item = Result<(Arc<PartReader>, u64, u64), ErasureError>> + Send + 'static,
{
    type Block = Result<(Arc<PartReader>, u64, u64, u64), ErasureError>;
    let blocks = ranges.flat_map(|range| {
        let blocks: Box<dyn Iterator<Item = Block> + Send> = match range {
            Ok((reader, start, end)) if start < end => {
                let block_size = reader.block_size as u64;
                let indices = (start / block_size)..=((end - 1) / block_size);
                Box::new(indices.map(move |index| Ok((reader.clone(), index, start, end))))
            }
            Ok(_) => Box::new(std::iter::empty()),
            Err(e) => Box::new(std::iter::once(Err(e))),
        };
        futures::stream::iter(blocks)
    });
    let stream = blocks
        .map(|block| async move {
            let (reader, index, start, end) = block.map_err(std::io::Error::other)?;
            let pieces = reader
                .read_block_pieces(index)
                .await
                .map_err(std::io::Error::other)?;
            let block_start = index * reader.block_size as u64;
            let from = start.saturating_sub(block_start) as usize;
            let to = (end - block_start) as usize;
            Ok::<_, std::io::Error>(within(pieces, from, to))
        })
        .buffered(READ_AHEAD)
        .flat_map(|pieces| {
            let pieces: Vec<std::io::Result<Bytes>> = match pieces {
                Ok(pieces) => pieces.into_iter().map(Ok).collect(),
                Err(e) => vec![Err(e)],
            };
            futures::stream::iter(pieces)
        });
    Box::pin(stream)
}

/// Bytes `from..to` of the block made of `pieces` (`to` may lie past its end), as slices of
/// the pieces: a block is streamed out as it was read, uncopied.
fn within(pieces: Vec<Bytes>, from: usize, to: usize) -> Vec<Bytes> {
    let mut at = 0;
    let mut out = Vec::with_capacity(pieces.len());
    for piece in pieces {
        let (start, end) = (at, at + piece.len());
        at = end;
        let (cut_from, cut_to) = (from.max(start), to.min(end));
        if cut_from < cut_to {
            out.push(piece.slice(cut_from - start..cut_to - start));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_of_a_block_is_cut_from_its_pieces() {
        let pieces: Vec<Bytes> = [&b"abc"[..], b"defg", b"hi"].map(Bytes::from_static).into();
        let cut = |from, to| within(pieces.clone(), from, to).concat();
        assert_eq!(cut(0, 9), b"abcdefghi");
        assert_eq!(cut(2, 8), b"cdefgh");
        assert_eq!(cut(3, 7), b"defg");
        assert_eq!(cut(4, 100), b"efghi");
        assert!(within(pieces.clone(), 5, 5).is_empty());
        // No empty slices: each piece a range does not reach is left out.
        assert_eq!(within(pieces.clone(), 3, 7).len(), 1);
    }
}
