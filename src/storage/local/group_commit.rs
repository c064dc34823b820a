//! Group commit: the metadata batches that reach one drive while a commit is under way wait
//! for it, then share one redb write transaction, and so one durable commit (two fsyncs),
//! instead of one each.
//!
//! Each batch keeps its own outcome. Its conditions ([`MetaOp::Expect`]) are checked, before
//! any of its changes, against the transaction as the batches before it in the group left
//! it; a batch whose conditions fail answers [`DriveError::Conflict`] and changes nothing,
//! and the others go on. A batch is answered only after the group's commit is durable, so an
//! acknowledged write is as durable as before; if the commit fails, every batch of the group
//! fails with it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use redb::{Database, ReadableTable, WriteTransaction};
use tokio::sync::oneshot;

use super::{begin_write, db_err, dir_index, table, write_err};
use crate::storage::{note_replaced, DriveError, MetaOp, Replaced};

/// Batches in one transaction at most: a bound on the transaction's size and on how long
/// the first of them waits for the last.
const MAX_GROUP: usize = 64;

/// One batch waiting for its group, and where its outcome goes.
struct Waiting {
    ops: Vec<MetaOp>,
    outcome: oneshot::Sender<Result<Replaced, DriveError>>,
}

#[derive(Default)]
struct Queue {
    waiting: Vec<Waiting>,
    /// Whether a task is committing groups: it takes whatever is waiting when it is done.
    committing: bool,
}

/// One drive's commit queue.
#[derive(Default)]
pub(super) struct CommitQueue {
    queue: Mutex<Queue>,
    /// Transactions committed so far (each a group of one or more batches).
    groups: AtomicU64,
}

impl CommitQueue {
    /// Commits `ops` with whatever else is waiting, on the database `db`; `before` runs
    /// before each group (the drive's online check).
    pub async fn commit(
        self: &Arc<Self>,
        db: Arc<Database>,
        ops: Vec<MetaOp>,
        before: impl Fn() -> Result<(), DriveError> + Send + Sync + 'static,
    ) -> Result<Replaced, DriveError> {
        let (outcome, answer) = oneshot::channel();
        let lead = {
            let mut queue = self.queue.lock().expect("not poisoned");
            queue.waiting.push(Waiting { ops, outcome });
            !std::mem::replace(&mut queue.committing, true)
        };
        if lead {
            // A task of its own: a request that goes away must not strand the others.
            let queue = self.clone();
            tokio::spawn(async move { queue.commit_groups(db, before).await });
        }
        answer
            .await
            .unwrap_or_else(|_| Err(DriveError::Io(std::io::Error::other("commit abandoned"))))
    }

    /// Transactions committed so far.
    #[cfg(test)]
    pub fn groups(&self) -> u64 {
        self.groups.load(Ordering::Relaxed)
    }

    /// Commits groups while batches wait.
    async fn commit_groups(
        &self,
        db: Arc<Database>,
        before: impl Fn() -> Result<(), DriveError> + Send + Sync + 'static,
    ) {
        let before = Arc::new(before);
        loop {
            let group: Vec<Waiting> = {
                let mut queue = self.queue.lock().expect("not poisoned");
                if queue.waiting.is_empty() {
                    queue.committing = false;
                    return;
                }
                let take = queue.waiting.len().min(MAX_GROUP);
                queue.waiting.drain(..take).collect()
            };
            let (batches, outcomes): (Vec<_>, Vec<_>) =
                group.into_iter().map(|w| (w.ops, w.outcome)).unzip();
            let (db, before) = (db.clone(), before.clone());
            let committed = tokio::task::spawn_blocking(move || {
                before()?;
                commit_group(&db, batches)
            })
            .await
            .unwrap_or_else(|e| Err(DriveError::Io(std::io::Error::other(e))));
            self.groups.fetch_add(1, Ordering::Relaxed);
            match committed {
                Ok(each) => {
                    for (outcome, result) in outcomes.into_iter().zip(each) {
                        let _ = outcome.send(result);
                    }
                }
                Err(e) => {
                    for outcome in outcomes {
                        let _ = outcome.send(Err(same_error(&e)));
                    }
                }
            }
        }
    }
}

/// One transaction over a group of batches: each batch's outcome, or the group's error.
fn commit_group(
    db: &Database,
    batches: Vec<Vec<MetaOp>>,
) -> Result<Vec<Result<Replaced, DriveError>>, DriveError> {
    let txn = begin_write(db).map_err(write_err)?;
    let mut outcomes = Vec::with_capacity(batches.len());
    for ops in batches {
        if !conditions_hold(&txn, &ops)? {
            outcomes.push(Err(DriveError::Conflict));
            continue;
        }
        outcomes.push(Ok(apply_changes(&txn, ops)?));
    }
    txn.commit().map_err(write_err)?;
    Ok(outcomes)
}

