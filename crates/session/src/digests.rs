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

use std::sync::mpsc;
use std::thread::JoinHandle;

use flysim_bus::Artifact;
use flysim_types::Digest;
use flysim_types::digest::sha256;

/// One frame to hash and where its digest goes.
struct Job {
    artifact: Artifact,
    reply: mpsc::SyncSender<Digest>,
}

/// The thread that hashes in-memory frames, started on first use and ended on drop.
#[derive(Default)]
pub(crate) struct FrameDigester {
    worker: Option<(mpsc::Sender<Job>, JoinHandle<()>)>,
}

/// A digest being computed: [`PendingDigest::wait`] returns it.
pub(crate) enum PendingDigest {
    /// Computed on the digest thread.
    Queued(mpsc::Receiver<Digest>),
    /// Computed already (the thread could not be started or had stopped).
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
            let (tx, rx) = mpsc::channel::<Job>();
            let spawned = std::thread::Builder::new()
                .name("flysim-digest".into())
                .spawn(move || {
                    for job in rx {
                        if let Some(bytes) = job.artifact.local_bytes() {
                            // The receiver may be gone (the row was abandoned): nothing to do.
                            let _ = job.reply.send(sha256(bytes));
                        }
                    }
                });
            match spawned {
                Ok(handle) => self.worker = Some((tx, handle)),
                Err(_) => return Some(PendingDigest::Done(sha256(bytes))),
            }
        }
        let (reply, rx) = mpsc::sync_channel(1);
        let job = Job {
            artifact: artifact.clone(),
            reply,
        };
        let sent = self
            .worker
            .as_ref()
            .is_some_and(|(tx, _)| tx.send(job).is_ok());
        Some(if sent {
            PendingDigest::Queued(rx)
        } else {
            PendingDigest::Done(sha256(bytes))
        })
    }
}

impl Drop for FrameDigester {
    fn drop(&mut self) {
        if let Some((tx, handle)) = self.worker.take() {
            drop(tx);
            let _ = handle.join();
        }
    }
}
