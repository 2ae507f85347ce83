//! Start: every worker greeted, the environment initialised (stopped at `O[0]`), the task
//! bootstrapped and every agent initialised and warmed up, so the session stands at the
//! committed boundary 0. Nothing advances the world here.
//!
//! It knows nothing of steps; the row of boundary 0 is built by `row`.

use flysim_types::workers::{
    AgentInitializeParams, AgentInitializeResult, EnvironmentInitializeParams,
    EnvironmentInitializeResult, SensoryInput, WorkerRole, WorldObservation,
};
use std::collections::BTreeMap;
use std::sync::Arc;

use flysim_bus::Artifact;
use flysim_types::digest::sha256;
use flysim_types::plan::PlanAgent;
use flysim_types::trace::{AgentRequest, TransitionTrace};
use flysim_types::{BusCallId, DomainRequestId, Id, TypedValue, U64};
use flysim_worker::shell::profile_digest;
use serde_json::json;

use super::call::Reply;
use super::memory::MemoryImage;
use super::pending::PendingRow;
use super::row::Bootstrapped;
use super::{
    AgentState, CommittedObservation, Coordinator, asset_ref, canonical_digest, environment_config,
};
use crate::error::SessionError;
use crate::phase::Phase;

/// The environment after `Environment.Initialize`: its observation `O[0]`, the frames that hold
/// its views, and the call and request that initialised it.
struct InitializedEnvironment {
    observation: WorldObservation,
    frames: Vec<(Id, Artifact)>,
    call: BusCallId,
    request: DomainRequestId,
}

