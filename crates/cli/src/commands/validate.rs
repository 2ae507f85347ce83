//! `flysim validate`: check a composition and report every problem.

use std::path::PathBuf;

use super::resolve_composition;
use crate::error::CliError;

/// Arguments of `flysim validate`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The composition (.kdl), or `-` for standard input (its includes then resolve against the
    /// current directory)
    #[arg(value_name = "FILE|-")]
    input: PathBuf,
}

pub(crate) fn run(args: &Args) -> Result<String, CliError> {
    let plan = resolve_composition(&args.input)?;
    Ok(format!(
        "{}: valid ({} agent{}, environment `{}` on {}, {} steps)\n",
        super::display_name(&args.input),
        plan.agents.len(),
        if plan.agents.len() == 1 { "" } else { "s" },
        plan.environment.id,
        plan.environment.backend.as_str(),
        plan.run.steps,
    ))
}
