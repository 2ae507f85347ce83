//! Hotkeys: presses and releases written to the hotkey pipe, each edge looked at by one of
//! Dolphin's hotkey polls before the next change.
//!
//! It knows how Dolphin's poll reads the pipe (twice per poll, acting on edges); it does not
//! know what a hotkey is for (the `boot`, `step` and `save_state` modules press them).

use std::fs::File;
use std::time::{Duration, Instant};

use super::{DolphinWorld, PIPE_TIMEOUT};
use crate::config::Hotkey;
use crate::error::DolphinError;
use crate::pipe::hotkey_line;
use crate::process;

/// How many reads of the hotkey pipe, each of its own line, make certain that Dolphin's hotkey
/// poll has looked at the keys since the first of them: a poll (every ~5 ms) reads the pipes
/// twice before it looks at the keys, so of three successive reads two lie in different polls.
/// Dolphin acts on edges (and repeats frame advance once the key was seen down by 30 polls), so
/// each press and each release must be looked at by a poll before the next change.
const SETTLE_READS: usize = 2;
/// How long a tapped hotkey (pause, save, load) stays down.
const TAP_HOLD: Duration = Duration::from_millis(30);

impl DolphinWorld {
    fn hotkey_pipe(&self) -> Result<&File, DolphinError> {
        self.hotkeys
            .as_ref()
            .ok_or_else(|| DolphinError::helper("no hotkey pipe in this mode"))
    }

    /// Writes one line to the hotkey pipe and waits until Dolphin has read it.
    #[expect(
        clippy::disallowed_methods,
        reason = "a bounded wait on Dolphin; the deadline only turns a hang into an error"
    )]
    fn hotkey_write(&self, line: &str) -> Result<(), DolphinError> {
        let pipe = self.hotkey_pipe()?;
        let deadline = Instant::now() + PIPE_TIMEOUT;
        process::write_all(pipe, line.as_bytes(), deadline)?;
        process::wait_drained(pipe, deadline)
    }

    /// Presses or releases a hotkey, then waits until a hotkey poll has looked at it: after
    /// the change's own read, [`SETTLE_READS`] reads of a line that changes nothing (a button
    /// no hotkey is bound to). While the emulation is stopped only the hotkey poll reads the
    /// pipe; once a pressed frame advance runs, the emulation reads it too, but then the poll
    /// has already acted.
    pub(super) fn hotkey(&self, key: Hotkey, down: bool) -> Result<(), DolphinError> {
        self.hotkey_write(&hotkey_line(key.button(), down))?;
        let idle = hotkey_line(Hotkey::UNBOUND, false);
        for _ in 0..SETTLE_READS {
            self.hotkey_write(&idle)?;
        }
        Ok(())
    }

    /// Presses and releases a hotkey, each edge looked at by a poll.
    pub(super) fn tap(&mut self, key: Hotkey) -> Result<(), DolphinError> {
        self.hotkey(key, true)?;
        std::thread::sleep(TAP_HOLD);
        self.hotkey(key, false)
    }
}
