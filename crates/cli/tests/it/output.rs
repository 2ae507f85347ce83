//! Output errors are errors: a full standard output fails with a code, a closed one exits
//! quietly but not as a success, and `plan -o` writes atomically and never over its input.

use std::process::{Command, Stdio};

use crate::{flysim, root};

/// Runs `flysim` with standard output sent to `stdout`.
fn flysim_to(stdout: Stdio, args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_flysim"))
        .args(args)
        .env_clear()
        .current_dir(root())
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn a_full_stdout_is_an_error() {
    let commands: [&[&str]; 5] = [
        &["plan", "compositions/synthetic.kdl"],
        &["schema", "plan"],
        &["seed", "--master-seed", "42", "--agent", "fly-a"],
        &["explain", "FS0201"],
        &["canon", "fixtures/rfc8785/weird.in.json"],
    ];
    for args in commands {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let (status, stderr) = flysim_to(Stdio::from(full), args);
        assert_eq!(status, 3, "{args:?}: {stderr}");
        assert!(stderr.contains("FS0908"), "{args:?}: {stderr}");
        assert!(
            stderr.contains("No space left on device"),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn a_closed_stdout_exits_quietly_and_not_as_a_success() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_flysim"))
        .args(["schema", "plan"])
        .env_clear()
        .current_dir(root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(141));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn plan_refuses_to_overwrite_its_own_input() {
    let tmp = tempfile::tempdir().unwrap();
    let composition = tmp.path().join("synthetic.kdl");
    let text = std::fs::read(root().join("compositions/synthetic.kdl")).unwrap();
    std::fs::write(&composition, &text).unwrap();
    let path = composition.to_str().unwrap();
    let dotted = tmp.path().join(".").join("synthetic.kdl");
    for out in [path, dotted.to_str().unwrap()] {
        let run = flysim(&["plan", path, "-o", out], b"");
        assert_eq!(run.status, 1, "{}", run.stderr);
        assert!(run.stderr.contains("FS0909"), "{}", run.stderr);
        assert_eq!(std::fs::read(&composition).unwrap(), text);
    }
}

#[test]
fn plan_out_writes_the_whole_plan_and_leaves_no_temporary_file() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("plan.json");
    std::fs::write(&out, "an older plan").unwrap();
    let printed = flysim(&["plan", "compositions/synthetic.kdl"], b"");
    let written = flysim(
        &[
            "plan",
            "compositions/synthetic.kdl",
            "-o",
            out.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(written.status, 0, "{}", written.stderr);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), printed.stdout);
    let names: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["plan.json"]);
}
