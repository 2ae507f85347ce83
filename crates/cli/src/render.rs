//! Rendering diagnostics as text for the terminal.

use miette::{Diagnostic, GraphicalReportHandler, GraphicalTheme};

/// Renders a diagnostic: code, message, the labelled span in its source, help, the command
/// line's hint for its code, and a pointer to `flysim explain`. Colour is used only when stderr
/// is a terminal. Control characters and bidirectional overrides that came from the input are
/// escaped (`\u{1b}`), never echoed: a diagnostic holding one is rendered without colour.
pub(crate) fn diagnostic(diag: &dyn Diagnostic) -> String {
    use std::io::IsTerminal as _;
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let plain = report(diag, GraphicalTheme::unicode_nocolor());
    let mut out = if plain.chars().any(hostile) {
        escape(&plain)
    } else if colour {
        report(diag, GraphicalTheme::unicode())
    } else {
        plain
    };
    let codes = codes_of(diag);
    for code in &codes {
        if let Some(hint) = crate::hints::for_code(code) {
            out.push_str(&format!("  hint: {hint}\n"));
        }
    }
    for code in codes {
        out.push_str(&format!("  more: flysim explain {code}\n"));
    }
    out
}

/// The graphical report of `diag` in `theme`. A diagnostic whose span is on a line too long to
/// show (minified JSON, a generated KDL line) is shown without its snippet, by line and column.
fn report(diag: &dyn Diagnostic, theme: GraphicalTheme) -> String {
    let handler = GraphicalReportHandler::new_themed(theme).with_width(100);
    let mut out = String::new();
    let rendered = match long_line_location(diag) {
        Some(location) => handler.render_report(&mut out, &Located { diag, location }),
        None => handler.render_report(&mut out, diag),
    };
    if rendered.is_err() {
        out = format!("error: {diag}\n");
    }
    out
}

/// The longest source line a snippet shows; past it the renderer would pad its underline to
/// the column (and past column 65535 it cannot).
const SNIPPET_LINE_LIMIT: usize = 1000;

/// `name:line:column` of the first label of `diag`, when a labelled line is too long to show.
fn long_line_location(diag: &dyn Diagnostic) -> Option<String> {
    let source = diag.source_code()?;
    let mut location = None;
    let mut too_long = false;
    for label in diag.labels()? {
        let Ok(lines) = source.read_span(label.inner(), 0, 0) else {
            continue;
        };
        let line = lines.data().split(|b| *b == b'\n').map(<[u8]>::len).max();
        too_long |= lines.column() + line.unwrap_or(0) > SNIPPET_LINE_LIMIT;
        location.get_or_insert_with(|| {
            format!(
                "{}:{}:{}",
                lines.name().unwrap_or("<input>"),
                lines.line() + 1,
                lines.column() + 1
            )
        });
    }
    location.filter(|_| too_long)
}

/// A diagnostic shown without its source: its message gains the place of its first label.
#[derive(Debug)]
struct Located<'a> {
    /// The diagnostic.
    diag: &'a dyn Diagnostic,
    /// `name:line:column`.
    location: String,
}

impl std::fmt::Display for Located<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}\n  at {} (the line is too long to show)",
            self.diag, self.location
        )
    }
}

impl std::error::Error for Located<'_> {}

impl Diagnostic for Located<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn std::fmt::Display + 'b>> {
        self.diag.code()
    }
    fn help<'b>(&'b self) -> Option<Box<dyn std::fmt::Display + 'b>> {
        self.diag.help()
    }
    fn severity(&self) -> Option<miette::Severity> {
        self.diag.severity()
    }
    fn diagnostic_source(&self) -> Option<&dyn Diagnostic> {
        self.diag.diagnostic_source()
    }
}

/// Whether `c` must not reach a terminal as it is: a control character other than newline
/// and tab, or a code point that reorders or hides text (bidi marks, overrides, isolates).
fn hostile(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

/// `text` with every [`hostile`] code point written as a Rust escape, `\u{1b}`.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if hostile(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// The codes of a diagnostic and of the diagnostics it wraps, outermost first.
fn codes_of(diag: &dyn Diagnostic) -> Vec<String> {
    let mut codes = Vec::new();
    let mut here: Option<&dyn Diagnostic> = Some(diag);
    while let Some(d) = here {
        if let Some(code) = d.code() {
            codes.push(code.to_string());
        }
        here = d.diagnostic_source();
    }
    codes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_and_overrides_are_escaped() {
        assert_eq!(
            escape("a\u{1b}[2J\tb\n\u{202e}c"),
            "a\\u{1b}[2J\tb\n\\u{202e}c"
        );
        assert!(!"plain │ text ✔\n".chars().any(hostile));
    }
}
