//! Writes in flight and writes cut short.
//!
//! A commit reaches a set's drives one by one, so a writer can read a value on some drives
//! that no agreement accounts for: it is neither the agreed value nor one that value
//! replaced. It is either another writer's commit still in flight, which may yet reach its
//! write quorum and be acknowledged, or the leftover of one that ended without it (a crash,
//! an undo that missed a drive). Overwriting the first would take drives that the other
//! writer counts on, and both could be acknowledged; refusing the second for ever would
//! block the key. So a commit leaves such a drive alone (a refusal: the writer reads again
//! and retries) until the value is known to be cut short:
//!
//! - When only this server writes to the drives, it knows its own commits: a value found by
//!   a read that no commit of this server on that key overlapped was left by a write that
//!   has ended ([`LocalCommits`]; its key locks make that the usual case, but safety does not
//!   rest on them).
//! - When other servers write to them too, time tells: every commit is answered within
//!   [`Writers::Shared`]'s deadline of its start or fails (and undoes what it took), so a
//!   value first seen longer ago than that, with a margin for clocks that run at slightly
//!   different rates, can no longer be acknowledged. Only this server's monotonic clock is
//!   read: the servers' clocks need not agree.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::storage::MetaTable;

/// How long a commit may take when other servers write to the same drives.
pub const DEFAULT_COMMIT_DEADLINE: Duration = Duration::from_secs(10);

/// Sightings kept before old ones are dropped.
const SIGHTINGS_KEPT: usize = 4096;

/// Who commits to a set's drives.
pub enum Writers {
    /// This server alone.
    ThisServer,
    /// Other servers too; each commit must be answered within `commit_deadline`.
    Shared {
        commit_deadline: Duration,
        sightings: Sightings,
    },
}

impl Writers {
    pub fn shared(commit_deadline: Duration) -> Self {
        Writers::Shared {
            commit_deadline,
            sightings: Sightings::default(),
        }
    }

    /// Whether a commit that took `took` from its first drive call to its last answer may
    /// count: past the deadline, others may already have taken its values for leftovers.
    pub fn in_time(&self, took: Duration) -> bool {
        match self {
            Writers::ThisServer => true,
            Writers::Shared {
                commit_deadline, ..
            } => took <= *commit_deadline,
        }
    }

    /// Whether `value`, found under `key` by a read made in `window` and accounted for by
    /// no agreement, was left by a write that can no longer be acknowledged. `local`: this
    /// server's commits.
    pub fn cut_short(
        &self,
        key: (MetaTable, &[u8]),
        value: &[u8],
        window: ReadWindow,
        local: &LocalCommits,
    ) -> bool {
        match self {
            Writers::ThisServer => local.quiet_since(key, window.mark),
            Writers::Shared {
                commit_deadline,
                sightings,
            } => {
                let first_seen = sightings.first_seen(key, value, window.ended);
                // The value's writer started before `first_seen` and counts no drive
                // answer after its deadline: by the start of this read, every drive it
                // could count held the value, and this read saw them.
                let settled_by = first_seen + *commit_deadline + margin(*commit_deadline);
                window.started > settled_by
            }
        }
    }
}

/// For clocks that run at slightly different rates, and a reply in flight.
fn margin(deadline: Duration) -> Duration {
    deadline / 10 + Duration::from_millis(100)
}

/// When a read of a set's drives began and ended, and where this server's commits on the
/// key stood when it began.
#[derive(Debug, Clone, Copy)]
pub struct ReadWindow {
    pub started: Instant,
    pub ended: Instant,
    pub mark: Mark,
}

/// Where this server's commits on one key stood at a moment ([`LocalCommits::mark`]).
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    seq: u64,
    in_flight: bool,
}

/// This server's commits in flight, by key, and when each key's last began or ended.
#[derive(Default)]
pub struct LocalCommits(Mutex<Commits>);

#[derive(Default)]
struct Commits {
    /// Counts commits beginning and ending.
    next_seq: u64,
    keys: HashMap<u64, KeyCommits>,
    /// Keys with nothing in flight are forgotten when there are many; what happened to them
    /// before this is no longer known.
    forgotten_below: u64,
}

struct KeyCommits {
    in_flight: u32,
    /// When a commit on the key last began or ended.
    last_seq: u64,
}

/// A commit of this server in flight: it ends when this is dropped.
pub struct InFlight<'a> {
    commits: &'a LocalCommits,
    keys: Vec<u64>,
}

impl LocalCommits {
    /// Where this server's commits on `key` stand now.
    pub fn mark(&self, key: (MetaTable, &[u8])) -> Mark {
        let commits = self.0.lock().expect("commits lock");
        Mark {
            seq: commits.next_seq,
            in_flight: (commits.keys.get(&hash_key(key))).is_some_and(|k| k.in_flight > 0),
        }
    }

    /// Whether no commit of this server on `key` was in flight at any moment since `mark`.
    pub fn quiet_since(&self, key: (MetaTable, &[u8]), mark: Mark) -> bool {
        let commits = self.0.lock().expect("commits lock");
        let unchanged = match commits.keys.get(&hash_key(key)) {
            Some(k) => k.in_flight == 0 && k.last_seq < mark.seq,
            None => commits.forgotten_below <= mark.seq,
        };
        !mark.in_flight && unchanged
    }

