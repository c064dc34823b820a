//! Pacing for background walks over every key (the lifecycle scanner, a pool's drain), so that
//! a walk of a big bucket leaves the drives and the CPU to the clients. The walker reports its
//! work as it goes (once per key is fine); after
//! each slice of work the pacer pauses long enough that the work takes at most a set share of
//! the time (its duty), and, if asked, that no more than a set number of objects per second
//! are evaluated. The pause follows the work it pays for, so a slice slowed down by
//! foreground traffic earns a longer pause: the scanner yields most exactly when the clients
//! are busiest.

use std::time::Duration;

use tokio::time::Instant;

/// The smallest duty a pace keeps; below it a scan of a big bucket would never end.
const MIN_DUTY: f64 = 0.01;

/// Work is paid for in slices of at least this long, so that a report per key costs one
/// clock read and the pauses are long enough for the timer (whose resolution is 1 ms) to
/// keep the duty.
pub const SLICE: Duration = Duration::from_millis(10);

/// How hard a lifecycle scan may work.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pace {
    /// Share of wall-clock time the scan may spend working, in `[0.01, 1]`; 1 never pauses.
    pub duty: f64,
    /// Objects evaluated per second at most; `None` for no bound.
    pub max_objects_per_sec: Option<u64>,
    /// The longest single pause, so that one slice slowed down by a stalled drive does not
    /// stop the scan for minutes.
    pub max_pause: Duration,
}

impl Default for Pace {
    /// A tenth of the time, no rate bound, pauses of at most ten seconds. Unpaced, the scanner
    /// slows small GETs down about threefold while it works (`benches/lifecycle.rs`, two
    /// cores); at a tenth of the time, few requests meet it working.
    fn default() -> Self {
        Pace {
            duty: 0.1,
            max_objects_per_sec: None,
            max_pause: Duration::from_secs(10),
        }
    }
}

impl Pace {
    /// The default pace with the operator's duty and rate bound, where given.
    pub fn configured(duty: Option<f64>, max_objects_per_sec: Option<u64>) -> Self {
        let default = Pace::default();
        Pace {
            duty: duty.unwrap_or(default.duty),
            max_objects_per_sec,
            ..default
        }
    }

    /// Never pauses.
    pub fn unpaced() -> Self {
        Pace {
            duty: 1.0,
            max_objects_per_sec: None,
            max_pause: Duration::ZERO,
        }
    }

    /// The pause owed after work that took `busy` and evaluated `objects` objects: the
    /// longer of what the duty and the rate ask for, capped at `max_pause`.
    pub fn pause_after(&self, busy: Duration, objects: u64) -> Duration {
        let duty = match self.duty {
            d if d.is_nan() => 1.0,
            d => d.clamp(MIN_DUTY, 1.0),
        };
        // Work `busy`, then rest so that busy / (busy + rest) = duty.
        let for_duty = busy.mul_f64((1.0 - duty) / duty);
        for_duty
            .max(self.pause_for_rate(busy, objects))
            .min(self.max_pause)
    }

    /// What the rate bound alone asks for after `objects` objects took `busy`.
    fn pause_for_rate(&self, busy: Duration, objects: u64) -> Duration {
        match self.max_objects_per_sec {
            Some(rate) if rate > 0 => {
                Duration::from_secs_f64(objects as f64 / rate as f64).saturating_sub(busy)
            }
            _ => Duration::ZERO,
        }
    }
}

/// Times a scan's work and pauses after each slice of it as its [`Pace`] asks.
#[derive(Debug)]
pub struct Pacer {
    pace: Pace,
    /// When the work of the current slice started: at `new`, then at the end of each pause.
    working_since: Instant,
    /// Objects evaluated in the current slice.
    objects: u64,
    /// Time spent pausing so far, for logs and tests.
    paused: Duration,
}

impl Pacer {
    /// Starts timing the first slice now.
    pub fn new(pace: Pace) -> Self {
        Pacer {
            pace,
            working_since: Instant::now(),
            objects: 0,
            paused: Duration::ZERO,
        }
    }

