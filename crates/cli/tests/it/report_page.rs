//! The report of a 700-step `gameboy.kdl` run as a person sees it: loaded from its file in
//! headless Chromium, every image of the page has loaded (a broken one has a natural width of
//! 0) at its declared size, and in a screenshot the place of each image is not one colour.
//! Skipped, saying what is missing, without the binjgb core or chromium and chromedriver.

use std::path::Path;
use std::time::Duration;

use flysim_testkit::Browser;
use serde_json::{Value, json};

use crate::flysim;
use crate::gameboy::{binjgb_missing, run_composition};

#[expect(clippy::print_stderr, reason = "the explicit skip message")]
fn skip(why: &str) {
    eprintln!("skipped: {why}");
}

/// A PNG screenshot decoded: width, height, bytes per pixel and the pixels.
fn decode(png_bytes: &[u8]) -> (usize, usize, usize, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    buf.truncate(info.buffer_size());
    let channels = info.color_type.samples();
    (info.width as usize, info.height as usize, channels, buf)
}

/// The distinct colours of the screenshot inside `rect` (`[left, top, width, height]` in CSS
/// pixels, scaled by `ratio`), clipped to the screenshot.
fn colours_in(shot: &[u8], rect: &[f64], ratio: f64) -> usize {
    let (width, height, channels, pixels) = decode(shot);
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "on-screen pixel coordinates"
    )]
    let at = |v: f64, limit: usize| ((v * ratio).round().max(0.0) as usize).min(limit);
    let (x0, y0) = (at(rect[0], width), at(rect[1], height));
    let (x1, y1) = (at(rect[0] + rect[2], width), at(rect[1] + rect[3], height));
    let mut seen = std::collections::BTreeSet::new();
    for y in y0..y1 {
        for x in x0..x1 {
            let i = channels * (y * width + x);
            seen.insert(pixels[i..i + 3].to_vec());
        }
    }
    seen.len()
}

#[test]
fn the_report_page_in_chromium_shows_every_plot_and_picture() {
    if binjgb_missing() {
        return;
    }
    if let Some(missing) = Browser::missing() {
        return skip(&missing);
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
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    let out = state.path().join("report");
    let dir = doc["runDir"].as_str().unwrap();
    let report = flysim(&["report", dir, "-o", out.to_str().unwrap()], b"");
    assert_eq!(report.status, 0, "{}", report.stderr);
    let page = Path::new(&out).join("report.html").canonicalize().unwrap();
    let browser = Browser::start().expect("start headless Chromium");
    browser
        .goto(&format!("file://{}", page.display()))
        .expect("open the page");
    let loaded = browser
        .wait_for(
            "document.readyState === 'complete' && [...document.images].every((i) => i.complete)",
            Duration::from_secs(30),
        )
        .expect("poll the page");
    assert!(loaded.is_some(), "the page's images never finished loading");
    let images = browser
        .execute(
            "return [...document.images].map((i) => [i.getAttribute('src'), i.naturalWidth, i.naturalHeight, i.width, i.height]);",
            &[],
        )
        .unwrap();
    let images = images.as_array().unwrap();
    let names: Vec<&str> = images.iter().map(|i| i[0].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "score.svg",
            "rates-fly-a.svg",
            "spikes-fly-a.svg",
            "rewards.png",
            "play.gif"
        ]
    );
    for image in images {
        assert!(image[1].as_u64().unwrap() > 0, "{image} did not load");
        assert_eq!(
            (&image[1], &image[2]),
            (&image[3], &image[4]),
            "{image}: its natural size is not its laid-out one"
        );
    }
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR"));
    for (n, name) in names.iter().enumerate() {
        let placed = browser
            .execute(
                "const i = document.images[arguments[0]]; i.scrollIntoView(); const r = i.getBoundingClientRect(); return [r.left, r.top, r.width, r.height, window.devicePixelRatio];",
                &[json!(n)],
            )
            .unwrap();
        let rect: Vec<f64> = placed
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        let shot = browser.screenshot().expect("a screenshot");
        std::fs::write(shots.join(format!("report-{name}.png")), &shot).unwrap();
        let colours = colours_in(&shot, &rect[..4], rect[4]);
        assert!(
            colours > 2,
            "{name} shows {colours} colour(s) on the page: it is blank"
        );
    }
}
