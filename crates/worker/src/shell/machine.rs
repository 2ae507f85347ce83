//! The state a mutation changes, behind the worker's one lock: the phase, the epoch, what the
//! worker runs (an agent's model with its clock and retained context, or an environment's
//! backend with its world time and applied batches) and a staged restore.
//!
//! It knows the phases and the step a request must name; it does not know the methods that
//! move between them, the bus, or what a model or backend computes.

use std::sync::Arc;

use flysim_types::plan::PlanProfile;
use flysim_types::workers::{DomainError, DomainErrorCode, Method};
use flysim_types::{Digest, DomainRequestId, Id, RationalNs, TickAccumulator, TypedValue};

use super::batches::AppliedBatches;
use super::errors::refuse;
use crate::state::ShellHeader;
use flysim_component::{AgentFactory, AgentModel, EnvironmentBackend};

/// Where a worker is in its lifecycle (the phases of the module's diagram).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum WorkerPhase {
    Uninitialized,
    Ready(u64),
    Prepared { step: u64, request: DomainRequestId },
    Failed,
}

/// What an agent worker holds around its model.
pub(super) struct AgentState {
    pub(super) profile: PlanProfile,
    pub(super) profile_digest: Digest,
    pub(super) factory: AgentFactory,
    pub(super) model: Option<Box<dyn AgentModel>>,
    pub(super) clock: Option<TickAccumulator>,
    pub(super) warmup: u64,
    /// The ticks the last Prepare advanced (what the broken shell of the mutant suite hands the
    /// model again with a duplicate).
    pub(super) prepared_ticks: u64,
    /// The retained decision context (shared with the commit that brought it) and its digest.
    pub(super) context: Option<(Arc<TypedValue>, Digest)>,
    /// The context retained before it, with its digest: a task that moves between a few
    /// contexts (an action mask on and off) hands it back often, and it is then not hashed again.
    pub(super) previous_context: Option<(Arc<TypedValue>, Digest)>,
}

/// What an environment worker holds around its backend.
pub(super) struct EnvironmentState {
    pub(super) backend: Box<dyn EnvironmentBackend>,
    pub(super) config_digest: Digest,
    pub(super) world_time: RationalNs,
    pub(super) batches: AppliedBatches,
}

/// What a worker runs: an agent or an environment, with the shell's state around it.
pub(super) enum Workload {
    Agent(Box<AgentState>),
    Environment(Box<EnvironmentState>),
}

/// The worker's state machine: what every mutation reads and changes, under one lock.
pub(super) struct WorkerMachine {
    pub(super) phase: WorkerPhase,
    pub(super) epoch: Option<Id>,
    pub(super) workload: Workload,
    /// A validated restore waiting for `State.ActivateRestore`: its epoch and shell state.
    pub(super) staged: Option<(Id, ShellHeader)>,
}

impl WorkerMachine {
    pub(super) fn work(&self) -> u64 {
        match &self.workload {
            Workload::Agent(a) => a.model.as_ref().map_or(0, |m| m.work()),
            Workload::Environment(e) => e.backend.work(),
        }
    }

    /// Whether the model or backend says each call returns within microseconds.
    pub(super) fn quick(&self) -> bool {
        match &self.workload {
            Workload::Agent(a) => a.model.as_ref().is_some_and(|m| m.quick()),
            Workload::Environment(e) => e.backend.quick(),
        }
    }

    /// Loses what a restart loses: the phase, the epoch, the model, its clock and context, or
    /// the environment's applied batches and world time.
    pub(super) fn forget(&mut self) {
        self.phase = WorkerPhase::Uninitialized;
        self.epoch = None;
        match &mut self.workload {
            Workload::Agent(a) => {
                a.model = None;
                a.clock = None;
                a.context = None;
                a.previous_context = None;
            }
            Workload::Environment(e) => {
                e.batches.clear();
                e.world_time = RationalNs::ZERO;
            }
        }
    }
}

/// Checks that the worker is at `Ready(k)` for a request scoped at `scope.step`.
pub(super) fn ready_at(phase: WorkerPhase, method: Method, step: u64) -> Result<(), DomainError> {
    match phase {
        WorkerPhase::Ready(k) if k == step => Ok(()),
        WorkerPhase::Ready(k) | WorkerPhase::Prepared { step: k, .. } if step > k => Err(refuse(
            DomainErrorCode::FutureStep,
            format!("{method} names step {step}; the worker is at {k}"),
        )),
        WorkerPhase::Ready(k) | WorkerPhase::Prepared { step: k, .. } if step < k => Err(refuse(
            DomainErrorCode::StaleStep,
            format!("{method} names step {step}; the worker is at {k}"),
        )),
        other => Err(refuse(
            DomainErrorCode::InvalidPhase,
            format!("{method} is not allowed in phase {other:?}"),
        )),
    }
}
