//! Run directories: where a run's plan, behaviour trace and manifest live on disk.
//!
//! A run writes `<state-dir>/runs/<runId>/`:
//!
//! - `plan.json`: the launch plan, RFC 8785 canonical JSON and a final newline;
//! - `trace.ndjson`: one [`TransitionTrace`] per committed boundary, each line the canonical
//!   JSON of `{"behaviour", "operational"}`; the run digest is over the behaviour parts only;
//! - `manifest.json`: the [`RunManifest`] (plan digest, run digest, build identity, the `--steps`
//!   bound, how the run was executed, timings), canonical JSON and a final newline.
//!
//! `plan.json` and `manifest.json` are written durably: a temporary file in the same directory,
//! `fsync`, `rename` over the final name, `fsync` of the directory ([`write_durably`]). The trace
//! is appended line by line and `fsync`ed before the manifest that names its digest is written,
//! so a manifest never names rows that are not on disk.
//!
//! While a fresh run writes, `.reserve` keeps room for its manifest on a disk the run fills
//! ([`RESERVE_FILE`]); it is gone once the writer lets go.
//!
//! One writer at a time: [`RunStore::create`] and the resume path lock the directory
//! ([`RunLock`], `.lock`) before anything in it is swept, cut or written, and the writer holds
//! the lock until it is dropped; a second writer is refused ([`StoreError::Locked`]) and changes
//! nothing.
//!
//! Run ids are chosen by the caller's allocation rule ([`RunStore::allocate`]): the plan's name,
//! the first 12 hex digits of its digest and the first free counter. They never reach behaviour.
//!
//! **Invariant:** the store knows files and the trace format, nothing of sessions, transports or
//! workers; it reads no clock and no environment (timings come from its caller).

use std::fs::{File, OpenOptions};
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};

mod appender;
pub mod generations;
mod lock;
mod reserve;

use appender::{Appender, Target};
pub use lock::{LOCK_FILE, RunLock};
pub use reserve::RESERVE_FILE;
use reserve::Reserve;

use flysim_types::plan::LaunchPlan;
use flysim_types::trace::{RowText, RunDigester, RunManifest, RunStatus, TransitionTrace};
use flysim_types::{ContractError, Digest, Id, parse_payload};
use miette::Diagnostic;
use thiserror::Error;

/// The plan file of a run directory.
pub const PLAN_FILE: &str = "plan.json";
/// The trace file of a run directory.
pub const TRACE_FILE: &str = "trace.ndjson";
/// The manifest file of a run directory.
pub const MANIFEST_FILE: &str = "manifest.json";
/// The directory under the state directory that holds run directories.
pub const RUNS_DIR: &str = "runs";

