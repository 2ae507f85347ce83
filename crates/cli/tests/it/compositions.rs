//! `flysim validate`, `flysim plan` and `flysim assets` end to end, and the plan's independence
//! from the working directory, HOME, the environment and the composition's absolute path.

use crate::{codes_in, flysim, flysim_at, flysim_in, root};

#[test]
fn every_shipped_composition_validates_and_plans() {
    let mut count = 0;
    for entry in std::fs::read_dir(root().join("compositions")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "kdl") {
            continue;
        }
        count += 1;
        let rel = format!(
            "compositions/{}",
            path.file_name().unwrap().to_string_lossy()
        );
        let valid = flysim(&["validate", &rel], b"");
        assert_eq!(valid.status, 0, "{rel}: {}", valid.stderr);
        assert!(valid.stdout.contains("valid"), "{}", valid.stdout);
        let plan = flysim(&["plan", &rel], b"");
        assert_eq!(plan.status, 0, "{rel}: {}", plan.stderr);
        let doc: serde_json::Value = serde_json::from_str(&plan.stdout).unwrap();
        // The plan on stdout is canonical, and its digest is announced on stderr.
        assert_eq!(
            plan.stdout.trim_end(),
            flysim_types::json::to_canonical(&doc).unwrap()
        );
        assert_eq!(
            plan.stderr,
            format!(
                "planDigest=sha256:{}\n",
                doc["planDigest"].as_str().unwrap()
            )
        );
        // The contract's own reader accepts it, digests included.
        let checked = flysim(
            &["canon", "--type", "launch-plan", "-"],
            plan.stdout.as_bytes(),
        );
        assert_eq!(checked.status, 0, "{}", checked.stderr);
    }
    assert!(count >= 2);
}

