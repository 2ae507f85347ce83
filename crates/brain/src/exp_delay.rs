//! The tick of `lif-exp-delay-v1` (the Shiu et al. 2024 whole-brain model) over index-range
//! shards: exact integration of `dv/dt = (v0 − v + g)/τm`, `dg/dt = −g/τs`, both frozen while
//! refractory, a ring of pending conductance for the synaptic delay, and per-neuron Poisson
//! input from one seeded stream per driven neuron.
//!
//! A tick, for every neuron `i` of a shard in ascending order, then the Poisson drives, then
//! (after every shard has done that) the delivery of the tick's spikes:
//!
//! 1. `p = ring[t mod S][i]`, and that cell is cleared.
//! 2. If `r > 0`: `r −= 1`. If still `r > 0` the neuron is frozen: `v` and `g` keep their
//!    values and `p` is lost (Brian2 holds variables flagged `unless refractory` against
//!    synaptic input too).
//! 3. Otherwise `v' = v0 + ((v − v0)·a + g·c)`; if `v' > vth` it spikes: `v = v_reset`,
//!    `g = 0`, `r = R` (the pending `p` is lost, as Brian2's reset erases it); else `v = v'`,
//!    `g = g·b + p`, stored as 0 when `|g| < 1e-30`.
//! 4. Poisson drives, in drive order: for each drive of a neuron in the shard (active this
//!    tick, rate > 0), one draw `x` of the neuron's stream; an event when `x < rate·dt`; an
//!    event on a neuron that neither spiked this tick nor is refractory (`r = 0`) adds
//!    `inputMv` to `v`.
//! 5. Each spike `s` (ascending), each edge `(s → j, w)` in slot order, `j` in the shard:
//!    `ring[(t + D_s) mod S][j] += f32(w)·synapseMv`.
//!
//! `a = exp(−dt/τm)`, `b = exp(−dt/τs)`, `c = τs/(τm − τs)·(a − b)` (`dt/τ·a` when the time
//! constants are equal), computed in f64 with `libm` and rounded once to f32; the state is f32.
//! This module knows nothing of profiles' JSON, rates, snapshots or threads.

use crate::connectome::Connectome;
use crate::profile::{ExpDelayParams, NeuronParams};
use crate::rng::XorShift32;
use crate::threads::ShardTick;

/// A conductance (mV) below this after a tick's update is stored as 0 (its effect on the
/// membrane is below 1e-32 mV per tick; f32 turns subnormal under 1.2e-38).
pub(crate) const CONDUCTANCE_FLOOR: f32 = 1e-30;

/// One neuron class's constants in their arithmetic types.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Class {
    /// Membrane decay per tick `a`.
    pub(crate) membrane_decay: f32,
    /// Conductance decay per tick `b`.
    pub(crate) conductance_decay: f32,
    /// Membrane gained per tick per unit of conductance `c`.
    pub(crate) coupling: f32,
    pub(crate) rest: f32,
    pub(crate) reset: f32,
    pub(crate) threshold: f32,
    /// Ticks a spike freezes the neuron for, counting the spike's own tick (`R`).
    pub(crate) refractory: u8,
    /// Ticks from a spike to its delivery (`D`, at least 1).
    pub(crate) delay: u8,
}

impl Class {
    /// The class of `n` under the kernel's tick.
    pub(crate) fn new(k: &ExpDelayParams, n: &NeuronParams) -> Self {
        let dt_ms = f64::from(k.tick_ns) / 1e6;
        let a = libm::exp(-dt_ms / n.tau_membrane_ms);
        let b = libm::exp(-dt_ms / n.tau_synapse_ms);
        let c = if n.tau_membrane_ms == n.tau_synapse_ms {
            dt_ms / n.tau_membrane_ms * a
        } else {
            n.tau_synapse_ms / (n.tau_membrane_ms - n.tau_synapse_ms) * (a - b)
        };
        // Validation bounds both tick counts to 0..=255 (the delay to 1..=255).
        Self {
            membrane_decay: a as f32,
            conductance_decay: b as f32,
            coupling: c as f32,
            rest: n.rest_mv as f32,
            reset: n.reset_mv as f32,
            threshold: n.threshold_mv as f32,
            refractory: k.ticks(n.refractory_ms).min(255) as u8,
            delay: k.ticks(n.delay_ms).clamp(1, 255) as u8,
        }
    }
}

/// One Poisson drive on one neuron, as a batch sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Drive {
    pub(crate) neuron: u32,
    /// The neuron's stream, as an index into the shard's streams.
    pub(crate) stream: u32,
    /// The event probability per tick, `rate · dt` (more than 1 is always an event).
    pub(crate) probability: f64,
    /// Active for batch ticks `j < until`.
    pub(crate) until: u64,
}

