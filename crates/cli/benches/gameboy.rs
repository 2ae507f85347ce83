//! The Game Boy side by side, in one run: binjgb's own frame loop in plain C, the Rust
//! wrapper's frame loop, and `compositions/gameboy.kdl` with the synthetic agent in each
//! execution mode, pacing off, no checkpoints.
//!
//! `cargo bench -p flysim --bench gameboy` with `BINJGB_SRC` set (release profile; the session
//! rows run the `flysim` binary built beside it and read `timings.stepsNs` from the run's
//! manifest, so they measure exactly `flysim run`'s step loop, trace writing included).
//! `FLYSIM_BENCH_ROUNDS` sets the rounds (default 5); the rows are interleaved round by round so
//! a noisy moment touches all of them, and every figure is the median over the rounds.
//! `FLYSIM_BENCH_BASELINE=<path to another flysim binary>` (an older build, say) adds that
//! build's session rows, run right after this build's in every round, and the speed-up of this
//! build over it: a before/after measured in one run.
//!
//! Session overhead is the in-process time per step minus the wrapper's time per frame; the
//! goal (issue 7) compares it with the plain C frame time. On a shared virtual machine the
//! frame itself runs 10% slower or faster for minutes at a time, so the overhead is taken within
//! each round: the in-process run is bracketed by two wrapper loops (together as many frames as
//! the run has steps), its overhead is its time per step minus their mean, as a share of that
//! round's plain C frame, and the figure is the median over the rounds (with the smallest and
//! largest beside it). The time per step is the step loop's mean; the median row-to-row step is
//! reported beside it, since bursts of slow frames move the mean by several microseconds from
//! run to run. The SHA-256 of one 160×144 RGBA8 frame is reported beside it: the behaviour trace records it for every step, and the
//! coordinator computes it on its digest thread while the next step runs (in-process mode on the
//! otherwise idle core; in thread and process mode beside the workers).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use flysim_binjgb::{Availability, Buttons, Emulator, FRAME_BYTES, availability, plain_c_frames};

const FRAMES: u32 = 600;
const STEPS: u64 = 1200;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// gameboy.kdl with its fly's profile replaced by the synthetic agent and no checkpoints, written
/// to `dir/compositions/` beside a `dir/fixtures` link, so its relative asset paths resolve.
fn synthetic_gameboy(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(workspace().join("compositions/gameboy.kdl")).unwrap();
    let start = text.find("profile \"arena-fly\" {").unwrap();
    let end = start + text[start..].find("\n}\n").unwrap() + 3;
    let fixtures = workspace().join("fixtures").canonicalize().unwrap();
    std::os::unix::fs::symlink(&fixtures, dir.join("fixtures")).unwrap();
    std::fs::create_dir(dir.join("compositions")).unwrap();
    let text = format!(
        "{}profile \"arena-fly\" {{\n    model \"synthetic\"\n}}\n{}",
        &text[..start],
        &text[end..]
    )
    .lines()
    .filter(|l| !l.trim_start().starts_with("checkpoint "))
    .collect::<Vec<_>>()
    .join("\n");
    let path = dir.join("compositions/gameboy-synthetic.kdl");
    std::fs::write(&path, text).unwrap();
    path
}

/// The transaction's phases as the trace's operational fields time them.
const PHASES: [&str; 6] = ["prepare", "apply", "advance", "evaluate", "commit", "total"];

/// What one session run measured, in microseconds.
struct Session {
    /// Per step of the step loop, on average (`timings.stepsNs` over the steps).
    mean: f64,
    /// Row to row (`wallTimeNs`), the median: a step as it usually runs, without the bursts of
    /// a noisy machine that the mean keeps.
    median: f64,
    /// The median of each of [`PHASES`] over the rows.
    phases: [f64; 6],
}

