//! The agent methods: `Agent.Initialize`, `Agent.Prepare` and `Agent.Commit`, around the model
//! the shell holds: the rational clock, the retained decision context and its digest, the views
//! of a sensory input resolved against the request's attachments, and every contract check.
//!
//! It knows the agent's phases and what a model is asked; it does not know what a model computes.

use flysim_types::workers::{
    AgentCommitResult, AgentInitializeParams, AgentInitializeResult, ArtifactRef, CommitParams,
    DomainError, DomainErrorCode, Method, PrepareParams, PreparedDecision, Results, SensoryInput,
};
use std::sync::Arc;

use flysim_bus::Artifact;
use flysim_rpc::RpcRequest;
use flysim_types::{Digest, Id, TickAccumulator, TypedValue, U64};

use super::dispatch::Worker;
use super::errors::{digest_of, model_error, refuse};
use super::lock;
use super::machine::{WorkerPhase, Workload, ready_at};
use super::params;
use flysim_component::{ModelError, ModelSetup, SensedInput, SensedView, Sensing};

impl Worker {
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

    /// What the model reads of its views (an environment reads none).
    fn sensing(&self) -> Sensing {
        match &lock(&self.machine).workload {
            Workload::Agent(a) => a.model.as_ref().map_or(Sensing::Pixels, |m| m.sensing()),
            Workload::Environment(_) => Sensing::Blind,
        }
    }

    /// `Agent.Initialize` at step 0: builds the model, warms it up on the initial input and
    /// retains the initial decision context.
    pub(super) async fn agent_initialize(
        &self,
        r: &mut RpcRequest,
        _artifacts: &mut Vec<(Id, Artifact)>,
    ) -> Result<Results, DomainError> {
        let scope = self.check_scope(r.scope.as_ref(), true)?;
        let params: AgentInitializeParams = params::of::<AgentInitializeParams>(&r.params)?.clone();
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
            agent.previous_context = None;
            machine.phase = WorkerPhase::Ready(0);
            machine.epoch = Some(epoch);
            Ok(result.into())
        })
        .await
    }

    /// `Agent.Prepare` at `Ready(k)`: advances the clock by the interval and asks the model for
    /// its decision under the retained context.
    pub(super) async fn agent_prepare(&self, r: &mut RpcRequest) -> Result<Results, DomainError> {
        let scope = self.check_scope(r.scope.as_ref(), false)?;
        let shared = Arc::clone(&r.params);
        params::of::<PrepareParams>(&shared)?;
        let request = r.request_id;
        let worker_id = self.config.worker_id.clone();
        self.compute(move |machine| {
            let params = params::of::<PrepareParams>(&shared)?;
            let step = scope.step.get();
            ready_at(machine.phase, Method::AgentPrepare, step)?;
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
            agent.prepared_ticks = ticks;
            let result = PreparedDecision {
                agent_id: params.agent_id.clone(),
                ticks_advanced: U64(ticks),
                brain_ticks: U64(agent.warmup + clock.ticks()),
                remainder: clock.remainder(),
                decision,
            };
            machine.phase = WorkerPhase::Prepared { step, request };
            Ok(result.into())
        })
        .await
    }

    /// `Agent.Commit` of the prepared step: the model senses the next input and its rewards; the
    /// next decision context is retained.
    pub(super) async fn agent_commit(&self, r: &mut RpcRequest) -> Result<Results, DomainError> {
        let scope = self.check_scope(r.scope.as_ref(), false)?;
        let shared = Arc::clone(&r.params);
        let params = params::of::<CommitParams>(&shared)?;
        // Validated where it was decoded or admitted: only its relation to the scope is left.
        params
            .matches_scope(&scope)
            .map_err(|e| refuse(DomainErrorCode::InvalidArgument, e.to_string()))?;
        let sensed = self
            .sense(&params.next_input, &r.attachments, self.sensing())
            .await?;
        let worker_id = self.config.worker_id.clone();
        let shared = Arc::clone(&r.params);
        self.compute(move |machine| {
            let params = params::of::<CommitParams>(&shared)?;
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
            // retained digest, and so has the one retained before it (a task moving between a
            // few): the same shared value, or an equal one, costs less than hashing. A new one is
            // hashed here, unless the coordinator hashed it already: on the in-memory lane the
            // params are its own value, digest included.
            let next = &params.next_decision_context;
            let (same_value, kept) = match &agent.context {
                Some((retained, digest)) if Arc::ptr_eq(retained, next) => (true, Some(*digest)),
                Some((retained, digest)) if **retained == ***next => (false, Some(*digest)),
                _ => (false, known(agent.previous_context.as_ref(), next)),
            };
            let digest = match kept {
                Some(digest) => digest,
                None => next
                    .digest()
                    .map_err(|e| refuse(DomainErrorCode::InvalidArgument, e.to_string()))?,
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
                // then found by pointer. A context with another digest moves the retained one
                // back a place.
                let retained = agent.context.replace((Arc::clone(next), digest));
                if let Some(before) = retained.filter(|(_, d)| *d != digest) {
                    agent.previous_context = Some(before);
                }
            }
            machine.phase = WorkerPhase::Ready(step + 1);
            Ok(result.into())
        })
        .await
    }
}

/// The digest of `next` when it is the context `before` (the same shared value or an equal one).
fn known(before: Option<&(Arc<TypedValue>, Digest)>, next: &Arc<TypedValue>) -> Option<Digest> {
    before
        .filter(|(value, _)| Arc::ptr_eq(value, next) || **value == **next)
        .map(|(_, digest)| *digest)
}

/// Whether two refs name the same artifact (store, id and generation are its identity).
fn same_artifact(a: &ArtifactRef, b: &ArtifactRef) -> bool {
    a.store_id == b.store_id && a.artifact_id == b.artifact_id && a.generation == b.generation
}
