//! The flysim brain: spiking leaky integrate-and-fire agents built from a connectome.
//!
//! This crate owns the connectome ([`Connectome`], a CSR graph shared read-only through `Arc`),
//! its binary file format ([`mod@format`]) and importers ([`import`]), the brain profile
//! ([`Profile`]), two kernels (private modules driven by [`Brain`]: `lif-1ms-v1`, fast with a
//! 1 ms tick, and `lif-exp-delay-v1`, the Shiu et al. 2024 whole-brain model at 0.1 ms; their
//! equations, floating-point rule and threading are specified in `docs/brain.md`), the retina encoder
//! ([`retina`]), the readout ([`readout`]), the plasticity rule `rstdp-v1` ([`plasticity`]), the
//! generators of the shipped and synthetic profiles ([`generate`]) and the transport-free model
//! API an agent worker wraps ([`Brain`]).
//!
//! **Invariant:** the brain knows nothing of tasks, sessions, the bus, processes or emulators:
//! frames arrive as RGBA bytes, rewards and stimuli as contract values, and it returns decisions,
//! telemetry and snapshot bytes. It reads no clock, environment or file (callers pass bytes),
//! uses no hash-ordered container, and its results do not depend on the thread count.

pub mod agent;
pub mod connectome;
mod dynamics;
pub mod error;
mod exp_delay;
pub mod format;
pub mod generate;
pub mod import;
mod kernel;
pub mod model;
pub mod plasticity;
pub mod profile;
pub mod readout;
pub mod retina;
pub mod rng;
mod simd;
mod snapshot;
mod snapshot_check;
mod threads;

pub use agent::SPEC;
pub use connectome::Connectome;
pub use error::BrainError;
pub use model::{Activity, Brain, Counters};
pub use profile::Profile;
pub use readout::Decision;
pub use retina::Frame;
pub use snapshot::CheckedSnapshot;
