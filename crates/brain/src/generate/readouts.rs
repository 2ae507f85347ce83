//! The readouts the generators give their profiles: the reference readout of the eight-button
//! pad, and the one-button readout of the toy flies that press.

use flysim_types::Id;

use super::id;
use crate::profile::{Binding, Button, Readout};

/// The reference readout with `warmup_ticks` of warm-up and decisions every `decide` ticks.
#[must_use]
pub fn default_readout(warmup_ticks: u32, decide: u32) -> Readout {
    Readout {
        id: crate::profile::READOUT.to_owned(),
        warmup_ticks,
        bindings: Button::ALL
            .iter()
            .enumerate()
            .map(|(i, &button)| Binding {
                button,
                role: id(&format!("command_{i}")),
                action: None,
            })
            .collect(),
        decide_every_ticks: decide,
        hysteresis: 1.05,
        direction_threshold: 1.0,
        pulse_threshold: 1.35,
        pulse_hold_ticks: 85,
        pulse_cooldown_ticks: 480,
    }
}

/// The readout of the toy flies that press one button: button `a` bound to role `press`
/// (standing for `action`, by default `a`), 200 warm-up ticks, a decision at every tick, pulse
/// threshold 0.5 with hold and cooldown of 1 tick.
pub(super) fn press_readout(action: Option<Id>) -> Readout {
    Readout {
        id: crate::profile::READOUT.to_owned(),
        warmup_ticks: 200,
        bindings: vec![Binding {
            button: Button::A,
            role: id("press"),
            action,
        }],
        decide_every_ticks: 1,
        hysteresis: 1.05,
        direction_threshold: 1.0,
        pulse_threshold: 0.5,
        pulse_hold_ticks: 1,
        pulse_cooldown_ticks: 1,
    }
}
