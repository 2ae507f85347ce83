//! The four things a user does with a run directory: start a run of a plan, resume it from a
//! durable checkpoint, replay it to check its digest, and list its checkpoint generations.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use flysim_session::launcher::{LaunchOptions, admit};
use flysim_session::{
    Deadlines, Launch, Pace, PauseHandle, ResumeFrom, RunHooks, RunOptions, run_plan,
};
use flysim_store::generations::{Generation, GenerationStore};
use flysim_store::{RunLock, RunStore, RunWriter, StoreError, open_plan, open_run};
use flysim_types::plan::{LaunchPlan, RunMode, Transport};
use flysim_types::trace::{DispatchOrder, RunStatus};
use flysim_types::{Digest, U64};

use crate::components::registry;
use crate::content::{CONTENT_DIR, ContentSource};
use crate::error::RunError;
use crate::host::Host;
use crate::invocation::{Invocation, RunReport};
use crate::progress::Progress;

/// How to execute a run: none of it changes behaviour.
#[derive(Debug, Clone)]
pub struct Execution {
    /// Where workers run (default: the plan's, or as the run was executed).
    pub mode: Option<RunMode>,
    /// How they talk (default: the plan's, or as the run was executed).
    pub transport: Option<Transport>,
    /// Threads per agent worker (default: each agent's `threads`).
    pub worker_threads: Option<u32>,
    /// The order agent calls are dispatched in.
    pub dispatch: DispatchOrder,
    /// How long the coordinator polls for a due reply before it sleeps.
    pub busy_poll: Duration,
    /// Asks the run to stop at its next committed boundary (a signal, say): it then captures a
    /// checkpoint there when the plan declares a cadence, and its manifest says `paused`.
    pub stop: PauseHandle,
    /// How fast steps follow each other (a person watching wants the world's speed).
    pub pace: Pace,
    /// Called with the launch before the session starts, inside the run's runtime (a watcher
    /// connects to the router here).
    pub on_launch: Option<OnLaunch>,
}

/// What an [`OnLaunch`] calls: the launch and the session id.
pub type LaunchCallback = dyn Fn(&mut Launch, &flysim_types::Id) + Send + Sync;

/// A callback given the launch of a run and its session id before the session starts.
#[derive(Clone)]
pub struct OnLaunch(pub std::sync::Arc<LaunchCallback>);

impl std::fmt::Debug for OnLaunch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OnLaunch")
    }
}

impl Default for Execution {
    fn default() -> Self {
        Self {
            mode: None,
            transport: None,
            worker_threads: None,
            dispatch: DispatchOrder::Concurrent,
            busy_poll: flysim_session::spin::DEFAULT_BUSY_POLL,
            stop: PauseHandle::default(),
            pace: Pace::Unpaced,
            on_launch: None,
        }
    }
}

/// The launch options of a run on `host`.
pub(crate) fn launch(
    host: &Host,
    mode: RunMode,
    transport: Transport,
    worker_threads: Option<u32>,
) -> LaunchOptions {
    LaunchOptions {
        mode,
        transport,
        worker_threads,
        runtime_parent: host.runtime_parent.clone(),
        program: host.program.clone(),
        faults: BTreeMap::new(),
        content: BTreeMap::new(),
        local_lane: host.local_lane,
    }
}

/// Writes every content asset of the plan into `<runDir>/content/<sha256hex>`, so the run
/// directory alone can be resumed or replayed.
fn keep_content(dir: &Path, content: &BTreeMap<Digest, Vec<u8>>) -> Result<(), StoreError> {
    if content.is_empty() {
        return Ok(());
    }
    let content_dir = dir.join(CONTENT_DIR);
    std::fs::create_dir_all(&content_dir).map_err(|source| StoreError::Write {
        action: "create",
        path: content_dir.clone(),
        source,
    })?;
    for (digest, bytes) in content {
        flysim_store::write_durably(&content_dir.join(digest.hex()), bytes)?;
    }
    Ok(())
}

