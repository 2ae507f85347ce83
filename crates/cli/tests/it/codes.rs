//! The code registry checked both ways, and every explain page's example run for real.

use std::collections::BTreeSet;
use std::path::Path;

use crate::{codes_in, flysim, root};

/// Every `.rs` file below `dir` (none if it does not exist).
fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every `.rs` file under `crates/*/<sub>`.
fn crate_files(sub: &str) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for krate in std::fs::read_dir(root().join("crates")).unwrap() {
        rust_files(&krate.unwrap().path().join(sub), &mut files);
    }
    files
}

/// Every `.rs` file under `crates/*/src`.
fn source_files() -> Vec<std::path::PathBuf> {
    crate_files("src")
}

/// Codes the workspace can emit: every `code("FSnnnn")` diagnostic attribute.
fn emitted_codes() -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for file in source_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        for (i, _) in text.match_indices("code(\"FS") {
            let code = &text[i + 6..i + 12];
            assert!(
                flysim_codes::is_well_formed(code),
                "{}: malformed code {code:?}",
                file.display()
            );
            found.insert(code.to_owned());
        }
    }
    found
}

#[test]
fn every_emitted_code_is_registered_and_every_registered_code_is_emitted() {
    let emitted = emitted_codes();
    for code in &emitted {
        assert!(
            flysim_codes::lookup(code).is_some(),
            "{code} is emitted but not registered in crates/codes"
        );
    }
    for code in flysim_codes::ALL {
        assert_eq!(
            emitted.contains(code.code),
            !code.retired,
            "{}: a registered code must be emitted somewhere, or marked retired (and then emitted nowhere)",
            code.code
        );
    }
}

/// The example of an explain page: a command and its standard input (and the build condition
/// under which it produces the code), or a named test.
enum Example {
    Command {
        args: Vec<String>,
        stdin: String,
        condition: Option<String>,
    },
    Test(String),
}

/// Reads the fenced blocks of the `## Example` section.
fn example(page: &str) -> Example {
    let section = page
        .split("## Example")
        .nth(1)
        .unwrap()
        .split("\n## ")
        .next()
        .unwrap();
    let mut blocks = Vec::new();
    let mut lines = section.lines();
    while let Some(line) = lines.next() {
        if let Some(info) = line.strip_prefix("```") {
            let body: Vec<&str> = lines
                .by_ref()
                .take_while(|l| !l.starts_with("```"))
                .collect();
            blocks.push((info.trim().to_owned(), body.join("\n")));
        }
    }
    match blocks.first() {
        Some((info, body)) if info == "text produced-by-test" => {
            Example::Test(body.trim().to_owned())
        }
        Some((info, body)) if info.starts_with("console") => {
            let condition = info
                .strip_prefix("console")
                .map(str::trim)
                .and_then(|c| c.strip_prefix("when="))
                .map(str::to_owned);
            let command = body
                .trim()
                .strip_prefix("$ flysim ")
                .expect("an example command starts with `$ flysim `");
            assert!(
                !command.contains(['"', '\'']),
                "example commands are split on spaces; no quoting"
            );
            let stdin = blocks
                .iter()
                .find(|(i, _)| i.ends_with(" stdin"))
                .map(|(_, b)| {
                    if b.is_empty() {
                        String::new()
                    } else {
                        format!("{b}\n")
                    }
                })
                .unwrap_or_default();
            Example::Command {
                args: command.split_whitespace().map(str::to_owned).collect(),
                stdin,
                condition,
            }
        }
        other => panic!(
            "the first block of an example is `console` or `text produced-by-test`, found {other:?}"
        ),
    }
}

/// Whether a build condition of an example holds in this build.
fn condition_holds(condition: &str) -> bool {
    match condition {
        "binjgb-absent" => {
            let run = flysim(&["backends", "--json"], b"");
            let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
            doc["backends"]
                .as_array()
                .unwrap()
                .iter()
                .any(|b| b["backend"] == "binjgb" && b["status"] == "absent")
        }
        other => panic!("unknown example condition `{other}`"),
    }
}

/// Whether a `#[test] fn name()` exists whose body mentions `code`.
fn test_asserts_code(sources: &[String], name: &str, code: &str) -> bool {
    let signature = format!("fn {name}()");
    sources.iter().any(|text| {
        text.match_indices(&signature).any(|(at, _)| {
            let attributed = text[..at].trim_end().ends_with("#[test]");
            // The body ends at the first closing brace at the function's own indentation.
            let indent = text[..at].rsplit('\n').next().map_or(0, str::len);
            let close = format!("\n{}}}", " ".repeat(indent));
            let body = text[at..].split(&close).next().unwrap_or_default();
            attributed && body.contains(code)
        })
    })
}

#[test]
fn every_example_produces_exactly_its_code() {
    let sources: Vec<String> = source_files()
        .into_iter()
        .chain(crate_files("tests"))
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    for code in flysim_codes::ALL.iter().filter(|c| !c.retired) {
        match example(code.explain) {
            Example::Command {
                args,
                stdin,
                condition,
            } => {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let run = flysim(&args, stdin.as_bytes());
                if condition.as_deref().is_some_and(|c| !condition_holds(c)) {
                    // Outside its condition the example is an ordinary, successful command.
                    assert_eq!(
                        run.status, 0,
                        "{}: outside its condition the example must succeed:\n{}",
                        code.code, run.stderr
                    );
                    continue;
                }
                assert_ne!(
                    run.status, 0,
                    "{}: the example succeeded:\n{}",
                    code.code, run.stdout
                );
                assert_eq!(
                    codes_in(&run.stderr),
                    [code.code],
                    "{}: the example reported:\n{}",
                    code.code,
                    run.stderr
                );
            }
            Example::Test(name) => {
                assert!(
                    test_asserts_code(&sources, &name, code.code),
                    "{}: no #[test] fn {name}() asserting {} exists",
                    code.code,
                    code.code
                );
            }
        }
    }
}

#[test]
fn explain_prints_every_page_and_lists_every_code() {
    let list = flysim(&["explain", "--list"], b"");
    assert_eq!(list.status, 0);
    assert_eq!(list.stdout.lines().count(), flysim_codes::ALL.len());
    for code in flysim_codes::ALL {
        assert!(
            list.stdout
                .contains(&format!("{}  {}", code.code, code.summary()))
        );
    }
    let page = flysim(&["explain", "fs0114"], b"");
    assert_eq!(page.status, 0);
    assert_eq!(page.stdout, flysim_codes::lookup("FS0114").unwrap().explain);
}
