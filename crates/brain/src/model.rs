//! The agent model: a profile and a shared connectome built into a running brain, with the
//! transport-free API an agent worker wraps.
//!
//! - [`Brain::new`] builds from `(profile, connectome, seed, worker threads)`.
//! - [`Brain::warm_up_and_calibrate`] runs the profile's warm-up with learning off and records
//!   the readout baseline.
//! - [`Brain::prepare`] applies pre-step stimuli, runs `ticks` ticks and decodes a
//!   [`Decision`]. Every tick, noise draw and decode is counted ([`Brain::mutations`]); a caller
//!   that answers a duplicate request from its cache can prove with the counter that nothing
//!   was repeated.
//! - [`Brain::commit`] installs the next input frame, then stimulation, then reinforcement, in
//!   that order, and runs no tick.
//! - [`Brain::capture`] / [`Brain::restore`] save and load the whole mutable state exactly.
//! - [`Brain::telemetry`] reports brain ticks, rates per rate role and the learning counters.

use std::sync::Arc;

use flysim_types::workers::{
    AgentGraph, AgentTelemetry, LearningTelemetry, Reward, RoleRate, Stimulus,
};
use flysim_types::{Digest, RationalNs, U64};

use crate::connectome::Connectome;
use crate::dynamics::{Batch, Dynamics};
use crate::error::BrainError;
use crate::kernel::StimChannel;
use crate::plasticity::{LearningState, PlasticIndex, Rule};
use crate::profile::{Kernel, Profile};
use crate::readout::{Decision, ReadoutState};
use crate::retina::{self, Frame};
use crate::threads;

/// Smallest shard, in neurons: smaller graphs use fewer threads than allowed.
pub const MIN_SHARD_NEURONS: usize = 64;

/// What a brain counts: each tick, noise draw and decode is one mutation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counters {
    /// Ticks run since construction (warm-up included).
    pub ticks: u64,
    /// Noise draws taken.
    pub draws: u64,
    /// Decisions decoded.
    pub decodes: u64,
}

/// What the network did (not mutations; reported for benchmarks and diagnostics).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Activity {
    /// Spikes since construction.
    pub spikes: u64,
    /// Synaptic events (edges delivered) since construction.
    pub events: u64,
}

impl Counters {
    /// Every mutation: ticks + draws + decodes.
    #[must_use]
    pub fn mutations(&self) -> u64 {
        self.ticks + self.draws + self.decodes
    }
}

/// A running brain.
#[derive(Debug)]
pub struct Brain {
    profile: Profile,
    pub(crate) profile_digest: Digest,
    pub(crate) connectome: Arc<Connectome>,
    pub(crate) seed: i32,
    shards: Vec<(u32, u32)>,
    /// Neurons with at least one rate role, as a bitset (cache-resident even for FAFB).
    in_rate_role: Vec<u64>,
    /// `(neuron, rate-role mask)` for those neurons, sorted.
    role_masks: Vec<(u32, u64)>,
    rate_sizes: Vec<f64>,
    stim_roles: Vec<usize>,
    pub(crate) plastic: Option<(PlasticIndex, Rule)>,
    // Mutable state (everything below is captured).
    pub(crate) dynamics: Dynamics,
    pub(crate) counters: Counters,
    pub(crate) activity: Activity,
    pub(crate) drive: Vec<f32>,
    pub(crate) stim_remaining: Vec<u64>,
    pub(crate) rates: Vec<f64>,
    pub(crate) population_rate: f64,
    pub(crate) baseline_rates: Vec<f64>,
    pub(crate) calibrated: bool,
    pub(crate) learning_enabled: bool,
    pub(crate) learning: LearningState,
    pub(crate) readout: ReadoutState,
}