/// Runs `plan` (its content found by `content`) into a new run directory under `state_dir`,
/// committing at most `steps` transitions and never past the plan's `steps` (default: the
/// plan's). A run that stops before the plan's end is `paused`, never `complete`.
///
/// # Errors
///
/// A refusal before anything starts leaves no trace; a failed run leaves its committed rows and
/// a `failed` manifest.
pub fn run(
    plan: &LaunchPlan,
    content: &ContentSource,
    state_dir: &Path,
    steps: Option<u64>,
    execution: &Execution,
    host: &Host,
    progress: &mut dyn Progress,
) -> Result<RunReport, RunError> {
    let mut launch = launch(
        host,
        execution.mode.unwrap_or(plan.run.mode),
        execution.transport.unwrap_or(plan.run.transport),
        execution.worker_threads,
    );
    launch.content = content.preload(plan);
    let registry = registry(plan, content, host);
    // Refusals before anything starts, the run directory included.
    admit(plan, &launch, &registry)?;
    let writer = RunStore::at(state_dir).create(plan)?;
    keep_content(writer.dir(), &launch.content)?;
    let steps = steps.map(|n| n.min(plan.run.steps.get()));
    let options = RunOptions {
        launch,
        dispatch: execution.dispatch,
        steps: steps.unwrap_or(plan.run.steps.get()),
        deadlines: Deadlines::default(),
        session_id: writer.run_id().clone(),
        checkpoint_every: plan.run.checkpoint_every.map(U64::get),
        resume: None,
        busy_poll: execution.busy_poll,
        pace: execution.pace,
    };
    Invocation {
        plan,
        options,
        registry,
        writer,
        steps_bound: steps.map(U64),
        stop: execution.stop.clone(),
        on_launch: execution.on_launch.clone(),
        discard_after: None,
    }
    .execute(progress)
}

/// The generation `wanted` (default: the newest) among those `dir` commits.
fn chosen(dir: &Path, wanted: Option<u64>) -> Result<Generation, StoreError> {
    let generations = GenerationStore::of_run(dir).list()?;
    let chosen = match wanted {
        None => generations.newest(),
        Some(n) => generations
            .generations
            .iter()
            .find(|g| g.generation.get() == n),
    };
    chosen.cloned().ok_or_else(|| StoreError::NoCheckpoint {
        path: dir.to_owned(),
        reason: wanted.map_or_else(String::new, |n| format!(" of generation {n}")),
    })
}

/// Picks the generation to resume from and verifies it completely (under the run's lock: the
/// sweep removes files).
fn durable_checkpoint(
    dir: &Path,
    wanted: Option<u64>,
) -> Result<(Generation, Vec<u8>), StoreError> {
    let store = GenerationStore::of_run(dir);
    // Leftovers of a commit a kill interrupted are never generations.
    store.sweep()?;
    let generation = chosen(dir, wanted)?;
    let (bytes, _) = store.verify(&generation)?;
    Ok((generation, bytes))
}

/// Continues the run in `dir` from its newest durable checkpoint (or `generation`): at most
/// `steps` more transitions, never past the plan's `steps`; by default up to the bound the
/// interrupted invocation recorded, or the plan's end when it had reached that bound.
///
/// # Errors
///
/// A resume refused before its first row changes nothing in the run directory; one refused
/// because another writer holds the directory ([`StoreError::Locked`]) has not touched it.
pub fn resume(
    dir: &Path,
    steps: Option<u64>,
    generation: Option<u64>,
    execution: &Execution,
    host: &Host,
    progress: &mut dyn Progress,
) -> Result<RunReport, RunError> {
    // What needs no lock is refused first, so a directory that cannot be resumed is never
    // touched (not even by a lock file).
    open_plan(dir)?;
    chosen(dir, generation)?;
    // One writer at a time, from before the sweep to the last row.
    let lock = RunLock::acquire(dir)?;
    let (plan, recorded) = open_plan(dir)?;
    let (generation, envelope) = durable_checkpoint(dir, generation)?;
    let k = generation.boundary.get();
    let target = resume_target(
        plan.run.steps.get(),
        recorded.steps_bound,
        recorded.steps,
        k,
        steps,
    );
    let content = ContentSource::of_run(dir, host.asset_registry.clone());
    let registry = registry(&plan, &content, host);
    let mut launch = launch(
        host,
        execution.mode.unwrap_or(recorded.execution.mode),
        execution.transport.unwrap_or(recorded.execution.transport),
        Some(recorded.execution.worker_threads),
    );
    launch.content = content.preload(&plan);
    admit(&plan, &launch, &registry)?;
    let (writer, rows) = RunWriter::resume(recorded.run_id.clone(), lock, &plan, k)?;
    let options = RunOptions {
        launch,
        dispatch: recorded.execution.dispatch,
        steps: target,
        deadlines: Deadlines::default(),
        session_id: recorded.run_id.clone(),
        checkpoint_every: plan.run.checkpoint_every.map(U64::get),
        resume: Some(ResumeFrom {
            envelope,
            prior: rows.into_iter().map(|r| r.behaviour).collect(),
        }),
        busy_poll: execution.busy_poll,
        pace: execution.pace,
    };
    Invocation {
        plan: &plan,
        options,
        registry,
        writer,
        steps_bound: Some(U64(target)),
        stop: execution.stop.clone(),
        on_launch: execution.on_launch.clone(),
        discard_after: Some(generation.generation.get()),
    }
    .execute(progress)
}

