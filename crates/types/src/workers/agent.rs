//! The agent methods of workers-v1 §2 (contracts §6.3): `Agent.Initialize`, `Agent.Prepare` and
//! `Agent.Commit`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{
    AgentGraph, AgentTelemetry, AssetRef, Reward, SensoryInput, Stimulus, reward_list,
    stimulus_list,
};
use super::{int_between, positive};
use crate::error::ContractError;
use crate::hashed::Hashed;
use crate::limits::{MAX_REWARDS_PER_OPERATION, MAX_STIMULI_PER_OPERATION, MAX_WORKER_THREADS};
use crate::payload::Payload;
use crate::rational::RationalNs;
use crate::scalar::{Digest, DomainRequestId, Id, Scope, TypedValue, U64};

/// `Agent.Initialize` params: build the model, warm it up and establish `Ready(0)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AgentInitializeParams {
    /// The configured agent.
    pub agent_id: Id,
    /// The profile artifact: every numerical, sensory, readout, learning and schema identity.
    pub profile: AssetRef,
    /// The RNG seed, a signed 32-bit integer.
    pub seed: i32,
    /// The sensory input at boundary 0.
    pub initial_input: SensoryInput,
    /// The decision context for the first Prepare.
    pub initial_decision_context: TypedValue,
    /// Threads to use: 1..=4096 and within the allocation the worker reported in Hello.
    #[schemars(range(min = 1, max = MAX_WORKER_THREADS))]
    pub worker_threads: u32,
}

impl Payload for AgentInitializeParams {
    fn validate(&self) -> Result<(), ContractError> {
        self.profile.validate().map_err(|e| e.under("profile"))?;
        self.initial_input
            .validate()
            .map_err(|e| e.under("initialInput"))?;
        self.initial_decision_context
            .validate()
            .map_err(|e| e.under("initialDecisionContext"))?;
        int_between(
            self.worker_threads,
            1,
            MAX_WORKER_THREADS,
            "workerThreads",
            "workerThreads",
        )
    }
}

/// `Agent.Initialize` result: the agent is at `Ready(0)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AgentInitializeResult {
    /// The configured agent.
    pub agent_id: Id,
    /// The digest of the profile that was installed.
    pub profile_digest: Digest,
    /// One brain tick; positive.
    pub tick_duration: RationalNs,
    /// Ticks run during warm-up (learning disabled).
    pub warmup_ticks: U64,
    /// Always `"0"`.
    pub committed_step: U64,
    /// The canonical digest of the retained decision context.
    pub decision_context_digest: Digest,
    /// Telemetry after warm-up; its rates list exactly `graph.rateRoles`, in order.
    pub telemetry: AgentTelemetry,
    /// The brain graph's identity and declared roles.
    pub graph: AgentGraph,
}

impl Payload for AgentInitializeResult {
    fn validate(&self) -> Result<(), ContractError> {
        positive(self.tick_duration, "tickDuration")?;
        if self.committed_step.get() != 0 {
            return Err(ContractError::rule(
                "committedStep",
                "the committed step after Agent.Initialize must be \"0\"",
            ));
        }
        self.telemetry
            .validate()
            .map_err(|e| e.under("telemetry"))?;
        self.graph.validate().map_err(|e| e.under("graph"))?;
        rates_follow_roles(&self.telemetry, &self.graph.rate_roles)
            .map_err(|e| e.under("telemetry"))
    }
}

/// Refuses telemetry whose rates are not exactly `roles`, in that order.
fn rates_follow_roles(telemetry: &AgentTelemetry, roles: &[Id]) -> Result<(), ContractError> {
    for (i, role) in roles.iter().enumerate() {
        match telemetry.rates.get(i) {
            Some(rate) if rate.role_id == *role => {}
            Some(rate) => {
                return Err(ContractError::rule(
                    format!("rates[{i}].roleId"),
                    format!(
                        "telemetry rates must follow graph.rateRoles in order: expected `{role}`, found `{}`",
                        rate.role_id
                    ),
                ));
            }
            None => {
                return Err(ContractError::rule(
                    "rates",
                    format!(
                        "telemetry rates must list every graph.rateRoles entry: `{role}` is missing"
                    ),
                ));
            }
        }
    }
    if let Some(extra) = telemetry.rates.get(roles.len()) {
        return Err(ContractError::rule(
            format!("rates[{}].roleId", roles.len()),
            format!(
                "telemetry rates must list only graph.rateRoles: `{}` is not declared",
                extra.role_id
            ),
        ));
    }
    Ok(())
}

/// `Agent.Prepare` params: advance the brain over one interval and decode a decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PrepareParams {
    /// The configured agent.
    pub agent_id: Id,
    /// The expected profile.
    pub profile_digest: Digest,
    /// The environment interval to cover; positive.
    pub interval: RationalNs,
    /// The digest of the context retained by the last Initialize or Commit.
    pub decision_context_digest: Digest,
    /// Stimuli applied before ticking: at most 64, unique ids, in order.
    #[schemars(length(max = MAX_STIMULI_PER_OPERATION))]
    pub pre_step_stimulations: Vec<Stimulus>,
}

impl Payload for PrepareParams {
    fn validate(&self) -> Result<(), ContractError> {
        positive(self.interval, "interval")?;
        stimulus_list(&self.pre_step_stimulations, "preStepStimulations")
    }
}

