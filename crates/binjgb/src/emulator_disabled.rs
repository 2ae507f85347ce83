//! The emulator of a build without the binjgb core: every constructor says why.

use flysim_types::Digest;

use crate::{Availability, BinjgbError, Buttons, SavedState, StateOffsets, availability};

/// A Game Boy emulator (absent from this build: it cannot be constructed).
#[derive(Debug)]
pub struct Emulator {
    never: std::convert::Infallible,
}

fn absent() -> BinjgbError {
    match availability() {
        Availability::Absent { reason } => BinjgbError::Absent {
            reason: reason.to_owned(),
        },
        Availability::Available { .. } => BinjgbError::Absent {
            reason: "inconsistent build".to_owned(),
        },
    }
}

impl Emulator {
    /// [`BinjgbError::RomRejected`] for bytes that cannot be a ROM, else [`BinjgbError::Absent`].
    ///
    /// # Errors
    ///
    /// Always.
    pub fn new(rom: &[u8]) -> Result<Self, BinjgbError> {
        crate::check_rom_size(rom)?;
        Err(absent())
    }

    /// Unreachable: no value exists.
    ///
    /// # Errors
    ///
    /// Never.
    pub fn run_frame(&mut self) -> Result<(), BinjgbError> {
        match self.never {}
    }

    /// Unreachable: no value exists.
    pub fn set_buttons(&mut self, _buttons: Buttons) {
        match self.never {}
    }

    /// Unreachable: no value exists.
    #[must_use]
    pub fn framebuffer(&self) -> Vec<u8> {
        match self.never {}
    }

    /// Unreachable: no value exists.
    pub fn framebuffer_into(&self, _out: &mut Vec<u8>) {
        match self.never {}
    }

    /// Unreachable: no value exists.
    pub fn framebuffer_update(&self, _out: &mut Vec<u8>) -> usize {
        match self.never {}
    }

    /// Unreachable: no value exists.
    #[must_use]
    pub fn framebuffer_equals(&self, _other: &[u8]) -> bool {
        match self.never {}
    }

    /// Unreachable: no value exists.
    #[must_use]
    pub fn memory_image(&self) -> Vec<u8> {
        match self.never {}
    }

    /// Unreachable: no value exists.
    pub fn refresh_memory_image(&self, _image: &mut [u8], _map: &mut crate::ImageMap) {
        match self.never {}
    }

    /// Unreachable: no value exists.
    #[must_use]
    pub fn read_window(&self, _start: u16, _len: u16) -> Vec<u8> {
        match self.never {}
    }

    /// Unreachable: no value exists.
    pub fn read_window_into(&self, _start: u16, _out: &mut [u8]) {
        match self.never {}
    }

    /// Unreachable: no value exists.
    pub fn set_audio_limit(&mut self, _bytes: usize) {
        match self.never {}
    }

    /// Unreachable: no value exists.
    #[must_use]
    pub fn audio_dropped(&self) -> u64 {
        match self.never {}
    }

    /// Unreachable: no value exists.
    pub fn take_audio(&mut self) -> Vec<u8> {
        match self.never {}
    }

    /// Unreachable: no value exists.
    #[must_use]
    pub fn export_state(&self) -> SavedState {
        match self.never {}
    }

    /// Unreachable: no value exists.
    ///
    /// # Errors
    ///
    /// Never.
    pub fn import_state(&mut self, _saved: &SavedState) -> Result<(), BinjgbError> {
        match self.never {}
    }

    /// All zero: without the core there is no state layout.
    #[must_use]
    pub fn state_offsets() -> StateOffsets {
        StateOffsets::default()
    }

    /// Unreachable: no value exists.
    pub fn debug_read(&mut self, _addr: u16) -> u8 {
        match self.never {}
    }

    /// Unreachable: no value exists.
    #[must_use]
    pub fn rom_digest(&self) -> Digest {
        match self.never {}
    }

    /// Unreachable: no value exists.
    #[must_use]
    pub fn frames(&self) -> u64 {
        match self.never {}
    }
}

/// Always [`BinjgbError::Absent`] (after the size check) in this build.
///
/// # Errors
///
/// Always.
pub fn plain_c_frames(rom: &[u8], _frames: u32) -> Result<(), BinjgbError> {
    crate::check_rom_size(rom)?;
    Err(absent())
}
