//! The synthetic agent: a deterministic stand-in for a brain, for tests and the counter arena.
//!
//! Its state is four lanes, each a 64-bit value and a SplitMix64 stream seeded from the agent's
//! seed (`SHA-256("flysim/synthetic-v1" LF seed LF lane LF)`, first 8 bytes big-endian). A tick
//! draws once from every lane and folds the draw into the lane. With `workerThreads >= 2` the
//! lanes are split across scoped threads; lanes are independent, so the result is the same.
//!
//! The readout is fixed: `mix` is the XOR of the lanes, `u = (mix >> 11) / 2^53`. When `u` is
//! below the profile's `press-rate` and the context makes a non-idle action available, it picks
//! the available non-idle action `mix mod n`; otherwise `idle` when available, else the first
//! available action. The context can only mask actions, never change the readout.
//!
//! The agent is blind ([`Sensing::Blind`]): commit folds the reward sum (in millionths) into the
//! lanes, so what the world does reaches it through the task, never through its frames (which
//! reach the trace by digest, and cost nothing here). The
//! mutation counter counts every tick, draw, decode and commit ([`Counts`]); it is the model's
//! [`AgentModel::work`], so `Status.progressCounter` exposes it over the bus.
//!
//! A capture is 120 bytes: the magic `FLYSYN01`, each lane's generator and state, the four
//! counts, the last reward signal and the press rate (all little-endian u64 / f64 bits). A
//! capture of another press rate is refused at staging.
//!
//! Profile parameters: `press-rate` (number in `[0, 1]`, default 0.25), `warmup-ticks` (integer,
//! default 10), `tick-ns` (a `N/D` string, default `1000000/1`).

use flysim_types::digest::sha256;
use flysim_types::plan::ModelKind;
use flysim_types::spec::{ModelSpec, ParameterKind, ParameterSpec};
use flysim_types::workers::{AgentGraph, AgentTelemetry, LearningTelemetry, Reward, Stimulus};
use flysim_types::{Id, RationalNs, TypedValue, U64};
use serde_json::{Value, json};

use flysim_component::model::{AgentModel, ModelError, ModelSetup, SensedInput, Sensing};
use flysim_component::schemas::{IDLE, action_context, action_decision};

/// What the synthetic agent declares: the three profile parameters it reads, and no retina (it
/// is blind). [`SyntheticAgent::new`] reads them with these defaults and ranges.
pub const SPEC: ModelSpec = ModelSpec {
    kind: ModelKind::Synthetic,
    parameters: Some(&[
        ParameterSpec {
            name: "press-rate",
            kind: ParameterKind::Number { min: 0.0, max: 1.0 },
            default: "0.25",
        },
        ParameterSpec {
            name: "warmup-ticks",
            kind: ParameterKind::Count,
            default: "10",
        },
        ParameterSpec {
            name: "tick-ns",
            kind: ParameterKind::Duration,
            default: "\"1000000/1\"",
        },
    ]),
    retina: None,
};

/// Lanes of state.
const LANES: usize = 4;

/// SplitMix64: a tiny, well-known, seedable generator.
#[derive(Debug, Clone, Copy)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[derive(Debug, Clone, Copy)]
struct Lane {
    rng: SplitMix64,
    state: u64,
}

impl Lane {
    fn tick(&mut self, ticks: u64) {
        for _ in 0..ticks {
            let draw = self.rng.next();
            self.state = (self.state.rotate_left(7) ^ draw).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
}

/// The synthetic agent's mutation counter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Ticks run (warm-up included).
    pub ticks: u64,
    /// RNG draws (one per lane per tick).
    pub draws: u64,
    /// Decisions decoded.
    pub decodes: u64,
    /// Commits applied.
    pub commits: u64,
}

impl Counts {
    /// Every mutation counted.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.ticks
            .saturating_add(self.draws)
            .saturating_add(self.decodes)
            .saturating_add(self.commits)
    }
}

