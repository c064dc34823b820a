//! Which value of a replicated record the drives of a set agree on: the one rule every
//! reader of metadata (objects, versions, parts, uploads, buckets, users) goes through.
//!
//! A record lives on every drive of its set and a write commits drive by drive, so a crash,
//! a lost drive or a write that missed its quorum leaves drives that disagree. Each copy
//! vouches for its current value and for the values it replaced (an object record keeps the
//! version it superseded; a revision vouches for the earlier revisions of its record).
//!
//! The rule:
//! - A value can be answered only when a read quorum of copies vouches for it.
//! - Of those, the newest wins (one no other such value replaced); among rival branches, the
//!   one current on more drives, then the higher [`Replica::rank`].
//! - **Never back in time**: when some other value that the winner did not replace may have
//!   been acknowledged (its vouchers plus the drives that did not answer reach the write
//!   quorum), nothing can be answered: the caller says 503 rather than serve an older value.
//! - A record is absent only when more drives say so than a read quorum's complement: a
//!   drive that answers may still have lost a write it acknowledged (an old backup put
//!   back), so values held short of a read quorum are never taken for leftovers to delete.

use crate::erasure::ErasureError;
use crate::storage::DriveError;

/// A copy of a replicated record, as agreement compares it with others.
pub trait Replica: Clone {
    /// Orders rival values current on as many drives: the larger wins.
    type Rank: Ord;
    /// Whether this copy's current value is `value`.
    fn is_current(&self, value: &Self) -> bool;
    /// Whether this copy vouches for `value`: holds it as its current value or one it
    /// replaced.
    fn vouches_for(&self, value: &Self) -> bool;
    /// The values this copy vouches for, each as a copy of its own (current value first).
    fn values(&self) -> Vec<Self>;
    fn rank(&self) -> Self::Rank;
}

/// What the drives of a set said about one record.
#[derive(Debug, Clone, PartialEq)]
pub enum Agreement<T> {
    /// A read quorum vouches for this value; `holders[i]` says whether drive `i` does.
    Found { value: T, holders: Vec<bool> },
    /// Enough drives answered "not found" that the record cannot exist.
    NotFound,
}

impl<T> Agreement<T> {
    /// The value found, if any.
    pub fn found(self) -> Option<T> {
        match self {
            Agreement::Found { value, .. } => Some(value),
            Agreement::NotFound => None,
        }
    }
}

/// Reduces each drive's answer about one record (an error, including an unhealed drive's
/// "unknown", counts as no answer) to what the set agrees on; see the module docs.
pub fn agree<T: Replica>(
    answers: &[Result<Option<T>, DriveError>],
    read_quorum: usize,
    write_quorum: usize,
) -> Result<Agreement<T>, ErasureError> {
    let copies: Vec<&T> = answers
        .iter()
        .filter_map(|a| a.as_ref().ok().and_then(Option::as_ref))
        .collect();
    let unanswered = answers.iter().filter(|a| a.is_err()).count();
    let vouched = |value: &T| copies.iter().filter(|c| c.vouches_for(value)).count();
    let current_on = |value: &T| copies.iter().filter(|c| c.is_current(value)).count();
    // `newer` replaced `older`: a copy holding `newer` vouches for `older` too.
    let replaced = |older: &T, newer: &T| {
        !older.is_current(newer)
            && copies
                .iter()
                .any(|c| c.is_current(newer) && c.vouches_for(older))
    };
    let mut values: Vec<T> = Vec::new();
    for value in copies.iter().flat_map(|c| c.values()) {
        if !values.iter().any(|v| v.is_current(&value)) {
            values.push(value);
        }
    }
    let readable: Vec<&T> = values
        .iter()
        .filter(|v| vouched(v) >= read_quorum)
        .collect();
    let chosen = readable
        .iter()
        .filter(|v| !readable.iter().any(|newer| replaced(v, newer)))
        .max_by_key(|v| (current_on(v), v.rank()));
    let Some(&chosen) = chosen else {
        let absent = answers.iter().filter(|a| matches!(a, Ok(None))).count();
        return match absent > answers.len() - read_quorum {
            true => Ok(Agreement::NotFound),
            false => Err(ErasureError::ReadQuorum),
        };
    };
    let newer_may_be_acknowledged = values.iter().any(|other| {
        !other.is_current(chosen)
            && !replaced(other, chosen)
            && vouched(other) + unanswered >= write_quorum
    });
    if newer_may_be_acknowledged {
        return Err(ErasureError::ReadQuorum);
    }
    let holders = answers
        .iter()
        .map(|a| matches!(a, Ok(Some(c)) if c.vouches_for(chosen)))
        .collect();
    Ok(Agreement::Found {
        value: chosen.clone(),
        holders,
    })
}

