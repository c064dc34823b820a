//! Moving a key from one server pool to another (a decommission's drain): every version, delete
//! marker and byte of the key, as it is, from its set in one pool to its set in the other.
//!
//! The move copies the data first (each part decoded from the source set and encoded on the
//! destination's drives, inline chunks rebuilt), then commits the key's records on the
//! destination, conditional on it holding nothing of the key, then removes them from the
//! source, conditional on the source still holding what was read; the source's data goes
//! only after that removal won its quorum. Writers of the key wait while it moves (see
//! [`super::key_locks::MoveGate`]), so no write lands on the source after the copy; between
//! the two commits both sets hold the same records, and either answers a read alike. A move
//! cut short there (a crash, a lost quorum) is finished by the next one: it finds the
//! destination holding just what it would commit, and goes on to the source's removal.

use std::ops::Bound;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use futures::future::join_all;
use tokio::sync::mpsc;

use super::record::{
    inline_key, object_key, BucketRecord, ObjectRecord, UploadRecord, VersionsRecord,
    INLINE_CHUNKS, OBJECTS, UPLOADS, VERSIONS,
};
use super::{ObjectError, ObjectKey, ObjectStore};
use crate::erasure::{DataDir, Encoded, ShardSource};
use crate::records::commit::Batch;
use crate::records::copies::{Copies, Guard};
use crate::records::{Agreement, RecordSet, SCAN_PAGE};

/// What a drain or a rebalance has done since it (or the server) started, for its status and
/// metrics.
#[derive(Debug, Default)]
pub struct MoveProgress {
    pub keys: AtomicU64,
    pub versions: AtomicU64,
    pub bytes: AtomicU64,
    /// Keys whose move failed (tried again next pass).
    pub failures: AtomicU64,
}

/// What a [`MoveProgress`] counted, at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MoveCounts {
    pub keys: u64,
    pub versions: u64,
    pub bytes: u64,
    pub failures: u64,
}

impl MoveProgress {
    pub fn counts(&self) -> MoveCounts {
        let load = |counter: &AtomicU64| counter.load(std::sync::atomic::Ordering::Relaxed);
        MoveCounts {
            keys: load(&self.keys),
            versions: load(&self.versions),
            bytes: load(&self.bytes),
            failures: load(&self.failures),
        }
    }

    /// Counts on from `counts` (a drain another server began).
    pub fn restore(&self, counts: MoveCounts) {
        let store =
            |counter: &AtomicU64, value| counter.store(value, std::sync::atomic::Ordering::Relaxed);
        store(&self.keys, counts.keys);
        store(&self.versions, counts.versions);
        store(&self.bytes, counts.bytes);
        store(&self.failures, counts.failures);
    }

