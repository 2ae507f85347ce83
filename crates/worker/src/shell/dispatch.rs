//! The serving worker: each request through its endpoint on a task of its own, the worker
//! methods answered here, every mutation through one gate (one runs, one waits, a third is
//! `BUSY`), the status kept in step with the phase, simulated restarts, and where a model or
//! backend computes.
//!
//! It knows the method table, the gate, injected faults and the status; each method's checks
//! and effects are in `hello`, `agent`, `environment` and `state_hooks`.

use flysim_types::workers::{
    DomainError, DomainErrorCode, Method, Mutation, Results, ShutdownParams, ShutdownResult,
    StatusResult, WorkerState,
};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use flysim_bus::{Artifact, ArtifactWriter, Client, Request};
use flysim_rpc::{Executed, RpcEndpoint, RpcRequest};
use flysim_types::{DomainRequestId, Id, Scope, U64};

use super::errors::{fail, refuse};
use super::machine::{WorkerMachine, WorkerPhase, Workload};
use super::params;
use super::{Compute, WorkerConfig, lock};

/// A serving worker: its configuration, endpoint, status, state machine and mutation gate.
pub(super) struct Worker {
    /// Who it is and how it runs.
    pub(super) config: WorkerConfig,
    /// Its bus connection (artifacts are allocated and sealed through it).
    pub(super) client: Client,
    /// The deduplicating endpoint of the current incarnation (a restart replaces it).
    pub(super) endpoint: Mutex<Arc<RpcEndpoint>>,
    /// The current incarnation number.
    pub(super) incarnation: AtomicU64,
    /// The session bound by the first Hello or scope.
    pub(super) session: Mutex<Option<Id>>,
    /// What `Worker.Status` answers, kept by every mutation.
    pub(super) status: Mutex<StatusResult>,
    /// The state every mutation reads and changes.
    pub(super) machine: Arc<Mutex<WorkerMachine>>,
    /// One mutation at a time.
    pub(super) gate: tokio::sync::Semaphore,
    /// Mutations running or waiting at the gate.
    pub(super) waiting: AtomicUsize,
    /// Mutations completed (part of the progress counter).
    pub(super) completed: AtomicU64,
    /// The model's or backend's own work counter after the last mutation.
    pub(super) work: AtomicU64,
    /// Wakes the serving loop to register the service anew.
    pub(super) restart: tokio::sync::Notify,
    /// A simulated restart once the current request is answered.
    pub(super) restart_due: std::sync::atomic::AtomicBool,
    /// Wakes the serving loop to stop.
    pub(super) shutdown: tokio::sync::Notify,
    /// `Worker.Shutdown` was asked: stop once the request is answered.
    pub(super) shutdown_due: std::sync::atomic::AtomicBool,
    /// Frame artifacts allocated ahead, off the critical path, by byte length.
    pub(super) spares: Arc<Mutex<Vec<(u64, ArtifactWriter)>>>,
    /// Spare allocations under way.
    pub(super) spares_pending: Arc<AtomicUsize>,
    /// The request id of the last Prepare met (kept only for the broken shell's fault).
    pub(super) last_prepare: Mutex<Option<DomainRequestId>>,
}

/// The incarnation id of incarnation `n`.
fn incarnation_id(n: u64) -> Id {
    Id::parse(&format!("inc-{n}")).unwrap_or_else(|_| incarnation_id(0))
}

/// Serves one bus request through the worker's endpoint.
pub(super) async fn handle(worker: Arc<Worker>, request: Request) {
    let endpoint = Arc::clone(&lock(&worker.endpoint));
    let executor = Arc::clone(&worker);
    let duplicate = Method::parse(&request.method).is_some_and(|method| {
        worker.duplicate_prepare(method, || {
            request
                .payload
                .get("requestId")
                .and_then(serde_json::Value::as_str)
                .and_then(|s| DomainRequestId::parse(s).ok())
        })
    });
    let _ = endpoint
        .serve(request, move |r| async move { executor.execute(r).await })
        .await;
    worker.after_request();
    if duplicate {
        // Beside the reply, which it must not hold up: it waits for the original Prepare.
        let forwarding = Arc::clone(&worker);
        tokio::spawn(async move { forwarding.forward_duplicate().await });
    }
}

