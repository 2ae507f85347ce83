//! `flysim run` and `flysim replay` end to end: the run digest across every execution mode,
//! transport, dispatch order and thread count (process mode spawns this very binary), across
//! working directories and master seeds; the run directory; an agent process killed mid-step.

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use flysim_types::workers::Method;

use crate::{codes_in, flysim, flysim_in, root, synthetic_variant};

/// Runs the synthetic composition with `extra` arguments and returns the `--json` object.
fn run_json(state: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "run",
        "compositions/synthetic.kdl",
        "--steps",
        "30",
        "--json",
        "--state-dir",
        state.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let run = flysim(&args, b"");
    assert_eq!(run.status, 0, "{extra:?}: {}", run.stderr);
    assert_eq!(
        run.stderr, "",
        "no progress bar when stderr is not a terminal"
    );
    serde_json::from_str(&run.stdout).unwrap()
}

fn reference() -> String {
    let tmp = tempfile::tempdir().unwrap();
    let doc = run_json(
        tmp.path(),
        &[
            "--mode",
            "in-process",
            "--transport",
            "memory",
            "--dispatch",
            "sequential",
        ],
    );
    doc["runDigest"].as_str().unwrap().to_owned()
}

/// One test per mode and transport; each runs every dispatch order with 1 and 2 worker threads
/// (the first with busy polling off, the second with a long window) and requires the reference
/// run digest, which the default window gave.
macro_rules! matrix {
    ($($name:ident: $mode:literal, $transport:literal;)*) => {$(
        #[test]
        fn $name() {
            let expected = reference();
            let tmp = tempfile::tempdir().unwrap();
            for dispatch in ["sequential", "concurrent", "reversed"] {
                for (threads, poll) in [("1", "0"), ("2", "1000")] {
                    let doc = run_json(tmp.path(), &[
                        "--mode", $mode, "--transport", $transport,
                        "--dispatch", dispatch, "--worker-threads", threads,
                        "--busy-poll-us", poll,
                    ]);
                    assert_eq!(
                        doc["runDigest"], expected.as_str(),
                        "{} {} {dispatch} {threads}", $mode, $transport
                    );
                    assert_eq!(doc["steps"], 30);
                }
            }
        }
    )*};
}

matrix! {
    in_process_over_memory: "in-process", "memory";
    in_process_over_unix: "in-process", "unix";
    threads_over_memory: "thread", "memory";
    threads_over_unix: "thread", "unix";
    processes_over_unix: "process", "unix";
}

/// The shipped composition's LIF flies each read their own port's row: from the rewards of the
/// trace (a press earns one), every counter follows the set-point rule of `counter-toy-v1`,
/// rising below 3 and falling from 3, in process mode too.
#[test]
fn the_lif_flies_press_while_their_own_counter_is_below_three() {
    let tmp = tempfile::tempdir().unwrap();
    for mode in [["in-process", "memory"], ["process", "unix"]] {
        let doc = run_json(tmp.path(), &["--mode", mode[0], "--transport", mode[1]]);
        let trace = std::fs::read_to_string(
            Path::new(doc["runDir"].as_str().unwrap()).join("trace.ndjson"),
        )
        .unwrap();
        let mut counters = std::collections::BTreeMap::new();
        let mut presses = 0;
        for line in trace.lines().skip(1) {
            let row: serde_json::Value = serde_json::from_str(line).unwrap();
            for agent in row["behaviour"]["agents"].as_array().unwrap() {
                let counter = counters
                    .entry(agent["agentId"].as_str().unwrap().to_owned())
                    .or_insert(0i64);
                let pressed = !agent["rewards"].as_array().unwrap().is_empty();
                assert_eq!(pressed, *counter < 3, "{mode:?} {agent}");
                *counter += if pressed { 1 } else { -1 };
                presses += usize::from(pressed);
            }
        }
        assert_eq!(counters.len(), 2);
        assert_eq!(presses, 2 * (3 + 27 / 2), "{mode:?}");
    }
}

