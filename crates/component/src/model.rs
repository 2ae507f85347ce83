//! What an agent model implements: the brain behind an agent worker.
//!
//! The shell does everything contractual around it: it checks phases, scopes, identities and
//! context digests, runs the rational clock (so a model is told a whole number of ticks), reads
//! view artifacts into bytes when the model senses pixels, caches replies for retries, and
//! builds every payload. A model only computes, synchronously:
//!
//! - [`AgentModel::warm_up`] once at `Agent.Initialize` (learning off, no world advance, no
//!   reward);
//! - [`AgentModel::prepare`] at `Agent.Prepare`: apply pre-step stimuli in order, run `ticks`
//!   ticks, decode a decision from the fixed readout masked by the context;
//! - [`AgentModel::commit`] at `Agent.Commit`: install the next input, apply task stimuli, then
//!   reinforce with the rewards in event order. No tick runs in a commit.
//!
//! The LIF brain adapts as `prepare(ticks, stimuli)` + its decoder, `commit(input, stimuli,
//! rewards)`, and its checkpoint as `capture`/`stage_restore`/`activate_restore`; the state
//! hooks answer `UNSUPPORTED` until a model implements them.

use flysim_types::plan::PlanProfile;
use flysim_types::workers::{AgentGraph, AgentTelemetry, Method, Reward, Stimulus};
use flysim_types::{Id, RationalNs, TypedValue, U64};
use miette::Diagnostic;
use thiserror::Error;

/// What a model can fail with. The shell maps each to a domain error code.
#[derive(Debug, Clone, PartialEq, Eq, Error, Diagnostic)]
pub enum ModelError {
    /// A method or capability the model does not implement (`UNSUPPORTED`, mutation none).
    #[error("{what} is not supported by this model")]
    Unsupported {
        /// What was asked.
        what: String,
    },
    /// An input the model refuses before mutating anything (`INVALID_ARGUMENT`).
    #[error("{0}")]
    Invalid(String),
    /// State that cannot be restored (`INCOMPATIBLE_STATE`).
    #[error("{0}")]
    Incompatible(String),
    /// A fault while mutating (`INTERNAL`, mutation unknown).
    #[error("{0}")]
    Fault(String),
}

impl ModelError {
    /// An unsupported method or capability.
    pub fn unsupported(what: impl Into<String>) -> Self {
        Self::Unsupported { what: what.into() }
    }
}

/// Everything a model is built from at `Agent.Initialize`.
#[derive(Debug, Clone)]
pub struct ModelSetup {
    /// The agent.
    pub agent_id: Id,
    /// Its profile, as the plan resolved it.
    pub profile: PlanProfile,
    /// Its seed (seed-derivation-v1 or explicit).
    pub seed: i32,
    /// Threads it may use: at least 1, within the worker's allocation.
    pub worker_threads: u32,
}

/// Builds a model; called only after the thread request was checked against the allocation.
pub type AgentFactory =
    std::sync::Arc<dyn Fn(&ModelSetup) -> Result<Box<dyn AgentModel>, ModelError> + Send + Sync>;

/// How a model senses its views.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sensing {
    /// The shell reads every view's pixels into [`SensedView::pixels`].
    Pixels,
    /// The model does not look at its views: the shell checks that every view's artifact is
    /// attached but reads no pixels.
    Blind,
}

/// One view as a model sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SensedView {
    /// The view.
    pub view_id: Id,
    /// The boundary that produced it.
    pub produced_step: U64,
    /// The RGBA8 bytes, when the model senses pixels.
    pub pixels: Option<Vec<u8>>,
}

/// The sensory input a model installs.
#[derive(Debug, Clone, PartialEq)]
pub struct SensedInput {
    /// The environment boundary observed.
    pub boundary: u64,
    /// The views, in the order of the input.
    pub views: Vec<SensedView>,
    /// Structured sensing, if the profile declares it.
    pub structured: Option<TypedValue>,
}

/// A brain: what an agent worker runs.
pub trait AgentModel: Send {
    /// One brain tick.
    fn tick_duration(&self) -> RationalNs;

    /// How the model senses views.
    fn sensing(&self) -> Sensing {
        Sensing::Pixels
    }

    /// Whether every call returns within microseconds, whatever the input (a scripted or
    /// synthetic model). The worker shell then computes on the task that serves the request
    /// instead of handing the call to another thread and back (two context switches, about a
    /// sixth of a two-agent step across processes): `Worker.Status` waits at most that long.
    /// Anything that simulates neurons, or may run long, keeps the default `false`.
    fn quick(&self) -> bool {
        false
    }

    /// Installs the initial input and warms up with learning disabled; returns the warm-up
    /// ticks run. Nothing here advances the world or produces a reward.
    ///
    /// # Errors
    ///
    /// [`ModelError`].
    fn warm_up(&mut self, input: &SensedInput, context: &TypedValue) -> Result<u64, ModelError>;

    /// Applies `stimuli` in order, runs exactly `ticks` ticks, and decodes a decision with the
    /// fixed readout masked by `context`.
    ///
    /// # Errors
    ///
    /// [`ModelError`]; an error after a tick ran must be [`ModelError::Fault`].
    fn prepare(
        &mut self,
        ticks: u64,
        stimuli: &[Stimulus],
        context: &TypedValue,
    ) -> Result<TypedValue, ModelError>;

    /// Installs the next input, applies task stimuli in order, and reinforces once with the
    /// rewards in event order. Runs no tick.
    ///
    /// # Errors
    ///
    /// [`ModelError`].
    fn commit(
        &mut self,
        input: &SensedInput,
        stimuli: &[Stimulus],
        rewards: &[Reward],
    ) -> Result<(), ModelError>;

    /// Telemetry after the last operation.
    fn telemetry(&self) -> AgentTelemetry;

    /// The graph's identity and declared roles.
    fn graph(&self) -> AgentGraph;

    /// Units of work done so far (ticks, RNG draws, decodes, reinforcements): added to the
    /// worker's `Status.progressCounter`, so a retry that repeats work is visible.
    fn work(&self) -> u64 {
        0
    }

    /// `State.Capture`: the committed state's bytes.
    ///
    /// # Errors
    ///
    /// [`ModelError::Unsupported`] unless the model checkpoints.
    fn capture(&self) -> Result<Vec<u8>, ModelError> {
        Err(ModelError::unsupported(Method::StateCapture.as_str()))
    }

    /// `State.StageRestore`: validates replacement state without installing it.
    ///
    /// # Errors
    ///
    /// [`ModelError::Unsupported`] unless the model checkpoints.
    fn stage_restore(&mut self, _payload: &[u8]) -> Result<(), ModelError> {
        Err(ModelError::unsupported(Method::StateStageRestore.as_str()))
    }

    /// `State.ActivateRestore`: installs the staged state; runs no tick.
    ///
    /// # Errors
    ///
    /// [`ModelError::Unsupported`] unless the model checkpoints.
    fn activate_restore(&mut self) -> Result<(), ModelError> {
        Err(ModelError::unsupported(
            Method::StateActivateRestore.as_str(),
        ))
    }
}
