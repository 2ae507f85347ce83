//! Sweeps: a `sweep` block resolved into its members in grid order, each member the plan it is
//! when resolved alone, the block itself outside every plan, one changed value changing only
//! the members that take it, and the sweep digest over the documented bytes.

use std::path::{Path, PathBuf};

use flysim_compose::sweep::{DIGEST_TAG, sweep_digest};
use flysim_compose::{Input, Overrides, SweepPlan};
use flysim_types::U64;

use crate::{SPECS, render, root};

fn fixture(name: &str) -> PathBuf {
    root().join("fixtures/compositions/sweep").join(name)
}

fn input<'a>(bytes: &'a [u8], dir: &'a Path) -> Input<'a> {
    Input {
        name: "sweep.kdl",
        bytes,
        dir,
    }
}

/// The sweep of `bytes` (a composition in the sweep fixtures' directory).
fn sweep_of(bytes: &[u8]) -> SweepPlan {
    let dir = fixture("");
    flysim_compose::plan_sweep(input(bytes, &dir), None, SPECS)
        .unwrap_or_else(|d| panic!("{}", render(&d)))
        .expect("a sweep")
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(fixture(name)).unwrap()
}

#[test]
fn a_three_by_two_grid_has_six_members_the_last_axis_fastest() {
    let sweep = sweep_of(&read("grid.kdl"));
    assert_eq!(sweep.members.len(), 6);
    assert_eq!(
        sweep.axes,
        ["profile.counter-fly.parameter.press-rate", "master-seed"]
    );
    let rates: Vec<f64> = sweep
        .members
        .iter()
        .map(|m| m.values[0].1.as_f64().unwrap())
        .collect();
    assert_eq!(rates, [0.25, 0.25, 0.5, 0.5, 0.75, 0.75]);
    // Member 2 is the second press rate with the first seed.
    let two = &sweep.members[2];
    assert_eq!(two.index, 2);
    assert_eq!(two.plan.master_seed, U64(7));
    assert_eq!(two.values[1], ("master-seed".to_owned(), "7".into()));
    assert_eq!(sweep.members[3].plan.master_seed, U64(8));
    let profile = &two.plan.profiles[0];
    assert_eq!(profile.parameters["press-rate"], serde_json::json!(0.5));
    // Six different plans.
    let mut digests: Vec<_> = sweep.members.iter().map(|m| m.plan.plan_digest).collect();
    digests.sort();
    digests.dedup();
    assert_eq!(digests.len(), 6);
}

#[test]
fn a_member_resolved_alone_is_byte_identical_to_it_in_the_family() {
    let bytes = read("seeds.kdl");
    let sweep = sweep_of(&bytes);
    assert_eq!(sweep.members.len(), 6);
    let dir = fixture("");
    for member in &sweep.members {
        let seed = U64(u64::try_from(member.index).unwrap());
        let overrides = Overrides {
            master_seed: Some(seed),
        };
        let alone = flysim_compose::plan_with(input(&bytes, &dir), None, SPECS, &overrides)
            .unwrap_or_else(|d| panic!("{}", render(&d)));
        assert_eq!(
            alone.to_canonical().unwrap(),
            member.plan.to_canonical().unwrap(),
            "member {}",
            member.index
        );
        let one = flysim_compose::plan_member(input(&bytes, &dir), None, SPECS, member.index)
            .unwrap()
            .unwrap();
        assert_eq!(
            one.plan.to_canonical().unwrap(),
            member.plan.to_canonical().unwrap()
        );
    }
    assert!(
        flysim_compose::plan_member(input(&bytes, &dir), None, SPECS, 6)
            .unwrap()
            .is_none()
    );
}

#[test]
fn the_sweep_block_plays_no_part_in_a_plan() {
    let with = read("seeds.kdl");
    let text = String::from_utf8(with.clone()).unwrap();
    // The block's bytes are the node from its name to its closing brace.
    let without = text.replace("sweep {\n    master-seed from=0 to=5\n}", "");
    assert_ne!(without, text);
    let dir = fixture("");
    let a = flysim_compose::plan(input(&with, &dir), None, SPECS).unwrap();
    let b = flysim_compose::plan(input(without.as_bytes(), &dir), None, SPECS).unwrap();
    assert_eq!(a.to_canonical().unwrap(), b.to_canonical().unwrap());
    // The file's own digest is not what the plan records for it: the block is cut out.
    assert_ne!(a.sources[0].sha256, flysim_types::digest::sha256(&with));
    assert_eq!(
        a.sources[0].sha256,
        flysim_types::digest::sha256(without.as_bytes())
    );
}

