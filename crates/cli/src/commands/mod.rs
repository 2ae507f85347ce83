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
pub(crate) mod sweep;
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

/// A composition read for resolving: its bytes, its display name, the directory its relative
/// paths resolve against.
pub(crate) struct Read {
    pub(crate) bytes: Vec<u8>,
    pub(crate) name: String,
    pub(crate) dir: std::path::PathBuf,
}

impl Read {
    /// Reads the composition at `path` (`-`: standard input).
    pub(crate) fn at(path: &Path) -> Result<Self, CliError> {
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
        Ok(Self {
            bytes,
            name,
            dir: dir.to_owned(),
        })
    }

    /// What the resolver reads.
    pub(crate) fn input(&self) -> flysim_compose::Input<'_> {
        flysim_compose::Input {
            name: &self.name,
            bytes: &self.bytes,
            dir: &self.dir,
        }
    }

    /// Its diagnostics, as the command's failure.
    pub(crate) fn refused(&self, diags: Vec<flysim_compose::Diag>) -> CliError {
        CliError::Composition {
            name: self.name.clone(),
            diags,
        }
    }
}

/// The asset registry compositions are resolved against.
pub(crate) fn registry() -> Option<flysim_compose::AssetRegistry> {
    registry_root().map(flysim_compose::AssetRegistry::at)
}

/// Reads a composition (a file, or `-` for standard input) and resolves it into its plan, with
/// `overrides` (`--master-seed`) in place of what the file says.
pub(crate) fn resolve_with(
    path: &Path,
    overrides: &flysim_compose::Overrides,
) -> Result<flysim_types::plan::LaunchPlan, CliError> {
    let read = Read::at(path)?;
    let registry = registry();
    flysim_compose::plan_with(
        read.input(),
        registry.as_ref(),
        flysim_run::components::ALL,
        overrides,
    )
    .map_err(|diags| read.refused(diags))
}
