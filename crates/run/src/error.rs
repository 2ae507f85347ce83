//! Why a run, resume or replay did not end as asked: the session's refusal or failure, the run
//! directory's, or a replay that reproduced another run digest.

use flysim_session::SessionError;
use flysim_store::StoreError;
use flysim_types::{ContractError, Digest};
use miette::Diagnostic;
use thiserror::Error;

/// Why a run did not end as asked.
#[derive(Debug, Error, Diagnostic)]
pub enum RunError {
    /// The session refused to start, or its epoch failed (the run directory keeps what was
    /// committed and a `failed` manifest).
    #[error(transparent)]
    #[diagnostic(transparent)]
    Session(Box<SessionError>),
    /// The run directory could not be written or read back, or a checkpoint generation is
    /// missing or damaged.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Store(#[from] StoreError),
    /// A value could not be written in its canonical form.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Contract(#[from] ContractError),
    /// A replay reproduced another run digest than the recorded (or asserted) one.
    #[error(
        "replay of {run_id} gives runDigest=sha256:{found}, expected runDigest=sha256:{expected}"
    )]
    #[diagnostic(
        code("FS0404"),
        help(
            "the build no longer reproduces the recorded behaviour (or the expected digest is another run's); compare the traces row by row"
        )
    )]
    DigestMismatch {
        /// The replayed run.
        run_id: String,
        /// The digest the run directory records (or the one asserted).
        expected: Digest,
        /// The digest the replay produced.
        found: Digest,
    },
}

impl From<SessionError> for RunError {
    fn from(e: SessionError) -> Self {
        Self::Session(Box::new(e))
    }
}
