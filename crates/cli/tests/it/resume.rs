//! Checkpoints and `flysim resume` end to end: N steps resumed for M equal N+M uninterrupted
//! in every mode; a SIGKILLed run resumes to the same digest; every damaged region of a
//! generation is refused with its own code and nothing resumes; a crash test over 100
//! checkpoint commits leaves only whole generations.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::{codes_in, flysim, root, synthetic_variant};

fn json_of(run: &crate::Run) -> serde_json::Value {
    assert_eq!(run.status, 0, "{}", run.stderr);
    serde_json::from_str(&run.stdout).unwrap()
}

/// `flysim run compositions/synthetic.kdl --steps N --json` with `extra`.
fn run(state: &Path, steps: u64, extra: &[&str]) -> serde_json::Value {
    let steps = steps.to_string();
    let mut args = vec![
        "run",
        "compositions/synthetic.kdl",
        "--steps",
        &steps,
        "--json",
        "--state-dir",
        state.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    json_of(&flysim(&args, b""))
}

fn resume(dir: &str, extra: &[&str]) -> crate::Run {
    let mut args = vec!["resume", dir, "--json"];
    args.extend_from_slice(extra);
    flysim(&args, b"")
}

/// The behaviour parts of a run directory's trace, one canonical line each.
fn behaviour(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("trace.ndjson"))
        .unwrap()
        .lines()
        .map(|l| {
            let row: serde_json::Value = serde_json::from_str(l).unwrap();
            row["behaviour"].to_string()
        })
        .collect()
}

#[test]
fn a_run_resumed_equals_the_uninterrupted_run_in_every_mode() {
    let tmp = tempfile::tempdir().unwrap();
    let whole = run(tmp.path(), 240, &[]);
    for (mode, transport) in [
        ("in-process", "memory"),
        ("thread", "memory"),
        ("process", "unix"),
    ] {
        let first = run(tmp.path(), 120, &["--mode", mode, "--transport", transport]);
        let dir = first["runDir"].as_str().unwrap();
        let resumed = json_of(&resume(dir, &["--steps", "120"]));
        assert_eq!(resumed["runId"], first["runId"], "{mode}");
        assert_eq!(resumed["steps"], 240, "{mode}");
        assert_eq!(resumed["runDigest"], whole["runDigest"], "{mode}");
        // Row for row, the behaviour is the uninterrupted run's (epochs are operational).
        assert_eq!(
            behaviour(&root().join(dir)),
            behaviour(&root().join(whole["runDir"].as_str().unwrap())),
            "{mode}"
        );
        let manifest: serde_json::Value =
            serde_json::from_slice(&std::fs::read(root().join(dir).join("manifest.json")).unwrap())
                .unwrap();
        // 240 of the plan's 600 steps: paused, never complete.
        assert_eq!(manifest["status"], "paused");
        assert_eq!(manifest["stepsBound"], "240");
        // The resumed run replays from scratch to the same digest.
        let replay = flysim(&["replay", dir], b"");
        assert_eq!(replay.status, 0, "{}", replay.stderr);
    }
}

#[test]
fn checkpoints_lists_the_generations_and_a_plan_without_a_cadence_has_none() {
    let tmp = tempfile::tempdir().unwrap();
    let first = run(tmp.path(), 130, &[]);
    let dir = first["runDir"].as_str().unwrap();
    let listed = flysim(&["checkpoints", dir], b"");
    assert_eq!(listed.status, 0, "{}", listed.stderr);
    // Cadence 60: boundaries 60 and 120, and 130 where the invocation stopped.
    let boundaries: Vec<&str> = listed
        .stdout
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().nth(1).unwrap())
        .collect();
    assert_eq!(boundaries, ["130", "120", "60"]);
    assert!(
        listed
            .stdout
            .lines()
            .skip(1)
            .all(|l| l.contains("verified"))
    );
    // The recorded fixture run keeps no checkpoints: resuming it is refused with a code.
    let none = flysim(&["resume", "fixtures/runs/synthetic-3"], b"");
    assert_eq!(codes_in(&none.stderr), ["FS0406"], "{}", none.stderr);
}

fn newest_generation(dir: &Path) -> PathBuf {
    let list: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("checkpoints/generations.json")).unwrap())
            .unwrap();
    let file = list["generations"].as_array().unwrap().last().unwrap()["file"]
        .as_str()
        .unwrap()
        .to_owned();
    dir.join("checkpoints").join(file)
}

