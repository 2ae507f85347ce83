//! The Game Boy backend: binjgb's C core, compiled from a source tree pinned by SHA-256, behind a
//! safe wrapper.
//!
//! [`Emulator`] loads ROM bytes, runs exactly one frame (70224 CPU cycles) per call, takes the
//! joypad as the eight buttons of [`Buttons`], and reads out the 160×144 RGBA8 framebuffer, a
//! 64 KiB memory image (without mutating the emulator), the audio produced, and its state (with
//! the framebuffer on screen) for exact checkpoints.
//!
//! Whether the core is compiled in is decided at build time (see `build.rs`): [`availability`]
//! says which, and why not. Without it every constructor returns [`BinjgbError::Absent`], so
//! nothing fails to link and callers need no `#[cfg]`.
//!
//! **Invariant:** this crate knows the Game Boy, binjgb and the contract scalars; it knows
//! nothing of neurons, tasks, sessions or the bus. It holds no global state: every emulator is
//! an independent value that can move between threads.

use flysim_types::Digest;
use miette::Diagnostic;
use thiserror::Error;

#[cfg(binjgb)]
mod emulator;
#[cfg(not(binjgb))]
#[path = "emulator_disabled.rs"]
mod emulator;

pub use emulator::{Emulator, plain_c_frames};

#[cfg(binjgb)]
mod state_check;

pub mod arena_task;
pub mod spec;
pub mod world;

pub use spec::SPEC;

/// The binjgb revision this crate pins.
pub const REVISION: &str = env!("FLYSIM_BINJGB_REVISION");
/// Screen width in pixels.
pub const WIDTH: usize = 160;
/// Screen height in pixels.
pub const HEIGHT: usize = 144;
/// Bytes of one RGBA8 frame (`WIDTH * HEIGHT * 4`).
pub const FRAME_BYTES: usize = WIDTH * HEIGHT * 4;
/// Bytes of the memory image: the CPU's whole 16-bit address space.
pub const MEMORY_IMAGE_BYTES: usize = 0x1_0000;
/// CPU cycles in one frame.
pub const FRAME_CYCLES: u64 = 70_224;
/// The frame duration in nanoseconds, as a reduced fraction: 70224 cycles at 4194304 Hz.
pub const FRAME_NS: (u64, u64) = (8_572_265_625, 512);
/// The audio sample rate the wrapper asks of the core (unsigned 8-bit stereo).
pub const AUDIO_SAMPLE_RATE: u32 = 48_000;
/// Untaken audio an [`Emulator`] keeps by default: 1 MiB, about 10.9 s at
/// [`AUDIO_SAMPLE_RATE`]. Beyond it new audio is dropped and counted, so a user that never
/// takes audio holds bounded memory.
pub const AUDIO_BUFFER_LIMIT: usize = 1 << 20;

/// What the unchanging regions of a memory image (the ROM banks, the regions that read as $FF,
/// an absent external RAM) were last written for: the ROM and the memory mapping.
/// [`Emulator::refresh_memory_image`] rewrites only the live regions of an image whose map
/// still holds. The default map holds for nothing, so the first refresh writes everything.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImageMap {
    /// The mapping, as the shim records it.
    pub(crate) raw: RawImageMap,
    /// The ROM whose banks the image holds.
    pub(crate) rom: Option<flysim_types::Digest>,
}

/// The shim's `FlyGbImageMap` (`csrc/core.c`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RawImageMap {
    valid: u32,
    rom_base: [u32; 2],
    ext_mode: u32,
}

/// Whether the core is compiled into this build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Availability {
    /// Built from the pinned revision.
    Available {
        /// The revision.
        revision: &'static str,
    },
    /// Not built; the reason says how to build it.
    Absent {
        /// Why, and what to do.
        reason: &'static str,
    },
}

/// Whether this build has the Game Boy backend.
#[must_use]
pub fn availability() -> Availability {
    let reason = env!("FLYSIM_BINJGB_ABSENT");
    if reason.is_empty() {
        Availability::Available { revision: REVISION }
    } else {
        Availability::Absent { reason }
    }
}

