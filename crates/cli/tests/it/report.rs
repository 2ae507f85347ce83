//! `flysim report` of a 700-step `gameboy.kdl` run (rewards at boundaries 127, 492 and 639):
//! the page links every image; each decodes with its expected size and is not blank; the SVG
//! plots parse as XML with an `svg` root and carry their titles and axis labels; the reward
//! strip's frames and every frame of the clip are the traced ones (they hash to the trace's
//! view digests); the raster's spikes are regenerated the same every time and add up over
//! windows; `--open` hands the page to the browser, and its absence is said, not fatal; a
//! raster of a run without a LIF agent is refused with FS0934.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use flysim_types::digest::sha256;

use crate::gameboy::{binjgb_missing, run_composition};
use crate::{codes_in, flysim, flysim_in, root};

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

/// A picture's pixels shrunk by `scale` (every `scale`-th pixel of every `scale`-th row of the
/// `width` x `height` top-left corner of a picture `stride` pixels wide).
fn unscaled(rgba: &[u8], stride: usize, (width, height): (usize, usize), scale: usize) -> Vec<u8> {
    rgba.chunks_exact(4 * stride)
        .take(height * scale)
        .step_by(scale)
        .flat_map(|row| {
            row[..4 * width * scale]
                .chunks_exact(4)
                .step_by(scale)
                .flatten()
        })
        .copied()
        .collect()
}

