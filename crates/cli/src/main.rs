//! The `flysim` command line: the only place in the workspace that reads arguments, prints,
//! renders diagnostics and chooses exit codes.
//!
//! Each subcommand lives in `commands/`; it returns its output as text or a [`CliError`], and
//! `main` writes one or the other. Library crates never print or exit.

#![allow(
    clippy::disallowed_methods,
    reason = "the binary is where clocks and the environment are read; it hands what it read to the libraries as values"
)]

mod animation;
mod commands;
mod error;
mod exit;
mod hints;
mod host;
mod picture;
mod plot;
mod progress;
mod raster;
mod render;
mod shorthand;
mod signals;

use std::io::Write as _;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::error::CliError;

/// Every session message is parsed into and built from many small allocations; mimalloc's
/// thread-local pages make them cheap (`cargo bench -p flysim --bench gameboy`: about 11% of an
/// in-process Game Boy step), and `flysim-alloc` asks it for plain blocks where it can (its
/// header says why). Allocation addresses never reach a digest.
#[global_allocator]
static ALLOCATOR: flysim_alloc::Allocator = flysim_alloc::Allocator;

/// flysim: simulated fly brains playing emulated games, in deterministic lockstep.
#[derive(Debug, Parser)]
#[command(name = "flysim", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Derive per-agent seeds with seed-derivation-v1
    Seed(commands::seed::Args),
    /// Strict-parse a JSON document and print its RFC 8785 canonical form
    Canon(commands::canon::Args),
    /// Explain a diagnostic code
    Explain(commands::explain::Args),
    /// Print the JSON Schema of a contract type, or write them all
    Schema(commands::schema::Args),
    /// Show how environment steps turn into brain ticks (the rational tick accumulator)
    Ticks(commands::ticks::Args),
    /// List the environment backends of this build and their pinned identities
    Backends(commands::backends::Args),
    /// Check a Game Boy ROM against the pinned binjgb core
    Rom(commands::rom::Args),
    /// Verify a FLYSESS1 checkpoint envelope
    Checkpoint(commands::checkpoint::Args),
    /// Check a composition: every problem, with its place in the file and its code
    Validate(commands::validate::Args),
    /// Resolve a composition into its launch plan (canonical JSON; its digest on stderr)
    Plan(commands::plan::Args),
    /// The local content-addressed asset registry ($FLYSIM_HOME/assets)
    #[command(subcommand)]
    Assets(commands::assets::Command),
    /// Run a composition; `flysim FILE.kdl` (or any composition file) is the same
    Run(commands::run::Args),
    /// Re-execute a recorded run and check its run digest
    Replay(commands::run::ReplayArgs),
    /// Write a run's game frames as PNG files, regenerated and checked against its trace
    Frames(commands::frames::Args),
    /// Write an HTML report of a run: summary, score and rate plots, a spike raster, the frames
    /// at the rewards and a GIF of play
    Report(commands::report::Args),
    /// Continue a run from its newest durable checkpoint
    Resume(commands::run::ResumeArgs),
    /// List a run's durable checkpoint generations, each verified
    Checkpoints(commands::run::CheckpointsArgs),
    /// Compare two run directories: the plans' fields, the first diverging row and its fields
    Diff(commands::diff::Args),
    /// List the runs of a state directory: status, steps, scores, digest, age
    Runs(commands::runs::Args),
    /// One worker process of a process-mode run (started by the launcher)
    #[command(hide = true)]
    Worker(commands::worker::Args),
    /// Check the GameCube backend: boot the project's test program in Dolphin and step it
    Dolphin(commands::dolphin::Args),
    /// Connectomes and brain profiles: import, info, check, generate
    Brain(commands::brain::Args),
    /// Sweeps: a composition's family of runs, on this machine or a Slurm cluster, and its table
    #[command(subcommand)]
    Sweep(commands::sweep::Command),
    /// The components section of docs/compositions.md, rendered from this build's specs
    #[command(hide = true)]
    ComponentsDoc(commands::components::Args),
}

