//! The backends this build registers: their specs are the set `flysim backends` lists and
//! exactly the launch-plan contract's backend vocabulary, and each spec is well-formed. This is
//! what keeps ARCHITECTURE.md's "Adding a backend" true.

use flysim_run::components::SPECS;
use flysim_types::plan::CONTRACT_BACKENDS;

use crate::flysim;

#[test]
fn the_registered_specs_are_what_flysim_backends_lists() {
    let out = flysim(&["backends", "--json"], b"");
    assert_eq!(out.status, 0, "{}", out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let listed: Vec<&str> = doc["backends"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["backend"].as_str().unwrap())
        .collect();
    let registered: Vec<&str> = SPECS.iter().map(|s| s.name).collect();
    assert_eq!(listed, registered);
}

#[test]
fn the_registered_specs_are_the_contracts_backend_vocabulary() {
    let registered: Vec<(&str, &str)> = SPECS.iter().map(|s| (s.name, s.summary)).collect();
    assert_eq!(registered, CONTRACT_BACKENDS.to_vec());
}

#[test]
fn every_spec_declares_a_valid_step_and_a_usable_pin() {
    for spec in SPECS {
        let step = spec
            .step_duration()
            .unwrap_or_else(|e| panic!("{}: {e}", spec.name));
        assert!(step.positive().is_ok(), "{}: a step takes time", spec.name);
        assert!(
            spec.identity.how.contains(spec.identity.node.node()),
            "{}: the pin help names the node",
            spec.name
        );
    }
    let steps: Vec<String> = SPECS
        .iter()
        .map(|s| s.step_duration().unwrap().to_string())
        .collect();
    assert_eq!(steps, ["50000000/3", "8572265625/512", "50050000/3"]);
}
