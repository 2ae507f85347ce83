//! A row without plastic edges delivered 16 targets at a time with AVX-512F: the row's targets
//! and weights are loaded 16 at a time (16 packed words, or 16 targets and 16 weights), the
//! increments `f32(w) · scale` computed in the lanes, the 16 membranes gathered,
//! `max(m + increment, floor)` computed lane by lane (one add, one compare-and-select: the
//! operations of [`super::plain_row`], so the same bits), and the results scattered back.
//!
//! Within a row every target appears once (a [`Connectome`](crate::Connectome) row's targets
//! are strictly ascending), so no two lanes of a gather and its scatter share a membrane and
//! every target still receives its additions in the kernel's order: row by row, in spike order.
//!
//! Every lane's index is checked against the membrane before a gather or scatter touches it;
//! one outside it panics, as the other builds' indexing does.
//!
//! This module knows nothing of plasticity, prefetching, the sweep or threads.

use std::arch::x86_64::{
    __m512, __m512i, __mmask16, _CMP_LT_OQ, _mm256_loadu_si256, _mm512_add_ps, _mm512_and_si512,
    _mm512_cmp_ps_mask, _mm512_cvtepi16_epi32, _mm512_cvtepi32_ps, _mm512_loadu_epi32,
    _mm512_loadu_ps, _mm512_mask_blend_ps, _mm512_mask_cmplt_epu32_mask, _mm512_mask_i32gather_ps,
    _mm512_mask_i32scatter_ps, _mm512_maskz_loadu_epi32, _mm512_mul_ps, _mm512_set1_epi32,
    _mm512_set1_ps, _mm512_setzero_ps, _mm512_srai_epi32, _mm512_sub_epi32,
};

use std::marker::PhantomData;

use super::{Edges, Plain};
use crate::connectome::packed::{TARGET_BITS, TARGET_MASK};

/// Targets delivered together: one 512-bit register of `f32` lanes.
const LANES: usize = 16;

/// Delivers `row` as [`super::plain_row`] does, 16 targets at a time.
#[target_feature(enable = "avx512f")]
pub(super) fn plain_row(row: Plain<'_>, membrane: &mut [f32]) {
    // Offsets are 32-bit signed lanes: a membrane past `i32::MAX` neurons takes the scalar rule.
    if i32::try_from(membrane.len()).is_err() {
        super::plain_row(row, membrane);
        return;
    }
    let lanes = Lanes::over(membrane, row);
    match row.edges {
        Edges::Split { targets, weights } => lanes.split(targets, weights),
        Edges::Packed(words) => lanes.packed(words),
    }
}

impl Lanes<'_> {
    /// Delivers a row of targets and weights, 16 at a time.
    #[target_feature(enable = "avx512f")]
    fn split(&self, targets: &[u32], weights: &[i16]) {
        let (target_runs, target_tail) = targets.as_chunks::<LANES>();
        let (weight_runs, weight_tail) = weights[..targets.len()].as_chunks::<LANES>();
        for (t, w) in target_runs.iter().zip(weight_runs) {
            // SAFETY: `t` and `w` are 16 elements each (64 and 32 bytes), read unaligned.
            #[expect(unsafe_code, reason = "loading 16 targets and 16 weights into lanes")]
            let (t, w) = unsafe {
                (
                    _mm512_loadu_epi32(t.as_ptr().cast::<i32>()),
                    _mm256_loadu_si256(w.as_ptr().cast()),
                )
            };
            let increment = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(w)), self.scale);
            self.deliver(t, increment, 0xffff);
        }
        if !target_tail.is_empty() {
            let mut t = [0_u32; LANES];
            let mut increment = [0.0_f32; LANES];
            for (k, (&target, &w)) in target_tail.iter().zip(weight_tail).enumerate() {
                t[k] = target;
                increment[k] = f32::from(w) * self.scalar_scale;
            }
            // SAFETY: both arrays are 16 elements (64 bytes), read unaligned.
            #[expect(unsafe_code, reason = "loading the row's last targets into lanes")]
            let (t, increment) = unsafe {
                (
                    _mm512_loadu_epi32(t.as_ptr().cast::<i32>()),
                    _mm512_loadu_ps(increment.as_ptr()),
                )
            };
            let used: __mmask16 = (1 << target_tail.len()) - 1;
            self.deliver(t, increment, used);
        }
    }

    /// Delivers a row of packed words, 16 at a time: the target is the word's low bits, the
    /// weight its high bits shifted down with the sign (the operations of
    /// [`packed::target`](crate::connectome::packed::target) and `weight`).
    #[target_feature(enable = "avx512f")]
    fn packed(&self, words: &[u32]) {
        let mask = _mm512_set1_epi32(TARGET_MASK.cast_signed());
        let one = |word: __m512i, used: __mmask16| {
            let target = _mm512_and_si512(word, mask);
            let weight = _mm512_srai_epi32::<TARGET_BITS>(word);
            self.deliver(
                target,
                _mm512_mul_ps(_mm512_cvtepi32_ps(weight), self.scale),
                used,
            );
        };
        let (runs, tail) = words.as_chunks::<LANES>();
        for run in runs {
            // SAFETY: `run` is 16 words (64 bytes), read unaligned.
            #[expect(unsafe_code, reason = "loading 16 packed edges into lanes")]
            let word = unsafe { _mm512_loadu_epi32(run.as_ptr().cast::<i32>()) };
            one(word, 0xffff);
        }
        if !tail.is_empty() {
            let used: __mmask16 = (1 << tail.len()) - 1;
            // SAFETY: only the lanes of `used` are read: `tail.len()` words.
            #[expect(unsafe_code, reason = "loading the row's last packed edges into lanes")]
            let word = unsafe { _mm512_maskz_loadu_epi32(used, tail.as_ptr().cast::<i32>()) };
            one(word, used);
        }
    }
}