/// Runs the synthetic composition with `extra` arguments in a fresh state directory and
/// requires that nothing started, not even a run directory.
fn refused_before_anything_starts(extra: &[&str]) -> crate::Run {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let mut args = vec!["run", "compositions/synthetic.kdl"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--state-dir", state.to_str().unwrap()]);
    let run = flysim(&args, b"");
    assert!(
        !state.exists(),
        "nothing was started, not even a run directory"
    );
    run
}

#[test]
fn a_busy_poll_window_over_a_second_is_refused_before_anything_starts() {
    let run = refused_before_anything_starts(&["--busy-poll-us", "1000001"]);
    assert_eq!(run.status, 2, "a usage error: {}", run.stderr);
    assert!(run.stderr.contains("0..=1000000"), "{}", run.stderr);
}

#[test]
fn processes_over_memory_are_refused_before_anything_starts() {
    let run = refused_before_anything_starts(&["--mode", "process", "--transport", "memory"]);
    assert_eq!(run.status, 1);
    assert_eq!(codes_in(&run.stderr), ["FS0311"]);
}

#[test]
fn the_run_digest_does_not_depend_on_the_working_directory_and_the_seed_does_change_it() {
    let expected = reference();
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let absolute = root().join("compositions/synthetic.kdl");
    let run = flysim_in(
        tmp.path(),
        &[
            ("FLYSIM_HOME", home.to_str().unwrap()),
            ("TZ", "Pacific/Chatham"),
        ],
        &["run", absolute.to_str().unwrap(), "--steps", "30", "--json"],
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["runDigest"], expected.as_str());
    assert!(Path::new(doc["runDir"].as_str().unwrap()).starts_with(home.join("state/runs")));
    // `flysim FILE.kdl` from the composition's own directory (a copy, with its profile),
    // state in ./.flysim.
    let copied = synthetic_variant(&tmp.path().join("c"), "synthetic.kdl", |t| t);
    let copy = copied.parent().unwrap();
    let run = flysim_in(copy, &[], &["synthetic.kdl", "--steps", "30"]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    let line = run.stdout.lines().last().unwrap();
    assert!(
        line.contains("paused at step 30 of 600 (its --steps bound) in ")
            && line.contains(&format!(
                " s, fly-a scored 16, fly-b scored 16; runDigest={expected}; "
            ))
            && line.ends_with(".flysim/runs/synthetic-78f0706920bb-1"),
        "{}",
        run.stdout
    );
    assert!(copy.join(".flysim/runs").is_dir());
    // Another master seed: another digest.
    synthetic_variant(&tmp.path().join("c"), "seed.kdl", |t| {
        t.replace("master-seed \"42\"", "master-seed \"43\"")
    });
    let run = flysim_in(copy, &[], &["run", "seed.kdl", "--steps", "30", "--json"]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    let other: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_ne!(other["runDigest"], expected.as_str());
}

#[test]
fn a_run_writes_its_directory_and_replay_checks_it() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let run = flysim(
        &[
            "run",
            "compositions/synthetic.kdl",
            "--steps",
            "12",
            "--state-dir",
            state.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    let line = run.stdout.trim_end();
    let run_id = line
        .strip_prefix("run ")
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    assert!(
        line.contains(" paused at step 12 of 600 (its --steps bound) in "),
        "{line}"
    );
    let dir = state.join("runs").join(run_id);
    assert!(
        line.ends_with(&format!("; {}", dir.display())),
        "the final line ends with the run directory: {line}"
    );
    let trace = std::fs::read_to_string(dir.join("trace.ndjson")).unwrap();
    assert_eq!(trace.lines().count(), 13);
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["stepsBound"], "12");
    // Stopped short of the plan's 600 steps: paused, never complete.
    assert_eq!(manifest["status"], "paused");
    let digest = line
        .split("; ")
        .find_map(|part| part.strip_prefix("runDigest="))
        .unwrap();
    assert!(
        digest.starts_with("sha256:") && digest.len() == 71,
        "{line}"
    );
    let replay = flysim(
        &["replay", dir.to_str().unwrap(), "--assert-digest", digest],
        b"",
    );
    assert_eq!(replay.status, 0, "{}", replay.stderr);
    let wrong = format!("sha256:{}", "0".repeat(64));
    let replay = flysim(
        &["replay", dir.to_str().unwrap(), "--assert-digest", &wrong],
        b"",
    );
    assert_eq!(replay.status, 7);
    assert_eq!(codes_in(&replay.stderr), ["FS0404"]);
    assert!(replay.stderr.contains(&digest[7..]) && replay.stderr.contains(&wrong[7..]));
}

#[test]
fn the_recorded_fixture_run_still_replays() {
    let run = flysim(&["replay", "fixtures/runs/synthetic-3"], b"");
    assert_eq!(
        run.status, 0,
        "the build no longer reproduces fixtures/runs/synthetic-3; if behaviour changed on \
         purpose, record it again with `flysim run compositions/synthetic.kdl --steps 3` and \
         copy its plan.json, trace.ndjson, manifest.json and content/ (no checkpoints):\n{}",
        run.stderr
    );
}

/// An agent process killed mid-step: the epoch fails, bounded, naming the agent; no hang.
#[test]
fn an_agent_process_killed_mid_step_fails_the_epoch_naming_it() {
    use flysim_session::launcher::{LaunchOptions, WorkerProgram};
    use flysim_session::{Deadlines, Phase, RunHooks, RunOptions, run_plan};
    use flysim_types::Id;
    use flysim_types::plan::{RunMode, Transport};
    use flysim_types::trace::DispatchOrder;
    use flysim_worker::WorkerFaults;
    use flysim_worker::faults::FaultPoint;

    // Synthetic agents: the coordinator's registry here is the session's built-in one.
    let path = root().join("fixtures/compositions/ok/synthetic-agents.kdl");
    let bytes = std::fs::read(&path).unwrap();
    let plan = flysim_compose::plan(
        flysim_compose::Input {
            name: "synthetic-agents.kdl",
            bytes: &bytes,
            dir: path.parent().unwrap(),
        },
        None,
        &flysim_run::components::SPECS,
    )
    .unwrap();
    let fly_b = Id::parse("fly-b").unwrap();
    let mut faults = std::collections::BTreeMap::new();
    faults.insert(
        fly_b.clone(),
        WorkerFaults {
            stall: Some((
                FaultPoint {
                    method: Method::AgentPrepare,
                    step: 3,
                },
                Duration::from_secs(20),
            )),
            ..WorkerFaults::default()
        },
    );
    let options = RunOptions {
        launch: LaunchOptions {
            mode: RunMode::Process,
            transport: Transport::Unix,
            worker_threads: None,
            runtime_parent: std::env::temp_dir(),
            program: Some(WorkerProgram {
                exe: env!("CARGO_BIN_EXE_flysim").into(),
                args: Vec::new(),
                env: Vec::new(),
            }),
            faults,
            content: std::collections::BTreeMap::new(),
            local_lane: true,
        },
        dispatch: DispatchOrder::Concurrent,
        steps: 10,
        deadlines: Deadlines {
            budget: Duration::from_secs(10),
            ..Deadlines::default()
        },
        session_id: Id::parse("kill-test").unwrap(),
        checkpoint_every: None,
        resume: None,
        busy_poll: flysim_session::spin::DEFAULT_BUSY_POLL,
        pace: flysim_session::Pace::Unpaced,
    };
    let pid = Arc::new(Mutex::new(None));
    let (keep, take) = (Arc::clone(&pid), Arc::clone(&pid));
    let hooks = RunHooks {
        launched: Some(Box::new(move |launch| {
            use std::os::unix::fs::PermissionsExt as _;
            let pid = launch.pid(&fly_b).unwrap();
            // Worker processes start with a cleared environment, in a private directory.
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
            assert!(environ.is_empty(), "{}", String::from_utf8_lossy(&environ));
            for dir in [
                launch.runtime_dir().to_owned(),
                launch.runtime_dir().join("sock"),
            ] {
                let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
                assert_eq!(mode, 0o700, "{}", dir.display());
            }
            *keep.lock().unwrap() = Some(pid);
        })),
        phase: Some(Box::new(move |phase, step| {
            if phase == Phase::Preparing && step == 3 {
                let pid: u32 = take.lock().unwrap().unwrap();
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(200));
                    let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
                });
            }
        })),
        ..RunHooks::default()
    };
    let begun = Instant::now();
    let mut rows = 0;
    let failure = run_plan(
        &plan,
        &options,
        &flysim_run::components::arena_registry(),
        hooks,
        &mut |_| {
            rows += 1;
            Ok(())
        },
    )
    .unwrap_err();
    assert_eq!(failure.error.code_str(), "FS0308", "{}", failure.error);
    assert!(
        failure.error.to_string().contains("fly-b"),
        "{}",
        failure.error
    );
    assert_eq!(rows, 4, "boundaries 0..=3 stand");
    assert!(
        begun.elapsed() < Duration::from_secs(8),
        "no hang: {:?}",
        begun.elapsed()
    );
}