impl Worker {
    /// A worker of `config` about to serve `workload` on `client`, at the configured incarnation.
    pub(super) fn new(config: WorkerConfig, client: Client, workload: Workload) -> Self {
        let incarnation = config.incarnation;
        Self {
            endpoint: Mutex::new(Arc::new(RpcEndpoint::new(
                config.worker_id.clone(),
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
                workload,
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
            last_prepare: Mutex::new(None),
            config,
            client,
        }
    }

    /// A due restart or shutdown happens once the request that asked for it is answered.
    pub(super) fn after_request(&self) {
        if self.restart_due.swap(false, Ordering::SeqCst) {
            self.restart_now();
        }
        if self.shutdown_due.load(Ordering::SeqCst) {
            self.shutdown.notify_one();
        }
    }

    /// The id of the current incarnation.
    pub(super) fn incarnation_id(&self) -> Id {
        incarnation_id(self.incarnation.load(Ordering::SeqCst))
    }

    /// Simulated restart: a new incarnation with lost state, registered anew.
    fn restart_now(&self) {
        let next = self.incarnation.fetch_add(1, Ordering::SeqCst) + 1;
        *lock(&self.endpoint) = Arc::new(RpcEndpoint::new(
            self.config.worker_id.clone(),
            incarnation_id(next),
        ));
        lock(&self.machine).forget();
        let mut status = lock(&self.status);
        status.state = WorkerState::Uninitialized;
        status.current_scope = None;
        drop(status);
        self.restart.notify_one();
    }

    /// Answers one request: the worker methods here, mutations through the gate.
    pub(super) async fn execute(&self, r: RpcRequest) -> Executed {
        let done = |result: Result<Results, DomainError>| Executed {
            result,
            artifacts: Vec::new(),
        };
        match r.method {
            Method::WorkerHello => done(self.hello(&r)),
            Method::WorkerStatus => done(Ok(self.status_now().into())),
            Method::WorkerShutdown => done(params::of::<ShutdownParams>(&r.params).map(|_| {
                self.shutdown_due.store(true, Ordering::SeqCst);
                lock(&self.status).state = WorkerState::Stopping;
                ShutdownResult { stopping: true }.into()
            })),
            Method::AgentInitialize
            | Method::AgentPrepare
            | Method::AgentCommit
            | Method::EnvironmentInitialize
            | Method::EnvironmentAdvance
            | Method::StateCapture
            | Method::StateStageRestore
            | Method::StateActivateRestore => self.mutate(r).await,
            // The endpoint answers it before any method runs.
            Method::WorkerAcknowledge => unreachable!("Worker.Acknowledge is the endpoint's"),
        }
    }

    /// A mutation behind the gate, its artifacts attached to the reply.
    async fn mutate(&self, mut r: RpcRequest) -> Executed {
        let mut artifacts = Vec::new();
        let result = self.run_gated(&mut r, &mut artifacts).await;
        Executed { result, artifacts }
    }

    /// Admits a mutation (an injected failure fails the worker; a third in line is `BUSY`), runs
    /// it alone, and leaves the status at the phase it reached.
    async fn run_gated(
        &self,
        r: &mut RpcRequest,
        artifacts: &mut Vec<(Id, Artifact)>,
    ) -> Result<Results, DomainError> {
        let method = r.method;
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
        self.show_active(r.request_id, method);
        // A stall stands for slow work: the status already shows the mutation.
        if let Some((point, pause)) = &faults.stall
            && point.matches(method, step)
        {
            tokio::time::sleep(*pause).await;
        }
        let result = self.run_mutation(method, r, artifacts).await;
        self.settle(r.request_id, &result);
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

    /// The status while `method` runs for `request`.
    fn show_active(&self, request: DomainRequestId, method: Method) {
        let mut status = lock(&self.status);
        status.active_request_id = Some(request);
        status.state = match method {
            Method::AgentPrepare => WorkerState::Preparing,
            Method::AgentCommit => WorkerState::Committing,
            Method::EnvironmentAdvance => WorkerState::Advancing,
            Method::StateCapture => WorkerState::Capturing,
            Method::StateStageRestore => WorkerState::StagedRestore,
            Method::StateActivateRestore => WorkerState::Restoring,
            _ => status.state,
        };
    }

    /// The mutation `method` names.
    async fn run_mutation(
        &self,
        method: Method,
        r: &mut RpcRequest,
        artifacts: &mut Vec<(Id, Artifact)>,
    ) -> Result<Results, DomainError> {
        match method {
            Method::AgentInitialize => self.agent_initialize(r, artifacts).await,
            Method::AgentPrepare => self.agent_prepare(r).await,
            Method::AgentCommit => self.agent_commit(r).await,
            Method::EnvironmentInitialize => self.environment_initialize(r, artifacts).await,
            Method::EnvironmentAdvance => self.environment_advance(r, artifacts).await,
            _ => self.state_hook(r, artifacts).await,
        }
    }

    /// After a mutation of `request`: a failure that began to mutate fails the worker; the
    /// progress counter and the status (state, scope, last completed request) follow the phase.
    fn settle(&self, request: DomainRequestId, result: &Result<Results, DomainError>) {
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
        let mut status = lock(&self.status);
        status.active_request_id = None;
        if result.is_ok() {
            status.last_completed_request_id = Some(request);
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

    /// Runs `f` where this worker computes: on the blocking pool, unless the worker computes
    /// inline or its model or backend is quick ([`crate::AgentModel::quick`]).
    pub(super) async fn compute<T: Send + 'static>(
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
}
