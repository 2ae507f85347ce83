//! Where a run's content comes from: the ROMs, disc images, brain profiles and connectomes a
//! plan pins by digest, found beside the composition, in a run directory's `content/`, or in the
//! local asset registry, and checked against the pinned digest before anything uses them.
//!
//! **Invariant:** no byte reaches a component unless its SHA-256 is the one the plan pins.

use std::path::{Path, PathBuf};

use flysim_component::BackendError;
use flysim_types::plan::LaunchPlan;

/// The directory of a run directory that keeps its content assets by digest.
pub const CONTENT_DIR: &str = "content";

/// Where a run's content assets (ROMs) are read from: the directory the composition's relative
/// paths are relative to, when known, and the local asset registry, by digest.
#[derive(Debug, Clone, Default)]
pub struct ContentSource {
    /// The composition's directory.
    pub composition_dir: Option<PathBuf>,
    /// The asset registry's root.
    pub registry: Option<PathBuf>,
    /// A directory of files named by their SHA-256 hex (a worker process's `content/`).
    pub content_dir: Option<PathBuf>,
}

impl ContentSource {
    /// For a composition file (`-`: the current directory) and the asset registry at
    /// `registry` (the caller finds it; this crate reads no environment).
    #[must_use]
    pub fn for_composition(path: &Path, registry: Option<PathBuf>) -> Self {
        let dir = if path == Path::new("-") {
            PathBuf::from(".")
        } else {
            path.parent()
                .filter(|p| !p.as_os_str().is_empty())
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
        };
        Self {
            composition_dir: Some(dir),
            registry,
            content_dir: None,
        }
    }

    /// For a worker process: the `content/` directory the launcher wrote beside its plan.
    #[must_use]
    pub fn beside_plan(plan: &Path) -> Self {
        Self {
            content_dir: plan.parent().map(|d| d.join("content")),
            ..Self::default()
        }
    }

    /// For a run directory: the `content/` it keeps and the asset registry at `registry`.
    #[must_use]
    pub fn of_run(dir: &Path, registry: Option<PathBuf>) -> Self {
        Self {
            registry,
            content_dir: Some(dir.join(CONTENT_DIR)),
            composition_dir: None,
        }
    }

    /// Every asset of `plan` this source can find (checked against its digest), by digest: what
    /// a process-mode launch hands its workers.
    #[must_use]
    pub fn preload(
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
            "the content `{id}` (sha256 {}) is neither beside the composition nor in the asset registry",
            asset.digest
        ))
    }

    /// The bytes of the plan's content asset `id`, checked against the digest the plan pins.
    pub(crate) fn load(
        &self,
        plan: &LaunchPlan,
        id: &flysim_types::Id,
    ) -> Result<Vec<u8>, BackendError> {
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
    pub(crate) fn locate<'a>(
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
