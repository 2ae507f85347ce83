//! The Shiu et al. 2024 model files: `Completeness_783.csv` (first column the root id; its row
//! order is the neuron index) and the connectivity table, as CSV here or as Parquet (module
//! `parquet`, behind the Cargo feature of that name). Both forms find the same columns by name
//! ([`Columns`]) and hand every row to one [`Assembly`], which checks it against the
//! Completeness order and collects the edges, so the same rows give the same connectome
//! whatever the form.
//!
//! This module owns the Shiu columns and how a row becomes an edge. It knows nothing of Parquet's
//! encoding, and nothing of files (the caller reads them).

use std::collections::BTreeMap;

use crate::connectome::Connectome;
use crate::error::BrainError;
use crate::import::table::{Row, inconsistent, rows};
use crate::import::{Binary, Table, with_importer};

/// The presynaptic root id column.
pub(crate) const PRE: &str = "Presynaptic_ID";
/// The postsynaptic root id column.
pub(crate) const POST: &str = "Postsynaptic_ID";
/// The presynaptic neuron index column (optional; checked against the Completeness order).
pub(crate) const PRE_INDEX: &str = "Presynaptic_Index";
/// The postsynaptic neuron index column (optional; checked against the Completeness order).
pub(crate) const POST_INDEX: &str = "Postsynaptic_Index";
/// The signed synapse count column.
pub(crate) const PRODUCT: &str = "Excitatory x Connectivity";
/// The unsigned synapse count column (used with [`SIGN`] when [`PRODUCT`] is absent).
pub(crate) const COUNT: &str = "Connectivity";
/// The presynaptic neuron's sign column, 1 or −1.
pub(crate) const SIGN: &str = "Excitatory";

/// Where a row's weight comes from.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Weight<C> {
    /// `Excitatory x Connectivity`, already signed.
    Product(C),
    /// `Connectivity` times `Excitatory`.
    CountAndSign(C, C),
}

/// The columns of a Shiu connectivity table, each a `C` (a cell position or a column index).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Columns<C> {
    pub(crate) pre: C,
    pub(crate) post: C,
    pub(crate) pre_index: Option<C>,
    pub(crate) post_index: Option<C>,
    pub(crate) weight: Weight<C>,
}

impl<C: Copy> Columns<C> {
    /// The columns found by exact name with `find`, or why not (`what` names the place looked
    /// in: "header", "table").
    pub(crate) fn find(what: &str, find: impl Fn(&str) -> Option<C>) -> Result<Self, String> {
        let need =
            |name: &str| find(name).ok_or_else(|| format!("the {what} has no `{name}` column"));
        let (pre, post) = (need(PRE)?, need(POST)?);
        let weight = match (find(PRODUCT), find(COUNT), find(SIGN)) {
            (Some(p), _, _) => Weight::Product(p),
            (None, Some(count), Some(sign)) => Weight::CountAndSign(count, sign),
            _ => {
                return Err(format!(
                    "the {what} has neither `{PRODUCT}` nor `{COUNT}` with `{SIGN}`"
                ));
            }
        };
        Ok(Self {
            pre,
            post,
            pre_index: find(PRE_INDEX),
            post_index: find(POST_INDEX),
            weight,
        })
    }
}

/// Why `Connectivity` and `Excitatory` make no signed count, and which of the two is at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BadWeight {
    /// The count (its reason).
    Count(String),
    /// The sign (its reason).
    Sign(String),
}

/// `count × sign`, the signed synapse count of a row without the product column.
pub(crate) fn signed_count(count: i64, sign: i64) -> Result<i64, BadWeight> {
    if sign != 1 && sign != -1 {
        return Err(BadWeight::Sign(format!("{SIGN} is {sign}, not 1 or -1")));
    }
    count
        .checked_mul(sign)
        .ok_or_else(|| BadWeight::Count(format!("{COUNT} {count} is out of range")))
}

/// A value read from a row and the 1-based column it was read from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct At<T> {
    pub(crate) value: T,
    pub(crate) column: usize,
}

/// One connectivity row, whatever the table's form: where it is and what it says.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Link {
    /// The 1-based line (CSV) or row (Parquet).
    pub(crate) line: usize,
    pub(crate) pre: At<u64>,
    pub(crate) post: At<u64>,
    pub(crate) pre_index: Option<At<i64>>,
    pub(crate) post_index: Option<At<i64>>,
    /// The signed synapse count.
    pub(crate) weight: i64,
}

