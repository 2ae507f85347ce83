//! The plain sweep of `lif-exp-delay-v1`: steps 1–3 of the tick for every neuron of a shard,
//! ascending, written so that the compiler packs them into SIMD instructions without `unsafe`.
//!
//! A run of [`LANES`] neurons of one class is updated by [`lanes`] without branches, in passes
//! of one lane width (the lessons of a first attempt: a loop that mixes `u8` and `f32` lanes
//! stays scalar, passes of one width vectorise): the `u8` refractory counters count down and
//! say which lanes integrate; those flags are widened to 32-bit masks; one `f32` pass computes
//! every lane's `v'`, `g·b + p` and spike exactly as [`step`] does — the same f32 operations
//! in the same order — and keeps, by bit-mask selects, the old values for frozen lanes, the
//! reset for spiking ones and the integrated values for the rest; the rare spikes then set
//! their counters and join the spike list in lane order. The frozen and spiking lanes compute
//! values they throw away, which changes no stored bit. Runs of mixed classes and the shard's
//! tail take [`step`], neuron by neuron.
//!
//! This module knows nothing of the active list, the drives, delivery, snapshots or threads.

use super::{CONDUCTANCE_FLOOR, Class};

/// Neurons updated together: 16 `f32` lanes are four SSE2 registers, 16 `u8` lanes one.
const LANES: usize = 16;

/// One shard's state for the sweep: its neurons' cells and this tick's ring slot.
pub(super) struct Cells<'s> {
    pub(super) classes: &'s [Class],
    /// The class of every neuron of the shard.
    pub(super) class_of: &'s [u8],
    pub(super) membrane: &'s mut [f32],
    pub(super) conductance: &'s mut [f32],
    pub(super) refractory: &'s mut [u8],
    /// The shard's range of the ring slot read this tick.
    pub(super) pending: &'s mut [f32],
}

/// Steps 1–3 for every neuron of `cells`, ascending; spikes are pushed as `start + k`.
pub(super) fn sweep(cells: Cells<'_>, start: u32, spikes: &mut Vec<u32>) {
    let Cells {
        classes,
        class_of,
        membrane,
        conductance,
        refractory,
        pending,
    } = cells;
    let (v_runs, v_tail) = membrane.as_chunks_mut::<LANES>();
    let (g_runs, g_tail) = conductance.as_chunks_mut::<LANES>();
    let (r_runs, r_tail) = refractory.as_chunks_mut::<LANES>();
    let (p_runs, p_tail) = pending.as_chunks_mut::<LANES>();
    let (c_runs, c_tail) = class_of.as_chunks::<LANES>();
    let runs = v_runs
        .iter_mut()
        .zip(g_runs)
        .zip(r_runs)
        .zip(p_runs)
        .zip(c_runs);
    let mut first = start;
    for ((((v, g), r), p), class) in runs {
        let c0 = class[0];
        // One 16-byte comparison rather than 16 branches.
        if u128::from_ne_bytes(*class) == u128::from_ne_bytes([c0; LANES]) {
            lanes(&classes[usize::from(c0)], v, g, r, p, first, spikes);
        } else {
            let cells = v.iter_mut().zip(g.iter_mut()).zip(r.iter_mut()).zip(p);
            for (k, ((((v, g), r), p), &c)) in cells.zip(class).enumerate() {
                if step(&classes[usize::from(c)], v, g, r, p) {
                    spikes.push(first + k as u32);
                }
            }
        }
        first += LANES as u32;
    }
    let cells = v_tail
        .iter_mut()
        .zip(g_tail.iter_mut())
        .zip(r_tail.iter_mut())
        .zip(p_tail);
    for (k, ((((v, g), r), p), &c)) in cells.zip(c_tail).enumerate() {
        if step(&classes[usize::from(c)], v, g, r, p) {
            spikes.push(first + k as u32);
        }
    }
}

