//! Each drive's copy of one record, as a read found it: decoded, for deciding, and as
//! stored, for the condition of a commit decided on it (the drive must still hold exactly
//! those bytes when its transaction runs, see [`MetaOp::Expect`]).

use std::ops::Deref;

use serde::de::DeserializeOwned;

use super::record;
use crate::erasure::{DriveError, ErasureSet, MetaOp, MetaTable};

/// One record's copies on the drives of a set; derefs to the decoded answers, drive by drive.
pub(crate) struct Copies<T> {
    table: MetaTable,
    key: Vec<u8>,
    decoded: Vec<Result<Option<T>, DriveError>>,
    /// What each drive held as bytes; `None` when it could not be read.
    stored: Vec<Option<Option<Vec<u8>>>>,
}

impl<T: DeserializeOwned> Copies<T> {
    /// Reads the record from every drive of the set.
    pub async fn read(set: &ErasureSet, table: MetaTable, key: Vec<u8>) -> Self {
        let answers = set.meta_get_all(table, &key).await;
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
