//! The caller side of session RPC: request ids, reply matching and the retry rule.
//!
//! A [`PreparedRequest`] fixes a domain request id and body once. [`RpcCaller::call`] sends it
//! under a fresh bus call id; [`RpcCaller::call_with_retry`] resends the *same* prepared request
//! (same id, same body, same pinned incarnation) after an uncertain attempt, waits out
//! `IN_PROGRESS`, and accepts only a terminal reply that matches the request and the negotiated
//! worker. New ids come only from [`RpcCaller::prepare`]; [`RpcCaller::reissue`] refuses a new
//! id for a step operation whose outcome is uncertain, so an Advance is never executed twice.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use flysim_bus::client::Peer;
use flysim_bus::{Artifact, BusError, CallResult, Client, Dispatch, ErrorCode};
use flysim_types::digest::{carries_bus_identity, refuse_bus_identities};
use flysim_types::payload::SessionRpcRequest;
use flysim_types::workers::{DomainErrorCode, Method, Params};
use flysim_types::{BusCallId, ContractError, DomainRequestId, Id, Scope};
use serde_json::{Map, Value};
use tokio::time::Instant;

use crate::dedup::{MethodClass, method_class};
use crate::error::RpcError;
use crate::local::{LocalRequest, LocalService, promote_all};
use crate::outcome::Outcome;

/// A request whose id and body are fixed: every retry resends exactly this.
#[derive(Debug, Clone, PartialEq)]
pub struct PreparedRequest {
    request_id: DomainRequestId,
    scope: Option<Scope>,
    /// Shared with the worker's reply table when the local lane carries it.
    params: Arc<Params>,
}

impl PreparedRequest {
    /// The method.
    #[must_use]
    pub fn method(&self) -> Method {
        self.params.method()
    }

    /// The domain request id.
    #[must_use]
    pub fn request_id(&self) -> DomainRequestId {
        self.request_id
    }

    /// The params.
    #[must_use]
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The request body as the bus carries it.
    ///
    /// # Errors
    ///
    /// Params serde cannot write as a JSON object (none of the contract's).
    pub fn body(&self) -> Result<SessionRpcRequest, ContractError> {
        Ok(SessionRpcRequest {
            request_id: self.request_id,
            scope: self.scope.clone(),
            params: self.params.to_map()?,
        })
    }
}

/// A matched terminal reply with its artifacts.
#[derive(Debug)]
pub struct RpcReply {
    /// The outcome.
    pub outcome: Outcome,
    /// The reply's artifacts (owned through the result delivery, or in memory on the lane).
    pub attachments: Vec<(Id, Artifact)>,
    /// The call that carried it.
    pub call: CallInfo,
}

/// The call that carried a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallInfo {
    /// Its bus call id (reserved from the caller's connection on the local lane).
    pub call_id: BusCallId,
    /// Who answered.
    pub responder: Peer,
    /// The service incarnation that answered.
    pub service_incarnation: String,
    /// Whether it went through the local lane instead of the bus.
    pub local: bool,
}

/// How often and how long to retry.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Attempts in all (the first included).
    pub attempts: u32,
    /// Deadline of each attempt.
    pub per_attempt: Duration,
    /// Pause after `IN_PROGRESS` or `BACKPRESSURE` before resending.
    pub backoff: Duration,
}

/// Calls one worker's service, over the bus or, when one is offered on the client for the
/// service's name, through the local lane ([`crate::local`]).
pub struct RpcCaller {
    client: Client,
    target: String,
    service_incarnation: Option<String>,
    worker_id: Id,
    worker_incarnation: Id,
    next_serial: AtomicU64,
    local: Option<Arc<dyn LocalService>>,
}

impl std::fmt::Debug for RpcCaller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpcCaller")
            .field("target", &self.target)
            .field("service_incarnation", &self.service_incarnation)
            .field("worker_id", &self.worker_id)
            .field("local", &self.local.is_some())
            .finish_non_exhaustive()
    }
}

impl RpcCaller {
    /// A caller of `target` pinned to `service_incarnation`, expecting replies from `worker_id`
    /// at `worker_incarnation`; request ids start after `last_serial`.
    #[must_use]
    pub fn new(
        client: Client,
        target: &str,
        service_incarnation: Option<String>,
        worker_id: Id,
        worker_incarnation: Id,
        last_serial: u64,
    ) -> Self {
        Self {
            local: crate::local::lookup(&client, target),
            client,
            target: target.to_owned(),
            service_incarnation,
            worker_id,
            worker_incarnation,
            next_serial: AtomicU64::new(last_serial),
        }
    }

