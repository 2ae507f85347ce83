//! A crafted or damaged saved state cannot crash or corrupt the process: each field the core
//! dereferences is refused with its code and the emulator runs on, and mutated real states
//! (bit flips, byte changes, truncations) never crash. The mutation loop runs in a child
//! process (this test binary, re-executed) so that a crash is seen as a signal rather than
//! killing the test runner; with valgrind on the machine a shorter loop also runs under it.
//!
//! Without the core in the build each test says so and returns.

use std::process::Command;

use flysim_binjgb::{
    Availability, BinjgbError, Buttons, Emulator, SavedState, StateOffsets, availability,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// The variable that makes this binary the mutation loop's child: `<cases>`.
const CHILD: &str = "FLYSIM_BINJGB_STATE_MUTATION_CHILD";
/// What the child prints when every case ran.
const CHILD_DONE: &str = "mutation loop done:";

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/roms")
            .join(name),
    )
    .unwrap()
}

/// blargg's `dmg_sound.gb`: an MBC1 cartridge with external RAM, which it enables.
fn with_ram() -> Vec<u8> {
    std::fs::read(std::path::Path::new(env!("FLYSIM_BINJGB_TEST_ROMS")).join("blargg/dmg_sound.gb"))
        .unwrap()
}

/// Whether the core is in this build (after saying why not).
fn core_present() -> bool {
    match availability() {
        Availability::Available { .. } => true,
        Availability::Absent { reason } => {
            #[expect(clippy::print_stderr, reason = "the explicit skip message")]
            {
                eprintln!("skipped: the binjgb core is absent from this build: {reason}");
            }
            false
        }
    }
}

/// An emulator of `rom` after `frames` frames with the d-pad held right.
fn running(rom: &[u8], frames: usize) -> Emulator {
    let mut emu = Emulator::new(rom).unwrap();
    emu.set_buttons(Buttons::default().with("right"));
    for _ in 0..frames {
        emu.run_frame().unwrap();
    }
    emu
}

fn poke_u32(state: &mut [u8], at: u64, value: u32) {
    let at = usize::try_from(at).unwrap();
    state[at..at + 4].copy_from_slice(&value.to_ne_bytes());
}

fn code(err: &BinjgbError) -> String {
    miette::Diagnostic::code(err).unwrap().to_string()
}

/// Installs `crafted` in an emulator of `rom` that has run a while, and checks it is refused
/// with `expected` while nothing changes: the emulator then runs on exactly like a twin that
/// never saw the crafted state.
fn refused_and_runs_on(rom: &[u8], crafted: &SavedState, expected: &str) -> BinjgbError {
    let mut emu = running(rom, 120);
    let mut twin = running(rom, 120);
    let err = emu.import_state(crafted).unwrap_err();
    assert_eq!(code(&err), expected, "{err}");
    for _ in 0..30 {
        emu.run_frame().unwrap();
        twin.run_frame().unwrap();
    }
    assert_eq!(
        emu.export_state(),
        twin.export_state(),
        "the refused state changed nothing"
    );
    assert_eq!(emu.memory_image(), twin.memory_image());
    err
}

#[test]
fn a_rom_bank_base_outside_the_cartridge_is_refused() {
    if !core_present() {
        return;
    }
    let rom = fixture("fly-arena.gb");
    let offsets = Emulator::state_offsets();
    let mut crafted = running(&rom, 60).export_state();
    // The arena's code runs in the first window: a base 1 GiB past its 32 KiB ROM.
    poke_u32(&mut crafted.state, offsets.rom_base[0], 0x4000_0000);
    let err = refused_and_runs_on(&rom, &crafted, "FS0604");
    assert!(
        matches!(
            err,
            BinjgbError::RomBankOutOfRange {
                window: 0,
                base: 0x4000_0000,
                rom_bytes: 0x8000
            }
        ),
        "{err:?}"
    );
    // In range but off a bank boundary, and one bank past the end of the second window.
    for (window, base) in [(0usize, 0x10u32), (1, 0x8000)] {
        let mut crafted = running(&rom, 60).export_state();
        poke_u32(&mut crafted.state, offsets.rom_base[window], base);
        refused_and_runs_on(&rom, &crafted, "FS0604");
    }
}

#[test]
fn a_cartridge_index_naming_no_cartridge_is_refused() {
    if !core_present() {
        return;
    }
    let rom = fixture("fly-arena.gb");
    let offsets = Emulator::state_offsets();
    let mut crafted = running(&rom, 60).export_state();
    // A 32 KiB ROM holds one cartridge, index 0.
    crafted.state[usize::try_from(offsets.cart_info_index).unwrap()] = 7;
    let err = refused_and_runs_on(&rom, &crafted, "FS0605");
    assert!(
        matches!(
            err,
            BinjgbError::CartridgeIndexOutOfRange {
                index: 7,
                cartridges: 1
            }
        ),
        "{err:?}"
    );
}

