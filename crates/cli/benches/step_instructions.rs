//! Instructions per Game Boy step, counted by callgrind: issue 21's deterministic measure of
//! what a step costs beyond the emulated frame.
//!
//! `cargo bench -p flysim --bench step_instructions` (with `BINJGB_SRC`, and `valgrind` on the
//! PATH) runs `compositions/gameboy.kdl` with the synthetic agent and no checkpoints, in-process,
//! under `valgrind --tool=callgrind` for N and 2N steps (`FLYSIM_BENCH_STEPS`, default 400) and
//! reports (count(2N) - count(N)) / N, so that start-up and shutdown cancel out:
//! - **the step path**: the coordinator's transaction with binjgb's frame left out
//!   (`--collect-atstart=no --toggle-collect=*Coordinator*transaction*
//!   --toggle-collect=fly_gb_run_frame`: collection turns on inside a transaction and off again
//!   inside the frame it calls);
//! - **every thread outside the frame**, the digest thread's hashing included: everything
//!   (no option) less the frame (`--toggle-collect=fly_gb_run_frame`, which counts only inside
//!   it; emulation is deterministic, so the frame is counted once).
//!
//! Valgrind runs a process's threads one at a time, so how far the digest thread falls behind,
//! and with it how many screen buffers are still held when the world draws a new picture,
//! changes from run to run; the rounds (`FLYSIM_BENCH_ROUNDS`, default 3) show that spread, and
//! each figure is their median. The run digests of every round are compared: a measurement of
//! a run that went differently would be no measurement.

#![allow(
    clippy::disallowed_methods,
    reason = "a benchmark takes its settings from the environment"
)]

mod support;

use std::path::Path;
use std::process::Command;

/// Counts the coordinator's transactions without the frame inside them.
const STEP_PATH: &[&str] = &[
    "--collect-atstart=no",
    "--toggle-collect=*Coordinator*transaction*",
    "--toggle-collect=fly_gb_run_frame",
];

/// Counts only inside binjgb's frame.
const FRAME: &[&str] = &["--toggle-collect=fly_gb_run_frame"];

/// Counts everything.
const EVERYTHING: &[&str] = &[];

/// The instructions callgrind counted in `steps` steps, and the run's digest.
fn count(
    flysim: &Path,
    composition: &Path,
    dir: &Path,
    collect: &[&str],
    steps: u64,
) -> (u64, String) {
    let out_file = dir.join(format!("callgrind.{steps}"));
    let out = Command::new("valgrind")
        .arg("--tool=callgrind")
        .args(collect)
        .arg(format!("--callgrind-out-file={}", out_file.display()))
        .arg(flysim)
        .args(["run", "--json", "--mode", "in-process", "--steps"])
        .arg(steps.to_string())
        .arg(composition)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "flysim under callgrind failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let digest = summary["runDigest"].as_str().unwrap().to_owned();
    let text = std::fs::read_to_string(&out_file).unwrap();
    let totals = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("totals:")
                .or_else(|| l.strip_prefix("summary:"))
        })
        .and_then(|n| n.trim().parse().ok())
        .unwrap();
    (totals, digest)
}

fn median(values: &mut [u64]) -> u64 {
    values.sort_unstable();
    values[values.len() / 2]
}

#[expect(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark reports its figures on standard output, its skip on standard error"
)]
fn main() {
    if support::without_core() {
        return;
    }
    if Command::new("valgrind").arg("--version").output().is_err() {
        eprintln!("skipped: valgrind is missing (Debian: apt-get install valgrind)");
        return;
    }
    let steps = support::setting("FLYSIM_BENCH_STEPS", 400).max(1);
    let rounds = support::setting("FLYSIM_BENCH_ROUNDS", 3).max(1);
    let flysim = Path::new(env!("CARGO_BIN_EXE_flysim"));
    let dir = tempfile::tempdir().unwrap();
    let composition = support::synthetic_gameboy(dir.path());
    println!(
        "flysim instructions per Game Boy step (callgrind): gameboy.kdl, synthetic agent, \
         in-process, ({} - {steps} steps) / {steps}, {rounds} rounds",
        2 * steps
    );
    let mut digests = Vec::new();
    let mut per_step = |collect: &[&str]| {
        let (short, a) = count(flysim, &composition, dir.path(), collect, steps);
        let (long, b) = count(flysim, &composition, dir.path(), collect, 2 * steps);
        digests.push((a, b));
        long.saturating_sub(short) / steps
    };
    let frame = per_step(FRAME);
    let (mut path, mut outside) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        path.push(per_step(STEP_PATH));
        outside.push(per_step(EVERYTHING).saturating_sub(frame));
    }
    println!("  {:<40} {frame:>10}", "binjgb's frame (fly_gb_run_frame)");
    for (name, values) in [
        ("step path (transaction without the frame)", &mut path),
        ("every thread outside the frame", &mut outside),
    ] {
        let rounds_text = values
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        println!(
            "  {name:<40} {:>10}  (rounds: {rounds_text})",
            median(values)
        );
    }
    assert!(
        digests.windows(2).all(|w| w[0] == w[1]),
        "the runs under callgrind gave different run digests: {digests:?}"
    );
}