    /// Whether calls go through the local lane.
    #[must_use]
    pub fn is_local(&self) -> bool {
        self.local.is_some()
    }

    /// Fixes a new request: the next request id, the scope and the params (whose variant
    /// names the method). Through the local lane the value itself travels; over the bus, its
    /// JSON.
    ///
    /// # Errors
    ///
    /// [`RpcError::Contract`] if the params carry a bus identity.
    pub fn prepare(
        &self,
        scope: Option<Scope>,
        params: impl Into<Params>,
    ) -> Result<PreparedRequest, RpcError> {
        let params: Params = params.into();
        if carries_bus_identity(&params)? {
            // Rare: the JSON names the path.
            refuse_bus_identities(&params.to_map()?)?;
        }
        Ok(self.fix(scope, Arc::new(params)))
    }

    /// The next request id around checked params.
    fn fix(&self, scope: Option<Scope>, params: Arc<Params>) -> PreparedRequest {
        let serial = self.next_serial.fetch_add(1, Ordering::SeqCst) + 1;
        PreparedRequest {
            request_id: DomainRequestId(serial),
            scope,
            params,
        }
    }

    /// A new id for the same operation, refused when `last` leaves a step operation uncertain.
    ///
    /// # Errors
    ///
    /// [`RpcError::NewIdRefused`].
    pub fn reissue(
        &self,
        previous: &PreparedRequest,
        last: &RpcError,
    ) -> Result<PreparedRequest, RpcError> {
        if method_class(previous.method()) == MethodClass::Step && last.is_uncertain() {
            return Err(RpcError::NewIdRefused {
                method: previous.method(),
                request_id: previous.request_id,
            });
        }
        Ok(self.fix(previous.scope.clone(), Arc::clone(&previous.params)))
    }

    /// One attempt under a fresh bus call id.
    ///
    /// # Errors
    ///
    /// The bus failure, or a reply that does not match.
    pub async fn call(
        &self,
        req: &PreparedRequest,
        attachments: &[(Id, Artifact)],
        deadline: Option<Instant>,
    ) -> Result<RpcReply, RpcError> {
        if let Some(local) = &self.local {
            return self.call_local(local, req, attachments, deadline).await;
        }
        let mut payload = req.body()?.to_map();
        let client = &self.client;
        let named: Vec<(&str, &Artifact)> =
            attachments.iter().map(|(n, a)| (n.as_str(), a)).collect();
        let promoted = promote_all(
            &named,
            &mut payload,
            |a| async move { a.promote(client).await },
        )
        .await?;
        let refs: Vec<(&str, &Artifact)> = promoted.iter().map(|(n, a)| (n.as_str(), a)).collect();
        let result = self
            .client
            .call(
                &self.target,
                req.method().as_str(),
                payload,
                &refs,
                self.service_incarnation.as_deref(),
                deadline,
            )
            .await?;
        let CallResult {
            call_id,
            responder,
            service_incarnation,
            outcome,
            attachments,
            delivery,
        } = result;
        let outcome = self.check_map(req, outcome)?;
        drop(delivery);
        Ok(RpcReply {
            outcome,
            attachments,
            call: CallInfo {
                call_id,
                responder,
                service_incarnation,
                local: false,
            },
        })
    }

