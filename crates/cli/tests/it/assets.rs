//! `flysim assets`: removing an entry, an empty registry, a damaged entry met by `add`, and
//! special files (a FIFO, a device, a directory) refused at once by `add` and `verify`.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::{Run, codes_in, root};

/// Runs `flysim` in the workspace root with the registry under `home`, killing it and failing
/// the test when it has not finished after 30 s (a read of a FIFO would block forever).
fn assets(home: &Path, args: &[&str]) -> Run {
    let limit = Duration::from_secs(30);
    let child = Command::new(env!("CARGO_BIN_EXE_flysim"))
        .args(args)
        .env_clear()
        .env("FLYSIM_HOME", home)
        .current_dir(root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let mut child = child;
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            child.kill().unwrap();
            let _ = child.wait();
            panic!("flysim {args:?} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    Run {
        status: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Makes a FIFO at `path`.
fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo {path:?}");
}

/// Makes a special file where a registry entry should be.
type MakeEntry = dyn Fn(&Path);

const ROM: &str = "fixtures/roms/fly-arena.gb";
const ROM_SHA256: &str = "cff175286819fb0e132b15e82dfcc995599e9d365c28b4f7aaf24dac0e5c1721";

#[test]
fn an_empty_registry_says_so_and_names_its_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let list = assets(tmp.path(), &["assets", "list"]);
    assert_eq!(list.status, 0, "{}", list.stderr);
    assert_eq!(
        list.stdout,
        format!(
            "the asset registry {} is empty\n",
            tmp.path().join("assets").display()
        )
    );
}

#[test]
fn assets_remove_takes_the_entry_and_its_file_away_for_good() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    for id in ["arena-rom", "same-rom"] {
        let add = assets(home, &["assets", "add", ROM, "--id", id]);
        assert_eq!(add.status, 0, "{}", add.stderr);
    }
    let blob = home.join("assets/blobs/sha256").join(ROM_SHA256);
    // Another id names the same bytes: the stored file stays.
    let first = assets(home, &["assets", "remove", "arena-rom"]);
    assert_eq!(first.status, 0, "{}", first.stderr);
    assert_eq!(
        first.stdout,
        format!(
            "removed: arena-rom  sha256:{ROM_SHA256} (its stored file stays: another id names it)\n"
        )
    );
    assert!(blob.is_file());
    let second = assets(home, &["assets", "remove", "same-rom"]);
    assert_eq!(second.status, 0, "{}", second.stderr);
    assert_eq!(
        second.stdout,
        format!("removed: same-rom  sha256:{ROM_SHA256}  32768 bytes  gb (and its stored file)\n")
    );
    assert!(!blob.exists(), "the last id's blob is removed");
    assert!(!home.join("assets/ids/same-rom.json").exists());
    let list = assets(home, &["assets", "list"]);
    assert!(list.stdout.contains("is empty"), "{}", list.stdout);
    let verify = assets(home, &["assets", "verify"]);
    assert_eq!(verify.status, 0, "{}", verify.stderr);
    // Nothing is left half-written.
    let tmp_dir = home.join("assets/tmp");
    assert_eq!(std::fs::read_dir(&tmp_dir).map_or(0, Iterator::count), 0);
}

#[test]
fn assets_remove_names_an_unknown_id_and_its_nearest() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let add = assets(home, &["assets", "add", ROM, "--id", "arena-rom"]);
    assert_eq!(add.status, 0, "{}", add.stderr);
    let typo = assets(home, &["assets", "remove", "arena-romm"]);
    assert_eq!(typo.status, 1, "{}", typo.stderr);
    assert_eq!(codes_in(&typo.stderr), ["FS0256"]);
    assert!(
        typo.stderr.contains(&format!(
            "the asset registry {} has no asset `arena-romm`",
            home.join("assets").display()
        )),
        "{}",
        typo.stderr
    );
    assert!(
        typo.stderr.contains("did you mean `arena-rom`?"),
        "{}",
        typo.stderr
    );
    assert!(
        typo.stderr.contains("`flysim assets list`"),
        "{}",
        typo.stderr
    );
    // The refusal changed nothing.
    assert!(home.join("assets/ids/arena-rom.json").is_file());
}

