//! Delivery of a tick's spikes in `lif-1ms-v1`: every spike's row, in spike order, each target
//! in row order, `m = max(m + f32(w) · scale, floor)` (a plastic edge's increment is
//! `(f32(w) · gain) · scale`). Each target receives its additions in the kernel's order
//! (`docs/brain.md`), so the bits are the kernel's whatever the build.
//!
//! Delivery is bound by memory: each row sits at a random place in the edge arrays (FlyWire-
//! sized, about 90 MB), and the membrane (4 bytes a neuron) is read and written at random. Three
//! things make it cheaper, none of which changes an operation:
//!
//! - on a CPU with AVX2 the same code runs compiled for AVX2 ([`crate::simd`]), and there
//!   every cache line of the row [`AHEAD`] spikes later is prefetched into the L2 cache before
//!   a row is delivered, so rows arrive while earlier ones are delivered (a prefetch is a hint:
//!   it reads nothing the program sees; prefetching into L2 rather than L1 measured faster, the
//!   rows then evict less of the membrane from L1);
//! - the increments `f32(w) · scale` of a row without plastic edges are computed first, in SIMD
//!   lanes, into a buffer, and the loop over the row then only adds, clamps and stores;
//! - on a CPU with AVX-512F, such a row is delivered 16 targets at a time, gathered and
//!   scattered ([`gather`]; a row's targets are distinct, so lanes never share a membrane);
//!   rows are prefetched as with AVX2.
//!
//! This module knows nothing of the plasticity rule (it reads the gains it is given), noise, the
//! sweep or threads.

#[cfg(target_arch = "x86_64")]
mod gather;

use crate::connectome::Connectome;
use crate::plasticity::PlasticIndex;
use crate::simd::feature_or;

/// How many spikes ahead a row is prefetched.
const AHEAD: usize = 6;

/// What one shard's delivery reads: the graph, the tick's spikes (ascending), the kernel's
/// constants and the plastic edges with their gains.
pub(super) struct Rows<'a> {
    pub(super) conn: &'a Connectome,
    pub(super) spikes: &'a [u32],
    pub(super) scale: f32,
    pub(super) floor: f32,
    pub(super) plastic: Option<&'a PlasticIndex>,
    /// The gain of every plastic slot.
    pub(super) gains: &'a [f32],
}

/// Delivers every spike of `rows` to the targets in `start..start + membrane.len()`; `whole`
/// says every target is in range (one shard), so no row needs cutting.
pub(super) fn deliver(rows: &Rows<'_>, membrane: &mut [f32], start: u32, whole: bool) {
    let c = rows.conn;
    // Row bounds first: independent loads, so their cache misses overlap.
    let bounds: Vec<(u32, u32)> = rows
        .spikes
        .iter()
        .map(|&s| (c.indptr[s as usize], c.indptr[s as usize + 1]))
        .collect();
    let rows = Bounded {
        rows,
        bounds: &bounds,
    };
    feature_or!(
        "avx512f",
        deliver_avx512f(&rows, membrane, start, whole),
        feature_or!(
            "avx2",
            deliver_avx2(&rows, membrane, start, whole),
            deliver_rows(&rows, membrane, start, whole, |_| {}, plain_row)
        )
    );
}

/// [`Rows`] with each spike's row bounds, in spike order.
struct Bounded<'a> {
    rows: &'a Rows<'a>,
    bounds: &'a [(u32, u32)],
}

/// [`deliver`] compiled with AVX2 (and nothing else: no FMA, so no operation changes), with
/// each row prefetched [`AHEAD`] spikes early.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn deliver_avx2(rows: &Bounded<'_>, membrane: &mut [f32], start: u32, whole: bool) {
    let fetch = |k| prefetch_row(rows, k);
    deliver_prefetched(rows, membrane, (start, whole), fetch, plain_row);
}

/// [`deliver`] compiled with AVX-512F: rows prefetched as in [`deliver_avx2`], and a row
/// without plastic edges delivered 16 targets at a time ([`gather::plain_row`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn deliver_avx512f(rows: &Bounded<'_>, membrane: &mut [f32], start: u32, whole: bool) {
    let fetch = |k| prefetch_row(rows, k);
    let plain = |row: Plain<'_>, membrane: &mut [f32], increments: &mut Vec<f32>| {
        gather::plain_row(row, membrane, increments);
    };
    deliver_prefetched(rows, membrane, (start, whole), fetch, plain);
}

/// [`deliver_rows`] with `fetch(k)` run for the `k`th row [`AHEAD`] rows before it is
/// delivered; inlined into each build.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn deliver_prefetched(
    rows: &Bounded<'_>,
    membrane: &mut [f32],
    (start, whole): (u32, bool),
    fetch: impl Fn(usize),
    plain: impl FnMut(Plain<'_>, &mut [f32], &mut Vec<f32>),
) {
    (0..AHEAD).for_each(&fetch);
    deliver_rows(rows, membrane, start, whole, |i| fetch(i + AHEAD), plain);
}

