//! `dpad-readout-v1`: rate roles become an 8-button intent.
//!
//! Each bound button has a score `(rate + 1) / (baseline + 1)` (f64), where `rate` is its role's
//! rate EMA in Hz and `baseline` the same rate recorded by calibration after warm-up (0 before).
//!
//! - **Directions** (up, down, left, right) form one exclusive group, decided when the brain
//!   tick reaches the next decision tick and held until the following one (`decideEveryTicks`).
//!   The challenger is the bound direction with the highest score (the lower button index on
//!   ties). It replaces the held direction only if its score exceeds `hysteresis ×` the held one's;
//!   the chosen direction is pressed only if its score is at least `directionThreshold`.
//! - **Pulses** (a, b, start, select) are independent: a button whose score is at least
//!   `pulseThreshold` and whose cooldown has passed is pressed for `pulseHoldTicks` and may fire
//!   again `pulseCooldownTicks` after it started.
//!
//! The decision is the mask of pressed buttons, bit `i` = button `i` in the order up, down,
//! left, right, a, b, start, select.

use crate::profile::{Button, Readout};

/// The readout's mutable state.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ReadoutState {
    pub(crate) winner: Option<Button>,
    pub(crate) next_decision: u64,
    pub(crate) pulse_until: [u64; 8],
    pub(crate) cooldown_until: [u64; 8],
}

/// A decoded decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Decision {
    /// Pressed buttons, bit `i` = [`Button::ALL`]`[i]`.
    pub buttons: u8,
}

impl Decision {
    /// The pressed buttons, in bit order.
    #[must_use]
    pub fn pressed(self) -> Vec<Button> {
        Button::ALL
            .into_iter()
            .filter(|b| self.buttons & b.bit() != 0)
            .collect()
    }

    /// The decision as a JSON object `{"buttons": ["up", ...]}` (the intent value).
    #[must_use]
    pub fn to_json(self) -> serde_json::Map<String, serde_json::Value> {
        let names = self
            .pressed()
            .into_iter()
            .map(|b| serde_json::Value::String(b.name().to_owned()))
            .collect();
        let mut map = serde_json::Map::new();
        map.insert("buttons".to_owned(), serde_json::Value::Array(names));
        map
    }
}

impl ReadoutState {
    /// Decides at brain tick `t`; `score(i)` is the score of binding `i`.
    pub(crate) fn decide(
        &mut self,
        cfg: &Readout,
        t: u64,
        score: &dyn Fn(usize) -> f64,
    ) -> Decision {
        if t >= self.next_decision {
            let mut challenger: Option<(Button, f64)> = None;
            for (i, b) in cfg.bindings.iter().enumerate() {
                if !b.button.is_direction() {
                    continue;
                }
                let s = score(i);
                let better = match challenger {
                    None => true,
                    Some((cb, cs)) => s > cs || (s == cs && b.button < cb),
                };
                if better {
                    challenger = Some((b.button, s));
                }
            }
            let held = self.winner.and_then(|w| {
                cfg.bindings
                    .iter()
                    .position(|b| b.button == w)
                    .map(|i| (w, score(i)))
            });
            let chosen = match (held, challenger) {
                (Some((w, ws)), Some((_, cs))) if cs <= cfg.hysteresis * ws => Some((w, ws)),
                (_, c) => c,
            };
            self.winner = chosen
                .filter(|&(_, s)| s >= cfg.direction_threshold)
                .map(|(b, _)| b);
            self.next_decision = t + u64::from(cfg.decide_every_ticks);
        }
        let mut buttons = self.winner.map_or(0, Button::bit);
        for (i, b) in cfg.bindings.iter().enumerate() {
            if b.button.is_direction() {
                continue;
            }
            let k = b.button as usize;
            if t >= self.cooldown_until[k] && score(i) >= cfg.pulse_threshold {
                self.pulse_until[k] = t + u64::from(cfg.pulse_hold_ticks);
                self.cooldown_until[k] = t + u64::from(cfg.pulse_cooldown_ticks);
            }
            if t < self.pulse_until[k] {
                buttons |= b.button.bit();
            }
        }
        Decision { buttons }
    }
}
