//! `FLYSIM_BENCH_FLOOR=<ticks>`: what delivery could cost at best on this machine, beside what it
//! costs in the kernel. A fresh agent (seed 1, one thread) runs `ticks` ticks and records its
//! spikes; then, tick by tick, the tick's synaptic events (every spike's row, in spike order:
//! target and `f32(w) · synapseScale`) are laid out in one contiguous buffer, untimed, the
//! membrane is read through (warm, as the sweep leaves it before a tick's delivery), and only
//! the read-modify-write `m[t] = max(m[t] + increment, floor)` over a membrane of the graph's
//! size is timed, in event order. That is the delivery's arithmetic and its random membrane
//! traffic with none of its row reads, prefetches, sweep or bookkeeping: a lower bound that no
//! layout of the rows can go below without changing the membrane's traffic. Printed as ns per
//! event and ms per simulated second, beside the kernel's whole tick (process CPU time over
//! `Brain::run_recording`, as the Brian2 mode measures it).

use std::sync::Arc;
use std::time::{Duration, Instant};

use flysim_brain::{Brain, Connectome, Profile};

/// Runs the mode over `ticks` ticks and prints its figures.
pub(crate) fn floor(profile: &Profile, conn: &Arc<Connectome>, ticks: u64) {
    let kernel = profile.kernel.lif_1ms().expect("the bench runs lif-1ms-v1");
    let (scale, floor) = (kernel.synapse_scale as f32, kernel.membrane_floor as f32);
    let mut brain = Brain::new(profile.clone(), conn.clone(), 1, 1).expect("a valid profile");
    let mut spikes: Vec<Vec<u32>> = Vec::new();
    let cpu = super::harness::cpu_seconds();
    let start = Instant::now();
    brain.run_recording(ticks, &mut |fired| spikes.push(fired.to_vec()));
    let wall = start.elapsed();
    let cpu_ms = cpu
        .zip(super::harness::cpu_seconds())
        .map(|(before, after)| (after - before) * 1e3);
    let mut membrane = vec![0.0_f32; conn.neurons() as usize];
    let (mut targets, mut increments) = (Vec::new(), Vec::new());
    let (mut timed, mut events, mut warm) = (Duration::ZERO, 0_u64, 0.0);
    for fired in &spikes {
        targets.clear();
        increments.clear();
        for &s in fired {
            let row = conn.row(s);
            targets.extend_from_slice(&conn.targets()[row.clone()]);
            increments.extend(conn.weights()[row].iter().map(|&w| f32::from(w) * scale));
        }
        // The membrane warm, as the sweep leaves it before a tick's delivery.
        warm += membrane.iter().map(|&v| f64::from(v)).sum::<f64>();
        let start = Instant::now();
        read_modify_write(&mut membrane, &targets, &increments, floor);
        timed += start.elapsed();
        events += targets.len() as u64;
    }
    let per_second = |d: f64| d * 1_000.0 / ticks as f64;
    let kernel_ms = cpu_ms.unwrap_or(wall.as_secs_f64() * 1e3);
    let floor_ms = timed.as_secs_f64() * 1e3;
    println!(
        "{ticks} ticks, {events} synaptic events ({} a tick); membrane {} B",
        events / ticks.max(1),
        membrane.len() * 4,
    );
    println!(
        "kernel: {:.0} ms {} per simulated second ({:.2} ns an event, the whole tick)",
        per_second(kernel_ms),
        if cpu_ms.is_some() { "CPU" } else { "wall" },
        kernel_ms * 1e6 / events.max(1) as f64,
    );
    println!(
        "floor: {:.0} ms per simulated second ({:.2} ns an event: the events' read-modify-writes alone, in order)",
        per_second(floor_ms),
        floor_ms * 1e6 / events.max(1) as f64,
    );
    // The membrane's sums are printed, so that no pass over it is optimised away.
    println!(
        "kernel / floor: {:.2} (membrane checksums {:.3}, {warm:.3})",
        kernel_ms / floor_ms,
        membrane.iter().map(|&v| f64::from(v)).sum::<f64>()
    );
}

/// `m[t] = max(m[t] + increment, floor)` for every event in order: its own function, so that
/// the slices and the floor stay in registers (no store to the membrane can be taken to change
/// them).
#[inline(never)]
fn read_modify_write(membrane: &mut [f32], targets: &[u32], increments: &[f32], floor: f32) {
    for (&t, &inc) in targets.iter().zip(increments) {
        let m = &mut membrane[t as usize];
        let v = *m + inc;
        *m = if v < floor { floor } else { v };
    }
}