impl Brain {
    /// Builds a brain: checks the profile against the connectome, draws the baselines from the
    /// `baseline` stream, seeds the `noise` stream, and partitions the neurons for
    /// `worker_threads` threads. Learning starts disabled until warm-up ends.
    ///
    /// # Errors
    ///
    /// [`BrainError::ProfileMismatch`], or [`BrainError::InvalidConfiguration`] for a thread
    /// count outside 1..=4096.
    pub fn new(
        profile: Profile,
        connectome: Arc<Connectome>,
        seed: i32,
        worker_threads: u32,
    ) -> Result<Self, BrainError> {
        use flysim_types::payload::Payload as _;
        profile.validate()?;
        profile.check_against(&connectome)?;
        if !(1..=flysim_types::limits::MAX_WORKER_THREADS).contains(&worker_threads) {
            return Err(BrainError::InvalidConfiguration {
                reason: format!("{worker_threads} worker threads"),
            });
        }
        let n = connectome.neurons() as usize;
        let dynamics = Dynamics::new(&profile, &connectome, seed);
        let mut role_mask = vec![0u64; n];
        let mut rate_sizes = Vec::with_capacity(profile.rate_roles.len());
        for (bit, id) in profile.rate_roles.iter().enumerate() {
            let role = profile
                .role(id)
                .ok_or_else(|| BrainError::mismatch("rateRoles", "unknown role"))?;
            for &i in &role.neurons {
                role_mask[i as usize] |= 1 << bit;
            }
            rate_sizes.push(role.neurons.len() as f64);
        }
        let stim_roles = profile
            .stimuli
            .iter()
            .map(|s| {
                profile
                    .roles
                    .iter()
                    .position(|r| r.id == s.role)
                    .unwrap_or(0)
            })
            .collect();
        let plastic = profile.plasticity.as_ref().map(|p| {
            let pre = profile
                .role(&p.pre_role)
                .map_or(&[][..], |r| &r.neurons[..]);
            let post = profile
                .role(&p.post_role)
                .map_or(&[][..], |r| &r.neurons[..]);
            (
                PlasticIndex::select(&connectome, pre, post, p.max_edges),
                Rule::from_profile(p),
            )
        });
        let slots = plastic.as_ref().map_or(0, |(idx, _)| idx.len());
        let stamped = plastic.as_ref().map_or(0, |(idx, _)| idx.neuron_count());
        let shards = threads::partition(
            &connectome.in_degrees(),
            worker_threads as usize,
            MIN_SHARD_NEURONS,
        );
        let rates = vec![0.0; profile.rate_roles.len()];
        Ok(Self {
            profile_digest: profile.digest(),
            seed,
            shards,
            in_rate_role: bitset(
                n,
                role_mask
                    .iter()
                    .enumerate()
                    .filter(|(_, m)| **m != 0)
                    .map(|(i, _)| i as u32),
            ),
            role_masks: role_mask
                .iter()
                .enumerate()
                .filter(|(_, m)| **m != 0)
                .map(|(i, &m)| (i as u32, m))
                .collect(),
            rate_sizes,
            stim_roles,
            plastic,
            dynamics,
            counters: Counters::default(),
            activity: Activity::default(),
            drive: vec![0.0; profile.retina.column_count()],
            stim_remaining: vec![0; profile.stimuli.len()],
            baseline_rates: rates.clone(),
            rates,
            population_rate: 0.0,
            calibrated: false,
            learning_enabled: false,
            learning: LearningState::new(slots, stamped),
            readout: ReadoutState::default(),
            profile,
            connectome,
        })
    }

    /// The profile.
    #[must_use]
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// The profile's digest.
    #[must_use]
    pub fn profile_digest(&self) -> Digest {
        self.profile_digest
    }

    /// The shared connectome.
    #[must_use]
    pub fn connectome(&self) -> &Arc<Connectome> {
        &self.connectome
    }

    /// The index ranges the neurons are split into (one thread each).
    #[must_use]
    pub fn shards(&self) -> &[(u32, u32)] {
        &self.shards
    }

    /// The counters.
    #[must_use]
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// Spikes and synaptic events so far.
    #[must_use]
    pub fn activity(&self) -> Activity {
        self.activity
    }

    /// Every mutation so far (ticks + noise draws + decodes).
    #[must_use]
    pub fn mutations(&self) -> u64 {
        self.counters.mutations()
    }

    /// Brain ticks since construction.
    #[must_use]
    pub fn brain_ticks(&self) -> u64 {
        self.counters.ticks
    }

