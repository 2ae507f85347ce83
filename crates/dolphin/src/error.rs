//! Why the Dolphin backend refused or failed, one variant per diagnostic code (`FS08xx`).

use flysim_types::ContractError;
use miette::Diagnostic;
use thiserror::Error;

/// A refusal or failure of the Dolphin backend.
#[derive(Debug, Clone, PartialEq, Eq, Error, Diagnostic)]
pub enum DolphinError {
    /// The configured Dolphin (or Xvfb) binary cannot be run.
    #[error("cannot run {path}: {reason}")]
    #[diagnostic(
        code("FS0801"),
        help(
            "install Dolphin (`apt-get install dolphin-emu xvfb`, or nixpkgs' `dolphin-emu`) and give its absolute path in the backend configuration"
        )
    )]
    BinaryUnusable {
        /// The binary.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// The binary's `--version` is not the pinned one.
    #[error("Dolphin reports version {found:?}, the backend configuration pins {expected:?}")]
    #[diagnostic(
        code("FS0802"),
        help(
            "use the pinned build, or pin the version your build prints after checking it with the conformance tests (docs/dolphin.md)"
        )
    )]
    VersionMismatch {
        /// The pinned `--version` line.
        expected: String,
        /// What the binary printed.
        found: String,
    },
    /// The content file is missing or its SHA-256 differs from the pinned digest.
    #[error("the content {path} does not match its pinned digest: {reason}")]
    #[diagnostic(
        code("FS0803"),
        help("point the configuration at the exact disc image or program whose SHA-256 it pins")
    )]
    ContentMismatch {
        /// The content path.
        path: String,
        /// What differs.
        reason: String,
    },
    /// The backend configuration breaks a rule.
    #[error("invalid Dolphin backend configuration at `{field}`: {reason}")]
    #[diagnostic(
        code("FS0804"),
        help("see docs/dolphin.md for the fields of dolphin-backend-config-v1 and their rules")
    )]
    ConfigInvalid {
        /// The offending field.
        field: String,
        /// The rule it breaks.
        reason: String,
    },
    /// The helper (Xvfb, Dolphin, a pipe, the socket or a save state) failed or timed out.
    #[error("the Dolphin helper failed: {what}")]
    #[diagnostic(
        code("FS0805"),
        help(
            "the scratch directory keeps Dolphin's own log (dolphin.log); check that Xvfb works and that the process may read its child's memory"
        )
    )]
    HelperFailed {
        /// What failed.
        what: String,
    },
    /// A step did not run exactly one field, or the world moved between steps.
    #[error("the world left lockstep: {reason}")]
    #[diagnostic(
        code("FS0806"),
        help(
            "the content must present a new frame every field; a step covering several fields is an error, never a result"
        )
    )]
    LostLockstep {
        /// What was observed.
        reason: String,
    },
    /// An earlier failure left the world in an unknown state.
    #[error("the world failed earlier and accepts no further operation: {cause}")]
    #[diagnostic(
        code("FS0807"),
        help("drop the world and start a new one (or restore a checkpoint into a new one)")
    )]
    Failed {
        /// The first failure.
        cause: String,
    },
    /// A checkpoint that does not belong to this world.
    #[error("the checkpoint cannot be restored here: {reason}")]
    #[diagnostic(
        code("FS0808"),
        help(
            "a checkpoint restores only into a world of the same Dolphin version, content and watch list"
        )
    )]
    CheckpointRefused {
        /// Why.
        reason: String,
    },
    /// The project's GameCube test program could not be built.
    #[error("cannot build the GameCube test program: {reason}")]
    #[diagnostic(
        code("FS0809"),
        help("install Debian's `gcc-powerpc-linux-gnu binutils-powerpc-linux-gnu`")
    )]
    ProgramBuild {
        /// Why.
        reason: String,
    },
    /// The mode of this world cannot do the operation.
    #[error("a Dolphin world in {mode} mode cannot {operation}")]
    #[diagnostic(
        code("FS0810"),
        help(
            "only the Qt mode (under Xvfb) steps and checkpoints; nogui mode free-runs and restarts episodes"
        )
    )]
    Unsupported {
        /// The mode.
        mode: &'static str,
        /// The refused operation.
        operation: &'static str,
    },
    /// Dolphin or Xvfb, which a Dolphin environment needs, is not installed.
    #[error("the Dolphin environment cannot run here: not installed: {missing}")]
    #[diagnostic(
        code("FS0811"),
        help(
            "install them (`apt-get install dolphin-emu xvfb`, or nixpkgs' `dolphin-emu` and `xorg.xvfb`)"
        )
    )]
    ToolMissing {
        /// What is missing, e.g. `dolphin-emu`, `Xvfb`.
        missing: String,
    },
    /// A plan's environment that the Dolphin environment cannot run.
    #[error("the plan's environment does not fit the Dolphin backend at `{field}`: {reason}")]
    #[diagnostic(
        code("FS0812"),
        help(
            "a Dolphin environment pins `version \"5.0-17995\"`, names its ports p1 to p4 with GameCube pad buttons and axes, and runs content of a known format; see compositions/dolphin.kdl and docs/dolphin.md"
        )
    )]
    PlanRefused {
        /// The offending part of the plan's environment.
        field: String,
        /// Why.
        reason: String,
    },
    /// A controller batch the contract refuses.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Control(#[from] ContractError),
}

impl DolphinError {
    /// The registered code of this error, `FSnnnn`.
    #[must_use]
    pub fn code_str(&self) -> String {
        Diagnostic::code(self)
            .map(|c| c.to_string())
            .unwrap_or_default()
    }

    pub(crate) fn helper(what: impl Into<String>) -> Self {
        Self::HelperFailed { what: what.into() }
    }

    pub(crate) fn config(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::ConfigInvalid {
            field: field.into(),
            reason: reason.into(),
        }
    }
}
