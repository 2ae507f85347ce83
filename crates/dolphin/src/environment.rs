//! The Dolphin world as a session environment: [`DolphinEnvironment`] implements the worker's
//! [`EnvironmentBackend`] over [`DolphinWorld`].
//!
//! - The plan's environment pins `version "5.0-17995"` ([`PINNED_RELEASE`]); its ports are
//!   named `p1` to `p4` after the GameCube ports, in any order, and declare any of the GameCube
//!   pad's buttons and axes (with the pad's ranges), in any order; a control is turned into the
//!   full pad state (undeclared buttons up, undeclared axes at 0: sticks centred, triggers
//!   released).
//! - The content's format says what the backend watches: `gc-fieldcount`, the project's own
//!   test program, with its documented words (magic, counters, the SI words of all four ports)
//!   and boundary 0 at the end of field [`fieldcount::START_FIELD`]; a disc image or program
//!   ([`DISC_FORMATS`]) with its game code and disc word (`0x80000000`, `0x80000004`, which the
//!   boot copies from the disc header) and boundary 0 at the end of field [`DISC_START_FIELD`].
//! - Dolphin boots a symbolic link to the content named for its format (`content.elf`,
//!   `content.iso`, ...) in the environment's private directory: content stored by digest has no
//!   extension, and Dolphin tells an ELF from a disc image by it.
//! - Views: content that draws its picture into memory with the CPU (`gc-fieldcount`) shows
//!   it as view `screen`, its external framebuffer read at every boundary and converted to
//!   RGBA ([`crate::xfb`]); a disc image shows none (the Null renderer draws nothing, so a
//!   game's framebuffer never reaches memory). No audio.
//! - Initialize starts a fresh Dolphin and Xvfb in a new private directory and stops at
//!   boundary 0, the same emulated state in every run; the first Initialize also runs the replay
//!   check ([`DolphinWorld::verify_replay`]), and only when it passes on the pinned build does
//!   the descriptor say `fixed-build` (else `unverified`). Disc images and programs are always
//!   `unverified`: Dolphin (outside movies and netplay) derives the console's clock from the
//!   host's, even with a custom RTC, and games read it. Recovery is `exact-checkpoint`.
//! - Advance runs exactly one field; a step that ran more is an error (`FS0806`), never a result.
//! - Capture returns a [`Checkpoint`]'s bytes (Dolphin's save state, the watched values, the
//!   field count, a digest of main memory); StageRestore parses and checks one without touching
//!   the world; ActivateRestore loads it (starting a world first if there is none).
//! - Dropping the environment stops Dolphin, then Xvfb, then removes its directory. If the
//!   process ends without dropping it (a worker process killed by the launcher, say), watchdog
//!   shells do the same: Dolphin and Xvfb run in their own process groups and would outlive it.
//!
//! The caller (the binary) finds the binaries and the content file: this crate reads no
//! environment variable. Errors carry their `FS08xx` code in the message, since a
//! [`BackendError`] has none of its own.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use flysim_component::backend::{
    BackendError, EnvironmentBackend, EnvironmentSetup, Frame, InspectionArtifact,
};
use flysim_types::plan::PlanEnvironment;
use flysim_types::workers::{
    AxisValue, ButtonState, Determinism, EnvironmentDescriptor, PortControl, PortDescriptor,
    Recovery,
};
use flysim_types::{Digest, Id, TypedValue};

use crate::checkpoint::Checkpoint;
use crate::config::{
    Address, BackendConfig, CONFIG_FORMAT, Content, Mode, PINNED_RELEASE, PINNED_VERSION, Ready,
    Watch,
};
use crate::error::DolphinError;
use crate::fieldcount;
use crate::process::Watchdog;
use crate::schema::gamecube_pad;
use crate::world::{DolphinWorld, field_duration, inspection_schema, port_id};
use crate::xfb::Xfb;

/// Content formats booted as a disc image or program with the generic watch list.
pub const DISC_FORMATS: [&str; 8] = ["iso", "gcm", "rvz", "gcz", "ciso", "wia", "dol", "elf"];
/// Boundary 0 of a disc image or program: the end of its 120th field (two seconds in).
pub const DISC_START_FIELD: u64 = 120;
/// Steps of the replay check the first Initialize runs.
pub const REPLAY_STEPS: u64 = 8;

