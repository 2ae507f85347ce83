//! What an environment backend implements: the world behind an environment worker.
//!
//! The shell owns boundaries, world time, batch ids, control validation against the
//! descriptor, the applied-controls digest and the artifacts frames travel in. A backend only
//! holds the world, synchronously:
//!
//! - [`EnvironmentBackend::descriptor`]: its fixed identity and shape;
//! - [`EnvironmentBackend::initialize`]: set up the episode (a declared scaffold) and stop at
//!   boundary 0;
//! - [`EnvironmentBackend::advance`]: apply the complete, validated batch and run exactly one
//!   framework step (one Game Boy frame per call for binjgb);
//! - [`EnvironmentBackend::frames`], [`EnvironmentBackend::inspection`]: the native views (RGBA8
//!   bytes, one per declared view) and the typed inspection of the current boundary;
//!   [`EnvironmentBackend::inspection_artifacts`] carries bulk inspection such as a 64 KiB
//!   memory image as artifacts beside it;
//! - `capture`/`stage_restore`/`activate_restore`: the state hooks (`UNSUPPORTED` by default;
//!   binjgb's export/import state goes here).

use std::sync::Arc;

use flysim_types::workers::{EnvironmentDescriptor, Method, PortBinding, PortControl};
use flysim_types::{Id, TypedValue};
use miette::Diagnostic;
use thiserror::Error;

/// What a backend can fail with.
#[derive(Debug, Clone, PartialEq, Eq, Error, Diagnostic)]
pub enum BackendError {
    /// A method or capability the backend does not implement (`UNSUPPORTED`).
    #[error("{what} is not supported by this backend")]
    Unsupported {
        /// What was asked.
        what: String,
    },
    /// An input refused before any mutation (`INVALID_ARGUMENT`).
    #[error("{0}")]
    Invalid(String),
    /// State that cannot be restored (`INCOMPATIBLE_STATE`).
    #[error("{0}")]
    Incompatible(String),
    /// A fault in the world (`BACKEND_FAILURE`, mutation unknown).
    #[error("{0}")]
    Fault(String),
    /// The backend cannot start here, with its own coded diagnostic (e.g. `FS0601`: no binjgb
    /// core in this build, `FS0811`: Dolphin is not installed), which the session passes to
    /// the user whole.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Refused(Refusal),
}

impl BackendError {
    /// An unsupported method or capability.
    pub fn unsupported(what: impl Into<String>) -> Self {
        Self::Unsupported { what: what.into() }
    }

    /// A refusal to start that keeps `diagnostic`'s code, help and labels.
    pub fn refused(diagnostic: impl Diagnostic + Send + Sync + 'static) -> Self {
        Self::Refused(Refusal::new(diagnostic))
    }
}

/// A component's own coded diagnostic (a backend that cannot start, a run sink that cannot
/// write), carried whole through layers that do not know its type, shared so errors stay cheap
/// to clone. Two refusals are equal when their codes and messages are.
#[derive(Clone)]
pub struct Refusal(Arc<dyn Diagnostic + Send + Sync>);

impl Refusal {
    /// Wraps `diagnostic`, keeping its code, help and labels.
    pub fn new(diagnostic: impl Diagnostic + Send + Sync + 'static) -> Self {
        Self(Arc::new(diagnostic))
    }

    /// Shares `diagnostic` with whoever else holds it (a caller that wants its typed error
    /// back once the refusal is gone).
    #[must_use]
    pub fn shared(diagnostic: Arc<dyn Diagnostic + Send + Sync>) -> Self {
        Self(diagnostic)
    }

    /// The diagnostic's code, if it has one.
    #[must_use]
    pub fn code_string(&self) -> Option<String> {
        self.0.code().map(|c| c.to_string())
    }
}

impl std::fmt::Debug for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&*self.0, f)
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&*self.0, f)
    }
}

impl PartialEq for Refusal {
    fn eq(&self, other: &Self) -> bool {
        self.code_string() == other.code_string() && self.to_string() == other.to_string()
    }
}

impl Eq for Refusal {}

impl std::error::Error for Refusal {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl Diagnostic for Refusal {
    fn code<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        self.0.code()
    }
    fn severity(&self) -> Option<miette::Severity> {
        self.0.severity()
    }
    fn help<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        self.0.help()
    }
    fn url<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        self.0.url()
    }
    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.0.source_code()
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        self.0.labels()
    }
    fn related<'a>(&'a self) -> Option<Box<dyn Iterator<Item = &'a dyn Diagnostic> + 'a>> {
        self.0.related()
    }
    fn diagnostic_source(&self) -> Option<&dyn Diagnostic> {
        self.0.diagnostic_source()
    }
}

