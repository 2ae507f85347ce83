//! `counter-toy-v1` on the real counter arena: two flies that each read their own port's row
//! and press while their counter is below the set point; what a `port-bands` retina refuses; the
//! decode rule (a binding's action, masked by the context). Its regeneration is in `profiles`.

use flysim_arena::world::CounterArena;
use flysim_brain::agent::LifAgent;
use flysim_brain::format;
use flysim_brain::generate;
use flysim_component::backend::{EnvironmentBackend, EnvironmentSetup};
use flysim_component::model::{AgentModel, SensedInput, SensedView};
use flysim_component::schemas::action_context;
use flysim_types::plan::LaunchPlan;
use flysim_types::workers::{ButtonState, PortControl, Reward};
use flysim_types::{Id, TickAccumulator, TypedValue};
use serde_json::json;

use crate::root;

fn id(s: &str) -> Id {
    Id::parse(s).unwrap()
}

/// The counter arena of the recorded synthetic run: two ports, `p1` and `p2`.
fn arena() -> (CounterArena, LaunchPlan) {
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
    (arena, plan)
}

fn input(arena: &CounterArena, boundary: u64) -> SensedInput {
    let frame = arena.frames().remove(0);
    SensedInput {
        boundary,
        views: vec![SensedView {
            view_id: frame.view_id,
            produced_step: flysim_types::U64(boundary),
            pixels: Some(frame.bytes.to_vec()),
        }],
        structured: None,
    }
}

fn context(actions: &[&str]) -> TypedValue {
    TypedValue {
        schema: action_context(),
        value: json!({ "availableActions": actions })
            .as_object()
            .unwrap()
            .clone(),
    }
}

/// Two counter-toy flies, on ports 0 and 1, play `steps` steps, fly 1 offered only `idle` for
/// the first `held` steps; returns the counters after each step.
fn play(seeds: [i32; 2], steps: usize, held: usize) -> Vec<Vec<i64>> {
    let (c, p) = generate::counter_toy_v1();
    let (profile, connectome) = (p.to_canonical(), format::encode(&c));
    let (mut arena, plan) = arena();
    let mut flies: Vec<LifAgent> = seeds
        .iter()
        .enumerate()
        .map(|(i, &seed)| {
            LifAgent::from_assets(profile.as_bytes(), &connectome, seed, 1)
                .unwrap()
                .with_port(i as u32)
        })
        .collect();
    let ctx = context(&["idle", "press"]);
    let idle = context(&["idle"]);
    for fly in &mut flies {
        fly.warm_up(&input(&arena, 0), &ctx).unwrap();
    }
    let mut clock = TickAccumulator::new(flies[0].tick_duration()).unwrap();
    let mut counters = Vec::new();
    for step in 0..steps {
        let ticks = clock.advance(plan.environment.step_duration).unwrap();
        let controls: Vec<PortControl> = flies
            .iter_mut()
            .zip(&plan.environment.ports)
            .enumerate()
            .map(|(i, (fly, port))| {
                let offered = if i == 1 && step < held { &idle } else { &ctx };
                let d = fly.prepare(ticks, &[], offered).unwrap();
                PortControl {
                    port_id: port.port_id.clone(),
                    buttons: vec![ButtonState {
                        id: id("press"),
                        down: d.value["action"] == "press",
                    }],
                    axes: Vec::new(),
                }
            })
            .collect();
        arena.advance(&controls).unwrap();
        let next = input(&arena, step as u64 + 1);
        for (fly, control) in flies.iter_mut().zip(&controls) {
            let rewards: Vec<Reward> = if control.buttons[0].down {
                vec![Reward {
                    event_id: id("e"),
                    rule_id: id("press"),
                    value: 1.0,
                }]
            } else {
                Vec::new()
            };
            fly.commit(&next, &[], &rewards).unwrap();
        }
        counters.push(arena.counters().to_vec());
    }
    counters
}

