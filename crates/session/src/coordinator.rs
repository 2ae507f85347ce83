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

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use flysim_bus::{Artifact, Client, ErrorCode};
use flysim_rpc::{Outcome, PreparedRequest, RpcCaller, RpcError};
use flysim_types::digest::{RecentDigests, payload_digest, sha256};
use flysim_types::payload::from_value;
use flysim_types::plan::{LaunchPlan, PlanEnvironment};
use flysim_types::trace::DispatchOrder;
use flysim_types::trace::{
    AgentRequest, PhaseTimings, RowText, RunDigester, TraceAgent, TraceBehaviour,
    TraceEpisodeRequest, TraceEvent, TraceObservation, TraceOperational, TraceView,
    TransitionTrace,
};
use flysim_types::workers::{
    AcknowledgeParams, AdvanceParams, AgentCommitResult, AgentInitializeParams,
    AgentInitializeResult, AssetRef, CommitParams, DomainErrorCode, EnvironmentDescriptor,
    EnvironmentInitializeParams, EnvironmentInitializeResult, HelloParams, HelloResult,
    PortBinding, PortControl, PrepareParams, PreparedDecision, SensoryInput, SessionRpcSuccess,
    StatusParams, StatusResult, StepResult, WorkerRole, WorkerState, WorldObservation,
};
use flysim_types::{
    BusCallId, Digest, DomainRequestId, Id, Payload, RationalNs, Scope, TypedValue, U64,
};
use flysim_worker::identity::{build_digest, service_name};
use flysim_worker::shell::profile_digest;
use serde_json::{Map, Value, json};
use tokio::time::Instant;

use crate::digests::{FrameDigester, PendingDigest};
use crate::error::SessionError;
use crate::phase::{Phase, PhaseMachine};
use crate::spin::BusyPoll;

mod checkpoint;
use crate::registry::Registry;
use flysim_component::task::{ActionExecutor, ControllerIntent, Task, TaskEvent, Transition};

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
    caller: RpcCaller,
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
}

/// The observation of the committed boundary, with the artifacts that hold its frames.
struct Current {
    /// Shared with the step that reads it as the previous observation (no copy per step).
    observation: Arc<WorldObservation>,
    /// Held, never read: the frames of the committed boundary stay alive until the next one.
    _frames: Vec<(Id, Artifact)>,
}

/// A behaviour row whose view digests are still being computed ([`crate::digests`]): recorded
/// by [`Coordinator::record`] once they are in.
struct PendingRow {
    row: TransitionTrace,
    digests: Vec<(Id, PendingDigest)>,
    late: LateDigests,
}

/// The digests a row records that no step depends on: the observation's inspection digest and
/// each agent's decision digest. They are computed where the row is finished ([`finish`]), on
/// the digest thread when it polls, rather than on the step's path; the row holds zeros there
/// until then.
struct LateDigests {
    /// The observation whose inspection the row names.
    inspection: Option<Arc<WorldObservation>>,
    /// The decision of each of the row's agents that made one, by its place in the row.
    decisions: Vec<(usize, TypedValue)>,
}

impl LateDigests {
    fn fill(self, row: &mut TraceBehaviour) {
        if let Some(observation) = self.inspection {
            row.observation.inspection_digest = digest_of(&observation.inspection);
        }
        for (at, decision) in self.decisions {
            if let Some(agent) = row.agents.get_mut(at) {
                agent.decision_digest = Some(digest_of(&decision));
            }
        }
    }
}

/// What the digest thread finishes a row into: the row with its view digests and its text, or
/// why it could not.
type Finished = Result<(TransitionTrace, RowText), String>;

/// The run digest as the digest thread carries it forward: the digest state after the first
/// `next` rows of the run. The thread adds a row it finished when that row is the next one
/// (every row before it already in), and hands the state back with the row; the coordinator
/// adopts it when it records that row, so the row's hashing runs beside the next step. A row
/// the thread could not add (an earlier one was still out) is added by the coordinator, which
/// then puts its own state here. Either way the state only ever moves forward through the same
/// rows in the same order, so the run digest is the same bytes whichever side hashed a row.
struct RunShadow {
    digester: RunDigester,
    next: u64,
}

impl RunShadow {
    /// On the digest thread: adds row `seq` (its canonical behaviour text) if it is the next
    /// one, and returns the state reached.
    fn carry(&mut self, seq: u64, behaviour: &[u8]) -> Option<RunDigester> {
        (self.next == seq).then(|| {
            self.digester.push_bytes(behaviour);
            self.next += 1;
            self.digester.clone()
        })
    }
}

/// On the coordinator, recording the row that makes `rows` rows: adopts the state the digest
/// thread `carried` to, or adds the row itself and hands its state to the thread.
fn add_row(
    digester: &mut RunDigester,
    rows: u64,
    shadow: &Mutex<RunShadow>,
    carried: Option<RunDigester>,
    behaviour: &[u8],
) {
    if let Some(carried) = carried {
        *digester = carried;
    } else {
        digester.push_bytes(behaviour);
        share(digester, rows, shadow);
    }
}

/// Puts the run digest after `rows` rows where the digest thread carries it forward.
fn share(digester: &RunDigester, rows: u64, shadow: &Mutex<RunShadow>) {
    let mut shadow = shadow.lock().unwrap_or_else(PoisonError::into_inner);
    shadow.digester = digester.clone();
    shadow.next = rows;
}

/// A row held while the next step runs ([`Coordinator::run`]).
enum Held {
    /// Its digests are awaited and it is committed here, when it is recorded.
    Here(Box<PendingRow>),
    /// The digest thread finishes it (digests filled in, validated, text written) right after
    /// hashing its frames, beside the next step; recording then only adds it to the run digest.
    Beside {
        boundary: u64,
        finished: tokio::sync::oneshot::Receiver<(Finished, Option<RunDigester>)>,
    },
}

impl Held {
    /// Whether recording it now would not wait on the digest thread (a row finished here
    /// awaits its digests as it always has).
    fn ready(&self) -> bool {
        match self {
            Self::Here(_) => true,
            Self::Beside { finished, .. } => !finished.is_empty(),
        }
    }
}

/// Committed rows the coordinator may hold while the digest thread finishes them: beyond this it
/// waits for the oldest. On a virtual machine that thread's look at its queue is now and then
/// milliseconds late (measured: up to 4.4 ms); 64 Game Boy steps are about 9 ms. A held row
/// keeps no frame alive (its frames' jobs do, until hashed).
const MAX_HELD: usize = 64;

/// Puts computed view digests into a traced observation (`None`: the frame could not be read).
fn fill_views(
    observation: &mut TraceObservation,
    digests: Vec<(Id, Option<Digest>)>,
) -> Result<(), String> {
    for (view_id, digest) in digests {
        let digest = digest.ok_or_else(|| {
            format!("view `{view_id}` could not be read to hash it for the trace")
        })?;
        if let Some(view) = observation.views.iter_mut().find(|v| v.view_id == view_id) {
            view.digest = digest;
        }
    }
    Ok(())
}

