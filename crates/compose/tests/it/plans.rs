//! Golden plans: every shipped composition (and every well-formed fixture) resolves, and its
//! plan is exactly the committed snapshot.

use flysim_types::Payload as _;

use crate::{plan_at, render, root};

fn pretty(plan: &flysim_types::plan::LaunchPlan) -> String {
    let canonical = plan.to_canonical().unwrap();
    // The canonical text is the plan; the snapshot shows it indented for review.
    let value: serde_json::Value = serde_json::from_str(&canonical).unwrap();
    serde_json::to_string_pretty(&value).unwrap()
}

fn check(path: &std::path::Path, name: &str) -> String {
    let plan = plan_at(path, name).unwrap_or_else(|d| panic!("{name}:\n{}", render(&d)));
    plan.validate().unwrap();
    assert_eq!(plan.compute_digest().unwrap(), plan.plan_digest);
    // The plan survives its own strict reader unchanged.
    let text = plan.to_canonical().unwrap();
    let back: flysim_types::plan::LaunchPlan =
        flysim_types::parse_payload(text.as_bytes()).unwrap();
    assert_eq!(back, plan);
    pretty(&plan)
}

#[test]
fn shipped() {
    let mut count = 0;
    insta::glob!("../../../../compositions", "*.kdl", |path| {
        count += 1;
        let name = format!(
            "compositions/{}",
            path.file_name().unwrap().to_string_lossy()
        );
        insta::assert_snapshot!(check(path, &name));
    });
    assert!(count >= 2, "synthetic.kdl and gameboy.kdl at least");
}

#[test]
fn fixtures() {
    insta::glob!("../../../../fixtures/compositions", "ok/*.kdl", |path| {
        let name = format!("ok/{}", path.file_name().unwrap().to_string_lossy());
        insta::assert_snapshot!(check(path, &name));
    });
}

#[test]
fn step_durations_are_the_documented_rationals() {
    let synthetic = plan_at(&root().join("compositions/synthetic.kdl"), "s").unwrap();
    assert_eq!(
        synthetic.environment.step_duration.to_string(),
        "50000000/3"
    );
    let gameboy = plan_at(&root().join("compositions/gameboy.kdl"), "g").unwrap();
    assert_eq!(
        gameboy.environment.step_duration.to_string(),
        "8572265625/512"
    );
    assert_eq!(
        flysim_dolphin::SPEC.step_duration().unwrap().to_string(),
        "50050000/3"
    );
}

#[test]
fn derived_seeds_are_seed_derivation_v1_with_their_material() {
    let plan = plan_at(&root().join("compositions/synthetic.kdl"), "s").unwrap();
    let seeds: Vec<i32> = plan.agents.iter().map(|a| a.seed).collect();
    // fixtures/seed-vectors.json, master seed 42.
    assert_eq!(seeds, [-184_946_063, 535_504_990]);
    assert_eq!(
        plan.agents[0].material.as_deref(),
        Some("flybrain/seed-derivation-v1\n42\nfly-a\n")
    );
}

/// Without a transport, the process mode takes the Unix-socket one (the only one it can use)
/// and the other modes memory; a declared transport is kept.
#[test]
fn the_transport_is_derived_from_the_mode() {
    use flysim_types::plan::{RunMode, Transport};
    let fixture = root().join("fixtures/compositions/err/process-memory.kdl");
    let text = std::fs::read_to_string(&fixture).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    for (mode, kind, transport, expected) in [
        ("process", RunMode::Process, "", Transport::Unix),
        ("thread", RunMode::Thread, "", Transport::Memory),
        ("in-process", RunMode::InProcess, "", Transport::Memory),
        (
            "thread",
            RunMode::Thread,
            "transport \"unix\"",
            Transport::Unix,
        ),
    ] {
        let composition = text
            .replace("mode \"process\"", &format!("mode \"{mode}\""))
            .replace("transport \"memory\"", transport);
        let path = tmp.path().join("derived.kdl");
        std::fs::write(&path, composition).unwrap();
        let plan = plan_at(&path, "derived.kdl").unwrap_or_else(|d| panic!("{}", render(&d)));
        assert_eq!(plan.run.transport, expected, "mode {mode} {transport}");
        assert_eq!(plan.run.mode, kind, "{mode}");
    }
}
