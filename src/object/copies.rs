//! Each drive's copy of one record, as a read found it: decoded, for deciding, and as
//! stored, for the condition of a commit decided on it (the drive must still hold exactly
//! those bytes when its transaction runs, see [`MetaOp::Expect`]).

use std::ops::Deref;

use serde::de::DeserializeOwned;

use super::record;
use crate::erasure::{DriveError, ErasureSet, MetaOp, MetaTable, ScanPage};

/// One record's copies on the drives of a set; derefs to the decoded answers, drive by drive.
pub(crate) struct Copies<T> {
    table: MetaTable,
    key: Vec<u8>,
    decoded: Vec<Result<Option<T>, DriveError>>,
    /// What each drive held as bytes; `None` when it could not be read.
    stored: Vec<Option<Option<Vec<u8>>>>,
    /// What each drive held under the related prefix, when it was read with the record.
    related: Option<Vec<ScanPage>>,
}

impl<T: DeserializeOwned> Copies<T> {
    /// Reads the record from every drive of the set.
    pub async fn read(set: &ErasureSet, table: MetaTable, key: Vec<u8>) -> Self {
        let answers = set.meta_get_all(table, &key).await;
        Self::from_answers(table, key, answers, None)
    }

    /// Reads the record from every drive of the set, each with what another table holds
    /// under `related` (an object's inline chunks), in the same call.
    pub async fn read_related(
        set: &ErasureSet,
        table: MetaTable,
        key: Vec<u8>,
        related: (MetaTable, &[u8]),
    ) -> Self {
        let answers = set.meta_get_related_all(table, &key, related).await;
        let mut pages = Vec::with_capacity(answers.len());
        let answers = (answers.into_iter())
            .map(|answer| {
                let (found, page) = match answer {
                    Ok((found, page)) => (Ok(found), page),
                    Err(e) => (Err(e), ScanPage::new()),
                };
                pages.push(page);
                found
            })
            .collect();
        Self::from_answers(table, key, answers, Some(pages))
    }

    fn from_answers(
        table: MetaTable,
        key: Vec<u8>,
        answers: Vec<Result<Option<Vec<u8>>, DriveError>>,
        related: Option<Vec<ScanPage>>,
    ) -> Self {
        let stored = answers
            .iter()
            .map(|answer| match answer {
                Ok(held) => Some(held.clone()),
                // An unhealed drive answers "unknown" only for keys it lacks.
                Err(DriveError::Unhealed(_)) => Some(None),
                Err(_) => None,
            })
            .collect();
        let decoded = answers
            .into_iter()
            .map(|answer| answer.map(|bytes| bytes.and_then(|b| record::decode(&b).ok())))
            .collect();
        Self {
            table,
            key,
            decoded,
            stored,
            related,
        }
    }
}

impl<T> Copies<T> {
    /// The condition for drive `i` to take a commit decided on these copies: it still holds
    /// what was read. `None` when the drive could not be read (it is left out).
    pub fn unchanged_on(&self, i: usize) -> Option<MetaOp> {
        Some(MetaOp::Expect {
            table: self.table,
            key: self.key.clone(),
            value: self.stored[i].clone()?,
        })
    }

    /// What drive `i` held under `key` in the related table; `None` when the related
    /// entries were not read with the record (the caller reads them itself).
    pub fn related_on(&self, i: usize, key: &[u8]) -> Option<Option<&[u8]>> {
        let page = &self.related.as_ref()?[i];
        Some(
            page.iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_slice()),
        )
    }

    /// Whether drive `i` was read and holds no copy (an unhealed drive lacking it included).
    pub fn is_absent_on(&self, i: usize) -> bool {
        matches!(self.stored[i], Some(None))
    }
}

impl<T> Deref for Copies<T> {
    type Target = [Result<Option<T>, DriveError>];

    fn deref(&self) -> &Self::Target {
        &self.decoded
    }
}

impl<'a, T> IntoIterator for &'a Copies<T> {
    type Item = &'a Result<Option<T>, DriveError>;
    type IntoIter = std::slice::Iter<'a, Result<Option<T>, DriveError>>;

    fn into_iter(self) -> Self::IntoIter {
        self.decoded.iter()
    }
}
