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
use crate::error::BrainError;
use crate::kernel::{self, Inputs, Params, Shard, StimChannel};
use crate::plasticity::{LearningState, PlasticIndex, Rule};
use crate::profile::Profile;
use crate::readout::{Decision, ReadoutState};
use crate::retina::{self, Frame};
use crate::rng::{self, XorShift32};

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
    profile_digest: Digest,
    connectome: Arc<Connectome>,
    seed: i32,
    params: Params,
    shards: Vec<(u32, u32)>,
    /// Neurons with at least one rate role, as a bitset (cache-resident even for FAFB).
    in_rate_role: Vec<u64>,
    /// `(neuron, rate-role mask)` for those neurons, sorted.
    role_masks: Vec<(u32, u64)>,
    rate_sizes: Vec<f64>,
    stim_roles: Vec<usize>,
    plastic: Option<(PlasticIndex, Rule)>,
    baseline: Vec<f32>,
    // Mutable state (everything below is captured).
    counters: Counters,
    activity: Activity,
    membrane: Vec<f32>,
    refractory: Vec<u8>,
    noise: XorShift32,
    drive: Vec<f32>,
    stim_remaining: Vec<u64>,
    rates: Vec<f64>,
    population_rate: f64,
    baseline_rates: Vec<f64>,
    calibrated: bool,
    learning_enabled: bool,
    learning: LearningState,
    readout: ReadoutState,
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
        let k = &profile.kernel;
        let params = Params {
            decay: libm::exp(-1.0 / k.tau_ms) as f32,
            threshold: k.threshold as f32,
            refractory: k.refractory_ticks as u8,
            scale: k.synapse_scale as f32,
            floor: k.membrane_floor as f32,
            kicks: k.noise_kicks,
            kick: k.noise_amount as f32,
        };
        let mut base_rng = XorShift32::stream(seed, rng::BASELINE);
        let baseline: Vec<f32> = (0..n)
            .map(|_| (base_rng.next_f64() * k.baseline_max) as f32)
            .collect();
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
        let shards = kernel::partition(
            &connectome.in_degrees(),
            worker_threads as usize,
            MIN_SHARD_NEURONS,
        );
        let rates = vec![0.0; profile.rate_roles.len()];
        Ok(Self {
            profile_digest: profile.digest(),
            seed,
            params,
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
            baseline,
            counters: Counters::default(),
            activity: Activity::default(),
            membrane: vec![0.0; n],
            refractory: vec![0; n],
            noise: XorShift32::stream(seed, rng::NOISE),
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
        &self.membrane
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
        let bytes: Vec<u8> = self.membrane.iter().flat_map(|m| m.to_le_bytes()).collect();
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
                    libm::ceil(s.duration_ms) as u64
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

    /// Runs `ticks` ticks.
    fn run_ticks(&mut self, ticks: u64) {
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
        let inputs = Inputs {
            conn: &self.connectome,
            params: self.params,
            columns: &columns,
            stim: &stim,
            plastic: self.plastic.as_ref().map(|(i, _)| i),
            gains: &gains,
        };
        let mut shards = Vec::with_capacity(self.shards.len());
        let mut membrane = &mut self.membrane[..];
        let mut refractory = &mut self.refractory[..];
        let mut baseline = &self.baseline[..];
        for &(lo, hi) in &self.shards {
            let len = (hi - lo) as usize;
            let (m, m_rest) = membrane.split_at_mut(len);
            let (r, r_rest) = refractory.split_at_mut(len);
            let (b, b_rest) = baseline.split_at(len);
            shards.push(Shard {
                start: lo,
                membrane: m,
                refractory: r,
                baseline: b,
            });
            (membrane, refractory, baseline) = (m_rest, r_rest, b_rest);
        }
        let start_tick = self.counters.ticks;
        let alpha = self.profile.kernel.rate_alpha;
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
                    let inst = f64::from(c) * 1000.0 / size;
                    *rate += (inst - *rate) * alpha;
                }
            }
            let inst = spikes.len() as f64 * 1000.0 / neurons;
            *population += (inst - *population) * alpha;
        };
        kernel::run(shards, &inputs, &mut self.noise, ticks, &mut observe);
        self.counters.ticks += ticks;
        self.counters.draws += ticks * u64::from(self.params.kicks);
        for r in &mut self.stim_remaining {
            *r = r.saturating_sub(ticks);
        }
    }

    /// One brain tick: 1 ms (`lif-1ms-v1`).
    #[must_use]
    pub fn tick_duration() -> RationalNs {
        RationalNs::from_ns(1_000_000)
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
                self.stim_remaining.iter().copied().max().unwrap_or(0) as f64
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

/// The snapshot magic.
const SNAPSHOT_MAGIC: [u8; 8] = *b"FLYBRST\x01";
/// The snapshot format version.
const SNAPSHOT_VERSION: u32 = 1;

struct Writer(Vec<u8>);

impl Writer {
    fn bytes(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.bytes(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }
    fn f64(&mut self, v: f64) {
        self.u64(v.to_bits());
    }
    fn len(&mut self, n: usize) {
        self.u64(n as u64);
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], BrainError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| BrainError::SnapshotCorrupt {
                reason: "the snapshot ends early".into(),
            })?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }
    fn u8(&mut self) -> Result<u8, BrainError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, BrainError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Result<u64, BrainError> {
        let mut x = [0u8; 8];
        x.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(x))
    }
    fn f64(&mut self) -> Result<f64, BrainError> {
        Ok(f64::from_bits(self.u64()?))
    }
    fn bool(&mut self) -> Result<bool, BrainError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(BrainError::SnapshotCorrupt {
                reason: format!("a flag byte is {v}"),
            }),
        }
    }
    /// A length prefix that must equal `expected`.
    fn len(&mut self, expected: usize, what: &str) -> Result<(), BrainError> {
        let n = self.u64()?;
        if n != expected as u64 {
            return Err(BrainError::SnapshotMismatch {
                reason: format!("{what}: the snapshot has {n}, this model {expected}"),
            });
        }
        Ok(())
    }
    fn f32s(&mut self, n: usize, what: &str) -> Result<Vec<f32>, BrainError> {
        self.len(n, what)?;
        Ok(self
            .take(n * 4)?
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }
    fn f64s(&mut self, n: usize, what: &str) -> Result<Vec<f64>, BrainError> {
        self.len(n, what)?;
        (0..n).map(|_| self.f64()).collect()
    }
    fn u64s(&mut self, n: usize, what: &str) -> Result<Vec<u64>, BrainError> {
        self.len(n, what)?;
        (0..n).map(|_| self.u64()).collect()
    }
}

