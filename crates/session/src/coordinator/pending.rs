//! A committed boundary's row while the digests it records are still to come: the digests of
//! live frames (hashed on the digest thread, [`crate::digests`]), the observation's inspection
//! digest, each agent's decision digest and each task event's payload digest (hashed where the
//! row is finished, off the step's path). The row being finished holds each of them as what
//! gives it: a view digest known or being hashed ([`ViewDigest`]), the observation, each
//! decision and each event's payload to hash. No stand-in digest is ever held:
//! [`PendingRow::finish`] computes every one and only then builds the recorded
//! [`TraceBehaviour`]; a view digest that never came refuses the row
//! ([`SessionError::ViewDigestMissing`]).
//!
//! It knows nothing of how a row is built (`row`) or where it is finished (`handoff`).

use std::collections::BTreeMap;
use std::sync::Arc;

use flysim_component::task::TaskEvent;
use flysim_types::trace::{
    TraceAgent, TraceBehaviour, TraceControl, TraceEpisodeRequest, TraceEvent, TraceObservation,
    TraceOperational, TraceView, TransitionTrace,
};
use flysim_types::workers::{AgentTelemetry, Reward, SharedControls, WorldObservation};
use flysim_types::{Digest, Id, RationalNs, TypedValue, U64};

use super::canonical_digest;
use super::snapshot::SnapshotRow;
use crate::digests::PendingDigest;
use crate::error::SessionError;

/// A committed boundary's row, its behaviour half still waiting for digests.
pub(super) struct PendingRow {
    pub(super) behaviour: PendingBehaviour,
    pub(super) operational: TraceOperational,
}

/// A [`TraceBehaviour`] before its late digests: the same fields, but the observation's views
/// hold [`ViewDigest`]s, the inspection digest is the observation to hash, each agent holds
/// its decision rather than the decision's digest, each event its payload, and the batch's
/// controls stand for both the controls and their digest.
pub(super) struct PendingBehaviour {
    pub(super) boundary: U64,
    pub(super) episode: Id,
    pub(super) world_time: RationalNs,
    pub(super) batch_id: Option<Id>,
    /// The batch's controls, which the row records with their digest (`controlDigest`); none at
    /// boundary 0.
    pub(super) batch_controls: Option<SharedControls>,
    /// Every agent, sorted by id.
    pub(super) agents: Vec<PendingAgent>,
    /// The observation whose inspection the row names: its digest is computed on finishing.
    pub(super) inspection: Arc<WorldObservation>,
    pub(super) observation: PendingObservation,
    /// The task's events, in the task's order: each payload is hashed on finishing.
    pub(super) events: Vec<TaskEvent>,
    pub(super) episode_request: Option<TraceEpisodeRequest>,
    pub(super) variables: Option<flysim_types::memory::Variables>,
}

/// A [`TraceAgent`] holding the decision its row records the digest of.
pub(super) struct PendingAgent {
    pub(super) agent_id: Id,
    pub(super) profile_digest: Digest,
    pub(super) ticks_advanced: U64,
    pub(super) brain_ticks: U64,
    pub(super) remainder: RationalNs,
    /// The decision of this transition, hashed on finishing; none at boundary 0.
    pub(super) decision: Option<TypedValue>,
    pub(super) rewards: Vec<Reward>,
    pub(super) stimuli: Vec<Id>,
    pub(super) decision_context_digest: Digest,
    pub(super) committed_step: U64,
    pub(super) telemetry: AgentTelemetry,
}

/// A [`TraceObservation`] before its digests: no inspection digest yet (its owner holds what
/// gives it), and views whose digest may still be being hashed.
pub(super) struct PendingObservation {
    pub(super) engine_frame: Option<String>,
    /// Sorted by view id.
    pub(super) views: Vec<PendingView>,
}

/// A [`TraceView`] whose digest may still be being hashed.
pub(super) struct PendingView {
    pub(super) view_id: Id,
    pub(super) produced_step: U64,
    pub(super) digest: ViewDigest,
}

/// A view's digest as a row being finished holds it.
pub(super) enum ViewDigest {
    /// In: the view was sealed with it (checked by the router), or its hashing has finished.
    Known(Digest),
    /// A live frame being hashed on the digest thread.
    Hashing(PendingDigest),
    /// The digest thread could not read the frame, or ended before it hashed it.
    Unreadable,
}

