//! One writer per run directory: a second writer is refused naming the holder's pid and changes
//! nothing; the lock goes with its holder. A durable write that fails leaves no temporary file.

use std::path::Path;

use flysim_store::{LOCK_FILE, RunLock, RunStore, RunWriter, StoreError, open_run, write_durably};

use crate::{copy_fixture, fixture};

/// The files of a run directory, by name, with their bytes.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (name, std::fs::read(e.path()).unwrap())
        })
        .collect();
    files.sort();
    files
}

fn refused_holder(e: &StoreError) -> Option<u32> {
    assert_eq!(e.code_str(), "FS0408", "{e}");
    match e {
        StoreError::Locked { pid, .. } => *pid,
        other => panic!("not a lock refusal: {other}"),
    }
}

#[test]
fn a_second_writer_is_refused_naming_the_holder_and_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    copy_fixture(&dir);
    let plan = open_run(&dir).unwrap().plan;
    let held = RunLock::acquire(&dir).unwrap();
    let before = files(&dir);
    // The lock file names this process.
    assert_eq!(
        std::fs::read_to_string(dir.join(LOCK_FILE)).unwrap(),
        format!("{}\n", std::process::id())
    );
    let e = RunLock::acquire(&dir).unwrap_err();
    assert_eq!(refused_holder(&e), Some(std::process::id()));
    assert!(
        e.to_string()
            .contains(&format!("process {}", std::process::id())),
        "{e}"
    );
    assert_eq!(files(&dir), before, "a refused writer changes nothing");
    // Once the holder lets go the file is gone and the next writer may resume (and cut).
    drop(held);
    assert!(!dir.join(LOCK_FILE).exists());
    let lock = RunLock::acquire(&dir).unwrap();
    let (mut writer, rows) =
        RunWriter::resume(open_run(&dir).unwrap().manifest.run_id, lock, &plan, 1).unwrap();
    assert_eq!(rows.len(), 2);
    writer.sync().unwrap();
    // While that writer lives, nobody else writes.
    let e = RunLock::acquire(&dir).unwrap_err();
    assert_eq!(refused_holder(&e), Some(std::process::id()));
    drop(writer);
    RunLock::acquire(&dir).unwrap();
}

#[test]
fn a_new_run_directory_is_held_by_its_writer_until_it_is_dropped() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = open_run(&fixture()).unwrap().plan;
    let writer = RunStore::at(tmp.path()).create(&plan).unwrap();
    let dir = writer.dir().to_owned();
    let e = RunLock::acquire(&dir).unwrap_err();
    assert_eq!(refused_holder(&e), Some(std::process::id()));
    drop(writer);
    assert!(!dir.join(LOCK_FILE).exists());
    drop(RunLock::acquire(&dir).unwrap());
}

#[test]
fn a_lock_left_by_a_killed_holder_is_taken_over() {
    let tmp = tempfile::tempdir().unwrap();
    // A lock file whose holder is gone (the kernel released its lock): it only names a pid.
    std::fs::write(tmp.path().join(LOCK_FILE), "4194303\n").unwrap();
    let lock = RunLock::acquire(tmp.path()).unwrap();
    assert_eq!(
        std::fs::read_to_string(tmp.path().join(LOCK_FILE)).unwrap(),
        format!("{}\n", std::process::id())
    );
    drop(lock);
}

/// The names in `dir` that are temporary files of a durable write.
fn temporaries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

#[test]
fn a_durable_write_that_fails_to_rename_leaves_no_temporary_file() {
    let tmp = tempfile::tempdir().unwrap();
    // The final name is a directory that is not empty: the rename fails after the write.
    std::fs::create_dir_all(tmp.path().join("manifest.json/in-the-way")).unwrap();
    let e = write_durably(&tmp.path().join("manifest.json"), b"{}\n").unwrap_err();
    assert_eq!(e.code_str(), "FS0401", "{e}");
    assert!(e.to_string().contains("cannot rename"), "{e}");
    assert_eq!(temporaries(tmp.path()), Vec::<String>::new());
}

#[test]
fn a_durable_write_to_a_full_disk_leaves_no_temporary_file() {
    if !Path::new("/dev/full").exists() {
        #[expect(clippy::print_stderr, reason = "the explicit skip message")]
        {
            eprintln!("skipped: this machine has no /dev/full to fail writes with");
        }
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // The temporary file's name leads to a device that is always full: every write of it fails
    // with ENOSPC, as on a full disk.
    std::os::unix::fs::symlink("/dev/full", tmp.path().join(".plan.json.tmp")).unwrap();
    let e = write_durably(&tmp.path().join("plan.json"), &[b'x'; 8192]).unwrap_err();
    assert_eq!(e.code_str(), "FS0401", "{e}");
    assert!(!tmp.path().join("plan.json").exists());
    assert_eq!(temporaries(tmp.path()), Vec::<String>::new());
    // The next write succeeds.
    write_durably(&tmp.path().join("plan.json"), b"{}\n").unwrap();
    assert_eq!(
        std::fs::read(tmp.path().join("plan.json")).unwrap(),
        b"{}\n"
    );
}
