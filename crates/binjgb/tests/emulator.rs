//! The binjgb wrapper on the project's own fly arena ROM. Without the core in the build each test
//! says so and checks only that construction reports the absence.

use flysim_binjgb::{
    Availability, BinjgbError, Buttons, Emulator, FRAME_BYTES, ImageMap, MEMORY_IMAGE_BYTES,
    availability,
};

const FLY_X: usize = 0xc000;
const FLY_Y: usize = 0xc001;
const SCORE: usize = 0xc002;
const FRAME: usize = 0xc008;

fn rom() -> Vec<u8> {
    std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/roms/fly-arena.gb"),
    )
    .unwrap()
}

/// A powered-on arena, or `None` (after saying why) when this build has no core.
fn arena() -> Option<Emulator> {
    match availability() {
        Availability::Available { .. } => Some(Emulator::new(&rom()).unwrap()),
        Availability::Absent { reason } => {
            let err = Emulator::new(&rom()).unwrap_err();
            assert!(matches!(err, BinjgbError::Absent { .. }));
            #[expect(clippy::print_stderr, reason = "the explicit skip message")]
            {
                eprintln!("skipped: the binjgb core is absent from this build: {reason}");
            }
            None
        }
    }
}

fn run(emu: &mut Emulator, buttons: Buttons, frames: usize) {
    emu.set_buttons(buttons);
    for _ in 0..frames {
        emu.run_frame().unwrap();
    }
}

fn word(image: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([image[at], image[at + 1]])
}

#[test]
fn arena_boots_and_the_fly_moves_with_the_d_pad() {
    let Some(mut emu) = arena() else { return };
    assert_eq!(emu.rom_digest(), flysim_types::digest::sha256(&rom()));
    run(&mut emu, Buttons::default(), 60);
    let image = emu.memory_image();
    assert_eq!((image[FLY_X], image[FLY_Y]), (76, 68), "start position");
    run(&mut emu, Buttons::default().with("right"), 10);
    let moved = emu.memory_image();
    assert_eq!(moved[FLY_X], 86, "one pixel per frame to the right");
    run(&mut emu, Buttons::default().with("up").with("left"), 20);
    let diagonal = emu.memory_image();
    assert_eq!((diagonal[FLY_X], diagonal[FLY_Y]), (66, 48));
}

#[test]
fn every_call_runs_exactly_one_frame() {
    let Some(mut emu) = arena() else { return };
    run(&mut emu, Buttons::default(), 30);
    let mut last = word(&emu.memory_image(), FRAME);
    for _ in 0..600 {
        emu.run_frame().unwrap();
        let now = word(&emu.memory_image(), FRAME);
        assert_eq!(now, last.wrapping_add(1), "the game saw exactly one VBlank");
        last = now;
    }
    assert_eq!(emu.frames(), 630);
}

#[test]
fn reading_the_memory_image_and_the_framebuffer_mutates_nothing() {
    let Some(mut emu) = arena() else { return };
    run(&mut emu, Buttons::default().with("down"), 45);
    let before = emu.export_state().digest();
    let image = emu.memory_image();
    let frame = emu.framebuffer();
    assert_eq!(
        emu.export_state().digest(),
        before,
        "state digest before and after reading"
    );
    assert_eq!(image.len(), MEMORY_IMAGE_BYTES);
    assert_eq!(frame.len(), FRAME_BYTES);
    assert!(
        image[0x8000..0xa000].iter().all(|b| *b == 0xff),
        "VRAM is not read"
    );
    assert!(
        image[0xff00..0xff80].iter().all(|b| *b == 0xff),
        "I/O is not read"
    );
    assert_eq!(&image[0x134..0x13d], b"FLY ARENA", "ROM is mapped at $0000");
}

