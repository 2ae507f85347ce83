//! `flysim run FILE.kdl` (and `flysim FILE.kdl`): run a composition and write its run
//! directory; `flysim resume RUN_DIR`: continue it from its newest durable checkpoint;
//! `flysim checkpoints RUN_DIR`: list its generations; `flysim replay RUN_DIR`: re-execute a
//! recorded run and check its digest.

use std::path::{Path, PathBuf};
use std::time::Duration;

use flysim_run::{ContentSource, Execution, PauseHandle, RunReport};
use flysim_types::Digest;
use flysim_types::plan::{RunMode, Transport};
use flysim_types::trace::{DispatchOrder, RunStatus};

use super::resolve_with;
use super::run_dir::score_text;
use super::sweep::SeedOverride;
use super::watch::Watching;
use crate::Printed;
use crate::error::CliError;
use crate::progress::Bar;

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
    /// Commit at most N steps in this invocation, never past the plan's `steps` (the plan is
    /// unchanged; the manifest records the bound; a run stopped short of the plan is `paused`)
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
    seed: SeedOverride,
    #[command(flatten)]
    polling: Polling,
    #[command(flatten)]
    watching: Watching,
    /// Print one JSON object {"runId","planDigest","runDigest","steps","runDir","status","paused","resume","scores","wallTimeS"}
    /// instead of the final line; on failure one object {"code","message","runDir"}
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
pub(crate) fn state_dir(arg: Option<&Path>) -> PathBuf {
    if let Some(dir) = arg {
        return dir.to_owned();
    }
    match std::env::var_os("FLYSIM_HOME").filter(|v| !v.is_empty()) {
        Some(home) => PathBuf::from(home).join("state"),
        None => PathBuf::from(".flysim"),
    }
}

