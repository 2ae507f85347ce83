//! The worker payloads of workers-v1 (contracts §4, §6 and §7) with their validation rules.
//!
//! Each payload is a plain serde type: decoding refuses unknown fields, missing fields and wrong
//! JSON types, the scalar types refuse malformed ids, counters and digests, and
//! [`Payload::validate`](crate::Payload::validate) checks the contract's cross-field rules (list
//! limits, uniqueness, ranges, finiteness, step arithmetic). Rules that need a second document,
//! such as a control against its port's controller schema, are `validate_against` methods.
//!
//! A field the contract writes `T | null` is an `Option<T>` that is still *required*: a missing
//! field is refused, only an explicit `null` reads as `None`.
//!
//! - shared data: assets, artifacts, views, audio, sensory input, stimuli, rewards, telemetry and
//!   the agent graph.
//! - agent methods: `Agent.Initialize`, `Agent.Prepare`, `Agent.Commit`.
//! - environment methods: controller schemas, port controls, `Environment.Initialize` and
//!   `Environment.Advance`.
//! - common worker methods: `Worker.Hello`, `Worker.Status`, `Worker.Acknowledge`,
//!   `Worker.Shutdown`, and the session RPC outcomes that carry every result.
//! - state methods: `State.Capture`, `State.StageRestore`, `State.ActivateRestore`.
//! - every call's params and result as one value each ([`Params`], [`Results`]).

use crate::error::ContractError;
use crate::payload::{Nullable, PayloadKind, required_nullable as nullable};
use crate::payload_kind;
use crate::rational::RationalNs;

mod agent;
mod applied;
mod calls;
mod common;
mod environment;
mod method;
mod state;
mod worker;

#[cfg(test)]
mod tests;

pub use agent::{
    AgentCommitResult, AgentInitializeParams, AgentInitializeResult, CommitParams, PrepareParams,
    PreparedDecision,
};
pub use applied::{AppliedControls, SharedControls};
pub use calls::{Params, ParamsOf, ResultOf, Results};
pub use common::{
    AgentGraph, AgentTelemetry, ArtifactRef, AssetRef, AudioDescriptor, AudioFormat, AudioRef,
    LearningTelemetry, PixelAspect, Reward, RoleRate, SensoryInput, Stimulus, ViewDescriptor,
    ViewFormat, ViewRef,
};
pub use environment::{
    AdvanceParams, AxisDecl, AxisRange, AxisValue, ButtonState, ControllerSchema, Determinism,
    EnvironmentDescriptor, EnvironmentInitializeParams, EnvironmentInitializeResult, PortBinding,
    PortControl, PortDescriptor, Recovery, StepResult, WorldObservation,
};
pub use method::Method;
pub use state::{
    ActivateRestoreParams, ActivateRestoreResult, CaptureParams, CaptureResult, StageRestoreParams,
    StageRestoreResult,
};
pub use worker::{
    AcknowledgeParams, AcknowledgeResult, CONTRACT_MAJOR, CONTRACT_MINOR, DomainError,
    DomainErrorCode, FailureType, HelloParams, HelloResult, Mutation, SessionRpcFailure,
    SessionRpcSuccess, ShutdownParams, ShutdownResult, StatusParams, StatusResult, SuccessType,
    WorkerLimits, WorkerRole, WorkerState,
};

/// Every worker payload kind, sorted by name.
///
/// The names are the kebab-case forms used by `flysim canon --type` and `flysim schema`, and the
/// file names of the fixtures under `fixtures/payloads/valid/`.
#[must_use]
pub fn kinds() -> Vec<PayloadKind> {
    let mut all = vec![
        // Shared data model (workers-v1 §1, state-media-v1, flybus ArtifactRef).
        payload_kind!(AssetRef, "asset-ref"),
        payload_kind!(ArtifactRef, "artifact-ref"),
        payload_kind!(ViewDescriptor, "view-descriptor"),
        payload_kind!(ViewRef, "view-ref"),
        payload_kind!(AudioDescriptor, "audio-descriptor"),
        payload_kind!(AudioRef, "audio-ref"),
        payload_kind!(SensoryInput, "sensory-input"),
        payload_kind!(Stimulus, "stimulus"),
        payload_kind!(Reward, "reward"),
        payload_kind!(AgentTelemetry, "agent-telemetry"),
        payload_kind!(AgentGraph, "agent-graph"),
        // Agent methods (workers-v1 §2).
        payload_kind!(AgentInitializeParams, "agent-initialize-params"),
        payload_kind!(AgentInitializeResult, "agent-initialize-result"),
        payload_kind!(PrepareParams, "agent-prepare-params"),
        payload_kind!(PreparedDecision, "prepared-decision"),
        payload_kind!(CommitParams, "agent-commit-params"),
        payload_kind!(AgentCommitResult, "agent-commit-result"),
        // Environment methods (workers-v1 §3).
        payload_kind!(ControllerSchema, "controller-schema"),
        payload_kind!(PortControl, "port-control"),
        payload_kind!(EnvironmentDescriptor, "environment-descriptor"),
        payload_kind!(WorldObservation, "world-observation"),
        payload_kind!(EnvironmentInitializeParams, "environment-initialize-params"),
        payload_kind!(EnvironmentInitializeResult, "environment-initialize-result"),
        payload_kind!(AdvanceParams, "advance-params"),
        payload_kind!(StepResult, "step-result"),
        // Common worker methods and session RPC outcomes (ipc-v1).
        payload_kind!(HelloParams, "hello-params"),
        payload_kind!(HelloResult, "hello-result"),
        payload_kind!(StatusParams, "status-params"),
        payload_kind!(StatusResult, "status-result"),
        payload_kind!(AcknowledgeParams, "acknowledge-params"),
        payload_kind!(AcknowledgeResult, "acknowledge-result"),
        payload_kind!(ShutdownParams, "shutdown-params"),
        payload_kind!(ShutdownResult, "shutdown-result"),
        payload_kind!(SessionRpcSuccess, "session-rpc-success"),
        payload_kind!(SessionRpcFailure, "session-rpc-failure"),
    ];
    all.sort_by_key(|k| k.name);
    all
}

/// Refuses a zero duration, naming `path` (contracts §2.1: durations are positive).
fn positive(duration: RationalNs, path: &str) -> Result<(), ContractError> {
    duration.positive().map(|_| ()).map_err(|e| e.under(path))
}

/// Refuses a number that is not finite or not `>= 0`.
fn non_negative(v: f64, path: &str, what: &str) -> Result<(), ContractError> {
    crate::payload::check::finite(v, path)?;
    if v < 0.0 {
        return Err(ContractError::rule(
            path,
            format!("{what} must be >= 0, found {v}"),
        ));
    }
    Ok(())
}

/// Refuses a list shorter than `min` or longer than `max`.
fn count_between<T>(
    items: &[T],
    min: usize,
    max: usize,
    path: &str,
    what: &str,
) -> Result<(), ContractError> {
    if items.len() < min {
        return Err(ContractError::rule(
            path,
            format!("at least {min} {what}, found {}", items.len()),
        ));
    }
    crate::payload::check::at_most(items, max, path, what)
}

/// Refuses an integer outside `min..=max`.
fn int_between<N: PartialOrd + std::fmt::Display>(
    v: N,
    min: N,
    max: N,
    path: &str,
    what: &str,
) -> Result<(), ContractError> {
    if v < min || v > max {
        return Err(ContractError::rule(
            path,
            format!("{what} must be between {min} and {max}, found {v}"),
        ));
    }
    Ok(())
}
