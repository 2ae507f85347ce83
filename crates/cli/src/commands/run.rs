//! `flysim run FILE.kdl` (and `flysim FILE.kdl`): run a composition and write its run
//! directory; `flysim resume RUN_DIR`: continue it from its newest durable checkpoint;
//! `flysim checkpoints RUN_DIR`: list its generations; `flysim replay RUN_DIR`: re-execute a
//! recorded run and check its digest.

use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use flysim_session::launcher::{LaunchOptions, WorkerProgram, admit};
use flysim_session::{
    Deadlines, ResumeFrom, RunHooks, RunOptions, RunSink, SessionError, Stop, run_plan,
    run_plan_into,
};
use flysim_store::generations::{CheckpointWriter, DEFAULT_QUEUE, Generation, GenerationStore};
use flysim_store::{RunStore, RunWriter, StoreError, open_plan, open_run};
use flysim_types::plan::{LaunchPlan, RunMode, Transport};
use flysim_types::trace::{
    DispatchOrder, ExecutionRecord, MANIFEST_FORMAT_VERSION, RunFailure, RunManifest, RunStatus,
    RunTimings,
};
use flysim_types::{Digest, U64};

use super::resolve_composition;
use crate::error::CliError;

fn parse_mode(s: &str) -> Result<RunMode, String> {
    RunMode::ALL
        .iter()
        .find(|(n, _)| *n == s)
        .map(|(_, m)| *m)
        .ok_or_else(|| "one of in-process, thread, process".into())
}

fn parse_transport(s: &str) -> Result<Transport, String> {
    Transport::ALL
        .iter()
        .find(|(n, _)| *n == s)
        .map(|(_, t)| *t)
        .ok_or_else(|| "one of memory, unix".into())
}

fn parse_dispatch(s: &str) -> Result<DispatchOrder, String> {
    DispatchOrder::ALL
        .iter()
        .find(|(n, _)| *n == s)
        .map(|(_, d)| *d)
        .ok_or_else(|| "one of sequential, concurrent, reversed".into())
}

fn parse_digest(s: &str) -> Result<Digest, String> {
    let hex = s
        .strip_prefix("sha256:")
        .ok_or("a digest is written sha256:<64 hex>")?;
    Digest::parse(hex).map_err(|e| e.to_string())
}

/// Arguments of `flysim run`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The composition (.kdl)
    #[arg(value_name = "FILE.kdl")]
    input: PathBuf,
    /// Commit at most N steps in this invocation (the plan is unchanged; the manifest records N)
    #[arg(long, value_name = "N")]
    steps: Option<u64>,
    /// Where workers run (default: the composition's `run { mode }`)
    #[arg(long, value_parser = parse_mode, value_name = "in-process|thread|process")]
    mode: Option<RunMode>,
    /// How they talk (default: the composition's `run { transport }`)
    #[arg(long, value_parser = parse_transport, value_name = "memory|unix")]
    transport: Option<Transport>,
    /// The order agent calls are dispatched in (never changes behaviour)
    #[arg(long, value_parser = parse_dispatch, default_value = "concurrent", value_name = "sequential|concurrent|reversed")]
    dispatch: DispatchOrder,
    /// Threads per agent worker (default: each agent's `threads`)
    #[arg(long, value_name = "N")]
    worker_threads: Option<u32>,
    /// The state directory; runs go to DIR/runs/<runId>/ (default: $FLYSIM_HOME/state, else ./.flysim)
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    #[command(flatten)]
    polling: Polling,
    /// Print one JSON object {"runId","planDigest","runDigest","steps","runDir"} instead of the final line
    #[arg(long)]
    json: bool,
}

/// How the coordinator waits for replies (`flysim run`, `flysim resume`).
#[derive(Debug, clap::Args)]
struct Polling {
    /// Thread and process modes: microseconds (at most 1000000) the coordinator keeps polling
    /// for a due reply before it sleeps; 0 never polls (costs CPU, saves the wake-up; never
    /// changes behaviour)
    #[arg(long, value_name = "US", default_value_t = flysim_session::spin::DEFAULT_BUSY_POLL_US,
          value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    busy_poll_us: u64,
}

