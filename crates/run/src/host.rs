//! What the machine gives a run: where private runtime directories go, the worker program for
//! process mode, whether in-process workers are reached through their local lanes, where
//! Dolphin and Xvfb are and where the asset registry is. The binary reads them from the
//! environment; this crate only carries them.
//!
//! **Invariant:** nothing here reaches a plan, a trace row or a digest: a run behaves the same
//! whatever the host says (paths and lanes change speed and placement, never behaviour).

use std::path::PathBuf;

use flysim_dolphin::Tools;
use flysim_session::launcher::WorkerProgram;

/// This machine, as a run sees it.
#[derive(Debug, Clone, Default)]
pub struct Host {
    /// Where a run's private 0700 runtime directory (socket, artifact store, plan copy) goes.
    pub runtime_parent: PathBuf,
    /// The program worker processes run (process mode); none: process mode is refused.
    pub program: Option<WorkerProgram>,
    /// Whether in-process and thread workers are reached through their local lanes.
    pub local_lane: bool,
    /// Where Dolphin and Xvfb are.
    pub dolphin_tools: Tools,
    /// Where a Dolphin world's private directory goes.
    pub dolphin_scratch: PathBuf,
    /// The local asset registry's root, if there is one.
    pub asset_registry: Option<PathBuf>,
}
