//! `flysim plan`: resolve a composition into its canonical launch plan.

use std::path::PathBuf;

use super::resolve_composition;
use crate::error::CliError;

/// Arguments of `flysim plan`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The composition (.kdl), or `-` for standard input
    #[arg(value_name = "FILE|-")]
    input: PathBuf,
    /// Write the plan here instead of standard output
    #[arg(short = 'o', long = "out", value_name = "OUT")]
    out: Option<PathBuf>,
}

/// The plan (on stdout, or nothing when written to OUT) and `planDigest=sha256:<hex>` for stderr.
pub(crate) fn run(args: &Args) -> Result<(String, String), CliError> {
    let plan = resolve_composition(&args.input)?;
    let text = plan.to_canonical()?;
    let note = format!("planDigest=sha256:{}\n", plan.plan_digest);
    match &args.out {
        Some(path) => {
            std::fs::write(path, format!("{text}\n")).map_err(|source| CliError::WriteOutput {
                path: path.clone(),
                source,
            })?;
            Ok((String::new(), note))
        }
        None => Ok((format!("{text}\n"), note)),
    }
}