impl ViewDigest {
    /// Whether a job queued on the digest thread after now finds this digest in.
    fn queued(&self) -> bool {
        match self {
            Self::Known(_) | Self::Unreadable => true,
            Self::Hashing(pending) => pending.queued(),
        }
    }

    /// Waits for the digest if it is being hashed; afterwards it is in or unreadable.
    async fn settle(&mut self) {
        if let Self::Hashing(pending) = self {
            *self = pending.wait().await.map_or(Self::Unreadable, Self::Known);
        }
    }

    /// The digest, if it is in; a hashing one is taken as the digest thread left it (done, when
    /// asked from a job queued after its own).
    fn into_digest(self) -> Option<Digest> {
        match self {
            Self::Known(digest) => Some(digest),
            Self::Hashing(pending) => pending.take(),
            Self::Unreadable => None,
        }
    }
}

impl PendingObservation {
    /// Every view digest being hashed, waited for.
    pub(super) async fn settle(&mut self) {
        for view in &mut self.views {
            view.digest.settle().await;
        }
    }

    /// Whether a job queued on the digest thread after now finds every view digest in.
    fn queued(&self) -> bool {
        self.views.iter().all(|v| v.digest.queued())
    }

    /// The observation as the row records it, with `inspection_digest`; the id of the first view
    /// whose digest is not in.
    pub(super) fn finish(self, inspection_digest: Digest) -> Result<TraceObservation, Id> {
        let views = self
            .views
            .into_iter()
            .map(|v| match v.digest.into_digest() {
                Some(digest) => Ok(TraceView {
                    view_id: v.view_id,
                    produced_step: v.produced_step,
                    digest,
                }),
                None => Err(v.view_id),
            })
            .collect::<Result<_, _>>()?;
        Ok(TraceObservation {
            inspection_digest,
            engine_frame: self.engine_frame,
            views,
        })
    }
}

impl PendingAgent {
    /// The agent as the row records it, its decision hashed.
    fn finish(self) -> Result<TraceAgent, String> {
        Ok(TraceAgent {
            agent_id: self.agent_id,
            profile_digest: self.profile_digest,
            ticks_advanced: self.ticks_advanced,
            brain_ticks: self.brain_ticks,
            remainder: self.remainder,
            decision_digest: self.decision.as_ref().map(canonical_digest).transpose()?,
            rewards: self.rewards,
            stimuli: self.stimuli,
            decision_context_digest: self.decision_context_digest,
            committed_step: self.committed_step,
            telemetry: self.telemetry,
        })
    }
}

impl PendingBehaviour {
    /// The committed boundary as a snapshot shows it (it needs none of the late digests).
    pub(super) fn snapshot_row(
        &self,
    ) -> SnapshotRow<'_, impl Iterator<Item = (&Id, &AgentTelemetry)>> {
        SnapshotRow {
            boundary: self.boundary,
            episode: &self.episode,
            world_time: self.world_time,
            agents: self.agents.iter().map(|a| (&a.agent_id, &a.telemetry)),
            event_ids: self.events.iter().map(|e| e.id.clone()).collect(),
        }
    }

    /// The behaviour row with every digest in: the view digests as the digest thread gave them,
    /// the inspection, decision and event payload digests computed here.
    ///
    /// # Errors
    ///
    /// [`SessionError::ViewDigestMissing`] for a view digest that is not in; a
    /// [`SessionError::Contract`] of the coordinator when a value cannot be hashed, of the task
    /// (at the step that produced the events) when an event's payload cannot.
    fn finish(self) -> Result<TraceBehaviour, SessionError> {
        let boundary = self.boundary.get();
        let observation = self
            .observation
            .finish(
                canonical_digest(&self.inspection.inspection)
                    .map_err(|reason| unfinished(boundary, reason))?,
            )
            .map_err(|view_id| SessionError::ViewDigestMissing { boundary, view_id })?;
        let agents = self
            .agents
            .into_iter()
            .map(PendingAgent::finish)
            .collect::<Result<_, _>>()
            .map_err(|reason| unfinished(boundary, reason))?;
        let control_digest = self
            .batch_controls
            .as_ref()
            .map(|controls| controls.digest())
            .transpose()
            .map_err(|e| unfinished(boundary, format!("the batch's controls: {e}")))?;
        let controls = self
            .batch_controls
            .map(|batch| batch.iter().map(TraceControl::of).collect());
        let events = self
            .events
            .into_iter()
            .map(trace_event)
            .collect::<Result<_, _>>()
            .map_err(|reason| SessionError::Contract {
                participant: "task".to_owned(),
                // The step whose evaluation produced them: the transition into `boundary`, or
                // the bootstrap (step 0) for boundary 0.
                step: boundary.saturating_sub(1),
                reason,
            })?;
        Ok(TraceBehaviour {
            boundary: self.boundary,
            episode: self.episode,
            world_time: self.world_time,
            batch_id: self.batch_id,
            control_digest,
            controls,
            agents,
            observation,
            events,
            episode_request: self.episode_request,
            variables: self.variables,
        })
    }
}