/// `Agent.Prepare` result: the agent is at `Prepared(k)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PreparedDecision {
    /// The configured agent.
    pub agent_id: Id,
    /// Ticks run by this Prepare; at most `brainTicks`.
    pub ticks_advanced: U64,
    /// Ticks run since initialisation.
    pub brain_ticks: U64,
    /// Interval time carried to the next Prepare, in `[0, tick)`.
    pub remainder: RationalNs,
    /// The decision in the profile's intent schema; never a port or hidden inspection field.
    pub decision: TypedValue,
}

impl Payload for PreparedDecision {
    fn validate(&self) -> Result<(), ContractError> {
        if self.ticks_advanced > self.brain_ticks {
            return Err(ContractError::rule(
                "ticksAdvanced",
                format!(
                    "ticksAdvanced must be at most brainTicks ({})",
                    self.brain_ticks
                ),
            ));
        }
        self.decision.validate().map_err(|e| e.under("decision"))
    }
}

impl PreparedDecision {
    /// Checks the remainder against the agent's tick (reported by Initialize): it lies in
    /// `[0, tick)`.
    ///
    /// # Errors
    ///
    /// [`ContractError::Rule`] at `remainder`, or [`ContractError::InvalidRational`] for a zero
    /// tick.
    pub fn validate_against(&self, tick_duration: RationalNs) -> Result<(), ContractError> {
        self.validate()?;
        let tick = tick_duration.positive()?;
        if self.remainder >= tick {
            return Err(ContractError::rule(
                "remainder",
                format!(
                    "the remainder must be below one tick ({tick}), found {}",
                    self.remainder
                ),
            ));
        }
        Ok(())
    }
}

/// `Agent.Commit` params: install the next input, stimulate and reinforce; no tick.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CommitParams {
    /// The configured agent.
    pub agent_id: Id,
    /// The request id of the Prepare this commit completes.
    pub prepared_request_id: DomainRequestId,
    /// The sensory input at boundary `k+1`.
    pub next_input: SensoryInput,
    /// The decision context for the next Prepare.
    // Shared and hashed (the wire form is the value's): a task that hands an agent the same
    // context step after step gives every commit the one value, which the coordinator and the
    // worker then recognise without comparing it; the digest the coordinator records is the one
    // the agent answers, computed once for both on the in-memory lane. The doc line above is the
    // contract's description.
    pub next_decision_context: Hashed<std::sync::Arc<TypedValue>>,
    /// Rewards: at most 64, unique event ids, in order.
    #[schemars(length(max = MAX_REWARDS_PER_OPERATION))]
    pub rewards: Vec<Reward>,
    /// Task stimuli: at most 64, unique ids, in order.
    #[schemars(length(max = MAX_STIMULI_PER_OPERATION))]
    pub task_stimulations: Vec<Stimulus>,
}

impl Payload for CommitParams {
    fn validate(&self) -> Result<(), ContractError> {
        self.next_input
            .validate()
            .map_err(|e| e.under("nextInput"))?;
        if self.next_input.boundary.get() == 0 {
            return Err(ContractError::rule(
                "nextInput.boundary",
                "a commit's next input is boundary k+1, never \"0\"",
            ));
        }
        self.next_decision_context
            .validate()
            .map_err(|e| e.under("nextDecisionContext"))?;
        reward_list(&self.rewards, "rewards")?;
        stimulus_list(&self.task_stimulations, "taskStimulations")
    }
}

impl CommitParams {
    /// Checks the commit against its request scope: the commit of transition `k -> k+1` is
    /// scoped at step `k` and carries the input for boundary `k+1`.
    ///
    /// # Errors
    ///
    /// [`ContractError::Rule`] at `nextInput.boundary`.
    pub fn validate_against(&self, scope: &Scope) -> Result<(), ContractError> {
        self.validate()?;
        self.matches_scope(scope)
    }

    /// The check of [`validate_against`](Self::validate_against) that needs the scope, for
    /// params already [validated](Payload::validate) (a worker validates every request's params
    /// as it decodes them, or on the local lane as it admits them).
    ///
    /// # Errors
    ///
    /// As [`validate_against`](Self::validate_against).
    pub fn matches_scope(&self, scope: &Scope) -> Result<(), ContractError> {
        let step = scope.step.get();
        if step.checked_add(1) != Some(self.next_input.boundary.get()) {
            return Err(ContractError::rule(
                "nextInput.boundary",
                format!(
                    "the next input of a commit scoped at step {step} must be boundary {}, found {}",
                    u128::from(step) + 1,
                    self.next_input.boundary
                ),
            ));
        }
        Ok(())
    }
}

/// `Agent.Commit` result: the agent is at `Ready(k+1)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AgentCommitResult {
    /// The configured agent.
    pub agent_id: Id,
    /// The new committed step, `k+1`.
    pub committed_step: U64,
    /// The canonical digest of the retained next decision context.
    pub decision_context_digest: Digest,
    /// Telemetry after the commit.
    pub telemetry: AgentTelemetry,
}

impl Payload for AgentCommitResult {
    fn validate(&self) -> Result<(), ContractError> {
        if self.committed_step.get() == 0 {
            return Err(ContractError::rule(
                "committedStep",
                "a commit reaches step k+1, never \"0\"",
            ));
        }
        self.telemetry.validate().map_err(|e| e.under("telemetry"))
    }
}
