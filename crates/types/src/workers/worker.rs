//! The common worker methods of ipc-v1 (contracts §4): `Worker.Hello`, `Worker.Status`,
//! `Worker.Acknowledge`, `Worker.Shutdown`, and the session RPC outcomes that carry every
//! method's result or failure.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Nullable, count_between, int_between, nullable};
use crate::error::ContractError;
use crate::limits::{
    MAX_ACKNOWLEDGE, MAX_AGENTS, MAX_CAPABILITIES, MAX_MESSAGE_CODE_POINTS, MAX_PORTS,
    MAX_SUPPORTED_MAJORS, MAX_WORKER_THREADS,
};
use crate::payload::{Payload, check};
use crate::scalar::{Digest, DomainRequestId, Id, Scope, U64};

/// The session contract major every worker selects in v1.
pub const CONTRACT_MAJOR: u32 = 1;
/// The session contract minor every worker selects in v1.
pub const CONTRACT_MINOR: u32 = 0;
/// The largest major a caller may offer (majors are 16-bit).
const MAX_MAJOR: u32 = u16::MAX as u32;

/// The role a worker plays in a composition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum WorkerRole {
    /// A neural agent; must advertise `agent-step-v1`.
    Agent,
    /// A world; must advertise `world-step-v1`.
    Environment,
    /// The session coordinator.
    Coordinator,
}

impl WorkerRole {
    /// The capability a worker of this role must advertise, if any.
    #[must_use]
    pub fn required_capability(self) -> Option<&'static str> {
        match self {
            Self::Agent => Some("agent-step-v1"),
            Self::Environment => Some("world-step-v1"),
            Self::Coordinator => None,
        }
    }
}

/// `Worker.Hello` params (scope null).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HelloParams {
    /// The session the caller belongs to.
    pub session_id: Id,
    /// The worker the caller expects to reach.
    pub expected_worker_id: Id,
    /// The role the caller expects.
    pub role: WorkerRole,
    /// Contract majors the caller supports: 1..=8 unique integers, each 1..=65535.
    #[schemars(length(min = 1, max = MAX_SUPPORTED_MAJORS), inner(range(min = 1, max = MAX_MAJOR)))]
    pub supported_majors: Vec<u32>,
}

impl Payload for HelloParams {
    fn validate(&self) -> Result<(), ContractError> {
        count_between(
            &self.supported_majors,
            1,
            MAX_SUPPORTED_MAJORS,
            "supportedMajors",
            "supported majors",
        )?;
        check::unique_by(&self.supported_majors, |m| *m, "supportedMajors", "major")?;
        for (i, major) in self.supported_majors.iter().enumerate() {
            int_between(
                *major,
                1,
                MAX_MAJOR,
                &format!("supportedMajors[{i}]"),
                "a major",
            )?;
        }
        Ok(())
    }
}

/// The limits a worker reports in Hello.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WorkerLimits {
    /// Agents the worker can serve, 1..=4.
    #[schemars(range(min = 1, max = MAX_AGENTS))]
    pub max_agents: u32,
    /// Ports the worker can serve, 1..=4.
    #[schemars(range(min = 1, max = MAX_PORTS))]
    pub max_ports: u32,
    /// The thread allocation the launcher started the worker within, 1..=4096.
    #[schemars(range(min = 1, max = MAX_WORKER_THREADS))]
    pub worker_threads: u32,
}

/// `Worker.Hello` result: the worker's identity, contract and capabilities.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HelloResult {
    /// Always 1.
    #[schemars(range(min = CONTRACT_MAJOR, max = CONTRACT_MAJOR))]
    pub selected_major: u32,
    /// Always 0.
    #[schemars(range(min = CONTRACT_MINOR, max = CONTRACT_MINOR))]
    pub selected_minor: u32,
    /// The worker.
    pub worker_id: Id,
    /// The worker's bus incarnation.
    pub incarnation_id: Id,
    /// Its role.
    pub role: WorkerRole,
    /// The digest of its build.
    pub build_digest: Digest,
    /// The digest of the session contract it implements.
    pub contract_digest: Digest,
    /// Advertised capabilities: at most 32, unique, including the role's required one.
    #[schemars(length(max = MAX_CAPABILITIES))]
    pub capabilities: Vec<Id>,
    /// Its limits.
    pub limits: WorkerLimits,
}

