//! Run control without signals, end to end with the binary: `--steps` is a bound that never
//! passes the plan's `steps` (in `run` and `resume` alike) and a run stopped short of its plan
//! is `paused`, never `complete`; `resume --generation N` discards the later generations;
//! `flysim checkpoints` exits non-zero on a damaged generation; `--json` on failure prints one
//! object with the code, the message and the run directory.

use std::path::{Path, PathBuf};

use crate::{flysim, root};

use crate::golden::SYNTHETIC_RUN;

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn read_json(path: &Path) -> serde_json::Value {
    json(&std::fs::read_to_string(path).unwrap())
}

/// `flysim run compositions/synthetic.kdl --steps N --json` into `state`.
fn run(state: &Path, steps: &str) -> serde_json::Value {
    let run = flysim(
        &[
            "run",
            "compositions/synthetic.kdl",
            "--steps",
            steps,
            "--json",
            "--state-dir",
            state.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    json(&run.stdout)
}

/// `flysim checkpoints DIR`: its exit code and each generation's (number, boundary, state).
fn checkpoints(dir: &Path) -> (i32, Vec<(String, String, String)>) {
    let listed = flysim(&["checkpoints", dir.to_str().unwrap()], b"");
    let rows = listed
        .stdout
        .lines()
        .skip(1)
        .map(|l| {
            let c: Vec<&str> = l.split_whitespace().collect();
            (c[0].to_owned(), c[1].to_owned(), c[3].to_owned())
        })
        .collect();
    (listed.status, rows)
}

fn row(n: &str, boundary: &str, state: &str) -> (String, String, String) {
    (n.to_owned(), boundary.to_owned(), state.to_owned())
}

#[test]
fn steps_is_a_bound_that_never_passes_the_plan_and_a_short_run_is_paused() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let run = |steps: &str| run(&state, steps);
    // Past the plan's 600 steps: the plan's end, complete, the golden digest.
    let past = run("700");
    assert_eq!(past["steps"], 600);
    assert_eq!(past["status"], "complete");
    assert_eq!(past["runDigest"], SYNTHETIC_RUN);
    let dir = PathBuf::from(past["runDir"].as_str().unwrap());
    assert_eq!(
        read_json(&root().join(&dir).join("manifest.json"))["status"],
        "complete"
    );
    // Short of it: paused, with the command that continues it.
    let short = run("90");
    assert_eq!(short["steps"], 90);
    assert_eq!(short["status"], "paused");
    assert_eq!(short["paused"], "bound");
    let dir = root().join(short["runDir"].as_str().unwrap());
    assert_eq!(read_json(&dir.join("manifest.json"))["status"], "paused");
    // A resume with --steps is the same bound: at most N more, never past the plan.
    let dir_arg = dir.to_str().unwrap();
    let more = flysim(&["resume", dir_arg, "--steps", "1000", "--json"], b"");
    assert_eq!(more.status, 0, "{}", more.stderr);
    let more = json(&more.stdout);
    assert_eq!(more["steps"], 600);
    assert_eq!(more["status"], "complete");
    assert_eq!(more["runDigest"], SYNTHETIC_RUN);
}

#[test]
fn resuming_an_older_generation_discards_the_later_ones_and_damage_fails_the_listing() {
    let tmp = tempfile::tempdir().unwrap();
    let first = run(tmp.path(), "130");
    let dir = root().join(first["runDir"].as_str().unwrap());
    // Cadence 60: generations 1 (60), 2 (120) and 3 (130, where it stopped).
    let (status, rows) = checkpoints(&dir);
    assert_eq!(status, 0);
    assert_eq!(
        rows,
        [
            row("3", "130", "verified"),
            row("2", "120", "verified"),
            row("1", "60", "verified")
        ]
    );
    // A damaged generation: listed as such, and the listing fails.
    let third = dir.join("checkpoints/gen-00000003.flysess");
    let mut bytes = std::fs::read(&third).unwrap();
    bytes[0] ^= 0x40;
    std::fs::write(&third, &bytes).unwrap();
    let (status, rows) = checkpoints(&dir);
    assert_eq!(status, 5, "a damaged generation fails the listing");
    assert_eq!(rows[0], row("3", "130", "DAMAGED"));
    assert_eq!(
        rows[1..],
        [row("2", "120", "verified"), row("1", "60", "verified")]
    );
    // Resuming generation 2 says it discards generation 3, and the listing no longer has it.
    let resumed = flysim(
        &[
            "resume",
            dir.to_str().unwrap(),
            "--generation",
            "2",
            "--steps",
            "10",
            "--json",
        ],
        b"",
    );
    assert_eq!(resumed.status, 0, "{}", resumed.stderr);
    assert!(
        resumed.stderr.contains(
            "resumed from generation 2: discarded the later generation(s) 3 and the rows"
        ),
        "{}",
        resumed.stderr
    );
    assert_eq!(json(&resumed.stdout)["steps"], 130);
    assert!(
        !third.exists(),
        "the discarded generation's file is removed"
    );
    let (status, rows) = checkpoints(&dir);
    assert_eq!(status, 0);
    // Its number is never reused: the new generation at 130 is 4.
    assert_eq!(
        rows,
        [
            row("4", "130", "verified"),
            row("2", "120", "verified"),
            row("1", "60", "verified")
        ]
    );
}

#[test]
fn json_on_failure_prints_one_object_with_the_code_message_and_run_directory() {
    let dir = "fixtures/runs/synthetic-3";
    let manifest = std::fs::read(root().join(dir).join("manifest.json")).unwrap();
    let refused = flysim(&["resume", dir, "--json"], b"");
    assert_eq!(refused.status, 1, "{}", refused.stderr);
    let doc = json(&refused.stdout);
    assert_eq!(doc["code"], "FS0406");
    assert_eq!(doc["runDir"], dir);
    assert!(doc["message"].as_str().unwrap().contains(dir), "{doc}");
    assert_eq!(doc.as_object().unwrap().len(), 3, "{doc}");
    // The diagnostic is still rendered on stderr, and nothing changed.
    assert!(refused.stderr.contains("FS0406"), "{}", refused.stderr);
    assert_eq!(
        std::fs::read(root().join(dir).join("manifest.json")).unwrap(),
        manifest
    );
}
