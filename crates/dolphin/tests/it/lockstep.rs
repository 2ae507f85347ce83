//! The backend on the project's own test program in a real Dolphin (Qt mode under a private
//! Xvfb, and the nogui fallback). Each test skips, saying what is missing, when Dolphin, Xvfb or
//! the PowerPC cross compiler is not installed.
//!
//! Heavy: each test boots Dolphin (about a second) and stops it again; the whole module takes
//! well under a minute on two busy cores.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use flysim_dolphin::{
    BackendConfig, DolphinError, DolphinWorld, Mode, Observation, PINNED_VERSION, fieldcount,
    pattern_control, port_id, schema::gamecube_pad,
};
use flysim_types::Payload as _;
use flysim_types::workers::{AxisValue, ButtonState, Determinism, PortControl, Recovery};
use tempfile::TempDir;

use crate::{find, scratch};

/// The installed tools, or `None` after saying which are missing.
struct Tools {
    dolphin: PathBuf,
    nogui: PathBuf,
    xvfb: PathBuf,
    gcc: PathBuf,
}

fn tools() -> Option<Tools> {
    let found = [
        ("dolphin-emu", find("dolphin-emu")),
        ("dolphin-emu-nogui", find("dolphin-emu-nogui")),
        ("Xvfb", find("Xvfb")),
        ("powerpc-linux-gnu-gcc", find("powerpc-linux-gnu-gcc")),
    ];
    let missing: Vec<&str> = found
        .iter()
        .filter(|(_, p)| p.is_none())
        .map(|(n, _)| *n)
        .collect();
    if !missing.is_empty() {
        #[expect(clippy::print_stderr, reason = "the explicit skip message")]
        {
            eprintln!(
                "skipped: not installed: {} (apt-get install dolphin-emu xvfb gcc-powerpc-linux-gnu)",
                missing.join(", ")
            );
        }
        return None;
    }
    let [d, n, x, g] = found.map(|(_, p)| p.unwrap());
    let version = flysim_dolphin::version_of(&d, scratch().path()).ok()?;
    if version != PINNED_VERSION {
        #[expect(clippy::print_stderr, reason = "the explicit skip message")]
        {
            eprintln!(
                "skipped: the installed Dolphin is {version:?}, the backend pins {PINNED_VERSION:?}"
            );
        }
        return None;
    }
    Some(Tools {
        dolphin: d,
        nogui: n,
        xvfb: x,
        gcc: g,
    })
}

/// A scratch directory with the test program built into it, and its configuration.
fn program(tools: &Tools, ports: Vec<u8>, mode: Mode) -> (TempDir, BackendConfig) {
    let dir = scratch();
    let build = dir.path().join("build");
    let elf = fieldcount::build(&tools.gcc, &build).unwrap();
    let digest = flysim_dolphin::file_digest(&elf).unwrap();
    let (binary, xvfb) = match mode {
        Mode::Qt => (&tools.dolphin, Some(tools.xvfb.as_path())),
        Mode::Nogui => (&tools.nogui, None),
    };
    let cfg = fieldcount::config(binary, PINNED_VERSION, xvfb, &elf, digest, ports, mode);
    (dir, cfg)
}

/// Starts a world in `dir/world`.
fn start(dir: &TempDir, cfg: &BackendConfig) -> DolphinWorld {
    let scratch = dir.path().join("w");
    std::fs::create_dir(&scratch).unwrap();
    DolphinWorld::start(cfg, &scratch).unwrap()
}

