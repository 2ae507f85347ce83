//! The step: the transaction `k -> k+1` in the contract's order (contracts §5.3), one method
//! per phase: [`Coordinator::prepare`] (`Preparing`), [`Coordinator::apply`] and
//! [`Coordinator::advance`] (`Applying`), [`Coordinator::evaluate`] (`Observing`),
//! [`Coordinator::commit`] (`Committing`), then `Ready(k+1)` with the committed transition
//! handed to the row builder (`row`).
//!
//! It knows nothing of how calls are retried or dispatched (`call`, `dispatch`), nor of how a
//! row is recorded (`handoff`).

use flysim_types::workers::{
    AdvanceParams, AgentCommitResult, CommitParams, EnvironmentDescriptor, PortControl,
    PrepareParams, PreparedDecision, SensoryInput, StepResult, WorldObservation,
};
use std::collections::BTreeMap;
use std::sync::Arc;

use flysim_bus::Artifact;
use flysim_types::hashed::Hashed;
use flysim_types::trace::{AgentRequest, PhaseTimings};
use flysim_types::{BusCallId, Digest, Id, RationalNs, TypedValue, U64};

use super::call::{Reply, call_prepared};
use super::dispatch::PreparedCalls;
use super::memory::MemoryImage;
use super::pending::PendingRow;
use super::row::{CommittedAgent, CommittedTransition, StepRequests};
use super::snapshot::Transitioned;
use super::{CommittedObservation, Coordinator, Participant, batch_id, nanos};
use crate::error::SessionError;
use crate::phase::Phase;
use flysim_component::MemoryView;
use flysim_component::task::{ControllerIntent, Evaluation, TaskError, Transition};

/// Every agent's prepared decision, by agent id.
type Prepared = BTreeMap<Id, Reply<PreparedDecision>>;

/// Each agent's next decision context and its digest; `None` keeps the held value (the task
/// handed the same one on).
type NextContexts = BTreeMap<Id, (Option<Arc<TypedValue>>, Digest)>;

/// What the commits of a step leave for its row.
struct Commits {
    agents: Vec<CommittedAgent>,
    requests: Vec<AgentRequest>,
    calls: Vec<BusCallId>,
}

/// The transition the task evaluates: the boundary departed from and the step that reached the
/// next, with the world's memory at both (for a task that reads memory).
struct Reached<'a> {
    previous: &'a WorldObservation,
    stepped: &'a Reply<StepResult>,
    old_memory: Option<MemoryView<'a>>,
    new_memory: Option<MemoryView<'a>>,
}

impl Coordinator {
    /// Runs one transition `k -> k+1` and returns the row of boundary `k+1`.
    ///
    /// # Errors
    ///
    /// Any [`SessionError`]; the epoch is then failed (`Failed`).
    pub async fn step_once(
        &mut self,
    ) -> Result<flysim_types::trace::TransitionTrace, SessionError> {
        let recorded = match self.transaction().await {
            Ok(pending) => self.record(pending).await.map(|(row, _)| row),
            Err(e) => Err(e),
        };
        recorded.map_err(|e| self.fail(e))
    }

