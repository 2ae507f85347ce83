//! The session components this binary links beyond the built-in ones: the Game Boy world over
//! binjgb and the fly arena task, the Dolphin world and the GameCube pad echo task, the LIF
//! agent. Only the CLI knows where content bytes come from and where Dolphin and Xvfb are.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use flysim_binjgb::arena_task::{ArenaScoreTask, TASK_ID};
use flysim_binjgb::world::GameBoyWorld;
use flysim_brain::agent::LifAgent;
use flysim_component::{BackendError, ModelError};
use flysim_dolphin::echo_task::{self, PadEchoTask};
use flysim_dolphin::{DolphinEnvironment, Tools};
use flysim_session::Registry;
use flysim_types::plan::{Backend, LaunchPlan, ModelKind};

/// Where a run's content assets (ROMs) are read from: the directory the composition's relative
/// paths are relative to, when known, and the local asset registry, by digest.
#[derive(Debug, Clone, Default)]
pub(crate) struct ContentSource {
    /// The composition's directory.
    pub(crate) composition_dir: Option<PathBuf>,
    /// The asset registry's root.
    pub(crate) registry: Option<PathBuf>,
    /// A directory of files named by their SHA-256 hex (a worker process's `content/`).
    pub(crate) content_dir: Option<PathBuf>,
}

impl ContentSource {
    /// For a composition file (`-`: the current directory) and the user's asset registry.
    pub(crate) fn for_composition(path: &Path) -> Self {
        let dir = if path == Path::new("-") {
            PathBuf::from(".")
        } else {
            path.parent()
                .filter(|p| !p.as_os_str().is_empty())
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
        };
        Self {
            composition_dir: Some(dir),
            registry: super::registry_root(),
            content_dir: None,
        }
    }

    /// For a worker process: the `content/` directory the launcher wrote beside its plan.
    pub(crate) fn beside_plan(plan: &Path) -> Self {
        Self {
            content_dir: plan.parent().map(|d| d.join("content")),
            ..Self::default()
        }
    }

    /// Every asset of `plan` this source can find (checked against its digest), by digest: what
    /// a process-mode launch hands its workers.
    pub(crate) fn preload(
        &self,
        plan: &LaunchPlan,
    ) -> std::collections::BTreeMap<flysim_types::Digest, Vec<u8>> {
        plan.assets
            .iter()
            .filter_map(|a| self.load(plan, &a.id).ok().map(|bytes| (a.digest, bytes)))
            .collect()
    }

    /// The plan's asset `id`.
    fn asset<'a>(
        plan: &'a LaunchPlan,
        id: &flysim_types::Id,
    ) -> Result<&'a flysim_types::plan::PlanAsset, BackendError> {
        plan.assets
            .iter()
            .find(|a| &a.id == id)
            .ok_or_else(|| BackendError::Invalid(format!("the plan has no asset `{id}`")))
    }

    fn not_found(id: &flysim_types::Id, asset: &flysim_types::plan::PlanAsset) -> BackendError {
        BackendError::Invalid(format!(
            "the content `{id}` (sha256 {}) is neither beside the composition nor in the asset registry; \
             `flysim assets add` it",
            asset.digest
        ))
    }

    /// The bytes of the plan's content asset `id`, checked against the digest the plan pins.
    fn load(&self, plan: &LaunchPlan, id: &flysim_types::Id) -> Result<Vec<u8>, BackendError> {
        let asset = Self::asset(plan, id)?;
        let matching = self
            .candidates(asset)
            .iter()
            .filter_map(|candidate| std::fs::read(candidate).ok())
            .find(|bytes| flysim_types::digest::sha256(bytes) == asset.digest);
        matching.ok_or_else(|| Self::not_found(id, asset))
    }

    /// Where the plan's content asset `id` is, checked against the digest the plan pins (read
    /// in a stream, never copied): for content too large to hold in memory, a disc image.
    fn locate<'a>(
        &self,
        plan: &'a LaunchPlan,
        id: &flysim_types::Id,
    ) -> Result<(PathBuf, &'a flysim_types::plan::PlanAsset), BackendError> {
        let asset = Self::asset(plan, id)?;
        self.candidates(asset)
            .into_iter()
            .find(|candidate| {
                candidate.is_file()
                    && flysim_dolphin::file_digest(candidate).is_ok_and(|d| d == asset.digest)
            })
            .map(|path| (path, asset))
            .ok_or_else(|| Self::not_found(id, asset))
    }

    /// Where `asset` may be, in order: the worker's content directory, beside the composition,
    /// the asset registry.
    fn candidates(&self, asset: &flysim_types::plan::PlanAsset) -> Vec<PathBuf> {
        let mut candidates = Vec::new();
        if let Some(dir) = &self.content_dir {
            candidates.push(dir.join(asset.digest.hex()));
        }
        if let (Some(dir), Some(path)) = (&self.composition_dir, &asset.path) {
            candidates.push(dir.join(path));
        }
        if let Some(root) = &self.registry {
            candidates
                .push(flysim_compose::AssetRegistry::at(root.clone()).blob_path(&asset.digest));
        }
        candidates
    }
}

