//! The whole CPU of a Game Boy run against its emulation alone: issue 21's "whole CPU" line.
//!
//! `cargo bench -p flysim --bench whole_cpu` (with `BINJGB_SRC`) runs, round by round,
//! - `flysim run --json --mode in-process --steps N` of `compositions/gameboy.kdl` with the
//!   synthetic agent and no checkpoints, and
//! - `flysim rom check <that composition's ROM> --frames N`: the same ROM for the same frames,
//!   emulation only,
//!
//! and prints the CPU time of each (user + system, every thread, read from this process's
//! children's times in `/proc/self/stat` before and after the child: 10 ms ticks, about 1 % of a
//! 3,600-step run) and the run's ratio to the `rom check` of its round; the figure is the median
//! of the rounds' ratios (the goal: at most 1.4). `FLYSIM_BENCH_STEPS` (default 3600) and
//! `FLYSIM_BENCH_ROUNDS` (default 5) set the work; `FLYSIM_BENCH_BASELINE=<another flysim
//! binary>` adds that build's run to every round, with its own ratio and the median of this
//! build's CPU over the baseline's, round by round. Rows interleave within a round, so a noisy
//! moment of a shared machine touches all of them; the run digests of every round must agree.
//! On a machine others share, a busy spell can be shorter than a round and slow one row of it
//! only, so the bench also prints each row's least CPU over the rounds (the least disturbed
//! one) and the ratio of those.

#![allow(
    clippy::disallowed_methods,
    reason = "a benchmark takes its settings from the environment"
)]

mod support;

use support::{baseline, median, setting};

use std::path::{Path, PathBuf};
use std::process::Command;

/// The CPU time of this process's waited-for children so far, in ms (Linux reports it in
/// `USER_HZ` ticks, 100 a second on every architecture flysim builds for).
fn children_cpu_ms() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // The fields after the command name, which is in parentheses and may hold spaces: the
    // first of them is field 3 (`state`), so `cutime` (16) and `cstime` (17) are 13 and 14.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .collect();
    let ticks = |i: usize| fields[i].parse::<u64>().unwrap();
    (ticks(13) + ticks(14)) * 10
}

/// Runs `command` to its end and returns its CPU time in ms and its standard output.
fn cpu_ms(mut command: Command) -> (u64, Vec<u8>) {
    let before = children_cpu_ms();
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (children_cpu_ms() - before, out.stdout)
}

/// `flysim run` of `composition` for `steps` steps: its CPU time and run digest.
fn run(flysim: &Path, composition: &Path, dir: &Path, steps: u64) -> (u64, String) {
    let mut command = Command::new(flysim);
    command
        .args(["run", "--json", "--mode", "in-process", "--steps"])
        .arg(steps.to_string())
        .arg(composition)
        .current_dir(dir);
    let (ms, stdout) = cpu_ms(command);
    let summary: serde_json::Value = serde_json::from_slice(&stdout).unwrap();
    (ms, summary["runDigest"].as_str().unwrap().to_owned())
}

/// The Game Boy ROM `composition` loads (its `content … format="gb"` line's path).
fn rom_of(composition: &Path) -> PathBuf {
    let text = std::fs::read_to_string(composition).unwrap();
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("content ") && l.contains("format=\"gb\""))
        .unwrap();
    let path = line
        .split("path=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    composition.parent().unwrap().join(path)
}

#[expect(
    clippy::print_stdout,
    reason = "a benchmark reports its figures on standard output"
)]
fn main() {
    if support::without_core() {
        return;
    }
    let steps = setting("FLYSIM_BENCH_STEPS", 3600).max(1);
    let rounds = setting("FLYSIM_BENCH_ROUNDS", 5).max(1);
    let baseline = baseline();
    let flysim = Path::new(env!("CARGO_BIN_EXE_flysim"));
    let dir = tempfile::tempdir().unwrap();
    let composition = support::synthetic_gameboy(dir.path());
    let rom = rom_of(&composition);
    println!(
        "flysim CPU (user + system) of a {steps}-step in-process run of gameboy.kdl with the \
         synthetic agent, against `flysim rom check` of its ROM for {steps} frames, {rounds} rounds"
    );
    let (mut ratios, mut baseline_ratios, mut speedups, mut digests) =
        (vec![], vec![], vec![], vec![]);
    // Each row's CPU, round by round: this build's run, `rom check`, the baseline's run.
    let (mut runs, mut checks, mut befores) = (vec![], vec![], vec![]);
    for round in 1..=rounds {
        let (this, digest) = run(flysim, &composition, dir.path(), steps);
        digests.push(digest);
        let mut check = Command::new(flysim);
        check
            .args(["rom", "check"])
            .arg(&rom)
            .arg("--frames")
            .arg(steps.to_string());
        let (emulation, _) = cpu_ms(check);
        runs.push(this);
        checks.push(emulation);
        let ratio = this as f64 / emulation.max(1) as f64;
        ratios.push(ratio);
        let mut line =
            format!("  round {round}: run {this} ms, rom check {emulation} ms, ratio {ratio:.3}");
        if let Some(baseline) = &baseline {
            let (before, digest) = run(baseline, &composition, dir.path(), steps);
            digests.push(digest);
            befores.push(before);
            let before_ratio = before as f64 / emulation.max(1) as f64;
            baseline_ratios.push(before_ratio);
            speedups.push(this as f64 / before.max(1) as f64);
            line.push_str(&format!(
                "; baseline run {before} ms, ratio {before_ratio:.3}"
            ));
        }
        println!("{line}");
    }
    println!(
        "  run / rom check, median of rounds: {:.3} (goal: at most 1.4)",
        median(ratios)
    );
    let least = |cpu: &[u64]| cpu.iter().copied().min().unwrap_or(0).max(1);
    let (run_least, check_least) = (least(&runs), least(&checks));
    println!(
        "  least CPU of the rounds: run {run_least} ms, rom check {check_least} ms, ratio {:.3}",
        run_least as f64 / check_least as f64
    );
    if baseline.is_some() {
        let before_least = least(&befores);
        println!(
            "  least CPU of the rounds: baseline run {before_least} ms, ratio {:.3}; \
             this build / the baseline {:.3}",
            before_least as f64 / check_least as f64,
            run_least as f64 / before_least as f64
        );
        println!(
            "  baseline run / rom check, median of rounds: {:.3}",
            median(baseline_ratios)
        );
        println!(
            "  this build's CPU / the baseline's, median of rounds: {:.3}",
            median(speedups)
        );
    }
    assert!(
        digests.windows(2).all(|w| w[0] == w[1]),
        "the runs gave different run digests: {digests:?}"
    );
}
