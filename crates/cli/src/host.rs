//! What this machine gives a run, read from the environment: the only place `flysim run`,
//! `resume` and `replay` look at environment variables, the executable's path or the
//! temporary directory. Nothing read here reaches a plan, a trace or a digest.

use std::path::{Path, PathBuf};

use flysim_dolphin::Tools;
use flysim_run::Host;
use flysim_session::launcher::WorkerProgram;

/// Where Dolphin and Xvfb are: the paths in `FLYSIM_DOLPHIN` and `FLYSIM_XVFB` when set, else
/// `dolphin-emu` and `Xvfb` in /usr/games, the usual system directories or `PATH`. Their
/// versions are checked against the pin, and paths never reach a digest.
pub(crate) fn dolphin_tools() -> Tools {
    let pick = |var: &str, name: &str| match std::env::var_os(var).filter(|v| !v.is_empty()) {
        Some(path) => Some(PathBuf::from(path)),
        None => crate::commands::dolphin::find_tool(name),
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

/// Where the private runtime directory (socket, artifact store, plan copy) is created:
/// `FLYSIM_RUNTIME_DIR` when set, else the tmpfs `/dev/shm` when it exists (frames are files;
/// tmpfs keeps them off the disk), else the system's temporary directory.
fn runtime_parent() -> PathBuf {
    if let Some(dir) = std::env::var_os("FLYSIM_RUNTIME_DIR").filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_owned()
    } else {
        std::env::temp_dir()
    }
}

/// Whether in-process and thread workers are reached through their local lanes (contracts
/// §3.11); `FLY_SESSION_LOCAL_LANE=0` forces the bus. The run's behaviour is the same either way.
fn local_lane() -> bool {
    std::env::var_os("FLY_SESSION_LOCAL_LANE").is_none_or(|v| v != "0")
}

/// This executable as the worker program. A worker process starts with a cleared environment;
/// it gets only the Dolphin and Xvfb this process resolved (`FLYSIM_DOLPHIN`, `FLYSIM_XVFB`), so
/// a Dolphin world in a worker process runs exactly the tools an in-process one would.
fn program(tools: &Tools) -> Option<WorkerProgram> {
    let env = [
        ("FLYSIM_DOLPHIN", tools.dolphin.clone()),
        ("FLYSIM_XVFB", tools.xvfb.clone()),
    ]
    .into_iter()
    .filter_map(|(var, path)| Some((var.to_owned(), path?.into_os_string())))
    .collect();
    std::env::current_exe().ok().map(|exe| WorkerProgram {
        exe,
        args: Vec::new(),
        env,
    })
}

/// The program that opens a page in the user's browser: the first of the `:`-separated
/// commands in `BROWSER` when it is set (a path, or a name looked up like every tool), else
/// `xdg-open`; `None` when that is not there.
pub(crate) fn browser_opener() -> Option<PathBuf> {
    let given = std::env::var_os("BROWSER").filter(|v| !v.is_empty());
    let name = given.map_or_else(
        || "xdg-open".to_owned(),
        |v| {
            let v = v.to_string_lossy();
            v.split(':').next().unwrap_or_default().trim().to_owned()
        },
    );
    if name.contains('/') {
        let path = PathBuf::from(name);
        path.is_file().then_some(path)
    } else if name.is_empty() {
        None
    } else {
        crate::commands::dolphin::find_tool(&name)
    }
}

/// This machine, as a run sees it.
pub(crate) fn host() -> Host {
    let tools = dolphin_tools();
    Host {
        runtime_parent: runtime_parent(),
        program: program(&tools),
        local_lane: local_lane(),
        dolphin_tools: tools,
        dolphin_scratch: dolphin_scratch_parent(),
        asset_registry: crate::commands::registry_root(),
    }
}
