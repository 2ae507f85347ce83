//! `flysim sweep run FILE [--jobs N]`: every member of a composition's sweep on this machine,
//! in a sweep directory (by default `<state dir>/sweeps/<name>-<sweep digest>`), a completed
//! member never run again; and `flysim sweep member DIR INDEX`: one member of a written sweep
//! directory (what each Slurm array task runs). Each member that ends is one line on stderr.
//!
//! It owns the flags, the signals and the lines; the members run in `flysim_run::sweep`.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use flysim_run::sweep::{Done, Outcome, SweepDir, run_member, run_members};
use flysim_run::{ContentSource, Execution, PauseHandle};

use super::resolve_sweep;
use crate::Printed;
use crate::commands::run::state_dir;
use crate::commands::run_dir::score_text;
use crate::error::CliError;

/// Arguments of `flysim sweep run`.
#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// The composition (.kdl) with a `sweep` block
    #[arg(value_name = "FILE.kdl")]
    input: PathBuf,
    /// Run at most N members at a time
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=256))]
    jobs: u32,
    /// The sweep directory (default: <state dir>/sweeps/<name>-<first 12 hex of the sweep digest>)
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// The state directory the default sweep directory is in (default: $FLYSIM_HOME/state, else ./.flysim)
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
}

/// Arguments of `flysim sweep member`.
#[derive(Debug, clap::Args)]
pub(crate) struct MemberArgs {
    /// A sweep directory written by `flysim sweep slurm` or `flysim sweep run`
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// The member's index (from 0, in grid order)
    #[arg(value_name = "INDEX")]
    index: usize,
}

/// Writes a line to stderr at once (members end while others still run).
fn line(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// A member's line: `member 3 complete: 600 steps in 0.6 s, fly-a scored 3; runDigest=...; DIR`.
fn member_line(done: &Done) -> String {
    match &done.outcome {
        Outcome::Skipped => format!("member {} already complete\n", done.index),
        Outcome::Ran(report) => {
            let state = match &report.paused {
                None => "complete".to_owned(),
                Some(reason) => format!("paused at step {} ({reason})", report.steps),
            };
            #[expect(clippy::cast_precision_loss, reason = "a displayed duration")]
            let seconds = report.wall_time_ns as f64 / 1e9;
            let mut text = format!(
                "member {} {state}: {} steps in {seconds:.1} s",
                done.index, report.steps
            );
            for (agent, score) in &report.scores {
                text.push_str(&format!(", {agent} scored {}", score_text(*score)));
            }
            format!(
                "{text}; runDigest=sha256:{}; {}\n",
                report.run_digest,
                report.run_dir.display()
            )
        }
        Outcome::Failed(error) => {
            let code =
                miette::Diagnostic::code(error).map_or_else(String::new, |c| format!("{c} "));
            format!("member {} failed: {code}{error}\n", done.index)
        }
    }
}

/// A stop handle the stop signals trigger.
fn stop_on_signals() -> PauseHandle {
    let stop = PauseHandle::default();
    crate::signals::stop_on_signals(&stop);
    stop
}

/// The default sweep directory of a sweep.
fn default_dir(state: &Path, sweep: &flysim_compose::SweepPlan) -> PathBuf {
    let name = flysim_types::Id::parse(&sweep.name)
        .ok()
        .filter(|n| n.as_str().len() <= 32)
        .map_or_else(|| "sweep".to_owned(), |n| n.as_str().to_owned());
    state
        .join("sweeps")
        .join(format!("{name}-{}", &sweep.digest.hex()[..12]))
}

/// `flysim sweep run`.
pub(crate) fn run(args: &RunArgs) -> Result<Printed, CliError> {
    let sweep = resolve_sweep(&args.input)?;
    let host = crate::host::host();
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| default_dir(&state_dir(args.state_dir.as_deref()), &sweep));
    let content = ContentSource::for_composition(&args.input, host.asset_registry.clone());
    let written = SweepDir::prepare(&dir, &sweep, &content)?;
    let execution = Execution {
        stop: stop_on_signals(),
        ..Execution::default()
    };
    let total = sweep.members.len();
    let ended = AtomicUsize::new(0);
    let finished = |done: &Done| {
        let n = ended.fetch_add(1, Ordering::SeqCst) + 1;
        line(&format!("[{n}/{total}] {}", member_line(done)));
    };
    let jobs = usize::try_from(args.jobs).unwrap_or(1);
    let done = run_members(&written, jobs, &execution, &host, &finished)?;
    Ok(summary(&dir, total, &done))
}

/// The final line of `flysim sweep run`, and its exit code: an interrupted sweep's is
/// `128 + signal`, one with a failed or unfinished member [`crate::exit::RUN_FAILED`].
fn summary(dir: &Path, total: usize, done: &[Done]) -> Printed {
    let count = |f: fn(&Outcome) -> bool| done.iter().filter(|d| f(&d.outcome)).count();
    let skipped = count(|o| matches!(o, Outcome::Skipped));
    let ran = count(|o| matches!(o, Outcome::Ran(r) if r.paused.is_none()));
    let paused = count(|o| matches!(o, Outcome::Ran(r) if r.paused.is_some()));
    let failed = count(|o| matches!(o, Outcome::Failed(_)));
    let complete = skipped + ran;
    let mut stdout = format!(
        "sweep {}: {complete} of {total} members complete (ran {ran}, already complete {skipped}",
        dir.display()
    );
    if paused > 0 {
        stdout.push_str(&format!(", paused {paused}"));
    }
    if failed > 0 {
        stdout.push_str(&format!(", failed {failed}"));
    }
    stdout.push_str(")\n");
    let mut stderr = String::new();
    let signal = crate::signals::received();
    let code = if let Some((name, code)) = signal {
        stderr.push_str(&format!(
            "  interrupted by {name}: run the same command again to run only the members not complete\n"
        ));
        code
    } else if complete < total {
        stderr.push_str("  rerun the same command to run the members not complete\n");
        crate::exit::RUN_FAILED
    } else {
        crate::exit::SUCCESS
    };
    stderr.push_str(&format!(
        "  collect them: flysim sweep collect {}\n",
        dir.display()
    ));
    Printed {
        stdout,
        stderr,
        code,
    }
}

/// `flysim sweep member DIR INDEX`.
pub(crate) fn member(args: &MemberArgs) -> Result<Printed, CliError> {
    let sweep = SweepDir::open(&args.dir)?;
    let execution = Execution {
        stop: stop_on_signals(),
        ..Execution::default()
    };
    let outcome = run_member(&sweep, args.index, &execution, &crate::host::host())?;
    let done = Done {
        index: args.index,
        outcome,
    };
    let text = member_line(&done);
    let code = match &done.outcome {
        Outcome::Failed(_) => crate::exit::RUN_FAILED,
        Outcome::Ran(r) if r.paused.is_some() => {
            crate::signals::received().map_or(crate::exit::RUN_FAILED, |(_, code)| code)
        }
        Outcome::Ran(_) | Outcome::Skipped => crate::exit::SUCCESS,
    };
    Ok(Printed {
        stdout: text,
        stderr: String::new(),
        code,
    })
}
