//! What the coordinator publishes (contracts §10): the session descriptor once the agents are
//! initialised, and a committed snapshot at every committed boundary, built from the boundary's
//! behaviour row (recorded, or still waiting for its late digests, which a snapshot does not
//! show: [`SnapshotRow`]), the committed observation and, after a transition, its decisions and
//! controls. Built after `Ready(k)` is entered and handed to the publisher without waiting.
//!
//! It knows nothing of how the publisher reaches the bus (`crate::publication`).

use std::collections::BTreeMap;
use std::task::Poll;

use flysim_types::publish::{
    AgentDescriptor, CommittedSnapshot, SCHEDULER_ID, SessionDescriptor, SessionEvent,
    SnapshotAgent, SnapshotMedia,
};
use flysim_types::trace::TraceBehaviour;
use flysim_types::workers::{AgentInitializeResult, AgentTelemetry, PortControl};
use flysim_types::{Digest, Id, RationalNs, TypedValue, U64};

use super::Coordinator;
use crate::publication::Outgoing;

/// The descriptor revision this session publishes: its agents and world never change within a
/// session.
const REVISION: U64 = U64(1);

/// What a snapshot shows of a committed boundary's behaviour row.
pub(super) struct SnapshotRow<'a, A> {
    pub(super) boundary: U64,
    pub(super) episode: &'a Id,
    pub(super) world_time: RationalNs,
    /// Every agent's id and telemetry, sorted by id.
    pub(super) agents: A,
    /// The ids of the task's events at this boundary, in the task's order.
    pub(super) event_ids: Vec<Id>,
}

/// What a snapshot shows of a recorded row.
pub(super) fn recorded(
    row: &TraceBehaviour,
) -> SnapshotRow<'_, impl Iterator<Item = (&Id, &AgentTelemetry)>> {
    SnapshotRow {
        boundary: row.boundary,
        episode: &row.episode,
        world_time: row.world_time,
        agents: row.agents.iter().map(|a| (&a.agent_id, &a.telemetry)),
        event_ids: row.events.iter().map(|e| e.id.clone()).collect(),
    }
}

/// The transition that ended at a boundary: each agent's decision and the whole batch.
pub(super) struct Transitioned<'a> {
    /// The decisions, by agent id.
    pub(super) decisions: BTreeMap<&'a Id, &'a TypedValue>,
    /// The batch, one control per port.
    pub(super) controls: &'a [PortControl],
}

impl Coordinator {
    /// Publishes the session descriptor from the agents' initialisation results.
    pub(super) fn publish_descriptor(&mut self, agents: &BTreeMap<Id, AgentInitializeResult>) {
        let Some(environment) = self.descriptor.as_deref().cloned() else {
            return;
        };
        let agents = agents
            .iter()
            .filter_map(|(id, r)| {
                let state = self.states.get(id)?;
                Some(AgentDescriptor {
                    agent_id: id.clone(),
                    port_id: state.port.clone(),
                    profile_digest: r.profile_digest,
                    dataset_digest: r.graph.dataset_digest,
                    index_digest: r.graph.index_digest,
                    neuron_count: r.graph.neuron_count,
                    rate_roles: r.graph.rate_roles.clone(),
                    supported_stimuli: r.graph.supported_stimuli.clone(),
                })
            })
            .collect();
        let descriptor = SessionDescriptor {
            session_id: self.session_id.clone(),
            revision: REVISION,
            composition_digest: self.plan.plan_digest,
            scheduler_id: Id::from_static(SCHEDULER_ID),
            environment,
            task_schema: self.task.progress_schema(),
            agents,
        };
        self.publisher.descriptor(descriptor);
    }

    /// Publishes the committed boundary `row` describes; `transition` is the transition that
    /// ended there (none at boundary 0 and at a restored boundary).
    pub(super) fn publish_snapshot<'a>(
        &mut self,
        row: SnapshotRow<'a, impl Iterator<Item = (&'a Id, &'a AgentTelemetry)>>,
        transition: Option<&Transitioned<'_>>,
    ) {
        let Some(committed) = &self.committed else {
            return;
        };
        let agents = row
            .agents
            .map(|(agent_id, telemetry)| {
                let decision = transition.and_then(|t| t.decisions.get(agent_id));
                let port = self.states.get(agent_id).map(|s| &s.port);
                let controls = transition.and_then(|t| {
                    t.controls
                        .iter()
                        .find(|c| Some(&c.port_id) == port)
                        .cloned()
                });
                SnapshotAgent {
                    agent_id: agent_id.clone(),
                    telemetry: telemetry.clone(),
                    selected_decision: decision.map(|d| (*d).clone()),
                    applied_controls: controls,
                }
            })
            .collect();
        let observation = &committed.observation;
        let media = SnapshotMedia {
            views: observation
                .sensory_views
                .iter()
                .chain(&observation.broadcast_views)
                .cloned()
                .collect(),
            audio: observation.audio.clone(),
        };
        let snapshot = CommittedSnapshot {
            descriptor_revision: REVISION,
            publisher_incarnation: self.epoch.clone(),
            scope: self.scope(row.boundary.get()),
            episode_id: row.episode.clone(),
            sequence: U64(self.publisher.next_sequence()),
            world_time: row.world_time,
            agents,
            progress: TypedValue {
                schema: self.progress_schema.clone(),
                value: match &self.progress {
                    serde_json::Value::Object(map) => map.clone(),
                    other => std::iter::once(("value".to_owned(), other.clone())).collect(),
                },
            },
            media,
            event_ids: row.event_ids,
        };
        let frames = committed.frames.clone();
        self.publisher.snapshot(Outgoing { snapshot, frames });
    }

    /// Gives the other tasks of this thread a turn after a snapshot was handed over. The
    /// publisher's task runs on this thread, and a step whose calls all answer in place (the
    /// local lane in in-process mode) waits on nothing: without this turn, a watcher would see a
    /// snapshot only when something else made a step wait. Where and when the publisher runs is
    /// never behaviour.
    ///
    /// The coordinator wakes itself and is pending once: the runtime queues it behind the tasks
    /// that are ready (the publisher, woken by the snapshot), without the I/O driver's poll that
    /// `tokio::task::yield_now` waits for (a system call a step; about 1.5 µs of a Game Boy
    /// step's overhead, measured).
    pub(super) async fn let_the_publisher_run(&self) {
        let mut turned = false;
        std::future::poll_fn(|cx| {
            if std::mem::replace(&mut turned, true) {
                Poll::Ready(())
            } else {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        })
        .await;
    }

    /// What this session published so far.
    #[must_use]
    pub fn publication_counts(&self) -> std::sync::Arc<crate::publication::PublicationCounts> {
        self.publisher.counts()
    }

    /// Publishes the end of the invocation and waits (bounded) for the publications to go out.
    pub async fn publish_end(&mut self, run_digest: Digest, outcome: &'static str) {
        self.publisher.event(SessionEvent::Ended {
            run_digest,
            steps: U64(self.step),
            outcome: Id::from_static(outcome),
        });
        self.publisher.finish().await;
    }
}
