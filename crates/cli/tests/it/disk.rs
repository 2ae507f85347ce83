//! A full disk, for real: each test mounts a small tmpfs as the state directory and runs
//! `compositions/synthetic.kdl` on it. A run whose trace fills the disk, or whose checkpoints
//! find no room, ends with a `failed` manifest that names the code and the cause; a resume with
//! no room for its manifest says so with its own code and leaves the manifest as it was; none
//! leaves a temporary file.
//!
//! Mounting needs the privilege to (root, or `CAP_SYS_ADMIN`); without it each test says what
//! is missing and returns.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{Run, flysim};

use crate::golden::SYNTHETIC_RUN;

/// A tmpfs mounted in a temporary directory, unmounted on drop.
struct Tmpfs {
    point: PathBuf,
    _dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts a tmpfs with `options` (as `mount -o` reads them: `size=256k`), or says why it
    /// cannot.
    fn mount(options: &str) -> Option<Self> {
        let dir = tempfile::tempdir().unwrap();
        let point = dir.path().join("disk");
        std::fs::create_dir(&point).unwrap();
        let mounted = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("{options},mode=0755"),
                "tmpfs",
            ])
            .arg(&point)
            .output();
        match mounted {
            Ok(out) if out.status.success() => Some(Self { point, _dir: dir }),
            Ok(out) => {
                skip(&format!(
                    "mount -t tmpfs failed ({}): this test needs the privilege to mount a file system (root or CAP_SYS_ADMIN)",
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
                None
            }
            Err(e) => {
                skip(&format!("no `mount` command to run ({e})"));
                None
            }
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.point).status();
    }
}

#[expect(clippy::print_stderr, reason = "the explicit skip message")]
fn skip(why: &str) {
    eprintln!("skipped: {why}");
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// Fails on any temporary file or reserve left under `dir`.
fn assert_no_leftovers(dir: &Path) {
    let left: Vec<PathBuf> = files_under(dir)
        .into_iter()
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.ends_with(".tmp") || name == flysim_store::RESERVE_FILE
        })
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// The one run directory of the state directory `state`.
fn the_run_dir(state: &Path) -> PathBuf {
    let runs: Vec<PathBuf> = std::fs::read_dir(state.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs[0].clone()
}

fn manifest_of(run_dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(run_dir.join("manifest.json")).unwrap()).unwrap()
}

/// The complete lines of the trace (each a row ending in a newline); fails on a torn tail.
fn trace_rows(run_dir: &Path) -> usize {
    let text = std::fs::read_to_string(run_dir.join("trace.ndjson")).unwrap();
    assert!(text.is_empty() || text.ends_with('\n'), "a torn last row");
    for (i, line) in text.lines().enumerate() {
        let row: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(row["behaviour"]["boundary"], i.to_string(), "row {i}");
    }
    text.lines().count()
}

/// Runs `flysim` in the workspace root with `args`.
fn run(args: &[&str]) -> Run {
    flysim(args, b"")
}

#[test]
fn a_full_disk_fails_the_run_and_leaves_no_temporary_files() {
    // Room for the run directory and about three hundred of the 601 rows (about 3 KiB each).
    let Some(disk) = Tmpfs::mount("size=1m") else {
        return;
    };
    let state = disk.point.to_str().unwrap();
    let out = run(&["run", "compositions/synthetic.kdl", "--state-dir", state]);
    assert_eq!(out.status, 3, "{}", out.stderr);
    assert!(out.stderr.contains("FS0401"), "{}", out.stderr);
    assert!(
        out.stderr.contains("No space left on device"),
        "{}",
        out.stderr
    );
    let run_dir = the_run_dir(&disk.point);
    let manifest = manifest_of(&run_dir);
    assert_eq!(manifest["status"], "failed", "{manifest}");
    assert_eq!(manifest["failure"]["code"], "FS0401", "{manifest}");
    let message = manifest["failure"]["message"].as_str().unwrap();
    assert!(message.contains("No space left on device"), "{message}");
    assert!(message.contains("trace.ndjson"), "{message}");
    // The manifest names exactly what the trace holds: whole rows, 0..=steps.
    let steps: usize = manifest["steps"].as_str().unwrap().parse().unwrap();
    assert!(steps > 0 && steps < 600, "{manifest}");
    assert_eq!(trace_rows(&run_dir), steps + 1, "{manifest}");
    assert_no_leftovers(&disk.point);
}

/// Fills the free space of the file system at `dir` with a file of zeros, all but `room`
/// bytes.
fn fill(dir: &Path, room: u64) -> PathBuf {
    use std::io::Write as _;
    let path = dir.join("filler");
    let mut file = std::fs::File::create(&path).unwrap();
    let chunk = [0u8; 4096];
    while file.write_all(&chunk).is_ok() {}
    let len = file.metadata().unwrap().len();
    file.set_len(len.saturating_sub(room)).unwrap();
    file.sync_all().unwrap();
    path
}

