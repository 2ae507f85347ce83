//! The connectome: an immutable source-major CSR graph with signed synapse weights, shared
//! read-only between agents through `Arc`.
//!
//! Row `i` lists the outgoing edges of neuron `i` with strictly ascending targets (no duplicate
//! pair); weights are signed synapse counts (`i16`, never zero). Optional neuron names and a
//! metadata object (dataset name, source, licence, citation, ...) travel with it. The edges'
//! packed form (`connectome/packed.rs`), which `lif-1ms-v1` delivers from, is derived from the
//! arrays on first use and shared with the connectome.

pub(crate) mod packed;

use std::collections::BTreeMap;
use std::sync::OnceLock;

use flysim_types::Digest;

use crate::error::BrainError;
use packed::PackedEdges;

/// An immutable CSR connectome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connectome {
    pub(crate) indptr: Vec<u32>,
    pub(crate) targets: Vec<u32>,
    pub(crate) weights: Vec<i16>,
    pub(crate) names: Option<Vec<String>>,
    pub(crate) meta: BTreeMap<String, String>,
    pub(crate) digest: Digest,
    /// The edges one word each, built on first use ([`Connectome::packed`]).
    pub(crate) packed: Derived<Option<PackedEdges>>,
}

impl Connectome {
    /// Builds a connectome from its CSR arrays, checking every rule.
    ///
    /// # Errors
    ///
    /// [`BrainError::MalformedConnectome`] for any broken rule.
    pub fn from_csr(
        indptr: Vec<u32>,
        targets: Vec<u32>,
        weights: Vec<i16>,
        names: Option<Vec<String>>,
        meta: BTreeMap<String, String>,
    ) -> Result<Self, BrainError> {
        validate(&indptr, &targets, &weights, names.as_deref(), &meta)?;
        // The identity is the digest of the file encoding, which the parts alone determine.
        let digest = flysim_types::digest::sha256(&crate::format::encode_parts(
            &indptr,
            &targets,
            &weights,
            names.as_deref(),
            &meta,
        ));
        Ok(Self {
            indptr,
            targets,
            weights,
            names,
            meta,
            digest,
            packed: Derived::default(),
        })
    }

    /// Builds a connectome from `(pre, post, weight)` triples in any order; weights of repeated
    /// pairs are summed and pairs summing to zero are dropped.
    ///
    /// # Errors
    ///
    /// [`BrainError::ImportInconsistent`] when an index is out of range or a summed weight does
    /// not fit `i16`; [`BrainError::MalformedConnectome`] otherwise.
    pub fn from_edges(
        neurons: u32,
        edges: impl IntoIterator<Item = (u32, u32, i64)>,
        names: Option<Vec<String>>,
        meta: BTreeMap<String, String>,
        source_name: &str,
    ) -> Result<Self, BrainError> {
        let inconsistent = |reason: String| BrainError::ImportInconsistent {
            source_name: source_name.to_owned(),
            line: 0,
            column: 0,
            reason,
        };
        let mut list: Vec<(u32, u32, i64)> = edges.into_iter().collect();
        if let Some(&(pre, post, _)) = list.iter().find(|(p, q, _)| *p >= neurons || *q >= neurons)
        {
            return Err(inconsistent(format!(
                "edge {pre} -> {post} names a neuron outside 0..{neurons}"
            )));
        }
        list.sort_unstable_by_key(|&(p, q, _)| (p, q));
        let mut merged: Vec<(u32, u32, i64)> = Vec::with_capacity(list.len());
        for (p, q, w) in list {
            match merged.last_mut() {
                Some(last) if last.0 == p && last.1 == q => {
                    last.2 = last.2.checked_add(w).ok_or_else(|| {
                        inconsistent(format!("the weight of {p} -> {q} overflows"))
                    })?;
                }
                _ => merged.push((p, q, w)),
            }
        }
        merged.retain(|e| e.2 != 0);
        if merged.len() > u32::MAX as usize {
            return Err(inconsistent(format!(
                "{} edges exceed the format's limit of {}",
                merged.len(),
                u32::MAX
            )));
        }
        let mut indptr = vec![0u32; neurons as usize + 1];
        let mut targets = Vec::with_capacity(merged.len());
        let mut weights = Vec::with_capacity(merged.len());
        for &(p, q, w) in &merged {
            let w = i16::try_from(w).map_err(|_| {
                inconsistent(format!(
                    "the summed weight {w} of {p} -> {q} does not fit a signed 16-bit count (±32767)"
                ))
            })?;
            if w == i16::MIN {
                return Err(inconsistent(format!(
                    "the summed weight {w} of {p} -> {q} does not fit a signed 16-bit count (±32767)"
                )));
            }
            indptr[p as usize + 1] += 1;
            targets.push(q);
            weights.push(w);
        }
        for i in 0..neurons as usize {
            indptr[i + 1] += indptr[i];
        }
        Self::from_csr(indptr, targets, weights, names, meta)
    }

    /// Neurons.
    #[must_use]
    pub fn neurons(&self) -> u32 {
        (self.indptr.len() - 1) as u32
    }

    /// Edges.
    #[must_use]
    pub fn edges(&self) -> u64 {
        self.targets.len() as u64
    }

    /// Row starts, `neurons + 1` entries.
    #[must_use]
    pub fn indptr(&self) -> &[u32] {
        &self.indptr
    }

    /// Edge targets, row by row.
    #[must_use]
    pub fn targets(&self) -> &[u32] {
        &self.targets
    }

    /// Edge weights (signed synapse counts), row by row.
    #[must_use]
    pub fn weights(&self) -> &[i16] {
        &self.weights
    }

