//! Session throughput and critical-path latency: transitions per second and the p50/p99 of
//! one transition (Prepare, executors, Advance, evaluation, Commit) for 1, 2 and 4 synthetic
//! agents on the counter arena, in each execution mode, pacing off.
//!
//! `cargo bench -p flysim --bench transitions` (release profile; process mode spawns the
//! `flysim` binary built beside it). `FLYSIM_BENCH_STEPS` sets the steps per run (default 2000);
//! `FLYSIM_BENCH_ONLY=<mode>[:<agents>]` (e.g. `process:2`) runs only the matching rows, for
//! profiling one configuration; `FLYSIM_BENCH_PHASES=1` adds the p50 of each phase (Prepare,
//! executors, Advance, evaluation, Commit) to every row; `FLY_SESSION_LOCAL_LANE=0` sends the
//! in-process and thread rows over the bus instead of the local lane, as it does for `flysim run`;
//! `FLYSIM_BENCH_BUSY_POLL_US=N` sets the coordinator's busy-poll window, as `--busy-poll-us`
//! does (default: the session's own default; 0 turns it off).

#![allow(
    clippy::disallowed_methods,
    reason = "a benchmark measures wall-clock time and takes its settings from the environment"
)]

use std::path::Path;
use std::time::Duration;

use flysim_session::launcher::{LaunchOptions, WorkerProgram};
use flysim_session::{Deadlines, RunHooks, RunOptions, run_plan};
use flysim_types::Id;
use flysim_types::plan::{LaunchPlan, RunMode, Transport};

/// The allocator `flysim` itself runs with, so the coordinator measured here is the shipped one.
#[global_allocator]
static ALLOCATOR: flysim_alloc::Allocator = flysim_alloc::Allocator;
use flysim_types::trace::DispatchOrder;