impl Polling {
    fn window(&self) -> Duration {
        Duration::from_micros(self.busy_poll_us)
    }
}

/// Arguments of `flysim replay`.
#[derive(Debug, clap::Args)]
pub(crate) struct ReplayArgs {
    /// A run directory written by `flysim run`
    #[arg(value_name = "RUN_DIR")]
    dir: PathBuf,
    /// Also require this run digest
    #[arg(long, value_parser = parse_digest, value_name = "sha256:HEX")]
    assert_digest: Option<Digest>,
}

/// The state directory: `--state-dir`, else `$FLYSIM_HOME/state`, else `./.flysim`.
fn state_dir(arg: Option<&Path>) -> PathBuf {
    if let Some(dir) = arg {
        return dir.to_owned();
    }
    match std::env::var_os("FLYSIM_HOME").filter(|v| !v.is_empty()) {
        Some(home) => PathBuf::from(home).join("state"),
        None => PathBuf::from(".flysim"),
    }
}

/// Where the private runtime directory (socket, artifact store, plan copy) is created: the
/// tmpfs `/dev/shm` when it exists (frames are files; tmpfs keeps them off the disk), else the
/// system's temporary directory.
fn runtime_parent() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_owned()
    } else {
        std::env::temp_dir()
    }
}

/// Whether in-process and thread workers are reached through their local lanes (contracts
/// §3.11); `FLY_SESSION_LOCAL_LANE=0` forces the bus. The run's behaviour is the same either way.
fn local_lane() -> bool {
    std::env::var_os("FLY_SESSION_LOCAL_LANE").is_none_or(|v| v != "0")
}

/// This executable as the worker program. A worker process starts with a cleared environment;
/// it gets only the Dolphin and Xvfb this process resolved (`FLYSIM_DOLPHIN`, `FLYSIM_XVFB`), so
/// a Dolphin world in a worker process runs exactly the tools an in-process one would.
fn program() -> Option<WorkerProgram> {
    let tools = super::components::dolphin_tools();
    let env = [
        ("FLYSIM_DOLPHIN", tools.dolphin),
        ("FLYSIM_XVFB", tools.xvfb),
    ]
    .into_iter()
    .filter_map(|(var, path)| Some((var.to_owned(), path?.into_os_string())))
    .collect();
    std::env::current_exe().ok().map(|exe| WorkerProgram {
        exe,
        args: Vec::new(),
        env,
    })
}

fn now_unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(0))
}

