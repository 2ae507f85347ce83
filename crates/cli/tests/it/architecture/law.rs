//! The layering law as ARCHITECTURE.md states it: the rank of every workspace package, the few
//! edges allowed to stay within a rank, and the external crates (or features of them) that
//! packages may not use. This file only parses the three marked tables; it knows nothing of
//! cargo or of how the law is checked.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// How a package depends on another, as cargo names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Kind {
    /// A `[dependencies]` entry.
    Normal,
    /// A `[build-dependencies]` entry.
    Build,
    /// A `[dev-dependencies]` entry.
    Dev,
}

impl Kind {
    fn parse(word: &str) -> Result<Self, String> {
        match word {
            "normal" => Ok(Self::Normal),
            "build" => Ok(Self::Build),
            "dev" => Ok(Self::Dev),
            other => Err(format!(
                "`{other}` is not a dependency kind (normal, build or dev)"
            )),
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Normal => "normal",
            Self::Build => "build",
            Self::Dev => "dev",
        })
    }
}

/// An external crate, or one feature of it, that some packages may not use.
#[derive(Debug)]
pub(crate) struct ForbiddenExternal {
    /// The external package's name.
    pub(crate) krate: String,
    /// The feature that is forbidden; `None` forbids the crate itself.
    pub(crate) feature: Option<String>,
    /// The packages it is forbidden in; `None` is every package.
    pub(crate) forbidden_in: Option<BTreeSet<String>>,
    /// Packages exempt from the rule, each for one dependency kind or (`None`) for all.
    pub(crate) except: Vec<(String, Option<Kind>)>,
}

impl ForbiddenExternal {
    /// The rule as the table spells it: `tokio` or `miette/fancy-base`.
    pub(crate) fn name(&self) -> String {
        match &self.feature {
            Some(feature) => format!("{}/{feature}", self.krate),
            None => self.krate.clone(),
        }
    }

    /// Whether the rule applies to `package` depending through a `kind` edge.
    pub(crate) fn binds(&self, package: &str, kind: Kind) -> bool {
        let forbidden = self
            .forbidden_in
            .as_ref()
            .is_none_or(|packages| packages.contains(package));
        let exempt = self
            .except
            .iter()
            .any(|(p, k)| p == package && k.is_none_or(|k| k == kind));
        forbidden && !exempt
    }
}

/// The three tables of the layering law.
#[derive(Debug)]
pub(crate) struct Law {
    /// Package -> its rank; a package may depend only on packages of lower rank.
    pub(crate) ranks: BTreeMap<String, u32>,
    /// `(from, to, kind)` edges allowed although `to` is not of lower rank than `from`.
    pub(crate) allowed_edges: BTreeSet<(String, String, Kind)>,
    /// External crates and features kept out of packages.
    pub(crate) forbidden: Vec<ForbiddenExternal>,
}

impl Law {
    /// Parses the `ranks`, `allowed-edges` and `forbidden-externals` tables out of `text`.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let ranks = ranks(&table(text, "ranks")?)?;
        let allowed_edges = allowed_edges(&table(text, "allowed-edges")?)?;
        let forbidden = table(text, "forbidden-externals")?
            .iter()
            .map(|row| forbidden_external(row, &ranks))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            ranks,
            allowed_edges,
            forbidden,
        })
    }
}

/// The body rows of the markdown table between `<!-- marker -->` and `<!-- /marker -->`, each
/// split into trimmed cells (the header row and the `---` row dropped).
fn table(text: &str, marker: &str) -> Result<Vec<Vec<String>>, String> {
    let open = format!("<!-- {marker} -->");
    let close = format!("<!-- /{marker} -->");
    let body = text
        .split_once(&open)
        .and_then(|(_, rest)| rest.split_once(&close))
        .map(|(body, _)| body)
        .ok_or_else(|| {
            format!("ARCHITECTURE.md has no table between the markers `{open}` and `{close}`")
        })?;
    let rows: Vec<Vec<String>> = body
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with('|'))
        .skip(1)
        .filter(|line| !line.starts_with("| ---"))
        .map(|line| {
            let inner = line.trim_start_matches('|').trim_end_matches('|');
            inner
                .split('|')
                .map(|cell| cell.trim().to_owned())
                .collect()
        })
        .collect();
    if rows.is_empty() {
        return Err(format!(
            "the `{marker}` table of ARCHITECTURE.md has no rows"
        ));
    }
    Ok(rows)
}

