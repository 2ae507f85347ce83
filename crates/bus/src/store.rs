//! The file-backed artifact store (contracts §3.8): one directory per router incarnation under a
//! shared root, staging files written by producers, sealed read-only copies, and the client-side
//! resolution of location grants.
//!
//! Safety rules: directories are created 0700, staging files 0600, sealed files 0444; a location
//! is a relative path of plain components under the root, and every file is opened with
//! `O_NOFOLLOW` after checking that no directory on the way is a symbolic link, so a peer cannot
//! name a file outside the store.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Read as _, Write as _};
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Component, Path, PathBuf};

use flysim_types::Digest;
use sha2::{Digest as _, Sha256};

use crate::error::BusError;

/// The marker file a live router keeps locked inside its store directory.
const LOCK_FILE: &str = "router.lock";

/// Why a seal failed.
#[derive(Debug)]
pub(crate) enum SealFailure {
    /// The staging file's length or the bytes' digest differ from what was declared.
    Mismatch(String),
    /// The store could not copy the file.
    Io(BusError),
}

/// One router incarnation's directory under the store root.
#[derive(Debug)]
pub(crate) struct Store {
    root: PathBuf,
    dir: String,
    /// Held (and `flock`ed) for the router's life: a free lock marks an orphan directory.
    _lock: File,
}

/// Creates `dir` (and missing parents) with mode 0700.
///
/// # Errors
///
/// [`BusError::Store`] when the directory cannot be created.
pub fn create_private_dir(dir: &Path) -> Result<(), BusError> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| BusError::store("create directory", dir.to_owned(), e))
}

impl Store {
    /// Creates `root/<dir>` after removing orphaned store directories (a directory whose lock
    /// file is not locked by a live router).
    pub(crate) fn create(root: &Path, dir: &str) -> Result<Self, BusError> {
        create_private_dir(root)?;
        remove_orphans(root);
        let path = root.join(dir);
        DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .map_err(|e| BusError::store("create store directory", path.clone(), e))?;
        let lock_path = path.join(LOCK_FILE);
        let lock = OpenOptions::new()
            .create_new(true)
            .write(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&lock_path)
            .map_err(|e| BusError::store("create lock file", lock_path.clone(), e))?;
        lock.try_lock().map_err(|e| {
            BusError::store(
                "lock store directory",
                lock_path,
                io::Error::other(e.to_string()),
            )
        })?;
        Ok(Self {
            root: root.to_owned(),
            dir: dir.to_owned(),
            _lock: lock,
        })
    }

    pub(crate) fn staging_rel(&self, n: u64) -> String {
        format!("{}/a-{n}.staging", self.dir)
    }