impl Coordinator {
    /// Greets every worker (waiting up to the start budget for its service), checks its
    /// identity and health, then initialises the environment, bootstraps the task and
    /// initialises every agent: the committed boundary 0, returned as its trace row.
    ///
    /// # Errors
    ///
    /// Any [`SessionError`]; the phase is then `Failed`.
    #[expect(
        clippy::disallowed_methods,
        reason = "an operational timing: wall time is recorded beside behaviour, never in it"
    )]
    pub async fn start(&mut self) -> Result<TransitionTrace, SessionError> {
        self.started = std::time::Instant::now();
        let started = async {
            let row = self.bootstrap().await?;
            self.enter(Phase::Ready)?;
            self.tap_frames().await;
            self.publish_snapshot(row.behaviour.snapshot_row(), None);
            self.let_the_publisher_run().await;
            self.record(row).await.map(|(row, _)| row)
        };
        match started.await {
            Ok(row) => Ok(row),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// Brings every worker to the committed boundary 0 and builds its row.
    #[expect(
        clippy::disallowed_methods,
        reason = "an operational timing: wall time is recorded beside behaviour, never in it"
    )]
    pub(super) async fn bootstrap(&mut self) -> Result<PendingRow, SessionError> {
        let begun = std::time::Instant::now();
        let env_id = self.plan.environment.id.clone();
        // The topics are declared before any worker is greeted: a watcher that subscribes
        // meanwhile sees boundary 0.
        self.publisher.start();
        self.greet_workers(&env_id).await?;
        // The environment first: stopped at O[0].
        let initialized = self.initialize_environment(&env_id).await?;
        let mut calls = vec![initialized.call];
        let InitializedEnvironment {
            observation,
            frames,
            request: environment_request,
            ..
        } = initialized;
        // The task bootstraps the contexts.
        let memory = self.memory_of(0, &frames).await?;
        let boot = self
            .task
            .bootstrap(
                &self.episode,
                &observation.inspection,
                &self.bindings,
                memory.as_ref().map(MemoryImage::view),
            )
            .map_err(|e| self.contract("task", 0, e.to_string()))?;
        self.progress = boot.progress;
        // Every agent initialises and warms up; nothing advances the world.
        let input = SensoryInput {
            boundary: U64(0),
            views: observation.sensory_views.clone(),
            structured: None,
        };
        let mut agents = BTreeMap::new();
        let mut initialize_requests = Vec::new();
        for agent in self.plan.agents.clone() {
            let context = boot.contexts.get(&agent.agent_id).cloned().ok_or_else(|| {
                self.contract(
                    "task",
                    0,
                    format!("no initial context for agent `{}`", agent.agent_id),
                )
            })?;
            let (result, call, request) = self
                .initialize_agent(&agent, context, &input, &frames)
                .await?;
            calls.push(call);
            initialize_requests.push(AgentRequest {
                agent_id: agent.agent_id.clone(),
                request_id: request,
            });
            agents.insert(agent.agent_id.clone(), result);
        }
        self.publish_descriptor(&agents);
        let traced = self.trace_observation(&env_id, &observation, &frames)?;
        let observation = Arc::new(observation);
        self.committed = Some(CommittedObservation {
            observation: Arc::clone(&observation),
            frames,
            memory,
        });
        self.boundary_zero_row(Bootstrapped {
            observation,
            traced,
            agents,
            events: boot.events,
            variables: boot.variables,
            initialize_requests,
            environment_request,
            calls,
            elapsed: begun.elapsed(),
        })
    }

    /// Says Hello to the environment, then to every agent in plan order.
    async fn greet_workers(&mut self, env_id: &Id) -> Result<(), SessionError> {
        let env = self.hello(WorkerRole::Environment, env_id).await?;
        self.environment = Some(Arc::new(env));
        for agent in self.plan.agents.clone() {
            let p = self.hello(WorkerRole::Agent, &agent.agent_id).await?;
            self.agents.insert(agent.agent_id.clone(), Arc::new(p));
        }
        Ok(())
    }

    /// `Environment.Initialize` with the plan's environment and task: the descriptor (checked
    /// against the plan, then kept) and the observation `O[0]`, checked against it.
    async fn initialize_environment(
        &mut self,
        env_id: &Id,
    ) -> Result<InitializedEnvironment, SessionError> {
        let env_plan = self.plan.environment.clone();
        let (env_text, env_config) = environment_config(&env_plan)
            .map_err(|reason| self.contract("coordinator", 0, reason))?;
        let task_value = json!({"task": self.plan.task});
        let task_text = flysim_types::json::to_canonical(&task_value)
            .map_err(|e| self.contract("coordinator", 0, format!("the task config: {e}")))?;
        let params = EnvironmentInitializeParams {
            backend_config: asset_ref(
                &env_plan.id,
                env_config,
                env_text.len(),
                "flysim-environment-v1",
            ),
            task_config: asset_ref(
                &self.plan.task,
                sha256(task_text.as_bytes()),
                task_text.len(),
                "flysim-task-v1",
            ),
            episode_id: self.episode.clone(),
            port_bindings: self.bindings.clone(),
        };
        let environment = self.env()?;
        let reply: Reply<EnvironmentInitializeResult> =
            self.call(&environment, Some(0), params, &[]).await?;
        self.acknowledge(&environment, reply.request).await?;
        let EnvironmentInitializeResult {
            descriptor,
            observation,
            ..
        } = reply.result.into_value();
        self.check_descriptor(&descriptor)?;
        observation
            .validate_against(&descriptor)
            .map_err(|e| self.contract(env_id.as_str(), 0, e.to_string()))?;
        self.descriptor = Some(Arc::new(descriptor));
        Ok(InitializedEnvironment {
            observation,
            frames: reply.attachments,
            call: reply.call,
            request: reply.request,
        })
    }

    /// `Agent.Initialize` for one agent with its profile, seed, threads, the observation `O[0]`
    /// (`frames` hold its views) and its initial decision context; its answer must name that
    /// agent, profile and context. The agent's standing is kept; returns its result, call and
    /// request.
    async fn initialize_agent(
        &mut self,
        agent: &PlanAgent,
        context: Arc<TypedValue>,
        input: &SensoryInput,
        frames: &[(Id, Artifact)],
    ) -> Result<(AgentInitializeResult, BusCallId, DomainRequestId), SessionError> {
        let profile = self
            .plan
            .profiles
            .iter()
            .find(|p| p.id == agent.profile)
            .cloned()
            .ok_or_else(|| self.contract("coordinator", 0, "a profile is missing".into()))?;
        let profile_text = flysim_types::payload::to_canonical(&profile)
            .map_err(|e| self.contract("coordinator", 0, format!("the profile: {e}")))?;
        let profile_ref = asset_ref(
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
        let r: Reply<AgentInitializeResult> = self.call(&p, Some(0), params, frames).await?;
        self.acknowledge(&p, r.request).await?;
        let context_digest =
            canonical_digest(&context).map_err(|reason| self.contract("task", 0, reason))?;
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
        let model = flysim_types::plan::ModelKind::ALL
            .iter()
            .find(|(_, k)| *k == profile.model)
            .map_or("", |(name, _)| name)
            .to_owned();
        self.states.insert(
            agent.agent_id.clone(),
            AgentState {
                profile: profile_ref,
                model,
                dataset: r.result.graph.dataset_digest,
                port: agent.port.clone(),
                seed: agent.seed,
                threads,
                tick: r.result.tick_duration,
                context,
                context_digest,
                previous_context: None,
            },
        );
        Ok((r.result.into_value(), r.call, r.request))
    }
}
