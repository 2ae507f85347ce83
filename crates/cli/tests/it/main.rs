//! End-to-end tests of the `flysim` binary and workspace-wide checks (codes, dependency map).

#![allow(
    clippy::disallowed_methods,
    reason = "tests read the environment cargo sets for them and bound their waits on child processes"
)]

mod architecture;
mod assets;
mod backends;
mod brain;
mod brain_arena;
mod brain_import;
mod codes;
mod command_line;
mod commands;
mod compositions;
mod disk;
mod docs;
mod dolphin;
mod dolphin_view;
mod frames;
mod gameboy;
mod golden;
mod inputs;
mod interrupt;
mod lookback;
mod melee;
mod memory_task;
mod no_task;
mod output;
mod report;
mod report_page;
mod resume;
mod run;
mod run_control;
mod shiu;
mod slurm;
mod sweep;
mod tidy;
mod trace_content;
mod watch;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The workspace root.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The behaviour rows of a run directory's trace, each read by the contract's own JSON reader
/// (exact for every number; serde_json's default float parsing may miss the last bit).
pub(crate) fn behaviour_rows(run_dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(run_dir.join("trace.ndjson"))
        .unwrap()
        .lines()
        .map(|l| flysim_types::json::parse_document(l.as_bytes()).unwrap()["behaviour"].clone())
        .collect()
}

/// What one run of the binary produced.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) status: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

/// Runs `flysim` with `args` and `stdin`, with a cleared environment, in the workspace root.
pub(crate) fn flysim(args: &[&str], stdin: &[u8]) -> Run {
    flysim_at(&root(), args, stdin)
}

/// Runs `flysim` in `cwd` with `args` and `stdin`, with a cleared environment.
pub(crate) fn flysim_at(cwd: &Path, args: &[&str], stdin: &[u8]) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_flysim"))
        .args(args)
        .env_clear()
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    // The command may exit before reading (e.g. a refused argument); a broken pipe is fine.
    let _ = input.write_all(stdin);
    drop(input);
    let out = child.wait_with_output().unwrap();
    Run {
        status: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// Runs `flysim` in `cwd` with exactly the environment `env` and no standard input.
pub(crate) fn flysim_in(cwd: &Path, env: &[(&str, &str)], args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_flysim"))
        .args(args)
        .env_clear()
        .envs(env.iter().copied())
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    Run {
        status: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// Writes `compositions/synthetic.kdl`, changed by `edit`, as `<dir>/compositions/<name>`, beside
/// copies of the profile files its relative asset paths name; returns its path.
pub(crate) fn synthetic_variant(
    dir: &Path,
    name: &str,
    edit: impl FnOnce(String) -> String,
) -> PathBuf {
    for file in ["counter-toy-v1.json", "counter-toy-v1.flycsr"] {
        let to = dir.join("fixtures/profiles/counter-toy-v1").join(file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(
            root().join("fixtures/profiles/counter-toy-v1").join(file),
            &to,
        )
        .unwrap();
    }
    let path = dir.join("compositions").join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let text = std::fs::read_to_string(root().join("compositions/synthetic.kdl")).unwrap();
    std::fs::write(&path, edit(text)).unwrap();
    path
}

/// Every registered `FSnnnn` that appears in `text`, sorted and deduplicated.
pub(crate) fn codes_in(text: &str) -> Vec<String> {
    let mut codes: Vec<String> = text
        .match_indices("FS")
        .filter_map(|(i, _)| text.get(i..i + 6))
        .filter(|c| flysim_codes::lookup(c).is_some())
        .map(str::to_owned)
        .collect();
    codes.sort();
    codes.dedup();
    codes
}

/// Every crate's integration tests compile into one binary, `tests/it/main.rs`; a module file
/// that main.rs does not include would silently never run.
#[test]
fn no_test_module_is_forgotten() {
    for krate in std::fs::read_dir(root().join("crates")).unwrap() {
        let dir = krate.unwrap().path().join("tests/it");
        let Ok(main) = std::fs::read_to_string(dir.join("main.rs")) else {
            continue;
        };
        for entry in std::fs::read_dir(&dir).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if let Some(module) = name.strip_suffix(".rs").filter(|m| *m != "main") {
                assert!(
                    main.contains(&format!("mod {module};")),
                    "{}/{name} is not included in main.rs",
                    dir.display()
                );
            }
        }
    }
}