/// The boundary a resume from `k` runs to: `k + steps`, else the bound the run recorded if it
/// had not reached it (it was interrupted), else the plan's end; never past the plan's end.
fn resume_target(
    plan_steps: u64,
    bound: Option<U64>,
    reached: U64,
    k: u64,
    steps: Option<u64>,
) -> u64 {
    let target = match (steps, bound) {
        (Some(n), _) => k.saturating_add(n),
        (None, Some(bound)) if bound > reached => bound.get(),
        (None, _) => plan_steps,
    };
    target.min(plan_steps).max(k)
}

/// A replay that reproduced its run: what it checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replayed {
    /// The run's id.
    pub run_id: flysim_types::Id,
    /// The steps re-executed.
    pub steps: u64,
    /// The run digest, equal to the recorded (and the asserted) one.
    pub run_digest: Digest,
    /// Where the recorded run stands (`paused` short of `plan_steps`: it can be resumed).
    pub status: RunStatus,
    /// The plan's `steps`.
    pub plan_steps: u64,
}

/// Re-executes the run recorded in `dir` (in-process, sequential dispatch) and checks that it
/// reproduces the recorded run digest, and `assert_digest` if given.
///
/// # Errors
///
/// [`RunError::DigestMismatch`] when it does not.
pub fn replay(
    dir: &Path,
    assert_digest: Option<Digest>,
    host: &Host,
) -> Result<Replayed, RunError> {
    let record = open_run(dir)?;
    let manifest = &record.manifest;
    let options = RunOptions {
        launch: launch(
            host,
            RunMode::InProcess,
            Transport::Memory,
            Some(manifest.execution.worker_threads),
        ),
        dispatch: DispatchOrder::Sequential,
        steps: manifest.steps.get(),
        deadlines: Deadlines::default(),
        session_id: manifest.run_id.clone(),
        checkpoint_every: None,
        resume: None,
        busy_poll: flysim_session::spin::DEFAULT_BUSY_POLL,
        pace: Pace::Unpaced,
    };
    let content = ContentSource::of_run(dir, host.asset_registry.clone());
    let registry = registry(&record.plan, &content, host);
    let outcome = run_plan(
        &record.plan,
        &options,
        &registry,
        RunHooks::default(),
        &mut |_| Ok(()),
    )
    .map_err(|f| RunError::Session(f.error))?;
    let expected = assert_digest.unwrap_or(manifest.run_digest);
    for recorded in [manifest.run_digest, expected] {
        if outcome.run_digest != recorded {
            return Err(RunError::DigestMismatch {
                run_id: manifest.run_id.to_string(),
                expected: recorded,
                found: outcome.run_digest,
            });
        }
    }
    Ok(Replayed {
        run_id: manifest.run_id.clone(),
        steps: outcome.steps,
        run_digest: outcome.run_digest,
        status: manifest.status,
        plan_steps: record.plan.run.steps.get(),
    })
}

/// One durable checkpoint generation and whether it verifies.
#[derive(Debug)]
pub struct GenerationState {
    /// The generation as `generations.json` records it.
    pub generation: Generation,
    /// `Ok` when every region verifies; the damage otherwise.
    pub verified: Result<(), StoreError>,
}

/// The durable generations of the run in `dir`, newest first, each verified.
///
/// # Errors
///
/// When the run has none, or its generation list cannot be read.
pub fn checkpoints(dir: &Path) -> Result<Vec<GenerationState>, RunError> {
    let store = GenerationStore::of_run(dir);
    let generations = store.list()?;
    if generations.generations.is_empty() {
        return Err(StoreError::NoCheckpoint {
            path: dir.to_owned(),
            reason: String::new(),
        }
        .into());
    }
    Ok(generations
        .generations
        .iter()
        .rev()
        .map(|g| GenerationState {
            generation: g.clone(),
            verified: store.verify(g).map(|_| ()),
        })
        .collect())
}