/// An earlier frame is brought up to the frame on screen by rewriting the rows from the first
/// that differs to the last that differs, and no others.
#[test]
fn updating_an_earlier_frame_rewrites_the_rows_between_the_first_and_last_that_differ() {
    const ROW: usize = FRAME_BYTES / flysim_binjgb::HEIGHT;
    let Some(mut emu) = arena() else { return };
    run(&mut emu, Buttons::default(), 30);
    let now = emu.framebuffer();

    let mut same = now.clone();
    assert_eq!(emu.framebuffer_update(&mut same), 0, "nothing differs");
    assert_eq!(same, now);

    // Two damaged bytes, in rows 10 and 100: rows 10 to 100 are rewritten.
    let mut damaged = now.clone();
    damaged[10 * ROW + 3] ^= 0xff;
    damaged[100 * ROW + ROW - 1] ^= 0x01;
    assert_eq!(emu.framebuffer_update(&mut damaged), 91);
    assert_eq!(damaged, now);

    // One damaged pixel in the last row: one row.
    let mut last = now.clone();
    last[FRAME_BYTES - 4] ^= 0x80;
    assert_eq!(emu.framebuffer_update(&mut last), 1);
    assert_eq!(last, now);

    // A frame from before the fly moved: some rows, not all, and then the frame on screen.
    run(&mut emu, Buttons::default().with("down"), 3);
    let moved = emu.framebuffer();
    let mut earlier = now.clone();
    let rows = emu.framebuffer_update(&mut earlier);
    let differing = (0..flysim_binjgb::HEIGHT)
        .filter(|r| now[r * ROW..(r + 1) * ROW] != moved[r * ROW..(r + 1) * ROW])
        .collect::<Vec<_>>();
    let (first, last) = (differing[0], differing[differing.len() - 1]);
    assert_eq!(rows, last - first + 1);
    assert!(rows < flysim_binjgb::HEIGHT, "{rows} rows");
    assert_eq!(earlier, moved);

    // Not a frame (a buffer of another length): written whole.
    let mut short = vec![7; 10];
    assert_eq!(emu.framebuffer_update(&mut short), flysim_binjgb::HEIGHT);
    assert_eq!(short, moved);
}

/// Plays a fixed input script and returns the state digest after every frame.
fn trace(emu: &mut Emulator, frames: usize) -> Vec<flysim_types::Digest> {
    (0..frames)
        .map(|i| {
            let pad = Buttons(u8::try_from((i / 7) % 16).unwrap());
            emu.set_buttons(pad);
            emu.run_frame().unwrap();
            emu.export_state().digest()
        })
        .collect()
}

#[test]
fn two_emulators_given_the_same_inputs_agree_frame_by_frame() {
    let Some(mut a) = arena() else { return };
    let mut b = Emulator::new(&rom()).unwrap();
    assert_eq!(trace(&mut a, 400), trace(&mut b, 400));
    assert_eq!(a.framebuffer(), b.framebuffer());
}

#[test]
fn an_exported_state_resumes_exactly_in_another_emulator() {
    let Some(mut a) = arena() else { return };
    run(&mut a, Buttons::default().with("right"), 100);
    let saved = a.export_state();
    let continued = trace(&mut a, 120);
    let mut b = Emulator::new(&rom()).unwrap();
    run(&mut b, Buttons::default().with("left"), 7); // a different past, overwritten by the import
    b.import_state(&saved).unwrap();
    assert_eq!(b.export_state().state, saved.state);
    assert_eq!(trace(&mut b, 120), continued);
    assert_eq!(a.framebuffer(), b.framebuffer());
}

#[test]
fn the_fly_eats_food_and_scores() {
    let Some(mut emu) = arena() else { return };
    run(&mut emu, Buttons::default(), 20);
    for _ in 0..1500 {
        let image = emu.memory_image();
        let (x, y, fx, fy) = (image[FLY_X], image[FLY_Y], image[0xc004], image[0xc005]);
        let mut pad = Buttons::default();
        for (cond, name) in [
            (fy < y, "up"),
            (fy > y, "down"),
            (fx < x, "left"),
            (fx > x, "right"),
        ] {
            if cond {
                pad = pad.with(name);
            }
        }
        emu.set_buttons(pad);
        emu.run_frame().unwrap();
    }
    let score = word(&emu.memory_image(), SCORE);
    assert!(score >= 10, "a greedy player scores steadily, got {score}");
}

