//! The state hooks (contracts §7): `State.Capture` frames the shell's own state around the
//! model's or backend's capture, `State.StageRestore` validates a capture under a new epoch and
//! installs nothing, `State.ActivateRestore` installs it.
//!
//! It knows the phases a hook needs and the shell's part of a capture ([`crate::state`]); what a
//! model or backend captures is theirs.

use std::sync::Arc;

use flysim_bus::Artifact;
use flysim_rpc::RpcRequest;
use flysim_types::workers::{
    ActivateRestoreResult, CaptureResult, DomainError, DomainErrorCode, Method, Mutation, Params,
    Results, StageRestoreResult,
};
use flysim_types::{Id, Scope, TypedValue, U64};

use super::dispatch::Worker;
use super::environment::Observed;
use super::errors::{backend_error, fail, model_error, refuse};
use super::machine::{WorkerMachine, WorkerPhase, Workload};
use crate::state::{RoleState, ShellHeader};

impl Worker {
    /// `State.Capture`, `State.StageRestore`, `State.ActivateRestore` (contracts §7).
    ///
    /// - Capture, at a committed `Ready(k)`: the shell's own state (boundary, clock, retained
    ///   context or world time) framed around the model's or backend's capture
    ///   ([`crate::state`]), returned as the artifact `payload`.
    /// - StageRestore, on a quiescent `Ready` worker under a *new* epoch (the request's scope):
    ///   the attached `payload` is decoded and handed to the model or backend to validate;
    ///   nothing is installed and the worker keeps answering as before.
    /// - ActivateRestore, under the staged epoch: installs the staged state; the worker is at
    ///   `Ready(k)` of the new epoch. An environment answers with the observation of boundary
    ///   `k` (its frames attached), an agent with `committedStep`. No tick runs.
    pub(super) async fn state_hook(
        &self,
        r: &mut RpcRequest,
        artifacts: &mut Vec<(Id, Artifact)>,
    ) -> Result<Results, DomainError> {
        let method = r.method;
        let checkpoint_id = match &*r.params {
            Params::StateCapture(p) => p.checkpoint_id.clone(),
            Params::StateStageRestore(p) => p.checkpoint_id.clone(),
            Params::StateActivateRestore(p) => p.checkpoint_id.clone(),
            other => {
                return Err(fail(
                    DomainErrorCode::Internal,
                    Mutation::None,
                    format!("the state hook was handed the params of {}", other.method()),
                ));
            }
        };
        let scope = self.check_scope(r.scope.as_ref(), method != Method::StateCapture)?;
        let payload =
            match r.attachments.iter().find(|(n, _)| n.as_str() == "payload") {
                Some((_, a)) => Some(a.read().await.map_err(|e| {
                    refuse(DomainErrorCode::BufferInvalid, format!("payload: {e}"))
                })?),
                None => None,
            };
        let outcome = self
            .compute(move |machine| match method {
                Method::StateCapture => capture(machine).map(StateOutcome::Captured),
                Method::StateStageRestore => {
                    let bytes = payload.ok_or_else(|| {
                        refuse(DomainErrorCode::InvalidArgument, "no `payload` attached")
                    })?;
                    stage(machine, &scope, &bytes).map(StateOutcome::Staged)
                }
                _ => activate(machine, &scope),
            })
            .await?;
        Ok(match outcome {
            StateOutcome::Captured((boundary, bytes)) => {
                let id = Id::from_static("payload");
                let artifact = self
                    .seal(
                        &id,
                        Arc::new(bytes),
                        // Checkpoint payloads are always sealed with their digest (§3.8).
                        true,
                        r.local,
                    )
                    .await?;
                let payload = artifact.reference().clone();
                artifacts.push((id, artifact));
                CaptureResult {
                    checkpoint_id,
                    boundary: U64(boundary),
                    payload,
                }
                .into()
            }
            StateOutcome::Staged(boundary) => StageRestoreResult {
                checkpoint_id,
                boundary: U64(boundary),
            }
            .into(),
            StateOutcome::AgentActive(boundary) => ActivateRestoreResult {
                checkpoint_id,
                committed_step: U64(boundary),
                observation: None,
            }
            .into(),
            StateOutcome::EnvironmentActive(observed) => {
                let committed_step = U64(observed.boundary);
                let observation = self.publish(*observed, artifacts, r.local).await?;
                ActivateRestoreResult {
                    checkpoint_id,
                    committed_step,
                    observation: Some(observation),
                }
                .into()
            }
        })
    }
}

/// What a state method produced inside the computation.
enum StateOutcome {
    Captured((u64, Vec<u8>)),
    Staged(u64),
    AgentActive(u64),
    EnvironmentActive(Box<Observed>),
}

