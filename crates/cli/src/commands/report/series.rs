//! What the report reads off a run's trace: each agent's rewards per step, its role and
//! population rates over steps, the boundaries of the reward events, the brain ticks of each
//! step (where a step's spikes go on the raster's time axis), the run's step duration, and the
//! summary table.
//!
//! It knows nothing of plots, pages or regeneration: rows in, numbers out.

use std::collections::BTreeMap;

use flysim_store::RunRecord;
use flysim_types::trace::TraceBehaviour;

use crate::plot::{Rates, Rewards};

/// Each agent's reward at every boundary (0 when none), in the agents' order of the trace.
pub(super) fn rewards(rows: &[TraceBehaviour]) -> Vec<Rewards> {
    let mut out: Vec<Rewards> = Vec::new();
    for row in rows {
        for agent in &row.agents {
            let name = agent.agent_id.as_str();
            let at = match out.iter().position(|r| r.agent == name) {
                Some(i) => i,
                None => {
                    out.push(Rewards {
                        agent: name.to_owned(),
                        per_step: Vec::new(),
                    });
                    out.len() - 1
                }
            };
            out[at]
                .per_step
                .push(agent.rewards.iter().map(|r| r.value).sum());
        }
    }
    out
}

/// Each agent's role rates (in profile role order) and population rate (last) at every
/// boundary.
pub(super) fn rates(rows: &[TraceBehaviour]) -> Vec<Rates> {
    let mut out: Vec<Rates> = Vec::new();
    for row in rows {
        for agent in &row.agents {
            let telemetry = &agent.telemetry;
            let name = agent.agent_id.as_str();
            let at = match out.iter().position(|r| r.agent == name) {
                Some(i) => i,
                None => {
                    let mut rows: Vec<String> = telemetry
                        .rates
                        .iter()
                        .map(|r| r.role_id.to_string())
                        .collect();
                    rows.push("population".into());
                    out.push(Rates {
                        agent: name.to_owned(),
                        hz: vec![Vec::new(); rows.len()],
                        rows,
                    });
                    out.len() - 1
                }
            };
            let rates = &mut out[at];
            let last = rates.hz.len() - 1;
            for (i, series) in rates.hz.iter_mut().enumerate() {
                let hz = if i == last {
                    telemetry.population_rate_hz
                } else {
                    telemetry.rates.get(i).map_or(0.0, |r| r.hz)
                };
                series.push(hz);
            }
        }
    }
    out
}

/// The boundaries at which some agent was paid a reward, at most `limit`.
pub(super) fn reward_boundaries(rows: &[TraceBehaviour], limit: usize) -> Vec<u64> {
    rows.iter()
        .filter(|r| r.agents.iter().any(|a| !a.rewards.is_empty()))
        .map(|r| r.boundary.get())
        .take(limit)
        .collect()
}

/// Each agent's brain ticks of every step: for boundary `k`, the ticks its Prepare ran, as the
/// half-open range `first..end` (empty at boundary 0, whose ticks are the warm-up's).
pub(super) fn step_ticks(rows: &[TraceBehaviour]) -> BTreeMap<String, Vec<(u64, u64)>> {
    let mut out: BTreeMap<String, Vec<(u64, u64)>> = BTreeMap::new();
    for row in rows {
        for agent in &row.agents {
            let end = agent.brain_ticks.get();
            let first = if row.boundary.get() == 0 {
                end
            } else {
                end.saturating_sub(agent.ticks_advanced.get())
            };
            out.entry(agent.agent_id.to_string())
                .or_default()
                .push((first, end));
        }
    }
    out
}

/// The world time of boundary `k`, in seconds.
fn world_seconds(row: &TraceBehaviour) -> f64 {
    let t = row.world_time;
    #[expect(clippy::cast_precision_loss, reason = "seconds shown to three places")]
    let ns = t.numerator() as f64 / t.denominator() as f64;
    ns / 1e9
}

/// The world time one step advances, in seconds (0 for a run of no step).
pub(super) fn step_seconds(rows: &[TraceBehaviour]) -> f64 {
    match (rows.first(), rows.last()) {
        (Some(first), Some(last)) if last.boundary.get() > first.boundary.get() => {
            #[expect(clippy::cast_precision_loss, reason = "a step count")]
            let steps = (last.boundary.get() - first.boundary.get()) as f64;
            (world_seconds(last) - world_seconds(first)) / steps
        }
        _ => 0.0,
    }
}

/// The summary table's rows: run, status, digests, steps, world and wall time, steps/s and
/// each agent's score.
pub(super) fn summary(record: &RunRecord, rewards: &[Rewards]) -> Vec<(String, String)> {
    let m = &record.manifest;
    let steps = m.steps.get();
    let world_s = record
        .rows
        .last()
        .map_or(0.0, |r| world_seconds(&r.behaviour));
    #[expect(clippy::cast_precision_loss, reason = "seconds shown to three places")]
    let (wall_s, steps_s) = (
        m.timings.wall_time_ns.get() as f64 / 1e9,
        m.timings.steps_ns.get() as f64 / 1e9,
    );
    #[expect(clippy::cast_precision_loss, reason = "a rate shown rounded")]
    let rate = if steps_s > 0.0 {
        steps as f64 / steps_s
    } else {
        0.0
    };
    let mut rows = vec![
        ("run".into(), m.run_id.to_string()),
        ("composition".into(), record.plan.name.clone()),
        ("status".into(), format!("{:?}", m.status).to_lowercase()),
        ("planDigest".into(), format!("sha256:{}", m.plan_digest)),
        ("runDigest".into(), format!("sha256:{}", m.run_digest)),
        ("steps".into(), steps.to_string()),
        ("world time".into(), format!("{world_s:.3} s")),
        ("wall time".into(), format!("{wall_s:.3} s")),
        ("steps/s".into(), format!("{rate:.1}")),
    ];
    for agent in rewards {
        let paid = agent.per_step.iter().filter(|r| **r != 0.0).count();
        let score: f64 = agent.per_step.iter().sum();
        rows.push((format!("score of {}", agent.agent), format!("{score}")));
        rows.push((format!("rewards of {}", agent.agent), paid.to_string()));
    }
    rows
}
