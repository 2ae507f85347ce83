//! The local content-addressed asset registry.
//!
//! Layout under the root directory the caller names (the CLI passes `$FLYSIM_HOME/assets`):
//!
//! ```text
//! blobs/sha256/<hex>   the bytes, named by their SHA-256
//! ids/<id>.json        the canonical JSON AssetRef {id, digest, byteLength, format}
//! tmp/                 files being written (renamed into place when complete)
//! ```
//!
//! Every write is atomic: bytes go to a file of their own in `tmp/`, are flushed with `fsync`, and
//! are renamed into place, so a reader sees a whole entry or none; a write that fails removes its
//! file from `tmp/`. Adding is idempotent; an id, once bound to a digest, is never re-pointed (a
//! composition that names an asset by id means one content). A new id's record is linked into
//! place only if none exists (never renamed over one), so of two adds racing to bind one id to
//! different bytes exactly one succeeds and the other is refused as a conflict.
//! The resolver trusts a blob's name (it was hashed on the way in); `verify` re-hashes every blob.
//! Nothing is ever downloaded.

use std::fs::{self, File};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use flysim_types::plan::AssetRef;
use flysim_types::{Digest, Id, U64};
use miette::Diagnostic;
use sha2::{Digest as _, Sha256};
use thiserror::Error;

/// A failure of a registry operation.
#[derive(Debug, Error, Diagnostic)]
pub enum AssetError {
    /// A registry entry whose bytes no longer match its name or record.
    #[error("registry entry {entry} is corrupt: {reason}")]
    #[diagnostic(
        code("FS0253"),
        help(
            "the registry's bytes changed after they were added; remove the entry and add the file again"
        )
    )]
    Corrupt {
        /// The entry (`blobs/sha256/<hex>` or `ids/<id>.json`).
        entry: String,
        /// What is wrong.
        reason: String,
    },
    /// An id already bound to other bytes.
    #[error("asset id `{id}` already names sha256 {existing}, not {new}")]
    #[diagnostic(
        code("FS0254"),
        help(
            "an asset id names one content forever, so compositions that use it keep their meaning; choose another id"
        )
    )]
    IdConflict {
        /// The id.
        id: String,
        /// The digest it names.
        existing: String,
        /// The digest of the new file.
        new: String,
    },
    /// The file to add or the registry itself cannot be read or written.
    #[error("asset registry: cannot {action} {path}: {source}")]
    #[diagnostic(
        code("FS0255"),
        help("check that the path exists and that the registry directory is writable")
    )]
    Io {
        /// What was being done.
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
}

/// What `add` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Added {
    /// The entry was created.
    New,
    /// The same id already named the same bytes; nothing changed.
    AlreadyPresent,
}

/// How a file written in `tmp/` takes its final name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placing {
    /// Renamed over whatever the name held.
    Replace,
    /// Linked to the name only if the name is free.
    CreateNew,
}

/// Files this process has started in `tmp/`, so no two writes (of any thread) share one.
static TEMP_FILES: AtomicU64 = AtomicU64::new(0);

/// A registry rooted at one directory.
#[derive(Debug, Clone)]
pub struct AssetRegistry {
    root: PathBuf,
}

fn io_err(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> AssetError {
    let path = path.to_path_buf();
    move |source| AssetError::Io {
        action,
        path,
        source,
    }
}

/// Streams a reader through SHA-256, optionally copying it to `out`; returns digest and length.
fn hash_stream(mut input: impl io::Read, mut out: Option<&mut File>) -> io::Result<(Digest, u64)> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut len = 0u64;
    loop {
        let n = input.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        if let Some(f) = out.as_deref_mut() {
            f.write_all(&buf[..n])?;
        }
        len += n as u64;
    }
    Ok((Digest::from_bytes(hasher.finalize().into()), len))
}

/// SHA-256 and length of a file, streamed.
///
/// # Errors
///
/// The I/O error reading it.
pub fn hash_file(path: &Path) -> io::Result<(Digest, u64)> {
    hash_stream(File::open(path)?, None)
}

impl AssetRegistry {
    /// A registry at `root` (nothing is created until something is added).
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The root directory.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the bytes of `digest` live.
    #[must_use]
    pub fn blob_path(&self, digest: &Digest) -> PathBuf {
        self.root.join("blobs/sha256").join(digest.hex())
    }

    fn record_path(&self, id: &Id) -> PathBuf {
        self.root.join("ids").join(format!("{id}.json"))
    }

