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

mod deliver;
mod sweep;

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
        let cells = sweep::Cells {
            membrane: self.membrane,
            refractory: self.refractory,
            baseline: self.baseline,
        };
        sweep::sweep(cells, p, start, spikes);
    }

    /// Delivers every spike of the tick to the targets in this shard ([`deliver`]).
    fn propagate(&mut self, inp: &Inputs<'_>, spikes: &[u32], whole: bool) {
        let rows = deliver::Rows {
            conn: inp.conn,
            spikes,
            scale: inp.params.scale,
            floor: inp.params.floor,
            plastic: inp.plastic,
            gains: inp.gains,
            packed: inp.conn.packed(),
        };
        deliver::deliver(&rows, self.membrane, self.start, whole);
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
