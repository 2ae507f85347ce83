//! One module per subcommand; each exposes `Args` (clap) and `run`.

pub(crate) mod backends;
pub(crate) mod brain;
pub(crate) mod canon;
pub(crate) mod explain;
pub(crate) mod rom;
pub(crate) mod schema;
pub(crate) mod seed;
pub(crate) mod ticks;

use std::path::Path;

use crate::error::CliError;

/// Reads a file, or standard input for `-`.
pub(crate) fn read_input(path: &Path) -> Result<Vec<u8>, CliError> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    let result = if path == Path::new("-") {
        std::io::stdin().lock().read_to_end(&mut bytes).map(|_| ())
    } else {
        std::fs::read(path).map(|b| bytes = b)
    };
    result
        .map(|()| bytes)
        .map_err(|source| CliError::ReadInput {
            path: path.to_owned(),
            source,
        })
}

/// The name a document is shown under in diagnostics.
pub(crate) fn display_name(path: &Path) -> String {
    if path == Path::new("-") {
        "<stdin>".to_owned()
    } else {
        path.display().to_string()
    }
}
