//! Runs as a library: everything between a resolved plan and a run directory. `flysim run`,
//! `resume`, `replay` and `checkpoints` are thin presentations of this crate.
//!
//! - [`commands`]: [`run`], [`resume`], [`replay`], [`checkpoints`].
//! - `invocation`: one invocation that writes a run directory: the `running` manifest first,
//!   the steps, durable checkpoints, the final manifest (`complete`, `paused`, `failed`; a run
//!   asked to stop, or stopped before its plan's end, is `paused`, never `running` or
//!   `complete`).
//! - `sink`: rows to the trace, checkpoints to the generation writer once their rows are durable.
//! - [`content`]: where a plan's content comes from, checked against its pinned digests.
//! - [`components`]: every model, backend and task this build links, registered by name.
//! - [`host`]: what the machine gives a run (runtime directory, worker program, tools), which
//!   the binary reads from the environment.
//! - [`progress`]: how a run reports committed boundaries to whoever shows them.
//!
//! **Invariant:** this crate reads no environment variable, prints nothing and chooses no exit
//! code; its errors ([`RunError`]) name no command-line flag. Nothing the host supplies reaches
//! a plan, a trace row or a digest.

pub mod commands;
pub mod components;
pub mod content;
mod error;
pub mod host;
mod invocation;
pub mod progress;
mod sink;

pub use commands::{
    Execution, GenerationState, OnLaunch, Replayed, checkpoints, replay, resume, run,
};
pub use content::ContentSource;
pub use error::RunError;
pub use flysim_session::{Launch, Pace, PauseHandle};
pub use host::Host;
pub use invocation::RunReport;
pub use progress::{Progress, Quiet};
