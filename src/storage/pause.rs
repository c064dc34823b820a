//! Whether this process itself stood still: stopped (SIGSTOP), a frozen VM, a suspended
//! machine. A drive call that misses its deadline across such a pause says nothing about the
//! drive, and must not mark it stalled: after a pause every drive call in flight misses at
//! once, and the node would serve around every drive it has, its own and its peers', for the
//! whole cool-down.
//!
//! A thread wakes every [`TICK`]; a wake-up that comes [`PAUSE`] late marks a pause. The
//! monotonic clock runs on through a stop, so the gap is what shows it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How often the watching thread wakes.
const TICK: Duration = Duration::from_millis(100);
/// A wake-up this much later than due is a pause of the process.
const PAUSE: Duration = Duration::from_secs(1);

struct Watch {
    base: Instant,
    /// When the thread last woke, in nanoseconds since `base`.
    last_tick: AtomicU64,
    /// When the last pause ended, in nanoseconds since `base`; 0 before any.
    last_pause_end: AtomicU64,
}

fn watch() -> &'static Watch {
    static WATCH: OnceLock<Watch> = OnceLock::new();
    WATCH.get_or_init(|| {
        let base = Instant::now();
        let spawned = std::thread::Builder::new()
            .name("strata-pause-watch".into())
            .spawn(|| loop {
                let watch = watch();
                let before = watch.nanos();
                std::thread::sleep(TICK);
                let now = watch.nanos();
                if is_pause(before, now) {
                    watch.last_pause_end.store(now, Ordering::Relaxed);
                }
                watch.last_tick.store(now, Ordering::Relaxed);
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "cannot watch for pauses of this process");
        }
        Watch {
            base,
            last_tick: AtomicU64::new(0),
            last_pause_end: AtomicU64::new(0),
        }
    })
}

impl Watch {
    fn nanos(&self) -> u64 {
        self.base.elapsed().as_nanos() as u64
    }
}

/// Starts watching (so that a pause is seen even before the first question).
pub fn start() {
    watch();
}

/// Whether the process stood still at some moment since `since`, or is waking from such a
/// pause now (the watching thread has not run since).
pub fn paused_since(since: Instant) -> bool {
    let watch = watch();
    let since = since.saturating_duration_since(watch.base).as_nanos() as u64;
    paused(
        watch.nanos(),
        watch.last_tick.load(Ordering::Relaxed),
        watch.last_pause_end.load(Ordering::Relaxed),
        since,
    )
}

/// Whether a wake-up this late is a pause.
fn is_pause(before: u64, after: u64) -> bool {
    after.saturating_sub(before) > (TICK + PAUSE).as_nanos() as u64
}

/// [`paused_since`] on the watch's readings, all in nanoseconds since its start.
fn paused(now: u64, last_tick: u64, last_pause_end: u64, since: u64) -> bool {
    let waking = last_tick != 0 && is_pause(last_tick, now);
    waking || (last_pause_end != 0 && last_pause_end >= since)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_late_wake_up_is_a_pause_that_covers_calls_started_before_it_ended() {
        assert!(!is_pause(0, 300 * MS), "a scheduling hiccup is no pause");
        assert!(is_pause(0, 5_000 * MS));
        // A pause ended at 5 s: a call started at 2 s was caught in it, one at 6 s was not.
        assert!(paused(6_000 * MS, 5_900 * MS, 5_000 * MS, 2_000 * MS));
        assert!(!paused(7_000 * MS, 6_900 * MS, 5_000 * MS, 6_000 * MS));
        // Waking now, before the watching thread has run: the gap since its last tick shows it.
        assert!(paused(9_000 * MS, 2_000 * MS, 0, 8_500 * MS));
        assert!(!paused(2_100 * MS, 2_000 * MS, 0, 1_000 * MS));
    }

    #[test]
    fn a_process_that_runs_sees_no_pause() {
        start();
        let since = Instant::now();
        std::thread::sleep(TICK * 3);
        assert!(!paused_since(since));
    }
}