/// Prefetches the row of the `k`th spike, if there is one, into the L2 cache.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn prefetch_row(rows: &Bounded<'_>, k: usize) {
    if let Some(&(a, b)) = rows.bounds.get(k) {
        let c = rows.rows.conn;
        let range = a as usize..b as usize;
        prefetch_l2(&c.targets[range.clone()]);
        prefetch_l2(&c.weights[range]);
    }
}

/// Asks the CPU to bring every cache line of `data` into its L2 cache.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn prefetch_l2<T>(data: &[T]) {
    use std::arch::x86_64::{_MM_HINT_T1, _mm_prefetch};
    const LINE: usize = 64;
    let base = data.as_ptr().cast::<i8>();
    let bytes = std::mem::size_of_val(data);
    // From the line holding the first byte to the one holding the last.
    let first = (base as usize) % LINE;
    let mut offset = 0;
    while offset < bytes + first {
        _mm_prefetch::<_MM_HINT_T1>(base.wrapping_sub(first).wrapping_add(offset));
        offset += LINE;
    }
}

/// The body of [`deliver`], inlined into each build; `before(i)` runs before row `i`.
#[inline(always)]
fn deliver_rows(
    rows: &Bounded<'_>,
    membrane: &mut [f32],
    start: u32,
    whole: bool,
    mut before: impl FnMut(usize),
    mut plain: impl FnMut(Plain<'_>, &mut [f32], &mut Vec<f32>),
) {
    let r = rows.rows;
    let c = r.conn;
    let end = start + membrane.len() as u32;
    // Locals, so that the stores to the membrane cannot be taken to change them.
    let (scale, floor) = (r.scale, r.floor);
    let mut increments: Vec<f32> = Vec::new();
    for (i, (&s, &(a, b))) in r.spikes.iter().zip(rows.bounds).enumerate() {
        before(i);
        let mut first = a as usize;
        let mut targets = &c.targets[first..b as usize];
        if !whole {
            let lo = targets.partition_point(|&t| t < start);
            let hi = targets.partition_point(|&t| t < end);
            targets = &targets[lo..hi];
            first += lo;
        }
        let weights = &c.weights[first..first + targets.len()];
        match r
            .plastic
            .and_then(|pi| pi.source_slots(s).map(|slots| (pi, slots)))
        {
            None => {
                let row = Plain {
                    targets,
                    weights,
                    start,
                    scale,
                    floor,
                };
                plain(row, membrane, &mut increments);
            }
            Some((pi, slots)) => {
                let slot_edge = &pi.slot_edge[..];
                let mut slot = slots.start
                    + slot_edge[slots.clone()].partition_point(|&e| (e as usize) < first);
                for (k, (&t, &w)) in targets.iter().zip(weights).enumerate() {
                    let gain = if slot < slots.end && slot_edge[slot] as usize == first + k {
                        slot += 1;
                        r.gains[slot - 1]
                    } else {
                        1.0
                    };
                    let m = &mut membrane[(t - start) as usize];
                    *m = at_least(*m + f32::from(w) * gain * scale, floor);
                }
            }
        }
    }
}

/// A row without plastic edges, cut to a shard: every target `t` gets
/// `m[t - start] = max(m[t - start] + f32(w) · scale, floor)`, in row order.
#[derive(Clone, Copy)]
pub(super) struct Plain<'a> {
    pub(super) targets: &'a [u32],
    pub(super) weights: &'a [i16],
    pub(super) start: u32,
    pub(super) scale: f32,
    pub(super) floor: f32,
}

/// Delivers a [`Plain`] row one target at a time, its increments computed first into
/// `increments` (in SIMD lanes where the build has them).
#[inline(always)]
fn plain_row(row: Plain<'_>, membrane: &mut [f32], increments: &mut Vec<f32>) {
    let Plain {
        targets,
        weights,
        start,
        scale,
        floor,
    } = row;
    increments.clear();
    increments.extend(weights.iter().map(|&w| f32::from(w) * scale));
    for (&t, &inc) in targets.iter().zip(increments.iter()) {
        let m = &mut membrane[(t - start) as usize];
        *m = at_least(*m + inc, floor);
    }
}

/// `v` clamped below at `floor`: `v.max(floor)` for every value the kernel holds (never NaN),
/// in one compare-and-select where `max` spends several instructions on NaN.
#[inline(always)]
pub(super) fn at_least(v: f32, floor: f32) -> f32 {
    if v < floor { floor } else { v }
}
