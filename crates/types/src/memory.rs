//! The declared memory task (`memory-v1`) as the launch plan carries it: named variables at
//! addresses of a world's memory, each with a type; rewards as a weighted change of a variable
//! or paid when a condition starts to hold; the episode's end on a condition. The same idea as
//! stable-retro's game integrations (variables, reward, done, all data), written for flysim.
//!
//! - [`MemoryType`] says how bytes become a value: unsigned and signed integers of 1, 2 or 4
//!   bytes in either byte order, IEEE-754 single floats in either byte order, binary-coded
//!   decimal of 1 to 4 bytes (most significant byte first, two digits per byte), and one bit of
//!   a byte as 0 or 1.
//! - [`MemoryVariable::read`] turns the bytes at the variable's address into its value, an
//!   `f64`: every integer type fits exactly (the widest is a `u32`), and a float is the `f32` it
//!   is.
//! - A variable may sit behind a pointer chain ([`MemoryVariable::offsets`], the notation of
//!   Dolphin's MemoryWatcher): the pointer at `address` is read in the backend's pointer type
//!   ([`MemoryTaskPlan::pointer`]), each offset but the last is added and the next pointer read
//!   there, and the value lies at the last pointer plus the last offset ([`follow`]).
//! - [`MemoryRegion`] is a window of addresses a backend lets tasks read; the resolver refuses a
//!   variable outside every region of the environment's backend.
//!
//! It knows bytes, types and conditions. It does not know any backend, where the bytes come
//! from, or what a reward does to a brain.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::ContractError;
use crate::payload::{Nullable, Payload, check, required_nullable};
use crate::scalar::Id;

/// The task's name in compositions and plans.
pub const MEMORY_TASK: &str = "memory-v1";
/// The inspection artifact a world publishes its readable memory as (a flat image from address
/// 0 on the Game Boy).
pub const MEMORY_ARTIFACT: &str = "memory";
/// At most this many variables in one task (each is recorded in every trace row).
pub const MAX_VARIABLES: usize = 64;
/// At most this many reward rules.
pub const MAX_REWARD_RULES: usize = 64;
/// At most this many done conditions.
pub const MAX_DONE_CONDITIONS: usize = 16;
/// The largest magnitude a condition may compare against: every integer type's values fit.
pub const MAX_CONDITION_VALUE: i64 = 1 << 32;
/// At most this many offsets in one pointer chain (Dolphin's MemoryWatcher follows up to 8).
pub const MAX_OFFSETS: usize = 8;

/// A memory task's variables at one boundary, by name: what the trace row records. A variable
/// without a value there (a pointer chain that leads nowhere, a float that is not finite) is
/// left out.
pub type Variables = std::collections::BTreeMap<Id, f64>;

/// How the bytes at a variable's address become its value.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum MemoryType {
    /// One byte, unsigned.
    U8,
    /// One byte, two's complement.
    I8,
    /// Two bytes, unsigned, least significant first.
    U16le,
    /// Two bytes, unsigned, most significant first.
    U16be,
    /// Two bytes, two's complement, least significant first.
    I16le,
    /// Two bytes, two's complement, most significant first.
    I16be,
    /// Four bytes, unsigned, least significant first.
    U32le,
    /// Four bytes, unsigned, most significant first.
    U32be,
    /// Four bytes, two's complement, least significant first.
    I32le,
    /// Four bytes, two's complement, most significant first.
    I32be,
    /// Four bytes, an IEEE-754 single, least significant first.
    F32le,
    /// Four bytes, an IEEE-754 single, most significant first (the GameCube's order).
    F32be,
    /// Binary-coded decimal: `bytes` bytes (1 to 4), most significant first, two digits each
    /// (high nibble first); a nibble above 9 is read as its value (`0x1a` reads as 20).
    Bcd,
    /// One bit (`bit`, 0 = least significant) of one byte: 0 or 1.
    Bool,
}

impl MemoryType {
    /// Every type with its spelling, in the order documentation lists them.
    pub const ALL: [(&'static str, Self); 14] = [
        ("u8", Self::U8),
        ("i8", Self::I8),
        ("u16le", Self::U16le),
        ("u16be", Self::U16be),
        ("i16le", Self::I16le),
        ("i16be", Self::I16be),
        ("u32le", Self::U32le),
        ("u32be", Self::U32be),
        ("i32le", Self::I32le),
        ("i32be", Self::I32be),
        ("f32le", Self::F32le),
        ("f32be", Self::F32be),
        ("bcd", Self::Bcd),
        ("bool", Self::Bool),
    ];

    /// The type spelled `name`.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
    }

