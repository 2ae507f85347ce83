//! `rstdp-v1`: reward-modulated spike-timing-dependent plasticity on a declared plastic edge set,
//! with gains clamped to `[gainMin, gainMax]`.
//!
//! **The edge set.** Candidates are edges with positive weight, no self-edge, a source in
//! `preRole` and a target in `postRole`. They are ordered by weight (descending, edge index
//! ascending on ties), the first `maxEdges` are kept, and the kept edges are re-sorted by edge
//! index; an edge's position in that order is its *slot*. Stored weights never change: a slot
//! carries a gain (f32, starting at 1) that multiplies its weight at delivery.
//!
//! **Observation** (tick `t`, learning enabled, before this tick's spikes are stamped), for each
//! spike `s` in ascending order: first, if `s` is a plastic source, each of its slots in slot
//! order whose target last spiked `Δ` ticks ago with `0 < Δ <= windowTicks` gets the pair term
//! `antiCausal · exp(−Δ/pairTauMs)`; then, if `s` is a plastic target, each slot into `s` in slot
//! order whose source last spiked `Δ` ago gets `causal · exp(−Δ/pairTauMs)`. Adding a pair term
//! to slot `k` at tick `t`: `trace ← clamp(trace · exp(−(t − touched)/traceTauMs) + pair, −1, 1)`,
//! `touched ← t`. The spike stamps of plastic sources and targets are kept whenever the profile
//! declares plasticity, learning on or off.
//!
//! **Reinforcement** with reward `R` (learning enabled, `R` finite and non-zero): `m = tanh(R)`;
//! for every slot, `trace` is first decayed to the current tick as above (and stored), then
//! `gain ← clamp(gain + learningRate · m · trace − gainDecay · (gain − 1), gainMin, gainMax)`.
//! Each slot counts one update; a slot whose gain bits changed counts one change.
//!
//! Arithmetic here is f64 (inputs widened exactly from their f32 storage), rounded to f32 once
//! at each store; `exp` and `tanh` are `libm`'s. `exp(−k/τ)` for integer `k` is tabulated from
//! `libm::exp` (pair terms for `k <= windowTicks`, trace decay for gaps below 1024 ticks), which
//! returns the same bits as calling it.

use std::ops::Range;

use crate::connectome::Connectome;
use crate::profile::Plasticity;

/// Sentinel for "never spiked".
pub(crate) const NEVER: i64 = i64::MIN;

/// The static plastic edge set and its lookup tables.
#[derive(Debug, Clone)]
pub(crate) struct PlasticIndex {
    /// Edge index of each slot, ascending.
    pub(crate) slot_edge: Vec<u32>,
    /// `(target, slot)` sorted, for the slots into a target.
    in_slots: Vec<(u32, u32)>,
    /// Bitsets of plastic sources and targets, with their rank tables.
    is_src: Ranked,
    is_tgt: Ranked,
    /// Start of the slots of the `k`-th plastic source (ascending), plus the end.
    src_start: Vec<u32>,
    /// Start in `in_slots` of the `k`-th plastic target, plus the end.
    tgt_start: Vec<u32>,
    /// Plastic neurons (sources and targets): the index space of the spike stamps.
    neurons: Ranked,
    /// Stamp index of each slot's source and target.
    slot_src_k: Vec<u32>,
    slot_tgt_k: Vec<u32>,
}

/// A bitset with the number of set bits before each word: `rank(i)` is O(1).
#[derive(Debug, Clone)]
pub(crate) struct Ranked {
    words: Vec<u64>,
    before: Vec<u32>,
}

impl Ranked {
    fn new(n: usize, members: impl Iterator<Item = u32>) -> Self {
        let mut words = vec![0u64; n.div_ceil(64)];
        for i in members {
            words[(i / 64) as usize] |= 1 << (i % 64);
        }
        let mut before = Vec::with_capacity(words.len());
        let mut acc = 0u32;
        for w in &words {
            before.push(acc);
            acc += w.count_ones();
        }
        Self { words, before }
    }

    /// `Some(number of members below i)` when `i` is a member.
    #[inline]
    fn rank(&self, i: u32) -> Option<usize> {
        let w = *self.words.get((i / 64) as usize)?;
        let bit = i % 64;
        if w >> bit & 1 == 0 {
            return None;
        }
        let below = (w & ((1u64 << bit) - 1)).count_ones();
        Some((self.before[(i / 64) as usize] + below) as usize)
    }

