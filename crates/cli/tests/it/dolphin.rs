//! `compositions/dolphin.kdl` end to end: two synthetic flies on the project's own GameCube test
//! program in a real Dolphin. With Dolphin 5.0-17995 and Xvfb installed, the run digest repeats
//! across runs and in process mode, another master seed changes what the console reads, and every run leaves no
//! process and no file in its temporary directory; without them, the composition is refused
//! with FS0811. Every run of the binary has a deadline.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::{Run, codes_in, flysim, root};

/// Steps of each run.
const STEPS: u64 = 120;
/// How long one run of the binary may take (boot, replay check, 120 fields on a busy machine).
const DEADLINE: Duration = Duration::from_secs(240);

/// The status and detail `flysim backends` gives Dolphin.
pub(crate) fn dolphin_status() -> (String, String) {
    let run = flysim(&["backends", "--json"], b"");
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let row = doc["backends"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["backend"] == "dolphin")
        .cloned()
        .unwrap();
    (
        row["status"].as_str().unwrap().to_owned(),
        row["detail"].as_str().unwrap().to_owned(),
    )
}

/// Whether Dolphin is missing here; if so, says so on standard error.
pub(crate) fn skipped_without_dolphin() -> bool {
    let (status, detail) = dolphin_status();
    if status == "available" {
        return false;
    }
    #[expect(clippy::print_stderr, reason = "the explicit skip message")]
    {
        eprintln!("skipped: Dolphin is {status} here ({detail})");
    }
    true
}

/// A working copy under `tmp` holding `compositions/<name>` with `text` and a link to the
/// repository's fixtures; its directory and a scratch directory for the runs' `TMPDIR`.
pub(crate) fn work_copy(tmp: &Path, name: &str, text: &str) -> (PathBuf, PathBuf) {
    let (scratch, work) = (tmp.join("t"), tmp.join("w"));
    std::fs::create_dir(&scratch).unwrap();
    std::fs::create_dir_all(work.join("compositions")).unwrap();
    std::os::unix::fs::symlink(root().join("fixtures"), work.join("fixtures")).unwrap();
    std::fs::write(work.join("compositions").join(name), text).unwrap();
    (work, scratch)
}

/// Processes whose working directory lies in `dir` (Dolphin and Xvfb work in their scratch).
fn processes_in(dir: &Path) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd.starts_with(dir))
        })
        .collect()
}

