//! The resolver: checks what a decoded composition means and builds its launch plan.
//!
//! Every check runs and every refusal is collected; the plan is built only when there is none.
//! The resolver reads asset files (a path pinned by sha256, or the registry) and nothing else:
//! no environment variable, clock or machine property reaches the plan.
//!
//! [`build`] runs the checks in the order a reader meets them, one concern per file: seeds
//! ([`seeds`]), ids and counts ([`ids`]), the agents' bindings ([`agents`]), the run and its
//! thread budget ([`run`]), the environment's backend ([`environment`]), the task and executor
//! ([`components`]) and a declared memory task's block ([`memory`]), assets ([`assets`]), the
//! profiles against their models ([`profiles`]);
//! then it assembles the plan's body and seals it: the plan is built once, with its digest
//! ([`PlanBody::seal`]).

mod agents;
mod assets;
mod components;
mod environment;
mod ids;
mod memory;
mod profiles;
mod run;
mod seeds;

use std::collections::BTreeMap;

use flysim_types::plan::{self, LaunchPlan, PlanBody, PlanProfile, SourceFile};
use flysim_types::spec::Specs;
use flysim_types::{Id, seed};
use miette::SourceSpan;

use crate::assets::AssetRegistry;
use crate::diag::{ComponentProblem, Diag, Problem, Src};
use crate::model::{Composition, Span, Spanned};

/// Words that name a moving target rather than a pin.
const FLOATING: &[&str] = &[
    "latest", "stable", "nightly", "beta", "head", "main", "master", "dev", "current", "newest",
    "trunk", "*",
];

/// Whether a value names a moving target (`latest`, a branch name, ...).
pub(super) fn floating(value: &str) -> bool {
    FLOATING.contains(&value.to_ascii_lowercase().as_str())
}

struct Resolver<'c> {
    comp: &'c Composition,
    /// The components a composition may name, as their crates declare them.
    specs: Specs<'c>,
    diags: Vec<Diag>,
}

impl Resolver<'_> {
    fn src(&self, span: Span) -> Src {
        self.comp.sources[span.file].src.clone()
    }

    fn push(&mut self, span: Span, problem: Problem) {
        self.diags.push(Diag::new(span.file, problem));
    }

    fn refuse(&mut self, span: Span, problem: ComponentProblem) {
        self.push(span, Problem::Component(problem));
    }

    /// `first`'s bytes when it is in the same file as `at` (a label can only point into one file).
    fn first(first: Span, at: Span) -> Option<SourceSpan> {
        (first.file == at.file).then_some(first.at)
    }

    /// Refuses repeated ids among `items`, reporting each repetition.
    fn unique<'a>(&mut self, kind: &'static str, items: impl Iterator<Item = &'a Spanned<Id>>) {
        // Ordered by id, so a composition of many ids is checked in n log n, not n squared.
        let mut seen: BTreeMap<&Id, &Spanned<Id>> = BTreeMap::new();
        for item in items {
            if let Some(first) = seen.get(&item.value) {
                let problem = Problem::Duplicate {
                    src: self.src(item.span),
                    kind,
                    id: item.value.to_string(),
                    at: item.span.at,
                    first: Self::first(first.span, item.span),
                };
                self.push(item.span, problem);
            } else {
                seen.insert(&item.value, item);
            }
        }
    }
}

/// Resolves a decoded composition (decoded without any error) into a sealed launch plan.
pub(crate) fn resolve(
    comp: &Composition,
    registry: Option<&AssetRegistry>,
    specs: Specs<'_>,
) -> Result<LaunchPlan, Vec<Diag>> {
    let mut r = Resolver {
        comp,
        specs,
        diags: Vec::new(),
    };
    let built = build(&mut r, registry);
    let mut diags = r.diags;
    match built {
        Some(plan) if diags.is_empty() => Ok(plan),
        _ => {
            crate::diag::sort(&mut diags);
            Err(diags)
        }
    }
}

