//! Record changes that only tidy up, and may wait: a tombstone taken away once every drive
//! holds it. Each is conditional on what it removes (a later write in between makes it do
//! nothing), so one applied late is as good as one applied at once, and one lost in a crash
//! is left for heal, as one a drive missed is.
//!
//! Applied at once, each made its operation pay a second commit, one more fsync per drive,
//! before it answered. Waiting a moment lets a drive take a burst's changes together: they
//! are applied side by side, and the drive commits concurrent changes in one group.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::join_all;
use futures::StreamExt;

use crate::storage::{Drive, MetaOp};

/// How long a change waits for others to go with it.
const WAIT: Duration = Duration::from_millis(50);

/// Changes a drive is given at once (after a large batch delete, thousands wait).
const AT_ONCE: usize = 64;

/// One set's changes waiting to be applied on all its drives.
#[derive(Default)]
pub(crate) struct Tidying {
    waiting: Arc<Mutex<Waiting>>,
}

#[derive(Default)]
struct Waiting {
    /// Each change is one drive transaction of its own. While any wait, a task is
    /// scheduled to take them.
    changes: Vec<Vec<MetaOp>>,
    /// Changes asked and not applied yet, these included.
    unapplied: usize,
}

impl Tidying {
    /// Applies `change` on every drive of `drives` a moment from now, with the others that
    /// came meanwhile.
    pub(crate) fn later(&self, drives: &[Arc<dyn Drive>], change: Vec<MetaOp>) {
        let mut waiting = self.waiting.lock().expect("tidying");
        let scheduled = !waiting.changes.is_empty();
        waiting.changes.push(change);
        waiting.unapplied += 1;
        if scheduled {
            return;
        }
        drop(waiting);
        let (waiting, drives) = (self.waiting.clone(), drives.to_vec());
        tokio::spawn(async move {
            tokio::time::sleep(WAIT).await;
            let changes = std::mem::take(&mut waiting.lock().expect("tidying").changes);
            let applied = changes.len();
            join_all(drives.into_iter().map(|drive| {
                let applies = changes.clone().into_iter().map(move |ops| {
                    let drive = drive.clone();
                    async move { drive.meta_apply(ops).await }
                });
                // A drive that fails keeps what it holds, for heal.
                futures::stream::iter(applies)
                    .buffer_unordered(AT_ONCE)
                    .for_each(|_| async {})
            }))
            .await;
            waiting.lock().expect("tidying").unapplied -= applied;
        });
    }

    /// Waits until every change asked so far was applied (or failed).
    pub(crate) async fn settled(&self) {
        while self.waiting.lock().expect("tidying").unapplied > 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}
