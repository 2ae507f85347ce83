//! `flysim checkpoint verify`: check a FLYSESS1 checkpoint envelope and show what it holds.

use std::path::PathBuf;

use flysim_types::checkpoint::decode;

use super::read_input;
use crate::error::CliError;

/// Arguments of `flysim checkpoint`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: CheckpointCommand,
}

#[derive(Debug, clap::Subcommand)]
enum CheckpointCommand {
    /// Verify every region of a checkpoint envelope (header, manifest, table, payload digests,
    /// footer) and list its payloads
    Verify {
        /// The envelope file, or `-` for standard input
        file: PathBuf,
    },
}

pub(crate) fn run(args: &Args) -> Result<String, CliError> {
    let CheckpointCommand::Verify { file } = &args.command;
    let bytes = read_input(file)?;
    let envelope = decode(&bytes).map_err(|e| CliError::Checkpoint(Box::new(e)))?;
    let id = envelope
        .manifest
        .get("checkpointId")
        .and_then(|v| v.as_str())
        .unwrap_or("(none)");
    let mut out = format!(
        "FLYSESS1 envelope, {} bytes: valid\ncheckpoint {id}\n",
        bytes.len()
    );
    for p in &envelope.payloads {
        out.push_str(&format!(
            "  {:<32} {:>10} bytes  sha256:{}\n",
            p.name,
            p.bytes.len(),
            flysim_types::digest::sha256(&p.bytes)
        ));
    }
    Ok(out)
}
