//! The run library without the binary: a run of `compositions/synthetic.kdl` writes its run
//! directory with the golden run digest, a stopped run resumes from its checkpoint to the same
//! digest, a replay reproduces it, and a replay asked for another digest is refused.

mod lock;
mod publish;

use std::path::{Path, PathBuf};

use flysim_run::{ContentSource, Execution, Host, Quiet, RunError};
use flysim_types::Digest;
use flysim_types::plan::LaunchPlan;
use flysim_types::trace::RunStatus;

/// The golden run digest of `compositions/synthetic.kdl` (600 steps).
pub(crate) const SYNTHETIC_RUN: &str =
    "2fa0273c24e262c00a2d6c68470712892c5f257622fc97c5fe236e4817e05b5f";

pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub(crate) fn composition() -> PathBuf {
    root().join("compositions/synthetic.kdl")
}

pub(crate) fn plan() -> LaunchPlan {
    let path = composition();
    let bytes = std::fs::read(&path).unwrap();
    flysim_compose::plan(
        flysim_compose::Input {
            name: "synthetic.kdl",
            bytes: &bytes,
            dir: path.parent().unwrap(),
        },
        None,
        &flysim_run::components::SPECS,
    )
    .unwrap()
}

/// An in-process host: no worker program, no registry, a private runtime directory.
pub(crate) fn host(scratch: &Path) -> Host {
    Host {
        runtime_parent: scratch.to_owned(),
        local_lane: true,
        dolphin_scratch: scratch.to_owned(),
        ..Host::default()
    }
}

fn manifest(run_dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(run_dir.join("manifest.json")).unwrap()).unwrap()
}

#[test]
fn a_run_writes_its_directory_with_the_golden_digest_and_a_replay_reproduces_it() {
    let scratch = tempfile::tempdir().unwrap();
    let host = host(scratch.path());
    let content = ContentSource::for_composition(&composition(), None);
    let report = flysim_run::run(
        &plan(),
        &content,
        &scratch.path().join("state"),
        None,
        &Execution::default(),
        &host,
        &mut Quiet,
    )
    .unwrap();
    assert_eq!(report.steps, 600);
    assert_eq!(report.run_digest.hex(), SYNTHETIC_RUN);
    assert_eq!(report.paused, None);
    let written = manifest(&report.run_dir);
    assert_eq!(written["status"], "complete");
    assert_eq!(written["steps"], "600");

    let replayed = flysim_run::replay(&report.run_dir, None, &host).unwrap();
    assert_eq!(replayed.run_digest, report.run_digest);
    let other = Digest::from_bytes([7; 32]);
    match flysim_run::replay(&report.run_dir, Some(other), &host) {
        Err(RunError::DigestMismatch {
            expected, found, ..
        }) => {
            assert_eq!(expected, other);
            assert_eq!(found, report.run_digest);
        }
        outcome => panic!("a replay asked for another digest must be refused: {outcome:?}"),
    }
}

#[test]
fn a_run_stopped_at_120_resumes_from_its_checkpoint_to_the_uninterrupted_digest() {
    let scratch = tempfile::tempdir().unwrap();
    let host = host(scratch.path());
    let content = ContentSource::for_composition(&composition(), None);
    let stopped = flysim_run::run(
        &plan(),
        &content,
        &scratch.path().join("state"),
        Some(120),
        &Execution::default(),
        &host,
        &mut Quiet,
    )
    .unwrap();
    assert_eq!(stopped.steps, 120);
    assert_ne!(stopped.run_digest.hex(), SYNTHETIC_RUN);
    // Short of the plan's 600 steps: paused at its bound, never complete.
    assert_eq!(stopped.paused.as_deref(), Some("bound"));
    assert_eq!(manifest(&stopped.run_dir)["status"], "paused");
    let generations = flysim_run::checkpoints(&stopped.run_dir).unwrap();
    assert_eq!(generations[0].generation.boundary.get(), 120);
    assert!(generations.iter().all(|g| g.verified.is_ok()));

    let resumed = flysim_run::resume(
        &stopped.run_dir,
        Some(480),
        None,
        &Execution::default(),
        &host,
        &mut Quiet,
    )
    .unwrap();
    assert_eq!(resumed.steps, 600);
    assert_eq!(resumed.run_digest.hex(), SYNTHETIC_RUN);
    assert_eq!(manifest(&resumed.run_dir)["status"], "complete");
}

#[test]
fn a_resume_without_a_checkpoint_is_refused_and_changes_nothing() {
    let scratch = tempfile::tempdir().unwrap();
    let empty = scratch.path().join("not-a-run");
    std::fs::create_dir_all(&empty).unwrap();
    let refused = flysim_run::resume(
        &empty,
        None,
        None,
        &Execution::default(),
        &host(scratch.path()),
        &mut Quiet,
    );
    assert!(matches!(refused, Err(RunError::Store(_))), "{refused:?}");
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);
}

/// Progress that asks the run to stop once boundary `at` is committed.
struct StopAt {
    at: u64,
    stop: flysim_run::PauseHandle,
}

impl flysim_run::Progress for StopAt {
    fn committed(&mut self, boundary: u64, _total: u64) {
        if boundary >= self.at {
            self.stop.request();
        }
    }
}

#[test]
fn a_run_asked_to_stop_pauses_at_a_checkpointed_boundary_and_resumes_to_the_golden_digest() {
    let scratch = tempfile::tempdir().unwrap();
    let host = host(scratch.path());
    let content = ContentSource::for_composition(&composition(), None);
    let execution = Execution::default();
    let mut progress = StopAt {
        at: 70,
        stop: execution.stop.clone(),
    };
    let stopped = flysim_run::run(
        &plan(),
        &content,
        &scratch.path().join("state"),
        None,
        &execution,
        &host,
        &mut progress,
    )
    .unwrap();
    // Stopped at a committed boundary after the request, short of the plan: paused.
    assert!((70..600).contains(&stopped.steps), "{}", stopped.steps);
    assert_eq!(stopped.paused.as_deref(), Some("requested"));
    assert_eq!(stopped.plan_steps, 600);
    let written = manifest(&stopped.run_dir);
    let status: RunStatus = serde_json::from_value(written["status"].clone()).unwrap();
    assert_eq!(status, RunStatus::Paused);
    assert_eq!(written["steps"], stopped.steps.to_string());
    // With a checkpoint at exactly that boundary, durable and verified.
    assert_eq!(stopped.checkpoint, Some(stopped.steps));
    let generations = flysim_run::checkpoints(&stopped.run_dir).unwrap();
    assert_eq!(generations[0].generation.boundary.get(), stopped.steps);
    assert!(generations[0].verified.is_ok());
    // The resume (its default bound: the plan's end, which the run had not reached) reaches
    // the uninterrupted digest.
    let resumed = flysim_run::resume(
        &stopped.run_dir,
        None,
        None,
        &Execution::default(),
        &host,
        &mut Quiet,
    )
    .unwrap();
    assert_eq!(resumed.steps, 600);
    assert_eq!(resumed.run_digest.hex(), SYNTHETIC_RUN);
    assert_eq!(resumed.paused, None);
    assert_eq!(manifest(&resumed.run_dir)["status"], "complete");
}
