//! A method's params, read where the request holds them: decoded and validated where they
//! arrived (the endpoint), shared with the caller's retries and the reply table, so a handler
//! borrows them rather than copying a decision context every step.
//!
//! It knows which payload type a method's params have; it does not know what they mean.

use flysim_types::workers::{DomainError, DomainErrorCode, Mutation, Params, ParamsOf};

use super::errors::fail;

/// The params as `T`, the payload of the method the request names.
///
/// # Errors
///
/// `INTERNAL` if the dispatch handed a method's handler another method's params (a bug: the
/// handler is chosen by the params' own variant).
pub(super) fn of<T: ParamsOf>(params: &Params) -> Result<&T, DomainError> {
    T::of(params).ok_or_else(|| {
        fail(
            DomainErrorCode::Internal,
            Mutation::None,
            format!(
                "the {} handler was handed the params of {}",
                T::METHOD,
                params.method()
            ),
        )
    })
}