/// Drops the world and checks that Dolphin and Xvfb are gone with their X display files.
fn teardown(world: DolphinWorld) {
    let pids = world.processes();
    let display = world
        .display()
        .map(|d| d.trim_start_matches(':').to_owned());
    let socket = display.as_deref().map(|n| {
        let inode = socket_inode(n).expect("a running world's X socket exists");
        (n.to_owned(), inode)
    });
    let started = Instant::now();
    drop(world);
    assert!(
        started.elapsed() < Duration::from_secs(12),
        "teardown is bounded"
    );
    for pid in &pids {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "process {pid} is gone"
        );
        assert!(
            !Path::new(&format!("/dev/shm/dolphin-emu.{pid}")).exists(),
            "no emulated memory is left in /dev/shm"
        );
    }
    if let Some((n, inode)) = socket {
        assert_ne!(
            socket_inode(&n),
            Some(inode),
            "display :{n}'s socket is gone (or is another server's)"
        );
        if let Ok(lock) = std::fs::read_to_string(format!("/tmp/.X{n}-lock")) {
            let owner = lock.trim().parse::<u32>().ok();
            assert!(
                owner.is_none_or(|pid| !pids.contains(&pid)),
                "display :{n}'s lock names none of the world's processes"
            );
        }
    }
}

/// The inode and change time of display `n`'s socket, if it exists.
///
/// Tests run in parallel, and `Xvfb -displayfd` takes the lowest free display: once ours is gone
/// another test's server may take its number at once. Such a server creates a new socket file
/// (and, started with `-displayfd`, no lock file), so a socket under the same name with another
/// inode or a later change time (a file system may give a freed inode number again) is not ours.
fn socket_inode(n: &str) -> Option<(u64, i64, i64)> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata(format!("/tmp/.X11-unix/X{n}"))
        .ok()
        .map(|m| (m.ino(), m.ctime(), m.ctime_nsec()))
}

fn value(cfg: &BackendConfig, o: &Observation, name: &str) -> u32 {
    o.value(cfg, name).unwrap()
}

/// A control of `port`: the named buttons down, the six axes at `axes` (sticks and triggers at
/// their extremes or centre, whose SI bytes are exact).
fn control(port: u8, down: &[&str], axes: [f64; 6]) -> PortControl {
    let pad = gamecube_pad();
    PortControl {
        port_id: port_id(port),
        buttons: pad
            .buttons
            .iter()
            .map(|b| ButtonState {
                id: b.clone(),
                down: down.contains(&b.as_str()),
            })
            .collect(),
        axes: pad
            .axes
            .iter()
            .zip(axes)
            .map(|(a, value)| AxisValue {
                id: a.id.clone(),
                value,
            })
            .collect(),
    }
}

/// The SI words a standard controller reports for `control` (L and R digital never pressed):
/// high `[buttons, buttons | 0x80, stick x, stick y]`, low `[c x, c y, l, r]`.
fn si_words(control: &PortControl) -> (u32, u32) {
    let down = |id: &str| {
        control
            .buttons
            .iter()
            .any(|b| b.id.as_str() == id && b.down)
    };
    let mut b0 = 0u32;
    for (id, bit) in [
        ("a", 0x01),
        ("b", 0x02),
        ("x", 0x04),
        ("y", 0x08),
        ("start", 0x10),
    ] {
        if down(id) {
            b0 |= bit;
        }
    }
    let mut b1 = 0x80u32;
    for (id, bit) in [
        ("z", 0x10),
        ("d-up", 0x08),
        ("d-down", 0x04),
        ("d-right", 0x02),
        ("d-left", 0x01),
    ] {
        if down(id) {
            b1 |= bit;
        }
    }
    let stick = |v: f64| -> u32 {
        match v {
            -1.0 => 0x01,
            0.0 => 0x80,
            1.0 => 0xff,
            _ => unreachable!("only extremes and centre are checked"),
        }
    };
    let trigger = |v: f64| -> u32 { if v == 0.0 { 0x00 } else { 0xff } };
    let a = |i: usize| control.axes[i].value;
    (
        b0 << 24 | b1 << 16 | stick(a(0)) << 8 | stick(a(1)),
        stick(a(2)) << 24 | stick(a(3)) << 16 | trigger(a(4)) << 8 | trigger(a(5)),
    )
}