/// A shortcut for callers holding many records as stored (listings): the bytes that more
/// than half of a set's `width` drives hold alike, if they are also a read quorum. [`agree`]
/// answers that value whatever the other drives hold or whether they answered: its holders
/// vouch for nothing newer, so no newer value gathers a read quorum, and the other drives are
/// fewer than a write quorum, so no other value may have been acknowledged. The caller can
/// take it without decoding the rest.
pub fn held_by_majority<'a>(
    copies: &[&'a [u8]],
    width: usize,
    read_quorum: usize,
) -> Option<&'a [u8]> {
    for (i, copy) in copies.iter().enumerate() {
        // Past the first half, no copy left can be held by a majority.
        if 2 * (copies.len() - i) <= width {
            return None;
        }
        let same = copies.iter().filter(|c| *c == copy).count();
        if 2 * same > width && same >= read_quorum {
            return Some(copy);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const N: usize = 9;
    const READ: usize = 6;
    const WRITE: usize = 6;

    /// A toy record: versions 1 < 2 < 3 written in that order, each over the one before, and
    /// 9, a write that raced 2 from 1 and lost (left behind where its undo did not reach).
    #[derive(Debug, Clone, Copy, PartialEq)]
    struct Copy {
        current: u8,
        replaced: Option<u8>,
        /// Whether ranks follow commit order or oppose it (clocks can disagree with it).
        rank_reversed: bool,
    }

    impl Replica for Copy {
        type Rank = i16;
        fn is_current(&self, value: &Self) -> bool {
            self.current == value.current
        }
        fn vouches_for(&self, value: &Self) -> bool {
            self.current == value.current || self.replaced == Some(value.current)
        }
        fn values(&self) -> Vec<Self> {
            let one = |current| Copy {
                current,
                replaced: None,
                rank_reversed: self.rank_reversed,
            };
            std::iter::once(one(self.current))
                .chain(self.replaced.map(one))
                .collect()
        }
        fn rank(&self) -> i16 {
            match self.rank_reversed {
                true => -i16::from(self.current),
                false => i16::from(self.current),
            }
        }
    }

    /// The values a version's copy vouches for, newest first.
    fn chain(version: u8) -> &'static [u8] {
        match version {
            1 => &[1],
            2 => &[2, 1],
            3 => &[3, 2, 1],
            9 => &[9, 1],
            _ => unreachable!(),
        }
    }

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Answer {
        Unanswered,
        Absent,
        Holds(u8, Option<u8>),
    }

    const KINDS: [Answer; 6] = [
        Answer::Unanswered,
        Answer::Absent,
        Answer::Holds(1, None),
        Answer::Holds(2, Some(1)),
        Answer::Holds(3, Some(2)),
        Answer::Holds(9, Some(1)),
    ];

    fn answers(pattern: &[Answer], rank_reversed: bool) -> Vec<Result<Option<Copy>, DriveError>> {
        pattern
            .iter()
            .map(|a| match *a {
                Answer::Unanswered => Err(DriveError::Offline("d".into())),
                Answer::Absent => Ok(None),
                Answer::Holds(current, replaced) => Ok(Some(Copy {
                    current,
                    replaced,
                    rank_reversed,
                })),
            })
            .collect()
    }

    /// Every multiset of 9 answers (agreement does not depend on the drives' order).
    fn patterns() -> Vec<Vec<Answer>> {
        fn extend(from: usize, left: usize, so_far: &mut Vec<Answer>, out: &mut Vec<Vec<Answer>>) {
            if left == 0 {
                out.push(so_far.clone());
                return;
            }
            for (kind, answer) in KINDS.iter().enumerate().skip(from) {
                so_far.push(*answer);
                extend(kind, left - 1, so_far, out);
                so_far.pop();
            }
        }
        let mut out = Vec::new();
        extend(0, N, &mut Vec::new(), &mut out);
        out
    }

    /// What a version's copies in the pattern hold as replaced.
    fn value_replaced(pattern: &[Answer], version: u8) -> Option<u8> {
        pattern.iter().find_map(|a| match a {
            Answer::Holds(c, r) if *c == version => Some(*r),
            _ => None,
        })?
    }

    /// The drives whose record names `version` (as current, or as the one it replaced).
    fn vouchers(pattern: &[Answer], version: u8) -> usize {
        (pattern.iter())
            .filter(|a| matches!(a, Answer::Holds(c, r) if *c == version || *r == Some(version)))
            .count()
    }

    #[test]
    fn every_pattern_of_nine_answers_is_safe_and_answers_when_it_can() {
        let (mut found, mut absent, mut refused) = (0, 0, 0);
        for pattern in patterns() {
            let unanswered = pattern.iter().filter(|a| **a == Answer::Unanswered).count();
            if unanswered > 4 {
                continue;
            }
            // A version may have been acknowledged when its vouchers and the drives that
            // did not answer reach the write quorum.
            let may_be_acked = |v: u8| vouchers(&pattern, v) + unanswered >= WRITE;
            for rank_reversed in [false, true] {
                let outcome = agree(&answers(&pattern, rank_reversed), READ, WRITE);
                match &outcome {
                    Ok(Agreement::Found { value, holders }) => {
                        found += 1;
                        let v = value.current;
                        assert!(
                            vouchers(&pattern, v) >= READ,
                            "{pattern:?}: {v} lacks quorum"
                        );
                        assert_eq!(
                            holders.iter().filter(|h| **h).count(),
                            vouchers(&pattern, v)
                        );
                        // Never back in time: nothing outside v's history may have been
                        // acknowledged.
                        for w in [1, 2, 3, 9] {
                            assert!(
                                chain(v).contains(&w) || !may_be_acked(w),
                                "{pattern:?}: answered {v} though {w} may be acknowledged"
                            );
                        }
                    }
                    Ok(Agreement::NotFound) => {
                        absent += 1;
                        let said_absent = pattern.iter().filter(|a| **a == Answer::Absent).count();
                        assert!(said_absent > N - READ, "{pattern:?}");
                        for w in [1, 2, 3, 9] {
                            assert!(!may_be_acked(w), "{pattern:?}: {w} may exist");
                        }
                    }
                    Err(_) => refused += 1,
                }
                // The listing's shortcut answers what agreement answers.
                let held: Vec<String> = (pattern.iter())
                    .filter(|a| matches!(a, Answer::Holds(..)))
                    .map(|a| format!("{a:?}"))
                    .collect();
                let copies: Vec<&[u8]> = held.iter().map(|h| h.as_bytes()).collect();
                if let Some(alike) = held_by_majority(&copies, N, READ) {
                    assert!(
                        matches!(&outcome, Ok(Agreement::Found { value, .. })
                            if format!("{:?}", Answer::Holds(value.current, value_replaced(&pattern, value.current))) == String::from_utf8_lossy(alike)),
                        "{pattern:?}: the shortcut took {}, agreement {outcome:?}",
                        String::from_utf8_lossy(alike)
                    );
                }
                // Answers when it can: a version held by a write quorum, with nothing outside
                // its history that may have been acknowledged, is found, whatever the clocks.
                for v in [1, 2, 3, 9] {
                    let safe = [1, 2, 3, 9]
                        .iter()
                        .all(|w| chain(v).contains(w) || !may_be_acked(*w));
                    if vouchers(&pattern, v) >= WRITE && safe {
                        assert!(
                            matches!(&outcome, Ok(Agreement::Found { value, .. }) if chain(value.current).contains(&v)),
                            "{pattern:?} (ranks reversed: {rank_reversed}): {v} is readable, got {outcome:?}"
                        );
                    }
                }
            }
        }
        assert!(found > 0 && absent > 0 && refused > 0);
    }

    fn outcome(pattern: &[Answer]) -> Option<Option<u8>> {
        match agree(&answers(pattern, false), READ, WRITE) {
            Ok(Agreement::Found { value, .. }) => Some(Some(value.current)),
            Ok(Agreement::NotFound) => Some(None),
            Err(_) => None,
        }
    }

    #[test]
    fn the_cases_the_write_path_produces() {
        use Answer::*;
        let a = Holds(1, None);
        let b = Holds(2, Some(1));
        let c = Holds(3, Some(2));
        let lost = Holds(9, Some(1));
        let table: [([Answer; N], Option<Option<u8>>); 11] = [
            // Written everywhere.
            ([b; N], Some(Some(2))),
            // An overwrite cut short on 3 drives: the old version stands.
            ([b, b, b, a, a, a, a, a, a], Some(Some(1))),
            // Acknowledged on 6: the new version, even with 3 drives gone.
            (
                [b, b, b, b, b, b, Unanswered, Unanswered, Unanswered],
                Some(Some(2)),
            ),
            // Acknowledged on 6, one of which is lost, and 3 more drives hold only the older
            // version: 2 may have been acknowledged, so 1 is not answered.
            ([b, b, b, b, b, Unanswered, a, a, a], None),
            // A lost race left behind on 3 drives does not hide the winner.
            ([c, c, c, c, c, c, lost, lost, lost], Some(Some(3))),
            // Nothing anywhere: absent; with 4 drives gone, 5 that lack it still rule out a
            // write quorum; 3 do not.
            ([Absent; N], Some(None)),
            (
                [
                    Absent, Absent, Absent, Absent, Absent, Unanswered, Unanswered, Unanswered,
                    Unanswered,
                ],
                Some(None),
            ),
            (
                [
                    Absent, Absent, Absent, b, b, Unanswered, Unanswered, Unanswered, Unanswered,
                ],
                None,
            ),
            // Every drive answered and nothing gathers a read quorum: too few say absent to
            // rule out a write that a drive since lost, so nothing is answered (503).
            ([Absent, Absent, a, a, a, a, a, c, c], None),
            // A delete cut short on 3 drives: the object stands.
            ([Absent, Absent, Absent, b, b, b, b, b, b], Some(Some(2))),
            // Deleted on 6 (acknowledged): gone, though 3 drives missed it.
            (
                [Absent, Absent, Absent, Absent, Absent, Absent, b, b, b],
                Some(None),
            ),
        ];
        for (pattern, expected) in table {
            assert_eq!(outcome(&pattern), expected, "{pattern:?}");
        }
    }
}