/// The synthetic agent.
#[derive(Debug)]
pub struct SyntheticAgent {
    lanes: [Lane; LANES],
    threads: u32,
    press_rate: f64,
    warmup_ticks: u64,
    tick: RationalNs,
    counts: Counts,
    last_signal: f64,
    staged: Option<Staged>,
    /// The last decision context and its actions: a task usually hands the same one on, and
    /// comparing it costs less than reading its ids again.
    actions: Option<(TypedValue, Vec<Id>)>,
}

/// A validated capture waiting for activation.
#[derive(Debug, Clone, Copy)]
struct Staged {
    lanes: [Lane; LANES],
    counts: Counts,
    last_signal: f64,
}

/// The magic of a synthetic agent's capture.
const CAPTURE_MAGIC: &[u8; 8] = b"FLYSYN01";
/// Bytes of a synthetic agent's capture.
const CAPTURE_BYTES: usize = 8 + LANES * 16 + 4 * 8 + 8 + 8;

fn param<'a>(setup: &'a ModelSetup, name: &str) -> Option<&'a Value> {
    setup.profile.parameters.get(name)
}

impl SyntheticAgent {
    /// Builds the agent from its profile parameters and seed.
    ///
    /// # Errors
    ///
    /// [`ModelError::Invalid`] for a parameter of the wrong type or range.
    pub fn new(setup: &ModelSetup) -> Result<Self, ModelError> {
        let press_rate = match param(setup, "press-rate") {
            None => 0.25,
            Some(v) => v
                .as_f64()
                .filter(|r| (0.0..=1.0).contains(r))
                .ok_or_else(|| ModelError::Invalid("press-rate is a number in [0, 1]".into()))?,
        };
        let warmup_ticks = match param(setup, "warmup-ticks") {
            None => 10,
            Some(v) => v.as_u64().ok_or_else(|| {
                ModelError::Invalid("warmup-ticks is a non-negative integer".into())
            })?,
        };
        let tick = match param(setup, "tick-ns") {
            None => RationalNs::MILLISECOND,
            Some(v) => v
                .as_str()
                .and_then(|s| s.parse::<RationalNs>().ok())
                .and_then(|r| r.positive().ok())
                .ok_or_else(|| ModelError::Invalid("tick-ns is a positive `N/D` string".into()))?,
        };
        let lanes = std::array::from_fn(|i| {
            let digest = sha256(format!("flysim/synthetic-v1\n{}\n{i}\n", setup.seed).as_bytes());
            let mut first = [0u8; 8];
            first.copy_from_slice(&digest.as_bytes()[..8]);
            Lane {
                rng: SplitMix64(u64::from_be_bytes(first)),
                state: 0,
            }
        });
        Ok(Self {
            lanes,
            threads: setup.worker_threads.max(1),
            press_rate,
            warmup_ticks,
            tick,
            counts: Counts::default(),
            last_signal: 0.0,
            staged: None,
            actions: None,
        })
    }

    /// The mutation counter.
    #[must_use]
    pub fn counts(&self) -> Counts {
        self.counts
    }

    fn run_ticks(&mut self, ticks: u64) {
        if ticks == 0 {
            return;
        }
        if self.threads >= 2 {
            let (left, right) = self.lanes.split_at_mut(LANES / 2);
            std::thread::scope(|s| {
                s.spawn(|| left.iter_mut().for_each(|l| l.tick(ticks)));
                right.iter_mut().for_each(|l| l.tick(ticks));
            });
        } else {
            self.lanes.iter_mut().for_each(|l| l.tick(ticks));
        }
        // Work counters: a restored count near the top saturates rather than overflows.
        self.counts.ticks = self.counts.ticks.saturating_add(ticks);
        self.counts.draws = self
            .counts
            .draws
            .saturating_add(ticks.saturating_mul(LANES as u64));
    }

