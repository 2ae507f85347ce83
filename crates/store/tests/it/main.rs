//! Run directories: written, read back, and refused when damaged.

mod generations;
mod lock;

use std::path::Path;

use flysim_store::{RunStore, open_run};
use flysim_types::plan::LaunchPlan;
use flysim_types::trace::{RunManifest, TransitionTrace};

fn fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/runs/synthetic-3")
}

fn copy_fixture(to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for name in ["plan.json", "trace.ndjson", "manifest.json"] {
        std::fs::copy(fixture().join(name), to.join(name)).unwrap();
    }
}

#[test]
fn the_fixture_run_reads_back_with_its_digest() {
    let record = open_run(&fixture()).unwrap();
    assert_eq!(record.rows.len(), 4);
    assert_eq!(record.manifest.steps.get(), 3);
}

#[test]
fn a_damaged_trace_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    copy_fixture(&dir);
    let trace = std::fs::read_to_string(dir.join("trace.ndjson")).unwrap();
    // Another tick in row 2: a behaviour change with a valid row.
    let damaged = trace.replacen("\"ticksAdvanced\":\"17\"", "\"ticksAdvanced\":\"18\"", 1);
    assert_ne!(damaged, trace);
    std::fs::write(dir.join("trace.ndjson"), damaged).unwrap();
    let e = open_run(&dir).unwrap_err();
    assert_eq!(e.code_str(), "FS0403", "{e}");
    // An operational field may change without damage: it is not hashed.
    copy_fixture(&dir);
    let operational = trace.replacen("\"sessionId\":\"", "\"sessionId\":\"x", 1);
    std::fs::write(dir.join("trace.ndjson"), operational).unwrap();
    open_run(&dir).unwrap();
}

#[test]
fn a_directory_without_a_plan_is_unreadable() {
    let tmp = tempfile::tempdir().unwrap();
    let e = open_run(tmp.path()).unwrap_err();
    assert_eq!(e.code_str(), "FS0402", "{e}");
}

#[test]
fn writing_a_run_reproduces_the_fixture_files_and_ids_count_up() {
    let record = open_run(&fixture()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let store = RunStore::at(tmp.path());
    let plan: LaunchPlan = record.plan.clone();
    let mut first = store.create(&plan).unwrap();
    for row in &record.rows {
        first.append(row).unwrap();
    }
    let manifest: RunManifest = record.manifest.clone();
    first.write_manifest(&manifest).unwrap();
    for name in ["plan.json", "trace.ndjson", "manifest.json"] {
        assert_eq!(
            std::fs::read(first.dir().join(name)).unwrap(),
            std::fs::read(fixture().join(name)).unwrap(),
            "{name}"
        );
    }
    // Each line is the row's own canonical JSON (the writer composes it from its parts).
    let written = std::fs::read_to_string(first.dir().join("trace.ndjson")).unwrap();
    for (line, row) in written.lines().zip(&record.rows) {
        assert_eq!(line, flysim_types::payload::to_canonical(row).unwrap());
    }
    assert_eq!(written.lines().count(), record.rows.len());
    let second = store.create(&plan).unwrap();
    assert!(first.run_id().as_str().ends_with("-1"));
    assert!(second.run_id().as_str().ends_with("-2"));
    // A manifest naming other rows is refused before it is written.
    let mut third = store.create(&plan).unwrap();
    let row: &TransitionTrace = &record.rows[0];
    third.append(row).unwrap();
    assert_eq!(
        third.write_manifest(&manifest).unwrap_err().code_str(),
        "FS0403"
    );
    // Rows whose text the committer wrote (what `flysim run` appends) give the same file and
    // run digest.
    let mut by_text = store.create(&plan).unwrap();
    for row in &record.rows {
        by_text.append_text(row.text().unwrap()).unwrap();
    }
    by_text.write_manifest(&manifest).unwrap();
    assert_eq!(by_text.run_digest(), first.run_digest());
    assert_eq!(by_text.run_digest(), record.manifest.run_digest);
    assert_eq!(
        std::fs::read(by_text.dir().join("trace.ndjson")).unwrap(),
        std::fs::read(fixture().join("trace.ndjson")).unwrap()
    );
}
