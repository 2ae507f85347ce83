//! A crafted capture cannot crash the process: a world capture at the last step is refused at
//! staging and a world restored near it faults rather than overflows its step; the synthetic
//! agent refuses a non-finite signal at staging and saturates its work counters.

use flysim_arena::synthetic::SyntheticAgent;
use flysim_arena::world::CounterArena;
use flysim_component::backend::{BackendError, EnvironmentBackend, EnvironmentSetup};
use flysim_component::model::{AgentModel, ModelError, ModelSetup, SensedInput};
use flysim_component::schemas::action_context;
use flysim_types::plan::{LaunchPlan, ModelKind, PlanProfile};
use flysim_types::workers::{ButtonState, PortControl};
use flysim_types::{Id, TypedValue};
use serde_json::json;

use crate::root;

fn id(s: &str) -> Id {
    Id::parse(s).unwrap()
}

/// The two-port counter arena of the recorded synthetic run, initialized.
fn arena() -> CounterArena {
    let bytes = std::fs::read(root().join("fixtures/runs/synthetic-3/plan.json")).unwrap();
    let plan: LaunchPlan = flysim_types::parse_payload(&bytes).unwrap();
    let mut arena =
        CounterArena::new(&plan.environment, flysim_types::digest::sha256(b"c")).unwrap();
    arena
        .initialize(&EnvironmentSetup {
            episode_id: id("ep-0"),
            port_bindings: Vec::new(),
        })
        .unwrap();
    arena
}

fn released(arena: &CounterArena) -> Vec<PortControl> {
    arena
        .descriptor()
        .ports
        .iter()
        .map(|p| PortControl {
            port_id: p.port_id.clone(),
            buttons: p
                .controls
                .buttons
                .iter()
                .map(|b| ButtonState {
                    id: b.clone(),
                    down: false,
                })
                .collect(),
            axes: Vec::new(),
        })
        .collect()
}

/// A capture of `arena` with its step counter set to `step`.
fn at_step(arena: &CounterArena, step: u64) -> Vec<u8> {
    let mut capture = arena.capture().unwrap();
    capture[8..16].copy_from_slice(&step.to_le_bytes());
    capture
}

#[test]
fn a_world_capture_at_the_last_step_is_refused_at_staging() {
    let mut arena = arena();
    let capture = at_step(&arena, u64::MAX);
    assert!(
        matches!(arena.stage_restore(&capture), Err(BackendError::Incompatible(m)) if m.contains("cannot advance")),
    );
}

#[test]
fn a_world_restored_near_the_last_step_faults_instead_of_overflowing() {
    let mut arena = arena();
    let controls = released(&arena);
    arena.stage_restore(&at_step(&arena, u64::MAX - 1)).unwrap();
    arena.activate_restore().unwrap();
    arena.advance(&controls).unwrap();
    let before = arena.capture().unwrap();
    assert!(matches!(
        arena.advance(&controls),
        Err(BackendError::Fault(m)) if m.contains("exhausted")
    ));
    assert_eq!(
        arena.capture().unwrap(),
        before,
        "the refused step changed nothing"
    );
}

fn agent() -> SyntheticAgent {
    SyntheticAgent::new(&ModelSetup {
        agent_id: id("fly-a"),
        profile: PlanProfile {
            id: id("p"),
            model: ModelKind::Synthetic,
            parameters: json!({"press-rate": 0.5}).as_object().unwrap().clone(),
            assets: Vec::new(),
        },
        seed: 7,
        worker_threads: 1,
    })
    .unwrap()
}

/// The agent's capture: magic, 2 words per lane, 4 counts, the last signal, the press rate.
fn words(capture: &[u8]) -> usize {
    (capture.len() - 8) / 8
}

fn set_word(capture: &mut [u8], word: usize, value: u64) {
    capture[8 + 8 * word..16 + 8 * word].copy_from_slice(&value.to_le_bytes());
}

#[test]
fn an_agent_capture_with_a_non_finite_signal_is_refused_at_staging() {
    let mut agent = agent();
    let capture = agent.capture().unwrap();
    let signal = words(&capture) - 2;
    for bad in [f64::NAN, f64::INFINITY] {
        let mut crafted = capture.clone();
        set_word(&mut crafted, signal, bad.to_bits());
        assert!(
            matches!(agent.stage_restore(&crafted), Err(ModelError::Incompatible(m)) if m.contains("finite")),
            "{bad}"
        );
    }
    agent.stage_restore(&capture).unwrap();
}

#[test]
fn an_agent_restored_with_counts_at_their_limit_runs_on() {
    let mut agent = agent();
    let mut capture = agent.capture().unwrap();
    let counts = words(&capture) - 6;
    for i in 0..4 {
        set_word(&mut capture, counts + i, u64::MAX);
    }
    agent.stage_restore(&capture).unwrap();
    agent.activate_restore().unwrap();
    let context = TypedValue {
        schema: action_context(),
        value: json!({ "availableActions": ["idle", "press"] })
            .as_object()
            .unwrap()
            .clone(),
    };
    let input = SensedInput {
        boundary: 0,
        views: Vec::new(),
        structured: None,
    };
    agent.prepare(3, &[], &context).unwrap();
    agent.commit(&input, &[], &[]).unwrap();
    assert_eq!(agent.work(), u64::MAX, "the work counter saturates");
    assert_eq!(agent.counts().ticks, u64::MAX);
}