/// What a command prints: its text for stdout (always ending in a newline), an optional note
/// for stderr (e.g. `planDigest=...`) and its exit code (an interrupted run's is
/// `128 + signal`).
pub(crate) struct Printed {
    stdout: String,
    stderr: String,
    code: u8,
}

impl From<String> for Printed {
    fn from(stdout: String) -> Self {
        Self {
            stdout,
            stderr: String::new(),
            code: exit::SUCCESS,
        }
    }
}

fn run(cli: Cli) -> Result<Printed, CliError> {
    match cli.command {
        Command::Seed(args) => commands::seed::run(&args).map(Printed::from),
        Command::Canon(args) => commands::canon::run(&args).map(Printed::from),
        Command::Explain(args) => commands::explain::run(&args).map(Printed::from),
        Command::Schema(args) => commands::schema::run(&args).map(Printed::from),
        Command::Ticks(args) => commands::ticks::run(&args).map(Printed::from),
        Command::Backends(args) => commands::backends::run(&args).map(Printed::from),
        Command::Rom(args) => commands::rom::run(&args).map(Printed::from),
        Command::Validate(args) => commands::validate::run(&args).map(Printed::from),
        Command::Plan(args) => commands::plan::run(&args).map(|(stdout, stderr)| Printed {
            stdout,
            stderr,
            code: exit::SUCCESS,
        }),
        Command::Assets(command) => commands::assets::run(&command).map(Printed::from),
        Command::Run(args) => commands::run::run(&args),
        Command::Replay(args) => commands::run::replay(&args).map(Printed::from),
        Command::Frames(args) => commands::frames::run(&args).map(Printed::from),
        Command::Report(args) => commands::report::run(&args),
        Command::Resume(args) => commands::run::resume(&args),
        Command::Checkpoints(args) => commands::run::checkpoints(&args),
        Command::Diff(args) => commands::diff::run(&args),
        Command::Runs(args) => commands::runs::run(&args),
        Command::Worker(args) => {
            signals::worker_ignores_stop_signals();
            commands::worker::run(&args).map(Printed::from)
        }
        Command::Checkpoint(args) => commands::checkpoint::run(&args).map(Printed::from),
        Command::Dolphin(args) => commands::dolphin::run(&args).map(Printed::from),
        Command::Sweep(command) => commands::sweep::run(&command),
        Command::Brain(args) => commands::brain::run(&args).map(Printed::from),
        Command::ComponentsDoc(args) => commands::components::run(&args).map(Printed::from),
    }
}

/// The command line, with `run` inserted for the `flysim FILE` shorthand ([`shorthand`]).
fn arguments() -> Result<Vec<std::ffi::OsString>, CliError> {
    use clap::CommandFactory as _;
    let subcommands: Vec<String> = Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_owned())
        .collect();
    shorthand::arguments(std::env::args_os().collect(), &subcommands)
}

fn main() -> ExitCode {
    let cli = match arguments() {
        Ok(args) => Cli::parse_from(args),
        Err(err) => return fail(&err),
    };
    match run(cli) {
        Ok(out) => {
            let mut stdout = std::io::stdout().lock();
            let written = stdout
                .write_all(out.stdout.as_bytes())
                .and_then(|()| stdout.flush());
            match written {
                Ok(()) => {
                    let _ = std::io::stderr().lock().write_all(out.stderr.as_bytes());
                    ExitCode::from(out.code)
                }
                // A closed pipe (`flysim ... | head`): the reader wanted no more. Quiet, as a
                // Unix tool killed by SIGPIPE, and not a success either.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                    ExitCode::from(exit::OUTPUT_CLOSED)
                }
                Err(error) => fail(&CliError::WriteStdout { error }),
            }
        }
        Err(err) => fail(&err),
    }
}

/// Renders a failure on stderr and returns its exit code.
fn fail(err: &CliError) -> ExitCode {
    let code = err.exit_code();
    let mut text: String = err
        .diagnostics()
        .into_iter()
        .map(render::diagnostic)
        .collect();
    if let Some(summary) = err.summary() {
        text.push_str(&summary);
    }
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
    ExitCode::from(code)
}
