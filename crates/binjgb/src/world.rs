//! The Game Boy as a session world: [`GameBoyWorld`] implements the worker's
//! [`EnvironmentBackend`] over [`Emulator`].
//!
//! - one port (the DMG has one joypad) whose buttons are named `up`, `down`, `left`, `right`,
//!   `a`, `b`, `start`, `select` in any order the composition declares;
//! - one view, `lcd`: 160×144 RGBA8, stride 640, square pixels, no delay;
//! - a step is exactly one frame (70224 cycles, `8572265625/512` ns);
//! - Initialize powers on and runs one declared setup frame with no button (scaffold, not a
//!   fly's action), then stops at boundary 0;
//! - the inspection value (`gameboy-inspection` v2) carries the ROM digest and the frame
//!   counter; the whole 64 KiB memory image travels beside it as the `memory` inspection
//!   artifact (one span from address 0 in the component API's encoding,
//!   `flysim_component::memory`), which is what tasks read a game's state from. Neither read
//!   changes the emulator. The image's buffers are
//!   reused once no artifact holds them, and only its live regions (about 16 KiB) are rewritten
//!   while the ROM banks mapped stay the same ([`Emulator::refresh_memory_image`]).
//! - capture/restore export and import the core's state with the frame on screen, so the world
//!   declares `exact-checkpoint`.

use std::sync::Arc;

use flysim_component::backend::{
    BackendError, EnvironmentBackend, EnvironmentSetup, Frame, InspectionArtifact,
};
use flysim_component::memory::{SPAN_HEADER, encode_span};
use flysim_component::schemas::schema_ref;
use flysim_types::plan::PlanEnvironment;
use flysim_types::workers::{
    Determinism, EnvironmentDescriptor, PixelAspect, PortControl, PortDescriptor, Recovery,
    ViewDescriptor, ViewFormat,
};
use flysim_types::{Digest, Id, RationalNs, TypedValue, U64};
use serde_json::Value;

use crate::{Buttons, Emulator, FRAME_NS, HEIGHT, ImageMap, MEMORY_IMAGE_BYTES, SavedState, WIDTH};

/// The one view.
pub const VIEW: &str = "lcd";
/// The name of the memory-image inspection artifact.
pub const MEMORY: &str = "memory";
/// The inspection schema of a Game Boy world (its digest is computed once).
#[must_use]
pub fn inspection_schema() -> flysim_types::SchemaRef {
    schema().clone()
}

/// The inspection schema, borrowed.
fn schema() -> &'static flysim_types::SchemaRef {
    static SCHEMA: std::sync::OnceLock<flysim_types::SchemaRef> = std::sync::OnceLock::new();
    SCHEMA.get_or_init(|| {
        schema_ref(
            "gameboy-inspection",
            2,
            &[("romDigest", "Digest"), ("frame", "U64")],
        )
    })
}

/// A Game Boy running one ROM, as a session world.
#[derive(Debug)]
pub struct GameBoyWorld {
    descriptor: EnvironmentDescriptor,
    rom: Vec<u8>,
    /// The ROM digest as the inspection writes it (the same every step).
    rom_hex: String,
    emulator: Emulator,
    /// For each port button, in descriptor order, its bit in [`Buttons`].
    bits: Vec<u8>,
    staged: Option<SavedState>,
    /// The frame on screen as the last step published it, or the archived frame of a restored
    /// boundary (the core redraws only on its next frame). An unchanged screen is published as
    /// the same buffer, never copied again ([`GameBoyWorld::refresh_screen`]).
    screen: Arc<Vec<u8>>,
    /// Screens shown before, oldest first: those still held elsewhere, and at most
    /// [`SCREEN_BUFFERS`] nobody holds any more, into which a new picture is drawn by rewriting
    /// only the rows it changes.
    shown: Vec<Arc<Vec<u8>>>,
    /// Screen buffers allocated so far.
    screens_made: u64,
    /// Frames since power-on (the setup frame included); part of the captured state.
    frame: u64,
    /// The frame counter of a staged restore.
    staged_frame: u64,
    /// The memory-image buffers, each shared with the artifacts made from it and refilled in
    /// place once none of them is left (a boundary's image lives until the next transition is
    /// evaluated, so a few buffers take turns), with what its unchanging regions hold.
    images: Vec<(Arc<Vec<u8>>, ImageMap)>,
    /// Memory-image buffers allocated so far.
    images_made: u64,
}

