//! Delivery of a tick's spikes in `lif-1ms-v1`: every spike's row, in spike order, each target
//! in row order, `m = max(m + f32(w) · scale, floor)` (a plastic edge's increment is
//! `(f32(w) · gain) · scale`). Each target receives its additions in the kernel's order
//! (`docs/brain.md`), so the bits are the kernel's whatever the build.
//!
//! Delivery is bound by memory: each row sits at a random place in the edge arrays (FlyWire-
//! sized, about 90 MB), and the membrane (4 bytes a neuron) is read and written at random. Three
//! things make it cheaper, none of which changes an operation:
//!
//! - where the connectome packs ([`packed`]), a row is read from its one-word-an-edge form, 4
//!   bytes an edge in one array instead of 6 in two (a third fewer cache lines a row), rows
//!   with plastic edges too;
//! - on x86-64, the first [`LINES`] cache lines of the row [`AHEAD`] spikes later are
//!   prefetched into the L2 cache before a row is delivered, so rows arrive while earlier ones
//!   are delivered; the CPU's own stream prefetcher fetches the rest of a row as it is read (a
//!   prefetch is a hint: it reads nothing the program sees; prefetching into L2 rather than L1
//!   measured faster, the rows then evict less of the membrane from L1, and prefetching every
//!   line of a row slower, the prefetches then wait for memory in the walk);
//! - a row is one loop over its edges with nothing else in it, and a whole shard's walk over
//!   the rows calls nothing, so the constants stay in registers ([`deliver_rows`]); the loop is
//!   compiled for AVX2 where the CPU has it ([`crate::simd`]), or as it is.
//!
//! A row is delivered one target at a time. AVX-512F gathers and scatters of 16 targets (a
//! row's targets are distinct) measured faster on one machine and slower on another (issue
//! 24's notes; `docs/brain.md`, Performance), so the plain loop, which every CPU runs alike, is
//! the one build.
//!
//! This module knows nothing of the plasticity rule (it reads the gains it is given), noise, the
//! sweep or threads.

use std::ops::Range;

use crate::connectome::Connectome;
use crate::connectome::packed::{self, PackedEdges};
use crate::plasticity::PlasticIndex;
use crate::simd::feature_or;

/// How many spikes ahead a row is prefetched.
const AHEAD: usize = 6;
/// How many of a row's first cache lines are prefetched (FlyWire's average row of 109 packed
/// edges spans about 7).
const LINES: usize = 4;

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
    feature_or!(
        "avx2",
        deliver_avx2(rows, membrane, start, whole),
        deliver_rows(rows, membrane, start, whole)
    );
}

/// [`deliver`] compiled with AVX2 (and nothing else: no FMA, so no operation changes).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn deliver_avx2(rows: &Rows<'_>, membrane: &mut [f32], start: u32, whole: bool) {
    deliver_rows(rows, membrane, start, whole);
}

/// The body of [`deliver`], inlined into each build.
#[inline(always)]
fn deliver_rows(rows: &Rows<'_>, membrane: &mut [f32], start: u32, whole: bool) {
    let bounds = row_bounds(rows);
    // Two walks (`deliver_cut` inlined into each), the whole shard's without the cut. Neither
    // calls anything of its own, so a row delivered in them keeps the constants in registers:
    // with the cut's search called inside the walk, the scalar builds read the scale and the
    // floor from the stack at every edge.
    if whole {
        // The only shard starts at neuron 0: no offset to subtract from each target.
        debug_assert_eq!(start, 0, "a whole shard starts at neuron 0");
        deliver_cut(rows, &bounds, (membrane, 0), None);
    } else {
        let shard = start..start + membrane.len() as u32;
        deliver_cut(rows, &bounds, (membrane, start), Some(shard));
    }
}

