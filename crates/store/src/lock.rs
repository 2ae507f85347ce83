//! One writer per run directory: an exclusive, non-blocking `flock` on `<runDir>/.lock`, taken
//! before anything in the directory is swept, cut or written and held for the writer's life.
//!
//! The lock file records the holder's process id, so a second writer is refused with a message
//! that names it ([`StoreError::Locked`]). The id is for that message only: it never reaches a
//! trace row, a manifest or a digest. The kernel releases the lock when its holder exits, however
//! it exits, so a killed run never leaves its directory locked; a live holder removes the file
//! when it lets go. A writer that locked a file another holder had just removed (the path then
//! names another file, or none) lets go and tries again, so two writers never both hold a lock.
//!
//! **Invariant:** this module knows one file and its lock; nothing of what the directory holds.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt as _, MetadataExt as _};
use std::path::{Path, PathBuf};

use rustix::fs::{FlockOperation, flock};

use crate::StoreError;

/// The lock file of a run directory.
pub const LOCK_FILE: &str = ".lock";

/// Times a refused writer reads the holder's id again when it finds none yet (the holder has
/// taken the lock and not yet written it), a millisecond apart.
const HOLDER_READS: u32 = 50;
/// Times a writer tries again after locking a file its holder had just removed.
const RELOCKS: u32 = 100;

/// The exclusive lock on one run directory, released (and its file removed) on drop.
#[derive(Debug)]
pub struct RunLock {
    dir: PathBuf,
    path: PathBuf,
    file: File,
}

impl RunLock {
    /// Locks the run directory `dir` (which must exist) for this process's writer.
    ///
    /// # Errors
    ///
    /// [`StoreError::Locked`] naming the holder when another writer holds it;
    /// [`StoreError::Write`] when the lock file cannot be created or locked.
    pub fn acquire(dir: &Path) -> Result<Self, StoreError> {
        let path = dir.join(LOCK_FILE);
        for _ in 0..RELOCKS {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(|e| StoreError::write("create", &path, e))?;
            match flock(&file, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => {}
                Err(e) if e == rustix::io::Errno::WOULDBLOCK => {
                    return Err(StoreError::Locked {
                        path: dir.to_owned(),
                        pid: holder(&file),
                    });
                }
                Err(e) => return Err(StoreError::write("lock", &path, e.into())),
            }
            if !still_named(&file, &path) {
                continue;
            }
            let mut lock = Self {
                dir: dir.to_owned(),
                path,
                file,
            };
            lock.record_holder()?;
            return Ok(lock);
        }
        Err(StoreError::write(
            "lock",
            &path,
            std::io::Error::other("its holders kept removing it"),
        ))
    }

    /// The locked run directory.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn record_holder(&mut self) -> Result<(), StoreError> {
        self.file
            .set_len(0)
            .and_then(|()| {
                self.file
                    .write_all_at(format!("{}\n", std::process::id()).as_bytes(), 0)
            })
            .map_err(|e| StoreError::write("write", &self.path, e))
    }
}

impl Drop for RunLock {
    /// Removes the file while still holding it; closing the file then lets go.
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Whether `path` still names the file `file` locked (a holder removes it as it lets go).
fn still_named(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(held), Ok(named)) => held.dev() == named.dev() && held.ino() == named.ino(),
        _ => false,
    }
}

/// The holder's process id as its lock file records it, if it records one yet.
fn holder(file: &File) -> Option<u32> {
    for _ in 0..HOLDER_READS {
        let mut bytes = [0u8; 16];
        let n = file.read_at(&mut bytes, 0).unwrap_or(0);
        let text = String::from_utf8_lossy(&bytes[..n]);
        if let Some(line) = text.strip_suffix('\n') {
            return line.trim().parse().ok();
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    None
}
