//! The dispatch shell: one bus service per worker, every method of workers-v1 behind
//! `flysim-rpc`'s deduplicating endpoint.
//!
//! Each request runs on its own task, so `Worker.Status` is answered while a mutation runs.
//! Mutations (`Agent.*`, `Environment.*`, `State.*`) pass one gate: one executes at a time, at
//! most one waits, a third is refused `BUSY` before anything happens. The endpoint checks
//! identity (operation key, request id, body) before the shell looks at phases, so a retried
//! request is answered from the cache and never runs twice.
//!
//! Phases, per worker (any other method in a phase is `INVALID_PHASE`):
//!
//! ```text
//! agent:       Uninitialized -Initialize-> Ready(0) -Prepare-> Prepared(k) -Commit-> Ready(k+1)
//! environment: Uninitialized -Initialize-> Ready(0) -Advance-> Ready(k+1)
//! any failure after a mutation began: Failed (answers Status only)
//! ```
//!
//! Scopes: the session is bound by the first Hello; a request of another epoch is
//! `STALE_EPOCH`; a step behind the worker is `STALE_STEP`, ahead `FUTURE_STEP`.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use flysim_bus::{Artifact, ArtifactWriter, BusError, Client, Dispatch, ErrorCode, Request};
use flysim_rpc::local::{LocalFuture, LocalReply, LocalRequest, LocalService};
use flysim_rpc::{Executed, Object, RpcEndpoint, RpcError, RpcRequest};
use flysim_types::digest::{RecentDigests, payload_digest, sha256};
use flysim_types::plan::PlanProfile;
use flysim_types::workers::{
    AdvanceParams, AgentCommitResult, AgentInitializeParams, AgentInitializeResult, ArtifactRef,
    CONTRACT_MAJOR, CONTRACT_MINOR, CommitParams, DomainError, DomainErrorCode,
    EnvironmentInitializeParams, EnvironmentInitializeResult, HelloParams, HelloResult, Mutation,
    PortControl, PrepareParams, PreparedDecision, SensoryInput, ShutdownParams, ShutdownResult,
    StatusResult, StepResult, ViewRef, WorkerLimits, WorkerRole, WorkerState, WorldObservation,
};
use flysim_types::{
    Digest, DomainRequestId, Id, Payload, RationalNs, Scope, TickAccumulator, TypedValue, U64,
};
use miette::Diagnostic;
use serde_json::{Map, Value, json};
use thiserror::Error;

use crate::backend::{
    BackendError, EnvironmentBackend, EnvironmentSetup, Frame, InspectionArtifact,
};
use crate::faults::WorkerFaults;
use crate::identity::{build_digest, capabilities, service_name};
use crate::model::{
    AgentFactory, AgentModel, ModelError, ModelSetup, SensedInput, SensedView, Sensing,
};
use crate::state::{RoleState, ShellHeader};

/// Requests a worker's service queues beyond those in flight.
const SERVICE_QUEUED: u32 = 16;
/// Requests a worker's service has in flight at once (status queries run beside a mutation).
const SERVICE_IN_FLIGHT: u32 = 16;
/// The content type of RGBA8 frame artifacts.
pub const FRAME_CONTENT_TYPE: &str = "image/x-rgba8";

/// Views of at most this many bytes are sealed with their digest (see `Worker::publish`): 4 KiB
/// hash in about 2 µs, less than handing the view to the coordinator's digest thread.
pub const INLINE_DIGEST_BYTES: usize = 4096;

/// What the shell can fail with outside a domain reply.
#[derive(Debug, Error, Diagnostic)]
#[non_exhaustive]
pub enum WorkerError {
    /// The bus refused the service registration or lost the connection.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Bus(#[from] BusError),
}

/// Where a worker's model or backend computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compute {
    /// On the task that serves the request (in-process mode: the coordinator's thread).
    Inline,
    /// On the runtime's blocking pool, so the worker's runtime keeps answering Status (inline
    /// all the same for a quick model or backend, [`AgentModel::quick`]).
    Blocking,
}

/// Who a worker is and how it runs.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// The worker (an agent id or the environment id of the plan).
    pub worker_id: Id,
    /// Its role.
    pub role: WorkerRole,
    /// Its incarnation number; the incarnation id is `inc-<n>`, and a restart takes the next.
    pub incarnation: u64,
    /// The thread allocation it was started within (reported in Hello).
    pub worker_threads: u32,
    /// Where it computes.
    pub compute: Compute,
    /// Injected faults (tests only).
    pub faults: WorkerFaults,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WorkerPhase {
    Uninitialized,
    Ready(u64),
    Prepared { step: u64, request: DomainRequestId },
    Failed,
}

struct AgentState {
    profile: PlanProfile,
    profile_digest: Digest,
    factory: AgentFactory,
    model: Option<Box<dyn AgentModel>>,
    clock: Option<TickAccumulator>,
    warmup: u64,
    /// The retained decision context (shared with the commit that brought it) and its digest.
    context: Option<(Arc<TypedValue>, Digest)>,
}

struct EnvironmentState {
    backend: Box<dyn EnvironmentBackend>,
    config_digest: Digest,
    world_time: RationalNs,
    batches: BTreeSet<Id>,
    /// The digests of the controls recently applied, kept with them (they often repeat).
    controls_digest: RecentDigests<Vec<PortControl>>,
}

enum Workload {
    Agent(Box<AgentState>),
    Environment(Box<EnvironmentState>),
}

struct WorkerMachine {
    phase: WorkerPhase,
    epoch: Option<Id>,
    workload: Workload,
    /// A validated restore waiting for `State.ActivateRestore`: its epoch and shell state.
    staged: Option<(Id, ShellHeader)>,
}

impl WorkerMachine {
    fn work(&self) -> u64 {
        match &self.workload {
            Workload::Agent(a) => a.model.as_ref().map_or(0, |m| m.work()),
            Workload::Environment(e) => e.backend.work(),
        }
    }

    /// Whether the model or backend says each call returns within microseconds.
    fn quick(&self) -> bool {
        match &self.workload {
            Workload::Agent(a) => a.model.as_ref().is_some_and(|m| m.quick()),
            Workload::Environment(e) => e.backend.quick(),
        }
    }
}

struct Worker {
    config: WorkerConfig,
    client: Client,
    endpoint: Mutex<Arc<RpcEndpoint>>,
    incarnation: AtomicU64,
    session: Mutex<Option<Id>>,
    status: Mutex<StatusResult>,
    machine: Arc<Mutex<WorkerMachine>>,
    gate: tokio::sync::Semaphore,
    waiting: AtomicUsize,
    completed: AtomicU64,
    work: AtomicU64,
    restart: tokio::sync::Notify,
    restart_due: std::sync::atomic::AtomicBool,
    shutdown: tokio::sync::Notify,
    shutdown_due: std::sync::atomic::AtomicBool,
    /// Frame artifacts allocated ahead, off the critical path, by byte length.
    spares: Arc<Mutex<Vec<(u64, ArtifactWriter)>>>,
    /// Spare allocations under way.
    spares_pending: Arc<AtomicUsize>,
}

/// Frame artifacts an environment allocates ahead of the next step.
const MAX_SPARES: usize = 8;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn incarnation_id(n: u64) -> Id {
    Id::parse(&format!("inc-{n}")).unwrap_or_else(|_| incarnation_id(0))
}

fn fail(code: DomainErrorCode, mutation: Mutation, message: impl Into<String>) -> DomainError {
    DomainError {
        code,
        message: message.into(),
        mutation,
    }
}

fn refuse(code: DomainErrorCode, message: impl Into<String>) -> DomainError {
    fail(code, Mutation::None, message)
}