/// The content a world boots, as the plan pins it: its file (never copied), its SHA-256 and its
/// format (which says what the backend watches).
#[derive(Debug, Clone, Copy)]
pub struct ContentFile<'a> {
    /// Where the bytes are.
    pub path: &'a Path,
    /// Their SHA-256, as the plan pins it.
    pub digest: Digest,
    /// The asset's format: `gc-fieldcount` or a disc or program format.
    pub format: &'a str,
}

/// Where the binaries are, as the caller found them (`None`: not installed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tools {
    /// `dolphin-emu`, the Qt frontend.
    pub dolphin: Option<PathBuf>,
    /// `Xvfb`.
    pub xvfb: Option<PathBuf>,
}

/// Turns a backend error into the worker's, keeping its code in the message: refusals before
/// anything ran (missing or unpinned binaries, a plan or content the backend cannot run, a
/// batch the contract refuses) are `Invalid`, a foreign checkpoint `Incompatible`, anything
/// else a `Fault`.
#[must_use]
pub fn backend_error(e: &DolphinError) -> BackendError {
    let message = format!("{e} ({})", e.code_str());
    match e {
        DolphinError::ToolMissing { .. }
        | DolphinError::BinaryUnusable { .. }
        | DolphinError::VersionMismatch { .. }
        | DolphinError::PlanRefused { .. }
        | DolphinError::ConfigInvalid { .. }
        | DolphinError::ContentMismatch { .. }
        | DolphinError::Control(_) => BackendError::Invalid(message),
        DolphinError::CheckpointRefused { .. } => BackendError::Incompatible(message),
        _ => BackendError::Fault(message),
    }
}

fn refused(field: impl Into<String>, reason: impl Into<String>) -> DolphinError {
    DolphinError::PlanRefused {
        field: field.into(),
        reason: reason.into(),
    }
}

fn watch(name: &'static str, address: u32) -> Watch {
    Watch {
        name: Id::from_static(name),
        address: Address(address),
        offsets: Vec::new(),
    }
}

/// What the backend makes of content of a format.
struct ContentProfile {
    watches: Vec<Watch>,
    ready: Option<Ready>,
    start_field: u64,
    /// Where its picture lies in memory, when it draws one there.
    xfb: Option<Xfb>,
    /// The file extension Dolphin recognises the content by.
    extension: &'static str,
    /// Whether a passed replay check backs `fixed-build`: not for games, which read the
    /// console's clock, and Dolphin advances that with the host's clock.
    repeatable: bool,
}

/// What the backend watches of content of `format`, and how Dolphin recognises it.
fn content_profile(format: &str) -> Option<ContentProfile> {
    if format == fieldcount::CONTENT_FORMAT {
        return Some(ContentProfile {
            watches: fieldcount::watches(),
            ready: Some(fieldcount::ready()),
            start_field: fieldcount::START_FIELD,
            xfb: Some(fieldcount::XFB),
            extension: "elf",
            repeatable: true,
        });
    }
    DISC_FORMATS
        .iter()
        .find(|f| **f == format)
        .map(|extension| ContentProfile {
            watches: vec![
                watch("game-code", 0x8000_0000),
                watch("disc-word", 0x8000_0004),
            ],
            ready: None,
            start_field: DISC_START_FIELD,
            xfb: None,
            extension,
            repeatable: false,
        })
}

/// How one plan port maps onto a GameCube port.
#[derive(Debug, Clone)]
struct PortMap {
    /// The GameCube port, 1 to 4.
    port: u8,
    /// For each pad button (schema order), its index in the plan port's buttons.
    buttons: Vec<Option<usize>>,
    /// For each pad axis (schema order), its index in the plan port's axes.
    axes: Vec<Option<usize>>,
}

/// A Dolphin world as a session environment.
///
/// In this crate the *environment* is the session adapter: it implements the worker's
/// environment trait over a [`DolphinWorld`], which is the process wrapper (Dolphin and its
/// Xvfb in lockstep).
#[derive(Debug)]
pub struct DolphinEnvironment {
    // Field order is drop order: the watchdog goes (the environment cleans up itself), then the
    // world (Dolphin, then Xvfb), then its directory.
    _watchdog: Watchdog,
    world: Mutex<Option<DolphinWorld>>,
    scratch: tempfile::TempDir,
    descriptor: EnvironmentDescriptor,
    config: BackendConfig,
    /// Plan ports in plan (descriptor) order.
    ports: Vec<PortMap>,
    /// Where each plan port's control goes in the world's batch (GameCube port order).
    order: Vec<usize>,
    staged: Option<Checkpoint>,
    /// Whether the content's profile lets a passed replay check claim `fixed-build`.
    repeatable: bool,
    replay_checked: bool,
    worlds: u64,
    steps: u64,
    /// What a declared memory task reads, and how the watched values become its memory.
    memory: crate::memory::TaskMemory,
    /// The content's framebuffer, when it shows one as a view.
    xfb: Option<Xfb>,
    /// The view's frame at the current boundary (read when the boundary was reached).
    frame: Option<Frame>,
}

