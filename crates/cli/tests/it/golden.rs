//! The golden digests: the shipped compositions' plan and run digests, pinned. A refactor must
//! leave them unchanged to the byte, in every execution mode; a deliberate change of behaviour
//! changes them here, in the same commit, with its reason.

use crate::flysim;

/// `compositions/synthetic.kdl`: two LIF flies on the counter arena, 600 steps.
const SYNTHETIC_PLAN: &str =
    "sha256:5b1b876d444383da622f6c3c092378dad64451120e9659c1bc005e6f058be1ba";
const SYNTHETIC_RUN: &str =
    "sha256:c8487561dbc1063972c4f4c22e7afdaba2b6c56beeecd0e9b320627876ea998a";
/// `compositions/gameboy.kdl`: a LIF fly on binjgb with the fly arena ROM, 3600 steps.
const GAMEBOY_PLAN: &str =
    "sha256:fd9f16b5ba3ac48eaac452df617ab32ff453a6750c63eea9a570015e3091d7a6";
const GAMEBOY_RUN: &str = "sha256:777a2c0a529a63554ddfda7f198af0c4c5475e361f609d4435e42d158401614f";

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
