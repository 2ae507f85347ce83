//! Integration tests of flysim-types: one binary, one module per concern (the `flysim` crate's
//! tests check that no module file here is left out).

mod checkpoints;
mod digests;
mod json;
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
