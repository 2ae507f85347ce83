//! Runs `lif-exp-delay-v1` (the Shiu et al. 2024 model) on a synthetic graph of FlyWire v783's
//! size and prints the time per simulated second; with `--brian2`, runs the same network and
//! drive in Brian2 (C++ standalone, one thread) too and compares.
//!
//! `cargo run --release -p flysim-brain --example shiu_fafb -- [DRIVEN] [THREADS] [--brian2]`
//! (defaults: 300 driven neurons at 150 Hz, 1 thread): 138,639 neurons, about 15 M
//! connections weighted by synapse count (`generate::shiu_like`), 1 s of simulated time at
//! dt = 0.1 ms. It reports the build time, ms per simulated second (wall, and the process's CPU
//! time where `/proc` has it), the real-time factor, spikes and synaptic events.
//!
//! `--brian2` then writes the connectome as the agreement test's edge list (CSV
//! `pre,post,count`, the signed synapse count) and the model's constants, taken from the
//! profile, under `<target dir>/brian2-shiu-fafb/`, and runs `tests/brian2/shiu_model.py` on
//! Brian2's `cpp_standalone` target without OpenMP (one thread), one trial of 1,000 ms, from
//! a fresh project directory. It reports Brian2's own time of the simulation loop
//! (`device._last_run_time`, which the binary measures with `std::clock`: CPU time), the
//! binary's and the compiler's wall time and the whole wall time with Python, code generation
//! and compilation; then the ratio to flysim and both spike counts (Poisson trains differ, so
//! they agree only statistically). Brian2's Python is the first of `$FLYSIM_BRIAN2_VENV`,
//! `<target dir>/brian2-venv` and the workspace's `target/brian2-venv` that has Brian2 (installed
//! into the first when none has, as the agreement test does); when that fails the example says
//! what is missing and exits with status 1.

#![allow(
    clippy::disallowed_methods,
    reason = "an example that times the kernel measures wall time and reads FLYSIM_BRIAN2_VENV"
)]
#![expect(clippy::print_stdout, reason = "an example reports on stdout")]

#[path = "../tests/brian2/harness.rs"]
#[allow(dead_code, reason = "the example runs the Shiu script only")]
mod harness;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use flysim_brain::{Brain, Connectome, Profile, generate};

/// The Poisson rate of the driven neurons.
const RATE_HZ: f64 = 150.0;
/// Ticks of 0.1 ms in 1 s.
const TICKS: u64 = 10_000;

/// The command line.
struct Args {
    driven: usize,
    threads: u32,
    brian2: bool,
}

impl Args {
    fn parse() -> Self {
        let all: Vec<String> = std::env::args().skip(1).collect();
        let positional: Vec<&String> = all.iter().filter(|a| !a.starts_with("--")).collect();
        Self {
            driven: positional
                .first()
                .and_then(|a| a.parse().ok())
                .unwrap_or(300),
            threads: positional.get(1).and_then(|a| a.parse().ok()).unwrap_or(1),
            brian2: all.iter().any(|a| a == "--brian2"),
        }
    }
}

/// One flysim run's figures.
struct Flysim {
    wall_ms: f64,
    cpu_ms: Option<f64>,
    counts: Vec<u64>,
}

#[expect(clippy::print_stderr, reason = "the reason the Brian2 mode failed")]
fn main() {
    let args = Args::parse();
    let start = Instant::now();
    let n = generate::FLYWIRE_783_NEURONS;
    let conn = Arc::new(generate::shiu_like(
        n,
        generate::FLYWIRE_783_CONNECTIONS,
        0.35,
        1,
    ));
    let synapses: i64 = conn.weights().iter().map(|&w| i64::from(w).abs()).sum();
    let chosen = generate::pick_neurons(n, args.driven, "driven");
    let profile = generate::shiu_profile(&conn, "shiu-fafb", chosen.clone(), RATE_HZ);
    let mut brain =
        Brain::new(profile.clone(), conn.clone(), 1, args.threads).expect("a valid profile");
    println!(
        "synthetic FlyWire-v783-sized graph: {} neurons, {} connections, {synapses} synapses, built in {:.1?}",
        conn.neurons(),
        conn.edges(),
        start.elapsed()
    );
    let mut counts = vec![0u64; n as usize];
    let cpu = harness::cpu_seconds();
    let start = Instant::now();
    brain.run_recording(TICKS, &mut |spikes| {
        spikes.iter().for_each(|&s| counts[s as usize] += 1);
    });
    let wall = start.elapsed().as_secs_f64();
    let cpu_ms = cpu
        .zip(harness::cpu_seconds())
        .map(|(before, after)| (after - before) * 1e3);
    let a = brain.activity();
    let cpu_text = cpu_ms.map_or_else(String::new, |c| format!(", {c:.0} ms CPU"));
    println!(
        "lif-exp-delay-v1, {} driven at {RATE_HZ} Hz, {} thread(s): 1 s simulated in {:.0} ms{cpu_text} ({:.2}x real time); {} spikes, {} synaptic events",
        args.driven,
        args.threads,
        wall * 1e3,
        1.0 / wall,
        a.spikes,
        a.events
    );
    if args.brian2 {
        let flysim = Flysim {
            wall_ms: wall * 1e3,
            cpu_ms,
            counts,
        };
        if let Err(e) = compare_with_brian2(&profile, &conn, &chosen, &flysim) {
            eprintln!("shiu_fafb --brian2: {e}");
            std::process::exit(1);
        }
    }
}

