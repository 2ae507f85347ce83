//! `flysim sweep collect DIR`: a sweep directory's members merged into one table, written as
//! `table.csv` and `table.json` (member index, the varied values, plan and run digest, steps,
//! each agent's score, status, wall time) and `scores.png` (each agent's score per value of
//! each axis); the members without a completed run are listed, and make the exit code
//! [`crate::exit::RUN_FAILED`]. A member whose plan is not the declared one refuses the whole
//! collection (`FS0936`).
//!
//! It renders the table `flysim_run::sweep::collect` reads.

use std::path::{Path, PathBuf};

use flysim_run::sweep::{SweepDir, Table, collect};

use crate::Printed;
use crate::commands::run_dir::score_text;
use crate::error::CliError;

/// Arguments of `flysim sweep collect`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// A sweep directory
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// Write table.csv, table.json and scores.png here instead of into DIR
    #[arg(long, value_name = "OUT")]
    out: Option<PathBuf>,
}

/// A CSV field: quoted when it holds a comma, a quote or a line break.
fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

/// A varied value as a CSV field: a string as itself, anything else as JSON.
fn value_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn opt<T: std::fmt::Display>(value: Option<T>) -> String {
    value.map_or_else(String::new, |v| v.to_string())
}

/// The table as CSV: one header line, one line per member.
pub(crate) fn csv(table: &Table) -> String {
    let mut header = vec!["index".to_owned()];
    header.extend(table.axes.iter().cloned());
    header.extend([
        "planDigest".to_owned(),
        "runDigest".to_owned(),
        "steps".to_owned(),
    ]);
    header.extend(table.agents.iter().map(|a| format!("score:{a}")));
    header.extend(["status".to_owned(), "wallTimeS".to_owned()]);
    let mut out: String = header
        .iter()
        .map(|h| field(h))
        .collect::<Vec<_>>()
        .join(",");
    out.push('\n');
    for row in &table.rows {
        let mut cells = vec![row.index.to_string()];
        cells.extend(row.values.iter().map(value_text));
        cells.push(format!("sha256:{}", row.plan_digest));
        cells.push(opt(row.run_digest.map(|d| format!("sha256:{d}"))));
        cells.push(opt(row.steps));
        for i in 0..table.agents.len() {
            cells.push(
                row.scores
                    .get(i)
                    .map_or_else(String::new, |s| score_text(*s)),
            );
        }
        cells.push(row.status.to_owned());
        cells.push(opt(row.wall_time_s.map(|s| format!("{s:.3}"))));
        out.push_str(&cells.iter().map(|c| field(c)).collect::<Vec<_>>().join(","));
        out.push('\n');
    }
    out
}

/// The table as one canonical JSON document.
pub(crate) fn json(table: &Table) -> Result<String, CliError> {
    let members: Vec<serde_json::Value> = table
        .rows
        .iter()
        .map(|row| {
            let scores: serde_json::Map<String, serde_json::Value> = table
                .agents
                .iter()
                .zip(&row.scores)
                .map(|(a, s)| (a.clone(), serde_json::json!(s)))
                .collect();
            serde_json::json!({
                "index": row.index,
                "values": super::family::values_json(
                    &table.axes.iter().cloned().zip(row.values.iter().cloned()).collect::<Vec<_>>()
                ),
                "planDigest": format!("sha256:{}", row.plan_digest),
                "runDigest": row.run_digest.map(|d| format!("sha256:{d}")),
                "steps": row.steps,
                "scores": scores,
                "status": row.status,
                "wallTimeS": row.wall_time_s,
            })
        })
        .collect();
    let doc = serde_json::json!({
        "name": table.name,
        "sweepDigest": format!("sha256:{}", table.sweep_digest),
        "axes": table.axes,
        "agents": table.agents,
        "members": members,
    });
    flysim_types::json::to_canonical(&doc)
        .map_err(|e| CliError::Contract(flysim_types::ContractError::from(e)))
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    flysim_store::write_durably(path, bytes).map_err(CliError::from)
}

/// `flysim sweep collect`.
pub(crate) fn run(args: &Args) -> Result<Printed, CliError> {
    let sweep = SweepDir::open(&args.dir)?;
    let table = collect(&sweep)?;
    let out = args.out.clone().unwrap_or_else(|| args.dir.clone());
    std::fs::create_dir_all(&out).map_err(|error| CliError::WriteOutput {
        path: out.clone(),
        error,
    })?;
    write(&out.join("table.csv"), csv(&table).as_bytes())?;
    write(
        &out.join("table.json"),
        format!("{}\n", json(&table)?).as_bytes(),
    )?;
    let png = crate::raster::scores_png(&table).map_err(|error| CliError::WriteOutput {
        path: out.join("scores.png"),
        error,
    })?;
    write(&out.join("scores.png"), &png)?;
    let complete = table.rows.len() - table.incomplete().count();
    let stdout = format!(
        "sweep {} (sweepDigest=sha256:{}): {complete} of {} members complete; {}, {}, {}\n",
        table.name,
        table.sweep_digest,
        table.rows.len(),
        out.join("table.csv").display(),
        out.join("table.json").display(),
        out.join("scores.png").display(),
    );
    let mut stderr = String::new();
    for status in ["missing", "running", "paused", "failed"] {
        let members: Vec<String> = table
            .incomplete()
            .filter(|r| r.status == status)
            .map(|r| r.index.to_string())
            .collect();
        if !members.is_empty() {
            stderr.push_str(&format!("  {status}: member(s) {}\n", members.join(", ")));
        }
    }
    let code = if stderr.is_empty() {
        crate::exit::SUCCESS
    } else {
        stderr.push_str(&format!(
            "  run them: flysim sweep member {} INDEX (one), or flysim sweep run FILE --dir {} (all not complete)\n",
            args.dir.display(),
            args.dir.display()
        ));
        crate::exit::RUN_FAILED
    };
    Ok(Printed {
        stdout,
        stderr,
        code,
    })
}
