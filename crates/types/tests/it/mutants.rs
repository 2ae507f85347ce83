//! The tick clock's determinism mutant: an accumulator that carries its remainder in `f64`
//! instead of exact rational nanoseconds, and the property of [`TickAccumulator`] that catches
//! it (ticks executed equal `floor(elapsed / tick)`, computed independently in integers, after
//! every step).
//!
//! The mutant survives the millisecond-tick tests of `rational.rs` (60 Hz and Game Boy frames,
//! 100 000 of them): a remainder kept in `[0, tick)` never drifts far. It falls one tick short
//! on a sub-millisecond tick, which only this property, over several step and tick pairs, sees.

use flysim_types::{RationalNs, TickAccumulator};

fn r(n: u64, d: u64) -> RationalNs {
    RationalNs::new(n, d).unwrap()
}

/// The mutant: `remainder += step; ticks = floor(remainder / tick); remainder -= ticks * tick`,
/// all in `f64`.
struct FloatAccumulator {
    tick: f64,
    remainder: f64,
}

impl FloatAccumulator {
    fn new(tick: RationalNs) -> Self {
        Self {
            tick: tick.numerator() as f64 / tick.denominator() as f64,
            remainder: 0.0,
        }
    }

    fn advance(&mut self, step: RationalNs) -> u64 {
        self.remainder += step.numerator() as f64 / step.denominator() as f64;
        let ticks = (self.remainder / self.tick).floor();
        self.remainder -= ticks * self.tick;
        ticks as u64
    }
}

/// The step and tick pairs the property runs: 60 Hz and Game Boy frames on 1 ms, 100 µs and
/// 1/7 ms ticks.
fn pairs() -> Vec<(RationalNs, RationalNs)> {
    let sixty = r(50_000_000, 3);
    let game_boy = r(8_572_265_625, 512);
    let mut pairs = Vec::new();
    for tick in [RationalNs::MILLISECOND, r(100_000, 1), r(1_000_000, 7)] {
        pairs.push((sixty, tick));
        pairs.push((game_boy, tick));
    }
    pairs
}

/// Whether `advance`, run `steps` times for each pair, always executed exactly
/// `floor(k * step / tick)` ticks after step `k`.
fn agrees_with_the_exact_count(
    mut accumulator: impl FnMut(RationalNs) -> Box<dyn FnMut(RationalNs) -> u64>,
    steps: u64,
) -> bool {
    pairs().into_iter().all(|(step, tick)| {
        let mut advance = accumulator(tick);
        let mut total = 0u128;
        (1..=steps).all(|k| {
            total += u128::from(advance(step));
            // k * (sn / sd) / (tn / td), floored: k * sn * td / (sd * tn).
            let exact =
                u128::from(k) * u128::from(step.numerator()) * u128::from(tick.denominator())
                    / (u128::from(step.denominator()) * u128::from(tick.numerator()));
            total == exact
        })
    })
}

fn exact(tick: RationalNs) -> Box<dyn FnMut(RationalNs) -> u64> {
    let mut acc = TickAccumulator::new(tick).unwrap();
    Box::new(move |step| acc.advance(step).unwrap())
}

fn float(tick: RationalNs) -> Box<dyn FnMut(RationalNs) -> u64> {
    let mut acc = FloatAccumulator::new(tick);
    Box::new(move |step| acc.advance(step))
}

#[test]
fn the_exact_accumulator_agrees_with_the_exact_count_on_every_step_and_tick() {
    assert!(agrees_with_the_exact_count(exact, 10_000));
}

#[test]
fn a_floating_point_remainder_mutant_is_caught_on_a_sub_millisecond_tick() {
    assert!(!agrees_with_the_exact_count(float, 10_000));
    // The millisecond-tick checks alone let it through.
    let mut acc = FloatAccumulator::new(RationalNs::MILLISECOND);
    let sixty: Vec<u64> = (0..3).map(|_| acc.advance(r(50_000_000, 3))).collect();
    assert_eq!(sixty, [16, 17, 17]);
}
