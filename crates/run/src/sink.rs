//! Where a recorded run's rows and checkpoints go: the run directory's trace, its manifest
//! (a resumed run's `running` manifest is written with its first new row, and the generations
//! after the one it resumed from are discarded then) and the checkpoint writer, which commits a
//! generation only once the trace holds its rows durably.

use std::sync::Arc;

use flysim_component::Refusal;
use flysim_session::{RunSink, SessionError};
use flysim_store::generations::{CheckpointWriter, Generation, GenerationStore};
use flysim_store::{RunWriter, StoreError};
use flysim_types::trace::{RowText, RunManifest, TraceBehaviour, TransitionTrace};
use flysim_types::{Id, U64};

use crate::progress::Progress;

/// Each agent's score: the sum of its rewards over the rows the trace holds, in row order (the
/// rows a resume kept, then each new one as it is written), so the final line need not read
/// the trace back.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scores(Vec<(Id, f64)>);

impl Scores {
    /// Zero for each of `agents`, in their order.
    pub(crate) fn of<'a>(agents: impl IntoIterator<Item = &'a Id>) -> Self {
        Self(agents.into_iter().map(|id| (id.clone(), 0.0)).collect())
    }

    /// Adds one row's rewards.
    pub(crate) fn add(&mut self, row: &TraceBehaviour) {
        for agent in &row.agents {
            if let Some((_, score)) = self.0.iter_mut().find(|(id, _)| *id == agent.agent_id) {
                for reward in &agent.rewards {
                    *score += reward.value;
                }
            }
        }
    }

    /// Each agent's score, in plan order.
    pub(crate) fn into_vec(self) -> Vec<(Id, f64)> {
        self.0
    }
}

/// The sink of a run or resume.
pub(crate) struct RunDirSink<'a> {
    pub(crate) writer: &'a mut RunWriter,
    pub(crate) checkpoints: Option<&'a CheckpointWriter>,
    pub(crate) progress: &'a mut dyn Progress,
    /// The bound of this invocation, for progress.
    pub(crate) total: u64,
    /// The `running` manifest a resumed invocation writes with its first row.
    pub(crate) running: Option<RunManifest>,
    /// Rows this invocation committed.
    pub(crate) new_rows: u64,
    /// The scores over every row the trace holds.
    pub(crate) scores: Scores,
    /// A resume from an older generation: the generations after it are discarded with the
    /// first new row (the rows after its boundary are cut off then too).
    pub(crate) discard_after: Option<u64>,
    /// The generations discarded.
    pub(crate) discarded: Vec<Generation>,
    /// The run directory's own error, when it failed the run (shared with the session's
    /// refusal, so it can be taken back typed once the run is over).
    pub(crate) failed: Option<Arc<StoreError>>,
}

impl RunDirSink<'_> {
    /// Keeps the store's error typed and hands the session its diagnostic.
    fn refuse(&mut self, error: StoreError) -> SessionError {
        let error = Arc::new(error);
        self.failed = Some(Arc::clone(&error));
        SessionError::Sink(Refusal::shared(error))
    }

    /// After a row is in the trace: the first row's manifest, progress.
    fn appended(&mut self, row: &TransitionTrace) -> Result<(), SessionError> {
        self.new_rows += 1;
        self.scores.add(&row.behaviour);
        if let Some(mut running) = self.running.take() {
            running.steps = U64(self.writer.rows().saturating_sub(1));
            running.run_digest = self.writer.run_digest();
            if let Err(e) = self.writer.write_manifest(&running) {
                return Err(self.refuse(e));
            }
            if let Some(n) = self.discard_after {
                match GenerationStore::of_run(self.writer.dir()).discard_after(n) {
                    Ok(discarded) => self.discarded = discarded,
                    Err(e) => return Err(self.refuse(e)),
                }
            }
        }
        self.progress.row(&row.behaviour, self.total);
        Ok(())
    }
}

impl RunSink for RunDirSink<'_> {
    fn row(&mut self, row: &TransitionTrace) -> Result<(), SessionError> {
        if let Err(e) = self.writer.append(row) {
            return Err(self.refuse(e));
        }
        self.appended(row)
    }

    fn row_text(&mut self, row: &TransitionTrace, text: RowText) -> Result<(), SessionError> {
        if let Err(e) = self.writer.append_text(text) {
            return Err(self.refuse(e));
        }
        self.appended(row)
    }

    fn checkpoint(&mut self, boundary: u64, id: Id, envelope: Vec<u8>) -> Result<(), SessionError> {
        // A generation never names rows the trace could lose.
        if let Err(e) = self.writer.sync() {
            return Err(self.refuse(e));
        }
        if let Some(c) = self.checkpoints {
            c.submit(boundary, id, envelope);
        }
        Ok(())
    }
}