impl Payload for HelloResult {
    fn validate(&self) -> Result<(), ContractError> {
        if self.selected_major != CONTRACT_MAJOR {
            return Err(ContractError::rule(
                "selectedMajor",
                format!("selectedMajor must be {CONTRACT_MAJOR}"),
            ));
        }
        if self.selected_minor != CONTRACT_MINOR {
            return Err(ContractError::rule(
                "selectedMinor",
                format!("selectedMinor must be {CONTRACT_MINOR}"),
            ));
        }
        check::at_most(
            &self.capabilities,
            MAX_CAPABILITIES,
            "capabilities",
            "capabilities",
        )?;
        check::unique_by(&self.capabilities, |c| c, "capabilities", "capability")?;
        if let Some(required) = self.role.required_capability()
            && !self.capabilities.iter().any(|c| c.as_str() == required)
        {
            return Err(ContractError::rule(
                "capabilities",
                format!("a worker in this role must advertise `{required}`"),
            ));
        }
        let limits = &self.limits;
        // A count too large for usize is certainly above the limit.
        let as_count = |v: u32| usize::try_from(v).unwrap_or(usize::MAX);
        int_between(
            as_count(limits.max_agents),
            1,
            MAX_AGENTS,
            "limits.maxAgents",
            "maxAgents",
        )?;
        int_between(
            as_count(limits.max_ports),
            1,
            MAX_PORTS,
            "limits.maxPorts",
            "maxPorts",
        )?;
        int_between(
            limits.worker_threads,
            1,
            MAX_WORKER_THREADS,
            "limits.workerThreads",
            "workerThreads",
        )
    }
}

/// `Worker.Status` params: always the empty object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusParams {}

impl Payload for StatusParams {
    fn validate(&self) -> Result<(), ContractError> {
        Ok(())
    }
}

/// The lifecycle state a worker reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum WorkerState {
    /// Not initialised; no scope.
    Uninitialized,
    /// At a committed boundary.
    Ready,
    /// Running a Prepare.
    Preparing,
    /// Holding a prepared decision.
    Prepared,
    /// Running an Advance.
    Advancing,
    /// Running a Commit.
    Committing,
    /// Running a Capture.
    Capturing,
    /// Holding a staged restore.
    StagedRestore,
    /// Activating a restore.
    Restoring,
    /// Failed; the epoch must be restored or reset.
    Failed,
    /// Shutting down.
    Stopping,
}

/// `Worker.Status` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StatusResult {
    /// The lifecycle state.
    pub state: WorkerState,
    /// The committed scope, or null (always null when uninitialized).
    #[serde(deserialize_with = "nullable")]
    #[schemars(with = "Nullable<Scope>")]
    pub current_scope: Option<Scope>,
    /// The mutation running now, or null.
    #[serde(deserialize_with = "nullable")]
    #[schemars(with = "Nullable<DomainRequestId>")]
    pub active_request_id: Option<DomainRequestId>,
    /// The last mutation completed, or null.
    #[serde(deserialize_with = "nullable")]
    #[schemars(with = "Nullable<DomainRequestId>")]
    pub last_completed_request_id: Option<DomainRequestId>,
    /// The last Advance batch applied, or null.
    #[serde(deserialize_with = "nullable")]
    #[schemars(with = "Nullable<Id>")]
    pub last_batch_id: Option<Id>,
    /// Moves on work, never on status queries.
    pub progress_counter: U64,
}

impl Payload for StatusResult {
    fn validate(&self) -> Result<(), ContractError> {
        if self.state == WorkerState::Uninitialized && self.current_scope.is_some() {
            return Err(ContractError::rule(
                "currentScope",
                "an uninitialized worker must report a null currentScope",
            ));
        }
        Ok(())
    }
}

/// `Worker.Acknowledge` params: release retained lifecycle results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AcknowledgeParams {
    /// The results to release: 1..=16 unique request ids.
    #[schemars(length(min = 1, max = MAX_ACKNOWLEDGE))]
    pub request_ids: Vec<DomainRequestId>,
}

impl Payload for AcknowledgeParams {
    fn validate(&self) -> Result<(), ContractError> {
        count_between(
            &self.request_ids,
            1,
            MAX_ACKNOWLEDGE,
            "requestIds",
            "request ids",
        )?;
        check::unique_by(&self.request_ids, |r| *r, "requestIds", "request id")
    }
}

/// `Worker.Acknowledge` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AcknowledgeResult {
    /// The results released now (unknown or already released ids are left out): at most 16,
    /// unique.
    #[schemars(length(max = MAX_ACKNOWLEDGE))]
    pub acknowledged: Vec<DomainRequestId>,
}

impl Payload for AcknowledgeResult {
    fn validate(&self) -> Result<(), ContractError> {
        check::at_most(
            &self.acknowledged,
            MAX_ACKNOWLEDGE,
            "acknowledged",
            "request ids",
        )?;
        check::unique_by(&self.acknowledged, |r| *r, "acknowledged", "request id")
    }
}

/// `Worker.Shutdown` params (supervisors only; implies no save).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ShutdownParams {
    /// Why the worker is stopped.
    pub reason: Id,
}

impl Payload for ShutdownParams {
    fn validate(&self) -> Result<(), ContractError> {
        Ok(())
    }
}

/// `Worker.Shutdown` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ShutdownResult {
    /// Always true.
    pub stopping: bool,
}

