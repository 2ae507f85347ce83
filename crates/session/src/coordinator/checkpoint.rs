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

use flysim_bus::Artifact;
use flysim_types::checkpoint::{Payload as EnvelopePayload, decode, encode};
use flysim_types::digest::sha256;
use flysim_types::payload::from_value;
use flysim_types::trace::{TraceBehaviour, TraceObservation};
use flysim_types::workers::{AcknowledgeParams, WorldObservation};
use flysim_types::{Digest, DomainRequestId, Id, TypedValue, U64};
use serde_json::{Map, Value, json};

use super::{Coordinator, Current, Participant, Reply, digest_of};
use crate::error::SessionError;
use crate::phase::Phase;

/// The scheduler a checkpoint's manifest names.
const SCHEDULER: &str = "lockstep-v1";
/// The state format of worker captures (see `flysim_worker::state`).
const STATE_FORMAT: &str = "flysim-worker-state-v1";
/// The content type of state payload artifacts.
const STATE_CONTENT_TYPE: &str = "application/x-flysim-state";

fn refused(participant: &str, reason: impl Into<String>) -> SessionError {
    SessionError::Checkpoint {
        participant: participant.to_owned(),
        reason: reason.into(),
    }
}

fn fenced(participant: &str, reason: impl Into<String>) -> SessionError {
    SessionError::Fenced {
        participant: participant.to_owned(),
        reason: reason.into(),
    }
}