impl DolphinEnvironment {
    /// The environment for a plan's environment and its configuration digest, booting the
    /// content file `content_file` (which the plan pins by SHA-256; never copied), with the
    /// binaries in `tools`, in a private directory created under `scratch_parent` (keep it
    /// short: Dolphin's socket path must stay under 108 bytes). `memory` lists the (address,
    /// width) reads of a declared memory task: their words are watched beside the content's and
    /// published as the `memory` inspection artifact. Nothing starts until Initialize; the
    /// binary's version and the content's digest are checked now.
    ///
    /// # Errors
    ///
    /// FS0811 when Dolphin or Xvfb is missing, FS0812 for a plan this backend cannot run,
    /// FS0801/FS0802 for an unusable or unpinned binary, FS0803 for content that does not
    /// match its digest, FS0805 when the directory cannot be made.
    pub fn new(
        env: &PlanEnvironment,
        configuration_digest: Digest,
        content_file: &ContentFile<'_>,
        tools: &Tools,
        scratch_parent: &Path,
        memory: &[flysim_types::memory::MemoryVariable],
    ) -> Result<Self, DolphinError> {
        let ContentFile {
            path: content,
            digest: content_digest,
            format: content_format,
        } = *content_file;
        let (dolphin, xvfb) = installed(tools)?;
        let mut profile = plan_profile(env, content_format)?;
        let memory = crate::memory::TaskMemory::watch(&mut profile.watches, memory)?;
        let ports = port_maps(env)?;
        let mut by_port: Vec<(u8, usize)> =
            ports.iter().enumerate().map(|(i, p)| (p.port, i)).collect();
        by_port.sort_unstable();
        let order = by_port.iter().map(|(_, i)| *i).collect();
        let content = std::path::absolute(content).map_err(|e| DolphinError::ContentMismatch {
            path: content.display().to_string(),
            reason: e.to_string(),
        })?;
        let scratch = private_dir(scratch_parent)?;
        let link = link_content(&scratch, &content, profile.extension)?;
        let config = BackendConfig {
            format: CONFIG_FORMAT.to_owned(),
            binary: std::path::absolute(&dolphin).unwrap_or(dolphin),
            version: PINNED_VERSION.to_owned(),
            xvfb: Some(std::path::absolute(&xvfb).unwrap_or(xvfb)),
            content: Content {
                path: link,
                sha256: content_digest,
            },
            ports: by_port.iter().map(|(p, _)| *p).collect(),
            watches: profile.watches,
            ready: profile.ready,
            start_field: Some(profile.start_field),
            mode: Mode::Qt,
        };
        config.validate()?;
        let watchdog = Watchdog::remove_dir(scratch.path())?;
        check_binary_and_content(&config, scratch.path(), content_digest)?;
        let descriptor = plan_descriptor(
            env,
            content_digest,
            configuration_digest,
            &config,
            profile.xfb,
        );
        Ok(Self {
            _watchdog: watchdog,
            world: Mutex::new(None),
            scratch,
            descriptor,
            config,
            ports,
            order,
            staged: None,
            repeatable: profile.repeatable,
            replay_checked: false,
            worlds: 0,
            steps: 0,
            memory,
            xfb: profile.xfb,
            frame: None,
        })
    }

    /// The backend configuration the worlds run (paths included).
    #[must_use]
    pub fn config(&self) -> &BackendConfig {
        &self.config
    }

    /// The private directory the worlds run in.
    #[must_use]
    pub fn scratch(&self) -> &Path {
        self.scratch.path()
    }

    /// The process ids of the running world (Dolphin, then Xvfb), if one runs.
    #[must_use]
    pub fn processes(&self) -> Vec<u32> {
        self.lock()
            .ok()
            .and_then(|w| w.as_ref().map(DolphinWorld::processes))
            .unwrap_or_default()
    }

