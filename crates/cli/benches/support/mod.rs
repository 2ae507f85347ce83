//! What the Game Boy benches share: where the workspace is, `gameboy.kdl` rewritten for the
//! synthetic agent, their `FLYSIM_BENCH_*` settings and the median of their rounds.

use std::path::{Path, PathBuf};

use flysim_binjgb::{Availability, availability};

pub(crate) fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// gameboy.kdl with its fly's profile replaced by the synthetic agent and no checkpoints, written
/// to `dir/compositions/` beside a `dir/fixtures` link, so its relative asset paths resolve.
pub(crate) fn synthetic_gameboy(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(workspace().join("compositions/gameboy.kdl")).unwrap();
    let start = text.find("profile \"arena-fly\" {").unwrap();
    let end = start + text[start..].find("\n}\n").unwrap() + 3;
    let fixtures = workspace().join("fixtures").canonicalize().unwrap();
    std::os::unix::fs::symlink(&fixtures, dir.join("fixtures")).unwrap();
    std::fs::create_dir(dir.join("compositions")).unwrap();
    let text = format!(
        "{}profile \"arena-fly\" {{\n    model \"synthetic\"\n}}\n{}",
        &text[..start],
        &text[end..]
    )
    .lines()
    .filter(|l| !l.trim_start().starts_with("checkpoint "))
    .collect::<Vec<_>>()
    .join("\n");
    let path = dir.join("compositions/gameboy-synthetic.kdl");
    std::fs::write(&path, text).unwrap();
    path
}

/// Whether this build has no binjgb core, after saying so: the Game Boy benches then skip.
#[expect(
    clippy::print_stderr,
    reason = "a benchmark says on standard error why it skips"
)]
pub(crate) fn without_core() -> bool {
    if let Availability::Absent { reason } = availability() {
        eprintln!("skipped: the binjgb core is absent from this build: {reason}");
        return true;
    }
    false
}

/// A numeric `FLYSIM_BENCH_*` setting, or `default` when it is unset or not a number.
#[allow(dead_code, reason = "not every bench reads a numeric setting")]
pub(crate) fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Another flysim binary to measure beside this one (`FLYSIM_BENCH_BASELINE`), which must be
/// a file.
#[allow(dead_code, reason = "not every bench measures a baseline")]
pub(crate) fn baseline() -> Option<PathBuf> {
    let baseline = std::env::var_os("FLYSIM_BENCH_BASELINE").map(PathBuf::from);
    if let Some(b) = &baseline {
        assert!(
            b.is_file(),
            "FLYSIM_BENCH_BASELINE: no file at {}",
            b.display()
        );
    }
    baseline
}

/// The median of the rounds' figures (the upper one of an even count).
#[allow(dead_code, reason = "not every bench takes medians of fractions")]
pub(crate) fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
