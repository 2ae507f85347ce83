//! The table prologue every importer shares: splitting a table's text into rows of cells (comma,
//! tab or whitespace separated, detected from the first row), each cell with its 1-based line
//! and column, and the coded refusals (`FS0710`, `FS0711`) that name the input, line and column.
//!
//! - Comma and tab: RFC 4180 double quotes, spaces around a cell trimmed.
//! - Whitespace (a first row with neither a tab nor a comma): runs of spaces and tabs separate
//!   cells, no quoting, and lines starting with `#` or `%` are comments.
//!
//! Empty lines are skipped everywhere. This module knows no importer's columns.

use crate::error::BrainError;
use crate::import::Table;

/// How the cells of a row are separated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Separator {
    Comma,
    Tab,
    Whitespace,
}

impl Separator {
    fn of(first: &str) -> Self {
        if first.contains('\t') {
            Self::Tab
        } else if first.contains(',') {
            Self::Comma
        } else {
            Self::Whitespace
        }
    }
}

/// One cell of a row: its text (trimmed unless quoted) and its 1-based column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cell {
    pub(crate) text: String,
    pub(crate) column: usize,
}

/// One non-empty row of a table.
#[derive(Debug, Clone)]
pub(crate) struct Row<'a> {
    source: &'a str,
    pub(crate) line: usize,
    cells: Vec<Cell>,
    /// The column just past the row's last character (for a missing cell).
    end: usize,
}

/// An `FS0710` refusal of `source` at `line:column`.
pub(crate) fn syntax(
    source: &str,
    line: usize,
    column: usize,
    reason: impl Into<String>,
) -> BrainError {
    BrainError::ImportSyntax {
        source_name: source.to_owned(),
        line: line as u64,
        column: column as u64,
        reason: reason.into(),
    }
}

/// An `FS0711` refusal of `source` at `line:column` (0 for the table or row as a whole).
pub(crate) fn inconsistent(
    source: &str,
    line: usize,
    column: usize,
    reason: impl Into<String>,
) -> BrainError {
    BrainError::ImportInconsistent {
        source_name: source.to_owned(),
        line: line as u64,
        column: column as u64,
        reason: reason.into(),
    }
}

/// Parses an integer, accepting an integral decimal written with a trailing `.0` (as pandas
/// writes floats).
pub(crate) fn parse_int(s: &str) -> Option<i64> {
    s.strip_suffix(".0").unwrap_or(s).parse::<i64>().ok()
}

impl<'a> Row<'a> {
    /// The row's cells, in order.
    pub(crate) fn cells(&self) -> &[Cell] {
        &self.cells
    }

    pub(crate) fn len(&self) -> usize {
        self.cells.len()
    }

    /// The text of cell `i`, if the row has it.
    pub(crate) fn text(&self, i: usize) -> Option<&str> {
        self.cells.get(i).map(|c| c.text.as_str())
    }

    /// An `FS0710` refusal at `column` of this row.
    pub(crate) fn syntax(&self, column: usize, reason: impl Into<String>) -> BrainError {
        syntax(self.source, self.line, column, reason)
    }

    /// An `FS0711` refusal at `column` of this row.
    pub(crate) fn inconsistent(&self, column: usize, reason: impl Into<String>) -> BrainError {
        inconsistent(self.source, self.line, column, reason)
    }

    /// Cell `i`, or `FS0710` naming what the missing cell should hold.
    pub(crate) fn get(&self, i: usize, what: &str) -> Result<&Cell, BrainError> {
        self.cells.get(i).ok_or_else(|| {
            self.syntax(
                self.end,
                format!("the row has no {what} column ({} fields)", self.cells.len()),
            )
        })
    }

    /// Cell `i` as an integer (`FS0710` otherwise).
    pub(crate) fn int(&self, i: usize, what: &str) -> Result<i64, BrainError> {
        let c = self.get(i, what)?;
        parse_int(&c.text)
            .ok_or_else(|| self.syntax(c.column, format!("{what} {:?} is not an integer", c.text)))
    }

    /// Cell `i` as a FlyWire root id, an unsigned integer (`FS0710` otherwise).
    pub(crate) fn root_id(&self, i: usize, what: &str) -> Result<u64, BrainError> {
        let c = self.get(i, what)?;
        c.text.parse::<u64>().map_err(|_| {
            self.syntax(
                c.column,
                format!("{what} {:?} is not a root id (unsigned integer)", c.text),
            )
        })
    }

    /// The position of the first cell named one of `names` (a header row's column).
    pub(crate) fn find(&self, names: &[&str]) -> Option<usize> {
        self.cells
            .iter()
            .position(|c| names.iter().any(|n| c.text.eq_ignore_ascii_case(n)))
    }

    /// The position of the cell named exactly `name`, or `FS0710` on this (header) row.
    pub(crate) fn need(&self, name: &str) -> Result<usize, BrainError> {
        self.cells
            .iter()
            .position(|c| c.text == name)
            .ok_or_else(|| self.syntax(1, format!("the header has no `{name}` column")))
    }
}

/// The rows of a table, in order (see the module documentation).
pub(crate) struct Rows<'a> {
    source: &'a str,
    lines: std::iter::Enumerate<std::str::Lines<'a>>,
    separator: Option<Separator>,
}

/// Reads `t` row by row.
pub(crate) fn rows<'a>(t: &Table<'a>) -> Rows<'a> {
    Rows {
        source: t.name,
        lines: t.text.lines().enumerate(),
        separator: None,
    }
}

