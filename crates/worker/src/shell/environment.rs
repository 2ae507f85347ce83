//! The environment methods: `Environment.Initialize` and `Environment.Advance`, around the
//! backend the shell holds: boundaries, world time, batch ids applied once per epoch, the
//! controls' digest, and the frames a backend produced checked against its declared views.
//!
//! It knows the environment's phases and what a backend is asked; it does not know what a
//! backend computes, nor how frames become artifacts (`artifacts`).

use flysim_types::workers::{
    AdvanceParams, AppliedControls, DomainError, DomainErrorCode, EnvironmentInitializeParams,
    EnvironmentInitializeResult, Method, Mutation, Results, StepResult,
};
use std::sync::Arc;

use flysim_bus::Artifact;
use flysim_rpc::RpcRequest;
use flysim_types::digest::check_canonical;
use flysim_types::{Id, RationalNs, TypedValue, U64};

use super::dispatch::Worker;
use super::errors::{backend_error, fail, refuse};
use super::lock;
use super::machine::{WorkerPhase, Workload, ready_at};
use super::params;
use flysim_component::{EnvironmentBackend, EnvironmentSetup, Frame, InspectionArtifact};

impl Worker {
    /// `Environment.Initialize` at step 0: checks the configuration and ports, initializes the
    /// backend at boundary 0 and answers with its descriptor and first observation.
    pub(super) async fn environment_initialize(
        &self,
        r: &mut RpcRequest,
        artifacts: &mut Vec<(Id, Artifact)>,
    ) -> Result<Results, DomainError> {
        let scope = self.check_scope(r.scope.as_ref(), true)?;
        let params: EnvironmentInitializeParams =
            params::of::<EnvironmentInitializeParams>(&r.params)?.clone();
        if scope.step.get() != 0 {
            return Err(refuse(
                DomainErrorCode::InvalidArgument,
                "Environment.Initialize is scoped at step 0",
            ));
        }
        let epoch = scope.epoch.clone();
        let (descriptor, observed) = self
            .compute(move |machine| {
                if machine.phase != WorkerPhase::Uninitialized {
                    return Err(refuse(
                        DomainErrorCode::InvalidPhase,
                        "Environment.Initialize needs an uninitialized environment",
                    ));
                }
                let Workload::Environment(env) = &mut machine.workload else {
                    return Err(refuse(DomainErrorCode::Unsupported, "not an environment"));
                };
                if params.backend_config.digest != env.config_digest {
                    return Err(refuse(
                        DomainErrorCode::IdentityMismatch,
                        format!(
                            "backend configuration sha256:{} is not this environment's sha256:{}",
                            params.backend_config.digest, env.config_digest
                        ),
                    ));
                }
                for binding in &params.port_bindings {
                    if env.backend.descriptor().port(&binding.port_id).is_none() {
                        return Err(refuse(
                            DomainErrorCode::IdentityMismatch,
                            format!("port `{}` is not declared", binding.port_id),
                        ));
                    }
                }
                env.backend
                    .initialize(&EnvironmentSetup {
                        episode_id: params.episode_id.clone(),
                        port_bindings: params.port_bindings.clone(),
                    })
                    .map_err(|e| backend_error(e, true))?;
                env.world_time = RationalNs::ZERO;
                env.batches.clear();
                let observed = Observed::of(env.backend.as_mut(), 0, RationalNs::ZERO)?;
                machine.phase = WorkerPhase::Ready(0);
                machine.epoch = Some(epoch);
                let Workload::Environment(env) = &machine.workload else {
                    return Err(refuse(DomainErrorCode::Unsupported, "not an environment"));
                };
                Ok((env.backend.descriptor().clone(), observed))
            })
            .await?;
        let observation = self.publish(observed, artifacts, r.local).await?;
        Ok(EnvironmentInitializeResult {
            descriptor,
            observation,
        }
        .into())
    }

