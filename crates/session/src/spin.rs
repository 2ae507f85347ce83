//! Busy polling while replies are due: after the coordinator sends a call to a worker on
//! another thread or in another process, its thread keeps polling its sockets for a short
//! window instead of going to sleep at once.
//!
//! Why: a reply that finds the coordinator asleep must wake it, and waking a sleeping CPU is
//! the dearest thing a step does on a virtual machine — on the 2-vCPU machine this project is
//! measured on, 40–46 µs between a worker's send and the coordinator running again, against
//! about 3 µs when the coordinator is still awake. A lockstep step waits for replies three
//! times (Prepare, Advance, Commit); polling took the p50 step with two synthetic agents from
//! 556 to 425 µs in process mode and from 177 to 127 µs in thread mode (`transitions` bench).
//!
//! How: a task on the coordinator's current-thread runtime that, once kicked, yields until the
//! window since the last kick has passed. A runtime whose only ready task yields polls its I/O
//! driver with a zero timeout (`epoll_wait(…, 0)`) instead of blocking, so a reply is read as
//! soon as it lands. Each call attempt kicks it; when the window ends with no reply the thread
//! sleeps as before, so a slow worker (a brain computing for milliseconds) costs at most one
//! window of polling per call.
//!
//! This module knows nothing of calls or workers and changes no behaviour: what it affects is
//! when the coordinator's thread reads, never what it reads, so no digest depends on it.
//! The window comes from [`crate::run::RunOptions::busy_poll`]; zero turns it off, and
//! in-process mode never polls (its workers answer on the coordinator's own thread).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// The window used unless a run sets another one: long enough to cover a quick worker's whole
/// turn (a synthetic agent answers in about 60 µs, the counter arena in about 80 µs), short
/// enough that a worker computing for milliseconds wastes little.
pub const DEFAULT_BUSY_POLL: Duration = Duration::from_micros(DEFAULT_BUSY_POLL_US);

/// [`DEFAULT_BUSY_POLL`] in microseconds, as `--busy-poll-us` counts.
pub const DEFAULT_BUSY_POLL_US: u64 = 200;

/// A handle that keeps the coordinator's thread polling for a while after each kick. Cheap to
/// clone; the default handle is off and its kicks do nothing.
#[derive(Clone, Default)]
pub(crate) struct BusyPoll {
    shared: Option<Arc<Shared>>,
}

struct Shared {
    /// Where `until_ns` counts from.
    base: Instant,
    /// Polling goes on while `base.elapsed()` is below this (nanoseconds).
    until_ns: AtomicU64,
    window_ns: u64,
    kicked: Notify,
    /// How many times the loop has yielded (for tests and curiosity; never behaviour).
    turns: AtomicU64,
}

/// Stops the polling task when dropped.
pub(crate) struct PollTask(Option<tokio::task::JoinHandle<()>>);

impl Drop for PollTask {
    fn drop(&mut self) {
        if let Some(task) = self.0.take() {
            task.abort();
        }
    }
}

impl BusyPoll {
    /// Starts the polling task on the current runtime; a zero `window` starts nothing and
    /// returns a handle whose kicks do nothing.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime (as `tokio::spawn` does) when `window` is not zero.
    #[expect(
        clippy::disallowed_methods,
        reason = "bounds a wait: a deadline decides when to stop waiting, never what is recorded"
    )]
    pub(crate) fn start(window: Duration) -> (Self, PollTask) {
        if window.is_zero() {
            return (Self::default(), PollTask(None));
        }
        let shared = Arc::new(Shared {
            base: Instant::now(),
            until_ns: AtomicU64::new(0),
            window_ns: u64::try_from(window.as_nanos()).unwrap_or(u64::MAX),
            kicked: Notify::new(),
            turns: AtomicU64::new(0),
        });
        let task = tokio::spawn(poll_loop(Arc::clone(&shared)));
        (
            Self {
                shared: Some(shared),
            },
            PollTask(Some(task)),
        )
    }

    /// A reply is now due: poll for the window from now (extending any window still running).
    pub(crate) fn kick(&self) {
        if let Some(s) = &self.shared {
            let until = s.now_ns().saturating_add(s.window_ns);
            s.until_ns.fetch_max(until, Ordering::Relaxed);
            s.kicked.notify_one();
        }
    }
}

impl Shared {
    fn now_ns(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// Sleeps until kicked, then yields (the runtime polls its sockets between yields) until the
/// window has passed.
async fn poll_loop(shared: Arc<Shared>) {
    loop {
        shared.kicked.notified().await;
        while shared.now_ns() < shared.until_ns.load(Ordering::Relaxed) {
            shared.turns.fetch_add(1, Ordering::Relaxed);
            tokio::task::yield_now().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turns(poll: &BusyPoll) -> u64 {
        poll.shared
            .as_ref()
            .map_or(0, |s| s.turns.load(Ordering::Relaxed))
    }

    #[tokio::test]
    async fn a_zero_window_starts_nothing() {
        let (poll, task) = BusyPoll::start(Duration::ZERO);
        assert!(poll.shared.is_none());
        assert!(task.0.is_none());
        poll.kick();
    }

    #[tokio::test]
    async fn a_kick_polls_for_its_window_and_then_the_loop_sleeps() {
        let (poll, _task) = BusyPoll::start(Duration::from_millis(5));
        tokio::task::yield_now().await;
        // Not kicked: the loop waits and never turns.
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(turns(&poll), 0);
        poll.kick();
        // The loop turns, again and again, while the window runs, and the runtime still
        // serves others (this sleep ends).
        tokio::time::sleep(Duration::from_millis(20)).await;
        let after_window = turns(&poll);
        assert!(after_window >= 2, "turned {after_window} times in 5 ms");
        // Once the window has passed it is back at its wait: no more turns.
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(turns(&poll), after_window);
        // Kicked again, it polls again.
        poll.kick();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(turns(&poll) > after_window);
    }

    #[tokio::test]
    async fn a_second_kick_extends_the_window() {
        let (poll, _task) = BusyPoll::start(Duration::from_millis(30));
        let shared = poll.shared.clone().expect("on");
        poll.kick();
        let first = shared.until_ns.load(Ordering::Relaxed);
        tokio::time::sleep(Duration::from_millis(2)).await;
        poll.kick();
        assert!(shared.until_ns.load(Ordering::Relaxed) > first);
    }

    #[tokio::test]
    async fn dropping_the_task_handle_stops_the_loop() {
        let (poll, task) = BusyPoll::start(Duration::from_secs(3600));
        tokio::task::yield_now().await;
        poll.kick();
        tokio::time::sleep(Duration::from_millis(2)).await;
        drop(task);
        tokio::task::yield_now().await;
        let stopped = turns(&poll);
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(
            turns(&poll),
            stopped,
            "an hour-long window, yet no more turns"
        );
    }
}