/// The counters the set-point rule gives: each step a port's counter rises while it is below
/// the set point and `press` is offered, and falls otherwise.
fn rule(steps: usize, held: usize) -> Vec<Vec<i64>> {
    let mut counters = vec![0i64, 0];
    (0..steps)
        .map(|step| {
            for (i, c) in counters.iter_mut().enumerate() {
                let press = *c < generate::COUNTER_TOY_SET_POINT && !(i == 1 && step < held);
                *c += if press { 1 } else { -1 };
            }
            counters.clone()
        })
        .collect()
}

#[test]
fn the_toy_brain_reads_the_arena_view_at_its_real_width() {
    assert_eq!(
        flysim_brain::generate::COUNTER_VIEW_WIDTH,
        flysim_arena::world::VIEW_WIDTH
    );
}

#[test]
fn each_fly_reads_its_own_row_and_presses_below_the_set_point() {
    // Fly 1 may only idle for 140 steps, down to -140 (whose low byte, 116, alone would read as
    // "above the set point": the sign pixel must win), while fly 0 keeps its counter at 2..3.
    // Then fly 1 climbs back one press per step. Both follow the set-point rule exactly.
    let expected = rule(300, 140);
    assert_eq!(expected[139], [2, -140]);
    assert_eq!(expected[299], [2, 2]);
    for seeds in [[-184_946_063, 535_504_990], [7, 7]] {
        assert_eq!(play(seeds, 300, 140), expected, "seeds {seeds:?}");
    }
}

#[test]
fn a_port_bands_retina_needs_its_port_and_whole_bands() {
    let (c, p) = generate::counter_toy_v1();
    let (profile, connectome) = (p.to_canonical(), format::encode(&c));
    let (arena, _) = arena();
    let ctx = context(&["idle", "press"]);
    let mut portless = LifAgent::from_assets(profile.as_bytes(), &connectome, 1, 1).unwrap();
    let e = portless.warm_up(&input(&arena, 0), &ctx).unwrap_err();
    assert!(e.to_string().contains("not told its port"), "{e}");
    // Port index 2 of a two-port view: there is no third band.
    let mut third = LifAgent::from_assets(profile.as_bytes(), &connectome, 1, 1)
        .unwrap()
        .with_port(2);
    let e = third.warm_up(&input(&arena, 0), &ctx).unwrap_err();
    assert!(e.to_string().contains("port index 2"), "{e}");
    let mut fly = LifAgent::from_assets(profile.as_bytes(), &connectome, 1, 1)
        .unwrap()
        .with_port(1);
    let mut ragged = input(&arena, 0);
    if let Some(px) = ragged.views[0].pixels.as_mut() {
        px.pop();
    }
    assert!(fly.warm_up(&ragged, &ctx).is_err());
    assert_eq!(fly.brain().brain_ticks(), 0, "nothing ran");
    fly.warm_up(&input(&arena, 0), &ctx).unwrap();
    assert_eq!(fly.brain().brain_ticks(), 200);
}

#[test]
fn the_decision_is_the_bound_action_and_the_context_only_masks() {
    let (c, p) = generate::counter_toy_v1();
    let (profile, connectome) = (p.to_canonical(), format::encode(&c));
    let (arena, _) = arena();
    let decide = |ctx: &TypedValue| {
        let mut fly = LifAgent::from_assets(profile.as_bytes(), &connectome, 1, 1)
            .unwrap()
            .with_port(0);
        fly.warm_up(&input(&arena, 0), ctx).unwrap();
        let d = fly.prepare(17, &[], ctx).unwrap();
        assert_eq!(d.schema, flysim_component::schemas::action_decision());
        (
            d.value["action"].as_str().unwrap().to_owned(),
            fly.brain().membrane_digest(),
        )
    };
    // At counter 0 the press pool fires: button `a`, bound to the action `press`.
    let (offered, state) = decide(&context(&["idle", "press"]));
    assert_eq!(offered, "press");
    // A context without the action, or without any list, masks or offers; the brain is the same.
    let (masked, masked_state) = decide(&context(&["idle"]));
    assert_eq!(masked, "idle");
    assert_eq!(masked_state, state);
    let none = TypedValue {
        schema: action_context(),
        value: serde_json::Map::new(),
    };
    assert_eq!(decide(&none).0, "press");
}
