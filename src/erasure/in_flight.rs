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
//! - When only this server writes to the drives, its key locks tell: a writer holding the
//!   key's lock finds only values left by writes that have ended.
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
    /// This server alone: its key locks keep its own writers apart.
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
    /// no agreement, was left by a write that can no longer be acknowledged. The caller
    /// holds the key's write lock.
    pub fn cut_short(&self, key: (MetaTable, &[u8]), value: &[u8], window: ReadWindow) -> bool {
        match self {
            Writers::ThisServer => true,
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

/// When a read of a set's drives began and ended.
#[derive(Debug, Clone, Copy)]
pub struct ReadWindow {
    pub started: Instant,
    pub ended: Instant,
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

    fn window(started: Instant, read_ms: u64) -> ReadWindow {
        ReadWindow {
            started,
            ended: started + Duration::from_millis(read_ms),
        }
    }

    #[test]
    fn one_server_takes_what_it_finds_for_leftovers() {
        let now = Instant::now();
        assert!(Writers::ThisServer.cut_short(KEY, b"v", window(now, 1)));
        assert!(Writers::ThisServer.in_time(Duration::from_secs(3600)));
    }

    #[test]
    fn shared_drives_wait_out_the_deadline_from_the_first_sighting() {
        let writers = Writers::shared(Duration::from_secs(1));
        let start = Instant::now();
        assert!(!writers.cut_short(KEY, b"v", window(start, 5)));
        // Seen again, still within deadline and margin of the first read's end.
        let later = start + Duration::from_millis(1200);
        assert!(!writers.cut_short(KEY, b"v", window(later, 5)));
        // Another value is a new sighting.
        assert!(!writers.cut_short(KEY, b"w", window(later, 5)));
        // So is the same value under another key.
        let other = (MetaTable::Objects, b"bucket\0other".as_slice());
        assert!(!writers.cut_short(other, b"v", window(later, 5)));
        let past = start + Duration::from_millis(1206);
        assert!(writers.cut_short(KEY, b"v", window(past, 5)));
        assert!(!writers.cut_short(KEY, b"w", window(past, 5)));
    }

    #[test]
    fn shared_drives_refuse_commits_past_their_deadline() {
        let writers = Writers::shared(Duration::from_secs(1));
        assert!(writers.in_time(Duration::from_millis(999)));
        assert!(!writers.in_time(Duration::from_millis(1001)));
    }
}
