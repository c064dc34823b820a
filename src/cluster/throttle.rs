//! Warnings that whoever reaches a port can cause (refused drive calls, forged etcd values):
//! the operator must see them, but one line per [`Throttle::EVERY`] says so and counts the
//! rest, so that a flood of them cannot fill the log's disk.

use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Default)]
pub struct Throttle {
    /// When a warning was last let through, and how many were held back since.
    state: Mutex<(Option<Instant>, u64)>,
}

impl Throttle {
    pub const EVERY: Duration = Duration::from_secs(10);

    /// Whether to log this occurrence now: `Some(held back since the last one logged)`, or
    /// `None` when one was logged less than [`Self::EVERY`] ago.
    pub fn admit(&self) -> Option<u64> {
        self.admit_at(Instant::now())
    }

    fn admit_at(&self, now: Instant) -> Option<u64> {
        let mut state = self.state.lock().expect("not poisoned");
        let (last, held_back) = &mut *state;
        if last.is_some_and(|at| now.saturating_duration_since(at) < Self::EVERY) {
            *held_back += 1;
            return None;
        }
        let since = *held_back;
        *state = (Some(now), 0);
        Some(since)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_warning_is_let_through_every_ten_seconds_counting_the_rest() {
        let throttle = Throttle::default();
        let start = Instant::now();
        assert_eq!(throttle.admit_at(start), Some(0));
        for i in 1..=1000 {
            assert_eq!(throttle.admit_at(start + Duration::from_millis(i)), None);
        }
        assert_eq!(
            throttle.admit_at(start + Duration::from_millis(9_999)),
            None
        );
        assert_eq!(throttle.admit_at(start + Throttle::EVERY), Some(1001));
        assert_eq!(throttle.admit_at(start + Throttle::EVERY), None);
        assert_eq!(throttle.admit_at(start + Throttle::EVERY * 3), Some(1));
    }
}