#[test]
fn an_external_ram_base_outside_the_cartridge_ram_is_refused() {
    if !core_present() {
        return;
    }
    let rom = with_ram();
    let offsets = Emulator::state_offsets();
    // dmg_sound has enabled its 8 KiB of RAM (and writes its results there) by now.
    let mut crafted = running(&rom, 120).export_state();
    poke_u32(&mut crafted.state, offsets.ext_ram_base, 0x4000_0000);
    let err = refused_and_runs_on(&rom, &crafted, "FS0606");
    assert!(
        matches!(
            err,
            BinjgbError::ExtRamBankOutOfRange {
                base: 0x4000_0000,
                limit: 0x2000
            }
        ),
        "{err:?}"
    );
    // Inside the core's RAM array but past this cartridge's 8 KiB.
    let mut crafted = running(&rom, 120).export_state();
    poke_u32(&mut crafted.state, offsets.ext_ram_base, 0x2000);
    refused_and_runs_on(&rom, &crafted, "FS0606");
}

#[test]
fn ram_bank_offsets_indices_and_the_model_are_checked() {
    if !core_present() {
        return;
    }
    let rom = fixture("fly-arena.gb");
    let StateOffsets {
        vram_offset,
        wram_offset,
        is_cgb,
        timer_clock_select,
        ..
    } = Emulator::state_offsets();
    let saved = running(&rom, 60).export_state();
    let at = |offset: u64| usize::try_from(offset).unwrap();
    let mut crafted = saved.clone();
    crafted.state[at(wram_offset)..at(wram_offset) + 2].copy_from_slice(&0xf000u16.to_ne_bytes());
    refused_and_runs_on(&rom, &crafted, "FS0607");
    let mut crafted = saved.clone();
    crafted.state[at(vram_offset)..at(vram_offset) + 2].copy_from_slice(&0x1000u16.to_ne_bytes());
    refused_and_runs_on(&rom, &crafted, "FS0607");
    let mut crafted = saved.clone();
    poke_u32(&mut crafted.state, timer_clock_select, 0x0800_0000);
    let err = refused_and_runs_on(&rom, &crafted, "FS0608");
    assert!(
        matches!(
            err,
            BinjgbError::StateFieldOutOfRange {
                value: 0x0800_0000,
                limit: 4,
                ..
            }
        ),
        "{err:?}"
    );
    let mut crafted = saved;
    poke_u32(&mut crafted.state, is_cgb, 1);
    refused_and_runs_on(&rom, &crafted, "FS0609");
}

/// One mutation of a real state.
#[derive(Debug, Clone)]
enum Mutation {
    /// Flip bit `bit` of the byte at `at` (`at` picks a position by [`position`]).
    Flip { at: u32, bit: u8 },
    /// Set the byte at `at` to `value`.
    Set { at: u32, value: u8 },
    /// Set the four bytes at `at` to `value` (a counter, a base, an enumeration).
    Word { at: u32, value: u32 },
    /// Keep only the first `keep` bytes (a multiple of a thousandth of the state).
    Truncate { keep: u32 },
}

/// Where a mutation lands: a third of them in the first 64 bytes (header, cartridge index,
/// memory map), a third in the last 4 KiB (timer, APU, PPU, DMA, clocks), a third anywhere.
fn position(at: u32, len: usize) -> usize {
    let len32 = u32::try_from(len).unwrap_or(u32::MAX);
    let spot = match at % 3 {
        0 => (at / 3) % 64,
        1 => len32 - 1 - (at / 3) % 4096.min(len32),
        _ => (at / 3) % len32,
    };
    usize::try_from(spot).unwrap_or(0)
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<u32>(), 0u8..8).prop_map(|(at, bit)| Mutation::Flip { at, bit }),
        (any::<u32>(), any::<u8>()).prop_map(|(at, value)| Mutation::Set { at, value }),
        (any::<u32>(), any::<u32>()).prop_map(|(at, value)| Mutation::Word { at, value }),
        (0u32..1000).prop_map(|keep| Mutation::Truncate { keep }),
    ]
}

