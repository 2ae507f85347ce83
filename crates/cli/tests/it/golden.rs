//! The golden digests: the shipped compositions' plan and run digests, pinned. A refactor must
//! leave them unchanged to the byte, in every execution mode; a deliberate change of behaviour
//! changes them here, in the same commit, with its reason.
//!
//! Last changed by the declared memory task: the contract gained the plan's `memoryTask` and the
//! trace row's `variables` (null for these compositions), so the contract digest, and with it
//! every plan and run digest, moved (and again with the sources' schema description for sweeps);
//! what the runs do (controls, rewards, frames) did not. The Game Boy run digest moved once more
//! when its inspection stopped carrying work RAM as hex (`gameboy-inspection` v2): the fly arena
//! task reads the memory image instead, and pays the same rewards at the same steps.

use crate::flysim;

/// `compositions/synthetic.kdl`: two LIF flies on the counter arena, 600 steps.
const SYNTHETIC_PLAN: &str =
    "sha256:78f0706920bba45ca72fa2a1337a4728239906b67fd85c1644c942a14f13ee6e";
/// Its run digest: the one pin every other test of the synthetic run compares with.
pub(crate) const SYNTHETIC_RUN: &str =
    "sha256:2fa0273c24e262c00a2d6c68470712892c5f257622fc97c5fe236e4817e05b5f";
/// `compositions/gameboy.kdl`: a LIF fly on binjgb with the fly arena ROM, 3600 steps.
const GAMEBOY_PLAN: &str =
    "sha256:9be849e1424d1608f67b23e35afd58e7771c5d22db5b54433c7a2d72dc59ebb8";
const GAMEBOY_RUN: &str = "sha256:d09997d9ee4a1d0246f3ac5fe4b860cc3f3ec0e8153573606b26ef639296b1b7";

/// The modes a golden digest is checked in (process mode needs the Unix transport).
const MODES: [(&str, &str); 3] = [
    ("in-process", "memory"),
    ("thread", "unix"),
    ("process", "unix"),
];

/// Runs `composition` in `mode` over `transport` and returns its `--json` object.
fn run(composition: &str, mode: &str, transport: &str) -> serde_json::Value {
    let state = tempfile::tempdir().unwrap();
    let out = flysim(
        &[
            "run",
            composition,
            "--mode",
            mode,
            "--transport",
            transport,
            "--json",
            "--state-dir",
            state.path().to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(
        out.status, 0,
        "{composition} {mode}/{transport}:\n{}",
        out.stderr
    );
    serde_json::from_str(&out.stdout).unwrap()
}

fn check(composition: &str, steps: u64, plan: &str, run_digest: &str) {
    for (mode, transport) in MODES {
        let doc = run(composition, mode, transport);
        assert_eq!(doc["steps"], steps, "{composition} {mode}/{transport}");
        assert_eq!(doc["planDigest"], plan, "{composition} {mode}/{transport}");
        assert_eq!(
            doc["runDigest"], run_digest,
            "{composition} {mode}/{transport}"
        );
    }
}

#[test]
fn synthetic_kdl_keeps_its_golden_plan_and_run_digest_in_every_mode() {
    check(
        "compositions/synthetic.kdl",
        600,
        SYNTHETIC_PLAN,
        SYNTHETIC_RUN,
    );
}

#[test]
fn gameboy_kdl_keeps_its_golden_plan_and_run_digest_in_every_mode() {
    if matches!(
        flysim_binjgb::availability(),
        flysim_binjgb::Availability::Absent { .. }
    ) {
        #[expect(clippy::print_stderr, reason = "the explicit skip message")]
        {
            eprintln!("skipped: the binjgb core is absent from this build (set BINJGB_SRC)");
        }
        return;
    }
    check("compositions/gameboy.kdl", 3600, GAMEBOY_PLAN, GAMEBOY_RUN);
}