    /// The edge range of row `i`.
    #[must_use]
    pub fn row(&self, i: u32) -> std::ops::Range<usize> {
        self.indptr[i as usize] as usize..self.indptr[i as usize + 1] as usize
    }

    /// Neuron names, if the source had them.
    #[must_use]
    pub fn names(&self) -> Option<&[String]> {
        self.names.as_deref()
    }

    /// The metadata object (dataset, source, licence, citation, ...).
    #[must_use]
    pub fn meta(&self) -> &BTreeMap<String, String> {
        &self.meta
    }

    /// SHA-256 of the connectome's file encoding: its identity in profiles and snapshots.
    #[must_use]
    pub fn digest(&self) -> Digest {
        self.digest
    }

    /// The edges one 32-bit word each ([`packed`]), or `None` when a target or weight does not
    /// fit one; built on the first call and shared by every brain holding this connectome.
    pub(crate) fn packed(&self) -> Option<&PackedEdges> {
        self.packed
            .0
            .get_or_init(|| PackedEdges::new(self.neurons() as usize, &self.targets, &self.weights))
            .as_ref()
    }

    /// In-degree of every neuron.
    #[must_use]
    pub fn in_degrees(&self) -> Vec<u32> {
        let mut deg = vec![0u32; self.neurons() as usize];
        for &t in &self.targets {
            deg[t as usize] += 1;
        }
        deg
    }
}

/// A value computed from the other fields on demand: it does not take part in equality (two
/// connectomes with the same arrays are equal whether or not one of them has computed it).
#[derive(Debug, Clone, Default)]
pub(crate) struct Derived<T>(OnceLock<T>);

impl<T> PartialEq for Derived<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<T> Eq for Derived<T> {}

/// Checks every CSR rule.
pub(crate) fn validate(
    indptr: &[u32],
    targets: &[u32],
    weights: &[i16],
    names: Option<&[String]>,
    meta: &BTreeMap<String, String>,
) -> Result<(), BrainError> {
    let Some((&first, _)) = indptr.split_first() else {
        return Err(BrainError::malformed(
            "indptr is empty (it has neurons + 1 entries)",
        ));
    };
    let n = indptr.len() - 1;
    if n == 0 {
        return Err(BrainError::malformed(
            "a connectome has at least one neuron",
        ));
    }
    if n > u32::MAX as usize - 1 {
        return Err(BrainError::malformed("too many neurons for u32 indices"));
    }
    if first != 0 {
        return Err(BrainError::malformed(format!(
            "indptr[0] is {first}, not 0"
        )));
    }
    if targets.len() != weights.len() {
        return Err(BrainError::malformed(format!(
            "{} targets but {} weights",
            targets.len(),
            weights.len()
        )));
    }
    let last = indptr[n] as usize;
    if last != targets.len() {
        return Err(BrainError::malformed(format!(
            "indptr ends at {last}, but there are {} edges",
            targets.len()
        )));
    }
    for i in 0..n {
        let (a, b) = (indptr[i] as usize, indptr[i + 1] as usize);
        if b < a {
            return Err(BrainError::malformed(format!(
                "indptr decreases at row {i} ({a} then {b})"
            )));
        }
        let Some(row) = targets.get(a..b) else {
            return Err(BrainError::malformed(format!(
                "row {i} ends at edge {b}, but there are {} edges",
                targets.len()
            )));
        };
        for (k, &t) in row.iter().enumerate() {
            if t as usize >= n {
                return Err(BrainError::malformed(format!(
                    "edge {} of row {i} targets neuron {t}, outside 0..{n}",
                    a + k
                )));
            }
            if k > 0 && row[k - 1] >= t {
                return Err(BrainError::malformed(format!(
                    "row {i} is not strictly ascending at edge {} ({} then {t})",
                    a + k,
                    row[k - 1]
                )));
            }
        }
    }
    if let Some(e) = weights.iter().position(|&w| w == 0 || w == i16::MIN) {
        return Err(BrainError::malformed(format!(
            "edge {e} has weight {}, outside ±1..=±32767",
            weights[e]
        )));
    }
    if let Some(names) = names {
        if names.len() != n {
            return Err(BrainError::malformed(format!(
                "{} names for {n} neurons",
                names.len()
            )));
        }
        if let Some(i) = names
            .iter()
            .position(|s| s.is_empty() || s.contains(['\n', '\r']))
        {
            return Err(BrainError::malformed(format!(
                "name {i} is empty or holds a line break"
            )));
        }
    }
    if let Some(k) = meta.keys().find(|k| k.is_empty()) {
        return Err(BrainError::malformed(format!(
            "metadata key {k:?} is empty"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_edges_sums_sorts_and_drops_zero() {
        let c = Connectome::from_edges(
            3,
            [
                (2, 0, 1),
                (0, 2, 5),
                (0, 1, 2),
                (0, 2, -1),
                (1, 0, 3),
                (1, 0, -3),
            ],
            None,
            BTreeMap::new(),
            "t",
        )
        .unwrap();
        assert_eq!(c.indptr(), [0, 2, 2, 3]);
        assert_eq!(c.targets(), [1, 2, 0]);
        assert_eq!(c.weights(), [2, 4, 1]);
    }

    #[test]
    fn from_edges_refuses_overflow_and_out_of_range() {
        let e =
            Connectome::from_edges(2, [(0, 1, 40_000)], None, BTreeMap::new(), "t").unwrap_err();
        assert_eq!(e.code_str(), "FS0711");
        let e = Connectome::from_edges(2, [(0, 2, 1)], None, BTreeMap::new(), "t").unwrap_err();
        assert_eq!(e.code_str(), "FS0711");
    }
}
