//! The components a run can use: every model, backend and task this build links, registered
//! with the session by name. Adding a backend means adding its factory here (one line of
//! registration; see ARCHITECTURE.md, "Adding a backend").

use std::sync::Arc;

use flysim_binjgb::arena_task::{ArenaScoreTask, TASK_ID};
use flysim_binjgb::world::GameBoyWorld;
use flysim_brain::agent::LifAgent;
use flysim_component::memory_task::{self, MemoryTask};
use flysim_component::model::ModelSetup;
use flysim_component::no_reward::{self, NoRewardTask};
use flysim_component::{BackendError, ModelError};
use flysim_dolphin::DolphinEnvironment;
use flysim_dolphin::echo_task::{self, PadEchoTask};
use flysim_dolphin::environment::ContentFile;
use flysim_session::Registry;
use flysim_types::plan::{LaunchPlan, ModelKind};
use flysim_types::spec::{BackendSpec, ModelSpec, Specs, TaskSpec};

use crate::content::ContentSource;
use crate::host::Host;

/// Every backend this build links, as its crate declares it: what compositions are resolved
/// against and what `backends` lists.
pub const SPECS: [BackendSpec; 3] = [
    flysim_arena::SPEC,
    flysim_binjgb::SPEC,
    flysim_dolphin::SPEC,
];

/// Every task this build links, as its crate declares it; `none-v1` (a composition without a
/// task) reads no inspection, so it goes with every backend; `memory-v1` (a task declared in the
/// composition) goes with every backend whose spec lets tasks read memory.
pub const TASKS: [TaskSpec; 5] = [
    flysim_arena::task::SPEC,
    flysim_binjgb::arena_task::SPEC,
    flysim_dolphin::echo_task::SPEC,
    TaskSpec {
        name: no_reward::TASK_ID,
        summary: "No rewards: the world runs and the flies play, nothing is scored (a composition without `task`).",
        backends: &[
            flysim_arena::SPEC.name,
            flysim_binjgb::SPEC.name,
            flysim_dolphin::SPEC.name,
        ],
        content: None,
        reads_memory: false,
    },
    memory_task::SPEC,
];

/// Every executor this build links (the component API's identity executor, which goes with
/// every backend).
pub const EXECUTORS: [&str; 1] = ["direct-v1"];

/// The models whose profiles a composition is checked against, as their crates declare them.
/// The LIF model's says where its retina is declared (the profile's `brain-profile` document,
/// as [`registry`] reads it) and that it reads no parameter, so every one is refused.
pub const MODELS: [ModelSpec; 2] = [flysim_arena::synthetic::SPEC, flysim_brain::SPEC];

/// Everything compositions are resolved against: the backends, tasks, executors and models of
/// this build.
pub const ALL: Specs<'static> = Specs {
    backends: &SPECS,
    tasks: Some(&TASKS),
    executors: Some(&EXECUTORS),
    models: &MODELS,
};

/// The asset format of a LIF profile's brain-profile document.
pub const PROFILE_FORMAT: &str = flysim_brain::agent::PROFILE_FORMAT;
/// The asset format of a LIF profile's connectome file.
pub const CONNECTOME_FORMAT: &str = flysim_brain::agent::CONNECTOME_FORMAT;

/// The counter arena's components: the synthetic agent, the arena world and the counter task,
/// and the task of a composition without one (`none-v1`).
#[must_use]
pub fn arena_registry() -> Registry {
    Registry::new()
        .with_agent(ModelKind::Synthetic, flysim_arena::synthetic::factory())
        .with_environment(
            flysim_arena::SPEC.name,
            Arc::new(|env, digest| Ok(Box::new(flysim_arena::CounterArena::new(env, digest)?))),
        )
        .with_task(
            "counter-v1",
            Arc::new(|_| Box::new(flysim_arena::CounterTask::new(None))),
        )
        .with_task(
            no_reward::TASK_ID,
            Arc::new(|plan| Box::new(NoRewardTask::for_plan(plan))),
        )
        .with_task(
            memory_task::TASK_ID,
            Arc::new(|plan| Box::new(MemoryTask::for_plan(plan))),
        )
}

/// Every component this build links for `plan`: the counter arena's, plus the Game Boy world, the fly arena task, the Dolphin world, the
/// GameCube pad echo task and the LIF agent for `plan`. A LIF profile names two assets: its
/// `brain-profile` document and its `flycsr` connectome (by `format=`). A Dolphin world's
/// content is located (never read into memory) and its format says what the backend watches.
pub fn registry(plan: &LaunchPlan, content: &ContentSource, host: &Host) -> Registry {
    let plan_for_env = plan.clone();
    let plan_for_agents = plan.clone();
    let plan_for_dolphin = plan.clone();
    let agent_content = content.clone();
    let dolphin_content = content.clone();
    let content = content.clone();
    let tools = host.dolphin_tools.clone();
    let scratch = host.dolphin_scratch.clone();
    arena_registry()
        .with_agent(
            ModelKind::Lif,
            Arc::new(move |setup| {
                Ok(Box::new(lif_agent(
                    &plan_for_agents,
                    &agent_content,
                    setup,
                )?))
            }),
        )
        .with_environment(
            flysim_binjgb::SPEC.name,
            Arc::new(move |env, digest| {
                let id = env.content.as_ref().ok_or_else(|| {
                    BackendError::Invalid("a Game Boy world needs a ROM (`content`)".into())
                })?;
                let rom = content.load(&plan_for_env, id)?;
                Ok(Box::new(GameBoyWorld::new(env, digest, rom)?))
            }),
        )
        .with_environment(
            flysim_dolphin::SPEC.name,
            Arc::new(move |env, digest| {
                let id = env.content.as_ref().ok_or_else(|| {
                    BackendError::Invalid("a Dolphin world needs content (`content`)".into())
                })?;
                let (path, asset) = dolphin_content.locate(&plan_for_dolphin, id)?;
                let reads = plan_for_dolphin
                    .memory_task
                    .as_ref()
                    .map_or(&[][..], |m| m.variables.as_slice());
                let file = ContentFile {
                    path: &path,
                    digest: asset.digest,
                    format: asset.format.as_str(),
                };
                let world = DolphinEnvironment::new(env, digest, &file, &tools, &scratch, reads)
                    .map_err(BackendError::refused)?;
                Ok(Box::new(world))
            }),
        )
        .with_task(TASK_ID, Arc::new(|_| Box::new(ArenaScoreTask::default())))
        .with_task(
            echo_task::TASK_ID,
            Arc::new(|plan| Box::new(PadEchoTask::for_plan(plan))),
        )
}

