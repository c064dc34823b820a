//! Each drive's copy of one record, as a read found it: decoded, for deciding, and as
//! stored, for the condition of a commit decided on it (the drive must still hold exactly
//! those bytes when its transaction runs, see [`Table::expect`]).

use std::ops::Deref;
use std::time::Instant;

use serde::de::DeserializeOwned;

use super::in_flight::{Mark, ReadWindow};
use super::table::{Change, Table};
use super::{codec, Agreement, RecordError, RecordSet, Replica};
use crate::erasure::DriveResults;
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
    /// The drives a sparing read left alone (see [`Copies::read_related_sparingly`]).
    not_asked: Vec<bool>,
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
        let (answers, pages) = split_related(answers);
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
        let decoded: Vec<_> = answers
            .into_iter()
            .map(|answer| {
                let bytes = answer?;
                let undecodable = |e: RecordError| DriveError::Database(e.to_string());
                bytes
                    .map(|b| codec::decode(&b).map_err(undecodable))
                    .transpose()
            })
            .collect();
        let not_asked = vec![false; decoded.len()];
        Self {
            table,
            key,
            decoded,
            stored,
            related,
            window,
            not_asked,
        }
    }
}

/// Each drive's answer to a read with related entries, split into the record and the page.
fn split_related(
    answers: DriveResults<(Option<Vec<u8>>, ScanPage)>,
) -> (DriveResults<Option<Vec<u8>>>, Vec<ScanPage>) {
    answers
        .into_iter()
        .map(|answer| match answer {
            Ok((found, page)) => (Ok(found), page),
            Err(e) => (Err(e), ScanPage::new()),
        })
        .unzip()
}

impl<T: DeserializeOwned + Replica> Copies<T> {
    /// [`Self::read_related`] from a read quorum of drives, the first a data read turns to
    /// (this node's own, then others'), when every one of them holds the same value, or
    /// holds nothing: the agreement then answers as it does with the other drives down,
    /// and soundly, since any write quorum meets any read quorum, so no acknowledged write
    /// can be missing from all of them. Otherwise the other drives are read too.
    pub async fn read_related_sparingly<R>(
        set: &RecordSet,
        table: Table<T>,
        key: Vec<u8>,
        related: (Table<R>, &[u8]),
    ) -> Self {
        let began = (Instant::now(), set.mark((table.meta(), &key)));
        let asked = set.first_to_read(&vec![true; set.width()]);
        // Sound only while a write quorum and the drives asked always share a drive.
        debug_assert_eq!(
            asked.iter().filter(|&&asked| asked).count(),
            set.read_quorum()
        );
        let answers = set.stored_related_of(&asked, table, &key, related).await;
        let (answers, pages) = split_related(answers);
        let mut copies = Self::from_answers((table, key), answers, Some(pages), began);
        copies.not_asked = asked.iter().map(|asked| !asked).collect();
        match copies.agreed_by_every_asked(set) {
            true => copies,
            false => copies.complete(set, related).await,
        }
    }

    /// Whether every drive asked answered, and all hold the value agreed on (or nothing).
    fn agreed_by_every_asked(&self, set: &RecordSet) -> bool {
        let mut asked = (self.decoded.iter().zip(&self.not_asked))
            .filter(|(_, skipped)| !**skipped)
            .map(|(copy, _)| copy);
        match set.agree(&self.decoded) {
            Ok(Agreement::Found { value, .. }) => {
                asked.all(|copy| matches!(copy, Ok(Some(held)) if held.is_current(&value)))
            }
            Ok(Agreement::NotFound) => asked.all(|copy| matches!(copy, Ok(None))),
            Err(_) => false,
        }
    }
}

impl<T: DeserializeOwned> Copies<T> {
    /// Whether a sparing read left drives alone.
    pub fn is_partial(&self) -> bool {
        self.not_asked.contains(&true)
    }

    /// The same copies with the drives a sparing read left alone read too (with what
    /// `related` holds, as they were read).
    pub async fn complete<R>(mut self, set: &RecordSet, related: (Table<R>, &[u8])) -> Self {
        if !self.is_partial() {
            return self;
        }
        let answers = set
            .stored_related_of(&self.not_asked, self.table, &self.key, related)
            .await;
        let (answers, pages) = split_related(answers);
        let began = (self.window.started, self.window.mark);
        let mut rest =
            Self::from_answers((self.table, self.key.clone()), answers, Some(pages), began);
        for (i, &skipped) in self.not_asked.iter().enumerate() {
            if skipped {
                std::mem::swap(&mut self.decoded[i], &mut rest.decoded[i]);
                std::mem::swap(&mut self.stored[i], &mut rest.stored[i]);
                if let (Some(mine), Some(theirs)) = (&mut self.related, &mut rest.related) {
                    std::mem::swap(&mut mine[i], &mut theirs[i]);
                }
            }
        }
        self.window.ended = rest.window.ended;
        self.not_asked.fill(false);
        self
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
