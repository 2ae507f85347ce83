//! Room for a run's last word: a fresh run keeps a small file (`.reserve`) of zeros in its
//! directory while it writes, and gives it up when its manifest cannot be written, so on a disk
//! the run itself filled, the manifest that says the run failed still fits.
//!
//! The file holds nothing; it is removed when its writer lets go of the directory. A killed run
//! leaves it behind, and a resume keeps it as its own, removing it only once the resume has
//! written a manifest (a resume refused before it plays changes nothing). It never reaches a
//! trace row, a manifest or a digest.
//!
//! **Invariant:** this module knows one file and its size; nothing of what the directory holds.

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::StoreError;

/// The reserve file of a run directory.
pub const RESERVE_FILE: &str = ".reserve";
/// Its size: a manifest is under a kilobyte; this covers a temporary file and a directory entry
/// on file systems of large blocks.
const RESERVE_BYTES: usize = 64 * 1024;

/// The reserve of one run directory, removed on drop once its writer has written.
#[derive(Debug)]
pub(crate) struct Reserve {
    path: PathBuf,
    /// Whether drop removes it: a fresh run's always, a resume's once it wrote a manifest.
    remove_on_drop: bool,
}

impl Reserve {
    /// Writes the reserve of `dir` (its blocks allocated and synced).
    pub(crate) fn make(dir: &Path) -> Result<Self, StoreError> {
        let path = dir.join(RESERVE_FILE);
        let written = File::create(&path)
            .and_then(|mut f| f.write_all(&[0; RESERVE_BYTES]).and_then(|()| f.sync_all()));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&path);
            return Err(StoreError::write("write", &path, e));
        }
        Ok(Self {
            path,
            remove_on_drop: true,
        })
    }

    /// The reserve a killed writer left in `dir` (if it did), kept as this writer's.
    pub(crate) fn left_in(dir: &Path) -> Self {
        Self {
            path: dir.join(RESERVE_FILE),
            remove_on_drop: false,
        }
    }

    /// The writer changed the directory: the reserve goes with it.
    pub(crate) fn written(&mut self) {
        self.remove_on_drop = true;
    }

    /// Gives the room up; `true` when there was a reserve to give.
    pub(crate) fn release(&self) -> bool {
        std::fs::remove_file(&self.path).is_ok()
    }
}

impl Drop for Reserve {
    fn drop(&mut self) {
        if self.remove_on_drop {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}
