//! The drive calls of records: each read, scan and change of a set's copies goes out to its
//! drives from here. A change applied here is no commit: no quorum decides it and nothing is
//! undone. It serves what is safe wherever a drive takes it — a heal's copies, the removal
//! of what a won commit made garbage — and each such change carries its own conditions
//! ([`Table::expect`]). Changes that decide a record go through [`RecordSet::commit`].

use std::ops::Bound;

use futures::future::join_all;

use super::table::{ops, Change, Table, TableId};
use super::RecordSet;
use crate::erasure::DriveResults;
use crate::storage::{DriveError, ScanPage};

impl RecordSet {
    /// Every drive's copy of one record, as stored.
    pub async fn stored_all<T>(
        &self,
        table: Table<T>,
        key: &[u8],
    ) -> DriveResults<Option<Vec<u8>>> {
        let table = table.meta();
        join_all(
            self.drives()
                .iter()
                .map(|d| d.meta_get(table, key.to_vec())),
        )
        .await
    }

    /// Every drive's copy of one record, each with what `related` holds under a prefix on
    /// that drive (an object's inline chunks), in the same call.
    pub(super) async fn stored_related_all<T, R>(
        &self,
        table: Table<T>,
        key: &[u8],
        related: (Table<R>, &[u8]),
    ) -> DriveResults<(Option<Vec<u8>>, ScanPage)> {
        let every = vec![true; self.drives().len()];
        self.stored_related_of(&every, table, key, related).await
    }

    /// [`Self::stored_related_all`] of the drives `asked` names; the others answer offline
    /// without being asked.
    pub(super) async fn stored_related_of<T, R>(
        &self,
        asked: &[bool],
        table: Table<T>,
        key: &[u8],
        (related, prefix): (Table<R>, &[u8]),
    ) -> DriveResults<(Option<Vec<u8>>, ScanPage)> {
        let (table, related) = (table.meta(), related.meta());
        join_all(self.drives().iter().zip(asked).map(|(d, &ask)| async move {
            match ask {
                true => {
                    d.meta_get_related(table, key.to_vec(), (related, prefix.to_vec()))
                        .await
                }
                false => Err(DriveError::Offline(format!("{} (not asked)", d.label()))),
            }
        }))
        .await
    }

    /// Up to `limit` records of `table` on every drive, keys starting with `prefix`, from
    /// `start`, as stored.
    pub async fn scan_all(
        &self,
        table: impl Into<TableId>,
        start: Bound<Vec<u8>>,
        prefix: &[u8],
        limit: usize,
    ) -> DriveResults<ScanPage> {
        let table = table.into().meta();
        join_all(
            (self.drives().iter())
                .map(|d| d.meta_scan(table, start.clone(), prefix.to_vec(), limit)),
        )
        .await
    }

    /// Up to `limit` records of `table` on drive `drive`, keys starting with `prefix`, from
    /// `start`; with a delimiter, one per common prefix (see the drive's
    /// `meta_scan_delimited`). Listings page through drives one by one.
    pub async fn scan_on(
        &self,
        drive: usize,
        table: impl Into<TableId>,
        start: Bound<Vec<u8>>,
        prefix: Vec<u8>,
        delimiter: Option<Vec<u8>>,
        limit: usize,
    ) -> Result<ScanPage, DriveError> {
        let (drive, table) = (&self.drives()[drive], table.into().meta());
        match delimiter {
            Some(d) => (drive.meta_scan_delimited(table, start, prefix, d, limit)).await,
            None => drive.meta_scan(table, start, prefix, limit).await,
        }
    }

    /// Applies the same changes on every drive (no commit: see the module's note).
    pub async fn apply_all(&self, changes: Vec<Change>) -> DriveResults<()> {
        let batch = ops(changes);
        join_all(
            (self.drives().iter()).map(|d| async { d.meta_apply(batch.clone()).await.map(drop) }),
        )
        .await
    }

    /// Applies the same changes on every drive a moment from now, together with others
    /// asked meanwhile, and answers at once: for changes that only tidy up, each conditional
    /// on what it removes (see [`super::tidy`]).
    pub fn apply_all_later(&self, changes: Vec<Change>) {
        self.tidying.later(self.drives(), ops(changes));
    }

    /// Waits until every change [`Self::apply_all_later`] was asked for is applied.
    pub async fn tidied(&self) {
        self.tidying.settled().await;
    }

    /// Applies `batches[i]` on drive `i` (`None`: leave it alone; no commit: see the
    /// module's note).
    pub async fn apply_each(&self, batches: Vec<Option<Vec<Change>>>) -> DriveResults<()> {
        join_all(
            (self.drives().iter().zip(batches)).map(|(drive, changes)| async move {
                match changes {
                    Some(changes) => drive.meta_apply(ops(changes)).await.map(drop),
                    None => Err(DriveError::Offline(drive.label().to_string())),
                }
            }),
        )
        .await
    }

    /// Applies changes on one drive (no commit: see the module's note).
    pub async fn apply_on(&self, drive: usize, changes: Vec<Change>) -> Result<(), DriveError> {
        self.drives()[drive]
            .meta_apply(ops(changes))
            .await
            .map(drop)
    }
}