/// Runs every check in reading order, then builds the plan's body and seals it into the plan
/// when none refused.
fn build(r: &mut Resolver<'_>, registry: Option<&AssetRegistry>) -> Option<LaunchPlan> {
    let comp = r.comp;
    seeds::check_derivation(r, comp.seed_derivation.as_ref()?);
    let master_seed = seeds::master_seed(r, comp.master_seed.as_ref()?);
    let explicit = comp.explicit_seeds.as_ref().is_some_and(|e| e.value);
    let (env, asset_decls) = ids::declarations(r)?;
    ids::agents_and_limits(r, env);
    agents::bindings(r, env, explicit);
    let run = comp.run.as_ref()?;
    let budget = run::thread_budget(r, run);
    run::mode_and_transport(r, run);
    let environment = environment::environment(r, env);
    check_pins(r);
    let assets = assets::plan_assets(r, &asset_decls, registry);
    let backend = environment.as_ref().map(|e| e.backend.as_str());
    components::task_and_executor(r, env, backend, &assets);
    let memory_task = memory::memory_task(r, env, backend);
    profiles::parameters(r);
    profiles::retinas(r, env, backend, &assets, registry);
    let master_seed = master_seed?;
    let mut agents = seeds::plan_agents(r, master_seed);
    if !r.diags.is_empty() {
        return None;
    }
    // seed-derivation-v1 refuses repeated ids itself; the check above has already named them.
    let ids: Vec<Id> = agents.iter().map(|a| a.agent_id.clone()).collect();
    seed::derive_all(master_seed, &ids).ok()?;
    agents.sort_by(|a, b| a.agent_id.cmp(&b.agent_id));

    let sources: Vec<SourceFile> = comp
        .sources
        .iter()
        .map(|s| SourceFile {
            path: s.rel.clone(),
            sha256: s.sha256,
        })
        .collect();
    let seal = |e: flysim_types::ContractError| e.to_string();
    let body = PlanBody {
        format_version: plan::FORMAT_VERSION,
        composition_digest: plan::composition_digest(&sources).ok()?,
        contract_digest: flysim_types::schema::contract_digest(),
        name: comp.name.as_ref()?.value.clone(),
        description: comp
            .description
            .as_ref()
            .map(|d| d.value.clone())
            .unwrap_or_default(),
        sources,
        seed_derivation: Id::parse(seed::ALGORITHM).ok()?,
        master_seed,
        explicit_seeds: explicit,
        assets,
        profiles: plan_profiles(comp),
        environment: environment?,
        agents,
        task: comp.task.as_ref().map_or_else(
            || Id::from_static(flysim_types::spec::NO_TASK),
            |t| t.value.clone(),
        ),
        memory_task,
        executor: comp.executor.as_ref()?.value.clone(),
        run: run::plan_run(run, budget),
    };
    body.seal().map_err(seal).ok()
}

/// Refuses a task or executor that names a moving target rather than a pin.
fn check_pins(r: &mut Resolver<'_>) {
    let comp = r.comp;
    for (what, value) in [("the task", &comp.task), ("the executor", &comp.executor)] {
        if let Some(v) = value
            && floating(v.value.as_str())
        {
            let problem = Problem::Unpinned {
                src: r.src(v.span),
                what: what.to_owned(),
                reason: format!("`{}` names a moving target", v.value),
                at: v.span.at,
                help: Some("name a versioned identity, e.g. `counter-v1`".to_owned()),
            };
            r.push(v.span, problem);
        }
    }
}

/// The profiles' plan entries, sorted by id.
fn plan_profiles(comp: &Composition) -> Vec<PlanProfile> {
    let mut profiles: Vec<PlanProfile> = comp
        .profiles
        .iter()
        .map(|p| PlanProfile {
            id: p.id.value.clone(),
            model: p.model.value,
            parameters: p
                .parameters
                .iter()
                .map(|(k, v)| (k.value.clone(), v.value.clone()))
                .collect(),
            assets: p.assets.iter().map(|a| a.id.value.clone()).collect(),
        })
        .collect();
    profiles.sort_by(|a, b| a.id.cmp(&b.id));
    profiles
}
