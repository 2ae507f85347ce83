//! The model API: mutation counter, commit order, capture and restore, plasticity, refusals.

use flysim_brain::{Brain, Frame};
use flysim_types::Id;
use flysim_types::workers::{Reward, Stimulus};

use crate::{toy, toy_brain};

fn stimulus(id: &str, kind: &str, ms: f64) -> Stimulus {
    Stimulus {
        id: Id::parse(id).unwrap(),
        kind_id: Id::parse(kind).unwrap(),
        duration_ms: ms,
    }
}

fn reward(id: &str, value: f64) -> Reward {
    Reward {
        event_id: Id::parse(id).unwrap(),
        rule_id: Id::parse("food").unwrap(),
        value,
    }
}

/// A 160x144 frame: white, with a dark 8x8 square at `(x, y)`.
fn frame_with_square(x: usize, y: usize) -> Vec<u8> {
    let mut px = vec![255u8; 160 * 144 * 4];
    for j in y..y + 8 {
        for i in x..x + 8 {
            let at = (j * 160 + i) * 4;
            px[at..at + 3].copy_from_slice(&[0, 0, 0]);
        }
    }
    px
}

#[test]
fn the_mutation_counter_counts_every_tick_draw_and_decode() {
    let mut b = toy_brain(5, 1);
    let kicks = u64::from(b.profile().kernel.lif_1ms().unwrap().noise_kicks);
    let warm = u64::from(b.profile().readout.warmup_ticks);
    assert_eq!(b.counters().ticks, warm);
    let before = b.mutations();
    let d1 = b.prepare(17, &[]).unwrap();
    assert_eq!(
        b.mutations() - before,
        17 + 17 * kicks + 1,
        "ticks + draws + one decode"
    );
    // A caller answering a duplicate Prepare from its cache calls nothing: the counter proves it.
    let after_first = b.mutations();
    let cached = d1;
    assert_eq!(b.mutations(), after_first);
    assert_eq!(cached, d1);
    // Commit runs no tick and draws nothing.
    b.commit(None, &[], &[]).unwrap();
    assert_eq!(b.mutations(), after_first);
    assert_eq!(b.brain_ticks(), warm + 17);
}

#[test]
fn a_duplicate_prepare_from_a_snapshot_repeats_the_same_decision() {
    let mut b = toy_brain(5, 1);
    let snap = b.capture();
    let m0 = b.mutations();
    let d1 = b.prepare(16, &[]).unwrap();
    let m1 = b.mutations();
    b.restore(&snap).unwrap();
    assert_eq!(b.mutations(), m0);
    let d2 = b.prepare(16, &[]).unwrap();
    assert_eq!((d1, m1), (d2, b.mutations()));
}

#[test]
fn capture_and_restore_mid_run_continue_bit_identically() {
    let px = frame_with_square(20, 30);
    let frame = Frame {
        width: 160,
        height: 144,
        rgba: &px,
    };
    let steps = |b: &mut Brain, from: u64, to: u64| {
        let mut out = Vec::new();
        for k in from..to {
            let d = b.prepare(16 + k % 2, &[]).unwrap();
            let rewards = if k % 5 == 0 {
                vec![reward("e", 1.0)]
            } else {
                vec![]
            };
            let stim = if k % 7 == 0 {
                vec![stimulus("s", "reward", 30.0)]
            } else {
                vec![]
            };
            b.commit(Some(&frame), &stim, &rewards).unwrap();
            out.push(d);
        }
        out
    };
    let mut straight = toy_brain(9, 1);
    let all = steps(&mut straight, 0, 40);
    let mut first = toy_brain(9, 1);
    let head = steps(&mut first, 0, 20);
    let snap = first.capture();
    // A fresh brain of the same model (another thread count) restores and continues.
    let mut second = toy_brain(9, 3);
    second.restore(&snap).unwrap();
    assert_eq!(
        second.capture(),
        snap,
        "restore then capture is the identity"
    );
    let tail = steps(&mut second, 20, 40);
    assert_eq!([head, tail].concat(), all);
    assert_eq!(second.membrane_digest(), straight.membrane_digest());
    assert_eq!(second.plastic_gains(), straight.plastic_gains());
    assert_eq!(second.capture(), straight.capture());
}

#[test]
fn a_corrupt_or_foreign_snapshot_is_refused_and_changes_nothing() {
    let mut b = toy_brain(9, 1);
    b.prepare(10, &[]).unwrap();
    let snap = b.capture();
    let before = b.capture();
    let mut bad = snap.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 1;
    assert_eq!(b.restore(&bad).unwrap_err().code_str(), "FS0730");
    assert_eq!(
        b.restore(&snap[..snap.len() - 1]).unwrap_err().code_str(),
        "FS0730"
    );
    assert_eq!(b.restore(b"nonsense").unwrap_err().code_str(), "FS0730");
    let mut other_seed = toy_brain(10, 1);
    assert_eq!(other_seed.restore(&snap).unwrap_err().code_str(), "FS0731");
    assert_eq!(b.capture(), before);
}

