//! The coordinator: greets every worker, bootstraps the episode and runs the step transaction
//! in its exact order (contracts §5.3):
//!
//! 1. `Ready(k) -> Preparing`: freeze the decision contexts; `Agent.Prepare` to every agent
//!    (dispatch order: sequential, concurrent or reversed; results are keyed by agent id, so
//!    completion order never matters);
//! 2. `Applying`: one executor per agent in sorted agent-id order, the complete batch in
//!    descriptor port order, exactly one `Environment.Advance`;
//! 3. `Observing`: the step result is checked against the descriptor and the previous
//!    observation, then the task evaluates the transition exactly once;
//! 4. `Committing`: `Agent.Commit` to every agent; all must succeed;
//! 5. `Ready(k+1)`: the behaviour row of the committed boundary.
//!
//! Every call has a deadline. After an uncertain attempt the *same* prepared request (same
//! request id and body) is resent under a new bus call, never a new id; only a matching terminal
//! reply resolves it. When the budget runs out, a worker refuses, a worker or the router goes
//! away or changes incarnation, or a result breaks the contract, the epoch fails: the phase
//! becomes `Failed` and the error names the participant, the method, the step and the request.
//!
//! This file owns the coordinator's state, its construction and its public configuration; each
//! concern lives in its own module:
//!
//! - `hello`: Hello, and the identity checks of every worker and of the environment descriptor;
//! - `start`: bootstrap, up to the committed boundary 0;
//! - `step`: the transaction `prepare`, `apply`, `advance`, `evaluate`, `commit`;
//! - `row`: the behaviour row of a committed boundary, with the digests it leaves for later;
//! - `pending`: that row until those digests are in, and its finishing into the recorded row;
//! - `handoff`: rows handed to the digest thread, finished there or here, and the run digest;
//! - `running`: steps until a bound, a pause or a terminal episode, holding rows meanwhile;
//! - `dispatch`: one prepared request per agent, in the configured dispatch order;
//! - `call`: one call and its retry rule;
//! - `checkpoint`: capture and restore;
//! - `pacing`: realtime pacing for a person watching (never behaviour);
//! - `snapshot`: the session descriptor and the committed snapshots it publishes;
//! - `tapping`: the committed boundary's frames handed to a frame tap (never behaviour).
//!
//! The coordinator orders and commits: it computes no brain and no world, and knows no backend
//! type (the task and executors come through the [`Registry`]).

use flysim_types::workers::{
    AssetRef, EnvironmentDescriptor, PortBinding, ShutdownParams, ShutdownResult, StatusParams,
    StatusResult, WorldObservation,
};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use flysim_bus::{Artifact, Client};
use flysim_types::digest::{payload_digest, sha256};
use flysim_types::plan::{LaunchPlan, PlanEnvironment};
use flysim_types::trace::{DispatchOrder, RunDigester};
use flysim_types::{Digest, Id, RationalNs, Scope, TypedValue, U64};
use serde_json::Value;

use crate::error::SessionError;
use crate::phase::{Phase, PhaseMachine};
use crate::registry::Registry;
use crate::spin::BusyPoll;
use flysim_component::task::{ActionExecutor, Task};

mod call;
mod checkpoint;
mod dispatch;
mod handoff;
mod hello;
mod memory;
mod pacing;
mod pending;
mod row;
mod running;
mod snapshot;
mod start;
mod step;
mod tapping;

use call::{Reply, call_prepared};
use handoff::RunRecord;

/// Deadlines of the coordinator's calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlines {
    /// One attempt of a call; after it the same request is resent.
    pub attempt: Duration,
    /// Every attempt of one call together: then the outcome is uncertain and the epoch fails.
    pub budget: Duration,
    /// Launching a worker until it answers Hello.
    pub start: Duration,
    /// Reaping: after Shutdown, how long a worker may take to exit before it is killed.
    pub reap: Duration,
}

impl Default for Deadlines {
    fn default() -> Self {
        Self {
            attempt: Duration::from_secs(2),
            budget: Duration::from_secs(10),
            start: Duration::from_secs(10),
            reap: Duration::from_secs(2),
        }
    }
}

/// A request to pause at the next committed boundary; a step in flight finishes first.
#[derive(Debug, Clone, Default)]
pub struct PauseHandle(Arc<AtomicBool>);

