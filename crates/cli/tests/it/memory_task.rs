//! The declared memory task (`memory-v1`) end to end on the Game Boy: a third-party ROM (binjgb's
//! own demo game, `docs/porklike.gb` in the pinned binjgb source, found through `BINJGB_SRC`)
//! runs 3600 steps with two declared variables in all three modes with one run digest, its rows
//! carry the variables and its score is the declared weight times their change; the fly arena's
//! own task is refused on it at validate; and the fly arena's score declared as memory
//! (`compositions/gameboy-memory.kdl`) pays exactly what the arena's hand-written task pays.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::gameboy::binjgb_missing;
use crate::{flysim, root};

/// The third-party ROM, when the pinned binjgb source is at hand (`None`, said, otherwise).
fn porklike() -> Option<PathBuf> {
    let rom = std::env::var_os("BINJGB_SRC").map(|s| Path::new(&s).join("docs/porklike.gb"));
    match rom {
        Some(rom) if rom.is_file() => Some(rom),
        _ => {
            #[expect(clippy::print_stderr, reason = "the explicit skip message")]
            {
                eprintln!(
                    "skipped: no third-party ROM: BINJGB_SRC is unset or holds no docs/porklike.gb"
                );
            }
            None
        }
    }
}

/// `compositions/gameboy.kdl` with its content replaced by `rom` (copied beside it) and its task
/// by `task`, written where its relative asset paths resolve.
fn porklike_composition(dir: &Path, rom: &Path, task: &str) -> PathBuf {
    let bytes = std::fs::read(rom).unwrap();
    let digest = flysim_types::digest::sha256(&bytes).hex();
    std::fs::write(dir.join("porklike.gb"), &bytes).unwrap();
    if !dir.join("fixtures").exists() {
        std::os::unix::fs::symlink(root().join("fixtures"), dir.join("fixtures")).unwrap();
        std::fs::create_dir(dir.join("compositions")).unwrap();
    }
    let text = std::fs::read_to_string(root().join("compositions/gameboy.kdl")).unwrap();
    let text: String = text
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("content ") {
                format!(
                    "    content \"porklike\" path=\"../porklike.gb\" sha256=\"{digest}\" format=\"gb\"\n"
                )
            } else if l.starts_with("task ") {
                format!("{task}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let path = dir.join("compositions/porklike.kdl");
    std::fs::write(&path, text).unwrap();
    path
}

/// The two variables: the game keeps its sprite table at `$C000` (four bytes per sprite: y, x,
/// tile, attributes), so these are the first sprite's position.
const PORKLIKE_TASK: &str = r#"task "memory-v1" {
    variable "sprite-0-y" address=0xc000 type="u8"
    variable "sprite-0-x" address=0xc001 type="u8"
    reward "sprite-0-x" weight=0.25
}"#;

/// Runs `path` in `mode` with its `--json` answer.
fn run(path: &Path, state: &Path, mode: &str, steps: &str) -> Value {
    let transport = if mode == "in-process" {
        "memory"
    } else {
        "unix"
    };
    let out = flysim(
        &[
            "run",
            path.to_str().unwrap(),
            "--mode",
            mode,
            "--transport",
            transport,
            "--steps",
            steps,
            "--json",
            "--state-dir",
            state.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(out.status, 0, "{mode}: {}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
}

/// Every behaviour row of a run directory.
fn rows(run_dir: &Value) -> Vec<Value> {
    let trace =
        std::fs::read_to_string(Path::new(run_dir.as_str().unwrap()).join("trace.ndjson")).unwrap();
    trace
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["behaviour"].clone())
        .collect()
}

#[test]
fn a_third_party_rom_runs_a_memory_task_in_every_mode_with_one_digest() {
    if binjgb_missing() {
        return;
    }
    let Some(rom) = porklike() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = porklike_composition(dir.path(), &rom, PORKLIKE_TASK);
    let mut digests = Vec::new();
    let mut first = None;
    for (i, mode) in ["in-process", "thread", "process"].into_iter().enumerate() {
        let doc = run(&path, &dir.path().join(format!("state-{i}")), mode, "3600");
        assert_eq!(doc["steps"], 3600, "{mode}");
        digests.push(doc["runDigest"].as_str().unwrap().to_owned());
        first.get_or_insert(doc);
    }
    assert!(digests.windows(2).all(|w| w[0] == w[1]), "{digests:?}");
    let doc = first.unwrap();
    let rows = rows(&doc["runDir"]);
    assert_eq!(rows.len(), 3601);
    let mut xs = Vec::new();
    for row in &rows {
        let vars = row["variables"].as_object().unwrap();
        assert_eq!(vars.len(), 2, "{vars:?}");
        let (y, x) = (&vars["sprite-0-y"], &vars["sprite-0-x"]);
        assert!(y.as_u64().unwrap() <= 255 && x.as_u64().unwrap() <= 255);
        xs.push(x.as_i64().unwrap());
    }
    // The game moves its first sprite: many positions, not one.
    let mut distinct = xs.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert!(distinct.len() >= 10, "sprite 0 took {distinct:?}");
    // The score is 0.25 × Δx summed over every step: 0.25 × (last − first).
    let expected = 0.25 * (xs[xs.len() - 1] - xs[0]) as f64;
    let score = doc["scores"]["fly-a"].as_f64().unwrap();
    assert!((score - expected).abs() < 1e-9, "{score} != {expected}");
    let paid: usize = rows
        .iter()
        .map(|r| r["agents"][0]["rewards"].as_array().unwrap().len())
        .sum();
    let changes = xs.windows(2).filter(|w| w[0] != w[1]).count();
    assert_eq!(paid, changes, "one reward per step that moved the sprite");
}

#[test]
fn the_fly_arena_task_is_refused_on_a_third_party_rom_at_validate() {
    let Some(rom) = porklike() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = porklike_composition(dir.path(), &rom, "task \"fly-arena-score-v1\"");
    let out = flysim(&["validate", path.to_str().unwrap()], b"");
    assert_ne!(out.status, 0);
    assert!(out.stderr.contains("FS0239"), "{}", out.stderr);
    assert!(
        out.stderr.contains("task \"memory-v1\""),
        "the help points at the memory task: {}",
        out.stderr
    );
}

#[test]
fn the_arena_score_declared_as_memory_pays_what_the_arena_task_pays() {
    if binjgb_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let memory = run(
        &root().join("compositions/gameboy-memory.kdl"),
        &dir.path().join("memory"),
        "in-process",
        "700",
    );
    let arena = run(
        &root().join("compositions/gameboy.kdl"),
        &dir.path().join("arena"),
        "in-process",
        "700",
    );
    assert_eq!(memory["scores"], arena["scores"]);
    let (memory_rows, arena_rows) = (rows(&memory["runDir"]), rows(&arena["runDir"]));
    let mut paid_at = Vec::new();
    for (m, a) in memory_rows.iter().zip(&arena_rows) {
        let step = m["boundary"].as_str().unwrap();
        // The same rewards reach the brain, so it plays the same buttons.
        assert_eq!(m["controls"], a["controls"], "boundary {step}");
        let values = |row: &Value| -> Vec<f64> {
            row["agents"][0]["rewards"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["value"].as_f64().unwrap())
                .collect()
        };
        assert_eq!(values(m), values(a), "boundary {step}");
        if !values(m).is_empty() {
            paid_at.push(step.to_owned());
        }
        // The declared score is the count of foods paid so far.
        assert_eq!(
            m["variables"]["score"].as_u64().unwrap(),
            paid_at.len() as u64
        );
        assert!(a["variables"].is_null(), "the arena task declares none");
    }
    assert_eq!(
        paid_at,
        ["127", "492", "639"],
        "the golden run's food steps"
    );
}

#[test]
fn a_done_condition_ends_the_episode_where_it_starts_to_hold() {
    if binjgb_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(root().join("fixtures"), dir.path().join("fixtures")).unwrap();
    std::fs::create_dir(dir.path().join("compositions")).unwrap();
    let text = std::fs::read_to_string(root().join("compositions/gameboy-memory.kdl")).unwrap();
    let reward = "    reward \"score\" weight=1\n";
    assert!(text.contains(reward));
    let text = text.replace(reward, &format!("{reward}    done \"score\" \"==\" 2\n"));
    let path = dir.path().join("compositions/done.kdl");
    std::fs::write(&path, text).unwrap();
    let doc = run(&path, &dir.path().join("state"), "in-process", "3600");
    // The second food is eaten at step 492 (the arena test above): the episode ends there.
    assert_eq!(doc["steps"], 492, "{doc}");
    let rows = rows(&doc["runDir"]);
    let last = rows.last().unwrap();
    assert_eq!(last["episodeRequest"]["kind"], "terminal");
    assert_eq!(last["episodeRequest"]["reason"], "done");
    assert_eq!(last["variables"]["score"], 2);
    assert!(
        rows[..rows.len() - 1]
            .iter()
            .all(|r| r["episodeRequest"].is_null()),
        "no earlier end"
    );
}

/// Every `task "memory-v1"` block in `docs/tasks.md`, in a copy of the shipped composition of
/// its backend (addresses from 0x80000000 are the GameCube's).
fn documented_tasks() -> Vec<(String, &'static str)> {
    let page = std::fs::read_to_string(root().join("docs/tasks.md")).unwrap();
    let mut blocks = Vec::new();
    for block in page.split("```kdl\n").skip(1) {
        let body = block.split("```").next().unwrap();
        if body.starts_with("task \"memory-v1\"") {
            let base = if body.contains("address=0x8") {
                "dolphin"
            } else {
                "gameboy"
            };
            blocks.push((body.to_owned(), base));
        }
    }
    blocks
}

#[test]
fn every_memory_task_in_the_task_guide_validates_on_its_backend() {
    let blocks = documented_tasks();
    assert!(
        blocks.len() >= 3,
        "the language, the Game Boy and the GameCube examples"
    );
    assert!(blocks.iter().any(|(_, base)| *base == "dolphin"));
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(root().join("fixtures"), dir.path().join("fixtures")).unwrap();
    std::fs::create_dir(dir.path().join("compositions")).unwrap();
    for (i, (block, base)) in blocks.iter().enumerate() {
        let text =
            std::fs::read_to_string(root().join(format!("compositions/{base}.kdl"))).unwrap();
        let text: String = text
            .lines()
            .map(|l| {
                if l.starts_with("task ") {
                    block.clone()
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        let path = dir.path().join(format!("compositions/doc-{i}.kdl"));
        std::fs::write(&path, text).unwrap();
        let out = flysim(&["validate", path.to_str().unwrap()], b"");
        assert_eq!(
            out.status, 0,
            "docs/tasks.md block {i}:\n{block}\n{}",
            out.stderr
        );
    }
}