/// What every 16 targets of a row share; it borrows the membrane it delivers to.
struct Lanes<'m> {
    start: __m512i,
    scale: __m512,
    /// `scale` as one `f32`, for the split tail's increments.
    scalar_scale: f32,
    floor: __m512,
    /// The membrane's length (at most `i32::MAX`).
    len: __m512i,
    /// The membrane's first element.
    base: *mut f32,
    membrane: PhantomData<&'m mut [f32]>,
}

impl<'m> Lanes<'m> {
    /// Lanes delivering `row`'s constants to `membrane` (at most `i32::MAX` elements).
    #[target_feature(enable = "avx512f")]
    fn over(membrane: &'m mut [f32], row: Plain<'_>) -> Self {
        let len = i32::try_from(membrane.len())
            .expect("`plain_row` gives longer membranes to the scalar rule");
        Lanes {
            start: _mm512_set1_epi32(row.start.cast_signed()),
            scale: _mm512_set1_ps(row.scale),
            scalar_scale: row.scale,
            floor: _mm512_set1_ps(row.floor),
            len: _mm512_set1_epi32(len),
            base: membrane.as_mut_ptr(),
            membrane: PhantomData,
        }
    }

    /// `m[t - start] = max(m[t - start] + increment, floor)` in the lanes of `used`.
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn deliver(&self, targets: __m512i, increment: __m512, used: __mmask16) {
        let index = _mm512_sub_epi32(targets, self.start);
        // As the scalar rule's indexing, an index outside the membrane panics.
        assert!(
            _mm512_mask_cmplt_epu32_mask(used, index, self.len) == used,
            "a target outside the shard's membrane"
        );
        // SAFETY: every used lane's index is in `0..len` (checked just above, as unsigned, and
        // `len ≤ i32::MAX`, so the signed offsets are the same), `base` points to `len`
        // elements, and no other reference to the membrane is used while `base` is; unused
        // lanes are neither read nor written.
        #[expect(unsafe_code, reason = "gathering and scattering 16 membranes")]
        unsafe {
            let m = _mm512_mask_i32gather_ps::<4>(_mm512_setzero_ps(), used, index, self.base);
            let v = _mm512_add_ps(m, increment);
            let below = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(v, self.floor);
            let v = _mm512_mask_blend_ps(below, v, self.floor);
            _mm512_mask_i32scatter_ps::<4>(self.base, used, index, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Edges, Plain, plain_row as scalar_row};
    use super::plain_row;
    use crate::connectome::packed;

    /// xorshift64: the test's own reproducible draws.
    struct Draw(u64);

    impl Draw {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    fn has_avx512f() -> bool {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return true;
        }
        #[expect(clippy::print_stderr, reason = "a test says why it skips")]
        {
            eprintln!("skipped: this CPU has no AVX-512F");
        }
        false
    }

    /// Rows of every length from 0 to 70 (whole runs of 16 and every tail), cut to a shard that
    /// starts past 0, with membranes just above and below the floor and weights up to the
    /// packed extremes: the AVX-512F build, from the split and from the packed row, leaves the
    /// membrane bit for bit as the scalar rule does, and touches nothing else.
    #[test]
    fn the_gathered_row_is_the_scalar_row_bit_for_bit() {
        if !has_avx512f() {
            return;
        }
        let mut draw = Draw(0x9e37_79b9_7f4a_7c15);
        let (start, len) = (1_000_u32, 300_usize);
        let (scale, floor) = (0.37_f32, -2.0_f32);
        for row_len in 0..=70 {
            for _ in 0..20 {
                // Distinct ascending targets inside the shard.
                let mut targets: Vec<u32> = (0..len as u32).map(|k| start + k).collect();
                for k in (1..targets.len()).rev() {
                    targets.swap(k, draw.below(k as u64 + 1) as usize);
                }
                targets.truncate(row_len);
                targets.sort_unstable();
                let weights: Vec<i16> = (0..row_len)
                    .map(|_| match draw.below(40) {
                        0 => -8192,
                        1 => 8191,
                        _ => draw.below(200) as i16 - 100,
                    })
                    .collect();
                let words: Vec<u32> = targets
                    .iter()
                    .zip(&weights)
                    .map(|(&t, &w)| packed::pack(t, w))
                    .collect();
                let membrane: Vec<f32> = (0..len)
                    .map(|_| floor + (draw.below(4_000) as f32 - 1_000.0) / 97.0)
                    .collect();
                let row = |edges| Plain {
                    edges,
                    start,
                    scale,
                    floor,
                };
                let split = row(Edges::Split {
                    targets: &targets,
                    weights: &weights,
                });
                let mut want = membrane.clone();
                scalar_row(split, &mut want);
                let bits = |m: &[f32]| m.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                for (layout, edges) in [("split", split.edges), ("packed", Edges::Packed(&words))] {
                    let mut got = membrane.clone();
                    #[expect(unsafe_code, reason = "the AVX-512F build, on a CPU that has it")]
                    // SAFETY: AVX-512F was detected above.
                    unsafe {
                        plain_row(row(edges), &mut got);
                    }
                    assert_eq!(
                        bits(&got),
                        bits(&want),
                        "a {layout} row of {row_len} targets"
                    );
                }
                let touched = want.iter().zip(&membrane).filter(|(a, b)| a != b).count();
                assert!(
                    row_len < 8 || touched > row_len / 2,
                    "the row did something"
                );
            }
        }
    }

    /// A target outside the shard's membrane panics, as the scalar rule's indexing does,
    /// instead of being read or written.
    #[test]
    fn a_target_outside_the_membrane_panics() {
        if !has_avx512f() {
            return;
        }
        // The packed form's largest target is 2^18 - 1.
        for outside in [10_u32, 11, 100, packed::TARGET_MASK, u32::MAX] {
            // 17 targets: the last one in the tail; and 16: the last in a whole run.
            for n in [16_usize, 17] {
                let mut targets: Vec<u32> = (0..n as u32 - 1).map(|k| k % 10).collect();
                targets.push(outside);
                let weights = vec![1_i16; n];
                let words: Vec<u32> = targets.iter().map(|&t| packed::pack(t, 1)).collect();
                let mut layouts = vec![(
                    "split",
                    Edges::Split {
                        targets: &targets,
                        weights: &weights,
                    },
                )];
                if outside <= packed::TARGET_MASK {
                    layouts.push(("packed", Edges::Packed(&words)));
                }
                for (layout, edges) in layouts {
                    let mut membrane = vec![0.0_f32; 10];
                    let row = Plain {
                        edges,
                        start: 0,
                        scale: 1.0,
                        floor: -1.0,
                    };
                    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        #[expect(unsafe_code, reason = "the AVX-512F build, on a CPU that has it")]
                        // SAFETY: AVX-512F was detected above.
                        unsafe {
                            plain_row(row, &mut membrane);
                        }
                    }));
                    assert!(
                        result.is_err(),
                        "{layout} target {outside} of {n} was delivered"
                    );
                }
            }
        }
    }
}