/// What the store can fail with.
#[derive(Debug, Error, Diagnostic)]
pub enum StoreError {
    /// A file or directory of a run could not be created, written or synced.
    #[error("cannot {action} {}: {source}", path.display())]
    #[diagnostic(
        code("FS0401"),
        help("choose a writable state directory, and check its free space")
    )]
    Write {
        /// What was attempted.
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A run directory that cannot be read back: a missing or malformed file.
    #[error("{} is not a readable run directory: {reason}", path.display())]
    #[diagnostic(
        code("FS0402"),
        help(
            "a run directory holds plan.json, trace.ndjson and manifest.json as the run wrote them"
        )
    )]
    Unreadable {
        /// The file at fault.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The rows of `trace.ndjson` do not hash to the run digest the manifest records.
    #[error(
        "{}: the trace's rows hash to sha256:{found}, the manifest records sha256:{recorded}",
        path.display()
    )]
    #[diagnostic(
        code("FS0403"),
        help("the run directory was altered or damaged after the run; run the plan again")
    )]
    Damaged {
        /// The run directory.
        path: PathBuf,
        /// What the manifest says.
        recorded: Digest,
        /// What the rows give.
        found: Digest,
    },
    /// A checkpoint generation whose envelope is damaged: the envelope's own code names the
    /// region (`FS044x`).
    #[error("{}: {source}", path.display())]
    #[diagnostic(forward(source))]
    Checkpoint {
        /// The generation file.
        path: PathBuf,
        /// The envelope's refusal.
        source: Box<flysim_types::checkpoint::EnvelopeError>,
    },
    /// A generation file that is a valid envelope but not the one the store manifest committed.
    #[error("{} is not the generation the manifest committed: {reason}", path.display())]
    #[diagnostic(
        code("FS0405"),
        help("the file was replaced or damaged after its commit; resume from an older generation")
    )]
    Generation {
        /// The generation file.
        path: PathBuf,
        /// What differs.
        reason: String,
    },
    /// Checkpoints of a run that did not become durable.
    #[error("{failed} checkpoint(s) of {} did not become durable: {last}", path.display())]
    #[diagnostic(
        code("FS0407"),
        help(
            "the run's rows stand, but a resume starts from the newest durable generation; check the disk and its free space"
        )
    )]
    NotDurable {
        /// The run directory.
        path: PathBuf,
        /// Commits that failed.
        failed: u64,
        /// The last failure.
        last: String,
    },
    /// A run that ended, but whose final manifest could not be written (a full disk): the
    /// manifest on disk is the one before (a fresh run's says `running`).
    #[error(
        "the run in {} ended {ended}, but its manifest could not be written: {source}; the manifest on disk is the last one written before",
        path.display()
    )]
    #[diagnostic(
        code("FS0409"),
        help(
            "free space on the disk; the trace holds the rows it took whole and the durable checkpoints stand, so the run can be resumed from the newest"
        )
    )]
    ManifestUnwritten {
        /// The run directory.
        path: PathBuf,
        /// How the run ended: its status, and a failure's code and message.
        ended: String,
        /// Why the manifest could not be written.
        source: Box<StoreError>,
    },
    /// A run directory another writer (a run or a resume) holds.
    #[error("{} is being written by another writer, {}", path.display(), holder_named(*pid))]
    #[diagnostic(
        code("FS0408"),
        help(
            "a run directory has one writer at a time; wait until the other one ends (or stop it), then try again"
        )
    )]
    Locked {
        /// The run directory.
        path: PathBuf,
        /// The holder's process id, as its lock file records it.
        pid: Option<u32>,
    },
    /// A run directory with no durable checkpoint to resume from.
    #[error("{} has no durable checkpoint{reason}", path.display())]
    #[diagnostic(
        code("FS0406"),
        help("declare `run {{ checkpoint every=N }}` in the composition to keep checkpoints")
    )]
    NoCheckpoint {
        /// The run directory.
        path: PathBuf,
        /// What was looked for, if more than the newest.
        reason: String,
    },
}

fn holder_named(pid: Option<u32>) -> String {
    pid.map_or_else(
        || "a process that has not yet recorded its id".to_owned(),
        |pid| format!("process {pid}"),
    )
}

impl StoreError {
    /// The registered diagnostic code.
    #[must_use]
    pub fn code_str(&self) -> String {
        Diagnostic::code(self)
            .map(|c| c.to_string())
            .unwrap_or_default()
    }

    pub(crate) fn write(action: &'static str, path: &Path, source: std::io::Error) -> Self {
        Self::Write {
            action,
            path: path.to_owned(),
            source,
        }
    }

    pub(crate) fn unreadable(path: &Path, reason: impl Into<String>) -> Self {
        Self::Unreadable {
            path: path.to_owned(),
            reason: reason.into(),
        }
    }
}

/// Writes `bytes` to `path` durably: temporary file beside it, `fsync`, `rename`, `fsync` of the
/// directory. A reader sees the old content or the new one, never a mix, and a write that fails
/// (a full disk, an unwritable directory) removes its temporary file.
///
/// # Errors
///
/// [`StoreError::Write`] naming the step that failed.
pub fn write_durably(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(".{name}.tmp"));
    let renamed = (|| {
        let mut file = File::create(&temp).map_err(|e| StoreError::write("create", &temp, e))?;
        file.write_all(bytes)
            .map_err(|e| StoreError::write("write", &temp, e))?;
        file.sync_all()
            .map_err(|e| StoreError::write("sync", &temp, e))?;
        drop(file);
        std::fs::rename(&temp, path).map_err(|e| StoreError::write("rename", path, e))
    })();
    if renamed.is_err() {
        // Best effort: what is left is a stray temporary file a later sweep removes.
        let _ = std::fs::remove_file(&temp);
    }
    renamed?;
    sync_dir(dir)
}

fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StoreError::write("sync directory", dir, e))
}

fn canonical_line<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, ContractError> {
    let mut text = flysim_types::payload::to_canonical(value)?.into_bytes();
    text.push(b'\n');
    Ok(text)
}

fn contract(path: &Path, e: &ContractError) -> StoreError {
    StoreError::unreadable(path, e.to_string())
}

/// The runs of one state directory.
#[derive(Debug, Clone)]
pub struct RunStore {
    runs: PathBuf,
}

