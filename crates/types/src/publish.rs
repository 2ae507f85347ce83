//! The publication boundary (contracts §10): what a session publishes for whoever watches it,
//! and the rules a watcher may rely on.
//!
//! A session publishes, over the same bus its workers use:
//!
//! - a [`SessionDescriptor`] on a retained-latest topic ([`Topics::descriptor`]): who plays,
//!   on which world, with which brains;
//! - a [`CommittedSnapshot`] on a latest topic ([`Topics::snapshots`]) after every committed
//!   boundary, never before every commit has established `Ready(k)`;
//! - bounded events ([`Topics::events`]).
//!
//! Publishing is one-way: nothing a watcher does, or fails to do, reaches the run. This module
//! holds the shapes and their validation; it knows nothing of the bus or of who publishes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::ContractError;
use crate::payload::{Nullable, Payload, check, required_nullable as nullable};
use crate::rational::RationalNs;
use crate::scalar::{Digest, Id, SchemaRef, Scope, TypedValue, U64};
use crate::workers::{AgentTelemetry, AudioRef, EnvironmentDescriptor, PortControl, ViewRef};

/// The scheduler every flysim session runs.
pub const SCHEDULER_ID: &str = "lockstep-v1";
/// Agents a session descriptor or snapshot holds: 1..=4.
pub const MAX_PUBLISHED_AGENTS: usize = 4;

/// The topic names of one session: `session.<sessionId>.{descriptor,snapshots,events}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topics {
    /// Retained latest: the [`SessionDescriptor`].
    pub descriptor: String,
    /// Latest: a [`CommittedSnapshot`] per committed boundary.
    pub snapshots: String,
    /// Bounded: task events as they are committed.
    pub events: String,
}

impl Topics {
    /// The topics of session `session_id`.
    #[must_use]
    pub fn of(session_id: &Id) -> Self {
        let base = format!("session.{session_id}");
        Self {
            descriptor: format!("{base}.descriptor"),
            snapshots: format!("{base}.snapshots"),
            events: format!("{base}.events"),
        }
    }
}

/// One agent as the session descriptor presents it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AgentDescriptor {
    /// The agent.
    pub agent_id: Id,
    /// The port it drives; declared by the environment.
    pub port_id: Id,
    /// Its profile's digest.
    pub profile_digest: Digest,
    /// The connectome dataset's digest.
    pub dataset_digest: Digest,
    /// The neuron index's digest (needed to map spikes onto geometry).
    pub index_digest: Digest,
    /// Neurons in its graph.
    pub neuron_count: U64,
    /// Rate roles, in the order every snapshot's telemetry lists them.
    pub rate_roles: Vec<Id>,
    /// Stimulus kinds its profile supports.
    pub supported_stimuli: Vec<Id>,
}

/// Who plays, on which world: published once per revision on the retained descriptor topic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SessionDescriptor {
    /// The session.
    pub session_id: Id,
    /// Bumped whenever the descriptor changes; snapshots name the revision they follow.
    pub revision: U64,
    /// The digest of the launch plan the session runs.
    pub composition_digest: Digest,
    /// Always [`SCHEDULER_ID`].
    pub scheduler_id: Id,
    /// The world, as its environment described itself.
    pub environment: EnvironmentDescriptor,
    /// The schema of the task's progress value.
    pub task_schema: SchemaRef,
    /// 1..=4 agents, unique ids and ports, in agent-id order.
    pub agents: Vec<AgentDescriptor>,
}

impl Payload for SessionDescriptor {
    fn validate(&self) -> Result<(), ContractError> {
        if self.scheduler_id.as_str() != SCHEDULER_ID {
            return Err(ContractError::rule(
                "schedulerId",
                format!("the scheduler is `{SCHEDULER_ID}`"),
            ));
        }
        agent_count(self.agents.len())?;
        check::unique_by(&self.agents, |a| a.agent_id.clone(), "agents", "agent id")?;
        check::unique_by(&self.agents, |a| a.port_id.clone(), "agents", "port id")?;
        for (i, agent) in self.agents.iter().enumerate() {
            if self.environment.port(&agent.port_id).is_none() {
                return Err(ContractError::rule(
                    format!("agents/{i}/portId"),
                    format!(
                        "port `{}` is not declared by the environment",
                        agent.port_id
                    ),
                ));
            }
            check::at_most(
                &agent.rate_roles,
                crate::limits::MAX_RATE_ROLES,
                &format!("agents/{i}/rateRoles"),
                "rate roles",
            )?;
        }
        Ok(())
    }
}

/// One agent in a committed snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SnapshotAgent {
    /// The agent.
    pub agent_id: Id,
    /// Its telemetry after the commit that established the boundary; rates in profile order.
    pub telemetry: AgentTelemetry,
    /// The decision of the transition that ended here; null at boundary 0 and at a restored
    /// boundary.
    #[serde(deserialize_with = "nullable")]
    #[schemars(with = "Nullable<TypedValue>")]
    pub selected_decision: Option<TypedValue>,
    /// The controls applied on its own port in that transition; null where the decision is.
    #[serde(deserialize_with = "nullable")]
    #[schemars(with = "Nullable<PortControl>")]
    pub applied_controls: Option<PortControl>,
}