/// Checks a row has `n` cells.
fn cells<'a>(row: &'a [String], n: usize, marker: &str) -> Result<&'a [String], String> {
    if row.len() == n {
        Ok(row)
    } else {
        Err(format!(
            "a row of the `{marker}` table has {} cells, not {n}: {row:?}",
            row.len()
        ))
    }
}

/// A name in backticks, without them.
fn quoted(item: &str) -> Result<String, String> {
    item.strip_prefix('`')
        .and_then(|rest| rest.strip_suffix('`'))
        .filter(|name| !name.is_empty() && !name.contains('`'))
        .map(str::to_owned)
        .ok_or_else(|| format!("`{item}` is not a name in backticks"))
}

/// The comma-separated items of a cell; `—` is none.
fn items(cell: &str) -> Vec<&str> {
    if cell == "—" {
        return Vec::new();
    }
    cell.split(',').map(str::trim).collect()
}

fn ranks(rows: &[Vec<String>]) -> Result<BTreeMap<String, u32>, String> {
    let mut ranks = BTreeMap::new();
    for row in rows {
        let row = cells(row, 2, "ranks")?;
        let rank: u32 = row[0]
            .parse()
            .map_err(|_| format!("`{}` is not a rank", row[0]))?;
        for item in items(&row[1]) {
            let package = quoted(item)?;
            if let Some(earlier) = ranks.insert(package.clone(), rank) {
                return Err(format!(
                    "`{package}` is in the rank table twice (ranks {earlier} and {rank})"
                ));
            }
        }
    }
    Ok(ranks)
}

fn allowed_edges(rows: &[Vec<String>]) -> Result<BTreeSet<(String, String, Kind)>, String> {
    rows.iter()
        .map(|row| {
            let row = cells(row, 4, "allowed-edges")?;
            if row[3].is_empty() {
                return Err(format!("the allowed edge {row:?} gives no reason"));
            }
            Ok((quoted(&row[0])?, quoted(&row[1])?, Kind::parse(&row[2])?))
        })
        .collect()
}

/// One row: `` | `crate` or `crate/feature` | scope | exceptions | reason | ``. The scope is
/// `every package` or a list of `` `package` `` and `rank N` items; an exception is
/// `` `package` `` or `` `package` (kind) ``.
fn forbidden_external(
    row: &[String],
    ranks: &BTreeMap<String, u32>,
) -> Result<ForbiddenExternal, String> {
    let row = cells(row, 4, "forbidden-externals")?;
    let external = quoted(&row[0])?;
    let (krate, feature) = match external.split_once('/') {
        Some((krate, feature)) => (krate.to_owned(), Some(feature.to_owned())),
        None => (external, None),
    };
    let forbidden_in = if row[1] == "every package" {
        None
    } else {
        let mut packages = BTreeSet::new();
        for item in items(&row[1]) {
            if let Some(rank) = item.strip_prefix("rank ") {
                let rank: u32 = rank
                    .parse()
                    .map_err(|_| format!("`{item}` does not name a rank"))?;
                packages.extend(
                    ranks
                        .iter()
                        .filter(|&(_, &r)| r == rank)
                        .map(|(p, _)| p.clone()),
                );
            } else {
                packages.insert(quoted(item)?);
            }
        }
        Some(packages)
    };
    let except = items(&row[2])
        .into_iter()
        .map(|item| match item.split_once(" (") {
            Some((package, kind)) => {
                let kind = kind
                    .strip_suffix(')')
                    .ok_or_else(|| format!("`{item}` is not `` `package` (kind) ``"))?;
                Ok((quoted(package)?, Some(Kind::parse(kind)?)))
            }
            None => Ok((quoted(item)?, None)),
        })
        .collect::<Result<_, String>>()?;
    if row[3].is_empty() {
        return Err(format!("the forbidden external {row:?} gives no reason"));
    }
    Ok(ForbiddenExternal {
        krate,
        feature,
        forbidden_in,
        except,
    })
}
