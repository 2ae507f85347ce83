//! One invocation that writes a run directory (a fresh run or a resume): a `running` manifest
//! first, so a killed run still names its bound; the steps; the checkpoints made durable; the
//! final manifest (`complete`, `paused` or `failed`, with what the trace holds).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use flysim_session::{
    PauseHandle, Registry, RunFailure as SessionRunFailure, RunOptions, RunOutcome, Stop,
    run_plan_into,
};
use flysim_store::generations::{CheckpointWriter, DEFAULT_QUEUE, DurableStatus, GenerationStore};
use flysim_store::{RunWriter, StoreError};
use flysim_types::plan::LaunchPlan;
use flysim_types::trace::{
    ExecutionRecord, MANIFEST_FORMAT_VERSION, RunFailure, RunManifest, RunStatus, RunTimings,
};
use flysim_types::{Digest, Id, U64};

use crate::error::RunError;
use crate::progress::Progress;
use crate::sink::{RunDirSink, Scores};

/// What a run or resume ended with.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    /// The run's id (its directory's name).
    pub run_id: Id,
    /// The plan's digest.
    pub plan_digest: Digest,
    /// The run digest over every row the trace holds.
    pub run_digest: Digest,
    /// The boundary the run reached.
    pub steps: u64,
    /// The run directory.
    pub run_dir: PathBuf,
    /// Why the run stopped before its plan's end, if it did: `bound` (the invocation's step
    /// bound), `requested` (asked to stop) or `terminal:<reason>` (a terminal episode).
    pub paused: Option<String>,
    /// The plan's `steps`.
    pub plan_steps: u64,
    /// The boundary of the newest checkpoint this invocation made durable, if any.
    pub checkpoint: Option<u64>,
    /// The generations a resume from an older one discarded (their numbers, oldest first).
    pub discarded: Vec<u64>,
    /// Each agent's score, in plan order: the sum of its rewards over every row the trace
    /// holds (a resume's kept rows too), summed in row order.
    pub scores: Vec<(Id, f64)>,
    /// The invocation's wall time, as the final manifest records it (nanoseconds).
    pub wall_time_ns: u64,
}

/// One invocation of a plan into a run directory.
pub(crate) struct Invocation<'a> {
    pub(crate) plan: &'a LaunchPlan,
    pub(crate) options: RunOptions,
    pub(crate) registry: Registry,
    pub(crate) writer: RunWriter,
    /// The boundary this invocation runs to, as the manifest records it.
    pub(crate) steps_bound: Option<U64>,
    /// Asks the run to stop at its next committed boundary.
    pub(crate) stop: PauseHandle,
    /// A resume from this generation: the later ones are discarded with the first new row.
    pub(crate) discard_after: Option<u64>,
    /// Called with the launch before the session starts.
    pub(crate) on_launch: Option<crate::commands::OnLaunch>,
}

/// The wall clock, as milliseconds since the Unix epoch: for the manifest's timings only.
#[expect(
    clippy::disallowed_methods,
    reason = "the manifest's timings: wall time is recorded beside behaviour, never in it"
)]
fn now_unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(0))
}