/// Batch `k` of the lockstep test for `port`: buttons and extreme axes cycling with `k`.
fn batch_control(port: u8, k: u64) -> PortControl {
    const BUTTONS: [&str; 9] = [
        "a", "b", "x", "y", "start", "d-up", "d-down", "d-left", "d-right",
    ];
    const LEVELS: [f64; 3] = [-1.0, 0.0, 1.0];
    let s = k + u64::from(port) * 7;
    let pick = |i: u64| LEVELS[((s / (i + 1) + i) % 3) as usize];
    let trig = |i: u64| if (s + i).is_multiple_of(4) { 1.0 } else { 0.0 };
    let held: Vec<&str> = BUTTONS
        .iter()
        .enumerate()
        .filter(|(i, _)| (s + *i as u64).is_multiple_of(3))
        .map(|(_, b)| *b)
        .collect();
    control(
        port,
        &held,
        [pick(0), pick(1), pick(2), pick(3), trig(0), trig(1)],
    )
}

#[test]
fn the_program_boots_and_100_advances_each_run_exactly_one_field() {
    let Some(tools) = tools() else { return };
    let (dir, cfg) = program(&tools, vec![1, 2], Mode::Qt);
    let started = Instant::now();
    let mut world = start(&dir, &cfg);
    let boot = started.elapsed();
    let o0 = world.observation().unwrap();
    assert_eq!(value(&cfg, &o0, "magic"), fieldcount::MAGIC);
    // Start, pause, align and 36 more fields to the start field (the nogui test checks that the
    // magic word alone appears within 5 s).
    assert!(
        boot < Duration::from_secs(10),
        "booted, paused and stepped to the start field in {boot:?}"
    );
    assert_eq!(o0.boundary, 0);
    let descriptor = world.descriptor();
    descriptor.validate().unwrap();
    assert_eq!(descriptor.step_duration.to_string(), "50050000/3");
    assert_eq!(descriptor.ports.len(), 2);
    assert_eq!(descriptor.recovery, Recovery::ExactCheckpoint);
    assert_eq!(descriptor.determinism, Determinism::Unverified);

    let mut previous = o0;
    let stepping = Instant::now();
    for k in 0..100u64 {
        let batch = [batch_control(1, k), batch_control(2, k)];
        let o = world.advance(&batch).unwrap();
        assert_eq!(o.boundary, k + 1);
        assert_eq!(
            o.fields,
            previous.fields + 1,
            "one MemoryWatcher field per step"
        );
        assert_eq!(
            value(&cfg, &o, "fields"),
            value(&cfg, &previous, "fields") + 1,
            "the program counted exactly one field at step {k}"
        );
        for (i, control) in batch.iter().enumerate() {
            let (hi, lo) = si_words(control);
            let n = i + 1;
            assert_eq!(
                (
                    value(&cfg, &o, &format!("pad{n}-hi")),
                    value(&cfg, &o, &format!("pad{n}-lo"))
                ),
                (hi, lo),
                "port {n}: the input of batch {k} is in observation {}",
                k + 1
            );
        }
        previous = o;
    }
    let per_second = 100.0 / stepping.elapsed().as_secs_f64();
    #[expect(clippy::print_stderr, reason = "the measured stepping rate")]
    {
        eprintln!("stepping: {per_second:.1} fields per second (boot {boot:?})");
    }

    // Nothing runs between advances: the program's counters stand still in memory.
    let ram = |w: &mut DolphinWorld| w.read_ram(fieldcount::MAGIC_ADDRESS, 16).unwrap();
    let before = ram(&mut world);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(ram(&mut world), before, "no field ran while idle");
    assert_eq!(world.observation().unwrap(), previous);
    let o = world
        .advance(&[batch_control(1, 0), batch_control(2, 0)])
        .unwrap();
    assert_eq!(o.fields, previous.fields + 1);
    teardown(world);
}