impl PauseHandle {
    /// Asks the session to pause.
    pub fn request(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether a pause was asked for.
    #[must_use]
    pub fn requested(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// Called as the coordinator enters each phase, with the step it concerns (tests inject faults
/// and pauses here).
pub type PhaseHook = Box<dyn FnMut(Phase, u64) + Send>;

/// Why a run of steps stopped without failing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// The step bound was reached.
    Complete,
    /// Paused at a committed boundary: asked to, or a terminal episode request.
    Paused {
        /// `requested`, or `terminal:<reason>`.
        reason: String,
    },
}

/// One worker as the coordinator knows it after Hello.
struct Participant {
    id: Id,
    caller: flysim_rpc::RpcCaller,
    /// Kicked before every attempt: the reply is then due.
    poll: BusyPoll,
}

/// An agent's standing at the committed boundary.
#[derive(Debug, Clone)]
struct AgentState {
    profile: AssetRef,
    /// The model kind of the profile (`synthetic`, `lif`).
    model: String,
    /// The dataset the model was built from (`AgentGraph.datasetDigest`).
    dataset: Digest,
    port: Id,
    seed: i32,
    threads: u32,
    tick: RationalNs,
    context: Arc<TypedValue>,
    context_digest: Digest,
    /// The context committed before it, with its digest: a task that moves between a few
    /// contexts (an action mask on and off) hands it back often, and it is then not hashed again.
    previous_context: Option<(Arc<TypedValue>, Digest)>,
}

/// The observation of the committed boundary, with the artifacts that hold its frames.
struct CommittedObservation {
    /// Shared with the step that reads it as the previous observation (no copy per step).
    observation: Arc<WorldObservation>,
    /// The frames of the committed boundary, alive until the next one (and published with it).
    frames: Vec<(Id, Artifact)>,
    /// Its memory image, once read for a task that reads memory (`None` until then).
    memory: Option<memory::MemoryImage>,
}

/// The coordinator of one session.
pub struct Coordinator {
    plan: LaunchPlan,
    session_id: Id,
    epoch: Id,
    episode: Id,
    dispatch: DispatchOrder,
    deadlines: Deadlines,
    worker_threads: u32,
    phase: PhaseMachine,
    client: Client,
    environment: Option<Arc<Participant>>,
    agents: BTreeMap<Id, Arc<Participant>>,
    states: BTreeMap<Id, AgentState>,
    descriptor: Option<Arc<EnvironmentDescriptor>>,
    bindings: Vec<PortBinding>,
    committed: Option<CommittedObservation>,
    task: Box<dyn Task>,
    executors: BTreeMap<Id, Box<dyn ActionExecutor>>,
    progress: Value,
    step: u64,
    /// The rows committed so far and their run digest, with the digest thread.
    run: RunRecord,
    started: std::time::Instant,
    pause: PauseHandle,
    hook: Option<PhaseHook>,
    /// Worker processes that may end before they answer Hello.
    exits: crate::launcher::ExitWatch,
    /// Keeps this thread polling while a reply is due (off unless set).
    poll: BusyPoll,
    /// Publishes the descriptor and a snapshot per committed boundary for watchers.
    publisher: crate::publication::Publisher,
    /// The schema of the task's progress value, as snapshots carry it.
    progress_schema: flysim_types::SchemaRef,
    /// How fast steps follow each other, and the pacer once a paced step ran.
    pace: crate::run::Pace,
    pacer: Option<pacing::Pacer>,
    /// Who sees the committed frames of a range of boundaries (never behaviour).
    frame_tap: Option<crate::tap::FrameTap>,
}

impl std::fmt::Debug for Coordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coordinator")
            .field("session_id", &self.session_id)
            .field("phase", &self.phase)
            .field("step", &self.step)
            .finish_non_exhaustive()
    }
}

/// An environment's canonical plan entry and its digest (`PlanEnvironment::config_digest`), or
/// why canonical JSON cannot hold it.
fn environment_config(env: &PlanEnvironment) -> Result<(String, Digest), String> {
    let text = flysim_types::payload::to_canonical(env)
        .map_err(|e| format!("the environment's plan entry could not be hashed: {e}"))?;
    let digest = sha256(text.as_bytes());
    Ok((text, digest))
}

/// The batch id of transition `k` of an episode: `<episode>.batch-<k>` (derived, epoch-free).
///
/// # Errors
///
/// Never for an episode id of at most 32 characters.
pub fn batch_id(episode: &Id, step: u64) -> Result<Id, SessionError> {
    let mut text = String::with_capacity(episode.as_str().len() + 27);
    text.push_str(episode.as_str());
    text.push_str(".batch-");
    flysim_types::U64(step).push_to(&mut text);
    Id::parse(&text).map_err(|e| SessionError::Contract {
        participant: "coordinator".into(),
        step,
        reason: e.to_string(),
    })
}

