//! `flysim seed`: derive per-agent seeds with seed-derivation-v1 and show the material.

use flysim_types::seed::{self, DerivedSeed};
use flysim_types::{Id, U64};
use serde_json::json;

use crate::error::CliError;

/// Arguments of `flysim seed`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The master seed, a canonical U64 decimal (0 to 18446744073709551615)
    #[arg(long, value_name = "N")]
    master_seed: String,
    /// An agent id; repeat for several agents (order is kept)
    #[arg(long = "agent", value_name = "ID", required = true)]
    agents: Vec<String>,
    /// Print one JSON object instead of text
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: &Args) -> Result<String, CliError> {
    let master = U64::parse(&args.master_seed)?;
    let ids = args
        .agents
        .iter()
        .map(|a| Id::parse(a))
        .collect::<Result<Vec<_>, _>>()?;
    let derived = seed::derive_all(master, &ids)?;
    Ok(if args.json {
        as_json(master, &derived)
    } else {
        as_text(master, &derived)
    })
}

fn as_json(master: U64, derived: &[DerivedSeed]) -> String {
    let agents: Vec<_> = derived
        .iter()
        .map(|d| {
            json!({
                "agentId": d.agent_id,
                "material": d.material,
                "materialDigest": d.material_digest,
                "seed": d.seed,
            })
        })
        .collect();
    let doc = json!({ "algorithm": seed::ALGORITHM, "masterSeed": master, "agents": agents });
    format!("{doc}\n")
}

fn as_text(master: U64, derived: &[DerivedSeed]) -> String {
    let mut out = format!("{} with master seed {master}\n", seed::ALGORITHM);
    for d in derived {
        out.push_str(&format!(
            "\n  agent     {}\n  material  {}\n  sha256    {}\n  seed      {}\n",
            d.agent_id,
            d.material.escape_default(),
            d.material_digest,
            d.seed
        ));
    }
    out
}
