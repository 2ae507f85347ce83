//! `screen-toy-v1`: a fly for the project's GameCube test program, which reads the program's
//! picture through a 640 × 480 retina.
//!
//! The program (`roms/gc-fieldcount`) paints its first 16 lines at the brightness of its field
//! counter, `luma 0x10 + (fields & 0x7f)`, over a black screen: luminance `(fields & 0x7f) ×
//! 255/219 / 255`, so the band brightens for 128 fields and goes dark again. The fly is wired
//! (by hand) to press `a` while the band is dark, below [`SCREEN_TOY_EDGE`], and to rest while
//! it is lit:
//!
//! | role | neurons | what it does |
//! | --- | --- | --- |
//! | `dark` | 16 | band `0..edge` on 16 band pixels, spread across the band |
//! | `lit` | 16 | band `edge..=1` on the same pixels |
//! | `press` | 16 | excited by every `dark` neuron (100); bound to button `a`, action `a` |
//! | `rest` | 16 | excited by every `lit` neuron (100) |
//!
//! `press` and `rest` inhibit 4 random neurons of each other (−60). Readout and kernel are
//! `counter-toy-v1`'s (a decision at every step, the rate EMA settling within a step); the
//! world's first frame has a dark band (the program has counted about 40 fields), so the
//! readout calibrates on an active `press` pool. No plasticity, no stimuli.

use super::{GENERATOR_SEED, default_kernel, generated_meta, id, pick, press_readout, range};
use crate::connectome::Connectome;
use crate::profile::{
    ConnectomeRef, Kernel, Profile, Response, Retina, RetinaChannel, RetinaLayout, Role,
};
use crate::rng::XorShift32;

/// The file name `screen-toy-v1` gives its connectome.
pub const SCREEN_TOY_CONNECTOME: &str = "screen-toy-v1.flycsr";
/// The width and height of the picture the retina reads: the test program's framebuffer. The
/// brain knows no world, so the numbers are stated here; the Dolphin retina test runs the fly
/// on the world.
pub const SCREEN_SIZE: (u32, u32) = (640, 480);
/// The luminance below which the band counts as dark: the band at counter 66 of 128.
pub const SCREEN_TOY_EDGE: f64 = 0.3;
/// The band's lines: the program paints lines 0 to 15.
const BAND_LINES: u32 = 16;

/// `screen-toy-v1`'s edges: the sensory pools onto the motor pools, then their mutual
/// inhibition.
fn screen_edges(
    rng: &mut XorShift32,
    [dark, lit, press, rest]: [&Vec<u32>; 4],
) -> Vec<(u32, u32, i64)> {
    const IN: i64 = 100;
    let mut edges = Vec::new();
    for (from, to) in [(dark, press), (lit, rest)] {
        for &s in from {
            for &t in to {
                edges.push((s, t, IN));
            }
        }
    }
    for (from, to) in [(press, rest), (rest, press)] {
        for &s in from {
            for t in pick(rng, to, 4) {
                edges.push((s, t, -60));
            }
        }
    }
    edges
}

/// Generates `screen-toy-v1`: its connectome and its profile.
#[must_use]
pub fn screen_toy_v1() -> (Connectome, Profile) {
    let mut rng = XorShift32::stream(GENERATOR_SEED, "screen-toy-v1");
    let (dark, lit, press, rest) = (range(0, 16), range(16, 16), range(32, 16), range(48, 16));
    let edges = screen_edges(&mut rng, [&dark, &lit, &press, &rest]);
    let meta = generated_meta("screen-toy-v1", "screen_toy_v1");
    let conn = Connectome::from_edges(64, edges, None, meta, "screen-toy-v1")
        .unwrap_or_else(|e| unreachable!("the screen toy generator builds a valid graph: {e}"));
    let groups = [
        ("dark", &dark),
        ("lit", &lit),
        ("press", &press),
        ("rest", &rest),
    ];
    let roles = groups
        .iter()
        .map(|(name, neurons)| Role {
            id: id(name),
            neurons: (*neurons).clone(),
        })
        .collect();
    // Pixel k of 16: x spread over the width, y over the band's lines.
    let (width, height) = SCREEN_SIZE;
    let columns = |neurons: &[u32]| -> Vec<[u32; 3]> {
        (0u32..)
            .zip(neurons)
            .map(|(k, &v)| [v, 20 + k * (width - 40) / 15, k % BAND_LINES])
            .collect()
    };
    let channel = |name: &str, low: f64, high: f64, neurons: &[u32]| RetinaChannel {
        id: id(name),
        response: Response::Band { low, high },
        gain: 1.0,
        columns: columns(neurons),
    };
    let mut kernel = default_kernel(1, 0.005);
    kernel.rate_alpha = 0.2;
    let profile = Profile {
        format: crate::profile::FORMAT.to_owned(),
        id: id("screen-toy-v1"),
        description: "A small generated network that watches the band the GameCube test program paints and presses A while it is dark".to_owned(),
        connectome: ConnectomeRef {
            file: SCREEN_TOY_CONNECTOME.to_owned(),
            digest: conn.digest(),
            neurons: conn.neurons(),
            edges: conn.edges() as u32,
        },
        kernel: Kernel::Lif1ms(kernel),
        roles,
        rate_roles: groups.iter().map(|(name, _)| id(name)).collect(),
        retina: Retina {
            width,
            height,
            layout: RetinaLayout::Frame,
            channels: vec![
                channel("dark", 0.0, SCREEN_TOY_EDGE, &dark),
                channel("lit", SCREEN_TOY_EDGE, 1.0, &lit),
            ],
        },
        readout: press_readout(None),
        stimuli: Vec::new(),
        plasticity: None,
    };
    (conn, profile)
}