    /// The membrane potentials.
    #[must_use]
    pub fn membrane(&self) -> &[f32] {
        self.dynamics.membrane()
    }

    /// The plastic gains, slot order (empty without plasticity).
    #[must_use]
    pub fn plastic_gains(&self) -> &[f32] {
        &self.learning.gains
    }

    /// The rate EMAs of the rate roles, in Hz, profile order.
    #[must_use]
    pub fn rates(&self) -> &[f64] {
        &self.rates
    }

    /// The baseline rates recorded by calibration.
    #[must_use]
    pub fn baseline_rates(&self) -> &[f64] {
        &self.baseline_rates
    }

    /// Whether learning is on.
    #[must_use]
    pub fn learning_enabled(&self) -> bool {
        self.learning_enabled
    }

    /// Turns learning on or off (it is off until warm-up ends; it cannot be on without
    /// plasticity in the profile).
    pub fn set_learning(&mut self, on: bool) {
        self.learning_enabled = on && self.plastic.is_some();
    }

    /// SHA-256 of the membrane, little-endian f32 bits in index order.
    #[must_use]
    pub fn membrane_digest(&self) -> Digest {
        let bytes: Vec<u8> = self
            .membrane()
            .iter()
            .flat_map(|m| m.to_le_bytes())
            .collect();
        flysim_types::digest::sha256(&bytes)
    }

    /// Runs the profile's warm-up (learning off), records the baseline rates, then enables
    /// learning if the profile declares plasticity. Returns the warm-up ticks.
    pub fn warm_up_and_calibrate(&mut self) -> u64 {
        let ticks = u64::from(self.profile.readout.warmup_ticks);
        self.learning_enabled = false;
        self.run_ticks(ticks);
        self.baseline_rates.clone_from(&self.rates);
        self.calibrated = true;
        self.readout = ReadoutState {
            next_decision: self.counters.ticks,
            ..ReadoutState::default()
        };
        self.set_learning(true);
        ticks
    }

    /// Applies `stimuli`, runs `ticks` ticks and decodes a decision.
    ///
    /// # Errors
    ///
    /// [`BrainError::UnsupportedStimulus`] before anything changes.
    pub fn prepare(&mut self, ticks: u64, stimuli: &[Stimulus]) -> Result<Decision, BrainError> {
        self.stimulate(stimuli)?;
        self.run_ticks(ticks);
        Ok(self.decode())
    }

    /// Installs the next input (`None`: no frame, zero drive), then `stimuli`, then reinforces
    /// with the sum of `rewards` (in list order); runs no tick.
    ///
    /// # Errors
    ///
    /// [`BrainError::FrameRefused`] or [`BrainError::UnsupportedStimulus`], before anything
    /// changes.
    pub fn commit(
        &mut self,
        frame: Option<&Frame<'_>>,
        stimuli: &[Stimulus],
        rewards: &[Reward],
    ) -> Result<(), BrainError> {
        let drive = match frame {
            Some(f) => retina::encode(&self.profile.retina, f)?,
            None => vec![0.0; self.profile.retina.column_count()],
        };
        self.check_stimuli(stimuli)?;
        self.drive = drive;
        self.stimulate(stimuli)?;
        let total: f64 = rewards.iter().map(|r| r.value).sum();
        self.reinforce(total);
        Ok(())
    }

    /// Applies a reward now (what `commit` does with its rewards' sum).
    pub fn reinforce(&mut self, reward: f64) {
        if self.learning_enabled
            && let Some((_, rule)) = &self.plastic
        {
            self.learning.reinforce(rule, self.counters.ticks, reward);
        }
    }

