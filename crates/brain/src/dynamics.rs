//! The kernel-specific part of a brain: the state each kernel keeps per neuron, how a batch of
//! ticks is handed to its shards, and how that state goes into and out of a snapshot.
//!
//! [`Dynamics::Lif1ms`] is `lif-1ms-v1` (membrane, refractory counter, baseline, one noise
//! stream); [`Dynamics::ExpDelay`] is `lif-exp-delay-v1` (membrane, conductance, refractory
//! counter, the delay ring and one Poisson stream per neuron that can be driven: the neurons of
//! the `poisson` drives, the retina columns and the stimulated roles, ascending, the stream of
//! neuron `i` named `poisson/i`). This module knows nothing of rates, the readout or learning.

use crate::connectome::Connectome;
use crate::error::BrainError;
use crate::exp_delay::{self, Class, Drive};
use crate::kernel::{self, Lif1msTick, Params, StimChannel};
use crate::plasticity::PlasticIndex;
use crate::profile::{ExpDelayParams, Kernel, Lif1msParams, Profile};
use crate::rng::{self, XorShift32};
use crate::snapshot::{Reader, Writer};
use crate::threads::{self, split_mut};

/// The state of `lif-1ms-v1`.
#[derive(Debug)]
pub(crate) struct Lif1msState {
    pub(crate) params: Params,
    pub(crate) baseline: Vec<f32>,
    pub(crate) membrane: Vec<f32>,
    pub(crate) refractory: Vec<u8>,
    pub(crate) noise: XorShift32,
}

/// The state of `lif-exp-delay-v1`.
#[derive(Debug)]
pub(crate) struct ExpDelayState {
    pub(crate) classes: Vec<Class>,
    pub(crate) class_of: Vec<u8>,
    pub(crate) synapse: f32,
    pub(crate) input: f32,
    /// Seconds per tick.
    pub(crate) tick_seconds: f64,
    /// The `poisson` drives: each role's neurons and the rate in Hz.
    pub(crate) constant_drives: Vec<(Vec<u32>, f64)>,
    /// The neurons that have a Poisson stream, ascending.
    pub(crate) stream_neurons: Vec<u32>,
    pub(crate) membrane: Vec<f32>,
    pub(crate) conductance: Vec<f32>,
    pub(crate) refractory: Vec<u8>,
    /// Pending conductance, slot-major: slot `s` is `ring[s·N .. (s+1)·N]`.
    pub(crate) ring: Vec<f32>,
    pub(crate) streams: Vec<XorShift32>,
}

/// A brain's kernel and its state.
#[derive(Debug)]
pub(crate) enum Dynamics {
    Lif1ms(Lif1msState),
    ExpDelay(ExpDelayState),
}

/// What a batch hands the kernel besides its state.
pub(crate) struct Batch<'a> {
    pub(crate) conn: &'a Connectome,
    pub(crate) shards: &'a [(u32, u32)],
    /// `(neuron, drive)` per retina column, profile order.
    pub(crate) columns: &'a [(u32, f32)],
    pub(crate) stim: &'a [StimChannel<'a>],
    pub(crate) plastic: Option<&'a PlasticIndex>,
    pub(crate) gains: &'a [f32],
    /// The brain tick of the batch's first tick.
    pub(crate) first_tick: u64,
}

impl Dynamics {
    /// The state of a fresh brain of `profile` on `conn` with agent seed `seed`.
    pub(crate) fn new(profile: &Profile, conn: &Connectome, seed: i32) -> Self {
        let n = conn.neurons() as usize;
        match &profile.kernel {
            Kernel::Lif1ms(k) => {
                // `lif-1ms-v1` reads rows from the packed edges: built here, once for every
                // brain sharing `conn`, rather than in a tick.
                let _ = conn.packed();
                Dynamics::Lif1ms(Lif1msState::new(k, n, seed))
            }
            Kernel::ExpDelay(k) => Dynamics::ExpDelay(ExpDelayState::new(k, profile, n, seed)),
        }
    }

