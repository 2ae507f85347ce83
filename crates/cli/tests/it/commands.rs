//! The user-facing commands, end to end.

use crate::{codes_in, flysim, root};

#[test]
fn seed_text_shows_escaped_material_digest_and_seed() {
    let run = flysim(
        &[
            "seed",
            "--master-seed",
            "0",
            "--agent",
            "fly-a",
            "--agent",
            "fly-b",
        ],
        b"",
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains(r"material  flybrain/seed-derivation-v1\n0\nfly-a\n"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("seed      1828176714"));
    assert!(run.stdout.contains("seed      1218785088"));
    assert!(
        run.stdout
            .contains("sha256    6cf7c34a422f4cdd890c64d0ef5a072e4f6ddc2ee18e83ee24a5f2214f4960d1")
    );
}

#[test]
fn seed_json_matches_the_fixture_table() {
    let run = flysim(
        &[
            "seed",
            "--master-seed",
            "42",
            "--agent",
            "fly-a",
            "--agent",
            "fly-d",
            "--json",
        ],
        b"",
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["algorithm"], "seed-derivation-v1");
    assert_eq!(doc["masterSeed"], "42");
    let table: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("fixtures/seed-vectors.json")).unwrap(),
    )
    .unwrap();
    for (i, agent) in ["fly-a", "fly-d"].iter().enumerate() {
        let row = table["vectors"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["masterSeed"] == "42" && r["agentId"] == *agent)
            .unwrap();
        let got = &doc["agents"][i];
        assert_eq!(got["agentId"], *agent);
        for field in ["material", "materialDigest", "seed"] {
            assert_eq!(got[field], row[field], "{agent} {field}");
        }
    }
    // The output is itself canonical JSON.
    let canonical = flysim_types::json::to_canonical(&doc).unwrap();
    assert_eq!(run.stdout.trim_end(), canonical);
}

#[test]
fn seed_refusals_exit_non_zero_with_distinct_codes() {
    let cases: [(&[&str], &str); 4] = [
        (&["--master-seed", "0", "--agent", "Fly-A"], "FS0101"),
        (&["--master-seed", "01", "--agent", "fly-a"], "FS0102"),
        (
            &["--master-seed", "18446744073709551616", "--agent", "fly-a"],
            "FS0102",
        ),
        (
            &["--master-seed", "0", "--agent", "fly-a", "--agent", "fly-a"],
            "FS0130",
        ),
    ];
    for (args, code) in cases {
        let mut all = vec!["seed"];
        all.extend_from_slice(args);
        let run = flysim(&all, b"");
        assert_eq!(run.status, 1, "{args:?}");
        assert_eq!(codes_in(&run.stderr), [code], "{args:?}: {}", run.stderr);
        assert!(run.stdout.is_empty());
    }
}

#[test]
fn canon_prints_rfc8785_form_and_digest() {
    let input = std::fs::read(root().join("fixtures/rfc8785/weird.in.json")).unwrap();
    let want = std::fs::read_to_string(root().join("fixtures/rfc8785/weird.out.json")).unwrap();
    let run = flysim(&["canon", "-"], &input);
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert_eq!(run.stdout, format!("{want}\n"));
    let file = flysim(&["canon", "fixtures/rfc8785/weird.in.json"], b"");
    assert_eq!(file.stdout, run.stdout);
    let digest = flysim(&["canon", "--digest", "-"], &input);
    assert_eq!(digest.status, 0);
    let expected = flysim_types::digest::sha256(want.as_bytes());
    assert_eq!(digest.stdout, format!("sha256:{expected}\n"));
}

#[test]
fn canon_refusal_points_into_the_document() {
    let run = flysim(&["canon", "-"], b"{\n  \"seed\": 1,\n  \"seed\": 2\n}\n");
    assert_eq!(run.status, 1);
    assert_eq!(codes_in(&run.stderr), ["FS0114"]);
    assert!(
        run.stderr.contains("<stdin>:3:3"),
        "the span names line 3, column 3:\n{}",
        run.stderr
    );
    assert!(run.stderr.contains("repeated here"), "{}", run.stderr);
    assert!(
        run.stderr.contains("flysim explain FS0114"),
        "{}",
        run.stderr
    );
}

#[test]
fn canon_with_a_type_validates_the_payload() {
    let ok = flysim(
        &["canon", "--type", "scope", "-"],
        br#"{"step":"3","epoch":"e0","sessionId":"demo"}"#,
    );
    assert_eq!(ok.status, 0, "{}", ok.stderr);
    assert_eq!(
        ok.stdout,
        "{\"epoch\":\"e0\",\"sessionId\":\"demo\",\"step\":\"3\"}\n"
    );
    let bad = flysim(
        &["canon", "--type", "scope", "-"],
        br#"{"step":"03","epoch":"e0","sessionId":"demo"}"#,
    );
    assert_eq!(codes_in(&bad.stderr), ["FS0102"]);
    assert!(bad.stderr.contains("at `step`"), "{}", bad.stderr);
}

#[test]
fn ticks_shows_the_game_boy_cadence() {
    let run = flysim(&["ticks", "--step", "8572265625/512", "--steps", "12"], b"");
    assert_eq!(run.status, 0, "{}", run.stderr);
    let ticks: Vec<u64> = run
        .stdout
        .lines()
        .skip(1)
        .map(|l| {
            l.split(':')
                .nth(1)
                .unwrap()
                .split_whitespace()
                .next()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert_eq!(ticks, [16, 17, 17, 16, 17, 17, 17, 16, 17, 17, 17, 16]);
}

#[test]
fn schema_list_and_print() {
    let list = flysim(&["schema", "--list"], b"");
    assert_eq!(list.status, 0);
    assert!(list.stdout.lines().any(|l| l == "scope"));
    let scope = flysim(&["schema", "scope"], b"");
    let schema: serde_json::Value = serde_json::from_str(&scope.stdout).unwrap();
    assert_eq!(schema["properties"]["step"]["$ref"], "#/$defs/U64");
    assert_eq!(schema["$defs"]["U64"]["pattern"], "^(0|[1-9][0-9]*)$");
    assert_eq!(
        schema["required"],
        serde_json::json!(["sessionId", "epoch", "step"])
    );
}

#[test]
fn dolphin_check_steps_the_test_program_or_says_what_is_missing() {
    let missing = flysim(&["dolphin", "check", "--gcc", "/nonexistent/gcc"], b"");
    assert_eq!(missing.status, 4, "{}", missing.stderr);
    assert_eq!(codes_in(&missing.stderr), ["FS0809"]);
    let installed = [
        "/usr/games/dolphin-emu",
        "/usr/bin/Xvfb",
        "/usr/bin/powerpc-linux-gnu-gcc",
    ];
    if !installed.iter().all(|p| std::path::Path::new(p).is_file()) {
        #[expect(clippy::print_stderr, reason = "the explicit skip message")]
        {
            eprintln!("skipped the stepping half: not all of {installed:?} are installed");
        }
        return;
    }
    let run = flysim(&["dolphin", "check", "--steps", "10"], b"");
    if run.stderr.contains("FS0802") {
        return; // another Dolphin version than the pinned one; the dolphin crate's tests say so
    }
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("steps    10, each exactly one field"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("fields per second"), "{}", run.stdout);
}
