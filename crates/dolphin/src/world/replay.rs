//! The repeatability check: capture, a fixed input pattern for some steps, restore, the same
//! steps again, restore; a pass lets the descriptor claim `fixed-build`. Also the pattern itself,
//! [`pattern_control`].
//!
//! It knows only the world's public operations (capture, advance, restore); it does not know how
//! any of them works.

use flysim_types::workers::{AxisRange, AxisValue, ButtonState, ControllerSchema, PortControl};

use super::{DolphinWorld, Observation, port_id};
use crate::error::DolphinError;

impl DolphinWorld {
    /// Checks repeatability at the current boundary: capture, `steps` advances with a fixed
    /// input pattern, restore, the same advances again; the world is restored to the starting
    /// boundary afterwards. True when every observation repeated. A pass lets the descriptor
    /// claim `fixed-build` for the pinned version.
    ///
    /// # Errors
    ///
    /// Whatever capture, advance or restore report.
    pub fn verify_replay(&mut self, steps: u64) -> Result<bool, DolphinError> {
        let start = self.capture()?;
        let run = |w: &mut Self| -> Result<Vec<Observation>, DolphinError> {
            (0..steps)
                .map(|k| {
                    let batch: Vec<PortControl> = w
                        .config
                        .ports
                        .iter()
                        .map(|p| pattern_control(&w.pad, *p, k))
                        .collect();
                    w.advance(&batch)
                })
                .collect()
        };
        let first = run(self)?;
        self.restore(&start)?;
        let second = run(self)?;
        self.restore(&start)?;
        let verified = first == second;
        self.replay_verified = verified;
        Ok(verified)
    }
}

/// The fixed input pattern of [`DolphinWorld::verify_replay`] for port `port` at step `k`.
#[must_use]
pub fn pattern_control(pad: &ControllerSchema, port: u8, k: u64) -> PortControl {
    let phase = k + u64::from(port);
    PortControl {
        port_id: port_id(port),
        buttons: pad
            .buttons
            .iter()
            .enumerate()
            .map(|(i, id)| ButtonState {
                id: id.clone(),
                // Z changes how the test program paints; it stays up.
                down: id.as_str() != "z" && (phase + i as u64).is_multiple_of(5),
            })
            .collect(),
        axes: pad
            .axes
            .iter()
            .enumerate()
            .map(|(i, axis)| {
                let step = ((phase + i as u64) % 9) as f64 / 8.0;
                let value = match axis.range {
                    AxisRange::Bipolar => step * 2.0 - 1.0,
                    AxisRange::Unit => step,
                };
                AxisValue {
                    id: axis.id.clone(),
                    value,
                }
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::gamecube_pad;

    #[test]
    fn the_replay_pattern_is_a_valid_control_that_never_holds_z() {
        let pad = gamecube_pad();
        for k in 0..50 {
            let control = pattern_control(&pad, 2, k);
            control.validate_against(&pad).unwrap();
            assert_eq!(control.port_id.as_str(), "p2");
            assert!(
                control
                    .buttons
                    .iter()
                    .all(|b| b.id.as_str() != "z" || !b.down)
            );
        }
    }
}