    /// Its spelling.
    #[must_use]
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, t)| *t == self)
            .map_or("?", |(n, _)| n)
    }

    /// How many bytes a value of this type takes, when the type fixes it (`bcd` does not).
    #[must_use]
    pub fn fixed_width(self) -> Option<usize> {
        match self {
            Self::U8 | Self::I8 | Self::Bool => Some(1),
            Self::U16le | Self::U16be | Self::I16le | Self::I16be => Some(2),
            Self::U32le | Self::U32be | Self::I32le | Self::I32be | Self::F32le | Self::F32be => {
                Some(4)
            }
            Self::Bcd => None,
        }
    }

    /// Whether a pointer may be of this type: an unsigned integer of 2 or 4 bytes.
    #[must_use]
    pub fn is_pointer(self) -> bool {
        matches!(self, Self::U16le | Self::U16be | Self::U32le | Self::U32be)
    }

    /// The unsigned integer `bytes` (its fixed width long) hold, for a pointer type; `None` for
    /// another type or another length.
    #[must_use]
    pub fn pointer(self, bytes: &[u8]) -> Option<u32> {
        Some(match (self, bytes) {
            (Self::U16le, &[a, b]) => u32::from(u16::from_le_bytes([a, b])),
            (Self::U16be, &[a, b]) => u32::from(u16::from_be_bytes([a, b])),
            (Self::U32le, &[a, b, c, d]) => u32::from_le_bytes([a, b, c, d]),
            (Self::U32be, &[a, b, c, d]) => u32::from_be_bytes([a, b, c, d]),
            _ => return None,
        })
    }
}

/// One named variable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryVariable {
    /// Its name: what rewards, conditions and the trace call it.
    pub name: Id,
    /// The address of its first byte, in the backend's address space.
    pub address: u32,
    /// How its bytes are read.
    #[serde(rename = "type")]
    pub kind: MemoryType,
    /// For `bcd`: how many bytes (1 to 4); null for every other type.
    #[serde(deserialize_with = "required_nullable")]
    #[schemars(with = "Nullable<u8>")]
    pub bytes: Option<u8>,
    /// For `bool`: which bit (0 to 7); null for every other type.
    #[serde(deserialize_with = "required_nullable")]
    #[schemars(with = "Nullable<u8>")]
    pub bit: Option<u8>,
    /// The pointer chain's offsets (at most [`MAX_OFFSETS`]); empty for a value at `address`
    /// itself. With offsets, `address` holds a pointer, and [`follow`] says where the value is.
    pub offsets: Vec<u32>,
}

impl MemoryVariable {
    /// How many bytes it reads from its address.
    #[must_use]
    pub fn width(&self) -> usize {
        self.kind
            .fixed_width()
            .unwrap_or_else(|| usize::from(self.bytes.unwrap_or(1)))
    }

