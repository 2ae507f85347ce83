//! Sweeps end to end: `plan --sweep` lists every member with the sweep digest, `--master-seed`
//! gives the plan of the member of that seed, and the sweep commands run, resume, write for
//! Slurm and collect a family.

use std::path::{Path, PathBuf};

use crate::{flysim, root};

const GRID: &str = "fixtures/compositions/sweep/grid.kdl";
const SEEDS: &str = "fixtures/compositions/sweep/seeds.kdl";

/// The `planDigest=sha256:<hex>` note of a `flysim plan`.
fn plan_digest(stderr: &str) -> String {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("planDigest="))
        .unwrap_or_else(|| panic!("no planDigest in {stderr}"))
        .to_owned()
}

#[test]
fn plan_sweep_lists_every_member_and_the_sweep_digest() {
    let run = flysim(&["plan", GRID, "--sweep"], b"");
    assert_eq!(run.status, 0, "{}", run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let members = doc["members"].as_array().unwrap();
    assert_eq!(members.len(), 6);
    assert_eq!(members[2]["index"], 2);
    assert_eq!(
        members[2]["values"],
        serde_json::json!([
            {"target": "profile.counter-fly.parameter.press-rate", "value": 0.5},
            {"target": "master-seed", "value": "7"}
        ])
    );
    assert_eq!(members[2]["plan"]["masterSeed"], "7");
    assert_eq!(
        members[2]["planDigest"],
        format!(
            "sha256:{}",
            members[2]["plan"]["planDigest"].as_str().unwrap()
        )
    );
    let valid = flysim(&["validate", GRID], b"");
    assert_eq!(valid.status, 0, "{}", valid.stderr);
    assert!(
        valid.stdout.contains(&format!(
            "  sweep of 6 members, every one valid; sweepDigest={}\n",
            doc["sweepDigest"].as_str().unwrap()
        )),
        "{}",
        valid.stdout
    );
    let note = run.stderr.trim();
    assert!(
        note.starts_with("sweepDigest=sha256:") && note.ends_with(" members=6"),
        "{note}"
    );
    assert_eq!(
        note,
        format!(
            "sweepDigest={} members=6",
            doc["sweepDigest"].as_str().unwrap()
        )
    );
}

#[test]
fn master_seed_gives_the_plan_of_the_member_of_that_seed() {
    let family = flysim(&["plan", SEEDS, "--sweep"], b"");
    assert_eq!(family.status, 0, "{}", family.stderr);
    let doc: serde_json::Value = serde_json::from_str(&family.stdout).unwrap();
    for index in [0usize, 4] {
        let seed = index.to_string();
        let alone = flysim(&["plan", SEEDS, "--master-seed", &seed], b"");
        assert_eq!(alone.status, 0, "{}", alone.stderr);
        let member = &doc["members"][index];
        assert_eq!(
            plan_digest(&alone.stderr),
            member["planDigest"].as_str().unwrap()
        );
        let plan: serde_json::Value = serde_json::from_str(&alone.stdout).unwrap();
        assert_eq!(plan, member["plan"]);
    }
    // Without the flag the file's own seed: no member of 0..=5.
    let own = flysim(&["plan", SEEDS], b"");
    let own = plan_digest(&own.stderr);
    assert!(
        doc["members"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["planDigest"] != own.as_str())
    );
    let valid = flysim(&["validate", SEEDS, "--master-seed", "5"], b"");
    assert_eq!(valid.status, 0, "{}", valid.stderr);
    // One spelling only.
    let refused = flysim(&["plan", SEEDS, "--master-seed", "05"], b"");
    assert_eq!(refused.status, 2, "{}", refused.stderr);
}

#[test]
fn plan_sweep_of_a_composition_without_one_is_refused() {
    let run = flysim(&["plan", "compositions/synthetic.kdl", "--sweep"], b"");
    assert_eq!(run.status, 1);
    assert!(run.stderr.contains("FS0935"), "{}", run.stderr);
    assert!(root().join(GRID).is_file());
}

/// The sweep directory `sweep run` reports on its first stdout line.
fn sweep_dir(stdout: &str) -> PathBuf {
    let rest = stdout
        .strip_prefix("sweep ")
        .unwrap_or_else(|| panic!("{stdout}"));
    PathBuf::from(rest.split(": ").next().unwrap())
}

/// `ran N, already complete M` of a `sweep run`'s stdout.
fn ran_and_skipped(stdout: &str) -> (usize, usize) {
    let number = |after: &str| -> usize {
        let at = stdout.find(after).unwrap_or_else(|| panic!("{stdout}")) + after.len();
        stdout[at..]
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    (number("ran "), number("already complete "))
}

/// Every manifest under a sweep directory, with its modification time.
fn manifests(dir: &Path) -> Vec<(PathBuf, std::time::SystemTime)> {
    let mut found = Vec::new();
    for member in std::fs::read_dir(dir.join("members")).unwrap() {
        let runs = member.unwrap().path().join("runs");
        for run in std::fs::read_dir(&runs).into_iter().flatten() {
            let path = run.unwrap().path().join("manifest.json");
            if let Ok(meta) = std::fs::metadata(&path) {
                found.push((path, meta.modified().unwrap()));
            }
        }
    }
    found.sort();
    found
}

/// The `runDigest` of `flysim run --json` of `file` with `--master-seed seed`.
fn run_digest_alone(file: &str, seed: &str, state: &Path) -> String {
    let run = flysim(
        &[
            "run",
            file,
            "--master-seed",
            seed,
            "--json",
            "--state-dir",
            state.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    doc["runDigest"].as_str().unwrap().to_owned()
}

/// The table of a collected sweep directory.
fn table(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("table.json")).unwrap()).unwrap()
}

#[test]
fn sweep_run_runs_each_member_once_and_a_rerun_runs_only_the_unfinished() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().to_str().unwrap();
    let first = flysim(
        &["sweep", "run", GRID, "--jobs", "2", "--state-dir", state],
        b"",
    );
    assert_eq!(first.status, 0, "{}", first.stderr);
    assert_eq!(ran_and_skipped(&first.stdout), (6, 0));
    // One line per member finished, on stderr.
    let lines: Vec<&str> = first
        .stderr
        .lines()
        .filter(|l| l.contains("] member "))
        .collect();
    assert_eq!(lines.len(), 6, "{}", first.stderr);
    assert!(
        lines.iter().all(|l| l.contains(" complete: 200 steps")),
        "{}",
        first.stderr
    );
    let dir = sweep_dir(&first.stdout);
    assert!(dir.starts_with(tmp.path().join("sweeps")));
    assert!(dir.join("sweep.json").is_file() && dir.join("members/0005/plan.json").is_file());
    let before = manifests(&dir);
    assert_eq!(before.len(), 6);

    // A member that never ran (its runs removed) is the only one a rerun runs.
    std::fs::remove_dir_all(dir.join("members/0004/runs")).unwrap();
    let again = flysim(
        &["sweep", "run", GRID, "--jobs", "2", "--state-dir", state],
        b"",
    );
    assert_eq!(again.status, 0, "{}", again.stderr);
    assert_eq!(ran_and_skipped(&again.stdout), (1, 5));
    assert_eq!(sweep_dir(&again.stdout), dir);
    let after = manifests(&dir);
    let kept: Vec<_> = before
        .iter()
        .filter(|(p, _)| !p.starts_with(dir.join("members/0004")))
        .collect();
    assert_eq!(kept.len(), 5);
    for entry in kept {
        assert!(
            after.contains(entry),
            "{} was written again",
            entry.0.display()
        );
    }
    assert_eq!(after.len(), 6);
}

#[test]
fn a_member_runs_to_the_digest_of_the_same_seed_run_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    let run = flysim(
        &[
            "sweep",
            "run",
            SEEDS,
            "--jobs",
            "2",
            "--dir",
            dir.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    let collected = flysim(&["sweep", "collect", dir.to_str().unwrap()], b"");
    assert_eq!(collected.status, 0, "{}", collected.stderr);
    let table = table(&dir);
    let members = table["members"].as_array().unwrap();
    assert_eq!(members.len(), 6);
    for index in [0usize, 2, 5] {
        let alone = run_digest_alone(SEEDS, &index.to_string(), &tmp.path().join("alone"));
        assert_eq!(
            members[index]["runDigest"],
            alone.as_str(),
            "member {index}"
        );
        assert_eq!(members[index]["status"], "complete");
        assert_eq!(members[index]["steps"], 600);
    }
    // The CSV has the header and one line per member; the plot is a PNG.
    let csv = std::fs::read_to_string(dir.join("table.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "index,master-seed,planDigest,runDigest,steps,score:fly-a,score:fly-b,status,wallTimeS"
    );
    assert_eq!(lines.count(), 6);
    let png = std::fs::read(dir.join("scores.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
}

#[test]
fn a_killed_sweep_restarted_runs_only_the_members_that_had_not_completed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    let dir_arg = dir.to_str().unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_flysim"))
        .args(["sweep", "run", SEEDS, "--jobs", "1", "--dir", dir_arg])
        .current_dir(root())
        .env_clear()
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until at least one member completed, then interrupt.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while manifests_complete(&dir) == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let pid = i32::try_from(child.id()).unwrap();
    #[expect(unsafe_code, reason = "sending SIGINT to the child (FFI)")]
    // SAFETY: kill(2) on the pid of a child this test spawned and has not reaped.
    unsafe {
        libc::kill(pid, libc::SIGINT);
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let complete = manifests_complete(&dir);
    let (ran, _) = ran_and_skipped(&stdout);
    assert!(complete >= 1 && ran == complete, "{stdout}");
    if complete < 6 {
        assert_eq!(out.status.code(), Some(130), "{stdout}");
    }
    let again = flysim(
        &["sweep", "run", SEEDS, "--jobs", "1", "--dir", dir_arg],
        b"",
    );
    assert_eq!(again.status, 0, "{}", again.stderr);
    assert_eq!(ran_and_skipped(&again.stdout), (6 - complete, complete));
    assert_eq!(manifests_complete(&dir), 6);
}

/// How many members of a sweep directory have a complete run.
fn manifests_complete(dir: &Path) -> usize {
    let Ok(members) = std::fs::read_dir(dir.join("members")) else {
        return 0;
    };
    members
        .filter(|m| {
            let runs = m.as_ref().unwrap().path().join("runs");
            std::fs::read_dir(runs).into_iter().flatten().any(|r| {
                std::fs::read_to_string(r.unwrap().path().join("manifest.json"))
                    .is_ok_and(|t| t.contains("\"status\":\"complete\""))
            })
        })
        .count()
}

#[test]
fn collect_refuses_a_member_whose_plan_is_not_the_declared_one() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    let dir_arg = dir.to_str().unwrap();
    let run = flysim(
        &["sweep", "run", GRID, "--jobs", "2", "--dir", dir_arg],
        b"",
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    // Member 0's plan replaced by member 1's.
    std::fs::copy(
        dir.join("members/0001/plan.json"),
        dir.join("members/0000/plan.json"),
    )
    .unwrap();
    let refused = flysim(&["sweep", "collect", dir_arg], b"");
    assert_eq!(refused.status, 7, "{}", refused.stderr);
    assert_eq!(
        crate::codes_in(&refused.stderr),
        ["FS0936"],
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.contains("member 0"), "{}", refused.stderr);
    // Not a sweep directory at all.
    let not = flysim(&["sweep", "collect", tmp.path().to_str().unwrap()], b"");
    assert_eq!(crate::codes_in(&not.stderr), ["FS0937"], "{}", not.stderr);
}

#[test]
fn collect_lists_missing_and_unfinished_members_and_member_refuses_an_unknown_index() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    let dir_arg = dir.to_str().unwrap();
    let run = flysim(
        &["sweep", "run", GRID, "--jobs", "2", "--dir", dir_arg],
        b"",
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    std::fs::remove_dir_all(dir.join("members/0003/runs")).unwrap();
    let collected = flysim(&["sweep", "collect", dir_arg], b"");
    assert_eq!(collected.status, 6, "{}", collected.stderr);
    assert!(
        collected.stdout.contains("5 of 6 members complete"),
        "{}",
        collected.stdout
    );
    assert!(
        collected.stderr.contains("missing: member(s) 3"),
        "{}",
        collected.stderr
    );
    let table = table(&dir);
    assert_eq!(table["members"][3]["status"], "missing");
    assert_eq!(table["members"][3]["runDigest"], serde_json::Value::Null);
    // The missing member, run alone, completes the table.
    let member = flysim(&["sweep", "member", dir_arg, "3"], b"");
    assert_eq!(member.status, 0, "{}", member.stderr);
    assert!(
        member.stdout.starts_with("member 3 complete: 200 steps"),
        "{}",
        member.stdout
    );
    let again = flysim(&["sweep", "member", dir_arg, "3"], b"");
    assert_eq!(again.stdout, "member 3 already complete\n");
    assert_eq!(flysim(&["sweep", "collect", dir_arg], b"").status, 0);
    let none = flysim(&["sweep", "member", dir_arg, "6"], b"");
    assert_eq!(none.status, 1);
    assert_eq!(crate::codes_in(&none.stderr), ["FS0938"], "{}", none.stderr);
}

#[test]
fn sweep_slurm_writes_an_array_script_whose_tasks_run_the_members() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("shared/sweep");
    let dir_arg = dir.to_str().unwrap();
    let bin = env!("CARGO_BIN_EXE_flysim");
    let written = flysim(
        &["sweep", "slurm", SEEDS, "--out", dir_arg, "--flysim", bin],
        b"",
    );
    assert_eq!(written.status, 0, "{}", written.stderr);
    assert!(written.stdout.contains("6 members"), "{}", written.stdout);
    let dir = dir.canonicalize().unwrap();
    let script = std::fs::read_to_string(dir.join("sweep.sbatch")).unwrap();
    assert!(script.starts_with("#!/bin/bash\n"), "{script}");
    for line in [
        "#SBATCH --array=0-5",
        "#SBATCH --cpus-per-task=2",
        "#SBATCH --job-name=flysim-seeds",
        &format!("#SBATCH --output={}/slurm/%A_%a.out", dir.display()),
        &format!(
            "exec '{bin}' sweep member '{}' \"$SLURM_ARRAY_TASK_ID\"",
            dir.display()
        ),
    ] {
        assert!(
            script.lines().any(|l| l == line),
            "no line {line:?} in\n{script}"
        );
    }
    // Each array task as Slurm would start it: the script with its task id.
    for task in 0..6 {
        let out = std::process::Command::new("bash")
            .arg(dir.join("sweep.sbatch"))
            .env_clear()
            .env("SLURM_ARRAY_TASK_ID", task.to_string())
            .current_dir(tmp.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let collected = flysim(&["sweep", "collect", dir.to_str().unwrap()], b"");
    assert_eq!(collected.status, 0, "{}", collected.stderr);
    // The same members run locally have the same run digests.
    let local = tmp.path().join("local");
    let run = flysim(
        &[
            "sweep",
            "run",
            SEEDS,
            "--jobs",
            "2",
            "--dir",
            local.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert_eq!(
        flysim(&["sweep", "collect", local.to_str().unwrap()], b"").status,
        0
    );
    let (a, b) = (table(&dir), table(&local));
    assert_eq!(a["sweepDigest"], b["sweepDigest"]);
    for (x, y) in a["members"]
        .as_array()
        .unwrap()
        .iter()
        .zip(b["members"].as_array().unwrap())
    {
        assert_eq!(x["runDigest"], y["runDigest"]);
        assert_eq!(x["status"], "complete");
    }
}

#[test]
fn a_sweep_directory_of_another_sweep_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    let dir_arg = dir.to_str().unwrap();
    let bin = env!("CARGO_BIN_EXE_flysim");
    let first = flysim(
        &["sweep", "slurm", GRID, "--out", dir_arg, "--flysim", bin],
        b"",
    );
    assert_eq!(first.status, 0, "{}", first.stderr);
    // The same sweep again keeps the directory; another is refused, and nothing is written.
    let again = flysim(
        &["sweep", "slurm", GRID, "--out", dir_arg, "--flysim", bin],
        b"",
    );
    assert_eq!(again.status, 0, "{}", again.stderr);
    let index = std::fs::read(dir.join("sweep.json")).unwrap();
    let other = flysim(&["sweep", "run", SEEDS, "--dir", dir_arg], b"");
    assert_eq!(other.status, 1, "{}", other.stderr);
    assert_eq!(
        crate::codes_in(&other.stderr),
        ["FS0937"],
        "{}",
        other.stderr
    );
    assert_eq!(std::fs::read(dir.join("sweep.json")).unwrap(), index);
    assert!(!dir.join("members/0000/runs").exists());
}
