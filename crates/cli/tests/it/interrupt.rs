//! Run control end to end with the binary: a stop signal (SIGINT to the whole process group, as
//! a terminal's Ctrl-C; SIGTERM; SIGHUP) stops `flysim run` at a committed boundary in every
//! mode, with a checkpoint there, a `paused` manifest, no worker and no runtime directory left,
//! the exact resume command printed, and the resume reaches the uninterrupted golden digest.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::{flysim_in, root};

use crate::golden::SYNTHETIC_RUN;

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn read_json(path: &Path) -> serde_json::Value {
    json(&std::fs::read_to_string(path).unwrap())
}

/// The only run directory under `state`, once it exists.
fn run_dir(state: &Path) -> Option<PathBuf> {
    std::fs::read_dir(state.join("runs"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .next()
}

/// Every process whose command line names `path` (a worker names its runtime directory).
fn processes_naming(path: &Path) -> Vec<String> {
    let needle = path.to_str().unwrap();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(needle))
        .collect()
}

/// Starts `flysim run compositions/synthetic.kdl` in its own process group, signals the group
/// with `signal` once the first checkpoint is durable, and returns the exit code and stdout.
fn run_and_signal(
    state: &Path,
    runtime: &Path,
    mode: &str,
    transport: &str,
    signal: &str,
) -> (i32, String) {
    use std::os::unix::process::CommandExt as _;
    let child = Command::new(env!("CARGO_BIN_EXE_flysim"))
        .args([
            "run",
            "compositions/synthetic.kdl",
            "--json",
            "--mode",
            mode,
        ])
        .args([
            "--transport",
            transport,
            "--state-dir",
            state.to_str().unwrap(),
        ])
        .env_clear()
        .env("FLYSIM_RUNTIME_DIR", runtime)
        .current_dir(root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut child = child;
    loop {
        let first = run_dir(state).map(|d| d.join("checkpoints/generations.json"));
        if first.is_some_and(|g| g.is_file()) {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "{mode}: the run ended before a signal"
        );
        assert!(
            Instant::now() < deadline,
            "{mode}: no checkpoint after 60 s"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    // The whole group, as a terminal signals it: workers get it too.
    let group = format!("-{}", child.id());
    let sent = Command::new("kill")
        .args(["-s", signal, "--", &group])
        .status()
        .unwrap();
    assert!(sent.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let code = out
        .status
        .code()
        .unwrap_or_else(|| panic!("{mode}: killed by a signal: {stderr}"));
    (code, String::from_utf8(out.stdout).unwrap())
}

#[test]
fn a_signalled_run_stops_at_a_checkpointed_boundary_and_resumes_to_the_golden_digest() {
    for (mode, transport, signal, code) in [
        ("process", "unix", "INT", 130),
        ("thread", "memory", "TERM", 143),
        ("in-process", "memory", "HUP", 129),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let state = tmp.path().join("state");
        let runtime = tmp.path().join("runtime");
        let (status, stdout) = run_and_signal(&state, &runtime, mode, transport, signal);
        assert_eq!(status, code, "{mode}: {stdout}");
        let report = json(&stdout);
        let dir = run_dir(&state).unwrap();
        assert_eq!(report["status"], "paused", "{mode}");
        assert_eq!(report["paused"], "requested", "{mode}");
        assert_eq!(
            report["resume"],
            format!("flysim resume {}", dir.display()),
            "{mode}"
        );
        let steps = report["steps"].as_u64().unwrap();
        assert!((60..600).contains(&steps), "{mode}: stopped at {steps}");
        // The manifest says where the run stands: paused at that boundary, never running.
        let manifest = read_json(&dir.join("manifest.json"));
        assert_eq!(manifest["status"], "paused", "{mode}");
        assert_eq!(manifest["steps"], steps.to_string(), "{mode}");
        assert_eq!(
            manifest["runDigest"],
            report["runDigest"]
                .as_str()
                .unwrap()
                .strip_prefix("sha256:")
                .unwrap(),
            "{mode}"
        );
        // A checkpoint at the boundary it stopped at, verified.
        let env: [(&str, &str); 1] = [("FLYSIM_RUNTIME_DIR", runtime.to_str().unwrap())];
        let dir_arg = dir.to_str().unwrap();
        let listed = flysim_in(&root(), &env, &["checkpoints", dir_arg]);
        assert_eq!(listed.status, 0, "{}", listed.stderr);
        let newest = listed.stdout.lines().nth(1).unwrap().to_owned();
        let columns: Vec<&str> = newest.split_whitespace().collect();
        assert_eq!(columns[1], steps.to_string(), "{mode}: {newest}");
        assert_eq!(columns[3], "verified", "{mode}: {newest}");
        // Every worker exited and the private runtime directory is gone.
        assert_eq!(processes_naming(&runtime), Vec::<String>::new(), "{mode}");
        let left: Vec<_> = std::fs::read_dir(&runtime)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        assert_eq!(
            left,
            Vec::<PathBuf>::new(),
            "{mode}: runtime directories left"
        );
        // A replay of the interrupted run reproduces its prefix and says to resume it.
        let replay = flysim_in(&root(), &env, &["replay", dir_arg]);
        assert_eq!(replay.status, 0, "{}", replay.stderr);
        assert!(
            replay.stdout.contains(&format!(
                "the run stopped at step {steps} of 600: continue it with flysim resume {dir_arg}"
            )),
            "{mode}: {}",
            replay.stdout
        );
        // The printed command continues it to the uninterrupted run.
        let resumed = flysim_in(&root(), &env, &["resume", dir_arg, "--json"]);
        assert_eq!(resumed.status, 0, "{mode}: {}", resumed.stderr);
        let resumed = json(&resumed.stdout);
        assert_eq!(resumed["steps"], 600, "{mode}");
        assert_eq!(resumed["runDigest"], SYNTHETIC_RUN, "{mode}");
        assert_eq!(resumed["status"], "complete", "{mode}");
        assert_eq!(resumed["resume"], serde_json::Value::Null, "{mode}");
        assert_eq!(read_json(&dir.join("manifest.json"))["status"], "complete");
    }
}
