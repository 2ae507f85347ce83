//! View digests computed off the step's critical path.
//!
//! The behaviour row records the SHA-256 of every sensory view. Workers seal large live frames
//! without one (the digest is optional for live frames, contracts §7; a view of at most
//! `flysim_worker::shell::INLINE_DIGEST_BYTES` comes with its digest and never reaches here):
//! hashing a Game Boy frame costs about 40% of emulating it, the router would hash it again to
//! check it, and nothing on the critical path needs it. The coordinator hands each frame without
//! a digest to one background thread here (the
//! bytes of a local-lane frame at once; a bus artifact once a task beside the step has opened
//! its file) and awaits the digests when it records the row, which in
//! [`Coordinator::run`](crate::Coordinator::run) is during the next step, while the world
//! computes. The thread hashes each distinct picture once, as long as it remembers it: a frame
//! equal byte for byte to a picture it hashed takes that one's digest
//! ([`HashedFrames`](crate::hashed_frames::HashedFrames)).
//!
//! Where the thread polls (in-process mode, [`JobQueue`]) the coordinator also queues the rest of
//! a row's finishing behind its frames ([`FrameDigester::then`]): the digests filled in, the row
//! validated and its canonical text written, so recording it costs the step only the run
//! digest's update.
//!
//! The digest is the same SHA-256 of the same bytes wherever it is computed: where and when is
//! scheduling, never behaviour. This module knows nothing of rows or of the run digest: it
//! hashes bytes and runs what it is handed, in the order it was queued.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering, fence};
use std::sync::{Arc, Mutex};
use std::thread::{JoinHandle, Thread};
use std::time::Duration;

use flysim_bus::Artifact;
use flysim_types::Digest;
use tokio::sync::oneshot;

use crate::hashed_frames::HashedFrames;

/// How long a polling digest thread sleeps between looks at its queue. Every look is a timer
/// wake-up and two context switches on that core, whatever it finds; on a machine whose cores
/// are all busy (a sweep) each also preempts another process. A look every millisecond finds
/// the jobs of about three Game Boy steps (a frame takes about 200 µs of CPU here); the rows
/// they finish wait for it, not the steps (the coordinator holds up to `MAX_HELD` rows, in
/// `coordinator::handoff`).
///
/// Measured on `gameboy.kdl` with the synthetic agent, 3,600 steps in-process: 200 µs against
/// the earlier 20 µs took 0.88× the process's CPU (11 interleaved rounds). 1 ms against 200 µs:
/// 0.35× the context switches (about 1,100 against 3,100 a run); with two runs at once on the
/// two cores, 0.87× the CPU (median of 6 paired rounds, 0.72–1.10); alone while the host was
/// busy, 0.93× (10 rounds, 0.80–1.03); alone on a quiet machine, no difference beyond the noise.
const POLL: Duration = Duration::from_micros(1000);
/// Empty looks before a polling digest thread parks (a few milliseconds of idleness).
const IDLE_POLLS: u32 = 4;

/// Where a frame's bytes are.
enum FrameBytes {
    /// An in-memory artifact of the local lane.
    Local(Artifact),
    /// A sealed bus artifact, opened for reading.
    File(std::fs::File),
}

/// One frame to hash and where its digest goes (nothing, if it cannot be read).
struct FrameJob {
    frame: FrameBytes,
    reply: oneshot::Sender<Option<Digest>>,
}

/// What the thread does, in the order queued.
enum Job {
    /// Hash a frame.
    Frame(FrameJob),
    /// Anything else that belongs beside the step, after the jobs queued before it.
    Then(Box<dyn FnOnce() + Send>),
}

impl Job {
    fn run(self, hashed: &mut HashedFrames) {
        match self {
            Self::Frame(job) => job.run(hashed),
            Self::Then(f) => f(),
        }
    }
}

impl FrameJob {
    fn run(self, hashed: &mut HashedFrames) {
        let digest = match self.frame {
            FrameBytes::Local(artifact) => artifact.local_shared().map(|b| hashed.digest(b)),
            FrameBytes::File(mut file) => {
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(&mut file, &mut bytes)
                    .ok()
                    .map(|_| hashed.digest(&Arc::new(bytes)))
            }
        };
        // The receiver may be gone (the row was abandoned): nothing to do.
        let _ = self.reply.send(digest);
    }
}

/// The digest thread's queue of jobs and whether it is parked or closed: what the coordinator
/// and that thread share.
///
/// A polling thread looks at the queue every [`POLL`] while jobs keep coming and parks only
/// after a quiet spell, so a submit costs a lock and a push instead of a wake-up (a futex call
/// and an interrupt of the other core, on every step). That pays only when the other core is
/// otherwise idle (in-process mode: world, agents and coordinator share one thread); in thread
/// and process mode the looks would take the core from a worker, and the thread parks after
/// every job instead (measured: in-process 5% faster polling, thread and process 8-15% slower).
#[derive(Default)]
struct JobQueue {
    queue: Mutex<VecDeque<Job>>,
    parked: AtomicBool,
    closed: AtomicBool,
    idle_polls: u32,
}

impl JobQueue {
    fn pop(&self) -> Option<Job> {
        self.queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop_front()
    }

