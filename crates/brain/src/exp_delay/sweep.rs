//! The plain sweep of `lif-exp-delay-v1`: steps 1–3 of the tick for every neuron of a shard,
//! ascending, as if no conductance landed this tick (every ring cell `+0`), written so that the
//! compiler packs them into SIMD instructions from plain Rust; on a CPU with AVX2 the same code
//! runs compiled for 8-lane registers ([`crate::simd`]). The
//! few neurons whose cell holds input are corrected afterwards by [`landed`]: input changes no
//! spike and no membrane of the tick it lands in, only the new conductance.
//!
//! A run of [`LANES`] neurons of one class is updated by [`lanes`] without branches, in passes
//! of one lane width (the lessons of a first attempt: a loop that mixes `u8` and `f32` lanes
//! stays scalar, passes of one width vectorise): the `u8` refractory counters count down and
//! say which lanes integrate; those flags are widened to 32-bit masks; one `f32` pass computes
//! every lane's `v'`, `g·b + p` and spike test exactly as [`step`] does — the same f32
//! operations in the same order — as if every lane integrated without spiking, and marks the
//! lanes for which that is wrong. Usually none is (on the FAFB-sized bench about 12 of the
//! 8,665 runs have a frozen or spiking lane in a tick), and the results are stored as they are;
//! otherwise a
//! second pass keeps, by bit-mask selects, the old values for frozen lanes, the reset for
//! spiking ones and the integrated values for the rest, and the spikes set their counters and
//! join the spike list in lane order. Runs of mixed classes and the shard's tail take [`step`],
//! neuron by neuron.
//!
//! This module knows nothing of the active list, the drives, delivery, snapshots or threads.

use super::{CONDUCTANCE_FLOOR, Class};
use crate::simd::feature_or;

/// Neurons updated together: 16 `f32` lanes are four SSE2 or two AVX2 registers, 16 `u8`
/// lanes one.
const LANES: usize = 16;

/// One shard's state for the sweep: its neurons' cells.
pub(super) struct Cells<'s> {
    pub(super) classes: &'s [Class],
    /// The class of every neuron of the shard.
    pub(super) class_of: &'s [u8],
    pub(super) membrane: &'s mut [f32],
    pub(super) conductance: &'s mut [f32],
    pub(super) refractory: &'s mut [u8],
}

/// Steps 1–3 for every neuron of `cells`, ascending, each with a ring cell of `+0`; spikes are
/// pushed as `start + k`. On a CPU with AVX2 this runs [`sweep_avx2`], the same code compiled
/// for 8-lane registers: the same IEEE-754 operations on every lane, so the same bits.
pub(super) fn sweep(cells: Cells<'_>, start: u32, spikes: &mut Vec<u32>) {
    feature_or!(
        "avx2",
        sweep_avx2(cells, start, spikes),
        sweep_baseline(cells, start, spikes)
    );
}

/// [`sweep`] compiled for the x86-64 baseline (SSE2), whatever the CPU.
pub(super) fn sweep_baseline(cells: Cells<'_>, start: u32, spikes: &mut Vec<u32>) {
    sweep_lanes(cells, start, spikes);
}

/// [`sweep`] compiled with AVX2 (and nothing else: no FMA, so no operation changes).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn sweep_avx2(cells: Cells<'_>, start: u32, spikes: &mut Vec<u32>) {
    sweep_lanes(cells, start, spikes);
}

/// The body of [`sweep`], inlined into each build of it.
#[inline(always)]
fn sweep_lanes(cells: Cells<'_>, start: u32, spikes: &mut Vec<u32>) {
    let Cells {
        classes,
        class_of,
        membrane,
        conductance,
        refractory,
    } = cells;
    let (v_runs, v_tail) = membrane.as_chunks_mut::<LANES>();
    let (g_runs, g_tail) = conductance.as_chunks_mut::<LANES>();
    let (r_runs, r_tail) = refractory.as_chunks_mut::<LANES>();
    let (c_runs, c_tail) = class_of.as_chunks::<LANES>();
    let runs = v_runs.iter_mut().zip(g_runs).zip(r_runs).zip(c_runs);
    let mut first = start;
    for (((v, g), r), class) in runs {
        let c0 = class[0];
        // One 16-byte comparison rather than 16 branches.
        if u128::from_ne_bytes(*class) == u128::from_ne_bytes([c0; LANES]) {
            lanes(&classes[usize::from(c0)], v, g, r, first, spikes);
        } else {
            let cells = v.iter_mut().zip(g.iter_mut()).zip(r.iter_mut());
            for (k, (((v, g), r), &c)) in cells.zip(class).enumerate() {
                if step(&classes[usize::from(c)], v, g, r, &mut 0.0) {
                    spikes.push(first + k as u32);
                }
            }
        }
        first += LANES as u32;
    }
    let cells = v_tail
        .iter_mut()
        .zip(g_tail.iter_mut())
        .zip(r_tail.iter_mut());
    for (k, (((v, g), r), &c)) in cells.zip(c_tail).enumerate() {
        if step(&classes[usize::from(c)], v, g, r, &mut 0.0) {
            spikes.push(first + k as u32);
        }
    }
}

