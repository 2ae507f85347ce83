//! Launching a world: Dolphin's user directory, the controller and hotkey pipes, the
//! MemoryWatcher socket, then Xvfb, Dolphin and the watchdog, and the pipes opened once Dolphin
//! has opened its ends.
//!
//! It knows the files a [`BackendConfig`] generates and the command line of each mode; it does
//! not know what happens after the pipes are open (waiting for the content, pausing, aligning:
//! that is the `boot` module's).

use std::ffi::OsStr;
use std::fs::File;
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::time::{Duration, Instant};

use super::DolphinWorld;
use crate::config::{BackendConfig, HOTKEY_PIPE, Mode};
use crate::error::DolphinError;
use crate::process::{self, Emulator, Layout, Watchdog, Xvfb};
use crate::schema::gamecube_pad;
use crate::watcher::Mirror;

/// How long Dolphin may take to open its pipes after it was started.
const START_TIMEOUT: Duration = Duration::from_secs(30);

impl DolphinWorld {
    /// Creates the user directory, the pipes and the socket, starts Xvfb and Dolphin and opens
    /// the pipes.
    pub(super) fn launch(config: &BackendConfig, scratch: &Path) -> Result<Self, DolphinError> {
        let layout = Layout::create(scratch)?;
        let socket = prepare_user_dir(config, &layout)?;
        let xvfb = match (&config.mode, &config.xvfb) {
            (Mode::Qt, Some(binary)) => Some(Xvfb::start(binary, &layout.scratch)?),
            _ => None,
        };
        let args = dolphin_args(config, &layout);
        let mut emulator = Emulator::start(
            &config.binary,
            &args,
            &layout.scratch,
            xvfb.as_ref().map(Xvfb::display).as_deref(),
        )?;
        let watchdog = Watchdog::start(
            emulator.pid(),
            xvfb.as_ref().map(Xvfb::pid),
            &layout.scratch,
        )?;
        let (pads, hotkeys) = open_pipes(config, &layout, &mut emulator)?;
        let locations: Vec<String> = config.watches.iter().map(|w| w.location()).collect();
        let world = Self {
            _watchdog: watchdog,
            config: config.clone(),
            pad: gamecube_pad(),
            layout,
            pads,
            hotkeys,
            socket,
            emulator,
            xvfb,
            mirror: Mirror::new(&locations),
            observed: vec![0; locations.len()],
            fields: 0,
            boundary: 0,
            thread: None,
            ram: None,
            slot_file: None,
            failed: None,
            replay_verified: false,
            first_pause: 0,
        };
        Ok(world)
    }
}

/// Writes the configuration's user files, makes the pipes (one per port, and the hotkey pipe in
/// Qt mode) and binds the MemoryWatcher socket, which it returns.
fn prepare_user_dir(config: &BackendConfig, layout: &Layout) -> Result<UnixDatagram, DolphinError> {
    let socket_path = layout.user.join("MemoryWatcher/MemoryWatcher");
    if socket_path.as_os_str().len() >= 108 {
        return Err(DolphinError::helper(format!(
            "the scratch path is too long for a Unix socket: {}",
            socket_path.display()
        )));
    }
    for (file, text) in config.user_files() {
        let path = layout.user.join(file);
        std::fs::write(&path, text)
            .map_err(|e| DolphinError::helper(format!("cannot write {}: {e}", path.display())))?;
    }
    let pipes = layout.user.join("Pipes");
    for port in &config.ports {
        process::make_fifo(&pipes.join(format!("pad{port}")))?;
    }
    if config.mode == Mode::Qt {
        process::make_fifo(&pipes.join(HOTKEY_PIPE))?;
    }
    UnixDatagram::bind(&socket_path)
        .map_err(|e| DolphinError::helper(format!("cannot bind the MemoryWatcher socket: {e}")))
}

/// Dolphin's command line: batch mode (Qt), the user directory, the content, and the headless
/// platform (nogui).
fn dolphin_args<'a>(config: &'a BackendConfig, layout: &'a Layout) -> Vec<&'a OsStr> {
    let mut args: Vec<&OsStr> = Vec::new();
    if config.mode == Mode::Qt {
        args.push(OsStr::new("-b"));
    }
    args.push(OsStr::new("-u"));
    args.push(layout.user.as_os_str());
    args.push(OsStr::new("-e"));
    args.push(config.content.path.as_os_str());
    if config.mode == Mode::Nogui {
        args.push(OsStr::new("-p"));
        args.push(OsStr::new("headless"));
    }
    args
}

/// Opens this end of every pad pipe, then of the hotkey pipe (Qt mode), as Dolphin opens its
/// ends, within [`START_TIMEOUT`] of now.
#[expect(
    clippy::disallowed_methods,
    reason = "a bounded wait on Dolphin; the deadline only turns a hang into an error"
)]
fn open_pipes(
    config: &BackendConfig,
    layout: &Layout,
    emulator: &mut Emulator,
) -> Result<(Vec<File>, Option<File>), DolphinError> {
    let pipes = layout.user.join("Pipes");
    let deadline = Instant::now() + START_TIMEOUT;
    let mut pads = Vec::new();
    for port in &config.ports {
        pads.push(process::open_fifo(
            &pipes.join(format!("pad{port}")),
            deadline,
            || emulator.check_alive(),
        )?);
    }
    let hotkeys = match config.mode {
        Mode::Qt => Some(process::open_fifo(
            &pipes.join(HOTKEY_PIPE),
            deadline,
            || emulator.check_alive(),
        )?),
        Mode::Nogui => None,
    };
    Ok((pads, hotkeys))
}
