//! Booting a launched world to boundary 0: neutral ports, the content's ready condition (or its
//! first field), then in Qt mode the emulation thread found, the first pause, the alignment of
//! frame advances with fields, and with a start field the neutral advances up to it.
//!
//! It knows the order of these steps and what each must show; it does not know how a hotkey is
//! pressed, a datagram received or a pause confirmed (the `hotkeys`, `receive` and `pause`
//! modules).

use std::time::{Duration, Instant};

use super::{DolphinWorld, PIPE_TIMEOUT};
use crate::config::{Hotkey, Mode};
use crate::error::DolphinError;
use crate::pipe::neutral_lines;
use crate::process::{self, Ram};

/// How long the content may take to reach its ready condition.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// Frame advances tried to align the pause with a field boundary.
const ALIGN_ATTEMPTS: usize = 6;
/// The name of the single-core emulation thread.
const EMULATION_THREAD: &str = "CPU-GPU thread";

impl DolphinWorld {
    /// Waits for the content (its ready condition, or with a start field its first field), then
    /// (Qt mode) pauses, aligns, and with a start field advances with neutral ports to it. False
    /// when the pause came too late for the start field.
    #[expect(
        clippy::disallowed_methods,
        reason = "a bounded wait on Dolphin; the deadline only turns a hang into an error"
    )]
    pub(super) fn boot(&mut self, delay: Duration) -> Result<bool, DolphinError> {
        let qt = self.config.mode == Mode::Qt;
        let neutral = neutral_lines();
        let deadline = Instant::now() + PIPE_TIMEOUT;
        for pad in &self.pads {
            process::write_all(pad, neutral.as_bytes(), deadline)?;
        }
        if qt {
            // The hotkey thread reads the pipes every few milliseconds: the neutral state is
            // latched before the content's first field in practice.
            for pad in &self.pads {
                process::wait_drained(pad, deadline)?;
            }
        }
        let ready = self.ready_index();
        self.wait_until_ready(ready)?;
        if !qt {
            return Ok(true);
        }
        self.pause_aligned(delay)?;
        if let Some(target) = self.config.start_field {
            if self.fields > target {
                return Ok(false);
            }
            self.advance_to(target)?;
            if let Some((i, value)) = ready
                && self.mirror.values()[i] != value
            {
                return Err(DolphinError::helper(format!(
                    "the content is not ready at its start field {target}: `{}` is {:08x}, not {value:08x}",
                    self.config.watches[i].name,
                    self.mirror.values()[i]
                )));
            }
        }
        self.ram = Some(Ram::open(self.emulator.pid())?);
        self.boundary = 0;
        self.observed = self.mirror.values();
        Ok(true)
    }

    /// Receives fields until the content is ready: without a start field, until the ready
    /// condition `ready` holds (if there is one); else until the first field has arrived.
    #[expect(
        clippy::disallowed_methods,
        reason = "a bounded wait on Dolphin; the deadline only turns a hang into an error"
    )]
    fn wait_until_ready(&mut self, ready: Option<(usize, u32)>) -> Result<(), DolphinError> {
        let wait_for_ready = self.config.start_field.is_none();
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            let got = self.receive_until(Some(
                deadline.min(Instant::now() + Duration::from_millis(50)),
            ))?;
            let done = match ready {
                Some((i, value)) if wait_for_ready => self.mirror.values()[i] == value,
                _ => got > 0 || self.fields > 0,
            };
            if done {
                return Ok(());
            }
            self.emulator.check_alive()?;
            if Instant::now() >= deadline {
                return Err(DolphinError::helper(format!(
                    "the content did not become ready within {READY_TIMEOUT:?}"
                )));
            }
        }
    }

    /// Finds the emulation thread, pauses (`delay` after the pads are drained) and frame
    /// advances until one advance runs exactly one field.
    #[expect(
        clippy::disallowed_methods,
        reason = "bounded waits on Dolphin, and the boot delay the configuration names before the first pause; boundary 0 is then pinned by field count, not by the clock"
    )]
    fn pause_aligned(&mut self, delay: Duration) -> Result<(), DolphinError> {
        self.thread = Some(
            process::find_thread(self.emulator.pid(), EMULATION_THREAD).ok_or_else(|| {
                DolphinError::helper(format!(
                    "Dolphin has no `{EMULATION_THREAD}` (is CPUThread=False in effect?)"
                ))
            })?,
        );
        for pad in &self.pads {
            process::wait_drained(pad, Instant::now() + PIPE_TIMEOUT)?;
        }
        let until = Instant::now() + delay;
        while Instant::now() < until {
            self.receive_until(Some(until))?;
        }
        self.tap(Hotkey::TogglePause)?;
        self.confirm_paused()?;
        self.first_pause = self.fields;
        for _ in 0..ALIGN_ATTEMPTS {
            if self.frame_advance()? == 1 {
                return Ok(());
            }
        }
        Err(DolphinError::LostLockstep {
            reason: format!(
                "no frame advance ran exactly one field in {ALIGN_ATTEMPTS} tries: the content does not present a frame every field"
            ),
        })
    }

    /// The ready condition as (watch index, value); the configuration was validated, so its
    /// watch is one of the configured ones.
    fn ready_index(&self) -> Option<(usize, u32)> {
        let ready = self.config.ready.as_ref()?;
        let i = self
            .config
            .watches
            .iter()
            .position(|w| w.name == ready.watch)?;
        Some((i, ready.value.0))
    }

    /// Frame advances (every port as it is, neutral at boot) until the end of field `target`.
    /// On the way an advance may run several fields (content that repeats frames while it
    /// boots): where each advance stops is a function of the emulation, so landing exactly on
    /// `target` either always works for a content or never does.
    fn advance_to(&mut self, target: u64) -> Result<(), DolphinError> {
        while self.fields < target {
            let from = self.fields;
            self.frame_advance()?;
            if self.fields > target {
                return Err(DolphinError::LostLockstep {
                    reason: format!(
                        "the content presents no new frame at the end of its start field {target} (an advance ran from field {from} to {}): choose another start field",
                        self.fields
                    ),
                });
            }
        }
        Ok(())
    }
}