    /// Its value from `bytes`, the [`width`](Self::width) bytes where it lies. A float may be
    /// infinite or NaN; what that means is the reader's to say.
    ///
    /// # Errors
    ///
    /// When `bytes` is not exactly its width long.
    #[expect(
        clippy::cast_precision_loss,
        reason = "an integer type's value is at most 32 bits wide, which an f64 holds exactly"
    )]
    pub fn read(&self, bytes: &[u8]) -> Result<f64, ContractError> {
        if bytes.len() != self.width() {
            return Err(ContractError::rule(
                self.name.as_str(),
                format!("a {} reads {} byte(s)", self.kind.name(), self.width()),
            ));
        }
        let array = |n: usize| {
            let mut a = [0u8; 4];
            a[..n].copy_from_slice(bytes);
            a
        };
        Ok(match self.kind {
            MemoryType::F32le => f64::from(f32::from_le_bytes(array(4))),
            MemoryType::F32be => f64::from(f32::from_be_bytes(array(4))),
            other => Self::integer(other, bytes, self.bit, array) as f64,
        })
    }

    /// The value of an integer type (every type but the floats).
    fn integer(
        kind: MemoryType,
        bytes: &[u8],
        bit: Option<u8>,
        array: impl Fn(usize) -> [u8; 4],
    ) -> i64 {
        match kind {
            MemoryType::U8 => i64::from(bytes[0]),
            MemoryType::I8 => i64::from(bytes[0].cast_signed()),
            MemoryType::U16le => i64::from(u16::from_le_bytes([bytes[0], bytes[1]])),
            MemoryType::U16be => i64::from(u16::from_be_bytes([bytes[0], bytes[1]])),
            MemoryType::I16le => i64::from(i16::from_le_bytes([bytes[0], bytes[1]])),
            MemoryType::I16be => i64::from(i16::from_be_bytes([bytes[0], bytes[1]])),
            MemoryType::U32le => i64::from(u32::from_le_bytes(array(4))),
            MemoryType::U32be => i64::from(u32::from_be_bytes(array(4))),
            MemoryType::I32le => i64::from(i32::from_le_bytes(array(4))),
            MemoryType::I32be => i64::from(i32::from_be_bytes(array(4))),
            MemoryType::Bcd => bytes.iter().fold(0i64, |value, &b| {
                value * 100 + i64::from(b >> 4) * 10 + i64::from(b & 0x0f)
            }),
            MemoryType::Bool => i64::from((bytes[0] >> bit.unwrap_or(0)) & 1),
            MemoryType::F32le | MemoryType::F32be => {
                unreachable!("read handles the floats before it asks for an integer")
            }
        }
    }
}

impl Payload for MemoryVariable {
    fn validate(&self) -> Result<(), ContractError> {
        check::at_most(&self.offsets, MAX_OFFSETS, "offsets", "pointer offsets")?;
        match (self.kind, self.bytes, self.bit) {
            (MemoryType::Bcd, Some(1..=4), None) | (MemoryType::Bool, None, Some(0..=7)) => Ok(()),
            (MemoryType::Bcd, _, _) => Err(ContractError::rule(
                "bytes",
                "a bcd variable reads 1 to 4 bytes and has no bit",
            )),
            (MemoryType::Bool, _, _) => Err(ContractError::rule(
                "bit",
                "a bool variable names a bit 0 to 7 and has no byte count",
            )),
            (_, None, None) => Ok(()),
            _ => Err(ContractError::rule(
                "bytes",
                "only a bcd variable has a byte count and only a bool variable a bit",
            )),
        }
    }
}

/// How a condition compares a variable with a value.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub enum Comparison {
    /// Equal.
    #[serde(rename = "==")]
    Eq,
    /// Not equal.
    #[serde(rename = "!=")]
    Ne,
    /// Less than.
    #[serde(rename = "<")]
    Lt,
    /// At most.
    #[serde(rename = "<=")]
    Le,
    /// Greater than.
    #[serde(rename = ">")]
    Gt,
    /// At least.
    #[serde(rename = ">=")]
    Ge,
}

impl Comparison {
    /// Every comparison with its spelling.
    pub const ALL: [(&'static str, Self); 6] = [
        ("==", Self::Eq),
        ("!=", Self::Ne),
        ("<", Self::Lt),
        ("<=", Self::Le),
        (">", Self::Gt),
        (">=", Self::Ge),
    ];

    /// The comparison spelled `text`.
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.iter().find(|(n, _)| *n == text).map(|(_, c)| *c)
    }

    /// Whether `left` compares so with `right`.
    #[must_use]
    pub fn holds(self, left: f64, right: f64) -> bool {
        match self {
            Self::Eq => left == right,
            Self::Ne => left != right,
            Self::Lt => left < right,
            Self::Le => left <= right,
            Self::Gt => left > right,
            Self::Ge => left >= right,
        }
    }
}

/// A condition on one variable: `variable op value`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryCondition {
    /// The variable compared.
    pub variable: Id,
    /// The comparison.
    pub op: Comparison,
    /// The value compared with (at most 2^32 in magnitude).
    pub value: i64,
}

impl MemoryCondition {
    /// Whether it holds for the variable's `value`; a variable without a value (a pointer chain
    /// that leads nowhere) satisfies no condition.
    #[must_use]
    #[expect(
        clippy::cast_precision_loss,
        reason = "the value is at most 2^32 in magnitude, which an f64 holds exactly"
    )]
    pub fn holds(&self, value: Option<f64>) -> bool {
        value.is_some_and(|v| self.op.holds(v, self.value as f64))
    }
}

