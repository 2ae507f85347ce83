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
//!
//! **Neurons at a fixed point are skipped, exactly.** A neuron with `g = +0`, `r = 0` and
//! `v0 + ((v − v0)·a + g·c) = v` bit for bit (and not above `vth`) is left unchanged by steps
//! 1–3 when its ring cell is `+0`: `v' = v`, `g' = (+0)·b + (+0) = +0`, `r` stays 0, the cell
//! stays `+0`. Rest is such a point (`v − v0 = +0`, `(+0)·a + (+0)·c = ±0`, `v0 + ±0 = v0`),
//! and so is every `v` within about `ulp(v0)/(2(1 − a))` of it, where the f32 rounding of the
//! decay no longer moves `v`. So each shard keeps an ascending list of the neurons it updates
//! (`Active`): after its update a neuron at a fixed point leaves the list unless it is driven
//! (or its class's rest is no fixed point); a delivery into the ring records its target in that
//! slot's landing list, merged into the list on the tick the slot is read. The list is derived
//! from the state at the start of every batch (every neuron not at a fixed point, every driven
//! neuron, every nonzero ring cell's landing), so snapshots hold nothing more and a skipped
//! update is the identity: spikes and state are bit-identical to updating every neuron. While
//! more than a fifth of a shard is on its list, the shard sweeps every neuron instead (the
//! same updates; the list then touches every cache line anyway; `sweep` does it 16 neurons at
//! a time in packed f32 arithmetic, bit for bit the same, taking every ring cell for `+0`, and
//! the neurons on the slot's landing list then have their conductance put right) and rebuilds
//! the list from the state every 256 ticks to see whether it has become short again.
//!
//! This module knows nothing of profiles' JSON, rates, snapshots or threads.

use crate::connectome::Connectome;
use crate::profile::{ExpDelayParams, NeuronParams};
use crate::rng::XorShift32;
use crate::threads::ShardTick;

mod sweep;

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
    /// Whether rest (`v = v0`, `g = 0`, not refractory) is a fixed point of the tick without
    /// input, so that a neuron of this class at rest may be skipped (false when `v0 > vth`).
    pub(crate) rest_is_fixed: bool,
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
        let mut class = Self {
            membrane_decay: a as f32,
            conductance_decay: b as f32,
            coupling: c as f32,
            rest: n.rest_mv as f32,
            reset: n.reset_mv as f32,
            threshold: n.threshold_mv as f32,
            refractory: k.ticks(n.refractory_ms).min(255) as u8,
            delay: k.ticks(n.delay_ms).clamp(1, 255) as u8,
            rest_is_fixed: false,
        };
        class.rest_is_fixed = class.at_fixed_point(class.rest, 0.0, 0);
        class
    }

    /// The membrane after one tick without input and outside refractoriness (step 3).
    #[inline(always)]
    fn integrated(&self, v: f32, g: f32) -> f32 {
        self.rest + ((v - self.rest) * self.membrane_decay + g * self.coupling)
    }

    /// Whether a tick without input leaves `(v, g, r)` bit for bit as it is.
    pub(crate) fn at_fixed_point(&self, v: f32, g: f32, r: u8) -> bool {
        if r != 0 || g.to_bits() != 0 {
            return false;
        }
        let next = self.integrated(v, g);
        next.to_bits() == v.to_bits()
            && next.partial_cmp(&self.threshold) != Some(std::cmp::Ordering::Greater)
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

/// The neurons a shard updates (local indices), and the deliveries that will add to it.
#[derive(Debug, Default)]
pub(crate) struct Active {
    /// Derived from the shard's state (on the batch's first tick).
    ready: bool,
    /// The neurons to update this tick, ascending.
    list: Vec<u32>,
    /// Scratch for the next list.
    next: Vec<u32>,
    /// Per ring slot, the targets delivered into it since it was last read (unordered, repeats).
    landing: Vec<Vec<u32>>,
    /// Scratch for the sweep: each neuron whose input lands this tick, once, with its
    /// conductance and refractory counter as they were before the sweep.
    before: Vec<(u32, f32, u8)>,
    /// Scratch for the sweep: one bit per neuron of the shard, set while it is in `before`.
    seen: Vec<u64>,
    /// Neurons never dropped: driven ones, and those of a class whose rest is no fixed point.
    pinned: Vec<bool>,
    /// Every neuron is updated (the list is too long to pay for itself), by the plain sweep.
    dense: bool,
}

/// A shard sweeps every neuron while more than one in `DENSE_SHARE` is on its list: the list
/// then touches every cache line of the state anyway, and the plain sweep is faster.
const DENSE_SHARE: usize = 5;

/// While sweeping every neuron, the list is rebuilt from the state every this many ticks.
const RESCAN_TICKS: u64 = 256;

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
    /// Which neurons this shard updates; built from the state on the first tick.
    pub(crate) active: Active,
}