/// One `flysim run` of `STEPS` steps in `mode` (memory transport, or Unix sockets across
/// processes).
fn session_step_us(flysim: &Path, composition: &Path, state: &Path, mode: &str) -> Session {
    let out = Command::new(flysim)
        .args([
            "run",
            "--json",
            "--mode",
            mode,
            "--steps",
            &STEPS.to_string(),
        ])
        .args([
            "--transport",
            if mode == "process" { "unix" } else { "memory" },
        ])
        .arg("--state-dir")
        .arg(state)
        .arg(composition)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{} run --mode {mode} failed: {}",
        flysim.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let run_dir = PathBuf::from(summary["runDir"].as_str().unwrap());
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("manifest.json")).unwrap()).unwrap();
    let steps_ns: f64 = manifest["timings"]["stepsNs"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let trace = std::fs::read_to_string(run_dir.join("trace.ndjson")).unwrap();
    let rows: Vec<serde_json::Value> = trace
        .lines()
        .skip(1) // boundary 0: no transaction
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let phases = PHASES.map(|phase| {
        median(
            rows.iter()
                .map(|r| {
                    let ns: f64 = r["operational"]["phaseNs"][phase]
                        .as_str()
                        .unwrap()
                        .parse()
                        .unwrap();
                    ns / 1e3
                })
                .collect(),
        )
    });
    let wall: Vec<f64> = rows
        .iter()
        .map(|r| {
            let ns: f64 = r["operational"]["wallTimeNs"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap();
            ns / 1e3
        })
        .collect();
    std::fs::remove_dir_all(&run_dir).unwrap();
    Session {
        mean: steps_ns / 1e3 / STEPS as f64,
        median: median(wall.windows(2).map(|w| w[1] - w[0]).collect()),
        phases,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The wrapper's frame loop: a fresh emulator, `FRAMES` frames with audio drained, per frame.
fn wrapper_frame_us(rom: &[u8]) -> f64 {
    let mut emu = Emulator::new(rom).unwrap();
    emu.set_buttons(Buttons::default());
    let begun = Instant::now();
    for _ in 0..FRAMES {
        emu.run_frame().unwrap();
    }
    std::hint::black_box(emu.take_audio());
    per_frame_us(begun, FRAMES)
}

/// One overhead line: the median over the rounds of (microseconds, share of the plain C frame),
/// and the smallest and largest share.
#[expect(clippy::print_stdout, reason = "a benchmark reports its figures")]
fn overhead_row(name: &str, rounds: &[(f64, f64)], goal: &str) {
    let us = median(rounds.iter().map(|r| r.0).collect());
    let shares: Vec<f64> = rounds.iter().map(|r| r.1).collect();
    let (low, high) = shares
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), s| {
            (l.min(*s), h.max(*s))
        });
    println!(
        "{name:<44} {us:>10.1}  ({:.1}% of the plain C frame;{goal} rounds {low:.1}..{high:.1}%)",
        median(shares)
    );
}

fn per_frame_us(begun: Instant, frames: u32) -> f64 {
    begun.elapsed().as_secs_f64() * 1e6 / f64::from(frames)
}

#[expect(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark reports its figures on standard output, its skip on standard error"
)]
fn main() {
    if let Availability::Absent { reason } = availability() {
        eprintln!("skipped: the binjgb core is absent from this build: {reason}");
        return;
    }
    let rounds: usize = std::env::var("FLYSIM_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let flysim = PathBuf::from(env!("CARGO_BIN_EXE_flysim"));
    let baseline = std::env::var_os("FLYSIM_BENCH_BASELINE").map(PathBuf::from);
    if let Some(b) = &baseline {
        assert!(
            b.is_file(),
            "FLYSIM_BENCH_BASELINE: no file at {}",
            b.display()
        );
    }
    let rom = std::fs::read(workspace().join("fixtures/roms/fly-arena.gb")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let composition = synthetic_gameboy(dir.path());
    let modes = ["in-process", "thread", "process"];
    let (mut plain, mut wrapper, mut hash) = (Vec::new(), Vec::new(), Vec::new());
    let mut session: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    let mut medians: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    let mut phases: Vec<Vec<[f64; 6]>> = vec![Vec::new(); modes.len()];
    let mut before: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    // Per round, the in-process overhead (mean step, median step) as a share of the plain C frame.
    let (mut overhead, mut typical_overhead) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let begun = Instant::now();
        plain_c_frames(&rom, FRAMES).unwrap();
        let plain_us = per_frame_us(begun, FRAMES);
        plain.push(plain_us);

        let before_us = wrapper_frame_us(&rom);
        let frame = Emulator::new(&rom).unwrap().framebuffer();
        assert_eq!(frame.len(), FRAME_BYTES);
        let begun = Instant::now();
        for _ in 0..FRAMES {
            std::hint::black_box(flysim_types::digest::sha256(std::hint::black_box(&frame)));
        }
        hash.push(per_frame_us(begun, FRAMES));

        for (i, mode) in modes.iter().enumerate() {
            let run = session_step_us(&flysim, &composition, dir.path(), mode);
            if i == 0 {
                let after_us = wrapper_frame_us(&rom);
                let frame_us = f64::midpoint(before_us, after_us);
                wrapper.extend([before_us, after_us]);
                overhead.push((
                    run.mean - frame_us,
                    100.0 * (run.mean - frame_us) / plain_us,
                ));
                typical_overhead.push((
                    run.median - frame_us,
                    100.0 * (run.median - frame_us) / plain_us,
                ));
            }
            session[i].push(run.mean);
            medians[i].push(run.median);
            phases[i].push(run.phases);
            if let Some(b) = &baseline {
                before[i].push(session_step_us(b, &composition, dir.path(), mode).mean);
            }
        }
    }
    let (plain, wrapper, hash) = (median(plain), median(wrapper), median(hash));
    println!(
        "flysim Game Boy benchmark: fly-arena, {FRAMES} frames per loop, {STEPS} steps per run, \
         median of {rounds} interleaved rounds"
    );
    println!("{:<44} {:>10} {:>10}", "", "us/frame", "frames/s");
    let row = |name: &str, us: f64| println!("{name:<44} {us:>10.1} {:>10.0}", 1e6 / us);
    row("binjgb frame loop, plain C", plain);
    row("wrapper frame loop", wrapper);
    println!(
        "{:<44} {:>10.1}  ({:+.1}% of plain C)",
        "",
        wrapper - plain,
        100.0 * (wrapper - plain) / plain
    );
    row("SHA-256 of one RGBA8 frame", hash);
    let runs = session.into_iter().zip(medians).zip(phases).zip(before);
    for (mode, (((times, step_medians), parts), before)) in modes.iter().zip(runs) {
        let us = median(times);
        row(&format!("gameboy.kdl, synthetic agent, {mode}"), us);
        if !before.is_empty() {
            let was = median(before);
            row("  the same, FLYSIM_BENCH_BASELINE's build", was);
            println!(
                "{:<44} {:>10}  (x{:.2})",
                "  speed-up of this build",
                "",
                was / us
            );
        }
        let phase_us: Vec<String> = PHASES
            .iter()
            .enumerate()
            .map(|(i, name)| format!("{name} {:.1}", median(parts.iter().map(|p| p[i]).collect())))
            .collect();
        println!("    median phases (us): {}", phase_us.join(", "));
        if *mode == "in-process" {
            // The goal's figure is the mean's; the median row-to-row step says how much of it
            // a noisy machine's bursts add.
            overhead_row("  session overhead per step", &overhead, " goal <= 10%;");
            row("  median step, row to row", median(step_medians));
            overhead_row("  overhead of the median step", &typical_overhead, "");
        }
    }
}
