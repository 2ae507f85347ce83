//! Integration tests of flysim-brain: determinism, the model API, the file format, the
//! importers, the shipped profiles and the counter arena.

#![allow(
    clippy::disallowed_methods,
    reason = "tests time their own runs and bound their waits"
)]

mod brian2;
mod counter;
mod exp_delay;
mod format;
mod fuzz;
mod import;
mod import_formats;
mod import_parquet;
mod kernel;
mod model;
mod profiles;
mod staging;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use flysim_brain::{Brain, Connectome, Profile, format as file};

/// The workspace root.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The committed `arena-toy-v1` profile and connectome.
pub(crate) fn toy() -> (Profile, Arc<Connectome>) {
    let dir = root().join("fixtures/profiles/arena-toy-v1");
    let profile = Profile::parse(&std::fs::read(dir.join("arena-toy-v1.json")).unwrap()).unwrap();
    let conn = file::decode(&std::fs::read(dir.join(&profile.connectome.file)).unwrap()).unwrap();
    (profile, Arc::new(conn))
}

/// A toy brain, warmed up.
pub(crate) fn toy_brain(seed: i32, threads: u32) -> Brain {
    let (p, c) = toy();
    let mut b = Brain::new(p, c, seed, threads).unwrap();
    b.warm_up_and_calibrate();
    b
}

/// A 160x144 RGBA frame like the arena's: white, a black 8x8 "fly" at `fly` and a dark grey 8x8
/// "food" at `food`.
pub(crate) fn arena_like_frame(fly: (usize, usize), food: (usize, usize)) -> Vec<u8> {
    let mut px = vec![255u8; 160 * 144 * 4];
    for ((x, y), level) in [(fly, 0u8), (food, 85u8)] {
        for j in y..y + 8 {
            for i in x..x + 8 {
                let at = (j * 160 + i) * 4;
                px[at..at + 3].copy_from_slice(&[level; 3]);
            }
        }
    }
    px
}

/// A small synthetic graph (4,096 neurons, FAFB-like statistics) and its profile.
pub(crate) fn small_synthetic() -> (Profile, Arc<Connectome>) {
    let (c, p) = flysim_brain::generate::synthetic(4_096, 80_000, 7);
    (p, Arc::new(c))
}