#[test]
fn capture_thirty_steps_restore_and_replay_repeat_exactly() {
    let Some(tools) = tools() else { return };
    let (dir, cfg) = program(&tools, vec![1, 3], Mode::Qt);
    let mut world = start(&dir, &cfg);
    let pad = gamecube_pad();
    let batch = |k: u64| [pattern_control(&pad, 1, k), pattern_control(&pad, 3, k)];
    for k in 0..5 {
        world.advance(&batch(k)).unwrap();
    }
    let checkpoint = world.capture().unwrap();
    assert_eq!(checkpoint.boundary, 5);
    let at_capture = world.observation().unwrap();
    let first: Vec<Observation> = (0..30).map(|k| world.advance(&batch(k)).unwrap()).collect();
    let restored = world.restore(&checkpoint).unwrap();
    assert_eq!(
        restored, at_capture,
        "the restored observation is the captured one"
    );
    let second: Vec<Observation> = (0..30).map(|k| world.advance(&batch(k)).unwrap()).collect();
    let same = first.iter().zip(&second).filter(|(a, b)| a == b).count();
    assert_eq!(same, 30, "30 of 30 observations repeat");

    // The checkpoint's bytes restore as well, and the pinned build then claims fixed-build.
    let bytes = checkpoint.to_bytes();
    let again = flysim_dolphin::Checkpoint::from_bytes(&bytes).unwrap();
    assert_eq!(world.restore(&again).unwrap(), at_capture);
    assert!(world.verify_replay(10).unwrap());
    assert_eq!(
        world.observation().unwrap(),
        at_capture,
        "verify_replay restores"
    );
    assert_eq!(world.descriptor().determinism, Determinism::FixedBuild);
    teardown(world);
}

#[test]
fn a_step_that_runs_two_fields_is_refused_with_fs0806_and_fails_the_world_with_fs0807() {
    let Some(tools) = tools() else { return };
    let (dir, cfg) = program(&tools, vec![1], Mode::Qt);
    let mut world = start(&dir, &cfg);
    // Holding Z makes the program present a new frame only every other field.
    let held_z = control(1, &["z"], [0.0; 6]);
    let mut refusal = None;
    for _ in 0..4 {
        match world.advance(std::slice::from_ref(&held_z)) {
            Ok(_) => {}
            Err(e) => {
                refusal = Some(e);
                break;
            }
        }
    }
    let err = refusal.expect("a two-field step is refused");
    assert_eq!(err.code_str(), "FS0806", "{err}");
    assert!(err.to_string().contains("ran 2 fields"), "{err}");
    let next = world.advance(&[control(1, &[], [0.0; 6])]).unwrap_err();
    assert_eq!(next.code_str(), "FS0807", "{next}");
    assert!(matches!(world.capture(), Err(DolphinError::Failed { .. })));
    teardown(world);
}

#[test]
fn a_batch_the_contract_refuses_changes_nothing() {
    let Some(tools) = tools() else { return };
    let (dir, cfg) = program(&tools, vec![2], Mode::Qt);
    let mut world = start(&dir, &cfg);
    let o0 = world.observation().unwrap();
    for bad in [
        vec![],
        vec![control(1, &[], [0.0; 6])],
        vec![control(2, &[], [1.5, 0.0, 0.0, 0.0, 0.0, 0.0])],
    ] {
        let err = world.advance(&bad).unwrap_err();
        assert!(err.code_str().starts_with("FS01"), "{err}");
    }
    assert_eq!(world.observation().unwrap(), o0);
    let o1 = world
        .advance(&[control(2, &["a"], [1.0, -1.0, 0.0, 0.0, 1.0, 0.0])])
        .unwrap();
    assert_eq!(o1.boundary, 1);
    assert_eq!(value(&cfg, &o1, "pad2-hi"), 0x0180_ff01);
    teardown(world);
}

