//! `flysim run FILE.kdl` (and `flysim FILE.kdl`): run a composition and write its run
//! directory; `flysim replay RUN_DIR`: re-execute a recorded run and check its digest.

use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};

use flysim_session::launcher::{LaunchOptions, WorkerProgram, admit};
use flysim_session::{Deadlines, RunHooks, RunOptions, Stop, run_plan};
use flysim_store::{RunStore, open_run};
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
    /// Print one JSON object {"runId","planDigest","runDigest","steps","runDir"} instead of the final line
    #[arg(long)]
    json: bool,
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

fn program() -> Option<WorkerProgram> {
    std::env::current_exe().ok().map(|exe| WorkerProgram {
        exe,
        args: Vec::new(),
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
    }
}

pub(crate) fn run(args: &Args) -> Result<String, CliError> {
    let started = std::time::Instant::now();
    let started_ms = now_unix_ms();
    let plan = resolve_composition(&args.input)?;
    let steps = args.steps.unwrap_or(plan.run.steps.get());
    let mut options = options(&plan, args, steps);
    let content = super::components::ContentSource::for_composition(&args.input);
    options.launch.content = content.preload(&plan);
    let registry = super::components::registry(&plan, &content);
    // Refusals before anything starts, the run directory included.
    admit(&plan, &options.launch, &registry).map_err(CliError::session)?;
    let store = RunStore::at(&state_dir(args.state_dir.as_deref()));
    let mut writer = store.create(&plan)?;
    options.session_id = writer.run_id().clone();
    let mut progress = Progress::new(steps);
    let mut store_error = None;
    let result = run_plan(
        &plan,
        &options,
        &registry,
        RunHooks::default(),
        &mut |row| {
            if let Err(e) = writer.append(row) {
                store_error.get_or_insert_with(|| e.to_string());
                return Err(flysim_session::SessionError::Store(e));
            }
            progress.draw(row.behaviour.boundary.get());
            Ok(())
        },
    );
    progress.clear();
    let worker_threads = options
        .launch
        .worker_threads
        .unwrap_or_else(|| plan.agents.first().map_or(1, |a| a.threads));
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
    let manifest = RunManifest {
        format_version: MANIFEST_FORMAT_VERSION,
        run_id: writer.run_id().clone(),
        plan_digest: plan.plan_digest,
        contract_digest: flysim_types::schema::contract_digest(),
        build: flysim_worker::identity::build_identity(),
        status,
        steps_bound: args.steps.map(U64),
        steps: U64(committed),
        run_digest: digest,
        failure,
        execution: ExecutionRecord {
            mode: options.launch.mode,
            transport: options.launch.transport,
            dispatch: options.dispatch,
            worker_threads,
        },
        timings: RunTimings {
            started_unix_ms: U64(started_ms),
            wall_time_ns: nanos(started.elapsed()),
            steps_ns: U64(steps_ns),
        },
    };
    writer.write_manifest(&manifest)?;
    let run_dir = writer.dir().to_owned();
    let outcome = result.map_err(|f| CliError::session(*f.error))?;
    let run_id = writer.run_id().clone();
    if args.json {
        let doc = serde_json::json!({
            "runId": run_id,
            "planDigest": format!("sha256:{}", plan.plan_digest),
            "runDigest": format!("sha256:{}", outcome.run_digest),
            "steps": outcome.steps,
            "runDir": run_dir.display().to_string(),
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
    };
    let content = super::components::ContentSource {
        registry: super::registry_root(),
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
