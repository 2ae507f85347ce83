//! One call of the coordinator to one worker, and its retry rule: every attempt under a fresh
//! bus call and a deadline, always the same request id and body, until a matching terminal
//! reply or the budget.
//!
//! It knows nothing of phases, of what a method means or of the order calls are made in
//! (`dispatch`); only how one prepared request is resolved.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use flysim_bus::{Artifact, ErrorCode};
use flysim_rpc::{Outcome, PreparedRequest, RpcError};
use flysim_types::workers::{
    AcknowledgeParams, AcknowledgeResult, DomainErrorCode, Params, ResultOf, Results,
};
use flysim_types::{BusCallId, DomainRequestId, Id};
use tokio::time::Instant;

use super::{Coordinator, Deadlines, Participant};
use crate::error::SessionError;

/// The longest wait between two attempts of a call the worker reports `IN_PROGRESS`.
const MAX_BACKOFF: Duration = Duration::from_millis(20);

/// A successful reply, decoded.
pub(super) struct Reply<T> {
    pub(super) result: Held<T>,
    pub(super) attachments: Vec<(Id, Artifact)>,
    pub(super) call: BusCallId,
    pub(super) request: DomainRequestId,
}

/// A method's result as the reply holds it: the value the worker's reply table keeps for
/// replays (on the local lane) or the one decoded from the bus, shared, not copied; it reads as
/// the `T` it was checked to be when the reply was taken.
pub(super) struct Held<T> {
    results: Arc<Results>,
    of: PhantomData<fn() -> T>,
}

impl<T: ResultOf> Held<T> {
    /// `results` if they are `T`'s.
    fn new(results: Arc<Results>) -> Option<Self> {
        T::of(&results)?;
        Some(Self {
            results,
            of: PhantomData,
        })
    }
}

impl<T: ResultOf + Clone> Held<T> {
    /// The result as a value of its own (a copy where the reply table shares it).
    pub(super) fn into_value(self) -> T {
        (*self).clone()
    }
}

impl<T: ResultOf> std::ops::Deref for Held<T> {
    type Target = T;

    fn deref(&self) -> &T {
        match T::of(&self.results) {
            Some(result) => result,
            None => unreachable!("a held result was checked to be the method's when it was taken"),
        }
    }
}

impl Coordinator {
    /// Calls `method` on `p`: a fresh request, resent under the same id after an uncertain
    /// attempt, until a matching terminal reply or the budget.
    pub(super) async fn call<T: ResultOf + Clone>(
        &self,
        p: &Participant,
        step: Option<u64>,
        params: impl Into<Params>,
        attachments: &[(Id, Artifact)],
    ) -> Result<Reply<T>, SessionError> {
        let scope = step.map(|s| self.scope(s));
        let request = p
            .caller
            .prepare(scope, params)
            .map_err(|e| self.contract(p.id.as_str(), step.unwrap_or(self.step), e.to_string()))?;
        call_prepared(
            p,
            &request,
            attachments,
            self.deadlines,
            step.unwrap_or(self.step),
        )
        .await
    }

    /// Acknowledges a reply, so the worker drops what it retained for it.
    pub(super) async fn acknowledge(
        &self,
        p: &Participant,
        request: DomainRequestId,
    ) -> Result<(), SessionError> {
        let params = AcknowledgeParams {
            request_ids: vec![request],
        };
        let _: Reply<AcknowledgeResult> = self.call(p, None, params, &[]).await?;
        Ok(())
    }
}

/// Sends `request` until a matching terminal reply: each attempt under a fresh bus call and a
/// deadline, always the same request id and body; `IN_PROGRESS` waits and resends. A domain
/// failure, a lost worker or router, a changed incarnation, or the budget end the call.
#[expect(
    clippy::disallowed_methods,
    reason = "bounds a wait: a deadline decides when to stop waiting, never what is recorded"
)]
pub(super) async fn call_prepared<T: ResultOf + Clone>(
    p: &Participant,
    request: &PreparedRequest,
    attachments: &[(Id, Artifact)],
    deadlines: Deadlines,
    step: u64,
) -> Result<Reply<T>, SessionError> {
    let method = request.method();
    let request_id = request.request_id();
    let budget_ms = u64::try_from(deadlines.budget.as_millis()).unwrap_or(u64::MAX);
    let until = Instant::now() + deadlines.budget;
    let mut backoff = Duration::from_millis(1);
    loop {
        let attempt = (Instant::now() + deadlines.attempt).min(until);
        p.poll.kick();
        match p.caller.call(request, attachments, Some(attempt)).await {
            Ok(reply) => match reply.outcome {
                Outcome::Success(success) => {
                    // Decoded for `method` where a bus reply arrived; on the local lane the
                    // worker's own value, which only a broken worker makes another method's.
                    let method_of = success.result.method();
                    let result =
                        Held::new(success.result).ok_or_else(|| SessionError::Contract {
                            participant: p.id.to_string(),
                            step,
                            reason: format!("the {method} reply carries the result of {method_of}"),
                        })?;
                    return Ok(Reply {
                        result,
                        attachments: reply.attachments,
                        call: reply.call.call_id,
                        request: request_id,
                    });
                }
                Outcome::Failure(f) if f.error.code == DomainErrorCode::InProgress => {
                    if Instant::now() + backoff >= until {
                        return Err(SessionError::Uncertain {
                            participant: p.id.to_string(),
                            method,
                            step,
                            request_id,
                            budget_ms,
                            reason: "the worker still reports IN_PROGRESS".into(),
                        });
                    }
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
                Outcome::Failure(f) => {
                    return Err(SessionError::Refused {
                        participant: p.id.to_string(),
                        method,
                        step,
                        request_id,
                        code: f.error.code,
                        mutation: f.error.mutation,
                        message: f.error.message,
                    });
                }
            },
            Err(RpcError::Bus(e)) if resendable(e.bus_code()) && Instant::now() < until => {
                // Deadline or backpressure: resend the same request under a new call.
                if e.bus_code() == Some(ErrorCode::Backpressure) {
                    tokio::time::sleep(backoff).await;
                }
            }
            Err(e) => {
                return Err(SessionError::from_rpc(
                    e,
                    p.id.as_str(),
                    method,
                    step,
                    request_id,
                    budget_ms,
                ));
            }
        }
    }
}

/// Whether a bus failure of one attempt leaves the call open to another: anything but a lost
/// router, a service gone, or another incarnation behind the target.
fn resendable(code: Option<ErrorCode>) -> bool {
    !matches!(
        code,
        Some(ErrorCode::RouterLost | ErrorCode::NoService | ErrorCode::TargetChanged)
    )
}
