//! The brain on the Game Boy (it lives here, above both): real fly arena frames reach the D-pad
//! roles of `arena-toy-v1`, and its wiring steers the fly
//! to food (needs the binjgb core; skips with a message without it).

use flysim_binjgb::{Availability, Buttons, Emulator, HEIGHT, WIDTH, availability};
use flysim_brain::Frame;

use flysim_brain::{Brain, Profile, format as file};

use crate::root;

/// The committed `arena-toy-v1` brain, warmed up.
fn toy_brain(seed: i32, threads: u32) -> Brain {
    let dir = root().join("fixtures/profiles/arena-toy-v1");
    let profile = Profile::parse(&std::fs::read(dir.join("arena-toy-v1.json")).unwrap()).unwrap();
    let conn = file::decode(&std::fs::read(dir.join(&profile.connectome.file)).unwrap()).unwrap();
    let mut brain = Brain::new(profile, std::sync::Arc::new(conn), seed, threads).unwrap();
    brain.warm_up_and_calibrate();
    brain
}

const SCORE: usize = 0xc002;

fn arena() -> Option<Emulator> {
    match availability() {
        Availability::Available { .. } => {
            let rom = std::fs::read(root().join("fixtures/roms/fly-arena.gb")).unwrap();
            Some(Emulator::new(&rom).unwrap())
        }
        Availability::Absent { reason } => {
            #[expect(clippy::print_stderr, reason = "the explicit skip message")]
            {
                eprintln!("skipped: the binjgb core is absent from this build: {reason}");
            }
            None
        }
    }
}

/// Runs the greedy readout of the toy over the arena for `steps` frames; returns the score and
/// the mean direction-pool rate.
pub(crate) fn play(emu: &mut Emulator, steps: u64) -> (u16, f64) {
    let mut brain = toy_brain(42, 1);
    let mut rate_sum = 0.0;
    // 16.74 ms per frame on a 1 ms tick: 16 or 17 ticks, from the exact accumulator.
    let step = flysim_types::RationalNs::new(flysim_binjgb::FRAME_NS.0, flysim_binjgb::FRAME_NS.1)
        .unwrap();
    let mut clock =
        flysim_types::TickAccumulator::new(flysim_types::RationalNs::from_ns(1_000_000)).unwrap();
    for _ in 0..steps {
        let ticks = clock.advance(step).unwrap();
        let decision = brain.prepare(ticks, &[]).unwrap();
        emu.set_buttons(Buttons(decision.buttons));
        emu.run_frame().unwrap();
        let px = emu.framebuffer();
        let frame = Frame {
            width: WIDTH as u32,
            height: HEIGHT as u32,
            rgba: &px,
        };
        brain.commit(Some(&frame), &[], &[]).unwrap();
        rate_sum += brain.rates()[..4].iter().sum::<f64>() / 4.0;
    }
    let image = emu.memory_image();
    (
        u16::from_le_bytes([image[SCORE], image[SCORE + 1]]),
        rate_sum / steps as f64,
    )
}

#[test]
fn arena_frames_reach_the_direction_roles() {
    let Some(mut emu) = arena() else { return };
    emu.run_frame().unwrap();
    let (_, with_frames) = play(&mut emu, 120);
    // The same brain without visual input.
    let mut blind = toy_brain(42, 1);
    let mut blind_sum = 0.0;
    for k in 0..120u64 {
        blind.prepare(16 + u64::from(k % 3 != 0), &[]).unwrap();
        blind.commit(None, &[], &[]).unwrap();
        blind_sum += blind.rates()[..4].iter().sum::<f64>() / 4.0;
    }
    let blind_mean = blind_sum / 120.0;
    assert!(
        with_frames > blind_mean * 1.2,
        "arena frames must drive the D-pad roles: {with_frames} Hz with frames, {blind_mean} Hz without"
    );
}

#[test]
fn the_toy_wiring_steers_the_fly_to_food() {
    let Some(mut emu) = arena() else { return };
    let (score, _) = play(&mut emu, 600);
    assert!(score >= 1, "arena-toy-v1 ate nothing in 600 frames");
}
