//! Every refusal of the backend, reached without a real Dolphin.

use std::path::Path;

use flysim_dolphin::{
    BackendConfig, Checkpoint, DolphinError, DolphinWorld, Mode, PINNED_VERSION, fieldcount,
};

use crate::{scratch, script};

/// A test-program configuration whose binary, Xvfb and content are the given paths.
fn config(binary: &Path, xvfb: &Path, content: &Path) -> BackendConfig {
    fieldcount::config(
        binary,
        PINNED_VERSION,
        Some(xvfb),
        content,
        flysim_dolphin::file_digest(content).unwrap(),
        vec![1],
        Mode::Qt,
    )
}

#[test]
fn a_missing_binary_is_refused_with_fs0801() {
    let dir = scratch();
    let content = dir.path().join("content.elf");
    std::fs::write(&content, b"elf").unwrap();
    let cfg = config(
        &dir.path().join("no-such-dolphin"),
        Path::new("/bin/true"),
        &content,
    );
    let err = DolphinWorld::start(&cfg, dir.path()).unwrap_err();
    assert_eq!(err.code_str(), "FS0801", "{err}");
}

#[test]
fn another_dolphin_version_is_refused_with_fs0802() {
    let dir = scratch();
    let content = dir.path().join("content.elf");
    std::fs::write(&content, b"elf").unwrap();
    let fake = script(dir.path(), "dolphin-emu", "echo 'Dolphin 2509'");
    let err = DolphinWorld::start(&config(&fake, Path::new("/bin/true"), &content), dir.path())
        .unwrap_err();
    assert_eq!(err.code_str(), "FS0802", "{err}");
    assert_eq!(
        err,
        DolphinError::VersionMismatch {
            expected: PINNED_VERSION.to_owned(),
            found: "Dolphin 2509".to_owned()
        }
    );
}

#[test]
fn content_that_differs_from_its_digest_is_refused_with_fs0803() {
    let dir = scratch();
    let content = dir.path().join("content.elf");
    std::fs::write(&content, b"elf").unwrap();
    let fake = script(
        dir.path(),
        "dolphin-emu",
        &format!("echo '{PINNED_VERSION}'"),
    );
    let cfg = config(&fake, Path::new("/bin/true"), &content);
    std::fs::write(&content, b"another elf").unwrap();
    let err = DolphinWorld::start(&cfg, dir.path()).unwrap_err();
    assert_eq!(err.code_str(), "FS0803", "{err}");
    std::fs::remove_file(&content).unwrap();
    let err = DolphinWorld::start(&cfg, dir.path()).unwrap_err();
    assert_eq!(err.code_str(), "FS0803", "a missing file too: {err}");
}

#[test]
fn an_invalid_configuration_is_refused_before_anything_runs_with_fs0804() {
    let dir = scratch();
    let content = dir.path().join("content.elf");
    std::fs::write(&content, b"elf").unwrap();
    let mut cfg = config(Path::new("/nonexistent"), Path::new("/bin/true"), &content);
    cfg.ports = vec![1, 5];
    let err = DolphinWorld::start(&cfg, dir.path()).unwrap_err();
    assert_eq!(err.code_str(), "FS0804", "{err}");
    let err = BackendConfig::from_json(b"{\"format\":1}").unwrap_err();
    assert_eq!(err.code_str(), "FS0804", "{err}");
}

#[test]
fn a_helper_that_does_not_come_up_fails_with_fs0805_and_leaves_nothing_running() {
    let dir = scratch();
    let content = dir.path().join("content.elf");
    std::fs::write(&content, b"elf").unwrap();
    let fake = script(
        dir.path(),
        "dolphin-emu",
        &format!("echo '{PINNED_VERSION}'"),
    );
    // An "X server" that exits at once without naming a display.
    let err = DolphinWorld::start(&config(&fake, Path::new("/bin/true"), &content), dir.path())
        .unwrap_err();
    assert_eq!(err.code_str(), "FS0805", "{err}");
    // A "Dolphin" that prints the right version and then exits instead of opening its pipes.
    let dir = scratch();
    std::fs::write(dir.path().join("content.elf"), b"elf").unwrap();
    let fake = script(
        dir.path(),
        "dolphin-emu",
        &format!("echo '{PINNED_VERSION}'"),
    );
    let xvfb = script(dir.path(), "Xvfb", "echo 99; sleep 30");
    let started = std::time::Instant::now();
    let err = DolphinWorld::start(
        &config(&fake, &xvfb, &dir.path().join("content.elf")),
        dir.path(),
    )
    .unwrap_err();
    assert_eq!(err.code_str(), "FS0805", "{err}");
    assert!(err.to_string().contains("Dolphin exited"), "{err}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "the stand-in X server was stopped, not waited for"
    );
}

fn checkpoint() -> Checkpoint {
    Checkpoint {
        configuration: flysim_types::digest::sha256(b"configuration"),
        slot_file: "ID-fieldcount.s01".to_owned(),
        boundary: 7,
        fields: 19,
        values: vec![0; 12],
        ram: flysim_types::digest::sha256(b"ram"),
        state: vec![1, 2, 3],
    }
}

#[test]
fn checkpoints_round_trip_and_foreign_or_damaged_ones_are_refused_with_fs0808() {
    let cp = checkpoint();
    assert_eq!(Checkpoint::from_bytes(&cp.to_bytes()).unwrap(), cp);
    let mut damaged = cp.to_bytes();
    *damaged.last_mut().unwrap() ^= 1;
    let err = Checkpoint::from_bytes(&damaged).unwrap_err();
    assert_eq!(err.code_str(), "FS0808", "{err}");
    assert_eq!(
        Checkpoint::from_bytes(b"not a checkpoint")
            .unwrap_err()
            .code_str(),
        "FS0808"
    );
    let mut bad_name = checkpoint();
    bad_name.slot_file = "../escape.s01".to_owned();
    assert_eq!(
        Checkpoint::from_bytes(&bad_name.to_bytes())
            .unwrap_err()
            .code_str(),
        "FS0808"
    );
    let dir = scratch();
    let content = dir.path().join("content.elf");
    std::fs::write(&content, b"elf").unwrap();
    let cfg = config(
        Path::new("/usr/games/dolphin-emu"),
        Path::new("/usr/bin/Xvfb"),
        &content,
    );
    let err = cp.check_for(&cfg).unwrap_err();
    assert_eq!(err.code_str(), "FS0808", "{err}");
    let mut own = checkpoint();
    own.configuration = cfg.digest();
    own.check_for(&cfg).unwrap();
}

#[test]
fn a_missing_cross_compiler_is_reported_with_fs0809() {
    let dir = scratch();
    let err = fieldcount::build(&dir.path().join("no-such-gcc"), dir.path()).unwrap_err();
    assert_eq!(err.code_str(), "FS0809", "{err}");
}