impl PendingRow {
    /// The committed boundary.
    pub(super) fn boundary(&self) -> u64 {
        self.behaviour.boundary.get()
    }

    /// The decision of each agent that made one, by agent id.
    pub(super) fn decisions(&self) -> BTreeMap<&Id, &TypedValue> {
        self.behaviour
            .agents
            .iter()
            .filter_map(|a| Some((&a.agent_id, a.decision.as_ref()?)))
            .collect()
    }

    /// Whether a job queued on the digest thread after now finds every view digest in.
    pub(super) fn queued(&self) -> bool {
        self.behaviour.observation.queued()
    }

    /// Every view digest being hashed, waited for.
    pub(super) async fn settle(&mut self) {
        self.behaviour.observation.settle().await;
    }

    /// The row with every digest in (see [`PendingBehaviour::finish`]).
    ///
    /// # Errors
    ///
    /// As [`PendingBehaviour::finish`].
    pub(super) fn finish(self) -> Result<TransitionTrace, SessionError> {
        Ok(TransitionTrace {
            behaviour: self.behaviour.finish()?,
            operational: self.operational,
        })
    }
}

/// A task event as the row records it, its payload hashed.
fn trace_event(event: TaskEvent) -> Result<TraceEvent, String> {
    Ok(TraceEvent {
        payload_digest: canonical_digest(&event.payload)?,
        id: event.id,
        kind_id: event.kind_id,
        source_step: U64(event.source_step),
        agent_id: event.agent_id,
    })
}

