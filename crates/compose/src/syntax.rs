//! KDL parse diagnostics turned into ours: code `FS0201`, the file name, and a hint when the
//! text looks like KDL 1 (`true`, `false`, `null` without `#`, `r"raw"` strings).

use kdl::KdlDiagnostic;
use miette::SourceSpan;

use crate::diag::{Problem, Src};

/// Converts one diagnostic of the KDL parser.
pub(crate) fn convert(src: &Src, text: &str, d: &KdlDiagnostic) -> Problem {
    let message = d
        .message
        .clone()
        .unwrap_or_else(|| "unexpected text".to_owned());
    let at = tighten(text, d.span);
    let hint = v1_hint(text, at);
    let help = match (hint, d.help.clone()) {
        (Some(h), _) => Some(h),
        (None, Some(h)) => Some(h),
        (None, None) => None,
    };
    Problem::Syntax {
        src: src.clone(),
        message: message.trim_end_matches('.').to_owned(),
        at,
        label: d.label.clone().unwrap_or_else(|| "here".to_owned()),
        help,
    }
}

/// Keeps a parser span on one line. The parser sometimes reports a span that starts where it
/// began backtracking (a line start, even the document start) and ends at the offending text:
/// then the last character before the end is the place to show. A span that starts mid-line and
/// runs past its line is cut at the line's end.
fn tighten(text: &str, span: SourceSpan) -> SourceSpan {
    let start = span.offset().min(text.len());
    let end = (start + span.len()).min(text.len());
    let Some(newline) = text[start..end].find('\n') else {
        return span;
    };
    let at_line_start = start == 0 || text.as_bytes()[start - 1] == b'\n';
    if at_line_start {
        let before = text[..end].trim_end();
        match before.char_indices().last() {
            Some((i, c)) => SourceSpan::from((i, c.len_utf8())),
            None => SourceSpan::from((start, 0)),
        }
    } else {
        SourceSpan::from((start, newline))
    }
}

/// The word (identifier characters) around `at`.
fn word_at(text: &str, at: usize) -> &str {
    let at = at.min(text.len());
    let is_word = |c: char| c.is_alphanumeric() || "-_.".contains(c);
    let start = text[..at]
        .char_indices()
        .rev()
        .take_while(|(_, c)| is_word(*c))
        .last()
        .map_or(at, |(i, _)| i);
    let end = text[at..]
        .char_indices()
        .find(|(_, c)| !is_word(*c))
        .map_or(text.len(), |(i, _)| at + i);
    &text[start..end]
}

/// A hint for KDL 1 syntax at the error, if the text there looks like it.
fn v1_hint(text: &str, span: SourceSpan) -> Option<String> {
    let word = word_at(text, span.offset());
    let keyword = match word {
        "true" | "false" | "null" => Some(word),
        _ => None,
    };
    if let Some(k) = keyword {
        return Some(format!(
            "this looks like KDL 1: KDL 2 writes `#{k}` (booleans and null take a `#`); flysim reads KDL 2 only"
        ));
    }
    let after = &text[span.offset().min(text.len())..];
    if after.starts_with("r\"") || after.starts_with("r#") {
        return Some(
            "this looks like a KDL 1 raw string: KDL 2 writes `#\"...\"#`; flysim reads KDL 2 only"
                .to_owned(),
        );
    }
    None
}