    fn serve(&self) {
        warm_allocator();
        let mut hashed = HashedFrames::default();
        let mut idle = 0;
        loop {
            if let Some(job) = self.pop() {
                idle = 0;
                job.run(&mut hashed);
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
            // Pairs with the fence in `JobSender::push`: either it sees `parked` and unparks, or
            // this look sees its job.
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

/// Makes this thread's first allocations now, before any job: the allocator maps fresh memory
/// for a new thread, and where the kernel backs it with a huge page the first touch zeroes 2 MiB
/// (measured: 4-6 ms on a nested virtual machine). Done at start, that cost is the session's
/// start-up, not a stall of the first rows finished here.
fn warm_allocator() {
    let small: Vec<String> = (0..64).map(|i| i.to_string()).collect();
    let large = vec![1u8; 64 * 1024];
    std::hint::black_box((&small, &large));
}

/// A handle that queues jobs for the digest thread (or runs them in place without one).
#[derive(Clone)]
struct JobSender(Option<(Arc<JobQueue>, Thread)>);

impl JobSender {
    fn push(&self, job: Job) {
        let Some((jobs, thread)) = &self.0 else {
            // No thread (it could not be started): nothing is kept for the next frame.
            job.run(&mut HashedFrames::default());
            return;
        };
        jobs.queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push_back(job);
        fence(Ordering::SeqCst);
        if jobs.parked.load(Ordering::SeqCst) {
            thread.unpark();
        }
    }
}

/// The thread that hashes frames, started on first use and ended on drop.
#[derive(Default)]
pub(crate) struct FrameDigester {
    worker: Option<(Arc<JobQueue>, JoinHandle<()>)>,
    poll: bool,
}

/// A digest being computed: [`PendingDigest::wait`] returns it.
pub(crate) struct PendingDigest {
    rx: oneshot::Receiver<Option<Digest>>,
    /// Whether its job was queued when it was submitted (an in-memory frame), so that a job
    /// queued after it ([`FrameDigester::then`]) finds it done.
    queued: bool,
}

impl PendingDigest {
    /// The digest, once computed; `None` when the frame could not be read or the thread is gone.
    /// Waited for once: whoever waits keeps what it returns.
    pub(crate) async fn wait(&mut self) -> Option<Digest> {
        (&mut self.rx).await.ok().flatten()
    }

    /// Whether its job is already queued.
    pub(crate) fn queued(&self) -> bool {
        self.queued
    }

    /// The digest, from a job queued after this one's ([`FrameDigester::then`]); `None` if it
    /// is not in (the frame could not be read).
    pub(crate) fn take(mut self) -> Option<Digest> {
        self.rx.try_recv().ok().flatten()
    }

    /// A digest whose frame was never hashed: its job was dropped unanswered.
    #[cfg(test)]
    pub(crate) fn abandoned() -> Self {
        let (_, rx) = oneshot::channel();
        Self { rx, queued: true }
    }
}

impl FrameDigester {
    /// Whether the thread polls its queue while busy ([`JobQueue`]); decided before first use.
    pub(crate) fn set_polling(&mut self, poll: bool) {
        self.poll = poll;
    }

    /// Queues the SHA-256 of a view's bytes: an in-memory artifact's at once; a bus artifact's
    /// after a task on the current runtime has opened it (a command to the router, which must
    /// not hold up the step either). Only [`PendingDigest::wait`] waits.
    pub(crate) fn submit(&mut self, artifact: &Artifact) -> PendingDigest {
        let queue = self.queue();
        let (reply, rx) = oneshot::channel();
        let queued = artifact.is_local();
        if queued {
            queue.push(Job::Frame(FrameJob {
                frame: FrameBytes::Local(artifact.clone()),
                reply,
            }));
        } else {
            let artifact = artifact.clone();
            tokio::spawn(async move {
                match artifact.open().await {
                    Ok(file) => queue.push(Job::Frame(FrameJob {
                        frame: FrameBytes::File(file),
                        reply,
                    })),
                    Err(_) => {
                        let _ = reply.send(None);
                    }
                }
            });
        }
        PendingDigest { rx, queued }
    }

    /// Whether the thread polls its queue (it is otherwise idle, [`JobQueue`]): work moved to
    /// it then costs the step a push, never a wake-up.
    pub(crate) fn polling(&self) -> bool {
        self.poll
    }

    /// Runs `f` on the thread after every job queued so far (in place if there is no thread).
    pub(crate) fn then(&mut self, f: impl FnOnce() + Send + 'static) {
        self.queue().push(Job::Then(Box::new(f)));
    }

    /// The queue of the digest thread, starting it on first use.
    fn queue(&mut self) -> JobSender {
        if self.worker.is_none() {
            let shared = Arc::new(JobQueue {
                idle_polls: if self.poll { IDLE_POLLS } else { 0 },
                ..JobQueue::default()
            });
            let serving = Arc::clone(&shared);
            let spawned = std::thread::Builder::new()
                .name("flysim-digest".into())
                .spawn(move || serving.serve());
            if let Ok(handle) = spawned {
                self.worker = Some((shared, handle));
            }
        }
        JobSender(
            self.worker
                .as_ref()
                .map(|(shared, handle)| (Arc::clone(shared), handle.thread().clone())),
        )
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