fn nanos(d: std::time::Duration) -> U64 {
    U64(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// A run that stops before its plan's end is paused (at its `bound`), never complete; one asked
/// to stop only once it had reached the end is complete.
fn settled(mut outcome: RunOutcome, plan_steps: u64) -> RunOutcome {
    let short = outcome.steps < plan_steps;
    match &outcome.stop {
        Stop::Complete if short => {
            outcome.stop = Stop::Paused {
                reason: "bound".into(),
            };
        }
        Stop::Paused { reason } if !short && reason == "requested" => {
            outcome.stop = Stop::Complete;
        }
        _ => {}
    }
    outcome
}

/// What the final manifest records of a run's end: status, failure, steps, run digest and the
/// nanoseconds spent committing transitions.
fn standing(
    result: &Result<RunOutcome, SessionRunFailure>,
) -> (RunStatus, Option<RunFailure>, u64, Digest, u64) {
    match result {
        Ok(outcome) => (
            match outcome.stop {
                Stop::Complete => RunStatus::Complete,
                Stop::Paused { .. } => RunStatus::Paused,
            },
            None,
            outcome.steps,
            outcome.run_digest,
            outcome.steps_ns,
        ),
        Err(f) => (
            RunStatus::Failed,
            Some(RunFailure {
                code: f.error.code_str(),
                message: f.error.to_string(),
            }),
            f.steps,
            f.run_digest,
            0,
        ),
    }
}

/// How a run ended, in words, for a manifest that could not be written: its status, and a
/// failure's code and message.
fn ended_as(status: RunStatus, failure: Option<&RunFailure>) -> String {
    let word = match status {
        RunStatus::Running => "running",
        RunStatus::Complete => "complete",
        RunStatus::Paused => "paused",
        RunStatus::Failed => "failed",
    };
    match failure {
        Some(f) => format!("{word} ({}: {})", f.code, f.message),
        None => word.to_owned(),
    }
}

/// Checkpoints that did not become durable (a full disk), as the error the run ends with.
fn not_durable(durable: Option<&DurableStatus>, dir: &Path) -> Option<StoreError> {
    durable
        .filter(|d| d.failed > 0)
        .map(|d| StoreError::NotDurable {
            path: dir.to_owned(),
            failed: d.failed,
            last: d.last_error.clone().unwrap_or_default(),
        })
}

/// The standing of a run that ended well but is failed by `e` (checkpoints that did not become
/// durable: its rows stand, but its manifest must not say it is whole).
fn failed_by(e: &StoreError) -> (RunStatus, Option<RunFailure>) {
    (
        RunStatus::Failed,
        Some(RunFailure {
            code: e.code_str(),
            message: e.to_string(),
        }),
    )
}

impl Invocation<'_> {
    /// Writes the final manifest. A failed run's names what the trace holds (its coordinator
    /// may hold less, and a trace that could not be written holds less still), the others'
    /// `committed` steps and run digest. A manifest that cannot be written is
    /// [`StoreError::ManifestUnwritten`], which says how the run ended.
    fn write_final(
        &mut self,
        status: RunStatus,
        failure: Option<RunFailure>,
        committed: (u64, Digest),
        timings: RunTimings,
    ) -> Result<(), RunError> {
        let (steps, digest) = if status == RunStatus::Failed {
            let (rows, digest) = self.writer.held();
            (rows.saturating_sub(1), digest)
        } else {
            committed
        };
        let ended = ended_as(status, failure.as_ref());
        let manifest = self.manifest(status, failure, steps, digest, timings);
        self.writer.write_manifest(&manifest).map_err(|e| {
            StoreError::ManifestUnwritten {
                path: self.writer.dir().to_owned(),
                ended,
                source: Box::new(e),
            }
            .into()
        })
    }

    fn manifest(
        &self,
        status: RunStatus,
        failure: Option<RunFailure>,
        steps: u64,
        run_digest: Digest,
        timings: RunTimings,
    ) -> RunManifest {
        let worker_threads = self
            .options
            .launch
            .worker_threads
            .unwrap_or_else(|| self.plan.agents.first().map_or(1, |a| a.threads));
        RunManifest {
            format_version: MANIFEST_FORMAT_VERSION,
            run_id: self.writer.run_id().clone(),
            plan_digest: self.plan.plan_digest,
            contract_digest: flysim_types::schema::contract_digest(),
            build: flysim_worker::identity::build_identity(),
            status,
            steps_bound: self.steps_bound,
            steps: U64(steps),
            run_digest,
            failure,
            execution: ExecutionRecord {
                mode: self.options.launch.mode,
                transport: self.options.launch.transport,
                dispatch: self.options.dispatch,
                worker_threads,
            },
            timings,
        }
    }

    /// The session's launch hook: the caller's, given the session id.
    fn launch_hook(&self) -> Option<flysim_session::run::LaunchHook> {
        let f = self.on_launch.clone()?;
        let session = self.options.session_id.clone();
        Some(Box::new(move |launch: &mut flysim_session::Launch| {
            (f.0)(launch, &session);
        }))
    }

    /// Runs the invocation to its end and writes the final manifest.
    #[expect(
        clippy::disallowed_methods,
        reason = "the manifest's timings: wall time is recorded beside behaviour, never in it"
    )]
    pub(crate) fn execute(mut self, progress: &mut dyn Progress) -> Result<RunReport, RunError> {
        let started = std::time::Instant::now();
        let started_ms = now_unix_ms();
        let timings = |steps_ns: u64| RunTimings {
            started_unix_ms: U64(started_ms),
            wall_time_ns: nanos(started.elapsed()),
            steps_ns: U64(steps_ns),
        };
        // A fresh run says at once that it runs (and to which bound); a resumed one only once
        // it commits its first row, so a resume refused before it plays changes nothing.
        let running = self.manifest(
            RunStatus::Running,
            None,
            0,
            self.writer.run_digest(),
            timings(0),
        );
        let resuming = self.options.resume.is_some();
        if !resuming {
            self.writer.write_manifest(&running)?;
        }
        let dir = self.writer.dir().to_owned();
        let launched = self.launch_hook();
        progress.started(&dir);
        let checkpoints = match self.options.checkpoint_every {
            Some(_) => Some(CheckpointWriter::start(
                GenerationStore::of_run(&dir),
                DEFAULT_QUEUE,
            )?),
            None => None,
        };
        let mut scores = Scores::of(self.plan.agents.iter().map(|a| &a.agent_id));
        if let Some(resume) = &self.options.resume {
            for row in &resume.prior {
                scores.add(row);
            }
        }
        let (result, new_rows, sink_failed, discarded, scores) = {
            let mut sink = RunDirSink {
                writer: &mut self.writer,
                checkpoints: checkpoints.as_ref(),
                progress: &mut *progress,
                total: self.options.steps,
                running: resuming.then_some(running),
                new_rows: 0,
                scores,
                discard_after: self.discard_after,
                discarded: Vec::new(),
                failed: None,
            };
            let result = run_plan_into(
                self.plan,
                &self.options,
                &self.registry,
                flysim_session::RunHooks {
                    pause: self.stop.clone(),
                    launched,
                    ..flysim_session::RunHooks::default()
                },
                &mut sink,
            );
            let discarded = sink.discarded.iter().map(|g| g.generation.get()).collect();
            (result, sink.new_rows, sink.failed, discarded, sink.scores)
        };
        progress.finished();
        let durable = checkpoints.map(CheckpointWriter::finish);
        let plan_steps = self.plan.run.steps.get();
        let result = result.map(|outcome| settled(outcome, plan_steps));
        let (status, failure, committed, digest, steps_ns) = standing(&result);
        let failed = |error: Box<flysim_session::SessionError>| -> RunError {
            // The run directory's own failure comes back typed once the session's copy is gone.
            drop(error);
            match sink_failed.clone().map(Arc::try_unwrap) {
                Some(Ok(store)) => RunError::Store(store),
                Some(Err(shared)) => RunError::Session(Box::new(
                    flysim_session::SessionError::Sink(flysim_component::Refusal::shared(shared)),
                )),
                None => unreachable!("only a sink failure reaches here"),
            }
        };
        let into_error = |error: Box<flysim_session::SessionError>| -> RunError {
            if matches!(*error, flysim_session::SessionError::Sink(_)) && sink_failed.is_some() {
                failed(error)
            } else {
                RunError::Session(error)
            }
        };
        // A resume that failed before its first row leaves the run directory untouched.
        let outcome = match result {
            Err(f) if resuming && new_rows == 0 => return Err(into_error(f.error)),
            other => other,
        };
        let not_durable = not_durable(durable.as_ref(), &dir);
        let (status, failure) = match (&outcome, &not_durable) {
            (Ok(_), Some(e)) => failed_by(e),
            _ => (status, failure),
        };
        let final_timings = timings(steps_ns);
        let wall_time_ns = final_timings.wall_time_ns.get();
        self.write_final(status, failure, (committed, digest), final_timings)?;
        let outcome = outcome.map_err(|f| into_error(f.error))?;
        let checkpoint = durable
            .as_ref()
            .and_then(|d| d.durable.as_ref())
            .map(|g| g.boundary.get());
        if let Some(e) = not_durable {
            return Err(e.into());
        }
        Ok(RunReport {
            run_id: self.writer.run_id().clone(),
            plan_digest: self.plan.plan_digest,
            run_digest: outcome.run_digest,
            steps: outcome.steps,
            run_dir: dir,
            paused: match outcome.stop {
                Stop::Paused { reason } => Some(reason.to_string()),
                Stop::Complete => None,
            },
            plan_steps,
            checkpoint,
            discarded,
            scores: scores.into_vec(),
            wall_time_ns,
        })
    }
}
