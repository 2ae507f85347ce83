//! The refusals of the brain crate, one variant per diagnostic code (`FS07xx`).
//!
//! Profile documents are contract-style JSON: their shape refusals are the `FS01xx` codes of
//! [`ContractError`], carried here unchanged.

use flysim_types::ContractError;
use miette::Diagnostic;
use thiserror::Error;

/// Why the brain crate refused something.
#[derive(Debug, Clone, PartialEq, Eq, Error, Diagnostic)]
#[non_exhaustive]
pub enum BrainError {
    /// The bytes do not start like a connectome file.
    #[error("not a flysim connectome file: {reason}")]
    #[diagnostic(
        code("FS0701"),
        help(
            "a connectome file starts with the magic `FLYCSR\\0\\x1a`; make one by importing the connectome's tables"
        )
    )]
    NotAConnectome {
        /// What was found instead.
        reason: String,
    },
    /// A connectome file of a format version this build does not read.
    #[error("connectome format version {version} is not supported (this build reads version 1)")]
    #[diagnostic(code("FS0702"), help("re-import the source data with this build"))]
    UnsupportedVersion {
        /// The version in the header.
        version: u32,
    },
    /// The SHA-256 trailer does not match the bytes before it.
    #[error(
        "connectome file is corrupt: its SHA-256 trailer is {stored}, the content hashes to {computed}"
    )]
    #[diagnostic(
        code("FS0703"),
        help("the file was truncated or altered after it was written; copy or import it again")
    )]
    ChecksumMismatch {
        /// The trailer's digest.
        stored: String,
        /// The digest of the bytes before the trailer.
        computed: String,
    },
    /// A connectome whose sections or CSR break the format's rules.
    #[error("malformed connectome: {reason}")]
    #[diagnostic(
        code("FS0704"),
        help(
            "the file's checksum is intact, so the writer broke a format rule; re-import the source data"
        )
    )]
    MalformedConnectome {
        /// The rule broken.
        reason: String,
    },
    /// An input cell or row an importer cannot read.
    #[error("{source_name}{}: {reason}", position(*.line, *.column))]
    #[diagnostic(
        code("FS0710"),
        help("docs/brain.md lists the columns each importer reads")
    )]
    ImportSyntax {
        /// The input's name.
        source_name: String,
        /// The 1-based line (0 when the problem is the input as a whole).
        line: u64,
        /// The 1-based column (0 when the problem is the row as a whole).
        column: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// Input rows that read well but contradict each other or the format's limits.
    #[error("{source_name}{}: {reason}", position(*.line, *.column))]
    #[diagnostic(
        code("FS0711"),
        help("fix the source table; the importer refuses rather than guess")
    )]
    ImportInconsistent {
        /// The input's name.
        source_name: String,
        /// The 1-based line (0 when the problem is the table as a whole).
        line: u64,
        /// The 1-based column (0 when the problem is the row as a whole).
        column: u64,
        /// The contradiction.
        reason: String,
    },
    /// A Parquet table given to a build without the Parquet reader (the Cargo feature
    /// `parquet` of this crate).
    #[error("{source_name} is a Parquet file, and this build has no Parquet reader")]
    #[diagnostic(code("FS0712"))]
    ParquetUnavailable {
        /// The input's name.
        source_name: String,
        /// How to get a build that reads it, or what to do instead; the caller, which knows how
        /// it was built, may replace it.
        #[help]
        help: String,
    },
    /// A profile that does not fit its connectome.
    #[error("profile does not fit its connectome at `{path}`: {reason}")]
    #[diagnostic(
        code("FS0720"),
        help("regenerate the profile against this connectome, or load the connectome it names")
    )]
    ProfileMismatch {
        /// Where in the profile.
        path: String,
        /// The contradiction.
        reason: String,
    },
    /// A stimulus kind the profile does not declare.
    #[error("stimulus kind `{kind}` is not declared by the profile (declared: {declared})")]
    #[diagnostic(code("FS0721"), help("use one of the profile's `stimuli` kinds"))]
    UnsupportedStimulus {
        /// The requested kind.
        kind: String,
        /// The declared kinds, comma-separated.
        declared: String,
    },
    /// An input frame the retina cannot read.
    #[error("input frame refused: {reason}")]
    #[diagnostic(
        code("FS0722"),
        help("frames are RGBA8, row-major, exactly the profile's retina width x height")
    )]
    FrameRefused {
        /// Why.
        reason: String,
    },
    /// A model configuration outside the allowed range.
    #[error("invalid model configuration: {reason}")]
    #[diagnostic(code("FS0723"), help("worker threads are 1 to 4096"))]
    InvalidConfiguration {
        /// Why.
        reason: String,
    },
    /// Snapshot bytes that are not an intact brain snapshot.
    #[error("brain snapshot refused: {reason}")]
    #[diagnostic(
        code("FS0730"),
        help("restore only bytes produced by `capture()` of this build, unaltered")
    )]
    SnapshotCorrupt {
        /// Why.
        reason: String,
    },
    /// An intact snapshot of a different model.
    #[error("brain snapshot belongs to another model: {reason}")]
    #[diagnostic(
        code("FS0731"),
        help("restore a snapshot into a model built from the same profile and connectome")
    )]
    SnapshotMismatch {
        /// Which identity differs.
        reason: String,
    },
    /// An intact snapshot of this model whose values no run of it reaches.
    #[error("brain snapshot holds a state this model never reaches: {reason}")]
    #[diagnostic(
        code("FS0732"),
        help(
            "the snapshot is sealed and of this model, but a value was altered before it was sealed; restore an unaltered capture"
        )
    )]
    SnapshotOutOfRange {
        /// Which value, and why no run reaches it.
        reason: String,
    },
    /// A profile document the contract rules refuse.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Contract(#[from] ContractError),
}

/// `:line:column` of an import refusal, without the parts that are 0 (the whole table or row).
fn position(line: u64, column: u64) -> String {
    match (line, column) {
        (0, _) => String::new(),
        (l, 0) => format!(":{l}"),
        (l, c) => format!(":{l}:{c}"),
    }
}

impl BrainError {
    /// The code of this refusal, e.g. `"FS0703"`.
    #[must_use]
    pub fn code_str(&self) -> String {
        Diagnostic::code(self)
            .map(|c| c.to_string())
            .unwrap_or_default()
    }

    pub(crate) fn malformed(reason: impl Into<String>) -> Self {
        Self::MalformedConnectome {
            reason: reason.into(),
        }
    }

    pub(crate) fn out_of_range(reason: impl Into<String>) -> Self {
        Self::SnapshotOutOfRange {
            reason: reason.into(),
        }
    }

    pub(crate) fn mismatch(path: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::ProfileMismatch {
            path: path.into(),
            reason: reason.into(),
        }
    }
}
