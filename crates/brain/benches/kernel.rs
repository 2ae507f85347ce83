//! The FAFB-sized benchmark of `lif-1ms-v1`: a synthetic graph with the statistics of the
//! FlyWire FAFB v783 Codex graph (139,255 neurons, 2,700,513 edges, about 1,700 spikes per tick),
//! timed on one thread, on one agent with 2 and 4 threads, and as 1, 2 and 4 agents (one thread
//! each) sharing one connectome. Reports the real-time factor (brain ms per wall ms) and
//! synaptic events per second, then runs the criterion measurements.
//!
//! `cargo bench -p flysim-brain --bench kernel` (add `-- --quick` for a shorter run).

#![allow(clippy::disallowed_methods, reason = "a benchmark measures wall time")]
#![expect(clippy::print_stdout, reason = "a benchmark reports on stdout")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use flysim_brain::{Brain, Connectome, Profile, generate};

const NEURONS: u32 = 139_255;
const EDGES: u64 = 2_700_513;
/// One edge in this many is inhibitory: the knob that puts activity near 1,700 spikes per tick.
const INHIBITORY_ONE_IN: u32 = 7;
/// Ticks per prepare: one Game Boy frame (16.74 ms) rounds to 17.
const FRAME_TICKS: u64 = 17;

fn agent(profile: &Profile, conn: &Arc<Connectome>, seed: i32, threads: u32) -> Brain {
    let mut b = Brain::new(profile.clone(), conn.clone(), seed, threads).expect("a valid profile");
    b.warm_up_and_calibrate();
    b
}

/// Runs `frames` frames on each of `agents` agents (one OS thread each); returns the wall time,
/// brain ticks per agent, and total spikes and events.
fn run_agents(agents: &mut [Brain], frames: u64) -> (Duration, u64, u64, u64) {
    let before: Vec<_> = agents.iter().map(Brain::activity).collect();
    let start = Instant::now();
    std::thread::scope(|s| {
        for b in agents.iter_mut() {
            s.spawn(move || {
                for _ in 0..frames {
                    b.prepare(FRAME_TICKS, &[]).expect("no stimuli");
                }
            });
        }
    });
    let wall = start.elapsed();
    let (mut spikes, mut events) = (0, 0);
    for (b, a) in agents.iter().zip(before) {
        spikes += b.activity().spikes - a.spikes;
        events += b.activity().events - a.events;
    }
    (wall, frames * FRAME_TICKS, spikes, events)
}

fn report(label: &str, agents: &mut [Brain], frames: u64) {
    let (wall, ticks, spikes, events) = run_agents(agents, frames);
    let n = agents.len() as f64;
    let per_tick_us = wall.as_secs_f64() * 1e6 / ticks as f64;
    let rtf = ticks as f64 / (wall.as_secs_f64() * 1000.0);
    println!(
        "{label:<28} {per_tick_us:>8.1} µs/tick  real-time {rtf:>5.2}x per agent ({:>5.2}x total)  {:>6.1} M events/s  {:>6.0} spikes/tick/agent",
        rtf * n,
        events as f64 / wall.as_secs_f64() / 1e6,
        spikes as f64 / (ticks as f64 * n),
    );
}

fn main() {
    let start = Instant::now();
    let (conn, profile) = generate::synthetic(NEURONS, EDGES, INHIBITORY_ONE_IN);
    let conn = Arc::new(conn);
    println!(
        "synthetic FAFB graph: {} neurons, {} edges, built in {:.2?}; lif-1ms-v1, {} noise kicks per tick",
        conn.neurons(),
        conn.edges(),
        start.elapsed(),
        profile.kernel.lif_1ms().map_or(0, |k| k.noise_kicks)
    );
    let frames = 60;
    report(
        "1 agent, 1 thread",
        &mut [agent(&profile, &conn, 1, 1)],
        frames,
    );
    report(
        "1 agent, 2 threads",
        &mut [agent(&profile, &conn, 1, 2)],
        frames,
    );
    report(
        "1 agent, 4 threads",
        &mut [agent(&profile, &conn, 1, 4)],
        frames,
    );
    for n in [1, 2, 4] {
        let mut agents: Vec<Brain> = (0..n).map(|i| agent(&profile, &conn, i + 1, 1)).collect();
        report(&format!("{n} agents, 1 thread each"), &mut agents, frames);
    }

    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    let mut group = c.benchmark_group("lif-1ms-v1 fafb-synthetic");
    group.throughput(Throughput::Elements(FRAME_TICKS));
    for threads in [1, 2] {
        let mut b = agent(&profile, &conn, 1, threads);
        group.bench_function(
            format!("one frame (17 ticks), 1 agent, {threads} thread(s)"),
            |bench| {
                bench.iter(|| b.prepare(FRAME_TICKS, &[]).expect("no stimuli"));
            },
        );
    }
    for n in [2, 4] {
        let mut agents: Vec<Brain> = (0..n).map(|i| agent(&profile, &conn, i + 1, 1)).collect();
        group.throughput(Throughput::Elements(FRAME_TICKS * n as u64));
        group.bench_function(format!("one frame, {n} agents, 1 thread each"), |bench| {
            bench.iter(|| run_agents(&mut agents, 1));
        });
    }
    group.finish();
    c.final_summary();
}