    /// Notes a commit on `keys` beginning; it ends when the answer is dropped.
    pub fn begin<'a, 'k>(
        &'a self,
        keys: impl Iterator<Item = (MetaTable, &'k [u8])>,
    ) -> InFlight<'a> {
        let mut keys: Vec<u64> = keys.map(hash_key).collect();
        keys.sort_unstable();
        keys.dedup();
        let mut commits = self.0.lock().expect("commits lock");
        let seq = commits.next();
        if commits.keys.len() + keys.len() > SIGHTINGS_KEPT {
            commits.forget_quiet_keys();
        }
        for key in &keys {
            let entry = commits.keys.entry(*key).or_insert(KeyCommits {
                in_flight: 0,
                last_seq: seq,
            });
            entry.in_flight += 1;
            entry.last_seq = seq;
        }
        InFlight {
            commits: self,
            keys,
        }
    }
}

impl Commits {
    fn next(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq - 1
    }

    fn forget_quiet_keys(&mut self) {
        let mut forgotten_below = self.forgotten_below;
        self.keys.retain(|_, k| {
            let quiet = k.in_flight == 0;
            if quiet {
                forgotten_below = forgotten_below.max(k.last_seq + 1);
            }
            !quiet
        });
        self.forgotten_below = forgotten_below;
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut commits = self.commits.0.lock().expect("commits lock");
        let seq = commits.next();
        for key in &self.keys {
            if let Some(entry) = commits.keys.get_mut(key) {
                entry.in_flight -= 1;
                entry.last_seq = seq;
            }
        }
    }
}

fn hash_key((table, key): (MetaTable, &[u8])) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (table, key).hash(&mut hasher);
    hasher.finish()
}

/// When this server first saw each value that no agreement accounted for.
#[derive(Default)]
pub struct Sightings(Mutex<HashMap<u64, Instant>>);

impl Sightings {
    /// When `value` under `key` was first seen, `now` if this is the first time.
    fn first_seen(&self, key: (MetaTable, &[u8]), value: &[u8], now: Instant) -> Instant {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        (key.0, key.1, value).hash(&mut hasher);
        let mut seen = self.0.lock().expect("sightings lock");
        if seen.len() >= SIGHTINGS_KEPT {
            let oldest_kept = now.checked_sub(Duration::from_secs(600)).unwrap_or(now);
            seen.retain(|_, at| *at >= oldest_kept);
            if seen.len() >= SIGHTINGS_KEPT {
                seen.clear();
            }
        }
        *seen.entry(hasher.finish()).or_insert(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: (MetaTable, &[u8]) = (MetaTable::Objects, b"bucket\0key");

    fn window(local: &LocalCommits, started: Instant, read_ms: u64) -> ReadWindow {
        ReadWindow {
            started,
            ended: started + Duration::from_millis(read_ms),
            mark: local.mark(KEY),
        }
    }

    #[test]
    fn one_server_takes_what_no_commit_of_its_own_overlapped_for_a_leftover() {
        let local = LocalCommits::default();
        let now = Instant::now();
        let alone = Writers::ThisServer;
        assert!(alone.cut_short(KEY, b"v", window(&local, now, 1), &local));
        assert!(alone.in_time(Duration::from_secs(3600)));

        // A commit in flight when the read began, or begun since (even if ended), may have
        // left the value: it is not taken for a leftover.
        let commit = local.begin([KEY].into_iter());
        let during = window(&local, now, 1);
        assert!(!alone.cut_short(KEY, b"v", during, &local));
        drop(commit);
        assert!(!alone.cut_short(KEY, b"v", during, &local));
        let before = window(&local, now, 1);
        let commit = local.begin([KEY].into_iter());
        assert!(!alone.cut_short(KEY, b"v", before, &local));
        drop(commit);
        assert!(!alone.cut_short(KEY, b"v", before, &local));
        // Commits on other keys do not count.
        let quiet = window(&local, now, 1);
        let other = local.begin([(MetaTable::Objects, b"bucket\0other".as_slice())].into_iter());
        assert!(alone.cut_short(KEY, b"v", quiet, &local));
        drop(other);
    }

    #[test]
    fn forgotten_keys_are_not_taken_for_quiet_ones() {
        let local = LocalCommits::default();
        let before = local.mark(KEY);
        drop(local.begin([KEY].into_iter()));
        let keys: Vec<Vec<u8>> = (0..SIGHTINGS_KEPT as u32)
            .map(|i| i.to_be_bytes().to_vec())
            .collect();
        drop(local.begin(keys.iter().map(|k| (MetaTable::Objects, k.as_slice()))));
        drop(local.begin([(MetaTable::Objects, b"last".as_slice())].into_iter()));
        assert!(!local.quiet_since(KEY, before));
        assert!(local.quiet_since(KEY, local.mark(KEY)));
    }

    #[test]
    fn shared_drives_wait_out_the_deadline_from_the_first_sighting() {
        let local = LocalCommits::default();
        let writers = Writers::shared(Duration::from_secs(1));
        let start = Instant::now();
        let seen = |value: &[u8], at: Instant| {
            writers.cut_short(KEY, value, window(&local, at, 5), &local)
        };
        assert!(!seen(b"v", start));
        // Seen again, still within deadline and margin of the first read's end.
        let later = start + Duration::from_millis(1200);
        assert!(!seen(b"v", later));
        // Another value is a new sighting.
        assert!(!seen(b"w", later));
        // So is the same value under another key.
        let other = (MetaTable::Objects, b"bucket\0other".as_slice());
        let elsewhere = ReadWindow {
            mark: local.mark(other),
            ..window(&local, later, 5)
        };
        assert!(!writers.cut_short(other, b"v", elsewhere, &local));
        let past = start + Duration::from_millis(1206);
        assert!(seen(b"v", past));
        assert!(!seen(b"w", past));
    }

    #[test]
    fn shared_drives_refuse_commits_past_their_deadline() {
        let writers = Writers::shared(Duration::from_secs(1));
        assert!(writers.in_time(Duration::from_millis(999)));
        assert!(!writers.in_time(Duration::from_millis(1001)));
    }
}
