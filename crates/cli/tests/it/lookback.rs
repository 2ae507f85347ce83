//! Looking back at recorded runs: `flysim diff` (the plans' fields, the first diverging row and
//! its fields, a damaged row named by number), `flysim runs` (a state directory's runs, damaged
//! ones listed with their problem) and the final line of `flysim run` and `flysim resume`
//! (wall time, each agent's score, the run directory).

use std::path::{Path, PathBuf};

use crate::{Run, codes_in, flysim, flysim_in, synthetic_variant};

use crate::golden::SYNTHETIC_RUN;

/// Runs `composition` for 20 steps into `state` and returns its run directory.
fn run_20(cwd: &Path, composition: &str, state: &Path) -> PathBuf {
    let run = flysim_in(
        cwd,
        &[],
        &[
            "run",
            composition,
            "--steps",
            "20",
            "--json",
            "--state-dir",
            state.to_str().unwrap(),
        ],
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    PathBuf::from(doc["runDir"].as_str().unwrap())
}

/// Two 20-step runs of the synthetic composition, master seeds 42 and 43, from one directory.
fn two_seeds(tmp: &Path, state: &Path) -> (PathBuf, PathBuf) {
    let seed_42 = synthetic_variant(tmp, "synthetic.kdl", |t| t);
    let dir = seed_42.parent().unwrap();
    let a = run_20(dir, "synthetic.kdl", state);
    std::fs::write(
        dir.join("synthetic.kdl"),
        std::fs::read_to_string(&seed_42)
            .unwrap()
            .replace("master-seed \"42\"", "master-seed \"43\""),
    )
    .unwrap();
    let b = run_20(dir, "synthetic.kdl", state);
    (dir.join(a), dir.join(b))
}

fn diff(a: &Path, b: &Path, json: bool) -> Run {
    let mut args = vec!["diff", a.to_str().unwrap(), b.to_str().unwrap()];
    if json {
        args.push("--json");
    }
    flysim(&args, b"")
}

/// A copy of the run directory `from` at `to`, its trace changed by `edit` at row `row`.
fn damaged_copy(from: &Path, to: &Path, row: usize, edit: impl FnOnce(&str) -> String) {
    std::fs::create_dir_all(to).unwrap();
    for file in ["plan.json", "manifest.json"] {
        std::fs::copy(from.join(file), to.join(file)).unwrap();
    }
    let trace = std::fs::read_to_string(from.join("trace.ndjson")).unwrap();
    let mut lines: Vec<String> = trace.lines().map(str::to_owned).collect();
    lines[row] = edit(&lines[row]);
    std::fs::write(to.join("trace.ndjson"), lines.join("\n") + "\n").unwrap();
}

/// `line` with one digit changed: the first digit of row 7's first population rate.
fn one_digit_changed(line: &str) -> String {
    let key = "\"populationRateHz\":";
    let at = line.find(key).unwrap() + key.len();
    let digit = line.as_bytes()[at];
    assert!(digit.is_ascii_digit() && digit != b'0', "{line}");
    let changed = if digit == b'9' {
        '1'
    } else {
        char::from(digit + 1)
    };
    format!("{}{changed}{}", &line[..at], &line[at + 1..])
}

#[test]
fn diff_names_the_plan_fields_and_the_first_diverging_row_of_two_master_seeds() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = two_seeds(tmp.path(), &tmp.path().join("state"));
    let out = diff(&a, &b, false);
    assert_eq!(out.status, 7, "differing runs exit 7: {}", out.stdout);
    let lines: Vec<&str> = out.stdout.lines().collect();
    let plan = lines
        .iter()
        .position(|l| *l == "the plans differ in 10 field(s):")
        .unwrap_or_else(|| panic!("{}", out.stdout));
    assert!(
        lines[plan + 1..plan + 11].contains(&r#"  masterSeed: "42" -> "43""#),
        "{}",
        out.stdout
    );
    assert!(lines[plan + 1..plan + 11].contains(&"  agents[0].seed: -184946063 -> 383454019"));
    // Seeds change the warm-up already: row 0 differs, first in fly-a's population rate.
    assert_eq!(lines[plan + 11], "first diverging row: boundary 0");
    assert_eq!(
        lines[plan + 12],
        "  agents[0].telemetry.populationRateHz: 128.5592721830151 -> 128.36404639683326"
    );
    assert!(!out.stdout.contains("damaged"), "{}", out.stdout);
    let json = diff(&a, &b, true);
    assert_eq!(json.status, 7);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(doc["identical"], false);
    assert_eq!(doc["firstDivergence"]["row"], 0);
    assert_eq!(
        doc["firstDivergence"]["fields"]["shown"][0]["path"],
        "agents[0].telemetry.populationRateHz"
    );
    let seed = doc["plan"]["shown"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "masterSeed")
        .unwrap();
    assert_eq!((&seed["a"], &seed["b"]), (&"42".into(), &"43".into()));
}

#[test]
fn diff_of_a_run_with_itself_says_identical_and_names_a_damaged_row_by_number() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let a = run_20(&crate::root(), "compositions/synthetic.kdl", &state);
    let same = diff(&a, &a, false);
    assert_eq!(same.status, 0, "{}", same.stdout);
    assert!(
        same.stdout.ends_with("the runs are identical\n"),
        "{}",
        same.stdout
    );
    // One digit changed in row 7: the row still parses, the trace no longer hashes.
    let altered = tmp.path().join("altered");
    damaged_copy(&a, &altered, 7, one_digit_changed);
    let out = diff(&a, &altered, false);
    assert_eq!(out.status, 7, "{}", out.stdout);
    assert!(
        out.stdout
            .contains("first diverging row: boundary 7\n  agents[0].telemetry.populationRateHz: "),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("damaged: B row 7: FS0403 "),
        "{}",
        out.stdout
    );
    // A row that no longer parses: named by number, with its code.
    let torn = tmp.path().join("torn");
    damaged_copy(&a, &torn, 7, |l| {
        l.replacen("\"boundary\":\"7\"", "\"boundary\":\"7x\"", 1)
    });
    let out = diff(&a, &torn, true);
    assert_eq!(out.status, 7, "{}", out.stdout);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["firstDivergence"]["row"], 7);
    assert_eq!(doc["damage"][0]["run"], "B");
    assert_eq!(doc["damage"][0]["row"], 7);
    assert_eq!(doc["damage"][0]["code"], "FS0402");
    assert!(
        doc["damage"][0]["message"]
            .as_str()
            .unwrap()
            .contains("row 7 (line 8) no longer parses"),
        "{doc}"
    );
}