/// The coordinator's failure to finish the row of `boundary`, for `reason`.
pub(super) fn unfinished(boundary: u64, reason: String) -> SessionError {
    SessionError::Contract {
        participant: "coordinator".to_owned(),
        step: boundary,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use flysim_component::task::TaskEvent;
    use flysim_types::hashed::Hashed;
    use flysim_types::trace::{TraceBehaviour, TraceControl, TransitionTrace};
    use flysim_types::workers::{SharedControls, WorldObservation};
    use flysim_types::{TypedValue, U64};

    use super::{
        PendingAgent, PendingBehaviour, PendingObservation, PendingView, ViewDigest,
        canonical_digest,
    };
    use crate::digests::PendingDigest;
    use crate::error::SessionError;

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

    /// A small typed value, the decision or inspection the pending row hashes.
    fn typed(value: serde_json::Value) -> TypedValue {
        serde_json::from_value(serde_json::json!({
            "schema": {"id": "test-v1", "version": 1, "digest": "00".repeat(32)},
            "value": value,
        }))
        .expect("a typed value")
    }

    /// A batch of one port's controls, `a` down.
    fn batch_controls() -> SharedControls {
        let control = serde_json::from_value(serde_json::json!({
            "portId": "p1",
            "buttons": [{"id": "a", "down": true}],
            "axes": [],
        }))
        .expect("a control");
        Arc::new(Hashed::new(vec![control]))
    }

    /// `row` as it was before finishing: its view digests known, its observation `inspection`,
    /// every agent's decision `decision` and every event's payload `decision` too.
    fn pending(
        row: &TraceBehaviour,
        inspection: &TypedValue,
        decision: &TypedValue,
    ) -> PendingBehaviour {
        let observation = WorldObservation {
            boundary: row.boundary,
            world_time: row.world_time,
            engine_frame: row.observation.engine_frame.clone(),
            sensory_views: Vec::new(),
            inspection: inspection.clone(),
            broadcast_views: Vec::new(),
            audio: Vec::new(),
        };
        PendingBehaviour {
            boundary: row.boundary,
            episode: row.episode.clone(),
            world_time: row.world_time,
            batch_id: row.batch_id.clone(),
            batch_controls: row.control_digest.map(|_| batch_controls()),
            agents: row
                .agents
                .iter()
                .map(|a| PendingAgent {
                    agent_id: a.agent_id.clone(),
                    profile_digest: a.profile_digest,
                    ticks_advanced: a.ticks_advanced,
                    brain_ticks: a.brain_ticks,
                    remainder: a.remainder,
                    decision: Some(decision.clone()),
                    rewards: a.rewards.clone(),
                    stimuli: a.stimuli.clone(),
                    decision_context_digest: a.decision_context_digest,
                    committed_step: a.committed_step,
                    telemetry: a.telemetry.clone(),
                })
                .collect(),
            inspection: Arc::new(observation),
            observation: PendingObservation {
                engine_frame: row.observation.engine_frame.clone(),
                views: row
                    .observation
                    .views
                    .iter()
                    .map(|v| PendingView {
                        view_id: v.view_id.clone(),
                        produced_step: v.produced_step,
                        digest: ViewDigest::Known(v.digest),
                    })
                    .collect(),
            },
            events: row
                .events
                .iter()
                .map(|e| TaskEvent {
                    id: e.id.clone(),
                    kind_id: e.kind_id.clone(),
                    source_step: e.source_step.get(),
                    agent_id: e.agent_id.clone(),
                    payload: decision.clone(),
                })
                .collect(),
            episode_request: row.episode_request.clone(),
            variables: row.variables.clone(),
        }
    }

    #[test]
    fn a_finished_row_holds_the_digests_of_what_it_was_built_from() {
        let mut row = recorded_row().behaviour;
        let (inspection, decision) = (
            typed(serde_json::json!({"score": 3})),
            typed(serde_json::json!({"press": true})),
        );
        let finished = pending(&row, &inspection, &decision).finish().unwrap();
        row.observation.inspection_digest = canonical_digest(&inspection).unwrap();
        for agent in &mut row.agents {
            agent.decision_digest = Some(canonical_digest(&decision).unwrap());
        }
        assert!(row.control_digest.is_some(), "the recorded row has a batch");
        let batch = batch_controls();
        row.control_digest = Some(canonical_digest(&*batch).unwrap());
        row.controls = Some(batch.iter().map(TraceControl::of).collect());
        assert!(!row.events.is_empty(), "the recorded row has events");
        for event in &mut row.events {
            event.payload_digest = canonical_digest(&decision).unwrap();
        }
        assert_eq!(finished, row);
        // At boundary 0 no agent has a decision, and none is recorded.
        let mut first = pending(&row, &inspection, &decision);
        first.agents.iter_mut().for_each(|a| a.decision = None);
        let finished = first.finish().unwrap();
        assert!(finished.agents.iter().all(|a| a.decision_digest.is_none()));
    }

    /// An event payload canonical JSON cannot hold refuses the row as the task's error, at the
    /// step whose evaluation produced the event.
    #[test]
    fn an_event_payload_that_cannot_be_hashed_is_the_tasks_error_at_its_step() {
        let row = recorded_row().behaviour;
        let (inspection, decision) = (typed(serde_json::json!({})), typed(serde_json::json!({})));
        let mut unhashable = pending(&row, &inspection, &decision);
        unhashable.boundary = U64(5);
        unhashable.events[0].payload.value = serde_json::json!({"count": 1_u64 << 60})
            .as_object()
            .unwrap()
            .clone();
        let error = unhashable.finish().unwrap_err();
        assert!(
            matches!(&error, SessionError::Contract { participant, step: 4, .. } if participant == "task"),
            "{error}"
        );
    }

    #[test]
    fn a_view_digest_that_never_came_refuses_the_row_naming_the_view() {
        let row = recorded_row().behaviour;
        let view_id = row.observation.views[0].view_id.clone();
        let (inspection, decision) = (typed(serde_json::json!({})), typed(serde_json::json!({})));
        for digest in [
            ViewDigest::Unreadable,
            ViewDigest::Hashing(PendingDigest::abandoned()),
        ] {
            let mut unfinished = pending(&row, &inspection, &decision);
            unfinished.observation.views[0].digest = digest;
            let error = unfinished.finish().unwrap_err();
            assert_eq!(error.code_str(), "FS0314");
            assert!(
                matches!(&error, SessionError::ViewDigestMissing { boundary: 1, view_id: v } if *v == view_id),
                "{error}"
            );
        }
    }
}