    pub(crate) fn sealed_rel(&self, n: u64) -> String {
        format!("{}/a-{n}", self.dir)
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Creates a zero-filled staging file of `len` bytes, mode 0600.
    pub(crate) fn create_staging(&self, n: u64, len: u64) -> Result<(), BusError> {
        let path = self.path(&self.staging_rel(n));
        let file = OpenOptions::new()
            .create_new(true)
            .write(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(|e| BusError::store("create staging file", path.clone(), e))?;
        file.set_len(len)
            .map_err(|e| BusError::store("size staging file", path, e))
    }

    /// Copies the staging file into a fresh 0444 file after checking its length and (if given)
    /// its digest, then unlinks the staging file. Returns the digest when one was checked.
    pub(crate) fn seal(&self, n: u64, len: u64, digest: Option<Digest>) -> Result<(), SealFailure> {
        let staging = self.path(&self.staging_rel(n));
        let sealed = self.path(&self.sealed_rel(n));
        let io =
            |action, path: &Path, e| SealFailure::Io(BusError::store(action, path.to_owned(), e));
        let mut src = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&staging)
            .map_err(|e| io("open staging file", &staging, e))?;
        // Created read-only: the mode applies to later opens, not to this handle, so the copy
        // needs no chmod afterwards, and nobody else knows the name before the seal answers.
        let mut dst = OpenOptions::new()
            .create_new(true)
            .write(true)
            .mode(0o444)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&sealed)
            .map_err(|e| io("create sealed file", &sealed, e))?;
        let mut hasher = digest.map(|_| Sha256::new());
        // One read for a small artifact, with room for one byte more: a regular file's read
        // returns less than asked only at its end, so a read of exactly `len` bytes proves the
        // length without a `stat` or a second read. A large one goes through a bounded buffer
        // (never a fresh 256 KiB mapping per frame). Reading stops one byte past `len`: a
        // staging file grown beyond its allocation is refused without copying the rest.
        let size = usize::try_from(len.saturating_add(1))
            .unwrap_or(usize::MAX)
            .clamp(1, 256 * 1024);
        let mut buf = vec![0u8; size];
        let mut copied = 0u64;
        loop {
            let want = usize::try_from(len + 1 - copied.min(len))
                .unwrap_or(usize::MAX)
                .min(buf.len());
            let n = src
                .read(&mut buf[..want])
                .map_err(|e| io("read staging file", &staging, e))?;
            if n == 0 {
                break;
            }
            copied += n as u64;
            if copied > len {
                break;
            }
            if let Some(h) = hasher.as_mut() {
                h.update(&buf[..n]);
            }
            dst.write_all(&buf[..n])
                .map_err(|e| io("write sealed file", &sealed, e))?;
            if copied == len && n < want {
                break; // a short read: the end of the file
            }
        }
        let fail = |reason: String| {
            let _ = fs::remove_file(&sealed);
            Err(SealFailure::Mismatch(reason))
        };
        if copied != len {
            return fail(if copied > len {
                format!("the staging file holds more than the allocation's {len} bytes")
            } else {
                format!("the staging file holds {copied} bytes, the allocation {len}")
            });
        }
        if let (Some(h), Some(expected)) = (hasher, digest) {
            let got = Digest::from_bytes(h.finalize().into());
            if got != expected {
                return fail(format!(
                    "the bytes hash to {}, the seal declared {}",
                    got.hex(),
                    expected.hex()
                ));
            }
        }
        if dst
            .metadata()
            .is_ok_and(|m| m.permissions().mode() & 0o777 != 0o444)
        {
            // A umask cannot add bits, but make sure: sealed files are 0444.
            fs::set_permissions(&sealed, fs::Permissions::from_mode(0o444))
                .map_err(|e| io("protect sealed file", &sealed, e))?;
        }
        let _ = fs::remove_file(&staging);
        Ok(())
    }

    /// Unlinks one file of this store; a missing file is fine.
    pub(crate) fn unlink(&self, rel: &str) {
        let _ = fs::remove_file(self.path(rel));
    }

    /// Unlinks `name` (`a-<n>` or `a-<n>.staging`) inside this store's directory.
    pub(crate) fn unlink_name(&self, name: &str) {
        let _ = fs::remove_file(self.root.join(&self.dir).join(name));
    }

    /// Removes the whole store directory (router shutdown).
    pub(crate) fn destroy(&self) {
        let _ = fs::remove_dir_all(self.root.join(&self.dir));
    }
}

