//! The component API: what a brain, a world, a task and an executor implement, and nothing
//! else. Backends and brains depend on this crate and on `flysim-types` only; the worker shell
//! and the coordinator call them through these traits.
//!
//! - [`model`]: [`AgentModel`], what a brain implements (`prepare(ticks, stimuli, context)`,
//!   `commit(input, stimuli, rewards)`, `capture`/`restore`); the shell owns the rational clock,
//!   the decision context, artifacts and every contract check.
//! - [`backend`]: [`EnvironmentBackend`], what a world implements (descriptor, `initialize`
//!   stopped at boundary 0, `advance` exactly one step with the complete batch, native frames and
//!   inspection, state hooks); the shell owns boundaries, world time, batch ids and artifacts.
//! - [`task`]: [`Task`] (bootstrap contexts, evaluate each transition once),
//!   [`ActionExecutor`] and [`ControllerIntent`] (a decision becomes one port's controls), the
//!   identity executor `direct-v1` and derived event ids.
//! - [`no_reward`]: the task of a composition that declares none (`none-v1`): nothing scored.
//! - [`memory`] and [`memory_task`]: a world's memory as tasks read it ([`MemoryView`]), and the
//!   declared memory task (`memory-v1`: variables at addresses, rewards, end conditions), which
//!   goes with any backend that publishes its memory.
//! - [`schemas`]: how a payload schema reference is named and digested, and the references every
//!   brain and task shares (action contexts and decisions, episode outcomes).
//!
//! **Invariant:** nothing here knows a transport, a session, a process or a clock: there is no
//! tokio, bus, RPC or store dependency (the layering test in `crates/cli/tests/it/architecture.rs`
//! enforces it). Every trait is synchronous; a component sees values, never a bus handle.

pub mod backend;
pub mod memory;
pub mod memory_task;
pub mod model;
pub mod no_reward;
pub mod schemas;
pub mod task;

pub use backend::{
    BackendError, EnvironmentBackend, EnvironmentSetup, Frame, InspectionArtifact, Refusal,
};
pub use memory::{MemorySpan, MemoryView};
pub use model::{
    AgentFactory, AgentModel, ModelError, ModelSetup, SensedInput, SensedView, Sensing,
};
pub use task::{
    ActionExecutor, AgentOutcome, Bootstrap, ControllerIntent, EpisodeRequest, Evaluation,
    IdentityExecutor, Task, TaskError, TaskEvent, Transition,
};
