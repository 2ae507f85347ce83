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
        let Some(observation) = &self.observation else {
            return Ok(());
        };
        observation.validate().map_err(|e| e.under("observation"))?;
        if observation.boundary != self.committed_step {
            return Err(ContractError::rule(
                "observation.boundary",
                "a restored world is observed at the boundary it was restored to (committedStep)",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::payload::from_value;

    fn observation() -> serde_json::Value {
        serde_json::from_str(include_str!(
            "../../../../fixtures/payloads/valid/world-observation.json"
        ))
        .unwrap()
    }

    #[test]
    fn a_restored_world_is_observed_at_the_boundary_it_was_restored_to() {
        // The fixture observes boundary 12.
        let at = |step: &str| serde_json::json!({"checkpointId": "ck-3", "committedStep": step, "observation": observation()});
        let restored: ActivateRestoreResult = from_value(at("12")).unwrap();
        assert_eq!(restored.committed_step, U64(12));
        let refused = from_value::<ActivateRestoreResult>(at("13")).unwrap_err();
        assert!(
            refused.to_string().contains("observation.boundary"),
            "{refused}"
        );
        // An agent restores no world.
        let agent =
            serde_json::json!({"checkpointId": "ck-3", "committedStep": "13", "observation": null});
        assert!(from_value::<ActivateRestoreResult>(agent).is_ok());
        // The checkpoint id is an id; an unknown member is refused.
        assert!(
            from_value::<CaptureParams>(serde_json::json!({"checkpointId": "no spaces"})).is_err()
        );
        assert!(
            from_value::<CaptureParams>(serde_json::json!({"checkpointId": "ck", "x": 1})).is_err()
        );
    }
}