impl Brain {
    /// The whole mutable state as bytes: magic `FLYBRST\x01`, version, the identities (profile
    /// digest, connectome digest, seed), every counter and array, and a SHA-256 trailer.
    #[must_use]
    pub fn capture(&self) -> Vec<u8> {
        let mut w = Writer(Vec::new());
        w.bytes(&SNAPSHOT_MAGIC);
        w.u32(SNAPSHOT_VERSION);
        w.bytes(self.profile_digest.as_bytes());
        w.bytes(self.connectome.digest().as_bytes());
        w.u32(self.seed as u32);
        w.u64(self.counters.ticks);
        w.u64(self.counters.draws);
        w.u64(self.counters.decodes);
        w.u64(self.activity.spikes);
        w.u64(self.activity.events);
        w.u32(self.noise.state() as u32);
        w.u8(u8::from(self.calibrated));
        w.u8(u8::from(self.learning_enabled));
        w.len(self.membrane.len());
        self.membrane.iter().for_each(|v| w.bytes(&v.to_le_bytes()));
        w.len(self.refractory.len());
        w.bytes(&self.refractory);
        w.len(self.drive.len());
        self.drive.iter().for_each(|v| w.bytes(&v.to_le_bytes()));
        w.len(self.stim_remaining.len());
        self.stim_remaining.iter().for_each(|&v| w.u64(v));
        w.len(self.rates.len());
        self.rates.iter().for_each(|&v| w.f64(v));
        w.f64(self.population_rate);
        w.len(self.baseline_rates.len());
        self.baseline_rates.iter().for_each(|&v| w.f64(v));
        let l = &self.learning;
        w.len(l.gains.len());
        l.gains.iter().for_each(|v| w.bytes(&v.to_le_bytes()));
        w.len(l.traces.len());
        l.traces.iter().for_each(|v| w.bytes(&v.to_le_bytes()));
        w.len(l.touched.len());
        l.touched.iter().for_each(|&v| w.u64(v));
        w.len(l.last_spike.len());
        l.last_spike.iter().for_each(|&v| w.u64(v as u64));
        w.u64(l.updates);
        w.u64(l.changed);
        w.f64(l.signal);
        let r = &self.readout;
        w.u8(r.winner.map_or(255, |b| b as u8));
        w.u64(r.next_decision);
        r.pulse_until.iter().for_each(|&v| w.u64(v));
        r.cooldown_until.iter().for_each(|&v| w.u64(v));
        let digest = flysim_types::digest::sha256(&w.0);
        w.bytes(digest.as_bytes());
        w.0
    }

