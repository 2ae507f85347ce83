//! `flysim sweep`: a composition's sweep run on this machine (`run`), written out for a Slurm
//! cluster (`slurm`), one member run from a sweep directory (`member`), and the members merged
//! into one table (`collect`); and what `plan`, `run` and `validate` share of sweeps: the
//! `--master-seed` override and the resolution of a whole family (`plan --sweep`).
//!
//! It owns the flags and the rendering; resolving a sweep is `flysim_compose::sweep`'s,
//! running and collecting its members `flysim_run::sweep`'s.

pub(crate) mod collect;
pub(crate) mod family;
pub(crate) mod local;
pub(crate) mod slurm;

use std::path::Path;

use flysim_compose::{Overrides, SweepPlan};
use flysim_types::U64;

use super::Read;
use crate::error::CliError;

/// `flysim sweep`'s subcommands.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Command {
    /// Run every member of a composition's sweep on this machine (a completed member is not
    /// run again; an interrupted one continues from its checkpoint)
    Run(local::RunArgs),
    /// Write a sweep directory and an sbatch array script for a Slurm cluster
    Slurm(slurm::Args),
    /// Run one member of a sweep directory (what each Slurm array task runs)
    Member(local::MemberArgs),
    /// Merge a sweep directory's members into one table (CSV, JSON) and a plot of the scores
    Collect(collect::Args),
}

/// Runs a `flysim sweep` subcommand.
pub(crate) fn run(command: &Command) -> Result<crate::Printed, CliError> {
    match command {
        Command::Run(args) => local::run(args),
        Command::Slurm(args) => slurm::run(args),
        Command::Member(args) => local::member(args),
        Command::Collect(args) => collect::run(args),
    }
}

fn parse_seed(s: &str) -> Result<U64, String> {
    U64::parse(s).map_err(|e| e.to_string())
}

/// `--master-seed N`: one run of a composition with another master seed, the file unedited.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct SeedOverride {
    /// Use this master seed instead of the composition's `master-seed` (a U64 in its one
    /// spelling, e.g. 42); the plan is the one a sweep member of that seed has
    #[arg(long, value_name = "N", value_parser = parse_seed)]
    pub(crate) master_seed: Option<U64>,
}

impl SeedOverride {
    /// What the resolver puts in place of the file's values.
    pub(crate) fn overrides(&self) -> Overrides {
        Overrides {
            master_seed: self.master_seed,
        }
    }
}

/// Resolves every member of the composition's sweep.
pub(crate) fn resolve_sweep(path: &Path) -> Result<SweepPlan, CliError> {
    let read = Read::at(path)?;
    let registry = super::registry();
    match flysim_compose::plan_sweep(read.input(), registry.as_ref(), flysim_run::components::ALL) {
        Ok(Some(sweep)) => Ok(sweep),
        Ok(None) => Err(CliError::NoSweep {
            path: path.to_owned(),
        }),
        Err(diags) => Err(read.refused(diags)),
    }
}