/// Decodes a method's params, moving them out of the request (each method reads them once):
/// typed params of the local lane are taken as they are and validated, JSON params decoded.
fn parse<T: Payload + Clone + 'static>(params: &mut Object) -> Result<T, DomainError> {
    std::mem::take(params)
        .parse_payload()
        .map_err(|e| refuse(DomainErrorCode::InvalidArgument, e.to_string()))
}

/// A step operation's params read where they are: the typed value a local-lane request shares
/// with its caller's retries and the dedup table (cloning it would copy every string of a
/// decision context, each step), or the value decoded from a bus request's JSON.
enum StepParams<T> {
    /// A typed `T`, validated.
    Typed(Object),
    /// Decoded and validated.
    Decoded(T),
}

impl<T: Payload + Clone + std::any::Any> StepParams<T> {
    fn parse(params: &mut Object) -> Result<Self, DomainError> {
        let params = std::mem::take(params);
        let invalid = |e: flysim_types::ContractError| {
            refuse(DomainErrorCode::InvalidArgument, e.to_string())
        };
        if let Some(value) = params.downcast_ref::<T>() {
            value.validate().map_err(invalid)?;
            return Ok(Self::Typed(params));
        }
        params.parse_payload().map(Self::Decoded).map_err(invalid)
    }

    /// The value. A typed value cannot change type once shared; the error is for completeness.
    fn get(&self) -> Result<&T, DomainError> {
        match self {
            Self::Typed(object) => object.downcast_ref().ok_or_else(|| {
                fail(
                    DomainErrorCode::Internal,
                    Mutation::None,
                    "typed params changed type",
                )
            }),
            Self::Decoded(value) => Ok(value),
        }
    }
}

/// A value's digest ([`payload_digest`]), refused as an invalid argument.
fn digest_of<T: serde::Serialize>(value: &T) -> Result<Digest, DomainError> {
    payload_digest(value).map_err(|e| refuse(DomainErrorCode::InvalidArgument, e.to_string()))
}

fn model_error(e: ModelError, mutated: bool) -> DomainError {
    let mutation = if mutated {
        Mutation::Unknown
    } else {
        Mutation::None
    };
    match e {
        ModelError::Unsupported { .. } => refuse(DomainErrorCode::Unsupported, e.to_string()),
        ModelError::Invalid(m) if !mutated => refuse(DomainErrorCode::InvalidArgument, m),
        ModelError::Incompatible(m) => fail(DomainErrorCode::IncompatibleState, mutation, m),
        ModelError::Invalid(m) | ModelError::Fault(m) => {
            fail(DomainErrorCode::Internal, Mutation::Unknown, m)
        }
    }
}

fn backend_error(e: BackendError, mutated: bool) -> DomainError {
    match e {
        BackendError::Unsupported { .. } | BackendError::Refused(_) => {
            refuse(DomainErrorCode::Unsupported, e.to_string())
        }
        BackendError::Invalid(m) if !mutated => refuse(DomainErrorCode::InvalidArgument, m),
        BackendError::Incompatible(m) => fail(
            DomainErrorCode::IncompatibleState,
            if mutated {
                Mutation::Unknown
            } else {
                Mutation::None
            },
            m,
        ),
        BackendError::Invalid(m) | BackendError::Fault(m) => {
            fail(DomainErrorCode::BackendFailure, Mutation::Unknown, m)
        }
    }
}

/// Checks that the worker is at `Ready(k)` for a request scoped at `scope.step`.
fn ready_at(phase: WorkerPhase, method: &str, step: u64) -> Result<(), DomainError> {
    match phase {
        WorkerPhase::Ready(k) if k == step => Ok(()),
        WorkerPhase::Ready(k) | WorkerPhase::Prepared { step: k, .. } if step > k => Err(refuse(
            DomainErrorCode::FutureStep,
            format!("{method} names step {step}; the worker is at {k}"),
        )),
        WorkerPhase::Ready(k) | WorkerPhase::Prepared { step: k, .. } if step < k => Err(refuse(
            DomainErrorCode::StaleStep,
            format!("{method} names step {step}; the worker is at {k}"),
        )),
        other => Err(refuse(
            DomainErrorCode::InvalidPhase,
            format!("{method} is not allowed in phase {other:?}"),
        )),
    }
}

/// A running worker: its service and its state. Build it with [`WorkerShell::agent`] or
/// [`WorkerShell::environment`], then [`WorkerShell::serve`].
pub struct WorkerShell {
    config: WorkerConfig,
    workload: Workload,
    lane: Arc<Mutex<Option<Serving>>>,
}

/// What a serving shell shares with its local lane.
struct Serving {
    worker: Arc<Worker>,
    runtime: tokio::runtime::Handle,
    /// The bus service incarnation (what callers pin).
    incarnation: String,
}

/// The local lane to one in-process worker (contracts §3.11): requests reach the shell's
/// endpoint directly, through the same admission, dedup, mutation gate and phases as its bus
/// service, on the worker's own runtime. Artifacts of the replies stay in memory.
///
/// It serves while [`WorkerShell::serve`] runs; before and after, a call is `NO_SERVICE`, and a
/// call pinned to a service incarnation other than the current one is `TARGET_CHANGED`, as on
/// the bus.
#[derive(Clone)]
pub struct LocalLane {
    name: Arc<str>,
    slot: Arc<Mutex<Option<Serving>>>,
}

impl std::fmt::Debug for LocalLane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalLane")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl LocalLane {
    fn refused(&self, code: ErrorCode, message: String, dispatch: Dispatch) -> BusError {
        BusError::Refused {
            op: "rpc.call".into(),
            code,
            message,
            dispatch,
        }
    }
}

impl LocalService for LocalLane {
    fn call(&self, request: LocalRequest) -> LocalFuture {
        let serving = lock(&self.slot).as_ref().map(|s| {
            (
                Arc::clone(&s.worker),
                s.runtime.clone(),
                s.incarnation.clone(),
            )
        });
        let Some((worker, runtime, incarnation)) = serving else {
            let e = self.refused(
                ErrorCode::NoService,
                format!("no service {}", self.name),
                Dispatch::NotDispatched,
            );
            return Box::pin(std::future::ready(Err(e)));
        };
        if let Some(pin) = &request.expected_incarnation
            && *pin != incarnation
        {
            let e = self.refused(
                ErrorCode::TargetChanged,
                format!("{} is now {incarnation}", self.name),
                Dispatch::NotDispatched,
            );
            return Box::pin(std::future::ready(Err(e)));
        }
        let name = Arc::clone(&self.name);
        let gone = move || {
            Err(BusError::Refused {
                op: "rpc.call".into(),
                code: ErrorCode::NoService,
                message: format!("{name} went away during the call"),
                dispatch: Dispatch::Unknown,
            })
        };
        // On the worker's runtime, and to completion even if the caller stops waiting.
        flysim_rpc::local::serve_on(runtime, handle_local(worker, request, incarnation), gone)
    }
}

impl std::fmt::Debug for WorkerShell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerShell")
            .field("worker_id", &self.config.worker_id)
            .field("role", &self.config.role)
            .finish_non_exhaustive()
    }
}

/// The `AssetRef` digest of a profile: SHA-256 of its canonical JSON.
#[must_use]
pub fn profile_digest(profile: &PlanProfile) -> Digest {
    let text = flysim_types::payload::to_canonical(profile).unwrap_or_default();
    sha256(text.as_bytes())
}

