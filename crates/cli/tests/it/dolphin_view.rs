//! The Dolphin world's view: the test program's framebuffer, read from emulated memory at every
//! boundary, published as `screen` (640 x 480 RGBA). Two runs of one composition give the same
//! view digest at each of 100 fields; the frame of field 50, regenerated and decoded as a PNG,
//! shows exactly what the program draws (its first 16 lines at the brightness of its own field
//! counter, read by a memory task in the same run, over a black screen). Without Dolphin and
//! Xvfb the test says so and returns.

use std::path::Path;

use serde_json::Value;

use crate::dolphin::{run_bounded, skipped_without_dolphin, work_copy};
use crate::{behaviour_rows as rows, flysim_at, root};

/// The memory task that records the program's field counter in every row.
const FIELDS_TASK: &str =
    "task \"memory-v1\" {\n    variable \"fields\" address=0x80001804 type=\"u32be\"\n}";
/// The task the shipped Dolphin compositions declare.
const ECHO_TASK: &str = "task \"gamecube-pad-echo-v1\"";

/// Fields each run steps.
const STEPS: usize = 100;
/// The field whose frame is decoded.
const FIELD: usize = 50;

/// `compositions/dolphin.kdl` with the program's field counter declared as a memory task (so
/// each row records it) and ports without Z (while port 1 holds Z the program presents a frame
/// only every other field, which a step refuses).
fn composition() -> String {
    let text = std::fs::read_to_string(root().join("compositions/dolphin.kdl")).unwrap();
    let buttons = "\"y\" \"z\" \"start\"";
    assert!(text.contains(ECHO_TASK) && text.contains(buttons));
    text.replace(ECHO_TASK, FIELDS_TASK)
        .replace(buttons, "\"y\" \"start\"")
}

/// The `screen` view digest of every row, checked to be the row's one view, produced at its
/// boundary.
fn view_digests(rows: &[Value]) -> Vec<String> {
    rows.iter()
        .map(|row| {
            let views = row["observation"]["views"].as_array().unwrap();
            assert_eq!(views.len(), 1, "one view: {views:?}");
            assert_eq!(views[0]["viewId"], "screen");
            assert_eq!(views[0]["producedStep"], row["boundary"]);
            views[0]["digest"].as_str().unwrap().to_owned()
        })
        .collect()
}

/// The RGB grey BT.601 gives studio-range luma `y` (16 black, 235 white), rounded.
fn grey(y: u8) -> f64 {
    ((f64::from(y) - 16.0) * 255.0 / 219.0).round()
}