/// Whether every key a batch expects holds what it expects, in the transaction as it is.
fn conditions_hold(txn: &WriteTransaction, ops: &[MetaOp]) -> Result<bool, DriveError> {
    for op in ops {
        if let MetaOp::Expect {
            table: which,
            key,
            value,
        } = op
        {
            let t = txn.open_table(table(*which)).map_err(db_err)?;
            let held = t.get(key.as_slice()).map_err(db_err)?;
            if held.as_ref().map(|v| v.value()) != value.as_deref() {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// Applies a batch's changes (its conditions hold) with the directory index's; answers what
/// they replaced.
fn apply_changes(txn: &WriteTransaction, ops: Vec<MetaOp>) -> Result<Replaced, DriveError> {
    let mut replaced = Replaced::new();
    for op in ops {
        match op {
            MetaOp::Expect { .. } => {}
            MetaOp::Put {
                table: which,
                key,
                value,
            } => {
                let mut t = txn.open_table(table(which)).map_err(db_err)?;
                let old = (t.insert(key.as_slice(), value.as_slice()))
                    .map_err(db_err)?
                    .map(|v| v.value().to_vec());
                let existed = old.is_some();
                note_replaced(&mut replaced, which, &key, || old);
                if let Some(index) = dir_index::index_table(which) {
                    let mut index = txn.open_table(index).map_err(db_err)?;
                    dir_index::on_insert(&mut index, &key, &value, existed)?;
                }
            }
            MetaOp::Delete { table: which, key } => {
                let mut t = txn.open_table(table(which)).map_err(db_err)?;
                let old = (t.remove(key.as_slice()))
                    .map_err(db_err)?
                    .map(|v| v.value().to_vec());
                let removed = old.is_some();
                note_replaced(&mut replaced, which, &key, || old);
                if let (true, Some(index)) = (removed, dir_index::index_table(which)) {
                    let mut index = txn.open_table(index).map_err(db_err)?;
                    dir_index::on_remove(&t, &mut index, &key)?;
                }
            }
            MetaOp::DeletePrefix {
                table: which,
                prefix,
            } => {
                let mut t = txn.open_table(table(which)).map_err(db_err)?;
                let keys: Vec<Vec<u8>> = t
                    .range::<&[u8]>(prefix.as_slice()..)
                    .map_err(db_err)?
                    .map_while(|entry| entry.ok().map(|(k, _)| k.value().to_vec()))
                    .take_while(|k| k.starts_with(&prefix))
                    .collect();
                let mut index = match dir_index::index_table(which) {
                    Some(index) => Some(txn.open_table(index).map_err(db_err)?),
                    None => None,
                };
                for key in keys {
                    t.remove(key.as_slice()).map_err(db_err)?;
                    if let Some(index) = &mut index {
                        dir_index::on_remove(&t, index, &key)?;
                    }
                }
            }
        }
    }
    Ok(replaced)
}

/// The group's error, for each of its batches (I/O errors do not clone).
fn same_error(e: &DriveError) -> DriveError {
    match e {
        DriveError::Full => DriveError::Full,
        DriveError::Offline(label) => DriveError::Offline(label.clone()),
        DriveError::Conflict => DriveError::Conflict,
        DriveError::Io(io) => DriveError::Io(std::io::Error::new(io.kind(), io.to_string())),
        other => DriveError::Database(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use futures::future::join_all;

    use crate::storage::local::tests::format;
    use crate::storage::{Drive, DriveError, LocalDrive, MetaOp, MetaTable};

    fn put(key: &str, value: &str) -> MetaOp {
        MetaOp::Put {
            table: MetaTable::Objects,
            key: key.as_bytes().to_vec(),
            value: value.as_bytes().to_vec(),
        }
    }

    fn expect(key: &str, value: Option<&str>) -> MetaOp {
        MetaOp::Expect {
            table: MetaTable::Objects,
            key: key.as_bytes().to_vec(),
            value: value.map(|v| v.as_bytes().to_vec()),
        }
    }

    /// 64 writers at once: 32 create their own key, 16 race to replace one key from the
    /// same value, 16 expect what is not there. They share transactions, and each has its
    /// own outcome: exactly one of the racers wins, the impossible ones change nothing.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn batches_share_transactions_and_keep_their_own_outcomes() {
        let root = tempfile::tempdir().unwrap();
        LocalDrive::write_format(root.path(), &format()).unwrap();
        let drive = LocalDrive::open(root.path()).unwrap();
        drive.meta_apply(vec![put("raced", "start")]).await.unwrap();
        let before = drive.commits.groups();

        let batches = (0..64).map(|i| match i % 4 {
            0 | 1 => vec![
                expect(&format!("own{i}"), None),
                put(&format!("own{i}"), "mine"),
            ],
            2 => vec![
                expect("raced", Some("start")),
                put("raced", &format!("winner{i}")),
            ],
            _ => vec![
                expect("raced", Some("never")),
                put(&format!("impossible{i}"), "x"),
            ],
        });
        let outcomes = join_all(batches.map(|ops| drive.meta_apply(ops))).await;

        for (i, outcome) in outcomes.iter().enumerate() {
            match i % 4 {
                0 | 1 => assert!(outcome.is_ok(), "writer {i}: {outcome:?}"),
                3 => assert!(matches!(outcome, Err(DriveError::Conflict)), "writer {i}"),
                _ => {}
            }
        }
        let winners: Vec<usize> = (outcomes.iter().enumerate())
            .filter(|(i, o)| i % 4 == 2 && o.is_ok())
            .map(|(i, _)| i)
            .collect();
        assert_eq!(winners.len(), 1, "racers from the same value: one wins");
        let raced = drive.meta_get(MetaTable::Objects, b"raced".to_vec()).await;
        assert_eq!(
            raced.unwrap().unwrap(),
            format!("winner{}", winners[0]).as_bytes()
        );
        for i in (0..64).filter(|i| i % 4 == 3) {
            let key = format!("impossible{i}").into_bytes();
            assert!(drive
                .meta_get(MetaTable::Objects, key)
                .await
                .unwrap()
                .is_none());
        }
        for i in (0..64).filter(|i| i % 4 < 2) {
            let key = format!("own{i}").into_bytes();
            assert!(drive
                .meta_get(MetaTable::Objects, key)
                .await
                .unwrap()
                .is_some());
        }
        let groups = drive.commits.groups() - before;
        assert!(groups < 64, "64 batches in {groups} transactions");
    }
}
