//! The launcher: one router, one coordinator client, and every worker of a plan, in one of
//! three execution modes over one of two transports.
//!
//! - **in-process**: every worker is a task on the coordinator's runtime (one thread); models
//!   compute inline.
//! - **thread**: every worker runs on its own thread with its own runtime; models compute on
//!   that runtime's blocking pool, so Status answers during a computation (a quick one inline).
//! - **process**: every worker is a `flysim worker agent|environment ...` child process with a
//!   cleared environment (plus only what [`WorkerProgram::env`] hands on), talking to the router
//!   over a Unix socket in a private (0700) runtime directory; models compute on the blocking
//!   pool (a quick model or backend computes inline, `AgentModel::quick`). [`ExitWatch`] lets
//!   the coordinator see a process that ends before its Hello.
//!
//! The memory transport is an in-process [`flysim_bus::Link`]: envelopes handed over as values,
//! bound to the participant's id like a launcher's socket. The coordinator's own connection to
//! the router is such a link in every mode: only the workers' connections use the chosen
//! transport. With [`LaunchOptions::local_lane`], the coordinator reaches in-process and thread
//! workers through their local lanes (contracts §3.11) instead of the bus; Hello still goes over
//! the bus.
//!
//! The thread budget is checked before anything starts (`BUSY`, `FS0304`). Workers are reaped
//! by [`Launch::reap`]: `Worker.Shutdown` first (sent by the coordinator), then a wait of the
//! reap budget, then a kill. Dropping a [`Launch`] kills every child process it still holds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use flysim_bus::{Client, ClientOptions, Router, RouterConfig};
use flysim_types::Id;
use flysim_types::plan::{LaunchPlan, RunMode, Transport};
use flysim_types::workers::WorkerRole;
use flysim_worker::faults::FaultPoint;
use flysim_worker::identity::service_name;
use flysim_worker::{Compute, WorkerConfig, WorkerFaults, WorkerShell};

use crate::error::SessionError;
use crate::registry::Registry;

/// How to start `flysim worker ...` for process mode: the executable and the arguments that
/// come before `worker`.
#[derive(Debug, Clone)]
pub struct WorkerProgram {
    /// The `flysim` executable.
    pub exe: PathBuf,
    /// Arguments before `worker` (none for the `flysim` binary itself).
    pub args: Vec<String>,
    /// The only environment variables a worker process gets (its environment is otherwise
    /// cleared): what the launching side resolved and hands on explicitly, e.g. the Dolphin and
    /// Xvfb it found, so a worker process uses exactly the tools an in-process worker would.
    pub env: Vec<(String, std::ffi::OsString)>,
}

/// What the launcher needs besides the plan.
#[derive(Debug, Clone)]
pub struct LaunchOptions {
    /// The execution mode.
    pub mode: RunMode,
    /// The transport.
    pub transport: Transport,
    /// Threads per agent worker (default: each agent's `threads` from the plan).
    pub worker_threads: Option<u32>,
    /// The directory under which the private runtime directory is created.
    pub runtime_parent: PathBuf,
    /// The worker executable, for process mode.
    pub program: Option<WorkerProgram>,
    /// Injected faults by worker id (tests only).
    pub faults: BTreeMap<Id, WorkerFaults>,
    /// Content-addressed bytes (ROMs, profiles, connectomes) that worker processes may need:
    /// in process mode each is written to `<runtime dir>/content/<sha256 hex>` beside the plan,
    /// where a worker finds them by the digest its plan pins. Unused in the other modes, whose
    /// component factories hold their bytes already.
    pub content: BTreeMap<flysim_types::Digest, Vec<u8>>,
    /// In-process and thread modes: the coordinator reaches its workers through the local lane
    /// (contracts §3.11: the same endpoint, dedup and phases, no bus round trip, frames in
    /// memory) rather than over the bus. Process mode always uses the bus. Behaviour, and so
    /// every digest, is the same either way.
    pub local_lane: bool,
}

