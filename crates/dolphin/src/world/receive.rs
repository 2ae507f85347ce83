//! The MemoryWatcher datagrams: one per emulated field, each the watched words that changed.
//! Receiving them applies them to the mirror and counts fields; a field that arrives while the
//! world should stand still is refused.
//!
//! It knows the socket and the datagram's effect on the mirror (parsing is the `watcher`
//! module's); it does not know why a field was expected.

use std::time::{Duration, Instant};

use super::DolphinWorld;
use crate::error::DolphinError;

impl DolphinWorld {
    /// Receives datagrams into the mirror until none is waiting, or until `until` passes when
    /// given (returning early after the first). Returns how many arrived.
    #[expect(
        clippy::disallowed_methods,
        reason = "the caller's deadline bounds a blocking receive; it never changes what is received"
    )]
    pub(super) fn receive_until(&mut self, until: Option<Instant>) -> Result<u64, DolphinError> {
        let mut buf = vec![0u8; 65_536];
        let mut got = 0;
        loop {
            let timeout = match until {
                Some(t) if got == 0 => t.saturating_duration_since(Instant::now()),
                _ => Duration::ZERO,
            };
            let result = if timeout.is_zero() {
                self.socket
                    .set_nonblocking(true)
                    .and_then(|()| self.socket.recv(&mut buf))
            } else {
                self.socket
                    .set_nonblocking(false)
                    .and_then(|()| self.socket.set_read_timeout(Some(timeout)))
                    .and_then(|()| self.socket.recv(&mut buf))
            };
            match result {
                Ok(n) => {
                    self.mirror.apply(&buf[..n])?;
                    self.fields += 1;
                    got += 1;
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return Ok(got);
                }
                Err(e) => {
                    return Err(DolphinError::helper(format!(
                        "the MemoryWatcher socket failed: {e}"
                    )));
                }
            }
        }
    }

    /// Takes every datagram already waiting.
    pub(super) fn drain(&mut self) -> Result<u64, DolphinError> {
        self.receive_until(None)
    }

    /// Refuses if any field ran since the last step.
    pub(super) fn expect_still(&mut self) -> Result<(), DolphinError> {
        let stray = self.drain()?;
        if stray > 0 {
            return Err(DolphinError::LostLockstep {
                reason: format!(
                    "{stray} field(s) ran while the world was stopped at boundary {}",
                    self.boundary
                ),
            });
        }
        Ok(())
    }
}