/// Merges two ascending lists into `out` (cleared first), each value once.
fn merge_into(a: &[u32], b: &[u32], out: &mut Vec<u32>) {
    out.clear();
    out.reserve(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        out.push(x.min(y));
        i += usize::from(x <= y);
        j += usize::from(y <= x);
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
}

impl Shard<'_> {
    fn end(&self) -> u32 {
        self.start + self.membrane.len() as u32
    }

    fn class(&self, k: usize) -> &Class {
        let inp = self.inputs;
        &inp.classes[usize::from(inp.class_of[self.start as usize + k])]
    }

    /// Derives the active list and landing lists from the state (see the module documentation).
    fn activate(&mut self) {
        let n = self.membrane.len();
        let mut pinned = vec![false; n];
        for d in &self.drives {
            pinned[(d.neuron - self.start) as usize] = true;
        }
        for (k, pin) in pinned.iter_mut().enumerate() {
            *pin |= !self.class(k).rest_is_fixed;
        }
        let landing = self
            .ring
            .iter()
            .map(|slot| {
                let cells = slot.iter().enumerate();
                cells
                    .filter(|(_, p)| p.to_bits() != 0)
                    .map(|(k, _)| k as u32)
                    .collect()
            })
            .collect();
        self.active = Active {
            ready: true,
            list: Vec::new(),
            next: Vec::new(),
            landing,
            before: Vec::new(),
            seen: vec![0; n.div_ceil(64)],
            pinned,
            dense: false,
        };
        self.rescan();
    }

    /// Rebuilds the list from the state: every pinned neuron and every one not at a fixed
    /// point; and chooses between the list and the plain sweep.
    fn rescan(&mut self) {
        let mut list = std::mem::take(&mut self.active.list);
        list.clear();
        for k in 0..self.membrane.len() {
            let fixed = self.class(k).at_fixed_point(
                self.membrane[k],
                self.conductance[k],
                self.refractory[k],
            );
            if self.active.pinned[k] || !fixed {
                list.push(k as u32);
            }
        }
        self.active.dense = list.len() * DENSE_SHARE > self.membrane.len();
        self.active.list = list;
    }

    /// Steps 1–3 for every neuron of the shard, ascending (the plain sweep). The sweep takes
    /// every ring cell for `+0`; the neurons on this slot's landing list (the only cells that
    /// can hold anything) then have their conductance put right from the state the sweep
    /// started with, and their cells are cleared. Of a slot's cells only those are read, a few
    /// hundred a tick in an active FAFB-sized brain against 138,639 in the whole slot.
    fn sweep_all(&mut self, slot: usize, spikes: &mut Vec<u32>) {
        let inp = self.inputs;
        let start = self.start as usize;
        let mut landing = std::mem::take(&mut self.active.landing[slot]);
        let mut before = std::mem::take(&mut self.active.before);
        before.clear();
        // Each landed neuron once (the list repeats a target that several spikes reached), in
        // the list's order: each neuron's correction reads and writes only its own cells.
        let seen = &mut self.active.seen;
        for &k in &landing {
            let (word, bit) = ((k / 64) as usize, 1u64 << (k % 64));
            if seen[word] & bit == 0 {
                seen[word] |= bit;
                let k = k as usize;
                before.push((k as u32, self.conductance[k], self.refractory[k]));
            }
        }
        let first_spike = spikes.len();
        let cells = sweep::Cells {
            classes: inp.classes,
            class_of: &inp.class_of[start..start + self.membrane.len()],
            membrane: self.membrane,
            conductance: self.conductance,
            refractory: self.refractory,
        };
        sweep::sweep(cells, self.start, spikes);
        let fired = &spikes[first_spike..];
        let pending = &mut *self.ring[slot];
        for &(k, g, r) in &before {
            seen[(k / 64) as usize] = 0;
            let spiked = fired.binary_search(&(self.start + k)).is_ok();
            let k = k as usize;
            let incoming = std::mem::replace(&mut pending[k], 0.0);
            let cl = &inp.classes[usize::from(inp.class_of[start + k])];
            if let Some(conductance) = sweep::landed(cl, g, r, spiked, incoming) {
                self.conductance[k] = conductance;
            }
        }
        landing.clear();
        self.active.landing[slot] = landing;
        self.active.before = before;
    }

    /// Steps 1–3 for local neuron `k`; whether it must be updated next tick.
    fn update(&mut self, k: usize, slot: usize, spikes: &mut Vec<u32>) -> bool {
        let cl = *self.class(k);
        let (v, g, r) = (
            &mut self.membrane[k],
            &mut self.conductance[k],
            &mut self.refractory[k],
        );
        if sweep::step(&cl, v, g, r, &mut self.ring[slot][k]) {
            spikes.push(self.start + k as u32);
        }
        self.active.pinned[k] || !cl.at_fixed_point(*v, *g, *r)
    }

    /// Steps 1–3 for the neurons on the list (after this slot's arrivals join it), ascending.
    fn integrate_listed(&mut self, slot: usize, spikes: &mut Vec<u32>) {
        // The neurons whose input lands now join the list.
        let mut landing = std::mem::take(&mut self.active.landing[slot]);
        if !landing.is_empty() {
            landing.sort_unstable();
            landing.dedup();
            let mut merged = std::mem::take(&mut self.active.next);
            merge_into(&self.active.list, &landing, &mut merged);
            self.active.next = std::mem::replace(&mut self.active.list, merged);
            landing.clear();
        }
        self.active.landing[slot] = landing;
        let list = std::mem::take(&mut self.active.list);
        let mut kept = std::mem::take(&mut self.active.next);
        kept.clear();
        for &k in &list {
            if self.update(k as usize, slot, spikes) {
                kept.push(k);
            }
        }
        self.active.list = kept;
        self.active.next = list;
        if self.active.list.len() * DENSE_SHARE > self.membrane.len() {
            self.active.dense = true;
        }
    }
}