/// Which changes of its variable a rule without a condition pays.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    /// Only rises: `weight × (new − old)` when the value grew (damage dealt, which drops back
    /// to 0 with each stock, is not paid back).
    Rise,
    /// Only drops: `weight × (old − new)`, the size of the drop (a stock taken pays 1 × 1).
    Fall,
}

impl Change {
    /// Every kind with its spelling.
    pub const ALL: [(&'static str, Self); 2] = [("rise", Self::Rise), ("fall", Self::Fall)];
}

/// One reward rule.
///
/// Without a condition it pays `weight × (new − old)` of its variable on every transition that
/// changes it (with `on`, only rises or only drops, by their size); with one it pays `weight` on
/// the transition where the condition starts to hold (false at the old boundary, true at the
/// new). A variable without a value at either boundary pays no change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryReward {
    /// The rule's id: the reward's `ruleId` and its event's kind (unique in the task).
    pub rule: Id,
    /// The variable it watches.
    pub variable: Id,
    /// The weight (finite, not zero).
    pub weight: f64,
    /// The condition it pays on, or null to pay the weighted change.
    #[serde(deserialize_with = "required_nullable")]
    #[schemars(with = "Nullable<MemoryCondition>")]
    pub when: Option<MemoryCondition>,
    /// For a rule without a condition: pay only rises or only drops; null pays every change.
    #[serde(deserialize_with = "required_nullable")]
    #[schemars(with = "Nullable<Change>")]
    pub on: Option<Change>,
    /// The port whose agents it pays, or null for every bound agent.
    #[serde(deserialize_with = "required_nullable")]
    #[schemars(with = "Nullable<Id>")]
    pub port: Option<Id>,
}

impl MemoryReward {
    /// What it pays for its variable going from `from` to `to` (`None` where it has no value),
    /// or `None` when it pays nothing.
    #[must_use]
    pub fn pays(&self, from: Option<f64>, to: Option<f64>) -> Option<f64> {
        if let Some(when) = &self.when {
            return (when.holds(to) && !when.holds(from)).then_some(self.weight);
        }
        let (from, to) = (from?, to?);
        let change = match self.on {
            None => to - from,
            Some(Change::Rise) => (to - from).max(0.0),
            Some(Change::Fall) => (from - to).max(0.0),
        };
        (change != 0.0).then_some(self.weight * change)
    }
}

/// The whole declaration: what `task "memory-v1" { … }` resolves to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryTaskPlan {
    /// The variables, in declaration order (names unique).
    pub variables: Vec<MemoryVariable>,
    /// The reward rules, in declaration order (rule ids unique).
    pub rewards: Vec<MemoryReward>,
    /// The episode ends at the first boundary where any of these starts to hold.
    pub done: Vec<MemoryCondition>,
    /// The type a pointer has in the environment's backend (`u16le` on the Game Boy, `u32be` on
    /// the GameCube), which a variable's pointer chain is read in; null for a backend without
    /// pointers, where no variable has offsets.
    #[serde(deserialize_with = "required_nullable")]
    #[schemars(with = "Nullable<MemoryType>")]
    pub pointer: Option<MemoryType>,
}

impl MemoryTaskPlan {
    /// The variable called `name`.
    #[must_use]
    pub fn variable(&self, name: &Id) -> Option<&MemoryVariable> {
        self.variables.iter().find(|v| &v.name == name)
    }
}

