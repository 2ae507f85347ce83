//! Per-neuron signs from a neuron table, and their application to an unsigned connectome: every
//! outgoing edge of an inhibitory neuron is made negative (a synapse count `w` becomes `−w`).
//!
//! The neuron table has a header row. Its id column is the first named `id`, `root_id`,
//! `neuron_id`, `neuron`, `skid` or `name` (else the first column); its sign comes from the first
//! of these columns it has:
//!
//! - `sign` (or `excitatory`): `1`, `+1`, `+`, `excitatory` → +1; `-1`, `−`, `inhibitory` → −1;
//! - `nt_type` (or `nt`, `top_nt`, `neurotransmitter`, `transmitter`, `predicted_nt`): GABA and
//!   glutamate (`GABA`, `GLUT`, `Glu`, `glutamate`) → −1, as Shiu et al. 2024 treat them;
//!   acetylcholine, dopamine, serotonin, octopamine, tyramine and histamine (`ACH`, `DA`, `SER`,
//!   `5HT`, `OCT`, `OA`, `TA`, `HA` and their full names) → +1; an empty cell → +1 (no
//!   prediction); anything else is refused;
//! - `inhibitory`: `true`/`yes`/`1` → −1, `false`/`no`/`0` → +1.
//!
//! A table with one column and none of those names lists the inhibitory neurons; every other
//! neuron is excitatory. Names are matched exactly (case-insensitively for the column names and
//! values). This module knows nothing of the source formats the connectome came from.

use std::collections::BTreeMap;

use crate::connectome::Connectome;
use crate::error::BrainError;
use crate::import::Table;
use crate::import::table::{inconsistent, rows};

const ID_COLUMNS: &[&str] = &["id", "root_id", "neuron_id", "neuron", "skid", "name"];
const SIGN_COLUMNS: &[&str] = &["sign", "excitatory"];
const NT_COLUMNS: &[&str] = &[
    "nt_type",
    "nt",
    "top_nt",
    "neurotransmitter",
    "transmitter",
    "predicted_nt",
];
const INHIBITORY_COLUMNS: &[&str] = &["inhibitory"];

/// Where a neuron's entry is in its table (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Place {
    line: usize,
    column: usize,
}

/// The neurons' signs read from one neuron table (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signs {
    source: String,
    /// Neuron id → (sign, where it was read).
    of: BTreeMap<String, (i8, Place)>,
    /// The table lists only the inhibitory neurons (unlisted ones are excitatory).
    inhibitory_list: bool,
}

impl Signs {
    /// How many neurons the table marks inhibitory.
    #[must_use]
    pub fn inhibitory(&self) -> usize {
        self.of.values().filter(|(s, _)| *s < 0).count()
    }
}

/// How the value column is read.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Sign,
    Transmitter,
    Inhibitory,
}

fn sign_of(kind: Kind, value: &str) -> Option<i8> {
    let v = value.to_ascii_lowercase();
    match kind {
        Kind::Sign => match v.as_str() {
            "1" | "+1" | "1.0" | "+" | "excitatory" => Some(1),
            "-1" | "-1.0" | "-" | "\u{2212}" | "\u{2212}1" | "inhibitory" => Some(-1),
            _ => None,
        },
        Kind::Transmitter => match v.as_str() {
            "gaba" | "glut" | "glu" | "glutamate" => Some(-1),
            "" | "ach" | "acetylcholine" | "da" | "dopamine" | "ser" | "5ht" | "5-ht"
            | "serotonin" | "oct" | "oa" | "octopamine" | "ta" | "tyramine" | "ha" | "his"
            | "histamine" => Some(1),
            _ => None,
        },
        Kind::Inhibitory => match v.as_str() {
            "true" | "yes" | "1" => Some(-1),
            "false" | "no" | "0" => Some(1),
            _ => None,
        },
    }
}