    /// The membrane potentials.
    pub(crate) fn membrane(&self) -> &[f32] {
        match self {
            Dynamics::Lif1ms(s) => &s.membrane,
            Dynamics::ExpDelay(s) => &s.membrane,
        }
    }

    /// Ticks per second, for instantaneous rates (1,000 for `lif-1ms-v1`).
    pub(crate) fn ticks_per_second(&self) -> f64 {
        match self {
            Dynamics::Lif1ms(_) => 1000.0,
            Dynamics::ExpDelay(s) => 1.0 / s.tick_seconds,
        }
    }

    /// Runs `ticks` ticks; returns the random draws they took.
    pub(crate) fn run(
        &mut self,
        batch: &Batch<'_>,
        ticks: u64,
        observe: &mut dyn FnMut(u64, &[u32]),
    ) -> u64 {
        match self {
            Dynamics::Lif1ms(s) => s.run(batch, ticks, observe),
            Dynamics::ExpDelay(s) => s.run(batch, ticks, observe),
        }
    }

    /// The snapshot's noise-state field (0 for a kernel without one stream).
    pub(crate) fn noise_state(&self) -> u32 {
        match self {
            Dynamics::Lif1ms(s) => s.noise.state() as u32,
            Dynamics::ExpDelay(_) => 0,
        }
    }

    /// Writes the per-neuron state.
    pub(crate) fn write(&self, w: &mut Writer) {
        match self {
            Dynamics::Lif1ms(s) => {
                w.f32s(&s.membrane);
                w.len(s.refractory.len());
                w.bytes(&s.refractory);
            }
            Dynamics::ExpDelay(s) => {
                w.f32s(&s.membrane);
                w.f32s(&s.conductance);
                w.len(s.refractory.len());
                w.bytes(&s.refractory);
                w.f32s(&s.ring);
                w.len(s.streams.len());
                s.streams.iter().for_each(|r| w.u32(r.state() as u32));
            }
        }
    }

    /// Reads what [`Dynamics::write`] wrote, with the noise-state field, into a new state, and
    /// checks it is one the kernel reaches: every value finite, every refractory counter within
    /// its neuron's refractory period, every generator state nonzero (a derived stream never is
    /// zero, and xorshift never reaches zero from a nonzero state). `self` is unchanged.
    pub(crate) fn read(&self, noise: u32, r: &mut Reader<'_>) -> Result<Self, BrainError> {
        match self {
            Dynamics::Lif1ms(s) => {
                let n = s.membrane.len();
                let membrane = r.f32s(n, "neurons")?;
                r.len(n, "neurons")?;
                let refractory = r.take(n)?.to_vec();
                finite(&membrane, "a membrane potential")?;
                if let Some(i) = refractory.iter().position(|&v| v > s.params.refractory) {
                    return Err(refractory_too_long(i, refractory[i], s.params.refractory));
                }
                if noise == 0 {
                    return Err(BrainError::out_of_range("the noise stream's state is 0"));
                }
                Ok(Dynamics::Lif1ms(Lif1msState {
                    params: s.params,
                    baseline: s.baseline.clone(),
                    membrane,
                    refractory,
                    noise: XorShift32::new(noise as i32),
                }))
            }
            Dynamics::ExpDelay(s) => {
                let n = s.membrane.len();
                let membrane = r.f32s(n, "neurons")?;
                let conductance = r.f32s(n, "neurons")?;
                r.len(n, "neurons")?;
                let refractory = r.take(n)?.to_vec();
                let ring = r.f32s(s.ring.len(), "delay ring cells")?;
                r.len(s.streams.len(), "Poisson streams")?;
                let streams = (0..s.streams.len())
                    .map(|_| r.u32().map(|v| XorShift32::new(v as i32)))
                    .collect::<Result<Vec<_>, _>>()?;
                finite(&membrane, "a membrane potential")?;
                finite(&conductance, "a conductance")?;
                finite(&ring, "a pending conductance")?;
                for (i, (&v, &class)) in refractory.iter().zip(&s.class_of).enumerate() {
                    let period = s.classes[usize::from(class)].refractory;
                    if v > period {
                        return Err(refractory_too_long(i, v, period));
                    }
                }
                if noise != 0 {
                    return Err(BrainError::out_of_range(format!(
                        "the noise-state field is {noise}; this kernel keeps none (0)"
                    )));
                }
                if let Some(i) = streams.iter().position(|g| g.state() == 0) {
                    return Err(BrainError::out_of_range(format!(
                        "the state of Poisson stream {i} is 0"
                    )));
                }
                Ok(Dynamics::ExpDelay(ExpDelayState {
                    classes: s.classes.clone(),
                    class_of: s.class_of.clone(),
                    constant_drives: s.constant_drives.clone(),
                    stream_neurons: s.stream_neurons.clone(),
                    membrane,
                    conductance,
                    refractory,
                    ring,
                    streams,
                    ..*s
                }))
            }
        }
    }
}

