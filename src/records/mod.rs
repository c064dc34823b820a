//! Records replicated over the drives of an erasure set: objects' and versions' records,
//! uploads, parts, buckets, the deployment's own. Every copy of a record is read, the copies
//! are brought to one agreed value ([`agreement`]), and a change commits drive by drive on the
//! condition that each drive still holds what the read found ([`commit`]), with this
//! server's commits in flight kept apart from writes cut short ([`in_flight`]).
//!
//! It knows which copy counts and how a change commits, nothing of what a record means: the
//! object layer decides what a new record says, in S3's terms.

pub mod agreement;
pub mod authority;
pub mod changes;
pub mod codec;
pub mod commit;
pub(crate) mod copies;
pub mod decided;
mod drives;
pub mod in_flight;
pub mod revisioned;
pub mod scan;
mod table;
mod tidy;

use std::ops::Deref;
use std::time::Duration;

use thiserror::Error;

use crate::erasure::{ErasureError, ErasureSet};
use crate::storage::MetaTable;

/// A drive's failure to answer for a copy, and a page of a scan as stored: part of each
/// drive's answer, which the layers above weigh.
pub use crate::storage::{DriveError, ScanPage};
pub use agreement::{Agreement, Replica};
pub use in_flight::{LocalCommits, ReadWindow, Writers};
pub use scan::{KeyPage, RecordPage, Scanned, SCAN_PAGE};
pub use table::{Change, Table, TableId};

/// What can go wrong with a record itself (the drives' failures are the erasure set's).
#[derive(Debug, Error)]
pub enum RecordError {
    /// A copy in a format this server cannot read (written by a newer server, or damaged).
    #[error("undecodable record: {0}")]
    Undecodable(String),
    /// The authority that decides the record (the control plane) cannot be reached.
    #[error("the authority that decides records cannot be reached")]
    AuthorityUnreachable,
    /// The record changed meanwhile: read it again and decide anew.
    #[error("the record changed meanwhile")]
    Conflict,
    #[error(transparent)]
    Erasure(#[from] ErasureError),
}

/// An erasure set as the home of replicated records: its drives and geometry (it derefs to
/// the [`ErasureSet`] for the data calls), and who else writes to them and this server's
/// commits in flight there, which every agreement and commit on the set consults.
pub struct RecordSet {
    set: ErasureSet,
    writers: Writers,
    /// This server's commits in flight (see [`in_flight`]).
    local_commits: LocalCommits,
    /// Changes that only tidy up, waiting to go together (see [`tidy`]).
    tidying: tidy::Tidying,
}

impl From<ErasureSet> for RecordSet {
    /// The set's records, written by this server alone.
    fn from(set: ErasureSet) -> Self {
        RecordSet {
            set,
            writers: Writers::ThisServer,
            local_commits: LocalCommits::default(),
            tidying: tidy::Tidying::default(),
        }
    }
}

impl Deref for RecordSet {
    type Target = ErasureSet;

    fn deref(&self) -> &ErasureSet {
        &self.set
    }
}

impl RecordSet {
    /// The same records, on drives other servers write to too (see [`in_flight`]): each
    /// commit must be answered within `commit_deadline`.
    pub fn shared_with_other_servers(mut self, commit_deadline: Duration) -> Self {
        self.writers = Writers::shared(commit_deadline);
        self
    }

    /// Whether other servers write to this set's drives too.
    pub fn is_shared_with_other_servers(&self) -> bool {
        matches!(self.writers, Writers::Shared { .. })
    }

    /// Where this server's commits on `key` stand: taken when a read of it begins, for
    /// [`Self::cut_short`].
    pub(crate) fn mark(&self, key: (MetaTable, &[u8])) -> in_flight::Mark {
        self.local_commits.mark(key)
    }

    /// Whether `value`, found under `key` by a read made in `window` and accounted for by
    /// no agreement, is the leftover of a write that can no longer be acknowledged (see
    /// [`in_flight`]).
    pub(crate) fn cut_short(
        &self,
        key: (MetaTable, &[u8]),
        value: &[u8],
        window: ReadWindow,
    ) -> bool {
        (self.writers).cut_short(key, value, window, &self.local_commits)
    }

    /// Reads one record from every drive and what they agree on about it.
    pub async fn read_agreed<T: Replica + serde::de::DeserializeOwned>(
        &self,
        table: Table<T>,
        key: &[u8],
    ) -> Result<Agreement<T>, ErasureError> {
        let copies = copies::Copies::read(self, table, key.to_vec()).await;
        self.agree(&copies)
    }

    /// What the drives agree on, from each drive's answer about one record (see
    /// [`agreement`]).
    pub fn agree<T: Replica>(
        &self,
        answers: &[Result<Option<T>, DriveError>],
    ) -> Result<Agreement<T>, ErasureError> {
        agreement::agree(answers, self.read_quorum(), self.write_quorum())
    }
}
