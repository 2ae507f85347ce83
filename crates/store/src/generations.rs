//! Durable checkpoint generations of a run: `<runDir>/checkpoints/`.
//!
//! ```text
//! checkpoints/gen-00000001.flysess   one FLYSESS1 envelope per generation
//! checkpoints/generations.json       the store manifest: which generations exist
//! ```
//!
//! A commit (contracts §7) writes the envelope to a temporary file, `fsync`s it, renames it to
//! its generation name and `fsync`s the directory; only then is `generations.json` written the
//! same way. The manifest's rename is the commit point: a generation the manifest does not name
//! does not exist, whatever files lie around, and a crash at any moment leaves either the old
//! manifest or the new one, each naming only complete files. The newest [`KEEP`] generations
//! are kept; files the manifest no longer names are removed after the commit.
//!
//! [`CheckpointWriter`] puts the writing on its own thread behind a bounded queue: a capture
//! never waits for the disk, a stalled disk never grows memory (a full queue replaces its
//! newest waiting capture, counted as superseded), and [`DurableStatus`] says what is durable
//! and what is not.
//!
//! **Invariant:** nothing here reads a clock, and a generation number only moves forward.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use flysim_types::checkpoint::{Envelope, EnvelopeError, decode};
use flysim_types::digest::sha256;
use flysim_types::{Digest, Id, U64, parse_payload};
use serde::{Deserialize, Serialize};

use crate::{StoreError, canonical_line, contract, sync_dir, write_durably};

/// The directory of a run that holds its checkpoint generations.
pub const CHECKPOINTS_DIR: &str = "checkpoints";
/// The store manifest inside it.
pub const GENERATIONS_FILE: &str = "generations.json";
/// Generations kept; older ones are removed after a commit.
pub const KEEP: usize = 3;
/// The format of `generations.json`.
pub const GENERATIONS_FORMAT_VERSION: u32 = 1;

/// One durable generation, as the store manifest names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Generation {
    /// The generation number, from 1, strictly increasing.
    pub generation: U64,
    /// The committed boundary it captures.
    pub boundary: U64,
    /// The checkpoint id inside the envelope.
    pub checkpoint_id: Id,
    /// The file name inside `checkpoints/`.
    pub file: String,
    /// The file's length.
    pub byte_length: U64,
    /// SHA-256 of the whole file.
    pub digest: Digest,
}

/// `generations.json`: the committed generations, oldest first. Boundaries need not ascend:
/// a run resumed from an older generation commits later generations of earlier boundaries, and
/// the newest commit is the run's newest state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Generations {
    /// [`GENERATIONS_FORMAT_VERSION`].
    pub format_version: u32,
    /// The newest generation number ever committed (never reused, even after removal).
    pub high_water: U64,
    /// The generations that exist, oldest first.
    pub generations: Vec<Generation>,
}

impl flysim_types::Payload for Generations {
    fn validate(&self) -> Result<(), flysim_types::ContractError> {
        if self.format_version != GENERATIONS_FORMAT_VERSION {
            return Err(flysim_types::ContractError::rule(
                "formatVersion",
                format!("this build reads generations of format {GENERATIONS_FORMAT_VERSION}"),
            ));
        }
        let ordered = self
            .generations
            .windows(2)
            .all(|w| w[0].generation < w[1].generation);
        let named = self
            .generations
            .iter()
            .all(|g| g.file == file_name(g.generation.get()) && g.generation <= self.high_water);
        if !ordered || !named {
            return Err(flysim_types::ContractError::rule(
                "generations",
                "generations ascend, name their own files and stay below the high-water mark",
            ));
        }
        Ok(())
    }
}

impl Generations {
    fn empty() -> Self {
        Self {
            format_version: GENERATIONS_FORMAT_VERSION,
            high_water: U64(0),
            generations: Vec::new(),
        }
    }

    /// The newest generation.
    #[must_use]
    pub fn newest(&self) -> Option<&Generation> {
        self.generations.last()
    }
}

