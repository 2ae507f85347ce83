//! The LIF agent's two-step restore: staging reads and checks a snapshot completely, so a cut,
//! a resealed altered or a foreign snapshot is refused there, with its code, and activation
//! installs exactly what staging accepted.

use flysim_brain::agent::LifAgent;
use flysim_brain::{format, generate};
use flysim_component::model::{AgentModel, ModelError, SensedInput};
use flysim_component::schemas::action_context;
use flysim_types::TypedValue;

use crate::root;

/// An `arena-toy-v1` agent (seed 3), warmed up without a frame and run 25 ticks.
fn toy_agent() -> LifAgent {
    let dir = root().join("fixtures/profiles/arena-toy-v1");
    let profile = std::fs::read(dir.join("arena-toy-v1.json")).unwrap();
    let connectome = std::fs::read(dir.join("arena-toy-v1.flycsr")).unwrap();
    let mut agent = LifAgent::from_assets(&profile, &connectome, 3, 1).unwrap();
    let context = TypedValue {
        schema: action_context(),
        value: serde_json::Map::new(),
    };
    let nothing = SensedInput {
        boundary: 0,
        views: Vec::new(),
        structured: None,
    };
    agent.warm_up(&nothing, &context).unwrap();
    agent.prepare(25, &[], &context).unwrap();
    agent
}

/// `bytes` with bit `bit` of byte `at` flipped and the SHA-256 trailer recomputed.
fn flipped_and_resealed(bytes: &[u8], at: usize, bit: u8) -> Vec<u8> {
    let mut out = bytes[..bytes.len() - 32].to_vec();
    out[at] ^= 1 << bit;
    let digest = flysim_types::digest::sha256(&out);
    out.extend_from_slice(digest.as_bytes());
    out
}

/// Staging `payload` is refused as incompatible with `code`; nothing is staged and the brain
/// is as it was.
fn refused_at_staging(agent: &mut LifAgent, payload: &[u8], code: &str) {
    let before = agent.capture().unwrap();
    let suffix = format!("({code})");
    match agent.stage_restore(payload) {
        Err(ModelError::Incompatible(m)) if m.ends_with(&suffix) => {}
        other => panic!("staging should refuse with {code}, got {other:?}"),
    }
    assert!(
        agent.activate_restore().is_err(),
        "a refused staging stages nothing"
    );
    assert_eq!(agent.capture().unwrap(), before, "the brain is unchanged");
}

#[test]
fn a_truncated_snapshot_is_refused_at_staging() {
    let mut agent = toy_agent();
    let snap = agent.capture().unwrap();
    refused_at_staging(&mut agent, &snap[..snap.len() - 1], "FS0730");
    refused_at_staging(&mut agent, &snap[..100], "FS0730");
    refused_at_staging(&mut agent, b"", "FS0730");
}

#[test]
fn a_resealed_bit_flip_is_refused_at_staging() {
    let mut agent = toy_agent();
    let snap = agent.capture().unwrap();
    let n = agent.brain().connectome().neurons() as usize;
    // Layout: magic 8, version 4, two digests 64, seed 4 (so the tick counter is at 76), then
    // the draw, decode, spike and event counters, the noise state, two flags: 126 bytes; then
    // the membrane (length 8, 4 per neuron) and the refractory counters (length 8, 1 each).
    let refractory = 126 + 8 + 4 * n + 8;
    for (what, at, bit) in [
        (
            "the top bit of neuron 0's refractory counter",
            refractory,
            7,
        ),
        ("the top bit of the tick counter", 76 + 7, 7),
        ("the low bit of the noise draws", 84, 0),
    ] {
        let bad = flipped_and_resealed(&snap, at, bit);
        assert_ne!(bad, snap, "{what}");
        refused_at_staging(&mut agent, &bad, "FS0732");
    }
}

#[test]
fn a_snapshot_of_another_profile_is_refused_at_staging() {
    let mut agent = toy_agent();
    let (c, p) = generate::counter_toy_v1();
    let other = LifAgent::from_assets(p.to_canonical().as_bytes(), &format::encode(&c), 3, 1)
        .unwrap()
        .capture()
        .unwrap();
    refused_at_staging(&mut agent, &other, "FS0731");
}

#[test]
fn a_staged_snapshot_is_installed_exactly_at_activation() {
    let mut agent = toy_agent();
    let snap = agent.capture().unwrap();
    let context = TypedValue {
        schema: action_context(),
        value: serde_json::Map::new(),
    };
    agent.stage_restore(&snap).unwrap();
    // Staging changes nothing; what runs before activation is undone by it.
    assert_eq!(agent.capture().unwrap(), snap);
    agent.prepare(10, &[], &context).unwrap();
    assert_ne!(agent.capture().unwrap(), snap);
    agent.activate_restore().unwrap();
    assert_eq!(agent.capture().unwrap(), snap);
}
