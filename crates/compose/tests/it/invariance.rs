//! The plan is a function of the composition's bytes and its pinned inputs, and of nothing else:
//! not where the files are, not their names; and any byte of a pinned input changes it.

use std::path::Path;

use crate::{plan_at, root};

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(from, to).unwrap();
}

#[test]
fn copied_elsewhere_the_plans_are_byte_identical() {
    let tmp = tempfile::tempdir().unwrap();
    let there = tmp.path().join("somewhere/else");
    for file in [
        "compositions/gameboy.kdl",
        "compositions/synthetic.kdl",
        "fixtures/roms/fly-arena.gb",
        "fixtures/profiles/arena-toy-v1/arena-toy-v1.json",
        "fixtures/profiles/arena-toy-v1/arena-toy-v1.flycsr",
        "fixtures/profiles/counter-toy-v1/counter-toy-v1.json",
        "fixtures/profiles/counter-toy-v1/counter-toy-v1.flycsr",
        "fixtures/compositions/ok/four-flies.kdl",
        "fixtures/compositions/ok/shared/flies.kdl",
        "fixtures/compositions/ok/synthetic-agents.kdl",
    ] {
        copy(&root().join(file), &there.join(file));
    }
    for file in [
        "compositions/gameboy.kdl",
        "compositions/synthetic.kdl",
        "fixtures/compositions/ok/four-flies.kdl",
        "fixtures/compositions/ok/synthetic-agents.kdl",
    ] {
        let here = plan_at(&root().join(file), file).unwrap();
        // Another directory, and another file name shown in diagnostics.
        let copied = plan_at(&there.join(file), "renamed.kdl").unwrap();
        assert_eq!(
            here.to_canonical().unwrap(),
            copied.to_canonical().unwrap(),
            "{file}"
        );
    }
}

/// Flips one byte of `file` (a copy) at every position and checks that the plan is either
/// refused or has another digest.
fn every_byte_matters(root_file: &str, target: &str, files: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    for f in files {
        copy(&root().join(f), &tmp.path().join(f));
    }
    let composition = tmp.path().join(root_file);
    let original = plan_at(&composition, "c").unwrap().plan_digest;
    let target = tmp.path().join(target);
    let bytes = std::fs::read(&target).unwrap();
    for i in 0..bytes.len() {
        let mut changed = bytes.clone();
        // Keep the text UTF-8 where it was ASCII, so most flips still parse.
        changed[i] = if changed[i] == b'x' { b'y' } else { b'x' };
        std::fs::write(&target, &changed).unwrap();
        if let Ok(plan) = plan_at(&composition, "c") {
            assert_ne!(
                plan.plan_digest,
                original,
                "byte {i} of {} changed nothing",
                target.display()
            );
        }
    }
    std::fs::write(&target, &bytes).unwrap();
    assert_eq!(plan_at(&composition, "c").unwrap().plan_digest, original);
}

#[test]
fn every_byte_of_the_composition_changes_the_plan() {
    every_byte_matters(
        "compositions/synthetic.kdl",
        "compositions/synthetic.kdl",
        &[
            "compositions/synthetic.kdl",
            "fixtures/profiles/counter-toy-v1/counter-toy-v1.json",
            "fixtures/profiles/counter-toy-v1/counter-toy-v1.flycsr",
        ],
    );
}

#[test]
fn every_byte_of_an_included_file_changes_the_plan() {
    let files = [
        "fixtures/compositions/ok/four-flies.kdl",
        "fixtures/compositions/ok/shared/flies.kdl",
    ];
    every_byte_matters(files[0], files[1], &files);
}

#[test]
fn a_changed_rom_byte_is_refused_and_a_repinned_rom_changes_the_plan() {
    let tmp = tempfile::tempdir().unwrap();
    for f in [
        "compositions/gameboy.kdl",
        "fixtures/roms/fly-arena.gb",
        "fixtures/profiles/arena-toy-v1/arena-toy-v1.json",
        "fixtures/profiles/arena-toy-v1/arena-toy-v1.flycsr",
    ] {
        copy(&root().join(f), &tmp.path().join(f));
    }
    let composition = tmp.path().join("compositions/gameboy.kdl");
    let rom = tmp.path().join("fixtures/roms/fly-arena.gb");
    let original = plan_at(&composition, "g").unwrap();
    let mut bytes = std::fs::read(&rom).unwrap();
    bytes[0x150] ^= 1;
    std::fs::write(&rom, &bytes).unwrap();
    let diags = plan_at(&composition, "g").unwrap_err();
    let codes: Vec<String> = diags.iter().map(flysim_compose::Diag::code).collect();
    assert_eq!(codes, ["FS0251"]);
    // Pin the new bytes: the plan resolves again, with another digest.
    let new = flysim_types::digest::sha256(&bytes).hex();
    let text = std::fs::read_to_string(&composition).unwrap();
    let rom_of = |plan: &flysim_types::plan::LaunchPlan| {
        plan.assets
            .iter()
            .find(|a| a.id.as_str() == "fly-arena")
            .map(|a| a.digest.hex())
            .unwrap()
    };
    let old = rom_of(&original);
    std::fs::write(&composition, text.replace(&old, &new)).unwrap();
    // The fly arena's task reads only the fly arena's ROM, so the build refuses another one ...
    let diags = plan_at(&composition, "g").unwrap_err();
    let codes: Vec<String> = diags.iter().map(flysim_compose::Diag::code).collect();
    assert_eq!(codes, ["FS0239"]);
    // ... and resolved against its backends alone, the plan follows the new bytes.
    let repinned = crate::plan_against(&composition, "g", crate::SPECS.backends).unwrap();
    assert_ne!(repinned.plan_digest, original.plan_digest);
    assert_eq!(rom_of(&repinned), new);
}

#[test]
fn the_composition_digest_follows_the_documented_recipe() {
    let plan = plan_at(&root().join("fixtures/compositions/ok/four-flies.kdl"), "f").unwrap();
    let paths: Vec<&str> = plan.sources.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(paths, ["", "shared/flies.kdl"]);
    let listed = serde_json::to_value(&plan.sources).unwrap();
    let canonical = flysim_types::json::to_canonical(&listed).unwrap();
    assert_eq!(
        plan.composition_digest,
        flysim_types::digest::sha256(canonical.as_bytes())
    );
    let included = std::fs::read(root().join("fixtures/compositions/ok/shared/flies.kdl")).unwrap();
    assert_eq!(
        plan.sources[1].sha256,
        flysim_types::digest::sha256(&included)
    );
    assert_eq!(
        plan.contract_digest,
        flysim_types::schema::contract_digest()
    );
}