#[test]
fn every_damaged_region_is_refused_with_its_code_and_nothing_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let first = run(tmp.path(), 120, &[]);
    let dir = root().join(first["runDir"].as_str().unwrap());
    let generation = newest_generation(&dir);
    let good = std::fs::read(&generation).unwrap();
    let envelope = flysim_types::checkpoint::decode(&good).unwrap();
    // One byte of every payload, of the table, of the header, of the manifest and the footer.
    let table = u32::from_le_bytes(good[24..28].try_into().unwrap()) as usize;
    let mut places = vec![
        ("magic", 0, "FS0440"),
        ("manifest", 40, "FS0448"),
        ("table", table + 70, "FS0445"),
        ("footer digest", good.len() - 30, "FS0448"),
        ("footer magic", good.len() - 2, "FS0441"),
    ];
    let mut at = table + envelope.payloads.len() * 112;
    for p in &envelope.payloads {
        at = at.next_multiple_of(8);
        places.push((p.name.as_str(), at + p.bytes.len() / 2, "FS0446"));
        at += p.bytes.len();
    }
    let trace = std::fs::read(dir.join("trace.ndjson")).unwrap();
    let manifest = std::fs::read(dir.join("manifest.json")).unwrap();
    for (region, offset, _) in &places {
        let mut bad = good.clone();
        bad[*offset] ^= 0x40;
        std::fs::write(&generation, &bad).unwrap();
        let refused = resume(dir.to_str().unwrap(), &["--steps", "10"]);
        assert_ne!(refused.status, 0, "{region}");
        let codes = codes_in(&refused.stderr);
        assert_eq!(codes.len(), 1, "{region}: {}", refused.stderr);
        assert!(
            codes[0].starts_with("FS044"),
            "{region}: {}",
            refused.stderr
        );
        // Nothing resumed: the run directory is as it was.
        assert_eq!(
            std::fs::read(dir.join("trace.ndjson")).unwrap(),
            trace,
            "{region}"
        );
        assert_eq!(
            std::fs::read(dir.join("manifest.json")).unwrap(),
            manifest,
            "{region}"
        );
    }
    // The payload flips name the payload, not only the file.
    let mut bad = good.clone();
    let (_, offset, code) = places.last().unwrap();
    bad[*offset] ^= 1;
    std::fs::write(&generation, &bad).unwrap();
    let refused = resume(dir.to_str().unwrap(), &[]);
    assert_eq!(codes_in(&refused.stderr), [*code], "{}", refused.stderr);
    // Undamaged again, it resumes.
    std::fs::write(&generation, &good).unwrap();
    let resumed = json_of(&resume(dir.to_str().unwrap(), &["--steps", "10"]));
    assert_eq!(resumed["steps"], 130);
}

#[test]
fn a_valid_generation_that_is_not_the_committed_one_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let first = run(tmp.path(), 130, &[]);
    let dir = root().join(first["runDir"].as_str().unwrap());
    // Replace the newest generation with an older, intact envelope: FS0405.
    let ckpt = dir.join("checkpoints");
    std::fs::copy(ckpt.join("gen-00000001.flysess"), newest_generation(&dir)).unwrap();
    let refused = resume(dir.to_str().unwrap(), &[]);
    assert_eq!(codes_in(&refused.stderr), ["FS0405"], "{}", refused.stderr);
    // An older generation can still be chosen explicitly.
    let resumed = json_of(&resume(
        dir.to_str().unwrap(),
        &["--generation", "2", "--steps", "10"],
    ));
    assert_eq!(resumed["steps"], 130);
}

#[test]
fn a_checkpoint_of_another_plan_is_refused_before_anything_is_installed() {
    let tmp = tempfile::tempdir().unwrap();
    let ours = run(tmp.path(), 60, &[]);
    // The same composition with another master seed: another plan.
    let other = synthetic_variant(tmp.path(), "other.kdl", |t| {
        t.replace("master-seed \"42\"", "master-seed \"43\"")
    });
    let theirs = json_of(&flysim(
        &[
            "run",
            other.to_str().unwrap(),
            "--steps",
            "60",
            "--json",
            "--state-dir",
            tmp.path().to_str().unwrap(),
        ],
        b"",
    ));
    let ours_dir = root().join(ours["runDir"].as_str().unwrap());
    let theirs_dir = root().join(theirs["runDir"].as_str().unwrap());
    std::fs::remove_dir_all(ours_dir.join("checkpoints")).unwrap();
    std::fs::create_dir(ours_dir.join("checkpoints")).unwrap();
    for f in std::fs::read_dir(theirs_dir.join("checkpoints")).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), ours_dir.join("checkpoints").join(f.file_name())).unwrap();
    }
    let trace = std::fs::read(ours_dir.join("trace.ndjson")).unwrap();
    let manifest = std::fs::read(ours_dir.join("manifest.json")).unwrap();
    let refused = resume(ours_dir.to_str().unwrap(), &["--steps", "5"]);
    // FS0312: the checkpoint was refused; nothing was installed or played.
    assert_eq!(codes_in(&refused.stderr), ["FS0312"], "{}", refused.stderr);
    assert!(
        refused.stderr.contains("another plan"),
        "{}",
        refused.stderr
    );
    assert_eq!(std::fs::read(ours_dir.join("trace.ndjson")).unwrap(), trace);
    assert_eq!(
        std::fs::read(ours_dir.join("manifest.json")).unwrap(),
        manifest
    );
}

