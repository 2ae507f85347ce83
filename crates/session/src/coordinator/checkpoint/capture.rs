//! Capture: every participant's state at the committed boundary, the task's ledger and the
//! coordinator's own state, into one `FLYSESS1` envelope.
//!
//! It knows nothing of restoring one.

use flysim_types::checkpoint::{Payload as EnvelopePayload, encode};
use flysim_types::digest::sha256;
use flysim_types::trace::TraceBehaviour;
use flysim_types::workers::{CaptureParams, CaptureResult};
use flysim_types::{Id, U64};
use serde_json::json;

use super::super::call::Reply;
use super::super::{Coordinator, Participant};
use super::{SCHEDULER, agent_payload, refused};
use crate::error::SessionError;
use crate::phase::Phase;

impl Coordinator {
    /// Captures every participant at the committed boundary whose row is `row`, into one
    /// `FLYSESS1` envelope. The session returns to the phase it was in.
    ///
    /// # Errors
    ///
    /// [`SessionError::Checkpoint`] when a participant cannot checkpoint; the session stays at
    /// its boundary and may go on.
    pub async fn capture(&mut self, row: &TraceBehaviour) -> Result<(Id, Vec<u8>), SessionError> {
        let back = self.phase.phase();
        if !matches!(back, Phase::Ready | Phase::Paused) || row.boundary.get() != self.step {
            return Err(refused(
                "coordinator",
                format!(
                    "a checkpoint is taken at a committed boundary, not in {back} (row {}, step {})",
                    row.boundary, self.step
                ),
            ));
        }
        self.enter(Phase::Capturing)?;
        let result = self.capture_envelope(row).await;
        self.enter(back)?;
        result
    }

    /// Asks `p` for its state at the committed boundary and returns the payload's bytes.
    async fn capture_one(&self, p: &Participant, id: &Id) -> Result<Vec<u8>, SessionError> {
        let params = CaptureParams {
            checkpoint_id: id.clone(),
        };
        let reply: Reply<CaptureResult> = self
            .call(p, Some(self.step), params, &[])
            .await
            .map_err(|e| refused(p.id.as_str(), e.to_string()))?;
        let artifact = reply
            .attachments
            .iter()
            .find(|(n, _)| n.as_str() == "payload")
            .map(|(_, a)| a)
            .ok_or_else(|| refused(p.id.as_str(), "State.Capture attached no payload"))?;
        let bytes = artifact
            .read()
            .await
            .map_err(|e| refused(p.id.as_str(), e.to_string()))?;
        if let Some(d) = artifact.reference().digest
            && d != sha256(&bytes)
        {
            return Err(refused(
                p.id.as_str(),
                "the payload does not match its digest",
            ));
        }
        self.acknowledge(p, reply.request)
            .await
            .map_err(|e| refused(p.id.as_str(), e.to_string()))?;
        Ok(bytes)
    }

    /// The envelope of the committed boundary whose row is `row`: every payload, and the
    /// manifest that names them.
    async fn capture_envelope(
        &mut self,
        row: &TraceBehaviour,
    ) -> Result<(Id, Vec<u8>), SessionError> {
        let k = self.step;
        let id =
            Id::parse(&format!("ckpt-{k}")).map_err(|e| refused("coordinator", e.to_string()))?;
        let env = self.env()?;
        let mut payloads = vec![EnvelopePayload {
            name: Id::from_static("world"),
            bytes: self.capture_one(&env, &id).await?,
        }];
        let mut agents = Vec::new();
        let mut contexts = Vec::new();
        for (agent_id, state) in &self.states {
            let p = self.agent(agent_id)?;
            let name = Id::parse(&agent_payload(agent_id))
                .map_err(|e| refused(agent_id.as_str(), e.to_string()))?;
            payloads.push(EnvelopePayload {
                name: name.clone(),
                bytes: self.capture_one(&p, &id).await?,
            });
            let traced = row.agents.iter().find(|a| a.agent_id == *agent_id);
            agents.push(json!({
                "agentId": agent_id,
                "profileDigest": state.profile.digest,
                "datasetDigest": state.dataset,
                "modelVersion": state.model,
                // The plasticity rule is part of the profile, which its digest pins.
                "plasticityVersion": null,
                "seed": state.seed,
                "brainTicks": traced.map(|a| a.brain_ticks),
                "remainder": traced.map(|a| a.remainder),
                "payload": name,
            }));
            contexts.push(json!({
                "agentId": agent_id,
                "context": state.context,
                "contextDigest": state.context_digest,
            }));
        }
        let ledger = self
            .task
            .capture()
            .map_err(|e| refused("task", e.to_string()))?;
        payloads.push(EnvelopePayload {
            name: Id::from_static("task-ledger"),
            bytes: ledger,
        });
        let committed = self
            .committed
            .as_ref()
            .ok_or_else(|| refused("coordinator", "no committed observation"))?;
        let inspection = serde_json::to_value(&committed.observation.inspection)
            .map_err(|e| e.to_string())
            .and_then(|value| flysim_types::json::to_canonical(&value).map_err(|e| e.to_string()))
            .map_err(|reason| refused("coordinator", reason))?;
        payloads.push(EnvelopePayload {
            name: Id::from_static("prior-inspection"),
            bytes: inspection.into_bytes(),
        });
        let manifest = json!({
            "checkpointId": id,
            "sourceScope": self.scope(k),
            "episodeId": self.episode,
            "worldTime": committed.observation.world_time,
            "schedulerId": SCHEDULER,
            "compositionDigest": self.plan.plan_digest,
            "portMap": self.port_map(),
            "compatibility": self.compatibility()?,
            "agents": agents,
            "coordinator": {
                "taskLedger": "task-ledger",
                "priorInspection": "prior-inspection",
                "executorState": [],
                "admissionState": null,
                "eventWatermarks": {"lastSourceStep": U64(k), "issued": U64(row.events.len() as u64)},
                "progress": self.progress,
                "contexts": contexts,
                "observation": row.observation,
            },
            "helperState": [],
            "environment": {"workerId": env.id, "payload": "world"},
        });
        let manifest = manifest.as_object().cloned().unwrap_or_default();
        let bytes =
            encode(&manifest, &payloads).map_err(|e| refused("coordinator", e.to_string()))?;
        Ok((id, bytes))
    }
}