fn nanos(d: std::time::Duration) -> U64 {
    U64(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// A progress bar on standard error, drawn only when it is a terminal.
struct Progress {
    on: bool,
    total: u64,
    last: std::time::Instant,
}

impl Progress {
    fn new(total: u64) -> Self {
        Self {
            on: std::io::stderr().is_terminal(),
            total,
            last: std::time::Instant::now(),
        }
    }

    fn draw(&mut self, done: u64) {
        if !self.on || (self.last.elapsed().as_millis() < 100 && done < self.total) {
            return;
        }
        self.last = std::time::Instant::now();
        let width = 30u64;
        let filled = (done * width).checked_div(self.total).unwrap_or(width);
        let bar: String = (0..width)
            .map(|i| if i < filled { '#' } else { '.' })
            .collect();
        let _ = write!(std::io::stderr(), "\r[{bar}] {done}/{} steps", self.total);
    }

    fn clear(&self) {
        if self.on {
            let _ = write!(std::io::stderr(), "\r{}\r", " ".repeat(60));
        }
    }
}

/// The options of a run of `plan`.
fn options(plan: &LaunchPlan, args: &Args, steps: u64) -> RunOptions {
    RunOptions {
        launch: LaunchOptions {
            mode: args.mode.unwrap_or(plan.run.mode),
            transport: args.transport.unwrap_or(plan.run.transport),
            worker_threads: args.worker_threads,
            runtime_parent: runtime_parent(),
            program: program(),
            faults: std::collections::BTreeMap::new(),
            content: std::collections::BTreeMap::new(),
            local_lane: local_lane(),
        },
        dispatch: args.dispatch,
        steps,
        deadlines: Deadlines::default(),
        session_id: flysim_types::Id::from_static("pending"),
        checkpoint_every: plan.run.checkpoint_every.map(U64::get),
        resume: None,
        busy_poll: args.polling.window(),
    }
}

/// Writes every content asset of the plan into `<runDir>/content/<sha256hex>`, so the run
/// directory alone can be resumed or replayed.
fn keep_content(
    dir: &Path,
    content: &std::collections::BTreeMap<Digest, Vec<u8>>,
) -> Result<(), CliError> {
    if content.is_empty() {
        return Ok(());
    }
    let content_dir = dir.join(CONTENT_DIR);
    std::fs::create_dir_all(&content_dir).map_err(|source| CliError::WriteOutput {
        path: content_dir.clone(),
        source,
    })?;
    for (digest, bytes) in content {
        flysim_store::write_durably(&content_dir.join(digest.hex()), bytes)?;
    }
    Ok(())
}

/// The directory of a run directory that keeps its content assets by digest.
const CONTENT_DIR: &str = "content";

/// The sink of `flysim run` and `flysim resume`: rows to the trace, checkpoints to the
/// generation writer once the trace holds their rows durably.
struct Sink<'a> {
    writer: &'a mut RunWriter,
    checkpoints: Option<&'a CheckpointWriter>,
    progress: Progress,
    /// The `running` manifest a resumed invocation writes with its first row.
    running: Option<RunManifest>,
    /// Rows this invocation committed.
    new_rows: u64,
}

impl Sink<'_> {
    /// After a row is in the trace: the first row's manifest, progress.
    fn appended(&mut self, row: &flysim_types::trace::TransitionTrace) -> Result<(), SessionError> {
        self.new_rows += 1;
        if let Some(mut running) = self.running.take() {
            running.steps = U64(self.writer.rows().saturating_sub(1));
            running.run_digest = self.writer.run_digest();
            self.writer.write_manifest(&running)?;
        }
        self.progress.draw(row.behaviour.boundary.get());
        Ok(())
    }
}

impl RunSink for Sink<'_> {
    fn row(&mut self, row: &flysim_types::trace::TransitionTrace) -> Result<(), SessionError> {
        self.writer.append(row)?;
        self.appended(row)
    }

    fn row_text(
        &mut self,
        row: &flysim_types::trace::TransitionTrace,
        text: flysim_types::trace::RowText,
    ) -> Result<(), SessionError> {
        self.writer.append_text(text)?;
        self.appended(row)
    }

    fn checkpoint(
        &mut self,
        boundary: u64,
        id: flysim_types::Id,
        envelope: Vec<u8>,
    ) -> Result<(), SessionError> {
        // A generation never names rows the trace could lose.
        self.writer.sync()?;
        if let Some(c) = self.checkpoints {
            c.submit(boundary, id, envelope);
        }
        Ok(())
    }
}

/// One invocation that writes a run directory: `flysim run` or `flysim resume`.
struct Invocation<'a> {
    plan: &'a LaunchPlan,
    options: RunOptions,
    registry: flysim_session::Registry,
    writer: RunWriter,
    /// The boundary this invocation runs to, as the manifest records it.
    steps_bound: Option<U64>,
    json: bool,
}

fn manifest_of(
    inv: &Invocation<'_>,
    status: RunStatus,
    failure: Option<RunFailure>,
    steps: u64,
    run_digest: Digest,
    timings: RunTimings,
) -> RunManifest {
    let worker_threads = inv
        .options
        .launch
        .worker_threads
        .unwrap_or_else(|| inv.plan.agents.first().map_or(1, |a| a.threads));
    RunManifest {
        format_version: MANIFEST_FORMAT_VERSION,
        run_id: inv.writer.run_id().clone(),
        plan_digest: inv.plan.plan_digest,
        contract_digest: flysim_types::schema::contract_digest(),
        build: flysim_worker::identity::build_identity(),
        status,
        steps_bound: inv.steps_bound,
        steps: U64(steps),
        run_digest,
        failure,
        execution: ExecutionRecord {
            mode: inv.options.launch.mode,
            transport: inv.options.launch.transport,
            dispatch: inv.options.dispatch,
            worker_threads,
        },
        timings,
    }
}