    /// One attempt through the local lane: the same admission, deadline and matching as a bus
    /// call, without the bus. The call is under way once started: a deadline leaves it
    /// uncertain, a lost connection ends it with `ROUTER_LOST`.
    async fn call_local(
        &self,
        local: &Arc<dyn LocalService>,
        req: &PreparedRequest,
        attachments: &[(Id, Artifact)],
        deadline: Option<Instant>,
    ) -> Result<RpcReply, RpcError> {
        if self.client.is_closed() {
            return Err(self.client.lost_error().into());
        }
        let attachments = attachments.to_vec();
        let call_id = self.client.reserve_call_id();
        let reply = local.call(LocalRequest {
            caller: self.client.hello().identity.clone(),
            expected_incarnation: self.service_incarnation.clone(),
            request_id: req.request_id,
            scope: req.scope.clone(),
            params: Arc::clone(&req.params),
            attachments,
        });
        let deadline = async {
            match deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let reply = tokio::select! {
            biased;
            r = reply => r?,
            () = self.client.closed() => return Err(self.client.lost_error().into()),
            () = deadline => {
                return Err(BusError::DeadlineElapsed { dispatch: Dispatch::Unknown }.into());
            }
        };
        let outcome = self.check(req, reply.outcome)?;
        Ok(RpcReply {
            outcome,
            attachments: reply.attachments,
            call: CallInfo {
                call_id,
                responder: reply.responder,
                service_incarnation: reply.service_incarnation,
                local: true,
            },
        })
    }

    /// Attempts until a terminal matching reply: the same request id and body each time, a new
    /// bus call id each time.
    ///
    /// # Errors
    ///
    /// [`RpcError::Uncertain`] when attempts run out, or a failure that retrying cannot fix
    /// (the worker or its route is gone).
    #[expect(
        clippy::disallowed_methods,
        reason = "the per-attempt deadline only bounds a wait; the retry rule decides the outcome, not the clock"
    )]
    pub async fn call_with_retry(
        &self,
        req: &PreparedRequest,
        attachments: &[(Id, Artifact)],
        policy: RetryPolicy,
    ) -> Result<RpcReply, RpcError> {
        let mut last: Option<BusError> = None;
        for _ in 0..policy.attempts {
            match self
                .call(req, attachments, Some(Instant::now() + policy.per_attempt))
                .await
            {
                Ok(reply) => {
                    if let Outcome::Failure(f) = &reply.outcome
                        && f.error.code == DomainErrorCode::InProgress
                    {
                        tokio::time::sleep(policy.backoff).await;
                        continue;
                    }
                    return Ok(reply);
                }
                Err(RpcError::Bus(e)) => {
                    let fatal = matches!(
                        e.bus_code(),
                        Some(
                            ErrorCode::RouterLost | ErrorCode::NoService | ErrorCode::TargetChanged
                        )
                    );
                    if fatal {
                        return Err(
                            if e.dispatch() == Dispatch::NotDispatched && last.is_none() {
                                RpcError::Bus(e)
                            } else {
                                self.uncertain(req, policy.attempts, e)
                            },
                        );
                    }
                    if e.bus_code() == Some(ErrorCode::Backpressure) {
                        tokio::time::sleep(policy.backoff).await;
                    }
                    last = Some(e);
                }
                Err(other) => return Err(other),
            }
        }
        let last = last.unwrap_or(BusError::DeadlineElapsed {
            dispatch: Dispatch::Unknown,
        });
        Err(self.uncertain(req, policy.attempts, last))
    }

    fn uncertain(&self, req: &PreparedRequest, attempts: u32, last: BusError) -> RpcError {
        RpcError::Uncertain {
            method: req.method(),
            request_id: req.request_id,
            attempts,
            last: Box::new(last),
        }
    }

    /// Parses a bus reply's outcome object and checks it ([`RpcCaller::check`]).
    fn check_map(
        &self,
        req: &PreparedRequest,
        outcome: Map<String, Value>,
    ) -> Result<Outcome, RpcError> {
        let parsed =
            Outcome::from_map(req.method(), outcome).map_err(|e| RpcError::MalformedReply {
                reason: e.to_string(),
            })?;
        self.check(req, parsed)
    }

    /// Checks that an outcome answers `req` from the negotiated worker.
    fn check(&self, req: &PreparedRequest, parsed: Outcome) -> Result<Outcome, RpcError> {
        let (request_id, worker_id, incarnation_id, scope) = parsed.header();
        let mismatch = |field, expected: String, found: String| RpcError::ReplyMismatch {
            field,
            expected,
            found,
        };
        if request_id != req.request_id {
            return Err(mismatch(
                "requestId",
                req.request_id.to_string(),
                request_id.to_string(),
            ));
        }
        if *worker_id != self.worker_id {
            return Err(mismatch(
                "workerId",
                self.worker_id.to_string(),
                worker_id.to_string(),
            ));
        }
        if *incarnation_id != self.worker_incarnation {
            return Err(mismatch(
                "incarnationId",
                self.worker_incarnation.to_string(),
                incarnation_id.to_string(),
            ));
        }
        if *scope != req.scope {
            return Err(mismatch(
                "scope",
                format!("{:?}", req.scope),
                format!("{scope:?}"),
            ));
        }
        Ok(parsed)
    }
}
