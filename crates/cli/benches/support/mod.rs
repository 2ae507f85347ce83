//! What the Game Boy benches share: where the workspace is, and `gameboy.kdl` rewritten for the
//! synthetic agent.

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
