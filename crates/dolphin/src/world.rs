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

use std::fs::File;
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::time::{Duration, Instant};

use flysim_types::workers::{
    ControllerSchema, Determinism, EnvironmentDescriptor, PortControl, PortDescriptor, Recovery,
};
use flysim_types::{Id, RationalNs, SchemaRef, TypedValue};
use serde_json::json;

use crate::checkpoint::Checkpoint;
use crate::config::{BackendConfig, HOTKEY_PIPE, Hotkey, Mode};
use crate::error::DolphinError;
use crate::pipe::{hotkey_line, neutral_lines, port_lines};
use crate::process::{self, Emulator, Layout, Ram, Watchdog, Xvfb};
use crate::schema::{INSPECTION_SCHEMA_ID, gamecube_pad, schema_ref};
use crate::watcher::Mirror;

/// How long Dolphin may take to open its pipes after it was started.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the content may take to reach its ready condition.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one field may take to arrive after a frame advance.
const FIELD_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the emulation thread may take to come to rest after a field.
const PAUSE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a save or load may show no effect before it is tapped again.
const STATE_RETRY: Duration = Duration::from_secs(2);
/// Taps tried per save or load.
const STATE_TAPS: u32 = 3;
/// How long a frame advance may show no sign of the emulation running before it is pressed
/// again: a press a hotkey poll missed changes nothing, so pressing again is safe (a late
/// second step would run a second field, which is refused, never hidden).
const PRESS_RETRY: Duration = Duration::from_secs(1);
/// Presses tried per frame advance.
const FRAME_ADVANCE_PRESSES: u32 = 3;
/// How long the emulation must stand still after Toggle Pause before the pause counts.
const PAUSE_CONFIRM: Duration = Duration::from_millis(250);
/// How long a save or load state may take.
const STATE_TIMEOUT: Duration = Duration::from_secs(15);
/// How long Dolphin may take to read a pipe.
const PIPE_TIMEOUT: Duration = Duration::from_secs(5);
/// How many reads of the hotkey pipe, each of its own line, make certain that Dolphin's hotkey
/// poll has looked at the keys since the first of them: a poll (every ~5 ms) reads the pipes
/// twice before it looks at the keys, so of three successive reads two lie in different polls.
/// Dolphin acts on edges (and repeats frame advance once the key was seen down by 30 polls), so
/// each press and each release must be looked at by a poll before the next change.
const SETTLE_READS: usize = 2;
/// How long a tapped hotkey (pause, save, load) stays down.
const TAP_HOLD: Duration = Duration::from_millis(30);
/// Starts tried when Dolphin runs past the start field before the pause takes hold.
const START_ATTEMPTS: usize = 3;
/// Frame advances tried to align the pause with a field boundary.
const ALIGN_ATTEMPTS: usize = 6;
/// The name of the single-core emulation thread.
const EMULATION_THREAD: &str = "CPU-GPU thread";

/// The world time of one NTSC field: 1001/60000 s = 50050000/3 ns.
#[must_use]
pub fn field_duration() -> RationalNs {
    RationalNs::new(50_050_000, 3).expect("1001/60000 s is a valid duration")
}

/// What the world shows at a boundary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    /// The committed boundary (0 after start, +1 per advance).
    pub boundary: u64,
    /// MemoryWatcher fields since Dolphin started (the engine's frame counter).
    pub fields: u64,
    /// The watched values, in watch order, as of the end of the boundary's field.
    pub values: Vec<u32>,
}

impl Observation {
    /// The value of the watch named `name` in `config`.
    #[must_use]
    pub fn value(&self, config: &BackendConfig, name: &str) -> Option<u32> {
        let i = config
            .watches
            .iter()
            .position(|w| w.name.as_str() == name)?;
        self.values.get(i).copied()
    }