enum Handle {
    Task(tokio::task::JoinHandle<()>),
    Thread(std::thread::JoinHandle<()>),
    /// Shared with [`ExitWatch`], which polls it without waiting.
    Process(Arc<Mutex<Child>>),
}

fn lock_child(child: &Mutex<Child>) -> std::sync::MutexGuard<'_, Child> {
    child
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Says whether a worker process has already ended, without waiting for it: the coordinator
/// asks while it waits for a worker's Hello, so a worker that exits at start (say, after
/// printing its own diagnostic) is reported at once rather than after the start deadline.
#[derive(Clone, Default)]
pub struct ExitWatch {
    children: BTreeMap<Id, Arc<Mutex<Child>>>,
}

impl std::fmt::Debug for ExitWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.children.keys()).finish()
    }
}

impl ExitWatch {
    /// How worker `id`'s process ended, if it is a process and has ended.
    #[must_use]
    pub fn exited(&self, id: &Id) -> Option<String> {
        let child = self.children.get(id)?;
        match lock_child(child).try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            Ok(None) | Err(_) => None,
        }
    }
}

/// A launched session: router, coordinator client and workers.
pub struct Launch {
    router: Router,
    client: Client,
    workers: BTreeMap<Id, Handle>,
    dir: tempfile::TempDir,
}

