//! Coherent checkpoints of a session (contracts §7–8): every participant captured at one
//! committed boundary into one `FLYSESS1` envelope, and a resumed session restored from one.
//!
//! Capture, at `Ready(k)` with nothing in flight: `State.Capture` to the environment and to
//! every agent (sorted agent-id order), the task's ledger, and the coordinator's own state
//! inline in the manifest (decision contexts, task progress, the committed observation).
//!
//! Restore, on freshly initialised workers (`Starting -> Restoring -> Paused(k) -> Ready(k)`),
//! under a new epoch:
//!
//! 1. the manifest is checked against the plan, the environment's descriptor and the trace
//!    rows the run directory holds up to `k`;
//! 2. **stage** every participant (`State.StageRestore`, the task's `validate_restore`): any
//!    refusal refuses the whole group (`FS0312`) and nothing is installed;
//! 3. **activate** every participant (`State.ActivateRestore`, `install_restore`); a failure
//!    here fences the session (`FS0313`, phase `Failed`, no step is played);
//! 4. the environment's restored observation must be the one the checkpoint recorded.
//!
//! Executors of this build are stateless (`direct-v1`): the manifest records an empty
//! `executorState`.
//!
//! This file holds what both directions share: the manifest's fixed names, the compatibility
//! record and the port map. Capture is in `capture`, restore in `restore`.

use flysim_types::Id;
use serde_json::{Map, Value, json};

use super::{Coordinator, canonical_digest};
use crate::error::SessionError;

mod capture;
mod restore;

/// The scheduler a checkpoint's manifest names.
const SCHEDULER: &str = "lockstep-v1";
/// The state format of worker captures (see `flysim_worker::state`).
const STATE_FORMAT: &str = "flysim-worker-state-v1";
/// The content type of state payload artifacts.
const STATE_CONTENT_TYPE: &str = "application/x-flysim-state";

/// A checkpoint refused, by `participant`: the session stays where it was.
fn refused(participant: &str, reason: impl Into<String>) -> SessionError {
    SessionError::Checkpoint {
        participant: participant.to_owned(),
        reason: reason.into(),
    }
}

/// A restore failed after activation began, at `participant`: the session is fenced.
fn fenced(participant: &str, reason: impl Into<String>) -> SessionError {
    SessionError::Fenced {
        participant: participant.to_owned(),
        reason: reason.into(),
    }
}

/// The name of an agent's payload in the envelope.
fn agent_payload(agent: &Id) -> String {
    format!("agent-{agent}")
}

/// A string field of a manifest object.
fn str_field<'a>(m: &'a Map<String, Value>, key: &str) -> Result<&'a str, SessionError> {
    m.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| refused("coordinator", format!("the manifest lacks `{key}`")))
}

impl Coordinator {
    /// The compatibility record of this session's environment (contracts §8 `compatibility`).
    fn compatibility(&self) -> Result<Value, SessionError> {
        let d = self
            .descriptor
            .as_ref()
            .ok_or_else(|| refused("coordinator", "the environment is not initialised"))?;
        let controllers: Vec<Value> = d
            .ports
            .iter()
            .map(|p| json!({"portId": p.port_id, "controls": p.controls}))
            .collect();
        let unhashable = |reason| refused("coordinator", reason);
        Ok(json!({
            "backendDigest": d.backend_digest,
            "contentDigest": d.content_digest,
            "patchDigest": d.configuration_digest,
            "controllerDigest": canonical_digest(&controllers).map_err(unhashable)?,
            "parserDigest": canonical_digest(&d.inspection_schema).map_err(unhashable)?,
            "stateFormatId": STATE_FORMAT,
        }))
    }

    /// Which agent each port is bound to, in port order.
    fn port_map(&self) -> Value {
        let mut map: Vec<Value> = self
            .bindings
            .iter()
            .map(|b| json!({"portId": b.port_id, "agentId": b.agent_id}))
            .collect();
        map.sort_by(|a, b| a["portId"].as_str().cmp(&b["portId"].as_str()));
        Value::Array(map)
    }
}