impl RunStore {
    /// The store under `state_dir` (its `runs/` directory is created on first use).
    #[must_use]
    pub fn at(state_dir: &Path) -> Self {
        Self {
            runs: state_dir.join(RUNS_DIR),
        }
    }

    /// The directory that holds the run directories.
    #[must_use]
    pub fn runs_dir(&self) -> &Path {
        &self.runs
    }

    /// Allocates a fresh run id for `plan` and creates its directory (atomically: two
    /// invocations never share one): `<name>-<first 12 hex of planDigest>-<n>`, `n` the first
    /// counter from 1 whose directory does not exist yet. The name part is the plan's name when
    /// it is a short `Id`, else `run`.
    ///
    /// # Errors
    ///
    /// [`StoreError::Write`] when the directory cannot be created.
    pub fn allocate(&self, plan: &LaunchPlan) -> Result<(Id, PathBuf), StoreError> {
        std::fs::create_dir_all(&self.runs)
            .map_err(|e| StoreError::write("create", &self.runs, e))?;
        let name = Id::parse(&plan.name)
            .ok()
            .filter(|n| n.as_str().len() <= 32)
            .map_or_else(|| "run".to_owned(), |n| n.as_str().to_owned());
        let prefix = format!("{name}-{}", &plan.plan_digest.hex()[..12]);
        for n in 1u64.. {
            let id = Id::parse(&format!("{prefix}-{n}"))
                .map_err(|e| StoreError::unreadable(&self.runs, e.to_string()))?;
            let dir = self.runs.join(id.as_str());
            match std::fs::create_dir(&dir) {
                Ok(()) => return Ok((id, dir)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(StoreError::write("create", &dir, e)),
            }
        }
        Err(StoreError::unreadable(&self.runs, "no free run id"))
    }

    /// Allocates a run directory for `plan`, locks it and writes its `plan.json`.
    ///
    /// # Errors
    ///
    /// As [`RunStore::allocate`], [`RunLock::acquire`] and [`write_durably`].
    pub fn create(&self, plan: &LaunchPlan) -> Result<RunWriter, StoreError> {
        let (run_id, dir) = self.allocate(plan)?;
        RunWriter::create(run_id, RunLock::acquire(&dir)?, plan)
    }
}

/// An open run directory being written.
///
/// Rows are hashed and written by a thread of the writer's own ([`appender`]): appending one
/// costs its caller a hand-over. Rows are durable only once synced (before every checkpoint
/// generation and at the end of an invocation), as they always were behind a write buffer.
pub struct RunWriter {
    run_id: Id,
    appender: Appender,
    /// Room for the manifest on a disk the run filled.
    reserve: Reserve,
    /// Dropped last: the rows still waiting are written before another writer may start.
    lock: RunLock,
}

impl std::fmt::Debug for RunWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunWriter")
            .field("run_id", &self.run_id)
            .field("dir", &self.lock.dir())
            .field("rows", &self.appender.rows())
            .finish_non_exhaustive()
    }
}

impl RunWriter {
    /// Writes `plan.json` into the directory `lock` holds and opens an empty `trace.ndjson`.
    ///
    /// # Errors
    ///
    /// [`StoreError::Write`].
    pub fn create(run_id: Id, lock: RunLock, plan: &LaunchPlan) -> Result<Self, StoreError> {
        let dir = lock.dir();
        let plan_path = dir.join(PLAN_FILE);
        let bytes = canonical_line(plan).map_err(|e| contract(&plan_path, &e))?;
        write_durably(&plan_path, &bytes)?;
        let trace_path = dir.join(TRACE_FILE);
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(&trace_path)
            .map_err(|e| StoreError::write("create", &trace_path, e))?;
        let reserve = Reserve::make(dir)?;
        sync_dir(dir)?;
        let appender = Appender::start(
            Target {
                path: trace_path,
                file,
                cut_at: None,
            },
            RunDigester::new(&plan.plan_digest),
        )?;
        Ok(Self {
            run_id,
            appender,
            reserve,
            lock,
        })
    }

