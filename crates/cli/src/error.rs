//! The errors a command can end with, each with a registered code or a contract refusal.

use std::path::PathBuf;

use flysim_compose::{AssetError, Diag};
use flysim_run::RunError;
use flysim_session::SessionError;
use flysim_store::StoreError;
use flysim_types::ContractError;
use miette::{Diagnostic, NamedSource};
use thiserror::Error;

use crate::exit;

/// Why a command failed.
#[derive(Debug, Error, Diagnostic)]
pub(crate) enum CliError {
    /// The live view of a watched run could not start.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Gateway(#[from] flysim_gateway::GatewayError),
    /// A contract refusal of a value given on the command line.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Contract(#[from] ContractError),
    /// A contract refusal of a document, with its source for a labelled span.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Document(Box<DocumentError>),
    /// A checkpoint envelope was refused.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Checkpoint(Box<flysim_types::checkpoint::EnvelopeError>),
    /// An environment backend refused.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Backend(Box<flysim_binjgb::BinjgbError>),
    /// The Dolphin backend refused or failed.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Dolphin(Box<flysim_dolphin::DolphinError>),
    /// The brain crate refused a connectome, table or profile.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Brain(Box<flysim_brain::BrainError>),
    #[error("cannot read {path}: {error}")]
    #[diagnostic(code("FS0901"))]
    ReadInput {
        path: PathBuf,
        error: std::io::Error,
        /// What to check, or the path meant when a near one exists.
        #[help]
        help: String,
    },
    #[error("no diagnostic code {requested:?} is registered")]
    #[diagnostic(
        code("FS0902"),
        help("`flysim explain --list` shows every registered code")
    )]
    UnknownCode { requested: String },
    #[error("cannot write {path}: {error}")]
    #[diagnostic(code("FS0903"), help("choose a writable location"))]
    WriteOutput {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("no contract type is named {name:?}")]
    #[diagnostic(
        code("FS0904"),
        help(
            "`flysim schema --list` shows every name (`plan` is short for `launch-plan`); compositions are KDL, not JSON: docs/compositions.md describes them and `flysim validate` checks them"
        )
    )]
    UnknownKind { name: String },
    /// A composition with problems: every one of them, sorted by position.
    #[error("{name}: {} problem(s)", diags.len())]
    Composition { name: String, diags: Vec<Diag> },
    /// A registry operation failed.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Assets(#[from] AssetError),
    /// `assets verify` found corrupt entries.
    #[error("{} corrupt registry entr(ies)", corrupt.len())]
    Corrupt { corrupt: Vec<AssetError> },
    /// A session refused to start or failed.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Session(Box<flysim_session::SessionError>),
    /// A run directory could not be written or read.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Store(#[from] flysim_store::StoreError),
    /// A replay reproduced another run digest (`FS0404`), or a regeneration could not
    /// reproduce the recorded rows or frames (`FS093x`).
    #[error(transparent)]
    #[diagnostic(transparent)]
    Replay(Box<RunError>),
    #[error(
        "there is no place for the asset registry: none of FLYSIM_HOME, XDG_DATA_HOME, HOME is set"
    )]
    #[diagnostic(
        code("FS0905"),
        help("set FLYSIM_HOME to a directory; the registry lives in $FLYSIM_HOME/assets")
    )]
    NoRegistry,
    #[error("cannot read {path}: it is {kind}, not a regular file")]
    #[diagnostic(code("FS0906"), help("name a regular file; `-` reads standard input"))]
    NotAFile { path: PathBuf, kind: &'static str },
    #[error("cannot read {path}: it is larger than the limit of {limit} bytes")]
    #[diagnostic(
        code("FS0907"),
        help(
            "flysim reads an input whole, up to 1 GiB (16 MiB for a composition); check that this is the file you meant"
        )
    )]
    InputTooLarge { path: PathBuf, limit: u64 },
    #[error("cannot write standard output: {error}")]
    #[diagnostic(
        code("FS0908"),
        help(
            "the output is lost: free space on the device standard output goes to, or redirect it elsewhere"
        )
    )]
    WriteStdout { error: std::io::Error },
    #[error("refusing to write the plan over its own composition {path}")]
    #[diagnostic(code("FS0909"), help("choose another output file"))]
    OverwritesInput { path: PathBuf },
    #[error("{steps} steps is more than the {limit} this command shows")]
    #[diagnostic(code("FS0910"), help("ask for fewer steps"))]
    TooManySteps { steps: u32, limit: u32 },
    #[error("{path} is neither a subcommand nor a composition")]
    #[diagnostic(
        code("FS0912"),
        help(
            "`flysim FILE` runs FILE when it is a composition (KDL that starts with `flysim-composition 1`); `flysim --help` lists the subcommands"
        )
    )]
    NotAComposition { path: PathBuf },
    #[error("{flag} {value}: {reason}")]
    #[diagnostic(
        code("FS0911"),
        help(
            "write a duration as a number and a unit: `16.7ms`, `16666667ns`, `1/60s`, `250us` (units ns, us, ms, s); a bare integer or `N/D` is nanoseconds"
        )
    )]
    BadDuration {
        flag: &'static str,
        value: String,
        reason: String,
    },
    #[error("no spike raster of {run_id}: {reason}")]
    #[diagnostic(
        code("FS0934"),
        help(
            "a spike raster shows the spikes of a LIF agent, regenerated by re-executing the run: it needs a run with one, and a window A..B of its steps with A < B"
        )
    )]
    NoSpikes { run_id: String, reason: String },
    #[error("{path} declares no sweep")]
    #[diagnostic(
        code("FS0935"),
        help(
            "a sweep is a `sweep {{ ... }}` block in the composition, e.g. `sweep {{ master-seed from=0 to=9 }}` (docs/compositions.md); one run with another seed is `flysim run FILE --master-seed N`"
        )
    )]
    NoSweep { path: PathBuf },
    /// A sweep directory refused.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Sweep(Box<flysim_run::sweep::SweepError>),
}