/// Runs an invocation: a `running` manifest first (so a killed run still names its bound),
/// the steps, the checkpoints made durable, the final manifest, the final line.
fn execute(mut inv: Invocation<'_>) -> Result<String, CliError> {
    let started = std::time::Instant::now();
    let started_ms = now_unix_ms();
    let timings = |steps_ns: u64| RunTimings {
        started_unix_ms: U64(started_ms),
        wall_time_ns: nanos(started.elapsed()),
        steps_ns: U64(steps_ns),
    };
    // A fresh run says at once that it runs (and to which bound); a resumed one only once it
    // commits its first row, so a resume refused before it plays changes nothing.
    let running = manifest_of(
        &inv,
        RunStatus::Running,
        None,
        0,
        inv.writer.run_digest(),
        timings(0),
    );
    let resuming = inv.options.resume.is_some();
    if !resuming {
        inv.writer.write_manifest(&running)?;
    }
    let dir = inv.writer.dir().to_owned();
    let checkpoints = match inv.options.checkpoint_every {
        Some(_) => Some(CheckpointWriter::start(
            GenerationStore::of_run(&dir),
            DEFAULT_QUEUE,
        )?),
        None => None,
    };
    let result = {
        let mut sink = Sink {
            writer: &mut inv.writer,
            checkpoints: checkpoints.as_ref(),
            progress: Progress::new(inv.options.steps),
            running: resuming.then_some(running),
            new_rows: 0,
        };
        let result = run_plan_into(
            inv.plan,
            &inv.options,
            &inv.registry,
            RunHooks::default(),
            &mut sink,
        );
        sink.progress.clear();
        (result, sink.new_rows)
    };
    let (result, new_rows) = result;
    let durable = checkpoints.map(CheckpointWriter::finish);
    let (status, failure, committed, digest, steps_ns) = match &result {
        Ok(outcome) => (
            match outcome.stop {
                Stop::Complete => RunStatus::Complete,
                Stop::Paused { .. } => RunStatus::Paused,
            },
            None,
            outcome.steps,
            outcome.run_digest,
            outcome.steps_ns,
        ),
        Err(f) => (
            RunStatus::Failed,
            Some(RunFailure {
                code: f.error.code_str(),
                message: f.error.to_string(),
            }),
            f.steps,
            f.run_digest,
            0,
        ),
    };
    let outcome = match result {
        // A resume that failed before its first row leaves the run directory untouched.
        Err(f) if resuming && new_rows == 0 => return Err(CliError::session(*f.error)),
        other => other,
    };
    // The manifest names what the trace holds (a failed run's coordinator may hold less).
    let (committed, digest) = if outcome.is_err() {
        (inv.writer.rows().saturating_sub(1), inv.writer.run_digest())
    } else {
        (committed, digest)
    };
    let manifest = manifest_of(&inv, status, failure, committed, digest, timings(steps_ns));
    inv.writer.write_manifest(&manifest)?;
    let outcome = outcome.map_err(|f| CliError::session(*f.error))?;
    if let Some(d) = durable.filter(|d| d.failed > 0) {
        return Err(StoreError::NotDurable {
            path: dir,
            failed: d.failed,
            last: d.last_error.unwrap_or_default(),
        }
        .into());
    }
    let run_id = inv.writer.run_id().clone();
    if inv.json {
        let doc = serde_json::json!({
            "runId": run_id,
            "planDigest": format!("sha256:{}", inv.plan.plan_digest),
            "runDigest": format!("sha256:{}", outcome.run_digest),
            "steps": outcome.steps,
            "runDir": dir.display().to_string(),
        });
        let text =
            flysim_types::json::to_canonical(&doc).map_err(flysim_types::ContractError::from)?;
        return Ok(format!("{text}\n"));
    }
    let mut out = String::new();
    if let Stop::Paused { reason } = &outcome.stop {
        out.push_str(&format!(
            "run {run_id} paused at step {} ({reason})\n",
            outcome.steps
        ));
    }
    out.push_str(&format!(
        "run {run_id} complete: {} steps, runDigest=sha256:{}\n",
        outcome.steps, outcome.run_digest
    ));
    Ok(out)
}

