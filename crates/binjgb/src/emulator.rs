//! The emulator over the compiled binjgb core, through the shim in `csrc/shim.c`.

use std::ptr::NonNull;

use flysim_types::Digest;

use crate::{
    BinjgbError, Buttons, FRAME_BYTES, ImageMap, MEMORY_IMAGE_BYTES, RawImageMap, SavedState,
    StateOffsets, state_check::RawStateCheck,
};

mod ffi {
    #![expect(unsafe_code, reason = "the declarations of the C shim")]

    /// The shim's opaque emulator.
    #[repr(C)]
    pub(super) struct FlyGb {
        _private: [u8; 0],
    }

    unsafe extern "C" {
        pub(super) fn fly_gb_new(
            rom: *const u8,
            len: usize,
            audio_frequency: u32,
            audio_frames: u32,
        ) -> *mut FlyGb;
        pub(super) fn fly_gb_delete(gb: *mut FlyGb);
        pub(super) fn fly_gb_run_frame(gb: *mut FlyGb) -> i32;
        pub(super) fn fly_gb_set_buttons(gb: *mut FlyGb, mask: u8);
        pub(super) fn fly_gb_framebuffer(gb: *mut FlyGb, out: *mut u8);
        pub(super) fn fly_gb_framebuffer_equals(gb: *mut FlyGb, other: *const u8) -> i32;
        pub(super) fn fly_gb_framebuffer_update(gb: *mut FlyGb, out: *mut u8) -> i32;
        pub(super) fn fly_gb_read(gb: *mut FlyGb, addr: u16) -> u8;
        pub(super) fn fly_gb_memory_image(gb: *mut FlyGb, out: *mut u8);
        pub(super) fn fly_gb_memory_image_refresh(
            gb: *mut FlyGb,
            out: *mut u8,
            map: *mut super::RawImageMap,
        );
        pub(super) fn fly_gb_read_window(gb: *mut FlyGb, out: *mut u8, start: u16, len: u16);
        pub(super) fn fly_gb_audio_len(gb: *mut FlyGb) -> usize;
        pub(super) fn fly_gb_set_audio_limit(gb: *mut FlyGb, limit: usize);
        pub(super) fn fly_gb_audio_dropped(gb: *mut FlyGb) -> u64;
        pub(super) fn fly_gb_take_audio(gb: *mut FlyGb, out: *mut u8, cap: usize) -> usize;
        pub(super) fn fly_gb_state_size() -> usize;
        pub(super) fn fly_gb_save_state(gb: *mut FlyGb, out: *mut u8, len: usize) -> i32;
        pub(super) fn fly_gb_load_state(
            gb: *mut FlyGb,
            input: *const u8,
            len: usize,
            refusal: *mut super::RawStateCheck,
        ) -> i32;
        pub(super) fn fly_gb_state_offsets(out: *mut super::StateOffsets);
        pub(super) fn fly_gb_plain_frames(rom: *const u8, len: usize, frames: u32) -> u32;
    }
}

/// Audio frames the core buffers before the shim drains them.
const AUDIO_FRAMES: u32 = 4096;

/// The address ranges of the memory image that are read from the emulator (contracts §11.4).
///
/// VRAM ($8000-$9FFF), OAM ($FE00-$FE9F) and I/O ($FF00-$FF7F) read as $FF: reading them through
/// the core runs its lazy PPU/APU catch-up, which would change the emulator's state.
const IMAGE_RANGES: [(u16, u16); 4] = [
    (0x0000, 0x7fff),
    (0xa000, 0xfdff),
    (0xfea0, 0xfeff),
    (0xff80, 0xffff),
];

/// A Game Boy running a ROM under binjgb. Dropping it frees the core.
#[derive(Debug)]
pub struct Emulator {
    raw: NonNull<ffi::FlyGb>,
    rom_digest: Digest,
    frames: u64,
}

// SAFETY: the core keeps all of its state inside the allocation `raw` points to (binjgb has no
// mutable globals), and `Emulator` owns that allocation exclusively, so moving it to another
// thread moves everything it touches. It is not `Sync`: every call may mutate the core.
#[expect(unsafe_code, reason = "asserting Send for the owned C allocation")]
unsafe impl Send for Emulator {}