impl WorkerShell {
    /// An agent worker running the model `factory` builds from `profile`.
    #[must_use]
    pub fn agent(config: WorkerConfig, profile: PlanProfile, factory: AgentFactory) -> Self {
        Self {
            workload: Workload::Agent(Box::new(AgentState {
                profile_digest: profile_digest(&profile),
                profile,
                factory,
                model: None,
                clock: None,
                warmup: 0,
                context: None,
            })),
            config,
            lane: Arc::new(Mutex::new(None)),
        }
    }

    /// An environment worker running `backend`, whose effective configuration has digest
    /// `config_digest` (what `Environment.Initialize`'s `backendConfig` must name).
    #[must_use]
    pub fn environment(
        config: WorkerConfig,
        backend: Box<dyn EnvironmentBackend>,
        config_digest: Digest,
    ) -> Self {
        Self {
            workload: Workload::Environment(Box::new(EnvironmentState {
                backend,
                config_digest,
                world_time: RationalNs::ZERO,
                batches: BTreeSet::new(),
                controls_digest: RecentDigests::default(),
            })),
            config,
            lane: Arc::new(Mutex::new(None)),
        }
    }

    /// The local lane to this worker (contracts §3.11), serving while [`WorkerShell::serve`]
    /// runs.
    #[must_use]
    pub fn local_lane(&self) -> LocalLane {
        LocalLane {
            name: service_name(self.config.role, &self.config.worker_id).into(),
            slot: Arc::clone(&self.lane),
        }
    }

    /// Registers the worker's service on `client` and answers requests until `Worker.Shutdown`
    /// or the connection ends.
    ///
    /// # Errors
    ///
    /// [`WorkerError::Bus`] when the service cannot be registered.
    pub async fn serve(self, client: Client) -> Result<(), WorkerError> {
        let name = service_name(self.config.role, &self.config.worker_id);
        let mut service = client
            .register(&name, SERVICE_QUEUED, SERVICE_IN_FLIGHT)
            .await?;
        let incarnation = self.config.incarnation;
        let worker = Arc::new(Worker {
            endpoint: Mutex::new(Arc::new(RpcEndpoint::new(
                self.config.worker_id.clone(),
                incarnation_id(incarnation),
            ))),
            incarnation: AtomicU64::new(incarnation),
            session: Mutex::new(None),
            status: Mutex::new(StatusResult {
                state: WorkerState::Uninitialized,
                current_scope: None,
                active_request_id: None,
                last_completed_request_id: None,
                last_batch_id: None,
                progress_counter: U64(0),
            }),
            machine: Arc::new(Mutex::new(WorkerMachine {
                phase: WorkerPhase::Uninitialized,
                epoch: None,
                workload: self.workload,
                staged: None,
            })),
            gate: tokio::sync::Semaphore::new(1),
            waiting: AtomicUsize::new(0),
            completed: AtomicU64::new(0),
            work: AtomicU64::new(0),
            restart: tokio::sync::Notify::new(),
            restart_due: false.into(),
            shutdown: tokio::sync::Notify::new(),
            shutdown_due: false.into(),
            spares: Arc::new(Mutex::new(Vec::new())),
            spares_pending: Arc::new(AtomicUsize::new(0)),
            config: self.config,
            client: client.clone(),
        });
        *lock(&self.lane) = Some(Serving {
            worker: Arc::clone(&worker),
            runtime: tokio::runtime::Handle::current(),
            incarnation: service.incarnation().to_owned(),
        });
        let result = async {
            loop {
                tokio::select! {
                    next = service.next() => {
                        let Some(request) = next else { break };
                        tokio::spawn(handle(Arc::clone(&worker), request));
                    }
                    () = worker.restart.notified() => {
                        let _ = service.unregister().await;
                        service = client.register(&name, SERVICE_QUEUED, SERVICE_IN_FLIGHT).await?;
                        if let Some(serving) = lock(&self.lane).as_mut() {
                            serving.incarnation = service.incarnation().to_owned();
                        }
                    }
                    () = worker.shutdown.notified() => break,
                }
            }
            Ok(())
        }
        .await;
        *lock(&self.lane) = None;
        result
    }
}

async fn handle(worker: Arc<Worker>, request: Request) {
    let endpoint = Arc::clone(&lock(&worker.endpoint));
    let executor = Arc::clone(&worker);
    let _ = endpoint
        .serve(request, move |r| async move { executor.execute(r).await })
        .await;
    worker.after_request();
}

/// [`handle`] for a request of the local lane.
async fn handle_local(
    worker: Arc<Worker>,
    request: LocalRequest,
    incarnation: String,
) -> Result<LocalReply, BusError> {
    let endpoint = Arc::clone(&lock(&worker.endpoint));
    let executor = Arc::clone(&worker);
    let served = endpoint
        .serve_local(request, move |r| async move { executor.execute(r).await })
        .await;
    worker.after_request();
    match served {
        Ok((outcome, attachments)) => Ok(LocalReply {
            outcome,
            attachments,
            service_incarnation: incarnation,
            responder: worker.client.hello().identity.clone(),
        }),
        Err(RpcError::Bus(e)) => Err(e),
        Err(other) => Err(BusError::Refused {
            op: "rpc.call".into(),
            code: ErrorCode::CallGone,
            message: other.to_string(),
            dispatch: Dispatch::Dispatched,
        }),
    }
}

impl Worker {
    /// A due restart or shutdown happens once the request that asked for it is answered.
    fn after_request(&self) {
        if self.restart_due.swap(false, Ordering::SeqCst) {
            self.restart_now();
        }
        if self.shutdown_due.load(Ordering::SeqCst) {
            self.shutdown.notify_one();
        }
    }

    fn incarnation_id(&self) -> Id {
        incarnation_id(self.incarnation.load(Ordering::SeqCst))
    }

    /// Simulated restart: a new incarnation with lost state, registered anew.
    fn restart_now(&self) {
        let next = self.incarnation.fetch_add(1, Ordering::SeqCst) + 1;
        *lock(&self.endpoint) = Arc::new(RpcEndpoint::new(
            self.config.worker_id.clone(),
            incarnation_id(next),
        ));
        {
            let mut machine = lock(&self.machine);
            machine.phase = WorkerPhase::Uninitialized;
            machine.epoch = None;
            match &mut machine.workload {
                Workload::Agent(a) => {
                    a.model = None;
                    a.clock = None;
                    a.context = None;
                }
                Workload::Environment(e) => {
                    e.batches.clear();
                    e.world_time = RationalNs::ZERO;
                }
            }
        }
        let mut status = lock(&self.status);
        status.state = WorkerState::Uninitialized;
        status.current_scope = None;
        drop(status);
        self.restart.notify_one();
    }

    async fn execute(&self, mut r: RpcRequest) -> Executed {
        let done = |result: Result<Object, DomainError>| Executed {
            result,
            artifacts: Vec::new(),
        };
        match r.method.as_str() {
            "Worker.Hello" => done(self.hello(&mut r)),
            "Worker.Status" => done(Ok(Object::typed(self.status_now()))),
            "Worker.Shutdown" => done(parse::<ShutdownParams>(&mut r.params).map(|_| {
                self.shutdown_due.store(true, Ordering::SeqCst);
                lock(&self.status).state = WorkerState::Stopping;
                Object::typed(ShutdownResult { stopping: true })
            })),
            "Agent.Initialize"
            | "Agent.Prepare"
            | "Agent.Commit"
            | "Environment.Initialize"
            | "Environment.Advance"
            | "State.Capture"
            | "State.StageRestore"
            | "State.ActivateRestore" => self.mutate(r).await,
            other => done(Err(refuse(
                DomainErrorCode::Unsupported,
                format!("{other} is not a method of this worker"),
            ))),
        }
    }