    /// `Environment.Advance` at `Ready(k)`: applies one batch of controls (once per epoch), moves
    /// the world one step and answers with the observation of boundary `k + 1`.
    pub(super) async fn environment_advance(
        &self,
        r: &mut RpcRequest,
        artifacts: &mut Vec<(Id, Artifact)>,
    ) -> Result<Results, DomainError> {
        let scope = self.check_scope(r.scope.as_ref(), false)?;
        let shared = Arc::clone(&r.params);
        let batch_id = params::of::<AdvanceParams>(&shared)?.batch_id.clone();
        let (observed, applied) = self
            .compute(move |machine| {
                let params = params::of::<AdvanceParams>(&shared)?;
                let step = scope.step.get();
                // First, as before any phase check: controls canonical JSON cannot hold are
                // refused whatever the worker's state. Their digest, `appliedControlsDigest`, is
                // taken where it is first needed (the reply's bytes on the bus; on the in-memory
                // lane the row, off the step's path).
                check_canonical(&*params.controls)
                    .map_err(|e| refuse(DomainErrorCode::InvalidArgument, e.to_string()))?;
                ready_at(machine.phase, Method::EnvironmentAdvance, step)?;
                let Workload::Environment(env) = &mut machine.workload else {
                    return Err(refuse(DomainErrorCode::Unsupported, "not an environment"));
                };
                if env.batches.contains(&params.batch_id) {
                    return Err(refuse(
                        DomainErrorCode::Conflict,
                        format!(
                            "batch `{}` was already applied in this epoch",
                            params.batch_id
                        ),
                    ));
                }
                let descriptor = env.backend.descriptor();
                // Validated where they arrived (the endpoint): only the descriptor's checks are
                // left.
                params
                    .matches_descriptor(descriptor)
                    .map_err(|e| refuse(DomainErrorCode::InvalidArgument, e.to_string()))?;
                let world_time = env
                    .world_time
                    .checked_add(descriptor.step_duration)
                    .map_err(|e| refuse(DomainErrorCode::InvalidArgument, e.to_string()))?;
                env.backend
                    .advance(&params.controls)
                    .map_err(|e| backend_error(e, true))?;
                env.world_time = world_time;
                env.batches.insert(&params.batch_id);
                let observed = Observed::of(env.backend.as_mut(), step + 1, world_time)?;
                machine.phase = WorkerPhase::Ready(step + 1);
                Ok((
                    observed,
                    AppliedControls::Shared(Arc::clone(&params.controls)),
                ))
            })
            .await?;
        let next = observed.boundary;
        let observation = self.publish(observed, artifacts, r.local).await?;
        lock(&self.status).last_batch_id = Some(batch_id.clone());
        Ok(StepResult {
            batch_id,
            applied_from_step: U64(next - 1),
            next_step: U64(next),
            applied_controls_digest: applied,
            observation: Arc::new(observation),
        }
        .into())
    }
}

/// What an environment produced at one boundary, before its frames become artifacts.
pub(super) struct Observed {
    pub(super) boundary: u64,
    pub(super) world_time: RationalNs,
    pub(super) engine_frame: Option<String>,
    pub(super) inspection: TypedValue,
    pub(super) view_ids: Vec<Id>,
    pub(super) frames: Vec<Frame>,
    pub(super) extra: Vec<InspectionArtifact>,
}

impl Observed {
    /// What `backend` shows at `boundary`, its frames checked against its declared views.
    pub(super) fn of(
        backend: &mut dyn EnvironmentBackend,
        boundary: u64,
        world_time: RationalNs,
    ) -> Result<Self, DomainError> {
        let descriptor = backend.descriptor();
        let frames = backend.frames();
        let view_ids: Vec<Id> = descriptor.views.iter().map(|v| v.view_id.clone()).collect();
        for (frame, view) in frames.iter().zip(&descriptor.views) {
            if frame.view_id != view.view_id || frame.bytes.len() as u64 != view.frame_bytes() {
                return Err(fail(
                    DomainErrorCode::BackendFailure,
                    Mutation::Applied,
                    format!(
                        "frame `{}` does not match its declared view ({} bytes)",
                        frame.view_id,
                        view.frame_bytes()
                    ),
                ));
            }
        }
        if frames.len() != descriptor.views.len() {
            return Err(fail(
                DomainErrorCode::BackendFailure,
                Mutation::Applied,
                "the backend produced a frame count other than its declared views",
            ));
        }
        Ok(Self {
            boundary,
            world_time,
            engine_frame: backend.engine_frame(),
            inspection: backend.inspection().map_err(|e| backend_error(e, true))?,
            view_ids,
            frames,
            extra: backend.inspection_artifacts(),
        })
    }
}
