//! A small deterministic mutation fuzzer for flysim's decoders, run by their own test suites on
//! the stable toolchain (dev only; no coverage feedback, no nightly).
//!
//! A target's test builds a [`Corpus`] of real inputs and hands [`run`] (or a [`Campaign`]) a
//! check: a closure that decodes the bytes and asserts what must hold. The campaign replays the
//! regression files kept for the target (`fixtures/fuzz/<target>/`), the corpus as it is, then
//! mutated corpus inputs ([`Mutator`], seeded [`SplitMix`]) until the [`Budget`] ends: a number
//! of inputs by default, a time span when [`budget::SECONDS_VARIABLE`] is set. A panic fails the
//! test with the input's hex, and the input is written to `<target dir>/fuzz-crashes/<target>/`
//! under its SHA-256 so it can be kept as a regression.
//!
//! It knows nothing about any format or any other flysim crate.

pub mod budget;
mod campaign;
pub mod corpus;
pub mod crash;
pub mod mutate;
pub mod rng;

pub use budget::Budget;
pub use campaign::{Campaign, Report, run};
pub use corpus::{Corpus, Sample, has_extension};
pub use mutate::Mutator;
pub use rng::SplitMix;
