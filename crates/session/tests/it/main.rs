//! Session tests: the transaction, the clock, pause and episodes, and one test per row of the
//! failure-injection checklist that concerns the session (process-mode rows live in
//! `crates/cli/tests/it/run.rs`, which has the `flysim` binary).

#![allow(
    clippy::disallowed_methods,
    reason = "tests bound their waits with deadlines of their own"
)]

mod audio;
mod checkpoint;
mod dispatch;
mod failures;
mod mutants;
mod recovery;
mod transaction;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use flysim_session::launcher::LaunchOptions;
use flysim_session::{Deadlines, Registry, RunFailure, RunHooks, RunOptions, RunOutcome, run_plan};
use flysim_types::Id;
use flysim_types::plan::{LaunchPlan, RunMode, Transport};
use flysim_types::trace::{DispatchOrder, TransitionTrace};
use flysim_types::workers::Method;
use flysim_worker::WorkerFaults;
use flysim_worker::faults::FaultPoint;

/// The plan of `fixtures/compositions/ok/synthetic-agents.kdl`: two synthetic agents in the
/// counter arena (the shipped `compositions/synthetic.kdl` runs LIF flies, a model this crate's
/// built-in registry does not link).
pub(crate) fn synthetic() -> LaunchPlan {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/compositions/ok/synthetic-agents.kdl");
    let bytes = std::fs::read(&path).unwrap();
    flysim_compose::plan(
        flysim_compose::Input {
            name: "synthetic-agents.kdl",
            bytes: &bytes,
            dir: path.parent().unwrap(),
        },
        None,
        &[flysim_arena::SPEC],
    )
    .unwrap()
}

pub(crate) fn id(s: &str) -> Id {
    Id::parse(s).unwrap()
}

/// A run's configuration, with a builder for what tests vary.
pub(crate) struct Setup {
    pub(crate) mode: RunMode,
    pub(crate) transport: Transport,
    pub(crate) dispatch: DispatchOrder,
    pub(crate) steps: u64,
    pub(crate) deadlines: Deadlines,
    pub(crate) faults: BTreeMap<Id, WorkerFaults>,
    pub(crate) registry: Registry,
    pub(crate) worker_threads: Option<u32>,
    /// In-process and thread workers through their local lanes (the default), or the bus.
    pub(crate) local_lane: bool,
    /// The coordinator's busy-poll window (the session default unless a test varies it).
    pub(crate) busy_poll: Duration,
}

impl Setup {
    pub(crate) fn new(steps: u64) -> Self {
        Self {
            mode: RunMode::InProcess,
            transport: Transport::Memory,
            dispatch: DispatchOrder::Sequential,
            steps,
            deadlines: Deadlines {
                attempt: Duration::from_secs(2),
                budget: Duration::from_secs(5),
                start: Duration::from_secs(5),
                reap: Duration::from_secs(1),
            },
            faults: BTreeMap::new(),
            registry: arena_registry(),
            worker_threads: None,
            local_lane: true,
            busy_poll: flysim_session::spin::DEFAULT_BUSY_POLL,
        }
    }

    /// Sets the coordinator's busy-poll window.
    pub(crate) fn busy_poll(mut self, window: Duration) -> Self {
        self.busy_poll = window;
        self
    }

    /// Sets whether in-process and thread workers are reached through their local lanes.
    pub(crate) fn lane(mut self, local_lane: bool) -> Self {
        self.local_lane = local_lane;
        self
    }

    pub(crate) fn fault(mut self, worker: &str, f: impl FnOnce(&mut WorkerFaults)) -> Self {
        f(self.faults.entry(id(worker)).or_default());
        self
    }

    pub(crate) fn options(&self) -> RunOptions {
        RunOptions {
            launch: LaunchOptions {
                mode: self.mode,
                transport: self.transport,
                worker_threads: self.worker_threads,
                runtime_parent: std::env::temp_dir(),
                program: None,
                faults: self.faults.clone(),
                content: std::collections::BTreeMap::new(),
                local_lane: self.local_lane,
            },
            dispatch: self.dispatch,
            steps: self.steps,
            deadlines: self.deadlines,
            session_id: id("test-run"),
            checkpoint_every: None,
            resume: None,
            busy_poll: self.busy_poll,
            pace: flysim_session::Pace::Unpaced,
        }
    }

    /// Runs the synthetic plan; returns the outcome and every row.
    pub(crate) fn run(
        &self,
        hooks: RunHooks,
    ) -> (Result<RunOutcome, RunFailure>, Vec<TransitionTrace>) {
        let plan = synthetic();
        let mut rows = Vec::new();
        let result = run_plan(&plan, &self.options(), &self.registry, hooks, &mut |row| {
            rows.push(row.clone());
            Ok(())
        });
        (result, rows)
    }
}

pub(crate) fn point(method: Method, step: u64) -> FaultPoint {
    FaultPoint { method, step }
}

/// The counter arena's components: the synthetic agent, the arena world and the counter task.
pub(crate) fn arena_registry() -> Registry {
    Registry::new()
        .with_agent(
            flysim_types::plan::ModelKind::Synthetic,
            flysim_arena::synthetic::factory(),
        )
        .with_environment(
            flysim_arena::SPEC.name,
            std::sync::Arc::new(|env, digest| {
                Ok(Box::new(flysim_arena::CounterArena::new(env, digest)?))
            }),
        )
        .with_task(
            "counter-v1",
            std::sync::Arc::new(|_| Box::new(flysim_arena::CounterTask::new(None))),
        )
}
