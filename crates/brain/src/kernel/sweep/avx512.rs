//! The sweep of `lif-1ms-v1` 16 neurons at a time with AVX-512F: per run of 16, one load of the
//! membranes, the baselines and the `u8` counters (widened to 32-bit lanes), the rule's two
//! IEEE-754 operations (`decayed = m · decay`, `v = decayed + b`), the threshold compare as a
//! lane mask (so the run's spikes are the mask's bits), the membrane's three outcomes (resting:
//! `v`; refractory: `decayed`; fired: `+0`) as masked moves, and the counters counted down and
//! narrowed back to `u8` in the lanes. The same operations per neuron as [`super::step`], so the
//! same bits. The run's spikes are its neurons' indices compressed by the mask (`vpcompressd`)
//! and stored at the end of the spike list, which has room for them reserved before the walk:
//! no branch on whether a run fired (a fifth of the runs do, at random, so the branch was
//! mispredicted often) and no call in the walk. The last 0–15 neurons are the other builds'
//! ([`super::tail`]).
//!
//! This module knows nothing of noise, drives, delivery or threads.

use std::arch::x86_64::{
    _CMP_GE_OQ, _mm_loadu_si128, _mm_storeu_si128, _mm512_add_epi32, _mm512_add_ps,
    _mm512_cmpeq_epi32_mask, _mm512_cvtepi32_epi8, _mm512_cvtepu8_epi32, _mm512_loadu_ps,
    _mm512_mask_blend_ps, _mm512_mask_cmp_ps_mask, _mm512_mask_mov_epi32,
    _mm512_maskz_compress_epi32, _mm512_maskz_mov_ps, _mm512_maskz_sub_epi32, _mm512_mul_ps,
    _mm512_set_epi32, _mm512_set1_epi32, _mm512_set1_ps, _mm512_setzero_si512, _mm512_storeu_epi32,
    _mm512_storeu_ps,
};

use super::{Cells, LANES, Params, tail};

// The loads and stores below move 16 lanes: the walk's runs must be exactly that long.
const _: () = assert!(LANES == 16, "a run is one 512-bit register of f32 lanes");

/// [`super::sweep`] with AVX-512F (and POPCNT, to count a run's spikes).
#[target_feature(enable = "avx512f,popcnt")]
pub(super) fn sweep(cells: Cells<'_>, p: &Params, start: u32, spikes: &mut Vec<u32>) {
    let decay = _mm512_set1_ps(p.decay);
    let threshold = _mm512_set1_ps(p.threshold);
    let period = _mm512_set1_epi32(i32::from(p.refractory));
    let one = _mm512_set1_epi32(1);
    let (runs, rest) = cells.into_runs();
    let whole = runs.len();
    // Room for every neuron of the runs: a run's 16 lanes are stored whole, at most
    // `16 · (runs before it)` spikes after the list's start, so within the room.
    spikes.reserve(whole * LANES);
    let room = spikes.spare_capacity_mut().as_mut_ptr().cast::<u32>();
    let mut written = 0;
    // The indices of the current run's neurons, one a lane.
    let mut index = _mm512_add_epi32(
        _mm512_set1_epi32(start.cast_signed()),
        _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
    );
    let run_width = _mm512_set1_epi32(LANES as i32);
    for (m, r, b) in runs {
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
        // The fired lanes' indices, ascending, in the low lanes.
        let found = _mm512_maskz_compress_epi32(fired, index);
        // SAFETY: `m`, `r` as the loads above, written unaligned; the 16 lanes of `found` go to
        // `room + written`, inside the room reserved above (`written` is at most 16 times the
        // runs before this one) and unaligned.
        #[expect(
            unsafe_code,
            reason = "storing 16 neurons and the run's spikes from lanes"
        )]
        unsafe {
            _mm512_storeu_ps(m.as_mut_ptr(), m_out);
            _mm_storeu_si128(r.as_mut_ptr().cast(), r_out);
            _mm512_storeu_epi32(room.add(written).cast(), found);
        }
        written += fired.count_ones() as usize;
        index = _mm512_add_epi32(index, run_width);
    }
    let len = spikes.len() + written;
    // SAFETY: the first `written` slots of the room hold the runs' spikes (each run stored its
    // `fired.count_ones()` indices where the last one's ended), and the room was reserved.
    #[expect(unsafe_code, reason = "the spikes the runs stored become the list's")]
    unsafe {
        spikes.set_len(len);
    }
    let first = start + (whole * LANES) as u32;
    tail(rest, p, first, spikes);
}