    fn mix(&self) -> u64 {
        self.lanes.iter().fold(0, |acc, l| acc ^ l.state)
    }

    fn fold(&mut self, value: u64) {
        for (i, lane) in self.lanes.iter_mut().enumerate() {
            lane.state =
                (lane.state ^ value.rotate_left(i as u32 * 16)).wrapping_mul(0xD6E8_FEB8_6659_FD93);
        }
    }
}

/// The actions a decision context makes available.
fn available(context: &TypedValue) -> Result<Vec<Id>, ModelError> {
    if context.schema != action_context() {
        return Err(ModelError::Invalid(format!(
            "the decision context must use schema `{}`",
            action_context().id
        )));
    }
    let list = context
        .value
        .get("availableActions")
        .and_then(Value::as_array)
        .ok_or_else(|| ModelError::Invalid("the context lists no availableActions".into()))?;
    let actions: Vec<Id> = list
        .iter()
        .map(|a| a.as_str().and_then(|s| Id::parse(s).ok()))
        .collect::<Option<_>>()
        .ok_or_else(|| ModelError::Invalid("availableActions holds only Ids".into()))?;
    if actions.is_empty() {
        return Err(ModelError::Invalid(
            "availableActions must not be empty".into(),
        ));
    }
    Ok(actions)
}

impl AgentModel for SyntheticAgent {
    fn tick_duration(&self) -> RationalNs {
        self.tick
    }

    fn sensing(&self) -> Sensing {
        Sensing::Blind
    }

    /// A few random draws per tick and a masked readout: microseconds a step.
    fn quick(&self) -> bool {
        true
    }

    fn warm_up(&mut self, _input: &SensedInput, context: &TypedValue) -> Result<u64, ModelError> {
        available(context)?;
        self.run_ticks(self.warmup_ticks);
        Ok(self.warmup_ticks)
    }

    fn prepare(
        &mut self,
        ticks: u64,
        stimuli: &[Stimulus],
        context: &TypedValue,
    ) -> Result<TypedValue, ModelError> {
        if let Some(s) = stimuli.first() {
            return Err(ModelError::unsupported(format!(
                "stimulus kind `{}` (the synthetic agent supports none)",
                s.kind_id
            )));
        }
        let (seen, actions) = match self.actions.take() {
            Some((seen, actions)) if seen == *context => (seen, actions),
            _ => (context.clone(), available(context)?),
        };
        self.run_ticks(ticks);
        let mix = self.mix();
        let u = (mix >> 11) as f64 / (1u64 << 53) as f64;
        let active: Vec<&Id> = actions.iter().filter(|a| a.as_str() != IDLE).collect();
        let idle = actions.iter().find(|a| a.as_str() == IDLE);
        let choice = match (u < self.press_rate, active.is_empty(), idle) {
            (true, false, _) | (_, false, None) => active[(mix % active.len() as u64) as usize],
            (_, _, Some(idle)) => idle,
            (_, true, None) => &actions[0],
        };
        self.counts.decodes = self.counts.decodes.saturating_add(1);
        let decision = TypedValue {
            schema: action_decision(),
            value: match json!({ "action": choice }) {
                Value::Object(m) => m,
                _ => serde_json::Map::new(),
            },
        };
        self.actions = Some((seen, actions));
        Ok(decision)
    }

    fn commit(
        &mut self,
        _input: &SensedInput,
        stimuli: &[Stimulus],
        rewards: &[Reward],
    ) -> Result<(), ModelError> {
        if let Some(s) = stimuli.first() {
            return Err(ModelError::unsupported(format!(
                "stimulus kind `{}` (the synthetic agent supports none)",
                s.kind_id
            )));
        }
        let sum: f64 = rewards.iter().map(|r| r.value).sum();
        let millionths = (sum * 1e6).round() as i64;
        self.fold(u64::from_ne_bytes(millionths.to_ne_bytes()));
        self.last_signal = sum;
        self.counts.commits = self.counts.commits.saturating_add(1);
        Ok(())
    }

