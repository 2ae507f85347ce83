//! The counter arena's integration tests: one binary, one module per concern.

mod restore;

/// The workspace root.
fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}
