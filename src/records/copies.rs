//! Each drive's copy of one record, as a read found it: decoded, for deciding, and as
//! stored, for the condition of a commit decided on it (the drive must still hold exactly
//! those bytes when its transaction runs, see [`Table::expect`]).

use std::ops::Deref;
use std::time::Instant;

use serde::de::DeserializeOwned;

use super::in_flight::{Mark, ReadWindow};
use super::table::{Change, Table};
use super::{codec, RecordError, RecordSet, Replica};
use crate::storage::{DriveError, ScanPage, RELATED_LIMIT};

/// One record's copies on the drives of a set; derefs to the decoded answers, drive by drive.
pub(crate) struct Copies<T> {
    table: Table<T>,
    key: Vec<u8>,
    decoded: Vec<Result<Option<T>, DriveError>>,
    /// What each drive held as bytes; `None` when it could not be read.
    stored: Vec<Option<Option<Vec<u8>>>>,
    /// What each drive held under the related prefix, when it was read with the record.
    related: Option<Vec<ScanPage>>,
    window: ReadWindow,
}

/// What one drive is asked to do with a commit decided on copies of a record.
#[derive(Clone)]
pub(crate) enum Guard {
    /// Take it if these conditions still hold ([`Table::expect`]: it holds what was read).
    Expect(Vec<Change>),
    /// Nothing: it could not be read.
    LeaveOut,
    /// Nothing: it holds another writer's value, which may be a commit in flight.
    Refuse,
}

impl Guard {
    /// Both guards: a drive takes the commit when both let it.
    pub fn and(self, other: Guard) -> Guard {
        match (self, other) {
            (Guard::LeaveOut, _) | (_, Guard::LeaveOut) => Guard::LeaveOut,
            (Guard::Refuse, _) | (_, Guard::Refuse) => Guard::Refuse,
            (Guard::Expect(mut a), Guard::Expect(b)) => {
                a.extend(b);
                Guard::Expect(a)
            }
        }
    }
}

impl<T: DeserializeOwned> Copies<T> {
    /// Reads the record from every drive of the set.
    pub async fn read(set: &RecordSet, table: Table<T>, key: Vec<u8>) -> Self {
        let began = (Instant::now(), set.mark((table.meta(), &key)));
        let answers = set.stored_all(table, &key).await;
        Self::from_answers((table, key), answers, None, began)
    }

    /// Reads the record from every drive of the set, each with what another table holds
    /// under `related` (an object's inline chunks), in the same call.
    pub async fn read_related<R>(
        set: &RecordSet,
        table: Table<T>,
        key: Vec<u8>,
        related: (Table<R>, &[u8]),
    ) -> Self {
        let began = (Instant::now(), set.mark((table.meta(), &key)));
        let answers = set.stored_related_all(table, &key, related).await;
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
        Self::from_answers((table, key), answers, Some(pages), began)
    }

    fn from_answers(
        (table, key): (Table<T>, Vec<u8>),
        answers: Vec<Result<Option<Vec<u8>>, DriveError>>,
        related: Option<Vec<ScanPage>>,
        (started, mark): (Instant, Mark),
    ) -> Self {
        let window = ReadWindow {
            started,
            ended: Instant::now(),
            mark,
        };
        let stored = answers
            .iter()
            .map(|answer| match answer {
                Ok(held) => Some(held.clone()),
                // An unhealed drive answers "unknown" only for keys it lacks.
                Err(DriveError::Unhealed(_)) => Some(None),
                Err(_) => None,
            })
            .collect();
        // A copy this server cannot decode (written in a newer record format during a
        // rolling upgrade) is no answer, never an absence: taken for absent, it would read
        // as 404 and be overwritten.
        let decoded = answers
            .into_iter()
            .map(|answer| {
                let bytes = answer?;
                let undecodable = |e: RecordError| DriveError::Database(e.to_string());
                bytes
                    .map(|b| codec::decode(&b).map_err(undecodable))
                    .transpose()
            })
            .collect();
        Self {
            table,
            key,
            decoded,
            stored,
            related,
            window,
        }
    }
}

