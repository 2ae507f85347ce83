//! One module per subcommand; each exposes `Args` (clap) and `run`.

pub(crate) mod assets;
pub(crate) mod backends;
pub(crate) mod brain;
pub(crate) mod canon;
pub(crate) mod checkpoint;
pub(crate) mod components;
pub(crate) mod diff;
pub(crate) mod dolphin;
pub(crate) mod duration;
pub(crate) mod explain;
pub(crate) mod frames;
pub(crate) mod input;
pub(crate) mod plan;
pub(crate) mod report;
pub(crate) mod rom;
pub(crate) mod run;
pub(crate) mod run_dir;
pub(crate) mod runs;
pub(crate) mod schema;
pub(crate) mod seed;
pub(crate) mod ticks;
pub(crate) mod validate;
pub(crate) mod watch;
pub(crate) mod worker;

use std::path::Path;

pub(crate) use input::{display_name, read_input};

use crate::error::CliError;

/// The asset registry's directory: `$FLYSIM_HOME/assets`, else the user's data directory
/// (`$XDG_DATA_HOME/flysim/assets`, else `$HOME/.local/share/flysim/assets`). `None` when none of
/// those variables is set. This is the one place flysim reads the environment for compositions.
pub(crate) fn registry_root() -> Option<std::path::PathBuf> {
    let var = |name| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(std::path::PathBuf::from)
    };
    if let Some(home) = var("FLYSIM_HOME") {
        return Some(home.join("assets"));
    }
    if let Some(data) = var("XDG_DATA_HOME") {
        return Some(data.join("flysim/assets"));
    }
    var("HOME").map(|h| h.join(".local/share/flysim/assets"))
}

/// Reads a composition (a file, or `-` for standard input) and resolves it into its plan.
pub(crate) fn resolve_composition(path: &Path) -> Result<flysim_types::plan::LaunchPlan, CliError> {
    let bytes = input::read_bounded(path, input::COMPOSITION_LIMIT)?;
    let name = display_name(path);
    // Standard input's includes and asset paths resolve against the current directory.
    let dir = if path == Path::new("-") {
        Path::new(".")
    } else {
        path.parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
    };
    let registry = registry_root().map(flysim_compose::AssetRegistry::at);
    flysim_compose::plan(
        flysim_compose::Input {
            name: &name,
            bytes: &bytes,
            dir,
        },
        registry.as_ref(),
        flysim_run::components::ALL,
    )
    .map_err(|diags| CliError::Composition { name, diags })
}
