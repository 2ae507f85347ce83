//! The GameCube backend: one real Dolphin process per world, driven in lockstep.
//!
//! Dolphin offers no stepping interface to other processes, so the backend uses what the stock
//! build has (see `docs/dolphin.md`): the Qt frontend in batch mode under a private Xvfb, with
//! its hotkeys (pause, frame advance, save and load state) bound to a `Pipe` input device that
//! this crate writes; one `Pipe` device per controller port; the MemoryWatcher, which sends one
//! datagram per emulated field with the watched words that changed; and save states. From a
//! canonical [`BackendConfig`] it generates Dolphin's whole user directory, starts the helper
//! processes, and offers [`DolphinWorld`]: started aligned and stopped at boundary 0,
//! [`advance`](DolphinWorld::advance) runs exactly one field per call (a step that ran more is an
//! error, never a result), [`capture`](DolphinWorld::capture) and
//! [`restore`](DolphinWorld::restore) go through save states, and dropping the world tears
//! everything down with bounded waits.
//!
//! With a start field, boundary 0 is the end of that field counted from power-on, the same
//! emulated state in every run wherever the first pause landed.
//!
//! A world whose content draws its picture into main memory with the CPU (the project's test
//! program) publishes it as a view, read from its external framebuffer at every boundary
//! ([`xfb`]); a disc image shows none (the Null renderer copies nothing to memory).
//!
//! [`DolphinEnvironment`] puts a world behind the worker's `EnvironmentBackend` (a session
//! environment: a plan's ports, content and version, Initialize, Advance, Capture and Restore),
//! and [`echo_task`] holds `gamecube-pad-echo-v1`, the task of the test program.
//!
//! [`fieldcount`] holds the project's own GameCube test program (built with Debian's
//! `powerpc-linux-gnu-gcc`, committed as `fixtures/roms/gc-fieldcount.elf`); the integration
//! tests and `compositions/dolphin.kdl` boot it.
//!
//! **Invariant:** this crate knows the GameCube, Dolphin, the contract types and the worker's and
//! session's traits it implements; it knows nothing of neurons, transports or the bus. It reads
//! no environment variable: the caller finds the binaries and the content, and the few variables
//! Dolphin and Xvfb need are set explicitly on the children (see the `process` module).

mod canonical;
mod checkpoint;
pub mod config;
pub mod echo_task;
pub mod environment;
mod error;
pub mod fieldcount;
pub mod memory;
pub mod pipe;
mod process;
pub mod schema;
pub mod spec;
pub mod watcher;
mod world;
pub mod xfb;

pub use checkpoint::Checkpoint;
pub use config::{
    Address, BackendConfig, Content, Mode, PINNED_RELEASE, PINNED_VERSION, Ready, Watch,
};
pub use environment::{DolphinEnvironment, Tools};
pub use error::DolphinError;
pub use process::{RAM_BYTES, file_digest, version_of};
pub use spec::SPEC;
pub use world::{
    DolphinWorld, Observation, field_duration, inspection_schema, pattern_control, port_id,
};