    fn lock(&self) -> Result<MutexGuard<'_, Option<DolphinWorld>>, BackendError> {
        self.world
            .lock()
            .map_err(|_| BackendError::Fault("the Dolphin world's lock is poisoned".into()))
    }

    /// Stops the running world, if any, and starts a new one at boundary 0.
    fn start_world(&mut self) -> Result<(), BackendError> {
        let previous = self.lock()?.take();
        drop(previous);
        self.worlds += 1;
        let dir = self.scratch.path().join(format!("w{}", self.worlds));
        std::fs::create_dir(&dir).map_err(|e| {
            backend_error(&DolphinError::helper(format!(
                "cannot create {}: {e}",
                dir.display()
            )))
        })?;
        let world = DolphinWorld::start(&self.config, &dir).map_err(|e| backend_error(&e))?;
        *self.lock()? = Some(world);
        Ok(())
    }

    /// Reads the current boundary's frame of the view, when the content shows one.
    fn refresh_view(&mut self) -> Result<(), BackendError> {
        let Some(xfb) = self.xfb else {
            return Ok(());
        };
        let yuyv = self.with_world(|w| w.read_ram(xfb.address, xfb.bytes()))?;
        // The last frame's buffer, when no artifact holds it any more.
        let mut bytes = self
            .frame
            .take()
            .and_then(|f| std::sync::Arc::try_unwrap(f.bytes).ok())
            .unwrap_or_default();
        crate::xfb::to_rgba(&yuyv, &mut bytes);
        self.frame = Some(Frame {
            view_id: Id::from_static(crate::xfb::VIEW),
            bytes: std::sync::Arc::new(bytes),
        });
        Ok(())
    }

    /// Runs `f` on the running world.
    fn with_world<T>(
        &self,
        f: impl FnOnce(&mut DolphinWorld) -> Result<T, DolphinError>,
    ) -> Result<T, BackendError> {
        let mut guard = self.lock()?;
        let world = guard
            .as_mut()
            .ok_or_else(|| BackendError::Invalid("the environment is not initialized".into()))?;
        f(world).map_err(|e| backend_error(&e))
    }

    /// The full pad control of GameCube port `map.port` for a plan control.
    fn pad_control(map: &PortMap, control: &PortControl) -> PortControl {
        let pad = gamecube_pad();
        PortControl {
            port_id: port_id(map.port),
            buttons: pad
                .buttons
                .iter()
                .zip(&map.buttons)
                .map(|(id, at)| ButtonState {
                    id: id.clone(),
                    down: at
                        .and_then(|i| control.buttons.get(i))
                        .is_some_and(|b| b.down),
                })
                .collect(),
            axes: pad
                .axes
                .iter()
                .zip(&map.axes)
                .map(|(axis, at)| AxisValue {
                    id: axis.id.clone(),
                    value: at
                        .and_then(|i| control.axes.get(i))
                        .map_or(0.0, |a| a.value),
                })
                .collect(),
        }
    }
}

/// Dolphin and Xvfb as installed (each a file), or FS0811 naming what is missing.
fn installed(tools: &Tools) -> Result<(PathBuf, PathBuf), DolphinError> {
    let installed = |p: &Option<PathBuf>| p.clone().filter(|p| p.is_file());
    match (installed(&tools.dolphin), installed(&tools.xvfb)) {
        (Some(dolphin), Some(xvfb)) => Ok((dolphin, xvfb)),
        _ => {
            let missing: Vec<String> = [("dolphin-emu", &tools.dolphin), ("Xvfb", &tools.xvfb)]
                .into_iter()
                .filter_map(|(name, path)| match path {
                    None => Some(name.to_owned()),
                    Some(p) if !p.is_file() => Some(format!("{name} (no file at {})", p.display())),
                    Some(_) => None,
                })
                .collect();
            Err(DolphinError::ToolMissing {
                missing: missing.join(", "),
            })
        }
    }
}

/// Checks the plan's pinned release and step duration, and finds the profile of the content's
/// format (FS0812 for any of them the backend cannot run).
fn plan_profile(
    env: &PlanEnvironment,
    content_format: &str,
) -> Result<ContentProfile, DolphinError> {
    if env.identity != PINNED_RELEASE {
        return Err(refused(
            "version",
            format!(
                "the composition pins Dolphin {:?}; this backend is verified on {PINNED_RELEASE:?} ({PINNED_VERSION}) only",
                env.identity
            ),
        ));
    }
    if env.step_duration != field_duration() {
        return Err(refused(
            "stepDuration",
            format!(
                "a Dolphin step is one NTSC field ({} ns), not {}",
                field_duration(),
                env.step_duration
            ),
        ));
    }
    content_profile(content_format).ok_or_else(|| {
        refused(
            "content.format",
            format!(
                "format `{content_format}` is not one the backend knows: `{}` or a disc or program ({})",
                fieldcount::CONTENT_FORMAT,
                DISC_FORMATS.join(", ")
            ),
        )
    })
}

