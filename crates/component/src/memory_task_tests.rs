use std::collections::BTreeMap;
use std::sync::Arc;

use flysim_types::memory::{
    Change, Comparison, MemoryCondition, MemoryReward, MemoryTaskPlan, MemoryType, MemoryVariable,
};
use flysim_types::trace::EpisodeRequestKind;
use flysim_types::workers::PortBinding;
use flysim_types::{Id, TypedValue};

use super::MemoryTask;
use crate::memory::{MemorySpan, MemoryView};
use crate::schemas::action_context;
use crate::task::{Task, Transition, json_object};

fn id(s: &str) -> Id {
    Id::parse(s).unwrap()
}

fn variable(name: &str, address: u32, kind: MemoryType) -> MemoryVariable {
    MemoryVariable {
        name: id(name),
        address,
        kind,
        bytes: (kind == MemoryType::Bcd).then_some(2),
        bit: (kind == MemoryType::Bool).then_some(5),
        offsets: Vec::new(),
    }
}

fn task(declaration: MemoryTaskPlan) -> MemoryTask {
    let context = Arc::new(TypedValue {
        schema: action_context(),
        value: json_object(serde_json::json!({"availableActions": ["idle", "a"]})),
    });
    MemoryTask::new(
        Some(declaration),
        BTreeMap::from([(id("p1"), Arc::clone(&context)), (id("p2"), context)]),
    )
}

fn bindings() -> [PortBinding; 2] {
    [
        PortBinding {
            port_id: id("p1"),
            agent_id: id("fly-a"),
        },
        PortBinding {
            port_id: id("p2"),
            agent_id: id("fly-b"),
        },
    ]
}

fn empty() -> TypedValue {
    TypedValue {
        schema: action_context(),
        value: serde_json::Map::new(),
    }
}

