//! View digests computed off the step's critical path.
//!
//! The behaviour row records the SHA-256 of every sensory view. Workers seal live frames without
//! one (the digest is optional for live frames, contracts §7): hashing a Game Boy frame costs
//! about 40% of emulating it, the router would hash it again to check it, and nothing on the
//! critical path needs it. The coordinator hands each frame (its bytes on the local lane, its
//! opened file over the bus) to one background thread here and collects the digests when it
//! records the row, which in [`Coordinator::run`](crate::Coordinator::run) is during the next
//! step, while the world computes.
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

/// How long a polling digest thread sleeps between looks at its queue.
const POLL: Duration = Duration::from_micros(20);
/// Empty looks before a polling digest thread parks (a few milliseconds of idleness).
const IDLE_POLLS: u32 = 64;

/// Where a frame's bytes are.
pub(crate) enum FrameBytes {
    /// An in-memory artifact of the local lane.
    Local(Artifact),
    /// A sealed bus artifact, opened for reading.
    File(std::fs::File),
}

/// One frame to hash and where its digest goes (nothing, if it cannot be read).
struct Job {
    frame: FrameBytes,
    reply: mpsc::SyncSender<Option<Digest>>,
}

impl Job {
    fn digest(self) -> Option<Digest> {
        match self.frame {
            FrameBytes::Local(artifact) => artifact.local_bytes().map(sha256),
            FrameBytes::File(mut file) => {
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(&mut file, &mut bytes).ok()?;
                Some(sha256(&bytes))
            }
        }
    }
}

/// What the coordinator and the digest thread share.
///
/// A polling thread looks at the queue every [`POLL`] while jobs keep coming and parks only
/// after a quiet spell, so a submit costs a lock and a push instead of a wake-up (a futex call
/// and an interrupt of the other core, on every step). That pays only when the other core is
/// otherwise idle (in-process mode: world, agents and coordinator share one thread); in thread
/// and process mode the looks would take the core from a worker, and the thread parks after
/// every job instead (measured: in-process 5% faster polling, thread and process 8-15% slower).
#[derive(Default)]
struct Shared {
    queue: Mutex<VecDeque<Job>>,
    parked: AtomicBool,
    closed: AtomicBool,
    idle_polls: u32,
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
                let reply = job.reply.clone();
                // The receiver may be gone (the row was abandoned): nothing to do.
                let _ = reply.send(job.digest());
                continue;
            }
            if self.closed.load(Ordering::SeqCst) {
                return;
            }
            if idle < self.idle_polls {
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

/// The thread that hashes frames, started on first use and ended on drop.
#[derive(Default)]
pub(crate) struct FrameDigester {
    worker: Option<(Arc<Shared>, JoinHandle<()>)>,
    poll: bool,
}

/// A digest being computed: [`PendingDigest::wait`] returns it.
pub(crate) enum PendingDigest {
    /// Computed on the digest thread.
    Queued(mpsc::Receiver<Option<Digest>>),
    /// Computed already (the thread could not be started).
    Done(Option<Digest>),
}

impl PendingDigest {
    /// The digest, waiting for the thread if it is not done yet; `None` when the frame could
    /// not be read or the thread is gone.
    pub(crate) fn wait(self) -> Option<Digest> {
        match self {
            Self::Queued(rx) => rx.recv().ok().flatten(),
            Self::Done(d) => d,
        }
    }
}

impl FrameDigester {
    /// Whether the thread polls its queue while busy ([`Shared`]); decided before first use.
    pub(crate) fn set_polling(&mut self, poll: bool) {
        self.poll = poll;
    }

    /// Queues the SHA-256 of a frame's bytes.
    pub(crate) fn submit(&mut self, frame: FrameBytes) -> PendingDigest {
        if self.worker.is_none() {
            let shared = Arc::new(Shared {
                idle_polls: if self.poll { IDLE_POLLS } else { 0 },
                ..Shared::default()
            });
            let serving = Arc::clone(&shared);
            let spawned = std::thread::Builder::new()
                .name("flysim-digest".into())
                .spawn(move || serving.serve());
            if let Ok(handle) = spawned {
                self.worker = Some((shared, handle));
            }
        }
        let (reply, rx) = mpsc::sync_channel(1);
        let job = Job { frame, reply };
        let Some((shared, handle)) = self.worker.as_ref() else {
            return PendingDigest::Done(job.digest());
        };
        shared
            .queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push_back(job);
        fence(Ordering::SeqCst);
        if shared.parked.load(Ordering::SeqCst) {
            handle.thread().unpark();
        }
        PendingDigest::Queued(rx)
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