#[test]
fn a_disk_without_room_for_the_manifest_is_reported_and_leaves_no_temporary_file() {
    let Some(disk) = Tmpfs::mount("size=2m") else {
        return;
    };
    let state = disk.point.to_str().unwrap();
    let paused = run(&[
        "run",
        "compositions/synthetic.kdl",
        "--state-dir",
        state,
        "--steps",
        "120",
    ]);
    assert_eq!(paused.status, 0, "{}", paused.stderr);
    let run_dir = the_run_dir(&disk.point);
    let before = |name: &str| std::fs::read(run_dir.join(name)).unwrap();
    let (trace, manifest) = (before("trace.ndjson"), before("manifest.json"));
    // A resume keeps no reserve of its own: with the disk full but for a page (its lock
    // file's), its first row or its manifest cannot be written, and neither can the manifest
    // that says it failed.
    let filler = fill(&disk.point, 4096);
    let dir = run_dir.to_str().unwrap();
    let refused = run(&["resume", dir]);
    assert_eq!(refused.status, 3, "{}", refused.stderr);
    // Its own code, and the failure's code in its message.
    assert_eq!(
        crate::codes_in(&refused.stderr),
        ["FS0401", "FS0409"],
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.trim_start().starts_with("FS0409"),
        "{}",
        refused.stderr
    );
    for words in [
        "ended failed (FS0401",
        "No space left on device",
        "its manifest could not be written",
    ] {
        assert!(
            refused.stderr.contains(words),
            "{words}: {}",
            refused.stderr
        );
    }
    // The manifest is the paused one; the trace holds the paused run's rows and at most whole
    // rows after them (a row that fit the last page of the file); no temporary file is left.
    assert_eq!(before("manifest.json"), manifest);
    assert!(before("trace.ndjson").starts_with(&trace));
    assert!(trace_rows(&run_dir) >= 121);
    assert_no_leftovers(&disk.point);
    // With room again, the resume plays to the uninterrupted run's digest.
    std::fs::remove_file(filler).unwrap();
    let resumed = run(&["resume", dir, "--json"]);
    assert_eq!(resumed.status, 0, "{}", resumed.stderr);
    let report: serde_json::Value = serde_json::from_str(&resumed.stdout).unwrap();
    assert_eq!(report["runDigest"], SYNTHETIC_RUN, "{report}");
    assert_eq!(manifest_of(&run_dir)["status"], "complete");
    assert_no_leftovers(&disk.point);
}

/// Files and directories under `dir`, itself included: the inodes they take.
fn inodes_under(dir: &Path) -> u64 {
    1 + std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            let path = e.path();
            if path.is_dir() {
                inodes_under(&path)
            } else {
                1
            }
        })
        .sum::<u64>()
}

#[test]
fn checkpoints_without_room_fail_the_run_and_leave_no_temporary_file() {
    // What a run directory without checkpoints takes, once its writer has let go (its lock
    // file and its reserve are gone then).
    let Some(probe) = Tmpfs::mount("size=8m") else {
        return;
    };
    let state = probe.point.to_str().unwrap();
    let one = run(&[
        "run",
        "compositions/synthetic.kdl",
        "--state-dir",
        state,
        "--steps",
        "1",
    ]);
    assert_eq!(one.status, 0, "{}", one.stderr);
    let taken = inodes_under(&probe.point);
    drop(probe);
    // Room for about that and the writer's lock and reserve: too few files for the checkpoint
    // generations, while the trace (one file) grows as it likes.
    let Some(disk) = Tmpfs::mount(&format!("size=8m,nr_inodes={}", taken + 2)) else {
        return;
    };
    let state = disk.point.to_str().unwrap();
    let out = run(&["run", "compositions/synthetic.kdl", "--state-dir", state]);
    assert_eq!(out.status, 3, "{}", out.stderr);
    assert_eq!(crate::codes_in(&out.stderr), ["FS0407"], "{}", out.stderr);
    let run_dir = the_run_dir(&disk.point);
    let manifest = manifest_of(&run_dir);
    // Every step was committed, and the rows stand, but the run is not whole.
    assert_eq!(manifest["status"], "failed", "{manifest}");
    assert_eq!(manifest["failure"]["code"], "FS0407", "{manifest}");
    let message = manifest["failure"]["message"].as_str().unwrap();
    assert!(message.contains("No space left on device"), "{message}");
    assert_eq!(manifest["steps"], "600", "{manifest}");
    assert_eq!(
        manifest["runDigest"].as_str(),
        SYNTHETIC_RUN.strip_prefix("sha256:"),
        "{manifest}"
    );
    assert_eq!(trace_rows(&run_dir), 601);
    assert_no_leftovers(&disk.point);
}