    /// The inspection value: `{"fields": U64, "values": {name: number, ...}}`.
    #[must_use]
    pub fn inspection(&self, config: &BackendConfig) -> TypedValue {
        let values: serde_json::Map<String, serde_json::Value> = config
            .watches
            .iter()
            .zip(&self.values)
            .map(|(w, v)| (w.name.to_string(), json!(v)))
            .collect();
        let mut value = serde_json::Map::new();
        value.insert("fields".into(), json!(self.fields.to_string()));
        value.insert("values".into(), serde_json::Value::Object(values));
        TypedValue {
            schema: inspection_schema(config),
            value,
        }
    }
}

/// The inspection schema of a configuration: its watch list.
#[must_use]
pub fn inspection_schema(config: &BackendConfig) -> SchemaRef {
    schema_ref(
        INSPECTION_SCHEMA_ID,
        1,
        json!({ "fields": "U64", "values": config.watches }),
    )
}

/// The port id the contract knows GameCube port `n` by: `p1` .. `p4`.
#[must_use]
pub fn port_id(port: u8) -> Id {
    Id::parse(&format!("p{port}")).expect("p1..p4 are ids")
}

/// One Dolphin process in lockstep.
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

    /// Creates the user directory, the pipes and the socket, starts Xvfb and Dolphin and opens
    /// the pipes.
    fn launch(config: &BackendConfig, scratch: &Path) -> Result<Self, DolphinError> {
        let layout = Layout::create(scratch)?;
        let socket_path = layout.user.join("MemoryWatcher/MemoryWatcher");
        if socket_path.as_os_str().len() >= 108 {
            return Err(DolphinError::helper(format!(
                "the scratch path is too long for a Unix socket: {}",
                socket_path.display()
            )));
        }
        for (file, text) in config.user_files() {
            let path = layout.user.join(file);
            std::fs::write(&path, text).map_err(|e| {
                DolphinError::helper(format!("cannot write {}: {e}", path.display()))
            })?;
        }
        let pipes = layout.user.join("Pipes");
        for port in &config.ports {
            process::make_fifo(&pipes.join(format!("pad{port}")))?;
        }
        if config.mode == Mode::Qt {
            process::make_fifo(&pipes.join(HOTKEY_PIPE))?;
        }
        let socket = UnixDatagram::bind(&socket_path).map_err(|e| {
            DolphinError::helper(format!("cannot bind the MemoryWatcher socket: {e}"))
        })?;
        let xvfb = match (&config.mode, &config.xvfb) {
            (Mode::Qt, Some(binary)) => Some(Xvfb::start(binary, &layout.scratch)?),
            _ => None,
        };
        let mut args: Vec<&std::ffi::OsStr> = Vec::new();
        if config.mode == Mode::Qt {
            args.push(std::ffi::OsStr::new("-b"));
        }
        args.push(std::ffi::OsStr::new("-u"));
        args.push(layout.user.as_os_str());
        args.push(std::ffi::OsStr::new("-e"));
        args.push(config.content.path.as_os_str());
        if config.mode == Mode::Nogui {
            args.push(std::ffi::OsStr::new("-p"));
            args.push(std::ffi::OsStr::new("headless"));
        }
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

    /// Waits for the content (its ready condition, or with a start field its first field), then
    /// (Qt mode) pauses, aligns, and with a start field advances with neutral ports to it. False
    /// when the pause came too late for the start field.
    fn boot(&mut self, delay: Duration) -> Result<bool, DolphinError> {
        let qt = self.config.mode == Mode::Qt;
        let neutral = neutral_lines();
        let deadline = Instant::now() + PIPE_TIMEOUT;
        for pad in &self.pads {
            process::write_all(pad, neutral.as_bytes(), deadline)?;
        }
        if qt {
            // The hotkey thread reads the pipes every few milliseconds: the neutral state is
            // latched before the content's first field in practice.
            for pad in &self.pads {
                process::wait_drained(pad, deadline)?;
            }
        }
        let ready = self.ready_index();
        let wait_for_ready = self.config.start_field.is_none();
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            let got = self.receive_until(Some(
                deadline.min(Instant::now() + Duration::from_millis(50)),
            ))?;
            let done = match ready {
                Some((i, value)) if wait_for_ready => self.mirror.values()[i] == value,
                _ => got > 0 || self.fields > 0,
            };
            if done {
                break;
            }
            self.emulator.check_alive()?;
            if Instant::now() >= deadline {
                return Err(DolphinError::helper(format!(
                    "the content did not become ready within {READY_TIMEOUT:?}"
                )));
            }
        }
        if !qt {
            return Ok(true);
        }
        self.thread = Some(
            process::find_thread(self.emulator.pid(), EMULATION_THREAD).ok_or_else(|| {
                DolphinError::helper(format!(
                    "Dolphin has no `{EMULATION_THREAD}` (is CPUThread=False in effect?)"
                ))
            })?,
        );
        for pad in &self.pads {
            process::wait_drained(pad, Instant::now() + PIPE_TIMEOUT)?;
        }
        let until = Instant::now() + delay;
        while Instant::now() < until {
            self.receive_until(Some(until))?;
        }
        self.tap(Hotkey::TogglePause)?;
        self.confirm_paused()?;
        self.first_pause = self.fields;
        let mut aligned = false;
        for _ in 0..ALIGN_ATTEMPTS {
            if self.frame_advance()? == 1 {
                aligned = true;
                break;
            }
        }
        if !aligned {
            return Err(DolphinError::LostLockstep {
                reason: format!(
                    "no frame advance ran exactly one field in {ALIGN_ATTEMPTS} tries: the content does not present a frame every field"
                ),
            });
        }
        if let Some(target) = self.config.start_field {
            if self.fields > target {
                return Ok(false);
            }
            self.advance_to(target)?;
            if let Some((i, value)) = ready
                && self.mirror.values()[i] != value
            {
                return Err(DolphinError::helper(format!(
                    "the content is not ready at its start field {target}: `{}` is {:08x}, not {value:08x}",
                    self.config.watches[i].name,
                    self.mirror.values()[i]
                )));
            }
        }
        self.ram = Some(Ram::open(self.emulator.pid())?);
        self.boundary = 0;
        self.observed = self.mirror.values();
        Ok(true)
    }

    /// The ready condition as (watch index, value).
    fn ready_index(&self) -> Option<(usize, u32)> {
        let ready = self.config.ready.as_ref()?;
        let i = self
            .config
            .watches
            .iter()
            .position(|w| w.name == ready.watch)
            .expect("validated");
        Some((i, ready.value.0))
    }

    /// Frame advances (every port as it is, neutral at boot) until the end of field `target`.
    /// On the way an advance may run several fields (content that repeats frames while it
    /// boots): where each advance stops is a function of the emulation, so landing exactly on
    /// `target` either always works for a content or never does.
    fn advance_to(&mut self, target: u64) -> Result<(), DolphinError> {
        while self.fields < target {
            let from = self.fields;
            self.frame_advance()?;
            if self.fields > target {
                return Err(DolphinError::LostLockstep {
                    reason: format!(
                        "the content presents no new frame at the end of its start field {target} (an advance ran from field {from} to {}): choose another start field",
                        self.fields
                    ),
                });
            }
        }
        Ok(())
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

    /// The world at its current boundary (in nogui mode: the newest field received).
    ///
    /// # Errors
    ///
    /// FS0807 after an earlier failure; in nogui mode FS0805 if reading datagrams fails.
    pub fn observation(&mut self) -> Result<Observation, DolphinError> {
        self.usable()?;
        if self.config.mode == Mode::Nogui {
            self.guard(|w| w.drain().map(|_| ()))?;
            self.observed = self.mirror.values();
        }
        Ok(self.current())
    }

    fn current(&self) -> Observation {
        Observation {
            boundary: self.boundary,
            fields: self.fields,
            values: self.observed.clone(),
        }
    }

    /// Applies one complete controller batch (one control per configured port, in port order)
    /// and runs exactly one field.
    ///
    /// # Errors
    ///
    /// A contract refusal of the batch (nothing is applied, the world stays usable); FS0810 in
    /// nogui mode; FS0806 if the step ran more or less than one field or the world moved
    /// between steps, FS0805 if the helper failed — both leave the world failed (FS0807).
    pub fn advance(&mut self, controls: &[PortControl]) -> Result<Observation, DolphinError> {
        self.usable()?;
        self.qt_only("advance one field")?;
        if controls.len() != self.config.ports.len() {
            return Err(DolphinError::Control(flysim_types::ContractError::rule(
                "controls",
                format!(
                    "one control per configured port ({}), found {}",
                    self.config.ports.len(),
                    controls.len()
                ),
            )));
        }
        let mut batch = Vec::with_capacity(controls.len());
        for (i, (control, port)) in controls.iter().zip(&self.config.ports).enumerate() {
            if control.port_id != port_id(*port) {
                return Err(DolphinError::Control(flysim_types::ContractError::rule(
                    format!("controls[{i}].portId"),
                    format!(
                        "expected `{}` (port order), found `{}`",
                        port_id(*port),
                        control.port_id
                    ),
                )));
            }
            batch.push(port_lines(control, &self.pad).map_err(|e| match e {
                DolphinError::Control(c) => {
                    DolphinError::Control(c.under(&format!("controls[{i}]")))
                }
                other => other,
            })?);
        }
        self.guard(|w| {
            let deadline = Instant::now() + PIPE_TIMEOUT;
            for (pad, lines) in w.pads.iter().zip(&batch) {
                process::write_all(pad, lines.as_bytes(), deadline)?;
            }
            for pad in &w.pads {
                process::wait_drained(pad, deadline)?;
            }
            let fields = w.frame_advance()?;
            if fields != 1 {
                return Err(DolphinError::LostLockstep {
                    reason: format!(
                        "the frame advance from boundary {} ran {fields} fields",
                        w.boundary
                    ),
                });
            }
            w.boundary += 1;
            w.observed = w.mirror.values();
            Ok(w.current())
        })
    }

    /// Captures the world at its current boundary through save-state slot 1.
    ///
    /// # Errors
    ///
    /// FS0810 in nogui mode; FS0805/FS0806 (and the world fails) if the save does not complete
    /// or a field runs meanwhile.
    pub fn capture(&mut self) -> Result<Checkpoint, DolphinError> {
        self.usable()?;
        self.qt_only("capture a checkpoint")?;
        self.guard(|w| {
            w.expect_still()?;
            let states = w.layout.user.join("StateSaves");
            clear_slot_files(&states)?;
            w.tap(Hotkey::SaveSlot1)?;
            let deadline = Instant::now() + STATE_TIMEOUT;
            let (mut taps, mut retry) = (1, Instant::now() + STATE_RETRY);
            let name = loop {
                if let Some(name) = slot_file(&states)? {
                    break name;
                }
                if Instant::now() >= deadline {
                    return Err(DolphinError::helper(
                        "the save state did not appear in time",
                    ));
                }
                // Nothing written at all: the hotkey poll missed the tap; saving the stopped
                // world again writes the same state.
                if Instant::now() >= retry && taps < STATE_TAPS && no_slot_file(&states)? {
                    w.tap(Hotkey::SaveSlot1)?;
                    (taps, retry) = (taps + 1, Instant::now() + STATE_RETRY);
                }
                std::thread::sleep(Duration::from_millis(2));
            };
            let state = std::fs::read(states.join(&name))
                .map_err(|e| DolphinError::helper(format!("cannot read the save state: {e}")))?;
            let ram = w.ram()?.digest()?;
            w.expect_still()?;
            w.slot_file = Some(name.clone());
            Ok(Checkpoint {
                configuration: w.config.digest(),
                slot_file: name,
                boundary: w.boundary,
                fields: w.fields,
                values: w.observed.clone(),
                ram,
                state,
            })
        })
    }

    /// Restores a checkpoint of this configuration: the world is then at the checkpoint's
    /// boundary, and its observation is the captured one. No field runs.
    ///
    /// # Errors
    ///
    /// FS0808 for a checkpoint of another configuration (the world stays usable); FS0810 in
    /// nogui mode; FS0805/FS0806 (and the world fails) if the load does not complete.
    pub fn restore(&mut self, checkpoint: &Checkpoint) -> Result<Observation, DolphinError> {
        self.usable()?;
        self.qt_only("restore a checkpoint")?;
        checkpoint.check_for(&self.config)?;
        self.guard(|w| {
            w.expect_still()?;
            let states = w.layout.user.join("StateSaves");
            clear_slot_files(&states)?;
            let path = states.join(&checkpoint.slot_file);
            let partial = states.join("incoming.part");
            std::fs::write(&partial, &checkpoint.state)
                .and_then(|()| std::fs::rename(&partial, &path))
                .map_err(|e| DolphinError::helper(format!("cannot write the save state: {e}")))?;
            w.tap(Hotkey::LoadSlot1)?;
            let deadline = Instant::now() + STATE_TIMEOUT;
            let (mut taps, mut retry) = (1, Instant::now() + STATE_RETRY);
            while w.ram()?.digest()? != checkpoint.ram {
                if Instant::now() >= deadline {
                    return Err(DolphinError::helper(
                        "the loaded state did not reach the checkpoint's memory in time",
                    ));
                }
                // The hotkey poll may have missed the tap; loading the same file again is
                // harmless.
                if Instant::now() >= retry && taps < STATE_TAPS {
                    w.tap(Hotkey::LoadSlot1)?;
                    (taps, retry) = (taps + 1, Instant::now() + STATE_RETRY);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            w.expect_still()?;
            w.slot_file = Some(checkpoint.slot_file.clone());
            w.boundary = checkpoint.boundary;
            w.fields = checkpoint.fields;
            w.observed = checkpoint.values.clone();
            Ok(Observation {
                boundary: checkpoint.boundary,
                fields: checkpoint.fields,
                values: checkpoint.values.clone(),
            })
        })
    }

    /// Checks repeatability at the current boundary: capture, `steps` advances with a fixed
    /// input pattern, restore, the same advances again; the world is restored to the starting
    /// boundary afterwards. True when every observation repeated. A pass lets the descriptor
    /// claim `fixed-build` for the pinned version.
    ///
    /// # Errors
    ///
    /// Whatever capture, advance or restore report.
    pub fn verify_replay(&mut self, steps: u64) -> Result<bool, DolphinError> {
        let start = self.capture()?;
        let run = |w: &mut Self| -> Result<Vec<Observation>, DolphinError> {
            (0..steps)
                .map(|k| {
                    let batch: Vec<PortControl> = w
                        .config
                        .ports
                        .iter()
                        .map(|p| pattern_control(&w.pad, *p, k))
                        .collect();
                    w.advance(&batch)
                })
                .collect()
        };
        let first = run(self)?;
        self.restore(&start)?;
        let second = run(self)?;
        self.restore(&start)?;
        let verified = first == second;
        self.replay_verified = verified;
        Ok(verified)
    }

    /// The environment descriptor: NTSC fields, the GameCube pad on every port, the watch list
    /// as inspection schema; `exact-checkpoint` in Qt mode, `episode-restart` in nogui mode;
    /// `fixed-build` only in Qt mode on the pinned version after [`verify_replay`](Self::verify_replay)
    /// passed.
    #[must_use]
    pub fn descriptor(&self) -> EnvironmentDescriptor {
        let qt = self.config.mode == Mode::Qt;
        let backend = flysim_types::digest::value_digest(&json!({
            "backend": "flysim-dolphin",
            "crateVersion": env!("CARGO_PKG_VERSION"),
            "dolphinVersion": self.config.version,
        }))
        .expect("strings only");
        EnvironmentDescriptor {
            backend_digest: backend,
            content_digest: self.config.content.sha256,
            configuration_digest: self.config.digest(),
            step_duration: field_duration(),
            ports: self
                .config
                .ports
                .iter()
                .map(|p| PortDescriptor {
                    port_id: port_id(*p),
                    controls: self.pad.clone(),
                })
                .collect(),
            inspection_schema: inspection_schema(&self.config),
            views: Vec::new(),
            audio: Vec::new(),
            recovery: if qt {
                Recovery::ExactCheckpoint
            } else {
                Recovery::EpisodeRestart
            },
            determinism: if qt
                && self.replay_verified
                && self.config.version == crate::config::PINNED_VERSION
            {
                Determinism::FixedBuild
            } else {
                Determinism::Unverified
            },
        }
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

    /// Receives datagrams into the mirror until none is waiting, or until `until` passes when
    /// given (returning early after the first). Returns how many arrived.
    fn receive_until(&mut self, until: Option<Instant>) -> Result<u64, DolphinError> {
        let mut buf = vec![0u8; 65_536];
        let mut got = 0;
        loop {
            let timeout = match until {
                Some(t) if got == 0 => t.saturating_duration_since(Instant::now()),
                _ => Duration::ZERO,
            };
            let result = if timeout.is_zero() {
                self.socket
                    .set_nonblocking(true)
                    .and_then(|()| self.socket.recv(&mut buf))
            } else {
                self.socket
                    .set_nonblocking(false)
                    .and_then(|()| self.socket.set_read_timeout(Some(timeout)))
                    .and_then(|()| self.socket.recv(&mut buf))
            };
            match result {
                Ok(n) => {
                    self.mirror.apply(&buf[..n])?;
                    self.fields += 1;
                    got += 1;
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return Ok(got);
                }
                Err(e) => {
                    return Err(DolphinError::helper(format!(
                        "the MemoryWatcher socket failed: {e}"
                    )));
                }
            }
        }
    }

    /// Takes every datagram already waiting.
    fn drain(&mut self) -> Result<u64, DolphinError> {
        self.receive_until(None)
    }

    /// Refuses if any field ran since the last step.
    fn expect_still(&mut self) -> Result<(), DolphinError> {
        let stray = self.drain()?;
        if stray > 0 {
            return Err(DolphinError::LostLockstep {
                reason: format!(
                    "{stray} field(s) ran while the world was stopped at boundary {}",
                    self.boundary
                ),
            });
        }
        Ok(())
    }

    fn hotkey_pipe(&self) -> Result<&File, DolphinError> {
        self.hotkeys
            .as_ref()
            .ok_or_else(|| DolphinError::helper("no hotkey pipe in this mode"))
    }

    /// Writes one line to the hotkey pipe and waits until Dolphin has read it.
    fn hotkey_write(&self, line: &str) -> Result<(), DolphinError> {
        let pipe = self.hotkey_pipe()?;
        let deadline = Instant::now() + PIPE_TIMEOUT;
        process::write_all(pipe, line.as_bytes(), deadline)?;
        process::wait_drained(pipe, deadline)
    }

    /// Presses or releases a hotkey, then waits until a hotkey poll has looked at it: after
    /// the change's own read, [`SETTLE_READS`] reads of a line that changes nothing (a button
    /// no hotkey is bound to). While the emulation is stopped only the hotkey poll reads the
    /// pipe; once a pressed frame advance runs, the emulation reads it too, but then the poll
    /// has already acted.
    fn hotkey(&self, key: Hotkey, down: bool) -> Result<(), DolphinError> {
        self.hotkey_write(&hotkey_line(key.button(), down))?;
        let idle = hotkey_line(Hotkey::UNBOUND, false);
        for _ in 0..SETTLE_READS {
            self.hotkey_write(&idle)?;
        }
        Ok(())
    }

    /// Presses and releases a hotkey, each edge looked at by a poll.
    fn tap(&mut self, key: Hotkey) -> Result<(), DolphinError> {
        self.hotkey(key, true)?;
        std::thread::sleep(TAP_HOLD);
        self.hotkey(key, false)
    }

    /// One frame advance from a paused boundary; returns how many fields it ran.
    fn frame_advance(&mut self) -> Result<u64, DolphinError> {
        self.expect_still()?;
        let before = self.fields;
        let (pid, thread) = (self.emulator.pid(), self.thread);
        let runtime = move || {
            thread
                .and_then(|tid| process::thread_sample(pid, tid))
                .map(|(_, runtime)| runtime)
        };
        let idle = runtime();
        let deadline = Instant::now() + FIELD_TIMEOUT;
        let mut presses = 0;
        while self.fields == before {
            if presses < FRAME_ADVANCE_PRESSES {
                // Released as soon as a poll has acted on the press: a field on a loaded
                // machine can take longer than the 30 polls after which Dolphin repeats it.
                self.hotkey(Hotkey::FrameAdvance, true)?;
                self.hotkey(Hotkey::FrameAdvance, false)?;
                presses += 1;
            }
            self.receive_until(Some((Instant::now() + PRESS_RETRY).min(deadline)))?;
            if self.fields > before {
                break;
            }
            let ran = idle.is_some() && runtime() != idle;
            if ran {
                // The step is under way: wait for its field, never press again.
                if self.receive_until(Some(deadline))? > 0 {
                    break;
                }
            }
            if Instant::now() >= deadline {
                self.emulator.check_alive()?;
                return Err(DolphinError::LostLockstep {
                    reason: format!(
                        "no field ran within {FIELD_TIMEOUT:?} of a frame advance ({presses} press(es); the emulation {})",
                        if ran { "ran" } else { "never ran" }
                    ),
                });
            }
            // Nothing ran at all: the poll missed the press (a loaded machine); press again.
        }
        self.wait_paused()?;
        self.drain()?;
        Ok(self.fields - before)
    }

    /// After Toggle Pause: waits until the emulation has stood still, no field and no run time,
    /// for a whole [`PAUSE_CONFIRM`]. The pause itself happens on Dolphin's user-interface
    /// thread some time after the hotkey poll saw the key, and meanwhile the running emulation
    /// thread can look asleep for a moment on a loaded machine (blocked on a lock); a frame
    /// advance pressed before the pause happened would be undone by it.
    fn confirm_paused(&mut self) -> Result<(), DolphinError> {
        let tid = self
            .thread
            .ok_or_else(|| DolphinError::helper("the emulation thread is unknown"))?;
        let pid = self.emulator.pid();
        let deadline = Instant::now() + PAUSE_TIMEOUT;
        loop {
            self.wait_paused()?;
            self.drain()?;
            let fields = self.fields;
            let runtime = process::thread_sample(pid, tid).map(|(_, r)| r);
            self.receive_until(Some(Instant::now() + PAUSE_CONFIRM))?;
            self.drain()?;
            let still = process::thread_sample(pid, tid).map(|(_, r)| r);
            if self.fields == fields && still.is_some() && still == runtime {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(DolphinError::LostLockstep {
                    reason: format!(
                        "the emulation did not stand still within {PAUSE_TIMEOUT:?} of a pause"
                    ),
                });
            }
        }
    }

    /// Waits until the emulation thread sleeps and has not run between two looks.
    fn wait_paused(&mut self) -> Result<(), DolphinError> {
        let tid = self
            .thread
            .ok_or_else(|| DolphinError::helper("the emulation thread is unknown"))?;
        let pid = self.emulator.pid();
        let deadline = Instant::now() + PAUSE_TIMEOUT;
        let mut previous: Option<u64> = None;
        loop {
            let (state, runtime) = process::thread_sample(pid, tid)
                .ok_or_else(|| DolphinError::helper("the emulation thread vanished"))?;
            if state == 'S' && previous == Some(runtime) {
                return Ok(());
            }
            previous = (state == 'S').then_some(runtime);
            if Instant::now() >= deadline {
                self.emulator.check_alive()?;
                return Err(DolphinError::LostLockstep {
                    reason: format!("the emulation did not stop within {PAUSE_TIMEOUT:?}"),
                });
            }
            // Fields that arrive meanwhile are counted (a step running on is caught here).
            self.receive_until(Some(Instant::now() + process::POLL))?;
        }
    }
}

/// The fixed input pattern of [`DolphinWorld::verify_replay`] for port `port` at step `k`.
#[must_use]
pub fn pattern_control(pad: &ControllerSchema, port: u8, k: u64) -> PortControl {
    use flysim_types::workers::{AxisValue, ButtonState};
    let phase = k + u64::from(port);
    PortControl {
        port_id: port_id(port),
        buttons: pad
            .buttons
            .iter()
            .enumerate()
            .map(|(i, id)| ButtonState {
                id: id.clone(),
                // Z changes how the test program paints; it stays up.
                down: id.as_str() != "z" && (phase + i as u64).is_multiple_of(5),
            })
            .collect(),
        axes: pad
            .axes
            .iter()
            .enumerate()
            .map(|(i, axis)| {
                let step = ((phase + i as u64) % 9) as f64 / 8.0;
                let value = match axis.range {
                    flysim_types::workers::AxisRange::Bipolar => step * 2.0 - 1.0,
                    flysim_types::workers::AxisRange::Unit => step,
                };
                AxisValue {
                    id: axis.id.clone(),
                    value,
                }
            })
            .collect(),
    }
}

/// Whether `states` holds no slot-1 file, finished or being written.
fn no_slot_file(states: &Path) -> Result<bool, DolphinError> {
    let entries = std::fs::read_dir(states)
        .map_err(|e| DolphinError::helper(format!("cannot list StateSaves: {e}")))?;
    Ok(!entries
        .flatten()
        .any(|e| e.file_name().to_string_lossy().contains(".s01")))
}

/// Removes every slot-1 state file (and Dolphin's temporary files) from `states`.
fn clear_slot_files(states: &Path) -> Result<(), DolphinError> {
    let entries = std::fs::read_dir(states)
        .map_err(|e| DolphinError::helper(format!("cannot list StateSaves: {e}")))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.ends_with(".s01") || name.contains(".s01") {
            std::fs::remove_file(entry.path())
                .map_err(|e| DolphinError::helper(format!("cannot remove {name}: {e}")))?;
        }
    }
    Ok(())
}

/// The complete slot-1 state file in `states`, if Dolphin has finished writing one (it writes
/// `<id>.s01<n>.tmp` and renames it).
fn slot_file(states: &Path) -> Result<Option<String>, DolphinError> {
    let entries = std::fs::read_dir(states)
        .map_err(|e| DolphinError::helper(format!("cannot list StateSaves: {e}")))?;
    let mut found = None;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".tmp") {
            return Ok(None);
        }
        if name.ends_with(".s01") {
            found = Some(name);
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fieldcount;

    fn config() -> BackendConfig {
        fieldcount::config(
            Path::new("/usr/games/dolphin-emu"),
            crate::config::PINNED_VERSION,
            Some(Path::new("/usr/bin/Xvfb")),
            Path::new("/tmp/fieldcount.elf"),
            flysim_types::digest::sha256(b"elf"),
            vec![1, 2],
            Mode::Qt,
        )
    }

    #[test]
    fn a_field_is_1001_60000_of_a_second() {
        let field = field_duration();
        assert_eq!(field.to_string(), "50050000/3");
        let sixty_thousand = field.checked_mul_int(60_000).unwrap();
        assert_eq!(sixty_thousand, RationalNs::from_ns(1_001_000_000_000));
    }

    #[test]
    fn the_inspection_names_every_watch_and_fits_its_schema() {
        let cfg = config();
        let observation = Observation {
            boundary: 3,
            fields: 41,
            values: (0..12).collect(),
        };
        let inspection = observation.inspection(&cfg);
        inspection.validate().unwrap();
        assert_eq!(inspection.schema, inspection_schema(&cfg));
        assert_eq!(inspection.schema.id.as_str(), "dolphin-watch-v1");
        assert_eq!(inspection.value["fields"], "41");
        assert_eq!(inspection.value["values"]["magic"], 0);
        assert_eq!(inspection.value["values"]["pad4-lo"], 11);
        assert_eq!(observation.value(&cfg, "loops"), Some(2));
        let mut other = cfg.clone();
        other.watches.pop();
        assert_ne!(inspection_schema(&other), inspection.schema);
    }

    #[test]
    fn the_replay_pattern_is_a_valid_control_that_never_holds_z() {
        let pad = gamecube_pad();
        for k in 0..50 {
            let control = pattern_control(&pad, 2, k);
            control.validate_against(&pad).unwrap();
            assert_eq!(control.port_id.as_str(), "p2");
            assert!(
                control
                    .buttons
                    .iter()
                    .all(|b| b.id.as_str() != "z" || !b.down)
            );
        }
    }
}