/// `(root id, neuron index)` sorted by root id.
type RootIndex = Vec<(u64, u32)>;

/// The Completeness table's root ids in row order (the neuron index), and sorted with their
/// index; `FS0710` for an unreadable row, `FS0711` for an empty table or a repeated id.
fn completeness_ids(ct: &Table<'_>) -> Result<(Vec<u64>, RootIndex), BrainError> {
    let mut it = rows(ct);
    it.header()?;
    let mut ids: Vec<u64> = Vec::new();
    let mut lines: Vec<usize> = Vec::new();
    for row in it {
        let row = row?;
        ids.push(row.root_id(0, "root id")?);
        lines.push(row.line);
    }
    if ids.is_empty() {
        return Err(inconsistent(ct.name, 0, 0, "no neurons"));
    }
    let mut sorted: Vec<(u64, u32)> = ids
        .iter()
        .enumerate()
        .map(|(i, &id)| (id, i as u32))
        .collect();
    sorted.sort_unstable();
    if let Some(w) = sorted.windows(2).find(|w| w[0].0 == w[1].0) {
        let second = w[0].1.max(w[1].1) as usize;
        return Err(inconsistent(
            ct.name,
            lines[second],
            1,
            format!("root id {} appears twice", w[0].0),
        ));
    }
    Ok((ids, sorted))
}

/// The connectome being built from one connectivity table, row by row, against the
/// Completeness order.
pub(crate) struct Assembly<'a> {
    completeness: &'a str,
    source: &'a str,
    ids: Vec<u64>,
    sorted: RootIndex,
    triples: Vec<(u32, u32, i64)>,
}

impl<'a> Assembly<'a> {
    /// An empty assembly over the neurons of `completeness`, for the connectivity table named
    /// `source`.
    pub(crate) fn new(completeness: &Table<'a>, source: &'a str) -> Result<Self, BrainError> {
        let (ids, sorted) = completeness_ids(completeness)?;
        Ok(Self {
            completeness: completeness.name,
            source,
            ids,
            sorted,
            triples: Vec::new(),
        })
    }

    /// The neuron index of root id `at`, or `FS0711` at its cell.
    fn index(&self, line: usize, at: At<u64>) -> Result<u32, BrainError> {
        self.sorted
            .binary_search_by_key(&at.value, |&(r, _)| r)
            .map(|k| self.sorted[k].1)
            .map_err(|_| {
                inconsistent(
                    self.source,
                    line,
                    at.column,
                    format!("root id {} is not in {}", at.value, self.completeness),
                )
            })
    }

    /// Adds one row: `FS0711` when a root id is not in the Completeness table or an index
    /// column disagrees with its order.
    pub(crate) fn push(&mut self, link: &Link) -> Result<(), BrainError> {
        let pre = self.index(link.line, link.pre)?;
        let post = self.index(link.line, link.post)?;
        for (given, idx, what) in [
            (link.pre_index, pre, PRE_INDEX),
            (link.post_index, post, POST_INDEX),
        ] {
            if let Some(at) = given
                && at.value != i64::from(idx)
            {
                return Err(inconsistent(
                    self.source,
                    link.line,
                    at.column,
                    format!(
                        "{what} {} disagrees with the Completeness order ({idx})",
                        at.value
                    ),
                ));
            }
        }
        self.triples.push((pre, post, link.weight));
        Ok(())
    }

    /// The connectome: every Completeness neuron, named by its root id.
    pub(crate) fn finish(self, meta: &BTreeMap<String, String>) -> Result<Connectome, BrainError> {
        let names = self.ids.iter().map(u64::to_string).collect();
        Connectome::from_edges(
            self.ids.len() as u32,
            self.triples,
            Some(names),
            with_importer(meta, "flywire"),
            self.source,
        )
    }
}

