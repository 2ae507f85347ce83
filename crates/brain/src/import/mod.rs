//! Importers: source tables in, a [`Connectome`] out. Every importer reads data already in
//! memory (the caller does the I/O): text through one table reader (`table`: comma, tab or
//! whitespace separated), and the Shiu connectivity table also as Parquet bytes (module
//! `parquet`, behind the Cargo feature `parquet`). A cell it cannot read is refused with
//! `FS0710` and a table that contradicts itself with `FS0711`, naming the input, line (or
//! Parquet row) and column.
//!
//! - [`edges`]: a plain edge list `pre post weight [type]` (comma, tab or whitespace separated,
//!   optional header, string or integer neuron ids, surrounding spaces trimmed). Neurons are
//!   indexed in ascending id order (numeric when every id is an unsigned integer, byte order
//!   otherwise); rows whose type is listed in `symmetric_types` (e.g. gap junctions) are added
//!   in both directions; repeated pairs are summed.
//! - [`matrix`]: a dense adjacency matrix, row = presynaptic (module `matrix`).
//! - [`signs`] and [`apply_signs`]: a neuron table's signs or neurotransmitters, applied to an
//!   unsigned connectome from either of the above (module `signs`).
//! - [`codex`]: FlyWire Codex `connections.csv` (`pre_root_id`, `post_root_id`, `syn_count`,
//!   `nt_type`; other columns such as `neuropil` ignored), optionally with
//!   `classification.csv` (`root_id`) to fix the neuron set. Neurons are indexed in ascending
//!   root id; rows are summed per directed pair; the sign comes from `nt_type` (ACH, OCT, SER,
//!   DA: +1; GABA, GLUT: −1; anything else, or rows of one pair that disagree: +1).
//! - [`flywire`] and [`flywire_parquet`]: the Shiu et al. 2024 model files (module `flywire`):
//!   `Completeness_783.csv` (first column the root id; row order is the neuron index) and the
//!   connectivity table `Connectivity_783.parquet` (`Presynaptic_ID`, `Postsynaptic_ID`, and
//!   either `Excitatory x Connectivity` or `Connectivity` with `Excitatory`), as CSV with those
//!   columns or, with the feature `parquet`, as the Parquet file itself ([`is_parquet`] tells
//!   them apart; without the feature [`flywire_parquet`] refuses with `FS0712`). When the index
//!   columns (`Presynaptic_Index`, `Postsynaptic_Index`) are present they must agree with the
//!   Completeness order. Both forms give the same connectome for the same rows.
//!
//! A summed weight must fit a signed 16-bit count (±32767) and is never clamped. Every importer
//! stores the neuron ids as names and `meta` (plus `importer`) as metadata.

use std::collections::BTreeMap;

use crate::connectome::Connectome;
use crate::error::BrainError;

mod flywire;
mod matrix;
#[cfg(feature = "parquet")]
mod parquet;
mod signs;
mod table;

pub use flywire::{flywire, flywire_parquet};
pub use matrix::matrix;
pub use signs::{Signs, apply_signs, signs};
use table::{inconsistent, parse_int, rows};

/// One table given to an importer: a name for messages and its text.
#[derive(Debug, Clone, Copy)]
pub struct Table<'a> {
    /// Shown in refusals (usually the file name).
    pub name: &'a str,
    /// The text.
    pub text: &'a str,
}

/// One binary table given to an importer (a Parquet file): a name for messages and its bytes.
#[derive(Debug, Clone, Copy)]
pub struct Binary<'a> {
    /// Shown in refusals (usually the file name).
    pub name: &'a str,
    /// The bytes.
    pub bytes: &'a [u8],
}

/// Whether `bytes` are a Parquet file (they start with its magic `PAR1`), to be read with
/// [`flywire_parquet`] rather than as text.
#[must_use]
pub fn is_parquet(bytes: &[u8]) -> bool {
    bytes.starts_with(b"PAR1")
}

fn with_importer(meta: &BTreeMap<String, String>, importer: &str) -> BTreeMap<String, String> {
    let mut m = meta.clone();
    m.insert("importer".to_owned(), importer.to_owned());
    m
}

/// The neuron ids of an edge list in index order: ascending numerically when every id is an
/// unsigned integer, byte order otherwise.
fn ordered_ids(rows: &[(String, String, i64)]) -> (Vec<&str>, bool) {
    let mut ids: Vec<&str> = rows
        .iter()
        .flat_map(|(a, b, _)| [a.as_str(), b.as_str()])
        .collect();
    let numeric = ids.iter().all(|s| s.parse::<u64>().is_ok());
    if numeric {
        ids.sort_by_key(|s| s.parse::<u64>().unwrap_or(0));
        ids.dedup_by(|a, b| a.parse::<u64>().ok() == b.parse::<u64>().ok());
    } else {
        ids.sort_unstable();
        ids.dedup();
    }
    (ids, numeric)
}