/// The environment's private directory, created in `scratch_parent`.
fn private_dir(scratch_parent: &Path) -> Result<tempfile::TempDir, DolphinError> {
    tempfile::Builder::new()
        .prefix("fsd")
        .tempdir_in(scratch_parent)
        .map_err(|e| {
            DolphinError::helper(format!(
                "cannot create a private directory in {}: {e}",
                scratch_parent.display()
            ))
        })
}

/// Links `content` into `scratch` as `content.<extension>` and returns the link.
///
/// Dolphin tells an ELF from a disc image by the file name's extension, which content stored by
/// digest lacks: it boots a link named for the format (never a copy).
fn link_content(
    scratch: &tempfile::TempDir,
    content: &Path,
    extension: &str,
) -> Result<PathBuf, DolphinError> {
    let link = scratch.path().join(format!("content.{extension}"));
    std::os::unix::fs::symlink(content, &link)
        .map_err(|e| DolphinError::helper(format!("cannot link {}: {e}", link.display())))?;
    Ok(link)
}

/// Checks the binary's version (FS0802) and the content's digest against the plan's (FS0803).
fn check_binary_and_content(
    config: &BackendConfig,
    scratch: &Path,
    content_digest: Digest,
) -> Result<(), DolphinError> {
    let found = crate::process::version_of(&config.binary, scratch)?;
    if found != config.version {
        return Err(DolphinError::VersionMismatch {
            expected: config.version.clone(),
            found,
        });
    }
    let digest = crate::process::file_digest(&config.content.path)?;
    if digest != content_digest {
        return Err(DolphinError::ContentMismatch {
            path: config.content.path.display().to_string(),
            reason: format!("its SHA-256 is {digest}, the plan pins {content_digest}"),
        });
    }
    Ok(())
}

/// The descriptor before the replay check: the plan's ports and digests, NTSC fields, the watch
/// list as inspection schema, the framebuffer's view if the content shows one,
/// `exact-checkpoint`, `unverified`.
fn plan_descriptor(
    env: &PlanEnvironment,
    content_digest: Digest,
    configuration_digest: Digest,
    config: &BackendConfig,
    xfb: Option<Xfb>,
) -> EnvironmentDescriptor {
    EnvironmentDescriptor {
        backend_digest: env.backend_digest,
        content_digest,
        configuration_digest,
        step_duration: field_duration(),
        ports: env
            .ports
            .iter()
            .map(|p| PortDescriptor {
                port_id: p.port_id.clone(),
                controls: p.controls.clone(),
            })
            .collect(),
        inspection_schema: inspection_schema(config),
        views: xfb.iter().map(Xfb::descriptor).collect(),
        audio: Vec::new(),
        recovery: Recovery::ExactCheckpoint,
        determinism: Determinism::Unverified,
    }
}