/// A composition that checkpoints at every step, for the crash tests.
fn every_step_composition(dir: &Path, steps: u64) -> PathBuf {
    let path = synthetic_variant(dir, "every-step.kdl", |t| {
        t.replace("checkpoint every=60", "checkpoint every=1")
            .replace("steps 600", &format!("steps {steps}"))
    });
    assert!(std::fs::read_to_string(&path).unwrap().contains("every=1"));
    path
}

/// The committed high-water generation of a run directory, if any.
fn high_water(dir: &Path) -> u64 {
    std::fs::read(dir.join("checkpoints/generations.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v["highWater"].as_str().and_then(|s| s.parse().ok()))
        .unwrap_or(0)
}

/// A small xorshift stream, seeded from the clock and printed, for kill points.
struct Points(u64);

impl Points {
    #[expect(
        clippy::print_stderr,
        reason = "a failing run must say which kill points it drew"
    )]
    fn seeded() -> Self {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos() as u64
            | 1;
        eprintln!("kill points from seed {seed}");
        Self(seed)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Starts `flysim` with `args` in the workspace root and SIGKILLs it once the run directory
/// under `state` has committed `until` generations (or it exits by itself).
fn run_until_killed(args: &[&str], state: &Path, until: u64) -> bool {
    let mut child = Command::new(env!("CARGO_BIN_EXE_flysim"))
        .args(args)
        .env_clear()
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(_status) = child.try_wait().unwrap() {
            return false;
        }
        let dir = run_dir(state);
        if dir.as_deref().is_some_and(|d| high_water(d) >= until) {
            child.kill().unwrap();
            child.wait().unwrap();
            return true;
        }
        assert!(Instant::now() < deadline, "the child never reached {until}");
        std::thread::sleep(Duration::from_micros(200));
    }
}

fn run_dir(state: &Path) -> Option<PathBuf> {
    std::fs::read_dir(state.join("runs"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .next()
}

#[test]
fn a_run_killed_at_random_points_resumes_to_the_uninterrupted_digest() {
    let tmp = tempfile::tempdir().unwrap();
    let composition = every_step_composition(tmp.path(), 400);
    let reference = json_of(&flysim(
        &[
            "run",
            composition.to_str().unwrap(),
            "--json",
            "--state-dir",
            tmp.path().join("reference").to_str().unwrap(),
        ],
        b"",
    ));
    let state = tmp.path().join("crashed");
    let state_arg = state.to_str().unwrap().to_owned();
    let mut points = Points::seeded();
    let mut kills = 0;
    // The first invocation, then resumes, each SIGKILLed after a random number of commits,
    // until at least 100 checkpoint commits happened.
    let mut target = 5 + points.below(40);
    let mut killed = run_until_killed(
        &[
            "run",
            composition.to_str().unwrap(),
            "--state-dir",
            &state_arg,
        ],
        &state,
        target,
    );
    let dir = run_dir(&state).unwrap();
    let dir_arg = dir.to_str().unwrap().to_owned();
    while killed && high_water(&dir) < 100 {
        kills += 1;
        // Every generation the manifest names verifies, after every kill.
        let listed = flysim(&["checkpoints", &dir_arg], b"");
        assert_eq!(listed.status, 0, "{}", listed.stderr);
        assert!(
            listed
                .stdout
                .lines()
                .skip(1)
                .all(|l| l.contains("verified")),
            "{}",
            listed.stdout
        );
        target = high_water(&dir) + 5 + points.below(40);
        killed = run_until_killed(&["resume", &dir_arg], &state, target);
    }
    assert!(kills >= 2, "at least two kills happened ({kills})");
    assert!(high_water(&dir) >= 100);
    // Finish the run (the recorded bound of the first invocation: the plan's 400 steps).
    let done = json_of(&resume(&dir_arg, &[]));
    assert_eq!(done["steps"], 400);
    assert_eq!(done["runDigest"], reference["runDigest"]);
    // No generation file is half-written: every one the manifest names verifies and resumes.
    let generations: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("checkpoints/generations.json")).unwrap())
            .unwrap();
    for g in generations["generations"].as_array().unwrap() {
        let n = g["generation"].as_str().unwrap();
        let copy = tmp.path().join(format!("copy-{n}"));
        copy_dir(&dir, &copy);
        let resumed = json_of(&resume(copy.to_str().unwrap(), &["--generation", n]));
        assert_eq!(
            resumed["runDigest"], reference["runDigest"],
            "generation {n}"
        );
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}
