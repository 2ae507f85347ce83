//! `flysim sweep slurm FILE --out DIR`: a composition's sweep written for a Slurm cluster: the
//! sweep directory (index, member plans, the content they pin) and `sweep.sbatch`, an array job
//! of one task per member (`--array=0-(n-1)`), each running `flysim sweep member DIR
//! $SLURM_ARRAY_TASK_ID`, with as many CPUs per task as the plan's agents have threads.
//!
//! DIR must be on storage every node sees, and the flysim binary on every node at the path the
//! script names. It writes files; it submits nothing.

use std::path::{Path, PathBuf};

use flysim_run::ContentSource;
use flysim_run::sweep::SweepDir;

use super::resolve_sweep;
use crate::Printed;
use crate::error::CliError;

/// The script's file name in the sweep directory.
pub(crate) const SCRIPT: &str = "sweep.sbatch";

/// Arguments of `flysim sweep slurm`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The composition (.kdl) with a `sweep` block
    #[arg(value_name = "FILE.kdl")]
    input: PathBuf,
    /// The sweep directory, on storage shared by every node
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// The flysim binary the tasks run (default: this one)
    #[arg(long, value_name = "PATH")]
    flysim: Option<PathBuf>,
    /// The Slurm partition (default: the cluster's)
    #[arg(long, value_name = "NAME")]
    partition: Option<String>,
    /// Each task's time limit, as sbatch takes it (e.g. 00:30:00)
    #[arg(long, value_name = "TIME")]
    time: Option<String>,
}

/// `text` as one shell word.
fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// An absolute form of `path` (the tasks start elsewhere).
fn absolute(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_owned())
    })
}

/// The sbatch script of a sweep of `members` members in `dir`.
pub(crate) fn script(
    name: &str,
    members: usize,
    cpus: u32,
    dir: &Path,
    flysim: &Path,
    args: &Args,
) -> String {
    let dir_text = dir.display().to_string();
    let mut out = String::from("#!/bin/bash\n");
    out.push_str(&format!("#SBATCH --job-name=flysim-{name}\n"));
    out.push_str(&format!(
        "#SBATCH --array=0-{}\n",
        members.saturating_sub(1)
    ));
    out.push_str("#SBATCH --ntasks=1\n");
    out.push_str(&format!("#SBATCH --cpus-per-task={cpus}\n"));
    out.push_str(&format!("#SBATCH --output={dir_text}/slurm/%A_%a.out\n"));
    if let Some(partition) = &args.partition {
        out.push_str(&format!("#SBATCH --partition={partition}\n"));
    }
    if let Some(time) = &args.time {
        out.push_str(&format!("#SBATCH --time={time}\n"));
    }
    out.push_str(&format!(
        "# One task per member of sweep {name} ({members} members); each runs its member's plan\n\
         # into {dir_text}/members/<index>/. A task whose member is already complete does nothing.\n\
         set -eu\n\
         exec {} sweep member {} \"$SLURM_ARRAY_TASK_ID\"\n",
        quoted(&flysim.display().to_string()),
        quoted(&dir_text),
    ));
    out
}

/// `flysim sweep slurm`.
pub(crate) fn run(args: &Args) -> Result<Printed, CliError> {
    let sweep = resolve_sweep(&args.input)?;
    let host = crate::host::host();
    let content = ContentSource::for_composition(&args.input, host.asset_registry.clone());
    SweepDir::prepare(&args.out, &sweep, &content)?;
    let dir = absolute(&args.out);
    let logs = dir.join("slurm");
    std::fs::create_dir_all(&logs).map_err(|error| CliError::WriteOutput {
        path: logs.clone(),
        error,
    })?;
    let flysim = match &args.flysim {
        Some(path) => absolute(path),
        None => std::env::current_exe().map_err(|error| CliError::ReadInput {
            path: PathBuf::from("/proc/self/exe"),
            error,
            help: "name the binary the tasks run with --flysim PATH".to_owned(),
        })?,
    };
    // The threads the agents of a member use: what a task asks for.
    let cpus = sweep
        .members
        .first()
        .map_or(1, |m| m.plan.agents.iter().map(|a| a.threads).sum::<u32>())
        .max(1);
    let text = script(&sweep.name, sweep.members.len(), cpus, &dir, &flysim, args);
    let path = dir.join(SCRIPT);
    flysim_store::write_durably(&path, text.as_bytes())?;
    Ok(Printed {
        stdout: format!(
            "sweep {} (sweepDigest=sha256:{}): {} members in {}\n  submit it: sbatch {}\n  then: flysim sweep collect {}\n",
            sweep.name,
            sweep.digest,
            sweep.members.len(),
            dir.display(),
            path.display(),
            dir.display()
        ),
        stderr: String::new(),
        code: crate::exit::SUCCESS,
    })
}
