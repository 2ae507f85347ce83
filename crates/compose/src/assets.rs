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
//! The resolver trusts a blob's name (it was hashed on the way in); `verify` re-hashes every blob,
//! and `add` re-hashes the blob it would reuse, so a damaged entry is named, never reported
//! present. `remove` unlinks an id's record (then syncs the directory), and its blob when no
//! other record names it or when the blob is damaged. Only regular files are read: a directory,
//! FIFO, device or socket where a file to add, a blob or a record should be is refused by its
//! metadata before it is opened. Nothing is ever downloaded.

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
    #[error("asset registry: cannot {action} {path}: {error}")]
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
        error: io::Error,
    },
    /// An id the registry has no record of.
    #[error("the asset registry {root} has no asset `{id}`")]
    #[diagnostic(code("FS0256"))]
    UnknownId {
        /// The id.
        id: String,
        /// The registry's root directory.
        root: PathBuf,
        /// What to do, naming the registry's nearest id when one is close.
        #[help]
        help: String,
    },
    /// A file to add, or a registry entry, that is a directory, FIFO, device or socket.
    #[error("asset registry: cannot read {path}: it is {kind}, not a regular file")]
    #[diagnostic(
        code("FS0228"),
        help(
            "the registry reads and stores regular files only: a FIFO would block and a device never ends; name the file itself"
        )
    )]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is instead.
        kind: &'static str,
    },
}

/// What `remove` took away.
#[derive(Debug, Clone, PartialEq)]
pub struct Removed {
    /// The record that was removed (`None` when it was unreadable or not a valid record).
    pub record: Option<AssetRef>,
    /// Whether its blob went too (no other record named it, or it was damaged).
    pub blob_removed: bool,
}