/// `path` as one shell word.
fn shell_word(path: &Path) -> String {
    let text = path.display().to_string();
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@".contains(c));
    if plain {
        text
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// The exact command that continues a run stopped short of its plan, if it can be continued
/// (it has a durable checkpoint).
fn resume_command(report: &RunReport) -> Option<String> {
    if report.paused.is_none() || report.steps >= report.plan_steps {
        return None;
    }
    let resumable = report.checkpoint.is_some()
        || flysim_run::checkpoints(&report.run_dir).is_ok_and(|g| !g.is_empty());
    resumable.then(|| format!("flysim resume {}", shell_word(&report.run_dir)))
}

/// Why the run stopped short of its plan, as its final line says it.
fn stopped_because(reason: &str, signal: Option<&str>) -> String {
    match (reason, signal) {
        ("bound", _) => "its --steps bound".to_owned(),
        ("requested", Some(signal)) => format!("interrupted by {signal}"),
        (other, _) => other.to_owned(),
    }
}

/// The final lines of `flysim run` and `flysim resume`, or their `--json` object; an
/// interrupted run ends with `128 + signal`.
fn render(report: &RunReport, json: bool) -> Result<Printed, CliError> {
    let signal = crate::signals::received();
    let interrupted = report.paused.as_deref() == Some("requested");
    let code = signal
        .filter(|_| interrupted)
        .map_or(crate::exit::SUCCESS, |(_, code)| code);
    let resume = resume_command(report);
    let (stdout, stderr) = if json {
        let scores: serde_json::Map<String, serde_json::Value> = report
            .scores
            .iter()
            .map(|(agent, score)| (agent.to_string(), serde_json::json!(score)))
            .collect();
        let doc = serde_json::json!({
            "runId": report.run_id,
            "planDigest": format!("sha256:{}", report.plan_digest),
            "runDigest": format!("sha256:{}", report.run_digest),
            "steps": report.steps,
            "runDir": report.run_dir.display().to_string(),
            "status": if report.paused.is_some() { "paused" } else { "complete" },
            "paused": report.paused,
            "resume": resume,
            "scores": scores,
            "wallTimeS": wall_time_s(report),
        });
        let text =
            flysim_types::json::to_canonical(&doc).map_err(flysim_types::ContractError::from)?;
        (format!("{text}\n"), String::new())
    } else {
        render_text(
            report,
            &summary(report),
            signal.map(|(name, _)| name),
            resume.as_deref(),
        )
    };
    Ok(Printed {
        stdout,
        stderr,
        code,
    })
}

/// ` in 2.4 s, fly-a scored 14, fly-b scored 3`: the wall time of the invocation and each
/// agent's score over the rows the run holds (as the run library summed them while it wrote
/// them; the trace is not read back).
fn summary(report: &RunReport) -> String {
    let mut out = format!(" in {:.1} s", wall_time_s(report));
    for (agent, score) in &report.scores {
        out.push_str(&format!(", {agent} scored {}", score_text(*score)));
    }
    out
}

/// The invocation's wall time in seconds, as the manifest records it.
fn wall_time_s(report: &RunReport) -> f64 {
    // Display only: nanoseconds to seconds, precise enough for any run's length.
    #[expect(clippy::cast_precision_loss, reason = "a displayed duration")]
    let ns = report.wall_time_ns as f64;
    ns / 1e9
}

/// The final line (stdout) and, for a run stopped short of its plan, where its checkpoint is
/// and how to continue it (stderr). The line ends with the run digest and the run directory:
/// `run ID complete: N steps in T s, fly-a scored S; runDigest=sha256:HEX; DIR`.
fn render_text(
    report: &RunReport,
    summary: &str,
    signal: Option<&str>,
    resume: Option<&str>,
) -> (String, String) {
    let tail = format!(
        "{summary}; runDigest=sha256:{}; {}\n",
        report.run_digest,
        report.run_dir.display()
    );
    let Some(reason) = &report.paused else {
        let line = format!(
            "run {} complete: {} steps{tail}",
            report.run_id, report.steps
        );
        return (line, String::new());
    };
    let line = format!(
        "run {} paused at step {} of {} ({}){tail}",
        report.run_id,
        report.steps,
        report.plan_steps,
        stopped_because(reason, signal),
    );
    let mut out = String::new();
    if let Some(k) = report.checkpoint {
        out.push_str(&format!("  checkpoint at step {k}\n"));
    }
    match resume {
        Some(command) => out.push_str(&format!("  continue it: {command}\n")),
        None if report.steps < report.plan_steps => out.push_str(
            "  it has no durable checkpoint to continue from (the composition declares none, or it stopped before the first)\n",
        ),
        None => {}
    }
    (line, out)
}

/// `--json` on failure: one JSON object `{"code","message","runDir"}` on stdout (the run
/// directory, when one was written, else null), the rendered diagnostics on stderr, and the
/// failure's exit code.
fn failure_as_json(error: &CliError, run_dir: Option<&Path>) -> Result<Printed, CliError> {
    let code = error
        .diagnostics()
        .first()
        .and_then(|d| d.code())
        .map(|c| c.to_string());
    let doc = serde_json::json!({
        "code": code,
        "message": error.to_string(),
        "runDir": run_dir.map(|d| d.display().to_string()),
    });
    let text = flysim_types::json::to_canonical(&doc).map_err(flysim_types::ContractError::from)?;
    Ok(Printed {
        stdout: format!("{text}\n"),
        stderr: error
            .diagnostics()
            .into_iter()
            .map(crate::render::diagnostic)
            .collect(),
        code: error.exit_code(),
    })
}

/// The outcome of `flysim run` or `resume` as it is printed.
fn finish(
    result: Result<RunReport, flysim_run::RunError>,
    json: bool,
    run_dir: Option<&Path>,
) -> Result<Printed, CliError> {
    match result {
        Ok(report) => render(&report, json),
        Err(error) if json => failure_as_json(&CliError::from(error), run_dir),
        Err(error) => Err(error.into()),
    }
}

/// A stop handle the stop signals trigger.
fn stop_on_signals() -> PauseHandle {
    let stop = PauseHandle::default();
    crate::signals::stop_on_signals(&stop);
    stop
}

pub(crate) fn run(args: &Args) -> Result<Printed, CliError> {
    let plan = resolve_with(&args.input, &args.seed.overrides())?;
    let host = crate::host::host();
    let content = ContentSource::for_composition(&args.input, host.asset_registry.clone());
    let stop = stop_on_signals();
    let (on_launch, watcher) = args.watching.hook(&stop);
    let execution = Execution {
        mode: args.mode,
        transport: args.transport,
        worker_threads: args.worker_threads,
        dispatch: args.dispatch,
        busy_poll: args.polling.window(),
        stop,
        pace: args.watching.pace(),
        on_launch,
    };
    let mut bar = Bar::new();
    let result = flysim_run::run(
        &plan,
        &content,
        &state_dir(args.state_dir.as_deref()),
        args.steps,
        &execution,
        &host,
        &mut bar,
    );
    watcher.finish()?;
    finish(result, args.json, bar.run_dir.as_deref())
}

/// Arguments of `flysim resume`.
#[derive(Debug, clap::Args)]
pub(crate) struct ResumeArgs {
    /// A run directory written by `flysim run`
    #[arg(value_name = "RUN_DIR")]
    dir: PathBuf,
    /// Commit at most N more steps, never past the plan's `steps` (default: up to the bound
    /// the interrupted invocation recorded, or the plan's end once that bound was reached)
    #[arg(long, value_name = "N")]
    steps: Option<u64>,
    /// Resume from this generation instead of the newest (`flysim checkpoints` lists them);
    /// the later generations, and the rows after its boundary, are discarded
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
    #[command(flatten)]
    watching: Watching,
    /// Print one JSON object {"runId","planDigest","runDigest","steps","runDir","status","paused","resume","scores","wallTimeS"}
    /// instead of the final line; on failure one object {"code","message","runDir"}
    #[arg(long)]
    json: bool,
}

pub(crate) fn resume(args: &ResumeArgs) -> Result<Printed, CliError> {
    let stop = stop_on_signals();
    let (on_launch, watcher) = args.watching.hook(&stop);
    let execution = Execution {
        mode: args.mode,
        transport: args.transport,
        worker_threads: None,
        dispatch: DispatchOrder::Concurrent,
        busy_poll: args.polling.window(),
        stop,
        pace: args.watching.pace(),
        on_launch,
    };
    let result = flysim_run::resume(
        &args.dir,
        args.steps,
        args.generation,
        &execution,
        &crate::host::host(),
        &mut Bar::new(),
    );
    watcher.finish()?;
    let discarded = result
        .as_ref()
        .map(|r| r.discarded.clone())
        .unwrap_or_default();
    let mut printed = finish(result, args.json, Some(&args.dir))?;
    if !discarded.is_empty() {
        let numbers: Vec<String> = discarded.iter().map(u64::to_string).collect();
        printed.stderr.insert_str(
            0,
            &format!(
                "resumed from generation {}: discarded the later generation(s) {} and the rows they had committed after it\n",
                args.generation.map_or_else(String::new, |n| n.to_string()),
                numbers.join(", ")
            ),
        );
    }
    Ok(printed)
}

/// Arguments of `flysim checkpoints`.
#[derive(Debug, clap::Args)]
pub(crate) struct CheckpointsArgs {
    /// A run directory written by `flysim run`
    #[arg(value_name = "RUN_DIR")]
    dir: PathBuf,
}

/// `flysim checkpoints RUN_DIR`: the durable generations, each verified; a damaged one makes
/// it exit with [`crate::exit::DAMAGE_FOUND`].
pub(crate) fn checkpoints(args: &CheckpointsArgs) -> Result<Printed, CliError> {
    let mut out = String::from("generation  boundary  bytes      state     digest\n");
    let states = flysim_run::checkpoints(&args.dir)?;
    let damaged = states.iter().filter(|s| s.verified.is_err()).count();
    for state in states {
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
    let (stderr, code) = if damaged == 0 {
        (String::new(), crate::exit::SUCCESS)
    } else {
        (
            format!(
                "{damaged} damaged generation(s): resume from a verified one with --generation N\n"
            ),
            crate::exit::DAMAGE_FOUND,
        )
    };
    Ok(Printed {
        stdout: out,
        stderr,
        code,
    })
}

pub(crate) fn replay(args: &ReplayArgs) -> Result<String, CliError> {
    let replayed = flysim_run::replay(&args.dir, args.assert_digest, &crate::host::host())?;
    let mut out = format!(
        "replay {} matches: {} steps, runDigest=sha256:{}\n",
        replayed.run_id, replayed.steps, replayed.run_digest
    );
    if replayed.status != RunStatus::Complete && replayed.steps < replayed.plan_steps {
        out.push_str(&format!(
            "  the run stopped at step {} of {}: continue it with flysim resume {}\n",
            replayed.steps,
            replayed.plan_steps,
            shell_word(&args.dir)
        ));
    }
    Ok(out)
}