#[test]
fn nogui_mode_boots_free_running_and_refuses_to_step_with_fs0810() {
    let Some(tools) = tools() else { return };
    let (dir, cfg) = program(&tools, vec![1], Mode::Nogui);
    let started = Instant::now();
    let mut world = start(&dir, &cfg);
    let o = world.observation().unwrap();
    assert_eq!(value(&cfg, &o, "magic"), fieldcount::MAGIC);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the magic word appeared within 5 s"
    );
    let descriptor = world.descriptor();
    assert_eq!(descriptor.recovery, Recovery::EpisodeRestart);
    assert_eq!(descriptor.determinism, Determinism::Unverified);
    let err = world.advance(&[control(1, &[], [0.0; 6])]).unwrap_err();
    assert_eq!(err.code_str(), "FS0810", "{err}");
    assert!(matches!(
        world.capture(),
        Err(DolphinError::Unsupported { .. })
    ));
    // It runs on by itself.
    std::thread::sleep(Duration::from_millis(200));
    assert!(world.observation().unwrap().fields > o.fields);
    teardown(world);
}

/// SHA-256 of main memory, but for `__OSStartTime` (`0x800030d8`, 8 bytes): Dolphin's boot
/// writes it from the host's clock (seconds since its own start, even with a custom RTC), so
/// it can differ between two starts by a second's worth of ticks. The test program never reads
/// it.
fn memory_but_start_time(world: &mut DolphinWorld) -> flysim_types::Digest {
    let mut ram = world
        .read_ram(0x8000_0000, flysim_dolphin::RAM_BYTES as usize)
        .unwrap();
    ram[0x30d8..0x30e0].fill(0);
    flysim_types::digest::sha256(&ram)
}

#[test]
fn boundary_0_is_the_same_state_wherever_the_first_pause_lands() {
    let Some(tools) = tools() else { return };
    let (dir, mut cfg) = program(&tools, vec![1, 2], Mode::Qt);
    // Room for a pause held back by 120 ms (about 30 fields free-running).
    cfg.start_field = Some(80);
    let run = |name: &str, delay: Duration| {
        let scratch = dir.path().join(name);
        std::fs::create_dir(&scratch).unwrap();
        let mut world = DolphinWorld::start_with_pause_delay(&cfg, &scratch, delay).unwrap();
        let paused = world.first_pause();
        let o0 = world.observation().unwrap();
        let ram0 = memory_but_start_time(&mut world);
        let steps: Vec<Observation> = (0..20)
            .map(|k| {
                world
                    .advance(&[batch_control(1, k), batch_control(2, k)])
                    .unwrap()
            })
            .collect();
        let ram20 = memory_but_start_time(&mut world);
        teardown(world);
        (paused, o0, ram0, steps, ram20)
    };
    let early = run("a", Duration::ZERO);
    let late = run("b", Duration::from_millis(120));
    assert!(
        late.0 > early.0,
        "the pauses landed at different fields ({} and {})",
        early.0,
        late.0
    );
    assert_eq!(
        early.1.fields, 80,
        "boundary 0 is the end of the start field"
    );
    assert_eq!(early.1, late.1, "the same observation at boundary 0");
    assert_eq!(early.2, late.2, "the same main memory at boundary 0");
    assert_eq!(early.3, late.3, "the same 20 observations");
    assert_eq!(early.4, late.4, "the same main memory after 20 steps");
}

#[test]
fn a_start_field_the_pause_cannot_reach_is_refused_with_fs0805_after_three_starts() {
    let Some(tools) = tools() else { return };
    let (dir, mut cfg) = program(&tools, vec![1], Mode::Qt);
    // The first pause and the aligning advance always take more than one field.
    cfg.start_field = Some(1);
    let scratch = dir.path().join("w");
    std::fs::create_dir(&scratch).unwrap();
    let started = Instant::now();
    let err = DolphinWorld::start(&cfg, &scratch).unwrap_err();
    assert_eq!(err.code_str(), "FS0805", "{err}");
    assert!(err.to_string().contains("raise `startField`"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(60), "bounded");
}