#[test]
fn changing_one_axis_value_changes_only_the_members_that_take_it() {
    let text = String::from_utf8(read("seeds.kdl")).unwrap();
    let list = text.replace(
        "master-seed from=0 to=5",
        "master-seed \"0\" \"1\" \"2\" \"3\" \"4\" \"5\"",
    );
    let changed = list.replace("\"3\" \"4\"", "\"30\" \"4\"");
    let (a, b) = (sweep_of(list.as_bytes()), sweep_of(changed.as_bytes()));
    // The range and the list of the same seeds are the same family.
    assert_eq!(a.digest, sweep_of(text.as_bytes()).digest);
    let differing: Vec<usize> = a
        .members
        .iter()
        .zip(&b.members)
        .filter(|(x, y)| x.plan.plan_digest != y.plan.plan_digest)
        .map(|(x, _)| x.index)
        .collect();
    assert_eq!(differing, [3]);
    assert_ne!(a.digest, b.digest);

    // In a grid, a press rate is taken by one member per seed.
    let grid = String::from_utf8(read("grid.kdl")).unwrap();
    let regrid = grid.replace("0.25 0.5 0.75", "0.25 0.6 0.75");
    let (a, b) = (sweep_of(grid.as_bytes()), sweep_of(regrid.as_bytes()));
    let differing: Vec<usize> = a
        .members
        .iter()
        .zip(&b.members)
        .filter(|(x, y)| x.plan.plan_digest != y.plan.plan_digest)
        .map(|(x, _)| x.index)
        .collect();
    assert_eq!(differing, [2, 3]);
}

#[test]
fn the_sweep_digest_is_the_tag_and_the_member_digests_line_by_line() {
    let sweep = sweep_of(&read("grid.kdl"));
    let mut bytes = format!("{DIGEST_TAG}\n");
    for member in &sweep.members {
        bytes.push_str(&member.plan.plan_digest.hex());
        bytes.push('\n');
    }
    assert!(bytes.starts_with("flysim-sweep-v1\n"));
    assert_eq!(sweep.digest, flysim_types::digest::sha256(bytes.as_bytes()));
    assert_eq!(
        sweep.digest,
        sweep_digest(sweep.members.iter().map(|m| &m.plan.plan_digest))
    );
    // Order matters.
    assert_ne!(
        sweep.digest,
        sweep_digest(sweep.members.iter().rev().map(|m| &m.plan.plan_digest))
    );
}

#[test]
fn a_composition_without_a_sweep_has_no_family() {
    let path = root().join("compositions/synthetic.kdl");
    let bytes = std::fs::read(&path).unwrap();
    let found =
        flysim_compose::plan_sweep(input(&bytes, path.parent().unwrap()), None, SPECS).unwrap();
    assert!(found.is_none());
}

#[test]
fn a_member_that_does_not_resolve_is_reported_at_its_value_once() {
    let grid = String::from_utf8(read("grid.kdl")).unwrap();
    // A press rate the synthetic model refuses (a string), taken by two members.
    let bad = grid.replace("0.25 0.5 0.75", "0.25 \"fast\" 0.75");
    let dir = fixture("");
    let diags = flysim_compose::plan_sweep(input(bad.as_bytes(), &dir), None, SPECS).unwrap_err();
    let codes: Vec<String> = diags.iter().map(flysim_compose::Diag::code).collect();
    assert_eq!(codes, ["FS0242"], "{}", render(&diags));
    let shown = render(&diags);
    assert!(shown.contains("\"fast\""), "{shown}");
}

/// The codes `plan` reports for the grid fixture with its sweep block replaced by `block`.
fn codes_with(block: &str) -> Vec<String> {
    let grid = String::from_utf8(read("grid.kdl")).unwrap();
    let at = grid.find("sweep {").unwrap();
    let text = format!("{}{block}\n", &grid[..at]);
    let dir = fixture("");
    match flysim_compose::plan(input(text.as_bytes(), &dir), None, SPECS) {
        Ok(_) => Vec::new(),
        Err(diags) => diags.iter().map(flysim_compose::Diag::code).collect(),
    }
}

#[test]
fn malformed_sweep_blocks_are_refused_with_their_codes() {
    let cases: [(&str, &[&str]); 9] = [
        ("sweep { master-seed from=0 to=3; }", &[]),
        ("sweep { master-seed from=0; }", &["FS0204"]),
        ("sweep { master-seed \"1\" from=0 to=3; }", &["FS0206"]),
        ("sweep { master-seed \"01\"; }", &["FS0208"]),
        ("sweep { vary \"run.steps\"; }", &["FS0271"]),
        ("sweep { vary \"run.steps\" 0 10; }", &["FS0208"]),
        (
            "sweep { vary \"profile.nope.parameter.press-rate\" 0.5; }",
            &["FS0270"],
        ),
        ("sweep { }", &["FS0204"]),
        (
            "sweep { master-seed \"1\"; }\nsweep { master-seed \"2\"; }",
            &["FS0205"],
        ),
    ];
    for (block, codes) in cases {
        assert_eq!(codes_with(block), codes, "{block}");
    }
}