pub(crate) fn run(args: &Args) -> Result<String, CliError> {
    let plan = resolve_composition(&args.input)?;
    let steps = args.steps.unwrap_or(plan.run.steps.get());
    let mut options = options(&plan, args, steps);
    let content = super::components::ContentSource::for_composition(&args.input);
    options.launch.content = content.preload(&plan);
    let registry = super::components::registry(&plan, &content);
    // Refusals before anything starts, the run directory included.
    admit(&plan, &options.launch, &registry).map_err(CliError::session)?;
    let store = RunStore::at(&state_dir(args.state_dir.as_deref()));
    let writer = store.create(&plan)?;
    keep_content(writer.dir(), &options.launch.content)?;
    options.session_id = writer.run_id().clone();
    execute(Invocation {
        plan: &plan,
        options,
        registry,
        writer,
        steps_bound: args.steps.map(U64),
        json: args.json,
    })
}

/// Arguments of `flysim resume`.
#[derive(Debug, clap::Args)]
pub(crate) struct ResumeArgs {
    /// A run directory written by `flysim run`
    #[arg(value_name = "RUN_DIR")]
    dir: PathBuf,
    /// Commit N more steps (default: up to the bound the interrupted invocation recorded)
    #[arg(long, value_name = "N")]
    steps: Option<u64>,
    /// Resume from this generation instead of the newest (`flysim checkpoints` lists them)
    #[arg(long, value_name = "N")]
    generation: Option<u64>,
    /// Where workers run (default: as the run was executed)
    #[arg(long, value_parser = parse_mode, value_name = "in-process|thread|process")]
    mode: Option<RunMode>,
    /// How they talk (default: as the run was executed)
    #[arg(long, value_parser = parse_transport, value_name = "memory|unix")]
    transport: Option<Transport>,
    #[command(flatten)]
    polling: Polling,
    /// Print one JSON object {"runId","planDigest","runDigest","steps","runDir"} instead of the final line
    #[arg(long)]
    json: bool,
}

/// Picks the generation to resume from and verifies it completely.
fn durable_checkpoint(dir: &Path, wanted: Option<u64>) -> Result<(Generation, Vec<u8>), CliError> {
    let store = GenerationStore::of_run(dir);
    // Leftovers of a commit a kill interrupted are never generations.
    store.sweep()?;
    let generations = store.list()?;
    let chosen = match wanted {
        None => generations.newest(),
        Some(n) => generations
            .generations
            .iter()
            .find(|g| g.generation.get() == n),
    };
    let generation = chosen.cloned().ok_or_else(|| StoreError::NoCheckpoint {
        path: dir.to_owned(),
        reason: wanted.map_or_else(String::new, |n| format!(" of generation {n}")),
    })?;
    let (bytes, _) = store.verify(&generation)?;
    Ok((generation, bytes))
}

