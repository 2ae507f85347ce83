//! The per-connection write queue shared by the router and the client: three lanes drained by
//! one writer task, control first, then RPC, then topic data — which still gets one frame after
//! every 16 consecutive higher-priority frames, so replies are never starved by data and data is
//! never starved by a busy control lane.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

/// Which lane a frame travels on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lane {
    /// Replies, notices, consumption and release batches.
    Control = 0,
    /// RPC requests and results (router), commands (client).
    Rpc = 1,
    /// Topic messages.
    Topic = 2,
}

/// Consecutive higher-priority frames after which a waiting topic frame goes first.
const TOPIC_FAIRNESS: u32 = 16;

struct Lanes<T> {
    lanes: [VecDeque<T>; 3],
    streak: u32,
    closing: bool,
}

/// A three-lane queue with a wake-up for its writer and a kill switch for both tasks of a
/// connection.
pub(crate) struct Outbox<T> {
    inner: Mutex<Lanes<T>>,
    notify: Notify,
    killed: AtomicBool,
    kill: Notify,
}

impl<T> Outbox<T> {
    pub(crate) fn new() -> Self {
        Self {
            inner: Mutex::new(Lanes {
                lanes: [VecDeque::new(), VecDeque::new(), VecDeque::new()],
                streak: 0,
                closing: false,
            }),
            notify: Notify::new(),
            killed: AtomicBool::new(false),
            kill: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Lanes<T>> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Queues a frame; returns the lane's new length, or `None` once the outbox is closing.
    pub(crate) fn push(&self, lane: Lane, item: T) -> Option<usize> {
        let len = {
            let mut l = self.lock();
            if l.closing {
                return None;
            }
            let q = &mut l.lanes[lane as usize];
            q.push_back(item);
            q.len()
        };
        self.notify.notify_one();
        Some(len)
    }

    /// Queues a frame even while closing (the closing notice itself).
    pub(crate) fn push_final(&self, item: T) {
        {
            let mut l = self.lock();
            l.lanes[Lane::Control as usize].push_back(item);
            l.closing = true;
        }
        self.notify.notify_one();
    }

    /// Stops accepting frames; the writer drains the control lane and stops.
    pub(crate) fn close(&self) {
        self.lock().closing = true;
        self.notify.notify_one();
    }

    /// Moves up to `max` frames into `out` in priority order. Returns `false` when the outbox is
    /// closing and nothing more will be written.
    pub(crate) fn pop_batch(&self, max: usize, out: &mut Vec<T>) -> bool {
        let mut l = self.lock();
        let closing = l.closing;
        while out.len() < max {
            let topic_due = l.streak >= TOPIC_FAIRNESS && !l.lanes[2].is_empty();
            let pick = if closing {
                0
            } else if topic_due {
                2
            } else if !l.lanes[0].is_empty() {
                0
            } else if !l.lanes[1].is_empty() {
                1
            } else {
                2
            };
            let Some(item) = l.lanes[pick].pop_front() else {
                break;
            };
            if pick == 2 {
                l.streak = 0;
            } else if !l.lanes[2].is_empty() {
                l.streak += 1;
            } else {
                l.streak = 0;
            }
            out.push(item);
        }
        !(closing && out.is_empty())
    }

    /// Waits until frames may be ready.
    pub(crate) async fn wait(&self) {
        self.notify.notified().await;
    }

    /// Ends both tasks of the connection at once (router shutdown, overflow, teardown).
    pub(crate) fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
        self.close();
        self.kill.notify_waiters();
    }

    /// Resolves once [`Outbox::kill`] was called.
    pub(crate) async fn killed(&self) {
        loop {
            let notified = self.kill.notified();
            if self.killed.load(Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_goes_first_and_topic_data_is_not_starved() {
        let outbox = Outbox::new();
        for i in 0..3 {
            outbox.push(Lane::Topic, 100 + i);
        }
        for i in 0..40 {
            outbox.push(Lane::Control, i);
        }
        let mut out = Vec::new();
        outbox.pop_batch(100, &mut out);
        assert_eq!(out[..16], (0..16).collect::<Vec<_>>()[..]);
        assert_eq!(out[16], 100);
        assert_eq!(out[33], 101);
        assert_eq!(out.len(), 43);
    }
}
