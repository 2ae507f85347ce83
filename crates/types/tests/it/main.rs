//! Integration tests of flysim-types: one binary, one module per concern (the `flysim` crate's
//! tests check that no module file here is left out).

#![allow(
    clippy::disallowed_methods,
    reason = "a fixture test reads whether to rewrite its fixtures from the environment"
)]

mod checkpoints;
mod digests;
mod fuzz;
mod json;
mod mutants;
mod payload_digests;
mod rational;
mod rfc8785;
mod roundtrip;
mod scalars;
mod schemas;
mod seed;

/// The repository's `fixtures/` directory.
pub(crate) fn fixtures() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}