#[test]
fn audio_arrives_at_the_sample_rate() {
    let Some(mut emu) = arena() else { return };
    run(&mut emu, Buttons::default(), 597); // ten seconds of frames, almost exactly
    let bytes = emu.take_audio().len();
    let expected = 2.0 * 48_000.0 * 597.0 / 59.727_500_569_606;
    assert!(
        (bytes as f64 - expected).abs() < 64.0,
        "{bytes} bytes of stereo u8 audio, expected about {expected}"
    );
    assert!(emu.take_audio().is_empty(), "taking drains");
}

#[test]
fn untaken_audio_is_bounded_and_what_overflows_is_counted() {
    let Some(mut emu) = arena() else { return };
    // 15 seconds of frames, never taken: the buffer stops at its limit.
    run(&mut emu, Buttons::default(), 900);
    let produced = 2.0 * 48_000.0 * 900.0 / 59.727_500_569_606;
    let dropped = emu.audio_dropped();
    let kept = emu.take_audio().len();
    assert_eq!(kept, flysim_binjgb::AUDIO_BUFFER_LIMIT);
    assert!(
        ((kept as u64 + dropped) as f64 - produced).abs() < 64.0,
        "kept {kept} + dropped {dropped} is not the {produced} bytes produced"
    );
    // Taking makes room again; a limit of 0 keeps nothing and counts everything.
    run(&mut emu, Buttons::default(), 60);
    assert!(!emu.take_audio().is_empty());
    assert_eq!(emu.audio_dropped(), dropped);
    emu.set_audio_limit(0);
    run(&mut emu, Buttons::default(), 60);
    assert!(emu.take_audio().is_empty());
    assert!(emu.audio_dropped() > dropped + 3_000);
}

#[test]
fn bad_roms_and_states_are_refused_with_codes() {
    if arena().is_none() {
        return;
    }
    for bad in [vec![0u8; 100], Vec::new(), vec![0u8; 0x8001]] {
        let err = Emulator::new(&bad).unwrap_err();
        assert_eq!(
            miette::Diagnostic::code(&err).unwrap().to_string(),
            "FS0602",
            "{} bytes",
            bad.len()
        );
    }
    let mut emu = arena().unwrap();
    let mut saved = emu.export_state();
    saved.state.truncate(100);
    let err = emu.import_state(&saved).unwrap_err();
    assert_eq!(
        miette::Diagnostic::code(&err).unwrap().to_string(),
        "FS0603"
    );
    let mut wrong_header = emu.export_state();
    wrong_header.state[0] ^= 0xff;
    assert!(matches!(
        emu.import_state(&wrong_header),
        Err(BinjgbError::StateRejected { .. })
    ));
}

#[test]
fn an_emulator_moves_between_threads() {
    let Some(mut emu) = arena() else { return };
    run(&mut emu, Buttons::default(), 10);
    let digest = std::thread::spawn(move || {
        emu.run_frame().unwrap();
        emu.export_state().digest()
    })
    .join()
    .unwrap();
    let mut again = Emulator::new(&rom()).unwrap();
    run(&mut again, Buttons::default(), 11);
    assert_eq!(again.export_state().digest(), digest);
}