/// Refuses the first value of `values` that is not finite (`what` names one value).
pub(crate) fn finite(values: &[f32], what: &str) -> Result<(), BrainError> {
    match values.iter().position(|v| !v.is_finite()) {
        Some(i) => Err(BrainError::out_of_range(format!(
            "{what} (index {i}) is {}",
            values[i]
        ))),
        None => Ok(()),
    }
}

fn refractory_too_long(neuron: usize, count: u8, period: u8) -> BrainError {
    BrainError::out_of_range(format!(
        "neuron {neuron}'s refractory counter is {count}, beyond its period of {period} ticks"
    ))
}

impl Lif1msState {
    fn new(k: &Lif1msParams, n: usize, seed: i32) -> Self {
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
        Self {
            params,
            baseline,
            membrane: vec![0.0; n],
            refractory: vec![0; n],
            noise: XorShift32::stream(seed, rng::NOISE),
        }
    }

    fn run(&mut self, batch: &Batch<'_>, ticks: u64, observe: &mut dyn FnMut(u64, &[u32])) -> u64 {
        let inputs = kernel::Inputs {
            conn: batch.conn,
            params: self.params,
            columns: batch.columns,
            stim: batch.stim,
            plastic: batch.plastic,
            gains: batch.gains,
        };
        let membrane = split_mut(&mut self.membrane, batch.shards);
        let refractory = split_mut(&mut self.refractory, batch.shards);
        let mut baseline = &self.baseline[..];
        let mut shards = Vec::with_capacity(batch.shards.len());
        for ((&(lo, hi), m), r) in batch.shards.iter().zip(membrane).zip(refractory) {
            let (b, rest) = baseline.split_at((hi - lo) as usize);
            baseline = rest;
            shards.push(Lif1msTick {
                shard: kernel::Shard {
                    start: lo,
                    membrane: m,
                    refractory: r,
                    baseline: b,
                },
                inputs: &inputs,
                rng: self.noise,
            });
        }
        if let Some(first) = threads::run(shards, ticks, observe) {
            self.noise = first.rng;
        }
        ticks * u64::from(self.params.kicks)
    }
}

impl ExpDelayState {
    fn new(k: &ExpDelayParams, profile: &Profile, n: usize, seed: i32) -> Self {
        let classes: Vec<Class> = k.classes().map(|c| Class::new(k, c)).collect();
        let mut class_of = vec![0u8; n];
        for (i, o) in k.overrides.iter().enumerate() {
            for &neuron in profile.role(&o.role).map_or(&[][..], |r| &r.neurons[..]) {
                // At most 255 overrides (validation), so the class fits a byte.
                class_of[neuron as usize] = (i + 1) as u8;
            }
        }
        let mut stream_neurons: Vec<u32> = k
            .poisson
            .iter()
            .map(|p| &p.role)
            .chain(profile.stimuli.iter().map(|s| &s.role))
            .filter_map(|id| profile.role(id))
            .flat_map(|r| r.neurons.iter().copied())
            .chain(profile.retina.columns().map(|(_, c)| c[0]))
            .collect();
        stream_neurons.sort_unstable();
        stream_neurons.dedup();
        let streams = stream_neurons
            .iter()
            .map(|i| XorShift32::stream(seed, &format!("{}{i}", rng::POISSON_PREFIX)))
            .collect();
        let rest: Vec<f32> = class_of
            .iter()
            .map(|&c| classes[usize::from(c)].rest)
            .collect();
        let slots = exp_delay::Inputs::slots(&classes);
        let constant_drives = k
            .poisson
            .iter()
            .map(|p| {
                let neurons = profile
                    .role(&p.role)
                    .map_or(Vec::new(), |r| r.neurons.clone());
                (neurons, p.rate_hz)
            })
            .collect();
        Self {
            constant_drives,
            synapse: k.synapse_mv as f32,
            input: k.input_mv as f32,
            tick_seconds: f64::from(k.tick_ns) / 1e9,
            membrane: rest,
            conductance: vec![0.0; n],
            refractory: vec![0; n],
            ring: vec![0.0; slots * n],
            classes,
            class_of,
            stream_neurons,
            streams,
        }
    }

