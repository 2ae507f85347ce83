//! The row builder: turns a committed boundary (the bootstrap's boundary 0, or a transition
//! the step committed) into its trace row, the behaviour half and the operational half.
//!
//! A row leaves some digests for later, so that no step waits for them: the digests of live
//! frames (hashed on the digest thread), the observation's inspection digest, the agents'
//! decision digests and the task events' payload digests. The builder therefore makes a
//! [`PendingRow`] (`pending`), which holds what gives each of them; finishing it (`handoff`)
//! computes them and only then builds the recorded row. The builder knows nothing of calls or
//! phases, and does not finish, hash or record rows.

use std::sync::Arc;
use std::time::Duration;

use flysim_bus::Artifact;
use flysim_types::trace::{
    AgentRequest, PhaseTimings, TraceEpisodeRequest, TraceObservation, TraceOperational,
};
use flysim_types::workers::{
    AgentInitializeResult, AgentTelemetry, PreparedDecision, SharedControls, WorldObservation,
};
use flysim_types::{BusCallId, Digest, DomainRequestId, Id, RationalNs, U64};

use super::pending::{
    PendingAgent, PendingBehaviour, PendingObservation, PendingRow, PendingView, ViewDigest,
};
use super::{Coordinator, canonical_digest, nanos};
use crate::error::SessionError;
use flysim_component::task::{AgentOutcome, EpisodeRequest, TaskEvent};

/// The committed boundary 0, as bootstrap leaves it.
pub(super) struct Bootstrapped {
    /// The environment's observation `O[0]`.
    pub(super) observation: Arc<WorldObservation>,
    /// The observation as the row records it, its view digests being computed.
    pub(super) traced: PendingObservation,
    /// Every agent's initialisation result, by agent id.
    pub(super) agents: std::collections::BTreeMap<Id, AgentInitializeResult>,
    /// The task's bootstrap events.
    pub(super) events: Vec<TaskEvent>,
    /// The task's declared variables at boundary 0 (a memory task).
    pub(super) variables: Option<flysim_types::memory::Variables>,
    /// The request ids of the agents' initialisations.
    pub(super) initialize_requests: Vec<AgentRequest>,
    /// The request id of the environment's initialisation.
    pub(super) environment_request: DomainRequestId,
    pub(super) calls: Vec<BusCallId>,
    /// How long bootstrap took.
    pub(super) elapsed: Duration,
}

/// One agent's part of a committed transition.
pub(super) struct CommittedAgent {
    pub(super) agent_id: Id,
    pub(super) profile_digest: Digest,
    /// Its prepared decision.
    pub(super) decision: PreparedDecision,
    /// What the task's evaluation gave it.
    pub(super) outcome: AgentOutcome,
    /// The digest of its next decision context, which its commit confirmed.
    pub(super) context_digest: Digest,
    /// What its commit reported.
    pub(super) telemetry: AgentTelemetry,
}

/// The request and call ids of one transition, for its operational row.
pub(super) struct StepRequests {
    pub(super) prepare: Vec<AgentRequest>,
    pub(super) commit: Vec<AgentRequest>,
    pub(super) advance: DomainRequestId,
    pub(super) calls: Vec<BusCallId>,
}

/// A transition `k -> k+1` as the step committed it.
pub(super) struct CommittedTransition {
    /// `k`.
    pub(super) step: u64,
    pub(super) batch: Id,
    /// The batch's controls, one per port in descriptor order, shared with its request: the row
    /// records them and their digest (`controlDigest`), both taken when the row is finished.
    pub(super) batch_controls: SharedControls,
    /// The observation at `k+1`.
    pub(super) observation: Arc<WorldObservation>,
    /// The observation as the row records it, its view digests being computed.
    pub(super) traced: PendingObservation,
    /// Every agent, in sorted agent-id order.
    pub(super) agents: Vec<CommittedAgent>,
    pub(super) events: Vec<TaskEvent>,
    pub(super) episode_request: Option<EpisodeRequest>,
    /// The task's declared variables at `k+1` (a memory task).
    pub(super) variables: Option<flysim_types::memory::Variables>,
    pub(super) requests: StepRequests,
    pub(super) timings: PhaseTimings,
}

