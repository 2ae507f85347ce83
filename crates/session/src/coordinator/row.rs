//! The row builder: turns a committed boundary (the bootstrap's boundary 0, or a transition
//! the step committed) into its trace row, the behaviour half and the operational half.
//!
//! A row leaves some digests for later, so that no step waits for them: the digests of live
//! frames (hashed on the digest thread) and its late digests ([`LateDigests`]). Until the row is
//! finished (`handoff`) each holds [`digest_pending`]; finishing puts every one in before the
//! row is validated or its text written. The builder knows nothing of calls or phases, and
//! does not finish, hash or record rows.

use std::sync::Arc;
use std::time::Duration;

use flysim_bus::Artifact;
use flysim_types::trace::{
    AgentRequest, PhaseTimings, TraceAgent, TraceBehaviour, TraceControl, TraceEpisodeRequest,
    TraceEvent, TraceObservation, TraceOperational, TraceView, TransitionTrace,
};
use flysim_types::workers::{
    AgentInitializeResult, AgentTelemetry, PreparedDecision, WorldObservation,
};
use flysim_types::{BusCallId, Digest, DomainRequestId, Id, RationalNs, TypedValue, U64};

use super::handoff::{fill_views, wait_all};
use super::{Coordinator, canonical_digest, nanos};
use crate::digests::PendingDigest;
use crate::error::SessionError;
use flysim_component::task::{AgentOutcome, EpisodeRequest, TaskEvent};

/// What a row holds in place of a digest computed after the row is built: a live frame's view
/// digest, the observation's inspection digest, an agent's decision digest. The row is finished
/// with every one of them in, so these bytes are never recorded.
pub(super) fn digest_pending() -> Digest {
    Digest::from_bytes([0; 32])
}

/// The first digest of `row` still [`digest_pending`], named: finishing a row puts every late
/// and view digest in, and one left out is refused rather than recorded as zeros.
pub(super) fn first_pending(row: &TraceBehaviour) -> Option<String> {
    let pending = digest_pending();
    if row.observation.inspection_digest == pending {
        return Some("the observation's inspection digest".into());
    }
    if let Some(view) = row.observation.views.iter().find(|v| v.digest == pending) {
        return Some(format!("view `{}`'s digest", view.view_id));
    }
    row.agents
        .iter()
        .find(|a| a.decision_digest == Some(pending))
        .map(|a| format!("agent `{}`'s decision digest", a.agent_id))
}

/// A behaviour row whose view digests are still being computed ([`crate::digests`]): recorded
/// by `Coordinator::record` once they are in.
pub(super) struct PendingRow {
    pub(super) row: TransitionTrace,
    pub(super) digests: Vec<(Id, PendingDigest)>,
    pub(super) late: LateDigests,
}

/// The digests a row records that no step depends on: the observation's inspection digest and
/// each agent's decision digest. They are computed where the row is finished, on the digest
/// thread when it polls, rather than on the step's path; the row holds [`digest_pending`]
/// there until then.
pub(super) struct LateDigests {
    /// The observation whose inspection the row names.
    inspection: Arc<WorldObservation>,
    /// The decision of each of the row's agents that made one, by its place in the row.
    decisions: Vec<(usize, TypedValue)>,
}

impl PendingRow {
    /// The decision of each agent that made one, by agent id.
    pub(super) fn decisions(&self) -> std::collections::BTreeMap<&Id, &TypedValue> {
        self.late
            .decisions
            .iter()
            .filter_map(|(at, d)| Some((&self.row.behaviour.agents.get(*at)?.agent_id, d)))
            .collect()
    }
}

impl LateDigests {
    /// Puts the late digests into `row`.
    ///
    /// # Errors
    ///
    /// Why a value could not be hashed (canonical JSON cannot hold it).
    pub(super) fn fill(self, row: &mut TraceBehaviour) -> Result<(), String> {
        row.observation.inspection_digest = canonical_digest(&self.inspection.inspection)?;
        for (at, decision) in self.decisions {
            if let Some(agent) = row.agents.get_mut(at) {
                agent.decision_digest = Some(canonical_digest(&decision)?);
            }
        }
        Ok(())
    }
}