#[test]
fn a_replay_mismatch_hints_at_diff() {
    let wrong = format!("sha256:{}", "0".repeat(64));
    let replay = flysim(
        &[
            "replay",
            "fixtures/runs/synthetic-3",
            "--assert-digest",
            &wrong,
        ],
        b"",
    );
    assert_eq!(replay.status, 7);
    assert_eq!(codes_in(&replay.stderr), ["FS0404"]);
    assert!(
        replay
            .stderr
            .contains("hint: `flysim diff RUN_DIR OTHER_RUN_DIR`"),
        "{}",
        replay.stderr
    );
}

/// The sum of `agent`'s reward values over the trace of `run_dir`, read with plain JSON.
fn score_in_trace(run_dir: &Path, agent: &str) -> f64 {
    std::fs::read_to_string(run_dir.join("trace.ndjson"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .flat_map(|row| row["behaviour"]["agents"].as_array().unwrap().clone())
        .filter(|a| a["agentId"] == agent)
        .flat_map(|a| a["rewards"].as_array().unwrap().clone())
        .map(|r| r["value"].as_f64().unwrap())
        .sum()
}

#[test]
fn runs_lists_each_run_with_status_steps_scores_digest_and_age_and_a_damaged_one_with_its_problem()
{
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let missing = flysim(&["runs", "--state-dir", state.to_str().unwrap()], b"");
    assert_eq!(missing.status, 0);
    assert_eq!(
        missing.stdout,
        format!("no runs: {} does not exist\n", state.join("runs").display())
    );
    std::fs::create_dir_all(state.join("runs")).unwrap();
    let empty = flysim(&["runs", "--state-dir", state.to_str().unwrap()], b"");
    assert_eq!(
        empty.stdout,
        format!("no runs in {}\n", state.join("runs").display())
    );
    let (a, b) = two_seeds(tmp.path(), &state);
    assert_eq!(score_in_trace(&a, "fly-a"), 11.0);
    damaged_copy(&a, &state.join("runs/zz-altered"), 7, one_digit_changed);
    std::fs::create_dir_all(state.join("runs/aa-empty")).unwrap();
    let listed = flysim(&["runs", "--state-dir", state.to_str().unwrap()], b"");
    assert_eq!(listed.status, 0, "{}", listed.stderr);
    let lines: Vec<&str> = listed.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{}", listed.stdout);
    // By start time: seed 42 and its altered copy (the same start; by id), seed 43; then the
    // directory that cannot be read.
    let name = |p: &Path| p.file_name().unwrap().to_str().unwrap().to_owned();
    let width = "synthetic-78f0706920bb-1".len();
    assert!(
        lines[0].starts_with(&format!(
            "{:<width$}  paused    20/600 steps  fly-a 11, fly-b 11  sha256:c04ab03baeba  ",
            name(&a)
        )) && lines[0].ends_with(" s ago"),
        "{}",
        listed.stdout
    );
    assert!(lines[1].starts_with("zz-altered  "), "{}", listed.stdout);
    assert!(lines[1].contains("  DAMAGED FS0403: "), "{}", lines[1]);
    assert!(
        lines[2].starts_with(&format!("{:<width$}  paused  ", name(&b))),
        "{}",
        listed.stdout
    );
    assert!(!lines[2].contains("DAMAGED"), "{}", lines[2]);
    assert!(lines[3].starts_with("aa-empty  "), "{}", lines[3]);
    assert!(lines[3].contains("  DAMAGED FS0402: "), "{}", lines[3]);
    let json = flysim(
        &["runs", "--state-dir", state.to_str().unwrap(), "--json"],
        b"",
    );
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let first = &doc[0];
    assert_eq!(first["runId"], name(&a).as_str());
    assert_eq!(first["status"], "paused");
    assert_eq!(
        (&first["steps"], &first["planSteps"]),
        (&20.into(), &600.into())
    );
    assert_eq!(
        first["scores"],
        serde_json::json!({"fly-a": 11, "fly-b": 11})
    );
    assert_eq!(first["problem"], serde_json::Value::Null);
    assert_eq!(doc[1]["problem"]["code"], "FS0403");
    assert_eq!(doc[2]["problem"], serde_json::Value::Null);
    assert_eq!(doc[3]["problem"]["code"], "FS0402");
}

#[test]
fn the_final_lines_of_run_and_resume_give_wall_time_scores_and_the_run_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let run = flysim(
        &[
            "run",
            "compositions/synthetic.kdl",
            "--steps",
            "20",
            "--state-dir",
            state.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    let dir = state.join("runs/synthetic-78f0706920bb-1");
    let (head, tail) = run.stdout.split_once(" in ").unwrap();
    assert_eq!(
        head,
        "run synthetic-78f0706920bb-1 paused at step 20 of 600 (its --steps bound)"
    );
    let (seconds, rest) = tail.split_once(" s, ").unwrap();
    assert!(seconds.parse::<f64>().unwrap() >= 0.0, "{tail}");
    assert_eq!(
        rest,
        format!(
            "fly-a scored 11, fly-b scored 11; runDigest=sha256:c04ab03baeba60594a59d19ffb2508d7b3ad3f06dcfdab12109dea77bfd95189; {}\n",
            dir.display()
        )
    );
    assert_eq!(score_in_trace(&dir, "fly-b"), 11.0);
    // Resumed to the plan's end: complete, the golden digest, the scores over all 601 rows.
    let resume = flysim(&["resume", dir.to_str().unwrap()], b"");
    assert_eq!(resume.status, 0, "{}", resume.stderr);
    let (fly_a, fly_b) = (score_in_trace(&dir, "fly-a"), score_in_trace(&dir, "fly-b"));
    let (head, tail) = resume.stdout.split_once(" in ").unwrap();
    assert_eq!(head, "run synthetic-78f0706920bb-1 complete: 600 steps");
    assert_eq!(
        tail.split_once(" s, ").unwrap().1,
        format!(
            "fly-a scored {fly_a}, fly-b scored {fly_b}; runDigest={SYNTHETIC_RUN}; {}\n",
            dir.display()
        )
    );
    assert!(
        fly_a > 11.0,
        "the score grew over the resumed steps: {fly_a}"
    );
    // `--json` gains the scores and the wall time.
    let json = flysim(
        &[
            "run",
            "compositions/synthetic.kdl",
            "--steps",
            "20",
            "--json",
            "--state-dir",
            state.to_str().unwrap(),
        ],
        b"",
    );
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(doc["scores"], serde_json::json!({"fly-a": 11, "fly-b": 11}));
    assert!(doc["wallTimeS"].as_f64().unwrap() > 0.0, "{doc}");
}