#[test]
fn the_plan_does_not_depend_on_directory_home_or_environment() {
    let reference = flysim(&["plan", "compositions/gameboy.kdl"], b"");
    assert_eq!(reference.status, 0, "{}", reference.stderr);
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("a/b");
    for file in [
        "compositions/gameboy.kdl",
        "fixtures/roms/fly-arena.gb",
        "fixtures/profiles/arena-toy-v1/arena-toy-v1.json",
        "fixtures/profiles/arena-toy-v1/arena-toy-v1.flycsr",
    ] {
        let to = copy.join(file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(root().join(file), &to).unwrap();
    }
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let env = [
        ("HOME", home.to_str().unwrap()),
        ("FLYSIM_HOME", home.to_str().unwrap()),
        ("XDG_DATA_HOME", "/nonexistent"),
        ("LANG", "fr_FR.UTF-8"),
        ("TZ", "Pacific/Chatham"),
        ("PATH", "/usr/bin"),
    ];
    let absolute = copy.join("compositions/gameboy.kdl");
    let runs = [
        // Another working directory, an absolute path, another HOME and environment.
        flysim_in(tmp.path(), &env, &["plan", absolute.to_str().unwrap()]),
        // The copy, by a relative path from its own directory.
        flysim_in(&copy.join("compositions"), &[], &["plan", "gameboy.kdl"]),
        // The original, from a subdirectory.
        flysim_in(&root().join("compositions"), &env, &["plan", "gameboy.kdl"]),
    ];
    for run in runs {
        assert_eq!(run.status, 0, "{}", run.stderr);
        assert_eq!(run.stdout, reference.stdout);
        assert_eq!(run.stderr, reference.stderr);
    }
}

#[test]
fn plan_writes_to_out_and_standard_input_resolves_from_the_current_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("plan.json");
    let run = flysim(
        &[
            "plan",
            "compositions/synthetic.kdl",
            "-o",
            out.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(run.stdout.is_empty());
    assert!(run.stderr.starts_with("planDigest=sha256:"));
    let written = std::fs::read_to_string(&out).unwrap();
    // Its asset paths are relative to `compositions/`, so it is piped in from there.
    let stdin = std::fs::read(root().join("compositions/synthetic.kdl")).unwrap();
    let piped = flysim_at(&root().join("compositions"), &["plan", "-"], &stdin);
    assert_eq!(piped.status, 0, "{}", piped.stderr);
    assert_eq!(piped.stdout, written);
    // From elsewhere they do not resolve (a directory two levels down in a fresh one, so that
    // `../fixtures` names nothing, wherever the checkout is).
    let scratch = tempfile::tempdir().unwrap();
    let nowhere = scratch.path().join("a/b");
    std::fs::create_dir_all(&nowhere).unwrap();
    let elsewhere = flysim_at(&nowhere, &["plan", "-"], &stdin);
    assert_eq!(
        codes_in(&elsewhere.stderr),
        ["FS0250"],
        "{}",
        elsewhere.stderr
    );
}

#[test]
fn validate_reports_every_problem_sorted_with_file_name_and_codes() {
    let run = flysim(
        &["validate", "fixtures/compositions/err/many-problems.kdl"],
        b"",
    );
    assert_eq!(run.status, 1);
    assert_eq!(codes_in(&run.stderr), ["FS0202", "FS0203", "FS0208"]);
    let positions: Vec<usize> = ["world 1", "threads 0", "colour", "steps \"600\""]
        .iter()
        .map(|needle| {
            run.stderr
                .find(needle)
                .unwrap_or_else(|| panic!("{needle}: {}", run.stderr))
        })
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("fixtures/compositions/err/many-problems.kdl:13:11")
    );
    assert!(run.stderr.contains("4 problems found"), "{}", run.stderr);
    assert!(run.stdout.is_empty());
}

#[test]
fn assets_add_list_verify() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().to_str().unwrap();
    let env = [("FLYSIM_HOME", home)];
    let rom = root().join("fixtures/roms/fly-arena.gb");
    let add = flysim_in(&root(), &env, &["assets", "add", rom.to_str().unwrap()]);
    assert_eq!(add.status, 0, "{}", add.stderr);
    assert!(
        add.stdout.starts_with("added: fly-arena.gb"),
        "{}",
        add.stdout
    );
    let again = flysim_in(&root(), &env, &["assets", "add", rom.to_str().unwrap()]);
    assert!(
        again.stdout.starts_with("already present"),
        "{}",
        again.stdout
    );
    let list = flysim_in(&root(), &env, &["assets", "list"]);
    assert_eq!(list.stdout.lines().count(), 1);
    assert!(list.stdout.contains("32768 bytes  gb"), "{}", list.stdout);
    let conflict = flysim_in(
        &root(),
        &env,
        &[
            "assets",
            "add",
            "fixtures/seed-vectors.json",
            "--id",
            "fly-arena.gb",
        ],
    );
    assert_eq!(conflict.status, 1);
    assert_eq!(codes_in(&conflict.stderr), ["FS0254"]);
    let sound = flysim_in(&root(), &env, &["assets", "verify"]);
    assert_eq!(sound.status, 0, "{}", sound.stderr);
    // Damage a stored file: verify names it and exits with its own code.
    let blobs = tmp.path().join("assets/blobs/sha256");
    let blob = std::fs::read_dir(&blobs)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::write(&blob, b"not the rom").unwrap();
    let damaged = flysim_in(&root(), &env, &["assets", "verify"]);
    assert_eq!(damaged.status, 5, "{}", damaged.stderr);
    assert_eq!(codes_in(&damaged.stderr), ["FS0253"]);
}

#[test]
fn schema_knows_the_plan_by_both_names() {
    let long = flysim(&["schema", "launch-plan"], b"");
    assert_eq!(long.status, 0);
    assert_eq!(flysim(&["schema", "plan"], b"").stdout, long.stdout);
    let composition = flysim(&["schema", "composition"], b"");
    assert_eq!(codes_in(&composition.stderr), ["FS0904"]);
    assert!(composition.stderr.contains("docs/compositions.md"));
}