/// What [`sweep`] left wrong in one neuron whose ring cell held `incoming` this tick, put
/// right: its conductance `g` and refractory counter `r` as they were before the sweep, and
/// whether it spiked this tick. Input changes neither the spike test nor `v` (both read the old
/// `g`); it only enters the new conductance of a neuron that integrated and did not spike, so
/// that is the one value recomputed, from the old `g`, exactly as [`step`] does. Returns the
/// conductance to store, or `None` to leave the sweep's.
pub(super) fn landed(cl: &Class, g: f32, r: u8, spiked: bool, incoming: f32) -> Option<f32> {
    // Frozen this tick (the counter is still positive after counting down), or spiking: the
    // input is lost, as in `step`.
    if r > 1 || spiked {
        return None;
    }
    Some(conducted(cl, g, incoming))
}

/// The conductance after a tick in which the neuron integrated without spiking.
#[inline(always)]
fn conducted(cl: &Class, g: f32, incoming: f32) -> f32 {
    let decayed = g * cl.conductance_decay + incoming;
    // Flush to zero before f32 goes subnormal (slow on every CPU flysim targets).
    if decayed.abs() < CONDUCTANCE_FLOOR {
        0.0
    } else {
        decayed
    }
}

/// Steps 1–3 for one neuron of class `cl` (`p` its ring cell); whether it spiked.
#[inline(always)]
pub(super) fn step(cl: &Class, v: &mut f32, g: &mut f32, r: &mut u8, p: &mut f32) -> bool {
    let incoming = std::mem::replace(p, 0.0);
    if *r > 0 {
        *r -= 1;
        if *r > 0 {
            // Frozen: no integration, and the input that arrives is lost.
            return false;
        }
    }
    let next = cl.integrated(*v, *g);
    if next > cl.threshold {
        *v = cl.reset;
        *g = 0.0;
        *r = cl.refractory;
        true
    } else {
        *v = next;
        *g = conducted(cl, *g, incoming);
        false
    }
}

/// All ones when `b`, else zero: a lane mask.
#[inline(always)]
fn mask(b: bool) -> u32 {
    u32::from(b).wrapping_neg()
}

