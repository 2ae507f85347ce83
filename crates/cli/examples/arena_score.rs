//! Plays the fly arena ROM with the greedy readout of `arena-toy-v1` and prints the score.
//!
//! `BINJGB_SRC=... cargo run --release -p flysim-brain --example arena_score -- [STEPS] [SEED]`
//! (defaults: 10,000 steps, agent seed 42). Each step is one Game Boy frame: the brain prepares
//! over the frame's 16 or 17 ticks (the exact rational accumulator), its decision is the
//! joypad for the frame, and the new screen is committed as the next input. No reward, no
//! learning claim: the score is what the wiring does.

#![expect(clippy::print_stdout, reason = "an example reports on stdout")]

use std::sync::Arc;

use flysim_binjgb::{Availability, Buttons, Emulator, FRAME_NS, HEIGHT, WIDTH, availability};
use flysim_brain::{Brain, Frame, Profile, format};
use flysim_types::{RationalNs, TickAccumulator};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let steps: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let seed: i32 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(42);
    if let Availability::Absent { reason } = availability() {
        println!("skipped: the binjgb core is absent from this build: {reason}");
        return;
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = root.join("fixtures/profiles/arena-toy-v1");
    let profile = Profile::parse(&std::fs::read(dir.join("arena-toy-v1.json")).expect("profile"))
        .expect("a valid profile");
    let conn = format::decode(&std::fs::read(dir.join(&profile.connectome.file)).expect("file"))
        .expect("a valid connectome");
    let mut brain = Brain::new(profile, Arc::new(conn), seed, 1).expect("a brain");
    brain.warm_up_and_calibrate();
    let rom = std::fs::read(root.join("fixtures/roms/fly-arena.gb")).expect("the arena ROM");
    let mut emu = Emulator::new(&rom).expect("the arena boots");
    let step = RationalNs::new(FRAME_NS.0, FRAME_NS.1).expect("the frame duration");
    let mut clock = TickAccumulator::new(RationalNs::from_ns(1_000_000)).expect("1 ms");
    let mut pressed = [0u64; 8];
    for _ in 0..steps {
        let ticks = clock.advance(step).expect("no overflow");
        let decision = brain.prepare(ticks, &[]).expect("no stimuli");
        for (i, count) in pressed.iter_mut().enumerate() {
            *count += u64::from(decision.buttons >> i & 1);
        }
        emu.set_buttons(Buttons(decision.buttons));
        emu.run_frame().expect("a frame");
        let px = emu.framebuffer();
        let frame = Frame {
            width: WIDTH as u32,
            height: HEIGHT as u32,
            rgba: &px,
        };
        brain.commit(Some(&frame), &[], &[]).expect("a commit");
    }
    let image = emu.memory_image();
    let score = u16::from_le_bytes([image[0xc002], image[0xc003]]);
    println!(
        "arena-toy-v1 seed {seed}: {steps} steps, {} brain ticks, score {score}, fly at ({}, {}), food at ({}, {})",
        brain.brain_ticks(),
        image[0xc000],
        image[0xc001],
        image[0xc004],
        image[0xc005]
    );
    println!(
        "frames pressed: up {} down {} left {} right {} a {} b {} start {} select {}",
        pressed[0],
        pressed[1],
        pressed[2],
        pressed[3],
        pressed[4],
        pressed[5],
        pressed[6],
        pressed[7]
    );
}