    /// Members.
    fn count(&self) -> usize {
        self.before.last().copied().unwrap_or(0) as usize
            + self.words.last().map_or(0, |w| w.count_ones() as usize)
    }
}

/// Starts of the runs of equal keys in a sorted list, plus its length.
fn run_starts(keys: impl Iterator<Item = u32>) -> Vec<u32> {
    let mut starts = Vec::new();
    let mut last = None;
    let mut len = 0u32;
    for k in keys {
        if last != Some(k) {
            starts.push(len);
            last = Some(k);
        }
        len += 1;
    }
    starts.push(len);
    starts
}

impl PlasticIndex {
    /// Selects the plastic edges of `c` (see the module documentation).
    pub(crate) fn select(c: &Connectome, pre: &[u32], post: &[u32], max_edges: u32) -> Self {
        let n = c.neurons() as usize;
        let mut in_post = vec![false; n];
        for &q in post {
            in_post[q as usize] = true;
        }
        let mut candidates: Vec<(i16, u32, u32, u32)> = Vec::new();
        for &p in pre {
            for e in c.row(p) {
                let (t, w) = (c.targets[e], c.weights[e]);
                if w > 0 && t != p && in_post[t as usize] {
                    candidates.push((w, e as u32, p, t));
                }
            }
        }
        candidates.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        candidates.truncate(max_edges as usize);
        candidates.sort_by_key(|c| c.1);
        let mut in_slots: Vec<(u32, u32)> = candidates
            .iter()
            .enumerate()
            .map(|(slot, c)| (c.3, slot as u32))
            .collect();
        in_slots.sort_unstable();
        let slot_src: Vec<u32> = candidates.iter().map(|c| c.2).collect();
        let mut members: Vec<u32> = candidates.iter().flat_map(|c| [c.2, c.3]).collect();
        members.sort_unstable();
        members.dedup();
        let neurons = Ranked::new(n, members.iter().copied());
        let stamp = |i: u32| neurons.rank(i).unwrap_or(0) as u32;
        let slot_src_k = candidates.iter().map(|c| stamp(c.2)).collect();
        let slot_tgt_k = candidates.iter().map(|c| stamp(c.3)).collect();
        Self {
            slot_src_k,
            slot_tgt_k,
            neurons,
            slot_edge: candidates.iter().map(|c| c.1).collect(),
            is_src: Ranked::new(n, slot_src.iter().copied()),
            is_tgt: Ranked::new(n, in_slots.iter().map(|e| e.0)),
            src_start: run_starts(slot_src.iter().copied()),
            tgt_start: run_starts(in_slots.iter().map(|e| e.0)),
            in_slots,
        }
    }

    /// Slots.
    pub(crate) fn len(&self) -> usize {
        self.slot_edge.len()
    }

    /// The slots leaving `s`, or `None` when it has none.
    #[inline]
    pub(crate) fn source_slots(&self, s: u32) -> Option<Range<usize>> {
        let k = self.is_src.rank(s)?;
        Some(self.src_start[k] as usize..self.src_start[k + 1] as usize)
    }

    /// The `(target, slot)` entries into `t`.
    fn target_slots(&self, t: u32) -> &[(u32, u32)] {
        match self.is_tgt.rank(t) {
            Some(k) => &self.in_slots[self.tgt_start[k] as usize..self.tgt_start[k + 1] as usize],
            None => &[],
        }
    }

    /// Plastic neurons (sources and targets), whose spike times are kept.
    pub(crate) fn neuron_count(&self) -> usize {
        self.neurons.count()
    }
}

/// The rule's constants.
#[derive(Debug, Clone)]
pub(crate) struct Rule {
    pub(crate) gain_min: f64,
    pub(crate) gain_max: f64,
    pub(crate) learning_rate: f64,
    pub(crate) gain_decay: f64,
    pub(crate) trace_tau: f64,
    pub(crate) window: i64,
    pub(crate) causal: f64,
    pub(crate) anti_causal: f64,
    /// `exp(−k/pairTauMs)` for `k` in `0..=windowTicks` (libm values, tabulated).
    pair_table: Vec<f64>,
    /// `exp(−k/traceTauMs)` for `k` in `0..TRACE_TABLE` (libm values, tabulated).
    trace_table: Vec<f64>,
}

/// Trace gaps below this are looked up; longer ones call `libm::exp` (same bits either way).
const TRACE_TABLE: u64 = 1024;