#[expect(
    unsafe_code,
    reason = "calls into the C shim; each call documents its contract"
)]
impl Emulator {
    /// Powers on a DMG with `rom` inserted (the bytes are copied).
    ///
    /// # Errors
    ///
    /// [`BinjgbError::RomRejected`] when the size is not a non-zero multiple of 32 KiB or the core
    /// refuses the cartridge.
    pub fn new(rom: &[u8]) -> Result<Self, BinjgbError> {
        crate::check_rom_size(rom)?;
        // SAFETY: `rom` is valid for `rom.len()` bytes; the shim copies it before returning.
        let raw = unsafe {
            ffi::fly_gb_new(
                rom.as_ptr(),
                rom.len(),
                crate::AUDIO_SAMPLE_RATE,
                AUDIO_FRAMES,
            )
        };
        let raw = NonNull::new(raw).ok_or_else(|| BinjgbError::RomRejected {
            reason: "the core did not recognise the cartridge header".to_owned(),
        })?;
        // SAFETY: `raw` is the live emulator just created.
        unsafe { ffi::fly_gb_set_audio_limit(raw.as_ptr(), crate::AUDIO_BUFFER_LIMIT) };
        Ok(Self {
            raw,
            rom_digest: flysim_types::digest::sha256(rom),
            frames: 0,
        })
    }

    /// Runs exactly one frame (70224 CPU cycles) with the buttons last set.
    ///
    /// # Errors
    ///
    /// Never in practice; a failed audio allocation is reported rather than ignored.
    pub fn run_frame(&mut self) -> Result<(), BinjgbError> {
        // SAFETY: `raw` is a live emulator owned by `self`.
        if unsafe { ffi::fly_gb_run_frame(self.raw.as_ptr()) } == 0 {
            return Err(BinjgbError::StateRejected {
                reason: "out of memory buffering audio".to_owned(),
            });
        }
        self.frames += 1;
        Ok(())
    }

    /// Sets the joypad for the following frames.
    pub fn set_buttons(&mut self, buttons: Buttons) {
        // SAFETY: `raw` is a live emulator owned by `self`.
        unsafe { ffi::fly_gb_set_buttons(self.raw.as_ptr(), buttons.0) }
    }

    /// The 160×144 frame on screen as RGBA8, top-left first ([`FRAME_BYTES`] bytes).
    #[must_use]
    pub fn framebuffer(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.framebuffer_into(&mut out);
        out
    }

    /// [`Emulator::framebuffer`] written into `out` (its allocation reused when it has room).
    pub fn framebuffer_into(&self, out: &mut Vec<u8>) {
        out.clear();
        out.reserve_exact(FRAME_BYTES);
        // SAFETY: `out` has room for FRAME_BYTES, and the shim writes every one of them (one
        // copy, or every pixel's four bytes) before the length covers them; the call only reads
        // the core. No zero-fill first: this runs on every step.
        unsafe {
            ffi::fly_gb_framebuffer(self.raw.as_ptr(), out.as_mut_ptr());
            out.set_len(FRAME_BYTES);
        }
    }

    /// Makes `out`, an earlier frame, the frame on screen by rewriting only the rows from the
    /// first that differs to the last that differs; returns how many rows that was (0: `out`
    /// already was the frame on screen). An `out` that is not a frame is written whole.
    pub fn framebuffer_update(&self, out: &mut Vec<u8>) -> usize {
        if out.len() != FRAME_BYTES {
            self.framebuffer_into(out);
            return crate::HEIGHT;
        }
        // SAFETY: `out` is FRAME_BYTES long, which is all the shim reads and writes of it; the
        // call only reads the core.
        let rows = unsafe { ffi::fly_gb_framebuffer_update(self.raw.as_ptr(), out.as_mut_ptr()) };
        usize::try_from(rows).unwrap_or(crate::HEIGHT)
    }

    /// Whether the frame on screen is `other` byte for byte, compared where the core keeps it
    /// (nothing is copied).
    #[must_use]
    pub fn framebuffer_equals(&self, other: &[u8]) -> bool {
        if other.len() != FRAME_BYTES {
            return false;
        }
        // SAFETY: `other` is FRAME_BYTES long, which is all the shim reads of it; the call only
        // reads the core.
        unsafe { ffi::fly_gb_framebuffer_equals(self.raw.as_ptr(), other.as_ptr()) != 0 }
    }

    /// The 64 KiB memory image as the CPU sees it, without mutating the emulator: ROM, cartridge
    /// RAM, WRAM, echo, $FEA0-$FEFF and HRAM/IE are read; VRAM, OAM and I/O read as $FF.
    #[must_use]
    pub fn memory_image(&self) -> Vec<u8> {
        let mut image = Vec::with_capacity(MEMORY_IMAGE_BYTES);
        // SAFETY: `image` has room for the 65536 bytes, and the shim writes every one of them
        // once before the length covers them: ROM $0000-$7FFF, VRAM $8000-$9FFF ($FF), external
        // RAM $A000-$BFFF (copied, read or $FF), work RAM and echo $C000-$FDFF, $FE00-$FEFF and
        // I/O $FF00-$FF7F ($FF), HRAM $FF80-$FFFE and IE $FFFF. The call only reads the core.
        unsafe {
            ffi::fly_gb_memory_image(self.raw.as_ptr(), image.as_mut_ptr());
            image.set_len(MEMORY_IMAGE_BYTES);
        }
        image
    }

