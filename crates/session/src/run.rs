//! One run of a plan, start to end: admit, launch, start (boundary 0) or resume from a
//! checkpoint, step to the bound, query health, shut down and reap. Rows go to a sink as they
//! are committed; with a checkpoint cadence, coherent checkpoints go to it too: at every
//! boundary that is a multiple of the cadence, and at the boundary the invocation stops at
//! (its bound, a terminal episode, or a requested pause).

use std::collections::BTreeMap;

use flysim_types::plan::{LaunchPlan, RunMode};
use flysim_types::trace::{DispatchOrder, RowText, TraceBehaviour, TransitionTrace};
use flysim_types::workers::StatusResult;
use flysim_types::{Digest, Id};

use crate::coordinator::{Coordinator, Deadlines, PauseHandle, PhaseHook, Stop};
use crate::error::SessionError;
use crate::launcher::{Launch, LaunchOptions};
use crate::registry::Registry;

/// Everything a run needs besides the plan.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// How and where workers run.
    pub launch: LaunchOptions,
    /// The order agent calls are dispatched in.
    pub dispatch: DispatchOrder,
    /// Transitions to commit (the `--steps` bound, or the plan's steps).
    pub steps: u64,
    /// Call deadlines.
    pub deadlines: Deadlines,
    /// The session id (the run id).
    pub session_id: Id,
    /// Capture a checkpoint every N committed steps (and where the invocation stops).
    pub checkpoint_every: Option<u64>,
    /// Start from this checkpoint instead of boundary 0.
    pub resume: Option<ResumeFrom>,
    /// Thread and process modes: how long the coordinator's thread keeps polling after each
    /// call before it sleeps (see [`crate::spin`]; callers usually pass
    /// [`crate::spin::DEFAULT_BUSY_POLL`]; zero: never). In-process mode never polls. Changes
    /// speed and CPU use, never behaviour.
    pub busy_poll: std::time::Duration,
    /// How fast steps follow each other: as fast as they can, or at the world's own speed for
    /// a person watching. Never changes behaviour.
    pub pace: Pace,
}

/// How fast a run's steps follow each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pace {
    /// Each step as soon as the previous one committed.
    #[default]
    Unpaced,
    /// Step `k` starts no earlier than `k` step durations of the world after the first step of
    /// this invocation: a person watches at game speed. A step that runs late is not made up
    /// for by running the next ones faster than the world's speed.
    Realtime,
}

/// Where a resumed run starts: a verified checkpoint and the rows the run holds up to it.
#[derive(Debug, Clone)]
pub struct ResumeFrom {
    /// The `FLYSESS1` envelope.
    pub envelope: Vec<u8>,
    /// The behaviour rows `0..=k` of the run, `k` the checkpoint's boundary.
    pub prior: Vec<TraceBehaviour>,
}

/// Where a run's committed rows and checkpoints go.
pub trait RunSink {
    /// One committed row (boundary 0 first; a resumed run starts after its checkpoint).
    ///
    /// # Errors
    ///
    /// Any [`SessionError`] fails the run.
    fn row(&mut self, row: &TransitionTrace) -> Result<(), SessionError>;

    /// [`RunSink::row`] with the row's canonical text, which the coordinator already wrote for
    /// the run digest: a sink that writes the trace can take it instead of writing it again.
    ///
    /// # Errors
    ///
    /// Any [`SessionError`] fails the run.
    fn row_text(&mut self, row: &TransitionTrace, text: RowText) -> Result<(), SessionError> {
        let _ = text;
        self.row(row)
    }

    /// One coherent checkpoint of boundary `boundary`.
    ///
    /// # Errors
    ///
    /// Any [`SessionError`] fails the run.
    fn checkpoint(&mut self, boundary: u64, id: Id, envelope: Vec<u8>) -> Result<(), SessionError>;
}

/// A sink of rows alone, for runs without a checkpoint cadence.
struct Rows<'a>(&'a mut dyn FnMut(&TransitionTrace) -> Result<(), SessionError>);