impl CliError {
    /// The process exit code for this failure: one exhaustive match, so a new error variant
    /// anywhere below is a compile error here until it is given its code.
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            Self::Contract(_)
            | Self::Document(_)
            | Self::UnknownCode { .. }
            | Self::UnknownKind { .. }
            | Self::Composition { .. }
            | Self::Brain(_)
            | Self::NoRegistry
            | Self::OverwritesInput { .. }
            | Self::TooManySteps { .. }
            | Self::BadDuration { .. }
            | Self::NoSpikes { .. }
            | Self::NoSweep { .. }
            | Self::NotAComposition { .. } => exit::INPUT_REFUSED,
            Self::Backend(e) => match **e {
                flysim_binjgb::BinjgbError::Absent { .. } => exit::UNAVAILABLE,
                flysim_binjgb::BinjgbError::RomRejected { .. }
                | flysim_binjgb::BinjgbError::StateRejected { .. }
                | flysim_binjgb::BinjgbError::RomBankOutOfRange { .. }
                | flysim_binjgb::BinjgbError::CartridgeIndexOutOfRange { .. }
                | flysim_binjgb::BinjgbError::ExtRamBankOutOfRange { .. }
                | flysim_binjgb::BinjgbError::RamBankOutOfRange { .. }
                | flysim_binjgb::BinjgbError::StateFieldOutOfRange { .. }
                | flysim_binjgb::BinjgbError::StateModelMismatch { .. } => exit::INPUT_REFUSED,
            },
            Self::Dolphin(e) => dolphin_exit(e),
            Self::Assets(e) => match e {
                AssetError::Io { .. } | AssetError::NotAFile { .. } => exit::IO_FAILURE,
                AssetError::Corrupt { .. }
                | AssetError::IdConflict { .. }
                | AssetError::UnknownId { .. } => exit::INPUT_REFUSED,
            },
            Self::Gateway(_) => exit::IO_FAILURE,
            Self::ReadInput { .. }
            | Self::WriteOutput { .. }
            | Self::NotAFile { .. }
            | Self::InputTooLarge { .. }
            | Self::WriteStdout { .. } => exit::IO_FAILURE,
            Self::Corrupt { .. } | Self::Checkpoint(_) => exit::DAMAGE_FOUND,
            Self::Session(e) => session_exit(e),
            Self::Store(e) => store_exit(e),
            Self::Sweep(e) => sweep_exit(e),
            Self::Replay(e) => match &**e {
                RunError::DigestMismatch { .. }
                | RunError::RowDiffers { .. }
                | RunError::FrameDiffers { .. } => exit::DIGEST_MISMATCH,
                RunError::OutsideRun { .. } | RunError::NoViews { .. } => exit::INPUT_REFUSED,
                RunError::Session(e) => session_exit(e),
                RunError::Store(e) => store_exit(e),
                RunError::Contract(_) => exit::INPUT_REFUSED,
            },
        }
    }

    /// The diagnostics to render: each problem of a composition, each corrupt entry, or this.
    pub(crate) fn diagnostics(&self) -> Vec<&dyn Diagnostic> {
        match self {
            Self::Composition { diags, .. } => diags.iter().map(|d| d as &dyn Diagnostic).collect(),
            Self::Corrupt { corrupt } => corrupt.iter().map(|d| d as &dyn Diagnostic).collect(),
            other => vec![other as &dyn Diagnostic],
        }
    }

    /// A closing line after the diagnostics, when there are several of them.
    pub(crate) fn summary(&self) -> Option<String> {
        match self {
            Self::Composition { name, diags } => Some(format!(
                "{name}: {} problem{} found\n",
                diags.len(),
                if diags.len() == 1 { "" } else { "s" }
            )),
            Self::Corrupt { corrupt } => Some(format!(
                "{} corrupt registry entr{}\n",
                corrupt.len(),
                if corrupt.len() == 1 { "y" } else { "ies" }
            )),
            _ => None,
        }
    }

    /// A session refusal or failure.
    pub(crate) fn session(e: SessionError) -> Self {
        Self::Session(Box::new(e))
    }

    /// A document refusal that can point into `text`.
    pub(crate) fn document(error: ContractError, name: &str, bytes: &[u8]) -> Self {
        let text = String::from_utf8_lossy(bytes).into_owned();
        Self::Document(Box::new(DocumentError {
            error,
            source_code: NamedSource::new(name, text),
        }))
    }
}

