//! What a worker hands out as artifacts: an observation's frames and inspection artifacts, and a
//! checkpoint's payload, sealed as bus artifacts (or kept in memory for the local lane), with
//! frame artifacts allocated ahead of the next step off the critical path.
//!
//! It knows artifacts, digests of small views and spares; it does not know what a frame shows.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use flysim_bus::{Artifact, BusError};
use flysim_types::digest::sha256;
use flysim_types::workers::{DomainError, DomainErrorCode, Mutation, ViewRef, WorldObservation};
use flysim_types::{Id, U64};

use super::dispatch::Worker;
use super::environment::Observed;
use super::errors::fail;
use super::{FRAME_CONTENT_TYPE, INLINE_DIGEST_BYTES, lock};

/// Frame artifacts an environment allocates ahead of the next step.
const MAX_SPARES: usize = 8;

impl Worker {
    /// Seals frames as artifacts and builds the observation that names them.
    pub(super) async fn publish(
        &self,
        observed: Observed,
        artifacts: &mut Vec<(Id, Artifact)>,
        local: bool,
    ) -> Result<WorldObservation, DomainError> {
        let lengths: Vec<u64> = observed
            .frames
            .iter()
            .map(|f| f.bytes.len() as u64)
            .collect();
        let mut sensory_views = Vec::with_capacity(observed.frames.len());
        // Large live frames are sealed without a digest (optional for them, contracts §3.8):
        // hashing one costs a large share of a Game Boy frame, and the router would hash it
        // again to check it, so the coordinator hashes it for the trace itself, off the critical
        // path. A view of at most `INLINE_DIGEST_BYTES` is hashed here, which costs less than
        // that hand-off (the coordinator opening the artifact and waking its digest thread).
        // Nothing reads the digest of bulk inspection (a memory image).
        let frames = observed
            .frames
            .into_iter()
            .map(|f| (f.view_id, f.bytes, true));
        let extra = observed.extra.into_iter().map(|a| (a.name, a.bytes, false));
        for (view_id, bytes, is_view) in frames.chain(extra) {
            let digested = is_view && bytes.len() <= INLINE_DIGEST_BYTES;
            let artifact = self.seal(&view_id, bytes, digested, local).await?;
            if is_view && observed.view_ids.contains(&view_id) {
                sensory_views.push(ViewRef {
                    view_id: view_id.clone(),
                    produced_step: U64(observed.boundary),
                    pixels: artifact.reference().clone(),
                });
            }
            artifacts.push((view_id, artifact));
        }
        if !local {
            self.refill(lengths);
        }
        Ok(WorldObservation {
            boundary: U64(observed.boundary),
            world_time: observed.world_time,
            engine_frame: observed.engine_frame,
            sensory_views,
            inspection: observed.inspection,
            broadcast_views: Vec::new(),
            audio: Vec::new(),
        })
    }

    /// Allocates one artifact per frame of `lengths` in the background, so the next step's
    /// frames are written without an allocation round trip. Best effort: a failed allocation
    /// only means the next seal allocates itself.
    fn refill(&self, lengths: Vec<u64>) {
        // Spares come in batches: when fewer than two steps' worth remain, up to `MAX_SPARES`
        // are allocated at once, their commands in one write, rather than one round trip per
        // frame and step.
        let missing: Vec<u64> = {
            let spares = lock(&self.spares);
            let pending = self.spares_pending.load(Ordering::SeqCst);
            if spares.len() + pending >= 2 * lengths.len() {
                return;
            }
            lengths
                .iter()
                .copied()
                .cycle()
                .take(MAX_SPARES.saturating_sub(spares.len() + pending))
                .collect()
        };
        self.spares_pending
            .fetch_add(missing.len(), Ordering::SeqCst);
        for len in missing {
            let client = self.client.clone();
            let spares = Arc::clone(&self.spares);
            let pending = Arc::clone(&self.spares_pending);
            tokio::spawn(async move {
                if let Ok(writer) = client.allocate(len, FRAME_CONTENT_TYPE).await {
                    lock(&spares).push((len, writer));
                }
                pending.fetch_sub(1, Ordering::SeqCst);
            });
        }
    }

    /// Makes `frame` an immutable artifact, sealed with its SHA-256 when `digested`: a sealed
    /// bus artifact, or for a request of the local lane an in-memory one (contracts §3.11: no
    /// store file, no seal copy; the bytes move in without a copy).
    pub(super) async fn seal(
        &self,
        view_id: &Id,
        bytes: Arc<Vec<u8>>,
        digested: bool,
        local: bool,
    ) -> Result<Artifact, DomainError> {
        let backend = |e: BusError| {
            fail(
                DomainErrorCode::BackendFailure,
                Mutation::Applied,
                format!("frame `{view_id}` could not be stored: {e}"),
            )
        };
        let digest = digested.then(|| sha256(&bytes));
        if local {
            return self
                .client
                .local_artifact(bytes, FRAME_CONTENT_TYPE, digest)
                .map_err(backend);
        }
        let len = bytes.len() as u64;
        let spare = {
            let mut spares = lock(&self.spares);
            let at = spares.iter().position(|(l, _)| *l == len);
            at.map(|i| spares.swap_remove(i).1)
        };
        let mut writer = match spare {
            Some(writer) => writer,
            None => self
                .client
                .allocate(len, FRAME_CONTENT_TYPE)
                .await
                .map_err(backend)?,
        };
        writer.write(&bytes).map_err(backend)?;
        // Sealed in the same write as the reply that attaches it (the router handles this
        // connection's commands in order); the endpoint confirms the seal after replying.
        writer.seal_queued(digest).map_err(backend)
    }
}