impl ShardTick for Shard<'_> {
    fn integrate(&mut self, j: u64, spikes: &mut Vec<u32>) {
        if !self.active.ready {
            self.activate();
        }
        let inp = self.inputs;
        let slots = self.ring.len() as u64;
        let slot = ((inp.first_tick + j) % slots) as usize;
        let first_spike = spikes.len();
        if self.active.dense {
            self.sweep_all(slot, spikes);
            if j % RESCAN_TICKS == RESCAN_TICKS - 1 {
                self.rescan();
            }
        } else {
            self.integrate_listed(slot, spikes);
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
            let landing = &mut self.active.landing[slot];
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
                landing.push(t - start);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shiu_class() -> Class {
        Class {
            membrane_decay: libm::exp(-0.1 / 20.0) as f32,
            conductance_decay: libm::exp(-0.1 / 5.0) as f32,
            coupling: (5.0 / 15.0 * (libm::exp(-0.1 / 20.0) - libm::exp(-0.1 / 5.0))) as f32,
            rest: -52.0,
            reset: -52.0,
            threshold: -45.0,
            refractory: 22,
            delay: 18,
            rest_is_fixed: false,
        }
    }

    #[test]
    fn rest_is_a_fixed_point_of_the_shiu_tick_and_nothing_with_input_is() {
        let cl = shiu_class();
        // v0 + ((v0 − v0)·a + 0·c) is v0 exactly.
        assert_eq!(cl.integrated(-52.0, 0.0).to_bits(), (-52.0f32).to_bits());
        assert!(cl.at_fixed_point(-52.0, 0.0, 0));
        // One ulp above rest the decay rounds back to the same value: also a fixed point.
        let above = f32::from_bits((-52.0f32).to_bits() - 1);
        assert!(cl.at_fixed_point(above, 0.0, 0));
        // Far from rest, with conductance, or refractory: not.
        assert!(!cl.at_fixed_point(-50.0, 0.0, 0));
        assert!(!cl.at_fixed_point(-52.0, 1e-20, 0));
        assert!(
            !cl.at_fixed_point(-52.0, -0.0, 0),
            "-0 is not +0 bit for bit"
        );
        assert!(!cl.at_fixed_point(-52.0, 0.0, 1));
        // A rest above threshold fires from rest: no fixed point.
        let hot = Class {
            threshold: -60.0,
            ..cl
        };
        assert!(!hot.at_fixed_point(-52.0, 0.0, 0));
    }

    #[test]
    fn merging_keeps_order_and_drops_repeats() {
        let mut out = Vec::new();
        merge_into(&[1, 4, 9], &[0, 4, 5, 12], &mut out);
        assert_eq!(out, [0, 1, 4, 5, 9, 12]);
        merge_into(&[], &[3], &mut out);
        assert_eq!(out, [3]);
    }
}