    /// The transaction `k -> k+1`, each phase entered in order; the committed boundary's row,
    /// its digests still being computed.
    #[expect(
        clippy::disallowed_methods,
        reason = "an operational timing: wall time is recorded beside behaviour, never in it"
    )]
    pub(super) async fn transaction(&mut self) -> Result<PendingRow, SessionError> {
        let k = self.step;
        let begun = std::time::Instant::now();
        let env = self.env()?;
        let descriptor = self
            .descriptor
            .clone()
            .ok_or_else(|| self.contract("coordinator", k, "no descriptor".into()))?;

        self.enter(Phase::Preparing)?;
        let mut prepared = self.prepare(k, &descriptor).await?;
        let mut calls: Vec<BusCallId> = prepared.values().map(|r| r.call).collect();
        let t_prepare = begun.elapsed();

        self.enter(Phase::Applying)?;
        let previous = self
            .committed
            .as_ref()
            .map(|c| c.observation.clone())
            .ok_or_else(|| self.contract("coordinator", k, "no observation".into()))?;
        let batch = self.apply(k, &descriptor, &previous, &prepared)?;
        let t_apply = begun.elapsed();
        let stepped = self.advance(k, &env, &batch).await?;
        calls.push(stepped.call);
        let t_advance = begun.elapsed();

        self.enter(Phase::Observing)?;
        let old_memory = self.committed_memory(k).await?;
        let new_memory = self.memory_of(k + 1, &stepped.attachments).await?;
        let reached = Reached {
            previous: &previous,
            stepped: &stepped,
            old_memory: old_memory.as_ref().map(MemoryImage::view),
            new_memory: new_memory.as_ref().map(MemoryImage::view),
        };
        let mut evaluation = self.evaluate(k, &env.id, &descriptor, &batch, &reached)?;
        let traced =
            self.trace_observation(&env.id, &stepped.result.observation, &stepped.attachments)?;
        let t_evaluate = begun.elapsed();

        self.enter(Phase::Committing)?;
        let prepare_requests = prepared
            .iter()
            .map(|(id, r)| AgentRequest {
                agent_id: id.clone(),
                request_id: r.request,
            })
            .collect();
        let commits = self
            .commit(k, &mut prepared, &mut evaluation, &stepped)
            .await?;
        calls.extend(commits.calls);
        let t_commit = begun.elapsed();

        // The committed boundary k+1.
        self.progress = std::mem::take(&mut evaluation.progress);
        self.step = k + 1;
        let observation = Arc::clone(&stepped.result.observation);
        let row = self.transition_row(CommittedTransition {
            step: k,
            batch: batch.batch_id,
            batch_controls: Arc::clone(&batch.controls),
            observation: Arc::clone(&observation),
            traced,
            agents: commits.agents,
            events: evaluation.events,
            episode_request: evaluation.episode_request,
            variables: evaluation.variables,
            requests: StepRequests {
                prepare: prepare_requests,
                commit: commits.requests,
                advance: stepped.request,
                calls,
            },
            timings: PhaseTimings {
                prepare: nanos(t_prepare),
                apply: nanos(t_apply - t_prepare),
                advance: nanos(t_advance - t_apply),
                evaluate: nanos(t_evaluate - t_advance),
                commit: nanos(t_commit - t_evaluate),
                total: nanos(t_commit),
            },
        })?;
        self.committed = Some(CommittedObservation {
            observation,
            frames: stepped.attachments,
            memory: new_memory,
        });
        self.enter(Phase::Ready)?;
        self.tap_frames().await;
        let transitioned = Transitioned {
            decisions: row.decisions(),
            controls: &batch.controls,
        };
        self.publish_snapshot(row.behaviour.snapshot_row(), Some(&transitioned));
        self.let_the_publisher_run().await;
        Ok(row)
    }

    /// `Preparing`: `Agent.Prepare` to every agent from its frozen context; each decision must
    /// be its own and fit its tick.
    async fn prepare(
        &mut self,
        k: u64,
        descriptor: &EnvironmentDescriptor,
    ) -> Result<Prepared, SessionError> {
        let mut requests = PreparedCalls::new();
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
                .prepare(Some(self.scope(k)), params)
                .map_err(|e| self.contract(id.as_str(), k, e.to_string()))?;
            requests.insert(id.clone(), (p, request, Vec::new()));
        }
        let prepared: Prepared = self.dispatch_all(requests, k).await?;
        for (id, r) in &prepared {
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
        Ok(prepared)
    }

    /// `Applying`, first half: the executors in sorted agent-id order turn the decisions into
    /// one complete batch in descriptor port order (a port no agent drives is neutral). Its
    /// `controlDigest` (contracts §6) is taken once, from the controls' canonical form, where the
    /// row is finished: the request shares the controls, and on the in-memory lane so does the
    /// environment's answer.
    fn apply(
        &mut self,
        k: u64,
        descriptor: &EnvironmentDescriptor,
        previous: &WorldObservation,
        prepared: &Prepared,
    ) -> Result<AdvanceParams, SessionError> {
        let inspection = &previous.inspection;
        let mut intents = BTreeMap::new();
        for (id, r) in prepared {
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
        let advance = AdvanceParams {
            batch_id: batch_id(&self.episode, k)?,
            controls: Arc::new(Hashed::new(controls)),
        };
        // In range for their ports, the controls have a canonical form: their digest, taken
        // when the row is finished, cannot fail.
        advance
            .validate_against(descriptor)
            .map_err(|e| self.contract("executor", k, e.to_string()))?;
        Ok(advance)
    }

    /// `Applying`, second half: exactly one `Environment.Advance` with the batch.
    async fn advance(
        &self,
        k: u64,
        env: &Participant,
        batch: &AdvanceParams,
    ) -> Result<Reply<StepResult>, SessionError> {
        let request = env
            .caller
            .prepare(Some(self.scope(k)), batch.clone())
            .map_err(|e| self.contract(env.id.as_str(), k, e.to_string()))?;
        call_prepared(env, &request, &[], self.deadlines, k).await
    }

    /// `Observing`: the step result is checked against the descriptor, the previous observation
    /// and the batch, then the task evaluates the transition exactly once, with an outcome and
    /// a context for every agent and no other.
    fn evaluate(
        &mut self,
        k: u64,
        env_id: &Id,
        descriptor: &EnvironmentDescriptor,
        batch: &AdvanceParams,
        reached: &Reached<'_>,
    ) -> Result<Evaluation, SessionError> {
        let result = &reached.stepped.result;
        let previous = reached.previous;
        result
            .validate_against(descriptor, previous)
            .map_err(|e| self.contract(env_id.as_str(), k, e.to_string()))?;
        let applied_batch = result
            .applied_controls_digest
            .are(&batch.controls)
            .map_err(|e| self.contract(env_id.as_str(), k, e.to_string()))?;
        if result.batch_id != batch.batch_id || !applied_batch {
            return Err(self.contract(
                env_id.as_str(),
                k,
                "the step result names another batch or controls digest".into(),
            ));
        }
        let task_failed = |reason: TaskError| SessionError::Contract {
            participant: "task".into(),
            step: k,
            reason: reason.to_string(),
        };
        let evaluation = self
            .task
            .evaluate_transition(&Transition {
                step: k,
                episode: &self.episode,
                old: &previous.inspection,
                new: &result.observation.inspection,
                controls: &batch.controls,
                bindings: &self.bindings,
                old_memory: reached.old_memory,
                new_memory: reached.new_memory,
            })
            .map_err(task_failed)?;
        for id in self.states.keys() {
            if !evaluation.outcomes.contains_key(id) || !evaluation.contexts.contains_key(id) {
                return Err(task_failed(TaskError::Mismatch(format!(
                    "no outcome or context for agent `{id}`"
                ))));
            }
        }
        if evaluation.outcomes.len() != self.states.len()
            || evaluation.contexts.len() != self.states.len()
        {
            return Err(task_failed(TaskError::Mismatch(
                "an outcome or context for an unknown agent".to_owned(),
            )));
        }
        Ok(evaluation)
    }

    /// `Committing`: `Agent.Commit` to every agent with its next input and context, its rewards
    /// and stimulations; all must succeed and confirm the step and context. Each agent's
    /// standing moves to the new boundary.
    async fn commit(
        &mut self,
        k: u64,
        prepared: &mut Prepared,
        evaluation: &mut Evaluation,
        stepped: &Reply<StepResult>,
    ) -> Result<Commits, SessionError> {
        let next = k + 1;
        let observation = &stepped.result.observation;
        let (requests, mut next_contexts) =
            self.commit_requests(k, prepared, evaluation, observation, &stepped.attachments)?;
        let committed: BTreeMap<Id, Reply<AgentCommitResult>> =
            self.dispatch_all(requests, k).await?;
        let mut agents = Vec::with_capacity(committed.len());
        let mut calls = Vec::with_capacity(committed.len());
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
            let decision = prepared
                .remove(id)
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
                let before = std::mem::replace(&mut state.context, context);
                // A context with another digest moves the committed one back a place.
                if state.context_digest != context_digest {
                    state.previous_context = Some((before, state.context_digest));
                }
            }
            state.context_digest = context_digest;
            agents.push(CommittedAgent {
                agent_id: id.clone(),
                profile_digest: state.profile.digest,
                decision: decision.result.into_value(),
                outcome,
                context_digest,
                telemetry: r.result.telemetry.clone(),
            });
        }
        let requests = committed
            .iter()
            .map(|(id, r)| AgentRequest {
                agent_id: id.clone(),
                request_id: r.request,
            })
            .collect();
        Ok(Commits {
            agents,
            requests,
            calls,
        })
    }

    /// One `Agent.Commit` request per agent, and each agent's next context with its digest.
    /// The coordinator hashes only a context that changed. A task often hands the same one on
    /// (the arena's never changes): the held value and its digest then stay, found by pointer
    /// (or, for an equal new value, by comparing the values).
    fn commit_requests(
        &self,
        k: u64,
        prepared: &Prepared,
        evaluation: &mut Evaluation,
        observation: &WorldObservation,
        frames: &[(Id, Artifact)],
    ) -> Result<(PreparedCalls, NextContexts), SessionError> {
        let input = SensoryInput {
            boundary: U64(k + 1),
            views: observation.sensory_views.clone(),
            structured: None,
        };
        let mut requests = PreparedCalls::new();
        let mut next_contexts = NextContexts::new();
        for (id, prep) in prepared {
            let outcome = evaluation.outcomes.get(id).cloned().unwrap_or_default();
            let mut context = Hashed::new(
                evaluation
                    .contexts
                    .remove(id)
                    .ok_or_else(|| self.contract("task", k, format!("no context for `{id}`")))?,
            );
            let next = match self.states.get(id) {
                Some(s) if Arc::ptr_eq(&s.context, &context) => (None, s.context_digest),
                // An equal value keeps the digest and is adopted, so that the next step's commit
                // of the same shared value is found by pointer.
                Some(s) if s.context == *context => (Some(Arc::clone(&context)), s.context_digest),
                // The context before, handed back: its digest is kept too, and its value sent
                // (which the agent, keeping it as well, finds by pointer on the in-memory lane).
                Some(super::AgentState {
                    previous_context: Some((before, digest)),
                    ..
                }) if Arc::ptr_eq(before, &context) || **before == **context => {
                    context = Hashed::new(Arc::clone(before));
                    (Some(Arc::clone(before)), *digest)
                }
                // A new value is hashed once: the params carry the digest to the agent.
                _ => {
                    let digest = context.digest().map_err(|e| {
                        self.contract("task", k, format!("a value could not be hashed: {e}"))
                    })?;
                    (Some(Arc::clone(&context)), digest)
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
                .prepare(Some(self.scope(k)), params)
                .map_err(|e| self.contract(id.as_str(), k, e.to_string()))?;
            requests.insert(id.clone(), (p, request, frames.to_vec()));
        }
        Ok((requests, next_contexts))
    }
}
