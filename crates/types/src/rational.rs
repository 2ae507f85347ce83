//! Rational nanoseconds and the tick accumulator (contracts §2.1 and §5.4).
//!
//! Time in flysim is never a float: a duration is a reduced fraction of nanoseconds held in two
//! `u64`s, and every operation is checked. Intermediate products use `u128`; a result that does
//! not fit back into 64 bits is [`ContractError::RationalOverflow`], never a wrapped value.

use std::cmp::Ordering;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::ContractError;
use crate::scalar::{U64, coded};

/// A non-negative rational number of nanoseconds in lowest terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RationalNs {
    numerator: u64,
    denominator: u64,
}

/// The wire form: `{"numerator": U64, "denominator": U64}`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    rename = "RationalNs",
    description = "Nanoseconds as a reduced fraction; zero only as 0/1."
)]
struct Wire {
    numerator: U64,
    denominator: U64,
}

serialize_in_key_order!(Wire {
    "denominator" => denominator,
    "numerator" => numerator,
});

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl RationalNs {
    /// Zero, written `0/1`.
    pub const ZERO: Self = Self {
        numerator: 0,
        denominator: 1,
    };
    /// One millisecond, the LIF kernel's tick.
    pub const MILLISECOND: Self = Self {
        numerator: 1_000_000,
        denominator: 1,
    };

    /// Accepts a fraction already in the contract form.
    ///
    /// # Errors
    ///
    /// [`ContractError::InvalidRational`] for a zero denominator, zero written other than `0/1`,
    /// or a fraction that is not reduced.
    pub fn new(numerator: u64, denominator: u64) -> Result<Self, ContractError> {
        let refuse = |reason| ContractError::InvalidRational {
            path: String::new(),
            numerator: numerator.to_string(),
            denominator: denominator.to_string(),
            reason,
        };
        if denominator == 0 {
            return Err(refuse("the denominator is zero"));
        }
        if numerator == 0 && denominator != 1 {
            return Err(refuse("zero is written only as 0/1"));
        }
        if gcd(u128::from(numerator), u128::from(denominator)) != 1 {
            return Err(refuse("the fraction is not reduced"));
        }
        Ok(Self {
            numerator,
            denominator,
        })
    }

    /// Builds the reduced form of `numerator / denominator`.
    ///
    /// # Errors
    ///
    /// [`ContractError::InvalidRational`] for a zero denominator; [`ContractError::RationalOverflow`]
    /// when the reduced terms do not fit 64 bits.
    pub fn reduce(
        numerator: u128,
        denominator: u128,
        operation: impl FnOnce() -> String,
    ) -> Result<Self, ContractError> {
        if denominator == 0 {
            return Err(ContractError::InvalidRational {
                path: String::new(),
                numerator: numerator.to_string(),
                denominator: "0".to_owned(),
                reason: "the denominator is zero",
            });
        }
        if numerator == 0 {
            return Ok(Self::ZERO);
        }
        let g = gcd(numerator, denominator);
        match (u64::try_from(numerator / g), u64::try_from(denominator / g)) {
            (Ok(n), Ok(d)) => Ok(Self {
                numerator: n,
                denominator: d,
            }),
            _ => Err(ContractError::RationalOverflow {
                operation: operation(),
            }),
        }
    }

    /// A whole number of nanoseconds.
    #[must_use]
    pub fn from_ns(ns: u64) -> Self {
        Self {
            numerator: ns,
            denominator: 1,
        }
    }

    /// The numerator.
    #[must_use]
    pub fn numerator(self) -> u64 {
        self.numerator
    }

    /// The denominator (always positive).
    #[must_use]
    pub fn denominator(self) -> u64 {
        self.denominator
    }

    /// Whether this is zero.
    #[must_use]
    pub fn is_zero(self) -> bool {
        self.numerator == 0
    }

    /// Refuses zero, for values that are durations.
    ///
    /// # Errors
    ///
    /// [`ContractError::InvalidRational`] when zero.
    pub fn positive(self) -> Result<Self, ContractError> {
        if self.is_zero() {
            Err(ContractError::InvalidRational {
                path: String::new(),
                numerator: "0".to_owned(),
                denominator: "1".to_owned(),
                reason: "a duration must be positive",
            })
        } else {
            Ok(self)
        }
    }

    /// `self + other`, checked.
    ///
    /// # Errors
    ///
    /// [`ContractError::RationalOverflow`].
    pub fn checked_add(self, other: Self) -> Result<Self, ContractError> {
        let op = || format!("{self} + {other}");
        let (b, d) = (u128::from(self.denominator), u128::from(other.denominator));
        let lcm = b / gcd(b, d) * d;
        let left = u128::from(self.numerator).checked_mul(lcm / b);
        let right = u128::from(other.numerator).checked_mul(lcm / d);
        let sum = left.zip(right).and_then(|(l, r)| l.checked_add(r));
        match sum {
            Some(n) => Self::reduce(n, lcm, op),
            None => Err(ContractError::RationalOverflow { operation: op() }),
        }
    }

    /// `self - other`, checked; a negative result is refused.
    ///
    /// # Errors
    ///
    /// [`ContractError::RationalOverflow`] when `other > self` (durations are never negative).
    pub fn checked_sub(self, other: Self) -> Result<Self, ContractError> {
        let op = || format!("{self} - {other}");
        let (b, d) = (u128::from(self.denominator), u128::from(other.denominator));
        let lcm = b / gcd(b, d) * d;
        // Each term is below 2^64 * 2^64 / gcd, so it fits u128.
        let left = u128::from(self.numerator) * (lcm / b);
        let right = u128::from(other.numerator) * (lcm / d);
        match left.checked_sub(right) {
            Some(n) => Self::reduce(n, lcm, op),
            None => Err(ContractError::RationalOverflow {
                operation: format!("{} (negative)", op()),
            }),
        }
    }

    /// `self * other`, checked.
    ///
    /// # Errors
    ///
    /// [`ContractError::RationalOverflow`].
    pub fn checked_mul(self, other: Self) -> Result<Self, ContractError> {
        let n = u128::from(self.numerator) * u128::from(other.numerator);
        let d = u128::from(self.denominator) * u128::from(other.denominator);
        Self::reduce(n, d, || format!("{self} * {other}"))
    }

    /// `self * k`, checked.
    ///
    /// # Errors
    ///
    /// [`ContractError::RationalOverflow`].
    pub fn checked_mul_int(self, k: u64) -> Result<Self, ContractError> {
        self.checked_mul(Self::from_ns(k))
    }

    /// `floor(self / other)`, the number of whole `other`s in `self`.
    ///
    /// # Errors
    ///
    /// [`ContractError::InvalidRational`] when `other` is zero; [`ContractError::RationalOverflow`]
    /// when the quotient does not fit 64 bits.
    pub fn floor_div(self, other: Self) -> Result<u64, ContractError> {
        let other = other.positive()?;
        let n = u128::from(self.numerator) * u128::from(other.denominator);
        let d = u128::from(self.denominator) * u128::from(other.numerator);
        u64::try_from(n / d).map_err(|_| ContractError::RationalOverflow {
            operation: format!("floor({self} / {other})"),
        })
    }
}