/// The target directory this example was built into (`<target>/<profile>/examples/`), else the
/// workspace's `target`.
fn target_dir() -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
    std::env::current_exe()
        .ok()
        .filter(|exe| exe.parent().is_some_and(|p| p.ends_with("examples")))
        .and_then(|exe| exe.ancestors().nth(3).map(Path::to_path_buf))
        .unwrap_or(workspace)
}

/// Spikes of all neurons, of the driven ones and of the others.
fn spike_split(counts: &[u64], driven: &[u32]) -> (u64, u64, u64) {
    let total: u64 = counts.iter().sum();
    let of_driven: u64 = driven.iter().map(|&i| counts[i as usize]).sum();
    (total, of_driven, total - of_driven)
}

/// The `--brian2` mode: the same network and drive in Brian2, reported next to `flysim`.
fn compare_with_brian2(
    profile: &Profile,
    conn: &Connectome,
    driven: &[u32],
    flysim: &Flysim,
) -> Result<(), String> {
    let target = target_dir();
    let python = harness::brian2_python(&harness::venvs(&target))
        .map_err(|what| format!("the Brian2 comparison needs {what}"))?;
    let dir = target.join("brian2-shiu-fafb");
    let build = dir.join("build");
    if build.exists() {
        std::fs::remove_dir_all(&build).map_err(|e| format!("{}: {e}", build.display()))?;
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let start = Instant::now();
    let edges = dir.join("edges.csv");
    harness::write_edges(conn, &edges).map_err(|e| format!("{}: {e}", edges.display()))?;
    println!(
        "wrote {} edges to {} in {:.1?}; running Brian2 ({})",
        conn.edges(),
        edges.display(),
        start.elapsed(),
        python.display()
    );
    let mut config = harness::brian2_config(profile, &edges, driven, 1, "cpp_standalone");
    config["buildDir"] = serde_json::json!(build);
    config["openmpThreads"] = serde_json::json!(0);
    let start = Instant::now();
    let out = harness::run_brian2(&python, &dir, &config)?;
    let total_ms = start.elapsed().as_secs_f64() * 1e3;
    report(driven, flysim, &out, total_ms)
}

/// Prints Brian2's figures from the script's output `out`, the ratio and the spike counts.
fn report(
    driven: &[u32],
    flysim: &Flysim,
    out: &serde_json::Value,
    total_ms: f64,
) -> Result<(), String> {
    let t = &out["timings"];
    let ms = |key: &str| {
        t[key]
            .as_f64()
            .map(|s| s * 1e3)
            .ok_or_else(|| format!("the script's output has no timings.{key}"))
    };
    let run_ms = ms("runSeconds")?;
    println!(
        "Brian2 {} {}, 1 thread (no OpenMP): 1 s simulated in {run_ms:.0} ms CPU in its loop \
         ({:.2}x real time); the binary ran {:.0} ms, `make` {:.0} ms, loading the edges {:.0} ms, \
         building the model in Python {:.0} ms, network.run {:.0} ms; {total_ms:.0} ms in all \
         (wall, with Python's start-up, code generation and compilation)",
        out["brian2"].as_str().unwrap_or("?"),
        out["target"].as_str().unwrap_or("?"),
        1e3 / run_ms,
        ms("binarySeconds")?,
        ms("compileSeconds")?,
        ms("loadEdgesSeconds")?,
        ms("modelSeconds")?,
        out["wallSeconds"].as_f64().unwrap_or(f64::NAN) * 1e3,
    );
    let cpu = flysim.cpu_ms.map_or_else(String::new, |c| {
        format!(
            ", {:.2}x flysim's {c:.0} ms CPU",
            run_ms / c.max(f64::MIN_POSITIVE)
        )
    });
    println!(
        "per simulated second: Brian2 {run_ms:.0} ms vs flysim {:.0} ms: Brian2 takes {:.2}x flysim's wall time{cpu}",
        flysim.wall_ms,
        run_ms / flysim.wall_ms,
    );
    let theirs = harness::spike_counts(out)
        .into_iter()
        .next()
        .ok_or("the script's output has no trial")?;
    let (ours, theirs) = (
        spike_split(&flysim.counts, driven),
        spike_split(&theirs, driven),
    );
    println!(
        "spikes: flysim {} ({} by the {} driven, {} by the others), Brian2 {} ({} driven, {} others)",
        ours.0,
        ours.1,
        driven.len(),
        ours.2,
        theirs.0,
        theirs.1,
        theirs.2
    );
    Ok(())
}
