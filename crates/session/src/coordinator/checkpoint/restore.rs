//! Restore: a resumed session brought up on fresh workers and restored from a checkpoint under
//! a new epoch, in four stages: the manifest checked, every participant staged, every
//! participant activated, the restored world compared with the captured one.
//!
//! It knows nothing of how a checkpoint is captured beyond the manifest's names.

use std::collections::BTreeMap;
use std::sync::Arc;

use flysim_bus::Artifact;
use flysim_types::checkpoint::decode;
use flysim_types::digest::sha256;
use flysim_types::payload::from_value;
use flysim_types::trace::{TraceBehaviour, TraceObservation};
use flysim_types::workers::{
    ActivateRestoreParams, ActivateRestoreResult, StageRestoreParams, StageRestoreResult,
    WorldObservation,
};
use flysim_types::{Digest, Id, TypedValue};
use serde_json::{Map, Value, json};

use super::super::call::Reply;
use super::super::{CommittedObservation, Coordinator, Participant, canonical_digest};
use super::{SCHEDULER, STATE_CONTENT_TYPE, agent_payload, fenced, refused, str_field};
use crate::error::SessionError;
use crate::phase::Phase;

/// Each agent's decision context in the checkpoint, with its digest, by agent id.
type RestoredContexts = BTreeMap<Id, (TypedValue, Digest)>;

/// Every participant to restore, the environment first, with its state payload.
type Participants = Vec<(Arc<Participant>, Vec<u8>)>;