/// The frames and audio of the boundary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SnapshotMedia {
    /// Every view of the observation (sensory and broadcast), attached to the publication
    /// under its view id.
    pub views: Vec<ViewRef>,
    /// Audio of the boundary.
    pub audio: Vec<AudioRef>,
}

/// A committed boundary as a watcher sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CommittedSnapshot {
    /// The [`SessionDescriptor::revision`] this snapshot follows.
    pub descriptor_revision: U64,
    /// The publisher's incarnation; `sequence` is monotonic within it.
    pub publisher_incarnation: Id,
    /// Session, epoch and the committed boundary.
    pub scope: Scope,
    /// The episode.
    pub episode_id: Id,
    /// Strictly increasing per publisher incarnation (gaps are boundaries a slow watcher
    /// missed, never reorderings).
    pub sequence: U64,
    /// The world time of the boundary.
    pub world_time: RationalNs,
    /// 1..=4 agents in agent-id order; decisions and controls null for all or for none.
    pub agents: Vec<SnapshotAgent>,
    /// The task's progress value.
    pub progress: TypedValue,
    /// The boundary's frames and audio.
    pub media: SnapshotMedia,
    /// The task events committed with this boundary.
    pub event_ids: Vec<Id>,
}

impl Payload for CommittedSnapshot {
    fn validate(&self) -> Result<(), ContractError> {
        agent_count(self.agents.len())?;
        check::unique_by(&self.agents, |a| a.agent_id.clone(), "agents", "agent id")?;
        let with_decision = self
            .agents
            .iter()
            .filter(|a| a.selected_decision.is_some())
            .count();
        if with_decision != 0 && with_decision != self.agents.len() {
            return Err(ContractError::rule(
                "agents",
                "decisions are null for every agent or for none".to_owned(),
            ));
        }
        for (i, agent) in self.agents.iter().enumerate() {
            if agent.selected_decision.is_some() != agent.applied_controls.is_some() {
                return Err(ContractError::rule(
                    format!("agents/{i}/appliedControls"),
                    "applied controls are null exactly where the decision is",
                ));
            }
            agent
                .telemetry
                .validate()
                .map_err(|e| e.under(&format!("agents/{i}/telemetry")))?;
        }
        Ok(())
    }
}

impl CommittedSnapshot {
    /// Checks the snapshot against the descriptor it names: the same revision, the same agent
    /// set, controls on each agent's own port, rates in its declared role order.
    ///
    /// # Errors
    ///
    /// [`ContractError::Rule`] at the first field that disagrees.
    pub fn validate_against(&self, descriptor: &SessionDescriptor) -> Result<(), ContractError> {
        self.validate()?;
        if self.descriptor_revision != descriptor.revision {
            return Err(ContractError::rule(
                "descriptorRevision",
                format!(
                    "the snapshot follows revision {} but the descriptor is at {}",
                    self.descriptor_revision.get(),
                    descriptor.revision.get()
                ),
            ));
        }
        if self.agents.len() != descriptor.agents.len() {
            return Err(ContractError::rule(
                "agents",
                "the snapshot's agents are not the descriptor's",
            ));
        }
        for (i, (agent, declared)) in self.agents.iter().zip(&descriptor.agents).enumerate() {
            if agent.agent_id != declared.agent_id {
                return Err(ContractError::rule(
                    format!("agents/{i}/agentId"),
                    format!("expected agent `{}`", declared.agent_id),
                ));
            }
            if let Some(controls) = &agent.applied_controls
                && controls.port_id != declared.port_id
            {
                return Err(ContractError::rule(
                    format!("agents/{i}/appliedControls/portId"),
                    format!(
                        "agent `{}` drives port `{}`",
                        agent.agent_id, declared.port_id
                    ),
                ));
            }
            let roles = agent.telemetry.rates.iter().map(|r| &r.role_id);
            if !roles.eq(declared.rate_roles.iter()) {
                return Err(ContractError::rule(
                    format!("agents/{i}/telemetry/rates"),
                    "rates must follow the descriptor's rate roles in order",
                ));
            }
        }
        Ok(())
    }
}

/// Refuses an agent count outside 1..=4.
fn agent_count(n: usize) -> Result<(), ContractError> {
    if n == 0 || n > MAX_PUBLISHED_AGENTS {
        return Err(ContractError::rule(
            "agents",
            format!("1 to {MAX_PUBLISHED_AGENTS} agents, found {n}"),
        ));
    }
    Ok(())
}

/// A session's lifecycle, on the bounded events topic ([`Topics::events`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
pub enum SessionEvent {
    /// The invocation ended: this is the last publication of the session's publisher.
    #[serde(rename_all = "camelCase")]
    Ended {
        /// The run digest over every committed row.
        run_digest: Digest,
        /// Transitions committed.
        steps: U64,
        /// `complete`, `paused` or `failed`.
        outcome: Id,
    },
}

impl Payload for SessionEvent {
    fn validate(&self) -> Result<(), ContractError> {
        Ok(())
    }
}