impl<'a> Rows<'a> {
    /// The first row, or `FS0711` when the table has none; a header row that is all empty is
    /// `FS0710`.
    pub(crate) fn header(&mut self) -> Result<Row<'a>, BrainError> {
        let row = self
            .next()
            .ok_or_else(|| inconsistent(self.source, 0, 0, "the table is empty"))??;
        if row.cells.iter().all(|c| c.text.is_empty()) {
            return Err(row.syntax(1, "the header row is empty"));
        }
        Ok(row)
    }
}

impl<'a> Iterator for Rows<'a> {
    type Item = Result<Row<'a>, BrainError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let (i, raw) = self.lines.next()?;
            let text = raw.trim_end_matches('\r');
            if text.trim().is_empty() {
                continue;
            }
            let sep = *self.separator.get_or_insert_with(|| Separator::of(text));
            let line = i + 1;
            let cells = match sep {
                Separator::Whitespace => {
                    let lead = text.trim_start();
                    if lead.starts_with('#') || lead.starts_with('%') {
                        continue;
                    }
                    Ok(split_whitespace(text))
                }
                Separator::Comma => split_delimited(text, ','),
                Separator::Tab => split_delimited(text, '\t'),
            };
            let end = text.chars().count() + 1;
            return Some(
                cells
                    .map(|cells| Row {
                        source: self.source,
                        line,
                        cells,
                        end,
                    })
                    .map_err(|(column, reason)| syntax(self.source, line, column, reason)),
            );
        }
    }
}

fn split_whitespace(line: &str) -> Vec<Cell> {
    let mut cells = Vec::new();
    let mut current: Option<Cell> = None;
    for (i, ch) in line.chars().enumerate() {
        if ch.is_whitespace() {
            cells.extend(current.take());
        } else {
            current
                .get_or_insert_with(|| Cell {
                    text: String::new(),
                    column: i + 1,
                })
                .text
                .push(ch);
        }
    }
    cells.extend(current);
    cells
}

/// The cell for `field` read from `start` (1-based), trimmed unless it was quoted.
fn finish(field: &mut String, start: usize, quoted: bool) -> Cell {
    let raw = std::mem::take(field);
    if quoted {
        return Cell {
            text: raw,
            column: start,
        };
    }
    let text = raw.trim().to_owned();
    let lead = if text.is_empty() {
        0
    } else {
        raw.chars().take_while(|c| c.is_whitespace()).count()
    };
    Cell {
        text,
        column: start + lead,
    }
}

/// Splits one CSV/TSV line (RFC 4180 double quotes); an unclosed quote is `(column, reason)`.
fn split_delimited(line: &str, sep: char) -> Result<Vec<Cell>, (usize, String)> {
    let mut out = Vec::new();
    let mut field = String::new();
    let mut start = 1;
    let mut quote_at = 0;
    let mut chars = line.chars().enumerate().peekable();
    let mut quoted = false;
    let mut was_quoted = false;
    while let Some((i, ch)) = chars.next() {
        if quoted {
            if ch == '"' {
                if chars.peek().map(|&(_, c)| c) == Some('"') {
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
            quote_at = i + 1;
        } else if ch == sep {
            out.push(finish(
                &mut field,
                if was_quoted { quote_at } else { start },
                was_quoted,
            ));
            was_quoted = false;
            start = i + 2;
        } else if was_quoted && ch.is_whitespace() {
            // Spaces after a closing quote are not part of the field.
        } else {
            field.push(ch);
        }
    }
    if quoted {
        return Err((quote_at, "a quoted field is not closed".to_owned()));
    }
    out.push(finish(
        &mut field,
        if was_quoted { quote_at } else { start },
        was_quoted,
    ));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(text: &str) -> Vec<(String, usize)> {
        let t = Table { name: "t", text };
        rows(&t)
            .next()
            .unwrap_or_else(|| {
                Ok(Row {
                    source: "t",
                    line: 0,
                    cells: Vec::new(),
                    end: 0,
                })
            })
            .map(|r| r.cells.into_iter().map(|c| (c.text, c.column)).collect())
            .unwrap_or_default()
    }

    #[test]
    fn cells_carry_their_columns() {
        assert_eq!(
            cells(" a , \"b,c\" ,d"),
            [("a".into(), 2), ("b,c".into(), 6), ("d".into(), 13)]
        );
        assert_eq!(cells("x\ty"), [("x".into(), 1), ("y".into(), 3)]);
        assert_eq!(
            cells("  12   7 3"),
            [("12".into(), 3), ("7".into(), 8), ("3".into(), 10)]
        );
    }

    #[test]
    fn whitespace_tables_skip_comments_and_unclosed_quotes_are_refused_at_the_quote() {
        let t = Table {
            name: "t",
            text: "# pre post weight\n1 2 3\n% another\n2 1 4\n",
        };
        let lines: Vec<usize> = rows(&t).map(|r| r.map(|r| r.line).unwrap_or(0)).collect();
        assert_eq!(lines, [2, 4]);
        let t = Table {
            name: "t",
            text: "a,b,\"c\n",
        };
        match rows(&t).next() {
            Some(Err(BrainError::ImportSyntax { line, column, .. })) => {
                assert_eq!((line, column), (1, 5));
            }
            other => panic!("{other:?}"),
        }
    }
}
