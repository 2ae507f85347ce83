//! `flysim frames`: a run's game frames regenerated as PNG files, each checked against the
//! trace's view digest; a run the build cannot reproduce, or one without views, is refused.

use std::path::{Path, PathBuf};

use flysim_types::digest::sha256;
use flysim_types::payload::parse_payload;
use flysim_types::trace::{RunDigester, TransitionTrace};

use crate::gameboy::{binjgb_missing, run_composition};
use crate::{codes_in, flysim};

/// A 120-step `gameboy.kdl` run in `state`; its run directory.
fn gameboy_run(state: &Path) -> PathBuf {
    let out = run_composition(
        "compositions/gameboy.kdl",
        state,
        "120",
        "in-process",
        "memory",
    );
    assert_eq!(out.status, 0, "{}", out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    PathBuf::from(doc["runDir"].as_str().unwrap())
}

/// The trace's rows, parsed.
fn rows(dir: &Path) -> Vec<TransitionTrace> {
    std::fs::read_to_string(dir.join("trace.ndjson"))
        .unwrap()
        .lines()
        .map(|l| parse_payload(l.as_bytes()).unwrap())
        .collect()
}

/// Decodes a PNG: width, height and its RGBA8 pixels.
fn decode(path: &Path) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgba);
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

/// Every `scale`-th pixel of every `scale`-th row: the unscaled picture.
fn unscaled(rgba: &[u8], width: u32, scale: u32) -> Vec<u8> {
    let row = 4 * width as usize;
    rgba.chunks_exact(row)
        .step_by(scale as usize)
        .flat_map(|r| r.chunks_exact(4).step_by(scale as usize).flatten())
        .copied()
        .collect()
}

/// Rewrites the trace with `edit` applied to its rows, and the manifest's run digest to
/// match: a consistent run directory this build did not record.
fn rewrite(dir: &Path, edit: impl Fn(&mut TransitionTrace)) {
    let mut rows = rows(dir);
    let manifest = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    let plan_digest = flysim_types::Digest::parse(doc["planDigest"].as_str().unwrap()).unwrap();
    let mut digester = RunDigester::new(&plan_digest);
    let mut text = String::new();
    for row in &mut rows {
        edit(row);
        digester.push(&row.behaviour).unwrap();
        text.push_str(&flysim_types::payload::to_canonical(&*row).unwrap());
        text.push('\n');
    }
    std::fs::write(dir.join("trace.ndjson"), text).unwrap();
    let old = doc["runDigest"].as_str().unwrap();
    let new = digester.digest().hex();
    std::fs::write(dir.join("manifest.json"), manifest.replace(old, &new)).unwrap();
}

/// `flysim frames DIR --steps STEPS --out OUT`.
fn frames(dir: &std::path::Path, steps: &str, out: &std::path::Path) -> crate::Run {
    flysim(
        &[
            "frames",
            dir.to_str().unwrap(),
            "--steps",
            steps,
            "--out",
            out.to_str().unwrap(),
        ],
        b"",
    )
}

#[test]
fn frames_of_a_gameboy_run_are_the_traced_ones_scaled() {
    if binjgb_missing() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let dir = gameboy_run(state.path());
    let out = state.path().join("frames");
    let args = [
        "frames",
        dir.to_str().unwrap(),
        "--steps",
        "100..110",
        "--scale",
        "2",
    ];
    let run = flysim(
        &[&args[..], &["--out", out.to_str().unwrap()]].concat(),
        b"",
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(run.stdout.starts_with("11 frame(s)"), "{}", run.stdout);
    let mut files: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    let expected: Vec<String> = (100..=110).map(|k| format!("lcd-{k}.png")).collect();
    let mut sorted = expected.clone();
    sorted.sort();
    assert_eq!(files, sorted);
    let rows = rows(&dir);
    let mut distinct = std::collections::BTreeSet::new();
    for (k, name) in (100..=110).zip(&expected) {
        let (width, height, rgba) = decode(&out.join(name));
        assert_eq!((width, height), (320, 288), "{name}");
        let colours: std::collections::BTreeSet<&[u8]> = rgba.chunks_exact(4).collect();
        assert!(colours.len() > 1, "{name} is blank");
        let pixels = unscaled(&rgba, width, 2);
        assert_eq!(pixels.len(), 160 * 144 * 4);
        let view = &rows[k].behaviour.observation.views[0];
        assert_eq!(view.view_id.as_str(), "lcd");
        assert_eq!(sha256(&pixels), view.digest, "{name}");
        distinct.insert(view.digest);
    }
    // The fly moves: the frames are not one picture eleven times.
    assert!(distinct.len() > 1);
}

#[test]
fn frames_of_a_run_whose_row_was_altered_are_refused() {
    if binjgb_missing() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let dir = gameboy_run(state.path());
    // Boundary 105 claims another reward: the directory is consistent, but not this build's.
    rewrite(&dir, |row| {
        if row.behaviour.boundary.get() == 105 {
            row.behaviour.observation.views[0].digest = sha256(b"another screen");
        }
    });
    let out = state.path().join("frames");
    let run = frames(&dir, "100..110", &out);
    assert_eq!(run.status, 7, "{}", run.stderr);
    assert_eq!(codes_in(&run.stderr), ["FS0932"], "{}", run.stderr);
    assert!(run.stderr.contains("boundary 105"), "{}", run.stderr);
    assert!(run.stderr.contains("observation"), "{}", run.stderr);
    // Frames before the altered row were checked and written; none from it on.
    assert!(out.join("lcd-104.png").exists());
    assert!(!out.join("lcd-105.png").exists());
    assert!(!out.join("lcd-106.png").exists());

    // A trace altered without its manifest is damage, found before anything runs.
    let trace = std::fs::read_to_string(dir.join("trace.ndjson")).unwrap();
    std::fs::write(
        dir.join("trace.ndjson"),
        trace.replacen("\"lcd\"", "\"lcd2\"", 1),
    )
    .unwrap();
    let damaged = frames(&dir, "1", &out);
    assert_ne!(damaged.status, 0);
    assert!(
        !codes_in(&damaged.stderr).contains(&"FS0932".to_owned()),
        "{}",
        damaged.stderr
    );
}

/// Copies the directory `from` to `to`, recursively.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &to.join(entry.file_name()));
        } else {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

#[test]
fn frames_of_a_run_without_views_are_refused() {
    let state = tempfile::tempdir().unwrap();
    let dir = state.path().join("run");
    copy_tree(&crate::root().join("fixtures/runs/synthetic-3"), &dir);
    // The counter arena has an 8 x 2 view; as recorded its frames are regenerated.
    let out = state.path().join("frames");
    let run = frames(&dir, "0..2", &out);
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert_eq!(decode(&out.join("counters-2.png")).0, 8);
    // A run whose rows record no view has no frames.
    rewrite(&dir, |row| row.behaviour.observation.views.clear());
    let out = state.path().join("none");
    let run = frames(&dir, "0..2", &out);
    assert_eq!(run.status, 1, "{}", run.stderr);
    assert_eq!(codes_in(&run.stderr), ["FS0931"], "{}", run.stderr);
    assert!(!out.exists());
}