impl RunSink for Rows<'_> {
    fn row(&mut self, row: &TransitionTrace) -> Result<(), SessionError> {
        (self.0)(row)
    }

    fn checkpoint(&mut self, boundary: u64, _: Id, _: Vec<u8>) -> Result<(), SessionError> {
        Err(SessionError::Checkpoint {
            participant: "coordinator".into(),
            reason: format!(
                "a checkpoint at {boundary} has nowhere to go: this run keeps rows only"
            ),
        })
    }
}

/// How a run ended without failing.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// Complete or paused.
    pub stop: Stop,
    /// Transitions committed.
    pub steps: u64,
    /// Rows committed (boundary 0 included).
    pub rows: u64,
    /// The run digest over every row.
    pub run_digest: Digest,
    /// Every worker's last Status.
    pub statuses: BTreeMap<Id, StatusResult>,
    /// Nanoseconds spent committing transitions (boundary 0 excluded).
    pub steps_ns: u64,
    /// Committed snapshots published for watchers (a slow watcher's replaced ones excluded).
    pub snapshots_published: u64,
}

/// How a run failed: the error, and the committed prefix that stands.
#[derive(Debug)]
pub struct RunFailure {
    /// What failed.
    pub error: Box<SessionError>,
    /// Transitions committed before it.
    pub steps: u64,
    /// Rows committed before it.
    pub rows: u64,
    /// The run digest of those rows.
    pub run_digest: Digest,
}

/// Called once with the launch, before the session starts.
pub type LaunchHook = Box<dyn FnOnce(&mut Launch) + Send>;

/// Hooks into a run (tests and the CLI's progress bar).
#[derive(Default)]
pub struct RunHooks {
    /// Called on entering every phase.
    pub phase: Option<PhaseHook>,
    /// Pause at the next committed boundary when requested.
    pub pause: PauseHandle,
    /// Called with the launch before the session starts (tests: keep the router or kill a
    /// worker).
    pub launched: Option<LaunchHook>,
    /// Sees the frames of a range of committed boundaries (regenerating a run's frames);
    /// never changes a row.
    pub frame_tap: Option<crate::tap::FrameTap>,
}

impl std::fmt::Debug for RunHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunHooks").finish_non_exhaustive()
    }
}

/// Runs `plan` on a fresh current-thread runtime in the calling thread. Every committed row is
/// handed to `sink` (boundary 0 first); a sink error fails the run.
///
/// # Errors
///
/// A [`RunFailure`] holding the error and the committed prefix.
pub fn run_plan(
    plan: &LaunchPlan,
    options: &RunOptions,
    registry: &Registry,
    hooks: RunHooks,
    sink: &mut dyn FnMut(&TransitionTrace) -> Result<(), SessionError>,
) -> Result<RunOutcome, RunFailure> {
    run_plan_into(plan, options, registry, hooks, &mut Rows(sink))
}

/// [`run_plan`] with a sink that also takes the checkpoints of `options.checkpoint_every`.
///
/// # Errors
///
/// A [`RunFailure`] holding the error and the committed prefix.
pub fn run_plan_into(
    plan: &LaunchPlan,
    options: &RunOptions,
    registry: &Registry,
    hooks: RunHooks,
    sink: &mut dyn RunSink,
) -> Result<RunOutcome, RunFailure> {
    let failed = |error| RunFailure {
        error: Box::new(error),
        steps: 0,
        rows: 0,
        run_digest: flysim_types::trace::RunDigester::new(&plan.plan_digest).digest(),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            failed(SessionError::Launch {
                participant: "coordinator".into(),
                reason: e.to_string(),
            })
        })?;
    runtime.block_on(run_async(plan, options, registry, hooks, sink))
}

