//! Integration tests of flysim-compose: one binary, one module per concern.

mod assets;
mod diagnostics;
mod docs;
mod fuzz;
mod invariance;
mod limits;
mod plans;
mod sweeps;

use std::path::{Path, PathBuf};

use flysim_compose::{AssetRegistry, Diag, Input};
use flysim_types::plan::LaunchPlan;
use miette::{GraphicalReportHandler, GraphicalTheme};

/// The repository root.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Renders diagnostics as the snapshots hold them: no colour, 80 columns, one after another.
pub(crate) fn render(diags: &[Diag]) -> String {
    let handler = GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor())
        .with_width(80)
        .with_links(false);
    let mut out = String::new();
    for d in diags {
        handler.render_report(&mut out, d).unwrap();
    }
    out
}

/// Resolves the composition at `path` (shown under `name`), without a registry.
pub(crate) fn plan_at(path: &Path, name: &str) -> Result<LaunchPlan, Vec<Diag>> {
    plan_with(path, name, None)
}

/// Resolves the composition at `path` (shown under `name`) with an optional registry.
pub(crate) fn plan_with(
    path: &Path,
    name: &str,
    registry: Option<&AssetRegistry>,
) -> Result<LaunchPlan, Vec<Diag>> {
    let bytes = std::fs::read(path).unwrap();
    flysim_compose::plan(
        Input {
            name,
            bytes: &bytes,
            dir: path.parent().unwrap(),
        },
        registry,
        SPECS,
    )
}

/// Resolves the composition at `path` (shown under `name`) against `specs` only.
pub(crate) fn plan_against<'s>(
    path: &Path,
    name: &str,
    specs: impl Into<flysim_types::spec::Specs<'s>>,
) -> Result<LaunchPlan, Vec<Diag>> {
    let bytes = std::fs::read(path).unwrap();
    flysim_compose::plan(
        Input {
            name,
            bytes: &bytes,
            dir: path.parent().unwrap(),
        },
        None,
        specs,
    )
}

/// The shipped components' specs, as their crates declare them (the LIF model's as
/// `flysim_brain::SPEC` declares it: its retina in its `brain-profile` document, and no
/// parameter, so every one is refused).
pub(crate) const SPECS: flysim_types::spec::Specs<'static> = flysim_types::spec::Specs {
    backends: &[
        flysim_arena::SPEC,
        flysim_binjgb::SPEC,
        flysim_dolphin::SPEC,
    ],
    tasks: Some(&[
        flysim_arena::task::SPEC,
        flysim_binjgb::arena_task::SPEC,
        flysim_dolphin::echo_task::SPEC,
        flysim_component::memory_task::SPEC,
    ]),
    executors: Some(&["direct-v1"]),
    models: &[
        flysim_arena::synthetic::SPEC,
        flysim_types::spec::ModelSpec {
            kind: flysim_types::plan::ModelKind::Lif,
            parameters: Some(&[]),
            retina: Some("brain-profile"),
        },
    ],
};