/// Runs `flysim` in `cwd` with a cleared environment plus `TMPDIR=tmp` and `env`; after
/// [`DEADLINE`] it is killed, with anything still working in `tmp`, and the test fails.
pub(crate) fn run_bounded(cwd: &Path, tmp: &Path, env: &[(&str, &str)], args: &[&str]) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_flysim"))
        .args(args)
        .env_clear()
        .env("TMPDIR", tmp)
        .envs(env.iter().copied())
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            for pid in processes_in(tmp) {
                let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            }
            panic!("flysim {args:?} did not finish within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    Run {
        status: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// A run of `compositions/dolphin.kdl` below `cwd` (with `extra` arguments), checked complete;
/// its JSON line.
fn run_composition(cwd: &Path, tmp: &Path, state: &Path, extra: &[&str]) -> serde_json::Value {
    let steps = STEPS.to_string();
    let mut args = vec![
        "run",
        "compositions/dolphin.kdl",
        "--steps",
        &steps,
        "--json",
        "--state-dir",
        state.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = run_bounded(cwd, tmp, &[], &args);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert!(
        processes_in(tmp).is_empty(),
        "Dolphin and Xvfb are gone after the run"
    );
    assert_eq!(
        std::fs::read_dir(tmp).unwrap().count(),
        0,
        "the run left nothing in its temporary directory"
    );
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["steps"], STEPS);
    doc
}

/// The inspection digest of every boundary of a run, from its trace.
fn inspections(run: &serde_json::Value) -> Vec<String> {
    let dir = PathBuf::from(run["runDir"].as_str().unwrap());
    std::fs::read_to_string(dir.join("trace.ndjson"))
        .unwrap()
        .lines()
        .map(|line| {
            let row: serde_json::Value = serde_json::from_str(line).unwrap();
            row["behaviour"]["observation"]["inspectionDigest"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// Committed steps per second of a run: its steps over the manifest's stepping time.
fn steps_per_second(run: &serde_json::Value) -> f64 {
    let dir = PathBuf::from(run["runDir"].as_str().unwrap());
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    let ns: f64 = manifest["timings"]["stepsNs"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let wall: f64 = manifest["timings"]["wallTimeNs"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    #[expect(clippy::print_stderr, reason = "the measured rate")]
    {
        eprintln!(
            "dolphin.kdl: {STEPS} steps in {:.2} s of stepping ({:.1} steps/s), {:.2} s in all",
            ns / 1e9,
            STEPS as f64 / (ns / 1e9),
            wall / 1e9
        );
    }
    STEPS as f64 / (ns / 1e9)
}

#[test]
fn dolphin_runs_with_one_digest_across_runs_and_the_seed_changes_what_the_console_reads() {
    let (status, detail) = dolphin_status();
    let tmp = tempfile::tempdir().unwrap();
    let scratch = tmp.path().join("t");
    std::fs::create_dir(&scratch).unwrap();
    let state = tmp.path().join("state");
    if status != "available" {
        if status == "absent" {
            let refused = run_bounded(
                &root(),
                &scratch,
                &[],
                &["run", "compositions/dolphin.kdl", "--steps", "5"],
            );
            assert_ne!(refused.status, 0, "without Dolphin dolphin.kdl cannot run");
            assert!(
                codes_in(&refused.stderr).contains(&"FS0811".to_owned()),
                "{}",
                refused.stderr
            );
        }
        #[expect(clippy::print_stderr, reason = "the explicit skip message")]
        {
            eprintln!("skipped: Dolphin is {status} here ({detail})");
        }
        return;
    }
    let first = run_composition(&root(), &scratch, &state, &[]);
    let second = run_composition(&root(), &scratch, &state, &[]);
    assert_eq!(
        first["runDigest"], second["runDigest"],
        "one run digest across runs"
    );
    assert_eq!(inspections(&first), inspections(&second));
    assert!(steps_per_second(&second) > 0.0);
    // A worker process gets the program by digest, as a file without an extension.
    let process = run_composition(
        &root(),
        &scratch,
        &state,
        &["--mode", "process", "--transport", "unix"],
    );
    assert_eq!(
        process["runDigest"], first["runDigest"],
        "the same digest in process mode"
    );

    // Another master seed: the flies press other buttons, and the console reads them.
    let copy = tmp.path().join("c");
    std::fs::create_dir_all(copy.join("compositions")).unwrap();
    std::fs::create_dir_all(copy.join("fixtures/roms")).unwrap();
    std::fs::copy(
        root().join("fixtures/roms/gc-fieldcount.elf"),
        copy.join("fixtures/roms/gc-fieldcount.elf"),
    )
    .unwrap();
    let text = std::fs::read_to_string(root().join("compositions/dolphin.kdl")).unwrap();
    assert!(text.contains("master-seed \"11\""));
    std::fs::write(
        copy.join("compositions/dolphin.kdl"),
        text.replace("master-seed \"11\"", "master-seed \"12\""),
    )
    .unwrap();
    let other = run_composition(&copy, &scratch, &state, &[]);
    assert_ne!(other["runDigest"], first["runDigest"]);
    let (a, b) = (inspections(&first), inspections(&other));
    assert_eq!(a[0], b[0], "the same world at boundary 0");
    assert!(
        a.iter().zip(&b).any(|(x, y)| x != y),
        "other inputs, other observations"
    );
}

#[test]
fn without_dolphin_the_composition_is_refused_with_fs0811_in_every_mode() {
    for (mode, transport) in [
        ("in-process", "memory"),
        ("thread", "memory"),
        ("process", "unix"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let scratch = tmp.path().join("t");
        std::fs::create_dir(&scratch).unwrap();
        let missing = tmp.path().join("no-dolphin-emu");
        let state = tmp.path().join("state");
        let refused = run_bounded(
            &root(),
            &scratch,
            &[("FLYSIM_DOLPHIN", missing.to_str().unwrap())],
            &[
                "run",
                "compositions/dolphin.kdl",
                "--steps",
                "5",
                "--mode",
                mode,
                "--transport",
                transport,
                "--state-dir",
                state.to_str().unwrap(),
            ],
        );
        assert_ne!(refused.status, 0, "{mode}: {}", refused.stdout);
        // A worker process gets the Dolphin this process resolved, never one of its own.
        assert!(
            refused.stderr.contains("no-dolphin-emu"),
            "{mode}: {}",
            refused.stderr
        );
        if mode == "process" {
            // The worker process reports it; the session then names the worker that ended.
            assert!(
                codes_in(&refused.stderr).contains(&"FS0811".to_owned()),
                "{mode}: {}",
                refused.stderr
            );
        } else {
            // The refusal is the backend's own diagnostic, not wrapped in another code.
            assert_eq!(
                codes_in(&refused.stderr),
                ["FS0811"],
                "{mode}: {}",
                refused.stderr
            );
            assert_eq!(refused.status, 4, "{mode}: exit 4, unavailable");
        }
        assert!(processes_in(&scratch).is_empty());
        assert_eq!(std::fs::read_dir(&scratch).unwrap().count(), 0);
    }
}

#[test]
fn a_killed_run_leaves_no_dolphin_xvfb_or_file_behind() {
    let (status, detail) = dolphin_status();
    if status != "available" {
        #[expect(clippy::print_stderr, reason = "the explicit skip message")]
        {
            eprintln!("skipped: Dolphin is {status} here ({detail})");
        }
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let scratch = tmp.path().join("t");
    std::fs::create_dir(&scratch).unwrap();
    let state = tmp.path().join("state");
    let mut child = Command::new(env!("CARGO_BIN_EXE_flysim"))
        .args([
            "run",
            "compositions/dolphin.kdl",
            "--steps",
            "100000",
            "--state-dir",
            state.to_str().unwrap(),
        ])
        .env_clear()
        .env("TMPDIR", &scratch)
        .current_dir(root())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the world is stepping: Dolphin and Xvfb (and their watchdog) work in there.
    let started = Instant::now();
    while processes_in(&scratch).len() < 3 {
        assert!(
            started.elapsed() < DEADLINE,
            "Dolphin never started under {}",
            scratch.display()
        );
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(3));
    // SIGKILL: nothing of flysim's runs after this, no destructor, no signal handler.
    child.kill().unwrap();
    child.wait().unwrap();
    let killed = Instant::now();
    while !(processes_in(&scratch).is_empty() && std::fs::read_dir(&scratch).unwrap().count() == 0)
    {
        if killed.elapsed() > Duration::from_secs(20) {
            for pid in processes_in(&scratch) {
                let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            }
            panic!("Dolphin, Xvfb or files outlived the killed run for 20 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The declared memory task on a GameCube world: the test program's words, read through
/// Dolphin's memory watcher, as the program writes them (`roms/gc-fieldcount/README.md`: the
/// magic word "FSGC" at 0x80001800, the field counter at 0x80001804), in every type width.
const MEMORY_TASK: &str = r#"task "memory-v1" {
    variable "magic" address=0x80001800 type="u32be"
    variable "fields" address=0x80001804 type="u32be"
    variable "fields-low" address=0x80001806 type="u16be"
    variable "fields-byte" address=0x80001807 type="u8"
    variable "magic-tail" address=0x80001802 type="u32be"
    variable "first-instruction" address=0x80003100 type="u32be"
    reward "fields" weight=0.5
}"#;

/// The program's first instruction, at its load address 0x80003100 (`crt0.S`: `lis 1, 0x80F0`,
/// that is `addis r1, 0, 0x80F0`: primary opcode 15, rD 1, rA 0, the immediate). No watch of the
/// content's covers it, so the backend adds one for the task.
const FIRST_INSTRUCTION: i64 = (15 << 26) | (1 << 21) | 0x80f0;

#[test]
fn a_memory_task_reads_what_the_gamecube_program_writes() {
    if skipped_without_dolphin() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root().join("compositions/dolphin.kdl")).unwrap();
    let task = "task \"gamecube-pad-echo-v1\"";
    assert!(text.contains(task));
    // The memory task offers every button a port declares; while port 1 holds Z the program
    // presents a frame only every other field (which a step refuses), so the ports leave Z out.
    let buttons = "\"y\" \"z\" \"start\"";
    assert!(text.contains(buttons));
    let text = text
        .replace(task, MEMORY_TASK)
        .replace(buttons, "\"y\" \"start\"");
    let (work, scratch) = work_copy(tmp.path(), "dolphin.kdl", &text);
    let doc = run_composition(&work, &scratch, &tmp.path().join("state"), &[]);
    let trace =
        std::fs::read_to_string(Path::new(doc["runDir"].as_str().unwrap()).join("trace.ndjson"))
            .unwrap();
    let rows: Vec<serde_json::Value> = trace
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["behaviour"].clone())
        .collect();
    assert_eq!(rows.len() as u64, STEPS + 1);
    let mut fields = Vec::new();
    for row in &rows {
        let v = &row["variables"];
        let value = |name: &str| v[name].as_i64().unwrap();
        assert_eq!(value("magic"), 0x4653_4743, "\"FSGC\" big-endian: {v}");
        let count = value("fields");
        assert_eq!(value("fields-low"), count & 0xffff, "{v}");
        assert_eq!(value("fields-byte"), count & 0xff, "{v}");
        // Across two words: the magic's low half, then the counter's high half.
        assert_eq!(value("magic-tail"), (0x4743 << 16) | (count >> 16), "{v}");
        assert_eq!(value("first-instruction"), FIRST_INSTRUCTION, "{v}");
        fields.push(count);
    }
    // One field per step, so the counter rises by one per row, and each fly is paid 0.5 each.
    assert!(fields.windows(2).all(|w| w[1] == w[0] + 1), "{fields:?}");
    for agent in ["fly-a", "fly-b"] {
        let score = doc["scores"][agent].as_f64().unwrap();
        assert!(
            (score - 0.5 * STEPS as f64).abs() < 1e-9,
            "{agent}: {score}"
        );
    }
}