/// What every shard reads and nobody writes during a batch.
pub(crate) struct Inputs<'a> {
    pub(crate) conn: &'a Connectome,
    pub(crate) classes: &'a [Class],
    /// The class of every neuron.
    pub(crate) class_of: &'a [u8],
    pub(crate) synapse: f32,
    pub(crate) input: f32,
    /// The brain tick of the batch's first tick.
    pub(crate) first_tick: u64,
}

impl Inputs<'_> {
    /// Ring slots: the longest delay plus one.
    pub(crate) fn slots(classes: &[Class]) -> usize {
        classes
            .iter()
            .map(|c| usize::from(c.delay))
            .max()
            .unwrap_or(1)
            + 1
    }
}

/// One contiguous index range of neurons, its state and its drives.
pub(crate) struct Shard<'a> {
    pub(crate) inputs: &'a Inputs<'a>,
    pub(crate) start: u32,
    pub(crate) membrane: &'a mut [f32],
    pub(crate) conductance: &'a mut [f32],
    pub(crate) refractory: &'a mut [u8],
    /// This range of every ring slot, slot order.
    pub(crate) ring: Vec<&'a mut [f32]>,
    /// The streams of the driven neurons in this range (ascending neuron).
    pub(crate) streams: &'a mut [XorShift32],
    /// The drives on this range, drive order.
    pub(crate) drives: Vec<Drive>,
}

impl Shard<'_> {
    fn end(&self) -> u32 {
        self.start + self.membrane.len() as u32
    }
}

impl ShardTick for Shard<'_> {
    fn integrate(&mut self, j: u64, spikes: &mut Vec<u32>) {
        let inp = self.inputs;
        let slots = self.ring.len() as u64;
        let slot = ((inp.first_tick + j) % slots) as usize;
        let first_spike = spikes.len();
        let start = self.start as usize;
        let class_of = &inp.class_of[start..start + self.membrane.len()];
        let pending = &mut *self.ring[slot];
        let cells = self
            .membrane
            .iter_mut()
            .zip(self.conductance.iter_mut())
            .zip(self.refractory.iter_mut())
            .zip(pending.iter_mut())
            .zip(class_of);
        for (k, ((((v, g), r), p), &class)) in cells.enumerate() {
            let incoming = std::mem::replace(p, 0.0);
            if *r > 0 {
                *r -= 1;
                if *r > 0 {
                    // Frozen: no integration, and the input that arrives is lost.
                    continue;
                }
            }
            let cl = &inp.classes[usize::from(class)];
            let next = cl.rest + ((*v - cl.rest) * cl.membrane_decay + *g * cl.coupling);
            if next > cl.threshold {
                *v = cl.reset;
                *g = 0.0;
                *r = cl.refractory;
                spikes.push(self.start + k as u32);
            } else {
                *v = next;
                let decayed = *g * cl.conductance_decay + incoming;
                // Flush to zero before f32 goes subnormal (slow on every CPU flysim targets).
                *g = if decayed.abs() < CONDUCTANCE_FLOOR {
                    0.0
                } else {
                    decayed
                };
            }
        }
        let fired = &spikes[first_spike..];
        for d in &self.drives {
            if d.until <= j {
                continue;
            }
            let x = self.streams[d.stream as usize].next_f64();
            let k = (d.neuron - self.start) as usize;
            if x < d.probability
                && self.refractory[k] == 0
                && fired.binary_search(&d.neuron).is_err()
            {
                self.membrane[k] += inp.input;
            }
        }
    }

    fn propagate(&mut self, j: u64, spikes: &[u32], whole: bool) {
        let inp = self.inputs;
        let c = inp.conn;
        let slots = self.ring.len() as u64;
        let (start, end) = (self.start, self.end());
        for &s in spikes {
            let delay = inp.classes[usize::from(inp.class_of[s as usize])].delay;
            let slot = ((inp.first_tick + j + u64::from(delay)) % slots) as usize;
            let pending = &mut *self.ring[slot];
            let row = c.indptr[s as usize] as usize..c.indptr[s as usize + 1] as usize;
            let mut targets = &c.targets[row.clone()];
            let mut weights = &c.weights[row];
            if !whole {
                let lo = targets.partition_point(|&t| t < start);
                let hi = targets.partition_point(|&t| t < end);
                targets = &targets[lo..hi];
                weights = &weights[lo..hi];
            }
            for (&t, &w) in targets.iter().zip(weights) {
                pending[(t - start) as usize] += f32::from(w) * inp.synapse;
            }
        }
    }
}
