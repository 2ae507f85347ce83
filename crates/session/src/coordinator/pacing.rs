//! Pacing: with [`Pace::Realtime`], step `k` of an invocation waits until `k` step durations of
//! the world have passed since its first step, so that a person watches at game speed.
//!
//! Pacing only delays the start of a step; the step itself, and so the run's behaviour, is the
//! same paced or not. The wait is a timer on the session's runtime, so the router and the
//! publisher go on meanwhile.

use std::time::Duration;

use flysim_types::RationalNs;
use tokio::time::Instant;

use super::Coordinator;
use crate::run::Pace;

/// The pacing of one invocation: when its first step started, and at which step.
#[derive(Debug, Clone, Copy)]
pub(super) struct Pacer {
    origin: Option<(Instant, u64)>,
    step: Duration,
}

impl Pacer {
    /// A pacer for steps of `step` each.
    pub(super) fn new(step: RationalNs) -> Self {
        // Whole nanoseconds are plenty for a person's eye; the run's clock stays exact.
        let ns = step.numerator() / step.denominator().max(1);
        Self {
            origin: None,
            step: Duration::from_nanos(ns),
        }
    }

    /// Waits until step `k` is due.
    #[expect(
        clippy::disallowed_methods,
        reason = "pacing: a wait for a person's eye, never read into behaviour"
    )]
    pub(super) async fn wait(&mut self, k: u64) {
        let now = Instant::now();
        let Some((origin, first)) = self.origin else {
            self.origin = Some((now, k));
            return;
        };
        let due = origin
            + self
                .step
                .saturating_mul(u32::try_from(k - first).unwrap_or(u32::MAX));
        if due > now {
            tokio::time::sleep_until(due).await;
        } else if now - due > self.step * 4 {
            // Far behind (a slow step, a debugger): start again from here rather than rush.
            self.origin = Some((now, k));
        }
    }
}

impl Coordinator {
    /// Sets how fast steps follow each other.
    pub(crate) fn set_pace(&mut self, pace: Pace) {
        self.pace = pace;
    }

    /// Waits, under [`Pace::Realtime`], until step `k` is due.
    pub(super) async fn pace(&mut self, k: u64) {
        if self.pace != Pace::Realtime {
            return;
        }
        let Some(descriptor) = &self.descriptor else {
            return;
        };
        let step = descriptor.step_duration;
        self.pacer
            .get_or_insert_with(|| Pacer::new(step))
            .wait(k)
            .await;
    }
}
