//! The sweep of `lif-1ms-v1` 16 neurons at a time with AVX-512F: per run of 16, one load of the
//! membranes, the baselines and the `u8` counters (widened to 32-bit lanes), the rule's two
//! IEEE-754 operations (`decayed = m · decay`, `v = decayed + b`), the threshold compare as a
//! lane mask (so the run's spikes are the mask's bits), the membrane's three outcomes (resting:
//! `v`; refractory: `decayed`; fired: `+0`) as masked moves, and the counters counted down and
//! narrowed back to `u8` in the lanes. The same operations per neuron as [`super::step`], so the
//! same bits. The walk over the runs, the spikes and the last 0–15 neurons are the other
//! builds' ([`super::in_runs`]).
//!
//! This module knows nothing of noise, drives, delivery or threads.

use std::arch::x86_64::{
    _CMP_GE_OQ, _mm_loadu_si128, _mm_storeu_si128, _mm512_add_ps, _mm512_cmpeq_epi32_mask,
    _mm512_cvtepi32_epi8, _mm512_cvtepu8_epi32, _mm512_loadu_ps, _mm512_mask_blend_ps,
    _mm512_mask_cmp_ps_mask, _mm512_mask_mov_epi32, _mm512_maskz_mov_ps, _mm512_maskz_sub_epi32,
    _mm512_mul_ps, _mm512_set1_epi32, _mm512_set1_ps, _mm512_setzero_si512, _mm512_storeu_ps,
};

use super::{Cells, LANES, Params, in_runs};

// The loads and stores below move 16 lanes: the walk's runs must be exactly that long.
const _: () = assert!(LANES == 16, "a run is one 512-bit register of f32 lanes");

/// [`super::sweep`] with AVX-512F.
#[target_feature(enable = "avx512f")]
pub(super) fn sweep(cells: Cells<'_>, p: &Params, start: u32, spikes: &mut Vec<u32>) {
    let decay = _mm512_set1_ps(p.decay);
    let threshold = _mm512_set1_ps(p.threshold);
    let period = _mm512_set1_epi32(i32::from(p.refractory));
    let one = _mm512_set1_epi32(1);
    in_runs(cells, p, start, spikes, |m, r, b| {
        // SAFETY: `m` and `b` are 16 `f32` (64 bytes) and `r` 16 bytes (`LANES` is 16, checked
        // at compile time above), read unaligned.
        #[expect(unsafe_code, reason = "loading 16 neurons into lanes")]
        let (m_in, b_in, r_in) = unsafe {
            (
                _mm512_loadu_ps(m.as_ptr()),
                _mm512_loadu_ps(b.as_ptr()),
                _mm512_cvtepu8_epi32(_mm_loadu_si128(r.as_ptr().cast())),
            )
        };
        let resting = _mm512_cmpeq_epi32_mask(r_in, _mm512_setzero_si512());
        let decayed = _mm512_mul_ps(m_in, decay);
        let v = _mm512_add_ps(decayed, b_in);
        // `v ≥ threshold`, ordered (false for NaN, as Rust's `>=`), in the resting lanes only.
        let fired = _mm512_mask_cmp_ps_mask::<_CMP_GE_OQ>(resting, v, threshold);
        let kept = _mm512_mask_blend_ps(resting, decayed, v);
        // A fired lane's membrane is +0: all bits clear.
        let m_out = _mm512_maskz_mov_ps(!fired, kept);
        // Refractory lanes count down by one (resting ones are 0 and stay 0); fired ones start
        // the period.
        let counted = _mm512_maskz_sub_epi32(!resting, r_in, one);
        let r_out = _mm512_cvtepi32_epi8(_mm512_mask_mov_epi32(counted, fired, period));
        // SAFETY: as the loads above, written unaligned.
        #[expect(unsafe_code, reason = "storing 16 neurons from lanes")]
        unsafe {
            _mm512_storeu_ps(m.as_mut_ptr(), m_out);
            _mm_storeu_si128(r.as_mut_ptr().cast(), r_out);
        }
        u32::from(fired)
    });
}