/// Imports a plain edge list (see the module documentation).
///
/// # Errors
///
/// `FS0710` for an unreadable row, `FS0711` for an empty table or a weight that does not fit.
pub fn edges(
    t: &Table<'_>,
    symmetric_types: &[String],
    meta: &BTreeMap<String, String>,
) -> Result<Connectome, BrainError> {
    let mut list: Vec<(String, String, i64)> = Vec::new();
    for (k, row) in rows(t).enumerate() {
        let row = row?;
        if row.len() < 3 || row.len() > 4 {
            return Err(row.syntax(
                1,
                format!(
                    "expected pre, post, weight[, type]; found {} fields",
                    row.len()
                ),
            ));
        }
        if k == 0 && row.text(2).and_then(parse_int).is_none() {
            // A header row: a first row whose weight is not a number.
            continue;
        }
        let w = row.int(2, "weight")?;
        let cells = row.cells();
        if let Some(empty) = cells[..2].iter().find(|c| c.text.is_empty()) {
            return Err(row.syntax(empty.column, "a neuron id is empty"));
        }
        let (a, b) = (&cells[0].text, &cells[1].text);
        let symmetric = row
            .text(3)
            .is_some_and(|ty| symmetric_types.iter().any(|s| s == ty));
        list.push((a.clone(), b.clone(), w));
        if symmetric && a != b {
            list.push((b.clone(), a.clone(), w));
        }
    }
    if list.is_empty() {
        return Err(inconsistent(t.name, 0, 0, "the table has no edges"));
    }
    let (ids, numeric) = ordered_ids(&list);
    let index: BTreeMap<&str, u32> = ids
        .iter()
        .enumerate()
        .map(|(i, s)| (*s, i as u32))
        .collect();
    let lookup = |s: &str| -> u32 {
        if numeric {
            let v = s.parse::<u64>().unwrap_or(0);
            ids.partition_point(|x| x.parse::<u64>().unwrap_or(0) < v) as u32
        } else {
            index.get(s).copied().unwrap_or(0)
        }
    };
    let triples: Vec<(u32, u32, i64)> = list
        .iter()
        .map(|(a, b, w)| (lookup(a), lookup(b), *w))
        .collect();
    let names: Vec<String> = ids.iter().map(|s| (*s).to_owned()).collect();
    Connectome::from_edges(
        names.len() as u32,
        triples,
        Some(names),
        with_importer(meta, "edges"),
        t.name,
    )
}

/// The sign of a Codex `nt_type`.
fn nt_sign(nt: &str) -> i8 {
    match nt.to_ascii_uppercase().as_str() {
        "GABA" | "GLUT" => -1,
        _ => 1,
    }
}

/// The sorted root ids of a Codex `classification.csv`.
fn classification_ids(ct: &Table<'_>) -> Result<Vec<u64>, BrainError> {
    let mut it = rows(ct);
    let col = it.header()?.need("root_id")?;
    it.map(|row| row?.root_id(col, "root_id")).collect()
}

/// Imports FlyWire Codex exports (see the module documentation).
///
/// # Errors
///
/// `FS0710` for an unreadable row or missing column, `FS0711` for an id missing from the
/// classification, an empty table or a weight that does not fit.
pub fn codex(
    connections: &Table<'_>,
    classification: Option<&Table<'_>>,
    meta: &BTreeMap<String, String>,
) -> Result<Connectome, BrainError> {
    let t = connections;
    let mut it = rows(t);
    let header = it.header()?;
    let (c_pre, c_post, c_count) = (
        header.need("pre_root_id")?,
        header.need("post_root_id")?,
        header.need("syn_count")?,
    );
    let c_nt = header.need("nt_type").ok();
    // (pre, post) -> (count, sign or 0 when rows disagree)
    let mut pairs: BTreeMap<(u64, u64), (i64, i8)> = BTreeMap::new();
    for row in it {
        let row = row?;
        let pre = row.root_id(c_pre, "pre_root_id")?;
        let post = row.root_id(c_post, "post_root_id")?;
        let count = row.int(c_count, "syn_count")?;
        if count < 0 {
            let at = row.get(c_count, "syn_count")?.column;
            return Err(row.syntax(at, format!("syn_count {count} is negative")));
        }
        let sign = match c_nt {
            Some(c) => nt_sign(&row.get(c, "nt_type")?.text),
            None => 1,
        };
        let entry = pairs.entry((pre, post)).or_insert((0, sign));
        entry.0 += count;
        if entry.1 != sign {
            entry.1 = 0;
        }
    }
    let mut ids: Vec<u64> = match classification {
        Some(ct) => classification_ids(ct)?,
        None => pairs.keys().flat_map(|&(a, b)| [a, b]).collect(),
    };
    ids.sort_unstable();
    ids.dedup();
    if ids.is_empty() {
        return Err(inconsistent(t.name, 0, 0, "no neurons"));
    }
    let index = |id: u64| -> Result<u32, BrainError> {
        ids.binary_search(&id).map(|i| i as u32).map_err(|_| {
            inconsistent(
                t.name,
                0,
                0,
                format!(
                    "root id {id} is not in {}",
                    classification.map_or("the table", |c| c.name)
                ),
            )
        })
    };
    let mut triples = Vec::with_capacity(pairs.len());
    for (&(a, b), &(count, sign)) in &pairs {
        let sign = if sign == 0 { 1 } else { i64::from(sign) };
        triples.push((index(a)?, index(b)?, count * sign));
    }
    let names = ids.iter().map(u64::to_string).collect();
    Connectome::from_edges(
        ids.len() as u32,
        triples,
        Some(names),
        with_importer(meta, "codex"),
        t.name,
    )
}