/// Memory-image buffers a world keeps: enough for the images a session holds at once (the
/// boundary's, the previous one until its transition is evaluated, one in a trace row).
const IMAGE_BUFFERS: usize = 4;

/// Earlier screens a world keeps for reuse once nobody else holds them (while held, by the
/// session, the digest thread or a reader, they are kept anyway and cost nothing more): as many
/// as a session's backlog holds at its longest, so that after a backlog is let go at once the
/// next one finds its buffers. A session whose digest thread falls behind (a busy machine, or
/// valgrind, which runs one thread at a time) holds each changed picture of up to 64 steps
/// until it is hashed. Keeping eight, the last burst's other buffers were freed and made again,
/// each with a whole copy of the screen: under callgrind a quarter of the steps (98 of 400)
/// copied a whole screen, with 64 one in sixteen (25 of 400). At most 64 × 90 KiB (5.6 MiB),
/// the memory the backlog took anyway.
const SCREEN_BUFFERS: usize = 64;

/// An emulator that keeps no audio: the world declares no audio stream, so the core's sound
/// would only pile up (about 1.6 KB a frame) for nobody.
fn silent(rom: &[u8]) -> Result<Emulator, crate::BinjgbError> {
    let mut emulator = Emulator::new(rom)?;
    emulator.set_audio_limit(0);
    Ok(emulator)
}

fn invalid(message: impl Into<String>) -> BackendError {
    BackendError::Invalid(message.into())
}

/// A state the core refused (`INCOMPATIBLE_STATE`), its message ending in its code.
fn incompatible_state(e: &crate::BinjgbError) -> BackendError {
    let code = miette::Diagnostic::code(e).map(|c| c.to_string());
    BackendError::Incompatible(match code {
        Some(code) => format!("{e} ({code})"),
        None => e.to_string(),
    })
}

impl GameBoyWorld {
    /// The world for a plan's environment, running `rom` (whose SHA-256 the plan pins).
    ///
    /// # Errors
    ///
    /// [`BackendError::Invalid`] for a plan this world cannot run (not one port, an unknown
    /// button, a step other than one frame, a ROM the core refuses);
    /// [`BackendError::Refused`] (`FS0601`) when this build has no binjgb core.
    pub fn new(
        env: &PlanEnvironment,
        configuration_digest: Digest,
        rom: Vec<u8>,
    ) -> Result<Self, BackendError> {
        let emulator = silent(&rom).map_err(|e| match e {
            absent @ crate::BinjgbError::Absent { .. } => BackendError::refused(absent),
            other => invalid(other.to_string()),
        })?;
        let [port] = env.ports.as_slice() else {
            return Err(invalid(format!(
                "a Game Boy has one joypad port; the plan declares {}",
                env.ports.len()
            )));
        };
        let bits = port
            .controls
            .buttons
            .iter()
            .map(|b| {
                Buttons::NAMES
                    .iter()
                    .position(|n| *n == b.as_str())
                    .and_then(|i| u8::try_from(i).ok())
                    .ok_or_else(|| invalid(format!("`{b}` is not a Game Boy button")))
            })
            .collect::<Result<Vec<u8>, _>>()?;
        let frame = RationalNs::new(FRAME_NS.0, FRAME_NS.1).map_err(|e| invalid(e.to_string()))?;
        if env.step_duration != frame {
            return Err(invalid(format!(
                "a Game Boy step is one frame ({frame} ns), not {}",
                env.step_duration
            )));
        }
        let pixels = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let descriptor = EnvironmentDescriptor {
            backend_digest: env.backend_digest,
            content_digest: emulator.rom_digest(),
            configuration_digest,
            step_duration: frame,
            ports: vec![PortDescriptor {
                port_id: port.port_id.clone(),
                controls: port.controls.clone(),
            }],
            inspection_schema: inspection_schema(),
            views: vec![ViewDescriptor {
                view_id: Id::parse(VIEW).map_err(|e| invalid(e.to_string()))?,
                width: pixels(WIDTH),
                height: pixels(HEIGHT),
                format: ViewFormat::Rgba8,
                row_stride: pixels(WIDTH * 4),
                pixel_aspect: PixelAspect {
                    numerator: 1,
                    denominator: 1,
                },
                observation_delay_steps: 0,
            }],
            audio: Vec::new(),
            recovery: Recovery::ExactCheckpoint,
            determinism: Determinism::FixedBuild,
        };
        Ok(Self {
            descriptor,
            rom_hex: emulator.rom_digest().hex(),
            rom,
            emulator,
            bits,
            staged: None,
            screen: Arc::new(Vec::new()),
            shown: Vec::new(),
            screens_made: 0,
            frame: 0,
            staged_frame: 0,
            images: Vec::new(),
            images_made: 0,
        })
    }

