//! Sweeps: a composition's `sweep` block resolved into a family of launch plans, one per
//! member, and the sweep digest over them.
//!
//! A member is the composition with one value of every axis put in place of what the file
//! says (the master seed, the run's steps, a profile parameter), resolved like any
//! composition: the same resolver, the same checks, nothing of the family in its plan. So a
//! member resolved alone (the master seed given as an [`Overrides`], or [`plan_member`]) is
//! byte for byte the plan it is in the family. The `sweep` block's own bytes are left out of
//! the composition's digest (`SourceFile::sha256` of the root: the SHA-256 of the file with
//! the block's bytes cut out), so changing one axis value changes only the plans of the
//! members that take it.
//!
//! Members are ordered as a grid: the product of the axes in declaration order, the last axis
//! fastest (an axis of values `a b` then one of `x y z` gives `a x`, `a y`, `a z`, `b x`, ...).
//!
//! It knows compositions and plans; it does not know run directories, executors or files a
//! sweep writes.

mod expand;

use flysim_types::plan::LaunchPlan;
use flysim_types::spec::Specs;
use flysim_types::{Digest, Id, U64};
use miette::SourceSpan;

use crate::assets::AssetRegistry;
use crate::diag::Diag;
use crate::model::{Composition, Span, Spanned};
use crate::{Input, load, resolve};

/// The most members a sweep may have.
pub const MAX_MEMBERS: usize = 10_000;

/// The domain tag the sweep digest starts with.
pub const DIGEST_TAG: &str = "flysim-sweep-v1";

/// A `sweep` block.
#[derive(Debug, Clone)]
pub struct Sweep {
    /// The node's name.
    pub span: Span,
    /// The node's bytes in the composition file, from its name to its closing brace (left out
    /// of the file's digest).
    pub block: SourceSpan,
    /// The axes, in declaration order.
    pub axes: Vec<Axis>,
}

/// One axis: what it varies and the values it takes, in order.
#[derive(Debug, Clone)]
pub struct Axis {
    /// The axis node's name.
    pub span: Span,
    /// What it varies.
    pub target: Spanned<Target>,
    /// Its values.
    pub values: Vec<Spanned<Value>>,
}

/// What an axis varies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The composition's `master-seed`.
    MasterSeed,
    /// `run { steps }`.
    RunSteps,
    /// A profile's parameter (set, or added when the profile does not write it).
    Parameter {
        /// The profile.
        profile: Id,
        /// The parameter.
        name: String,
    },
}

impl Target {
    /// The target as a sweep names it: `master-seed`, `run.steps`,
    /// `profile.<id>.parameter.<name>`.
    #[must_use]
    pub fn label(&self) -> String {
        match self {
            Self::MasterSeed => "master-seed".to_owned(),
            Self::RunSteps => "run.steps".to_owned(),
            Self::Parameter { profile, name } => format!("profile.{profile}.parameter.{name}"),
        }
    }
}

/// One value of an axis.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A master seed, a canonical U64 string.
    Seed(String),
    /// A step count.
    Steps(u64),
    /// A parameter value.
    Parameter(serde_json::Value),
}

impl Value {
    /// The value as JSON: a seed as its string, steps as a number, a parameter as written.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Self::Seed(s) => serde_json::Value::from(s.clone()),
            Self::Steps(n) => serde_json::Value::from(*n),
            Self::Parameter(v) => v.clone(),
        }
    }
}

/// What a single run changes of its composition without editing it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Overrides {
    /// The master seed in place of the composition's.
    pub master_seed: Option<U64>,
}

/// A sweep resolved: every member's plan, in member order, and the sweep digest.
#[derive(Debug, Clone)]
pub struct SweepPlan {
    /// The composition's name.
    pub name: String,
    /// The axes' targets, in declaration order (as [`Target::label`] spells them).
    pub axes: Vec<String>,
    /// The members, member `i` at index `i`.
    pub members: Vec<Member>,
    /// [`sweep_digest`] of the members' plan digests.
    pub digest: Digest,
}

/// One member of a sweep.
#[derive(Debug, Clone)]
pub struct Member {
    /// Its index in member order.
    pub index: usize,
    /// Each axis's target and the value this member takes, in axis order.
    pub values: Vec<(String, serde_json::Value)>,
    /// Its plan.
    pub plan: LaunchPlan,
}