/// Delivers every spike's row `bounds`, cut to the targets in `shard` where there is one, to
/// the membrane starting at `start`; inlined into each walk, so that a whole shard's has no cut.
#[inline(always)]
fn deliver_cut(
    rows: &Rows<'_>,
    bounds: &[(u32, u32)],
    (membrane, start): (&mut [f32], u32),
    shard: Option<Range<u32>>,
) {
    // Locals, so that the stores to the membrane cannot be taken to change them.
    let (scale, floor) = (rows.scale, rows.floor);
    for k in 0..AHEAD {
        prefetch_row(rows, bounds, k);
    }
    for (i, (&s, &(a, b))) in rows.spikes.iter().zip(bounds).enumerate() {
        prefetch_row(rows, bounds, i + AHEAD);
        let edges = a as usize..b as usize;
        let edges = match &shard {
            None => edges,
            Some(shard) => in_shard(rows, edges, shard.clone()),
        };
        let first = edges.start;
        let row = Edges::of(rows, edges);
        match rows
            .plastic
            .and_then(|pi| pi.source_slots(s).map(|slots| (pi, slots)))
        {
            None => row.for_each(|t, w| {
                let m = &mut membrane[(t - start) as usize];
                *m = at_least(*m + f32::from(w) * scale, floor);
            }),
            Some((pi, slots)) => {
                let (slot_edge, gains) = (&pi.slot_edge[..], rows.gains);
                let mut slot = slots.start
                    + slot_edge[slots.clone()].partition_point(|&e| (e as usize) < first);
                let mut edge = first;
                row.for_each(|t, w| {
                    let gain = if slot < slots.end && slot_edge[slot] as usize == edge {
                        slot += 1;
                        gains[slot - 1]
                    } else {
                        1.0
                    };
                    edge += 1;
                    let m = &mut membrane[(t - start) as usize];
                    *m = at_least(*m + f32::from(w) * gain * scale, floor);
                });
            }
        }
    }
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

/// Prefetches the first [`LINES`] cache lines of the row of the `k`th spike, if there is one,
/// into the L2 cache (of the packed row, or of the targets and of the weights); nothing where
/// the architecture has no prefetch here.
#[inline(always)]
fn prefetch_row(rows: &Rows<'_>, bounds: &[(u32, u32)], k: usize) {
    if let Some(&(a, b)) = bounds.get(k) {
        match Edges::of(rows, a as usize..b as usize) {
            Edges::Packed(words) => prefetch_l2(words),
            Edges::Split { targets, weights } => {
                prefetch_l2(targets);
                prefetch_l2(weights);
            }
        }
    }
}

/// Asks the CPU to bring the first [`LINES`] cache lines of `data` (fewer where it spans fewer)
/// into its L2 cache (`prefetcht1`, part of SSE, which every x86-64 CPU has); nothing on other
/// architectures.
#[inline(always)]
fn prefetch_l2<T>(data: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T1, _mm_prefetch};
        const LINE: usize = 64;
        let base = data.as_ptr().cast::<i8>();
        let bytes = std::mem::size_of_val(data);
        // From the line holding the first byte, at most `LINES` lines, to the one holding the
        // last.
        let first = (base as usize) % LINE;
        let end = (bytes + first).min(LINES * LINE);
        let mut offset = 0;
        while offset < end {
            #[expect(unsafe_code, reason = "`_mm_prefetch` is an SSE intrinsic")]
            // SAFETY: SSE is part of the x86-64 baseline, so every CPU this build runs on has
            // it; a prefetch of any address reads nothing the program sees and cannot fault.
            unsafe {
                _mm_prefetch::<_MM_HINT_T1>(base.wrapping_sub(first).wrapping_add(offset));
            }
            offset += LINE;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = data;
}

/// The edges `edges` of one row whose targets are in `shard` (a row's targets ascend); inlined,
/// so that the sharded loop has no call in it either.
#[inline(always)]
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

/// A row's edges in one of the connectome's two layouts.
#[derive(Clone, Copy)]
enum Edges<'a> {
    /// The targets and the weights (equal lengths).
    Split {
        targets: &'a [u32],
        weights: &'a [i16],
    },
    /// One word an edge ([`packed`]).
    Packed(&'a [u32]),
}

impl<'a> Edges<'a> {
    /// The edges `edges` of `rows`' graph, from its packed words where it has them.
    #[inline(always)]
    fn of(rows: &Rows<'a>, edges: Range<usize>) -> Self {
        match rows.packed {
            Some(p) => Edges::Packed(p.row(edges)),
            None => Edges::Split {
                targets: &rows.conn.targets[edges.clone()],
                weights: &rows.conn.weights[edges],
            },
        }
    }

    /// Calls `f(target, weight)` for every edge, in row order.
    #[inline(always)]
    fn for_each(self, mut f: impl FnMut(u32, i16)) {
        match self {
            Edges::Split { targets, weights } => {
                for (&t, &w) in targets.iter().zip(weights) {
                    f(t, w);
                }
            }
            Edges::Packed(words) => {
                for &w in words {
                    f(packed::target(w), packed::weight(w));
                }
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
    /// `start..start + m.len()` in row order, `m = max(m + f32(w) · gain · scale, floor)`, where
    /// `gain` is the edge's slot's in `gains` for a plastic edge and 1 otherwise.
    fn by_hand(
        c: &Connectome,
        spikes: &[u32],
        m: &mut [f32],
        (scale, floor): (f32, f32),
        plastic: Option<(&PlasticIndex, &[f32])>,
    ) {
        let slot_of: BTreeMap<usize, usize> = plastic
            .map(|(pi, _)| {
                pi.slot_edge
                    .iter()
                    .enumerate()
                    .map(|(k, &e)| (e as usize, k))
                    .collect()
            })
            .unwrap_or_default();
        for &s in spikes {
            for e in c.row(s) {
                let t = c.targets()[e];
                let gain = match (slot_of.get(&e), plastic) {
                    (Some(&k), Some((_, gains))) => gains[k],
                    _ => 1.0,
                };
                let x = m[t as usize] + f32::from(c.weights()[e]) * gain * scale;
                m[t as usize] = if x < floor { floor } else { x };
            }
        }
    }

    /// Delivery leaves the membrane bit for bit as the rule written out, from either layout, to
    /// one shard or cut to three, with and without plastic edges (each slot's gain its own); a
    /// graph whose weights do not pack is read from its two arrays.
    #[test]
    fn both_layouts_deliver_as_the_rule() {
        let n = 300;
        let (scale, floor) = (0.37_f32, -6.0_f32);
        let bits = |m: &[f32]| m.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        for (extreme, packs) in [(8191, true), (8192, false)] {
            let c = graph(n, extreme);
            assert_eq!(c.packed().is_some(), packs, "weights up to {extreme}");
            let pre: Vec<u32> = (0..n).step_by(2).collect();
            let post: Vec<u32> = (100..n).collect();
            let index = PlasticIndex::select(&c, &pre, &post, 400);
            assert!(index.len() > 100, "{} plastic edges", index.len());
            let gains: Vec<f32> = (0..index.len()).map(|k| 0.5 + k as f32 / 97.0).collect();
            let mut rng = XorShift32::new(7);
            let spikes: Vec<u32> = (0..n).filter(|_| rng.below(4) == 0).collect();
            let start: Vec<f32> = (0..n).map(|_| rng.below(100) as f32 / 9.0 - 5.0).collect();
            for plastic in [None, Some((&index, &gains[..]))] {
                let mut want = start.clone();
                by_hand(&c, &spikes, &mut want, (scale, floor), plastic);
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
                        plastic: plastic.map(|(pi, _)| pi),
                        gains: plastic.map_or(&[][..], |(_, g)| g),
                        packed,
                    };
                    // `deliver` as dispatched, and every build this CPU has.
                    let mut builds: Vec<(&str, Build)> =
                        vec![("dispatched", deliver), ("baseline", baseline)];
                    #[cfg(target_arch = "x86_64")]
                    {
                        if std::arch::is_x86_feature_detected!("avx2") {
                            builds.push(("avx2", deliver_avx2));
                        }
                    }
                    for &(build, run) in &builds {
                        for shards in [&[0, n][..], &[0, 97, 211, n]] {
                            let whole = shards.len() == 2;
                            let mut got = start.clone();
                            for w in shards.windows(2) {
                                let m = &mut got[w[0] as usize..w[1] as usize];
                                #[expect(unsafe_code, reason = "a build for a CPU feature")]
                                // SAFETY: `builds` lists a build only where this CPU has its
                                // feature.
                                unsafe {
                                    run(&rows, m, w[0], whole);
                                }
                            }
                            let layout = if packed.is_some() { "packed" } else { "split" };
                            let learning = if plastic.is_some() {
                                "plastic"
                            } else {
                                "fixed"
                            };
                            assert_eq!(
                                bits(&got),
                                bits(&want),
                                "{build}, {layout}, {learning}, shards {shards:?}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// A build of delivery for a CPU feature.
    type Build = unsafe fn(&Rows<'_>, &mut [f32], u32, bool);

    fn baseline(rows: &Rows<'_>, m: &mut [f32], start: u32, whole: bool) {
        deliver_rows(rows, m, start, whole);
    }
}
