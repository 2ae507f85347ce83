//! The sweep of `lif-1ms-v1` over one shard, in index order: every neuron decays
//! (`decayed = m · decay`); a resting neuron (`r == 0`) adds its baseline (`v = decayed + b`) and
//! fires when `v ≥ threshold` (membrane `+0`, counter `R`); a refractory one keeps `decayed` and
//! counts down. The spikes are pushed as `start + k`, ascending.
//!
//! Written so that the compiler packs it into SIMD instructions from plain Rust: runs of
//! [`LANES`] neurons go in passes of one lane width (a loop mixing `u8` and `f32` lanes stays
//! scalar): the `u8` counters are widened to 32-bit "resting" masks, one `f32` pass computes
//! every lane's result by bit-mask selects (the same two IEEE-754 operations per neuron as the
//! scalar rule, so the same bits), and a `u8` pass sets the counters. On a CPU with AVX2 the
//! same code runs compiled for AVX2 ([`crate::simd`]); on one with AVX-512F, the sweep written
//! with its intrinsics ([`avx512`]), 16 neurons in one register and their spikes a lane mask.
//! The shard's tail takes [`step`], neuron by neuron.
//!
//! This module knows nothing of noise, drives, delivery or threads.

#[cfg(target_arch = "x86_64")]
mod avx512;

use super::Params;
use crate::simd::feature_or;

/// Neurons updated together: 16 `f32` lanes are four SSE2 or two AVX2 registers.
const LANES: usize = 16;

/// One shard's neurons as the sweep sees them (equal lengths).
pub(super) struct Cells<'s> {
    pub(super) membrane: &'s mut [f32],
    pub(super) refractory: &'s mut [u8],
    pub(super) baseline: &'s [f32],
}

/// The sweep of `cells`, whose first neuron is `start`.
pub(super) fn sweep(cells: Cells<'_>, p: &Params, start: u32, spikes: &mut Vec<u32>) {
    feature_or!(
        ["avx512f", "popcnt"],
        avx512::sweep(cells, p, start, spikes),
        feature_or!(
            "avx2",
            sweep_avx2(cells, p, start, spikes),
            sweep_lanes(cells, p, start, spikes)
        )
    );
}

/// [`sweep`] compiled with AVX2 (and nothing else: no FMA, so no operation changes).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn sweep_avx2(cells: Cells<'_>, p: &Params, start: u32, spikes: &mut Vec<u32>) {
    sweep_lanes(cells, p, start, spikes);
}

/// The body of [`sweep`], inlined into each build.
#[inline(always)]
fn sweep_lanes(cells: Cells<'_>, p: &Params, start: u32, spikes: &mut Vec<u32>) {
    in_runs(cells, p, start, spikes, |m, r, b| lanes(m, r, b, p));
}

/// The sweep's walk, inlined into the plain-Rust builds: `run` updates each run of [`LANES`]
/// neurons and says which fired (bit `k`: lane `k`); the last 0–15 neurons take [`step`]
/// ([`tail`]). Spikes are pushed as `start + k`, ascending.
#[inline(always)]
fn in_runs(
    cells: Cells<'_>,
    p: &Params,
    start: u32,
    spikes: &mut Vec<u32>,
    mut run: impl FnMut(&mut [f32; LANES], &mut [u8; LANES], &[f32; LANES]) -> u32,
) {
    let (runs, rest) = cells.into_runs();
    let mut first = start;
    for (m, r, b) in runs {
        let mut fired = run(m, r, b);
        while fired != 0 {
            spikes.push(first + fired.trailing_zeros());
            fired &= fired - 1;
        }
        first += LANES as u32;
    }
    tail(rest, p, first, spikes);
}

/// One run of [`LANES`] neurons: membranes, counters, baselines.
type Run<'s> = (&'s mut [f32; LANES], &'s mut [u8; LANES], &'s [f32; LANES]);

impl<'s> Cells<'s> {
    /// The shard's whole runs of [`LANES`] neurons, in index order, and the 0–15 neurons after
    /// them.
    #[inline(always)]
    fn into_runs(self) -> (impl ExactSizeIterator<Item = Run<'s>>, Cells<'s>) {
        let (m_runs, membrane) = self.membrane.as_chunks_mut::<LANES>();
        let (r_runs, refractory) = self.refractory.as_chunks_mut::<LANES>();
        let (b_runs, baseline) = self.baseline.as_chunks::<LANES>();
        let runs = m_runs
            .iter_mut()
            .zip(r_runs)
            .zip(b_runs)
            .map(|((m, r), b)| (m, r, b));
        let rest = Cells {
            membrane,
            refractory,
            baseline,
        };
        (runs, rest)
    }
}

/// The neurons after a shard's last whole run, the first of them `first`, each by [`step`].
#[inline(always)]
fn tail(rest: Cells<'_>, p: &Params, first: u32, spikes: &mut Vec<u32>) {
    let Cells {
        membrane,
        refractory,
        baseline,
    } = rest;
    for (k, ((m, r), &b)) in membrane
        .iter_mut()
        .zip(refractory)
        .zip(baseline)
        .enumerate()
    {
        if step(m, r, b, p) {
            spikes.push(first + k as u32);
        }
    }
}

