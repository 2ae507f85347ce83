//! Determinism: repeated runs, thread counts, the golden membrane digest, the RNG vector.

use flysim_brain::{Brain, Frame};

use crate::{arena_like_frame, small_synthetic, toy, toy_brain};

/// Shows `b` an arena-like frame (fly at (20, 30), food at (100, 90)).
fn show_frame(b: &mut Brain) {
    let px = arena_like_frame((20, 30), (100, 90));
    b.commit(
        Some(&Frame {
            width: 160,
            height: 144,
            rgba: &px,
        }),
        &[],
        &[],
    )
    .unwrap();
}

/// Runs `ticks` ticks in prepares of 17 and returns (membrane digest, rates, spikes proxy).
fn run(mut b: Brain, ticks: u64) -> (String, Vec<u64>, u64) {
    let mut left = ticks;
    while left > 0 {
        let k = left.min(17);
        b.prepare(k, &[]).unwrap();
        left -= k;
    }
    let rates = b.rates().iter().map(|r| r.to_bits()).collect();
    (
        b.membrane_digest().hex(),
        rates,
        b.telemetry().population_rate_hz.to_bits(),
    )
}

#[test]
fn repeated_runs_are_bit_identical() {
    let a = run(toy_brain(7, 1), 500);
    let b = run(toy_brain(7, 1), 500);
    assert_eq!(a, b);
    let c = run(toy_brain(8, 1), 500);
    assert_ne!(a.0, c.0, "another seed gives another run");
}

#[test]
fn thread_counts_give_bit_identical_results() {
    let (p, c) = small_synthetic();
    let mut results = Vec::new();
    for threads in [1, 2, 3, 4, 7] {
        let mut b = Brain::new(p.clone(), c.clone(), 42, threads).unwrap();
        assert_eq!(
            b.shards().len(),
            threads as usize,
            "{threads} threads use {threads} shards"
        );
        b.warm_up_and_calibrate();
        results.push((threads, run(b, 300)));
    }
    for (threads, r) in &results[1..] {
        assert_eq!(*r, results[0].1, "{threads} threads differ from 1");
    }
    // The toy profile too, with plasticity on and rewards in between.
    let toy_run = |threads| {
        let mut b = toy_brain(3, threads);
        show_frame(&mut b);
        for k in 0..20 {
            b.prepare(16, &[]).unwrap();
            b.reinforce(if k % 3 == 0 { 1.0 } else { -0.5 });
        }
        (b.membrane_digest(), b.plastic_gains().to_vec())
    };
    assert_eq!(toy_run(1), toy_run(4));
}

#[test]
fn golden_membrane_digest_after_1000_ticks() {
    let (p, c) = toy();
    let mut b = Brain::new(p, c, 22_222, 1).unwrap();
    show_frame(&mut b);
    b.prepare(1_000, &[]).unwrap();
    assert!(b.activity().spikes > 10_000, "the frame drives the circuit");
    assert_eq!(b.brain_ticks(), 1_000);
    assert_eq!(
        b.membrane_digest().hex(),
        "66f5380f1c00eb9324007ac2fffc9ce2ab47c3cca595a2a3632b9e2e6011f313",
        "the membrane after 1,000 ticks of arena-toy-v1, seed 22222, one arena-like frame (lif-1ms-v1 changed?)"
    );
}

#[test]
fn spiking_happens_and_rates_are_sane() {
    let mut b = toy_brain(1, 1);
    show_frame(&mut b);
    b.prepare(200, &[]).unwrap();
    let t = b.telemetry();
    assert!(
        t.population_rate_hz > 0.1 && t.population_rate_hz < 200.0,
        "{t:?}"
    );
}