/// The digest of a value's canonical JSON (written straight from the value), or why canonical
/// JSON cannot hold it (never a validated payload).
fn canonical_digest<T: serde::Serialize>(value: &T) -> Result<Digest, String> {
    payload_digest(value).map_err(|e| format!("a value could not be hashed: {e}"))
}

/// A reference to an asset the coordinator hands a worker by digest.
fn asset_ref(id: &Id, digest: Digest, bytes: usize, format: &str) -> AssetRef {
    AssetRef {
        id: id.clone(),
        digest,
        byte_length: U64(bytes.max(1) as u64),
        format: Id::parse(format).unwrap_or_else(|_| id.clone()),
    }
}

/// A duration in whole nanoseconds, as the trace's timings record it.
fn nanos(d: Duration) -> U64 {
    U64(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

impl Coordinator {
    /// A coordinator for `plan` on `client`; nothing is sent until [`Coordinator::start`].
    ///
    /// # Errors
    ///
    /// [`SessionError::Unavailable`] when the registry lacks the plan's task or executor.
    #[expect(
        clippy::too_many_arguments,
        reason = "the session's whole configuration"
    )]
    #[expect(
        clippy::disallowed_methods,
        reason = "an operational timing: wall time is recorded beside behaviour, never in it"
    )]
    pub fn new(
        plan: LaunchPlan,
        client: Client,
        registry: &Registry,
        session_id: Id,
        dispatch: DispatchOrder,
        deadlines: Deadlines,
        worker_threads: Option<u32>,
        pause: PauseHandle,
    ) -> Result<Self, SessionError> {
        registry.check(&plan)?;
        let task = registry
            .task(&plan)
            .ok_or_else(|| SessionError::Unavailable {
                what: format!("task `{}`", plan.task),
                reason: "not in this build".into(),
            })?;
        let mut executors = BTreeMap::new();
        for agent in &plan.agents {
            let executor = registry.executor(plan.executor.as_str()).ok_or_else(|| {
                SessionError::Unavailable {
                    what: format!("executor `{}`", plan.executor),
                    reason: "not in this build".into(),
                }
            })?;
            executors.insert(agent.agent_id.clone(), executor);
        }
        let episode = Id::parse("ep-0").map_err(|e| SessionError::Contract {
            participant: "coordinator".into(),
            step: 0,
            reason: e.to_string(),
        })?;
        let epoch = Id::parse("epoch-1").map_err(|e| SessionError::Contract {
            participant: "coordinator".into(),
            step: 0,
            reason: e.to_string(),
        })?;
        let run = RunRecord::new(RunDigester::new(&plan.plan_digest));
        let bindings = plan
            .agents
            .iter()
            .map(|a| PortBinding {
                port_id: a.port.clone(),
                agent_id: a.agent_id.clone(),
            })
            .collect();
        let client_for_publisher = client.clone();
        let session_id_for_topics = session_id.clone();
        let progress_schema = task.progress_schema();
        Ok(Self {
            worker_threads: worker_threads.unwrap_or(0),
            plan,
            session_id,
            epoch,
            episode,
            dispatch,
            deadlines,
            phase: PhaseMachine::default(),
            client,
            environment: None,
            agents: BTreeMap::new(),
            states: BTreeMap::new(),
            descriptor: None,
            bindings,
            committed: None,
            task,
            executors,
            progress: Value::Null,
            step: 0,
            run,
            started: std::time::Instant::now(),
            pause,
            hook: None,
            exits: crate::launcher::ExitWatch::default(),
            poll: BusyPoll::default(),
            publisher: crate::publication::Publisher::new(
                client_for_publisher,
                flysim_types::publish::Topics::of(&session_id_for_topics),
            ),
            progress_schema,
            pace: crate::run::Pace::Unpaced,
            pacer: None,
            frame_tap: None,
        })
    }

    /// Sets the phase hook.
    pub fn set_hook(&mut self, hook: PhaseHook) {
        self.hook = Some(hook);
    }

    /// Hands the frames of the committed boundaries the tap wants to it, each once its
    /// boundary is `Ready`; rows are unchanged.
    pub fn set_frame_tap(&mut self, tap: crate::tap::FrameTap) {
        self.frame_tap = Some(tap);
    }

    /// Whether the digest thread polls while frames keep coming: right when the workers run
    /// on this thread (in-process mode) and the other core is otherwise idle, wrong when they
    /// need it ([`crate::digests`]).
    pub fn set_digest_polling(&mut self, poll: bool) {
        self.run.frame_digests.set_polling(poll);
    }

    /// Watches the launched worker processes, so one that ends before its Hello is reported at
    /// once (with how it ended) instead of after the start deadline.
    pub fn set_exit_watch(&mut self, exits: crate::launcher::ExitWatch) {
        self.exits = exits;
    }

    /// Polls for replies while they are due (see [`crate::spin`]); set before [`Self::start`],
    /// since each worker's handle is taken at its Hello.
    pub(crate) fn set_busy_poll(&mut self, poll: BusyPoll) {
        self.poll = poll;
    }

    /// The current phase.
    #[must_use]
    pub fn phase(&self) -> Phase {
        self.phase.phase()
    }

    /// The committed step.
    #[must_use]
    pub fn step(&self) -> u64 {
        self.step
    }

    /// Rows committed so far.
    #[must_use]
    pub fn rows(&self) -> u64 {
        self.run.rows
    }

    /// The run digest of the rows committed so far.
    #[must_use]
    pub fn run_digest(&self) -> Digest {
        self.run.digester.digest()
    }

    /// The agents' seeds and thread allocations, by id (for manifests and tests).
    #[must_use]
    pub fn allocations(&self) -> BTreeMap<Id, (i32, u32)> {
        self.states
            .iter()
            .map(|(id, s)| (id.clone(), (s.seed, s.threads)))
            .collect()
    }

    /// Queries every worker's `Worker.Status` (health; `progressCounter` shows work done).
    ///
    /// # Errors
    ///
    /// A [`SessionError`] when a worker does not answer.
    pub async fn statuses(&self) -> Result<BTreeMap<Id, StatusResult>, SessionError> {
        let mut out = BTreeMap::new();
        for p in self.participants() {
            let r: Reply<StatusResult> = self.call(&p, None, StatusParams {}, &[]).await?;
            out.insert(p.id.clone(), r.result.into_value());
        }
        Ok(out)
    }

    /// Sends `Worker.Shutdown` to every worker (best effort, one attempt each) and stops.
    pub async fn shutdown(&mut self) {
        let quick = Deadlines {
            attempt: Duration::from_millis(500),
            budget: Duration::from_millis(500),
            ..self.deadlines
        };
        for p in self.participants() {
            let params = ShutdownParams {
                reason: Id::from_static("session-end"),
            };
            if let Ok(request) = p.caller.prepare(None, params) {
                let _ = call_prepared::<ShutdownResult>(&p, &request, &[], quick, self.step).await;
            }
        }
        let _ = self.phase.go(Phase::Stopped);
    }

    /// The environment, then every agent in sorted agent-id order.
    fn participants(&self) -> Vec<Arc<Participant>> {
        self.environment
            .iter()
            .chain(self.agents.values())
            .cloned()
            .collect()
    }

    /// Enters `phase` and tells the phase hook.
    fn enter(&mut self, phase: Phase) -> Result<(), SessionError> {
        self.phase.go(phase)?;
        let step = self.step;
        if let Some(hook) = self.hook.as_mut() {
            hook(phase, step);
        }
        Ok(())
    }

    /// Fails the epoch with `e`.
    fn fail(&mut self, e: SessionError) -> SessionError {
        let _ = self.phase.go(Phase::Failed);
        e
    }

    /// The scope of a request about `step` in this session and epoch.
    fn scope(&self, step: u64) -> Scope {
        Scope {
            session_id: self.session_id.clone(),
            epoch: self.epoch.clone(),
            step: U64(step),
        }
    }

    /// The threads an agent's worker is given: the session's setting, else the plan's.
    fn worker_threads_of(&self, agent: &Id) -> u32 {
        if self.worker_threads > 0 {
            return self.worker_threads;
        }
        self.plan
            .agents
            .iter()
            .find(|a| a.agent_id == *agent)
            .map_or(1, |a| a.threads)
    }

    fn env(&self) -> Result<Arc<Participant>, SessionError> {
        self.environment
            .clone()
            .ok_or_else(|| self.contract("coordinator", self.step, "no environment".into()))
    }

    fn agent(&self, id: &Id) -> Result<Arc<Participant>, SessionError> {
        self.agents
            .get(id)
            .cloned()
            .ok_or_else(|| self.contract("coordinator", self.step, format!("no agent `{id}`")))
    }

    fn contract(&self, participant: &str, step: u64, reason: String) -> SessionError {
        SessionError::Contract {
            participant: participant.to_owned(),
            step,
            reason,
        }
    }
}