impl Ord for RationalNs {
    fn cmp(&self, other: &Self) -> Ordering {
        (u128::from(self.numerator) * u128::from(other.denominator))
            .cmp(&(u128::from(other.numerator) * u128::from(self.denominator)))
    }
}

impl PartialOrd for RationalNs {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for RationalNs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.numerator, self.denominator)
    }
}

impl std::str::FromStr for RationalNs {
    type Err = ContractError;
    /// Parses `N/D` (or a bare `N`, meaning `N/1`), each part a canonical U64.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (n, d) = s.split_once('/').unwrap_or((s, "1"));
        Self::new(U64::parse(n)?.get(), U64::parse(d)?.get())
    }
}

impl Serialize for RationalNs {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Wire {
            numerator: U64(self.numerator),
            denominator: U64(self.denominator),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for RationalNs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let wire = Wire::deserialize(d)?;
        Self::new(wire.numerator.get(), wire.denominator.get()).map_err(coded)
    }
}

impl JsonSchema for RationalNs {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "RationalNs".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        Wire::json_schema(generator)
    }
}

/// Turns environment steps into whole brain ticks without ever rounding time (contracts §5.4).
///
/// Per step: `acc += step; ticks = floor(acc / tick); acc -= ticks * tick`. The remainder stays
/// in `[0, tick)`, so over any run the ticks executed equal `floor(elapsed / tick)` exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TickAccumulator {
    tick: RationalNs,
    remainder: RationalNs,
    ticks: u64,
}

impl TickAccumulator {
    /// A fresh accumulator for ticks of `tick` nanoseconds.
    ///
    /// # Errors
    ///
    /// [`ContractError::InvalidRational`] when `tick` is zero.
    pub fn new(tick: RationalNs) -> Result<Self, ContractError> {
        Ok(Self {
            tick: tick.positive()?,
            remainder: RationalNs::ZERO,
            ticks: 0,
        })
    }

    /// Restores an accumulator from a persisted remainder and tick count.
    ///
    /// # Errors
    ///
    /// [`ContractError::Rule`] when the remainder is not below the tick.
    pub fn resume(
        tick: RationalNs,
        remainder: RationalNs,
        ticks: u64,
    ) -> Result<Self, ContractError> {
        let acc = Self::new(tick)?;
        if remainder >= acc.tick {
            return Err(ContractError::rule(
                "remainder",
                "the remainder must be below one tick",
            ));
        }
        Ok(Self {
            remainder,
            ticks,
            ..acc
        })
    }

    /// Accounts one step of `step` nanoseconds and returns the whole ticks it completes.
    ///
    /// # Errors
    ///
    /// [`ContractError::RationalOverflow`]; the accumulator is left unchanged.
    pub fn advance(&mut self, step: RationalNs) -> Result<u64, ContractError> {
        let acc = self.remainder.checked_add(step)?;
        let ticks = acc.floor_div(self.tick)?;
        let remainder = acc.checked_sub(self.tick.checked_mul_int(ticks)?)?;
        let total =
            self.ticks
                .checked_add(ticks)
                .ok_or_else(|| ContractError::RationalOverflow {
                    operation: format!("{} + {ticks} ticks", self.ticks),
                })?;
        self.remainder = remainder;
        self.ticks = total;
        Ok(ticks)
    }

    /// The time carried into the next step, in `[0, tick)`.
    #[must_use]
    pub fn remainder(&self) -> RationalNs {
        self.remainder
    }

    /// Ticks executed so far.
    #[must_use]
    pub fn ticks(&self) -> u64 {
        self.ticks
    }

    /// The tick duration.
    #[must_use]
    pub fn tick(&self) -> RationalNs {
        self.tick
    }
}
