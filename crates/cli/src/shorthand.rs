//! `flysim FILE`, the shorthand for `flysim run FILE`: which first arguments get `run` inserted
//! before them, and the answer for a file that is not a composition.
//!
//! It owns that decision only; it does not know what a run does, nor the subcommands beyond the
//! names it is handed.

use std::ffi::OsString;
use std::path::Path;

use crate::commands::input;
use crate::error::CliError;

/// The arguments with `run` inserted when the first names a composition: a `.kdl` path, or an
/// existing file whose text is a composition whatever its name. A first argument that is a
/// subcommand, a flag, or no file at all is left to the argument parser.
///
/// # Errors
///
/// [`CliError::NotAComposition`] for an existing file that is no composition.
pub(crate) fn arguments(
    mut args: Vec<OsString>,
    subcommands: &[String],
) -> Result<Vec<OsString>, CliError> {
    let Some(first) = args.get(1).and_then(|a| a.to_str()).map(str::to_owned) else {
        return Ok(args);
    };
    if subcommands.contains(&first) || first == "help" || first.starts_with('-') {
        return Ok(args);
    }
    let path = Path::new(&first);
    if first.ends_with(".kdl") || (path.is_file() && is_composition(path)) {
        args.insert(1, "run".into());
        return Ok(args);
    }
    if path.exists() {
        return Err(CliError::NotAComposition {
            path: path.to_owned(),
        });
    }
    Ok(args)
}

/// Whether the file at `path` is KDL that starts with `flysim-composition`: a composition,
/// though it may have other problems (a run reports them).
fn is_composition(path: &Path) -> bool {
    let Ok(bytes) = input::read_bounded(path, input::COMPOSITION_LIMIT) else {
        return false;
    };
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = input::display_name(path);
    let (_, diags) = flysim_compose::load(flysim_compose::Input {
        name: &name,
        bytes: &bytes,
        dir,
    });
    !diags.iter().any(|d| {
        d.code() == "FS0201" || (d.code() == "FS0207" && d.to_string().contains("does not start"))
    })
}
