//! Importers: source tables in, a [`Connectome`] out. Every importer reads text already in
//! memory (the caller does the I/O), refuses a row it cannot read with `FS0710` and a table that
//! contradicts itself with `FS0711`, naming the input and line.
//!
//! - [`edges`]: a plain edge list `pre,post,weight[,type]` (comma or tab separated, optional
//!   header, string or integer neuron ids, surrounding spaces trimmed). Neurons are indexed in
//!   ascending id order (numeric when every id is an unsigned integer, byte order otherwise);
//!   rows whose type is listed in `symmetric_types` (e.g. gap junctions) are added in both
//!   directions; repeated pairs are summed.
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

/// One table given to an importer: a name for messages and its text.
#[derive(Debug, Clone, Copy)]
pub struct Table<'a> {
    /// Shown in refusals (usually the file name).
    pub name: &'a str,
    /// The text.
    pub text: &'a str,
}

fn syntax(t: &Table<'_>, line: usize, reason: impl Into<String>) -> BrainError {
    BrainError::ImportSyntax {
        source_name: t.name.to_owned(),
        line: line as u64,
        reason: reason.into(),
    }
}

fn inconsistent(t: &Table<'_>, line: usize, reason: impl Into<String>) -> BrainError {
    BrainError::ImportInconsistent {
        source_name: t.name.to_owned(),
        line: line as u64,
        reason: reason.into(),
    }
}

/// Splits one CSV/TSV line into fields (RFC 4180 double quotes), trimming spaces.
fn fields(line: &str, sep: char) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    let mut was_quoted = false;
    while let Some(ch) = chars.next() {
        if quoted {
            if ch == '"' {
                if chars.peek() == Some(&'"') {
                    chars.next();
                    field.push('"');
                } else {
                    quoted = false;
                }
            } else {
                field.push(ch);
            }
        } else if ch == '"' && field.trim().is_empty() && !was_quoted {
            field.clear();
            quoted = true;
            was_quoted = true;
        } else if ch == sep {
            out.push(if was_quoted {
                std::mem::take(&mut field)
            } else {
                field.trim().to_owned()
            });
            field.clear();
            was_quoted = false;
        } else {
            field.push(ch);
        }
    }
    if quoted {
        return Err("a quoted field is not closed".to_owned());
    }
    out.push(if was_quoted {
        field
    } else {
        field.trim().to_owned()
    });
    Ok(out)
}

/// The non-empty lines of a table with their 1-based line numbers.
fn lines<'a>(t: &Table<'a>) -> impl Iterator<Item = (usize, &'a str)> {
    t.text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim_end_matches('\r')))
        .filter(|(_, l)| !l.trim().is_empty())
}

fn separator(first: &str) -> char {
    if first.contains('\t') { '\t' } else { ',' }
}

fn int(t: &Table<'_>, line: usize, what: &str, s: &str) -> Result<i64, BrainError> {
    // Integral decimals written with a trailing `.0` (as pandas does for floats) are accepted.
    let digits = s.strip_suffix(".0").unwrap_or(s);
    digits
        .parse::<i64>()
        .map_err(|_| syntax(t, line, format!("{what} {s:?} is not an integer")))
}

fn root_id(t: &Table<'_>, line: usize, what: &str, s: &str) -> Result<u64, BrainError> {
    s.parse::<u64>().map_err(|_| {
        syntax(
            t,
            line,
            format!("{what} {s:?} is not a root id (unsigned integer)"),
        )
    })
}

/// Finds named columns in a header row.
fn columns(
    t: &Table<'_>,
    line: usize,
    header: &[String],
    wanted: &[&str],
) -> Result<Vec<Option<usize>>, BrainError> {
    let found = wanted
        .iter()
        .map(|w| header.iter().position(|h| h == w))
        .collect();
    if header.iter().all(String::is_empty) {
        return Err(syntax(t, line, "the header row is empty"));
    }
    Ok(found)
}

fn get<'f>(
    t: &Table<'_>,
    line: usize,
    row: &'f [String],
    col: usize,
    what: &str,
) -> Result<&'f str, BrainError> {
    row.get(col).map(String::as_str).ok_or_else(|| {
        syntax(
            t,
            line,
            format!("the row has no {what} column ({} fields)", row.len()),
        )
    })
}