/// A 64 KiB image whose byte at `a` is a function of `a` with every bit pattern somewhere.
fn image() -> Vec<u8> {
    (0..0x1_0000u32)
        .map(|a| (a.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect()
}

/// The value of `kind` at `at` in `m`, decoded here from first principles (not by the contract's
/// reader): what a person reading the bytes by hand gets; `None` for a float that is not finite.
fn by_hand(m: &[u8], at: usize, kind: MemoryType) -> Option<f64> {
    let float = |bits: i64| {
        let bits = u32::try_from(bits).unwrap();
        // Sign, exponent, fraction, as IEEE 754 lays out a single.
        let (sign, exp, frac) = (bits >> 31, (bits >> 23) & 0xff, bits & 0x7f_ffff);
        let magnitude = match exp {
            0xff => return None,
            0 => f64::from(frac) * 2f64.powi(-149),
            e => (1.0 + f64::from(frac) / f64::from(1u32 << 23)) * 2f64.powi(e as i32 - 127),
        };
        Some(if sign == 1 { -magnitude } else { magnitude })
    };
    match kind {
        MemoryType::F32le => float(integer(m, at, MemoryType::U32le)),
        MemoryType::F32be => float(integer(m, at, MemoryType::U32be)),
        _ => Some(integer(m, at, kind) as f64),
    }
}

fn integer(m: &[u8], at: usize, kind: MemoryType) -> i64 {
    let b = |i: usize| m[at + i];
    match kind {
        MemoryType::U8 => i64::from(b(0)),
        MemoryType::I8 => i64::from(b(0)) - if b(0) >= 128 { 256 } else { 0 },
        MemoryType::U16le => i64::from(b(0)) + 256 * i64::from(b(1)),
        MemoryType::U16be => i64::from(b(1)) + 256 * i64::from(b(0)),
        MemoryType::I16le | MemoryType::I16be => {
            let u = integer(
                m,
                at,
                if kind == MemoryType::I16le {
                    MemoryType::U16le
                } else {
                    MemoryType::U16be
                },
            );
            if u >= 1 << 15 { u - (1 << 16) } else { u }
        }
        MemoryType::U32le => (0..4).map(|i| i64::from(b(i)) << (8 * i)).sum(),
        MemoryType::U32be => (0..4).map(|i| i64::from(b(3 - i)) << (8 * i)).sum(),
        MemoryType::I32le | MemoryType::I32be => {
            let u = integer(
                m,
                at,
                if kind == MemoryType::I32le {
                    MemoryType::U32le
                } else {
                    MemoryType::U32be
                },
            );
            if u >= 1 << 31 { u - (1 << 32) } else { u }
        }
        MemoryType::Bcd => {
            let digits = [b(0) >> 4, b(0) & 15, b(1) >> 4, b(1) & 15];
            digits.iter().fold(0, |v, &d| v * 10 + i64::from(d))
        }
        MemoryType::Bool => i64::from((b(0) >> 5) & 1),
        MemoryType::F32le | MemoryType::F32be => unreachable!("by_hand reads the floats"),
    }
}

#[test]
fn every_type_reads_what_a_direct_read_of_the_image_gives() {
    let m = image();
    let spans = [MemorySpan {
        start: 0,
        bytes: &m,
    }];
    let mut floats = 0;
    for (i, (name, kind)) in MemoryType::ALL.iter().enumerate() {
        // Several addresses per type, odd and even, up to the last that fits.
        let width = kind.fixed_width().unwrap_or(2) as u32;
        for at in [0xc000 + 7 * i as u32, 0xd0f1 + i as u32, 0x1_0000 - width] {
            let declaration = MemoryTaskPlan {
                variables: vec![variable(name, at, *kind)],
                rewards: Vec::new(),
                done: Vec::new(),
                pointer: None,
            };
            let mut t = task(declaration);
            let boot = t
                .bootstrap(
                    &id("e"),
                    &empty(),
                    &bindings(),
                    Some(MemoryView::new(&spans)),
                )
                .unwrap();
            let got = boot.variables.unwrap().get(&id(name)).copied();
            assert_eq!(got, by_hand(&m, at as usize, *kind), "{name} at {at:#x}");
            assert_eq!(
                boot.progress[*name],
                serde_json::json!(got),
                "{name}: progress"
            );
            floats += usize::from(got.is_some_and(|v| v.fract() != 0.0));
        }
    }
    assert!(floats >= 2, "some floats read had a fraction");
    // The addresses read hold bytes with the top bit set (negative signed values) and nibbles
    // above 9 (the BCD edge), so every branch of the readers was compared.
    assert!(m[0xc000..0xc060].iter().any(|&b| b >= 0x80));
    assert!(m[0xc000..0xc060].iter().any(|&b| b & 15 > 9));
}

fn game() -> MemoryTaskPlan {
    MemoryTaskPlan {
        variables: vec![
            variable("score", 0x10, MemoryType::U16le),
            variable("lives", 0x12, MemoryType::U8),
        ],
        rewards: vec![
            MemoryReward {
                rule: id("score"),
                variable: id("score"),
                weight: 0.5,
                when: None,
                on: None,
                port: None,
            },
            MemoryReward {
                rule: id("lost-life"),
                variable: id("lives"),
                weight: -2.0,
                when: Some(MemoryCondition {
                    variable: id("lives"),
                    op: Comparison::Lt,
                    value: 3,
                }),
                on: None,
                port: Some(id("p2")),
            },
        ],
        done: vec![MemoryCondition {
            variable: id("lives"),
            op: Comparison::Eq,
            value: 0,
        }],
        pointer: None,
    }
}

/// Score at 0x10 (u16le), lives at 0x12.
fn memory(score: u16, lives: u8) -> [u8; 3] {
    let [lo, hi] = score.to_le_bytes();
    [lo, hi, lives]
}

fn step(t: &mut MemoryTask, k: u64, old: [u8; 3], new: [u8; 3]) -> crate::task::Evaluation {
    step_spans(t, k, &[(0x10, old.to_vec())], &[(0x10, new.to_vec())])
}

#[test]
fn a_change_pays_its_weight_times_the_change_to_every_agent() {
    let mut t = task(game());
    let e = step(&mut t, 4, memory(100, 3), memory(130, 3));
    for agent in ["fly-a", "fly-b"] {
        let rewards = &e.outcomes[&id(agent)].rewards;
        assert_eq!(rewards.len(), 1, "{agent}");
        assert!((rewards[0].value - 15.0).abs() < 1e-12);
        assert_eq!(rewards[0].rule_id, id("score"));
        assert_eq!(rewards[0].event_id, id("ep-0.s5.score.0"));
    }
    assert_eq!(e.events.len(), 1);
    assert_eq!(e.events[0].payload.value["from"], 100.0);
    assert_eq!(e.events[0].payload.value["to"], 130.0);
    assert_eq!(
        e.variables,
        Some(BTreeMap::from([(id("lives"), 3.0), (id("score"), 130.0)]))
    );
    assert!(e.episode_request.is_none());
    // A fall pays a negative reward; no change pays nothing.
    let down = step(&mut t, 5, memory(130, 3), memory(120, 3));
    assert!((down.outcomes[&id("fly-a")].rewards[0].value + 5.0).abs() < 1e-12);
    let same = step(&mut t, 6, memory(120, 3), memory(120, 3));
    assert!(same.outcomes.values().all(|o| o.rewards.is_empty()));
    assert!(same.events.is_empty());
}

#[test]
fn a_condition_pays_once_where_it_starts_to_hold_and_only_its_port() {
    let mut t = task(game());
    let lost = step(&mut t, 9, memory(0, 3), memory(0, 2));
    assert!(lost.outcomes[&id("fly-a")].rewards.is_empty());
    let b = &lost.outcomes[&id("fly-b")].rewards;
    assert_eq!(b.len(), 1);
    assert!((b[0].value + 2.0).abs() < 1e-12);
    assert_eq!(lost.events[0].agent_id, Some(id("fly-b")));
    // Still below 3: no second payment.
    let again = step(&mut t, 10, memory(0, 2), memory(0, 1));
    assert!(again.outcomes[&id("fly-b")].rewards.is_empty());
}

#[test]
fn the_episode_ends_where_a_done_condition_starts_to_hold() {
    let mut t = task(game());
    let end = step(&mut t, 20, memory(7, 1), memory(7, 0));
    let request = end.episode_request.unwrap();
    assert_eq!(request.kind, EpisodeRequestKind::Terminal);
    assert_eq!(request.reason, id("done"));
    assert_eq!(request.outcome.value["step"], "21");
    // Already 0 at the boundary before (a game still booting): nothing ends.
    let booting = step(&mut t, 0, memory(0, 0), memory(0, 0));
    assert!(booting.episode_request.is_none());
}

#[test]
fn a_variable_outside_the_published_memory_is_a_mismatch() {
    let mut t = task(game());
    let short = [0u8; 2];
    let spans = [MemorySpan {
        start: 0x10,
        bytes: &short,
    }];
    let err = t
        .bootstrap(
            &id("e"),
            &empty(),
            &bindings(),
            Some(MemoryView::new(&spans)),
        )
        .unwrap_err();
    assert!(err.to_string().contains("`lives`"), "{err}");
    let none = t
        .bootstrap(&id("e"), &empty(), &bindings(), None)
        .unwrap_err();
    assert!(none.to_string().contains("no memory"), "{none}");
    // A plan without a declaration fails every call with that reason.
    let mut bare = MemoryTask::new(None, BTreeMap::new());
    let err = bare.bootstrap(&id("e"), &empty(), &[], None).unwrap_err();
    assert!(err.to_string().contains("declares no memory task"), "{err}");
    assert!(t.capture().unwrap().is_empty() && t.validate_restore(&[0]).is_err());
}

/// A GameCube-like task: player 2's stocks (u8) at 0x8045_310e, its percent (u16be) at
/// 0x8045_30e0, and its action state behind the entity pointer at 0x8045_3130, offset 0x70.
fn melee_like() -> MemoryTaskPlan {
    let mut action = variable("action", 0x8045_3130, MemoryType::U32be);
    action.offsets = vec![0x70];
    let reward = |rule: &str, variable: &str, weight: f64, on: Change| MemoryReward {
        rule: id(rule),
        variable: id(variable),
        weight,
        when: None,
        on: Some(on),
        port: Some(id("p1")),
    };
    MemoryTaskPlan {
        variables: vec![
            variable("stocks", 0x8045_310e, MemoryType::U8),
            variable("percent", 0x8045_30e0, MemoryType::U16be),
            action,
        ],
        rewards: vec![
            reward("damage", "percent", 0.01, Change::Rise),
            reward("stock", "stocks", 1.0, Change::Fall),
        ],
        done: vec![MemoryCondition {
            variable: id("action"),
            op: Comparison::Eq,
            value: 0x14,
        }],
        pointer: Some(MemoryType::U32be),
    }
}

/// The words a watcher publishes: stocks, percent, the entity pointer and, where it points,
/// the action word (published only where the pointer is not null, as Dolphin's backend does).
fn watched(stocks: u8, percent: u16, entity: u32, action: u32) -> Vec<(u32, Vec<u8>)> {
    let mut words = vec![
        (0x8045_310c, vec![0, 0, stocks, 0]),
        (0x8045_30e0, [percent.to_be_bytes(), [0, 0]].concat()),
        (0x8045_3130, entity.to_be_bytes().to_vec()),
    ];
    if entity != 0 {
        words.push((entity + 0x70, action.to_be_bytes().to_vec()));
    }
    words
}

fn step_spans(
    t: &mut MemoryTask,
    k: u64,
    old: &[(u32, Vec<u8>)],
    new: &[(u32, Vec<u8>)],
) -> crate::task::Evaluation {
    let old_spans: Vec<MemorySpan<'_>> = old
        .iter()
        .map(|(start, bytes)| MemorySpan {
            start: *start,
            bytes,
        })
        .collect();
    let new_spans: Vec<MemorySpan<'_>> = new
        .iter()
        .map(|(start, bytes)| MemorySpan {
            start: *start,
            bytes,
        })
        .collect();
    let (inspection, bindings) = (empty(), bindings());
    t.evaluate_transition(&Transition {
        step: k,
        episode: &id("ep-0"),
        old: &inspection,
        new: &inspection,
        controls: &[],
        bindings: &bindings,
        old_memory: Some(MemoryView::new(&old_spans)),
        new_memory: Some(MemoryView::new(&new_spans)),
    })
    .unwrap()
}

#[test]
fn a_chained_variable_is_read_where_its_pointer_leads_and_has_no_value_behind_null() {
    let mut t = task(melee_like());
    let e = step_spans(
        &mut t,
        3,
        &watched(4, 9, 0x80c0_1000, 0x15),
        &watched(4, 18, 0x80c0_1000, 0x16),
    );
    let vars = e.variables.unwrap();
    assert_eq!(vars[&id("action")], 22.0);
    assert_eq!(vars[&id("percent")], 18.0);
    // Damage dealt pays 0.01 per percent to port 1's fly only.
    let paid = &e.outcomes[&id("fly-a")].rewards;
    assert_eq!(paid.len(), 1);
    assert!((paid[0].value - 0.09).abs() < 1e-12);
    assert!(e.outcomes[&id("fly-b")].rewards.is_empty());
    // A null entity pointer: no action value, null in the progress, out of the row.
    let null = step_spans(
        &mut t,
        4,
        &watched(4, 18, 0x80c0_1000, 0x16),
        &watched(3, 0, 0, 0x16),
    );
    let vars = null.variables.unwrap();
    assert!(!vars.contains_key(&id("action")));
    assert_eq!(null.progress["action"], serde_json::Value::Null);
    // The percent's drop to 0 with the stock pays nothing back; the stock taken pays 1.
    let paid = &null.outcomes[&id("fly-a")].rewards;
    assert_eq!(paid.len(), 1, "{paid:?}");
    assert_eq!(paid[0].rule_id, id("stock"));
    assert!((paid[0].value - 1.0).abs() < 1e-12);
    assert!(null.episode_request.is_none());
    // The pointer comes back with the done condition's value: it starts to hold.
    let back = step_spans(
        &mut t,
        5,
        &watched(3, 0, 0, 0x16),
        &watched(3, 0, 0x80c0_1000, 0x14),
    );
    assert_eq!(back.variables.unwrap()[&id("action")], 20.0);
    assert!(back.episode_request.is_some());
}