/// Waits for every digest of a row or observation.
async fn wait_all(digests: Vec<(Id, PendingDigest)>) -> Vec<(Id, Option<Digest>)> {
    let mut done = Vec::with_capacity(digests.len());
    for (view_id, digest) in digests {
        done.push((view_id, digest.wait().await));
    }
    done
}

/// A row with its view digests in: its late digests computed, validated, its text written.
fn finish(
    mut row: TransitionTrace,
    digests: Vec<(Id, Option<Digest>)>,
    late: LateDigests,
) -> Finished {
    fill_views(&mut row.behaviour.observation, digests)?;
    late.fill(&mut row.behaviour);
    row.behaviour.validate().map_err(|e| e.to_string())?;
    let text = row.text().map_err(|e| e.to_string())?;
    Ok((row, text))
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
    current: Option<Current>,
    task: Box<dyn Task>,
    executors: BTreeMap<Id, Box<dyn ActionExecutor>>,
    progress: Value,
    step: u64,
    digester: RunDigester,
    /// The run digest the digest thread carries forward ([`RunShadow`]).
    shadow: Arc<Mutex<RunShadow>>,
    rows: u64,
    /// Hashes in-memory frames for the trace, off the critical path.
    frame_digests: FrameDigester,
    /// The digests of recent controller batches, kept with them.
    control_digests: RecentDigests<Vec<PortControl>>,
    started: std::time::Instant,
    pause: PauseHandle,
    hook: Option<PhaseHook>,
    /// Worker processes that may end before they answer Hello.
    exits: crate::launcher::ExitWatch,
    /// Keeps this thread polling while a reply is due (off unless set).
    poll: BusyPoll,
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

/// The digest of an environment's effective configuration: SHA-256 of its canonical plan entry.
#[must_use]
pub fn environment_config_digest(env: &PlanEnvironment) -> Digest {
    sha256(
        flysim_types::payload::to_canonical(env)
            .unwrap_or_default()
            .as_bytes(),
    )
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

fn obj<T: serde::Serialize>(value: &T) -> Map<String, Value> {
    match serde_json::to_value(value) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

/// The digest of a value's canonical JSON (written straight from the value), zeros for one
/// canonical JSON cannot hold (never a validated payload).
fn digest_of<T: serde::Serialize>(value: &T) -> Digest {
    payload_digest(value).unwrap_or(Digest::from_bytes([0; 32]))
}

fn asset(id: &Id, digest: Digest, bytes: usize, format: &str) -> AssetRef {
    AssetRef {
        id: id.clone(),
        digest,
        byte_length: U64(bytes.max(1) as u64),
        format: Id::parse(format).unwrap_or_else(|_| id.clone()),
    }
}

fn nanos(d: Duration) -> U64 {
    U64(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// One prepared request per agent, with its participant and attachments.
type Outgoing = BTreeMap<Id, (Arc<Participant>, PreparedRequest, Vec<(Id, Artifact)>)>;

/// A successful reply, decoded.
struct Reply<T> {
    result: T,
    attachments: Vec<(Id, Artifact)>,
    call: BusCallId,
    request: DomainRequestId,
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
        let digester = RunDigester::new(&plan.plan_digest);
        let bindings = plan
            .agents
            .iter()
            .map(|a| PortBinding {
                port_id: a.port.clone(),
                agent_id: a.agent_id.clone(),
            })
            .collect();
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
            current: None,
            task,
            executors,
            progress: Value::Null,
            step: 0,
            shadow: Arc::new(Mutex::new(RunShadow {
                digester: digester.clone(),
                next: 0,
            })),
            digester,
            rows: 0,
            started: std::time::Instant::now(),
            pause,
            hook: None,
            exits: crate::launcher::ExitWatch::default(),
            poll: BusyPoll::default(),
            frame_digests: FrameDigester::default(),
            control_digests: RecentDigests::default(),
        })
    }

    /// Sets the phase hook.
    pub fn set_hook(&mut self, hook: PhaseHook) {
        self.hook = Some(hook);
    }

    /// Whether the digest thread polls while frames keep coming: right when the workers run
    /// on this thread (in-process mode) and the other core is otherwise idle, wrong when they
    /// need it ([`crate::digests`]).
    pub fn set_digest_polling(&mut self, poll: bool) {
        self.frame_digests.set_polling(poll);
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
        self.rows
    }

    /// The run digest of the rows committed so far.
    #[must_use]
    pub fn run_digest(&self) -> Digest {
        self.digester.digest()
    }

    fn enter(&mut self, phase: Phase) -> Result<(), SessionError> {
        self.phase.go(phase)?;
        let step = self.step;
        if let Some(hook) = self.hook.as_mut() {
            hook(phase, step);
        }
        Ok(())
    }

    fn fail(&mut self, e: SessionError) -> SessionError {
        let _ = self.phase.go(Phase::Failed);
        e
    }

    fn scope(&self, step: u64) -> Scope {
        Scope {
            session_id: self.session_id.clone(),
            epoch: self.epoch.clone(),
            step: U64(step),
        }
    }

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

    /// Greets every worker (waiting up to the start budget for its service), checks its
    /// identity and health, then initialises the environment, bootstraps the task and
    /// initialises every agent: the committed boundary 0, returned as its trace row.
    ///
    /// # Errors
    ///
    /// Any [`SessionError`]; the phase is then `Failed`.
    pub async fn start(&mut self) -> Result<TransitionTrace, SessionError> {
        self.started = std::time::Instant::now();
        let started = async {
            let row = self.start_inner().await?;
            self.enter(Phase::Ready)?;
            self.record(row).await.map(|(row, _)| row)
        };
        match started.await {
            Ok(row) => Ok(row),
            Err(e) => Err(self.fail(e)),
        }
    }

    async fn start_inner(&mut self) -> Result<PendingRow, SessionError> {
        let begun = std::time::Instant::now();
        let env_id = self.plan.environment.id.clone();
        let env = self.hello(WorkerRole::Environment, &env_id).await?;
        self.environment = Some(Arc::new(env));
        for agent in self.plan.agents.clone() {
            let p = self.hello(WorkerRole::Agent, &agent.agent_id).await?;
            self.agents.insert(agent.agent_id.clone(), Arc::new(p));
        }
        let mut call_ids = Vec::new();
        // The environment first: stopped at O[0].
        let env_plan = self.plan.environment.clone();
        let env_config = environment_config_digest(&env_plan);
        let env_text = flysim_types::payload::to_canonical(&env_plan).unwrap_or_default();
        let task_value = json!({"task": self.plan.task});
        let task_text = flysim_types::json::to_canonical(&task_value).unwrap_or_default();
        let params = EnvironmentInitializeParams {
            backend_config: asset(
                &env_plan.id,
                env_config,
                env_text.len(),
                "flysim-environment-v1",
            ),
            task_config: asset(
                &self.plan.task,
                sha256(task_text.as_bytes()),
                task_text.len(),
                "flysim-task-v1",
            ),
            episode_id: self.episode.clone(),
            port_bindings: self.bindings.clone(),
        };
        let environment = self.env()?;
        let reply: Reply<EnvironmentInitializeResult> = self
            .call(
                &environment,
                "Environment.Initialize",
                Some(0),
                obj(&params),
                &[],
            )
            .await?;
        call_ids.push(reply.call);
        let advance_request = reply.request;
        self.acknowledge(&environment, reply.request).await?;
        let init = reply.result;
        self.check_descriptor(&init.descriptor)?;
        let descriptor = init.descriptor;
        init.observation
            .validate_against(&descriptor)
            .map_err(|e| self.contract(env_id.as_str(), 0, e.to_string()))?;
        self.descriptor = Some(Arc::new(descriptor));
        let observation = init.observation;
        // The task bootstraps the contexts.
        let boot = self
            .task
            .bootstrap(&self.episode, &observation.inspection, &self.bindings)
            .map_err(|e| self.contract("task", 0, e.to_string()))?;
        self.progress = boot.progress;
        // Every agent initialises and warms up; nothing advances the world.
        let input = SensoryInput {
            boundary: U64(0),
            views: observation.sensory_views.clone(),
            structured: None,
        };
        let mut initialized = BTreeMap::new();
        let mut prepare_ids = Vec::new();
        for agent in self.plan.agents.clone() {
            let context = boot.contexts.get(&agent.agent_id).cloned().ok_or_else(|| {
                self.contract(
                    "task",
                    0,
                    format!("no initial context for agent `{}`", agent.agent_id),
                )
            })?;
            let profile = self
                .plan
                .profiles
                .iter()
                .find(|p| p.id == agent.profile)
                .cloned()
                .ok_or_else(|| self.contract("coordinator", 0, "a profile is missing".into()))?;
            let profile_text = flysim_types::payload::to_canonical(&profile).unwrap_or_default();
            let profile_ref = asset(
                &profile.id,
                profile_digest(&profile),
                profile_text.len(),
                "flysim-profile-v1",
            );
            let threads = self.worker_threads_of(&agent.agent_id);
            let params = AgentInitializeParams {
                agent_id: agent.agent_id.clone(),
                profile: profile_ref.clone(),
                seed: agent.seed,
                initial_input: input.clone(),
                initial_decision_context: TypedValue::clone(&context),
                worker_threads: threads,
            };
            let p = self.agent(&agent.agent_id)?;
            let r: Reply<AgentInitializeResult> = self
                .call(
                    &p,
                    "Agent.Initialize",
                    Some(0),
                    obj(&params),
                    &reply.attachments,
                )
                .await?;
            call_ids.push(r.call);
            prepare_ids.push(AgentRequest {
                agent_id: agent.agent_id.clone(),
                request_id: r.request,
            });
            self.acknowledge(&p, r.request).await?;
            let context_digest = digest_of(&context);
            if r.result.decision_context_digest != context_digest
                || r.result.profile_digest != profile_ref.digest
                || r.result.agent_id != agent.agent_id
            {
                return Err(self.contract(
                    agent.agent_id.as_str(),
                    0,
                    "Agent.Initialize answered another agent, profile or context".into(),
                ));
            }
            self.states.insert(
                agent.agent_id.clone(),
                AgentState {
                    profile: profile_ref,
                    model: flysim_types::plan::ModelKind::ALL
                        .iter()
                        .find(|(_, k)| *k == profile.model)
                        .map_or("", |(name, _)| name)
                        .to_owned(),
                    dataset: r.result.graph.dataset_digest,
                    port: agent.port.clone(),
                    seed: agent.seed,
                    threads,
                    tick: r.result.tick_duration,
                    context,
                    context_digest,
                },
            );
            initialized.insert(agent.agent_id.clone(), r.result);
        }
        let agents = initialized
            .iter()
            .map(|(id, r)| TraceAgent {
                agent_id: id.clone(),
                profile_digest: r.profile_digest,
                ticks_advanced: r.warmup_ticks,
                brain_ticks: r.warmup_ticks,
                remainder: RationalNs::ZERO,
                decision_digest: None,
                rewards: Vec::new(),
                stimuli: Vec::new(),
                decision_context_digest: r.decision_context_digest,
                committed_step: U64(0),
            })
            .collect();
        let (trace_observation, digests) =
            self.trace_observation(&env_id, &observation, &reply.attachments)?;
        let behaviour = TraceBehaviour {
            boundary: U64(0),
            episode: self.episode.clone(),
            world_time: observation.world_time,
            batch_id: None,
            control_digest: None,
            agents,
            observation: trace_observation,
            events: self.trace_events(&boot.events),
            episode_request: None,
        };
        let observation = Arc::new(observation);
        let late = LateDigests {
            inspection: Some(Arc::clone(&observation)),
            decisions: Vec::new(),
        };
        self.current = Some(Current {
            observation,
            _frames: reply.attachments.clone(),
        });
        let elapsed = begun.elapsed();
        let row = TransitionTrace {
            behaviour,
            operational: TraceOperational {
                session_id: self.session_id.clone(),
                epoch: self.epoch.clone(),
                step: U64(0),
                prepare_request_ids: prepare_ids,
                commit_request_ids: Vec::new(),
                advance_request_id: Some(advance_request),
                bus_call_ids: call_ids,
                wall_time_ns: nanos(self.started.elapsed()),
                phase_ns: PhaseTimings {
                    prepare: nanos(elapsed),
                    total: nanos(elapsed),
                    ..PhaseTimings::default()
                },
            },
        };
        Ok(PendingRow { row, digests, late })
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

    fn check_descriptor(&self, d: &EnvironmentDescriptor) -> Result<(), SessionError> {
        let env = &self.plan.environment;
        let ports: Vec<&Id> = d.ports.iter().map(|p| &p.port_id).collect();
        let planned: Vec<&Id> = env.ports.iter().map(|p| &p.port_id).collect();
        let reason = if d.backend_digest != env.backend_digest {
            Some("its backend digest is not the plan's".to_owned())
        } else if d.step_duration != env.step_duration {
            Some(format!(
                "its step duration {} is not the plan's {}",
                d.step_duration, env.step_duration
            ))
        } else if ports != planned {
            Some("its ports are not the plan's, in the plan's order".to_owned())
        } else {
            d.validate().err().map(|e| e.to_string())
        };
        match reason {
            Some(reason) => Err(SessionError::Identity {
                participant: env.id.to_string(),
                reason: format!("the environment descriptor differs from the plan: {reason}"),
            }),
            None => Ok(()),
        }
    }

    /// The observation as the row records it. A view sealed with its digest (checked by the
    /// router) gives it; a live frame, sealed without one, is hashed on the digest thread and
    /// its row waits for it in [`Coordinator::record`]. A view whose artifact is not attached is
    /// a contract failure. The inspection digest is left zero for whoever finishes the row
    /// ([`LateDigests`], [`Coordinator::trace_observation_now`]).
    fn trace_observation(
        &mut self,
        env_id: &Id,
        observation: &WorldObservation,
        attachments: &[(Id, Artifact)],
    ) -> Result<(TraceObservation, Vec<(Id, PendingDigest)>), SessionError> {
        let step = observation.boundary.get();
        let mut views = Vec::with_capacity(observation.sensory_views.len());
        let mut pending = Vec::new();
        for view in &observation.sensory_views {
            let digest = match view.pixels.digest {
                Some(digest) => digest,
                None => {
                    let Some((_, artifact)) = attachments
                        .iter()
                        .find(|(_, a)| a.reference() == &view.pixels)
                    else {
                        return Err(self.contract(
                            env_id.as_str(),
                            step,
                            format!("view `{}` is not attached to the reply", view.view_id),
                        ));
                    };
                    pending.push((view.view_id.clone(), self.frame_digests.submit(artifact)));
                    // Filled in by `record` before the row is validated or digested.
                    Digest::from_bytes([0; 32])
                }
            };
            views.push(TraceView {
                view_id: view.view_id.clone(),
                produced_step: view.produced_step,
                digest,
            });
        }
        views.sort_by(|a, b| a.view_id.cmp(&b.view_id));
        Ok((
            TraceObservation {
                inspection_digest: Digest::from_bytes([0; 32]),
                engine_frame: observation.engine_frame.clone(),
                views,
            },
            pending,
        ))
    }

    fn trace_events(&self, events: &[TaskEvent]) -> Vec<TraceEvent> {
        events
            .iter()
            .map(|e| TraceEvent {
                id: e.id.clone(),
                kind_id: e.kind_id.clone(),
                source_step: U64(e.source_step),
                agent_id: e.agent_id.clone(),
                payload_digest: digest_of(&e.payload),
            })
            .collect()
    }

    /// Completes a row with its view digests, then commits it.
    async fn record(
        &mut self,
        pending: PendingRow,
    ) -> Result<(TransitionTrace, RowText), SessionError> {
        let PendingRow { row, digests, late } = pending;
        let boundary = row.behaviour.boundary.get();
        let finished = finish(row, wait_all(digests).await, late);
        self.commit_row(boundary, finished, None)
    }

    /// Holds a row while the next step runs: when the digest thread is otherwise idle and every
    /// frame of the row is already queued there, it finishes the row right after them.
    /// `seq` is the row's place in the run (the rows committed and held before it).
    fn hold(&mut self, pending: PendingRow, seq: u64) -> Held {
        if !self.frame_digests.polling() || !pending.digests.iter().all(|(_, d)| d.queued()) {
            return Held::Here(Box::new(pending));
        }
        let PendingRow { row, digests, late } = pending;
        let boundary = row.behaviour.boundary.get();
        let (tx, finished) = tokio::sync::oneshot::channel();
        let shadow = Arc::clone(&self.shadow);
        self.frame_digests.then(move || {
            // Queued behind the row's frames: their digests are in.
            let digests = digests.into_iter().map(|(id, d)| (id, d.take())).collect();
            let finished = finish(row, digests, late);
            let carried = finished.as_ref().ok().and_then(|(_, text)| {
                let mut shadow = shadow.lock().unwrap_or_else(PoisonError::into_inner);
                shadow.carry(seq, &text.behaviour)
            });
            let _ = tx.send((finished, carried));
        });
        Held::Beside { boundary, finished }
    }

    /// Records a held row.
    async fn record_held(
        &mut self,
        held: Held,
    ) -> Result<(TransitionTrace, RowText), SessionError> {
        let (boundary, finished) = match held {
            Held::Here(pending) => return self.record(*pending).await,
            Held::Beside { boundary, finished } => (boundary, finished),
        };
        let (finished, carried) = finished.await.unwrap_or_else(|_| {
            (
                Err("the digest thread ended before the row was finished".into()),
                None,
            )
        });
        self.commit_row(boundary, finished, carried)
    }

    /// [`Coordinator::trace_observation`], waiting for its digests.
    pub(crate) async fn trace_observation_now(
        &mut self,
        env_id: &Id,
        observation: &WorldObservation,
        attachments: &[(Id, Artifact)],
    ) -> Result<TraceObservation, SessionError> {
        let (mut traced, digests) = self.trace_observation(env_id, observation, attachments)?;
        traced.inspection_digest = digest_of(&observation.inspection);
        fill_views(&mut traced, wait_all(digests).await)
            .map_err(|reason| self.contract("coordinator", observation.boundary.get(), reason))?;
        Ok(traced)
    }

    /// Adds a finished row to the run digest (`carried`: the state the digest thread reached by
    /// adding it, [`RunShadow`]); its canonical text, written once when it was finished, goes to
    /// whoever writes the trace.
    fn commit_row(
        &mut self,
        boundary: u64,
        finished: Finished,
        carried: Option<RunDigester>,
    ) -> Result<(TransitionTrace, RowText), SessionError> {
        let (row, text) =
            finished.map_err(|reason| self.contract("coordinator", boundary, reason))?;
        self.rows += 1;
        add_row(
            &mut self.digester,
            self.rows,
            &self.shadow,
            carried,
            &text.behaviour,
        );
        Ok((row, text))
    }

    /// Hands the digest thread the run digest as it stands ([`RunShadow`]), after rows were
    /// taken over from a checkpoint.
    pub(crate) fn share_run_digest(&self) {
        share(&self.digester, self.rows, &self.shadow);
    }

    /// Says Hello to a worker's service, waiting for it to register, and checks its identity
    /// and health (`Worker.Status` must say `uninitialized`).
    async fn hello(&self, role: WorkerRole, id: &Id) -> Result<Participant, SessionError> {
        let service = service_name(role, id);
        let params = HelloParams {
            session_id: self.session_id.clone(),
            expected_worker_id: id.clone(),
            role,
            supported_majors: vec![flysim_types::workers::CONTRACT_MAJOR],
        };
        let payload = obj(&json!({"requestId": "req-1", "scope": null, "params": params}));
        let until = Instant::now() + self.deadlines.start;
        let launch = |reason: String| SessionError::Launch {
            participant: id.to_string(),
            reason,
        };
        let result = loop {
            let attempt = (Instant::now() + self.deadlines.attempt).min(until);
            match self
                .client
                .call(
                    &service,
                    "Worker.Hello",
                    payload.clone(),
                    &[],
                    None,
                    Some(attempt),
                )
                .await
            {
                Ok(r) => break r,
                Err(e) if e.bus_code() == Some(ErrorCode::NoService) && Instant::now() < until => {
                    if let Some(status) = self.exits.exited(id) {
                        return Err(launch(format!(
                            "its process ended ({status}) before it answered Worker.Hello; \
                             what it reported is above"
                        )));
                    }
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                Err(e) => return Err(launch(format!("no answer to Worker.Hello: {e}"))),
            }
        };
        let identity = |reason: String| SessionError::Identity {
            participant: id.to_string(),
            reason,
        };
        let success: SessionRpcSuccess = match result.outcome.get("type").and_then(Value::as_str) {
            Some("result") => from_value(Value::Object(result.outcome.clone()))
                .map_err(|e| identity(e.to_string()))?,
            _ => {
                return Err(identity(format!(
                    "Hello was refused: {}",
                    Value::Object(result.outcome.clone())
                )));
            }
        };
        let hello: HelloResult =
            from_value(Value::Object(success.result)).map_err(|e| identity(e.to_string()))?;
        let reason = if hello.worker_id != *id || success.worker_id != *id {
            Some(format!("it is worker `{}`", hello.worker_id))
        } else if hello.role != role {
            Some(format!("its role is {:?}", hello.role))
        } else if hello.build_digest != build_digest() {
            Some(format!(
                "its build sha256:{} is not this build sha256:{}",
                hello.build_digest,
                build_digest()
            ))
        } else if hello.contract_digest != flysim_types::schema::contract_digest() {
            Some("it implements another session contract".to_owned())
        } else if hello.incarnation_id != success.incarnation_id {
            Some("its reply names another incarnation".to_owned())
        } else if role == WorkerRole::Agent
            && hello.limits.worker_threads < self.worker_threads_of(id)
        {
            Some(format!(
                "it was started within {} threads, the session asks {}",
                hello.limits.worker_threads,
                self.worker_threads_of(id)
            ))
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(identity(reason));
        }
        let participant = Participant {
            id: id.clone(),
            caller: RpcCaller::new(
                self.client.clone(),
                &service,
                Some(result.service_incarnation.clone()),
                id.clone(),
                hello.incarnation_id,
                1,
            ),
            poll: self.poll.clone(),
        };
        let status: Reply<StatusResult> = self
            .call(
                &participant,
                "Worker.Status",
                None,
                obj(&StatusParams {}),
                &[],
            )
            .await?;
        if status.result.state != WorkerState::Uninitialized {
            return Err(identity(format!(
                "its Status says {:?}, a fresh worker is uninitialized",
                status.result.state
            )));
        }
        Ok(participant)
    }

    async fn acknowledge(
        &self,
        p: &Arc<Participant>,
        request: DomainRequestId,
    ) -> Result<(), SessionError> {
        let params = AcknowledgeParams {
            request_ids: vec![request],
        };
        let _: Reply<Value> = self
            .call(p, "Worker.Acknowledge", None, obj(&params), &[])
            .await?;
        Ok(())
    }

    /// Calls `method` on `p`: a fresh request, resent under the same id after an uncertain
    /// attempt, until a matching terminal reply or the budget.
    async fn call<T: serde::de::DeserializeOwned + Clone + 'static>(
        &self,
        p: &Participant,
        method: &str,
        step: Option<u64>,
        params: Map<String, Value>,
        attachments: &[(Id, Artifact)],
    ) -> Result<Reply<T>, SessionError> {
        let scope = step.map(|s| self.scope(s));
        let request = p
            .caller
            .prepare(method, scope, params)
            .map_err(|e| self.contract(p.id.as_str(), step.unwrap_or(self.step), e.to_string()))?;
        call_prepared(
            p,
            &request,
            attachments,
            self.deadlines,
            step.unwrap_or(self.step),
        )
        .await
    }

    /// Runs one transition `k -> k+1` and returns the row of boundary `k+1`.
    ///
    /// # Errors
    ///
    /// Any [`SessionError`]; the epoch is then failed (`Failed`).
    pub async fn step_once(&mut self) -> Result<TransitionTrace, SessionError> {
        let recorded = match self.transaction().await {
            Ok(pending) => self.record(pending).await.map(|(row, _)| row),
            Err(e) => Err(e),
        };
        recorded.map_err(|e| self.fail(e))
    }

    /// Runs steps until the committed step reaches `until`, a pause is requested (honoured at
    /// a committed boundary), or the task requests a terminal episode. `on_row` gets every row,
    /// in order, with its canonical text; each is recorded while the next step runs (so its
    /// frames are hashed beside the world, [`crate::digests`], and where that thread is
    /// otherwise idle the row is finished there too) and the last before this returns, whatever
    /// it returns.
    ///
    /// # Errors
    ///
    /// The first [`SessionError`]; the rows committed before it stand.
    pub async fn run(
        &mut self,
        until: u64,
        on_row: &mut dyn FnMut(&TransitionTrace, RowText) -> Result<(), SessionError>,
    ) -> Result<Stop, SessionError> {
        let mut held = VecDeque::new();
        let outcome = self.run_holding(until, &mut held, on_row).await;
        let mut last = Ok(());
        while let Some(pending) = held.pop_front() {
            last = match self.record_held(pending).await {
                Ok((row, text)) => on_row(&row, text),
                Err(e) => Err(self.fail(e)),
            };
            if last.is_err() {
                break;
            }
        }
        match (outcome, last) {
            (Err(e), _) | (Ok(_), Err(e)) => Err(e),
            (Ok(stop), Ok(())) => Ok(stop),
        }
    }

    /// [`Coordinator::run`], with the newest committed rows left in `held` for the caller to
    /// record: the newest always, and older ones the digest thread has not finished yet, up to
    /// [`MAX_HELD`] (a late look by that thread then delays rows, not steps).
    async fn run_holding(
        &mut self,
        until: u64,
        held: &mut VecDeque<Held>,
        on_row: &mut dyn FnMut(&TransitionTrace, RowText) -> Result<(), SessionError>,
    ) -> Result<Stop, SessionError> {
        while self.step < until {
            if self.pause.requested() {
                self.enter(Phase::Paused)?;
                return Ok(Stop::Paused {
                    reason: "requested".into(),
                });
            }
            let pending = match self.transaction().await {
                Ok(pending) => pending,
                Err(e) => return Err(self.fail(e)),
            };
            let terminal = pending.row.behaviour.episode_request.clone();
            let seq = self.rows + held.len() as u64;
            let pending = self.hold(pending, seq);
            held.push_back(pending);
            while held.len() > 1 && (held.len() > MAX_HELD || held.front().is_some_and(Held::ready))
            {
                let Some(previous) = held.pop_front() else {
                    break;
                };
                let (row, text) = match self.record_held(previous).await {
                    Ok(recorded) => recorded,
                    Err(e) => return Err(self.fail(e)),
                };
                on_row(&row, text)?;
            }
            if let Some(request) = terminal {
                self.enter(Phase::Paused)?;
                return Ok(Stop::Paused {
                    reason: format!("terminal:{}", request.reason),
                });
            }
        }
        if self.pause.requested() {
            self.enter(Phase::Paused)?;
            return Ok(Stop::Paused {
                reason: "requested".into(),
            });
        }
        Ok(Stop::Complete)
    }

    async fn transaction(&mut self) -> Result<PendingRow, SessionError> {
        let k = self.step;
        let begun = std::time::Instant::now();
        let env = self.env()?;
        let env_id = env.id.clone();
        let descriptor = self
            .descriptor
            .clone()
            .ok_or_else(|| self.contract("coordinator", k, "no descriptor".into()))?;
        let mut calls = Vec::new();

        // Phase A: Prepare, every agent, from frozen contexts.
        self.enter(Phase::Preparing)?;
        let mut requests = BTreeMap::new();
        for (id, state) in &self.states {
            let params = PrepareParams {
                agent_id: id.clone(),
                profile_digest: state.profile.digest,
                interval: descriptor.step_duration,
                decision_context_digest: state.context_digest,
                pre_step_stimulations: Vec::new(),
            };
            let p = self.agent(id)?;
            let request = p
                .caller
                .prepare_typed("Agent.Prepare", Some(self.scope(k)), params)
                .map_err(|e| self.contract(id.as_str(), k, e.to_string()))?;
            requests.insert(id.clone(), (p, request, Vec::new()));
        }
        let mut prepared: BTreeMap<Id, Reply<PreparedDecision>> =
            self.dispatch_all(requests, k).await?;
        for (id, r) in &prepared {
            calls.push(r.call);
            let tick = self
                .states
                .get(id)
                .map_or(RationalNs::MILLISECOND, |s| s.tick);
            r.result
                .validate_against(tick)
                .map_err(|e| self.contract(id.as_str(), k, e.to_string()))?;
            if r.result.agent_id != *id {
                return Err(self.contract(id.as_str(), k, "a decision of another agent".into()));
            }
        }
        let t_prepare = begun.elapsed();

        // Phase B: executors in sorted agent-id order, one complete batch, one Advance.
        self.enter(Phase::Applying)?;
        let previous = self
            .current
            .as_ref()
            .map(|c| c.observation.clone())
            .ok_or_else(|| self.contract("coordinator", k, "no observation".into()))?;
        let inspection = &previous.inspection;
        let mut intents = BTreeMap::new();
        for (id, r) in &prepared {
            let port =
                self.states.get(id).map(|s| s.port.clone()).ok_or_else(|| {
                    self.contract("coordinator", k, format!("no port for `{id}`"))
                })?;
            let schema = descriptor
                .port(&port)
                .map(|p| &p.controls)
                .ok_or_else(|| self.contract("coordinator", k, format!("no port `{port}`")))?;
            let executor = self
                .executors
                .get_mut(id)
                .ok_or_else(|| SessionError::Contract {
                    participant: "executor".into(),
                    step: k,
                    reason: format!("no executor for `{id}`"),
                })?;
            let intent = executor
                .apply(k, &r.result.decision, schema, inspection, &self.progress)
                .map_err(|reason| SessionError::Contract {
                    participant: "executor".into(),
                    step: k,
                    reason: format!("agent `{id}`: {reason}"),
                })?;
            intents.insert(port, intent);
        }
        let controls: Vec<PortControl> = descriptor
            .ports
            .iter()
            .map(|p| {
                intents
                    .remove(&p.port_id)
                    .unwrap_or_else(|| ControllerIntent::neutral(&p.controls))
                    .on(p.port_id.clone())
            })
            .collect();
        let batch = batch_id(&self.episode, k)?;
        let advance = AdvanceParams {
            batch_id: batch.clone(),
            controls,
        };
        advance
            .validate_against(&descriptor)
            .map_err(|e| self.contract("executor", k, e.to_string()))?;
        // Often controls of a few steps ago (a fly holds still, or presses one of a few
        // buttons): then their digest too.
        let control_digest = self
            .control_digests
            .digest(&advance.controls)
            .unwrap_or(Digest::from_bytes([0; 32]));
        let t_apply = begun.elapsed();
        let request = env
            .caller
            .prepare_typed("Environment.Advance", Some(self.scope(k)), advance.clone())
            .map_err(|e| self.contract(env_id.as_str(), k, e.to_string()))?;
        let stepped: Reply<StepResult> =
            call_prepared(&env, &request, &[], self.deadlines, k).await?;
        calls.push(stepped.call);
        let t_advance = begun.elapsed();

        // Phase C: check the result, evaluate once.
        self.enter(Phase::Observing)?;
        let result = stepped.result;
        result
            .validate_against(&descriptor, &previous)
            .map_err(|e| self.contract(env_id.as_str(), k, e.to_string()))?;
        if result.batch_id != batch || result.applied_controls_digest != control_digest {
            return Err(self.contract(
                env_id.as_str(),
                k,
                "the step result names another batch or controls digest".into(),
            ));
        }
        let next = k + 1;
        let mut evaluation = self
            .task
            .evaluate_transition(&Transition {
                step: k,
                episode: &self.episode,
                old: inspection,
                new: &result.observation.inspection,
                controls: &advance.controls,
                bindings: &self.bindings,
            })
            .map_err(|reason| SessionError::Contract {
                participant: "task".into(),
                step: k,
                reason: reason.to_string(),
            })?;
        for id in self.states.keys() {
            if !evaluation.outcomes.contains_key(id) || !evaluation.contexts.contains_key(id) {
                return Err(SessionError::Contract {
                    participant: "task".into(),
                    step: k,
                    reason: format!("no outcome or context for agent `{id}`"),
                });
            }
        }
        if evaluation.outcomes.len() != self.states.len()
            || evaluation.contexts.len() != self.states.len()
        {
            return Err(SessionError::Contract {
                participant: "task".into(),
                step: k,
                reason: "an outcome or context for an unknown agent".into(),
            });
        }
        let (observation_trace, digests) =
            self.trace_observation(&env_id, &result.observation, &stepped.attachments)?;
        let t_evaluate = begun.elapsed();

        // Phase D: Commit, every agent; all must succeed.
        self.enter(Phase::Committing)?;
        let input = SensoryInput {
            boundary: U64(next),
            views: result.observation.sensory_views.clone(),
            structured: None,
        };
        let mut requests = BTreeMap::new();
        // Each agent's next context goes to its commit; the coordinator hashes only a context
        // that changed. A task often hands the same one on (the arena's never changes): the held
        // value and its digest then stay, found by pointer (or, for an equal new value, by
        // comparing the values).
        let mut next_contexts = BTreeMap::new();
        for (id, prep) in &prepared {
            let outcome = evaluation.outcomes.get(id).cloned().unwrap_or_default();
            let context = evaluation
                .contexts
                .remove(id)
                .ok_or_else(|| self.contract("task", k, format!("no context for `{id}`")))?;
            let next = match self.states.get(id) {
                Some(s) if Arc::ptr_eq(&s.context, &context) => (None, s.context_digest),
                // An equal value keeps the digest and is adopted, so that the next step's commit
                // of the same shared value is found by pointer.
                Some(s) if s.context == context => (Some(Arc::clone(&context)), s.context_digest),
                _ => {
                    let digest = digest_of(&context);
                    (Some(context.clone()), digest)
                }
            };
            next_contexts.insert(id.clone(), next);
            let params = CommitParams {
                agent_id: id.clone(),
                prepared_request_id: prep.request,
                next_input: input.clone(),
                next_decision_context: context,
                rewards: outcome.rewards,
                task_stimulations: outcome.stimuli,
            };
            let p = self.agent(id)?;
            let request = p
                .caller
                .prepare_typed("Agent.Commit", Some(self.scope(k)), params)
                .map_err(|e| self.contract(id.as_str(), k, e.to_string()))?;
            requests.insert(id.clone(), (p, request, stepped.attachments.clone()));
        }
        let committed: BTreeMap<Id, Reply<AgentCommitResult>> =
            self.dispatch_all(requests, k).await?;
        let mut agents = Vec::with_capacity(committed.len());
        let mut decisions = Vec::with_capacity(committed.len());
        for (id, r) in &committed {
            calls.push(r.call);
            let (context, context_digest) = next_contexts
                .remove(id)
                .ok_or_else(|| self.contract("coordinator", k, format!("no context for `{id}`")))?;
            if r.result.committed_step.get() != next
                || r.result.decision_context_digest != context_digest
                || r.result.agent_id != *id
            {
                return Err(self.contract(
                    id.as_str(),
                    k,
                    "the commit result names another step, agent or context".into(),
                ));
            }
            let prep = prepared
                .get_mut(id)
                .ok_or_else(|| self.contract("coordinator", k, format!("no decision of `{id}`")))?;
            let outcome = evaluation.outcomes.remove(id).unwrap_or_default();
            let state = self
                .states
                .get_mut(id)
                .ok_or_else(|| SessionError::Contract {
                    participant: "coordinator".into(),
                    step: k,
                    reason: format!("no state for `{id}`"),
                })?;
            if let Some(context) = context {
                state.context = context;
            }
            state.context_digest = context_digest;
            // Moved out for its digest: the row keeps only the request ids of the prepares.
            let decision = &mut prep.result.decision;
            decisions.push((
                agents.len(),
                TypedValue {
                    schema: decision.schema.clone(),
                    value: std::mem::take(&mut decision.value),
                },
            ));
            agents.push(TraceAgent {
                agent_id: id.clone(),
                profile_digest: state.profile.digest,
                ticks_advanced: prep.result.ticks_advanced,
                brain_ticks: prep.result.brain_ticks,
                remainder: prep.result.remainder,
                // Filled in with the row's other late digests.
                decision_digest: Some(Digest::from_bytes([0; 32])),
                rewards: outcome.rewards,
                stimuli: outcome.stimuli.iter().map(|s| s.id.clone()).collect(),
                decision_context_digest: context_digest,
                committed_step: U64(next),
            });
        }
        let t_commit = begun.elapsed();

        // The committed boundary k+1.
        self.progress = std::mem::take(&mut evaluation.progress);
        self.step = next;
        let episode_request = evaluation
            .episode_request
            .as_ref()
            .map(|r| TraceEpisodeRequest {
                kind: r.kind,
                reason: r.reason.clone(),
                outcome_digest: digest_of(&r.outcome),
            });
        let behaviour = TraceBehaviour {
            boundary: U64(next),
            episode: self.episode.clone(),
            world_time: result.observation.world_time,
            batch_id: Some(batch),
            control_digest: Some(control_digest),
            agents,
            observation: observation_trace,
            events: self.trace_events(&evaluation.events),
            episode_request,
        };
        let observation = result.observation;
        let late = LateDigests {
            inspection: Some(Arc::clone(&observation)),
            decisions,
        };
        self.current = Some(Current {
            observation,
            _frames: stepped.attachments,
        });
        self.enter(Phase::Ready)?;
        let operational = TraceOperational {
            session_id: self.session_id.clone(),
            epoch: self.epoch.clone(),
            step: U64(k),
            prepare_request_ids: prepared
                .iter()
                .map(|(id, r)| AgentRequest {
                    agent_id: id.clone(),
                    request_id: r.request,
                })
                .collect(),
            commit_request_ids: committed
                .iter()
                .map(|(id, r)| AgentRequest {
                    agent_id: id.clone(),
                    request_id: r.request,
                })
                .collect(),
            advance_request_id: Some(stepped.request),
            bus_call_ids: calls,
            wall_time_ns: nanos(self.started.elapsed()),
            phase_ns: PhaseTimings {
                prepare: nanos(t_prepare),
                apply: nanos(t_apply - t_prepare),
                advance: nanos(t_advance - t_apply),
                evaluate: nanos(t_evaluate - t_advance),
                commit: nanos(t_commit - t_evaluate),
                total: nanos(t_commit),
            },
        };
        Ok(PendingRow {
            row: TransitionTrace {
                behaviour,
                operational,
            },
            digests,
            late,
        })
    }

    /// Sends one prepared request per agent in the configured dispatch order and collects the
    /// replies by agent id. Sequential and reversed dispatch stop at the first failure;
    /// concurrent dispatch waits for every call, then reports the first failure in agent order.
    /// A single call is made in place whatever the order (there is nothing to overlap, and a
    /// task per call costs a spawn and a join).
    async fn dispatch_all<T: serde::de::DeserializeOwned + Clone + Send + 'static>(
        &self,
        requests: Outgoing,
        step: u64,
    ) -> Result<BTreeMap<Id, Reply<T>>, SessionError> {
        let deadlines = self.deadlines;
        let mut replies = BTreeMap::new();
        let dispatch = if requests.len() > 1 {
            self.dispatch
        } else {
            DispatchOrder::Sequential
        };
        match dispatch {
            DispatchOrder::Sequential | DispatchOrder::Reversed => {
                let reversed = self.dispatch == DispatchOrder::Reversed;
                let mut requests = requests;
                let mut next = || {
                    if reversed {
                        requests.pop_last()
                    } else {
                        requests.pop_first()
                    }
                };
                while let Some((id, (p, request, attachments))) = next() {
                    let reply = call_prepared(&p, &request, &attachments, deadlines, step).await?;
                    replies.insert(id, reply);
                }
            }
            DispatchOrder::Concurrent => {
                let mut tasks = Vec::with_capacity(requests.len());
                for (id, (p, request, attachments)) in requests {
                    tasks.push((
                        id,
                        tokio::spawn(async move {
                            call_prepared::<T>(&p, &request, &attachments, deadlines, step).await
                        }),
                    ));
                }
                let mut first_error = None;
                for (id, task) in tasks {
                    match task.await {
                        Ok(Ok(reply)) => {
                            replies.insert(id, reply);
                        }
                        Ok(Err(e)) => {
                            first_error.get_or_insert(e);
                        }
                        Err(e) => {
                            first_error.get_or_insert(SessionError::Contract {
                                participant: id.to_string(),
                                step,
                                reason: format!("the call task ended: {e}"),
                            });
                        }
                    }
                }
                if let Some(e) = first_error {
                    return Err(e);
                }
            }
        }
        Ok(replies)
    }

    /// Queries every worker's `Worker.Status` (health; `progressCounter` shows work done).
    ///
    /// # Errors
    ///
    /// A [`SessionError`] when a worker does not answer.
    pub async fn statuses(&self) -> Result<BTreeMap<Id, StatusResult>, SessionError> {
        let mut out = BTreeMap::new();
        let participants = self
            .environment
            .iter()
            .chain(self.agents.values())
            .cloned()
            .collect::<Vec<_>>();
        for p in participants {
            let r: Reply<StatusResult> = self
                .call(&p, "Worker.Status", None, obj(&StatusParams {}), &[])
                .await?;
            out.insert(p.id.clone(), r.result);
        }
        Ok(out)
    }

    /// Sends `Worker.Shutdown` to every worker (best effort, one attempt each) and stops.
    pub async fn shutdown(&mut self) {
        let participants = self
            .environment
            .iter()
            .chain(self.agents.values())
            .cloned()
            .collect::<Vec<_>>();
        let quick = Deadlines {
            attempt: Duration::from_millis(500),
            budget: Duration::from_millis(500),
            ..self.deadlines
        };
        for p in participants {
            let params = obj(&json!({"reason": "session-end"}));
            if let Ok(request) = p.caller.prepare("Worker.Shutdown", None, params) {
                let _ = call_prepared::<Value>(&p, &request, &[], quick, self.step).await;
            }
        }
        let _ = self.phase.go(Phase::Stopped);
    }

    /// The agents' seeds and thread allocations, by id (for manifests and tests).
    #[must_use]
    pub fn allocations(&self) -> BTreeMap<Id, (i32, u32)> {
        self.states
            .iter()
            .map(|(id, s)| (id.clone(), (s.seed, s.threads)))
            .collect()
    }
}

/// Sends `request` until a matching terminal reply: each attempt under a fresh bus call and a
/// deadline, always the same request id and body; `IN_PROGRESS` waits and resends. A domain
/// failure, a lost worker or router, a changed incarnation, or the budget end the call.
async fn call_prepared<T: serde::de::DeserializeOwned + Clone + 'static>(
    p: &Participant,
    request: &PreparedRequest,
    attachments: &[(Id, Artifact)],
    deadlines: Deadlines,
    step: u64,
) -> Result<Reply<T>, SessionError> {
    let method = request.method();
    let request_id = request.request_id();
    let budget_ms = u64::try_from(deadlines.budget.as_millis()).unwrap_or(u64::MAX);
    let until = Instant::now() + deadlines.budget;
    let mut backoff = Duration::from_millis(1);
    let classify = |e: RpcError| {
        SessionError::from_rpc(
            e,
            p.id.as_str(),
            method,
            step,
            request_id.to_string(),
            budget_ms,
        )
    };
    loop {
        let attempt = (Instant::now() + deadlines.attempt).min(until);
        p.poll.kick();
        match p.caller.call(request, attachments, Some(attempt)).await {
            Ok(reply) => match reply.outcome {
                Outcome::Success(success) => {
                    let result =
                        success
                            .result
                            .parse::<T>()
                            .map_err(|e| SessionError::Contract {
                                participant: p.id.to_string(),
                                step,
                                reason: format!("the {method} result is malformed: {e}"),
                            })?;
                    return Ok(Reply {
                        result,
                        attachments: reply.attachments,
                        call: reply.call.call_id,
                        request: request_id,
                    });
                }
                Outcome::Failure(f) if f.error.code == DomainErrorCode::InProgress => {
                    if Instant::now() + backoff >= until {
                        return Err(SessionError::Uncertain {
                            participant: p.id.to_string(),
                            method: method.to_owned(),
                            step,
                            request_id: request_id.to_string(),
                            budget_ms,
                            reason: "the worker still reports IN_PROGRESS".into(),
                        });
                    }
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_millis(20));
                }
                Outcome::Failure(f) => {
                    return Err(SessionError::Refused {
                        participant: p.id.to_string(),
                        method: method.to_owned(),
                        step,
                        request_id: request_id.to_string(),
                        code: f.error.code,
                        mutation: f.error.mutation,
                        message: f.error.message,
                    });
                }
            },
            Err(RpcError::Bus(e))
                if !matches!(
                    e.bus_code(),
                    Some(ErrorCode::RouterLost | ErrorCode::NoService | ErrorCode::TargetChanged)
                ) && Instant::now() < until =>
            {
                // Deadline or backpressure: resend the same request under a new call.
                if e.bus_code() == Some(ErrorCode::Backpressure) {
                    tokio::time::sleep(backoff).await;
                }
            }
            Err(e) => return Err(classify(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    use flysim_types::Digest;
    use flysim_types::trace::RunDigester;

    use super::{RunShadow, add_row, share};

    /// Rows finished on the digest thread in any order the run allows, mixed with rows the
    /// coordinator finishes itself: after every recorded row the run digest is the one of
    /// adding the rows one by one.
    #[test]
    fn the_run_digest_is_the_same_whichever_side_hashed_each_row() {
        let start = RunDigester::new(&Digest::from_bytes([7; 32]));
        let texts: Vec<Vec<u8>> = (0..60)
            .map(|i| format!("{{\"row\":{i}}}").into_bytes())
            .collect();
        let mut expected = Vec::new();
        let mut sequential = start.clone();
        for text in &texts {
            sequential.push_bytes(text);
            expected.push(sequential.digest());
        }
        for seed in 0..200_u64 {
            let mut rng = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
            let mut next = move || {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng
            };
            // A row the coordinator finishes itself, now and then, as a run may have.
            let beside: Vec<bool> = texts.iter().map(|_| next() % 4 != 0).collect();
            let shadow = Mutex::new(RunShadow {
                digester: start.clone(),
                next: 0,
            });
            let (mut digester, mut rows) = (start.clone(), 0_u64);
            let mut carried: BTreeMap<usize, Option<RunDigester>> = BTreeMap::new();
            let (mut thread, mut main) = (0, 0);
            while main < texts.len() {
                while thread < texts.len() && !beside[thread] {
                    thread += 1;
                }
                // The thread finishes a row before the coordinator records it; otherwise the
                // two go on in any order.
                let main_may = !beside[main] || carried.contains_key(&main);
                if thread < texts.len() && (!main_may || next() % 2 == 0) {
                    let state = shadow.lock().unwrap().carry(thread as u64, &texts[thread]);
                    carried.insert(thread, state);
                    thread += 1;
                } else {
                    rows += 1;
                    let state = carried.remove(&main).flatten();
                    add_row(&mut digester, rows, &shadow, state, &texts[main]);
                    assert_eq!(digester.digest(), expected[main], "seed {seed}, row {main}");
                    main += 1;
                }
            }
        }
        // Taking rows over from elsewhere resets what the thread carries forward.
        let shadow = Mutex::new(RunShadow {
            digester: start.clone(),
            next: 0,
        });
        let mut digester = start.clone();
        for text in &texts[..10] {
            digester.push_bytes(text);
        }
        share(&digester, 10, &shadow);
        assert!(shadow.lock().unwrap().carry(11, &texts[11]).is_none());
        let carried = shadow.lock().unwrap().carry(10, &texts[10]).unwrap();
        assert_eq!(carried.digest(), expected[10]);
    }
}