/// The LIF agent of `setup` for `plan`: its profile's `brain-profile` document and `flycsr`
/// connectome (by `format=`), its seed and threads, and its port's index among the
/// environment's ports (the band of the view a `port-bands` retina reads).
pub(crate) fn lif_agent(
    plan: &LaunchPlan,
    content: &ContentSource,
    setup: &ModelSetup,
) -> Result<LifAgent, ModelError> {
    let by_format = |format: &str| {
        setup
            .profile
            .assets
            .iter()
            .find(|id| {
                plan.assets
                    .iter()
                    .any(|a| &a.id == *id && a.format.as_str() == format)
            })
            .ok_or_else(|| {
                ModelError::Invalid(format!("a LIF profile needs an asset of format `{format}`"))
            })
            .and_then(|id| {
                content
                    .load(plan, id)
                    .map_err(|e| ModelError::Invalid(e.to_string()))
            })
    };
    let profile = by_format(PROFILE_FORMAT)?;
    let connectome = by_format(CONNECTOME_FORMAT)?;
    let port = plan
        .agents
        .iter()
        .find(|a| a.agent_id == setup.agent_id)
        .and_then(|a| {
            plan.environment
                .ports
                .iter()
                .position(|p| p.port_id == a.port)
        })
        .and_then(|i| u32::try_from(i).ok())
        .ok_or_else(|| {
            ModelError::Invalid(format!(
                "agent `{}` is bound to no port of the plan",
                setup.agent_id
            ))
        })?;
    Ok(
        LifAgent::from_assets(&profile, &connectome, setup.seed, setup.worker_threads)?
            .with_port(port),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Resolves `fixtures/compositions/unlinked-task.kdl` against `specs`.
    fn unlinked_task<'s>(
        specs: impl Into<Specs<'s>>,
    ) -> Result<LaunchPlan, Vec<flysim_compose::Diag>> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/compositions/unlinked-task.kdl");
        let bytes = std::fs::read(&path).unwrap();
        flysim_compose::plan(
            flysim_compose::Input {
                name: "unlinked-task.kdl",
                bytes: &bytes,
                dir: path.parent().unwrap(),
            },
            None,
            specs,
        )
    }

    /// The build's specs refuse a task it does not link before any plan exists; a plan made
    /// without them (by a build that declares no tasks) is refused by the registry, with FS0305,
    /// before anything starts.
    #[test]
    fn a_task_this_build_lacks_is_refused_by_its_specs_and_by_its_registry() {
        let diags = unlinked_task(ALL).unwrap_err();
        let codes: Vec<String> = diags.iter().map(flysim_compose::Diag::code).collect();
        assert_eq!(codes, ["FS0237"]);
        let plan = unlinked_task(&SPECS).unwrap();
        let refusal = arena_registry().check(&plan).unwrap_err();
        assert_eq!(refusal.code_str(), "FS0305", "{refusal}");
    }

    /// The build's LIF spec refuses a composition-level parameter on a `lif` profile, with its
    /// span: the model reads none (`fixtures/compositions/err/lif-parameter.kdl`).
    #[test]
    fn a_parameter_on_a_lif_profile_is_refused_by_the_builds_specs() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/compositions/err/lif-parameter.kdl");
        let bytes = std::fs::read(&path).unwrap();
        let diags = flysim_compose::plan(
            flysim_compose::Input {
                name: "lif-parameter.kdl",
                bytes: &bytes,
                dir: path.parent().unwrap(),
            },
            None,
            ALL,
        )
        .unwrap_err();
        let codes: Vec<String> = diags.iter().map(flysim_compose::Diag::code).collect();
        assert_eq!(codes, ["FS0241"]);
        let rendered = format!("{:?}", diags[0]);
        assert!(rendered.contains("gain"), "{rendered}");
    }

    /// Every task and executor the resolver is handed is one the registry links.
    #[test]
    fn the_declared_tasks_and_executors_are_linked() {
        let mut plan = unlinked_task(&SPECS).unwrap();
        let content = ContentSource::default();
        let host = Host::default();
        for task in TASKS {
            for executor in EXECUTORS {
                plan.task = flysim_types::Id::parse(task.name).unwrap();
                plan.executor = flysim_types::Id::parse(executor).unwrap();
                let linked = registry(&plan, &content, &host).check(&plan);
                assert!(linked.is_ok(), "{} {executor}: {linked:?}", task.name);
            }
        }
    }
}