impl Payload for MemoryTaskPlan {
    fn validate(&self) -> Result<(), ContractError> {
        if self.variables.is_empty() {
            return Err(ContractError::rule(
                "variables",
                "a memory task declares at least one variable",
            ));
        }
        check::at_most(&self.variables, MAX_VARIABLES, "variables", "variables")?;
        check::unique_by(&self.variables, |v| &v.name, "variables", "variable name")?;
        check::each(&self.variables, "variables", MemoryVariable::validate)?;
        check::at_most(&self.rewards, MAX_REWARD_RULES, "rewards", "reward rules")?;
        check::unique_by(&self.rewards, |r| &r.rule, "rewards", "reward rule")?;
        check::at_most(&self.done, MAX_DONE_CONDITIONS, "done", "done conditions")?;
        let known = |name: &Id, path: &str| {
            if self.variable(name).is_some() {
                Ok(())
            } else {
                Err(ContractError::rule(
                    path,
                    format!("`{name}` is not a declared variable"),
                ))
            }
        };
        let value = |c: &MemoryCondition, path: &str| {
            known(&c.variable, path)?;
            if c.value.abs() > MAX_CONDITION_VALUE {
                return Err(ContractError::rule(
                    path,
                    "a condition compares with a value of at most 2^32 in magnitude",
                ));
            }
            Ok(())
        };
        match self.pointer {
            Some(p) if !p.is_pointer() => {
                return Err(ContractError::rule(
                    "pointer",
                    "a pointer is an unsigned integer of 2 or 4 bytes",
                ));
            }
            None if self.variables.iter().any(|v| !v.offsets.is_empty()) => {
                return Err(ContractError::rule(
                    "pointer",
                    "a variable with offsets needs the backend's pointer type",
                ));
            }
            _ => {}
        }
        for (i, r) in self.rewards.iter().enumerate() {
            let path = format!("rewards[{i}]");
            known(&r.variable, &path)?;
            if r.on.is_some() && r.when.is_some() {
                return Err(ContractError::rule(
                    path,
                    "a rule pays on a condition or on rises or drops, not both",
                ));
            }
            check::finite(r.weight, &path)?;
            if r.weight == 0.0 {
                return Err(ContractError::rule(path, "a reward's weight is not zero"));
            }
            if let Some(when) = &r.when {
                value(when, &path)?;
            }
        }
        for (i, c) in self.done.iter().enumerate() {
            value(c, &format!("done[{i}]"))?;
        }
        Ok(())
    }
}

/// Where `variable`'s value lies in a memory `read` returns bytes of (address, width), following
/// its pointer chain in `pointer`'s type: its address itself without offsets; else `None` where
/// a pointer is null, cannot be read, or an address overflows.
pub fn follow<'m>(
    variable: &MemoryVariable,
    pointer: Option<MemoryType>,
    read: impl Fn(u32, usize) -> Option<&'m [u8]>,
) -> Option<u32> {
    let Some((last, links)) = variable.offsets.split_last() else {
        return Some(variable.address);
    };
    let pointer = pointer?;
    let width = pointer.fixed_width()?;
    let mut at = pointer.pointer(read(variable.address, width)?)?;
    for offset in links {
        if at == 0 {
            return None;
        }
        at = pointer.pointer(read(at.checked_add(*offset)?, width)?)?;
    }
    if at == 0 {
        return None;
    }
    at.checked_add(*last)
}

/// The 4-byte-aligned words that hold `width` bytes from `address`, in address order (what a
/// backend that watches words must watch for the value).
pub fn aligned_words(address: u32, width: usize) -> impl Iterator<Item = u32> {
    let first = address & !3;
    let last = u32::try_from(width.saturating_sub(1))
        .ok()
        .and_then(|w| address.checked_add(w))
        .map_or(first, |end| end & !3);
    (first..=last).step_by(4)
}

/// A window of addresses a backend lets tasks read: `start..=end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryRegion {
    /// Its name, for messages (`address space`, `MEM1`).
    pub name: &'static str,
    /// Its first address.
    pub start: u32,
    /// Its last address.
    pub end: u32,
}