/// The connectivity row `row` of a CSV table with columns `cols`.
fn csv_link(row: &Row<'_>, cols: &Columns<usize>) -> Result<Link, BrainError> {
    let root = |col: usize, what: &str| -> Result<At<u64>, BrainError> {
        Ok(At {
            value: row.root_id(col, what)?,
            column: row.get(col, what)?.column,
        })
    };
    let int = |col: usize, what: &str| -> Result<At<i64>, BrainError> {
        Ok(At {
            value: row.int(col, what)?,
            column: row.get(col, what)?.column,
        })
    };
    let pre = root(cols.pre, PRE)?;
    let post = root(cols.post, POST)?;
    let pre_index = cols.pre_index.map(|c| int(c, PRE_INDEX)).transpose()?;
    let post_index = cols.post_index.map(|c| int(c, POST_INDEX)).transpose()?;
    let weight = match cols.weight {
        Weight::Product(c) => row.int(c, PRODUCT)?,
        Weight::CountAndSign(count, sign) => {
            let (n, s) = (int(count, COUNT)?, int(sign, SIGN)?);
            signed_count(n.value, s.value).map_err(|bad| match bad {
                BadWeight::Count(reason) => row.syntax(n.column, reason),
                BadWeight::Sign(reason) => row.syntax(s.column, reason),
            })?
        }
    };
    Ok(Link {
        line: row.line,
        pre,
        post,
        pre_index,
        post_index,
        weight,
    })
}

/// Imports the Shiu et al. model files with the connectivity table as CSV (see the module
/// documentation of [`crate::import`]).
///
/// # Errors
///
/// `FS0710` for an unreadable row or missing column, `FS0711` for an unknown root id, an index
/// column that disagrees with the Completeness order, a repeated neuron, or a weight that does
/// not fit.
pub fn flywire(
    completeness: &Table<'_>,
    connectivity: &Table<'_>,
    meta: &BTreeMap<String, String>,
) -> Result<Connectome, BrainError> {
    let mut assembly = Assembly::new(completeness, connectivity.name)?;
    let mut it = rows(connectivity);
    let header = it.header()?;
    let cols = Columns::find("header", |name| header.need(name).ok())
        .map_err(|reason| header.syntax(1, reason))?;
    for row in it {
        assembly.push(&csv_link(&row?, &cols)?)?;
    }
    assembly.finish(meta)
}

/// Imports the Shiu et al. model files with the connectivity table as Parquet, as
/// `Connectivity_783.parquet` is shipped (see the module documentation of [`crate::import`]).
/// The rows go to the same assembly as [`flywire`]'s, so the same rows give the same connectome.
///
/// # Errors
///
/// `FS0710` for a file that is not Parquet this build reads, a missing column, a column that
/// does not hold integers, a null or a value out of range; `FS0711` as for [`flywire`].
#[cfg(feature = "parquet")]
pub fn flywire_parquet(
    completeness: &Table<'_>,
    connectivity: &Binary<'_>,
    meta: &BTreeMap<String, String>,
) -> Result<Connectome, BrainError> {
    let mut assembly = Assembly::new(completeness, connectivity.name)?;
    super::parquet::connectivity(connectivity, |link| assembly.push(link))?;
    assembly.finish(meta)
}

/// This build has no Parquet reader (the Cargo feature `parquet` is off): every Parquet table is
/// refused with `FS0712`.
///
/// # Errors
///
/// Always `FS0712`.
#[cfg(not(feature = "parquet"))]
pub fn flywire_parquet(
    _completeness: &Table<'_>,
    connectivity: &Binary<'_>,
    _meta: &BTreeMap<String, String>,
) -> Result<Connectome, BrainError> {
    Err(BrainError::ParquetUnavailable {
        source_name: connectivity.name.to_owned(),
        help: "build flysim-brain with its Cargo feature `parquet`, or convert the table to CSV once (docs/brain.md shows how)".to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_and_sign_make_a_signed_count_or_name_the_culprit() {
        assert_eq!(signed_count(12, -1), Ok(-12));
        assert_eq!(signed_count(3, 1), Ok(3));
        assert!(matches!(signed_count(3, 0), Err(BadWeight::Sign(_))));
        assert!(matches!(
            signed_count(i64::MIN, -1),
            Err(BadWeight::Count(_))
        ));
    }

    #[test]
    fn columns_are_found_by_name_and_need_a_weight() {
        let names = ["x", PRE, POST, COUNT, SIGN];
        let find = |n: &str| names.iter().position(|c| *c == n);
        let cols = Columns::find("table", find).unwrap();
        assert_eq!((cols.pre, cols.post), (1, 2));
        assert!(matches!(cols.weight, Weight::CountAndSign(3, 4)));
        assert!(cols.pre_index.is_none());
        let names = [PRE, POST, COUNT];
        let find = |n: &str| names.iter().position(|c| *c == n);
        assert!(
            Columns::find("table", find)
                .unwrap_err()
                .contains("neither")
        );
    }
}