impl std::fmt::Debug for Launch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launch")
            .field("router", &self.router.router_id())
            .field("workers", &self.workers.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// Client incarnations handed out by this process (unique per client id is what the bus needs).
static INCARNATIONS: AtomicU64 = AtomicU64::new(0);

fn next_incarnation() -> u64 {
    INCARNATIONS.fetch_add(1, Ordering::SeqCst) + 1
}

/// The threads the agents ask for: each agent's allocation, summed.
#[must_use]
pub fn requested_threads(plan: &LaunchPlan, worker_threads: Option<u32>) -> u64 {
    plan.agents
        .iter()
        .map(|a| u64::from(worker_threads.unwrap_or(a.threads)))
        .sum()
}

/// Refuses what cannot start: a mode and transport that do not go together, a thread request
/// above the budget, a component this build lacks.
///
/// # Errors
///
/// [`SessionError::ModeTransport`], [`SessionError::ThreadBudget`] or
/// [`SessionError::Unavailable`].
pub fn admit(
    plan: &LaunchPlan,
    options: &LaunchOptions,
    registry: &Registry,
) -> Result<(), SessionError> {
    if options.mode == RunMode::Process && options.transport == Transport::Memory {
        return Err(SessionError::ModeTransport);
    }
    let requested = requested_threads(plan, options.worker_threads);
    if requested > u64::from(plan.run.max_threads) || options.worker_threads == Some(0) {
        return Err(SessionError::ThreadBudget {
            requested,
            budget: plan.run.max_threads,
        });
    }
    registry.check(plan)
}

fn socket_of(dir: &Path) -> PathBuf {
    dir.join("sock/router.sock")
}

fn store_of(dir: &Path) -> PathBuf {
    dir.join("store")
}

/// Builds the shell of one worker of `plan` from the registry.
///
/// # Errors
///
/// [`SessionError::Unavailable`] or [`SessionError::Launch`].
pub fn build_worker(
    plan: &LaunchPlan,
    registry: &Registry,
    role: WorkerRole,
    worker_id: &Id,
    config: WorkerConfig,
) -> Result<WorkerShell, SessionError> {
    match role {
        WorkerRole::Environment => {
            let digest = plan
                .environment
                .config_digest()
                .map_err(|e| SessionError::Launch {
                    participant: worker_id.to_string(),
                    reason: format!("the environment's plan entry could not be hashed: {e}"),
                })?;
            let backend = registry.environment(&plan.environment, digest)?;
            Ok(WorkerShell::environment(config, backend, digest))
        }
        WorkerRole::Agent => {
            let agent = plan
                .agents
                .iter()
                .find(|a| a.agent_id == *worker_id)
                .ok_or_else(|| SessionError::Launch {
                    participant: worker_id.to_string(),
                    reason: "the plan has no such agent".into(),
                })?;
            let profile = plan
                .profiles
                .iter()
                .find(|p| p.id == agent.profile)
                .cloned()
                .ok_or_else(|| SessionError::Launch {
                    participant: worker_id.to_string(),
                    reason: "the plan has no profile for it".into(),
                })?;
            let factory =
                registry
                    .agent(profile.model)
                    .ok_or_else(|| SessionError::Unavailable {
                        what: format!("the agent model of profile `{}`", profile.id),
                        reason: "not linked into this build".into(),
                    })?;
            Ok(WorkerShell::agent(config, profile, factory))
        }
        WorkerRole::Coordinator => Err(SessionError::Launch {
            participant: worker_id.to_string(),
            reason: "a coordinator is not a worker".into(),
        }),
    }
}

async fn connect(
    router: &Router,
    transport: Transport,
    dir: &Path,
    client_id: &str,
) -> Result<Client, SessionError> {
    let id = Id::parse(client_id).map_err(|e| SessionError::Launch {
        participant: client_id.to_owned(),
        reason: e.to_string(),
    })?;
    let options = ClientOptions {
        client_id: id.clone(),
        incarnation: next_incarnation(),
        store_root: store_of(dir),
    };
    let result = match transport {
        Transport::Memory => Client::connect_link(router.connect_link_as(id), options).await,
        Transport::Unix => Client::connect_unix(&socket_of(dir), options).await,
    };
    result.map_err(|e| SessionError::Launch {
        participant: client_id.to_owned(),
        reason: e.to_string(),
    })
}

fn fault_args(faults: &WorkerFaults) -> Vec<String> {
    let point = |p: &FaultPoint| format!("{}@{}", p.method, p.step);
    let mut args = Vec::new();
    if let Some((p, pause)) = &faults.stall {
        args.push("--stall".into());
        args.push(format!("{}:{}", point(p), pause.as_millis()));
    }
    if let Some(p) = &faults.fail {
        args.push("--fail".into());
        args.push(point(p));
    }
    if let Some(p) = &faults.restart_after {
        args.push("--restart-after".into());
        args.push(point(p));
    }
    args
}

impl Launch {
    /// Starts the router and every worker of `plan` (after [`admit`]); the workers register
    /// their services asynchronously (the coordinator's Hello waits for them).
    ///
    /// # Errors
    ///
    /// Any refusal of [`admit`], or [`SessionError::Launch`].
    pub async fn start(
        plan: &LaunchPlan,
        options: &LaunchOptions,
        registry: &Registry,
    ) -> Result<Self, SessionError> {
        admit(plan, options, registry)?;
        let launch_error = |reason: String| SessionError::Launch {
            participant: "router".into(),
            reason,
        };
        std::fs::create_dir_all(&options.runtime_parent)
            .map_err(|e| launch_error(format!("runtime directory: {e}")))?;
        let dir = tempfile::Builder::new()
            .prefix("flysim-")
            .tempdir_in(&options.runtime_parent)
            .map_err(|e| launch_error(format!("runtime directory: {e}")))?;
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))
                .map_err(|e| launch_error(format!("runtime directory: {e}")))?;
        }
        let router = Router::start(RouterConfig::new(store_of(dir.path())))
            .map_err(|e| launch_error(e.to_string()))?;
        if options.transport == Transport::Unix {
            router
                .listen_unix(&socket_of(dir.path()))
                .map_err(|e| launch_error(e.to_string()))?;
        }
        // The coordinator lives beside the router: it always talks to it in memory, whatever
        // transport the workers use (a Unix socket would only add two system calls and a
        // wake-up to every frame of the critical path).
        let client = connect(&router, Transport::Memory, dir.path(), "coordinator").await?;
        let mut launch = Self {
            router,
            client,
            workers: BTreeMap::new(),
            dir,
        };
        let mut roster = vec![(WorkerRole::Environment, plan.environment.id.clone(), 1)];
        for agent in &plan.agents {
            roster.push((
                WorkerRole::Agent,
                agent.agent_id.clone(),
                options.worker_threads.unwrap_or(agent.threads),
            ));
        }
        if options.mode == RunMode::Process {
            let plan_path = launch.dir.path().join("plan.json");
            let text = plan
                .to_canonical()
                .map_err(|e| launch_error(e.to_string()))?;
            std::fs::write(&plan_path, text).map_err(|e| launch_error(e.to_string()))?;
            if !options.content.is_empty() {
                let content = launch.dir.path().join("content");
                std::fs::create_dir(&content).map_err(|e| launch_error(e.to_string()))?;
                for (digest, bytes) in &options.content {
                    std::fs::write(content.join(digest.hex()), bytes)
                        .map_err(|e| launch_error(e.to_string()))?;
                }
            }
        }
        for (role, id, threads) in roster {
            let faults = options.faults.get(&id).cloned().unwrap_or_default();
            let handle = launch
                .spawn(plan, options, registry, role, &id, threads, faults)
                .await?;
            launch.workers.insert(id, handle);
        }
        Ok(launch)
    }

    #[expect(clippy::too_many_arguments, reason = "one worker's whole start")]
    async fn spawn(
        &self,
        plan: &LaunchPlan,
        options: &LaunchOptions,
        registry: &Registry,
        role: WorkerRole,
        id: &Id,
        threads: u32,
        faults: WorkerFaults,
    ) -> Result<Handle, SessionError> {
        let config = |compute| WorkerConfig {
            worker_id: id.clone(),
            role,
            incarnation: 1,
            worker_threads: threads,
            compute,
            faults: faults.clone(),
        };
        let client_id = service_name(role, id);
        match options.mode {
            RunMode::InProcess => {
                let shell = build_worker(plan, registry, role, id, config(Compute::Inline))?;
                self.offer_lane(options, &shell, &client_id);
                let client =
                    connect(&self.router, options.transport, self.dir.path(), &client_id).await?;
                Ok(Handle::Task(tokio::spawn(async move {
                    let _ = shell.serve(client).await;
                })))
            }
            RunMode::Thread => {
                let shell = build_worker(plan, registry, role, id, config(Compute::Blocking))?;
                self.offer_lane(options, &shell, &client_id);
                let client_id = Id::parse(&client_id).map_err(|e| SessionError::Launch {
                    participant: id.to_string(),
                    reason: e.to_string(),
                })?;
                let memory = (options.transport == Transport::Memory)
                    .then(|| self.router.connect_link_as(client_id.clone()));
                let options_for = ClientOptions {
                    client_id,
                    incarnation: next_incarnation(),
                    store_root: store_of(self.dir.path()),
                };
                let socket = socket_of(self.dir.path());
                let thread = std::thread::Builder::new()
                    .name(format!("worker-{id}"))
                    .spawn(move || {
                        let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                            .enable_all()
                            .build()
                        else {
                            return;
                        };
                        runtime.block_on(async move {
                            let client = match memory {
                                Some(link) => Client::connect_link(link, options_for).await,
                                None => Client::connect_unix(&socket, options_for).await,
                            };
                            if let Ok(client) = client {
                                // On a task, as in process mode (`serve_worker_process`).
                                let _ =
                                    tokio::spawn(async move { shell.serve(client).await }).await;
                            }
                        });
                    })
                    .map_err(|e| SessionError::Launch {
                        participant: id.to_string(),
                        reason: e.to_string(),
                    })?;
                Ok(Handle::Thread(thread))
            }
            RunMode::Process => {
                let program = options
                    .program
                    .as_ref()
                    .ok_or_else(|| SessionError::Launch {
                        participant: id.to_string(),
                        reason: "process mode needs the flysim executable".into(),
                    })?;
                let role_arg = match role {
                    WorkerRole::Agent => "agent",
                    _ => "environment",
                };
                let child = Command::new(&program.exe)
                    .args(&program.args)
                    .arg("worker")
                    .arg(role_arg)
                    .arg("--plan")
                    .arg(self.dir.path().join("plan.json"))
                    .arg("--worker-id")
                    .arg(id.as_str())
                    .arg("--socket")
                    .arg(socket_of(self.dir.path()))
                    .arg("--store-root")
                    .arg(store_of(self.dir.path()))
                    .arg("--incarnation")
                    .arg(next_incarnation().to_string())
                    .arg("--threads")
                    .arg(threads.to_string())
                    .args(fault_args(&faults))
                    .env_clear()
                    .envs(program.env.iter().map(|(k, v)| (k, v)))
                    .current_dir(self.dir.path())
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::inherit())
                    .spawn()
                    .map_err(|e| SessionError::Launch {
                        participant: id.to_string(),
                        reason: format!("cannot start {}: {e}", program.exe.display()),
                    })?;
                Ok(Handle::Process(Arc::new(Mutex::new(child))))
            }
        }
    }

    /// Offers the coordinator's client the local lane to an in-process worker, if asked to.
    fn offer_lane(&self, options: &LaunchOptions, shell: &WorkerShell, service: &str) {
        if options.local_lane {
            flysim_rpc::local::offer(&self.client, service, Arc::new(shell.local_lane()));
        }
    }

    /// The router.
    #[must_use]
    pub fn router(&self) -> &Router {
        &self.router
    }

    /// The coordinator's client.
    #[must_use]
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// A connection for a watcher in this process (contracts §10): an in-memory link to the
    /// router and the options to connect a client on it. The link may be driven from any
    /// runtime, so a watcher can serve from a thread of its own; it must be made inside the
    /// run's runtime (a launch hook is).
    #[must_use]
    pub fn watcher_connection(&self, client_id: Id) -> (flysim_bus::Link, ClientOptions) {
        let link = self.router.connect_link_as(client_id.clone());
        let options = ClientOptions {
            client_id,
            incarnation: next_incarnation(),
            store_root: store_of(self.dir.path()),
        };
        (link, options)
    }

    /// The private runtime directory (socket, store, plan copy).
    #[must_use]
    pub fn runtime_dir(&self) -> &Path {
        self.dir.path()
    }

    /// The process id of a worker process, if it is one.
    #[must_use]
    pub fn pid(&self, id: &Id) -> Option<u32> {
        match self.workers.get(id) {
            Some(Handle::Process(child)) => Some(lock_child(child).id()),
            _ => None,
        }
    }

    /// Kills a worker process now (tests: a worker dying mid-step).
    pub fn kill(&mut self, id: &Id) {
        if let Some(Handle::Process(child)) = self.workers.get_mut(id) {
            let mut child = lock_child(child);
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// A watch on the worker processes, for the coordinator (see [`ExitWatch`]).
    #[must_use]
    pub fn exit_watch(&self) -> ExitWatch {
        ExitWatch {
            children: self
                .workers
                .iter()
                .filter_map(|(id, h)| match h {
                    Handle::Process(child) => Some((id.clone(), Arc::clone(child))),
                    _ => None,
                })
                .collect(),
        }
    }

    /// Waits up to `budget` for every worker to end (after `Worker.Shutdown`), kills what is
    /// left, and shuts the router down.
    #[expect(
        clippy::disallowed_methods,
        reason = "bounds a wait: a deadline decides when to stop waiting, never what is recorded"
    )]
    pub async fn reap(mut self, budget: Duration) {
        let until = std::time::Instant::now() + budget;
        for (_, handle) in std::mem::take(&mut self.workers) {
            match handle {
                Handle::Task(task) => {
                    let left = until.saturating_duration_since(std::time::Instant::now());
                    if tokio::time::timeout(left, task).await.is_err() {
                        // The task is aborted with the runtime; nothing outlives it.
                    }
                }
                Handle::Thread(thread) => {
                    while !thread.is_finished() && std::time::Instant::now() < until {
                        tokio::time::sleep(Duration::from_millis(2)).await;
                    }
                    // A thread still running ends when the router closes its connection.
                    drop(thread);
                }
                Handle::Process(child) => loop {
                    let ended = {
                        let mut child = lock_child(&child);
                        match child.try_wait() {
                            Ok(Some(_)) | Err(_) => true,
                            Ok(None) if std::time::Instant::now() >= until => {
                                let _ = child.kill();
                                let _ = child.wait();
                                true
                            }
                            Ok(None) => false,
                        }
                    };
                    if ended {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(2)).await;
                },
            }
        }
        self.router.shutdown();
    }
}

