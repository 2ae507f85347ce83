//! Running steps: one transaction after another until the committed step reaches a bound, a
//! pause is requested (honoured at a committed boundary) or the task requests a terminal
//! episode, each row recorded while the next step runs.
//!
//! It knows nothing of what a step does (`step`) or how a row is finished (`handoff`).

use std::collections::VecDeque;

use flysim_types::trace::{RowText, TransitionTrace};

use super::handoff::{HeldRow, MAX_HELD};
use super::{Coordinator, Stop};
use crate::error::SessionError;
use crate::phase::Phase;

/// Receives every committed row, in order, with its canonical text.
type RowCallback<'a> = dyn FnMut(&TransitionTrace, RowText) -> Result<(), SessionError> + 'a;

impl Coordinator {
    /// Runs steps until the committed step reaches `until`, a pause is requested (honoured at
    /// a committed boundary), or the task requests a terminal episode. `on_row` gets every row,
    /// in order, with its canonical text; each is recorded while the next step runs (so its
    /// frames are hashed beside the world, [`crate::digests`], and where that thread is
    /// otherwise idle the row is finished there too) and the last before this returns, whatever
    /// it returns.
    ///
    /// # Errors
    ///
    /// The first [`SessionError`]; the rows committed before it stand.
    pub async fn run(
        &mut self,
        until: u64,
        on_row: &mut dyn FnMut(&TransitionTrace, RowText) -> Result<(), SessionError>,
    ) -> Result<Stop, SessionError> {
        let mut held = VecDeque::new();
        let outcome = self.run_holding(until, &mut held, on_row).await;
        let mut last = Ok(());
        while let Some(pending) = held.pop_front() {
            last = match self.record_held(pending).await {
                Ok((row, text)) => on_row(&row, text),
                Err(e) => Err(self.fail(e)),
            };
            if last.is_err() {
                break;
            }
        }
        match (outcome, last) {
            (Err(e), _) | (Ok(_), Err(e)) => Err(e),
            (Ok(stop), Ok(())) => Ok(stop),
        }
    }

    /// [`Coordinator::run`], with the newest committed rows left in `held` for the caller to
    /// record: the newest always, and older ones the digest thread has not finished yet, up to
    /// [`MAX_HELD`] (a late look by that thread then delays rows, not steps).
    async fn run_holding(
        &mut self,
        until: u64,
        held: &mut VecDeque<HeldRow>,
        on_row: &mut RowCallback<'_>,
    ) -> Result<Stop, SessionError> {
        while self.step < until {
            if self.pause.requested() {
                return self.pause_here("requested".into());
            }
            self.pace(self.step).await;
            let pending = match self.transaction().await {
                Ok(pending) => pending,
                Err(e) => return Err(self.fail(e)),
            };
            let terminal = pending.behaviour.episode_request.clone();
            let seq = self.run.rows + held.len() as u64;
            let pending = self.hold(pending, seq);
            held.push_back(pending);
            while held.len() > 1
                && (held.len() > MAX_HELD || held.front().is_some_and(HeldRow::ready))
            {
                let Some(previous) = held.pop_front() else {
                    break;
                };
                let (row, text) = match self.record_held(previous).await {
                    Ok(recorded) => recorded,
                    Err(e) => return Err(self.fail(e)),
                };
                on_row(&row, text)?;
            }
            if let Some(request) = terminal {
                return self.pause_here(format!("terminal:{}", request.reason));
            }
        }
        if self.pause.requested() {
            return self.pause_here("requested".into());
        }
        Ok(Stop::Complete)
    }

    /// The handle a pause is requested through (the run's checkpoint cadence asks it whether
    /// the boundary it stops at needs a checkpoint).
    pub(crate) fn pause_handle(&self) -> super::PauseHandle {
        self.pause.clone()
    }

    /// Pauses at the committed boundary, for `reason`.
    fn pause_here(&mut self, reason: String) -> Result<Stop, SessionError> {
        self.enter(Phase::Paused)?;
        Ok(Stop::Paused { reason })
    }
}