fn with_importer(meta: &BTreeMap<String, String>, importer: &str) -> BTreeMap<String, String> {
    let mut m = meta.clone();
    m.insert("importer".to_owned(), importer.to_owned());
    m
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
    let mut rows: Vec<(usize, String, String, i64)> = Vec::new();
    let mut sep = None;
    for (k, (line, text)) in lines(t).enumerate() {
        let sep = *sep.get_or_insert_with(|| separator(text));
        let f = fields(text, sep).map_err(|e| syntax(t, line, e))?;
        if f.len() < 3 || f.len() > 4 {
            return Err(syntax(
                t,
                line,
                format!(
                    "expected pre, post, weight[, type]; found {} fields",
                    f.len()
                ),
            ));
        }
        if k == 0
            && f[2]
                .strip_suffix(".0")
                .unwrap_or(&f[2])
                .parse::<i64>()
                .is_err()
        {
            // A header row: a first row whose weight is not a number.
            continue;
        }
        let w = int(t, line, "weight", &f[2])?;
        if f[0].is_empty() || f[1].is_empty() {
            return Err(syntax(t, line, "a neuron id is empty"));
        }
        let symmetric = f
            .get(3)
            .is_some_and(|ty| symmetric_types.iter().any(|s| s == ty));
        rows.push((line, f[0].clone(), f[1].clone(), w));
        if symmetric && f[0] != f[1] {
            rows.push((line, f[1].clone(), f[0].clone(), w));
        }
    }
    if rows.is_empty() {
        return Err(inconsistent(t, 0, "the table has no edges"));
    }
    let mut ids: Vec<&str> = rows
        .iter()
        .flat_map(|(_, a, b, _)| [a.as_str(), b.as_str()])
        .collect();
    let numeric = ids.iter().all(|s| s.parse::<u64>().is_ok());
    if numeric {
        ids.sort_by_key(|s| s.parse::<u64>().unwrap_or(0));
    } else {
        ids.sort_unstable();
    }
    ids.dedup_by(|a, b| {
        if numeric {
            a.parse::<u64>().ok() == b.parse::<u64>().ok()
        } else {
            a == b
        }
    });
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
    let triples: Vec<(u32, u32, i64)> = rows
        .iter()
        .map(|(_, a, b, w)| (lookup(a), lookup(b), *w))
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
    let mut it = lines(t);
    let (hline, htext) = it
        .next()
        .ok_or_else(|| inconsistent(t, 0, "the table is empty"))?;
    let sep = separator(htext);
    let header = fields(htext, sep).map_err(|e| syntax(t, hline, e))?;
    let cols = columns(
        t,
        hline,
        &header,
        &["pre_root_id", "post_root_id", "syn_count", "nt_type"],
    )?;
    let need = |i: usize, name: &str| {
        cols[i].ok_or_else(|| syntax(t, hline, format!("the header has no `{name}` column")))
    };
    let (c_pre, c_post, c_count) = (
        need(0, "pre_root_id")?,
        need(1, "post_root_id")?,
        need(2, "syn_count")?,
    );
    let c_nt = cols[3];
    // (pre, post) -> (count, sign or 0 when rows disagree)
    let mut pairs: BTreeMap<(u64, u64), (i64, i8)> = BTreeMap::new();
    for (line, text) in it {
        let f = fields(text, sep).map_err(|e| syntax(t, line, e))?;
        let pre = root_id(
            t,
            line,
            "pre_root_id",
            get(t, line, &f, c_pre, "pre_root_id")?,
        )?;
        let post = root_id(
            t,
            line,
            "post_root_id",
            get(t, line, &f, c_post, "post_root_id")?,
        )?;
        let count = int(
            t,
            line,
            "syn_count",
            get(t, line, &f, c_count, "syn_count")?,
        )?;
        if count < 0 {
            return Err(syntax(t, line, format!("syn_count {count} is negative")));
        }
        let sign = match c_nt {
            Some(c) => nt_sign(get(t, line, &f, c, "nt_type")?),
            None => 1,
        };
        let entry = pairs.entry((pre, post)).or_insert((0, sign));
        entry.0 += count;
        if entry.1 != sign {
            entry.1 = 0;
        }
    }
    let mut ids: Vec<u64> = match classification {
        Some(ct) => {
            let mut it = lines(ct);
            let (hl, ht) = it
                .next()
                .ok_or_else(|| inconsistent(ct, 0, "the table is empty"))?;
            let sep = separator(ht);
            let header = fields(ht, sep).map_err(|e| syntax(ct, hl, e))?;
            let col = columns(ct, hl, &header, &["root_id"])?[0]
                .ok_or_else(|| syntax(ct, hl, "the header has no `root_id` column"))?;
            let mut ids = Vec::new();
            for (line, text) in it {
                let f = fields(text, sep).map_err(|e| syntax(ct, line, e))?;
                ids.push(root_id(
                    ct,
                    line,
                    "root_id",
                    get(ct, line, &f, col, "root_id")?,
                )?);
            }
            ids
        }
        None => pairs.keys().flat_map(|&(a, b)| [a, b]).collect(),
    };
    ids.sort_unstable();
    ids.dedup();
    if ids.is_empty() {
        return Err(inconsistent(t, 0, "no neurons"));
    }
    let index = |id: u64| -> Result<u32, BrainError> {
        ids.binary_search(&id).map(|i| i as u32).map_err(|_| {
            inconsistent(
                t,
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
    let mut it = lines(ct);
    let (_, ht) = it
        .next()
        .ok_or_else(|| inconsistent(ct, 0, "the table is empty"))?;
    let csep = separator(ht);
    let mut ids: Vec<u64> = Vec::new();
    for (line, text) in it {
        let f = fields(text, csep).map_err(|e| syntax(ct, line, e))?;
        ids.push(root_id(
            ct,
            line,
            "root id",
            get(ct, line, &f, 0, "root id")?,
        )?);
    }
    if ids.is_empty() {
        return Err(inconsistent(ct, 0, "no neurons"));
    }
    let mut sorted: Vec<(u64, u32)> = ids
        .iter()
        .enumerate()
        .map(|(i, &id)| (id, i as u32))
        .collect();
    sorted.sort_unstable();
    if let Some(w) = sorted.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(inconsistent(
            ct,
            0,
            format!("root id {} appears twice", w[0].0),
        ));
    }
    Ok((ids, sorted))
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
    let mut it = lines(t);
    let (hline, htext) = it
        .next()
        .ok_or_else(|| inconsistent(t, 0, "the table is empty"))?;
    let sep = separator(htext);
    let header = fields(htext, sep).map_err(|e| syntax(t, hline, e))?;
    let cols = columns(
        t,
        hline,
        &header,
        &[
            "Presynaptic_ID",
            "Postsynaptic_ID",
            "Excitatory x Connectivity",
            "Connectivity",
            "Excitatory",
            "Presynaptic_Index",
            "Postsynaptic_Index",
        ],
    )?;
    let c_pre =
        cols[0].ok_or_else(|| syntax(t, hline, "the header has no `Presynaptic_ID` column"))?;
    let c_post =
        cols[1].ok_or_else(|| syntax(t, hline, "the header has no `Postsynaptic_ID` column"))?;
    if cols[2].is_none() && (cols[3].is_none() || cols[4].is_none()) {
        return Err(syntax(
            t,
            hline,
            "the header has neither `Excitatory x Connectivity` nor `Connectivity` with `Excitatory`",
        ));
    }
    let find = |line: usize, id: u64| -> Result<u32, BrainError> {
        sorted
            .binary_search_by_key(&id, |&(r, _)| r)
            .map(|k| sorted[k].1)
            .map_err(|_| inconsistent(t, line, format!("root id {id} is not in {}", ct.name)))
    };
    let mut triples = Vec::new();
    for (line, text) in it {
        let f = fields(text, sep).map_err(|e| syntax(t, line, e))?;
        let pre = find(
            line,
            root_id(
                t,
                line,
                "Presynaptic_ID",
                get(t, line, &f, c_pre, "Presynaptic_ID")?,
            )?,
        )?;
        let post = find(
            line,
            root_id(
                t,
                line,
                "Postsynaptic_ID",
                get(t, line, &f, c_post, "Postsynaptic_ID")?,
            )?,
        )?;
        for (col, idx, what) in [
            (cols[5], pre, "Presynaptic_Index"),
            (cols[6], post, "Postsynaptic_Index"),
        ] {
            if let Some(c) = col {
                let given = int(t, line, what, get(t, line, &f, c, what)?)?;
                if given != i64::from(idx) {
                    return Err(inconsistent(
                        t,
                        line,
                        format!("{what} {given} disagrees with the Completeness order ({idx})"),
                    ));
                }
            }
        }
        let w = match cols[2] {
            Some(c) => int(
                t,
                line,
                "Excitatory x Connectivity",
                get(t, line, &f, c, "Excitatory x Connectivity")?,
            )?,
            None => {
                let count = int(
                    t,
                    line,
                    "Connectivity",
                    get(t, line, &f, cols[3].unwrap_or(0), "Connectivity")?,
                )?;
                let sign = int(
                    t,
                    line,
                    "Excitatory",
                    get(t, line, &f, cols[4].unwrap_or(0), "Excitatory")?,
                )?;
                if sign != 1 && sign != -1 {
                    return Err(syntax(
                        t,
                        line,
                        format!("Excitatory is {sign}, not 1 or -1"),
                    ));
                }
                count * sign
            }
        };
        triples.push((pre, post, w));
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