    fn check_stimuli(&self, stimuli: &[Stimulus]) -> Result<(), BrainError> {
        for s in stimuli {
            if !self.profile.stimuli.iter().any(|k| k.kind == s.kind_id) {
                return Err(BrainError::UnsupportedStimulus {
                    kind: s.kind_id.to_string(),
                    declared: self
                        .profile
                        .stimuli
                        .iter()
                        .map(|k| k.kind.to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
        }
        Ok(())
    }

    /// Starts stimuli: a kind runs for `max(remaining, ceil(durationMs))` ticks.
    fn stimulate(&mut self, stimuli: &[Stimulus]) -> Result<(), BrainError> {
        self.check_stimuli(stimuli)?;
        for s in stimuli {
            if let Some(k) = self
                .profile
                .stimuli
                .iter()
                .position(|k| k.kind == s.kind_id)
            {
                let ticks = if s.duration_ms.is_finite() && s.duration_ms > 0.0 {
                    // `as` saturates: a huge duration is "until further notice".
                    match &self.profile.kernel {
                        Kernel::Lif1ms(_) => libm::ceil(s.duration_ms) as u64,
                        Kernel::ExpDelay(k) => {
                            libm::ceil(s.duration_ms * 1e6 / f64::from(k.tick_ns)) as u64
                        }
                    }
                } else {
                    0
                };
                self.stim_remaining[k] = self.stim_remaining[k].max(ticks);
            }
        }
        Ok(())
    }

    fn decode(&mut self) -> Decision {
        self.counters.decodes += 1;
        let t = self.counters.ticks;
        let rates = &self.rates;
        let base = &self.baseline_rates;
        let roles = &self.profile.rate_roles;
        let bindings = &self.profile.readout.bindings;
        let score = |i: usize| {
            let r = roles
                .iter()
                .position(|id| *id == bindings[i].role)
                .unwrap_or(0);
            (rates[r] + 1.0) / (base[r] + 1.0)
        };
        self.readout.decide(&self.profile.readout, t, &score)
    }

    /// Runs `ticks` ticks (as [`Brain::prepare`] does, without stimuli or a decision) and
    /// hands every tick's spikes, ascending, to `record`: for measurements and tests.
    pub fn run_recording(&mut self, ticks: u64, record: &mut dyn FnMut(&[u32])) {
        self.run_ticks_with(ticks, record);
    }

    /// Runs `ticks` ticks.
    fn run_ticks(&mut self, ticks: u64) {
        self.run_ticks_with(ticks, &mut |_| {});
    }

    /// Runs `ticks` ticks, handing each tick's spikes to `record`.
    fn run_ticks_with(&mut self, ticks: u64, record: &mut dyn FnMut(&[u32])) {
        if ticks == 0 {
            return;
        }
        let columns: Vec<(u32, f32)> = self
            .profile
            .retina
            .columns()
            .zip(&self.drive)
            .map(|((_, c), &d)| (c[0], d))
            .collect();
        let stim: Vec<StimChannel<'_>> = self
            .profile
            .stimuli
            .iter()
            .zip(&self.stim_roles)
            .zip(&self.stim_remaining)
            .map(|((s, &r), &remaining)| StimChannel {
                neurons: &self.profile.roles[r].neurons,
                drive: s.drive as f32,
                remaining,
            })
            .collect();
        let gains = self.learning.gains.clone();
        let batch = Batch {
            conn: &self.connectome,
            shards: &self.shards,
            columns: &columns,
            stim: &stim,
            plastic: self.plastic.as_ref().map(|(i, _)| i),
            gains: &gains,
            first_tick: self.counters.ticks,
        };
        let start_tick = self.counters.ticks;
        let alpha = self.profile.kernel.rate_alpha();
        let per_second = self.dynamics.ticks_per_second();
        let neurons = f64::from(self.connectome.neurons());
        let learning = &mut self.learning;
        let learning_on = self.learning_enabled;
        let plastic = self.plastic.as_ref();
        let in_rate_role = &self.in_rate_role;
        let role_masks = &self.role_masks;
        let rate_sizes = &self.rate_sizes;
        let rates = &mut self.rates;
        let population = &mut self.population_rate;
        let mut counts = vec![0u32; rates.len()];
        let activity = &mut self.activity;
        let indptr = self.connectome.indptr();
        let mut observe = |j: u64, spikes: &[u32]| {
            let t = start_tick + j;
            activity.spikes += spikes.len() as u64;
            activity.events += spikes
                .iter()
                .map(|&s| u64::from(indptr[s as usize + 1] - indptr[s as usize]))
                .sum::<u64>();
            if let Some((idx, rule)) = plastic {
                if learning_on {
                    learning.observe(idx, rule, t, spikes);
                }
                learning.stamp(idx, t, spikes);
            }
            if !counts.is_empty() {
                counts.iter_mut().for_each(|c| *c = 0);
                for &s in spikes {
                    if !in_set(in_rate_role, s) {
                        continue;
                    }
                    let k = role_masks.partition_point(|&(i, _)| i < s);
                    let mut mask = role_masks[k].1;
                    while mask != 0 {
                        counts[mask.trailing_zeros() as usize] += 1;
                        mask &= mask - 1;
                    }
                }
                for ((rate, &c), &size) in rates.iter_mut().zip(&counts).zip(rate_sizes) {
                    let inst = f64::from(c) * per_second / size;
                    *rate += (inst - *rate) * alpha;
                }
            }
            let inst = spikes.len() as f64 * per_second / neurons;
            *population += (inst - *population) * alpha;
            record(spikes);
        };
        let draws = self.dynamics.run(&batch, ticks, &mut observe);
        self.counters.ticks += ticks;
        self.counters.draws += draws;
        for r in &mut self.stim_remaining {
            *r = r.saturating_sub(ticks);
        }
    }

    /// Milliseconds per tick (exactly 1 for `lif-1ms-v1`).
    fn tick_ms(&self) -> f64 {
        match &self.profile.kernel {
            Kernel::Lif1ms(_) => 1.0,
            Kernel::ExpDelay(k) => f64::from(k.tick_ns) / 1e6,
        }
    }

    /// One brain tick: 1 ms (`lif-1ms-v1`) or the profile's `tickNs` (`lif-exp-delay-v1`).
    #[must_use]
    pub fn tick_duration(&self) -> RationalNs {
        match &self.profile.kernel {
            Kernel::Lif1ms(_) => RationalNs::from_ns(1_000_000),
            Kernel::ExpDelay(k) => RationalNs::from_ns(u64::from(k.tick_ns)),
        }
    }

    /// The graph's identity and declared roles, as `Agent.Initialize` reports them: the dataset
    /// digest is the connectome's digest; the index digest is the SHA-256 of the neuron names
    /// joined by LF (of the decimal neuron count when the connectome has no names).
    #[must_use]
    pub fn graph(&self) -> AgentGraph {
        let c = &self.connectome;
        let index = match c.names() {
            Some(names) => names.join("\n"),
            None => c.neurons().to_string(),
        };
        AgentGraph {
            dataset_digest: c.digest(),
            index_digest: flysim_types::digest::sha256(index.as_bytes()),
            neuron_count: U64(u64::from(c.neurons())),
            rate_roles: self.profile.rate_roles.clone(),
            supported_stimuli: self
                .profile
                .stimuli
                .iter()
                .map(|s| s.kind.clone())
                .collect(),
        }
    }

    /// Telemetry: brain ticks, population and role rates, learning counters, the longest
    /// stimulation still running.
    #[must_use]
    pub fn telemetry(&self) -> AgentTelemetry {
        AgentTelemetry {
            brain_ticks: U64(self.counters.ticks),
            population_rate_hz: self.population_rate,
            rates: self
                .profile
                .rate_roles
                .iter()
                .zip(&self.rates)
                .map(|(id, &hz)| RoleRate {
                    role_id: id.clone(),
                    hz,
                })
                .collect(),
            learning: LearningTelemetry {
                enabled: self.learning_enabled,
                updates: U64(self.learning.updates),
                changed: U64(self.learning.changed),
                signal: self.learning.signal,
            },
            stimulus_remaining_ms: Some(
                self.stim_remaining.iter().copied().max().unwrap_or(0) as f64 * self.tick_ms(),
            ),
        }
    }
}

/// A bitset of `n` bits with `members` set.
fn bitset(n: usize, members: impl Iterator<Item = u32>) -> Vec<u64> {
    let mut set = vec![0u64; n.div_ceil(64)];
    for i in members {
        set[(i / 64) as usize] |= 1 << (i % 64);
    }
    set
}

/// Whether bit `i` is set.
#[inline]
fn in_set(set: &[u64], i: u32) -> bool {
    set.get((i / 64) as usize)
        .is_some_and(|w| w >> (i % 64) & 1 == 1)
}