pub(crate) fn resume(args: &ResumeArgs) -> Result<String, CliError> {
    let (plan, recorded) = open_plan(&args.dir)?;
    let (generation, envelope) = durable_checkpoint(&args.dir, args.generation)?;
    let k = generation.boundary.get();
    let target = match args.steps {
        Some(n) => k.saturating_add(n),
        None => recorded
            .steps_bound
            .map_or(plan.run.steps.get(), U64::get)
            .max(k),
    };
    let content = super::components::ContentSource {
        registry: super::registry_root(),
        content_dir: Some(args.dir.join(CONTENT_DIR)),
        ..Default::default()
    };
    let registry = super::components::registry(&plan, &content);
    let mut options = RunOptions {
        launch: LaunchOptions {
            mode: args.mode.unwrap_or(recorded.execution.mode),
            transport: args.transport.unwrap_or(recorded.execution.transport),
            worker_threads: Some(recorded.execution.worker_threads),
            runtime_parent: runtime_parent(),
            program: program(),
            faults: std::collections::BTreeMap::new(),
            content: content.preload(&plan),
            local_lane: local_lane(),
        },
        dispatch: recorded.execution.dispatch,
        steps: target,
        deadlines: Deadlines::default(),
        session_id: recorded.run_id.clone(),
        checkpoint_every: plan.run.checkpoint_every.map(U64::get),
        resume: None,
        busy_poll: args.polling.window(),
    };
    admit(&plan, &options.launch, &registry).map_err(CliError::session)?;
    let (writer, rows) = RunWriter::resume(recorded.run_id.clone(), args.dir.clone(), &plan, k)?;
    options.resume = Some(ResumeFrom {
        envelope,
        prior: rows.into_iter().map(|r| r.behaviour).collect(),
    });
    execute(Invocation {
        plan: &plan,
        options,
        registry,
        writer,
        steps_bound: Some(U64(target)),
        json: args.json,
    })
}

/// Arguments of `flysim checkpoints`.
#[derive(Debug, clap::Args)]
pub(crate) struct CheckpointsArgs {
    /// A run directory written by `flysim run`
    #[arg(value_name = "RUN_DIR")]
    dir: PathBuf,
}

/// `flysim checkpoints RUN_DIR`: the durable generations, each verified.
pub(crate) fn checkpoints(args: &CheckpointsArgs) -> Result<String, CliError> {
    let store = GenerationStore::of_run(&args.dir);
    let generations = store.list()?;
    if generations.generations.is_empty() {
        return Err(StoreError::NoCheckpoint {
            path: args.dir.clone(),
            reason: String::new(),
        }
        .into());
    }
    let mut out = String::from("generation  boundary  bytes      state     digest\n");
    for g in generations.generations.iter().rev() {
        let state = match store.verify(g) {
            Ok(_) => "verified".to_owned(),
            Err(e) => format!("DAMAGED {}", e.code_str()),
        };
        out.push_str(&format!(
            "{:<10}  {:<8}  {:<9}  {state:<8}  sha256:{}\n",
            g.generation.get(),
            g.boundary.get(),
            g.byte_length.get(),
            g.digest
        ));
    }
    Ok(out)
}

pub(crate) fn replay(args: &ReplayArgs) -> Result<String, CliError> {
    let record = open_run(&args.dir)?;
    let manifest = &record.manifest;
    let options = RunOptions {
        launch: LaunchOptions {
            mode: RunMode::InProcess,
            transport: Transport::Memory,
            worker_threads: Some(manifest.execution.worker_threads),
            runtime_parent: runtime_parent(),
            program: program(),
            faults: std::collections::BTreeMap::new(),
            content: std::collections::BTreeMap::new(),
            local_lane: local_lane(),
        },
        dispatch: DispatchOrder::Sequential,
        steps: manifest.steps.get(),
        deadlines: Deadlines::default(),
        session_id: manifest.run_id.clone(),
        checkpoint_every: None,
        resume: None,
        busy_poll: flysim_session::spin::DEFAULT_BUSY_POLL,
    };
    let content = super::components::ContentSource {
        registry: super::registry_root(),
        content_dir: Some(args.dir.join(CONTENT_DIR)),
        ..Default::default()
    };
    let registry = super::components::registry(&record.plan, &content);
    let outcome = run_plan(
        &record.plan,
        &options,
        &registry,
        RunHooks::default(),
        &mut |_| Ok(()),
    )
    .map_err(|f| CliError::session(*f.error))?;
    let expected = args.assert_digest.unwrap_or(manifest.run_digest);
    for recorded in [manifest.run_digest, expected] {
        if outcome.run_digest != recorded {
            return Err(CliError::DigestMismatch {
                run_id: manifest.run_id.to_string(),
                expected: recorded,
                found: outcome.run_digest,
            });
        }
    }
    Ok(format!(
        "replay {} matches: {} steps, runDigest=sha256:{}\n",
        manifest.run_id, outcome.steps, outcome.run_digest
    ))
}
