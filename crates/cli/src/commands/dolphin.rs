//! `flysim dolphin check`: build the project's GameCube test program, boot it in Dolphin under a
//! private Xvfb, step it in lockstep and report what it measured.

use std::path::{Path, PathBuf};
use std::time::Instant;

use flysim_dolphin::{DolphinWorld, Mode, PINNED_VERSION, fieldcount, pattern_control};

use crate::error::CliError;

/// Arguments of `flysim dolphin`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: DolphinCommand,
}

#[derive(Debug, clap::Subcommand)]
enum DolphinCommand {
    /// Boot the GameCube test program, advance it field by field, and print fields per second
    Check {
        /// The Dolphin Qt binary (default: dolphin-emu in /usr/games or on PATH)
        #[arg(long)]
        dolphin: Option<PathBuf>,
        /// The Xvfb binary (default: Xvfb on PATH)
        #[arg(long)]
        xvfb: Option<PathBuf>,
        /// The PowerPC cross compiler (default: powerpc-linux-gnu-gcc on PATH)
        #[arg(long)]
        gcc: Option<PathBuf>,
        /// Fields to advance
        #[arg(long, default_value_t = 120)]
        steps: u64,
    },
}

/// `name` in /usr/games, a directory of `PATH`, or the usual system directories.
pub(crate) fn find_tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    ["/usr/games", "/usr/local/bin", "/usr/bin", "/bin"]
        .iter()
        .map(PathBuf::from)
        .chain(std::env::split_paths(&path))
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

fn tool(given: &Option<PathBuf>, name: &str) -> PathBuf {
    given
        .clone()
        .or_else(|| find_tool(name))
        .unwrap_or_else(|| PathBuf::from(format!("/nonexistent/{name}")))
}

fn dolphin_error(e: flysim_dolphin::DolphinError) -> CliError {
    CliError::Dolphin(Box::new(e))
}

pub(crate) fn run(args: &Args) -> Result<String, CliError> {
    let DolphinCommand::Check {
        dolphin,
        xvfb,
        gcc,
        steps,
    } = &args.command;
    let dolphin = tool(dolphin, "dolphin-emu");
    let xvfb = tool(xvfb, "Xvfb");
    let gcc = tool(gcc, "powerpc-linux-gnu-gcc");
    let scratch = std::env::temp_dir().join(format!("fsd-check-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).map_err(|error| CliError::WriteOutput {
        path: scratch.clone(),
        error,
    })?;
    let result = check(&dolphin, &xvfb, &gcc, *steps, &scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

fn check(
    dolphin: &Path,
    xvfb: &Path,
    gcc: &Path,
    steps: u64,
    scratch: &Path,
) -> Result<String, CliError> {
    let elf = fieldcount::build(gcc, &scratch.join("build")).map_err(dolphin_error)?;
    let digest = flysim_dolphin::file_digest(&elf).map_err(dolphin_error)?;
    let config = fieldcount::config(
        dolphin,
        PINNED_VERSION,
        Some(xvfb),
        &elf,
        digest,
        vec![1],
        Mode::Qt,
    );
    let world_dir = scratch.join("w");
    std::fs::create_dir_all(&world_dir).map_err(|error| CliError::WriteOutput {
        path: world_dir.clone(),
        error,
    })?;
    let started = Instant::now();
    let mut world = DolphinWorld::start(&config, &world_dir).map_err(dolphin_error)?;
    let boot = started.elapsed();
    let pad = flysim_dolphin::schema::gamecube_pad();
    let stepping = Instant::now();
    let mut last = world.observation().map_err(dolphin_error)?;
    for k in 0..steps {
        last = world
            .advance(&[pattern_control(&pad, 1, k)])
            .map_err(dolphin_error)?;
    }
    let seconds = stepping.elapsed().as_secs_f64();
    let fields = last.value(&config, "fields").unwrap_or_default();
    drop(world);
    Ok(format!(
        "dolphin  {} ({})\nprogram  sha256:{digest}\nboot     {:.2} s (start, pause, align)\nsteps    {steps}, each exactly one field (program counted {fields})\nrate     {:.1} fields per second\n",
        dolphin.display(),
        PINNED_VERSION,
        boot.as_secs_f64(),
        if seconds > 0.0 {
            steps as f64 / seconds
        } else {
            0.0
        },
    ))
}
