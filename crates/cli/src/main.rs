//! The `flysim` command line: the only place in the workspace that reads arguments, prints,
//! renders diagnostics and chooses exit codes.
//!
//! Each subcommand lives in `commands/`; it returns its output as text or a [`CliError`], and
//! `main` writes one or the other. Library crates never print or exit.

mod commands;
mod error;
mod exit;
mod render;

use std::io::Write as _;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::error::CliError;

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
    /// Connectomes and brain profiles: import, info, check, generate
    Brain(commands::brain::Args),
}

/// What a command produced: text for stdout (always ends with a newline).
pub(crate) type Output = String;

fn run(cli: Cli) -> Result<Output, CliError> {
    match cli.command {
        Command::Seed(args) => commands::seed::run(&args),
        Command::Canon(args) => commands::canon::run(&args),
        Command::Explain(args) => commands::explain::run(&args),
        Command::Schema(args) => commands::schema::run(&args),
        Command::Ticks(args) => commands::ticks::run(&args),
        Command::Backends(args) => commands::backends::run(&args),
        Command::Rom(args) => commands::rom::run(&args),
        Command::Brain(args) => commands::brain::run(&args),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(out) => {
            let mut stdout = std::io::stdout().lock();
            // A closed pipe (`flysim ... | head`) is not an error worth reporting.
            let _ = stdout
                .write_all(out.as_bytes())
                .and_then(|()| stdout.flush());
            ExitCode::from(exit::SUCCESS)
        }
        Err(err) => {
            let code = err.exit_code();
            let text = render::diagnostic(&err);
            let _ = std::io::stderr().lock().write_all(text.as_bytes());
            ExitCode::from(code)
        }
    }
}