impl Coordinator {
    /// The row of the committed boundary 0.
    pub(super) fn boundary_zero_row(&self, boot: Bootstrapped) -> Result<PendingRow, SessionError> {
        let agents = boot
            .agents
            .iter()
            .map(|(id, r)| PendingAgent {
                agent_id: id.clone(),
                profile_digest: r.profile_digest,
                ticks_advanced: r.warmup_ticks,
                brain_ticks: r.warmup_ticks,
                remainder: RationalNs::ZERO,
                decision: None,
                rewards: Vec::new(),
                stimuli: Vec::new(),
                decision_context_digest: r.decision_context_digest,
                committed_step: U64(0),
                telemetry: r.telemetry.clone(),
            })
            .collect();
        let behaviour = PendingBehaviour {
            boundary: U64(0),
            episode: self.episode.clone(),
            world_time: boot.observation.world_time,
            batch_id: None,
            batch_controls: None,
            agents,
            inspection: boot.observation,
            observation: boot.traced,
            events: boot.events,
            episode_request: None,
            variables: boot.variables,
        };
        Ok(PendingRow {
            behaviour,
            operational: TraceOperational {
                session_id: self.session_id.clone(),
                epoch: self.epoch.clone(),
                step: U64(0),
                prepare_request_ids: boot.initialize_requests,
                commit_request_ids: Vec::new(),
                advance_request_id: Some(boot.environment_request),
                bus_call_ids: boot.calls,
                wall_time_ns: nanos(self.started.elapsed()),
                phase_ns: PhaseTimings {
                    prepare: nanos(boot.elapsed),
                    total: nanos(boot.elapsed),
                    ..PhaseTimings::default()
                },
            },
        })
    }

    /// The row of the boundary `k+1` a transition committed.
    pub(super) fn transition_row(
        &self,
        transition: CommittedTransition,
    ) -> Result<PendingRow, SessionError> {
        let k = transition.step;
        let next = k + 1;
        let agents = transition
            .agents
            .into_iter()
            .map(|agent| {
                let prepared = agent.decision;
                PendingAgent {
                    agent_id: agent.agent_id,
                    profile_digest: agent.profile_digest,
                    ticks_advanced: prepared.ticks_advanced,
                    brain_ticks: prepared.brain_ticks,
                    remainder: prepared.remainder,
                    // Moved in for its digest: the row records only that.
                    decision: Some(prepared.decision),
                    rewards: agent.outcome.rewards,
                    stimuli: agent.outcome.stimuli.iter().map(|s| s.id.clone()).collect(),
                    decision_context_digest: agent.context_digest,
                    committed_step: U64(next),
                    telemetry: agent.telemetry,
                }
            })
            .collect();
        let episode_request = match &transition.episode_request {
            Some(r) => Some(TraceEpisodeRequest {
                kind: r.kind,
                reason: r.reason.clone(),
                outcome_digest: canonical_digest(&r.outcome)
                    .map_err(|reason| self.contract("task", k, reason))?,
            }),
            None => None,
        };
        let behaviour = PendingBehaviour {
            boundary: U64(next),
            episode: self.episode.clone(),
            world_time: transition.observation.world_time,
            batch_id: Some(transition.batch),
            batch_controls: Some(transition.batch_controls),
            agents,
            inspection: transition.observation,
            observation: transition.traced,
            events: transition.events,
            episode_request,
            variables: transition.variables,
        };
        let requests = transition.requests;
        let operational = TraceOperational {
            session_id: self.session_id.clone(),
            epoch: self.epoch.clone(),
            step: U64(k),
            prepare_request_ids: requests.prepare,
            commit_request_ids: requests.commit,
            advance_request_id: Some(requests.advance),
            bus_call_ids: requests.calls,
            wall_time_ns: nanos(self.started.elapsed()),
            phase_ns: transition.timings,
        };
        Ok(PendingRow {
            behaviour,
            operational,
        })
    }

    /// The observation as the row records it, but for its inspection digest (computed by
    /// whoever finishes it: [`PendingRow`]'s finishing, [`Coordinator::trace_observation_now`]).
    /// A view sealed with its digest (checked by the router) gives it; a live frame, sealed
    /// without one, is hashed on the digest thread and its row waits for it when it is
    /// finished. A view whose artifact is not attached is a contract failure.
    pub(super) fn trace_observation(
        &mut self,
        env_id: &Id,
        observation: &WorldObservation,
        attachments: &[(Id, Artifact)],
    ) -> Result<PendingObservation, SessionError> {
        let step = observation.boundary.get();
        let mut views = Vec::with_capacity(observation.sensory_views.len());
        for view in &observation.sensory_views {
            let digest = match view.pixels.digest {
                Some(digest) => ViewDigest::Known(digest),
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
                    ViewDigest::Hashing(self.run.frame_digests.submit(artifact))
                }
            };
            views.push(PendingView {
                view_id: view.view_id.clone(),
                produced_step: view.produced_step,
                digest,
            });
        }
        views.sort_by(|a, b| a.view_id.cmp(&b.view_id));
        Ok(PendingObservation {
            engine_frame: observation.engine_frame.clone(),
            views,
        })
    }

    /// [`Coordinator::trace_observation`], waiting for its digests.
    pub(super) async fn trace_observation_now(
        &mut self,
        env_id: &Id,
        observation: &WorldObservation,
        attachments: &[(Id, Artifact)],
    ) -> Result<TraceObservation, SessionError> {
        let boundary = observation.boundary.get();
        let mut traced = self.trace_observation(env_id, observation, attachments)?;
        let inspection_digest = canonical_digest(&observation.inspection)
            .map_err(|reason| self.contract("coordinator", boundary, reason))?;
        traced.settle().await;
        traced
            .finish(inspection_digest)
            .map_err(|view_id| SessionError::ViewDigestMissing { boundary, view_id })
    }
}
