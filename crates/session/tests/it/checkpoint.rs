//! Checkpoints through the session: capture every participant at one boundary, restore on
//! fresh workers, and the group rules (one refusal at staging installs nothing; a failure
//! during activation fences the session).

use flysim_session::{ResumeFrom, RunHooks, RunSink, SessionError, run_plan_into};
use flysim_types::Id;
use flysim_types::trace::TransitionTrace;
use flysim_types::workers::Method;

use crate::{Setup, point, synthetic};

/// Collects rows and checkpoints.
#[derive(Default)]
pub(crate) struct Collect {
    pub(crate) rows: Vec<TransitionTrace>,
    pub(crate) checkpoints: Vec<(u64, Id, Vec<u8>)>,
}

impl RunSink for Collect {
    fn row(&mut self, row: &TransitionTrace) -> Result<(), SessionError> {
        self.rows.push(row.clone());
        Ok(())
    }

    fn checkpoint(&mut self, boundary: u64, id: Id, envelope: Vec<u8>) -> Result<(), SessionError> {
        self.checkpoints.push((boundary, id, envelope));
        Ok(())
    }
}

/// Runs the synthetic plan to `steps` with a cadence, optionally resumed from `from`.
fn run(
    setup: &Setup,
    every: u64,
    from: Option<ResumeFrom>,
) -> (Result<u64, SessionError>, Collect) {
    let mut options = setup.options();
    options.checkpoint_every = Some(every);
    options.resume = from;
    let mut sink = Collect::default();
    let result = run_plan_into(
        &synthetic(),
        &options,
        &setup.registry,
        RunHooks::default(),
        &mut sink,
    )
    .map(|o| o.steps)
    .map_err(|f| *f.error);
    (result, sink)
}

fn behaviour(rows: &[TransitionTrace]) -> Vec<String> {
    rows.iter()
        .map(|r| serde_json::to_string(&r.behaviour).unwrap())
        .collect()
}

#[test]
fn checkpoints_come_at_the_cadence_and_where_the_run_stops() {
    let (result, sink) = run(&Setup::new(50), 20, None);
    assert_eq!(result.unwrap(), 50);
    let at: Vec<u64> = sink.checkpoints.iter().map(|c| c.0).collect();
    assert_eq!(at, [20, 40, 50]);
    // Every envelope names its boundary and carries every participant.
    for (k, id, bytes) in &sink.checkpoints {
        let envelope = flysim_types::checkpoint::decode(bytes).unwrap();
        assert_eq!(envelope.manifest["checkpointId"], id.as_str());
        assert_eq!(envelope.manifest["sourceScope"]["step"], k.to_string());
        let names: Vec<&str> = envelope.payloads.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "world",
                "agent-fly-a",
                "agent-fly-b",
                "task-ledger",
                "prior-inspection"
            ]
        );
    }
}

#[test]
fn a_restored_session_continues_exactly_in_every_mode() {
    use flysim_types::plan::{RunMode, Transport};
    let (whole, reference) = run(&Setup::new(70), 30, None);
    assert_eq!(whole.unwrap(), 70);
    let (k, _, envelope) = reference.checkpoints[0].clone();
    assert_eq!(k, 30);
    for (mode, transport) in [
        (RunMode::InProcess, Transport::Memory),
        (RunMode::Thread, Transport::Memory),
        (RunMode::Thread, Transport::Unix),
    ] {
        let mut setup = Setup::new(70);
        setup.mode = mode;
        setup.transport = transport;
        let from = ResumeFrom {
            envelope: envelope.clone(),
            prior: reference.rows[..=30]
                .iter()
                .map(|r| r.behaviour.clone())
                .collect(),
        };
        let (result, resumed) = run(&setup, 30, Some(from));
        assert_eq!(result.unwrap(), 70, "{mode:?}");
        // The rows after the checkpoint are the uninterrupted run's, under a new epoch.
        assert_eq!(
            behaviour(&resumed.rows),
            behaviour(&reference.rows[31..]),
            "{mode:?}"
        );
        assert!(
            resumed
                .rows
                .iter()
                .all(|r| r.operational.epoch.as_str() == "epoch-2")
        );
        // And the checkpoints it takes are the uninterrupted run's, byte for byte in payloads.
        let theirs = flysim_types::checkpoint::decode(&reference.checkpoints[1].2).unwrap();
        let ours = flysim_types::checkpoint::decode(&resumed.checkpoints[0].2).unwrap();
        assert_eq!(ours.payloads, theirs.payloads, "{mode:?}");
    }
}

fn resume_with(setup: Setup) -> (Result<u64, SessionError>, Collect) {
    let (_, reference) = run(&Setup::new(20), 10, None);
    let (_, _, envelope) = reference.checkpoints[0].clone();
    let from = ResumeFrom {
        envelope,
        prior: reference.rows[..=10]
            .iter()
            .map(|r| r.behaviour.clone())
            .collect(),
    };
    run(&setup, 10, Some(from))
}

#[test]
fn one_refusal_at_staging_refuses_the_group_and_nothing_plays() {
    let setup = Setup::new(20).fault("fly-b", |f| {
        f.fail = Some(point(Method::StateStageRestore, 10))
    });
    let (result, sink) = resume_with(setup);
    let e = result.unwrap_err();
    assert_eq!(e.code_str(), "FS0312", "{e}");
    assert!(e.to_string().contains("fly-b"), "{e}");
    assert!(sink.rows.is_empty() && sink.checkpoints.is_empty());
}

#[test]
fn a_failed_activation_fences_the_session() {
    let setup = Setup::new(20).fault("fly-b", |f| {
        f.fail = Some(point(Method::StateActivateRestore, 10))
    });
    let (result, sink) = resume_with(setup);
    let e = result.unwrap_err();
    assert_eq!(e.code_str(), "FS0313", "{e}");
    assert!(
        e.to_string().contains("fly-b") && e.to_string().contains("fenced"),
        "{e}"
    );
    // Fenced: no step was played.
    assert!(sink.rows.is_empty());
}

#[test]
fn damaged_prior_rows_refuse_the_checkpoint() {
    let (_, reference) = run(&Setup::new(20), 10, None);
    let (_, _, envelope) = reference.checkpoints[0].clone();
    // The rows of another boundary do not fit the checkpoint.
    let from = ResumeFrom {
        envelope,
        prior: reference.rows[..=9]
            .iter()
            .map(|r| r.behaviour.clone())
            .collect(),
    };
    let (result, _) = run(&Setup::new(20), 10, Some(from));
    assert_eq!(result.unwrap_err().code_str(), "FS0312");
}