/// The file name of generation `n`.
#[must_use]
pub fn file_name(n: u64) -> String {
    format!("gen-{n:08}.flysess")
}

/// The checkpoint generations of one run directory.
#[derive(Debug, Clone)]
pub struct GenerationStore {
    dir: PathBuf,
}

impl GenerationStore {
    /// The generations of the run directory `run_dir` (the directory is made on first commit).
    #[must_use]
    pub fn of_run(run_dir: &Path) -> Self {
        Self {
            dir: run_dir.join(CHECKPOINTS_DIR),
        }
    }

    /// The `checkpoints/` directory.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The committed generations (none when nothing was ever committed).
    ///
    /// # Errors
    ///
    /// [`StoreError::Unreadable`] for a malformed `generations.json`.
    pub fn list(&self) -> Result<Generations, StoreError> {
        let path = self.dir.join(GENERATIONS_FILE);
        match std::fs::read(&path) {
            Ok(bytes) => parse_payload(&bytes).map_err(|e| contract(&path, &e)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Generations::empty()),
            Err(e) => Err(StoreError::unreadable(&path, e.to_string())),
        }
    }

    /// Commits `envelope` (the FLYSESS1 bytes of checkpoint `checkpoint_id` at `boundary`) as
    /// the next generation, durably, then removes what the manifest no longer names.
    ///
    /// # Errors
    ///
    /// [`StoreError::Write`] from any step; the previous manifest then still stands.
    pub fn commit(
        &self,
        boundary: u64,
        checkpoint_id: &Id,
        envelope: &[u8],
    ) -> Result<Generation, StoreError> {
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| StoreError::write("create", &self.dir, e))?;
        let mut generations = self.list()?;
        let n = generations.high_water.get() + 1;
        let generation = Generation {
            generation: U64(n),
            boundary: U64(boundary),
            checkpoint_id: checkpoint_id.clone(),
            file: file_name(n),
            byte_length: U64(envelope.len() as u64),
            digest: sha256(envelope),
        };
        write_durably(&self.dir.join(&generation.file), envelope)?;
        generations.high_water = U64(n);
        generations.generations.push(generation.clone());
        let surplus = generations.generations.len().saturating_sub(KEEP);
        let dropped: Vec<Generation> = generations.generations.drain(..surplus).collect();
        let path = self.dir.join(GENERATIONS_FILE);
        let bytes = canonical_line(&generations).map_err(|e| contract(&path, &e))?;
        // The commit point. A generation the manifest will not name is garbage: removed at
        // once, so a full disk is not filled further by every checkpoint that fails.
        if let Err(e) = write_durably(&path, &bytes) {
            let _ = std::fs::remove_file(self.dir.join(&generation.file));
            return Err(e);
        }
        // Best effort: a file the manifest no longer names is garbage, never a generation.
        for old in dropped {
            let _ = std::fs::remove_file(self.dir.join(old.file));
        }
        Ok(generation)
    }

    /// Discards every generation after generation `n` (a run resumed from `n` replaces the
    /// states they hold): the manifest stops naming them, durably, then their files are
    /// removed. The high-water mark stays, so their numbers are never reused. Returns the
    /// generations discarded, oldest first.
    ///
    /// # Errors
    ///
    /// As [`GenerationStore::list`]; [`StoreError::Write`] when the manifest cannot be
    /// rewritten (it then still names them).
    pub fn discard_after(&self, n: u64) -> Result<Vec<Generation>, StoreError> {
        let mut generations = self.list()?;
        let (kept, discarded): (Vec<Generation>, Vec<Generation>) = generations
            .generations
            .into_iter()
            .partition(|g| g.generation.get() <= n);
        generations.generations = kept;
        if discarded.is_empty() {
            return Ok(discarded);
        }
        let path = self.dir.join(GENERATIONS_FILE);
        let bytes = canonical_line(&generations).map_err(|e| contract(&path, &e))?;
        // The commit point.
        write_durably(&path, &bytes)?;
        for old in &discarded {
            let _ = std::fs::remove_file(self.dir.join(&old.file));
        }
        Ok(discarded)
    }

    /// Removes leftovers of interrupted commits: temporary files, and generation files the
    /// manifest does not name. Returns how many were removed.
    ///
    /// # Errors
    ///
    /// As [`GenerationStore::list`].
    pub fn sweep(&self) -> Result<usize, StoreError> {
        let named = self.list()?;
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Ok(0);
        };
        let mut removed = 0;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let stray_temp = name.starts_with('.') && name.ends_with(".tmp");
            let stray_generation =
                name.starts_with("gen-") && !named.generations.iter().any(|g| g.file == name);
            if (stray_temp || stray_generation) && std::fs::remove_file(entry.path()).is_ok() {
                removed += 1;
            }
        }
        if removed > 0 {
            sync_dir(&self.dir)?;
        }
        Ok(removed)
    }

    /// Reads generation `g` and verifies it completely: the envelope's every region, then its
    /// length and digest against the store manifest.
    ///
    /// # Errors
    ///
    /// [`StoreError::Checkpoint`] with the envelope's own code for a damaged envelope;
    /// [`StoreError::Generation`] when the file is not the one the manifest committed.
    pub fn verify(&self, g: &Generation) -> Result<(Vec<u8>, Envelope), StoreError> {
        let path = self.dir.join(&g.file);
        let bytes =
            std::fs::read(&path).map_err(|e| StoreError::unreadable(&path, e.to_string()))?;
        let envelope = decode(&bytes).map_err(|source| StoreError::Checkpoint {
            path: path.clone(),
            source: Box::new(source),
        })?;
        let digest = sha256(&bytes);
        if bytes.len() as u64 != g.byte_length.get() || digest != g.digest {
            return Err(StoreError::Generation {
                path,
                reason: format!(
                    "{} bytes hashing to sha256:{digest}; the manifest committed {} bytes, sha256:{}",
                    bytes.len(),
                    g.byte_length,
                    g.digest
                ),
            });
        }
        Ok((bytes, envelope))
    }
}

