//! What the shim's check of a saved state (`csrc/state_check.c`) reports, as Rust: the
//! refusal it fills in, turned into a coded [`BinjgbError`].
//!
//! The check itself is C: it shares the core's translation unit, so it reads the state's
//! layout and the loaded cartridge directly. This module knows the refusal's shape and the
//! names of the fields, not the layout of the state.

use crate::BinjgbError;

/// The shim's `FlyGbStateCheck`: the kind of refusal, which instance of the field, the value
/// found and the bound it broke.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RawStateCheck {
    kind: u32,
    which: u32,
    value: u64,
    limit: u64,
}

/// The shim's `FLY_STATE_*` kinds.
const SIZE: u32 = 1;
const HEADER: u32 = 2;
const CART_INFO: u32 = 3;
const ROM_BASE: u32 = 4;
const EXT_RAM_BASE: u32 = 5;
const RAM_OFFSET: u32 = 6;
const INDEX: u32 = 7;
const MODEL: u32 = 8;

/// The fields a `FLY_STATE_INDEX` refusal names, in the shim's `FLY_INDEX_*` order.
const INDEX_FIELDS: [&str; 18] = [
    "a DMG palette colour",
    "an object's palette in OAM",
    "the PPU's object count on the line",
    "an object's palette on the PPU's line",
    "the timer's clock select",
    "the noise channel's divisor",
    "the wave channel's volume",
    "the wave channel's sample position",
    "a square channel's duty",
    "a square channel's duty position",
    "the object size",
    "a playing sound channel's period",
    "the CPU tick length",
    "the timer's lag behind the CPU",
    "the serial port's lag behind the CPU",
    "the OAM DMA's lag behind the CPU",
    "the PPU's lag behind the CPU",
    "the APU's lag behind the CPU",
];

/// The banked RAM arrays a `FLY_STATE_RAM_OFFSET` refusal names.
const RAM_ARRAYS: [&str; 2] = ["video RAM", "work RAM"];

/// The hardware flags a `FLY_STATE_MODEL` refusal names.
const MODEL_FLAGS: [&str; 2] = ["Game Boy Color", "Super Game Boy"];

impl RawStateCheck {
    /// The coded error for this refusal.
    pub(crate) fn into_error(self) -> BinjgbError {
        let which = usize::try_from(self.which).unwrap_or(usize::MAX);
        let named = |names: &[&'static str]| names.get(which).copied().unwrap_or("a state field");
        match self.kind {
            SIZE => BinjgbError::StateRejected {
                reason: format!(
                    "the state is {} bytes, this build's core uses {}",
                    self.value, self.limit
                ),
            },
            HEADER => BinjgbError::StateRejected {
                reason: "the state's header is not binjgb's".to_owned(),
            },
            CART_INFO => BinjgbError::CartridgeIndexOutOfRange {
                index: self.value,
                cartridges: self.limit,
            },
            ROM_BASE => BinjgbError::RomBankOutOfRange {
                window: self.which,
                base: self.value,
                rom_bytes: self.limit,
            },
            EXT_RAM_BASE => BinjgbError::ExtRamBankOutOfRange {
                base: self.value,
                limit: self.limit,
            },
            RAM_OFFSET => BinjgbError::RamBankOutOfRange {
                ram: named(&RAM_ARRAYS),
                offset: self.value,
            },
            INDEX => BinjgbError::StateFieldOutOfRange {
                field: named(&INDEX_FIELDS),
                value: self.value,
                limit: self.limit,
            },
            MODEL => BinjgbError::StateModelMismatch {
                model: named(&MODEL_FLAGS),
                state: self.value != 0,
            },
            other => BinjgbError::StateRejected {
                reason: format!("the state check failed ({other})"),
            },
        }
    }
}
