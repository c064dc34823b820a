//! Group commit: the metadata batches that reach one drive while a commit is under way wait
//! for it, then share one transaction, and so one durable commit, instead of one each.
//!
//! The queue knows nothing of the database: the drive hands it a function that commits a
//! group of batches in one transaction ([`LocalDrive`](super::LocalDrive) over redb, the
//! simulated drive over its tables), so the crash tests run this very queue. That function
//! must give each batch its own outcome: a batch whose conditions ([`MetaOp::Expect`]) fail,
//! judged against the transaction as the batches before it left it, answers
//! [`DriveError::Conflict`] and changes nothing, and the others go on. A batch is answered
//! only after its group's commit is durable, so an acknowledged write is as durable as
//! alone; if the commit fails, every batch of the group fails with it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use super::{DriveError, MetaOp, Replaced};

/// Batches in one transaction at most: a bound on the transaction's size and on how long
/// the first of them waits for the last.
const MAX_GROUP: usize = 64;

/// Each batch's outcome, in order, or the error that failed the whole group.
pub(crate) type GroupOutcome = Result<Vec<Result<Replaced, DriveError>>, DriveError>;

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
pub(crate) struct CommitQueue {
    queue: Mutex<Queue>,
    /// Transactions committed so far (each a group of one or more batches).
    groups: AtomicU64,
}

impl CommitQueue {
    /// Commits `ops` with whatever else is waiting. `commit_group` commits one group in one
    /// blocking transaction; every caller on a drive passes the same one.
    pub async fn commit<F>(
        self: &Arc<Self>,
        ops: Vec<MetaOp>,
        commit_group: F,
    ) -> Result<Replaced, DriveError>
    where
        F: Fn(Vec<Vec<MetaOp>>) -> GroupOutcome + Send + Sync + 'static,
    {
        let (outcome, answer) = oneshot::channel();
        let lead = {
            let mut queue = self.queue.lock().expect("not poisoned");
            queue.waiting.push(Waiting { ops, outcome });
            !std::mem::replace(&mut queue.committing, true)
        };
        if lead {
            // A task of its own: a request that goes away must not strand the others.
            let queue = self.clone();
            tokio::spawn(async move { queue.commit_groups(Arc::new(commit_group)).await });
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
    async fn commit_groups<F>(&self, commit_group: Arc<F>)
    where
        F: Fn(Vec<Vec<MetaOp>>) -> GroupOutcome + Send + Sync + 'static,
    {
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
            let commit_group = commit_group.clone();
            let committed = tokio::task::spawn_blocking(move || commit_group(batches))
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
                        let _ = outcome.send(Err(e.copied()));
                    }
                }
            }
        }
    }
}
