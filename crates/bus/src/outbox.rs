//! The per-connection write queue shared by the router and the client: three lanes drained by
//! one writer task, control first, then RPC, then topic data — which still gets one frame after
//! every 16 consecutive higher-priority frames, so replies are never starved by data and data is
//! never starved by a busy control lane.
//!
//! A frame may be queued *deferred*: nothing waits for it promptly (the router's confirmation
//! of a reply, a seal, a consumption or a release), so it is held back while nothing else is
//! queued and leaves with the next frame, or when its writer's delay runs out. A worker idle
//! between steps is then not woken once per acknowledgement, only by its next request.

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
    /// Frames with whether each is deferred.
    lanes: [VecDeque<(T, bool)>; 3],
    /// How many queued frames are deferred.
    deferred: usize,
    streak: u32,
    closing: bool,
}

/// What [`Outbox::pop_batch`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Popped {
    /// `false` once the outbox is closing and nothing more will be written.
    pub(crate) open: bool,
    /// Deferred frames were held back (nothing else was queued).
    pub(crate) held: bool,
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
                deferred: 0,
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
        self.push_as(lane, item, false)
    }

    /// Queues a frame that may wait for the next one (see the module header).
    pub(crate) fn push_deferred(&self, lane: Lane, item: T) -> Option<usize> {
        self.push_as(lane, item, true)
    }

    fn push_as(&self, lane: Lane, item: T, deferred: bool) -> Option<usize> {
        let len = {
            let mut l = self.lock();
            if l.closing {
                return None;
            }
            // The writer learns of the first deferred frame (to start its delay); later ones
            // wait with it.
            let quiet = deferred && l.deferred > 0;
            l.deferred += usize::from(deferred);
            let q = &mut l.lanes[lane as usize];
            q.push_back((item, deferred));
            if quiet {
                return Some(q.len());
            }
            q.len()
        };
        self.notify.notify_one();
        Some(len)
    }

    /// Queues a frame even while closing (the closing notice itself).
    pub(crate) fn push_final(&self, item: T) {
        {
            let mut l = self.lock();
            l.lanes[Lane::Control as usize].push_back((item, false));
            l.closing = true;
        }
        self.notify.notify_one();
    }

    /// Stops accepting frames; the writer drains the control lane and stops.
    pub(crate) fn close(&self) {
        self.lock().closing = true;
        self.notify.notify_one();
    }

    /// Moves up to `max` frames into `out` in priority order. Deferred frames stay queued while
    /// nothing else is, unless `flush` (or the outbox is closing).
    pub(crate) fn pop_batch(&self, max: usize, out: &mut Vec<T>, flush: bool) -> Popped {
        let mut l = self.lock();
        let closing = l.closing;
        let queued: usize = l.lanes.iter().map(VecDeque::len).sum();
        if queued > 0 && queued == l.deferred && !flush && !closing {
            return Popped {
                open: true,
                held: true,
            };
        }
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
            let Some((item, deferred)) = l.lanes[pick].pop_front() else {
                break;
            };
            l.deferred -= usize::from(deferred);
            if pick == 2 {
                l.streak = 0;
            } else if !l.lanes[2].is_empty() {
                l.streak += 1;
            } else {
                l.streak = 0;
            }
            out.push(item);
        }
        Popped {
            open: !(closing && out.is_empty()),
            held: false,
        }
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
    use std::sync::Arc;

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
        outbox.pop_batch(100, &mut out, false);
        assert_eq!(out[..16], (0..16).collect::<Vec<_>>()[..]);
        assert_eq!(out[16], 100);
        assert_eq!(out[33], 101);
        assert_eq!(out.len(), 43);
    }

    #[test]
    fn deferred_frames_wait_for_the_next_frame_or_a_flush_and_keep_their_order() {
        let outbox = Outbox::new();
        let mut out = Vec::new();
        outbox.push_deferred(Lane::Control, 1);
        outbox.push_deferred(Lane::Control, 2);
        let popped = outbox.pop_batch(100, &mut out, false);
        assert_eq!((popped.open, popped.held), (true, true));
        assert!(out.is_empty(), "held while nothing else is queued");
        // The next frame takes them along, in queue order.
        outbox.push(Lane::Rpc, 10);
        outbox.push_deferred(Lane::Control, 3);
        assert!(!outbox.pop_batch(100, &mut out, false).held);
        assert_eq!(out, [1, 2, 3, 10]);
        // A flush (the writer's delay ran out) sends them alone.
        out.clear();
        outbox.push_deferred(Lane::Control, 4);
        assert!(outbox.pop_batch(100, &mut out, false).held);
        assert!(!outbox.pop_batch(100, &mut out, true).held);
        assert_eq!(out, [4]);
        // Closing sends everything.
        out.clear();
        outbox.push_deferred(Lane::Control, 5);
        outbox.close();
        assert!(outbox.pop_batch(100, &mut out, false).open);
        assert_eq!(out, [5]);
        out.clear();
        assert!(!outbox.pop_batch(100, &mut out, false).open);
    }

    /// The connection tasks poll one `killed()` future in every select for their whole life
    /// (the router's and the client's read and write loops): it must stay pending through
    /// selects that end on another branch and still end when the outbox is killed, whether the
    /// kill comes while it waits or before its first poll.
    #[test]
    fn one_wait_for_the_kill_outlives_many_selects_and_sees_the_kill() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        runtime.block_on(async {
            let outbox = Arc::new(Outbox::new());
            let mut killed = std::pin::pin!(outbox.killed());
            let mut out = Vec::new();
            for i in 0..100 {
                outbox.push(Lane::Rpc, i);
                let woke = tokio::select! {
                    biased;
                    () = &mut killed => false,
                    () = outbox.wait() => true,
                };
                assert!(woke, "round {i}: the kill future ended before any kill");
                out.clear();
                outbox.pop_batch(8, &mut out, true);
                assert_eq!(out, [i]);
            }
            let killer = Arc::clone(&outbox);
            tokio::spawn(async move {
                tokio::task::yield_now().await;
                killer.kill();
            });
            tokio::time::timeout(std::time::Duration::from_secs(5), &mut killed)
                .await
                .expect("a kill while the future waits ends it");

            // Killed before the future is first polled.
            let outbox: Outbox<u32> = Outbox::new();
            let killed = outbox.killed();
            outbox.kill();
            tokio::time::timeout(std::time::Duration::from_secs(5), killed)
                .await
                .expect("a kill before the first poll ends it");
        });
    }
}