/// Steps 1–3 for one neuron of class `cl` (`p` its ring cell); whether it spiked.
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
        let decayed = *g * cl.conductance_decay + incoming;
        // Flush to zero before f32 goes subnormal (slow on every CPU flysim targets).
        *g = if decayed.abs() < CONDUCTANCE_FLOOR {
            0.0
        } else {
            decayed
        };
        false
    }
}

/// All ones when `b`, else zero: a lane mask.
fn mask(b: bool) -> u32 {
    u32::from(b).wrapping_neg()
}

/// [`step`] for [`LANES`] neurons of class `cl`, the first of them `first`, by lane masks.
#[inline]
fn lanes(
    cl: &Class,
    v: &mut [f32; LANES],
    g: &mut [f32; LANES],
    r: &mut [u8; LANES],
    p: &mut [f32; LANES],
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
    // f32 lanes: step's arithmetic for every lane, kept by the masks.
    let mut fired = [0u32; LANES];
    let cells = v.iter_mut().zip(g.iter_mut()).zip(p.iter_mut());
    for (((v, g), p), (&live, fired)) in cells.zip(live.iter().zip(&mut fired)) {
        let incoming = std::mem::replace(p, 0.0);
        let next = cl.integrated(*v, *g);
        let spike = live & mask(next > cl.threshold);
        let integrate = live & !spike;
        let decayed = *g * cl.conductance_decay + incoming;
        let kept = decayed.to_bits() & !mask(decayed.abs() < CONDUCTANCE_FLOOR);
        // Frozen lanes keep v and g, spiking ones take the reset and +0, the rest integrate.
        *v = f32::from_bits(
            (v.to_bits() & !live) | (cl.reset.to_bits() & spike) | (next.to_bits() & integrate),
        );
        *g = f32::from_bits((g.to_bits() & !live) | (kept & integrate));
        *fired = spike;
    }
    if fired.iter().fold(0, |any, &f| any | f) != 0 {
        for (k, (&f, r)) in fired.iter().zip(r.iter_mut()).enumerate() {
            if f != 0 {
                *r = cl.refractory;
                spikes.push(first + k as u32);
            }
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

    /// The packed sweep against [`step`] neuron by neuron, over states that reach every branch:
    /// frozen, leaving refractoriness, spiking, conductance at the floor, −0, uniform and mixed
    /// runs of classes, and a tail.
    #[test]
    fn the_packed_sweep_is_the_scalar_step_bit_for_bit() {
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
        let (mut p, mut p2) = (vec![0.0f32; n], vec![0.0f32; n]);
        let mut spiked = 0;
        for tick in 0..400 {
            for k in 0..n {
                let x = match rng.below(8) {
                    0 => 40.0 * (rng.next_f64() as f32 - 0.4),
                    1 => 2e-30,
                    2 => -0.0,
                    _ => 0.0,
                };
                p[k] = x;
                p2[k] = x;
                // A Poisson-like kick on the membrane, to both.
                if rng.below(40) == 0 {
                    v[k] += 6.0;
                    v2[k] += 6.0;
                }
            }
            let mut packed = Vec::new();
            let cells = Cells {
                classes: &classes,
                class_of: &class_of,
                membrane: &mut v,
                conductance: &mut g,
                refractory: &mut r,
                pending: &mut p,
            };
            sweep(cells, 100, &mut packed);
            let mut scalar = Vec::new();
            for k in 0..n {
                let cl = &classes[usize::from(class_of[k])];
                if step(cl, &mut v2[k], &mut g2[k], &mut r2[k], &mut p2[k]) {
                    scalar.push(100 + k as u32);
                }
            }
            assert_eq!(packed, scalar, "tick {tick}");
            let bits = |x: &[f32]| x.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&v), bits(&v2), "tick {tick}");
            assert_eq!(bits(&g), bits(&g2), "tick {tick}");
            assert_eq!(bits(&p), bits(&p2), "tick {tick}");
            assert_eq!(r, r2, "tick {tick}");
            spiked += scalar.len();
        }
        assert!(
            spiked > 1_000,
            "the states reach threshold: {spiked} spikes"
        );
    }
}
