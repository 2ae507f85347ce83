//! Importers: source tables in, a [`Connectome`] out. Every importer reads text already in
//! memory (the caller does the I/O) through one table reader (`table`: comma, tab or whitespace
//! separated), refuses a cell it cannot read with `FS0710` and a table that contradicts itself
//! with `FS0711`, naming the input, line and column.
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
//! - [`flywire`]: the Shiu et al. 2024 model files: `Completeness_783.csv` (first column the
//!   root id; row order is the neuron index) and the connectivity table as CSV with the columns
//!   of `Connectivity_783.parquet` (`Presynaptic_ID`, `Postsynaptic_ID`, and either
//!   `Excitatory x Connectivity` or `Connectivity` with `Excitatory`). When the index columns
//!   (`Presynaptic_Index`, `Postsynaptic_Index`) are present they must agree with the
//!   Completeness order. flysim reads no Parquet: convert once with
//!   `python3 -c "import pandas as pd; pd.read_parquet('Connectivity_783.parquet').to_csv('Connectivity_783.csv', index=False)"`.
//!
//! A summed weight must fit a signed 16-bit count (±32767) and is never clamped. Every importer
//! stores the neuron ids as names and `meta` (plus `importer`) as metadata.

use std::collections::BTreeMap;

use crate::connectome::Connectome;
use crate::error::BrainError;

mod matrix;
mod signs;
mod table;

pub use matrix::matrix;
pub use signs::{Signs, apply_signs, signs};
use table::{Row, inconsistent, parse_int, rows};

/// One table given to an importer: a name for messages and its text.
#[derive(Debug, Clone, Copy)]
pub struct Table<'a> {
    /// Shown in refusals (usually the file name).
    pub name: &'a str,
    /// The text.
    pub text: &'a str,
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

/// The columns of a Shiu connectivity table.
struct ConnectivityColumns {
    pre: usize,
    post: usize,
    product: Option<usize>,
    count_and_sign: Option<(usize, usize)>,
    pre_index: Option<usize>,
    post_index: Option<usize>,
}

impl ConnectivityColumns {
    fn of(header: &Row<'_>) -> Result<Self, BrainError> {
        let opt = |name: &str| header.need(name).ok();
        let cols = Self {
            pre: header.need("Presynaptic_ID")?,
            post: header.need("Postsynaptic_ID")?,
            product: opt("Excitatory x Connectivity"),
            count_and_sign: opt("Connectivity").zip(opt("Excitatory")),
            pre_index: opt("Presynaptic_Index"),
            post_index: opt("Postsynaptic_Index"),
        };
        if cols.product.is_none() && cols.count_and_sign.is_none() {
            return Err(header.syntax(
                1,
                "the header has neither `Excitatory x Connectivity` nor `Connectivity` with `Excitatory`",
            ));
        }
        Ok(cols)
    }

    /// The signed synapse count of a row.
    fn weight(&self, row: &Row<'_>) -> Result<i64, BrainError> {
        match (self.product, self.count_and_sign) {
            (Some(c), _) => row.int(c, "Excitatory x Connectivity"),
            (None, Some((count, sign))) => {
                let n = row.int(count, "Connectivity")?;
                let s = row.int(sign, "Excitatory")?;
                if s != 1 && s != -1 {
                    let at = row.get(sign, "Excitatory")?.column;
                    return Err(row.syntax(at, format!("Excitatory is {s}, not 1 or -1")));
                }
                Ok(n * s)
            }
            (None, None) => Err(row.syntax(1, "no weight column")),
        }
    }
}

/// Imports the Shiu et al. model files (see the module documentation).
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
    let ct = completeness;
    let (ids, sorted) = completeness_ids(ct)?;
    let t = connectivity;
    let mut it = rows(t);
    let cols = ConnectivityColumns::of(&it.header()?)?;
    let find = |row: &Row<'_>, col: usize, what: &str| -> Result<u32, BrainError> {
        let id = row.root_id(col, what)?;
        sorted
            .binary_search_by_key(&id, |&(r, _)| r)
            .map(|k| sorted[k].1)
            .map_err(|_| {
                let at = row.get(col, what).map_or(0, |c| c.column);
                row.inconsistent(at, format!("root id {id} is not in {}", ct.name))
            })
    };
    let mut triples = Vec::new();
    for row in it {
        let row = row?;
        let pre = find(&row, cols.pre, "Presynaptic_ID")?;
        let post = find(&row, cols.post, "Postsynaptic_ID")?;
        for (col, idx, what) in [
            (cols.pre_index, pre, "Presynaptic_Index"),
            (cols.post_index, post, "Postsynaptic_Index"),
        ] {
            if let Some(c) = col {
                let given = row.int(c, what)?;
                if given != i64::from(idx) {
                    let at = row.get(c, what)?.column;
                    return Err(row.inconsistent(
                        at,
                        format!("{what} {given} disagrees with the Completeness order ({idx})"),
                    ));
                }
            }
        }
        triples.push((pre, post, cols.weight(&row)?));
    }
    let names = ids.iter().map(u64::to_string).collect();
    Connectome::from_edges(
        ids.len() as u32,
        triples,
        Some(names),
        with_importer(meta, "flywire"),
        t.name,
    )
}
