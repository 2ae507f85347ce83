//! One run of a plan, start to end: admit, launch, start (boundary 0), step to the bound,
//! query health, shut down and reap. Rows go to a sink as they are committed.

use std::collections::BTreeMap;

use flysim_types::plan::LaunchPlan;
use flysim_types::trace::{DispatchOrder, TransitionTrace};
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

async fn run_async(
    plan: &LaunchPlan,
    options: &RunOptions,
    registry: &Registry,
    hooks: RunHooks,
    sink: &mut dyn FnMut(&TransitionTrace) -> Result<(), SessionError>,
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
    let result = async {
        let row = coordinator.start().await?;
        sink(&row)?;
        let begun = std::time::Instant::now();
        let stop = coordinator.run(options.steps, sink).await?;
        let steps_ns = u64::try_from(begun.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let statuses = coordinator.statuses().await?;
        Ok::<_, SessionError>((stop, statuses, steps_ns))
    }
    .await;
    coordinator.shutdown().await;
    let outcome = match result {
        Ok((stop, statuses, steps_ns)) => Ok(RunOutcome {
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