#[test]
fn adding_over_a_damaged_entry_says_it_is_damaged_and_how_to_replace_it() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let add = assets(home, &["assets", "add", ROM, "--id", "arena-rom"]);
    assert_eq!(add.status, 0, "{}", add.stderr);
    let blob = home.join("assets/blobs/sha256").join(ROM_SHA256);
    let mut bytes = std::fs::read(&blob).unwrap();
    bytes[100] ^= 0xff;
    std::fs::write(&blob, &bytes).unwrap();
    let again = assets(home, &["assets", "add", ROM, "--id", "arena-rom"]);
    assert_eq!(again.status, 1, "{}", again.stderr);
    assert!(
        !again.stdout.contains("already present"),
        "{}",
        again.stdout
    );
    assert_eq!(codes_in(&again.stderr), ["FS0253"]);
    assert!(
        again.stderr.contains("the entry is damaged"),
        "{}",
        again.stderr
    );
    assert!(
        again.stderr.contains("`flysim assets remove ID`"),
        "{}",
        again.stderr
    );
    // The help's command exists and does it: remove, add again, and the registry is sound.
    let remove = assets(home, &["assets", "remove", "arena-rom"]);
    assert_eq!(remove.status, 0, "{}", remove.stderr);
    assert!(remove.stdout.contains("(and its stored file)"));
    let fresh = assets(home, &["assets", "add", ROM, "--id", "arena-rom"]);
    assert_eq!(fresh.status, 0, "{}", fresh.stderr);
    assert!(
        fresh.stdout.starts_with("added: arena-rom"),
        "{}",
        fresh.stdout
    );
    let verify = assets(home, &["assets", "verify"]);
    assert_eq!(verify.status, 0, "{}", verify.stderr);
}

#[test]
fn a_damaged_record_can_be_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let add = assets(home, &["assets", "add", ROM, "--id", "arena-rom"]);
    assert_eq!(add.status, 0, "{}", add.stderr);
    std::fs::write(home.join("assets/ids/arena-rom.json"), b"{not json").unwrap();
    let list = assets(home, &["assets", "list"]);
    assert_eq!(codes_in(&list.stderr), ["FS0253"]);
    assert!(list.stderr.contains("`flysim assets remove ID`"));
    let remove = assets(home, &["assets", "remove", "arena-rom"]);
    assert_eq!(remove.status, 0, "{}", remove.stderr);
    assert_eq!(
        remove.stdout,
        "removed: arena-rom (its record was damaged)\n"
    );
    assert!(
        assets(home, &["assets", "list"])
            .stdout
            .contains("is empty")
    );
}

#[test]
fn assets_add_refuses_a_fifo_a_device_and_a_directory_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("pipe.gb");
    mkfifo(&fifo);
    let cases = [
        (fifo.to_str().unwrap(), "it is a FIFO"),
        ("/dev/zero", "it is a device"),
        ("fixtures", "it is a directory"),
    ];
    for (path, kind) in cases {
        let run = assets(tmp.path(), &["assets", "add", path, "--id", "x"]);
        assert_eq!(run.status, 3, "{path}: {}", run.stderr);
        assert_eq!(codes_in(&run.stderr), ["FS0228"], "{path}: {}", run.stderr);
        assert!(run.stderr.contains(kind), "{path}: {}", run.stderr);
        assert!(
            !tmp.path().join("assets/ids/x.json").exists(),
            "{path}: nothing is added"
        );
    }
}

#[test]
fn assets_verify_refuses_a_fifo_a_device_and_a_directory_in_the_registry_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let add = assets(home, &["assets", "add", ROM, "--id", "arena-rom"]);
    assert_eq!(add.status, 0, "{}", add.stderr);
    let blobs = home.join("assets/blobs/sha256");
    let blob = blobs.join(ROM_SHA256);
    let kinds: [(&str, &MakeEntry); 3] = [
        ("it is a FIFO", &|p| mkfifo(p)),
        ("it is a device", &|p| {
            std::os::unix::fs::symlink("/dev/zero", p).unwrap();
        }),
        ("it is a directory", &|p| std::fs::create_dir(p).unwrap()),
    ];
    for (kind, make) in kinds {
        let _ = std::fs::remove_file(&blob);
        let _ = std::fs::remove_dir(&blob);
        make(&blob);
        let run = assets(home, &["assets", "verify"]);
        assert_eq!(run.status, 5, "{kind}: {}", run.stderr);
        assert!(run.stderr.contains("FS0228"), "{kind}: {}", run.stderr);
        assert!(run.stderr.contains(kind), "{kind}: {}", run.stderr);
        // `add` of the same bytes meets the same entry and refuses it too, at once.
        let again = assets(home, &["assets", "add", ROM, "--id", "arena-rom"]);
        assert_ne!(again.status, 0, "{kind}: {}", again.stdout);
        assert!(again.stderr.contains(kind), "{kind}: {}", again.stderr);
    }
}
