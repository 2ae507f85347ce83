//! A run directory read back to be looked at (`flysim diff`, `flysim runs`, the final line of
//! `flysim run` and `flysim resume`): its plan and manifest through the store's strict reader,
//! then every trace row on its own, so that one damaged row is named by its number instead of
//! failing the whole reading; whether the rows still hash to the manifest's run digest; and each
//! agent's score, the sum of its rewards' values over the rows. It re-executes nothing, and it does not know how a reading is shown.

use std::path::{Path, PathBuf};

use flysim_store::StoreError;
use flysim_types::parse_payload;
use flysim_types::plan::LaunchPlan;
use flysim_types::trace::{RunDigester, RunManifest, TraceBehaviour, TransitionTrace};

/// A run directory as it was read: plan and manifest, each row (or why it cannot be read), and
/// whether the rows still hash to the manifest's run digest.
#[derive(Debug)]
pub(crate) struct RecordedRun {
    /// Its plan, strictly read and checked against the manifest.
    pub(crate) plan: LaunchPlan,
    /// Its manifest.
    pub(crate) manifest: RunManifest,
    /// Every line of `trace.ndjson`, in order: row `n` is line `n + 1`.
    pub(crate) rows: Vec<RecordedRow>,
    /// The run directory.
    dir: PathBuf,
}

/// One line of the trace.
#[derive(Debug)]
pub(crate) struct RecordedRow {
    /// The row's number: the boundary it should hold.
    pub(crate) number: u64,
    /// Its behaviour, or why the line is not a row of this run ([`StoreError::Unreadable`],
    /// `FS0402`, its message naming the row).
    pub(crate) behaviour: Result<TraceBehaviour, StoreError>,
}

impl RecordedRun {
    /// Reads the run directory `dir`.
    ///
    /// # Errors
    ///
    /// When its plan, manifest or trace file cannot be read at all (`FS0402`).
    pub(crate) fn read(dir: &Path) -> Result<Self, StoreError> {
        let (plan, manifest) = flysim_store::open_plan(dir)?;
        let trace_path = dir.join(flysim_store::TRACE_FILE);
        let bytes = std::fs::read(&trace_path).map_err(|e| StoreError::Unreadable {
            path: trace_path.clone(),
            reason: e.to_string(),
        })?;
        let mut lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
        if lines.last().is_some_and(|l| l.is_empty()) {
            lines.pop();
        }
        let rows: Vec<RecordedRow> = lines
            .iter()
            .zip(0u64..)
            .map(|(line, number)| RecordedRow {
                number,
                behaviour: read_row(&trace_path, number, line),
            })
            .collect();
        Ok(Self {
            plan,
            manifest,
            rows,
            dir: dir.to_owned(),
        })
    }

    /// [`StoreError::Damaged`] (`FS0403`) when every row reads but the rows hash to another run
    /// digest than the manifest records; `None` when they hash to it or a row cannot be read
    /// (that row is the problem then). Asked for, not done by [`read`](Self::read): the final
    /// line of a run its own invocation just wrote needs only the scores.
    pub(crate) fn digest_damage(&self) -> Option<StoreError> {
        let mut digester = RunDigester::new(&self.plan.plan_digest);
        for row in &self.rows {
            let behaviour = row.behaviour.as_ref().ok()?;
            digester.push(behaviour).ok()?;
        }
        let found = digester.digest();
        (found != self.manifest.run_digest).then(|| StoreError::Damaged {
            path: self.dir.clone(),
            recorded: self.manifest.run_digest,
            found,
        })
    }

    /// The rows that cannot be read, each with its problem.
    pub(crate) fn unreadable_rows(&self) -> impl Iterator<Item = (u64, &StoreError)> {
        self.rows
            .iter()
            .filter_map(|r| r.behaviour.as_ref().err().map(|e| (r.number, e)))
    }

    /// Each agent of the plan, in plan order, with its score: the sum of its rewards' values
    /// over the rows that can be read.
    pub(crate) fn scores(&self) -> Vec<(String, f64)> {
        self.plan
            .agents
            .iter()
            .map(|agent| {
                let score = self
                    .rows
                    .iter()
                    .filter_map(|r| r.behaviour.as_ref().ok())
                    .flat_map(|b| &b.agents)
                    .filter(|a| a.agent_id == agent.agent_id)
                    .flat_map(|a| &a.rewards)
                    .map(|r| r.value)
                    .sum();
                (agent.agent_id.to_string(), score)
            })
            .collect()
    }
}

/// Row `number` of the trace at `path`, from its line.
fn read_row(path: &Path, number: u64, line: &[u8]) -> Result<TraceBehaviour, StoreError> {
    let unreadable = |reason: String| StoreError::Unreadable {
        path: PathBuf::from(path),
        reason: format!("row {number} (line {}) {reason}", number + 1),
    };
    let row: TransitionTrace =
        parse_payload(line).map_err(|e| unreadable(format!("no longer parses: {e}")))?;
    if row.behaviour.boundary.get() != number {
        return Err(unreadable(format!(
            "holds boundary {}, not {number}",
            row.behaviour.boundary
        )));
    }
    Ok(row.behaviour)
}

/// A score as a person reads it: `14`, `2.5`, `6.07` (at most six decimals, rounded, trailing
/// zeros dropped: a sum of rewards like 0.01 carries binary noise in its last bits, and
/// `6.0699999999999985` says nothing more). `--json` and the trace keep every bit.
pub(crate) fn score_text(score: f64) -> String {
    let text = format!("{score:.6}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    // An empty sum of f64 is -0.0, and a tiny negative rounds to -0: a score of nothing is 0.
    if text == "-0" { "0" } else { text }.to_owned()
}

#[cfg(test)]
mod tests {
    use super::score_text;

    #[test]
    fn scores_print_at_most_six_decimals_without_trailing_zeros() {
        assert_eq!(score_text(14.0), "14");
        assert_eq!(score_text(2.5), "2.5");
        assert_eq!(score_text(6.069_999_999_999_998_5), "6.07");
        assert_eq!(score_text(0.139_999_999_999_999_99), "0.14");
        assert_eq!(score_text(-0.0), "0");
        assert_eq!(score_text(-1e-9), "0");
        assert_eq!(score_text(-3.25), "-3.25");
        assert_eq!(score_text(1.234_567_89), "1.234568");
        assert_eq!(score_text(1e6), "1000000");
    }
}