/// Everything `Environment.Initialize` hands a backend.
#[derive(Debug, Clone)]
pub struct EnvironmentSetup {
    /// The episode.
    pub episode_id: Id,
    /// Which agent drives which port.
    pub port_bindings: Vec<PortBinding>,
}

/// One native frame of one declared view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The declared view (or, for inspection artifacts, the artifact's name).
    pub view_id: Id,
    /// Its bytes: RGBA8, `rowStride * height` long, for a view. Shared with the artifact that
    /// publishes it, never copied: a backend whose picture did not change may hand out the
    /// same buffer again.
    pub bytes: Arc<Vec<u8>>,
}

/// Bulk inspection data published as an artifact beside the inspection value (e.g. a memory
/// image), under `name`. The bytes are shared with the artifact, never copied: a backend that
/// keeps a clone can refill the same buffer on a later step once every artifact made from it is
/// gone (`Arc::get_mut` succeeds only then), instead of allocating one every step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InspectionArtifact {
    /// The artifact's name.
    pub name: Id,
    /// Its bytes.
    pub bytes: Arc<Vec<u8>>,
}

/// A world: what an environment worker runs.
pub trait EnvironmentBackend: Send {
    /// The fixed identity and shape (ports in descriptor order, views, inspection schema, step
    /// duration, recovery and determinism).
    fn descriptor(&self) -> &EnvironmentDescriptor;

    /// Sets the episode up and stops at boundary 0.
    ///
    /// # Errors
    ///
    /// [`BackendError`].
    fn initialize(&mut self, setup: &EnvironmentSetup) -> Result<(), BackendError>;

    /// Applies one complete batch (validated against the descriptor, in descriptor port order)
    /// and advances exactly one framework step.
    ///
    /// # Errors
    ///
    /// [`BackendError`]; after a partial step, [`BackendError::Fault`].
    fn advance(&mut self, controls: &[PortControl]) -> Result<(), BackendError>;

    /// The native frames of the current boundary, one per declared view, in descriptor order.
    fn frames(&self) -> Vec<Frame>;

    /// The inspection value of the current boundary (the descriptor's inspection schema).
    ///
    /// # Errors
    ///
    /// [`BackendError`].
    fn inspection(&self) -> Result<TypedValue, BackendError>;

    /// Bulk inspection data carried as artifacts beside the inspection value (e.g. a memory
    /// image); none by default. Called once per boundary, after [`inspection`](Self::inspection).
    fn inspection_artifacts(&mut self) -> Vec<InspectionArtifact> {
        Vec::new()
    }

    /// The backend's own frame counter, if it has one.
    fn engine_frame(&self) -> Option<String> {
        None
    }

    /// Units of work done so far (steps run): added to `Status.progressCounter`.
    fn work(&self) -> u64 {
        0
    }

    /// Whether every call returns within microseconds (see [`crate::AgentModel::quick`]): the
    /// shell then computes without a hand-off to another thread. An emulator keeps `false`.
    fn quick(&self) -> bool {
        false
    }

    /// `State.Capture`: the committed world's bytes.
    ///
    /// # Errors
    ///
    /// [`BackendError::Unsupported`] unless the backend checkpoints.
    fn capture(&self) -> Result<Vec<u8>, BackendError> {
        Err(BackendError::unsupported(Method::StateCapture.as_str()))
    }

    /// `State.StageRestore`: validates replacement state without installing it.
    ///
    /// # Errors
    ///
    /// [`BackendError::Unsupported`] unless the backend checkpoints.
    fn stage_restore(&mut self, _payload: &[u8]) -> Result<(), BackendError> {
        Err(BackendError::unsupported(
            Method::StateStageRestore.as_str(),
        ))
    }

    /// `State.ActivateRestore`: installs the staged state, stopped at its boundary.
    ///
    /// # Errors
    ///
    /// [`BackendError::Unsupported`] unless the backend checkpoints.
    fn activate_restore(&mut self) -> Result<(), BackendError> {
        Err(BackendError::unsupported(
            Method::StateActivateRestore.as_str(),
        ))
    }
}
