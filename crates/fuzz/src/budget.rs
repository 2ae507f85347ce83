//! How long a campaign mutates: a number of inputs (deterministic, the default in the test
//! suite) or a span of time (for a bounded fuzzing step in CI). It knows nothing about inputs.

use std::time::Duration;

/// The variable that turns a campaign's input budget into a time budget, in seconds.
pub const SECONDS_VARIABLE: &str = "FLYSIM_FUZZ_SECONDS";
/// The variable that replaces a campaign's default seed (a decimal `u64`).
pub const SEED_VARIABLE: &str = "FLYSIM_FUZZ_SEED";

/// A campaign's budget of mutated inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    /// Exactly this many mutated inputs: the same inputs on every run.
    Inputs(u64),
    /// As many mutated inputs as fit in this time.
    Time(Duration),
}

impl Budget {
    /// `Inputs(inputs)`, unless [`SECONDS_VARIABLE`] is set, then `Time` of that many seconds
    /// (a decimal number, fractions allowed).
    ///
    /// # Panics
    ///
    /// If the variable is set to anything but a non-negative number of seconds: a fuzzing step
    /// that silently ran the small default budget would claim a search it did not do.
    #[must_use]
    #[expect(
        clippy::disallowed_methods,
        reason = "the fuzzing budget only bounds how long the search runs; it is no behaviour"
    )]
    pub fn from_env_or(inputs: u64) -> Self {
        match std::env::var(SECONDS_VARIABLE) {
            Err(_) => Self::Inputs(inputs),
            Ok(text) => Self::Time(parse_seconds(&text).unwrap_or_else(|| {
                panic!("{SECONDS_VARIABLE}={text:?} is not a number of seconds")
            })),
        }
    }
}

/// The seed from [`SEED_VARIABLE`], if it is set.
///
/// # Panics
///
/// If the variable is set to anything but a decimal `u64`.
#[must_use]
#[expect(
    clippy::disallowed_methods,
    reason = "the seed only chooses which inputs the search tries; it is no behaviour"
)]
pub fn seed_from_env() -> Option<u64> {
    let text = std::env::var(SEED_VARIABLE).ok()?;
    Some(
        text.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{SEED_VARIABLE}={text:?} is not a decimal u64")),
    )
}

/// Seconds as a duration: a finite, non-negative decimal number.
fn parse_seconds(text: &str) -> Option<Duration> {
    let seconds: f64 = text.trim().parse().ok()?;
    Duration::try_from_secs_f64(seconds).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_parse_as_a_duration() {
        assert_eq!(parse_seconds("12"), Some(Duration::from_secs(12)));
        assert_eq!(parse_seconds(" 0.5\n"), Some(Duration::from_millis(500)));
        assert_eq!(parse_seconds("-1"), None);
        assert_eq!(parse_seconds("ten"), None);
        assert_eq!(parse_seconds("inf"), None);
    }
}
