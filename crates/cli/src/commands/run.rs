//! `flysim run FILE.kdl` (and `flysim FILE.kdl`): run a composition and write its run
//! directory; `flysim resume RUN_DIR`: continue it from its newest durable checkpoint;
//! `flysim checkpoints RUN_DIR`: list its generations; `flysim replay RUN_DIR`: re-execute a
//! recorded run and check its digest.

use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use flysim_run::{ContentSource, Execution, RunReport};
use flysim_types::Digest;
use flysim_types::plan::{RunMode, Transport};
use flysim_types::trace::DispatchOrder;

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

/// A progress bar on standard error, drawn only when it is a terminal.
struct Bar {
    on: bool,
    last: std::time::Instant,
}

impl Bar {
    fn new() -> Self {
        Self {
            on: std::io::stderr().is_terminal(),
            last: std::time::Instant::now(),
        }
    }
}

impl flysim_run::Progress for Bar {
    fn committed(&mut self, done: u64, total: u64) {
        if !self.on || (self.last.elapsed().as_millis() < 100 && done < total) {
            return;
        }
        self.last = std::time::Instant::now();
        let width = 30u64;
        let filled = (done * width).checked_div(total).unwrap_or(width);
        let bar: String = (0..width)
            .map(|i| if i < filled { '#' } else { '.' })
            .collect();
        let _ = write!(std::io::stderr(), "\r[{bar}] {done}/{total} steps");
    }

    fn finished(&mut self) {
        if self.on {
            let _ = write!(std::io::stderr(), "\r{}\r", " ".repeat(60));
        }
    }
}

/// The final line of `flysim run` and `flysim resume`, or their `--json` object.
fn render(report: &RunReport, json: bool) -> Result<String, CliError> {
    if json {
        let doc = serde_json::json!({
            "runId": report.run_id,
            "planDigest": format!("sha256:{}", report.plan_digest),
            "runDigest": format!("sha256:{}", report.run_digest),
            "steps": report.steps,
            "runDir": report.run_dir.display().to_string(),
        });
        let text =
            flysim_types::json::to_canonical(&doc).map_err(flysim_types::ContractError::from)?;
        return Ok(format!("{text}\n"));
    }
    let mut out = String::new();
    if let Some(reason) = &report.paused {
        out.push_str(&format!(
            "run {} paused at step {} ({reason})\n",
            report.run_id, report.steps
        ));
    }
    out.push_str(&format!(
        "run {} complete: {} steps, runDigest=sha256:{}\n",
        report.run_id, report.steps, report.run_digest
    ));
    Ok(out)
}

pub(crate) fn run(args: &Args) -> Result<String, CliError> {
    let plan = resolve_composition(&args.input)?;
    let host = crate::host::host();
    let content = ContentSource::for_composition(&args.input, host.asset_registry.clone());
    let execution = Execution {
        mode: args.mode,
        transport: args.transport,
        worker_threads: args.worker_threads,
        dispatch: args.dispatch,
        busy_poll: args.polling.window(),
    };
    let report = flysim_run::run(
        &plan,
        &content,
        &state_dir(args.state_dir.as_deref()),
        args.steps,
        &execution,
        &host,
        &mut Bar::new(),
    )?;
    render(&report, args.json)
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

pub(crate) fn resume(args: &ResumeArgs) -> Result<String, CliError> {
    let execution = Execution {
        mode: args.mode,
        transport: args.transport,
        worker_threads: None,
        dispatch: DispatchOrder::Concurrent,
        busy_poll: args.polling.window(),
    };
    let report = flysim_run::resume(
        &args.dir,
        args.steps,
        args.generation,
        &execution,
        &crate::host::host(),
        &mut Bar::new(),
    )?;
    render(&report, args.json)
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
    let mut out = String::from("generation  boundary  bytes      state     digest\n");
    for state in flysim_run::checkpoints(&args.dir)? {
        let g = &state.generation;
        let verdict = match &state.verified {
            Ok(()) => "verified".to_owned(),
            Err(e) => format!("DAMAGED {}", e.code_str()),
        };
        out.push_str(&format!(
            "{:<10}  {:<8}  {:<9}  {verdict:<8}  sha256:{}\n",
            g.generation.get(),
            g.boundary.get(),
            g.byte_length.get(),
            g.digest
        ));
    }
    Ok(out)
}

pub(crate) fn replay(args: &ReplayArgs) -> Result<String, CliError> {
    let replayed = flysim_run::replay(&args.dir, args.assert_digest, &crate::host::host())?;
    Ok(format!(
        "replay {} matches: {} steps, runDigest=sha256:{}\n",
        replayed.run_id, replayed.steps, replayed.run_digest
    ))
}
