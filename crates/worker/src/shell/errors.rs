//! The shell's failures as domain errors: a refusal (nothing happened), a failure with what it
//! did to the worker's state, and the errors of a model, a backend or a digest mapped to their
//! workers-v1 codes.
//!
//! It knows the error codes and whether a mutation began; it does not know which method failed.

use flysim_types::Digest;
use flysim_types::digest::payload_digest;
use flysim_types::workers::{DomainError, DomainErrorCode, Mutation};

use flysim_component::{BackendError, ModelError};

/// A domain error of `code` that left the worker's state as `mutation` says.
pub(super) fn fail(
    code: DomainErrorCode,
    mutation: Mutation,
    message: impl Into<String>,
) -> DomainError {
    DomainError {
        code,
        message: message.into(),
        mutation,
    }
}

/// A refusal: nothing happened.
pub(super) fn refuse(code: DomainErrorCode, message: impl Into<String>) -> DomainError {
    fail(code, Mutation::None, message)
}

/// A value's digest ([`payload_digest`]), refused as an invalid argument.
pub(super) fn digest_of<T: serde::Serialize>(value: &T) -> Result<Digest, DomainError> {
    payload_digest(value).map_err(|e| refuse(DomainErrorCode::InvalidArgument, e.to_string()))
}

/// A model's error; `mutated` says whether the model may have changed before it failed.
pub(super) fn model_error(e: ModelError, mutated: bool) -> DomainError {
    let mutation = if mutated {
        Mutation::Unknown
    } else {
        Mutation::None
    };
    match e {
        ModelError::Unsupported { .. } => refuse(DomainErrorCode::Unsupported, e.to_string()),
        ModelError::Invalid(m) if !mutated => refuse(DomainErrorCode::InvalidArgument, m),
        ModelError::Incompatible(m) => fail(DomainErrorCode::IncompatibleState, mutation, m),
        ModelError::Invalid(m) | ModelError::Fault(m) => {
            fail(DomainErrorCode::Internal, Mutation::Unknown, m)
        }
    }
}

/// A backend's error; `mutated` says whether the world may have changed before it failed.
pub(super) fn backend_error(e: BackendError, mutated: bool) -> DomainError {
    match e {
        BackendError::Unsupported { .. } | BackendError::Refused(_) => {
            refuse(DomainErrorCode::Unsupported, e.to_string())
        }
        BackendError::Invalid(m) if !mutated => refuse(DomainErrorCode::InvalidArgument, m),
        BackendError::Incompatible(m) => fail(
            DomainErrorCode::IncompatibleState,
            if mutated {
                Mutation::Unknown
            } else {
                Mutation::None
            },
            m,
        ),
        BackendError::Invalid(m) | BackendError::Fault(m) => {
            fail(DomainErrorCode::BackendFailure, Mutation::Unknown, m)
        }
    }
}
