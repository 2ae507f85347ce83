//! The emulation at rest: waiting until the emulation thread sleeps and has not run between two
//! looks, and confirming that a Toggle Pause has taken hold.
//!
//! It knows the emulation thread's run state and run time (read through the `process` module);
//! it does not know which hotkey led here.

use std::time::{Duration, Instant};

use super::DolphinWorld;
use crate::error::DolphinError;
use crate::process;

/// How long the emulation thread may take to come to rest after a field.
const PAUSE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the emulation must stand still after Toggle Pause before the pause counts.
const PAUSE_CONFIRM: Duration = Duration::from_millis(250);

impl DolphinWorld {
    /// After Toggle Pause: waits until the emulation has stood still, no field and no run time,
    /// for a whole [`PAUSE_CONFIRM`]. The pause itself happens on Dolphin's user-interface
    /// thread some time after the hotkey poll saw the key, and meanwhile the running emulation
    /// thread can look asleep for a moment on a loaded machine (blocked on a lock); a frame
    /// advance pressed before the pause happened would be undone by it.
    #[expect(
        clippy::disallowed_methods,
        reason = "a bounded wait on Dolphin; the deadline only turns a hang into an error"
    )]
    pub(super) fn confirm_paused(&mut self) -> Result<(), DolphinError> {
        let tid = self
            .thread
            .ok_or_else(|| DolphinError::helper("the emulation thread is unknown"))?;
        let pid = self.emulator.pid();
        let deadline = Instant::now() + PAUSE_TIMEOUT;
        loop {
            self.wait_paused()?;
            self.drain()?;
            let fields = self.fields;
            let runtime = process::thread_sample(pid, tid).map(|(_, r)| r);
            self.receive_until(Some(Instant::now() + PAUSE_CONFIRM))?;
            self.drain()?;
            let still = process::thread_sample(pid, tid).map(|(_, r)| r);
            if self.fields == fields && still.is_some() && still == runtime {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(DolphinError::LostLockstep {
                    reason: format!(
                        "the emulation did not stand still within {PAUSE_TIMEOUT:?} of a pause"
                    ),
                });
            }
        }
    }

    /// Waits until the emulation thread sleeps and has not run between two looks.
    #[expect(
        clippy::disallowed_methods,
        reason = "a bounded wait on Dolphin; the deadline only turns a hang into an error"
    )]
    pub(super) fn wait_paused(&mut self) -> Result<(), DolphinError> {
        let tid = self
            .thread
            .ok_or_else(|| DolphinError::helper("the emulation thread is unknown"))?;
        let pid = self.emulator.pid();
        let deadline = Instant::now() + PAUSE_TIMEOUT;
        let mut previous: Option<u64> = None;
        loop {
            let (state, runtime) = process::thread_sample(pid, tid)
                .ok_or_else(|| DolphinError::helper("the emulation thread vanished"))?;
            if state == 'S' && previous == Some(runtime) {
                return Ok(());
            }
            previous = (state == 'S').then_some(runtime);
            if Instant::now() >= deadline {
                self.emulator.check_alive()?;
                return Err(DolphinError::LostLockstep {
                    reason: format!("the emulation did not stop within {PAUSE_TIMEOUT:?}"),
                });
            }
            // Fields that arrive meanwhile are counted (a step running on is caught here).
            self.receive_until(Some(Instant::now() + process::POLL))?;
        }
    }
}
