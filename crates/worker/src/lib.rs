//! The worker side of a session: the dispatch shell every worker runs around one brain or one
//! world, over session RPC.
//!
//! - [`shell`]: [`WorkerShell`] registers the worker's bus service and answers every method of
//!   workers-v1 through `flysim-rpc`'s deduplicating endpoint: `Worker.Hello` (identity, role,
//!   capabilities, limits with `workerThreads`), `Worker.Status` (answered while a mutation runs;
//!   `progressCounter` moves only on work), `Worker.Acknowledge`, `Worker.Shutdown`, the agent and
//!   environment methods (one mutation at a time, at most one pending) and the `State.*` methods
//!   (forwarded to the model or backend, `UNSUPPORTED` by default).
//! - [`state`]: the bytes of a worker's capture (the shell's header around the component's body).
//! - [`identity`]: the build identity, capabilities and service names.
//! - [`faults`]: injected faults for the failure tests.
//!
//! What a brain or a world implements (`AgentModel`, `EnvironmentBackend`) is the component API
//! (`flysim-component`); the built-in arena and synthetic agent live in `flysim-arena`.
//!
//! **Invariant:** the shell knows the worker contract (phases, scopes, dedup, artifacts), never
//! what a model or backend computes; models and backends are synchronous, know nothing of the
//! bus and never see an artifact handle. Frames travel only as bus artifacts, never inside a
//! message. Nothing here reads a clock, the environment or a process id into a result.

pub mod faults;
pub mod identity;
pub mod shell;
pub mod state;

pub use faults::WorkerFaults;
pub use shell::{Compute, LocalLane, WorkerConfig, WorkerError, WorkerShell};