/// The committed boundary 0, as bootstrap leaves it.
pub(super) struct Bootstrapped {
    /// The environment's observation `O[0]`.
    pub(super) observation: Arc<WorldObservation>,
    /// The observation as the row records it, and its view digests being computed.
    pub(super) traced: TraceObservation,
    pub(super) digests: Vec<(Id, PendingDigest)>,
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
    pub(super) control_digest: Digest,
    /// The batch's controls, one per port in descriptor order.
    pub(super) controls: Vec<TraceControl>,
    /// The observation at `k+1`.
    pub(super) observation: Arc<WorldObservation>,
    /// The observation as the row records it, and its view digests being computed.
    pub(super) traced: TraceObservation,
    pub(super) digests: Vec<(Id, PendingDigest)>,
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
                telemetry: r.telemetry.clone(),
            })
            .collect();
        let behaviour = TraceBehaviour {
            boundary: U64(0),
            episode: self.episode.clone(),
            world_time: boot.observation.world_time,
            batch_id: None,
            control_digest: None,
            controls: None,
            agents,
            observation: boot.traced,
            events: self.trace_events(&boot.events, 0)?,
            episode_request: None,
            variables: boot.variables,
        };
        let late = LateDigests {
            inspection: boot.observation,
            decisions: Vec::new(),
        };
        let row = TransitionTrace {
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
        };
        Ok(PendingRow {
            row,
            digests: boot.digests,
            late,
        })
    }

    /// The row of the boundary `k+1` a transition committed.
    pub(super) fn transition_row(
        &self,
        transition: CommittedTransition,
    ) -> Result<PendingRow, SessionError> {
        let k = transition.step;
        let next = k + 1;
        let mut agents = Vec::with_capacity(transition.agents.len());
        let mut decisions = Vec::with_capacity(transition.agents.len());
        for agent in transition.agents {
            let prepared = agent.decision;
            // Moved out for its digest: the row keeps only the request ids of the prepares.
            decisions.push((agents.len(), prepared.decision));
            agents.push(TraceAgent {
                agent_id: agent.agent_id,
                profile_digest: agent.profile_digest,
                ticks_advanced: prepared.ticks_advanced,
                brain_ticks: prepared.brain_ticks,
                remainder: prepared.remainder,
                decision_digest: Some(digest_pending()),
                rewards: agent.outcome.rewards,
                stimuli: agent.outcome.stimuli.iter().map(|s| s.id.clone()).collect(),
                decision_context_digest: agent.context_digest,
                committed_step: U64(next),
                telemetry: agent.telemetry,
            });
        }
        let episode_request = match &transition.episode_request {
            Some(r) => Some(TraceEpisodeRequest {
                kind: r.kind,
                reason: r.reason.clone(),
                outcome_digest: canonical_digest(&r.outcome)
                    .map_err(|reason| self.contract("task", k, reason))?,
            }),
            None => None,
        };
        let behaviour = TraceBehaviour {
            boundary: U64(next),
            episode: self.episode.clone(),
            world_time: transition.observation.world_time,
            batch_id: Some(transition.batch),
            control_digest: Some(transition.control_digest),
            controls: Some(transition.controls),
            agents,
            observation: transition.traced,
            events: self.trace_events(&transition.events, k)?,
            episode_request,
            variables: transition.variables,
        };
        let late = LateDigests {
            inspection: transition.observation,
            decisions,
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
            row: TransitionTrace {
                behaviour,
                operational,
            },
            digests: transition.digests,
            late,
        })
    }

    /// The observation as the row records it. A view sealed with its digest (checked by the
    /// router) gives it; a live frame, sealed without one, is hashed on the digest thread and
    /// its row waits for it when it is recorded. A view whose artifact is not attached is a
    /// contract failure. The inspection digest is left [`digest_pending`] for whoever finishes
    /// the row ([`LateDigests`], [`Coordinator::trace_observation_now`]).
    pub(super) fn trace_observation(
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
                    pending.push((
                        view.view_id.clone(),
                        self.run.frame_digests.submit(artifact),
                    ));
                    digest_pending()
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
                inspection_digest: digest_pending(),
                engine_frame: observation.engine_frame.clone(),
                views,
            },
            pending,
        ))
    }

    /// [`Coordinator::trace_observation`], waiting for its digests.
    pub(super) async fn trace_observation_now(
        &mut self,
        env_id: &Id,
        observation: &WorldObservation,
        attachments: &[(Id, Artifact)],
    ) -> Result<TraceObservation, SessionError> {
        let boundary = observation.boundary.get();
        let (mut traced, digests) = self.trace_observation(env_id, observation, attachments)?;
        traced.inspection_digest = canonical_digest(&observation.inspection)
            .map_err(|reason| self.contract("coordinator", boundary, reason))?;
        fill_views(&mut traced, wait_all(digests).await)
            .map_err(|reason| self.contract("coordinator", boundary, reason))?;
        Ok(traced)
    }

    /// The task's events as the row records them, each payload by its digest.
    fn trace_events(
        &self,
        events: &[TaskEvent],
        step: u64,
    ) -> Result<Vec<TraceEvent>, SessionError> {
        events
            .iter()
            .map(|e| {
                Ok(TraceEvent {
                    id: e.id.clone(),
                    kind_id: e.kind_id.clone(),
                    source_step: U64(e.source_step),
                    agent_id: e.agent_id.clone(),
                    payload_digest: canonical_digest(&e.payload)
                        .map_err(|reason| self.contract("task", step, reason))?,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use flysim_types::trace::TransitionTrace;

    use super::{digest_pending, first_pending};

    /// A recorded row of the synthetic run (boundary 1: one view, two agents with decisions).
    fn recorded_row() -> TransitionTrace {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/runs/synthetic-3/trace.ndjson"
        );
        let text = std::fs::read_to_string(path).expect("the recorded trace");
        let line = text.lines().nth(1).expect("row 1");
        flysim_types::payload::parse_payload(line.as_bytes()).expect("a row")
    }

    #[test]
    fn a_digest_left_pending_is_named_and_a_finished_row_has_none() {
        let row = recorded_row();
        assert_eq!(first_pending(&row.behaviour), None);
        let mut inspection = row.clone();
        inspection.behaviour.observation.inspection_digest = digest_pending();
        assert_eq!(
            first_pending(&inspection.behaviour).as_deref(),
            Some("the observation's inspection digest")
        );
        let mut view = row.clone();
        let id = view.behaviour.observation.views[0].view_id.clone();
        view.behaviour.observation.views[0].digest = digest_pending();
        assert_eq!(
            first_pending(&view.behaviour),
            Some(format!("view `{id}`'s digest"))
        );
        let mut decision = row;
        let last = decision.behaviour.agents.len() - 1;
        let agent = decision.behaviour.agents[last].agent_id.clone();
        decision.behaviour.agents[last].decision_digest = Some(digest_pending());
        assert_eq!(
            first_pending(&decision.behaviour),
            Some(format!("agent `{agent}`'s decision digest"))
        );
    }
}