fn agent_payload(agent: &Id) -> String {
    format!("agent-{agent}")
}

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
        Ok(json!({
            "backendDigest": d.backend_digest,
            "contentDigest": d.content_digest,
            "patchDigest": d.configuration_digest,
            "controllerDigest": digest_of(&controllers),
            "parserDigest": digest_of(&d.inspection_schema),
            "stateFormatId": STATE_FORMAT,
        }))
    }

    fn port_map(&self) -> Value {
        let mut map: Vec<Value> = self
            .bindings
            .iter()
            .map(|b| json!({"portId": b.port_id, "agentId": b.agent_id}))
            .collect();
        map.sort_by(|a, b| a["portId"].as_str().cmp(&b["portId"].as_str()));
        Value::Array(map)
    }

    /// Asks `p` for its state at the committed boundary and returns the payload's bytes.
    async fn capture_one(&self, p: &Participant, id: &Id) -> Result<Vec<u8>, SessionError> {
        let reply: Reply<Map<String, Value>> = self
            .call(
                p,
                "State.Capture",
                Some(self.step),
                json!({"checkpointId": id})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
                &[],
            )
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
        self.release(p, reply.request)
            .await
            .map_err(|e| refused(p.id.as_str(), e.to_string()))?;
        Ok(bytes)
    }

    /// Acknowledges a lifecycle reply (`State.*`), so the worker drops what it retained.
    async fn release(&self, p: &Participant, request: DomainRequestId) -> Result<(), SessionError> {
        let params = AcknowledgeParams {
            request_ids: vec![request],
        };
        let _: Reply<Value> = self
            .call(p, "Worker.Acknowledge", None, super::obj(&params), &[])
            .await?;
        Ok(())
    }

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
        let result = self.capture_inner(row).await;
        self.enter(back)?;
        result
    }

    async fn capture_inner(&mut self, row: &TraceBehaviour) -> Result<(Id, Vec<u8>), SessionError> {
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
        let current = self
            .current
            .as_ref()
            .ok_or_else(|| refused("coordinator", "no committed observation"))?;
        let inspection = flysim_types::json::to_canonical(
            &serde_json::to_value(&current.observation.inspection).unwrap_or(Value::Null),
        )
        .map_err(|e| refused("coordinator", e.to_string()))?;
        payloads.push(EnvelopePayload {
            name: Id::from_static("prior-inspection"),
            bytes: inspection.into_bytes(),
        });
        let manifest = json!({
            "checkpointId": id,
            "sourceScope": self.scope(k),
            "episodeId": self.episode,
            "worldTime": current.observation.world_time,
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

    /// Brings every worker up and restores the checkpoint `envelope` under a new epoch. `prior`
    /// are the behaviour rows the run holds up to the checkpoint's boundary (they continue the
    /// run digest, and must agree with the checkpoint). Afterwards the session is at
    /// `Ready(k)` and [`Coordinator::run`] continues from there.
    ///
    /// # Errors
    ///
    /// [`SessionError::Checkpoint`] when the checkpoint does not fit or a participant refuses
    /// at staging (nothing installed); [`SessionError::Fenced`] when activation fails.
    pub async fn resume(
        &mut self,
        envelope: &[u8],
        prior: &[TraceBehaviour],
    ) -> Result<(), SessionError> {
        self.started = std::time::Instant::now();
        let restored = async {
            self.start_inner().await?;
            self.enter(Phase::Restoring)?;
            self.restore_inner(envelope, prior).await?;
            self.enter(Phase::Paused)?;
            self.enter(Phase::Ready)
        };
        match restored.await {
            Ok(()) => Ok(()),
            Err(e) => Err(self.fail(e)),
        }
    }

    async fn restore_inner(
        &mut self,
        envelope: &[u8],
        prior: &[TraceBehaviour],
    ) -> Result<(), SessionError> {
        let env = decode(envelope).map_err(|e| refused("coordinator", e.to_string()))?;
        let m = &env.manifest;
        let scope = m
            .get("sourceScope")
            .and_then(Value::as_object)
            .ok_or_else(|| refused("coordinator", "the manifest lacks `sourceScope`"))?;
        let k: u64 = str_field(scope, "step")?
            .parse()
            .map_err(|_| refused("coordinator", "sourceScope.step is not a U64"))?;
        let old_epoch = str_field(scope, "epoch")?;
        // (1) The checkpoint must be of this plan, this world and this run's rows.
        let plan_digest = self.plan.plan_digest.hex();
        let checks = [
            (
                str_field(m, "compositionDigest")? == plan_digest,
                "it was written by another plan".to_owned(),
            ),
            (
                str_field(m, "schedulerId")? == SCHEDULER,
                "another scheduler wrote it".to_owned(),
            ),
            (
                m.get("portMap") == Some(&self.port_map()),
                "its ports are bound to other agents".to_owned(),
            ),
            (
                m.get("compatibility") == Some(&self.compatibility()?),
                "the environment's backend, content, controllers or state format differ".to_owned(),
            ),
            (
                prior.len() as u64 == k + 1,
                format!(
                    "it is at boundary {k}; the run directory holds {} rows for it",
                    prior.len()
                ),
            ),
        ];
        if let Some((_, reason)) = checks.into_iter().find(|(ok, _)| !ok) {
            return Err(refused("coordinator", reason));
        }
        let coordinator = m
            .get("coordinator")
            .and_then(Value::as_object)
            .ok_or_else(|| refused("coordinator", "the manifest lacks `coordinator`"))?;
        let recorded: TraceObservation = serde_json::from_value(
            coordinator
                .get("observation")
                .cloned()
                .unwrap_or(Value::Null),
        )
        .map_err(|e| refused("coordinator", format!("coordinator.observation: {e}")))?;
        if prior[k as usize].observation != recorded {
            return Err(refused(
                "coordinator",
                format!("the trace's row {k} is not the boundary the checkpoint captured"),
            ));
        }
        let mut contexts = std::collections::BTreeMap::new();
        for c in coordinator
            .get("contexts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let agent: Id =
                serde_json::from_value(c.get("agentId").cloned().unwrap_or(Value::Null))
                    .map_err(|e| refused("coordinator", e.to_string()))?;
            let context: TypedValue = from_value(c.get("context").cloned().unwrap_or(Value::Null))
                .map_err(|e| refused("coordinator", e.to_string()))?;
            let digest: Digest =
                serde_json::from_value(c.get("contextDigest").cloned().unwrap_or(Value::Null))
                    .map_err(|e| refused("coordinator", e.to_string()))?;
            let traced = prior[k as usize]
                .agents
                .iter()
                .find(|a| a.agent_id == agent);
            if digest_of(&context) != digest
                || traced.is_none_or(|a| a.decision_context_digest != digest)
            {
                return Err(refused(
                    agent.as_str(),
                    "its decision context disagrees with its digest or the trace",
                ));
            }
            contexts.insert(agent, (context, digest));
        }
        if !contexts.keys().eq(self.states.keys()) {
            return Err(refused(
                "coordinator",
                "it holds other agents than the plan",
            ));
        }
        for a in m
            .get("agents")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let id = a.get("agentId").and_then(Value::as_str).unwrap_or_default();
            let state = self
                .states
                .iter()
                .find(|(k, _)| k.as_str() == id)
                .map(|(_, s)| s)
                .ok_or_else(|| refused("coordinator", format!("it holds agent `{id}`")))?;
            if a.get("profileDigest") != Some(&json!(state.profile.digest))
                || a.get("datasetDigest") != Some(&json!(state.dataset))
                || a.get("seed") != Some(&json!(state.seed))
            {
                return Err(refused(
                    id,
                    "its profile, dataset or seed is not the one this session built",
                ));
            }
        }
        let payload = |name: &str| {
            env.payload(name)
                .map(|p| p.bytes.clone())
                .ok_or_else(|| refused("coordinator", format!("no payload `{name}`")))
        };
        let ledger = payload("task-ledger")?;
        // (2) Stage everyone under the new epoch; nothing is installed yet.
        let n: u64 = old_epoch
            .strip_prefix("epoch-")
            .and_then(|n| n.parse().ok())
            .unwrap_or(1);
        self.epoch = Id::parse(&format!("epoch-{}", n + 1))
            .map_err(|e| refused("coordinator", e.to_string()))?;
        self.step = k;
        let checkpoint_id = str_field(m, "checkpointId")?.to_owned();
        let environment = self.env()?;
        let mut participants = vec![(environment.clone(), payload("world")?)];
        for id in self.states.keys() {
            participants.push((self.agent(id)?, payload(&agent_payload(id))?));
        }
        for (p, bytes) in &participants {
            let artifact = self.state_artifact(bytes).await?;
            let staged: Reply<Map<String, Value>> = self
                .call(
                    p,
                    "State.StageRestore",
                    Some(k),
                    json!({"checkpointId": checkpoint_id})
                        .as_object()
                        .cloned()
                        .unwrap_or_default(),
                    &[(Id::from_static("payload"), artifact)],
                )
                .await
                .map_err(|e| refused(p.id.as_str(), e.to_string()))?;
            self.release(p, staged.request)
                .await
                .map_err(|e| refused(p.id.as_str(), e.to_string()))?;
        }
        self.task
            .validate_restore(&ledger)
            .map_err(|e| refused("task", e.to_string()))?;
        // (3) Activate everyone: from here a failure fences the session.
        let params = json!({"checkpointId": checkpoint_id})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let reply: Reply<Map<String, Value>> = self
            .call(
                &environment,
                "State.ActivateRestore",
                Some(k),
                params.clone(),
                &[],
            )
            .await
            .map_err(|e| fenced(environment.id.as_str(), e.to_string()))?;
        let observation: WorldObservation = from_value(
            reply
                .result
                .get("observation")
                .cloned()
                .unwrap_or(Value::Null),
        )
        .map_err(|e| fenced(environment.id.as_str(), e.to_string()))?;
        self.release(&environment, reply.request)
            .await
            .map_err(|e| fenced(environment.id.as_str(), e.to_string()))?;
        for (p, _) in participants.iter().skip(1) {
            let active: Reply<Map<String, Value>> = self
                .call(p, "State.ActivateRestore", Some(k), params.clone(), &[])
                .await
                .map_err(|e| fenced(p.id.as_str(), e.to_string()))?;
            self.release(p, active.request)
                .await
                .map_err(|e| fenced(p.id.as_str(), e.to_string()))?;
        }
        self.task
            .install_restore(&ledger)
            .map_err(|e| fenced("task", e.to_string()))?;
        // (4) The restored world must be the captured one.
        let env_id = environment.id.clone();
        let restored = self
            .trace_observation_now(&env_id, &observation, &reply.attachments)
            .await
            .map_err(|e| fenced(env_id.as_str(), e.to_string()))?;
        if restored != recorded || observation.boundary.get() != k {
            return Err(fenced(
                env_id.as_str(),
                format!("its restored observation is not the one captured at boundary {k}"),
            ));
        }
        for (id, (context, digest)) in contexts {
            if let Some(state) = self.states.get_mut(&id) {
                state.context = std::sync::Arc::new(context);
                state.context_digest = digest;
            }
        }
        self.progress = coordinator.get("progress").cloned().unwrap_or(Value::Null);
        self.current = Some(Current {
            observation: std::sync::Arc::new(observation),
            _frames: reply.attachments,
        });
        for row in prior {
            self.digester
                .push(row)
                .map_err(|e| fenced("coordinator", e.to_string()))?;
        }
        self.rows = prior.len() as u64;
        self.share_run_digest();
        Ok(())
    }

    /// Puts `bytes` on the bus as a sealed artifact to attach to a restore.
    async fn state_artifact(&self, bytes: &[u8]) -> Result<Artifact, SessionError> {
        let failed = |e: flysim_bus::BusError| refused("coordinator", e.to_string());
        let mut writer = self
            .client
            .allocate(bytes.len() as u64, STATE_CONTENT_TYPE)
            .await
            .map_err(failed)?;
        writer.write(bytes).map_err(failed)?;
        writer.seal(Some(sha256(bytes))).await.map_err(failed)
    }
}
