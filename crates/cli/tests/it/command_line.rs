//! What the command line answers to a newcomer's first commands and mistakes: the digest to pin
//! a generated profile with, `canon --type plan`, `ticks` durations with units, a missing file,
//! `flysim FILE` without `.kdl`, `checkpoint 300`, and runs refused before they start leaving no
//! run directory.

use std::path::Path;

use crate::{codes_in, flysim, flysim_at, root};

/// The hex digest `output` prints on the line starting with `label`.
fn printed_digest(output: &str, label: &str) -> String {
    output
        .lines()
        .find_map(|l| l.strip_prefix(label))
        .and_then(|rest| rest.trim().strip_prefix("sha256:"))
        .unwrap_or_else(|| panic!("no `{label}` digest in:\n{output}"))
        .to_owned()
}

#[test]
fn the_digest_brain_generate_prints_is_the_one_a_composition_pins() {
    let tmp = tempfile::tempdir().unwrap();
    let profiles = tmp.path().join("profiles");
    let generate = flysim(
        &[
            "brain",
            "generate",
            "counter-toy-v1",
            "--out",
            profiles.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(generate.status, 0, "{}", generate.stderr);
    assert!(
        generate.stdout.contains("the file's own SHA-256"),
        "the output says which digest it is: {}",
        generate.stdout
    );
    let profile = printed_digest(&generate.stdout, "profile");
    let connectome = printed_digest(&generate.stdout, "connectome");
    // Paste them into a composition, as a user would.
    let text = std::fs::read_to_string(root().join("compositions/synthetic.kdl")).unwrap();
    let text = text
        .replace("../fixtures/profiles/counter-toy-v1/", "profiles/")
        .replace(
            "173ceccfcfda97c0ad869571e81b8b68a56df9861f54ba5e29a1b0985ac2736e",
            &profile,
        )
        .replace(
            "6430ad4fb2eb0fcb8c750f38fbbb0c59caa4a1b0c7ce1e8a0a51bca5e4ddb321",
            &connectome,
        );
    std::fs::write(tmp.path().join("mine.kdl"), text).unwrap();
    let validate = flysim_at(tmp.path(), &["validate", "mine.kdl"], b"");
    assert_eq!(validate.status, 0, "{}", validate.stderr);
    assert!(validate.stdout.contains("valid"), "{}", validate.stdout);
    // `brain check` prints the same digest for the file it checks.
    let check = flysim(
        &[
            "brain",
            "check",
            profiles.join("counter-toy-v1.json").to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(check.status, 0, "{}", check.stderr);
    assert_eq!(printed_digest(&check.stdout, "sha256"), profile);
    assert_eq!(
        check.stdout.matches("sha256:").count(),
        1,
        "one digest, the file's: {}",
        check.stdout
    );
}

#[test]
fn canon_takes_plan_as_short_for_launch_plan() {
    let plan = flysim(&["plan", "compositions/synthetic.kdl"], b"");
    assert_eq!(plan.status, 0, "{}", plan.stderr);
    let short = flysim(&["canon", "-", "--type", "plan"], plan.stdout.as_bytes());
    assert_eq!(short.status, 0, "{}", short.stderr);
    let long = flysim(
        &["canon", "-", "--type", "launch-plan"],
        plan.stdout.as_bytes(),
    );
    assert_eq!(short.stdout, long.stdout);
    assert_eq!(short.stdout, plan.stdout);
}

#[test]
fn ticks_reads_a_step_with_its_unit() {
    let first_line = |step: &str| {
        let run = flysim(&["ticks", "--step", step, "--steps", "1"], b"");
        assert_eq!(run.status, 0, "{step}: {}", run.stderr);
        run.stdout.lines().next().unwrap().to_owned()
    };
    let tick = ", tick 1000000/1 ns";
    assert_eq!(first_line("16.7ms"), format!("step 16700000/1 ns{tick}"));
    assert_eq!(
        first_line("16666667ns"),
        format!("step 16666667/1 ns{tick}")
    );
    assert_eq!(first_line("1/60s"), format!("step 50000000/3 ns{tick}"));
    assert_eq!(first_line("250us"), format!("step 250000/1 ns{tick}"));
    assert_eq!(first_line("16666667"), format!("step 16666667/1 ns{tick}"));
    let sixtieth = flysim(&["ticks", "--step", "1/60s", "--steps", "3"], b"");
    assert!(
        sixtieth
            .stdout
            .ends_with("step    2:   17 ticks, remainder 0/1 ns, total 50\n"),
        "{}",
        sixtieth.stdout
    );
}

#[test]
fn ticks_refuses_a_bad_unit_and_lists_the_forms_it_takes() {
    let run = flysim(&["ticks", "--step", "16.7min"], b"");
    assert_eq!(run.status, 1, "{}", run.stderr);
    assert_eq!(codes_in(&run.stderr), ["FS0911"]);
    for form in ["16.7ms", "16666667ns", "1/60s", "250us", "nanoseconds"] {
        assert!(run.stderr.contains(form), "{form}: {}", run.stderr);
    }
    assert!(!run.stderr.contains("JSON"), "{}", run.stderr);
    let bare = flysim(&["ticks", "--step", "16.7"], b"");
    assert_eq!(codes_in(&bare.stderr), ["FS0911"]);
    assert!(bare.stderr.contains("no unit"), "{}", bare.stderr);
}

#[test]
fn a_missing_file_is_reported_once() {
    let run = flysim(&["validate", "compositions/nope.kdl"], b"");
    assert_eq!(run.status, 3, "{}", run.stderr);
    assert_eq!(
        run.stderr.matches("No such file or directory").count(),
        1,
        "{}",
        run.stderr
    );
}

#[test]
fn a_composition_named_without_its_folder_is_hinted() {
    let run = flysim(&["gameboy.kdl"], b"");
    assert_eq!(run.status, 3, "{}", run.stderr);
    assert_eq!(codes_in(&run.stderr), ["FS0901"]);
    assert!(
        run.stderr
            .contains("did you mean compositions/gameboy.kdl?"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_composition_without_the_kdl_suffix_runs_and_another_file_is_answered() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let file = crate::synthetic_variant(tmp.path(), "synthetic", |t| t);
    let run = flysim_at(
        tmp.path(),
        &[
            file.to_str().unwrap(),
            "--steps",
            "3",
            "--json",
            "--state-dir",
            state.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(run.stdout.contains("\"steps\":3"), "{}", run.stdout);
    let other = flysim(&["README.md"], b"");
    assert_eq!(other.status, 1, "{}", other.stderr);
    assert_eq!(codes_in(&other.stderr), ["FS0912"]);
    assert!(
        other
            .stderr
            .contains("README.md is neither a subcommand nor a composition"),
        "{}",
        other.stderr
    );
    assert!(other.stderr.contains("`flysim --help`"), "{}", other.stderr);
    // A word that is no file is still clap's unknown subcommand, with its suggestion.
    let typo = flysim(&["valdate"], b"");
    assert_eq!(typo.status, 2, "{}", typo.stderr);
    assert!(typo.stderr.contains("validate"), "{}", typo.stderr);
}

#[test]
fn checkpoint_with_a_bare_count_suggests_every() {
    let tmp = tempfile::tempdir().unwrap();
    let file = crate::synthetic_variant(tmp.path(), "c.kdl", |t| {
        t.replace("checkpoint every=60", "checkpoint 300")
    });
    let run = flysim(&["validate", file.to_str().unwrap()], b"");
    assert_eq!(codes_in(&run.stderr), ["FS0206"]);
    assert!(
        run.stderr.contains("did you mean `checkpoint every=300`?"),
        "{}",
        run.stderr
    );
}

/// Copies the Game Boy composition, changed by `edit`, with the files it names into `dir`.
fn gameboy_variant(dir: &Path, edit: impl FnOnce(String) -> String) -> std::path::PathBuf {
    for file in [
        "fixtures/roms/fly-arena.gb",
        "fixtures/profiles/arena-toy-v1/arena-toy-v1.json",
        "fixtures/profiles/arena-toy-v1/arena-toy-v1.flycsr",
    ] {
        let to = dir.join(file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(root().join(file), to).unwrap();
    }
    let text = std::fs::read_to_string(root().join("compositions/gameboy.kdl")).unwrap();
    let path = dir.join("compositions/variant.kdl");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, edit(text)).unwrap();
    path
}

/// `flysim run FILE --state-dir <fresh>`: the run, and whether the state directory holds a run.
fn run_in_fresh_state(dir: &Path, file: &Path) -> (crate::Run, bool) {
    let state = dir.join("state");
    let run = flysim(
        &[
            "run",
            file.to_str().unwrap(),
            "--state-dir",
            state.to_str().unwrap(),
        ],
        b"",
    );
    let runs = std::fs::read_dir(state.join("runs")).map_or(0, Iterator::count);
    (run, runs > 0)
}

#[test]
fn a_run_refused_for_too_many_ports_leaves_no_run_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let port = "    port \"p1\" {\n        controller \"gb-joypad\" version=1\n        buttons \"up\" \"down\" \"left\" \"right\" \"a\" \"b\" \"start\" \"select\"\n    }\n";
    let file = gameboy_variant(tmp.path(), |t| {
        assert!(t.contains(port));
        t.replace(port, &format!("{port}{}", port.replace("p1", "p2")))
            .replace(
                "agent \"fly-a\" {",
                "agent \"fly-b\" {\n    profile \"arena-fly\"\n    port \"p2\"\n}\n\nagent \"fly-a\" {",
            )
    });
    let (run, left) = run_in_fresh_state(tmp.path(), &file);
    assert_eq!(run.status, 1, "{}", run.stderr);
    assert_eq!(codes_in(&run.stderr), ["FS0236"]);
    assert!(!left, "no run directory is left behind");
}

#[test]
fn a_run_refused_for_a_missing_asset_leaves_no_run_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let file = gameboy_variant(tmp.path(), |t| {
        t.replace("fly-arena.gb\"", "no-such-rom.gb\"")
    });
    let (run, left) = run_in_fresh_state(tmp.path(), &file);
    assert_eq!(run.status, 1, "{}", run.stderr);
    assert_eq!(codes_in(&run.stderr), ["FS0250"]);
    assert!(!left, "no run directory is left behind");
}

#[test]
fn a_run_refused_for_its_thread_budget_leaves_no_run_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let file = crate::synthetic_variant(tmp.path(), "s.kdl", |t| {
        t.replace(
            "transport \"memory\"",
            "transport \"memory\"\n    max-threads 1",
        )
    });
    let (run, left) = run_in_fresh_state(tmp.path(), &file);
    assert_eq!(run.status, 1, "{}", run.stderr);
    assert_eq!(codes_in(&run.stderr), ["FS0216"]);
    assert!(!left, "no run directory is left behind");
}
