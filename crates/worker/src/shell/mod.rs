//! The dispatch shell: one bus service per worker, every method of workers-v1 behind
//! `flysim-rpc`'s deduplicating endpoint.
//!
//! Each request runs on its own task, so `Worker.Status` is answered while a mutation runs.
//! Mutations (`Agent.*`, `Environment.*`, `State.*`) pass one gate: one executes at a time, at
//! most one waits, a third is refused `BUSY` before anything happens. The endpoint checks
//! identity (operation key, request id, body) before the shell looks at phases, so a retried
//! request is answered from the cache and never runs twice.
//!
//! Phases, per worker (any other method in a phase is `INVALID_PHASE`):
//!
//! ```text
//! agent:       Uninitialized -Initialize-> Ready(0) -Prepare-> Prepared(k) -Commit-> Ready(k+1)
//! environment: Uninitialized -Initialize-> Ready(0) -Advance-> Ready(k+1)
//! any failure after a mutation began: Failed (answers Status only)
//! ```
//!
//! Scopes: the session is bound by the first Hello; a request of another epoch is
//! `STALE_EPOCH`; a step behind the worker is `STALE_STEP`, ahead `FUTURE_STEP`.
//!
//! The shell by concern (none of them knows what a model or backend computes):
//!
//! - `serve`: [`WorkerShell`], built for an agent or an environment, registers the bus service
//!   and hands each request to a task of its own.
//! - `dispatch`: the serving worker, its method table, the mutation gate and status bookkeeping
//!   around every mutation, and where the model or backend computes ([`Compute`]).
//! - `hello`: `Worker.Hello`, `Worker.Status` and the session and epoch a scope is checked
//!   against.
//! - `machine`: the state a mutation changes (phase, epoch, the agent's or environment's own
//!   state, a staged restore) and the step check of a phase; `batches`, the batch ids an
//!   environment applied in its epoch.
//! - `agent`, `environment`: the `Agent.*` and `Environment.*` methods.
//! - `artifacts`: frames and checkpoint payloads sealed as artifacts, spares allocated ahead.
//! - `state_hooks`: `State.Capture`, `State.StageRestore`, `State.ActivateRestore`.
//! - `local_lane`: [`LocalLane`], the in-process lane to the same endpoint.
//! - `params`, `errors`: decoding a method's params, and model, backend and contract failures
//!   as domain errors.
//! - `duplicates`: the broken shell of the determinism mutant suite (a test-only fault), which
//!   forwards a duplicate Prepare to the model.

use std::sync::{Mutex, MutexGuard};

use flysim_bus::BusError;
use flysim_types::digest::sha256;
use flysim_types::plan::PlanProfile;
use flysim_types::workers::WorkerRole;
use flysim_types::{Digest, Id};
use miette::Diagnostic;
use thiserror::Error;

use crate::faults::WorkerFaults;

mod agent;
mod artifacts;
mod batches;
mod dispatch;
mod duplicates;
mod environment;
mod errors;
mod hello;
mod local_lane;
mod machine;
mod params;
mod serve;
mod state_hooks;

pub use local_lane::LocalLane;
pub use serve::WorkerShell;

/// The content type of RGBA8 frame artifacts.
pub const FRAME_CONTENT_TYPE: &str = "image/x-rgba8";

/// Views of at most this many bytes are sealed with their digest (see `Worker::publish`): 4 KiB
/// hash in about 2 µs, less than handing the view to the coordinator's digest thread.
pub const INLINE_DIGEST_BYTES: usize = 4096;

/// What the shell can fail with outside a domain reply.
#[derive(Debug, Error, Diagnostic)]
#[non_exhaustive]
pub enum WorkerError {
    /// The bus refused the service registration or lost the connection.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Bus(#[from] BusError),
}

/// Where a worker's model or backend computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compute {
    /// On the task that serves the request (in-process mode: the coordinator's thread).
    Inline,
    /// On the runtime's blocking pool, so the worker's runtime keeps answering Status (inline
    /// all the same for a quick model or backend, [`crate::AgentModel::quick`]).
    Blocking,
}

/// Who a worker is and how it runs.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// The worker (an agent id or the environment id of the plan).
    pub worker_id: Id,
    /// Its role.
    pub role: WorkerRole,
    /// Its incarnation number; the incarnation id is `inc-<n>`, and a restart takes the next.
    pub incarnation: u64,
    /// The thread allocation it was started within (reported in Hello).
    pub worker_threads: u32,
    /// Where it computes.
    pub compute: Compute,
    /// Injected faults (tests only).
    pub faults: WorkerFaults,
}

/// The `AssetRef` digest of a profile: SHA-256 of its canonical JSON.
#[must_use]
pub fn profile_digest(profile: &PlanProfile) -> Digest {
    let text = flysim_types::payload::to_canonical(profile).unwrap_or_default();
    sha256(text.as_bytes())
}

/// Locks `m`, also after a holder panicked: the value is taken as that holder left it.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