    /// Brings `image` up to this boundary in place: afterwards it holds exactly what
    /// [`memory_image`](Self::memory_image) returns. `map` records what the image's unchanging
    /// regions were written for; while this emulator's ROM and memory mapping are still those,
    /// only the live regions (external RAM, work RAM and its echo, HRAM, IE: about 16 KiB) are
    /// rewritten, else the whole image. A buffer and its map travel together: pass
    /// [`ImageMap::default`] with a buffer it did not fill.
    ///
    /// # Panics
    ///
    /// When `image` is not [`MEMORY_IMAGE_BYTES`] long.
    pub fn refresh_memory_image(&self, image: &mut [u8], map: &mut ImageMap) {
        assert_eq!(image.len(), MEMORY_IMAGE_BYTES, "a memory image is 64 KiB");
        if map.rom != Some(self.rom_digest) {
            *map = ImageMap {
                raw: RawImageMap::default(),
                rom: Some(self.rom_digest),
            };
        }
        // SAFETY: `image` is valid for the 65536 bytes the shim may write; `map.raw` has the
        // shim's layout (`repr(C)`); the call only reads the core.
        unsafe {
            ffi::fly_gb_memory_image_refresh(
                self.raw.as_ptr(),
                image.as_mut_ptr(),
                &raw mut map.raw,
            );
        }
    }

    /// Reads `len` bytes from `start` as the CPU sees them, like [`memory_image`](Self::memory_image)
    /// but for one window of work RAM, external RAM or ROM only.
    ///
    /// # Panics
    ///
    /// When the window leaves $0000-$7FFF, $A000-$FDFF or $FF80-$FFFF (the ranges whose reads
    /// never run the core's catch-up).
    #[must_use]
    pub fn read_window(&self, start: u16, len: u16) -> Vec<u8> {
        let mut out = vec![0; usize::from(len)];
        self.read_window_into(start, &mut out);
        out
    }

    /// [`read_window`](Self::read_window) into `out`, from `start` for `out.len()` bytes: the
    /// world's per-step inspection reads its window onto the stack.
    ///
    /// # Panics
    ///
    /// As [`read_window`](Self::read_window), or when `out` is longer than 65536 bytes.
    pub fn read_window_into(&self, start: u16, out: &mut [u8]) {
        let len = u16::try_from(out.len()).unwrap_or(u16::MAX);
        let end = u32::from(start) + u32::from(len);
        assert!(
            out.len() == usize::from(len)
                && IMAGE_RANGES
                    .iter()
                    .any(|&(s, e)| start >= s && end <= u32::from(e) + 1),
            "window ${start:04X}+{} is not inside the memory image's read ranges",
            out.len()
        );
        // SAFETY: `out` is valid for `len` bytes, all of which the shim writes; the window lies
        // inside the image's read ranges (asserted above), whose reads only read the core.
        unsafe { ffi::fly_gb_read_window(self.raw.as_ptr(), out.as_mut_ptr(), start, len) }
    }

    /// Keeps at most `bytes` of untaken audio from now on ([`crate::AUDIO_BUFFER_LIMIT`] unless
    /// set); audio produced while that much waits is dropped and counted
    /// ([`audio_dropped`](Self::audio_dropped)). 0 keeps none, for a user that plays no sound.
    pub fn set_audio_limit(&mut self, bytes: usize) {
        // SAFETY: `raw` is a live emulator owned by `self`.
        unsafe { ffi::fly_gb_set_audio_limit(self.raw.as_ptr(), bytes) }
    }

    /// Bytes of audio dropped because the untaken audio had reached its limit.
    #[must_use]
    pub fn audio_dropped(&self) -> u64 {
        // SAFETY: `raw` is a live emulator owned by `self`; the call only reads a counter.
        unsafe { ffi::fly_gb_audio_dropped(self.raw.as_ptr()) }
    }

    /// Takes the audio produced since the last call (up to its limit,
    /// [`set_audio_limit`](Self::set_audio_limit)): unsigned 8-bit interleaved stereo at
    /// [`crate::AUDIO_SAMPLE_RATE`].
    pub fn take_audio(&mut self) -> Vec<u8> {
        // SAFETY: `raw` is live; `out` has room for `len` bytes, which the shim copies at most.
        unsafe {
            let len = ffi::fly_gb_audio_len(self.raw.as_ptr());
            let mut out = vec![0u8; len];
            let n = ffi::fly_gb_take_audio(self.raw.as_ptr(), out.as_mut_ptr(), len);
            out.truncate(n);
            out
        }
    }