/// The trace's view digest at `boundary`.
fn view_digest(trace: &str, boundary: usize) -> String {
    let row: serde_json::Value =
        serde_json::from_str(trace.lines().nth(boundary).unwrap()).unwrap();
    row["behaviour"]["observation"]["views"][0]["digest"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A 700-step `gameboy.kdl` run in `state`: its directory and its `--json` document.
fn gameboy_run(state: &Path) -> (PathBuf, serde_json::Value) {
    let run = run_composition(
        "compositions/gameboy.kdl",
        state,
        "700",
        "in-process",
        "memory",
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    (PathBuf::from(doc["runDir"].as_str().unwrap()), doc)
}

/// `flysim report DIR -o OUT EXTRA...`, which must succeed.
fn report(dir: &Path, out: &Path, extra: &[&str]) -> String {
    let mut args = vec!["report", dir.to_str().unwrap(), "-o", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    let run = flysim(&args, b"");
    assert_eq!(run.status, 0, "{}", run.stderr);
    std::fs::read_to_string(out.join("report.html")).unwrap()
}

/// Checks an SVG plot: an `svg` root of `size`, every text in `labels`, and at least
/// `min_marks` elements of kind `mark` (the plot is not blank).
fn check_svg(path: &Path, size: (u32, u32), labels: &[&str], mark: &str, min_marks: usize) {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&text)
        .unwrap_or_else(|e| panic!("{} is not XML: {e}", path.display()));
    let svg = doc.root_element();
    assert_eq!(svg.tag_name().name(), "svg", "{}", path.display());
    assert_eq!(
        (svg.attribute("width"), svg.attribute("height")),
        (Some(&*size.0.to_string()), Some(&*size.1.to_string())),
        "{}",
        path.display()
    );
    let texts: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .map(str::trim)
        .collect();
    for label in labels {
        assert!(
            texts.iter().any(|t| t.contains(label)),
            "{} lacks the text {label:?}: {texts:?}",
            path.display()
        );
    }
    let marks = doc.descendants().filter(|n| n.has_tag_name(mark)).count();
    assert!(
        marks >= min_marks,
        "{} has {marks} <{mark}>, fewer than {min_marks}",
        path.display()
    );
}

/// The spike count the raster's caption states.
fn spike_count(page: &str) -> u64 {
    let at = page
        .find(" spikes of fly-a in steps")
        .expect("a raster caption");
    let start = page[..at].rfind(['>', '"']).unwrap() + 1;
    page[start..at].parse().unwrap()
}

#[test]
fn the_report_of_a_gameboy_run_shows_its_plots_raster_rewards_and_clip() {
    if binjgb_missing() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let (dir, doc) = gameboy_run(state.path());
    let out = state.path().join("report");
    let page = report(&dir, &out, &[]);
    let digest = doc["runDigest"].as_str().unwrap();
    assert!(page.contains(digest), "{page}");
    assert!(
        page.contains("score of fly-a</td><td><code>3</code>"),
        "{page}"
    );
    assert!(page.contains("boundaries 127, 492, 639"), "{page}");
    for image in [
        "score.svg",
        "rates-fly-a.svg",
        "spikes-fly-a.svg",
        "rewards.png",
        "play.gif",
    ] {
        assert!(
            page.contains(&format!("src=\"{image}\"")),
            "{image} is not linked"
        );
    }
    check_svg(
        &out.join("score.svg"),
        (900, 340),
        &[
            "Score over steps",
            "step (boundary)",
            "cumulative score",
            "reward per step",
            "score of fly-a",
            "700",
        ],
        "polyline",
        1,
    );
    // 13 roles and the population rate; 701 boundaries in columns of two.
    check_svg(
        &out.join("rates-fly-a.svg"),
        (900, 90 + 18 * 14),
        &[
            "Rates of fly-a over steps",
            "step (boundary)",
            "role (largest rate)",
            "kenyon (",
            "population (",
        ],
        "rect",
        14 * 351,
    );
    check_svg(
        &out.join("spikes-fly-a.svg"),
        (900, 420),
        &[
            "Spikes of fly-a, steps 0..200",
            "step (boundary)",
            "neuron index",
        ],
        "circle",
        1000,
    );
    let (width, height, rgba) = decode(&out.join("rewards.png"));
    assert_eq!((width, height), (3 * 320 + 2 * 4, 288));
    assert!(colours(&rgba) > 2, "the strip is blank");
    let trace = std::fs::read_to_string(dir.join("trace.ndjson")).unwrap();
    for (i, boundary) in [127, 492, 639].into_iter().enumerate() {
        let frame = unscaled(&rgba[4 * i * (320 + 4)..], width as usize, (160, 144), 2);
        assert_eq!(
            sha256(&frame).hex(),
            view_digest(&trace, boundary),
            "strip frame {i}"
        );
    }
    // The clip: the 2 s around the first reward (127 - 60 ..= 127 + 60), every second frame.
    assert!(
        page.contains("Boundaries 67..=187, every 2 frame(s), 30 ms each"),
        "{page}"
    );
    let mut options = gif::DecodeOptions::new();
    options.set_color_output(gif::ColorOutput::RGBA);
    let file = std::fs::File::open(out.join("play.gif")).unwrap();
    let mut decoder = options.read_info(std::io::BufReader::new(file)).unwrap();
    let mut frames = 0;
    while let Some(frame) = decoder.read_next_frame().unwrap() {
        assert_eq!((frame.width, frame.height, frame.delay), (320, 288, 3));
        assert!(colours(&frame.buffer) > 2, "clip frame {frames} is blank");
        let native = unscaled(&frame.buffer, 320, (160, 144), 2);
        let boundary = 67 + 2 * frames;
        assert_eq!(
            sha256(&native).hex(),
            view_digest(&trace, boundary),
            "clip frame at {boundary}"
        );
        frames += 1;
    }
    assert_eq!(frames, 61);
}

#[test]
fn the_raster_is_regenerated_alike_and_its_spikes_add_up_over_windows() {
    if binjgb_missing() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let (dir, _) = gameboy_run(state.path());
    let count = |window: &str, name: &str| {
        let out = state.path().join(name);
        let page = report(
            &dir,
            &out,
            &["--raster-steps", window, "--clip-steps", "0..2"],
        );
        let svg = std::fs::read(out.join("spikes-fly-a.svg")).unwrap();
        (spike_count(&page), svg)
    };
    let (whole, first_svg) = count("100..160", "a");
    let (again, second_svg) = count("100..160", "b");
    let (left, _) = count("100..130", "c");
    let (right, _) = count("130..160", "d");
    assert!(whole > 0, "no spike in steps 100..160");
    assert_eq!(
        (whole, &first_svg),
        (again, &second_svg),
        "two regenerations differ"
    );
    assert_eq!(
        left + right,
        whole,
        "the spikes of two halves are not the whole's"
    );
}

#[test]
fn open_hands_the_page_to_the_browser_and_says_when_there_is_none() {
    let state = tempfile::tempdir().unwrap();
    let run_dir = root().join("fixtures/runs/synthetic-3");
    let opened = state.path().join("opened");
    let script = state.path().join("browser.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s' \"$1\" > {0}.tmp && /bin/mv {0}.tmp {0}\n",
            opened.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = state.path().join("report");
    let args = [
        "report",
        run_dir.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--open",
    ];
    let run = flysim_in(&root(), &[("BROWSER", script.to_str().unwrap())], &args);
    assert_eq!(run.status, 0, "{}", run.stderr);
    for _ in 0..100 {
        if opened.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(
        std::fs::read_to_string(&opened).unwrap(),
        out.join("report.html").to_str().unwrap()
    );
    let missing = state.path().join("no-such-browser");
    let run = flysim_in(&root(), &[("BROWSER", missing.to_str().unwrap())], &args);
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("no browser to open the report with"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_raster_of_a_run_without_a_lif_agent_or_of_no_step_is_refused() {
    let state = tempfile::tempdir().unwrap();
    // The counter arena with synthetic flies, which have no neurons.
    let composition = crate::synthetic_variant(state.path(), "scripted.kdl", |text| {
        let start = text.find("    model \"lif\"").unwrap();
        let end = text[start..].find("\n}").unwrap() + start;
        format!("{}    model \"synthetic\"{}", &text[..start], &text[end..])
    });
    let run = run_composition(
        composition.to_str().unwrap(),
        state.path(),
        "5",
        "in-process",
        "memory",
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let run_dir = doc["runDir"].as_str().unwrap();
    let out = state.path().join("report");
    let args = ["report", run_dir, "-o", out.to_str().unwrap()];
    let plain = flysim(&args, b"");
    assert_eq!(
        plain.status, 0,
        "without the flag there is simply no raster: {}",
        plain.stderr
    );
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(!page.contains("spikes-"), "{page}");
    let asked = flysim(&[&args[..], &["--raster-steps", "0..2"]].concat(), b"");
    assert_ne!(asked.status, 0);
    assert_eq!(codes_in(&asked.stderr), ["FS0934"], "{}", asked.stderr);
    assert!(asked.stderr.contains("no LIF agent"), "{}", asked.stderr);
    // The recorded counter-toy run has LIF flies; a window of no step is refused.
    let lif = root().join("fixtures/runs/synthetic-3");
    let empty = flysim(
        &[
            "report",
            lif.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--raster-steps",
            "2..2",
        ],
        b"",
    );
    assert_eq!(codes_in(&empty.stderr), ["FS0934"], "{}", empty.stderr);
    assert!(empty.stderr.contains("holds no step"), "{}", empty.stderr);
}