    /// The emulator (read-only), for tests and diagnostics.
    #[must_use]
    pub fn emulator(&self) -> &Emulator {
        &self.emulator
    }

    /// The frame counter in decimal, as the inspection and the engine frame carry it.
    fn frame_text(&self) -> String {
        let mut text = String::with_capacity(20);
        U64(self.frame).push_to(&mut text);
        text
    }

    /// How many memory-image buffers the world has allocated: a few while images are held,
    /// then none, as released buffers are refilled.
    #[must_use]
    pub fn image_buffers_made(&self) -> u64 {
        self.images_made
    }

    /// How many screen buffers the world has allocated: a few while screens are held, then
    /// none, as released buffers are redrawn.
    #[must_use]
    pub fn screen_buffers_made(&self) -> u64 {
        self.screens_made
    }

    fn power_on(&mut self) -> Result<(), BackendError> {
        self.emulator = silent(&self.rom).map_err(|e| BackendError::Fault(e.to_string()))?;
        Ok(())
    }
}

impl GameBoyWorld {
    /// After a frame: the screen stays the same buffer when the core drew the same picture (a
    /// game redraws only what moves; most frames of a slow game are the one before). Otherwise
    /// the new picture goes into a buffer nothing else holds: the screen's own, or the most
    /// recently shown free one, of which only the rows that differ are rewritten; a new buffer
    /// only while every kept one is held.
    fn refresh_screen(&mut self) {
        if self.emulator.framebuffer_equals(&self.screen) {
            return;
        }
        if let Some(buffer) = Arc::get_mut(&mut self.screen) {
            self.emulator.framebuffer_update(buffer);
            return;
        }
        let free = self
            .shown
            .iter_mut()
            .rposition(|buffer| Arc::get_mut(buffer).is_some());
        let mut next = match free {
            Some(i) => self.shown.remove(i),
            None => {
                self.screens_made += 1;
                Arc::new(Vec::new())
            }
        };
        // Nobody else holds `next`: a kept buffer is redrawn where it differs, a new (empty) one
        // is written whole.
        if let Some(bytes) = Arc::get_mut(&mut next) {
            self.emulator.framebuffer_update(bytes);
        }
        let previous = std::mem::replace(&mut self.screen, next);
        self.keep_shown(previous);
    }

    /// Keeps a screen that is no longer shown; of the kept screens nobody else holds, the
    /// newest [`SCREEN_BUFFERS`] stay and older ones go.
    fn keep_shown(&mut self, screen: Arc<Vec<u8>>) {
        if screen.len() != crate::FRAME_BYTES {
            return;
        }
        self.shown.push(screen);
        let mut spare = SCREEN_BUFFERS;
        for i in (0..self.shown.len()).rev() {
            if Arc::get_mut(&mut self.shown[i]).is_some() {
                if spare == 0 {
                    self.shown.remove(i);
                } else {
                    spare -= 1;
                }
            }
        }
    }
}

impl EnvironmentBackend for GameBoyWorld {
    fn descriptor(&self) -> &EnvironmentDescriptor {
        &self.descriptor
    }

    fn initialize(&mut self, _setup: &EnvironmentSetup) -> Result<(), BackendError> {
        self.power_on()?;
        // The declared setup scaffold: one frame, no button.
        self.emulator.set_buttons(Buttons::default());
        self.emulator
            .run_frame()
            .map_err(|e| BackendError::Fault(e.to_string()))?;
        self.refresh_screen();
        self.frame = 1;
        Ok(())
    }

    fn advance(&mut self, controls: &[PortControl]) -> Result<(), BackendError> {
        let [control] = controls else {
            return Err(invalid("one control for the one joypad port"));
        };
        let mut mask = 0u8;
        for (button, bit) in control.buttons.iter().zip(&self.bits) {
            if button.down {
                mask |= 1 << bit;
            }
        }
        self.emulator.set_buttons(Buttons(mask));
        self.emulator
            .run_frame()
            .map_err(|e| BackendError::Fault(e.to_string()))?;
        self.refresh_screen();
        self.frame += 1;
        Ok(())
    }

    fn frames(&self) -> Vec<Frame> {
        vec![Frame {
            view_id: self.descriptor.views[0].view_id.clone(),
            bytes: Arc::clone(&self.screen),
        }]
    }