    /// Reopens the run directory of `plan` that `lock` holds to continue after the committed
    /// boundary `boundary`: the trace keeps its rows `0..=boundary` (a torn last line from a killed
    /// writer and any row after the boundary are cut off, durably) and is appended to from
    /// there. Nothing on disk changes until the first row is appended or the trace is synced,
    /// so a resume refused before it plays leaves the directory as it was. Returns the writer
    /// and the rows kept.
    ///
    /// # Errors
    ///
    /// [`StoreError::Unreadable`] when the trace does not hold every row up to the boundary or
    /// holds a malformed one; [`StoreError::Write`].
    pub fn resume(
        run_id: Id,
        lock: RunLock,
        plan: &LaunchPlan,
        boundary: u64,
    ) -> Result<(Self, Vec<TransitionTrace>), StoreError> {
        let trace_path = lock.dir().join(TRACE_FILE);
        let bytes = std::fs::read(&trace_path)
            .map_err(|e| StoreError::unreadable(&trace_path, e.to_string()))?;
        let mut rows = Vec::new();
        let mut digester = RunDigester::new(&plan.plan_digest);
        let mut kept = 0usize;
        for line in bytes.split_inclusive(|b| *b == b'\n') {
            if rows.len() as u64 > boundary || !line.ends_with(b"\n") {
                break;
            }
            let row: TransitionTrace = parse_payload(&line[..line.len() - 1]).map_err(|e| {
                StoreError::unreadable(&trace_path, format!("line {}: {e}", rows.len() + 1))
            })?;
            if row.behaviour.boundary.get() != rows.len() as u64 {
                return Err(StoreError::unreadable(
                    &trace_path,
                    format!("line {} is not boundary {}", rows.len() + 1, rows.len()),
                ));
            }
            digester
                .push(&row.behaviour)
                .map_err(|e| contract(&trace_path, &e))?;
            kept += line.len();
            rows.push(row);
        }
        if (rows.len() as u64) <= boundary {
            return Err(StoreError::unreadable(
                &trace_path,
                format!(
                    "it holds {} complete rows; resuming at boundary {boundary} needs {}",
                    rows.len(),
                    boundary + 1
                ),
            ));
        }
        let file = OpenOptions::new()
            .append(true)
            .open(&trace_path)
            .map_err(|e| StoreError::write("open", &trace_path, e))?;
        let appender = Appender::start(
            Target {
                path: trace_path,
                file,
                cut_at: Some(kept as u64),
            },
            digester,
        )?;
        Ok((
            Self {
                run_id,
                appender,
                reserve: Reserve::left_in(lock.dir()),
                lock,
            },
            rows,
        ))
    }

    /// The run id.
    #[must_use]
    pub fn run_id(&self) -> &Id {
        &self.run_id
    }

    /// The run directory.
    #[must_use]
    pub fn dir(&self) -> &Path {
        self.lock.dir()
    }

    /// Appends one committed boundary.
    ///
    /// # Errors
    ///
    /// [`StoreError::Write`].
    pub fn append(&mut self, row: &TransitionTrace) -> Result<(), StoreError> {
        let text = row
            .text()
            .map_err(|e| contract(&self.lock.dir().join(TRACE_FILE), &e))?;
        self.append_text(text)
    }

    /// [`RunWriter::append`] of a row whose canonical text its committer already wrote. The
    /// row is written beside the caller; a failure to write it is reported by a later append,
    /// [`RunWriter::sync`] or [`RunWriter::write_manifest`].
    ///
    /// # Errors
    ///
    /// [`StoreError::Write`]: an earlier row could not be written.
    pub fn append_text(&mut self, text: RowText) -> Result<(), StoreError> {
        self.appender.push(text)
    }

    /// Rows appended so far.
    #[must_use]
    pub fn rows(&self) -> u64 {
        self.appender.rows()
    }

    /// The run digest of the rows appended so far (waiting until they are hashed). A row that
    /// could not be written still counts here; [`RunWriter::sync`] reports the failure.
    #[must_use]
    pub fn run_digest(&self) -> Digest {
        self.appender.drain(false).0.digest()
    }

    /// Waits for every appended row, then flushes and `fsync`s the trace.
    ///
    /// # Errors
    ///
    /// [`StoreError::Write`].
    pub fn sync(&mut self) -> Result<(), StoreError> {
        self.appender.drain(true).1
    }

    /// The rows the trace file holds whole (every row appended, unless a write failed; then the
    /// rows before the failure, the file cut back to them) and their run digest: what a failed
    /// run's manifest names.
    #[must_use]
    pub fn held(&self) -> (u64, Digest) {
        let held = self.appender.held();
        (held.rows(), held.digest())
    }

