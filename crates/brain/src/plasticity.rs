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
    /// Source of each slot (ascending, since edges are row-major).
    pub(crate) slot_src: Vec<u32>,
    /// Target of each slot.
    pub(crate) slot_tgt: Vec<u32>,
    /// `(target, slot)` sorted, for the slots into a target.
    in_slots: Vec<(u32, u32)>,
    /// Bitsets of plastic sources and targets.
    is_src: Vec<u64>,
    is_tgt: Vec<u64>,
}

fn bit(set: &[u64], i: u32) -> bool {
    set.get((i / 64) as usize)
        .is_some_and(|w| w >> (i % 64) & 1 == 1)
}

impl PlasticIndex {
    /// Selects the plastic edges of `c` (see the module documentation).
    pub(crate) fn select(c: &Connectome, pre: &[u32], post: &[u32], max_edges: u32) -> Self {
        let n = c.neurons() as usize;
        let mut in_pre = vec![false; n];
        let mut in_post = vec![false; n];
        for &p in pre {
            in_pre[p as usize] = true;
        }
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
        let words = n.div_ceil(64);
        let mut is_src = vec![0u64; words];
        let mut is_tgt = vec![0u64; words];
        let mut in_slots = Vec::with_capacity(candidates.len());
        for (slot, &(_, _, p, t)) in candidates.iter().enumerate() {
            is_src[(p / 64) as usize] |= 1 << (p % 64);
            is_tgt[(t / 64) as usize] |= 1 << (t % 64);
            in_slots.push((t, slot as u32));
        }
        in_slots.sort_unstable();
        Self {
            slot_edge: candidates.iter().map(|c| c.1).collect(),
            slot_src: candidates.iter().map(|c| c.2).collect(),
            slot_tgt: candidates.iter().map(|c| c.3).collect(),
            in_slots,
            is_src,
            is_tgt,
        }
    }

    /// Slots.
    pub(crate) fn len(&self) -> usize {
        self.slot_edge.len()
    }

    /// The slots leaving `s`, or `None` when it has none.
    #[inline]
    pub(crate) fn source_slots(&self, s: u32) -> Option<Range<usize>> {
        if !bit(&self.is_src, s) {
            return None;
        }
        let lo = self.slot_src.partition_point(|&x| x < s);
        let hi = self.slot_src.partition_point(|&x| x <= s);
        Some(lo..hi)
    }

    /// The `(target, slot)` entries into `t`.
    fn target_slots(&self, t: u32) -> &[(u32, u32)] {
        if !bit(&self.is_tgt, t) {
            return &[];
        }
        let lo = self.in_slots.partition_point(|&(x, _)| x < t);
        let hi = self.in_slots.partition_point(|&(x, _)| x <= t);
        &self.in_slots[lo..hi]
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
    /// Last spike tick of every neuron, or [`NEVER`].
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
                    let q = idx.slot_tgt[slot];
                    if let Some(pair) = term(self.last_spike[q as usize], rule.anti_causal) {
                        self.add_pair(rule, slot, t, pair);
                    }
                }
            }
            for &(_, slot) in idx.target_slots(s) {
                let p = idx.slot_src[slot as usize];
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
            if bit(&idx.is_src, s) || bit(&idx.is_tgt, s) {
                self.last_spike[s as usize] = t as i64;
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
