//! [`DolphinWorld`]: one Dolphin process in lockstep, behind a transport-free API.
//!
//! In Qt mode a world starts its own Xvfb and `dolphin-emu -b`, waits for the content's ready
//! condition, pauses, and aligns itself so that every frame advance runs exactly one field; it
//! is then stopped at boundary 0. [`DolphinWorld::advance`] writes the complete state of every
//! port, presses the frame-advance hotkey, takes the field's MemoryWatcher datagram, waits until
//! the emulation thread is idle again, and refuses the step (FS0806) unless exactly one field ran.
//! Capture and restore go through save-state slot 1. Any failure after start poisons the world
//! (FS0807): its state is unknown, so it accepts nothing more. Dropping a world stops Dolphin
//! (SIGINT, then SIGKILL) and then its Xvfb.
//!
//! This module owns the world's state, its start (checks, then launch and boot, retried) and the
//! rules every operation shares (a failed world refuses, nogui mode refuses what needs a pause).
//! Each concern of the lockstep has its own file: [`launch`] (user directory, pipes, socket and
//! the child processes), [`boot`] (to boundary 0), [`step`] (one field per advance), [`pause`]
//! (the emulation thread at rest), [`hotkeys`] (presses on the hotkey pipe), [`receive`] (the
//! MemoryWatcher datagrams), [`save_state`] (capture and restore), [`replay`] (the
//! repeatability check), [`observation`] and [`descriptor`] (what the world shows). Teardown is
//! the drop order of [`DolphinWorld`]'s fields; stopping each child is the `process` module's.
//! None of them knows sessions, tasks or the worker's traits: that is `DolphinEnvironment`'s.

mod boot;
mod descriptor;
mod hotkeys;
mod launch;
mod observation;
mod pause;
mod receive;
mod replay;
mod save_state;
mod step;

use std::fs::File;
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::time::Duration;

use flysim_types::workers::ControllerSchema;

pub use self::descriptor::{field_duration, port_id};
pub use self::observation::{Observation, inspection_schema};
pub use self::replay::pattern_control;
use crate::config::{BackendConfig, Mode};
use crate::error::DolphinError;
use crate::process::{self, Emulator, Layout, Ram, Watchdog, Xvfb};
use crate::watcher::Mirror;

/// How long Dolphin may take to read a pipe.
const PIPE_TIMEOUT: Duration = Duration::from_secs(5);
/// Starts tried when Dolphin runs past the start field before the pause takes hold.
const START_ATTEMPTS: usize = 3;

/// One Dolphin process in lockstep.
///
/// In this crate the *world* is the process wrapper: Dolphin, its Xvfb, pipes and socket, stepped
/// one field at a time. The session adapter that puts a world behind the worker's environment
/// trait is [`DolphinEnvironment`](crate::DolphinEnvironment).
#[derive(Debug)]
pub struct DolphinWorld {
    config: BackendConfig,
    pad: ControllerSchema,
    layout: Layout,
    // Field order is drop order: the watchdog goes (this world stops its children itself), the
    // pipes and the socket close (so a free-running Dolphin is never blocked sending to a full
    // socket), Dolphin stops, then its X server.
    _watchdog: Watchdog,
    pads: Vec<File>,
    hotkeys: Option<File>,
    socket: UnixDatagram,
    emulator: Emulator,
    xvfb: Option<Xvfb>,
    /// Dolphin's watch cache: what the next datagram's changes apply to.
    mirror: Mirror,
    /// The watched values of the current boundary: the mirror after a field, the captured
    /// values after a restore (no field has refreshed the cache then).
    observed: Vec<u32>,
    fields: u64,
    boundary: u64,
    thread: Option<u32>,
    ram: Option<Ram>,
    slot_file: Option<String>,
    failed: Option<String>,
    replay_verified: bool,
    first_pause: u64,
}

impl DolphinWorld {
    /// Starts a world in `scratch` (an existing, empty, private directory with a short path) and
    /// brings it to boundary 0.
    ///
    /// # Errors
    ///
    /// FS0801-FS0805: an invalid configuration, an unusable binary, a version or content
    /// mismatch, or a helper that did not come up; whatever was started is stopped again.
    pub fn start(config: &BackendConfig, scratch: &Path) -> Result<Self, DolphinError> {
        Self::start_with_pause_delay(config, scratch, Duration::ZERO)
    }

