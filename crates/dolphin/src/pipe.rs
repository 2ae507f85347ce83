//! The pipe protocol of Dolphin's `Pipe` input device: one controller state as text lines.
//!
//! Every batch writes the *complete* state of a port, so nothing depends on what an earlier
//! batch left behind: each of the 12 buttons as `PRESS` or `RELEASE`, both sticks as
//! `SET MAIN x y` and `SET C x y`, both analog triggers as `SET L v` and `SET R v`.
//!
//! Scales (verified against Dolphin 5.0-17995 and the SI words the console reads):
//! - a stick axis `s` in `[-1, 1]` (up and right positive) is sent as `(s + 1) / 2` in `[0, 1]`,
//!   `0.5` being centre;
//! - a trigger `t` in `[0, 1]` is sent as `2t - 1` in `[-1, 1]`, so a released trigger is `-1`
//!   (analog 0x00) and never the half-pressed 0x80 an untouched trigger axis reads as.
//!
//! Numbers are written in Rust's shortest round-trip decimal form, never with an exponent; the
//! helper runs Dolphin with `LC_ALL=C`, so its parser reads them back exactly.

use flysim_types::workers::{ControllerSchema, PortControl};

use crate::error::DolphinError;
use crate::schema::BUTTONS;

/// The lines (each ending in `\n`) that set a port to `control`, after checking `control`
/// against the GameCube schema: every button and axis once, in schema order, values in range.
///
/// # Errors
///
/// [`DolphinError::Control`] with the contract's refusal (never clamped).
pub fn port_lines(
    control: &PortControl,
    schema: &ControllerSchema,
) -> Result<String, DolphinError> {
    control.validate_against(schema)?;
    let mut text = String::new();
    for ((_, token), state) in BUTTONS.iter().zip(&control.buttons) {
        let verb = if state.down { "PRESS" } else { "RELEASE" };
        text.push_str(&format!("{verb} {token}\n"));
    }
    let axis = |i: usize| control.axes[i].value;
    let stick = |v: f64| (v + 1.0) / 2.0;
    let trigger = |v: f64| 2.0 * v - 1.0;
    text.push_str(&format!(
        "SET MAIN {} {}\n",
        number(stick(axis(0))),
        number(stick(axis(1)))
    ));
    text.push_str(&format!(
        "SET C {} {}\n",
        number(stick(axis(2))),
        number(stick(axis(3)))
    ));
    text.push_str(&format!("SET L {}\n", number(trigger(axis(4)))));
    text.push_str(&format!("SET R {}\n", number(trigger(axis(5)))));
    Ok(text)
}

/// The neutral state: every button released, sticks centred, triggers fully released.
#[must_use]
pub fn neutral_lines() -> String {
    let mut text = String::new();
    for (_, token) in BUTTONS {
        text.push_str(&format!("RELEASE {token}\n"));
    }
    text.push_str("SET MAIN 0.5 0.5\nSET C 0.5 0.5\nSET L -1\nSET R -1\n");
    text
}

/// A number in shortest round-trip decimal form (`0`, `0.5`, `-1`, `0.0000001`).
fn number(v: f64) -> String {
    // `-0` is written as `0`: the two are the same position.
    if v == 0.0 {
        return "0".to_owned();
    }
    format!("{v}")
}

/// A hotkey button going down or up.
#[must_use]
pub fn hotkey_line(button: &str, down: bool) -> String {
    let verb = if down { "PRESS" } else { "RELEASE" };
    format!("{verb} {button}\n")
}

#[cfg(test)]
mod tests {
    use flysim_types::Id;
    use flysim_types::workers::{AxisValue, ButtonState};

    use super::*;
    use crate::schema::{AXES, gamecube_pad};

    /// A control with `down` buttons held and the six axes at `axes`.
    fn control(down: &[&str], axes: [f64; 6]) -> PortControl {
        PortControl {
            port_id: Id::parse("p1").unwrap(),
            buttons: BUTTONS
                .iter()
                .map(|(b, _)| ButtonState {
                    id: Id::parse(b).unwrap(),
                    down: down.contains(b),
                })
                .collect(),
            axes: AXES
                .iter()
                .zip(axes)
                .map(|((a, _), value)| AxisValue {
                    id: Id::parse(a).unwrap(),
                    value,
                })
                .collect(),
        }
    }