    /// Loads a snapshot taken by [`Brain::capture`] of a brain built from the same profile,
    /// connectome and seed. On refusal the brain is unchanged.
    ///
    /// # Errors
    ///
    /// [`BrainError::SnapshotCorrupt`] for bytes that are not an intact snapshot,
    /// [`BrainError::SnapshotMismatch`] for a snapshot of another model.
    pub fn restore(&mut self, bytes: &[u8]) -> Result<(), BrainError> {
        let corrupt = |reason: &str| BrainError::SnapshotCorrupt {
            reason: reason.to_owned(),
        };
        if bytes.len() < 8 + 4 + 32 || bytes[..8] != SNAPSHOT_MAGIC {
            return Err(corrupt("not a brain snapshot (magic)"));
        }
        let (body, trailer) = bytes.split_at(bytes.len() - 32);
        if flysim_types::digest::sha256(body).as_bytes()[..] != *trailer {
            return Err(corrupt("the SHA-256 trailer does not match"));
        }
        let mut r = Reader { bytes: body, at: 8 };
        let version = r.u32()?;
        if version != SNAPSHOT_VERSION {
            return Err(corrupt(&format!(
                "snapshot version {version} is not supported"
            )));
        }
        let mismatch = |reason: String| BrainError::SnapshotMismatch { reason };
        if r.take(32)? != self.profile_digest.as_bytes() {
            return Err(mismatch("the profile digest differs".into()));
        }
        if r.take(32)? != self.connectome.digest().as_bytes() {
            return Err(mismatch("the connectome digest differs".into()));
        }
        let seed = r.u32()? as i32;
        if seed != self.seed {
            return Err(mismatch(format!("seed {seed}, this model {}", self.seed)));
        }
        let counters = Counters {
            ticks: r.u64()?,
            draws: r.u64()?,
            decodes: r.u64()?,
        };
        let activity = Activity {
            spikes: r.u64()?,
            events: r.u64()?,
        };
        let noise = XorShift32::new(r.u32()? as i32);
        let calibrated = r.bool()?;
        let learning_enabled = r.bool()?;
        let n = self.membrane.len();
        let membrane = r.f32s(n, "neurons")?;
        r.len(n, "neurons")?;
        let refractory = r.take(n)?.to_vec();
        let drive = r.f32s(self.drive.len(), "retina columns")?;
        let stim_remaining = r.u64s(self.stim_remaining.len(), "stimulus kinds")?;
        let rates = r.f64s(self.rates.len(), "rate roles")?;
        let population_rate = r.f64()?;
        let baseline_rates = r.f64s(self.rates.len(), "rate roles")?;
        let slots = self.learning.gains.len();
        let gains = r.f32s(slots, "plastic slots")?;
        let traces = r.f32s(slots, "plastic slots")?;
        let touched = r.u64s(slots, "plastic slots")?;
        let last_spike: Vec<i64> = r
            .u64s(self.learning.last_spike.len(), "stamped neurons")?
            .into_iter()
            .map(|v| v as i64)
            .collect();
        let learning = LearningState {
            gains,
            traces,
            touched,
            last_spike,
            updates: r.u64()?,
            changed: r.u64()?,
            signal: r.f64()?,
        };
        let winner = match r.u8()? {
            255 => None,
            b => Some(
                *crate::profile::Button::ALL
                    .get(b as usize)
                    .ok_or_else(|| corrupt("unknown held button"))?,
            ),
        };
        let next_decision = r.u64()?;
        let mut pulse_until = [0u64; 8];
        for v in &mut pulse_until {
            *v = r.u64()?;
        }
        let mut cooldown_until = [0u64; 8];
        for v in &mut cooldown_until {
            *v = r.u64()?;
        }
        if r.at != body.len() {
            return Err(corrupt("bytes follow the last field"));
        }
        if refractory.iter().any(|&v| v > self.params.refractory) {
            return Err(corrupt("a refractory counter exceeds the profile's"));
        }
        self.counters = counters;
        self.activity = activity;
        self.noise = noise;
        self.calibrated = calibrated;
        self.learning_enabled = learning_enabled && self.plastic.is_some();
        self.membrane = membrane;
        self.refractory = refractory;
        self.drive = drive;
        self.stim_remaining = stim_remaining;
        self.rates = rates;
        self.population_rate = population_rate;
        self.baseline_rates = baseline_rates;
        self.learning = learning;
        self.readout = ReadoutState {
            winner,
            next_decision,
            pulse_until,
            cooldown_until,
        };
        Ok(())
    }
}
