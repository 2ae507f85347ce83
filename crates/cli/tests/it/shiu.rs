//! `compositions/gameboy-shiu.kdl` end to end: a fly whose brain runs the Shiu et al. 2024
//! kernel (`lif-exp-delay-v1`) plays `gameboy.kdl`'s world; its run digest repeats across the
//! three execution modes. Without the binjgb core the composition is refused with its code.

use crate::codes_in;
use crate::gameboy::{binjgb_available, run_composition};

fn run(state: &std::path::Path, steps: &str, mode: &str, transport: &str) -> crate::Run {
    run_composition(
        "compositions/gameboy-shiu.kdl",
        state,
        steps,
        mode,
        transport,
    )
}

#[test]
fn gameboy_shiu_runs_with_one_digest_across_the_three_modes() {
    let state = tempfile::tempdir().unwrap();
    if !binjgb_available() {
        let refused = run(state.path(), "5", "in-process", "memory");
        assert_ne!(
            refused.status, 0,
            "without the core gameboy-shiu.kdl cannot run"
        );
        assert_eq!(codes_in(&refused.stderr), ["FS0601"], "{}", refused.stderr);
        #[expect(clippy::print_stderr, reason = "the explicit skip message")]
        {
            eprintln!(
                "skipped: the binjgb core is absent from this build (gameboy-shiu.kdl was refused as it should be)"
            );
        }
        return;
    }
    let mut digests = std::collections::BTreeSet::new();
    for (mode, transport) in [
        ("in-process", "memory"),
        ("thread", "memory"),
        ("process", "unix"),
    ] {
        let out = run(state.path(), "60", mode, transport);
        assert_eq!(out.status, 0, "{mode}/{transport}:\n{}", out.stderr);
        let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        assert_eq!(doc["steps"], 60);
        digests.insert(doc["runDigest"].as_str().unwrap().to_owned());
    }
    assert_eq!(digests.len(), 1, "one run digest: {digests:?}");
}