/// Where Dolphin and Xvfb are: the paths in `FLYSIM_DOLPHIN` and `FLYSIM_XVFB` when set, else
/// `dolphin-emu` and `Xvfb` in /usr/games, the usual system directories or `PATH`. Their
/// versions are checked against the pin, and paths never reach a digest.
pub(crate) fn dolphin_tools() -> Tools {
    let pick = |var: &str, name: &str| match std::env::var_os(var).filter(|v| !v.is_empty()) {
        Some(path) => Some(PathBuf::from(path)),
        None => super::dolphin::find_tool(name),
    };
    Tools {
        dolphin: pick("FLYSIM_DOLPHIN", "dolphin-emu"),
        xvfb: pick("FLYSIM_XVFB", "Xvfb"),
    }
}

/// The longest directory a Dolphin world's private directory goes in: Dolphin's socket path
/// (`<dir>/fsdXXXXXX/wN/u/MemoryWatcher/MemoryWatcher`) must stay under 108 bytes.
const MAX_SCRATCH_PARENT: usize = 56;

/// Where a Dolphin world's private directory goes: the system's temporary directory (`TMPDIR`,
/// else `/tmp`), or `/tmp` when that path is too long for Dolphin's socket.
fn dolphin_scratch_parent() -> PathBuf {
    let tmp = std::env::temp_dir();
    if tmp.as_os_str().len() <= MAX_SCRATCH_PARENT {
        tmp
    } else {
        PathBuf::from("/tmp")
    }
}

/// The asset format of a LIF profile's brain-profile document.
pub(crate) const PROFILE_FORMAT: &str = "brain-profile";
/// The asset format of a LIF profile's connectome file.
pub(crate) const CONNECTOME_FORMAT: &str = "flycsr";

/// The counter arena's components: the synthetic agent, the arena world and the counter task.
pub(crate) fn arena_registry() -> Registry {
    Registry::new()
        .with_agent(ModelKind::Synthetic, flysim_arena::synthetic::factory())
        .with_environment(
            Backend::Arena,
            Arc::new(|env, digest| Ok(Box::new(flysim_arena::CounterArena::new(env, digest)?))),
        )
        .with_task(
            "counter-v1",
            Arc::new(|_| Box::new(flysim_arena::CounterTask::new(None))),
        )
}

/// The counter arena's components plus the Game Boy world, the fly arena task, the Dolphin world, the
/// GameCube pad echo task and the LIF agent for `plan`. A LIF profile names two assets: its
/// `brain-profile` document and its `flycsr` connectome (by `format=`). A Dolphin world's
/// content is located (never read into memory) and its format says what the backend watches.
pub(crate) fn registry(plan: &LaunchPlan, content: &ContentSource) -> Registry {
    let plan_for_env = plan.clone();
    let plan_for_agents = plan.clone();
    let plan_for_dolphin = plan.clone();
    let agent_content = content.clone();
    let dolphin_content = content.clone();
    let content = content.clone();
    arena_registry()
        .with_agent(
            ModelKind::Lif,
            Arc::new(move |setup| {
                let by_format = |format: &str| {
                    setup
                        .profile
                        .assets
                        .iter()
                        .find(|id| {
                            plan_for_agents
                                .assets
                                .iter()
                                .any(|a| &a.id == *id && a.format.as_str() == format)
                        })
                        .ok_or_else(|| {
                            ModelError::Invalid(format!(
                                "a LIF profile needs an asset of format `{format}`"
                            ))
                        })
                        .and_then(|id| {
                            agent_content
                                .load(&plan_for_agents, id)
                                .map_err(|e| ModelError::Invalid(e.to_string()))
                        })
                };
                let profile = by_format(PROFILE_FORMAT)?;
                let connectome = by_format(CONNECTOME_FORMAT)?;
                // The agent's port, as its index among the environment's ports: the band of
                // the view a `port-bands` retina reads.
                let port = plan_for_agents
                    .agents
                    .iter()
                    .find(|a| a.agent_id == setup.agent_id)
                    .and_then(|a| {
                        plan_for_agents
                            .environment
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
                Ok(Box::new(
                    LifAgent::from_assets(&profile, &connectome, setup.seed, setup.worker_threads)?
                        .with_port(port),
                ))
            }),
        )
        .with_environment(
            Backend::Binjgb,
            Arc::new(move |env, digest| {
                let id = env.content.as_ref().ok_or_else(|| {
                    BackendError::Invalid("a Game Boy world needs a ROM (`content`)".into())
                })?;
                let rom = content.load(&plan_for_env, id)?;
                Ok(Box::new(GameBoyWorld::new(env, digest, rom)?))
            }),
        )
        .with_environment(
            Backend::Dolphin,
            Arc::new(move |env, digest| {
                let id = env.content.as_ref().ok_or_else(|| {
                    BackendError::Invalid("a Dolphin world needs content (`content`)".into())
                })?;
                let (path, asset) = dolphin_content.locate(&plan_for_dolphin, id)?;
                let world = DolphinEnvironment::new(
                    env,
                    digest,
                    &path,
                    asset.digest,
                    asset.format.as_str(),
                    &dolphin_tools(),
                    &dolphin_scratch_parent(),
                )
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
