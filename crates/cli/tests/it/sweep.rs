//! Sweeps end to end: `plan --sweep` lists every member with the sweep digest, `--master-seed`
//! gives the plan of the member of that seed, and the sweep commands run, resume, write for
//! Slurm and collect a family.

use crate::{flysim, root};

const GRID: &str = "fixtures/compositions/sweep/grid.kdl";
const SEEDS: &str = "fixtures/compositions/sweep/seeds.kdl";

/// The `planDigest=sha256:<hex>` note of a `flysim plan`.
fn plan_digest(stderr: &str) -> String {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("planDigest="))
        .unwrap_or_else(|| panic!("no planDigest in {stderr}"))
        .to_owned()
}

#[test]
fn plan_sweep_lists_every_member_and_the_sweep_digest() {
    let run = flysim(&["plan", GRID, "--sweep"], b"");
    assert_eq!(run.status, 0, "{}", run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let members = doc["members"].as_array().unwrap();
    assert_eq!(members.len(), 6);
    assert_eq!(members[2]["index"], 2);
    assert_eq!(
        members[2]["values"],
        serde_json::json!([
            {"target": "profile.counter-fly.parameter.press-rate", "value": 0.5},
            {"target": "master-seed", "value": "7"}
        ])
    );
    assert_eq!(members[2]["plan"]["masterSeed"], "7");
    assert_eq!(
        members[2]["planDigest"],
        format!(
            "sha256:{}",
            members[2]["plan"]["planDigest"].as_str().unwrap()
        )
    );
    let note = run.stderr.trim();
    assert!(
        note.starts_with("sweepDigest=sha256:") && note.ends_with(" members=6"),
        "{note}"
    );
    assert_eq!(
        note,
        format!(
            "sweepDigest={} members=6",
            doc["sweepDigest"].as_str().unwrap()
        )
    );
}

#[test]
fn master_seed_gives_the_plan_of_the_member_of_that_seed() {
    let family = flysim(&["plan", SEEDS, "--sweep"], b"");
    assert_eq!(family.status, 0, "{}", family.stderr);
    let doc: serde_json::Value = serde_json::from_str(&family.stdout).unwrap();
    for index in [0usize, 4] {
        let seed = index.to_string();
        let alone = flysim(&["plan", SEEDS, "--master-seed", &seed], b"");
        assert_eq!(alone.status, 0, "{}", alone.stderr);
        let member = &doc["members"][index];
        assert_eq!(
            plan_digest(&alone.stderr),
            member["planDigest"].as_str().unwrap()
        );
        let plan: serde_json::Value = serde_json::from_str(&alone.stdout).unwrap();
        assert_eq!(plan, member["plan"]);
    }
    // Without the flag the file's own seed: no member of 0..=5.
    let own = flysim(&["plan", SEEDS], b"");
    let own = plan_digest(&own.stderr);
    assert!(
        doc["members"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["planDigest"] != own.as_str())
    );
    let valid = flysim(&["validate", SEEDS, "--master-seed", "5"], b"");
    assert_eq!(valid.status, 0, "{}", valid.stderr);
    // One spelling only.
    let refused = flysim(&["plan", SEEDS, "--master-seed", "05"], b"");
    assert_eq!(refused.status, 2, "{}", refused.stderr);
}

#[test]
fn plan_sweep_of_a_composition_without_one_is_refused() {
    let run = flysim(&["plan", "compositions/synthetic.kdl", "--sweep"], b"");
    assert_eq!(run.status, 1);
    assert!(run.stderr.contains("FS0935"), "{}", run.stderr);
    assert!(root().join(GRID).is_file());
}