    fn inspection(&self) -> Result<TypedValue, BackendError> {
        let mut value = serde_json::Map::new();
        value.insert("romDigest".into(), Value::String(self.rom_hex.clone()));
        value.insert("frame".into(), Value::String(self.frame_text()));
        Ok(TypedValue {
            schema: inspection_schema(),
            value,
        })
    }

    fn inspection_artifacts(&mut self) -> Vec<InspectionArtifact> {
        let Ok(name) = Id::parse(MEMORY) else {
            return Vec::new();
        };
        // A buffer no artifact holds any more is refilled where it is; only while every kept
        // buffer is still held is a new one made (the oldest is then let go).
        let free = self
            .images
            .iter_mut()
            .position(|(bytes, _)| Arc::get_mut(bytes).is_some());
        let slot = free.unwrap_or_else(|| {
            if self.images.len() == IMAGE_BUFFERS {
                self.images.remove(0);
            }
            // One span, the whole address space from 0, in the component API's encoding: the
            // header is written once, the image after it refilled in place.
            let mut fresh = Vec::with_capacity(SPAN_HEADER + MEMORY_IMAGE_BYTES);
            encode_span(&mut fresh, 0, &[0; MEMORY_IMAGE_BYTES]);
            let fresh = Arc::new(fresh);
            self.images_made += 1;
            self.images.push((fresh, ImageMap::default()));
            self.images.len() - 1
        });
        let (bytes, map) = &mut self.images[slot];
        // Unshared here (free, or just made): `make_mut` copies nothing.
        self.emulator
            .refresh_memory_image(&mut Arc::make_mut(bytes)[SPAN_HEADER..], map);
        vec![InspectionArtifact {
            name,
            bytes: Arc::clone(bytes),
        }]
    }

    fn engine_frame(&self) -> Option<String> {
        Some(self.frame_text())
    }

    fn work(&self) -> u64 {
        self.emulator.frames()
    }

    fn capture(&self) -> Result<Vec<u8>, BackendError> {
        let mut saved = self.emulator.export_state();
        // What is on screen: after a restore, the archived frame until the core draws again.
        saved.framebuffer.clone_from(&self.screen);
        // Layout: frame counter u64 LE, state length u64 LE, state, 160x144 RGBA8 frame.
        let mut bytes = Vec::with_capacity(16 + saved.state.len() + saved.framebuffer.len());
        bytes.extend_from_slice(&self.frame.to_le_bytes());
        bytes.extend_from_slice(&(saved.state.len() as u64).to_le_bytes());
        bytes.extend_from_slice(&saved.state);
        bytes.extend_from_slice(&saved.framebuffer);
        Ok(bytes)
    }

    fn stage_restore(&mut self, payload: &[u8]) -> Result<(), BackendError> {
        let incompatible = |why: &str| {
            BackendError::Incompatible(format!("not a Game Boy capture of this build: {why}"))
        };
        let word = |at: usize| {
            payload
                .get(at..at + 8)
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
                .map(u64::from_le_bytes)
        };
        let frame = word(0).ok_or_else(|| incompatible("too short"))?;
        let len = word(8).ok_or_else(|| incompatible("too short"))?;
        let len = usize::try_from(len).map_err(|_| incompatible("bad length"))?;
        let state = payload
            .get(16..16usize.saturating_add(len))
            .ok_or_else(|| incompatible("truncated state"))?
            .to_vec();
        let framebuffer = payload.get(16 + len..).unwrap_or_default().to_vec();
        if framebuffer.len() != crate::FRAME_BYTES {
            return Err(incompatible("the archived frame is not 160x144 RGBA8"));
        }
        // Validate on a scratch emulator so nothing live changes before activation.
        let mut scratch = silent(&self.rom).map_err(|e| BackendError::Fault(e.to_string()))?;
        let saved = SavedState { state, framebuffer };
        scratch
            .import_state(&saved)
            .map_err(|e| incompatible_state(&e))?;
        self.staged = Some(saved);
        self.staged_frame = frame;
        Ok(())
    }

    fn activate_restore(&mut self) -> Result<(), BackendError> {
        let saved = self
            .staged
            .take()
            .ok_or_else(|| invalid("no staged state to activate"))?;
        self.emulator
            .import_state(&saved)
            .map_err(|e| incompatible_state(&e))?;
        let restored = std::mem::replace(&mut self.screen, Arc::new(saved.framebuffer));
        self.keep_shown(restored);
        self.frame = self.staged_frame;
        Ok(())
    }
}