/// Where durable checkpointing stands (contracts §7: captured, queued, committed, failed and
/// superseded are distinct; only a durable commit moves the high-water mark).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DurableStatus {
    /// Captures handed to the writer.
    pub captured: u64,
    /// Captures waiting now (not counting one being written).
    pub queued: u64,
    /// Bytes of the captures waiting now.
    pub queued_bytes: u64,
    /// Whether a capture is being written now.
    pub writing: bool,
    /// Generations committed durably.
    pub committed: u64,
    /// Captures replaced in the queue by a newer one before they were written.
    pub superseded: u64,
    /// Commits that failed.
    pub failed: u64,
    /// The newest durable generation.
    pub durable: Option<Generation>,
    /// The last failure's message.
    pub last_error: Option<String>,
}

/// Where a [`CheckpointWriter`] puts what it writes: the run's [`GenerationStore`], or a test's
/// instrumented sink.
pub trait GenerationSink: Send + 'static {
    /// Commits one capture durably.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when it is not durable.
    fn commit(&mut self, boundary: u64, id: &Id, bytes: &[u8]) -> Result<Generation, StoreError>;
}

impl GenerationSink for GenerationStore {
    fn commit(&mut self, boundary: u64, id: &Id, bytes: &[u8]) -> Result<Generation, StoreError> {
        GenerationStore::commit(self, boundary, id, bytes)
    }
}

struct Pending {
    boundary: u64,
    id: Id,
    bytes: Vec<u8>,
}

struct Shared {
    state: Mutex<(VecDeque<Pending>, DurableStatus, bool)>,
    changed: Condvar,
}