    fn telemetry(&self) -> AgentTelemetry {
        AgentTelemetry {
            brain_ticks: U64(self.counts.ticks),
            population_rate_hz: (self.mix() % 1000) as f64 / 10.0,
            rates: Vec::new(),
            learning: LearningTelemetry {
                enabled: false,
                updates: U64(0),
                changed: U64(0),
                signal: self.last_signal,
            },
            stimulus_remaining_ms: None,
        }
    }

    fn graph(&self) -> AgentGraph {
        let digest = sha256(b"flysim/synthetic-v1");
        AgentGraph {
            dataset_digest: digest,
            index_digest: digest,
            neuron_count: U64(0),
            rate_roles: Vec::new(),
            supported_stimuli: Vec::new(),
        }
    }

    fn work(&self) -> u64 {
        self.counts.total()
    }

    fn capture(&self) -> Result<Vec<u8>, ModelError> {
        let mut out = Vec::with_capacity(CAPTURE_BYTES);
        out.extend_from_slice(CAPTURE_MAGIC);
        for lane in &self.lanes {
            out.extend_from_slice(&lane.rng.0.to_le_bytes());
            out.extend_from_slice(&lane.state.to_le_bytes());
        }
        let c = self.counts;
        for n in [c.ticks, c.draws, c.decodes, c.commits] {
            out.extend_from_slice(&n.to_le_bytes());
        }
        out.extend_from_slice(&self.last_signal.to_bits().to_le_bytes());
        out.extend_from_slice(&self.press_rate.to_bits().to_le_bytes());
        Ok(out)
    }

    fn stage_restore(&mut self, payload: &[u8]) -> Result<(), ModelError> {
        if payload.len() != CAPTURE_BYTES || !payload.starts_with(CAPTURE_MAGIC) {
            return Err(ModelError::Incompatible(format!(
                "a synthetic agent capture is {CAPTURE_BYTES} bytes starting `FLYSYN01`"
            )));
        }
        let words: Vec<u64> = payload[8..]
            .chunks_exact(8)
            .map(|w| {
                let mut b = [0u8; 8];
                b.copy_from_slice(w);
                u64::from_le_bytes(b)
            })
            .collect();
        let press_rate = f64::from_bits(words[LANES * 2 + 5]);
        if press_rate.to_bits() != self.press_rate.to_bits() {
            return Err(ModelError::Incompatible(format!(
                "the capture was taken with press-rate {press_rate}, this profile has {}",
                self.press_rate
            )));
        }
        let last_signal = f64::from_bits(words[LANES * 2 + 4]);
        if !last_signal.is_finite() {
            return Err(ModelError::Incompatible(format!(
                "the capture's last reward signal is {last_signal}, not a finite number"
            )));
        }
        let lanes = std::array::from_fn(|i| Lane {
            rng: SplitMix64(words[2 * i]),
            state: words[2 * i + 1],
        });
        let n = LANES * 2;
        self.staged = Some(Staged {
            lanes,
            counts: Counts {
                ticks: words[n],
                draws: words[n + 1],
                decodes: words[n + 2],
                commits: words[n + 3],
            },
            last_signal,
        });
        Ok(())
    }

    fn activate_restore(&mut self) -> Result<(), ModelError> {
        let staged = self
            .staged
            .take()
            .ok_or_else(|| ModelError::Invalid("no staged capture to activate".into()))?;
        self.lanes = staged.lanes;
        self.counts = staged.counts;
        self.last_signal = staged.last_signal;
        Ok(())
    }
}

/// The factory of synthetic agents.
#[must_use]
pub fn factory() -> flysim_component::model::AgentFactory {
    std::sync::Arc::new(|setup| Ok(Box::new(SyntheticAgent::new(setup)?)))
}