impl Payload for ShutdownResult {
    fn validate(&self) -> Result<(), ContractError> {
        if !self.stopping {
            return Err(ContractError::rule(
                "stopping",
                "a shutdown result must report stopping: true",
            ));
        }
        Ok(())
    }
}

/// The `type` tag of a successful outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum SuccessType {
    /// `"result"`.
    #[serde(rename = "result")]
    Result,
}

/// The `type` tag of a failed outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum FailureType {
    /// `"error"`.
    #[serde(rename = "error")]
    Error,
}

/// A terminal domain reply carrying a method's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SessionRpcSuccess {
    /// Always `"result"`.
    #[serde(rename = "type")]
    pub kind: SuccessType,
    /// The request this answers.
    pub request_id: DomainRequestId,
    /// The answering worker.
    pub worker_id: Id,
    /// Its bus incarnation.
    pub incarnation_id: Id,
    /// The request's scope, echoed, or null.
    #[serde(deserialize_with = "nullable")]
    #[schemars(with = "Nullable<Scope>")]
    pub scope: Option<Scope>,
    /// The method's result object.
    pub result: Map<String, Value>,
}

impl Payload for SessionRpcSuccess {
    fn validate(&self) -> Result<(), ContractError> {
        Ok(())
    }
}

impl SessionRpcSuccess {
    /// Decodes a success object, moving its result rather than copying it; the same result and
    /// refusals as [`crate::payload::from_value`].
    ///
    /// # Errors
    ///
    /// As [`crate::payload::from_value`].
    pub fn from_map(map: Map<String, Value>) -> Result<Self, ContractError> {
        crate::payload::from_map_moving(map, "result", |r: &mut Self, result| r.result = result)
    }
}

/// The closed set of domain error codes, in schema-set order (contracts §4.1).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum DomainErrorCode {
    /// Schema or range invalid; raised before any mutation.
    InvalidArgument,
    /// Missing method or capability; no mutation.
    Unsupported,
    /// Wrong session, profile, port, build or asset identity.
    IdentityMismatch,
    /// The request's epoch has been superseded.
    StaleEpoch,
    /// A fresh request serial naming an already-passed step.
    StaleStep,
    /// A step ahead of the worker's committed boundary.
    FutureStep,
    /// The worker is not in the phase the method requires.
    InvalidPhase,
    /// The operation key already holds a different request or body.
    Conflict,
    /// An exact duplicate of a still-running operation.
    InProgress,
    /// Domain capacity unavailable before admission.
    Busy,
    /// A missing, unowned or mismatched artifact, or an invalid media shape.
    BufferInvalid,
    /// Safe replay is no longer available; never recomputed.
    ResultExpired,
    /// Restore validation failed before activation.
    IncompatibleState,
    /// A runtime fault in the backend.
    BackendFailure,
    /// Another runtime fault.
    Internal,
}

impl DomainErrorCode {
    /// Whether this code is only ever raised before any mutation (`mutation: "none"`).
    #[must_use]
    pub fn implies_no_mutation(self) -> bool {
        matches!(self, Self::InvalidArgument | Self::Unsupported)
    }
}

/// Whether a failed request mutated worker state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Mutation {
    /// Nothing was mutated.
    None,
    /// The mutation completed.
    Applied,
    /// Completion is not established.
    Unknown,
}

/// The error of a failed domain reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DomainError {
    /// The code.
    pub code: DomainErrorCode,
    /// A human-readable message of at most 512 code points.
    #[schemars(length(max = MAX_MESSAGE_CODE_POINTS))]
    pub message: String,
    /// Mutation certainty.
    pub mutation: Mutation,
}

/// A terminal domain reply carrying a failure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SessionRpcFailure {
    /// Always `"error"`.
    #[serde(rename = "type")]
    pub kind: FailureType,
    /// The request this answers.
    pub request_id: DomainRequestId,
    /// The answering worker.
    pub worker_id: Id,
    /// Its bus incarnation.
    pub incarnation_id: Id,
    /// The request's scope, echoed, or null.
    #[serde(deserialize_with = "nullable")]
    #[schemars(with = "Nullable<Scope>")]
    pub scope: Option<Scope>,
    /// The failure.
    pub error: DomainError,
}

impl Payload for SessionRpcFailure {
    fn validate(&self) -> Result<(), ContractError> {
        let error = &self.error;
        let points = error.message.chars().count();
        if points > MAX_MESSAGE_CODE_POINTS {
            return Err(ContractError::rule(
                "error.message",
                format!(
                    "an error message must be at most {MAX_MESSAGE_CODE_POINTS} code points, found {points}"
                ),
            ));
        }
        if error.code.implies_no_mutation() && error.mutation != Mutation::None {
            return Err(ContractError::rule(
                "error.mutation",
                "an INVALID_ARGUMENT or UNSUPPORTED error must report mutation none",
            ));
        }
        Ok(())
    }
}
