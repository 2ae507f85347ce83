//! `flysim report`: the page and its images for a `gameboy.kdl` run, each image decoding with
//! its expected size and not blank, the page linking every one, and the reward strip's frames
//! being the traced ones.

use std::path::Path;

use flysim_types::digest::sha256;

use crate::flysim;
use crate::gameboy::{binjgb_missing, run_composition};

/// Decodes a PNG: width, height and its RGBA8 pixels.
fn decode(path: &Path) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

/// How many distinct colours a picture has.
fn colours(rgba: &[u8]) -> usize {
    rgba.chunks_exact(4)
        .collect::<std::collections::BTreeSet<_>>()
        .len()
}

#[test]
fn the_report_of_a_gameboy_run_links_its_plots_and_the_frames_at_its_rewards() {
    if binjgb_missing() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let run = run_composition(
        "compositions/gameboy.kdl",
        state.path(),
        "700",
        "in-process",
        "memory",
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let dir = doc["runDir"].as_str().unwrap();
    let out = state.path().join("report");
    let report = flysim(&["report", dir, "-o", out.to_str().unwrap()], b"");
    assert_eq!(report.status, 0, "{}", report.stderr);
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        page.contains(&format!(
            "sha256:{}",
            doc["runDigest"]
                .as_str()
                .unwrap()
                .trim_start_matches("sha256:")
        )),
        "{page}"
    );
    assert!(
        page.contains("score of fly-a</td><td><code>3</code>"),
        "{page}"
    );
    assert!(page.contains("boundaries 127, 492, 639"), "{page}");
    // 13 roles and the population rate, 12 pixels each; 701 boundaries in 701 columns.
    for (image, size) in [
        ("score.png", (800, 240)),
        ("rates-fly-a.png", (701, 14 * 12)),
        ("rewards.png", (3 * 320 + 2 * 4, 288)),
    ] {
        assert!(
            page.contains(&format!("src=\"{image}\"")),
            "{image} is not linked"
        );
        let (width, height, rgba) = decode(&out.join(image));
        assert_eq!((width, height), size, "{image}");
        assert!(colours(&rgba) > 2, "{image} is blank");
    }
    // The strip's first frame, unscaled, is the traced screen of boundary 127.
    let (width, _, rgba) = decode(&out.join("rewards.png"));
    let first: Vec<u8> = rgba
        .chunks_exact(4 * width as usize)
        .step_by(2)
        .flat_map(|row| row[..4 * 320].chunks_exact(4).step_by(2).flatten())
        .copied()
        .collect();
    let trace = std::fs::read_to_string(Path::new(dir).join("trace.ndjson")).unwrap();
    let row: serde_json::Value = serde_json::from_str(trace.lines().nth(127).unwrap()).unwrap();
    let digest = row["behaviour"]["observation"]["views"][0]["digest"]
        .as_str()
        .unwrap();
    assert_eq!(sha256(&first).hex(), digest);
}