    /// Exports the core's state together with the frame on screen.
    #[must_use]
    pub fn export_state(&self) -> SavedState {
        // SAFETY: `state` has exactly the size the core writes.
        let state = unsafe {
            let size = ffi::fly_gb_state_size();
            let mut state = vec![0u8; size];
            let ok = ffi::fly_gb_save_state(self.raw.as_ptr(), state.as_mut_ptr(), size);
            debug_assert_eq!(ok, 1, "the buffer has the core's own state size");
            state
        };
        SavedState {
            state,
            framebuffer: self.framebuffer(),
        }
    }

    /// Installs a state exported by [`export_state`](Self::export_state) from an emulator of the
    /// same ROM. The framebuffer is restored by the next frame; callers that need the archived
    /// frame keep it from the [`SavedState`].
    ///
    /// Before the core sees the bytes, every field it dereferences is checked against the
    /// cartridge this emulator runs (`csrc/state_check.c`): the cartridge-info index, the ROM
    /// and external-RAM bank bases, the RAM bank offsets, the enumerations that index tables
    /// and the hardware model. A crafted or damaged state is refused, not run.
    ///
    /// # Errors
    ///
    /// Nothing is changed on any error. [`BinjgbError::StateRejected`] when the size or header is
    /// wrong; [`BinjgbError::CartridgeIndexOutOfRange`], [`BinjgbError::RomBankOutOfRange`],
    /// [`BinjgbError::ExtRamBankOutOfRange`], [`BinjgbError::RamBankOutOfRange`],
    /// [`BinjgbError::StateFieldOutOfRange`] or [`BinjgbError::StateModelMismatch`] for the
    /// first field out of range.
    pub fn import_state(&mut self, saved: &SavedState) -> Result<(), BinjgbError> {
        let mut refusal = RawStateCheck::default();
        // SAFETY: `saved.state` is valid for its length, which the shim checks against the
        // core's state size before reading it; `refusal` has the shim's layout (`repr(C)`).
        let ok = unsafe {
            ffi::fly_gb_load_state(
                self.raw.as_ptr(),
                saved.state.as_ptr(),
                saved.state.len(),
                &raw mut refusal,
            )
        };
        if ok == 1 {
            Ok(())
        } else {
            Err(refusal.into_error())
        }
    }

    /// Where the fields the state check covers sit in this build's state bytes.
    #[must_use]
    pub fn state_offsets() -> StateOffsets {
        let mut offsets = StateOffsets::default();
        // SAFETY: `offsets` has the shim's layout (`repr(C)`); the call only writes it.
        unsafe { ffi::fly_gb_state_offsets(&raw mut offsets) };
        offsets
    }

    /// Reads any address as the CPU would, including VRAM, OAM and I/O. Unlike
    /// [`memory_image`](Self::memory_image) this may run the core's lazy PPU/APU catch-up and so
    /// change the exported state: it is for diagnostics and tests, never for observations.
    pub fn debug_read(&mut self, addr: u16) -> u8 {
        // SAFETY: `raw` is a live emulator owned by `self`, borrowed mutably.
        unsafe { ffi::fly_gb_read(self.raw.as_ptr(), addr) }
    }

    /// SHA-256 of the ROM this emulator runs.
    #[must_use]
    pub fn rom_digest(&self) -> Digest {
        self.rom_digest
    }

    /// Frames run since power-on (not restored by a state import).
    #[must_use]
    pub fn frames(&self) -> u64 {
        self.frames
    }
}

#[expect(unsafe_code, reason = "freeing the C allocation")]
impl Drop for Emulator {
    fn drop(&mut self) {
        // SAFETY: `raw` was returned by `fly_gb_new` and is freed exactly once, here.
        unsafe { ffi::fly_gb_delete(self.raw.as_ptr()) }
    }
}

/// Runs binjgb's frame loop in plain C (`csrc/plain_loop.c`): the reference the wrapper's
/// overhead is measured against.
///
/// # Errors
///
/// [`BinjgbError::RomRejected`] when the core refuses the ROM.
#[expect(unsafe_code, reason = "calls the plain C reference loop")]
pub fn plain_c_frames(rom: &[u8], frames: u32) -> Result<(), BinjgbError> {
    crate::check_rom_size(rom)?;
    // SAFETY: `rom` is valid for `rom.len()` bytes; the loop copies it and frees everything it made.
    let ran = unsafe { ffi::fly_gb_plain_frames(rom.as_ptr(), rom.len(), frames) };
    if ran == frames {
        Ok(())
    } else {
        Err(BinjgbError::RomRejected {
            reason: "the core did not recognise the cartridge header".to_owned(),
        })
    }
}
