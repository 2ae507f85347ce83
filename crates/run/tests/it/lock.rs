//! One writer per run directory, through the run library: of two resumes of one run at once
//! exactly one proceeds, and a resume while the run goes on is refused; each refusal names the
//! holder's pid and leaves the directory as it was.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::Duration;

use flysim_run::{ContentSource, Execution, Progress, Quiet, RunError, RunReport};
use flysim_store::StoreError;

use crate::{SYNTHETIC_RUN, composition, host, plan};

/// How long a test waits for a run to reach a point before it gives up.
const PATIENCE: Duration = Duration::from_secs(300);

/// Progress that stops its run once it commits `at` (or later): it says so, then waits to be let
/// go. The run holds its directory all the while.
struct Gate {
    at: u64,
    reached: Sender<()>,
    go: Receiver<()>,
    waited: bool,
}

impl Progress for Gate {
    fn committed(&mut self, boundary: u64, _total: u64) {
        if !self.waited && boundary >= self.at {
            self.waited = true;
            self.reached.send(()).unwrap();
            self.go.recv_timeout(PATIENCE).unwrap();
        }
    }
}

/// A gate at `at`, with the ends the test keeps: told when it is reached, and the release.
fn gate(at: u64) -> (Gate, Receiver<()>, Sender<()>) {
    let (reached, told) = channel();
    let (release, go) = channel();
    let gate = Gate {
        at,
        reached,
        go,
        waited: false,
    };
    (gate, told, release)
}

/// What a refused writer must leave as it was: the trace, the manifest, the generations.
fn files(dir: &Path) -> Vec<Vec<u8>> {
    [
        "trace.ndjson",
        "manifest.json",
        "checkpoints/generations.json",
    ]
    .iter()
    .map(|name| std::fs::read(dir.join(name)).unwrap_or_default())
    .collect()
}

/// The refusal of a second writer, which must name this process (the holder runs in it).
fn refusal_naming_this_process(refused: Result<RunReport, RunError>) -> StoreError {
    let pid = std::process::id();
    match refused {
        Err(RunError::Store(e @ StoreError::Locked { .. })) => {
            assert!(
                matches!(e, StoreError::Locked { pid: Some(p), .. } if p == pid),
                "{e}"
            );
            assert!(e.to_string().contains(&format!("process {pid}")), "{e}");
            e
        }
        other => panic!("a second writer must be refused as locked: {other:?}"),
    }
}

fn resume(
    dir: &Path,
    steps: u64,
    scratch: &Path,
    progress: &mut dyn Progress,
) -> Result<RunReport, RunError> {
    flysim_run::resume(
        dir,
        Some(steps),
        None,
        &Execution::default(),
        &host(scratch),
        progress,
    )
}

#[test]
fn of_two_resumes_of_one_run_one_proceeds_and_the_other_changes_nothing() {
    let scratch = tempfile::tempdir().unwrap();
    let content = ContentSource::for_composition(&composition(), None);
    let stopped = flysim_run::run(
        &plan(),
        &content,
        &scratch.path().join("state"),
        Some(120),
        &Execution::default(),
        &host(scratch.path()),
        &mut Quiet,
    )
    .unwrap();
    let dir = stopped.run_dir.clone();
    let (mut gate, reached, release) = gate(0);
    let first = {
        let (dir, scratch) = (dir.clone(), scratch.path().to_owned());
        std::thread::spawn(move || resume(&dir, 480, &scratch, &mut gate))
    };
    // The first resume has cut the trace and committed its first row; it holds the directory.
    reached.recv_timeout(PATIENCE).unwrap();
    let before = files(&dir);
    let second = resume(&dir, 480, scratch.path(), &mut Quiet);
    assert_eq!(refusal_naming_this_process(second).code_str(), "FS0408");
    assert_eq!(
        files(&dir),
        before,
        "the refused resume changed the directory"
    );
    release.send(()).unwrap();
    let first = first.join().unwrap().unwrap();
    assert_eq!(first.steps, 600);
    assert_eq!(first.run_digest.hex(), SYNTHETIC_RUN);
    assert!(!dir.join(flysim_store::LOCK_FILE).exists());
    // Once it is over, the directory reads back whole.
    flysim_store::open_run(&dir).unwrap();
}

/// The only run directory under `state`, once there is one.
fn only_run_dir(state: &Path) -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(state.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1);
    dirs.remove(0)
}

#[test]
fn a_resume_while_the_run_goes_on_is_refused_naming_its_pid() {
    let scratch = tempfile::tempdir().unwrap();
    let state = scratch.path().join("state");
    // Stopped just after its first checkpoint (cadence 60), so a resume finds one to start from.
    let (mut gate, reached, release) = gate(61);
    let running = {
        let (state, scratch) = (state.clone(), scratch.path().to_owned());
        std::thread::spawn(move || {
            let content = ContentSource::for_composition(&composition(), None);
            flysim_run::run(
                &plan(),
                &content,
                &state,
                None,
                &Execution::default(),
                &host(&scratch),
                &mut gate,
            )
        })
    };
    reached.recv_timeout(PATIENCE).unwrap();
    let dir = only_run_dir(&state);
    // The checkpoint of boundary 60 is written beside the run; wait until it is durable.
    let mut waited = Duration::ZERO;
    while flysim_run::checkpoints(&dir).is_err() {
        assert!(
            waited < PATIENCE,
            "the first checkpoint never became durable"
        );
        std::thread::sleep(Duration::from_millis(10));
        waited += Duration::from_millis(10);
    }
    let before = files(&dir);
    let refused = resume(&dir, 10, scratch.path(), &mut Quiet);
    assert_eq!(refusal_naming_this_process(refused).code_str(), "FS0408");
    assert_eq!(
        files(&dir),
        before,
        "the refused resume changed the directory"
    );
    release.send(()).unwrap();
    let report = running.join().unwrap().unwrap();
    assert_eq!(report.steps, 600);
    assert_eq!(report.run_digest.hex(), SYNTHETIC_RUN);
}