    fn status_now(&self) -> StatusResult {
        let mut status = lock(&self.status).clone();
        status.progress_counter =
            U64(self.completed.load(Ordering::SeqCst) + self.work.load(Ordering::SeqCst));
        status
    }

    fn hello(&self, r: &mut RpcRequest) -> Result<Object, DomainError> {
        let params: HelloParams = parse(&mut r.params)?;
        if params.expected_worker_id != self.config.worker_id {
            return Err(refuse(
                DomainErrorCode::IdentityMismatch,
                format!(
                    "this is worker `{}`, not `{}`",
                    self.config.worker_id, params.expected_worker_id
                ),
            ));
        }
        if params.role != self.config.role {
            return Err(refuse(
                DomainErrorCode::IdentityMismatch,
                format!("this worker's role is {:?}", self.config.role),
            ));
        }
        if !params.supported_majors.contains(&CONTRACT_MAJOR) {
            return Err(refuse(
                DomainErrorCode::Unsupported,
                format!("no common contract major; this worker speaks {CONTRACT_MAJOR}"),
            ));
        }
        {
            let mut session = lock(&self.session);
            match &*session {
                Some(s) if *s != params.session_id => {
                    return Err(refuse(
                        DomainErrorCode::IdentityMismatch,
                        format!("this worker serves session `{s}`"),
                    ));
                }
                _ => *session = Some(params.session_id.clone()),
            }
        }
        Ok(Object::typed(HelloResult {
            selected_major: CONTRACT_MAJOR,
            selected_minor: CONTRACT_MINOR,
            worker_id: self.config.worker_id.clone(),
            incarnation_id: self.incarnation_id(),
            role: self.config.role,
            build_digest: build_digest(),
            contract_digest: flysim_types::schema::contract_digest(),
            capabilities: capabilities(self.config.role),
            limits: WorkerLimits {
                max_agents: 1,
                max_ports: 4,
                worker_threads: self.config.worker_threads,
            },
        }))
    }

    /// Checks the scope's session and epoch against the worker's.
    fn check_scope(&self, scope: Option<&Scope>, initialize: bool) -> Result<Scope, DomainError> {
        let scope = scope
            .cloned()
            .ok_or_else(|| refuse(DomainErrorCode::InvalidArgument, "a scope is required"))?;
        {
            let mut session = lock(&self.session);
            match &*session {
                Some(s) if *s != scope.session_id => {
                    return Err(refuse(
                        DomainErrorCode::IdentityMismatch,
                        format!("this worker serves session `{s}`"),
                    ));
                }
                _ => *session = Some(scope.session_id.clone()),
            }
        }
        if !initialize {
            let machine = lock(&self.machine);
            if let Some(epoch) = &machine.epoch
                && *epoch != scope.epoch
            {
                return Err(refuse(
                    DomainErrorCode::StaleEpoch,
                    format!(
                        "epoch `{}` is not the worker's epoch `{epoch}`",
                        scope.epoch
                    ),
                ));
            }
        }
        Ok(scope)
    }

    async fn mutate(&self, mut r: RpcRequest) -> Executed {
        let mut artifacts = Vec::new();
        let result = self.mutate_inner(&mut r, &mut artifacts).await;
        Executed { result, artifacts }
    }

    async fn mutate_inner(
        &self,
        r: &mut RpcRequest,
        artifacts: &mut Vec<(Id, Artifact)>,
    ) -> Result<Object, DomainError> {
        let method_name = r.method.clone();
        let method = method_name.as_str();
        let step = r.scope.as_ref().map_or(0, |s| s.step.get());
        let faults = &self.config.faults;
        if faults
            .fail
            .as_ref()
            .is_some_and(|p| p.matches(method, step))
        {
            lock(&self.machine).phase = WorkerPhase::Failed;
            lock(&self.status).state = WorkerState::Failed;
            return Err(fail(
                DomainErrorCode::Internal,
                Mutation::Unknown,
                format!("injected failure of {method} at step {step}"),
            ));
        }
        if self.waiting.fetch_add(1, Ordering::SeqCst) >= 2 {
            self.waiting.fetch_sub(1, Ordering::SeqCst);
            return Err(refuse(
                DomainErrorCode::Busy,
                "one mutation runs and one waits already",
            ));
        }
        let permit = self.gate.acquire().await;
        {
            let mut status = lock(&self.status);
            status.active_request_id = Some(r.request_id);
            status.state = match method {
                "Agent.Prepare" => WorkerState::Preparing,
                "Agent.Commit" => WorkerState::Committing,
                "Environment.Advance" => WorkerState::Advancing,
                "State.Capture" => WorkerState::Capturing,
                "State.StageRestore" => WorkerState::StagedRestore,
                "State.ActivateRestore" => WorkerState::Restoring,
                _ => status.state,
            };
        }
        // A stall stands for slow work: the status already shows the mutation.
        if let Some((point, pause)) = &faults.stall
            && point.matches(method, step)
        {
            tokio::time::sleep(*pause).await;
        }
        let result = match method {
            "Agent.Initialize" => self.agent_initialize(r, artifacts).await,
            "Agent.Prepare" => self.agent_prepare(r).await,
            "Agent.Commit" => self.agent_commit(r).await,
            "Environment.Initialize" => self.environment_initialize(r, artifacts).await,
            "Environment.Advance" => self.environment_advance(r, artifacts).await,
            _ => self.state_hook(r, artifacts).await,
        };
        let (phase, epoch, work) = {
            let mut machine = lock(&self.machine);
            if result.as_ref().is_err_and(|e| e.mutation != Mutation::None) {
                machine.phase = WorkerPhase::Failed;
            }
            (machine.phase, machine.epoch.clone(), machine.work())
        };
        if result.is_ok() {
            self.completed.fetch_add(1, Ordering::SeqCst);
        }
        self.work.store(work, Ordering::SeqCst);
        {
            let mut status = lock(&self.status);
            status.active_request_id = None;
            if result.is_ok() {
                status.last_completed_request_id = Some(r.request_id);
            }
            let (state, at) = match phase {
                WorkerPhase::Uninitialized => (WorkerState::Uninitialized, None),
                WorkerPhase::Ready(k) => (WorkerState::Ready, Some(k)),
                WorkerPhase::Prepared { step, .. } => (WorkerState::Prepared, Some(step)),
                WorkerPhase::Failed => (
                    WorkerState::Failed,
                    status.current_scope.as_ref().map(|s| s.step.get()),
                ),
            };
            status.state = state;
            status.current_scope = match (at, epoch, lock(&self.session).clone()) {
                (Some(k), Some(epoch), Some(session_id)) if state != WorkerState::Uninitialized => {
                    Some(Scope {
                        session_id,
                        epoch,
                        step: U64(k),
                    })
                }
                _ => None,
            };
        }
        drop(permit);
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        if result.is_ok()
            && faults
                .restart_after
                .as_ref()
                .is_some_and(|p| p.matches(method, step))
        {
            self.restart_due.store(true, Ordering::SeqCst);
        }
        result
    }