impl Rule {
    pub(crate) fn from_profile(p: &Plasticity) -> Self {
        Self {
            gain_min: p.gain_min,
            gain_max: p.gain_max,
            learning_rate: p.learning_rate,
            gain_decay: p.gain_decay,
            trace_tau: p.trace_tau_ms,
            window: i64::from(p.window_ticks),
            causal: p.causal,
            anti_causal: p.anti_causal,
            pair_table: (0..=p.window_ticks)
                .map(|k| libm::exp(-f64::from(k) / p.pair_tau_ms))
                .collect(),
            trace_table: (0..TRACE_TABLE)
                .map(|k| libm::exp(-(k as f64) / p.trace_tau_ms))
                .collect(),
        }
    }
}

/// The mutable learning state.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LearningState {
    pub(crate) gains: Vec<f32>,
    pub(crate) traces: Vec<f32>,
    pub(crate) touched: Vec<u64>,
    /// Last spike tick of every plastic neuron (ascending neuron order), or [`NEVER`].
    pub(crate) last_spike: Vec<i64>,
    pub(crate) updates: u64,
    pub(crate) changed: u64,
    pub(crate) signal: f64,
}

impl LearningState {
    pub(crate) fn new(slots: usize, neurons: usize) -> Self {
        Self {
            gains: vec![1.0; slots],
            traces: vec![0.0; slots],
            touched: vec![0; slots],
            last_spike: vec![NEVER; neurons],
            updates: 0,
            changed: 0,
            signal: 0.0,
        }
    }

    fn decayed(&self, rule: &Rule, slot: usize, t: u64) -> f64 {
        let gap = t.saturating_sub(self.touched[slot]);
        let factor = match rule.trace_table.get(gap as usize) {
            Some(&f) => f,
            None => libm::exp(-(gap as f64) / rule.trace_tau),
        };
        f64::from(self.traces[slot]) * factor
    }

    fn add_pair(&mut self, rule: &Rule, slot: usize, t: u64, pair: f64) {
        let v = (self.decayed(rule, slot, t) + pair).clamp(-1.0, 1.0);
        self.traces[slot] = v as f32;
        self.touched[slot] = t;
    }

    /// Observes the spikes of tick `t` (before they are stamped).
    pub(crate) fn observe(&mut self, idx: &PlasticIndex, rule: &Rule, t: u64, spikes: &[u32]) {
        let now = t as i64;
        let term = |last: i64, amplitude: f64| -> Option<f64> {
            if last == NEVER {
                return None;
            }
            let dt = now - last;
            (dt > 0 && dt <= rule.window).then(|| amplitude * rule.pair_table[dt as usize])
        };
        for &s in spikes {
            if let Some(slots) = idx.source_slots(s) {
                for slot in slots {
                    let q = idx.slot_tgt_k[slot];
                    if let Some(pair) = term(self.last_spike[q as usize], rule.anti_causal) {
                        self.add_pair(rule, slot, t, pair);
                    }
                }
            }
            for &(_, slot) in idx.target_slots(s) {
                let p = idx.slot_src_k[slot as usize];
                if let Some(pair) = term(self.last_spike[p as usize], rule.causal) {
                    self.add_pair(rule, slot as usize, t, pair);
                }
            }
        }
    }

    /// Stamps the spikes of tick `t` (only plastic neurons' stamps are ever read, so only
    /// theirs are written).
    pub(crate) fn stamp(&mut self, idx: &PlasticIndex, t: u64, spikes: &[u32]) {
        for &s in spikes {
            if let Some(k) = idx.neurons.rank(s) {
                self.last_spike[k] = t as i64;
            }
        }
    }

    /// Applies reward `r` at tick `t`.
    pub(crate) fn reinforce(&mut self, rule: &Rule, t: u64, r: f64) {
        if !r.is_finite() || r == 0.0 {
            return;
        }
        let m = libm::tanh(r);
        self.signal = m;
        for slot in 0..self.gains.len() {
            let trace = self.decayed(rule, slot, t);
            self.traces[slot] = trace as f32;
            self.touched[slot] = t;
            let g = f64::from(self.gains[slot]);
            let next = (g + rule.learning_rate * m * f64::from(self.traces[slot])
                - rule.gain_decay * (g - 1.0))
                .clamp(rule.gain_min, rule.gain_max) as f32;
            self.updates += 1;
            if next.to_bits() != self.gains[slot].to_bits() {
                self.changed += 1;
            }
            self.gains[slot] = next;
        }
    }
}
