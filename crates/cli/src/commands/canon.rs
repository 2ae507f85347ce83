//! `flysim canon`: strict-parse a JSON document and print its RFC 8785 form or digest.

use std::path::PathBuf;

use flysim_types::{ContractError, digest, json};

use super::{display_name, read_input};
use crate::error::CliError;

/// Arguments of `flysim canon`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The JSON file, or `-` for standard input
    #[arg(value_name = "FILE|-")]
    input: PathBuf,
    /// Print `sha256:<hex>` of the canonical form instead of the form itself
    #[arg(long)]
    digest: bool,
    /// Also validate the document as this contract type (see `flysim schema --list`)
    #[arg(long = "type", value_name = "KIND")]
    kind: Option<String>,
}

pub(crate) fn run(args: &Args) -> Result<String, CliError> {
    let kind = args.kind.as_deref().map(super::schema::kind).transpose()?;
    let bytes = read_input(&args.input)?;
    let name = display_name(&args.input);
    let refuse = |e: ContractError| CliError::document(e, &name, &bytes);
    let value = match kind {
        Some(kind) => (kind.check)(&bytes).map_err(refuse)?,
        None => json::parse_document(&bytes).map_err(|e| refuse(e.into()))?,
    };
    if args.digest {
        let d = digest::value_digest(&value).map_err(refuse)?;
        Ok(format!("sha256:{d}\n"))
    } else {
        let canonical = json::to_canonical(&value).map_err(|e| refuse(e.into()))?;
        Ok(format!("{canonical}\n"))
    }
}
