//! How blocking drive work leaves the async runtime. Each blocking call used to be its own
//! trip to the blocking pool and back: a small GET crossed nine times, one per drive, each
//! a thread wake-up there and a task wake-up back. Work under [`together`] is instead
//! queued, and what one poll of the request queued (the calls a fan-out to every drive
//! starts at once) goes to one blocking thread, which runs it in turn and answers all of it
//! when the queue is empty: one crossing each way for the whole fan-out.
//!
//! Running one drive's call after another must not let one drive hold the others: if queued
//! work is still waiting [`HELP_AFTER`] after its runner started, another runner takes it,
//! and answers already computed are handed out from the async side. A stalled drive then
//! costs the calls queued behind it a couple of milliseconds, and its own call meets its
//! deadline on the async side, as before ([`DeadlineDrive`](super::DeadlineDrive)).
//!
//! Outside [`together`] (background tasks, tests) [`run`] is a plain `spawn_blocking`.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::{Instant, Sleep};

use super::DriveError;

/// How long queued work waits for its runner before another one starts. Far above what a
/// fan-out of metadata reads takes (tens of microseconds), far below a drive's deadline.
const HELP_AFTER: Duration = Duration::from_millis(2);
/// The longest wait between two helps of a runner held up by one slow job.
const MAX_HELP_WAIT: Duration = Duration::from_millis(64);

tokio::task_local! {
    /// The queue of the [`together`] scope being polled.
    static QUEUE: Arc<Queue>;
}

type Job = Box<dyn FnOnce() -> Answer + Send>;
/// A finished job's answer, sent when its runner has nothing left to run.
type Answer = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct Queue {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    jobs: VecDeque<Job>,
    answers: Vec<Answer>,
    /// Runners working on this queue.
    runners: usize,
    /// Jobs queued since the last runner was started.
    unassigned: usize,
}

impl Queue {
    fn push(&self, job: Job) {
        let mut state = self.state.lock().expect("not poisoned");
        state.jobs.push_back(job);
        state.unassigned += 1;
    }

    /// Starts a runner if jobs were queued since the last one started (or if `help`, when
    /// jobs still wait); whether one was started.
    fn start_runner(self: &Arc<Self>, help: bool) -> bool {
        {
            let mut state = self.state.lock().expect("not poisoned");
            let start = match help {
                false => state.unassigned > 0,
                true => !state.jobs.is_empty(),
            };
            if !start {
                return false;
            }
            state.unassigned = 0;
            state.runners += 1;
        }
        let queue = self.clone();
        // Detached: a request that goes away leaves its queued work to finish unobserved.
        drop(tokio::task::spawn_blocking(move || queue.run_jobs()));
        true
    }

    /// Runs jobs until none is left, then hands out every answer waiting.
    fn run_jobs(&self) {
        loop {
            let job = {
                let mut state = self.state.lock().expect("not poisoned");
                match state.jobs.pop_front() {
                    Some(job) => job,
                    None => {
                        state.runners -= 1;
                        let answers = std::mem::take(&mut state.answers);
                        drop(state);
                        answers.into_iter().for_each(|send| send());
                        return;
                    }
                }
            };
            // A job that panics drops its sender, so its caller sees it abandoned; the
            // jobs after it still run.
            if let Ok(answer) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)) {
                self.state
                    .lock()
                    .expect("not poisoned")
                    .answers
                    .push(answer);
            }
        }
    }

    /// Hands out the answers of finished jobs (from the async side, when a runner is held
    /// up by a slow job).
    fn send_answers(&self) {
        let answers = std::mem::take(&mut self.state.lock().expect("not poisoned").answers);
        answers.into_iter().for_each(|send| send());
    }

    /// Whether no runner works and nothing waits (every answer is out).
    fn is_idle(&self) -> bool {
        let state = self.state.lock().expect("not poisoned");
        state.runners == 0 && state.jobs.is_empty()
    }
}

/// Runs blocking `work` off the async runtime: in the current [`together`] scope's queue if
/// there is one, else on a blocking thread of its own.
pub async fn run<T, F>(work: F) -> Result<T, DriveError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, DriveError> + Send + 'static,
{
    let Ok(queue) = QUEUE.try_with(Arc::clone) else {
        return (tokio::task::spawn_blocking(work).await).unwrap_or_else(|_| Err(abandoned()));
    };
    let (send, answer) = oneshot::channel();
    queue.push(Box::new(move || {
        let out = work();
        Box::new(move || drop(send.send(out)))
    }));
    answer.await.unwrap_or_else(|_| Err(abandoned()))
}

fn abandoned() -> DriveError {
    DriveError::Io(std::io::Error::other("blocking drive work abandoned"))
}

/// Runs `work` so that the blocking drive work it queues in one poll goes to one blocking
/// thread (see the module's note). Wrap a request, not a background loop: work queued by
/// tasks `work` spawns is not in the scope.
pub fn together<F: Future>(work: F) -> Together<F> {
    Together {
        work: Box::pin(work),
        queue: Arc::default(),
        help: None,
        wait: HELP_AFTER,
    }
}

/// The future of [`together`].
pub struct Together<F: Future> {
    work: Pin<Box<F>>,
    queue: Arc<Queue>,
    /// When a runner still at work is to be helped (see [`HELP_AFTER`]).
    help: Option<Pin<Box<Sleep>>>,
    /// The wait before the next help, doubled each time.
    wait: Duration,
}

impl<F: Future> Future for Together<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        let polled = QUEUE.sync_scope(this.queue.clone(), || this.work.as_mut().poll(cx));
        if polled.is_ready() {
            return polled;
        }
        if this.queue.start_runner(false) {
            this.wait = HELP_AFTER;
            this.help = Some(Box::pin(tokio::time::sleep(HELP_AFTER)));
        }
        while let Some(help) = this.help.as_mut() {
            if this.queue.is_idle() {
                this.help = None;
            } else if help.as_mut().poll(cx).is_ready() {
                // A runner is held up: hand out what is done, and let another take what
                // waits. Checked less often the longer it lasts.
                this.queue.send_answers();
                this.queue.start_runner(true);
                this.wait = (this.wait * 2).min(MAX_HELP_WAIT);
                help.as_mut().reset(Instant::now() + this.wait);
            } else {
                break;
            }
        }
        Poll::Pending
    }
}

#[cfg(test)]
#[path = "handoff_tests.rs"]
mod tests;
