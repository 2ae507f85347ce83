//! `compositions/gameboy.kdl` end to end: one fly on the binjgb Game Boy with the project's own
//! ROM, played by a LIF fly. With the core in the build the run digest repeats across runs, all
//! three execution modes (process mode hands the workers their content by digest) and transports; without it the composition is refused with its code.

use crate::{codes_in, flysim};

/// Whether this build has the Game Boy backend (as `flysim backends` says).
pub(crate) fn binjgb_available() -> bool {
    let run = flysim(&["backends", "--json"], b"");
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    doc["backends"]
        .as_array()
        .unwrap()
        .iter()
        .any(|b| b["backend"] == "binjgb" && b["status"] == "available")
}

/// Whether the binjgb core is absent from this build; then it says so, and the caller's test
/// is skipped (`if binjgb_missing() { return; }`).
pub(crate) fn binjgb_missing() -> bool {
    if binjgb_available() {
        return false;
    }
    #[expect(clippy::print_stderr, reason = "the explicit skip message")]
    {
        eprintln!("skipped: the binjgb core is absent from this build (set BINJGB_SRC)");
    }
    true
}

fn run(state: &std::path::Path, steps: &str, mode: &str, transport: &str) -> crate::Run {
    run_composition("compositions/gameboy.kdl", state, steps, mode, transport)
}

/// `flysim run COMPOSITION --steps N --mode M --transport T --json` into `state`.
pub(crate) fn run_composition(
    composition: &str,
    state: &std::path::Path,
    steps: &str,
    mode: &str,
    transport: &str,
) -> crate::Run {
    flysim(
        &[
            "run",
            composition,
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
    )
}

#[test]
fn gameboy_runs_with_one_digest_across_modes_transports_and_runs() {
    let state = tempfile::tempdir().unwrap();
    if !binjgb_available() {
        let refused = run(state.path(), "5", "in-process", "memory");
        assert_ne!(refused.status, 0, "without the core gameboy.kdl cannot run");
        assert_eq!(
            codes_in(&refused.stderr),
            ["FS0601"],
            "the refusal is the backend's own code:\n{}",
            refused.stderr
        );
        #[expect(clippy::print_stderr, reason = "the explicit skip message")]
        {
            eprintln!(
                "skipped: the binjgb core is absent from this build (gameboy.kdl was refused as it should be)"
            );
        }
        return;
    }
    let mut digests = std::collections::BTreeSet::new();
    for (mode, transport) in [
        ("in-process", "memory"),
        ("in-process", "memory"),
        ("thread", "memory"),
        ("thread", "unix"),
        ("in-process", "unix"),
    ] {
        let out = run(state.path(), "120", mode, transport);
        assert_eq!(out.status, 0, "{mode}/{transport}:\n{}", out.stderr);
        let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        assert_eq!(doc["steps"], 120);
        digests.insert(doc["runDigest"].as_str().unwrap().to_owned());
    }
    assert_eq!(digests.len(), 1, "one run digest: {digests:?}");
}

#[test]
fn a_checkpoint_at_600_resumed_to_3600_equals_the_uninterrupted_run() {
    let state = tempfile::tempdir().unwrap();
    if !binjgb_available() {
        #[expect(clippy::print_stderr, reason = "the explicit skip message")]
        {
            eprintln!("skipped: the binjgb core is absent from this build");
        }
        return;
    }
    let json = |out: crate::Run| -> serde_json::Value {
        assert_eq!(out.status, 0, "{}", out.stderr);
        serde_json::from_str(&out.stdout).unwrap()
    };
    let whole = json(run(state.path(), "3600", "in-process", "memory"));
    // gameboy.kdl checkpoints every 600 steps: the first invocation stops on one.
    let first = json(run(state.path(), "600", "in-process", "memory"));
    let dir = first["runDir"].as_str().unwrap();
    let listed = flysim(&["checkpoints", dir], b"");
    assert!(
        listed
            .stdout
            .lines()
            .nth(1)
            .unwrap()
            .split_whitespace()
            .nth(1)
            == Some("600")
    );
    let resumed = json(flysim(&["resume", dir, "--steps", "3000", "--json"], b""));
    assert_eq!(resumed["steps"], 3600);
    assert_eq!(resumed["runDigest"], whole["runDigest"]);
}
