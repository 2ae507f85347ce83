//! Stepping: [`DolphinWorld::advance`] checks a controller batch against the configured ports,
//! writes every port's complete state and runs one frame advance, which must run exactly one
//! field; `frame_advance` presses the hotkey until the emulation runs and waits until it is at
//! rest again.
//!
//! It knows the lockstep's rule (one field per step, presses repeated only while nothing ran);
//! it does not know the pipes' line format (the `pipe` module) or how a pause is recognised (the
//! `pause` module).

use std::time::{Duration, Instant};

use flysim_types::workers::PortControl;

use super::{DolphinWorld, Observation, PIPE_TIMEOUT, port_id};
use crate::config::Hotkey;
use crate::error::DolphinError;
use crate::pipe::port_lines;
use crate::process;

/// How long one field may take to arrive after a frame advance.
const FIELD_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a frame advance may show no sign of the emulation running before it is pressed
/// again: a press a hotkey poll missed changes nothing, so pressing again is safe (a late
/// second step would run a second field, which is refused, never hidden).
const PRESS_RETRY: Duration = Duration::from_secs(1);
/// Presses tried per frame advance.
const FRAME_ADVANCE_PRESSES: u32 = 3;

impl DolphinWorld {
    /// Applies one complete controller batch (one control per configured port, in port order)
    /// and runs exactly one field.
    ///
    /// # Errors
    ///
    /// A contract refusal of the batch (nothing is applied, the world stays usable); FS0810 in
    /// nogui mode; FS0806 if the step ran more or less than one field or the world moved
    /// between steps, FS0805 if the helper failed — both leave the world failed (FS0807).
    #[expect(
        clippy::disallowed_methods,
        reason = "a bounded wait on Dolphin; the deadline only turns a hang into an error"
    )]
    pub fn advance(&mut self, controls: &[PortControl]) -> Result<Observation, DolphinError> {
        self.usable()?;
        self.qt_only("advance one field")?;
        let batch = self.batch_lines(controls)?;
        self.guard(|w| {
            let deadline = Instant::now() + PIPE_TIMEOUT;
            for (pad, lines) in w.pads.iter().zip(&batch) {
                process::write_all(pad, lines.as_bytes(), deadline)?;
            }
            for pad in &w.pads {
                process::wait_drained(pad, deadline)?;
            }
            let fields = w.frame_advance()?;
            if fields != 1 {
                return Err(DolphinError::LostLockstep {
                    reason: format!(
                        "the frame advance from boundary {} ran {fields} fields",
                        w.boundary
                    ),
                });
            }
            w.boundary += 1;
            w.observed = w.mirror.values();
            Ok(w.current())
        })
    }

    /// The pipe lines of a batch, one entry per configured port; a contract refusal names the
    /// offending control.
    fn batch_lines(&self, controls: &[PortControl]) -> Result<Vec<String>, DolphinError> {
        if controls.len() != self.config.ports.len() {
            return Err(DolphinError::Control(flysim_types::ContractError::rule(
                "controls",
                format!(
                    "one control per configured port ({}), found {}",
                    self.config.ports.len(),
                    controls.len()
                ),
            )));
        }
        let mut batch = Vec::with_capacity(controls.len());
        for (i, (control, port)) in controls.iter().zip(&self.config.ports).enumerate() {
            if control.port_id != port_id(*port) {
                return Err(DolphinError::Control(flysim_types::ContractError::rule(
                    format!("controls[{i}].portId"),
                    format!(
                        "expected `{}` (port order), found `{}`",
                        port_id(*port),
                        control.port_id
                    ),
                )));
            }
            batch.push(port_lines(control, &self.pad).map_err(|e| match e {
                DolphinError::Control(c) => {
                    DolphinError::Control(c.under(&format!("controls[{i}]")))
                }
                other => other,
            })?);
        }
        Ok(batch)
    }

    /// One frame advance from a paused boundary; returns how many fields it ran.
    #[expect(
        clippy::disallowed_methods,
        reason = "bounded waits for a field, and when to press frame advance again; the field count, not the clock, decides the boundary"
    )]
    pub(super) fn frame_advance(&mut self) -> Result<u64, DolphinError> {
        self.expect_still()?;
        let before = self.fields;
        let (pid, thread) = (self.emulator.pid(), self.thread);
        let runtime = move || {
            thread
                .and_then(|tid| process::thread_sample(pid, tid))
                .map(|(_, runtime)| runtime)
        };
        let idle = runtime();
        let deadline = Instant::now() + FIELD_TIMEOUT;
        let mut presses = 0;
        while self.fields == before {
            if presses < FRAME_ADVANCE_PRESSES {
                // Released as soon as a poll has acted on the press: a field on a loaded
                // machine can take longer than the 30 polls after which Dolphin repeats it.
                self.hotkey(Hotkey::FrameAdvance, true)?;
                self.hotkey(Hotkey::FrameAdvance, false)?;
                presses += 1;
            }
            self.receive_until(Some((Instant::now() + PRESS_RETRY).min(deadline)))?;
            if self.fields > before {
                break;
            }
            let ran = idle.is_some() && runtime() != idle;
            if ran {
                // The step is under way: wait for its field, never press again.
                if self.receive_until(Some(deadline))? > 0 {
                    break;
                }
            }
            if Instant::now() >= deadline {
                self.emulator.check_alive()?;
                return Err(DolphinError::LostLockstep {
                    reason: format!(
                        "no field ran within {FIELD_TIMEOUT:?} of a frame advance ({presses} press(es); the emulation {})",
                        if ran { "ran" } else { "never ran" }
                    ),
                });
            }
            // Nothing ran at all: the poll missed the press (a loaded machine); press again.
        }
        self.wait_paused()?;
        self.drain()?;
        Ok(self.fields - before)
    }
}
