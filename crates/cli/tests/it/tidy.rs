//! Workspace tidiness that no compiler checks: production files stay under 800 lines, and no
//! library's diagnostic help names a `flysim` subcommand or a command-line flag (the binary adds
//! such hints itself, by code).

use std::path::{Path, PathBuf};

use crate::root;

/// The longest a production source file may be, inline tests included.
const MAX_LINES: usize = 800;

/// Every `.rs` file under `dir`, recursively, in path order.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    let mut paths: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

/// Every crate's `src` directory.
fn source_dirs() -> Vec<(String, PathBuf)> {
    let mut dirs: Vec<(String, PathBuf)> = std::fs::read_dir(root().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("src").is_dir())
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, p.join("src"))
        })
        .collect();
    dirs.sort();
    dirs
}

#[test]
fn no_production_file_is_over_800_lines() {
    let long: Vec<String> = source_dirs()
        .iter()
        .flat_map(|(_, dir)| rust_files(dir))
        .filter_map(|file| {
            let lines = std::fs::read_to_string(&file).unwrap().lines().count();
            (lines > MAX_LINES).then(|| format!("{} has {lines} lines", file.display()))
        })
        .collect();
    assert!(long.is_empty(), "split by concern:\n{}", long.join("\n"));
}

/// The command-line vocabulary a library's text must not use: a `flysim` subcommand in
/// backticks, or a `--flag`.
fn names_the_command_line(text: &str) -> bool {
    text.contains("`flysim ")
        || text
            .match_indices("--")
            .any(|(i, _)| text[i + 2..].starts_with(|c: char| c.is_ascii_lowercase()))
}

/// The text of every `help(...)` attribute in `source`, with the lines it spans.
fn help_texts(source: &str) -> Vec<(usize, String)> {
    let lines: Vec<&str> = source.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim_start().starts_with("help(")
            || line.contains("diagnostic(code(") && line.contains("help(")
        {
            let mut text = String::new();
            let mut depth = 0i32;
            for l in &lines[i..] {
                text.push_str(l);
                depth += l.matches('(').count() as i32 - l.matches(')').count() as i32;
                if depth <= 0 {
                    break;
                }
            }
            out.push((i + 1, text));
        }
    }
    out
}

#[test]
fn no_library_help_names_a_flysim_subcommand_or_flag() {
    let mut found = Vec::new();
    for (name, dir) in source_dirs() {
        if name == "cli" || name == "sm83" || name == "testkit" {
            continue;
        }
        for file in rust_files(&dir) {
            let source = std::fs::read_to_string(&file).unwrap();
            for (line, text) in help_texts(&source) {
                if names_the_command_line(&text) {
                    found.push(format!("{}:{line}: {}", file.display(), text.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "a library's help names the command line; say it in the binary's hints instead:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_command_line_vocabulary_is_recognised() {
    assert!(names_the_command_line(
        "resume with `flysim resume RUN_DIR`"
    ));
    assert!(names_the_command_line("choose it with --state-dir"));
    assert!(!names_the_command_line("a range -- of values, or -1"));
    assert!(!names_the_command_line(
        "declare `run { checkpoint every=N }`"
    ));
    let source =
        "#[diagnostic(\n    code(\"FS0001\"),\n    help(\n        \"use --steps\"\n    )\n)]";
    let helps = help_texts(source);
    assert_eq!(helps.len(), 1);
    assert!(names_the_command_line(&helps[0].1));
}
