//! `flysim ticks`: show how environment steps become whole brain ticks (contracts §5.4).

use flysim_types::{RationalNs, TickAccumulator};

use super::duration;
use crate::error::CliError;

/// Arguments of `flysim ticks`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The environment step: `16.7ms`, `1/60s`, `250us`, `16666667ns`, or bare nanoseconds
    /// `N` or `N/D` (a Game Boy frame is 8572265625/512)
    #[arg(long, value_name = "DURATION")]
    step: String,
    /// The brain tick, written as --step is
    #[arg(long, value_name = "DURATION", default_value = "1000000/1")]
    tick: String,
    /// How many steps to show (at most 1000000)
    #[arg(long, default_value_t = 3)]
    steps: u32,
}

/// The most steps `ticks` shows: its output is built in memory before it is printed.
pub(crate) const STEPS_LIMIT: u32 = 1_000_000;

pub(crate) fn run(args: &Args) -> Result<String, CliError> {
    if args.steps > STEPS_LIMIT {
        return Err(CliError::TooManySteps {
            steps: args.steps,
            limit: STEPS_LIMIT,
        });
    }
    let step = parse("--step", &args.step)?.positive()?;
    let tick = parse("--tick", &args.tick)?;
    let mut acc = TickAccumulator::new(tick)?;
    let mut out = format!("step {step} ns, tick {} ns\n", acc.tick());
    for k in 0..args.steps {
        let ticks = acc.advance(step)?;
        out.push_str(&format!(
            "step {k:>4}: {ticks:>4} ticks, remainder {} ns, total {}\n",
            acc.remainder(),
            acc.ticks()
        ));
    }
    Ok(out)
}

/// The duration given to `flag`, or its refusal. Bare nanoseconds, `N` or `N/D`, are the
/// contract's own spelling and held to it (a fraction in lowest terms); a value with a unit is
/// reduced to that spelling.
fn parse(flag: &'static str, value: &str) -> Result<RationalNs, CliError> {
    let bare = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let (n, d) = value.split_once('/').unwrap_or((value, "1"));
    if bare(n) && bare(d) {
        return Ok(value.parse()?);
    }
    duration::parse(value).map_err(|duration::Refusal(reason)| CliError::BadDuration {
        flag,
        value: value.to_owned(),
        reason,
    })
}