/// The largest record read: an `AssetRef` is a line of canonical JSON.
const RECORD_LIMIT: u64 = 64 << 10;

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
    move |error| AssetError::Io {
        action,
        path,
        error,
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

/// Opens the regular file at `path`, refusing anything else by its metadata before it is opened
/// (and again after, in case the path was replaced meanwhile).
fn open_regular(path: &Path) -> Result<File, AssetError> {
    let not_a_file = |meta: &fs::Metadata| AssetError::NotAFile {
        path: path.to_path_buf(),
        kind: crate::file_kind(meta),
    };
    let meta = fs::metadata(path).map_err(io_err("read", path))?;
    if !meta.is_file() {
        return Err(not_a_file(&meta));
    }
    let file = File::open(path).map_err(io_err("read", path))?;
    let meta = file.metadata().map_err(io_err("read", path))?;
    if meta.is_file() {
        Ok(file)
    } else {
        Err(not_a_file(&meta))
    }
}

/// [`hash_file`] of a regular file only.
fn hash_regular(path: &Path) -> Result<(Digest, u64), AssetError> {
    hash_stream(open_regular(path)?, None).map_err(io_err("read", path))
}

/// Makes a rename, link or unlink in `dir` durable; not every platform can open a directory.
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// The file names in `dir`, sorted; none when it does not exist.
fn names_in(dir: &Path) -> Result<Vec<String>, AssetError> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_err("read", dir)(e)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io_err("read", dir))?;
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    Ok(names)
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
        let file = match open_regular(&path) {
            Ok(f) => f,
            Err(AssetError::Io { error, .. }) if error.kind() == io::ErrorKind::NotFound => {
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        let mut bytes = Vec::new();
        io::Read::read_to_end(&mut io::Read::take(file, RECORD_LIMIT + 1), &mut bytes)
            .map_err(io_err("read", &path))?;
        if bytes.len() as u64 > RECORD_LIMIT {
            return Err(AssetError::Corrupt {
                entry: format!("ids/{id}.json"),
                reason: format!("it is larger than a record's {RECORD_LIMIT} bytes"),
            });
        }
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
        sync_dir(dir);
        Ok(true)
    }

    /// Adds the bytes of `file` under `id` with `format`.
    ///
    /// # Errors
    ///
    /// [`AssetError::IdConflict`] when `id` already names other bytes;
    /// [`AssetError::NotAFile`] for a directory, FIFO, device or socket; [`AssetError::Corrupt`]
    /// when the blob it would reuse is damaged; [`AssetError::Io`].
    pub fn add(&self, file: &Path, id: &Id, format: &Id) -> Result<(AssetRef, Added), AssetError> {
        let (digest, len) = hash_regular(file)?;
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
        let blob_ok = self.blob_is_sound(&blob, &digest, id)?;
        if !blob_ok {
            let input = open_regular(file)?;
            self.write_atomic(&blob, Placing::Replace, |out| {
                let (copied, n) = hash_stream(input, Some(out))?;
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
        let mut out = Vec::new();
        for name in names_in(&self.root.join("ids"))? {
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
        for name in names_in(&blobs)? {
            let entry = format!("blobs/sha256/{name}");
            let Ok(expected) = Digest::parse(&name) else {
                corrupt.push(AssetError::Corrupt {
                    entry,
                    reason: "its name is not a SHA-256 digest".to_owned(),
                });
                continue;
            };
            match hash_regular(&blobs.join(&name)) {
                Ok((actual, _)) if actual == expected => {}
                Ok((actual, _)) => corrupt.push(AssetError::Corrupt {
                    entry,
                    reason: format!("its bytes hash to {actual}"),
                }),
                Err(e @ AssetError::NotAFile { .. }) => corrupt.push(e),
                Err(e) => corrupt.push(AssetError::Corrupt {
                    entry,
                    reason: format!("it cannot be read: {e}"),
                }),
            }
        }
        for name in names_in(&self.root.join("ids"))? {
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

    /// Whether the blob of `digest` is present and sound (`false`: absent, so it is written).
    /// A blob whose bytes no longer hash to its name is the damaged entry of `id`.
    fn blob_is_sound(&self, blob: &Path, digest: &Digest, id: &Id) -> Result<bool, AssetError> {
        match fs::metadata(blob) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(io_err("read", blob)(e)),
            Ok(_) => {}
        }
        let (actual, _) = hash_regular(blob)?;
        if actual == *digest {
            Ok(true)
        } else {
            Err(AssetError::Corrupt {
                entry: format!("blobs/sha256/{} (of `{id}`)", digest.hex()),
                reason: format!("its bytes hash to {actual}, so the entry is damaged"),
            })
        }
    }

    /// Removes the entry `id`: its record, then its blob when no other record names it or
    /// when the blob is damaged. A record that cannot be parsed is removed all the same.
    ///
    /// # Errors
    ///
    /// [`AssetError::UnknownId`] (naming the nearest id, if one is close) when the registry has
    /// no record of `id`; [`AssetError::Io`] when a file cannot be removed.
    pub fn remove(&self, id: &Id) -> Result<Removed, AssetError> {
        let path = self.record_path(id);
        match fs::symlink_metadata(&path) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(self.unknown(id)?),
            Err(e) => return Err(io_err("read", &path)(e)),
        }
        let record = self.get(id).ok().flatten();
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(self.unknown(id)?),
            Err(e) => return Err(io_err("remove", &path)(e)),
        }
        sync_dir(&self.root.join("ids"));
        let Some(record) = record else {
            return Ok(Removed {
                record: None,
                blob_removed: false,
            });
        };
        let blob = self.blob_path(&record.digest);
        let damaged = !matches!(hash_regular(&blob), Ok((d, _)) if d == record.digest);
        let named_elsewhere = self.list_sound().iter().any(|r| r.digest == record.digest);
        let blob_removed = (damaged || !named_elsewhere)
            && match fs::remove_file(&blob) {
                Ok(()) => true,
                Err(e) if e.kind() == io::ErrorKind::NotFound => false,
                Err(e) => return Err(io_err("remove", &blob)(e)),
            };
        if blob_removed {
            sync_dir(&self.root.join("blobs/sha256"));
        }
        Ok(Removed {
            record: Some(record),
            blob_removed,
        })
    }

    /// Every record that can be read (a damaged one is skipped).
    fn list_sound(&self) -> Vec<AssetRef> {
        names_in(&self.root.join("ids"))
            .unwrap_or_default()
            .iter()
            .filter_map(|name| Id::parse(name.strip_suffix(".json")?).ok())
            .filter_map(|id| self.get(&id).ok().flatten())
            .collect()
    }

    /// The refusal of an id the registry does not have, naming its nearest id.
    fn unknown(&self, id: &Id) -> Result<AssetError, AssetError> {
        let names = names_in(&self.root.join("ids"))?;
        let ids: Vec<&str> = names
            .iter()
            .filter_map(|n| n.strip_suffix(".json"))
            .collect();
        let word = id.to_string();
        let help = match crate::text::suggest(&word, ids.iter().copied()) {
            Some(near) => format!("did you mean `{near}`?"),
            None if ids.is_empty() => "the registry is empty".to_owned(),
            None if ids.len() <= 8 => format!("the registry's ids are {}", ids.join(", ")),
            None => format!("none of the registry's {} ids is close", ids.len()),
        };
        Ok(AssetError::UnknownId {
            id: word,
            root: self.root.clone(),
            help,
        })
    }
}