#[expect(
    clippy::disallowed_methods,
    reason = "an operational timing: wall time is recorded beside behaviour, never in it"
)]
async fn run_async(
    plan: &LaunchPlan,
    options: &RunOptions,
    registry: &Registry,
    hooks: RunHooks,
    sink: &mut dyn RunSink,
) -> Result<RunOutcome, RunFailure> {
    let empty = flysim_types::trace::RunDigester::new(&plan.plan_digest).digest();
    let failed = |error, c: Option<&Coordinator>| RunFailure {
        error: Box::new(error),
        steps: c.map_or(0, Coordinator::step),
        rows: c.map_or(0, Coordinator::rows),
        run_digest: c.map_or(empty, Coordinator::run_digest),
    };
    let mut launch = Launch::start(plan, &options.launch, registry)
        .await
        .map_err(|e| failed(e, None))?;
    if let Some(launched) = hooks.launched {
        launched(&mut launch);
    }
    let mut coordinator = Coordinator::new(
        plan.clone(),
        launch.client().clone(),
        registry,
        options.session_id.clone(),
        options.dispatch,
        options.deadlines,
        options.launch.worker_threads,
        hooks.pause,
    )
    .map_err(|e| failed(e, None))?;
    if let Some(hook) = hooks.phase {
        coordinator.set_hook(hook);
    }
    if let Some(tap) = hooks.frame_tap {
        coordinator.set_frame_tap(tap);
    }
    coordinator.set_exit_watch(launch.exit_watch());
    // In-process workers answer on this very thread (or hand back from its blocking pool, which
    // needs the other core more than this thread needs to poll).
    let window = if options.launch.mode == RunMode::InProcess {
        std::time::Duration::ZERO
    } else {
        options.busy_poll
    };
    let (poll, _polling) = crate::spin::BusyPoll::start(window);
    coordinator.set_busy_poll(poll);
    coordinator.set_digest_polling(options.launch.mode == RunMode::InProcess);
    coordinator.set_pace(options.pace);
    let result = async {
        match &options.resume {
            Some(from) => coordinator.resume(&from.envelope, &from.prior).await?,
            None => sink.row(&coordinator.start().await?)?,
        }
        let begun = std::time::Instant::now();
        let stop = run_steps(&mut coordinator, options, sink).await?;
        let steps_ns = u64::try_from(begun.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let statuses = coordinator.statuses().await?;
        Ok::<_, SessionError>((stop, statuses, steps_ns))
    }
    .await;
    let outcome = match &result {
        Ok((Stop::Complete, ..)) => "complete",
        Ok((Stop::Paused { .. }, ..)) => "paused",
        Err(_) => "failed",
    };
    coordinator
        .publish_end(coordinator.run_digest(), outcome)
        .await;
    coordinator.shutdown().await;
    let snapshots_published = coordinator
        .publication_counts()
        .snapshots
        .load(std::sync::atomic::Ordering::Relaxed);
    let outcome = match result {
        Ok((stop, statuses, steps_ns)) => Ok(RunOutcome {
            snapshots_published,
            stop,
            steps: coordinator.step(),
            rows: coordinator.rows(),
            run_digest: coordinator.run_digest(),
            statuses,
            steps_ns,
        }),
        Err(e) => Err(failed(e, Some(&coordinator))),
    };
    launch.reap(options.deadlines.reap).await;
    outcome
}

/// Steps to `options.steps` (an absolute boundary), capturing at the cadence and where it
/// stops.
async fn run_steps(
    coordinator: &mut Coordinator,
    options: &RunOptions,
    sink: &mut dyn RunSink,
) -> Result<Stop, SessionError> {
    let Some(every) = options.checkpoint_every.filter(|n| *n > 0) else {
        return coordinator
            .run(options.steps, &mut |row, text| sink.row_text(row, text))
            .await;
    };
    let pause = coordinator.pause_handle();
    loop {
        let step = coordinator.step();
        let target = ((step / every + 1) * every).min(options.steps);
        let mut last = None;
        let stop = coordinator
            .run(target, &mut |row, text| {
                sink.row_text(row, text)?;
                // Only a row the session may stop at is kept (a copy per step costs): the
                // cadence's, a terminal episode's, or any once a pause is requested (the last
                // row recorded is then the boundary it pauses at).
                if row.behaviour.boundary.get() == target
                    || row.behaviour.episode_request.is_some()
                    || pause.requested()
                {
                    last = Some(row.behaviour.clone());
                }
                Ok(())
            })
            .await?;
        if let Some(row) = last.filter(|r| r.boundary.get() == coordinator.step()) {
            let (id, envelope) = coordinator.capture(&row).await?;
            sink.checkpoint(row.boundary.get(), id, envelope)?;
        }
        if stop != Stop::Complete || coordinator.step() >= options.steps {
            return Ok(stop);
        }
    }
}