/// Reads a neuron table's signs (see the module documentation).
///
/// # Errors
///
/// `FS0710` for a header without a sign column (when it has several columns), a missing cell
/// or a value that is no sign; `FS0711` for an empty table or a neuron listed twice.
pub fn signs(t: &Table<'_>) -> Result<Signs, BrainError> {
    let mut it = rows(t);
    let header = it.header()?;
    let value = [
        (SIGN_COLUMNS, Kind::Sign),
        (NT_COLUMNS, Kind::Transmitter),
        (INHIBITORY_COLUMNS, Kind::Inhibitory),
    ]
    .iter()
    .find_map(|(names, kind)| header.find(names).map(|c| (c, *kind)));
    if value.is_none() && header.len() > 1 {
        return Err(header.syntax(
            1,
            "the header has no sign column (`sign`, `nt_type`, `nt`, `top_nt`, `neurotransmitter` or `inhibitory`)",
        ));
    }
    let id_col = header.find(ID_COLUMNS).unwrap_or(0);
    let mut of = BTreeMap::new();
    for row in it {
        let row = row?;
        let id = row.get(id_col, "neuron id")?;
        let sign = match value {
            Some((c, kind)) => {
                let cell = row.get(c, "sign")?;
                sign_of(kind, &cell.text).ok_or_else(|| {
                    row.syntax(
                        cell.column,
                        format!("{:?} is not a sign this column can hold", cell.text),
                    )
                })?
            }
            None => -1,
        };
        if id.text.is_empty() {
            return Err(row.syntax(id.column, "a neuron id is empty"));
        }
        let place = Place {
            line: row.line,
            column: id.column,
        };
        if let Some((_, first)) = of.insert(id.text.clone(), (sign, place)) {
            return Err(row.inconsistent(
                id.column,
                format!(
                    "neuron {:?} is listed twice (first on line {})",
                    id.text, first.line
                ),
            ));
        }
    }
    if of.is_empty() {
        return Err(inconsistent(t.name, 0, 0, "the table lists no neuron"));
    }
    Ok(Signs {
        source: t.name.to_owned(),
        of,
        inhibitory_list: value.is_none(),
    })
}

/// `c` with the signs applied: the outgoing edges of every inhibitory neuron negated, and
/// `inhibitory_neurons` (how many of the neurons with outgoing edges are inhibitory) added to
/// the metadata (not the table's name: a connectome's digest does not depend on file names).
///
/// # Errors
///
/// `FS0711` when `c` has no names, an edge is already negative (the weights must be unsigned
/// counts), a neuron with outgoing edges is missing from a full sign table, or a neuron of an
/// inhibitory list is not in the connectome.
pub fn apply_signs(c: &Connectome, signs: &Signs) -> Result<Connectome, BrainError> {
    let src = signs.source.as_str();
    let names = c
        .names()
        .ok_or_else(|| inconsistent(src, 0, 0, "the connectome has no neuron names to match"))?;
    if signs.inhibitory_list {
        let index: BTreeMap<&str, ()> = names.iter().map(|n| (n.as_str(), ())).collect();
        if let Some((id, (_, at))) = signs
            .of
            .iter()
            .find(|(id, _)| !index.contains_key(id.as_str()))
        {
            return Err(inconsistent(
                src,
                at.line,
                at.column,
                format!("neuron {id:?} is not in the connectome"),
            ));
        }
    }
    let mut triples = Vec::with_capacity(c.weights().len());
    let mut inhibitory = 0usize;
    for (pre, name) in names.iter().enumerate() {
        let row = c.row(pre as u32);
        let sign = match signs.of.get(name) {
            Some(&(s, _)) => s,
            None if signs.inhibitory_list || row.is_empty() => 1,
            None => {
                return Err(inconsistent(
                    src,
                    0,
                    0,
                    format!("neuron {name:?} has outgoing edges but no sign in the table"),
                ));
            }
        };
        if sign < 0 && !row.is_empty() {
            inhibitory += 1;
        }
        for (&post, &w) in c.targets()[row.clone()].iter().zip(&c.weights()[row]) {
            if w < 0 {
                return Err(inconsistent(
                    src,
                    0,
                    0,
                    format!(
                        "edge {name} -> {} is already negative ({w}); with a sign table the weights must be unsigned counts",
                        names[post as usize]
                    ),
                ));
            }
            triples.push((pre as u32, post, i64::from(w) * i64::from(sign)));
        }
    }
    let mut meta = c.meta().clone();
    meta.insert("inhibitory_neurons".to_owned(), inhibitory.to_string());
    Connectome::from_edges(c.neurons(), triples, Some(names.to_vec()), meta, src)
}