fn mutate(state: &mut Vec<u8>, mutations: &[Mutation]) {
    for m in mutations {
        let len = state.len();
        if len < 8 {
            return;
        }
        match *m {
            Mutation::Flip { at, bit } => state[position(at, len)] ^= 1 << bit,
            Mutation::Set { at, value } => state[position(at, len)] = value,
            Mutation::Word { at, value } => {
                let p = position(at, len).min(len - 4) & !3;
                state[p..p + 4].copy_from_slice(&value.to_ne_bytes());
            }
            Mutation::Truncate { keep } => {
                state.truncate(len * usize::try_from(keep).unwrap_or(0) / 1000);
            }
        }
    }
}

/// The mutation loop: `cases` mutated states of the arena and of a cartridge with RAM, each
/// installed in an emulator that then runs two frames and reads its image and state, or that
/// refuses it and must be unchanged. Returns the cases installed and refused.
fn mutation_loop(cases: u32) -> (u32, u32) {
    let roms = [fixture("fly-arena.gb"), with_ram()];
    let bases: Vec<(Emulator, SavedState)> = roms
        .iter()
        .map(|rom| {
            let emu = running(rom, 150);
            let saved = emu.export_state();
            (emu, saved)
        })
        .collect();
    let bases = std::cell::RefCell::new(bases);
    let (installed, refused) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let rng = TestRng::deterministic_rng(RngAlgorithm::ChaCha);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let strategy = (any::<bool>(), proptest::collection::vec(mutation(), 1..4));
    runner
        .run(&strategy, |(which, mutations)| {
            let mut bases = bases.borrow_mut();
            let (emu, saved) = &mut bases[usize::from(which)];
            emu.import_state(saved).unwrap();
            let mut crafted = saved.clone();
            mutate(&mut crafted.state, &mutations);
            if emu.import_state(&crafted).is_ok() {
                installed.set(installed.get() + 1);
                emu.run_frame().unwrap();
                emu.run_frame().unwrap();
                let _ = (emu.memory_image(), emu.export_state());
            } else {
                refused.set(refused.get() + 1);
                prop_assert_eq!(&emu.export_state().state, &saved.state);
                emu.run_frame().unwrap();
            }
            Ok(())
        })
        .unwrap();
    (installed.get(), refused.get())
}

/// The child's entry: runs the mutation loop when this binary was started as the child, and
/// returns at once otherwise.
#[test]
fn mutation_loop_child() {
    #[expect(
        clippy::disallowed_methods,
        reason = "the parent test tells this re-executed binary to be its child"
    )]
    let Ok(cases) = std::env::var(CHILD) else {
        return;
    };
    let (installed, refused) = mutation_loop(cases.parse().unwrap());
    #[expect(clippy::print_stdout, reason = "the child's report to its parent")]
    {
        println!("{CHILD_DONE} {installed} installed, {refused} refused");
    }
}

/// Runs the loop in a child (`wrapper` first, if any) and checks it ended normally.
fn run_child(wrapper: &[&str], cases: u32) {
    let exe = std::env::current_exe().unwrap();
    let (program, args) = match wrapper.split_first() {
        Some((program, rest)) => (std::ffi::OsStr::new(program), rest.to_vec()),
        None => (exe.as_os_str(), Vec::new()),
    };
    let mut command = Command::new(program);
    command.args(args);
    if !wrapper.is_empty() {
        command.arg(&exe);
    }
    let out = command
        .args([
            "--exact",
            "mutation_loop_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, cases.to_string())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    #[cfg(unix)]
    let signal = std::os::unix::process::ExitStatusExt::signal(&out.status);
    #[cfg(not(unix))]
    let signal: Option<i32> = None;
    assert!(
        out.status.success() && signal.is_none() && stdout.contains(CHILD_DONE),
        "the mutation loop did not end normally ({:?}, signal {signal:?}):\n{stdout}\n{stderr}",
        out.status
    );
    let line = stdout
        .lines()
        .find(|l| l.contains(CHILD_DONE))
        .unwrap_or_default();
    #[expect(clippy::print_stderr, reason = "what the loop covered, for the log")]
    {
        eprintln!("{}: {line}", wrapper.first().unwrap_or(&"native"));
    }
}

#[test]
fn mutated_real_states_never_crash_the_process() {
    if !core_present() {
        return;
    }
    run_child(&[], 2000);
}

#[test]
fn mutated_real_states_pass_under_valgrind() {
    if !core_present() {
        return;
    }
    let found = Command::new("valgrind").arg("--version").output();
    if !found.is_ok_and(|o| o.status.success()) {
        #[expect(clippy::print_stderr, reason = "the explicit skip message")]
        {
            eprintln!("skipped: valgrind is not on this machine");
        }
        return;
    }
    run_child(&["valgrind", "--error-exitcode=1", "-q"], 120);
}