/// The smallest ROM, and the unit ROM sizes come in.
pub const ROM_UNIT: usize = 0x8000;

/// Checks what can be checked of ROM bytes without the core: a non-zero multiple of 32 KiB.
///
/// # Errors
///
/// [`BinjgbError::RomRejected`].
pub fn check_rom_size(rom: &[u8]) -> Result<(), BinjgbError> {
    if rom.is_empty() || !rom.len().is_multiple_of(ROM_UNIT) {
        return Err(BinjgbError::RomRejected {
            reason: format!("{} bytes is not a non-zero multiple of 32768", rom.len()),
        });
    }
    Ok(())
}

/// The title in a cartridge header ($0134-$0143, up to the first NUL; non-ASCII shown as `?`).
#[must_use]
pub fn header_title(rom: &[u8]) -> String {
    rom.get(0x134..0x144)
        .unwrap_or_default()
        .iter()
        .take_while(|b| **b != 0)
        .map(|b| {
            if b.is_ascii_graphic() || *b == b' ' {
                char::from(*b)
            } else {
                '?'
            }
        })
        .collect()
}

/// The eight DMG buttons, bit `i` = button `i` in the order up, down, left, right, a, b, start,
/// select (the contract's `GAMEBOY_BUTTON_BITS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Buttons(pub u8);

impl Buttons {
    /// Button names in bit order.
    pub const NAMES: [&'static str; 8] =
        ["up", "down", "left", "right", "a", "b", "start", "select"];

    /// Whether the named button is down (`false` for an unknown name).
    #[must_use]
    pub fn is_down(self, name: &str) -> bool {
        Self::NAMES
            .iter()
            .position(|n| *n == name)
            .is_some_and(|i| self.0 >> i & 1 == 1)
    }

    /// These buttons with `name` down.
    #[must_use]
    pub fn with(self, name: &str) -> Self {
        Self::NAMES
            .iter()
            .position(|n| *n == name)
            .map_or(self, |i| Self(self.0 | 1 << i))
    }
}

/// An exported emulator: the core's state bytes and the frame on screen when it was taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedState {
    /// binjgb's state, `state_size()` bytes.
    pub state: Vec<u8>,
    /// The framebuffer on screen, [`FRAME_BYTES`] bytes.
    pub framebuffer: Vec<u8>,
}

impl SavedState {
    /// SHA-256 of the state bytes followed by the framebuffer.
    #[must_use]
    pub fn digest(&self) -> Digest {
        let mut bytes = Vec::with_capacity(self.state.len() + self.framebuffer.len());
        bytes.extend_from_slice(&self.state);
        bytes.extend_from_slice(&self.framebuffer);
        flysim_types::digest::sha256(&bytes)
    }
}

/// Where the fields the check covers sit in a state's bytes, for tests and tools that craft
/// states (byte offsets into [`SavedState::state`]; the fields are native-endian).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StateOffsets {
    /// The cartridge-info index (`u8`): which cartridge of a multicart ROM is mapped.
    pub cart_info_index: u64,
    /// The ROM bank bases of the two 16 KiB windows (`u32` each), byte offsets into the ROM.
    pub rom_base: [u64; 2],
    /// The external-RAM bank base (`u32`), a byte offset into the cartridge RAM.
    pub ext_ram_base: u64,
    /// The video RAM bank offset (`u16`).
    pub vram_offset: u64,
    /// The work RAM switchable bank offset (`u16`).
    pub wram_offset: u64,
    /// Whether the state is a Game Boy Color's (a 32-bit boolean).
    pub is_cgb: u64,
    /// The timer's clock select (a 32-bit enumeration of four values).
    pub timer_clock_select: u64,
}