    /// Syncs the trace, then writes `manifest` durably. The manifest's run digest must be the
    /// digest of the rows written; a `failed` manifest of a trace that could not be written
    /// names the rows the trace holds ([`RunWriter::held`]).
    ///
    /// # Errors
    ///
    /// [`StoreError::Write`]; [`StoreError::Damaged`] when the manifest names another digest.
    pub fn write_manifest(&mut self, manifest: &RunManifest) -> Result<(), StoreError> {
        let digest = match self.sync() {
            Ok(()) => self.run_digest(),
            Err(_) if manifest.status == RunStatus::Failed => self.held().1,
            Err(e) => return Err(e),
        };
        if manifest.run_digest != digest {
            return Err(StoreError::Damaged {
                path: self.dir().to_owned(),
                recorded: manifest.run_digest,
                found: digest,
            });
        }
        let path = self.dir().join(MANIFEST_FILE);
        let bytes = canonical_line(manifest).map_err(|e| contract(&path, &e))?;
        // On a disk the run filled, the reserve gives the manifest its room.
        let written = write_durably(&path, &bytes).or_else(|e| {
            if self.reserve.release() {
                write_durably(&path, &bytes)
            } else {
                Err(e)
            }
        });
        if written.is_ok() {
            self.reserve.written();
        }
        written
    }
}

/// A run directory read back and checked.
#[derive(Debug, Clone)]
pub struct RunRecord {
    /// The directory.
    pub dir: PathBuf,
    /// Its plan (validated, digests included).
    pub plan: LaunchPlan,
    /// Its manifest.
    pub manifest: RunManifest,
    /// Its rows, in boundary order.
    pub rows: Vec<TransitionTrace>,
}

/// Reads a run directory's plan and manifest without checking the trace against the manifest:
/// what `flysim resume` needs of a run that may have been killed mid-write (its manifest then
/// still says `running`).
///
/// # Errors
///
/// [`StoreError::Unreadable`] for a missing or malformed file, or a manifest of another plan.
pub fn open_plan(dir: &Path) -> Result<(LaunchPlan, RunManifest), StoreError> {
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read(&path)
            .map(|b| (path.clone(), b))
            .map_err(|e| StoreError::unreadable(&path, e.to_string()))
    };
    let (plan_path, bytes) = read(PLAN_FILE)?;
    let plan: LaunchPlan = parse_payload(&bytes).map_err(|e| contract(&plan_path, &e))?;
    let (manifest_path, bytes) = read(MANIFEST_FILE)?;
    let manifest: RunManifest = parse_payload(&bytes).map_err(|e| contract(&manifest_path, &e))?;
    if manifest.plan_digest != plan.plan_digest {
        return Err(StoreError::unreadable(
            &manifest_path,
            format!(
                "the manifest names plan sha256:{}, plan.json is sha256:{}",
                manifest.plan_digest, plan.plan_digest
            ),
        ));
    }
    Ok((plan, manifest))
}

/// Reads a run directory: the plan and manifest through the contract's strict reader, every
/// trace row likewise, and checks that the rows hash to the manifest's run digest and that the
/// manifest names the plan.
///
/// # Errors
///
/// [`StoreError::Unreadable`] for a missing or malformed file, [`StoreError::Damaged`] when the
/// rows do not hash to the recorded digest.
pub fn open_run(dir: &Path) -> Result<RunRecord, StoreError> {
    let (plan, manifest) = open_plan(dir)?;
    let trace_path = dir.join(TRACE_FILE);
    let file =
        File::open(&trace_path).map_err(|e| StoreError::unreadable(&trace_path, e.to_string()))?;
    let mut rows = Vec::new();
    let mut digester = RunDigester::new(&plan.plan_digest);
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| StoreError::unreadable(&trace_path, e.to_string()))?;
        let row: TransitionTrace = parse_payload(line.as_bytes())
            .map_err(|e| StoreError::unreadable(&trace_path, format!("line {}: {e}", i + 1)))?;
        if row.behaviour.boundary.get() != i as u64 {
            return Err(StoreError::unreadable(
                &trace_path,
                format!(
                    "line {} holds boundary {}, expected {i}",
                    i + 1,
                    row.behaviour.boundary
                ),
            ));
        }
        digester
            .push(&row.behaviour)
            .map_err(|e| contract(&trace_path, &e))?;
        rows.push(row);
    }
    let found = digester.digest();
    if found != manifest.run_digest {
        return Err(StoreError::Damaged {
            path: dir.to_owned(),
            recorded: manifest.run_digest,
            found,
        });
    }
    Ok(RunRecord {
        dir: dir.to_owned(),
        plan,
        manifest,
        rows,
    })
}
