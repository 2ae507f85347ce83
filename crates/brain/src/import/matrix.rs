//! The dense adjacency matrix importer: a header row of neuron ids (after an index column's
//! corner cell, which may be absent), then one row per presynaptic neuron: its id, then one
//! integer synapse count per column (0 = no edge; negative = an inhibitory edge already signed).
//!
//! The header order is the neuron index; rows may come in any order but every header neuron has
//! exactly one row. This is the shape of the Winding et al. 2023 larva matrices and of
//! `pandas.DataFrame.to_csv` (empty corner) and R's `write.table` (no corner). This module
//! knows nothing of signs tables or of the other formats.

use std::collections::BTreeMap;

use crate::connectome::Connectome;
use crate::error::BrainError;
use crate::import::table::{Row, inconsistent, parse_int, rows};
use crate::import::{Table, with_importer};

/// The header's neuron ids and where each is, and the header's column count.
struct Columns {
    ids: Vec<String>,
    at: Vec<usize>,
    line: usize,
}

fn header_ids(header: &Row<'_>, first: &Row<'_>) -> Result<Columns, BrainError> {
    // Without a corner cell the data rows are one cell longer than the header.
    let corner = usize::from(first.len() != header.len() + 1);
    let cells = &header.cells()[corner..];
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for c in cells {
        if c.text.is_empty() {
            return Err(header.syntax(c.column, "a neuron id in the header is empty"));
        }
        if let Some(k) = seen.insert(&c.text, c.column) {
            return Err(header.inconsistent(
                c.column,
                format!(
                    "neuron {:?} heads two columns (first at column {k})",
                    c.text
                ),
            ));
        }
    }
    if cells.is_empty() {
        return Err(header.syntax(1, "the header names no neuron"));
    }
    Ok(Columns {
        ids: cells.iter().map(|c| c.text.clone()).collect(),
        at: cells.iter().map(|c| c.column).collect(),
        line: header.line,
    })
}

/// Imports a dense adjacency matrix (see the module documentation).
///
/// # Errors
///
/// `FS0710` for an empty id, a row of the wrong length or a value that is not an integer;
/// `FS0711` for an empty table, a repeated id, a row id not in the header, a header neuron
/// without a row, or a weight that does not fit.
pub fn matrix(t: &Table<'_>, meta: &BTreeMap<String, String>) -> Result<Connectome, BrainError> {
    let mut it = rows(t);
    let header = it.header()?;
    let Some(first) = it.next().transpose()? else {
        return Err(inconsistent(
            t.name,
            header.line,
            0,
            "the matrix has a header but no rows",
        ));
    };
    let cols = header_ids(&header, &first)?;
    let n = cols.ids.len();
    let index: BTreeMap<&str, u32> = cols
        .ids
        .iter()
        .enumerate()
        .map(|(i, s)| (s.as_str(), i as u32))
        .collect();
    let mut row_line: Vec<usize> = vec![0; n];
    let mut triples = Vec::new();
    for row in std::iter::once(Ok(first)).chain(it) {
        let row = row?;
        if row.len() != n + 1 {
            return Err(row.syntax(
                1,
                format!(
                    "expected the row's id and {n} counts (the header's neurons); found {} fields",
                    row.len()
                ),
            ));
        }
        let id = &row.cells()[0];
        let pre = *index.get(id.text.as_str()).ok_or_else(|| {
            row.inconsistent(
                id.column,
                format!("row neuron {:?} is not in the header", id.text),
            )
        })?;
        let seen = &mut row_line[pre as usize];
        if *seen != 0 {
            return Err(row.inconsistent(
                id.column,
                format!("neuron {:?} has two rows (first on line {seen})", id.text),
            ));
        }
        *seen = row.line;
        for (post, cell) in row.cells()[1..].iter().enumerate() {
            let w = parse_int(&cell.text).ok_or_else(|| {
                row.syntax(
                    cell.column,
                    format!("count {:?} is not an integer", cell.text),
                )
            })?;
            if w != 0 {
                triples.push((pre, post as u32, w));
            }
        }
    }
    if let Some(k) = row_line.iter().position(|&l| l == 0) {
        return Err(inconsistent(
            t.name,
            cols.line,
            cols.at[k],
            format!("neuron {:?} has no row", cols.ids[k]),
        ));
    }
    Connectome::from_edges(
        n as u32,
        triples,
        Some(cols.ids),
        with_importer(meta, "matrix"),
        t.name,
    )
}
