//! The tick of `lif-1ms-v1` over index-range shards (driven by [`crate::threads`], so its
//! results do not depend on the thread count).
//!
//! Every neuron belongs to exactly one shard (a contiguous index range). A shard owns its
//! neurons' membrane and refractory counters and performs every addition to them, in the same
//! order as a single shard would: noise kicks in draw order (every shard draws the whole
//! sequence from its own copy of the noise stream and applies the kicks that land in its range),
//! retina columns in profile order, stimuli in profile order, the sweep in index order, then
//! spikes in ascending source order and each row in slot order, keeping only the targets in its
//! range. Spike lists are concatenated in shard order, which is ascending index order. So the
//! membrane after any number of ticks is bit-identical for 1, 2, ..., n shards. The work that is
//! not per-neuron (rates, plasticity observation, spike stamps) runs on shard 0's thread over the
//! whole spike list.

use crate::connectome::Connectome;
use crate::plasticity::PlasticIndex;
use crate::rng::XorShift32;
use crate::threads::ShardTick;

/// The kernel constants in their arithmetic types.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Params {
    pub(crate) decay: f32,
    pub(crate) threshold: f32,
    pub(crate) refractory: u8,
    pub(crate) scale: f32,
    pub(crate) floor: f32,
    pub(crate) kicks: u32,
    pub(crate) kick: f32,
}

/// A stimulus channel as the tick sees it.
#[derive(Debug)]
pub(crate) struct StimChannel<'a> {
    pub(crate) neurons: &'a [u32],
    pub(crate) drive: f32,
    /// Ticks still to run at the start of this batch.
    pub(crate) remaining: u64,
}

/// Everything a tick reads and nobody writes during a batch.
pub(crate) struct Inputs<'a> {
    pub(crate) conn: &'a Connectome,
    pub(crate) params: Params,
    /// `(neuron, drive)` per retina column, profile order.
    pub(crate) columns: &'a [(u32, f32)],
    pub(crate) stim: &'a [StimChannel<'a>],
    pub(crate) plastic: Option<&'a PlasticIndex>,
    pub(crate) gains: &'a [f32],
}

/// One contiguous index range of neurons and its state.
pub(crate) struct Shard<'a> {
    pub(crate) start: u32,
    pub(crate) membrane: &'a mut [f32],
    pub(crate) refractory: &'a mut [u8],
    pub(crate) baseline: &'a [f32],
}

