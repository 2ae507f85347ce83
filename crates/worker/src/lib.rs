//! The worker side of a session: the dispatch shell every worker runs, the traits an agent model
//! and an environment backend implement, and the two built-in implementations.
//!
//! - [`shell`]: [`WorkerShell`] registers the worker's bus service and answers every method of
//!   workers-v1 through `flysim-rpc`'s deduplicating endpoint: `Worker.Hello` (identity, role,
//!   capabilities, limits with `workerThreads`), `Worker.Status` (answered while a mutation runs;
//!   `progressCounter` moves only on work), `Worker.Acknowledge`, `Worker.Shutdown`, the agent and
//!   environment methods (one mutation at a time, at most one pending) and the `State.*` methods
//!   (forwarded to the model or backend, `UNSUPPORTED` by default).
//! - [`model`]: [`AgentModel`], what a brain implements (`prepare(ticks, stimuli, context)`,
//!   `commit(input, stimuli, rewards)`, `capture`/`restore`); the shell owns the rational clock,
//!   the decision context, artifacts and every contract check.
//! - [`backend`]: [`EnvironmentBackend`], what a world implements (descriptor, `initialize`
//!   stopped at boundary 0, `advance` exactly one step with the complete batch, native frames and
//!   inspection, state hooks); the shell owns boundaries, world time, batch ids and artifacts.
//! - [`synthetic`]: the synthetic agent (seeded lanes, a mutation counter, a fixed readout
//!   masked by the context's available actions; blind to its frames, moved by its rewards).
//! - [`arena`]: the counter arena (a signed counter per port; one frame per observation whose
//!   pixels carry the counters).
//! - [`identity`], [`schemas`]: the build identity, capabilities, service names and the payload
//!   schema references of the built-in decisions, contexts and inspections.
//!
//! **Invariant:** the shell knows the worker contract (phases, scopes, dedup, artifacts), never
//! what a model or backend computes; models and backends are synchronous, know nothing of the
//! bus and never see an artifact handle. Frames travel only as bus artifacts, never inside a
//! message. Nothing here reads a clock, the environment or a process id into a result.

pub mod arena;
pub mod backend;
pub mod faults;
pub mod identity;
pub mod model;
pub mod schemas;
pub mod shell;
pub mod state;
pub mod synthetic;

pub use backend::{
    BackendError, EnvironmentBackend, EnvironmentSetup, Frame, InspectionArtifact, Refusal,
};
pub use faults::WorkerFaults;
pub use model::{
    AgentFactory, AgentModel, ModelError, ModelSetup, SensedInput, SensedView, Sensing,
};
pub use shell::{Compute, LocalLane, WorkerConfig, WorkerError, WorkerShell};