impl<T: Replica> Copies<T> {
    /// What drive `i` is asked of a commit built on `agreed` (the value the set agreed on;
    /// `None`: the record does not exist). It takes the commit
    /// if it still holds what was read, when that is nothing, `agreed`, a value `agreed`
    /// replaced, or the leftover of a write that can no longer be acknowledged; it refuses
    /// another value, which may be a commit in flight that would otherwise lose drives it
    /// counts on (see [`super::in_flight`]); it is left out when it was not read.
    pub fn guard_on(&self, set: &RecordSet, i: usize, agreed: Option<&T>) -> Guard {
        let Some(condition) = self.unchanged_on(i) else {
            return Guard::LeaveOut;
        };
        // A copy it cannot decode is not this server's to replace.
        if let (Err(_), Some(Some(_))) = (&self.decoded[i], &self.stored[i]) {
            return Guard::Refuse;
        }
        let settled = self.settled_on(i, agreed);
        let cut_short = || match &self.stored[i] {
            Some(Some(bytes)) => set.cut_short((self.table.meta(), &self.key), bytes, self.window),
            _ => true,
        };
        match settled || cut_short() {
            true => Guard::Expect(vec![condition]),
            false => Guard::Refuse,
        }
    }

    /// What drive `i` is asked of a commit that needs `agreed` still in force there (an
    /// open upload that the commit ends, or adds a part to): it takes the commit only if it
    /// still holds exactly what was read, and that is `agreed`. A drive holding another
    /// value (a tombstone: another writer ended it) refuses; one holding nothing, or not
    /// read, is left out, for absence there says nothing of what happened (a drive that
    /// missed the upload, or a tombstone taken away).
    pub fn guard_holding(&self, i: usize, agreed: &T) -> Guard {
        match &self.decoded[i] {
            Ok(Some(held)) if held.is_current(agreed) => self
                .unchanged_on(i)
                .map_or(Guard::LeaveOut, |held| Guard::Expect(vec![held])),
            Ok(Some(_)) => Guard::Refuse,
            _ => Guard::LeaveOut,
        }
    }

    /// Whether drive `i` holds nothing, `agreed`, or a value `agreed` replaced: nothing
    /// there is another writer's commit in flight, which its writer may still retry.
    pub fn settled_on(&self, i: usize, agreed: Option<&T>) -> bool {
        match (&self.decoded[i], &self.stored[i]) {
            (_, Some(None)) | (Ok(None), _) => true,
            (Ok(Some(held)), _) => agreed.is_some_and(|agreed| self.accounts_for(agreed, held)),
            _ => false,
        }
    }

    /// Whether `held` is `agreed` or a value it replaced (as the copies holding `agreed`
    /// vouch).
    fn accounts_for(&self, agreed: &T, held: &T) -> bool {
        held.is_current(agreed)
            || (self.decoded.iter().flatten().flatten())
                .any(|copy| copy.is_current(agreed) && copy.vouches_for(held))
    }
}

impl<T> Copies<T> {
    /// The condition for drive `i` to take a commit decided on these copies: it still holds
    /// what was read. `None` when the drive could not be read (it is left out).
    pub fn unchanged_on(&self, i: usize) -> Option<Change> {
        Some((self.table).expect(self.key.clone(), self.stored[i].clone()?))
    }

    /// What drive `i` held under `key` in the related table; `None` when that is not known
    /// from the read (the caller reads it itself): the related entries were not read with
    /// the record, or `key` is not among them and they filled a page (a versioned key keeps
    /// every small version's chunks; more may follow).
    pub fn related_on(&self, i: usize, key: &[u8]) -> Option<Option<&[u8]>> {
        let page = &self.related.as_ref()?[i];
        match page.iter().find(|(k, _)| k == key) {
            Some((_, value)) => Some(Some(value.as_slice())),
            None if page.len() >= RELATED_LIMIT => None,
            None => Some(None),
        }
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