    /// Runs `f` where this worker computes: on the blocking pool, unless the worker computes
    /// inline or its model or backend is quick ([`AgentModel::quick`]).
    async fn compute<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut WorkerMachine) -> Result<T, DomainError> + Send + 'static,
    ) -> Result<T, DomainError> {
        let inline = match self.config.compute {
            Compute::Inline => true,
            Compute::Blocking => lock(&self.machine).quick(),
        };
        if inline {
            f(&mut lock(&self.machine))
        } else {
            let machine = Arc::clone(&self.machine);
            tokio::task::spawn_blocking(move || f(&mut lock(&machine)))
                .await
                .unwrap_or_else(|e| {
                    Err(fail(
                        DomainErrorCode::Internal,
                        Mutation::Unknown,
                        format!("the computation panicked: {e}"),
                    ))
                })
        }
    }

    /// Resolves the views of a sensory input against the request's attachments: every view's
    /// pixels must be an attached artifact (a missing view is `BUFFER_INVALID`, never zeros).
    async fn sense(
        &self,
        input: &SensoryInput,
        attachments: &[(Id, Artifact)],
        sensing: Sensing,
    ) -> Result<SensedInput, DomainError> {
        let mut views = Vec::with_capacity(input.views.len());
        for view in &input.views {
            let artifact = attachments
                .iter()
                .map(|(_, a)| a)
                .find(|a| same_artifact(a.reference(), &view.pixels))
                .ok_or_else(|| {
                    refuse(
                        DomainErrorCode::BufferInvalid,
                        format!("view `{}` has no attached artifact", view.view_id),
                    )
                })?;
            let pixels = match sensing {
                Sensing::Blind => None,
                Sensing::Pixels => Some(artifact.read().await.map_err(|e| {
                    refuse(
                        DomainErrorCode::BufferInvalid,
                        format!("view `{}` cannot be read: {e}", view.view_id),
                    )
                })?),
            };
            views.push(SensedView {
                view_id: view.view_id.clone(),
                produced_step: view.produced_step,
                pixels,
            });
        }
        Ok(SensedInput {
            boundary: input.boundary.get(),
            views,
            structured: input.structured.clone(),
        })
    }

    fn sensing(&self) -> Sensing {
        match &lock(&self.machine).workload {
            Workload::Agent(a) => a.model.as_ref().map_or(Sensing::Pixels, |m| m.sensing()),
            Workload::Environment(_) => Sensing::Blind,
        }
    }

    async fn agent_initialize(
        &self,
        r: &mut RpcRequest,
        _artifacts: &mut Vec<(Id, Artifact)>,
    ) -> Result<Object, DomainError> {
        let scope = self.check_scope(r.scope.as_ref(), true)?;
        let params: AgentInitializeParams = parse(&mut r.params)?;
        if scope.step.get() != 0 {
            return Err(refuse(
                DomainErrorCode::InvalidArgument,
                "Agent.Initialize is scoped at step 0",
            ));
        }
        if params.agent_id != self.config.worker_id {
            return Err(refuse(
                DomainErrorCode::IdentityMismatch,
                format!("this is agent `{}`", self.config.worker_id),
            ));
        }
        if params.worker_threads > self.config.worker_threads {
            return Err(refuse(
                DomainErrorCode::Busy,
                format!(
                    "{} threads requested; this worker was started within {}",
                    params.worker_threads, self.config.worker_threads
                ),
            ));
        }
        // The model does not exist yet: the initial views are read once, whatever it senses.
        let sensed = self
            .sense(&params.initial_input, &r.attachments, Sensing::Pixels)
            .await?;
        let epoch = scope.epoch.clone();
        self.compute(move |machine| {
            if machine.phase != WorkerPhase::Uninitialized {
                return Err(refuse(
                    DomainErrorCode::InvalidPhase,
                    "Agent.Initialize needs an uninitialized agent",
                ));
            }
            let Workload::Agent(agent) = &mut machine.workload else {
                return Err(refuse(DomainErrorCode::Unsupported, "not an agent"));
            };
            if params.profile.digest != agent.profile_digest {
                return Err(refuse(
                    DomainErrorCode::IdentityMismatch,
                    format!(
                        "profile sha256:{} is not this agent's profile sha256:{}",
                        params.profile.digest, agent.profile_digest
                    ),
                ));
            }
            let context_digest = digest_of(&params.initial_decision_context)?;
            let setup = ModelSetup {
                agent_id: params.agent_id.clone(),
                profile: agent.profile.clone(),
                seed: params.seed,
                worker_threads: params.worker_threads,
            };
            let mut model = (agent.factory)(&setup).map_err(|e| model_error(e, false))?;
            let clock = TickAccumulator::new(model.tick_duration())
                .map_err(|e| refuse(DomainErrorCode::InvalidArgument, e.to_string()))?;
            let warmup = model
                .warm_up(&sensed, &params.initial_decision_context)
                .map_err(|e| model_error(e, true))?;
            let result = AgentInitializeResult {
                agent_id: params.agent_id,
                profile_digest: agent.profile_digest,
                tick_duration: clock.tick(),
                warmup_ticks: U64(warmup),
                committed_step: U64(0),
                decision_context_digest: context_digest,
                telemetry: model.telemetry(),
                graph: model.graph(),
            };
            agent.model = Some(model);
            agent.clock = Some(clock);
            agent.warmup = warmup;
            agent.context = Some((Arc::new(params.initial_decision_context), context_digest));
            machine.phase = WorkerPhase::Ready(0);
            machine.epoch = Some(epoch);
            Ok(Object::typed(result))
        })
        .await
    }

    async fn agent_prepare(&self, r: &mut RpcRequest) -> Result<Object, DomainError> {
        let scope = self.check_scope(r.scope.as_ref(), false)?;
        let params: StepParams<PrepareParams> = StepParams::parse(&mut r.params)?;
        let request = r.request_id;
        let worker_id = self.config.worker_id.clone();
        self.compute(move |machine| {
            let params = params.get()?;
            let step = scope.step.get();
            ready_at(machine.phase, "Agent.Prepare", step)?;
            let Workload::Agent(agent) = &mut machine.workload else {
                return Err(refuse(DomainErrorCode::Unsupported, "not an agent"));
            };
            if params.agent_id != worker_id || params.profile_digest != agent.profile_digest {
                return Err(refuse(
                    DomainErrorCode::IdentityMismatch,
                    "the agent or profile of Prepare is not this worker's",
                ));
            }
            let agent = &mut **agent;
            let (context, digest) = agent
                .context
                .as_ref()
                .ok_or_else(|| refuse(DomainErrorCode::InvalidPhase, "no retained context"))?;
            if params.decision_context_digest != *digest {
                return Err(refuse(
                    DomainErrorCode::IdentityMismatch,
                    format!(
                        "decision context sha256:{} is not the retained sha256:{digest}",
                        params.decision_context_digest
                    ),
                ));
            }
            let (Some(model), Some(clock)) = (agent.model.as_mut(), agent.clock.as_mut()) else {
                return Err(refuse(DomainErrorCode::InvalidPhase, "no model"));
            };
            let mut next_clock = *clock;
            let ticks = next_clock
                .advance(params.interval)
                .map_err(|e| refuse(DomainErrorCode::InvalidArgument, e.to_string()))?;
            let decision = model
                .prepare(ticks, &params.pre_step_stimulations, context)
                .map_err(|e| {
                    let unsupported = matches!(e, ModelError::Unsupported { .. });
                    model_error(e, !unsupported)
                })?;
            *clock = next_clock;
            let result = PreparedDecision {
                agent_id: params.agent_id.clone(),
                ticks_advanced: U64(ticks),
                brain_ticks: U64(agent.warmup + clock.ticks()),
                remainder: clock.remainder(),
                decision,
            };
            machine.phase = WorkerPhase::Prepared { step, request };
            Ok(Object::typed(result))
        })
        .await
    }

    async fn agent_commit(&self, r: &mut RpcRequest) -> Result<Object, DomainError> {
        let scope = self.check_scope(r.scope.as_ref(), false)?;
        let step_params: StepParams<CommitParams> = StepParams::parse(&mut r.params)?;
        let params = step_params.get()?;
        params
            .validate_against(&scope)
            .map_err(|e| refuse(DomainErrorCode::InvalidArgument, e.to_string()))?;
        let sensed = self
            .sense(&params.next_input, &r.attachments, self.sensing())
            .await?;
        let worker_id = self.config.worker_id.clone();
        self.compute(move |machine| {
            let params = step_params.get()?;
            let step = scope.step.get();
            match machine.phase {
                WorkerPhase::Prepared { step: k, request } if k == step => {
                    if request != params.prepared_request_id {
                        return Err(refuse(
                            DomainErrorCode::InvalidArgument,
                            format!(
                                "the commit names Prepare {}, the agent prepared {request}",
                                params.prepared_request_id
                            ),
                        ));
                    }
                }
                other => {
                    return Err(refuse(
                        DomainErrorCode::InvalidPhase,
                        format!("Agent.Commit at step {step} is not allowed in {other:?}"),
                    ));
                }
            }
            let Workload::Agent(agent) = &mut machine.workload else {
                return Err(refuse(DomainErrorCode::Unsupported, "not an agent"));
            };
            if params.agent_id != worker_id {
                return Err(refuse(
                    DomainErrorCode::IdentityMismatch,
                    "the agent of Commit is not this worker",
                ));
            }
            // The same context as the retained one (a task that never changes it) has the
            // retained digest: the same shared value, or an equal one, costs less than hashing.
            let next = &params.next_decision_context;
            let (same_value, kept) = match &agent.context {
                Some((retained, digest)) if Arc::ptr_eq(retained, next) => (true, Some(*digest)),
                Some((retained, digest)) if retained == next => (false, Some(*digest)),
                _ => (false, None),
            };
            let digest = match kept {
                Some(digest) => digest,
                None => digest_of(&params.next_decision_context)?,
            };
            let model = agent
                .model
                .as_mut()
                .ok_or_else(|| refuse(DomainErrorCode::InvalidPhase, "no model"))?;
            model
                .commit(&sensed, &params.task_stimulations, &params.rewards)
                .map_err(|e| {
                    let unsupported = matches!(e, ModelError::Unsupported { .. });
                    model_error(e, !unsupported)
                })?;
            let result = AgentCommitResult {
                agent_id: params.agent_id.clone(),
                committed_step: U64(step + 1),
                decision_context_digest: digest,
                telemetry: model.telemetry(),
            };
            if !same_value {
                // An equal value is adopted too: the task's next commit of that shared value is
                // then found by pointer.
                agent.context = Some((Arc::clone(next), digest));
            }
            machine.phase = WorkerPhase::Ready(step + 1);
            Ok(Object::typed(result))
        })
        .await
    }

    /// Seals frames as artifacts and builds the observation that names them.
    async fn publish(
        &self,
        observed: Observed,
        artifacts: &mut Vec<(Id, Artifact)>,
        local: bool,
    ) -> Result<WorldObservation, DomainError> {
        let lengths: Vec<u64> = observed
            .frames
            .iter()
            .map(|f| f.bytes.len() as u64)
            .collect();
        let mut sensory_views = Vec::with_capacity(observed.frames.len());
        // Large live frames are sealed without a digest (optional for them, contracts §3.8):
        // hashing one costs a large share of a Game Boy frame, and the router would hash it
        // again to check it, so the coordinator hashes it for the trace itself, off the critical
        // path. A view of at most `INLINE_DIGEST_BYTES` is hashed here, which costs less than
        // that hand-off (the coordinator opening the artifact and waking its digest thread).
        // Nothing reads the digest of bulk inspection (a memory image).
        let frames = observed
            .frames
            .into_iter()
            .map(|f| (f.view_id, Arc::new(f.bytes), true));
        let extra = observed.extra.into_iter().map(|a| (a.name, a.bytes, false));
        for (view_id, bytes, is_view) in frames.chain(extra) {
            let digested = is_view && bytes.len() <= INLINE_DIGEST_BYTES;
            let artifact = self.seal(&view_id, bytes, digested, local).await?;
            if is_view && observed.view_ids.contains(&view_id) {
                sensory_views.push(ViewRef {
                    view_id: view_id.clone(),
                    produced_step: U64(observed.boundary),
                    pixels: artifact.reference().clone(),
                });
            }
            artifacts.push((view_id, artifact));
        }
        if !local {
            self.refill(lengths);
        }
        Ok(WorldObservation {
            boundary: U64(observed.boundary),
            world_time: observed.world_time,
            engine_frame: observed.engine_frame,
            sensory_views,
            inspection: observed.inspection,
            broadcast_views: Vec::new(),
            audio: Vec::new(),
        })
    }

    /// Allocates one artifact per frame of `lengths` in the background, so the next step's
    /// frames are written without an allocation round trip. Best effort: a failed allocation
    /// only means the next seal allocates itself.
    fn refill(&self, lengths: Vec<u64>) {
        // Spares come in batches: when fewer than two steps' worth remain, up to `MAX_SPARES`
        // are allocated at once, their commands in one write, rather than one round trip per
        // frame and step.
        let missing: Vec<u64> = {
            let spares = lock(&self.spares);
            let pending = self.spares_pending.load(Ordering::SeqCst);
            if spares.len() + pending >= 2 * lengths.len() {
                return;
            }
            lengths
                .iter()
                .copied()
                .cycle()
                .take(MAX_SPARES.saturating_sub(spares.len() + pending))
                .collect()
        };
        self.spares_pending
            .fetch_add(missing.len(), Ordering::SeqCst);
        for len in missing {
            let client = self.client.clone();
            let spares = Arc::clone(&self.spares);
            let pending = Arc::clone(&self.spares_pending);
            tokio::spawn(async move {
                if let Ok(writer) = client.allocate(len, FRAME_CONTENT_TYPE).await {
                    lock(&spares).push((len, writer));
                }
                pending.fetch_sub(1, Ordering::SeqCst);
            });
        }
    }

    /// Makes `frame` an immutable artifact, sealed with its SHA-256 when `digested`: a sealed
    /// bus artifact, or for a request of the local lane an in-memory one (contracts §3.11: no
    /// store file, no seal copy; the bytes move in without a copy).
    async fn seal(
        &self,
        view_id: &Id,
        bytes: Arc<Vec<u8>>,
        digested: bool,
        local: bool,
    ) -> Result<Artifact, DomainError> {
        let backend = |e: BusError| {
            fail(
                DomainErrorCode::BackendFailure,
                Mutation::Applied,
                format!("frame `{view_id}` could not be stored: {e}"),
            )
        };
        let digest = digested.then(|| sha256(&bytes));
        if local {
            return self
                .client
                .local_artifact(bytes, FRAME_CONTENT_TYPE, digest)
                .map_err(backend);
        }
        let len = bytes.len() as u64;
        let spare = {
            let mut spares = lock(&self.spares);
            let at = spares.iter().position(|(l, _)| *l == len);
            at.map(|i| spares.swap_remove(i).1)
        };
        let mut writer = match spare {
            Some(writer) => writer,
            None => self
                .client
                .allocate(len, FRAME_CONTENT_TYPE)
                .await
                .map_err(backend)?,
        };
        writer.write(&bytes).map_err(backend)?;
        // Sealed in the same write as the reply that attaches it (the router handles this
        // connection's commands in order); the endpoint confirms the seal after replying.
        writer.seal_queued(digest).map_err(backend)
    }

    async fn environment_initialize(
        &self,
        r: &mut RpcRequest,
        artifacts: &mut Vec<(Id, Artifact)>,
    ) -> Result<Object, DomainError> {
        let scope = self.check_scope(r.scope.as_ref(), true)?;
        let params: EnvironmentInitializeParams = parse(&mut r.params)?;
        if scope.step.get() != 0 {
            return Err(refuse(
                DomainErrorCode::InvalidArgument,
                "Environment.Initialize is scoped at step 0",
            ));
        }
        let epoch = scope.epoch.clone();
        let (descriptor, observed) = self
            .compute(move |machine| {
                if machine.phase != WorkerPhase::Uninitialized {
                    return Err(refuse(
                        DomainErrorCode::InvalidPhase,
                        "Environment.Initialize needs an uninitialized environment",
                    ));
                }
                let Workload::Environment(env) = &mut machine.workload else {
                    return Err(refuse(DomainErrorCode::Unsupported, "not an environment"));
                };
                if params.backend_config.digest != env.config_digest {
                    return Err(refuse(
                        DomainErrorCode::IdentityMismatch,
                        format!(
                            "backend configuration sha256:{} is not this environment's sha256:{}",
                            params.backend_config.digest, env.config_digest
                        ),
                    ));
                }
                for binding in &params.port_bindings {
                    if env.backend.descriptor().port(&binding.port_id).is_none() {
                        return Err(refuse(
                            DomainErrorCode::IdentityMismatch,
                            format!("port `{}` is not declared", binding.port_id),
                        ));
                    }
                }
                env.backend
                    .initialize(&EnvironmentSetup {
                        episode_id: params.episode_id.clone(),
                        port_bindings: params.port_bindings.clone(),
                    })
                    .map_err(|e| backend_error(e, true))?;
                env.world_time = RationalNs::ZERO;
                env.batches.clear();
                let observed = Observed::of(env.backend.as_mut(), 0, RationalNs::ZERO)?;
                machine.phase = WorkerPhase::Ready(0);
                machine.epoch = Some(epoch);
                let Workload::Environment(env) = &machine.workload else {
                    return Err(refuse(DomainErrorCode::Unsupported, "not an environment"));
                };
                Ok((env.backend.descriptor().clone(), observed))
            })
            .await?;
        let observation = self.publish(observed, artifacts, r.local).await?;
        Ok(Object::typed(EnvironmentInitializeResult {
            descriptor,
            observation,
        }))
    }

    async fn environment_advance(
        &self,
        r: &mut RpcRequest,
        artifacts: &mut Vec<(Id, Artifact)>,
    ) -> Result<Object, DomainError> {
        let scope = self.check_scope(r.scope.as_ref(), false)?;
        let params: StepParams<AdvanceParams> = StepParams::parse(&mut r.params)?;
        let batch_id = params.get()?.batch_id.clone();
        let (observed, controls_digest) = self
            .compute(move |machine| {
                let params = params.get()?;
                let step = scope.step.get();
                // First, as before any phase check: controls canonical JSON cannot hold are
                // refused whatever the worker's state.
                let controls_digest = match &mut machine.workload {
                    Workload::Environment(env) => env.controls_digest.digest(&params.controls),
                    Workload::Agent(_) => payload_digest(&params.controls),
                }
                .map_err(|e| refuse(DomainErrorCode::InvalidArgument, e.to_string()))?;
                ready_at(machine.phase, "Environment.Advance", step)?;
                let Workload::Environment(env) = &mut machine.workload else {
                    return Err(refuse(DomainErrorCode::Unsupported, "not an environment"));
                };
                if env.batches.contains(&params.batch_id) {
                    return Err(refuse(
                        DomainErrorCode::Conflict,
                        format!(
                            "batch `{}` was already applied in this epoch",
                            params.batch_id
                        ),
                    ));
                }
                let descriptor = env.backend.descriptor();
                // Validated as they were decoded ([`StepParams::parse`]): only the descriptor's
                // checks are left.
                params
                    .fits(descriptor)
                    .map_err(|e| refuse(DomainErrorCode::InvalidArgument, e.to_string()))?;
                let world_time = env
                    .world_time
                    .checked_add(descriptor.step_duration)
                    .map_err(|e| refuse(DomainErrorCode::InvalidArgument, e.to_string()))?;
                env.backend
                    .advance(&params.controls)
                    .map_err(|e| backend_error(e, true))?;
                env.world_time = world_time;
                env.batches.insert(params.batch_id.clone());
                let observed = Observed::of(env.backend.as_mut(), step + 1, world_time)?;
                machine.phase = WorkerPhase::Ready(step + 1);
                Ok((observed, controls_digest))
            })
            .await?;
        let next = observed.boundary;
        let observation = self.publish(observed, artifacts, r.local).await?;
        lock(&self.status).last_batch_id = Some(batch_id.clone());
        Ok(Object::typed(StepResult {
            batch_id,
            applied_from_step: U64(next - 1),
            next_step: U64(next),
            applied_controls_digest: controls_digest,
            observation: Arc::new(observation),
        }))
    }

    /// `State.Capture`, `State.StageRestore`, `State.ActivateRestore` (contracts §7).
    ///
    /// - Capture, at a committed `Ready(k)`: the shell's own state (boundary, clock, retained
    ///   context or world time) framed around the model's or backend's capture
    ///   ([`crate::state`]), returned as the artifact `payload`.
    /// - StageRestore, on a quiescent `Ready` worker under a *new* epoch (the request's scope):
    ///   the attached `payload` is decoded and handed to the model or backend to validate;
    ///   nothing is installed and the worker keeps answering as before.
    /// - ActivateRestore, under the staged epoch: installs the staged state; the worker is at
    ///   `Ready(k)` of the new epoch. An environment answers with the observation of boundary
    ///   `k` (its frames attached), an agent with `committedStep`. No tick runs.
    async fn state_hook(
        &self,
        r: &mut RpcRequest,
        artifacts: &mut Vec<(Id, Artifact)>,
    ) -> Result<Object, DomainError> {
        let method = r.method.clone();
        let scope = self.check_scope(r.scope.as_ref(), method != "State.Capture")?;
        let payload =
            match r.attachments.iter().find(|(n, _)| n.as_str() == "payload") {
                Some((_, a)) => Some(a.read().await.map_err(|e| {
                    refuse(DomainErrorCode::BufferInvalid, format!("payload: {e}"))
                })?),
                None => None,
            };
        let params = r.params.to_map();
        let outcome = self
            .compute(move |machine| match method.as_str() {
                "State.Capture" => capture(machine).map(StateOutcome::Captured),
                "State.StageRestore" => {
                    let bytes = payload.ok_or_else(|| {
                        refuse(DomainErrorCode::InvalidArgument, "no `payload` attached")
                    })?;
                    stage(machine, &scope, &bytes).map(StateOutcome::Staged)
                }
                _ => activate(machine, &scope),
            })
            .await?;
        let mut result = Map::new();
        if let Some(id) = params.get("checkpointId") {
            result.insert("checkpointId".into(), id.clone());
        }
        match outcome {
            StateOutcome::Captured((boundary, bytes)) => {
                result.insert("boundary".into(), json!(U64(boundary)));
                let id = Id::from_static("payload");
                let artifact = self
                    .seal(
                        &id,
                        Arc::new(bytes),
                        // Checkpoint payloads are always sealed with their digest (§3.8).
                        true,
                        r.local,
                    )
                    .await?;
                result.insert("payload".into(), json!(artifact.reference()));
                artifacts.push((id, artifact));
            }
            StateOutcome::Staged(boundary) => {
                result.insert("boundary".into(), json!(U64(boundary)));
            }
            StateOutcome::AgentActive(boundary) => {
                result.insert("committedStep".into(), json!(U64(boundary)));
                result.insert("observation".into(), Value::Null);
            }
            StateOutcome::EnvironmentActive(observed) => {
                result.insert("committedStep".into(), json!(U64(observed.boundary)));
                let observation = self.publish(*observed, artifacts, r.local).await?;
                result.insert("observation".into(), json!(observation));
            }
        }
        Ok(Object::Json(result))
    }
}