impl MemoryRegion {
    /// Whether `width` bytes from `address` lie inside it.
    #[must_use]
    pub fn holds(&self, address: u32, width: usize) -> bool {
        let Ok(width) = u32::try_from(width) else {
            return false;
        };
        width > 0
            && address >= self.start
            && address
                .checked_add(width - 1)
                .is_some_and(|last| last <= self.end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(kind: MemoryType, bytes: Option<u8>, bit: Option<u8>) -> MemoryVariable {
        MemoryVariable {
            name: Id::parse("v").unwrap(),
            address: 0,
            kind,
            bytes,
            bit,
            offsets: Vec::new(),
        }
    }

    #[test]
    fn bcd_reads_two_digits_per_byte_most_significant_first() {
        let v = var(MemoryType::Bcd, Some(3), None);
        assert_eq!(v.read(&[0x01, 0x23, 0x45]).unwrap(), 12_345.0);
        assert_eq!(v.read(&[0x99, 0x99, 0x99]).unwrap(), 999_999.0);
        // A nibble above 9 counts its value.
        let one = var(MemoryType::Bcd, Some(1), None);
        assert_eq!(one.read(&[0x1a]).unwrap(), 20.0);
        assert!(v.read(&[0x01]).is_err());
    }

    #[test]
    fn a_type_with_a_field_of_another_is_refused() {
        assert!(var(MemoryType::U8, None, Some(1)).validate().is_err());
        assert!(var(MemoryType::U8, Some(1), None).validate().is_err());
        assert!(var(MemoryType::Bool, None, Some(8)).validate().is_err());
        assert!(var(MemoryType::Bool, None, None).validate().is_err());
        assert!(var(MemoryType::Bcd, Some(5), None).validate().is_err());
        assert!(var(MemoryType::Bcd, Some(4), None).validate().is_ok());
        assert!(var(MemoryType::I16be, None, None).validate().is_ok());
    }

    #[test]
    fn a_region_holds_a_value_only_when_every_byte_is_inside() {
        let gb = MemoryRegion {
            name: "address space",
            start: 0,
            end: 0xffff,
        };
        assert!(gb.holds(0xfffe, 2));
        assert!(!gb.holds(0xffff, 2));
        assert!(!gb.holds(0x1_0000, 1));
        assert!(!gb.holds(u32::MAX, 4));
        let mem1 = MemoryRegion {
            name: "MEM1",
            start: 0x8000_0000,
            end: 0x817f_ffff,
        };
        assert!(mem1.holds(0x8045_3080, 4));
        assert!(!mem1.holds(0x7fff_ffff, 1));
    }

    #[test]
    fn a_value_needs_the_aligned_words_it_touches() {
        let words = |a, w| aligned_words(a, w).collect::<Vec<_>>();
        assert_eq!(words(0x8000_1804, 4), [0x8000_1804]);
        assert_eq!(words(0x8000_1806, 2), [0x8000_1804]);
        assert_eq!(words(0x8000_1802, 4), [0x8000_1800, 0x8000_1804]);
        assert_eq!(words(0x8000_1803, 1), [0x8000_1800]);
    }

    #[test]
    fn comparisons_read_as_written() {
        for (text, op) in Comparison::ALL {
            assert_eq!(Comparison::parse(text), Some(op));
        }
        assert!(Comparison::Le.holds(3.0, 3.0) && !Comparison::Lt.holds(3.0, 3.0));
        assert!(Comparison::Ne.holds(0.0, 1.0) && !Comparison::Eq.holds(0.0, 1.0));
        assert!(Comparison::Ge.holds(-1.0, -2.0) && !Comparison::Gt.holds(-2.0, -2.0));
        let lives = MemoryCondition {
            variable: Id::parse("v").unwrap(),
            op: Comparison::Eq,
            value: 0,
        };
        assert!(lives.holds(Some(0.0)) && !lives.holds(Some(1.0)));
        assert!(!lives.holds(None), "no value satisfies no condition");
        assert_eq!(MemoryType::parse("u16le"), Some(MemoryType::U16le));
        assert_eq!(MemoryType::parse("u17"), None);
        assert_eq!(MemoryType::I32be.name(), "i32be");
    }

    #[test]
    fn floats_read_as_the_single_they_are_in_either_byte_order() {
        let be = var(MemoryType::F32be, None, None);
        let le = var(MemoryType::F32le, None, None);
        assert_eq!(be.read(&[0x41, 0xf4, 0, 0]).unwrap(), 30.5);
        assert_eq!(le.read(&[0, 0, 0xa0, 0xc1]).unwrap(), -20.0);
        // 0.1 is the f32 nearest it, widened exactly, not the f64 0.1.
        let tenth = be.read(&0.1f32.to_be_bytes()).unwrap();
        assert_eq!(tenth, f64::from(0.1f32));
        assert_ne!(tenth, 0.1);
        assert!(be.read(&[0x7f, 0xc0, 0, 0]).unwrap().is_nan());
        assert_eq!(MemoryType::F32be.fixed_width(), Some(4));
        // The widest unsigned integer is exact.
        assert_eq!(
            var(MemoryType::U32be, None, None).read(&[0xff; 4]).unwrap(),
            4_294_967_295.0
        );
    }

    /// A little-endian memory of 0x100 bytes with a pointer at 0x10 to 0x40, a pointer at 0x44
    /// to 0x80 and a null pointer at 0x20.
    fn image() -> Vec<u8> {
        let mut m = vec![0u8; 0x100];
        m[0x10..0x12].copy_from_slice(&0x40u16.to_le_bytes());
        m[0x44..0x46].copy_from_slice(&0x80u16.to_le_bytes());
        m
    }

    #[test]
    fn a_chain_reads_each_pointer_and_adds_its_offset() {
        let m = image();
        let read = |a: u32, w: usize| m.get(a as usize..a as usize + w);
        let mut v = var(MemoryType::U8, None, None);
        assert_eq!(follow(&v, None, read), Some(0), "no offsets: the address");
        v.address = 0x10;
        v.offsets = vec![0x7];
        assert_eq!(follow(&v, Some(MemoryType::U16le), read), Some(0x47));
        v.offsets = vec![0x4, 0x3];
        assert_eq!(follow(&v, Some(MemoryType::U16le), read), Some(0x83));
        // Read big-endian, the same bytes are another pointer (0x4000), outside this memory.
        assert_eq!(follow(&v, Some(MemoryType::U16be), read), None);
        // A null pointer leads nowhere, first or later in the chain.
        v.address = 0x20;
        assert_eq!(follow(&v, Some(MemoryType::U16le), read), None);
        v.address = 0x10;
        v.offsets = vec![0x8, 0x3];
        assert_eq!(follow(&v, Some(MemoryType::U16le), read), None);
        // Without the backend's pointer type a chain is not followed.
        assert_eq!(follow(&v, None, read), None);
    }

    fn rule(when: Option<MemoryCondition>, on: Option<Change>) -> MemoryReward {
        MemoryReward {
            rule: Id::parse("r").unwrap(),
            variable: Id::parse("v").unwrap(),
            weight: 0.5,
            when,
            on,
            port: None,
        }
    }

    #[test]
    fn a_rule_pays_changes_rises_drops_or_a_condition_starting_to_hold() {
        let any = rule(None, None);
        assert_eq!(any.pays(Some(4.0), Some(10.0)), Some(3.0));
        assert_eq!(any.pays(Some(10.0), Some(4.0)), Some(-3.0));
        assert_eq!(any.pays(Some(4.0), Some(4.0)), None);
        assert_eq!(any.pays(None, Some(4.0)), None, "no value, no change");
        let rise = rule(None, Some(Change::Rise));
        assert_eq!(rise.pays(Some(4.0), Some(10.0)), Some(3.0));
        assert_eq!(rise.pays(Some(10.0), Some(0.0)), None);
        let fall = rule(None, Some(Change::Fall));
        assert_eq!(fall.pays(Some(4.0), Some(3.0)), Some(0.5));
        assert_eq!(fall.pays(Some(3.0), Some(4.0)), None);
        let zero = MemoryCondition {
            variable: Id::parse("v").unwrap(),
            op: Comparison::Eq,
            value: 0,
        };
        let on_zero = rule(Some(zero), None);
        assert_eq!(on_zero.pays(Some(1.0), Some(0.0)), Some(0.5));
        assert_eq!(on_zero.pays(Some(0.0), Some(0.0)), None);
        assert_eq!(
            on_zero.pays(None, Some(0.0)),
            Some(0.5),
            "appearing at 0 starts to hold"
        );
        assert_eq!(on_zero.pays(Some(1.0), None), None);
    }

    #[test]
    fn a_plan_refuses_on_with_a_condition_chains_without_pointers_and_long_chains() {
        let mut v = var(MemoryType::U8, None, None);
        v.offsets = vec![0x70];
        let mut plan = MemoryTaskPlan {
            variables: vec![v.clone()],
            rewards: vec![rule(None, Some(Change::Rise))],
            done: Vec::new(),
            pointer: Some(MemoryType::U32be),
        };
        assert!(plan.validate().is_ok());
        plan.pointer = None;
        assert!(plan.validate().is_err(), "offsets need a pointer type");
        plan.pointer = Some(MemoryType::F32be);
        assert!(plan.validate().is_err(), "a float is no pointer");
        plan.pointer = Some(MemoryType::U16le);
        let zero = MemoryCondition {
            variable: v.name.clone(),
            op: Comparison::Eq,
            value: 0,
        };
        plan.rewards = vec![rule(Some(zero), Some(Change::Fall))];
        assert!(plan.validate().is_err(), "on and a condition");
        plan.rewards.clear();
        v.offsets = vec![0; MAX_OFFSETS + 1];
        assert!(v.validate().is_err());
    }
}