impl Drop for Launch {
    fn drop(&mut self) {
        for handle in self.workers.values_mut() {
            if let Handle::Process(child) = handle {
                let mut child = lock_child(child);
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// The arguments of one worker process (`flysim worker agent|environment ...`).
#[derive(Debug, Clone)]
pub struct WorkerProcess {
    /// Agent or environment.
    pub role: WorkerRole,
    /// The plan file the launcher wrote.
    pub plan: PathBuf,
    /// The worker.
    pub worker_id: Id,
    /// The router's socket.
    pub socket: PathBuf,
    /// The artifact store root.
    pub store_root: PathBuf,
    /// The bus client incarnation.
    pub incarnation: u64,
    /// The thread allocation.
    pub threads: u32,
    /// Injected faults (tests only).
    pub faults: WorkerFaults,
}

/// Parses a `--stall METHOD@STEP:MILLIS` value.
///
/// # Errors
///
/// A message naming the malformed part.
pub fn parse_stall(text: &str) -> Result<(FaultPoint, Duration), String> {
    let (point, ms) = text
        .rsplit_once(':')
        .ok_or_else(|| format!("{text:?} is not METHOD@STEP:MILLIS"))?;
    let ms: u64 = ms
        .parse()
        .map_err(|_| format!("{text:?}: the milliseconds are not a number"))?;
    Ok((FaultPoint::parse(point)?, Duration::from_millis(ms)))
}

/// Runs one worker process until `Worker.Shutdown` or until the router goes away.
///
/// # Errors
///
/// [`SessionError::Launch`] when the plan cannot be read or the router cannot be reached.
pub fn serve_worker_process(args: &WorkerProcess, registry: &Registry) -> Result<(), SessionError> {
    let launch = |reason: String| SessionError::Launch {
        participant: args.worker_id.to_string(),
        reason,
    };
    let bytes = std::fs::read(&args.plan).map_err(|e| launch(format!("plan: {e}")))?;
    let plan: LaunchPlan =
        flysim_types::parse_payload(&bytes).map_err(|e| launch(format!("plan: {e}")))?;
    let config = WorkerConfig {
        worker_id: args.worker_id.clone(),
        role: args.role,
        incarnation: args.incarnation,
        worker_threads: args.threads,
        compute: Compute::Blocking,
        faults: args.faults.clone(),
    };
    let shell = build_worker(&plan, registry, args.role, &args.worker_id, config)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| launch(e.to_string()))?;
    runtime.block_on(async {
        let options = ClientOptions {
            client_id: Id::parse(&service_name(args.role, &args.worker_id))
                .map_err(|e| launch(e.to_string()))?,
            incarnation: args.incarnation,
            store_root: args.store_root.clone(),
        };
        let client = Client::connect_unix(&args.socket, options)
            .await
            .map_err(|e| launch(e.to_string()))?;
        // Served on a task rather than as the `block_on` future: the current-thread runtime
        // polls its driver once more (a zero-timeout `epoll_wait`) whenever the `block_on`
        // future is woken, which the serving loop is by every request.
        tokio::spawn(async move { shell.serve(client).await })
            .await
            .map_err(|e| launch(e.to_string()))?
            .map_err(|e| launch(e.to_string()))
    })
}
