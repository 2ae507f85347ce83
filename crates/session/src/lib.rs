//! Sessions: the coordinator that drives one world and its agents in strict lockstep (calling
//! the task and executors of the component API in-process), and the launcher that starts every worker of a
//! plan in one of three execution modes.
//!
//! - [`phase`]: the phase machine as an explicit edge table; any other edge is `INVALID_PHASE`.
//! - [`coordinator`]: Hello and identity checks, bootstrap (warm-up advances nothing), the step
//!   transaction in its exact order, the rational clock (in each agent), pause, terminal
//!   episodes, the failure rules, deadlines, and the behaviour row of each committed boundary.
//! - [`registry`]: the models, backends, tasks and executors a build can run.
//! - [`launcher`]: in-process, thread and process modes over the memory or Unix transport, the
//!   thread budget, reaping, and the body of the `flysim worker` subcommand.
//! - [`run`]: one run of a plan, start to end.
//! - `digests`: the thread that hashes the local lane's frames for the trace, off the critical
//!   path; `hashed_frames`: the pictures it hashed, so that each is hashed once.
//! - [`publication`]: the publisher that puts the descriptor, the committed snapshots and the
//!   session's events on the bus for watchers (contracts §10), never in a step's way.
//! - [`tap`]: the frame tap, which sees the committed frames of a range of boundaries.
//! - [`spin`]: busy polling while a reply is due, so a reply need not wake a sleeping CPU.
//!
//! **Invariant:** the session orders and commits; it never computes a brain or a world, knows
//! no backend type (backends come through the [`registry::Registry`]), and nothing it records
//! as behaviour depends on the epoch, the transport, the mode, the dispatch order, the thread
//! count, a wall clock, a path or a process id. It prints nothing and reads no environment.

pub mod coordinator;
mod digests;
pub mod error;
mod hashed_frames;
pub mod launcher;
pub mod phase;
pub mod publication;
pub mod registry;
pub mod run;
pub mod spin;
pub mod tap;

pub use coordinator::{Coordinator, Deadlines, PauseHandle, Stop};
pub use error::SessionError;
pub use launcher::{ExitWatch, Launch, LaunchOptions, WorkerProgram};
pub use phase::{Phase, PhaseMachine};
pub use registry::Registry;
pub use run::{
    Pace, ResumeFrom, RunFailure, RunHooks, RunOptions, RunOutcome, RunSink, run_plan,
    run_plan_into,
};
pub use tap::{FrameTap, TappedFrame};
