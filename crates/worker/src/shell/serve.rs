//! [`WorkerShell`]: a worker built for an agent or an environment, and its bus service served
//! until `Worker.Shutdown` (registered anew when a simulated restart asks for it).
//!
//! It knows the service's registration and the serving loop; what a request does is
//! `dispatch`'s, and the worker's state is `machine`'s.

use std::sync::{Arc, Mutex};

use flysim_bus::Client;
use flysim_types::plan::PlanProfile;
use flysim_types::{Digest, RationalNs};

use super::batches::AppliedBatches;
use super::dispatch::{Worker, handle};
use super::local_lane::{LocalLane, Serving};
use super::machine::{AgentState, EnvironmentState, Workload};
use super::{WorkerConfig, WorkerError, lock, profile_digest};
use crate::identity::service_name;
use flysim_component::{AgentFactory, EnvironmentBackend};

/// Requests a worker's service queues beyond those in flight.
const SERVICE_QUEUED: u32 = 16;
/// Requests a worker's service has in flight at once (status queries run beside a mutation).
const SERVICE_IN_FLIGHT: u32 = 16;

/// A worker to run: its configuration and state. Build it with [`WorkerShell::agent`] or
/// [`WorkerShell::environment`], then [`WorkerShell::serve`].
pub struct WorkerShell {
    config: WorkerConfig,
    workload: Workload,
    lane: Arc<Mutex<Option<Serving>>>,
}

impl std::fmt::Debug for WorkerShell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerShell")
            .field("worker_id", &self.config.worker_id)
            .field("role", &self.config.role)
            .finish_non_exhaustive()
    }
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
                prepared_ticks: 0,
                context: None,
                previous_context: None,
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
                batches: AppliedBatches::default(),
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
        let worker = Arc::new(Worker::new(self.config, client.clone(), self.workload));
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
