//! Why a run, resume or replay did not end as asked: the session's refusal or failure, the run
//! directory's, a replay that reproduced another run digest, or a regeneration that could not
//! reproduce the recorded rows or frames.

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
    /// A regeneration was asked for boundaries the run did not record.
    #[error("{run_id} records boundaries 0..={steps}; {from}..={to} is not among them")]
    #[diagnostic(
        code("FS0930"),
        help("ask for a range A..B with A <= B within the run's committed steps")
    )]
    OutsideRun {
        /// The run.
        run_id: String,
        /// The first boundary asked for.
        from: u64,
        /// The last boundary asked for.
        to: u64,
        /// The run's last committed boundary.
        steps: u64,
    },
    /// A regeneration was asked for frames of a run whose rows record no view (the counter
    /// arena has none).
    #[error(
        "{run_id} records no view in the boundaries asked for: there are no frames to regenerate"
    )]
    #[diagnostic(
        code("FS0931"),
        help("only a run of a world with views (a game) has frames; the counter arena has none")
    )]
    NoViews {
        /// The run.
        run_id: String,
    },
    /// A regenerated row is not the recorded one.
    #[error(
        "regenerating {run_id}: boundary {boundary} differs from the recorded row (first in `{field}`)"
    )]
    #[diagnostic(
        code("FS0932"),
        help(
            "this build or its assets cannot reproduce the recorded run (the run directory is damaged, or another build's); nothing regenerated from it can be trusted"
        )
    )]
    RowDiffers {
        /// The run.
        run_id: String,
        /// The first boundary whose row differs.
        boundary: u64,
        /// The first field of the row that differs.
        field: &'static str,
    },
    /// A regenerated frame is not the one whose digest the trace records.
    #[error(
        "regenerating {run_id}: the frame of `{view}` at boundary {boundary} is not the recorded one: {detail}"
    )]
    #[diagnostic(
        code("FS0933"),
        help(
            "this build or its assets cannot reproduce the recorded frames; nothing was written for this frame or after it"
        )
    )]
    FrameDiffers {
        /// The run.
        run_id: String,
        /// The boundary of the frame.
        boundary: u64,
        /// The view.
        view: String,
        /// How it differs.
        detail: String,
    },
}

impl From<SessionError> for RunError {
    fn from(e: SessionError) -> Self {
        Self::Session(Box::new(e))
    }
}
