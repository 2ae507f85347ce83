//! Integration tests of the Dolphin backend.
//!
//! `refusals` always runs: every refusal code, with stand-in binaries where a Dolphin would be
//! needed. `fixture` checks the committed test program (and rebuilds it when the cross compiler
//! it was built with is installed). `lockstep` boots the project's own test program in a real Dolphin; it runs when
//! `dolphin-emu` (or `dolphin-emu-nogui`), `Xvfb` and `powerpc-linux-gnu-gcc` are installed, and
//! otherwise each test says what is missing and returns.

#![allow(
    clippy::disallowed_methods,
    reason = "tests bound their waits on Dolphin and find the installed tools through the environment"
)]

mod environment;
mod fixture;
mod lockstep;
mod refusals;

use std::path::{Path, PathBuf};

use tempfile::TempDir;

/// A short private scratch directory (the MemoryWatcher socket path must stay under 108 bytes).
pub(crate) fn scratch() -> TempDir {
    tempfile::Builder::new()
        .prefix("fsd")
        .tempdir_in("/tmp")
        .unwrap()
}

/// `name` in `/usr/games` (Debian's Dolphin) or in a directory of `PATH`.
pub(crate) fn find(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::iter::once(PathBuf::from("/usr/games"))
        .chain(std::env::split_paths(&path))
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Writes an executable shell script.
pub(crate) fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}