/// Maps the plan's ports onto GameCube ports and pad controls.
fn port_maps(env: &PlanEnvironment) -> Result<Vec<PortMap>, DolphinError> {
    let pad = gamecube_pad();
    let mut maps: Vec<PortMap> = Vec::new();
    for (i, port) in env.ports.iter().enumerate() {
        let number = (1..=4u8)
            .find(|n| port_id(*n) == port.port_id)
            .ok_or_else(|| {
                refused(
                    format!("ports[{i}].portId"),
                    format!(
                        "a Dolphin port is named after its GameCube port, p1 to p4, not `{}`",
                        port.port_id
                    ),
                )
            })?;
        if maps.iter().any(|m| m.port == number) {
            return Err(refused(
                format!("ports[{i}].portId"),
                format!("`{}` is declared twice", port.port_id),
            ));
        }
        for (j, button) in port.controls.buttons.iter().enumerate() {
            if !pad.buttons.contains(button) {
                return Err(refused(
                    format!("ports[{i}].controls.buttons[{j}]"),
                    format!(
                        "the GameCube pad has no button `{button}` (it has {})",
                        pad.buttons
                            .iter()
                            .map(Id::as_str)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        }
        for (j, axis) in port.controls.axes.iter().enumerate() {
            match pad.axes.iter().find(|a| a.id == axis.id) {
                Some(known) if known.range == axis.range => {}
                Some(known) => {
                    return Err(refused(
                        format!("ports[{i}].controls.axes[{j}].range"),
                        format!(
                            "the pad's axis `{}` is {:?}, not {:?}",
                            axis.id, known.range, axis.range
                        ),
                    ));
                }
                None => {
                    return Err(refused(
                        format!("ports[{i}].controls.axes[{j}]"),
                        format!(
                            "the GameCube pad has no axis `{}` (it has {})",
                            axis.id,
                            pad.axes
                                .iter()
                                .map(|a| a.id.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    ));
                }
            }
        }
        maps.push(PortMap {
            port: number,
            buttons: pad
                .buttons
                .iter()
                .map(|b| port.controls.buttons.iter().position(|x| x == b))
                .collect(),
            axes: pad
                .axes
                .iter()
                .map(|a| port.controls.axes.iter().position(|x| x.id == a.id))
                .collect(),
        });
    }
    if maps.is_empty() {
        return Err(refused("ports", "a Dolphin environment has 1 to 4 ports"));
    }
    Ok(maps)
}

impl EnvironmentBackend for DolphinEnvironment {
    fn descriptor(&self) -> &EnvironmentDescriptor {
        &self.descriptor
    }

    fn initialize(&mut self, _setup: &EnvironmentSetup) -> Result<(), BackendError> {
        self.staged = None;
        self.start_world()?;
        if !self.replay_checked {
            let verified = self.with_world(|w| w.verify_replay(REPLAY_STEPS))?;
            self.replay_checked = true;
            self.descriptor.determinism =
                if verified && self.repeatable && self.config.version == PINNED_VERSION {
                    Determinism::FixedBuild
                } else {
                    Determinism::Unverified
                };
        }
        self.refresh_view()
    }

    fn advance(&mut self, controls: &[PortControl]) -> Result<(), BackendError> {
        if controls.len() != self.ports.len() {
            return Err(BackendError::Invalid(format!(
                "one control per port ({}), found {}",
                self.ports.len(),
                controls.len()
            )));
        }
        let batch: Vec<PortControl> = self
            .order
            .iter()
            .map(|i| Self::pad_control(&self.ports[*i], &controls[*i]))
            .collect();
        self.with_world(|w| w.advance(&batch).map(|_| ()))?;
        self.steps += 1;
        self.refresh_view()
    }

    fn frames(&self) -> Vec<Frame> {
        self.frame.iter().cloned().collect()
    }

    fn inspection(&self) -> Result<TypedValue, BackendError> {
        let config = &self.config;
        self.with_world(|w| w.observation().map(|o| o.inspection(config)))
    }

    fn inspection_artifacts(&mut self) -> Vec<InspectionArtifact> {
        if self.memory.is_empty() {
            return Vec::new();
        }
        let memory = &self.memory;
        // A world that cannot be observed publishes no memory; a task that reads it then
        // fails the step, naming the missing artifact.
        let Ok(bytes) = self.with_world(|w| w.observation().map(|o| memory.artifact(&o.values)))
        else {
            return Vec::new();
        };
        vec![InspectionArtifact {
            name: Id::from_static(flysim_types::memory::MEMORY_ARTIFACT),
            bytes: std::sync::Arc::new(bytes),
        }]
    }

    fn engine_frame(&self) -> Option<String> {
        self.with_world(|w| w.observation().map(|o| o.fields.to_string()))
            .ok()
    }

    fn work(&self) -> u64 {
        self.steps
    }

    fn capture(&self) -> Result<Vec<u8>, BackendError> {
        self.with_world(|w| w.capture().map(|c| c.to_bytes()))
    }

    fn stage_restore(&mut self, payload: &[u8]) -> Result<(), BackendError> {
        let checkpoint = Checkpoint::from_bytes(payload).map_err(|e| backend_error(&e))?;
        checkpoint
            .check_for(&self.config)
            .map_err(|e| backend_error(&e))?;
        self.staged = Some(checkpoint);
        Ok(())
    }

    fn activate_restore(&mut self) -> Result<(), BackendError> {
        let checkpoint = self
            .staged
            .take()
            .ok_or_else(|| BackendError::Invalid("no staged state to activate".into()))?;
        if self.lock()?.is_none() {
            self.start_world()?;
        }
        self.with_world(|w| w.restore(&checkpoint).map(|_| ()))?;
        self.refresh_view()
    }
}