#[test]
fn blargg_cpu_instrs_passes_on_the_wrapper() {
    if arena().is_none() {
        return;
    }
    // blargg's CPU instruction test ships inside the pinned binjgb tree; it prints its verdict
    // with tiles numbered by ASCII code, so the background map spells it out.
    let path = std::path::Path::new(env!("FLYSIM_BINJGB_TEST_ROMS")).join("blargg/cpu_instrs.gb");
    let rom = std::fs::read(&path).unwrap();
    let mut emu = Emulator::new(&rom).unwrap();
    let mut screen = String::new();
    for _ in 0..10 {
        run(&mut emu, Buttons::default(), 500);
        screen = (0..18u16)
            .map(|row| {
                (0..20u16)
                    .map(|col| char::from(emu.debug_read(0x9800 + row * 32 + col)))
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("\n");
        if screen.contains("Passed") || screen.contains("Failed") {
            break;
        }
    }
    assert!(
        screen.contains("Passed all tests"),
        "cpu_instrs did not pass:\n{screen}"
    );
}

/// The memory image read address by address through the core's public read: the oracle the
/// fast image (copies inside the core's translation unit) must equal.
fn image_by_reads(emu: &mut Emulator) -> Vec<u8> {
    let mut image = vec![0xffu8; MEMORY_IMAGE_BYTES];
    for (start, end) in [
        (0x0000u16, 0x7fffu16),
        (0xa000, 0xfdff),
        (0xfea0, 0xfeff),
        (0xff80, 0xffff),
    ] {
        for addr in start..=end {
            image[usize::from(addr)] = emu.debug_read(addr);
        }
    }
    image
}

#[test]
fn the_memory_image_and_its_windows_equal_reading_every_address_on_bank_switching_cartridges() {
    if arena().is_none() {
        return;
    }
    let blargg = std::path::Path::new(env!("FLYSIM_BINJGB_TEST_ROMS")).join("blargg");
    // fly-arena has no mapper; cpu_instrs switches MBC1 ROM banks; dmg_sound and mem_timing
    // also enable MBC1 external RAM, where they write their results.
    let mut roms = vec![("fly-arena".to_owned(), rom())];
    for name in ["cpu_instrs.gb", "dmg_sound.gb", "mem_timing.gb"] {
        roms.push((name.to_owned(), std::fs::read(blargg.join(name)).unwrap()));
    }
    let (mut banks_seen, mut ext_ram_seen) = (std::collections::BTreeSet::new(), false);
    // Images refreshed in place: one at every checkpoint, carried from ROM to ROM (its map must
    // not hold for another ROM's banks), and one per ROM at every third checkpoint only.
    let mut carried = (vec![0u8; MEMORY_IMAGE_BYTES], ImageMap::default());
    for (name, bytes) in roms {
        let mut emu = Emulator::new(&bytes).unwrap();
        let mut sparse = (vec![0u8; MEMORY_IMAGE_BYTES], ImageMap::default());
        for checkpoint in 0..12 {
            run(&mut emu, Buttons::default().with("right"), 97);
            let fast = emu.memory_image();
            let slow = image_by_reads(&mut emu);
            if let Some(at) = (0..MEMORY_IMAGE_BYTES).find(|&i| fast[i] != slow[i]) {
                panic!(
                    "{name}, checkpoint {checkpoint}: the image differs at ${at:04X} ({:02x} != {:02x})",
                    fast[at], slow[at]
                );
            }
            let mut refreshed = vec![&mut carried];
            if checkpoint % 3 == 0 {
                refreshed.push(&mut sparse);
            }
            for (which, (image, map)) in refreshed.into_iter().enumerate() {
                emu.refresh_memory_image(image, map);
                if let Some(at) = (0..MEMORY_IMAGE_BYTES).find(|&i| image[i] != fast[i]) {
                    panic!(
                        "{name}, checkpoint {checkpoint}: refreshed image {which} differs at \
                         ${at:04X} ({:02x} != {:02x})",
                        image[at], fast[at]
                    );
                }
            }
            // Windows (what the world's inspection reads) are the image's bytes, across the
            // ROM banks, external RAM, both work-RAM banks, their echo and HRAM.
            for (start, len) in [
                (0x0000u16, 256u16),
                (0x3f80, 256),
                (0x7f00, 256),
                (0xa000, 256),
                (0xbf80, 256),
                (0xc000, 256),
                (0xcf80, 256),
                (0xdf80, 256),
                (0xefc0, 128),
                (0xfd00, 256),
                (0xfea0, 0x60),
                (0xff80, 0x80),
            ] {
                let at = usize::from(start);
                assert_eq!(
                    emu.read_window(start, len),
                    fast[at..at + usize::from(len)],
                    "{name}, checkpoint {checkpoint}: window ${start:04X}+{len}"
                );
            }
            banks_seen.insert((name.clone(), fast[0x4000..0x8000].to_vec()));
            ext_ram_seen |= fast[0xa000..0xc000].iter().any(|b| *b != 0xff);
        }
    }
    assert!(
        banks_seen
            .iter()
            .filter(|(n, _)| n == "cpu_instrs.gb")
            .count()
            > 1,
        "cpu_instrs mapped more than one ROM bank at $4000 while it was compared"
    );
    assert!(
        ext_ram_seen,
        "some cartridge's external RAM was enabled while compared"
    );
}