/// What a state method produced inside the computation.
enum StateOutcome {
    Captured((u64, Vec<u8>)),
    Staged(u64),
    AgentActive(u64),
    EnvironmentActive(Box<Observed>),
}

/// `State.Capture`: the shell header around the model's or backend's bytes.
fn capture(machine: &mut WorkerMachine) -> Result<(u64, Vec<u8>), DomainError> {
    let WorkerPhase::Ready(k) = machine.phase else {
        return Err(refuse(
            DomainErrorCode::InvalidPhase,
            format!(
                "State.Capture needs a committed boundary, not {:?}",
                machine.phase
            ),
        ));
    };
    let (role, body) = match &machine.workload {
        Workload::Agent(a) => {
            let (Some(model), Some(clock), Some((context, digest))) =
                (a.model.as_ref(), a.clock.as_ref(), a.context.as_ref())
            else {
                return Err(refuse(DomainErrorCode::InvalidPhase, "no model"));
            };
            let body = model.capture().map_err(|e| model_error(e, false))?;
            let role = RoleState::Agent {
                tick: clock.tick(),
                ticks: U64(clock.ticks()),
                remainder: clock.remainder(),
                warmup: U64(a.warmup),
                context: TypedValue::clone(context),
                context_digest: *digest,
            };
            (role, body)
        }
        Workload::Environment(e) => {
            let body = e.backend.capture().map_err(|e| backend_error(e, false))?;
            (
                RoleState::Environment {
                    world_time: e.world_time,
                },
                body,
            )
        }
    };
    let header = ShellHeader {
        boundary: U64(k),
        role,
    };
    let bytes =
        crate::state::encode(&header, &body).map_err(|e| refuse(DomainErrorCode::Internal, e))?;
    Ok((k, bytes))
}