/// `State.Capture`: the shell header around the model's or backend's bytes.
fn capture(machine: &mut WorkerMachine) -> Result<(u64, Vec<u8>), DomainError> {
    let WorkerPhase::Ready(k) = machine.phase else {
        return Err(refuse(
            DomainErrorCode::InvalidPhase,
            format!(
                "State.Capture needs a committed boundary, not {:?}",
                machine.phase
            ),
        ));
    };
    let (role, body) = match &machine.workload {
        Workload::Agent(a) => {
            let (Some(model), Some(clock), Some((context, digest))) =
                (a.model.as_ref(), a.clock.as_ref(), a.context.as_ref())
            else {
                return Err(refuse(DomainErrorCode::InvalidPhase, "no model"));
            };
            let body = model.capture().map_err(|e| model_error(e, false))?;
            let role = RoleState::Agent {
                tick: clock.tick(),
                ticks: U64(clock.ticks()),
                remainder: clock.remainder(),
                warmup: U64(a.warmup),
                context: TypedValue::clone(context),
                context_digest: *digest,
            };
            (role, body)
        }
        Workload::Environment(e) => {
            let body = e.backend.capture().map_err(|e| backend_error(e, false))?;
            (
                RoleState::Environment {
                    world_time: e.world_time,
                },
                body,
            )
        }
    };
    let header = ShellHeader {
        boundary: U64(k),
        role,
    };
    let bytes =
        crate::state::encode(&header, &body).map_err(|e| refuse(DomainErrorCode::Internal, e))?;
    Ok((k, bytes))
}

/// `State.StageRestore`: decodes and validates; installs nothing.
fn stage(machine: &mut WorkerMachine, scope: &Scope, bytes: &[u8]) -> Result<u64, DomainError> {
    if !matches!(machine.phase, WorkerPhase::Ready(_)) {
        return Err(refuse(
            DomainErrorCode::InvalidPhase,
            format!(
                "State.StageRestore needs an initialised, quiescent worker, not {:?}",
                machine.phase
            ),
        ));
    }
    if machine.epoch.as_ref() == Some(&scope.epoch) {
        return Err(refuse(
            DomainErrorCode::InvalidArgument,
            format!(
                "a restore is staged under a new epoch, not `{}`",
                scope.epoch
            ),
        ));
    }
    let incompatible = |m: String| refuse(DomainErrorCode::IncompatibleState, m);
    let (header, body) = crate::state::decode(bytes).map_err(incompatible)?;
    match (&mut machine.workload, &header.role) {
        (Workload::Agent(a), RoleState::Agent { tick, .. }) => {
            let model = a
                .model
                .as_mut()
                .ok_or_else(|| refuse(DomainErrorCode::InvalidPhase, "no model"))?;
            if *tick != model.tick_duration() {
                return Err(incompatible(format!(
                    "the capture counts ticks of {tick} ns, this model {} ns",
                    model.tick_duration()
                )));
            }
            model
                .stage_restore(body)
                .map_err(|e| model_error(e, false))?;
        }
        (Workload::Environment(e), RoleState::Environment { .. }) => {
            e.backend
                .stage_restore(body)
                .map_err(|e| backend_error(e, false))?;
        }
        _ => {
            return Err(incompatible(
                "the capture is of the other role (agent/environment)".into(),
            ));
        }
    }
    let boundary = header.boundary.get();
    machine.staged = Some((scope.epoch.clone(), header));
    Ok(boundary)
}

/// `State.ActivateRestore`: installs what was staged under this epoch, at its boundary.
fn activate(machine: &mut WorkerMachine, scope: &Scope) -> Result<StateOutcome, DomainError> {
    let (epoch, header) = machine.staged.take().ok_or_else(|| {
        refuse(
            DomainErrorCode::InvalidPhase,
            "State.ActivateRestore needs a staged restore",
        )
    })?;
    if epoch != scope.epoch {
        let message = format!("the restore was staged under epoch `{epoch}`");
        machine.staged = Some((epoch, header));
        return Err(refuse(DomainErrorCode::StaleEpoch, message));
    }
    let k = header.boundary.get();
    let outcome = match (&mut machine.workload, header.role) {
        (Workload::Agent(a), role) => {
            let clock = role
                .clock()
                .map_err(|e| refuse(DomainErrorCode::IncompatibleState, e))?;
            let RoleState::Agent {
                warmup,
                context,
                context_digest,
                ..
            } = role
            else {
                return Err(refuse(DomainErrorCode::Internal, "staged role changed"));
            };
            let model = a
                .model
                .as_mut()
                .ok_or_else(|| refuse(DomainErrorCode::InvalidPhase, "no model"))?;
            model.activate_restore().map_err(|e| model_error(e, true))?;
            a.clock = clock;
            a.warmup = warmup.get();
            a.context = Some((Arc::new(context), context_digest));
            a.previous_context = None;
            StateOutcome::AgentActive(k)
        }
        (Workload::Environment(e), RoleState::Environment { world_time }) => {
            e.backend
                .activate_restore()
                .map_err(|e| backend_error(e, true))?;
            e.world_time = world_time;
            e.batches.clear();
            StateOutcome::EnvironmentActive(Box::new(Observed::of(
                e.backend.as_mut(),
                k,
                world_time,
            )?))
        }
        (Workload::Environment(_), RoleState::Agent { .. }) => {
            return Err(refuse(DomainErrorCode::Internal, "staged role changed"));
        }
    };
    machine.phase = WorkerPhase::Ready(k);
    machine.epoch = Some(epoch);
    Ok(outcome)
}