    /// The record of `id`, if the registry has one.
    ///
    /// # Errors
    ///
    /// [`AssetError::Io`] when the record exists but cannot be read, [`AssetError::Corrupt`] when
    /// it is not a valid record for that id.
    pub fn get(&self, id: &Id) -> Result<Option<AssetRef>, AssetError> {
        let path = self.record_path(id);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_err("read", &path)(e)),
        };
        let record: AssetRef =
            flysim_types::parse_payload(&bytes).map_err(|e| AssetError::Corrupt {
                entry: format!("ids/{id}.json"),
                reason: e.to_string(),
            })?;
        if &record.id != id {
            return Err(AssetError::Corrupt {
                entry: format!("ids/{id}.json"),
                reason: format!("it names id `{}`", record.id),
            });
        }
        Ok(Some(record))
    }

    /// Writes a file to `dest` atomically (temp file, fsync, rename or link, fsync of the
    /// directory); the temp file is gone afterwards, whatever failed. Returns `false`, having
    /// changed nothing, when `placing` is [`Placing::CreateNew`] and `dest` exists.
    fn write_atomic(
        &self,
        dest: &Path,
        placing: Placing,
        write: impl FnOnce(&mut File) -> io::Result<()>,
    ) -> Result<bool, AssetError> {
        let tmp_dir = self.root.join("tmp");
        fs::create_dir_all(&tmp_dir).map_err(io_err("create", &tmp_dir))?;
        let name = dest
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let tmp = tmp_dir.join(format!(
            "{name}.{}.{}.partial",
            std::process::id(),
            TEMP_FILES.fetch_add(1, Ordering::Relaxed)
        ));
        let placed = Self::place(&tmp, dest, placing, write);
        // After a rename there is nothing left to remove; after a link or a failure there is.
        let _ = fs::remove_file(&tmp);
        placed
    }

    fn place(
        tmp: &Path,
        dest: &Path,
        placing: Placing,
        write: impl FnOnce(&mut File) -> io::Result<()>,
    ) -> Result<bool, AssetError> {
        let result = (|| {
            let mut f = File::create_new(tmp)?;
            write(&mut f)?;
            f.sync_all()
        })();
        result.map_err(io_err("write", tmp))?;
        let dir = dest.parent().unwrap_or(Path::new("."));
        fs::create_dir_all(dir).map_err(io_err("create", dir))?;
        match placing {
            Placing::Replace => fs::rename(tmp, dest).map_err(io_err("rename into", dest))?,
            Placing::CreateNew => match fs::hard_link(tmp, dest) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(false),
                Err(e) => return Err(io_err("link into", dest)(e)),
            },
        }
        // Make the rename itself durable; not every platform can open a directory.
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(true)
    }

    /// Adds the bytes of `file` under `id` with `format`.
    ///
    /// # Errors
    ///
    /// [`AssetError::IdConflict`] when `id` already names other bytes; [`AssetError::Io`].
    pub fn add(&self, file: &Path, id: &Id, format: &Id) -> Result<(AssetRef, Added), AssetError> {
        let (digest, len) = hash_file(file).map_err(io_err("read", file))?;
        if len == 0 {
            return Err(io_err("add", file)(io::Error::other("the file is empty")));
        }
        let record = AssetRef {
            id: id.clone(),
            digest,
            byte_length: U64(len),
            format: format.clone(),
        };
        let existing = self.get(id)?;
        if let Some(old) = &existing
            && old.digest != digest
        {
            return Err(AssetError::IdConflict {
                id: id.to_string(),
                existing: old.digest.hex(),
                new: digest.hex(),
            });
        }
        let blob = self.blob_path(&digest);
        let blob_ok = fs::metadata(&blob).is_ok_and(|m| m.len() == len);
        if !blob_ok {
            self.write_atomic(&blob, Placing::Replace, |out| {
                let (copied, n) = hash_stream(File::open(file)?, Some(out))?;
                if copied == digest && n == len {
                    Ok(())
                } else {
                    Err(io::Error::other(
                        "the file changed while it was being added",
                    ))
                }
            })?;
        }
        if existing.as_ref() == Some(&record) {
            return Ok((
                record,
                if blob_ok {
                    Added::AlreadyPresent
                } else {
                    Added::New
                },
            ));
        }
        let text =
            flysim_types::payload::to_canonical(&record).map_err(|e| AssetError::Corrupt {
                entry: format!("ids/{id}.json"),
                reason: e.to_string(),
            })?;
        // A new id is bound only if no other add bound it meanwhile; a known one (same bytes,
        // another format) is rewritten in place.
        let placing = if existing.is_some() {
            Placing::Replace
        } else {
            Placing::CreateNew
        };
        let placed = self.write_atomic(&self.record_path(id), placing, |f| {
            f.write_all(format!("{text}\n").as_bytes())
        })?;
        if placed {
            return Ok((record, Added::New));
        }
        // Another add bound the id first: its record stands.
        match self.get(id)? {
            Some(theirs) if theirs.digest == digest => Ok((theirs, Added::AlreadyPresent)),
            Some(theirs) => Err(AssetError::IdConflict {
                id: id.to_string(),
                existing: theirs.digest.hex(),
                new: digest.hex(),
            }),
            None => Err(io_err("bind", &self.record_path(id))(io::Error::other(
                "the record appeared and vanished while the id was being bound",
            ))),
        }
    }

    /// Every record, sorted by id.
    ///
    /// # Errors
    ///
    /// [`AssetError::Io`] reading the directory, or a corrupt record.
    pub fn list(&self) -> Result<Vec<AssetRef>, AssetError> {
        let dir = self.root.join("ids");
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_err("read", &dir)(e)),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io_err("read", &dir))?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        let mut out = Vec::new();
        for name in names {
            let Some(stem) = name.strip_suffix(".json") else {
                continue;
            };
            let id = Id::parse(stem).map_err(|e| AssetError::Corrupt {
                entry: format!("ids/{name}"),
                reason: e.to_string(),
            })?;
            if let Some(record) = self.get(&id)? {
                out.push(record);
            }
        }
        out.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(out)
    }

    /// Re-hashes every blob and checks every record; returns the corrupt entries (empty when
    /// everything is sound), sorted by entry name.
    ///
    /// # Errors
    ///
    /// [`AssetError::Io`] when a directory cannot be read.
    pub fn verify(&self) -> Result<Vec<AssetError>, AssetError> {
        let mut corrupt = Vec::new();
        let blobs = self.root.join("blobs/sha256");
        let mut names = Vec::new();
        match fs::read_dir(&blobs) {
            Ok(entries) => {
                for entry in entries {
                    names.push(
                        entry
                            .map_err(io_err("read", &blobs))?
                            .file_name()
                            .to_string_lossy()
                            .into_owned(),
                    );
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err("read", &blobs)(e)),
        }
        names.sort();
        for name in names {
            let entry = format!("blobs/sha256/{name}");
            let Ok(expected) = Digest::parse(&name) else {
                corrupt.push(AssetError::Corrupt {
                    entry,
                    reason: "its name is not a SHA-256 digest".to_owned(),
                });
                continue;
            };
            match hash_file(&blobs.join(&name)) {
                Ok((actual, _)) if actual == expected => {}
                Ok((actual, _)) => corrupt.push(AssetError::Corrupt {
                    entry,
                    reason: format!("its bytes hash to {actual}"),
                }),
                Err(e) => corrupt.push(AssetError::Corrupt {
                    entry,
                    reason: format!("it cannot be read: {e}"),
                }),
            }
        }
        let ids = self.root.join("ids");
        let mut records = Vec::new();
        match fs::read_dir(&ids) {
            Ok(entries) => {
                for entry in entries {
                    records.push(
                        entry
                            .map_err(io_err("read", &ids))?
                            .file_name()
                            .to_string_lossy()
                            .into_owned(),
                    );
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err("read", &ids)(e)),
        }
        records.sort();
        for name in records {
            let entry = format!("ids/{name}");
            let id = match name.strip_suffix(".json").map(Id::parse) {
                Some(Ok(id)) => id,
                _ => {
                    corrupt.push(AssetError::Corrupt {
                        entry,
                        reason: "its name is not `<id>.json`".to_owned(),
                    });
                    continue;
                }
            };
            match self.get(&id) {
                Ok(Some(record)) => {
                    let blob = self.blob_path(&record.digest);
                    match fs::metadata(&blob) {
                        Ok(m) if m.len() == record.byte_length.get() => {}
                        Ok(m) => corrupt.push(AssetError::Corrupt {
                            entry,
                            reason: format!(
                                "it records {} bytes, the blob has {}",
                                record.byte_length,
                                m.len()
                            ),
                        }),
                        Err(_) => corrupt.push(AssetError::Corrupt {
                            entry,
                            reason: format!("its blob {} is missing", record.digest),
                        }),
                    }
                }
                Ok(None) => {}
                Err(e) => corrupt.push(e),
            }
        }
        Ok(corrupt)
    }
}
