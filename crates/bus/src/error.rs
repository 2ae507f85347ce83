//! The errors of the bus library, each with a registered `FS05xx` code.

use std::path::PathBuf;

use flysim_types::json::JsonError;
use miette::Diagnostic;
use thiserror::Error;

use crate::wire::{Dispatch, ErrorCode};

/// A frame or envelope refused by the wire rules (contracts §3.2). The connection that sent it is
/// closed; no other connection is affected.
#[derive(Debug, Clone, PartialEq, Eq, Error, Diagnostic)]
#[non_exhaustive]
pub enum WireError {
    /// A length prefix of zero or above 65536; nothing was allocated for it.
    #[error("frame length {length} is outside 1..=65536")]
    #[diagnostic(
        code("FS0501"),
        help(
            "a Flybus frame is a u32 little-endian length and 1 to 65536 bytes of JSON; large bytes travel as artifacts"
        )
    )]
    FrameLength {
        /// The length the prefix announced.
        length: u64,
    },
    /// The frame body is not strict JSON.
    #[error("the envelope is not strict JSON: {0}")]
    #[diagnostic(
        code("FS0502"),
        help(
            "envelopes are strict JSON objects: no duplicate keys, no trailing data, valid UTF-8"
        )
    )]
    Json(JsonError),
    /// The envelope breaks a field rule.
    #[error("invalid envelope: {reason}")]
    #[diagnostic(
        code("FS0502"),
        help(
            "an envelope has exactly protocol, major, minor, id, replyTo, kind, op, body and attachments"
        )
    )]
    Invalid {
        /// The broken rule.
        reason: String,
    },
}

impl WireError {
    pub(crate) fn invalid(reason: impl Into<String>) -> Self {
        Self::Invalid {
            reason: reason.into(),
        }
    }
}

/// What a bus operation can end with.
#[derive(Debug, Error, Diagnostic)]
#[non_exhaustive]
pub enum BusError {
    /// A frame or envelope from the peer broke the wire rules.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Wire(#[from] WireError),
    /// The router announced another bus contract digest.
    #[error("the router speaks bus contract {router}, this client speaks {client}")]
    #[diagnostic(
        code("FS0503"),
        help("build the router and every client from the same flysim version")
    )]
    ContractMismatch {
        /// The router's digest.
        router: String,
        /// This client's digest.
        client: String,
    },
    /// The router refused a command, or a call failed after admission.
    #[error("{op} failed with {code} ({}): {message}", dispatch.as_str())]
    #[diagnostic(
        code("FS0504"),
        help("the bus code says why; `dispatch` says whether a handler may have run")
    )]
    Refused {
        /// The command or call method.
        op: String,
        /// The bus error code.
        code: ErrorCode,
        /// The router's message.
        message: String,
        /// Whether the handler may have run (calls only; `not-dispatched` otherwise).
        dispatch: Dispatch,
    },
    /// The connection to the router is gone.
    #[error("the connection to the router is lost: {reason}")]
    #[diagnostic(
        code("FS0505"),
        help("every handle of this client is void; reconnect with a new client incarnation")
    )]
    RouterLost {
        /// Why, as far as this side knows.
        reason: String,
    },
    /// A location grant names a path outside the store.
    #[error("artifact location {path:?} refused: {reason}")]
    #[diagnostic(
        code("FS0506"),
        help("locations are relative to the store root, without `..`, and never through a link")
    )]
    LocationRefused {
        /// The relative path.
        path: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// The artifact store could not be read or written.
    #[error("artifact store: cannot {action} {}: {source}", path.display())]
    #[diagnostic(
        code("FS0507"),
        help("check the store root's free space and permissions")
    )]
    Store {
        /// What was attempted.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The caller's deadline passed before a terminal result.
    #[error("the call's deadline passed ({})", dispatch.as_str())]
    #[diagnostic(
        code("FS0508"),
        help("a deadline never implies the handler did not run; `dispatch` says what is known")
    )]
    DeadlineElapsed {
        /// What is known about execution.
        dispatch: Dispatch,
    },
    /// The router's endpoint could not be reached or opened.
    #[error("cannot reach the router at {}: {source}", path.display())]
    #[diagnostic(
        code("FS0509"),
        help("start the router first, and check the socket path")
    )]
    Connect {
        /// The socket or directory.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// An in-memory artifact (the local lane's) attached to a bus message without promotion.
    #[error(
        "attachment {attachment}: an in-memory artifact travels over the bus only as a sealed copy"
    )]
    #[diagnostic(
        code("FS0511"),
        help("promote it first (Artifact::promote) and name the sealed copy's ref in the payload")
    )]
    Unpromoted {
        /// The attachment's name.
        attachment: String,
    },
    /// A write to an artifact went past its allocated length.
    #[error("writing {attempted} bytes at offset {offset} exceeds the allocation of {allocated}")]
    #[diagnostic(
        code("FS0510"),
        help("allocate the artifact with its final length; an artifact never grows")
    )]
    WritePastAllocation {
        /// Where the write started.
        offset: u64,
        /// Its length.
        attempted: u64,
        /// The allocated length.
        allocated: u64,
    },
}

impl BusError {
    /// The bus error code, for refusals and failures that carry one.
    #[must_use]
    pub fn bus_code(&self) -> Option<ErrorCode> {
        match self {
            Self::Refused { code, .. } => Some(*code),
            Self::RouterLost { .. } => Some(ErrorCode::RouterLost),
            _ => None,
        }
    }

    /// What is known about execution if this error ended a call.
    #[must_use]
    pub fn dispatch(&self) -> Dispatch {
        match self {
            Self::Refused { dispatch, .. } | Self::DeadlineElapsed { dispatch } => *dispatch,
            Self::RouterLost { .. } => Dispatch::Unknown,
            _ => Dispatch::NotDispatched,
        }
    }

    /// The registered diagnostic code (`FS05nn`).
    #[must_use]
    pub fn code_str(&self) -> String {
        Diagnostic::code(self)
            .map(|c| c.to_string())
            .unwrap_or_default()
    }

    pub(crate) fn lost(reason: impl Into<String>) -> Self {
        Self::RouterLost {
            reason: reason.into(),
        }
    }

    pub(crate) fn store(action: &'static str, path: PathBuf, source: std::io::Error) -> Self {
        Self::Store {
            action,
            path,
            source,
        }
    }
}