fn lock(shared: &Shared) -> MutexGuard<'_, (VecDeque<Pending>, DurableStatus, bool)> {
    shared
        .state
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Writes captures on its own thread behind a queue of at most `capacity` captures.
pub struct CheckpointWriter {
    shared: Arc<Shared>,
    capacity: usize,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for CheckpointWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckpointWriter")
            .field("capacity", &self.capacity)
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

/// Captures that may wait at once by default (contracts §7: two outstanding coherent captures).
pub const DEFAULT_QUEUE: usize = 2;

impl CheckpointWriter {
    /// Starts the writer thread over `sink`, with room for `capacity` (at least 1) waiting
    /// captures.
    ///
    /// # Errors
    ///
    /// [`StoreError::Write`] when the thread cannot be started.
    pub fn start(sink: impl GenerationSink, capacity: usize) -> Result<Self, StoreError> {
        let shared = Arc::new(Shared {
            state: Mutex::new((VecDeque::new(), DurableStatus::default(), false)),
            changed: Condvar::new(),
        });
        let worker = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("flysim-checkpoints".into())
            .spawn(move || write_loop(&worker, sink))
            .map_err(|e| StoreError::write("start the writer for", Path::new("checkpoints"), e))?;
        Ok(Self {
            shared,
            capacity: capacity.max(1),
            thread: Some(thread),
        })
    }

    /// Hands a capture over without waiting for the disk. When the queue is full its newest
    /// waiting capture is replaced (and counted superseded); the one being written is not.
    pub fn submit(&self, boundary: u64, id: Id, bytes: Vec<u8>) {
        let mut state = lock(&self.shared);
        let (queue, status, _) = &mut *state;
        status.captured += 1;
        if queue.len() >= self.capacity
            && let Some(old) = queue.pop_back()
        {
            status.superseded += 1;
            status.queued_bytes -= old.bytes.len() as u64;
        }
        status.queued_bytes += bytes.len() as u64;
        queue.push_back(Pending {
            boundary,
            id,
            bytes,
        });
        status.queued = queue.len() as u64;
        drop(state);
        self.shared.changed.notify_all();
    }

    /// The status now.
    #[must_use]
    pub fn status(&self) -> DurableStatus {
        lock(&self.shared).1.clone()
    }

    /// Waits until every submitted capture is committed or failed, and returns the status.
    #[must_use]
    pub fn flush(&self) -> DurableStatus {
        let mut state = lock(&self.shared);
        while !state.0.is_empty() || state.1.writing {
            state = self
                .shared
                .changed
                .wait(state)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        state.1.clone()
    }

    /// Flushes, stops the thread and returns the final status.
    #[must_use]
    pub fn finish(mut self) -> DurableStatus {
        let status = self.flush();
        self.stop();
        status
    }

    fn stop(&mut self) {
        lock(&self.shared).2 = true;
        self.shared.changed.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for CheckpointWriter {
    fn drop(&mut self) {
        self.stop();
    }
}

fn write_loop(shared: &Shared, mut sink: impl GenerationSink) {
    loop {
        let next = {
            let mut state = lock(shared);
            loop {
                if let Some(p) = state.0.pop_front() {
                    state.1.queued = state.0.len() as u64;
                    state.1.queued_bytes -= p.bytes.len() as u64;
                    state.1.writing = true;
                    break p;
                }
                if state.2 {
                    return;
                }
                state = shared
                    .changed
                    .wait(state)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
        };
        let result = sink.commit(next.boundary, &next.id, &next.bytes);
        {
            let mut state = lock(shared);
            let status = &mut state.1;
            status.writing = false;
            match result {
                Ok(g) => {
                    status.committed += 1;
                    status.durable = Some(g);
                }
                Err(e) => {
                    status.failed += 1;
                    status.last_error = Some(e.to_string());
                }
            }
        }
        shared.changed.notify_all();
    }
}

/// Whether `e` is one of the envelope's own refusals.
#[must_use]
pub fn envelope_error(e: &StoreError) -> Option<&EnvelopeError> {
    match e {
        StoreError::Checkpoint { source, .. } => Some(source),
        _ => None,
    }
}