/// A composition of `n` synthetic flies, one port each.
fn plan(n: usize) -> LaunchPlan {
    let names = ["fly-a", "fly-b", "fly-c", "fly-d"];
    let mut text = String::from(
        "flysim-composition 1\nname \"bench\"\nseed-derivation \"seed-derivation-v1\"\nmaster-seed \"42\"\n\
         profile \"counter-fly\" { model \"synthetic\"; parameter \"press-rate\" 0.25; }\n\
         environment \"arena\" backend=\"arena\" {\n    world \"counter-v1\"\n",
    );
    for i in 0..n {
        text.push_str(&format!(
            "    port \"p{}\" {{ controller \"counter-pad\" version=1; buttons \"press\"; }}\n",
            i + 1
        ));
    }
    text.push_str("}\n");
    for (i, name) in names.iter().take(n).enumerate() {
        text.push_str(&format!(
            "agent \"{name}\" {{ profile \"counter-fly\"; port \"p{}\"; }}\n",
            i + 1
        ));
    }
    text.push_str("task \"counter-v1\"\nexecutor \"direct-v1\"\nrun { steps 10; }\n");
    flysim_compose::plan(
        flysim_compose::Input {
            name: "bench.kdl",
            bytes: text.as_bytes(),
            dir: Path::new("."),
        },
        None,
        &flysim_run::components::SPECS,
    )
    .unwrap_or_else(|d| panic!("{d:?}"))
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

/// The options of one bench run: pacing off, concurrent dispatch, this build as the worker.
fn options(
    mode: RunMode,
    transport: Transport,
    steps: u64,
    local_lane: bool,
    busy_poll: Duration,
) -> RunOptions {
    RunOptions {
        launch: LaunchOptions {
            mode,
            transport,
            worker_threads: None,
            runtime_parent: if Path::new("/dev/shm").is_dir() {
                "/dev/shm".into()
            } else {
                std::env::temp_dir()
            },
            program: Some(WorkerProgram {
                exe: env!("CARGO_BIN_EXE_flysim").into(),
                args: Vec::new(),
                env: Vec::new(),
            }),
            faults: std::collections::BTreeMap::new(),
            content: std::collections::BTreeMap::new(),
            local_lane,
        },
        dispatch: DispatchOrder::Concurrent,
        steps,
        deadlines: Deadlines::default(),
        session_id: Id::from_static("bench"),
        checkpoint_every: None,
        resume: None,
        busy_poll,
        pace: flysim_session::Pace::Unpaced,
    }
}

#[expect(
    clippy::print_stdout,
    reason = "a benchmark reports its figures on standard output"
)]
fn main() {
    let steps: u64 = std::env::var("FLYSIM_BENCH_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let only = std::env::var("FLYSIM_BENCH_ONLY").ok();
    let phases = std::env::var("FLYSIM_BENCH_PHASES").is_ok_and(|v| v == "1");
    let local_lane = std::env::var("FLY_SESSION_LOCAL_LANE").map_or(true, |v| v != "0");
    let busy_poll = std::env::var("FLYSIM_BENCH_BUSY_POLL_US")
        .ok()
        .and_then(|s| s.parse().ok())
        .map_or(
            flysim_session::spin::DEFAULT_BUSY_POLL,
            Duration::from_micros,
        );
    println!(
        "flysim session benchmark: {steps} steps per run, dispatch concurrent, pacing off, local lane {}, busy poll {} us",
        if local_lane { "on" } else { "off" },
        busy_poll.as_micros()
    );
    print!(
        "{:<11} {:<9} {:>6} {:>14} {:>10} {:>10}",
        "mode", "transport", "agents", "transitions/s", "p50 us", "p99 us"
    );
    if phases {
        print!(
            " {:>9} {:>9} {:>9} {:>9} {:>9}",
            "prepare", "apply", "advance", "evaluate", "commit"
        );
    }
    println!();
    for (mode, transport) in [
        (RunMode::InProcess, Transport::Memory),
        (RunMode::Thread, Transport::Memory),
        (RunMode::Process, Transport::Unix),
    ] {
        let mode_name = match mode {
            RunMode::InProcess => "in-process",
            RunMode::Thread => "thread",
            RunMode::Process => "process",
        };
        for agents in [1, 2, 4] {
            if let Some(only) = &only {
                let (m, a) = only.split_once(':').unwrap_or((only, ""));
                if m != mode_name || (!a.is_empty() && a != agents.to_string()) {
                    continue;
                }
            }
            let plan = plan(agents);
            let options = options(mode, transport, steps, local_lane, busy_poll);
            let mut totals = Vec::with_capacity(steps as usize);
            // Sized for the run, so that no row's bookkeeping grows a vector (and faults in
            // fresh pages) on the coordinator's thread while steps are being timed.
            let mut parts: [Vec<u64>; 5] =
                std::array::from_fn(|_| Vec::with_capacity(steps as usize));
            let outcome = run_plan(
                &plan,
                &options,
                &flysim_run::components::arena_registry(),
                RunHooks::default(),
                &mut |row| {
                    if row.behaviour.boundary.get() > 0 {
                        let t = &row.operational.phase_ns;
                        totals.push(t.total.get());
                        for (part, v) in parts
                            .iter_mut()
                            .zip([t.prepare, t.apply, t.advance, t.evaluate, t.commit])
                        {
                            part.push(v.get());
                        }
                    }
                    Ok(())
                },
            )
            .unwrap_or_else(|f| panic!("{}", f.error));
            totals.sort_unstable();
            let per_second = outcome.steps as f64 / (outcome.steps_ns as f64 / 1e9);
            let transport_name = match transport {
                Transport::Memory => "memory",
                Transport::Unix => "unix",
            };
            print!(
                "{:<11} {:<9} {:>6} {:>14.0} {:>10.1} {:>10.1}",
                mode_name,
                transport_name,
                agents,
                per_second,
                percentile(&totals, 0.50),
                percentile(&totals, 0.99)
            );
            if phases {
                for part in &mut parts {
                    part.sort_unstable();
                    print!(" {:>9.1}", percentile(part, 0.50));
                }
            }
            println!();
        }
    }
}
