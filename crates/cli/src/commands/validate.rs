//! `flysim validate`: check a composition and report every problem.

use std::path::PathBuf;

use super::resolve_with;
use super::sweep::SeedOverride;
use crate::error::CliError;

/// Arguments of `flysim validate`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The composition (.kdl), or `-` for standard input (its includes then resolve against the
    /// current directory)
    #[arg(value_name = "FILE|-")]
    input: PathBuf,
    #[command(flatten)]
    seed: SeedOverride,
}

pub(crate) fn run(args: &Args) -> Result<String, CliError> {
    let plan = resolve_with(&args.input, &args.seed.overrides())?;
    let mut out = format!(
        "{}: valid ({} agent{}, environment `{}` on {}, {} steps)\n",
        super::display_name(&args.input),
        plan.agents.len(),
        if plan.agents.len() == 1 { "" } else { "s" },
        plan.environment.id,
        plan.environment.backend.as_str(),
        plan.run.steps,
    );
    // A composition with a sweep is checked member by member too (unless one seed was asked for).
    if args.seed.master_seed.is_none() && args.input != std::path::Path::new("-") {
        match super::sweep::resolve_sweep(&args.input) {
            Ok(sweep) => out.push_str(&format!(
                "  sweep of {} members, every one valid; sweepDigest=sha256:{}\n",
                sweep.members.len(),
                sweep.digest
            )),
            Err(CliError::NoSweep { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}