/// The sweep digest: SHA-256 over the bytes `flysim-sweep-v1\n` followed, for each member in
/// member order, by its plan digest as 64 lowercase hexadecimal characters and `\n`. For two
/// members: `"flysim-sweep-v1\n" + hex(planDigest 0) + "\n" + hex(planDigest 1) + "\n"`.
#[must_use]
pub fn sweep_digest<'a>(plan_digests: impl IntoIterator<Item = &'a Digest>) -> Digest {
    let mut text = format!("{DIGEST_TAG}\n");
    for digest in plan_digests {
        text.push_str(&digest.hex());
        text.push('\n');
    }
    flysim_types::digest::sha256(text.as_bytes())
}

/// Leaves the `sweep` block's bytes out of the composition file's digest.
pub(crate) fn exclude_block(comp: &mut Composition, bytes: &[u8]) {
    let Some(sweep) = &comp.sweep else {
        return;
    };
    let (start, len) = (sweep.block.offset(), sweep.block.len());
    let Some(root) = comp.sources.first_mut() else {
        return;
    };
    if start + len > bytes.len() {
        return;
    }
    let mut kept = Vec::with_capacity(bytes.len() - len);
    kept.extend_from_slice(&bytes[..start]);
    kept.extend_from_slice(&bytes[start + len..]);
    root.sha256 = flysim_types::digest::sha256(&kept);
}

/// Puts the overrides in place of what the composition says.
pub(crate) fn apply_overrides(comp: &mut Composition, overrides: &Overrides) {
    if let (Some(seed), Some(master)) = (overrides.master_seed, comp.master_seed.as_mut()) {
        master.value = seed.to_string();
    }
}

/// The problems of the composition's `sweep` block against the rest of it, if it has one.
pub(crate) fn check(comp: &Composition) -> Result<(), Vec<Diag>> {
    let Some(sweep) = &comp.sweep else {
        return Ok(());
    };
    let mut diags = expand::check(comp, sweep);
    if diags.is_empty() {
        return Ok(());
    }
    crate::diag::sort(&mut diags);
    Err(diags)
}

/// Resolves every member of the composition's sweep; `Ok(None)` when it declares none.
///
/// # Errors
///
/// Every diagnostic of the composition (as [`crate::plan`] reports them), of the sweep block,
/// or of a member that does not resolve (each problem once, pointing at the value that caused
/// it when a value did).
pub fn plan_sweep<'s>(
    input: Input<'_>,
    registry: Option<&AssetRegistry>,
    specs: impl Into<Specs<'s>>,
) -> Result<Option<SweepPlan>, Vec<Diag>> {
    let specs = specs.into();
    let Some((comp, sweep)) = family(input, registry, specs)? else {
        return Ok(None);
    };
    let count = expand::count(&sweep);
    let mut members = Vec::with_capacity(count);
    let mut diags: Vec<Diag> = Vec::new();
    for index in 0..count {
        match expand::member(&comp, &sweep, index, registry, specs) {
            Ok(member) => members.push(member),
            Err(found) => expand::merge(&mut diags, found),
        }
    }
    if !diags.is_empty() {
        crate::diag::sort(&mut diags);
        return Err(diags);
    }
    let digest = sweep_digest(members.iter().map(|m| &m.plan.plan_digest));
    Ok(Some(SweepPlan {
        name: comp
            .name
            .as_ref()
            .map(|n| n.value.clone())
            .unwrap_or_default(),
        axes: sweep.axes.iter().map(|a| a.target.value.label()).collect(),
        members,
        digest,
    }))
}

/// Resolves member `index` of the composition's sweep alone; `Ok(None)` when it declares no
/// sweep or has no such member.
///
/// # Errors
///
/// As [`plan_sweep`], for this member.
pub fn plan_member<'s>(
    input: Input<'_>,
    registry: Option<&AssetRegistry>,
    specs: impl Into<Specs<'s>>,
    index: usize,
) -> Result<Option<Member>, Vec<Diag>> {
    let specs = specs.into();
    let Some((comp, sweep)) = family(input, registry, specs)? else {
        return Ok(None);
    };
    if index >= expand::count(&sweep) {
        return Ok(None);
    }
    expand::member(&comp, &sweep, index, registry, specs).map(Some)
}

/// The composition and its checked sweep, once the composition itself resolves.
fn family(
    input: Input<'_>,
    registry: Option<&AssetRegistry>,
    specs: Specs<'_>,
) -> Result<Option<(Composition, Sweep)>, Vec<Diag>> {
    let (comp, diags) = load(input);
    if !diags.is_empty() {
        return Err(diags);
    }
    let Some(sweep) = comp.sweep.clone() else {
        return Ok(None);
    };
    // The composition as written resolves first: its problems are reported once, not once
    // per member.
    resolve::resolve(&comp, registry, specs)?;
    check(&comp)?;
    Ok(Some((comp, sweep)))
}
