#![expect(
    missing_docs,
    reason = "criterion's macros generate undocumented functions"
)]
//! The wrapper's frame loop against binjgb's own loop in plain C, on the fly arena ROM.
//!
//! `cargo bench -p flysim-binjgb --bench frame_loop` (with `BINJGB_SRC` set). Both sides power on
//! and run 600 frames (about ten seconds of Game Boy time) with audio produced and drained.

use criterion::{Criterion, criterion_group, criterion_main};
use flysim_binjgb::{Availability, Buttons, Emulator, availability, plain_c_frames};

const FRAMES: u32 = 600;

fn rom() -> Vec<u8> {
    std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/roms/fly-arena.gb"),
    )
    .unwrap()
}

fn frame_loop(c: &mut Criterion) {
    if let Availability::Absent { reason } = availability() {
        #[expect(clippy::print_stderr, reason = "the benchmark's skip message")]
        {
            eprintln!("skipped: the binjgb core is absent from this build: {reason}");
        }
        return;
    }
    let rom = rom();
    let mut group = c.benchmark_group("arena-600-frames");
    group.sample_size(20);
    group.bench_function("plain-c", |b| {
        b.iter(|| plain_c_frames(&rom, FRAMES).unwrap())
    });
    group.bench_function("wrapper", |b| {
        b.iter(|| {
            let mut emu = Emulator::new(&rom).unwrap();
            emu.set_buttons(Buttons::default());
            for _ in 0..FRAMES {
                emu.run_frame().unwrap();
            }
            emu.take_audio().len()
        });
    });
    group.finish();
}

criterion_group!(benches, frame_loop);
criterion_main!(benches);
