//! `flysim diff RUN_A RUN_B`: where two recorded runs differ. The plans' differing fields, then
//! the first row whose behaviour differs and, decoded, the fields that differ in it; a row that
//! no longer reads, or a trace that no longer hashes to its manifest's run digest, is named by
//! row number with its code. It reads the run directories only (no re-execution) and knows
//! nothing of how the rows were produced.

mod fields;

use std::path::{Path, PathBuf};

use flysim_store::StoreError;
use flysim_types::plan::LaunchPlan;
use flysim_types::trace::TraceBehaviour;
use serde_json::{Value, json};

use self::fields::{FieldDifference, differences};
use super::run_dir::{RecordedRow, RecordedRun};
use crate::Printed;
use crate::error::CliError;

/// The most differing fields of a row (or plan) shown; the rest are counted.
const SHOWN_FIELDS: usize = 20;

/// Arguments of `flysim diff`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The first run directory
    #[arg(value_name = "RUN_A")]
    run_a: PathBuf,
    /// The second run directory
    #[arg(value_name = "RUN_B")]
    run_b: PathBuf,
    /// Print one JSON object {"identical","plan","firstDivergence","damage"} instead of text
    #[arg(long)]
    json: bool,
}

/// The first row at which two runs differ.
struct Divergence {
    /// The row (its boundary).
    row: u64,
    /// The behaviour fields that differ, when both rows read.
    fields: Vec<FieldDifference>,
    /// Why the rows cannot be compared field by field: a row that does not read or is absent.
    problems: Vec<String>,
}

/// A damaged run: which one, the row, and the refusal with its code.
struct Damage {
    /// `A` or `B`.
    run: &'static str,
    /// The row at fault, when it is known.
    row: Option<u64>,
    /// The code.
    code: String,
    /// What is wrong.
    message: String,
}

/// What `flysim diff` found.
struct Comparison {
    plan: Vec<FieldDifference>,
    divergence: Option<Divergence>,
    damage: Vec<Damage>,
}

pub(crate) fn run(args: &Args) -> Result<Printed, CliError> {
    let a = RecordedRun::read(&args.run_a)?;
    let b = RecordedRun::read(&args.run_b)?;
    let comparison = compare(&a, &b)?;
    let code = if comparison.plan.is_empty() && comparison.divergence.is_none() {
        if comparison.damage.is_empty() {
            crate::exit::SUCCESS
        } else {
            crate::exit::DAMAGE_FOUND
        }
    } else {
        crate::exit::DIGEST_MISMATCH
    };
    let stdout = if args.json {
        let text = flysim_types::json::to_canonical(&as_json(&comparison))
            .map_err(flysim_types::ContractError::from)?;
        format!("{text}\n")
    } else {
        as_text(&comparison, [(&args.run_a, &a), (&args.run_b, &b)])
    };
    Ok(Printed {
        stdout,
        stderr: String::new(),
        code,
    })
}

/// A plan as JSON, to compare by field.
fn plan_json(plan: &LaunchPlan) -> Result<Value, CliError> {
    serde_json::to_value(plan).map_err(not_json)
}

/// A behaviour row as JSON, to compare by field.
fn row_json(row: &TraceBehaviour) -> Result<Value, CliError> {
    serde_json::to_value(row).map_err(not_json)
}

/// A contract value that does not convert to JSON (never for a value that was read from it).
fn not_json(e: serde_json::Error) -> CliError {
    CliError::Contract(flysim_types::ContractError::rule("", e.to_string()))
}

fn compare(a: &RecordedRun, b: &RecordedRun) -> Result<Comparison, CliError> {
    let plan = differences(&plan_json(&a.plan)?, &plan_json(&b.plan)?);
    let divergence = first_divergence(&a.rows, &b.rows)?;
    let mut damage = Vec::new();
    let digests = [a.digest_damage(), b.digest_damage()];
    for (side, (run, recorded)) in [("A", a), ("B", b)].into_iter().enumerate() {
        for (row, error) in recorded.unreadable_rows() {
            damage.push(damage_of(run, Some(row), error));
        }
        if let Some(error) = &digests[side] {
            // The first row that differs from the other run, when that one is intact and of
            // the same plan, is the row that was altered.
            let row = divergence
                .as_ref()
                .filter(|_| plan.is_empty() && digests[1 - side].is_none())
                .map(|d| d.row);
            damage.push(damage_of(run, row, error));
        }
    }
    Ok(Comparison {
        plan,
        divergence,
        damage,
    })
}

