//! The declared memory task (`memory-v1`) as the launch plan carries it: named variables at
//! addresses of a world's memory, each with a type; rewards as a weighted change of a variable
//! or paid when a condition starts to hold; the episode's end on a condition. The same idea as
//! stable-retro's game integrations (variables, reward, done, all data), written for flysim.
//!
//! - [`MemoryType`] says how bytes become a value: unsigned and signed integers of 1, 2 or 4
//!   bytes in either byte order, binary-coded decimal of 1 to 4 bytes (most significant byte
//!   first, two digits per byte), and one bit of a byte as 0 or 1.
//! - [`MemoryVariable::read`] turns the bytes at the variable's address into its value, an
//!   `i64` (every type fits: the widest is a `u32`).
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
/// The largest magnitude a condition may compare against: every type's values fit.
pub const MAX_CONDITION_VALUE: i64 = 1 << 32;

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
    /// Binary-coded decimal: `bytes` bytes (1 to 4), most significant first, two digits each
    /// (high nibble first); a nibble above 9 is read as its value (`0x1a` reads as 20).
    Bcd,
    /// One bit (`bit`, 0 = least significant) of one byte: 0 or 1.
    Bool,
}

impl MemoryType {
    /// Every type with its spelling, in the order documentation lists them.
    pub const ALL: [(&'static str, Self); 12] = [
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
            Self::U32le | Self::U32be | Self::I32le | Self::I32be => Some(4),
            Self::Bcd => None,
        }
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
}

impl MemoryVariable {
    /// How many bytes it reads from its address.
    #[must_use]
    pub fn width(&self) -> usize {
        self.kind
            .fixed_width()
            .unwrap_or_else(|| usize::from(self.bytes.unwrap_or(1)))
    }

    /// Its value from `bytes`, the [`width`](Self::width) bytes at its address.
    ///
    /// # Errors
    ///
    /// When `bytes` is not exactly its width long.
    pub fn read(&self, bytes: &[u8]) -> Result<i64, ContractError> {
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
            MemoryType::Bool => i64::from((bytes[0] >> self.bit.unwrap_or(0)) & 1),
        })
    }
}

impl Payload for MemoryVariable {
    fn validate(&self) -> Result<(), ContractError> {
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
    pub fn holds(self, left: i64, right: i64) -> bool {
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
    /// Whether it holds for the variable's `value`.
    #[must_use]
    pub fn holds(&self, value: i64) -> bool {
        self.op.holds(value, self.value)
    }
}

/// One reward rule.
///
/// Without a condition it pays `weight × (new − old)` of its variable on every transition that
/// changes it; with one it pays `weight` on the transition where the condition starts to hold
/// (false at the old boundary, true at the new).
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
    /// The port whose agents it pays, or null for every bound agent.
    #[serde(deserialize_with = "required_nullable")]
    #[schemars(with = "Nullable<Id>")]
    pub port: Option<Id>,
}

/// The whole declaration: what `task "memory-v1" { … }` resolves to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryTaskPlan {
    /// The variables, in declaration order (names unique).
    pub variables: Vec<MemoryVariable>,
    /// The reward rules, in declaration order (rule ids unique).
    pub rewards: Vec<MemoryReward>,
    /// The episode ends at the first boundary where any of these holds.
    pub done: Vec<MemoryCondition>,
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
        for (i, r) in self.rewards.iter().enumerate() {
            let path = format!("rewards[{i}]");
            known(&r.variable, &path)?;
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
        }
    }

    #[test]
    fn bcd_reads_two_digits_per_byte_most_significant_first() {
        let v = var(MemoryType::Bcd, Some(3), None);
        assert_eq!(v.read(&[0x01, 0x23, 0x45]).unwrap(), 12_345);
        assert_eq!(v.read(&[0x99, 0x99, 0x99]).unwrap(), 999_999);
        // A nibble above 9 counts its value.
        let one = var(MemoryType::Bcd, Some(1), None);
        assert_eq!(one.read(&[0x1a]).unwrap(), 20);
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
        assert!(Comparison::Le.holds(3, 3) && !Comparison::Lt.holds(3, 3));
        assert!(Comparison::Ne.holds(0, 1) && !Comparison::Eq.holds(0, 1));
        assert!(Comparison::Ge.holds(-1, -2) && !Comparison::Gt.holds(-2, -2));
        assert_eq!(MemoryType::parse("u16le"), Some(MemoryType::U16le));
        assert_eq!(MemoryType::parse("u17"), None);
        assert_eq!(MemoryType::I32be.name(), "i32be");
    }
}