    /// Counts afresh (a drain or a rebalance started again).
    pub fn reset(&self) {
        for counter in [&self.keys, &self.versions, &self.bytes, &self.failures] {
            counter.store(0, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// What moving one key did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moved {
    /// Its records and data are in the destination now; `bytes` of data were copied.
    Done { versions: u64, bytes: u64 },
    /// The source held nothing of the key (any more).
    Nothing,
    /// A writer of the key is in flight, or a rename that lent its data is not settled:
    /// tried again later.
    Busy,
    /// A multipart upload of the key is open in the source: it completes there, so the
    /// key stays with it until the upload ends.
    Pinned,
}

impl ObjectStore {
    /// Moves `key` of `bucket` from the set `from` to the set `to` (its set in another pool).
    pub(super) async fn move_key(
        &self,
        bucket: &BucketRecord,
        key: &ObjectKey,
        from: &RecordSet,
        to: &RecordSet,
    ) -> Result<Moved, ObjectError> {
        let Some(_moving) = self.moves.try_move(&bucket.name, key.as_str()) else {
            return Ok(Moved::Busy);
        };
        let db_key = object_key(&bucket.name, key.as_str());
        let (objects, versions) = futures::join!(
            Copies::<ObjectRecord>::read(from, OBJECTS, db_key.clone()),
            Copies::<VersionsRecord>::read(from, VERSIONS, db_key.clone())
        );
        let current = from.agree(&objects)?.found();
        let history = from.agree(&versions)?.found();
        if current.is_none() && history.is_none() {
            return Ok(Moved::Nothing);
        }
        let mut carried: Vec<&ObjectRecord> = current.iter().collect();
        for version in history.iter().flat_map(|h| &h.versions) {
            if !carried.iter().any(|c| c.same_version(version)) {
                carried.push(version);
            }
        }
        // A rename's tombstone lends its data folder to the rename's destination until the
        // rename settles: the key waits until then.
        if carried.iter().any(|r| r.lent_data.is_some()) {
            return Ok(Moved::Busy);
        }
        // No upload of the key opens meanwhile: that writes under the gate held here.
        let upload_prefix = [db_key.as_slice(), &[0]].concat();
        if open_uploads(from, &upload_prefix).await? > 0 {
            return Ok(Moved::Pinned);
        }

        // The key's records as the destination takes them.
        let moved_current = current.as_ref().map(|record| fresh(record, to));
        let moved_history = history.as_ref().map(|history| {
            let mut history = history.clone();
            history.superseded = None;
            history.versions = (history.versions.iter())
                .map(|record| fresh(record, to))
                .collect();
            history
        });
        let inline_keys: Vec<Vec<u8>> = (carried.iter())
            .filter(|v| v.has_local_data() && v.inline)
            .map(|v| inline_key(&bucket.name, key.as_str(), v.data_id))
            .collect();

        // The destination holds nothing of the key, or just what this move commits there: a
        // move of it cut short between its two commits (a crash, a lost quorum), which goes
        // on from there. Anything else is a key written in both pools.
        let (there, there_history) = futures::join!(
            Copies::<ObjectRecord>::read(to, OBJECTS, db_key.clone()),
            Copies::<VersionsRecord>::read(to, VERSIONS, db_key.clone())
        );
        let held_there = (to.agree(&there)?.found(), to.agree(&there_history)?.found());
        let bytes = match held_there {
            (None, None) => {
                let moved = (&moved_current, &moved_history);
                let committed = match copy_data(bucket, key, &carried, from, to).await {
                    Ok(copied) => {
                        (commit_copy(to, &db_key, (&there, &there_history), moved, &copied).await)
                            .map(|()| copied.bytes)
                    }
                    Err(e) => Err(e),
                };
                if committed.is_err() {
                    delete_dirs(bucket, &carried, to).await;
                }
                committed?
            }
            held if held == (moved_current.clone(), moved_history.clone()) => 0,
            _ => {
                return Err(ObjectError::Internal(format!(
                    "{}/{key} is in two pools (the newer copy is served); it is not moved",
                    bucket.name
                )))
            }
        };

        // An upload opened through another server while the key was copied keeps it where
        // it is: the copy goes (see `ObjectStore::moved_while_upload_opened`).
        if open_uploads(from, &upload_prefix).await? > 0 {
            let moved = (&moved_current, &moved_history);
            take_back(bucket, key, &carried, to, moved, &inline_keys).await;
            return Ok(Moved::Pinned);
        }

        // The source lets go of the key, if it still holds what was read.
        let _lock = self.locks.write(&bucket.name, key.as_str()).await;
        let removals: Vec<Batch> = (0..from.width())
            .map(|i| {
                let guard = objects.guard_on(from, i, current.as_ref());
                match guard.and(versions.guard_on(from, i, history.as_ref())) {
                    Guard::Expect(mut changes) => {
                        changes.push(OBJECTS.delete(db_key.clone()));
                        changes.push(VERSIONS.delete(db_key.clone()));
                        for chunk_key in &inline_keys {
                            changes.push(INLINE_CHUNKS.delete(chunk_key.clone()));
                        }
                        Batch::Apply(changes)
                    }
                    Guard::Refuse => Batch::Refuse,
                    Guard::LeaveOut => Batch::LeaveOut,
                }
            })
            .collect();
        if let Err(e) = from.commit(removals, None).await {
            // The key stays where it was: the copy goes, on the condition that the
            // destination still holds just what was committed there (a writer on another
            // node may have found the key there meanwhile: its write stays, the key in both
            // pools, the newer served).
            let moved = (&moved_current, &moved_history);
            take_back(bucket, key, &carried, to, moved, &inline_keys).await;
            return Err(e.into());
        }
        // A folder a rename took from another key may still be that key's (a rename cut
        // short): the orphan collector, which knows, takes it.
        let own: Vec<&ObjectRecord> = (carried.iter().copied())
            .filter(|version| version.data_from.is_none())
            .collect();
        delete_dirs(bucket, &own, from).await;
        Ok(Moved::Done {
            versions: carried.len() as u64,
            bytes,
        })
    }
}

/// Takes a move's copy back from `to` (records `moved`, inline chunks `inline_keys`, data of
/// `carried`), on the condition that it still holds just what the move committed there: a
/// writer on another server may have found the key there meanwhile, and its write stays,
/// the key then in two pools, the newer copy served. Whether it was taken back.
pub(super) async fn take_back(
    bucket: &BucketRecord,
    key: &ObjectKey,
    carried: &[&ObjectRecord],
    to: &RecordSet,
    (current, history): (&Option<ObjectRecord>, &Option<VersionsRecord>),
    inline_keys: &[Vec<u8>],
) -> bool {
    let db_key = object_key(&bucket.name, key.as_str());
    let (now, now_history) = futures::join!(
        Copies::<ObjectRecord>::read(to, OBJECTS, db_key.clone()),
        Copies::<VersionsRecord>::read(to, VERSIONS, db_key.clone())
    );
    let unchanged = to.agree(&now).ok().map(|a| a.found()).as_ref() == Some(current)
        && to.agree(&now_history).ok().map(|a| a.found()).as_ref() == Some(history);
    let undo: Vec<Batch> = (0..to.width())
        .map(|i| {
            let guard = (now.guard_on(to, i, current.as_ref())).and(now_history.guard_on(
                to,
                i,
                history.as_ref(),
            ));
            match guard {
                Guard::Expect(mut changes) => {
                    changes.push(OBJECTS.delete(db_key.clone()));
                    changes.push(VERSIONS.delete(db_key.clone()));
                    for chunk_key in inline_keys {
                        changes.push(INLINE_CHUNKS.delete(chunk_key.clone()));
                    }
                    Batch::Apply(changes)
                }
                Guard::Refuse => Batch::Refuse,
                Guard::LeaveOut => Batch::LeaveOut,
            }
        })
        .collect();
    let taken = unchanged && to.commit(undo, None).await.is_ok();
    match taken {
        true => delete_dirs(bucket, carried, to).await,
        false => {
            tracing::warn!(bucket = %bucket.name, %key, "a key written meanwhile is in two pools: the newer copy is served")
        }
    }
    taken
}

/// Multipart uploads open in `set` whose record keys start with `prefix` (an upload's key
/// starts with its object key and a NUL). Ended ones stay as tombstones and are not counted;
/// one not known to be ended is, so nothing is decided on a guess.
pub(super) async fn open_uploads(set: &RecordSet, prefix: &[u8]) -> Result<u64, ObjectError> {
    let mut open = 0;
    let mut start = Bound::Unbounded;
    loop {
        let page = set
            .scan_records::<UploadRecord>(UPLOADS, start, prefix, SCAN_PAGE)
            .await?;
        for scanned in &page.records {
            match &scanned.agreed {
                Ok(Agreement::Found { value, .. }) if value.ended.is_some() => {}
                Ok(Agreement::NotFound) => {}
                _ => open += 1,
            }
        }
        match page.next {
            Some(after) => start = Bound::Excluded(after),
            None => return Ok(open),
        }
    }
}

/// A record as the set `to`, which never held another value of it, stores it: counted as
/// moved once more, the data folder copied is the version's own, whatever key a rename took the
/// source's from, and its data is coded as `to` codes it.
fn fresh(record: &ObjectRecord, to: &RecordSet) -> ObjectRecord {
    let mut record = record.clone();
    record.superseded = None;
    record.data_from = None;
    record.pool_moves += 1;
    if record.has_local_data() {
        record.data_shards = to.data_shards() as u8;
        record.parity_shards = to.parity_shards() as u8;
        record.block_size = to.block_size() as u32;
    }
    record
}

/// What the destination holds of the key's data before its records commit.
struct Copied {
    /// Each inline version's chunk key, and every drive's chunk.
    inline: Vec<(Vec<u8>, Vec<bytes::Bytes>)>,
    /// Drives that hold every part copied.
    data_on: Vec<bool>,
    bytes: u64,
}

/// Copies every version's data from `from` to `to`: shard files are decoded part by part and
/// encoded again, as `to` codes them; inline chunks are rebuilt (decoded and encoded again
/// when `to` codes otherwise than `from`).
async fn copy_data(
    bucket: &BucketRecord,
    key: &ObjectKey,
    carried: &[&ObjectRecord],
    from: &RecordSet,
    to: &RecordSet,
) -> Result<Copied, ObjectError> {
    let mut copied = Copied {
        inline: Vec::new(),
        data_on: vec![true; to.width()],
        bytes: 0,
    };
    for version in carried.iter().filter(|v| v.has_local_data()) {
        if version.inline {
            let chunk_key = inline_key(&bucket.name, key.as_str(), version.data_id);
            let sources: Vec<Option<ShardSource>> =
                (from.stored_all(INLINE_CHUNKS, &chunk_key).await)
                    .into_iter()
                    .map(|c| c.ok().flatten().map(|b| ShardSource::Inline(b.into())))
                    .collect();
            let geometry = |set: &RecordSet| (set.data_shards(), set.parity_shards());
            let chunks = match geometry(from) == geometry(to) {
                true => from.rebuild_inline(version.size, sources).await?,
                false => {
                    let reader = Arc::new(from.part_reader(version.size, sources)?);
                    let stream = reader.stream_range(0, version.size);
                    let (unread, _) = mpsc::channel(1);
                    let written = to
                        .write_stream(stream, "inline", usize::MAX, unread)
                        .await?;
                    let Encoded::Inline(chunks) = written.encoded else {
                        return Err(ObjectError::Internal("an inline copy was staged".into()));
                    };
                    chunks
                }
            };
            copied.bytes += version.size;
            copied.inline.push((chunk_key, chunks));
            continue;
        }
        let dir = DataDir {
            bucket_id: bucket.id.clone(),
            data_id: version.data_id,
        };
        for part in version.parts.iter().filter(|p| p.size > 0) {
            let sources = from.open_all_shards(&dir, &part.file).await;
            let reader = Arc::new(from.part_reader(part.size, sources)?);
            let stream = reader.stream_range(0, part.size);
            // The stored bytes are checked by their bitrot checksums as they are read: no tap
            // hashes them (a sender nobody reads is dropped at once).
            let (unread, _) = mpsc::channel(1);
            let written = to.write_stream(stream, &part.file, 0, unread).await?;
            let Encoded::Staged { staging, holders } = written.encoded else {
                return Err(ObjectError::Internal("a part copy was kept inline".into()));
            };
            let placed = to.place_staged(staging, &holders, &dir).await?;
            for (on, placed) in copied.data_on.iter_mut().zip(placed) {
                *on &= placed;
            }
            copied.bytes += part.size;
        }
    }
    Ok(copied)
}

/// Commits the key's records `moved` on `to`, with the inline chunks `copied` there, on
/// the condition that `to` still holds nothing of the key (`there`, as read).
async fn commit_copy(
    to: &RecordSet,
    db_key: &[u8],
    (there, there_history): (&Copies<ObjectRecord>, &Copies<VersionsRecord>),
    (current, history): (&Option<ObjectRecord>, &Option<VersionsRecord>),
    copied: &Copied,
) -> Result<(), ObjectError> {
    let batches = (0..to.width())
        .map(|i| {
            let guard = (there.guard_on(to, i, None)).and(there_history.guard_on(to, i, None));
            let Guard::Expect(mut changes) = guard else {
                return Batch::LeaveOut;
            };
            if let Some(current) = current {
                changes.push(OBJECTS.put(db_key.to_vec(), current));
            }
            if let Some(history) = history {
                changes.push(VERSIONS.put(db_key.to_vec(), history));
            }
            for (chunk_key, chunks) in &copied.inline {
                changes.push(INLINE_CHUNKS.put_stored(chunk_key.clone(), chunks[i].to_vec()));
            }
            Batch::Apply(changes)
        })
        .collect();
    to.commit(batches, Some(&copied.data_on)).await?;
    Ok(())
}

/// Deletes the data folders of `versions` from `set` (what a move copied there, or left).
async fn delete_dirs(bucket: &BucketRecord, versions: &[&ObjectRecord], set: &RecordSet) {
    let dirs = (versions.iter())
        .filter(|v| v.has_local_data() && !v.inline)
        .map(|v| DataDir {
            bucket_id: bucket.id.clone(),
            data_id: v.data_id,
        });
    join_all(dirs.map(|dir| async move { set.delete_data_dir(&dir).await })).await;
}