/// `State.StageRestore`: decodes and validates; installs nothing.
fn stage(machine: &mut WorkerMachine, scope: &Scope, bytes: &[u8]) -> Result<u64, DomainError> {
    if !matches!(machine.phase, WorkerPhase::Ready(_)) {
        return Err(refuse(
            DomainErrorCode::InvalidPhase,
            format!(
                "State.StageRestore needs an initialised, quiescent worker, not {:?}",
                machine.phase
            ),
        ));
    }
    if machine.epoch.as_ref() == Some(&scope.epoch) {
        return Err(refuse(
            DomainErrorCode::InvalidArgument,
            format!(
                "a restore is staged under a new epoch, not `{}`",
                scope.epoch
            ),
        ));
    }
    let incompatible = |m: String| refuse(DomainErrorCode::IncompatibleState, m);
    let (header, body) = crate::state::decode(bytes).map_err(incompatible)?;
    match (&mut machine.workload, &header.role) {
        (Workload::Agent(a), RoleState::Agent { tick, .. }) => {
            let model = a
                .model
                .as_mut()
                .ok_or_else(|| refuse(DomainErrorCode::InvalidPhase, "no model"))?;
            if *tick != model.tick_duration() {
                return Err(incompatible(format!(
                    "the capture counts ticks of {tick} ns, this model {} ns",
                    model.tick_duration()
                )));
            }
            model
                .stage_restore(body)
                .map_err(|e| model_error(e, false))?;
        }
        (Workload::Environment(e), RoleState::Environment { .. }) => {
            e.backend
                .stage_restore(body)
                .map_err(|e| backend_error(e, false))?;
        }
        _ => {
            return Err(incompatible(
                "the capture is of the other role (agent/environment)".into(),
            ));
        }
    }
    let boundary = header.boundary.get();
    machine.staged = Some((scope.epoch.clone(), header));
    Ok(boundary)
}