/// One run of [`LANES`] neurons; bit `k` of the result says lane `k` fired.
#[inline(always)]
fn lanes(m: &mut [f32; LANES], r: &mut [u8; LANES], b: &[f32; LANES], p: &Params) -> u32 {
    let mut resting = [0u32; LANES];
    for (mask, &count) in resting.iter_mut().zip(r.iter()) {
        *mask = if count == 0 { u32::MAX } else { 0 };
    }
    let mut fire = [0u32; LANES];
    for k in 0..LANES {
        let decayed = m[k] * p.decay;
        let v = decayed + b[k];
        let f = resting[k] & if v >= p.threshold { u32::MAX } else { 0 };
        fire[k] = f;
        // Resting: `v`; refractory: `decayed`; fired: +0 (all bits clear).
        let kept = (v.to_bits() & resting[k]) | (decayed.to_bits() & !resting[k]);
        m[k] = f32::from_bits(kept & !f);
    }
    let mut fired = 0u32;
    for (k, (count, &f)) in r.iter_mut().zip(&fire).enumerate() {
        let f8 = f as u8;
        *count = (p.refractory & f8) | (count.saturating_sub(1) & !f8);
        fired |= (f & 1) << k;
    }
    fired
}

/// One neuron, the rule itself; whether it fired.
#[inline]
fn step(m: &mut f32, r: &mut u8, b: f32, p: &Params) -> bool {
    let decayed = *m * p.decay;
    let v = decayed + b;
    let resting = *r == 0;
    let fire = resting & (v >= p.threshold);
    *m = if fire {
        0.0
    } else if resting {
        v
    } else {
        decayed
    };
    *r = if fire {
        p.refractory
    } else {
        r.saturating_sub(1)
    };
    fire
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::XorShift32;

    /// A build of the sweep for a CPU feature.
    type Build = unsafe fn(Cells<'_>, &Params, u32, &mut Vec<u32>);

    /// The builds this CPU has: the baseline, and AVX2 and AVX-512F where detected.
    fn builds() -> Vec<(&'static str, Build)> {
        let mut builds: Vec<(&'static str, Build)> = vec![("baseline", sweep_lanes)];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                builds.push(("avx2", sweep_avx2));
            }
            if std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("popcnt")
            {
                builds.push(("avx512f", avx512::sweep));
            }
        }
        builds
    }

    /// The lanes and every build against [`step`], neuron by neuron, over ticks of random
    /// states: membranes around the threshold, negative, ±0 and tiny; counters 0..=R.
    #[test]
    fn the_packed_sweep_is_the_scalar_step_bit_for_bit() {
        let p = Params {
            decay: 0.951_229_4,
            threshold: 1.0,
            refractory: 3,
            scale: 0.0,
            floor: -2.0,
            kicks: 0,
            kick: 0.0,
        };
        let n = 16 * 40 + 7;
        let mut rng = XorShift32::new(12_345);
        let mut pick = |k: u32| rng.below(k);
        let mut membrane: Vec<f32> = (0..n)
            .map(|i| match i % 6 {
                0 => 0.0,
                1 => -0.0,
                2 => 1e-39,
                _ => pick(4_000) as f32 / 1_000.0 - 1.5,
            })
            .collect();
        let mut refractory: Vec<u8> = (0..n).map(|_| pick(4) as u8).collect();
        let baseline: Vec<f32> = (0..n).map(|_| pick(1_000) as f32 / 8_000.0).collect();
        let (mut total, mut frozen) = (0, 0);
        for tick in 0..60 {
            let (mut m_ref, mut r_ref) = (membrane.clone(), refractory.clone());
            let mut expected = Vec::new();
            for (k, ((m, r), &b)) in m_ref.iter_mut().zip(&mut r_ref).zip(&baseline).enumerate() {
                frozen += usize::from(*r > 0);
                if step(m, r, b, &p) {
                    expected.push(100 + k as u32);
                }
            }
            let (m_before, r_before) = (membrane.clone(), refractory.clone());
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            let mut spikes = Vec::new();
            let cells = Cells {
                membrane: &mut membrane,
                refractory: &mut refractory,
                baseline: &baseline,
            };
            sweep(cells, &p, 100, &mut spikes);
            assert_eq!(
                bits(&membrane),
                bits(&m_ref),
                "tick {tick}: dispatched build"
            );
            assert_eq!(refractory, r_ref, "tick {tick}");
            assert_eq!(spikes, expected, "tick {tick}");
            for (build, run) in builds() {
                let (mut m, mut r) = (m_before.clone(), r_before.clone());
                // A list that already holds spikes (as another shard's would) and has room
                // left: the build appends after them.
                let mut spikes = Vec::with_capacity(3);
                spikes.extend([1, 2]);
                let cells = Cells {
                    membrane: &mut m,
                    refractory: &mut r,
                    baseline: &baseline,
                };
                #[expect(unsafe_code, reason = "a build for a CPU feature")]
                // SAFETY: `builds` lists a build only where this CPU has its feature.
                unsafe {
                    run(cells, &p, 100, &mut spikes);
                }
                assert_eq!(bits(&m), bits(&m_ref), "tick {tick}: {build} build");
                assert_eq!(r, r_ref, "tick {tick}: {build} build");
                assert_eq!(spikes[..2], [1, 2], "tick {tick}: {build} build");
                assert_eq!(spikes[2..], expected, "tick {tick}: {build} build");
            }
            total += spikes.len();
            // Kick some neurons back up so the sweep keeps meeting the threshold.
            for k in (tick % 5..n).step_by(5) {
                membrane[k] += 0.4;
            }
        }
        assert!(total > 500, "the states fired {total} times");
        assert!(frozen > 5_000, "{frozen} refractory neuron-ticks");
    }
}
