//! The state methods' payloads (contracts §7): `State.Capture`, `State.StageRestore` and
//! `State.ActivateRestore`, in the form this implementation sends and answers.
//!
//! They are not among [`super::kinds`]: the contract's schema set (and so `contractDigest`)
//! names no state payload, and a checkpoint's durable form is the `FLYSESS1` envelope
//! ([`crate::checkpoint`]), not these messages.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::ArtifactRef;
use super::environment::WorldObservation;
use crate::error::ContractError;
use crate::payload::Payload;
use crate::scalar::{Id, U64};

/// `State.Capture` params: the checkpoint the state is captured for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CaptureParams {
    /// The checkpoint's id.
    pub checkpoint_id: Id,
}

/// `State.StageRestore` params: the checkpoint whose `payload` artifact is attached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StageRestoreParams {
    /// The checkpoint's id.
    pub checkpoint_id: Id,
}

/// `State.ActivateRestore` params: the staged checkpoint to make current.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ActivateRestoreParams {
    /// The checkpoint's id.
    pub checkpoint_id: Id,
}

/// `State.Capture` result: the boundary captured and the attached `payload` artifact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CaptureResult {
    /// The checkpoint's id, echoed.
    pub checkpoint_id: Id,
    /// The committed boundary the state is of.
    pub boundary: U64,
    /// The attached state bytes.
    pub payload: ArtifactRef,
}

/// `State.StageRestore` result: the boundary the staged state is of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StageRestoreResult {
    /// The checkpoint's id, echoed.
    pub checkpoint_id: Id,
    /// The boundary of the staged state.
    pub boundary: U64,
}

/// `State.ActivateRestore` result: the boundary now current and, from an environment, the
/// world there (`null` from an agent).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ActivateRestoreResult {
    /// The checkpoint's id, echoed.
    pub checkpoint_id: Id,
    /// The boundary now current.
    pub committed_step: U64,
    /// An environment's restored world; `null` from an agent.
    pub observation: Option<WorldObservation>,
}

impl Payload for CaptureParams {
    fn validate(&self) -> Result<(), ContractError> {
        Ok(())
    }
}

impl Payload for StageRestoreParams {
    fn validate(&self) -> Result<(), ContractError> {
        Ok(())
    }
}

impl Payload for ActivateRestoreParams {
    fn validate(&self) -> Result<(), ContractError> {
        Ok(())
    }
}

impl Payload for CaptureResult {
    fn validate(&self) -> Result<(), ContractError> {
        self.payload.validate()
    }
}

impl Payload for StageRestoreResult {
    fn validate(&self) -> Result<(), ContractError> {
        Ok(())
    }
}

impl Payload for ActivateRestoreResult {
    fn validate(&self) -> Result<(), ContractError> {
        match &self.observation {
            Some(o) => o.validate(),
            None => Ok(()),
        }
    }
}