#[test]
fn reward_changes_the_plastic_weights_with_plasticity_on() {
    let px = frame_with_square(60, 60);
    let frame = Frame {
        width: 160,
        height: 144,
        rgba: &px,
    };
    let mut b = toy_brain(11, 1);
    assert!(b.learning_enabled());
    assert!(!b.plastic_gains().is_empty());
    b.commit(Some(&frame), &[], &[]).unwrap();
    for _ in 0..30 {
        b.prepare(17, &[]).unwrap();
    }
    let before = b.plastic_gains().to_vec();
    assert!(before.iter().all(|&g| g == 1.0));
    b.commit(Some(&frame), &[], &[reward("food-1", 1.0)])
        .unwrap();
    let after = b.plastic_gains().to_vec();
    let changed = before.iter().zip(&after).filter(|(a, b)| a != b).count();
    assert!(changed > 0, "a reward moves some gains");
    let t = b.telemetry();
    assert!(t.learning.enabled);
    assert_eq!(t.learning.updates.get(), after.len() as u64);
    assert_eq!(t.learning.changed.get(), changed as u64);
    let (lo, hi) = (0.9f32, 1.1f32);
    assert!(
        after.iter().all(|&g| (lo..=hi).contains(&g)),
        "gains stay clamped"
    );
    // Many large rewards saturate at the clamp, never beyond.
    for _ in 0..2_000 {
        b.reinforce(5.0);
    }
    assert!(b.plastic_gains().iter().all(|&g| (lo..=hi).contains(&g)));
    // With learning off, rewards change nothing.
    let mut off = toy_brain(11, 1);
    off.set_learning(false);
    off.prepare(200, &[]).unwrap();
    let g = off.plastic_gains().to_vec();
    off.commit(None, &[], &[reward("food-1", 1.0)]).unwrap();
    assert_eq!(off.plastic_gains(), g);
    assert_eq!(off.telemetry().learning.updates.get(), 0);
}

#[test]
fn commit_installs_input_then_stimulation_then_reinforcement_without_a_tick() {
    let mut b = toy_brain(12, 1);
    let ticks = b.brain_ticks();
    let membrane = b.membrane_digest();
    b.commit(None, &[stimulus("s", "reward", 40.5)], &[reward("r", 0.5)])
        .unwrap();
    assert_eq!(b.brain_ticks(), ticks);
    assert_eq!(b.membrane_digest(), membrane, "commit integrates nothing");
    let t = b.telemetry();
    assert_eq!(
        t.stimulus_remaining_ms,
        Some(41.0),
        "40.5 ms rounds up to 41 ticks"
    );
    b.prepare(16, &[]).unwrap();
    assert_eq!(b.telemetry().stimulus_remaining_ms, Some(25.0));
}

#[test]
fn refusals_change_nothing() {
    let mut b = toy_brain(13, 1);
    let before = b.capture();
    let err = b.prepare(5, &[stimulus("s", "shock", 5.0)]).unwrap_err();
    assert_eq!(err.code_str(), "FS0721");
    let small = vec![0u8; 10 * 10 * 4];
    let err = b
        .commit(
            Some(&Frame {
                width: 10,
                height: 10,
                rgba: &small,
            }),
            &[],
            &[],
        )
        .unwrap_err();
    assert_eq!(err.code_str(), "FS0722");
    let err = b
        .commit(None, &[stimulus("s", "shock", 5.0)], &[])
        .unwrap_err();
    assert_eq!(err.code_str(), "FS0721");
    assert_eq!(b.capture(), before);
    let (p, c) = toy();
    assert_eq!(Brain::new(p, c, 0, 0).unwrap_err().code_str(), "FS0723");
}

#[test]
fn telemetry_lists_the_rate_roles_in_order() {
    let b = toy_brain(14, 1);
    let t = b.telemetry();
    let roles: Vec<String> = t.rates.iter().map(|r| r.role_id.to_string()).collect();
    let declared: Vec<String> = b
        .profile()
        .rate_roles
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(roles, declared);
    assert_eq!(t.brain_ticks.get(), 2_500);
    flysim_types::payload::Payload::validate(&t).unwrap();
    let g = b.graph();
    flysim_types::payload::Payload::validate(&g).unwrap();
    assert_eq!(g.dataset_digest, b.connectome().digest());
    assert_eq!(g.rate_roles, b.profile().rate_roles);
    assert_eq!(g.supported_stimuli, [Id::parse("reward").unwrap()]);
    assert_eq!(b.tick_duration().to_string(), "1000000/1");
}

#[test]
fn a_brain_moves_between_threads_and_agents_share_one_connectome() {
    fn send<T: Send>(_: &T) {}
    let (p, c) = toy();
    let a = Brain::new(p.clone(), c.clone(), 1, 1).unwrap();
    let b = Brain::new(p, c.clone(), 2, 1).unwrap();
    send(&a);
    assert!(std::sync::Arc::ptr_eq(a.connectome(), b.connectome()));
    assert_eq!(std::sync::Arc::strong_count(&c), 3);
    let handle = std::thread::spawn(move || {
        let mut a = a;
        a.prepare(5, &[]).unwrap();
        a.brain_ticks()
    });
    assert_eq!(handle.join().unwrap(), 5);
}