    /// [`start`](Self::start), with the first pause held back by `delay` after the content's
    /// first field: the tests use it to show that with a start field, boundary 0 does not
    /// depend on where the first pause lands ([`first_pause`](Self::first_pause)).
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub fn start_with_pause_delay(
        config: &BackendConfig,
        scratch: &Path,
        delay: Duration,
    ) -> Result<Self, DolphinError> {
        config.validate()?;
        let found = process::version_of(&config.binary, scratch)?;
        if found != config.version {
            return Err(DolphinError::VersionMismatch {
                expected: config.version.clone(),
                found,
            });
        }
        let digest = process::file_digest(&config.content.path)?;
        if digest != config.content.sha256 {
            return Err(DolphinError::ContentMismatch {
                path: config.content.path.display().to_string(),
                reason: format!("its SHA-256 is {digest}, pinned {}", config.content.sha256),
            });
        }
        let mut paused_at = 0;
        for _ in 0..START_ATTEMPTS {
            let mut world = Self::launch(config, scratch)?;
            if world.boot(delay)? {
                return Ok(world);
            }
            // Dolphin ran past the start field before the pause took hold: start afresh.
            paused_at = world.fields;
            drop(world);
            Layout::clear(scratch)?;
        }
        Err(DolphinError::helper(format!(
            "in {START_ATTEMPTS} starts Dolphin ran past the start field {} before it could be paused (last at field {paused_at}): raise `startField`",
            config.start_field.unwrap_or_default()
        )))
    }

    /// The configuration the world was started with.
    #[must_use]
    pub fn config(&self) -> &BackendConfig {
        &self.config
    }

    /// The field count at which the first pause took hold while booting (Qt mode): a diagnostic;
    /// with a start field, nothing at boundary 0 depends on it.
    #[must_use]
    pub fn first_pause(&self) -> u64 {
        self.first_pause
    }

    /// The process ids of the helper: Dolphin, then Xvfb (Qt mode).
    #[must_use]
    pub fn processes(&self) -> Vec<u32> {
        let mut pids = vec![self.emulator.pid()];
        pids.extend(self.xvfb.as_ref().map(Xvfb::pid));
        pids
    }

    /// The private X display (`:N`), in Qt mode.
    #[must_use]
    pub fn display(&self) -> Option<String> {
        self.xvfb.as_ref().map(Xvfb::display)
    }

    /// The directory Dolphin works in (its log is `dolphin.log` there).
    #[must_use]
    pub fn scratch(&self) -> &Path {
        &self.layout.scratch
    }

    /// Reads `len` bytes of emulated RAM at `address` (Qt mode, while stopped at a boundary).
    ///
    /// # Errors
    ///
    /// FS0805 if Dolphin's memory cannot be read.
    pub fn read_ram(&mut self, address: u32, len: usize) -> Result<Vec<u8>, DolphinError> {
        self.usable()?;
        self.qt_only("read memory")?;
        self.ram()?.read(address, len)
    }

    fn ram(&self) -> Result<&Ram, DolphinError> {
        self.ram
            .as_ref()
            .ok_or_else(|| DolphinError::helper("Dolphin's memory is not open"))
    }

    fn usable(&self) -> Result<(), DolphinError> {
        match &self.failed {
            Some(cause) => Err(DolphinError::Failed {
                cause: cause.clone(),
            }),
            None => Ok(()),
        }
    }

    fn qt_only(&self, operation: &'static str) -> Result<(), DolphinError> {
        match self.config.mode {
            Mode::Qt => Ok(()),
            Mode::Nogui => Err(DolphinError::Unsupported {
                mode: "nogui",
                operation,
            }),
        }
    }

    /// Runs `f`; any error it returns fails the world.
    fn guard<T>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<T, DolphinError>,
    ) -> Result<T, DolphinError> {
        let result = f(self);
        if let Err(e) = &result {
            self.failed = Some(format!("{} ({})", e, e.code_str()));
        }
        result
    }
}