    fn lines(down: &[&str], axes: [f64; 6]) -> Vec<String> {
        port_lines(&control(down, axes), &gamecube_pad())
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    const NEUTRAL: [f64; 6] = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0];

    #[test]
    fn each_button_alone_is_pressed_and_every_other_released() {
        for (i, (id, token)) in BUTTONS.iter().enumerate() {
            let got = lines(&[id], NEUTRAL);
            assert_eq!(got.len(), 16);
            for (j, (_, other)) in BUTTONS.iter().enumerate() {
                let expected = if i == j {
                    format!("PRESS {token}")
                } else {
                    format!("RELEASE {other}")
                };
                assert_eq!(got[j], expected, "button {id}");
            }
        }
    }

    #[test]
    fn the_neutral_control_is_the_neutral_state() {
        assert_eq!(
            port_lines(&control(&[], NEUTRAL), &gamecube_pad()).unwrap(),
            neutral_lines()
        );
        assert_eq!(
            lines(&[], NEUTRAL)[12..],
            ["SET MAIN 0.5 0.5", "SET C 0.5 0.5", "SET L -1", "SET R -1"]
        );
    }

    #[test]
    fn both_sticks_in_four_directions_and_centre() {
        let cases = [
            ("centre", 0.0, 0.0, "0.5 0.5"),
            ("up", 0.0, 1.0, "0.5 1"),
            ("down", 0.0, -1.0, "0.5 0"),
            ("left", -1.0, 0.0, "0 0.5"),
            ("right", 1.0, 0.0, "1 0.5"),
            ("half right", 0.5, 0.0, "0.75 0.5"),
        ];
        for (name, x, y, sent) in cases {
            let main = lines(&[], [x, y, 0.0, 0.0, 0.0, 0.0]);
            assert_eq!(main[12], format!("SET MAIN {sent}"), "main {name}");
            assert_eq!(main[13], "SET C 0.5 0.5", "main {name}");
            let c = lines(&[], [0.0, 0.0, x, y, 0.0, 0.0]);
            assert_eq!(c[12], "SET MAIN 0.5 0.5", "c {name}");
            assert_eq!(c[13], format!("SET C {sent}"), "c {name}");
        }
    }

    #[test]
    fn triggers_released_are_fully_released_and_pressed_are_full() {
        let cases = [(0.0, "-1"), (1.0, "1"), (0.5, "0"), (0.25, "-0.5")];
        for (t, sent) in cases {
            let l = lines(&[], [0.0, 0.0, 0.0, 0.0, t, 0.0]);
            assert_eq!(
                l[14..],
                [format!("SET L {sent}"), "SET R -1".to_owned()],
                "{t}"
            );
            let r = lines(&[], [0.0, 0.0, 0.0, 0.0, 0.0, t]);
            assert_eq!(
                r[14..],
                ["SET L -1".to_owned(), format!("SET R {sent}")],
                "{t}"
            );
        }
    }

    #[test]
    fn the_digital_trigger_buttons_are_separate_from_the_analog_triggers() {
        let got = lines(&["l", "r"], NEUTRAL);
        assert_eq!(got[6..8], ["PRESS L", "PRESS R"]);
        assert_eq!(got[14..], ["SET L -1", "SET R -1"]);
    }

    #[test]
    fn out_of_range_and_incomplete_controls_are_refused_never_clamped() {
        let schema = gamecube_pad();
        let too_far = control(&[], [1.5, 0.0, 0.0, 0.0, 0.0, 0.0]);
        let err = port_lines(&too_far, &schema).unwrap_err();
        assert_eq!(err.code_str(), "FS0122", "{err}");
        let negative_trigger = control(&[], [0.0, 0.0, 0.0, 0.0, -0.1, 0.0]);
        assert!(port_lines(&negative_trigger, &schema).is_err());
        let mut missing = control(&[], NEUTRAL);
        missing.buttons.pop();
        assert!(port_lines(&missing, &schema).is_err());
    }

    #[test]
    fn hotkey_lines() {
        assert_eq!(hotkey_line("A", true), "PRESS A\n");
        assert_eq!(hotkey_line("START", false), "RELEASE START\n");
    }
}