/// Removes every `store-*` directory under `root` whose lock is free (its router is gone).
fn remove_orphans(root: &Path) {
    let Ok(entries) = fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let is_store = name.to_str().is_some_and(|n| n.starts_with("store-"));
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if !is_store || !is_dir {
            continue;
        }
        let lock = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(entry.path().join(LOCK_FILE));
        let orphan = match lock {
            Ok(file) => file.try_lock().is_ok(),
            // No marker: a directory left half-created by a crashed router.
            Err(e) => e.kind() == io::ErrorKind::NotFound,
        };
        if orphan {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// Resolves a location grant's relative path under `root`, refusing absolute paths, `.`/`..`
/// components and any directory on the way that is a symbolic link.
///
/// # Errors
///
/// [`BusError::LocationRefused`].
pub fn resolve(root: &Path, rel: &str) -> Result<PathBuf, BusError> {
    let refuse = |reason| BusError::LocationRefused {
        path: rel.to_owned(),
        reason,
    };
    let rel_path = Path::new(rel);
    if rel.is_empty() || rel_path.is_absolute() {
        return Err(refuse("it is empty or absolute"));
    }
    let components: Vec<Component<'_>> = rel_path.components().collect();
    if components
        .iter()
        .any(|c| !matches!(c, Component::Normal(_)))
    {
        return Err(refuse("it has a `.`, `..` or root component"));
    }
    let mut here = root.to_owned();
    for (i, component) in components.iter().enumerate() {
        here.push(component);
        if i + 1 < components.len() {
            let meta = fs::symlink_metadata(&here).map_err(|_| refuse("a directory is missing"))?;
            if !meta.is_dir() {
                return Err(refuse(
                    "a directory on the way is a link or not a directory",
                ));
            }
        }
    }
    Ok(here)
}

/// Opens a granted location for reading, without following links.
///
/// # Errors
///
/// [`BusError::LocationRefused`] or [`BusError::Store`].
pub fn open_read(root: &Path, rel: &str) -> Result<File, BusError> {
    let path = resolve(root, rel)?;
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .map_err(|e| BusError::store("open artifact", path, e))
}

/// Opens a granted staging location for writing, without following links.
///
/// # Errors
///
/// [`BusError::LocationRefused`] or [`BusError::Store`].
pub fn open_write(root: &Path, rel: &str) -> Result<File, BusError> {
    let path = resolve(root, rel)?;
    OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .map_err(|e| BusError::store("open staging file", path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_outside_the_store_are_refused() {
        let root = tempfile::tempdir().unwrap();
        for bad in ["", "/etc/passwd", "../x", "a/../../x", "./a"] {
            assert!(
                matches!(
                    resolve(root.path(), bad),
                    Err(BusError::LocationRefused { .. })
                ),
                "{bad}"
            );
        }
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret"), b"x").unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("link")).unwrap();
        assert!(resolve(root.path(), "link/secret").is_err());
        std::os::unix::fs::symlink(outside.path().join("secret"), root.path().join("file-link"))
            .unwrap();
        assert!(open_read(root.path(), "file-link").is_err());
    }

    /// A seal copies exactly the allocated length, for a small artifact (one read) and a large
    /// one (through the bounded buffer), and refuses a staging file shorter or longer than its
    /// allocation, or whose bytes hash to another digest, leaving no sealed file behind.
    #[test]
    fn a_seal_copies_exactly_the_allocation_and_refuses_any_other_length() {
        let root = tempfile::tempdir().unwrap();
        let store = Store::create(root.path(), "store-0000000000000009").unwrap();
        let big = 256 * 1024;
        let cases: [(u64, usize, bool); 8] = [
            (64, 64, true),
            (64, 63, false),
            (64, 65, false),
            (big, big as usize, true),
            (big + 1, big as usize + 1, true),
            (3 * big - 7, 3 * big as usize - 7, true),
            (big, big as usize + 1, false),
            (3 * big, 3 * big as usize - 1, false),
        ];
        for (n, (len, written, ok)) in (1u64..).zip(cases) {
            let bytes: Vec<u8> = (0..written).map(|i| (i % 251) as u8).collect();
            fs::write(store.path(&store.staging_rel(n)), &bytes).unwrap();
            let digest = Some(flysim_types::digest::sha256(&bytes));
            let result = store.seal(n, len, digest);
            let sealed = store.path(&store.sealed_rel(n));
            if ok {
                assert!(result.is_ok(), "{len}/{written}");
                assert_eq!(fs::read(&sealed).unwrap(), bytes);
                assert!(!store.path(&store.staging_rel(n)).exists());
            } else {
                assert!(
                    matches!(result, Err(SealFailure::Mismatch(_))),
                    "{len}/{written}"
                );
                assert!(!sealed.exists(), "{len}/{written}: nothing sealed");
            }
        }
        let n = 99;
        fs::write(store.path(&store.staging_rel(n)), b"abcd").unwrap();
        let other = Some(flysim_types::digest::sha256(b"abce"));
        assert!(matches!(
            store.seal(n, 4, other),
            Err(SealFailure::Mismatch(_))
        ));
        assert!(!store.path(&store.sealed_rel(n)).exists());
        store.destroy();
    }

    #[test]
    fn store_dirs_are_private_and_orphans_are_removed() {
        let root = tempfile::tempdir().unwrap();
        let first = Store::create(root.path(), "store-0000000000000001").unwrap();
        let mode = fs::metadata(root.path().join("store-0000000000000001"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        // A live store is kept by a second router; a dropped one is an orphan.
        let second = Store::create(root.path(), "store-0000000000000002").unwrap();
        assert!(root.path().join("store-0000000000000001").exists());
        drop(first);
        let _third = Store::create(root.path(), "store-0000000000000003").unwrap();
        assert!(!root.path().join("store-0000000000000001").exists());
        assert!(root.path().join("store-0000000000000002").exists());
        second.destroy();
    }
}
