//! View digests computed off the step's critical path.
//!
//! The behaviour row records the SHA-256 of every sensory view. Over the bus the environment
//! seals its frames with their digest; on the local lane it does not (the digest is optional for
//! live frames, contracts §7), because hashing a frame costs about 40% of a Game Boy frame and
//! nothing on the critical path needs it. The coordinator hands those in-memory frames to one
//! background thread here and collects the digests when it records the row, which in
//! [`Coordinator::run`](crate::Coordinator::run) is during the next step, while the world
//! computes.
//!
//! The digest is the same SHA-256 of the same bytes wherever it is computed: where and when is
//! scheduling, never behaviour.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering, fence};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

use flysim_bus::Artifact;
use flysim_types::Digest;
use flysim_types::digest::sha256;

/// How long the idle digest thread sleeps between looks at its queue.
const POLL: Duration = Duration::from_micros(20);
/// Empty looks before it parks (about a few milliseconds of idleness).
const IDLE_POLLS: u32 = 64;

/// One frame to hash and where its digest goes.
struct Job {
    artifact: Artifact,
    reply: mpsc::SyncSender<Digest>,
}

/// What the coordinator and the digest thread share. The thread polls the queue while jobs keep
/// coming and parks only after a quiet spell: a submit then costs a lock and a push, not a
/// wake-up (a futex call and an interrupt of the other core, on every step).
#[derive(Default)]
struct Shared {
    queue: Mutex<VecDeque<Job>>,
    parked: AtomicBool,
    closed: AtomicBool,
}

impl Shared {
    fn pop(&self) -> Option<Job> {
        self.queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop_front()
    }

    fn serve(&self) {
        let mut idle = 0;
        loop {
            if let Some(job) = self.pop() {
                idle = 0;
                if let Some(bytes) = job.artifact.local_bytes() {
                    // The receiver may be gone (the row was abandoned): nothing to do.
                    let _ = job.reply.send(sha256(bytes));
                }
                continue;
            }
            if self.closed.load(Ordering::SeqCst) {
                return;
            }
            if idle < IDLE_POLLS {
                idle += 1;
                std::thread::sleep(POLL);
                continue;
            }
            self.parked.store(true, Ordering::SeqCst);
            // Pairs with the fence in `submit`: either it sees `parked` and unparks, or this
            // look sees its job.
            fence(Ordering::SeqCst);
            let empty = self
                .queue
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .is_empty();
            if empty && !self.closed.load(Ordering::SeqCst) {
                std::thread::park();
            }
            self.parked.store(false, Ordering::SeqCst);
            idle = 0;
        }
    }
}

/// The thread that hashes in-memory frames, started on first use and ended on drop.
#[derive(Default)]
pub(crate) struct FrameDigester {
    worker: Option<(Arc<Shared>, JoinHandle<()>)>,
}

/// A digest being computed: [`PendingDigest::wait`] returns it.
pub(crate) enum PendingDigest {
    /// Computed on the digest thread.
    Queued(mpsc::Receiver<Digest>),
    /// Computed already (the thread could not be started).
    Done(Digest),
}

impl PendingDigest {
    /// The digest, waiting for the thread if it is not done yet.
    pub(crate) fn wait(self) -> Option<Digest> {
        match self {
            Self::Queued(rx) => rx.recv().ok(),
            Self::Done(d) => Some(d),
        }
    }
}

impl FrameDigester {
    /// Queues the SHA-256 of an in-memory artifact's bytes; `None` for a bus artifact, whose
    /// digest only its seal can give.
    pub(crate) fn submit(&mut self, artifact: &Artifact) -> Option<PendingDigest> {
        let bytes = artifact.local_bytes()?;
        if self.worker.is_none() {
            let shared = Arc::new(Shared::default());
            let serving = Arc::clone(&shared);
            let spawned = std::thread::Builder::new()
                .name("flysim-digest".into())
                .spawn(move || serving.serve());
            match spawned {
                Ok(handle) => self.worker = Some((shared, handle)),
                Err(_) => return Some(PendingDigest::Done(sha256(bytes))),
            }
        }
        let (shared, handle) = self.worker.as_ref()?;
        let (reply, rx) = mpsc::sync_channel(1);
        shared
            .queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push_back(Job {
                artifact: artifact.clone(),
                reply,
            });
        fence(Ordering::SeqCst);
        if shared.parked.load(Ordering::SeqCst) {
            handle.thread().unpark();
        }
        Some(PendingDigest::Queued(rx))
    }
}

impl Drop for FrameDigester {
    fn drop(&mut self) {
        if let Some((shared, handle)) = self.worker.take() {
            shared.closed.store(true, Ordering::SeqCst);
            handle.thread().unpark();
            let _ = handle.join();
        }
    }
}