impl Coordinator {
    /// Brings every worker up and restores the checkpoint `envelope` under a new epoch. `prior`
    /// are the behaviour rows the run holds up to the checkpoint's boundary (they continue the
    /// run digest, and must agree with the checkpoint). Afterwards the session is at
    /// `Ready(k)` and [`Coordinator::run`] continues from there.
    ///
    /// # Errors
    ///
    /// [`SessionError::Checkpoint`] when the checkpoint does not fit or a participant refuses
    /// at staging (nothing installed); [`SessionError::Fenced`] when activation fails.
    #[expect(
        clippy::disallowed_methods,
        reason = "an operational timing: wall time is recorded beside behaviour, never in it"
    )]
    pub async fn resume(
        &mut self,
        envelope: &[u8],
        prior: &[TraceBehaviour],
    ) -> Result<(), SessionError> {
        self.started = std::time::Instant::now();
        let restored = async {
            self.bootstrap().await?;
            self.enter(Phase::Restoring)?;
            self.restore(envelope, prior).await?;
            self.enter(Phase::Paused)?;
            self.enter(Phase::Ready)
        };
        match restored.await {
            Ok(()) => Ok(()),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// Restores `envelope` on the bootstrapped session, in the four stages.
    async fn restore(
        &mut self,
        envelope: &[u8],
        prior: &[TraceBehaviour],
    ) -> Result<(), SessionError> {
        let decoded = decode(envelope).map_err(|e| refused("coordinator", e.to_string()))?;
        let manifest = &decoded.manifest;
        // (1) The checkpoint must be of this plan, this world and this run's rows.
        let (k, old_epoch) = self.check_manifest(manifest, prior)?;
        let coordinator = manifest
            .get("coordinator")
            .and_then(Value::as_object)
            .ok_or_else(|| refused("coordinator", "the manifest lacks `coordinator`"))?;
        let boundary_row = usize::try_from(k)
            .ok()
            .and_then(|at| prior.get(at))
            .ok_or_else(|| refused("coordinator", format!("no trace row {k}")))?;
        let recorded = recorded_observation(coordinator, boundary_row, k)?;
        let contexts = restored_contexts(coordinator, boundary_row)?;
        if !contexts.keys().eq(self.states.keys()) {
            return Err(refused(
                "coordinator",
                "it holds other agents than the plan",
            ));
        }
        self.check_agents(manifest)?;
        let payload = |name: &str| {
            decoded
                .payload(name)
                .map(|p| p.bytes.clone())
                .ok_or_else(|| refused("coordinator", format!("no payload `{name}`")))
        };
        let ledger = payload("task-ledger")?;
        // (2) Stage everyone under the new epoch; nothing is installed yet.
        self.epoch = next_epoch(old_epoch)?;
        self.step = k;
        let checkpoint_id = Id::parse(str_field(manifest, "checkpointId")?)
            .map_err(|e| refused("coordinator", format!("the manifest's `checkpointId`: {e}")))?;
        let environment = self.env()?;
        let mut participants = vec![(environment.clone(), payload("world")?)];
        for id in self.states.keys() {
            participants.push((self.agent(id)?, payload(&agent_payload(id))?));
        }
        self.stage_all(&participants, &checkpoint_id, &ledger)
            .await?;
        // (3) Activate everyone: from here a failure fences the session.
        let (observation, frames) = self
            .activate_all(&participants, &checkpoint_id, &ledger)
            .await?;
        // (4) The restored world must be the captured one.
        let restored = self
            .trace_observation_now(&environment.id, &observation, &frames)
            .await
            .map_err(|e| fenced(environment.id.as_str(), e.to_string()))?;
        if restored != recorded || observation.boundary.get() != k {
            return Err(fenced(
                environment.id.as_str(),
                format!("its restored observation is not the one captured at boundary {k}"),
            ));
        }
        let progress = coordinator.get("progress").cloned().unwrap_or(Value::Null);
        self.adopt_restored(contexts, progress, observation, frames, prior)?;
        // The restored boundary, as a watcher sees it: no transition ended here.
        self.publish_snapshot(super::super::snapshot::recorded(boundary_row), None);
        self.let_the_publisher_run().await;
        Ok(())
    }

    /// The checkpoint's boundary `k` and epoch, once the manifest is of this plan, scheduler,
    /// port map and environment, and `prior` holds the rows up to `k`.
    fn check_manifest<'a>(
        &self,
        manifest: &'a Map<String, Value>,
        prior: &[TraceBehaviour],
    ) -> Result<(u64, &'a str), SessionError> {
        let scope = manifest
            .get("sourceScope")
            .and_then(Value::as_object)
            .ok_or_else(|| refused("coordinator", "the manifest lacks `sourceScope`"))?;
        let k: u64 = str_field(scope, "step")?
            .parse()
            .map_err(|_| refused("coordinator", "sourceScope.step is not a U64"))?;
        let old_epoch = str_field(scope, "epoch")?;
        let plan_digest = self.plan.plan_digest.hex();
        let checks = [
            (
                str_field(manifest, "compositionDigest")? == plan_digest,
                "it was written by another plan".to_owned(),
            ),
            (
                str_field(manifest, "schedulerId")? == SCHEDULER,
                "another scheduler wrote it".to_owned(),
            ),
            (
                manifest.get("portMap") == Some(&self.port_map()),
                "its ports are bound to other agents".to_owned(),
            ),
            (
                manifest.get("compatibility") == Some(&self.compatibility()?),
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
        Ok((k, old_epoch))
    }

    /// Checks every agent the manifest holds is one of this session's, with the profile,
    /// dataset and seed this session built it from.
    fn check_agents(&self, manifest: &Map<String, Value>) -> Result<(), SessionError> {
        for a in manifest
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
        Ok(())
    }

    /// Stages every participant and validates the task's ledger; any refusal refuses the whole
    /// group, and nothing is installed.
    async fn stage_all(
        &self,
        participants: &Participants,
        checkpoint_id: &Id,
        ledger: &[u8],
    ) -> Result<(), SessionError> {
        for (p, bytes) in participants {
            let artifact = self.state_artifact(bytes).await?;
            let params = StageRestoreParams {
                checkpoint_id: checkpoint_id.clone(),
            };
            let staged: Reply<StageRestoreResult> = self
                .call(
                    p,
                    Some(self.step),
                    params,
                    &[(Id::from_static("payload"), artifact)],
                )
                .await
                .map_err(|e| refused(p.id.as_str(), e.to_string()))?;
            self.acknowledge(p, staged.request)
                .await
                .map_err(|e| refused(p.id.as_str(), e.to_string()))?;
        }
        self.task
            .validate_restore(ledger)
            .map_err(|e| refused("task", e.to_string()))
    }

    /// Activates every participant, the environment first, then installs the task's ledger;
    /// any failure fences the session. Returns the environment's restored observation and the
    /// frames that hold its views.
    async fn activate_all(
        &mut self,
        participants: &Participants,
        checkpoint_id: &Id,
        ledger: &[u8],
    ) -> Result<(WorldObservation, Vec<(Id, Artifact)>), SessionError> {
        let k = self.step;
        let params = ActivateRestoreParams {
            checkpoint_id: checkpoint_id.clone(),
        };
        let mut observation = None;
        for (p, _) in participants {
            let active: Reply<ActivateRestoreResult> = self
                .call(p, Some(k), params.clone(), &[])
                .await
                .map_err(|e| fenced(p.id.as_str(), e.to_string()))?;
            if observation.is_none() {
                // The environment's answer: the world it restored.
                let restored = active.result.into_value().observation.ok_or_else(|| {
                    fenced(p.id.as_str(), "the environment restored no observation")
                })?;
                observation = Some((restored, active.attachments));
            }
            self.acknowledge(p, active.request)
                .await
                .map_err(|e| fenced(p.id.as_str(), e.to_string()))?;
        }
        self.task
            .install_restore(ledger)
            .map_err(|e| fenced("task", e.to_string()))?;
        observation.ok_or_else(|| fenced("coordinator", "no environment to activate"))
    }

    /// Takes over the restored state: the agents' contexts, the task's progress, the committed
    /// observation, and the run digest through the rows `prior`.
    fn adopt_restored(
        &mut self,
        contexts: RestoredContexts,
        progress: Value,
        observation: WorldObservation,
        frames: Vec<(Id, Artifact)>,
        prior: &[TraceBehaviour],
    ) -> Result<(), SessionError> {
        for (id, (context, digest)) in contexts {
            if let Some(state) = self.states.get_mut(&id) {
                state.context = Arc::new(context);
                state.context_digest = digest;
                state.previous_context = None;
            }
        }
        self.progress = progress;
        self.committed = Some(CommittedObservation {
            observation: Arc::new(observation),
            frames,
            memory: None,
        });
        for row in prior {
            self.run
                .digester
                .push(row)
                .map_err(|e| fenced("coordinator", e.to_string()))?;
        }
        self.run.rows = prior.len() as u64;
        self.hand_over_run_digest();
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

/// The observation the checkpoint recorded, once it is the one of the trace's row `k`.
fn recorded_observation(
    coordinator: &Map<String, Value>,
    boundary_row: &TraceBehaviour,
    k: u64,
) -> Result<TraceObservation, SessionError> {
    let recorded: TraceObservation = serde_json::from_value(
        coordinator
            .get("observation")
            .cloned()
            .unwrap_or(Value::Null),
    )
    .map_err(|e| refused("coordinator", format!("coordinator.observation: {e}")))?;
    if boundary_row.observation != recorded {
        return Err(refused(
            "coordinator",
            format!("the trace's row {k} is not the boundary the checkpoint captured"),
        ));
    }
    Ok(recorded)
}

/// Every agent's decision context the checkpoint holds, each agreeing with its digest and with
/// the trace's row of the boundary.
fn restored_contexts(
    coordinator: &Map<String, Value>,
    boundary_row: &TraceBehaviour,
) -> Result<RestoredContexts, SessionError> {
    let mut contexts = BTreeMap::new();
    for c in coordinator
        .get("contexts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let agent: Id = serde_json::from_value(c.get("agentId").cloned().unwrap_or(Value::Null))
            .map_err(|e| refused("coordinator", e.to_string()))?;
        let context: TypedValue = from_value(c.get("context").cloned().unwrap_or(Value::Null))
            .map_err(|e| refused("coordinator", e.to_string()))?;
        let digest: Digest =
            serde_json::from_value(c.get("contextDigest").cloned().unwrap_or(Value::Null))
                .map_err(|e| refused("coordinator", e.to_string()))?;
        let traced = boundary_row.agents.iter().find(|a| a.agent_id == agent);
        let hashed =
            canonical_digest(&context).map_err(|reason| refused(agent.as_str(), reason))?;
        if hashed != digest || traced.is_none_or(|a| a.decision_context_digest != digest) {
            return Err(refused(
                agent.as_str(),
                "its decision context disagrees with its digest or the trace",
            ));
        }
        contexts.insert(agent, (context, digest));
    }
    Ok(contexts)
}

/// The epoch after `old`: `epoch-<n+1>` (an unreadable one counts as `epoch-1`).
fn next_epoch(old: &str) -> Result<Id, SessionError> {
    let n: u64 = old
        .strip_prefix("epoch-")
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    Id::parse(&format!("epoch-{}", n + 1)).map_err(|e| refused("coordinator", e.to_string()))
}
