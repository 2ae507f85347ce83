//! Compositions: from a KDL file to a launch plan, or to diagnostics that say where and why.
//!
//! This crate owns the composition language (KDL 2.0, parsed with the `kdl` crate and decoded by
//! hand into a typed model whose every value keeps its byte span: [`model`]), includes, the
//! resolver that checks meaning and builds the [`LaunchPlan`], and the local content-addressed
//! asset registry ([`assets`]). Every error of a file is reported, each with a registered code
//! (`FS02xx`), a labelled span in the named source file, and help ([`Diag`]), sorted by position.
//!
//! The phases: syntax (all KDL errors of every file), then shape (unknown nodes, types, missing
//! and repeated nodes, includes), then meaning (the resolver). A phase runs only when the ones
//! before it found nothing, so no diagnostic is the echo of an earlier one.
//!
//! **Invariant:** it reads files (the composition's includes and pinned assets, the registry
//! under a root the caller names) and nothing else of the machine: no environment variable, no
//! clock, no core count, no absolute path reaches a plan. It does not print, render diagnostics
//! or know about the command line; it knows nothing of sessions, transports or emulators beyond
//! the names and pinned identities a plan records.

pub mod assets;
pub mod diag;
pub mod model;
pub mod sweep;

mod decode;
mod resolve;
mod syntax;
mod text;

use std::path::Path;

pub use assets::{AssetError, AssetRegistry};
pub use decode::bounded::file_kind;
pub use diag::{ComponentProblem, Diag, MemoryProblem, Problem};
use flysim_types::plan::LaunchPlan;
pub use flysim_types::spec::Specs;
pub use model::Composition;
pub use sweep::{Overrides, SweepPlan, plan_member, plan_sweep};

/// The thread budget when `run` has no `max-threads`: the agents' `threads` add up to at most
/// this. A constant of the language, never the machine's core count, so a plan does not depend
/// on where it was resolved.
pub const DEFAULT_MAX_THREADS: u32 = 8;

/// A composition to read: its display name, its bytes, and the directory its relative paths
/// (includes, assets) are resolved against and that includes may not leave.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    /// The name shown in diagnostics (`<stdin>` for standard input).
    pub name: &'a str,
    /// The file's bytes.
    pub bytes: &'a [u8],
    /// The composition's directory (for standard input, the current directory).
    pub dir: &'a Path,
}

/// Parses and decodes a composition with its includes: the model and every syntax and shape
/// diagnostic, sorted by position.
#[must_use]
pub fn load(input: Input<'_>) -> (Composition, Vec<Diag>) {
    let (mut comp, mut diags) = decode::load(input.name, input.bytes, input.dir);
    sweep::exclude_block(&mut comp, input.bytes);
    diag::sort(&mut diags);
    (comp, diags)
}

/// Loads and resolves a composition into its sealed launch plan.
///
/// `registry` is the local asset registry, if there is one; assets named by id are looked up
/// there, assets named by path are read relative to the file that declares them. `specs` are
/// the components of the build, as their crates declare them (only backends, for a caller
/// that passes a slice of them): the environment is checked against its backend's spec
/// (identity, content, ports, views, step duration), the task and executor against the ones
/// declared and the backend, each profile against its model's spec (parameters, retina).
///
/// # Errors
///
/// Every diagnostic of the first phase that found any, sorted by position.
pub fn plan<'s>(
    input: Input<'_>,
    registry: Option<&AssetRegistry>,
    specs: impl Into<Specs<'s>>,
) -> Result<LaunchPlan, Vec<Diag>> {
    plan_with(input, registry, specs, &Overrides::default())
}

/// [`plan`], with `overrides` in place of what the composition says. A composition's `sweep`
/// block is checked, and plays no part in the plan (see [`sweep`]).
///
/// # Errors
///
/// As [`plan`].
pub fn plan_with<'s>(
    input: Input<'_>,
    registry: Option<&AssetRegistry>,
    specs: impl Into<Specs<'s>>,
    overrides: &Overrides,
) -> Result<LaunchPlan, Vec<Diag>> {
    let (mut comp, diags) = load(input);
    if !diags.is_empty() {
        return Err(diags);
    }
    sweep::apply_overrides(&mut comp, overrides);
    let plan = resolve::resolve(&comp, registry, specs.into())?;
    // A sweep block is checked against the composition even when no member is asked for.
    sweep::check(&comp).map(|()| plan)
}
