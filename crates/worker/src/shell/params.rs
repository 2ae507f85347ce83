//! A method's params, decoded once: moved out of the request, or for a step operation read
//! where they are when the local lane passed them typed.
//!
//! It knows `Object` and payload validation; it does not know what the params mean.

use flysim_rpc::Object;
use flysim_types::Payload;
use flysim_types::workers::{DomainError, DomainErrorCode, Mutation};

use super::errors::{fail, refuse};

/// Decodes a method's params, moving them out of the request (each method reads them once):
/// typed params of the local lane are taken as they are and validated, JSON params decoded.
pub(super) fn parse<T: Payload + Clone + 'static>(params: &mut Object) -> Result<T, DomainError> {
    std::mem::take(params)
        .parse_payload()
        .map_err(|e| refuse(DomainErrorCode::InvalidArgument, e.to_string()))
}

/// A step operation's params read where they are: the typed value a local-lane request shares
/// with its caller's retries and the dedup table (cloning it would copy every string of a
/// decision context, each step), or the value decoded from a bus request's JSON.
pub(super) enum StepParams<T> {
    /// A typed `T`, validated.
    Typed(Object),
    /// Decoded and validated.
    Decoded(T),
}

impl<T: Payload + Clone + std::any::Any> StepParams<T> {
    pub(super) fn parse(params: &mut Object) -> Result<Self, DomainError> {
        let params = std::mem::take(params);
        let invalid = |e: flysim_types::ContractError| {
            refuse(DomainErrorCode::InvalidArgument, e.to_string())
        };
        if let Some(value) = params.downcast_ref::<T>() {
            value.validate().map_err(invalid)?;
            return Ok(Self::Typed(params));
        }
        params.parse_payload().map(Self::Decoded).map_err(invalid)
    }

    /// The value. A typed value cannot change type once shared; the error is for completeness.
    pub(super) fn get(&self) -> Result<&T, DomainError> {
        match self {
            Self::Typed(object) => object.downcast_ref().ok_or_else(|| {
                fail(
                    DomainErrorCode::Internal,
                    Mutation::None,
                    "typed params changed type",
                )
            }),
            Self::Decoded(value) => Ok(value),
        }
    }
}
