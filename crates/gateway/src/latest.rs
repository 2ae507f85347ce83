//! The newest thing the gateway can show: one page state and its encoded frames, shared by
//! every client, and the one WebSocket message a client is sent for it. It knows the message
//! layout, not the bus or the sockets.
//!
//! A message is `[sendMs: f64 LE][n: u32 LE][n bytes of state JSON][PNG bytes of each view, in
//! the state's `views` order]`; `sendMs` is the gateway's wall clock when it builds the message
//! for that client, in milliseconds since the Unix epoch.

/// The newest page state with its frames.
#[derive(Debug, Clone)]
pub(crate) struct Latest {
    /// The state JSON.
    pub(crate) state: Vec<u8>,
    /// One PNG per view, in the state's `views` order.
    pub(crate) frames: Vec<std::sync::Arc<Vec<u8>>>,
    /// When the gateway took the snapshot off the bus (see [`wall_ms`]).
    pub(crate) received_ms: f64,
}

/// Bytes before the state JSON: the send stamp and the state's length.
const PREFIX: usize = 12;

impl Latest {
    /// The message for one client, stamped `send_ms`; `None` when the state is too long for its
    /// length field (never, for a state of at most four agents).
    pub(crate) fn message(&self, send_ms: f64) -> Option<Vec<u8>> {
        let n = u32::try_from(self.state.len()).ok()?;
        let mut out = Vec::with_capacity(self.message_len());
        out.extend_from_slice(&send_ms.to_le_bytes());
        out.extend_from_slice(&n.to_le_bytes());
        out.extend_from_slice(&self.state);
        for frame in &self.frames {
            out.extend_from_slice(frame);
        }
        Some(out)
    }

    /// The length of [`Latest::message`].
    pub(crate) fn message_len(&self) -> usize {
        PREFIX + self.state.len() + self.frames.iter().map(|f| f.len()).sum::<usize>()
    }

    /// The first view's PNG, if there is a view.
    pub(crate) fn first_frame(&self) -> Option<&[u8]> {
        self.frames.first().map(|f| f.as_slice())
    }
}

/// The wall clock in milliseconds since the Unix epoch: a stamp the page subtracts from its own
/// receive time. Presentation only; nothing of a run reads it.
#[expect(
    clippy::disallowed_methods,
    reason = "a latency stamp for the viewer, never an input of behaviour"
)]
pub(crate) fn wall_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_stamp_length_state_then_frames() {
        let latest = Latest {
            state: b"{}".to_vec(),
            frames: vec![
                std::sync::Arc::new(vec![1, 2]),
                std::sync::Arc::new(vec![3]),
            ],
            received_ms: 0.5,
        };
        let m = latest.message(1.5).expect("a message");
        assert_eq!(m.len(), latest.message_len());
        assert_eq!(&m[..8], &1.5f64.to_le_bytes());
        assert_eq!(&m[8..12], &2u32.to_le_bytes());
        assert_eq!(&m[12..], b"{}\x01\x02\x03");
        assert_eq!(latest.first_frame(), Some(&[1u8, 2][..]));
    }
}
