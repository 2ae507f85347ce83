//! Rendering diagnostics as text for the terminal.

use miette::{Diagnostic, GraphicalReportHandler, GraphicalTheme};

/// Renders a diagnostic: code, message, the labelled span in its source, help, the command
/// line's hint for its code, and a pointer to `flysim explain`. Colour is used only when stderr is a terminal.
pub(crate) fn diagnostic(diag: &dyn Diagnostic) -> String {
    use std::io::IsTerminal as _;
    let theme = if std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none() {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme).with_width(100);
    let mut out = String::new();
    if handler.render_report(&mut out, diag).is_err() {
        out = format!("error: {diag}\n");
    }
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