impl Shard<'_> {
    fn end(&self) -> u32 {
        self.start + self.membrane.len() as u32
    }

    /// Noise, retina drive, stimulation and the sweep of tick `j` of the batch; pushes this
    /// shard's spikes (global indices, ascending) to `spikes`.
    fn integrate(&mut self, inp: &Inputs<'_>, j: u64, rng: &mut XorShift32, spikes: &mut Vec<u32>) {
        let p = &inp.params;
        let n = inp.conn.neurons();
        let start = self.start;
        let len = self.membrane.len() as u32;
        for _ in 0..p.kicks {
            let k = rng.below(n).wrapping_sub(start);
            if k < len {
                let m = &mut self.membrane[k as usize];
                *m += p.kick;
            }
        }
        for &(neuron, drive) in inp.columns {
            let k = neuron.wrapping_sub(start);
            if k < len {
                let m = &mut self.membrane[k as usize];
                *m += drive;
            }
        }
        for ch in inp.stim {
            if ch.remaining > j {
                let lo = ch.neurons.partition_point(|&x| x < start);
                let hi = ch.neurons.partition_point(|&x| x < start + len);
                for &neuron in &ch.neurons[lo..hi] {
                    let m = &mut self.membrane[(neuron - start) as usize];
                    *m += ch.drive;
                }
            }
        }
        sweep(
            self.membrane,
            self.refractory,
            self.baseline,
            p,
            start,
            spikes,
        );
    }

    /// Delivers every spike of the tick to the targets in this shard.
    fn propagate(&mut self, inp: &Inputs<'_>, spikes: &[u32], whole: bool) {
        let c = inp.conn;
        let scale = inp.params.scale;
        let floor = inp.params.floor;
        let (start, end) = (self.start, self.end());
        let membrane = &mut *self.membrane;
        // Row bounds first (independent loads, so they overlap). Then spikes go in batches: before
        // a batch is delivered, the first and last target and weight of every row of the next
        // batch are read back to back (`black_box` keeps the otherwise unused reads), so their
        // cache misses overlap each other and the current batch's work. Reads change no result.
        const BATCH: usize = 16;
        let bounds: Vec<(u32, u32)> = spikes
            .iter()
            .map(|&s| (c.indptr[s as usize], c.indptr[s as usize + 1]))
            .collect();
        let touch = |rows: &[(u32, u32)]| {
            for &(a, b) in rows {
                if a < b {
                    let (a, b) = (a as usize, b as usize - 1);
                    std::hint::black_box((c.targets[a], c.targets[b], c.weights[a], c.weights[b]));
                }
            }
        };
        touch(&bounds[..BATCH.min(bounds.len())]);
        for (i, &s) in spikes.iter().enumerate() {
            if i % BATCH == 0 {
                let next = (i + BATCH).min(bounds.len());
                touch(&bounds[next..(next + BATCH).min(bounds.len())]);
            }
            let row = bounds[i].0 as usize..bounds[i].1 as usize;
            let mut targets = &c.targets[row.clone()];
            let mut weights = &c.weights[row.clone()];
            let mut first_edge = row.start;
            if !whole {
                let lo = targets.partition_point(|&t| t < start);
                let hi = targets.partition_point(|&t| t < end);
                targets = &targets[lo..hi];
                weights = &weights[lo..hi];
                first_edge += lo;
            }
            match inp.plastic.and_then(|pi| pi.source_slots(s)) {
                None => {
                    for (&t, &w) in targets.iter().zip(weights) {
                        let m = &mut membrane[(t - start) as usize];
                        *m = (*m + f32::from(w) * scale).max(floor);
                    }
                }
                Some(slots) => {
                    let pi = inp.plastic.map(|p| &p.slot_edge);
                    let slot_edge = pi.map_or(&[][..], |v| &v[..]);
                    let mut slot = slots.start
                        + slot_edge[slots.clone()].partition_point(|&e| (e as usize) < first_edge);
                    for (k, (&t, &w)) in targets.iter().zip(weights).enumerate() {
                        let edge = first_edge + k;
                        let gain = if slot < slots.end && slot_edge[slot] as usize == edge {
                            slot += 1;
                            inp.gains[slot - 1]
                        } else {
                            1.0
                        };
                        let m = &mut membrane[(t - start) as usize];
                        *m = (*m + f32::from(w) * gain * scale).max(floor);
                    }
                }
            }
        }
    }
}

/// The sweep over one shard, in index order. A spiking neuron resets to 0 and its refractory
/// counter to `R`; every other counter only decreases, so after the sweep `r == R` exactly for
/// this tick's spikes, which a second, branch-light pass collects.
#[inline]
fn sweep(
    membrane: &mut [f32],
    refractory: &mut [u8],
    baseline: &[f32],
    p: &Params,
    start: u32,
    spikes: &mut Vec<u32>,
) {
    let (decay, threshold, r_max) = (p.decay, p.threshold, p.refractory);
    let n = membrane.len().min(refractory.len()).min(baseline.len());
    let (membrane, refractory, baseline) =
        (&mut membrane[..n], &mut refractory[..n], &baseline[..n]);
    for ((m, r), &b) in membrane.iter_mut().zip(refractory.iter_mut()).zip(baseline) {
        let decayed = *m * decay;
        let v = decayed + b;
        let resting = *r == 0;
        let fire = resting & (v >= threshold);
        *m = if fire {
            0.0
        } else if resting {
            v
        } else {
            decayed
        };
        *r = if fire { r_max } else { r.saturating_sub(1) };
    }
    const BLOCK: usize = 32;
    for (bi, block) in refractory.chunks(BLOCK).enumerate() {
        let mut mask = 0u32;
        for (k, &r) in block.iter().enumerate() {
            mask |= u32::from(r == r_max) << k;
        }
        while mask != 0 {
            let k = mask.trailing_zeros() as usize;
            spikes.push(start + (bi * BLOCK + k) as u32);
            mask &= mask - 1;
        }
    }
}

/// A shard of `lif-1ms-v1` with what its tick reads: the batch's inputs and its own copy of the
/// noise stream (every shard draws the whole sequence).
pub(crate) struct Lif1msTick<'a> {
    pub(crate) shard: Shard<'a>,
    pub(crate) inputs: &'a Inputs<'a>,
    pub(crate) rng: XorShift32,
}

impl ShardTick for Lif1msTick<'_> {
    fn integrate(&mut self, j: u64, spikes: &mut Vec<u32>) {
        self.shard.integrate(self.inputs, j, &mut self.rng, spikes);
    }

    fn propagate(&mut self, _j: u64, spikes: &[u32], whole: bool) {
        self.shard.propagate(self.inputs, spikes, whole);
    }
}
