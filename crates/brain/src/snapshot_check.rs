//! The value checks of a restore: whether a read snapshot holds a state some run of this brain's
//! model reaches, so that an altered but resealed snapshot is refused when it is checked
//! (`FS0732`), not found out by a later tick.
//!
//! It checks the model-level state: every rate, drive, gain and trace finite, gains within the
//! rule's clamp and traces within `[-1, 1]`, counters that agree with each other, learning stamps
//! and readout deadlines not past what the snapshot's tick count allows. The kernel's own state
//! is checked where it is read (`dynamics`). This module knows no byte layout.

use crate::dynamics::{Dynamics, finite};
use crate::error::BrainError;
use crate::model::Brain;
use crate::plasticity::NEVER;
use crate::snapshot::CheckedSnapshot;

/// Refuses the first value of `values` that is not finite (`what` names one value).
fn finite64(values: &[f64], what: &str) -> Result<(), BrainError> {
    match values.iter().position(|v| !v.is_finite()) {
        Some(i) => Err(BrainError::out_of_range(format!(
            "{what} (index {i}) is {}",
            values[i]
        ))),
        None => Ok(()),
    }
}

impl Brain {
    /// Checks the model-level values of `s`, read against this brain's model.
    pub(crate) fn check_values(&self, s: &CheckedSnapshot) -> Result<(), BrainError> {
        self.check_counters(s)?;
        finite(&s.drive, "a retina column's drive")?;
        finite64(&s.rates, "a role's rate")?;
        finite64(&[s.population_rate], "the population rate")?;
        finite64(&s.baseline_rates, "a role's baseline rate")?;
        self.check_learning(s)?;
        self.check_readout(s)
    }

    /// Ticks, draws, spikes and calibration agree.
    fn check_counters(&self, s: &CheckedSnapshot) -> Result<(), BrainError> {
        let c = s.counters;
        // Every `lif-1ms-v1` tick draws exactly its kicks.
        if let Dynamics::Lif1ms(k) = &s.dynamics
            && u128::from(c.draws) != u128::from(c.ticks) * u128::from(k.params.kicks)
        {
            return Err(BrainError::out_of_range(format!(
                "{} noise draws in {} ticks of {} kicks each",
                c.draws, c.ticks, k.params.kicks
            )));
        }
        let neurons = u128::from(self.connectome.neurons());
        if u128::from(s.activity.spikes) > u128::from(c.ticks) * neurons {
            return Err(BrainError::out_of_range(format!(
                "{} spikes in {} ticks of {neurons} neurons",
                s.activity.spikes, c.ticks
            )));
        }
        let warmup = u64::from(self.profile().readout.warmup_ticks);
        if s.calibrated && c.ticks < warmup {
            return Err(BrainError::out_of_range(format!(
                "calibrated after {} ticks; warm-up takes {warmup}",
                c.ticks
            )));
        }
        Ok(())
    }

    /// Gains within the rule's clamp, traces within `[-1, 1]`, stamps before the current tick,
    /// update counts a whole number of reinforcements.
    fn check_learning(&self, s: &CheckedSnapshot) -> Result<(), BrainError> {
        let l = &s.learning;
        let ticks = s.counters.ticks;
        finite(&l.gains, "a plastic gain")?;
        finite(&l.traces, "an eligibility trace")?;
        finite64(&[l.signal], "the learning signal")?;
        if let Some((_, rule)) = &self.plastic {
            // Gains are clamped in f64 and stored as f32, which rounds monotonically.
            let (lo, hi) = (rule.gain_min as f32, rule.gain_max as f32);
            if let Some(i) = l.gains.iter().position(|g| !(lo..=hi).contains(g)) {
                return Err(BrainError::out_of_range(format!(
                    "plastic gain {i} is {}, outside the rule's [{lo}, {hi}]",
                    l.gains[i]
                )));
            }
        }
        if let Some(i) = l.traces.iter().position(|t| !(-1.0..=1.0).contains(t)) {
            return Err(BrainError::out_of_range(format!(
                "eligibility trace {i} is {}, outside [-1, 1]",
                l.traces[i]
            )));
        }
        if !(-1.0..=1.0).contains(&l.signal) {
            return Err(BrainError::out_of_range(format!(
                "the learning signal is {}, not a tanh",
                l.signal
            )));
        }
        if let Some(i) = l.touched.iter().position(|&t| t > ticks) {
            return Err(BrainError::out_of_range(format!(
                "plastic slot {i} was touched at tick {}, after the snapshot's tick {ticks}",
                l.touched[i]
            )));
        }
        let stamped_later =
            |&t: &i64| t != NEVER && !(0..i128::from(ticks)).contains(&i128::from(t));
        if let Some(i) = l.last_spike.iter().position(stamped_later) {
            return Err(BrainError::out_of_range(format!(
                "plastic neuron {i}'s last spike is stamped {}, not before the snapshot's tick {ticks}",
                l.last_spike[i]
            )));
        }
        let slots = l.gains.len() as u64;
        // Each reinforcement updates every slot once (with no slot, nothing is updated).
        let whole = l.updates.is_multiple_of(slots);
        if !whole || l.changed > l.updates {
            return Err(BrainError::out_of_range(format!(
                "{} learning updates ({} changes) over {slots} plastic slots",
                l.updates, l.changed
            )));
        }
        Ok(())
    }

    /// The held button is a bound direction; no deadline lies further ahead than one decision
    /// taken at the snapshot's tick sets it.
    fn check_readout(&self, s: &CheckedSnapshot) -> Result<(), BrainError> {
        let cfg = &self.profile().readout;
        let r = &s.readout;
        let ticks = s.counters.ticks;
        if let Some(w) = r.winner
            && !(w.is_direction() && cfg.bindings.iter().any(|b| b.button == w))
        {
            return Err(BrainError::out_of_range(format!(
                "the readout holds `{}`, not a bound direction",
                w.name()
            )));
        }
        let ahead = |deadline: u64, most: u32| deadline > ticks.saturating_add(u64::from(most));
        let late = ahead(r.next_decision, cfg.decide_every_ticks)
            || r.pulse_until
                .iter()
                .any(|&t| ahead(t, cfg.pulse_hold_ticks))
            || r.cooldown_until
                .iter()
                .any(|&t| ahead(t, cfg.pulse_cooldown_ticks));
        if late {
            return Err(BrainError::out_of_range(format!(
                "a readout deadline lies beyond what a decision at tick {ticks} sets"
            )));
        }
        Ok(())
    }
}
