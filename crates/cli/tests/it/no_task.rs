//! A composition without `task` runs with nothing scored (`none-v1`): it validates, its plan
//! names `none-v1`, every row is free of rewards and events, and its run digest repeats in the
//! three execution modes. The counter arena needs no outside core; the Game Boy case (a user's
//! own ROM has no task yet) runs when the binjgb core is built.

use std::path::{Path, PathBuf};

use crate::gameboy::binjgb_available;
use crate::{flysim, root};

/// `compositions/NAME.kdl` without its `task` line, written beside a link to the repository's
/// fixtures so its relative asset paths resolve.
fn without_task(dir: &Path, name: &str) -> PathBuf {
    let text = std::fs::read_to_string(root().join(format!("compositions/{name}.kdl"))).unwrap();
    assert!(
        text.lines().any(|l| l.starts_with("task ")),
        "{name} has a task"
    );
    let text: String = text
        .lines()
        .filter(|l| !l.starts_with("task "))
        .map(|l| format!("{l}\n"))
        .collect();
    std::os::unix::fs::symlink(root().join("fixtures"), dir.join("fixtures")).unwrap();
    std::fs::create_dir(dir.join("compositions")).unwrap();
    let path = dir.join(format!("compositions/{name}-no-task.kdl"));
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs `path` for `steps` in `mode` and returns its run digest and run directory.
fn run(path: &Path, state: &Path, steps: &str, mode: &str) -> (String, PathBuf) {
    let transport = if mode == "process" { "unix" } else { "memory" };
    let out = flysim(
        &[
            "run",
            path.to_str().unwrap(),
            "--steps",
            steps,
            "--mode",
            mode,
            "--transport",
            transport,
            "--json",
            "--state-dir",
            state.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(out.status, 0, "{mode}: {}", out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    for (agent, score) in doc["scores"].as_object().unwrap() {
        assert_eq!(score, 0, "{agent} scored without a task");
    }
    (
        doc["runDigest"].as_str().unwrap().to_owned(),
        PathBuf::from(doc["runDir"].as_str().unwrap()),
    )
}

/// Checks the plan names `none-v1` and no row holds a reward or an event.
fn nothing_scored(run_dir: &Path, rows: usize) {
    let plan: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("plan.json")).unwrap()).unwrap();
    assert_eq!(plan["task"], "none-v1");
    let trace = std::fs::read_to_string(run_dir.join("trace.ndjson")).unwrap();
    assert_eq!(trace.lines().count(), rows);
    for line in trace.lines() {
        let row: serde_json::Value = serde_json::from_str(line).unwrap();
        let behaviour = &row["behaviour"];
        assert_eq!(behaviour["events"], serde_json::json!([]), "{line}");
        for agent in behaviour["agents"].as_array().unwrap() {
            assert_eq!(agent["rewards"], serde_json::json!([]), "{line}");
        }
    }
}

/// Validates, then runs in every mode: one digest, nothing scored.
fn runs_unscored(name: &str, steps: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = without_task(dir.path(), name);
    let valid = flysim(&["validate", path.to_str().unwrap()], b"");
    assert_eq!(valid.status, 0, "{}", valid.stderr);
    let mut digests = Vec::new();
    for (i, mode) in ["in-process", "thread", "process"].into_iter().enumerate() {
        let state = dir.path().join(format!("state-{i}"));
        let (digest, run_dir) = run(&path, &state, steps, mode);
        nothing_scored(&run_dir, steps.parse::<usize>().unwrap() + 1);
        digests.push(digest);
    }
    assert!(digests.windows(2).all(|w| w[0] == w[1]), "{digests:?}");
}

#[test]
fn the_counter_arena_without_a_task_runs_unscored_with_one_digest() {
    runs_unscored("synthetic", "40");
}

#[test]
fn a_game_boy_world_without_a_task_runs_unscored_with_one_digest() {
    if !binjgb_available() {
        #[expect(clippy::print_stderr, reason = "the explicit skip message")]
        {
            eprintln!("skipped: the binjgb core is absent from this build (set BINJGB_SRC)");
        }
        return;
    }
    runs_unscored("gameboy", "150");
}

#[test]
fn a_run_without_a_task_resumes_from_its_checkpoint_to_the_uninterrupted_digest() {
    let dir = tempfile::tempdir().unwrap();
    let path = without_task(dir.path(), "synthetic");
    let (whole, _) = run(&path, &dir.path().join("whole"), "600", "in-process");
    let (_, paused) = run(&path, &dir.path().join("paused"), "150", "in-process");
    let resumed = flysim(&["resume", paused.to_str().unwrap(), "--json"], b"");
    assert_eq!(resumed.status, 0, "{}", resumed.stderr);
    let doc: serde_json::Value = serde_json::from_str(&resumed.stdout).unwrap();
    assert_eq!(
        doc["runDigest"],
        whole.as_str(),
        "the empty ledger restores"
    );
    assert_eq!(doc["status"], "complete");
}