/// Why the backend refused.
#[derive(Debug, Clone, PartialEq, Eq, Error, Diagnostic)]
pub enum BinjgbError {
    /// The build has no binjgb core.
    #[error("the Game Boy backend (binjgb) is not in this build: {reason}")]
    #[diagnostic(
        code("FS0601"),
        help(
            "rebuild with BINJGB_SRC pointing at the pinned binjgb source (`nix develop` sets it)"
        )
    )]
    Absent {
        /// Why, and how to build it.
        reason: String,
    },
    /// The core refused the ROM bytes.
    #[error("binjgb refused the ROM: {reason}")]
    #[diagnostic(
        code("FS0602"),
        help(
            "a Game Boy ROM is a non-empty multiple of 32 KiB with a cartridge header at $0100-$014f"
        )
    )]
    RomRejected {
        /// Why.
        reason: String,
    },
    /// A saved state that this build cannot install.
    #[error("the saved state cannot be installed: {reason}")]
    #[diagnostic(
        code("FS0603"),
        help("states are only exchangeable between builds of the same binjgb revision and target")
    )]
    StateRejected {
        /// Why.
        reason: String,
    },
    /// A saved state whose ROM bank base lies outside the cartridge.
    #[error(
        "the saved state maps ROM window {window} to byte {base:#x}, outside the cartridge's {rom_bytes} bytes (or not on a bank boundary)"
    )]
    #[diagnostic(
        code("FS0604"),
        help(
            "the state was damaged or crafted, or taken from a larger ROM; restore a checkpoint this build wrote for the same ROM"
        )
    )]
    RomBankOutOfRange {
        /// The window: 0 for $0000-$3FFF, 1 for $4000-$7FFF.
        window: u32,
        /// The base in the state.
        base: u64,
        /// The cartridge's ROM size.
        rom_bytes: u64,
    },
    /// A saved state whose cartridge-info index names no cartridge the core can map.
    #[error(
        "the saved state selects cartridge {index}, but this ROM has {cartridges} the core can map"
    )]
    #[diagnostic(
        code("FS0605"),
        help(
            "the state was damaged or crafted, or taken from another ROM; restore a checkpoint this build wrote for the same ROM"
        )
    )]
    CartridgeIndexOutOfRange {
        /// The index in the state.
        index: u64,
        /// Cartridges the core found in the ROM.
        cartridges: u64,
    },
    /// A saved state whose external-RAM bank base lies outside the cartridge's RAM.
    #[error(
        "the saved state maps external RAM to byte {base:#x}, outside the {limit} bytes it may address (or not on an 8 KiB bank boundary)"
    )]
    #[diagnostic(
        code("FS0606"),
        help(
            "the state was damaged or crafted, or taken from a cartridge with more RAM; restore a checkpoint this build wrote for the same ROM"
        )
    )]
    ExtRamBankOutOfRange {
        /// The base in the state.
        base: u64,
        /// The bytes the base may address: the cartridge's RAM, or the core's RAM array.
        limit: u64,
    },
    /// A saved state whose video or work RAM bank offset lies outside its RAM.
    #[error("the saved state's {ram} bank offset {offset:#x} is outside its RAM")]
    #[diagnostic(
        code("FS0607"),
        help(
            "the state was damaged or crafted; restore a checkpoint this build wrote for the same ROM"
        )
    )]
    RamBankOutOfRange {
        /// Which RAM: video or work.
        ram: &'static str,
        /// The offset in the state.
        offset: u64,
    },
    /// A saved state with an enumeration or counter the core indexes a table with out of
    /// range.
    #[error("the saved state's {field} is {value}, out of range (the bound is {limit})")]
    #[diagnostic(
        code("FS0608"),
        help(
            "the state was damaged or crafted; restore a checkpoint this build wrote for the same ROM"
        )
    )]
    StateFieldOutOfRange {
        /// The field.
        field: &'static str,
        /// Its value in the state.
        value: u64,
        /// The bound it must stay below.
        limit: u64,
    },
    /// A saved state of another hardware model than the DMG this backend runs.
    #[error(
        "the saved state is {}a {model}'s, unlike this emulator",
        if *state { "" } else { "not " }
    )]
    #[diagnostic(
        code("FS0609"),
        help(
            "the backend always runs the original Game Boy (DMG); restore a checkpoint this build wrote"
        )
    )]
    StateModelMismatch {
        /// The model flag that differs.
        model: &'static str,
        /// Whether the state has it.
        state: bool,
    },
}