    /// The batch's drives, drive order: the `poisson` drives (`rates` per drive, its role
    /// ascending), the retina columns (profile order) and the running stimuli.
    fn drives(&self, batch: &Batch<'_>) -> Vec<Drive> {
        let stream = |neuron: u32| self.stream_neurons.partition_point(|&s| s < neuron) as u32;
        let mut drives = Vec::new();
        let mut push = |neuron: u32, rate: f64, until: u64| {
            let probability = rate * self.tick_seconds;
            if probability > 0.0 {
                drives.push(Drive {
                    neuron,
                    stream: stream(neuron),
                    probability,
                    until,
                });
            }
        };
        for (neurons, rate) in &self.constant_drives {
            neurons.iter().for_each(|&i| push(i, *rate, u64::MAX));
        }
        for &(neuron, drive) in batch.columns {
            push(neuron, f64::from(drive), u64::MAX);
        }
        for ch in batch.stim {
            if ch.remaining > 0 {
                let rate = f64::from(ch.drive);
                ch.neurons.iter().for_each(|&i| push(i, rate, ch.remaining));
            }
        }
        drives
    }

    fn run(&mut self, batch: &Batch<'_>, ticks: u64, observe: &mut dyn FnMut(u64, &[u32])) -> u64 {
        let drives = self.drives(batch);
        let draws = drives.iter().map(|d| d.until.min(ticks)).sum();
        let inputs = exp_delay::Inputs {
            conn: batch.conn,
            classes: &self.classes,
            class_of: &self.class_of,
            synapse: self.synapse,
            input: self.input,
            first_tick: batch.first_tick,
        };
        let n = self.membrane.len();
        let mut rings: Vec<Vec<&mut [f32]>> = batch.shards.iter().map(|_| Vec::new()).collect();
        for slot in self.ring.chunks_mut(n.max(1)) {
            for (ring, piece) in rings.iter_mut().zip(split_mut(slot, batch.shards)) {
                ring.push(piece);
            }
        }
        let membrane = split_mut(&mut self.membrane, batch.shards);
        let conductance = split_mut(&mut self.conductance, batch.shards);
        let refractory = split_mut(&mut self.refractory, batch.shards);
        let mut streams = &mut self.streams[..];
        let mut first_stream = 0usize;
        let mut shards = Vec::with_capacity(batch.shards.len());
        let parts = membrane
            .into_iter()
            .zip(conductance)
            .zip(refractory)
            .zip(rings);
        for (&(lo, hi), (((m, g), r), ring)) in batch.shards.iter().zip(parts) {
            let count = self.stream_neurons[first_stream..].partition_point(|&s| s < hi);
            let (own, rest) = streams.split_at_mut(count);
            streams = rest;
            let drives = drives
                .iter()
                .filter(|d| (lo..hi).contains(&d.neuron))
                .map(|d| Drive {
                    stream: d.stream - first_stream as u32,
                    ..*d
                })
                .collect();
            first_stream += count;
            shards.push(exp_delay::Shard {
                inputs: &inputs,
                start: lo,
                membrane: m,
                conductance: g,
                refractory: r,
                ring,
                streams: own,
                drives,
                active: exp_delay::Active::default(),
            });
        }
        threads::run(shards, ticks, observe);
        draws
    }
}
