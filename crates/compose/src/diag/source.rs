//! The named text of one source file as diagnostics point into it, with an index of its line
//! starts: a renderer asks for the lines around a span, and without the index each question
//! would scan the file from its start, so rendering every problem of a file would take time
//! quadratic in their number.
//!
//! It answers exactly what miette's own reading of a `str` answers (the same lines, line and
//! column numbers), only from the nearest line start; it knows nothing of what the text means.

use std::sync::Arc;

use miette::{MietteError, MietteSpanContents, SourceCode, SourceSpan, SpanContents};

/// The named text of one source file, shared by every diagnostic pointing into it.
#[derive(Debug, Clone)]
pub struct Src {
    /// The name shown in diagnostics.
    name: Arc<str>,
    /// The text.
    text: Arc<str>,
    /// The byte offset of each line's start, the first line's (0) included.
    line_starts: Arc<[usize]>,
}

impl Src {
    /// The source `text`, shown under `name`.
    #[must_use]
    pub fn new(name: &str, text: Arc<str>) -> Self {
        let bytes = text.as_bytes();
        let mut line_starts = vec![0];
        for (i, b) in bytes.iter().enumerate() {
            let ends_line = match b {
                b'\n' => true,
                // A `\r\n` ends its line at the `\n`.
                b'\r' => bytes.get(i + 1) != Some(&b'\n'),
                _ => false,
            };
            if ends_line {
                line_starts.push(i + 1);
            }
        }
        Self {
            name: Arc::from(name),
            text,
            line_starts: Arc::from(line_starts),
        }
    }

    /// The name shown in diagnostics.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl SourceCode for Src {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        // The line the span starts on, then the start of the first context line before it.
        let line = self
            .line_starts
            .partition_point(|start| *start <= span.offset())
            .saturating_sub(1);
        // One line more than the context: miette's reading treats a span at offset `o` as
        // starting at `o - 1`, which must not fall before the window.
        let first = line.saturating_sub(context_lines_before + 1);
        let window = self.line_starts[first];
        let shifted = SourceSpan::from((span.offset() - window, span.len()));
        let local =
            self.text[window..].read_span(&shifted, context_lines_before, context_lines_after)?;
        let at = SourceSpan::from((local.span().offset() + window, local.span().len()));
        Ok(Box::new(
            MietteSpanContents::new_named(
                self.name.to_string(),
                local.data(),
                at,
                local.line() + first,
                local.column(),
                local.line_count() + first,
            )
            .with_language("kdl"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_what_a_whole_scan_answers() {
        let text = "a 1\r\nb 2\n\nccc {\n  d 3\n}\nlast";
        let src = Src::new("x.kdl", Arc::from(text));
        for offset in 0..text.len() {
            for len in [0, 1, 3] {
                let span = SourceSpan::from((offset, len.min(text.len() - offset)));
                for (before, after) in [(0, 0), (1, 1), (2, 3), (5, 0), (0, 2)] {
                    let want = text.read_span(&span, before, after).unwrap();
                    let got = src.read_span(&span, before, after).unwrap();
                    let at = (offset, len, before, after);
                    assert_eq!(got.data(), want.data(), "{at:?}");
                    assert_eq!(got.span(), want.span(), "{at:?}");
                    assert_eq!(got.line(), want.line(), "{at:?}");
                    assert_eq!(got.column(), want.column(), "{at:?}");
                    assert_eq!(got.line_count(), want.line_count(), "{at:?}");
                    assert_eq!(got.name(), Some("x.kdl"));
                }
            }
        }
    }
}