    /// Call as the work goes on (after each key, or each page), with the objects evaluated
    /// since the last call. Once the slice has lasted [`SLICE`], or the rate bound asks for at
    /// least as long a pause, pauses for what the slice owes and starts the next one.
    pub async fn work_done(&mut self, objects: u64) {
        self.objects += objects;
        let busy = self.working_since.elapsed();
        if busy < SLICE && self.pace.pause_for_rate(busy, self.objects) < SLICE {
            return;
        }
        let pause = self.pace.pause_after(busy, self.objects);
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
            self.paused += pause;
        }
        self.objects = 0;
        self.working_since = Instant::now();
    }

    /// Time spent pausing so far.
    pub fn paused(&self) -> Duration {
        self.paused
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn pace(duty: f64, rate: Option<u64>, max_pause_ms: u64) -> Pace {
        Pace {
            duty,
            max_objects_per_sec: rate,
            max_pause: ms(max_pause_ms),
        }
    }

    #[test]
    fn pause_after_table() {
        // (pace, busy ms, objects, pause ms)
        let cases = [
            (Pace::unpaced(), 100, 1000, 0),
            (pace(1.0, None, 10_000), 100, 1000, 0),
            (pace(0.5, None, 10_000), 100, 1000, 100),
            (pace(0.25, None, 10_000), 100, 1000, 300),
            (pace(0.1, None, 10_000), 40, 1000, 360),
            // Capped.
            (pace(0.1, None, 200), 100, 1000, 200),
            // Out of range duties are clamped: 0 means 1 %, above 1 means unpaced.
            (pace(0.0, None, 100_000), 10, 1000, 990),
            (pace(2.0, None, 10_000), 100, 1000, 0),
            (pace(f64::NAN, None, 10_000), 100, 1000, 0),
            // 1000 objects at 5000/s take 200 ms: 100 ms of work owes 100 ms.
            (pace(1.0, Some(5000), 10_000), 100, 1000, 100),
            // Work slower than the rate owes nothing for it.
            (pace(1.0, Some(5000), 10_000), 300, 1000, 0),
            // The longer of the two.
            (pace(0.5, Some(5000), 10_000), 50, 1000, 150),
            (pace(0.25, Some(5000), 10_000), 100, 1000, 300),
            // A rate of 0 is no bound.
            (pace(1.0, Some(0), 10_000), 100, 1000, 0),
            (pace(0.5, None, 10_000), 0, 0, 0),
        ];
        for (i, (pace, busy, objects, pause)) in cases.into_iter().enumerate() {
            let got = pace.pause_after(ms(busy), objects);
            let diff = got.abs_diff(ms(pause));
            assert!(diff < Duration::from_micros(1), "case {i}: {got:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_work_keeps_its_share_of_the_time() {
        let start = Instant::now();
        let mut pacer = Pacer::new(pace(0.25, None, 10_000));
        for _ in 0..10 {
            // A slice of work: the clock moves as if the scanner had been busy.
            tokio::time::advance(ms(50)).await;
            pacer.work_done(1000).await;
        }
        assert_eq!(pacer.paused(), ms(1500));
        assert_eq!(start.elapsed(), ms(2000));
    }

    #[tokio::test(start_paused = true)]
    async fn the_rate_bounds_objects_per_second() {
        let start = Instant::now();
        let mut pacer = Pacer::new(pace(1.0, Some(10_000), 10_000));
        for _ in 0..5 {
            tokio::time::advance(ms(20)).await;
            pacer.work_done(1000).await;
        }
        // 5000 objects at 10,000 per second.
        assert_eq!(start.elapsed(), ms(500));
        assert_eq!(pacer.paused(), ms(400));
    }

    #[tokio::test(start_paused = true)]
    async fn an_unpaced_scan_never_sleeps() {
        let start = Instant::now();
        let mut pacer = Pacer::new(Pace::unpaced());
        for _ in 0..3 {
            tokio::time::advance(ms(30)).await;
            pacer.work_done(1000).await;
        }
        assert_eq!(pacer.paused(), Duration::ZERO);
        assert_eq!(start.elapsed(), ms(90));
    }

    #[tokio::test(start_paused = true)]
    async fn the_pause_only_pays_for_the_work_since_the_last_slice() {
        let mut pacer = Pacer::new(pace(0.5, None, 10_000));
        tokio::time::advance(ms(100)).await;
        pacer.work_done(1000).await;
        assert_eq!(pacer.paused(), ms(100));
        // The pause itself is not work: a quick next slice owes a short pause.
        tokio::time::advance(ms(10)).await;
        pacer.work_done(1000).await;
        assert_eq!(pacer.paused(), ms(110));
    }

    #[tokio::test(start_paused = true)]
    async fn small_reports_add_up_to_a_slice() {
        let start = Instant::now();
        let mut pacer = Pacer::new(pace(0.1, None, 10_000));
        for _ in 0..9 {
            tokio::time::advance(ms(1)).await;
            pacer.work_done(1).await;
        }
        assert_eq!(pacer.paused(), Duration::ZERO, "less than a slice of work");
        tokio::time::advance(ms(1)).await;
        pacer.work_done(1).await;
        assert_eq!(pacer.paused(), ms(90));
        assert_eq!(start.elapsed(), ms(100));
    }

    #[tokio::test(start_paused = true)]
    async fn a_rate_bound_pauses_before_a_slice_is_over() {
        let mut pacer = Pacer::new(pace(1.0, Some(1000), 10_000));
        // 50 objects at 1000 per second are owed 50 ms, though 1 ms of work is under a slice.
        tokio::time::advance(ms(1)).await;
        pacer.work_done(50).await;
        assert_eq!(pacer.paused(), ms(49));
    }

    #[tokio::test(start_paused = true)]
    async fn one_slow_slice_pauses_at_most_max_pause() {
        let mut pacer = Pacer::new(pace(0.1, None, 2_000));
        tokio::time::advance(Duration::from_secs(60)).await;
        let before = Instant::now();
        pacer.work_done(1000).await;
        assert_eq!(before.elapsed(), ms(2_000));
    }
}
