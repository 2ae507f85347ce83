//! A connectome's edges one 32-bit word each, for the kernels that stream rows: the target in
//! the low [`TARGET_BITS`] bits, the signed weight in the high [`WEIGHT_BITS`] (two's
//! complement). A row is then one array instead of two (targets `u32`, weights `i16`): 4 bytes
//! an edge instead of 6, and a row's cache lines a third fewer, which is what delivering a
//! spike's row costs most (`docs/brain.md`, Performance).
//!
//! A connectome has this form only when every target and weight fits: at most 2^18 neurons
//! (FlyWire's 139,255 and every published fly connectome do) and every weight in
//! `-8192..8192` (FlyWire's largest synapse count per pair is in the low thousands). Otherwise
//! [`PackedEdges::new`] says `None` and the kernels read the two arrays.
//!
//! This module knows nothing of membranes, kernels or threads: it stores and decodes.

/// Bits holding an edge's target.
pub(crate) const TARGET_BITS: u32 = 18;
/// Bits holding an edge's weight.
pub(crate) const WEIGHT_BITS: u32 = 32 - TARGET_BITS;
/// The target bits of a word.
pub(crate) const TARGET_MASK: u32 = (1 << TARGET_BITS) - 1;
/// The largest connectome that packs: targets `0..MAX_NEURONS`.
pub(crate) const MAX_NEURONS: usize = 1 << TARGET_BITS;
/// The weights that pack.
pub(crate) const WEIGHTS: std::ops::Range<i16> =
    -(1 << (WEIGHT_BITS - 1))..(1 << (WEIGHT_BITS - 1));

/// Every edge of a connectome as one word, in the CSR order of its `targets` and `weights`
/// (edge `i` is word `i`).
#[derive(Debug, Clone)]
pub(crate) struct PackedEdges {
    words: Vec<u32>,
}

impl PackedEdges {
    /// The edges of `targets` and `weights` (equal lengths) among `neurons` neurons, or `None`
    /// when one does not fit.
    #[must_use]
    pub(crate) fn new(neurons: usize, targets: &[u32], weights: &[i16]) -> Option<Self> {
        if neurons > MAX_NEURONS || weights.iter().any(|w| !WEIGHTS.contains(w)) {
            return None;
        }
        let words = targets
            .iter()
            .zip(weights)
            .map(|(&t, &w)| pack(t, w))
            .collect();
        Some(Self { words })
    }

    /// The words of edges `range`.
    #[must_use]
    pub(crate) fn row(&self, range: std::ops::Range<usize>) -> &[u32] {
        &self.words[range]
    }
}

/// One edge's word (`target < 2^18`, `weight` in [`WEIGHTS`]).
#[must_use]
pub(crate) const fn pack(target: u32, weight: i16) -> u32 {
    target | ((weight as i32 as u32) << TARGET_BITS)
}

/// A word's target.
#[must_use]
#[inline(always)]
pub(crate) const fn target(word: u32) -> u32 {
    word & TARGET_MASK
}

/// A word's weight (an arithmetic shift brings the sign back).
#[must_use]
#[inline(always)]
pub(crate) const fn weight(word: u32) -> i16 {
    ((word as i32) >> TARGET_BITS) as i16
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every target and weight at the edges of the fields comes back as it went in, and the
    /// word is laid out as documented (target low, weight high, two's complement).
    #[test]
    fn a_word_holds_its_target_and_weight() {
        let targets = [0, 1, 139_254, TARGET_MASK - 1, TARGET_MASK];
        let weights = [-8192, -8191, -1, 1, 2, 255, 8190, 8191];
        for &t in &targets {
            for &w in &weights {
                let word = pack(t, w);
                assert_eq!((target(word), weight(word)), (t, w), "{t} {w}");
            }
        }
        assert_eq!(pack(5, 1), 5 | 1 << 18);
        assert_eq!(pack(5, -1), 0xfffc_0005);
        assert_eq!(pack(TARGET_MASK, -8192), 0x8003_ffff);
    }

    /// A connectome packs exactly when every target and weight fits, and then word `i` is
    /// edge `i`.
    #[test]
    fn only_what_fits_is_packed() {
        let targets = [3_u32, 7, 262_143];
        let fits = PackedEdges::new(MAX_NEURONS, &targets, &[-8192, 1, 8191]).expect("fits");
        let decoded: Vec<(u32, i16)> = fits
            .row(0..3)
            .iter()
            .map(|&w| (target(w), weight(w)))
            .collect();
        assert_eq!(decoded, [(3, -8192), (7, 1), (262_143, 8191)]);
        assert_eq!(fits.row(1..3), [pack(7, 1), pack(262_143, 8191)]);
        assert!(PackedEdges::new(MAX_NEURONS + 1, &targets, &[1, 1, 1]).is_none());
        assert!(PackedEdges::new(10, &[3], &[8192]).is_none());
        assert!(PackedEdges::new(10, &[3], &[-8193]).is_none());
        assert!(PackedEdges::new(10, &[3], &[i16::MAX]).is_none());
    }
}