impl From<RunError> for CliError {
    fn from(e: RunError) -> Self {
        match e {
            RunError::Session(e) => Self::Session(e),
            RunError::Store(e) => Self::Store(e),
            RunError::Contract(e) => Self::Contract(e),
            e @ (RunError::DigestMismatch { .. }
            | RunError::OutsideRun { .. }
            | RunError::NoViews { .. }
            | RunError::RowDiffers { .. }
            | RunError::FrameDiffers { .. }) => Self::Replay(Box::new(e)),
        }
    }
}

/// The exit code of a session's refusal or failure.
fn session_exit(e: &SessionError) -> u8 {
    match e {
        SessionError::Unavailable { .. } | SessionError::BackendRefused(_) => exit::UNAVAILABLE,
        SessionError::ThreadBudget { .. } | SessionError::ModeTransport => exit::INPUT_REFUSED,
        SessionError::Sink(_) => exit::IO_FAILURE,
        SessionError::Refused { .. }
        | SessionError::Uncertain { .. }
        | SessionError::Identity { .. }
        | SessionError::InvalidPhase { .. }
        | SessionError::IncarnationChanged { .. }
        | SessionError::ParticipantLost { .. }
        | SessionError::Launch { .. }
        | SessionError::Contract { .. }
        | SessionError::Checkpoint { .. }
        | SessionError::Fenced { .. }
        | SessionError::ViewDigestMissing { .. } => exit::RUN_FAILED,
    }
}

impl From<flysim_run::sweep::SweepError> for CliError {
    fn from(e: flysim_run::sweep::SweepError) -> Self {
        Self::Sweep(Box::new(e))
    }
}

/// The exit code of a sweep directory's refusal.
fn sweep_exit(e: &flysim_run::sweep::SweepError) -> u8 {
    use flysim_run::sweep::SweepError as S;
    match e {
        S::ForeignPlan { .. } => exit::DIGEST_MISMATCH,
        S::NotThisSweep { .. } | S::NoMember { .. } => exit::INPUT_REFUSED,
        S::Store(e) => store_exit(e),
        S::Contract(_) => exit::INPUT_REFUSED,
    }
}

/// The exit code of a run directory's refusal or failure.
fn store_exit(e: &StoreError) -> u8 {
    match e {
        StoreError::Write { .. }
        | StoreError::Unreadable { .. }
        | StoreError::NotDurable { .. }
        | StoreError::ManifestUnwritten { .. } => exit::IO_FAILURE,
        StoreError::NoCheckpoint { .. } | StoreError::Locked { .. } => exit::INPUT_REFUSED,
        StoreError::Damaged { .. }
        | StoreError::Checkpoint { .. }
        | StoreError::Generation { .. } => exit::DAMAGE_FOUND,
    }
}

/// The exit code of the Dolphin backend's refusal or failure.
fn dolphin_exit(e: &flysim_dolphin::DolphinError) -> u8 {
    use flysim_dolphin::DolphinError as D;
    match e {
        D::BinaryUnusable { .. } | D::ProgramBuild { .. } => exit::UNAVAILABLE,
        D::VersionMismatch { .. }
        | D::ContentMismatch { .. }
        | D::ConfigInvalid { .. }
        | D::HelperFailed { .. }
        | D::LostLockstep { .. }
        | D::Failed { .. }
        | D::CheckpointRefused { .. }
        | D::Unsupported { .. }
        | D::ToolMissing { .. }
        | D::PlanRefused { .. }
        | D::Control(_) => exit::INPUT_REFUSED,
    }
}

/// A refusal of a document, rendered with the document's text so its span shows.
#[derive(Debug, Error)]
#[error("{error}")]
pub(crate) struct DocumentError {
    error: ContractError,
    source_code: NamedSource<String>,
}

impl Diagnostic for DocumentError {
    fn code<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        Diagnostic::code(&self.error)
    }
    fn help<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        Diagnostic::help(&self.error)
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        Diagnostic::labels(&self.error)
    }
    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(&self.source_code)
    }
}
