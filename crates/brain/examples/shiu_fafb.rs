//! Runs `lif-exp-delay-v1` (the Shiu et al. 2024 model) on a synthetic graph of FlyWire v783's
//! size and prints the time per simulated second.
//!
//! `cargo run --release -p flysim-brain --example shiu_fafb -- [DRIVEN] [THREADS]` (defaults:
//! 300 driven neurons at 150 Hz, 1 thread): 138,639 neurons, about 15 M connections weighted
//! by synapse count (`generate::shiu_like`), 1 s of simulated time at dt = 0.1 ms. It reports
//! the build time, ms per simulated second, the real-time factor, spikes and synaptic events.

#![allow(
    clippy::disallowed_methods,
    reason = "an example that times the kernel measures wall time"
)]
#![expect(clippy::print_stdout, reason = "an example reports on stdout")]

use std::sync::Arc;
use std::time::Instant;

use flysim_brain::{Brain, generate};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let driven: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(300);
    let threads: u32 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(1);
    let start = Instant::now();
    let n = generate::FLYWIRE_783_NEURONS;
    let conn = Arc::new(generate::shiu_like(
        n,
        generate::FLYWIRE_783_CONNECTIONS,
        0.35,
        1,
    ));
    let synapses: i64 = conn.weights().iter().map(|&w| i64::from(w).abs()).sum();
    let chosen = generate::pick_neurons(n, driven, "driven");
    let profile = generate::shiu_profile(&conn, "shiu-fafb", chosen, 150.0);
    let mut brain = Brain::new(profile, conn.clone(), 1, threads).expect("a valid profile");
    println!(
        "synthetic FlyWire-v783-sized graph: {} neurons, {} connections, {synapses} synapses, built in {:.1?}",
        conn.neurons(),
        conn.edges(),
        start.elapsed()
    );
    let start = Instant::now();
    brain.run_recording(10_000, &mut |_| {});
    let wall = start.elapsed().as_secs_f64();
    let a = brain.activity();
    println!(
        "lif-exp-delay-v1, {driven} driven at 150 Hz, {threads} thread(s): 1 s simulated in {:.0} ms ({:.2}x real time); {} spikes, {} synaptic events",
        wall * 1e3,
        1.0 / wall,
        a.spikes,
        a.events
    );
}