fn damage_of(run: &'static str, row: Option<u64>, error: &StoreError) -> Damage {
    Damage {
        run,
        row,
        code: error.code_str(),
        message: error.to_string(),
    }
}

/// The first row whose behaviour differs, or that one run holds and the other does not.
fn first_divergence(a: &[RecordedRow], b: &[RecordedRow]) -> Result<Option<Divergence>, CliError> {
    for row in 0..a.len().max(b.len()) {
        let number = row as u64;
        let (x, y) = (a.get(row), b.get(row));
        let mut problems = Vec::new();
        for (run, side) in [("A", x), ("B", y)] {
            match side {
                None => problems.push(format!("{run} holds no row {number}")),
                Some(RecordedRow {
                    behaviour: Err(e), ..
                }) => problems.push(format!(
                    "{run}'s row {number} does not read ({}, below)",
                    e.code_str()
                )),
                Some(_) => {}
            }
        }
        if !problems.is_empty() {
            return Ok(Some(Divergence {
                row: number,
                fields: Vec::new(),
                problems,
            }));
        }
        if let (
            Some(RecordedRow {
                behaviour: Ok(p), ..
            }),
            Some(RecordedRow {
                behaviour: Ok(q), ..
            }),
        ) = (x, y)
            && p != q
        {
            return Ok(Some(Divergence {
                row: number,
                fields: differences(&row_json(p)?, &row_json(q)?),
                problems,
            }));
        }
    }
    Ok(None)
}

/// The lines of `fields`, at most [`SHOWN_FIELDS`] of them, then a count of the rest.
fn field_lines(fields: &[FieldDifference], out: &mut String) {
    for field in fields.iter().take(SHOWN_FIELDS) {
        out.push_str(&format!("  {}\n", field.line()));
    }
    if fields.len() > SHOWN_FIELDS {
        out.push_str(&format!(
            "  ... and {} more field(s)\n",
            fields.len() - SHOWN_FIELDS
        ));
    }
}

fn as_text(comparison: &Comparison, runs: [(&Path, &RecordedRun); 2]) -> String {
    let mut out = String::new();
    for ((dir, run), label) in runs.iter().zip(["A", "B"]) {
        out.push_str(&format!(
            "{label}: {} ({}, {} rows, runDigest=sha256:{})\n",
            dir.display(),
            run.manifest.run_id,
            run.rows.len(),
            run.manifest.run_digest
        ));
    }
    if comparison.plan.is_empty() {
        out.push_str("the plans are identical\n");
    } else {
        out.push_str(&format!(
            "the plans differ in {} field(s):\n",
            comparison.plan.len()
        ));
        field_lines(&comparison.plan, &mut out);
    }
    match &comparison.divergence {
        None => out.push_str("the behaviour rows are identical\n"),
        Some(d) => {
            out.push_str(&format!("first diverging row: boundary {}\n", d.row));
            for problem in &d.problems {
                out.push_str(&format!("  {problem}\n"));
            }
            field_lines(&d.fields, &mut out);
        }
    }
    for damage in &comparison.damage {
        let row = damage
            .row
            .map_or_else(String::new, |r| format!(" row {r}:"));
        out.push_str(&format!(
            "damaged: {}{row} {} {}\n",
            damage.run, damage.code, damage.message
        ));
    }
    if comparison.plan.is_empty() && comparison.divergence.is_none() && comparison.damage.is_empty()
    {
        out.push_str("the runs are identical\n");
    }
    out
}

fn fields_json(fields: &[FieldDifference]) -> Value {
    let shown: Vec<Value> = fields
        .iter()
        .take(SHOWN_FIELDS)
        .map(|f| json!({"path": f.path, "a": f.a, "b": f.b}))
        .collect();
    json!({"shown": shown, "more": fields.len().saturating_sub(SHOWN_FIELDS)})
}

fn as_json(comparison: &Comparison) -> Value {
    let divergence = comparison.divergence.as_ref().map(|d| {
        json!({
            "row": d.row,
            "fields": fields_json(&d.fields),
            "problems": d.problems,
        })
    });
    let damage: Vec<Value> = comparison
        .damage
        .iter()
        .map(|d| json!({"run": d.run, "row": d.row, "code": d.code, "message": d.message}))
        .collect();
    json!({
        "identical": comparison.plan.is_empty() && comparison.divergence.is_none() && comparison.damage.is_empty(),
        "plan": fields_json(&comparison.plan),
        "firstDivergence": divergence,
        "damage": damage,
    })
}
