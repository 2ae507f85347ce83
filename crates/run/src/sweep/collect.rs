//! A sweep directory read back into one table: per member its values, its declared plan
//! digest, and of its completed run the run digest, steps, each agent's score and wall time;
//! for a member without one, whether it is missing, unfinished or failed.
//!
//! Every completed run is read whole and its rows checked against its run digest; a member
//! whose plan or run is not the declared plan refuses the whole collection. It does not
//! decide how the table is written or drawn.

use std::path::PathBuf;

use flysim_types::Digest;
use flysim_types::trace::RunStatus;

use super::dir::AxisValue;
use super::{MemberState, SweepDir, SweepError};

/// The sweep's table.
#[derive(Debug, Clone)]
pub struct Table {
    /// The composition's name.
    pub name: String,
    /// The sweep digest.
    pub sweep_digest: Digest,
    /// The axes' targets.
    pub axes: Vec<String>,
    /// The agents scored, in the first member's plan order.
    pub agents: Vec<String>,
    /// One row per member, in member order.
    pub rows: Vec<MemberRow>,
}

/// One member's row.
#[derive(Debug, Clone)]
pub struct MemberRow {
    /// Its index.
    pub index: usize,
    /// Its values, in axis order.
    pub values: Vec<serde_json::Value>,
    /// The plan digest the sweep declares for it.
    pub plan_digest: Digest,
    /// `complete`, `missing` (no run), or the newest run's status (`running`, `paused`,
    /// `failed`).
    pub status: &'static str,
    /// The run directory the row reads, if any.
    pub run_dir: Option<PathBuf>,
    /// The run digest, of a run that has a manifest.
    pub run_digest: Option<Digest>,
    /// The steps committed.
    pub steps: Option<u64>,
    /// Each agent's score (in [`Table::agents`] order), of a completed run.
    pub scores: Vec<f64>,
    /// The wall time of its last invocation, in seconds.
    pub wall_time_s: Option<f64>,
}

impl Table {
    /// The rows of members without a completed run.
    pub fn incomplete(&self) -> impl Iterator<Item = &MemberRow> {
        self.rows.iter().filter(|r| r.status != "complete")
    }
}

fn status_name(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Running => "running",
        RunStatus::Complete => "complete",
        RunStatus::Paused => "paused",
        RunStatus::Failed => "failed",
    }
}

fn seconds(ns: u64) -> f64 {
    // Display only: nanoseconds to seconds.
    #[expect(clippy::cast_precision_loss, reason = "a displayed duration")]
    let ns = ns as f64;
    ns / 1e9
}

/// Reads every member of the sweep in `sweep` into its table.
///
/// # Errors
///
/// [`SweepError::ForeignPlan`] for a member whose plan or run is another plan; a completed run
/// whose rows do not hash to its run digest (the store's `FS0403`).
pub fn collect(sweep: &SweepDir) -> Result<Table, SweepError> {
    let index = sweep.index();
    let mut agents: Vec<String> = Vec::new();
    let mut rows = Vec::with_capacity(index.members.len());
    for member in &index.members {
        // The plan file itself must be the declared plan, run or not.
        let plan = sweep.plan(member.index)?;
        if agents.is_empty() {
            agents = plan.agents.iter().map(|a| a.agent_id.to_string()).collect();
        }
        let mut row = MemberRow {
            index: member.index,
            values: member
                .values
                .iter()
                .map(|v: &AxisValue| v.value.clone())
                .collect(),
            plan_digest: member.plan_digest,
            status: "missing",
            run_dir: None,
            run_digest: None,
            steps: None,
            scores: Vec::new(),
            wall_time_s: None,
        };
        match sweep.state(member.index)? {
            MemberState::Missing => {}
            MemberState::Unfinished(dir, manifest) => {
                row.status = status_name(manifest.status);
                row.run_digest = Some(manifest.run_digest);
                row.steps = Some(manifest.steps.get());
                row.wall_time_s = Some(seconds(manifest.timings.wall_time_ns.get()));
                row.run_dir = Some(dir);
            }
            MemberState::Complete(dir, manifest) => {
                let record = flysim_store::open_run(&dir)?;
                row.scores = agents
                    .iter()
                    .map(|agent| {
                        record
                            .rows
                            .iter()
                            .flat_map(|r| &r.behaviour.agents)
                            .filter(|a| a.agent_id.as_str() == agent)
                            .flat_map(|a| &a.rewards)
                            .map(|r| r.value)
                            .sum::<f64>()
                            + 0.0
                    })
                    .collect();
                row.status = "complete";
                row.run_digest = Some(manifest.run_digest);
                row.steps = Some(manifest.steps.get());
                row.wall_time_s = Some(seconds(manifest.timings.wall_time_ns.get()));
                row.run_dir = Some(dir);
            }
        }
        rows.push(row);
    }
    Ok(Table {
        name: index.name.clone(),
        sweep_digest: index.sweep_digest,
        axes: index.axes.clone(),
        agents,
        rows,
    })
}
