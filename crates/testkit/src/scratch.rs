//! A private scratch directory under the system's temporary directory, removed when dropped.
//! It knows nothing of what is stored in it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Scratch directories made by this process so far (the next one's serial).
static MADE: AtomicU64 = AtomicU64::new(0);

/// A directory owned by one test, created empty and removed (with its contents) on drop.
#[derive(Debug)]
pub struct ScratchDir {
    path: PathBuf,
}

impl ScratchDir {
    /// Creates a new, empty directory that no other scratch directory of any process shares.
    ///
    /// # Panics
    ///
    /// If no directory can be created.
    #[must_use]
    pub fn new() -> Self {
        let base = std::env::temp_dir();
        let pid = std::process::id();
        loop {
            let serial = MADE.fetch_add(1, Ordering::Relaxed);
            let path = base.join(format!("flysim-test-{pid}-{serial}"));
            match std::fs::create_dir(&path) {
                Ok(()) => return Self { path },
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => panic!("create a scratch directory {}: {e}", path.display()),
            }
        }
    }

    /// The directory.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Default for ScratchDir {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