#[test]
fn dolphin_views_repeat_across_runs_and_show_what_the_program_draws() {
    if skipped_without_dolphin() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (work, scratch) = work_copy(tmp.path(), "dolphin.kdl", &composition());
    let state = tmp.path().join("state");
    let steps = STEPS.to_string();
    let run = || -> Value {
        let args = [
            "run",
            "compositions/dolphin.kdl",
            "--steps",
            &steps,
            "--json",
            "--state-dir",
            state.to_str().unwrap(),
        ];
        let out = run_bounded(&work, &scratch, &[], &args);
        assert_eq!(out.status, 0, "{}", out.stderr);
        serde_json::from_str(&out.stdout).unwrap()
    };
    let (first, second) = (run(), run());
    let first_dir = Path::new(first["runDir"].as_str().unwrap());
    let first_rows = rows(first_dir);
    let second_rows = rows(Path::new(second["runDir"].as_str().unwrap()));
    assert_eq!(first_rows.len(), STEPS + 1);

    // The same 101 pictures in both runs, each field a new one (the band's brightness follows
    // the program's field counter).
    let (a, b) = (view_digests(&first_rows), view_digests(&second_rows));
    assert_eq!(a, b, "the same view digests at every field");
    assert!(
        a.windows(2).all(|w| w[0] != w[1]),
        "a new picture every field"
    );

    // Field 50, regenerated from the plan and checked against the trace by `flysim frames`.
    let out_dir = tmp.path().join("frames");
    let frames = flysim_at(
        &work,
        &[
            "frames",
            first_dir.to_str().unwrap(),
            "--steps",
            &FIELD.to_string(),
            "--out",
            out_dir.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(frames.status, 0, "{}", frames.stderr);
    let file = std::fs::File::open(out_dir.join(format!("screen-{FIELD}.png"))).unwrap();
    let mut reader = png::Decoder::new(std::io::BufReader::new(file))
        .read_info()
        .unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut pixels).unwrap();
    assert_eq!((info.width, info.height), (640, 480));
    assert_eq!(info.color_type, png::ColorType::Rgba);

    // What the program draws (`roms/gc-fieldcount/main.c`, `paint`): its first 16 lines at
    // luma 0x10 + (its field counter & 0x7f), grey (no colour), the rest at luma 0x10, black.
    let counter = first_rows[FIELD]["variables"]["fields"].as_u64().unwrap();
    let luma = 0x10 + u8::try_from(counter & 0x7f).unwrap();
    let want = grey(luma);
    assert!(want > 0.0, "field {FIELD}: counter {counter}, a lit band");
    let row_bytes = 640 * 4;
    for (y, line) in pixels.chunks_exact(row_bytes).enumerate() {
        for px in line.chunks_exact(4) {
            if y < 16 {
                assert!(
                    px[..3].iter().all(|c| (f64::from(*c) - want).abs() <= 1.0) && px[3] == 255,
                    "line {y}: {px:?}, want grey {want} (counter {counter})"
                );
            } else {
                assert_eq!(px, [0, 0, 0, 255], "line {y}");
            }
        }
    }
}

/// `compositions/dolphin-retina.kdl`: a LIF fly whose retina reads the view. Its profile
/// (`screen-toy-v1`) presses A while the program's band is darker than luminance 0.3 and rests
/// while it is brighter; the band follows the program's field counter, which a memory task
/// records in the same run, so each decision can be checked against the picture the fly saw.
#[test]
fn a_retina_fly_on_dolphin_presses_while_the_picture_it_sees_is_dark() {
    if skipped_without_dolphin() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root().join("compositions/dolphin-retina.kdl")).unwrap();
    assert!(text.contains(ECHO_TASK));
    let text = text.replace(ECHO_TASK, FIELDS_TASK);
    let (work, scratch) = work_copy(tmp.path(), "dolphin-retina.kdl", &text);
    let state = tmp.path().join("state");
    let args = [
        "run",
        "compositions/dolphin-retina.kdl",
        "--json",
        "--state-dir",
        state.to_str().unwrap(),
    ];
    let out = run_bounded(&work, &scratch, &[], &args);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    let rows = rows(Path::new(doc["runDir"].as_str().unwrap()));
    assert_eq!(rows.len(), 301);

    // Step k's decision was prepared on the frame of boundary k - 1.
    let (mut agree, mut dark, mut lit) = (0, 0, 0);
    for pair in rows.windows(2) {
        let counter = pair[0]["variables"]["fields"].as_u64().unwrap();
        let luminance = grey(0x10 + u8::try_from(counter & 0x7f).unwrap()) / 255.0;
        let saw_dark = luminance < 0.3;
        let pressed = pair[1]["controls"][0]["pressed"]
            .as_array()
            .unwrap()
            .contains(&Value::from("a"));
        if saw_dark {
            dark += 1
        } else {
            lit += 1
        }
        agree += usize::from(pressed == saw_dark);
    }
    assert!(
        dark >= 100 && lit >= 100,
        "both pictures: {dark} dark, {lit} lit"
    );
    #[expect(clippy::print_stderr, reason = "the figure for the note")]
    {
        eprintln!("{agree} of 300 decisions follow the picture ({dark} dark, {lit} lit)");
    }
    assert!(
        agree >= 295,
        "the fly presses exactly while it sees a dark band: {agree} of 300 steps"
    );
}
