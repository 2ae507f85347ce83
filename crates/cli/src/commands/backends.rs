//! `flysim backends`: which environment backends this build has, with their pinned identities.

use flysim_binjgb::Availability;
use serde_json::json;

use crate::Output;
use crate::error::CliError;

/// Arguments of `flysim backends`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Print one JSON object instead of text
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: &Args) -> Result<Output, CliError> {
    let (status, detail) = match flysim_binjgb::availability() {
        Availability::Available { revision } => {
            ("available", format!("binjgb revision {revision}"))
        }
        Availability::Absent { reason } => ("absent", reason.to_owned()),
    };
    let rows = [
        ("binjgb", status, detail),
        (
            "arena",
            "not-implemented",
            "the counter arena arrives with the lockstep session".to_owned(),
        ),
        (
            "dolphin",
            "not-implemented",
            "the GameCube backend arrives with its own issue".to_owned(),
        ),
    ];
    if args.json {
        let backends: Vec<_> = rows.iter().map(|(name, status, detail)| json!({"backend": name, "status": status, "detail": detail})).collect();
        let doc = json!({ "backends": backends });
        return Ok(format!(
            "{}\n",
            flysim_types::json::to_canonical(&doc).map_err(flysim_types::ContractError::from)?
        ));
    }
    Ok(rows
        .iter()
        .map(|(name, status, detail)| format!("{name:<8} {status:<16} {detail}\n"))
        .collect())
}