/// [`step`] for [`LANES`] neurons of class `cl` with ring cells of `+0`, the first of them
/// `first`, by lane masks.
#[inline(always)]
fn lanes(
    cl: &Class,
    v: &mut [f32; LANES],
    g: &mut [f32; LANES],
    r: &mut [u8; LANES],
    first: u32,
    spikes: &mut Vec<u32>,
) {
    // u8 lanes: the counter counts down; a lane integrates when it is then 0.
    let mut free = [0u8; LANES];
    for (r, free) in r.iter_mut().zip(&mut free) {
        *r = r.saturating_sub(1);
        *free = u8::from(*r == 0);
    }
    let mut live = [0u32; LANES];
    for (live, &free) in live.iter_mut().zip(&free) {
        *live = u32::from(free).wrapping_neg();
    }
    // f32 lanes: step's arithmetic for every lane as if it integrated without spiking, and
    // which lanes that is wrong for (frozen or spiking, both rare).
    let (mut next, mut kept, mut odd) = ([0.0f32; LANES], [0u32; LANES], [0u32; LANES]);
    let cells = v.iter().zip(g.iter()).zip(&live);
    for ((((&v, &g), &live), next), (kept, odd)) in
        cells.zip(&mut next).zip(kept.iter_mut().zip(&mut odd))
    {
        // `+ 0.0` as in `step` with an empty cell (it turns a `-0` product into `+0`).
        let incoming = 0.0;
        *next = cl.integrated(v, g);
        let decayed = g * cl.conductance_decay + incoming;
        *kept = decayed.to_bits() & !mask(decayed.abs() < CONDUCTANCE_FLOOR);
        *odd = !live | mask(*next > cl.threshold);
    }
    if odd.iter().fold(0, |any, &o| any | o) == 0 {
        *v = next;
        *g = kept.map(f32::from_bits);
        return;
    }
    // Frozen lanes keep v and g, spiking ones take the reset and +0, the rest integrate.
    let cells = v.iter_mut().zip(g.iter_mut()).zip(r.iter_mut());
    let results = next.iter().zip(&kept).zip(&live);
    for (lane, (((v, g), r), ((&next, &kept), &live))) in cells.zip(results).enumerate() {
        let spike = live & mask(next > cl.threshold);
        let integrate = live & !spike;
        *v = f32::from_bits(
            (v.to_bits() & !live) | (cl.reset.to_bits() & spike) | (next.to_bits() & integrate),
        );
        *g = f32::from_bits((g.to_bits() & !live) | (kept & integrate));
        if spike != 0 {
            *r = cl.refractory;
            spikes.push(first + lane as u32);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::XorShift32;

    fn class(refractory: u8, threshold: f32) -> Class {
        let a = libm::exp(-0.1 / 20.0);
        let b = libm::exp(-0.1 / 5.0);
        Class {
            membrane_decay: a as f32,
            conductance_decay: b as f32,
            coupling: (5.0 / 15.0 * (a - b)) as f32,
            rest: -52.0,
            reset: -52.0,
            threshold,
            refractory,
            delay: 18,
            rest_is_fixed: true,
        }
    }

    /// The packed sweep followed by [`landed`] for the cells that held input, against [`step`]
    /// neuron by neuron, over states that reach every branch: frozen, leaving refractoriness,
    /// spiking, conductance at the floor (a decayed conductance under the floor plus a tiny
    /// input), −0, input on a frozen or spiking neuron, uniform and mixed runs of classes, and a
    /// tail.
    #[test]
    fn the_packed_sweep_and_the_landed_cells_are_the_scalar_step_bit_for_bit() {
        // The build this CPU runs (AVX2 where it has it) and the baseline build.
        sweep_against_step(sweep);
        sweep_against_step(sweep_baseline);
    }

    fn sweep_against_step(sweep: fn(Cells<'_>, u32, &mut Vec<u32>)) {
        let classes = [class(22, -45.0), class(0, -45.0), class(2, -50.0)];
        let n = LANES * 40 + 7;
        let mut rng = XorShift32::stream(1, "sweep-test");
        let class_of: Vec<u8> = (0..n)
            .map(|k| match (k / LANES) % 4 {
                0 | 1 => 0,
                2 => 2,
                _ => (rng.below(3)) as u8,
            })
            .collect();
        let mut v: Vec<f32> = (0..n)
            .map(|_| -60.0 + 16.0 * rng.next_f64() as f32)
            .collect();
        let mut g = vec![0.0f32; n];
        let mut r: Vec<u8> = (0..n)
            .map(|_| [0, 0, 1, 2, 5][rng.below(5) as usize])
            .collect();
        let (mut v2, mut g2, mut r2) = (v.clone(), g.clone(), r.clone());
        let mut spiked = 0;
        let mut corrected = 0;
        for tick in 0..400 {
            // The cells that hold input this tick (an exact sum of 0 counts: a cell that was
            // written and cancelled out is on the landing list too).
            let mut landing = Vec::new();
            let mut p = vec![0.0f32; n];
            for (k, p) in p.iter_mut().enumerate() {
                let x = match rng.below(8) {
                    0 => 40.0 * (rng.next_f64() as f32 - 0.4),
                    1 => 2e-30,
                    2 => -0.0,
                    3 => 0.0,
                    _ => continue,
                };
                *p = x;
                landing.push(k);
                // A Poisson-like kick on the membrane, to both.
                if rng.below(40) == 0 {
                    v[k] += 6.0;
                    v2[k] += 6.0;
                }
            }
            let before: Vec<(f32, u8)> = landing.iter().map(|&k| (g[k], r[k])).collect();
            let mut packed = Vec::new();
            let cells = Cells {
                classes: &classes,
                class_of: &class_of,
                membrane: &mut v,
                conductance: &mut g,
                refractory: &mut r,
            };
            sweep(cells, 100, &mut packed);
            for (&k, &(g_old, r_old)) in landing.iter().zip(&before) {
                let spiked = packed.binary_search(&(100 + k as u32)).is_ok();
                let cl = &classes[usize::from(class_of[k])];
                if let Some(fixed) = landed(cl, g_old, r_old, spiked, p[k]) {
                    corrected += usize::from(fixed.to_bits() != g[k].to_bits());
                    g[k] = fixed;
                }
            }
            let mut scalar = Vec::new();
            for k in 0..n {
                let cl = &classes[usize::from(class_of[k])];
                if step(cl, &mut v2[k], &mut g2[k], &mut r2[k], &mut p[k]) {
                    scalar.push(100 + k as u32);
                }
            }
            assert_eq!(packed, scalar, "tick {tick}");
            let bits = |x: &[f32]| x.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&v), bits(&v2), "tick {tick}");
            assert_eq!(bits(&g), bits(&g2), "tick {tick}");
            assert_eq!(r, r2, "tick {tick}");
            spiked += scalar.len();
        }
        assert!(
            corrected > 10_000,
            "the landed cells change conductances: {corrected}"
        );
        assert!(
            spiked > 1_000,
            "the states reach threshold: {spiked} spikes"
        );
    }
}
