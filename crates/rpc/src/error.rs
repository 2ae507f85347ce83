//! The errors of session RPC, each with a registered code.

use flysim_bus::BusError;
use flysim_types::workers::Method;
use flysim_types::{ContractError, DomainRequestId};
use miette::Diagnostic;
use thiserror::Error;

/// What a session RPC call can end with besides a domain reply.
#[derive(Debug, Error, Diagnostic)]
#[non_exhaustive]
pub enum RpcError {
    /// The bus refused or lost the call.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Bus(#[from] BusError),
    /// The request itself breaks the contract (e.g. a bus identity inside params).
    #[error(transparent)]
    #[diagnostic(transparent)]
    Contract(#[from] ContractError),
    /// A reply that does not answer this request from the negotiated worker.
    #[error("the reply's {field} is {found}, expected {expected}")]
    #[diagnostic(
        code("FS0520"),
        help(
            "only a matching terminal reply resolves a call; a reply from another worker, incarnation or request is discarded"
        )
    )]
    ReplyMismatch {
        /// The field that differs.
        field: &'static str,
        /// What the request expected.
        expected: String,
        /// What the reply carried.
        found: String,
    },
    /// Retries ran out with the outcome still unknown.
    #[error("{method} {request_id} is still uncertain after {attempts} attempts: {last}")]
    #[diagnostic(
        code("FS0521"),
        help(
            "query Worker.Status or fail the epoch; never re-issue the mutation under a new request id"
        )
    )]
    Uncertain {
        /// The method.
        method: Method,
        /// The domain request id every attempt carried.
        request_id: DomainRequestId,
        /// Attempts made.
        attempts: u32,
        /// The last bus failure.
        last: Box<BusError>,
    },
    /// A new request id was asked for an operation whose outcome is uncertain.
    #[error(
        "{method} {request_id} has an uncertain outcome; it may only be retried with the same request id and body"
    )]
    #[diagnostic(
        code("FS0522"),
        help(
            "resend the same prepared request (same id, same body) under a new call; a new id could execute the step twice"
        )
    )]
    NewIdRefused {
        /// The method.
        method: Method,
        /// The uncertain request's id.
        request_id: DomainRequestId,
    },
    /// An outcome that is neither a valid `SessionRpcSuccess` nor a `SessionRpcFailure`.
    #[error("malformed reply outcome: {reason}")]
    #[diagnostic(
        code("FS0523"),
        help("the worker must answer with a SessionRpcSuccess or SessionRpcFailure object")
    )]
    MalformedReply {
        /// What is wrong.
        reason: String,
    },
}

impl RpcError {
    /// The registered diagnostic code.
    #[must_use]
    pub fn code_str(&self) -> String {
        Diagnostic::code(self)
            .map(|c| c.to_string())
            .unwrap_or_default()
    }

    /// Whether the operation may have executed without its result being known.
    #[must_use]
    pub fn is_uncertain(&self) -> bool {
        match self {
            Self::Uncertain { .. } => true,
            Self::Bus(e) => e.dispatch() != flysim_bus::Dispatch::NotDispatched,
            _ => false,
        }
    }
}