/// `State.ActivateRestore`: installs what was staged under this epoch, at its boundary.
fn activate(machine: &mut WorkerMachine, scope: &Scope) -> Result<StateOutcome, DomainError> {
    let (epoch, header) = machine.staged.take().ok_or_else(|| {
        refuse(
            DomainErrorCode::InvalidPhase,
            "State.ActivateRestore needs a staged restore",
        )
    })?;
    if epoch != scope.epoch {
        let message = format!("the restore was staged under epoch `{epoch}`");
        machine.staged = Some((epoch, header));
        return Err(refuse(DomainErrorCode::StaleEpoch, message));
    }
    let k = header.boundary.get();
    let outcome = match (&mut machine.workload, header.role) {
        (Workload::Agent(a), role) => {
            let clock = role
                .clock()
                .map_err(|e| refuse(DomainErrorCode::IncompatibleState, e))?;
            let RoleState::Agent {
                warmup,
                context,
                context_digest,
                ..
            } = role
            else {
                return Err(refuse(DomainErrorCode::Internal, "staged role changed"));
            };
            let model = a
                .model
                .as_mut()
                .ok_or_else(|| refuse(DomainErrorCode::InvalidPhase, "no model"))?;
            model.activate_restore().map_err(|e| model_error(e, true))?;
            a.clock = clock;
            a.warmup = warmup.get();
            a.context = Some((Arc::new(context), context_digest));
            StateOutcome::AgentActive(k)
        }
        (Workload::Environment(e), RoleState::Environment { world_time }) => {
            e.backend
                .activate_restore()
                .map_err(|e| backend_error(e, true))?;
            e.world_time = world_time;
            e.batches.clear();
            StateOutcome::EnvironmentActive(Box::new(Observed::of(
                e.backend.as_mut(),
                k,
                world_time,
            )?))
        }
        (Workload::Environment(_), RoleState::Agent { .. }) => {
            return Err(refuse(DomainErrorCode::Internal, "staged role changed"));
        }
    };
    machine.phase = WorkerPhase::Ready(k);
    machine.epoch = Some(epoch);
    Ok(outcome)
}

/// Whether two refs name the same artifact (store, id and generation are its identity).
fn same_artifact(a: &ArtifactRef, b: &ArtifactRef) -> bool {
    a.store_id == b.store_id && a.artifact_id == b.artifact_id && a.generation == b.generation
}

/// What an environment produced at one boundary, before its frames become artifacts.
struct Observed {
    boundary: u64,
    world_time: RationalNs,
    engine_frame: Option<String>,
    inspection: TypedValue,
    view_ids: Vec<Id>,
    frames: Vec<Frame>,
    extra: Vec<InspectionArtifact>,
}

impl Observed {
    fn of(
        backend: &mut dyn EnvironmentBackend,
        boundary: u64,
        world_time: RationalNs,
    ) -> Result<Self, DomainError> {
        let descriptor = backend.descriptor();
        let frames = backend.frames();
        let view_ids: Vec<Id> = descriptor.views.iter().map(|v| v.view_id.clone()).collect();
        for (frame, view) in frames.iter().zip(&descriptor.views) {
            if frame.view_id != view.view_id || frame.bytes.len() as u64 != view.frame_bytes() {
                return Err(fail(
                    DomainErrorCode::BackendFailure,
                    Mutation::Applied,
                    format!(
                        "frame `{}` does not match its declared view ({} bytes)",
                        frame.view_id,
                        view.frame_bytes()
                    ),
                ));
            }
        }
        if frames.len() != descriptor.views.len() {
            return Err(fail(
                DomainErrorCode::BackendFailure,
                Mutation::Applied,
                "the backend produced a frame count other than its declared views",
            ));
        }
        Ok(Self {
            boundary,
            world_time,
            engine_frame: backend.engine_frame(),
            inspection: backend.inspection().map_err(|e| backend_error(e, true))?,
            view_ids,
            frames,
            extra: backend.inspection_artifacts(),
        })
    }
}
