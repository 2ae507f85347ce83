//! Delivery of a tick's spikes in `lif-1ms-v1`: every spike's row, in spike order, each target
//! in row order, `m = max(m + f32(w) · scale, floor)` (a plastic edge's increment is
//! `(f32(w) · gain) · scale`). Each target receives its additions in the kernel's order
//! (`docs/brain.md`), so the bits are the kernel's whatever the build.
//!
//! Delivery is bound by memory: each row sits at a random place in the edge arrays (FlyWire-
//! sized, about 90 MB), and the membrane (4 bytes a neuron) is read and written at random. Four
//! things make it cheaper, none of which changes an operation:
//!
//! - where the connectome packs ([`packed`]), a row is read from its one-word-an-edge form, 4
//!   bytes an edge in one array instead of 6 in two (a third fewer cache lines a row);
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

use std::ops::Range;

use crate::connectome::Connectome;
use crate::connectome::packed::{self, PackedEdges};
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
    /// `conn`'s edges one word each, where they pack ([`Connectome::packed`]); rows are read
    /// from here then, and from `conn`'s two arrays otherwise.
    pub(super) packed: Option<&'a PackedEdges>,
}

/// Delivers every spike of `rows` to the targets in `start..start + membrane.len()`; `whole`
/// says every target is in range (one shard), so no row needs cutting.
pub(super) fn deliver(rows: &Rows<'_>, membrane: &mut [f32], start: u32, whole: bool) {
    let bounds = row_bounds(rows);
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

/// Each spike's row bounds, in spike order: read first, as independent loads, so that their
/// cache misses overlap.
fn row_bounds(rows: &Rows<'_>) -> Vec<(u32, u32)> {
    let c = rows.conn;
    rows.spikes
        .iter()
        .map(|&s| (c.indptr[s as usize], c.indptr[s as usize + 1]))
        .collect()
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

/// Prefetches the row of the `k`th spike, if there is one, into the L2 cache (the packed row,
/// or the targets and the weights).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn prefetch_row(rows: &Bounded<'_>, k: usize) {
    if let Some(&(a, b)) = rows.bounds.get(k) {
        let range = a as usize..b as usize;
        if let Some(p) = rows.rows.packed {
            prefetch_l2(p.row(range));
        } else {
            let c = rows.rows.conn;
            prefetch_l2(&c.targets[range.clone()]);
            prefetch_l2(&c.weights[range]);
        }
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
        let edges = a as usize..b as usize;
        let edges = if whole {
            edges
        } else {
            in_shard(r, edges, start..end)
        };
        match r
            .plastic
            .and_then(|pi| pi.source_slots(s).map(|slots| (pi, slots)))
        {
            None => {
                let edges = match r.packed {
                    Some(p) => Edges::Packed(p.row(edges)),
                    None => Edges::Split {
                        targets: &c.targets[edges.clone()],
                        weights: &c.weights[edges],
                    },
                };
                let row = Plain {
                    edges,
                    start,
                    scale,
                    floor,
                };
                plain(row, membrane, &mut increments);
            }
            Some((pi, slots)) => {
                let first = edges.start;
                let (targets, weights) = (&c.targets[edges.clone()], &c.weights[edges]);
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

/// The edges `edges` of one row whose targets are in `shard` (a row's targets ascend).
fn in_shard(r: &Rows<'_>, edges: Range<usize>, shard: Range<u32>) -> Range<usize> {
    let (lo, hi) = match r.packed {
        Some(p) => {
            let row = p.row(edges.clone());
            let below = |bound| row.partition_point(|&w| packed::target(w) < bound);
            (below(shard.start), below(shard.end))
        }
        None => {
            let row = &r.conn.targets[edges.clone()];
            let below = |bound| row.partition_point(|&t| t < bound);
            (below(shard.start), below(shard.end))
        }
    };
    edges.start + lo..edges.start + hi
}

/// A row without plastic edges, cut to a shard: every target `t` gets
/// `m[t - start] = max(m[t - start] + f32(w) · scale, floor)`, in row order.
#[derive(Clone, Copy)]
pub(super) struct Plain<'a> {
    pub(super) edges: Edges<'a>,
    pub(super) start: u32,
    pub(super) scale: f32,
    pub(super) floor: f32,
}

/// A row's edges in one of the connectome's two layouts.
#[derive(Clone, Copy)]
pub(super) enum Edges<'a> {
    /// The targets and the weights (equal lengths).
    Split {
        targets: &'a [u32],
        weights: &'a [i16],
    },
    /// One word an edge ([`packed`]).
    Packed(&'a [u32]),
}

/// Delivers a [`Plain`] row one target at a time, its increments computed first into
/// `increments` (in SIMD lanes where the build has them).
#[inline(always)]
fn plain_row(row: Plain<'_>, membrane: &mut [f32], increments: &mut Vec<f32>) {
    let Plain {
        edges,
        start,
        scale,
        floor,
    } = row;
    let mut add = |t: u32, inc: f32| {
        let m = &mut membrane[(t - start) as usize];
        *m = at_least(*m + inc, floor);
    };
    increments.clear();
    match edges {
        Edges::Split { targets, weights } => {
            increments.extend(weights.iter().map(|&w| f32::from(w) * scale));
            for (&t, &inc) in targets.iter().zip(increments.iter()) {
                add(t, inc);
            }
        }
        Edges::Packed(words) => {
            increments.extend(words.iter().map(|&w| f32::from(packed::weight(w)) * scale));
            for (&w, &inc) in words.iter().zip(increments.iter()) {
                add(packed::target(w), inc);
            }
        }
    }
}

/// `v` clamped below at `floor`: `v.max(floor)` for every value the kernel holds (never NaN),
/// in one compare-and-select where `max` spends several instructions on NaN.
#[inline(always)]
pub(super) fn at_least(v: f32, floor: f32) -> f32 {
    if v < floor { floor } else { v }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::rng::XorShift32;

    /// A connectome of `n` neurons, about 25 distinct edges a row, weights up to `extreme` in
    /// size.
    fn graph(n: u32, extreme: i64) -> Connectome {
        let mut rng = XorShift32::new(0x5eed);
        let mut edges = Vec::new();
        for s in 0..n {
            for t in 0..n {
                if rng.below(12) != 0 {
                    continue;
                }
                let w = match rng.below(30) {
                    0 => extreme,
                    1 => -extreme - 1,
                    _ => i64::from(rng.below(40)) - 20,
                };
                edges.push((s, t, w));
            }
        }
        Connectome::from_edges(n, edges, None, BTreeMap::new(), "test").expect("a valid graph")
    }

    /// The kernel's rule written out: every spike's row in spike order, every edge into
    /// `start..start + m.len()` in row order, `m = max(m + f32(w) · scale, floor)`.
    fn by_hand(
        c: &Connectome,
        spikes: &[u32],
        m: &mut [f32],
        start: u32,
        (scale, floor): (f32, f32),
    ) {
        for &s in spikes {
            for e in c.row(s) {
                let t = c.targets()[e];
                if let Some(v) = t.checked_sub(start).and_then(|k| m.get_mut(k as usize)) {
                    let x = *v + f32::from(c.weights()[e]) * scale;
                    *v = if x < floor { floor } else { x };
                }
            }
        }
    }

    /// Every build (the baseline, and AVX2 and AVX-512F where this CPU has them) delivers a
    /// tick's spikes from either layout, to one shard or cut to three, bit for bit as the rule
    /// written out; a graph whose weights do not pack is read from its two arrays.
    #[test]
    fn every_build_and_layout_delivers_as_the_rule() {
        let n = 300;
        let (scale, floor) = (0.37_f32, -6.0_f32);
        let bits = |m: &[f32]| m.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        for (extreme, packs) in [(8191, true), (8192, false)] {
            let c = graph(n, extreme);
            assert_eq!(c.packed().is_some(), packs, "weights up to {extreme}");
            let mut rng = XorShift32::new(7);
            let spikes: Vec<u32> = (0..n).filter(|_| rng.below(4) == 0).collect();
            let start: Vec<f32> = (0..n).map(|_| rng.below(100) as f32 / 9.0 - 5.0).collect();
            let mut want = start.clone();
            by_hand(&c, &spikes, &mut want, 0, (scale, floor));
            assert!(
                want.iter().filter(|&&v| v == floor).count() > 5,
                "the floor is reached"
            );
            // The split layout always; the packed one where the graph packs.
            for packed in [None, c.packed()]
                .into_iter()
                .take(if packs { 2 } else { 1 })
            {
                let rows = Rows {
                    conn: &c,
                    spikes: &spikes,
                    scale,
                    floor,
                    plastic: None,
                    gains: &[],
                    packed,
                };
                for shards in [&[0, n][..], &[0, 97, 211, n]] {
                    let whole = shards.len() == 2;
                    let mut builds: Vec<(&str, Build)> = vec![("baseline", baseline)];
                    #[cfg(target_arch = "x86_64")]
                    {
                        if std::arch::is_x86_feature_detected!("avx2") {
                            builds.push(("avx2", deliver_avx2));
                        }
                        if std::arch::is_x86_feature_detected!("avx512f") {
                            builds.push(("avx512f", deliver_avx512f));
                        }
                    }
                    let mut got = start.clone();
                    for w in shards.windows(2) {
                        deliver(&rows, &mut got[w[0] as usize..w[1] as usize], w[0], whole);
                    }
                    let layout = if packed.is_some() { "packed" } else { "split" };
                    assert_eq!(bits(&got), bits(&want), "dispatched, {layout}, {shards:?}");
                    for (build, run) in builds {
                        let mut got = start.clone();
                        for w in shards.windows(2) {
                            let m = &mut got[w[0] as usize..w[1] as usize];
                            let bounds = row_bounds(&rows);
                            let rows = Bounded {
                                rows: &rows,
                                bounds: &bounds,
                            };
                            #[expect(unsafe_code, reason = "a build for a CPU feature")]
                            // SAFETY: `builds` lists a build only where this CPU has its feature.
                            unsafe {
                                run(&rows, m, w[0], whole);
                            }
                        }
                        assert_eq!(
                            bits(&got),
                            bits(&want),
                            "{build}, {layout}, shards {shards:?}"
                        );
                    }
                }
            }
        }
    }

    /// A build of delivery for a CPU feature.
    type Build = unsafe fn(&Bounded<'_>, &mut [f32], u32, bool);

    fn baseline(rows: &Bounded<'_>, m: &mut [f32], start: u32, whole: bool) {
        deliver_rows(rows, m, start, whole, |_| {}, plain_row);
    }
}
