//! The worker side of session RPC: parse the request, check its identity in the [`DedupTable`],
//! then execute, replay or refuse, and answer with a `SessionRpcSuccess` or `SessionRpcFailure`.
//! `Worker.Acknowledge` is answered here, since it only releases retained replies.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};

use flysim_bus::client::Peer;
use flysim_bus::{Artifact, Request};
use flysim_types::digest::{body_digest, refuse_bus_identities};
use flysim_types::limits::MAX_MESSAGE_CODE_POINTS;
use flysim_types::payload::SessionRpcRequest;
use flysim_types::workers::{
    AcknowledgeParams, AcknowledgeResult, DomainError, DomainErrorCode, FailureType, Method,
    Mutation, Params, Results, SessionRpcFailure,
};
use flysim_types::{DomainRequestId, Id, OwnerToken, Scope};
use serde_json::Value;

use crate::dedup::{Admission, Body, Cached, DedupTable};
use crate::error::RpcError;
use crate::local::{LocalRequest, rewrite_refs};
use crate::outcome::{Outcome, Success};

/// One admitted request, handed to the method's implementation.
#[derive(Debug)]
pub struct RpcRequest {
    /// The method.
    pub method: Method,
    /// The domain request id.
    pub request_id: DomainRequestId,
    /// The scope, or `None` for scope-free methods.
    pub scope: Option<Scope>,
    /// The params (their variant is `method`), decoded and validated where they arrived, and
    /// shared with the reply table's request record and, on the local lane, the caller.
    pub params: Arc<Params>,
    /// Its artifacts, owned through the request delivery.
    pub attachments: Vec<(Id, Artifact)>,
    /// Who called.
    pub caller: Peer,
    /// Whether it came through the local lane (contracts §3.11): artifacts of its reply may
    /// then stay in memory.
    pub local: bool,
}

/// What a method's implementation produced.
#[derive(Debug)]
pub struct Executed {
    /// The result (its variant the request's method), or the domain failure.
    pub result: Result<Results, DomainError>,
    /// Artifacts the reply attaches; the cache keeps them alive for replays.
    pub artifacts: Vec<(Id, Artifact)>,
}

/// What answering a request produced.
enum Answer {
    /// A refusal before any mutation: not cached, no artifacts.
    Fresh(Outcome),
    /// The reply as cached (new or replayed).
    Cached(Arc<Cached>),
}

impl Answer {
    /// The outcome.
    fn outcome(&self) -> &Outcome {
        match self {
            Self::Fresh(outcome) => outcome,
            Self::Cached(c) => &c.outcome,
        }
    }

    /// The artifacts to attach.
    fn artifacts(&self) -> Vec<(Id, Artifact)> {
        match self {
            Self::Fresh(_) => Vec::new(),
            Self::Cached(c) => c.artifacts.clone(),
        }
    }
}

/// Serves session RPC for one worker incarnation.
#[derive(Debug)]
pub struct RpcEndpoint {
    worker_id: Id,
    incarnation_id: Id,
    table: Mutex<DedupTable>,
}

impl RpcEndpoint {
    /// An endpoint for `worker_id` at `incarnation_id` with an empty table.
    #[must_use]
    pub fn new(worker_id: Id, incarnation_id: Id) -> Self {
        Self {
            table: Mutex::new(DedupTable::new(worker_id.clone())),
            worker_id,
            incarnation_id,
        }
    }

    /// The dedup table (for status and tests).
    pub fn table(&self) -> MutexGuard<'_, DedupTable> {
        self.table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Answers one bus request: refusal, replay, or `execute` then cache. Returns whether the
    /// reply was routed to a waiting caller.
    ///
    /// # Errors
    ///
    /// Bus failures while answering (the reply could not be sent).
    pub async fn serve<F, Fut>(&self, request: Request, execute: F) -> Result<bool, RpcError>
    where
        F: FnOnce(RpcRequest) -> Fut,
        Fut: Future<Output = Executed>,
    {
        let Request {
            caller,
            method,
            payload,
            attachments,
            responder,
            delivery,
            ..
        } = request;
        // Read before the payload moves into the decoder: a refusal still names its request.
        let id = payload
            .get("requestId")
            .and_then(Value::as_str)
            .and_then(|s| DomainRequestId::parse(s).ok());
        let req = match SessionRpcRequest::from_map(payload) {
            Ok(req) => req,
            Err(e) => {
                let Some(id) = id else {
                    // Nothing to correlate a domain reply with: release the call (CALL_GONE).
                    drop(responder);
                    return Ok(false);
                };
                let outcome = self.failure(
                    id,
                    None,
                    refusal(DomainErrorCode::InvalidArgument, &e.to_string()),
                );
                return Ok(responder.reply(outcome.to_map()?, &[]).await?);
            }
        };
        let SessionRpcRequest {
            request_id,
            scope,
            params,
        } = req;
        // The wire names the method; here it is one of the contract's, or refused unexecuted.
        let Some(method) = Method::parse(&method) else {
            let message = format!("{method} is not a method of this worker");
            let outcome = self.failure(
                request_id,
                scope,
                refusal(DomainErrorCode::Unsupported, &message),
            );
            return Ok(responder.reply(outcome.to_map()?, &[]).await?);
        };
        // The body digest from the JSON as it arrived; then the params as the method's value,
        // decoded and validated here, once. A refusal is fresh: nothing was admitted.
        let decoded = refuse_bus_identities(&params)
            .and_then(|()| body_digest(method.as_str(), scope.as_ref(), &params))
            .and_then(|digest| Ok((digest, Params::decode(method, params)?)));
        let (digest, params) = match decoded {
            Ok(decoded) => decoded,
            Err(e) => {
                let outcome = self.failure(
                    request_id,
                    scope,
                    refusal(DomainErrorCode::InvalidArgument, &e.to_string()),
                );
                return Ok(responder.reply(outcome.to_map()?, &[]).await?);
            }
        };
        let answer = self
            .answer(
                caller,
                (request_id, scope.clone(), Arc::new(params)),
                Body::Digest(digest),
                attachments,
                false,
                execute,
            )
            .await?;
        let mut outcome = answer.outcome().to_map()?;
        let artifacts = answer.artifacts();
        // A reply cached from the local lane holds in-memory artifacts: they travel over the
        // bus as sealed copies, named by the copies' refs.
        let mut pairs = Vec::new();
        let mut sent = Vec::with_capacity(artifacts.len());
        for (name, artifact) in artifacts {
            if artifact.is_local() {
                let sealed = responder.promote(&artifact).await?;
                pairs.push((artifact.reference().clone(), sealed.reference().clone()));
                sent.push((name, sealed));
            } else {
                sent.push((name, artifact));
            }
        }
        if !pairs.is_empty() {
            let mut value = Value::Object(outcome);
            rewrite_refs(&mut value, &pairs);
            outcome = match value {
                Value::Object(map) => map,
                _ => serde_json::Map::new(),
            };
        }
        let refs: Vec<(&str, &Artifact)> = sent.iter().map(|(n, a)| (n.as_str(), a)).collect();
        let routed = responder.send(outcome, &refs)?;
        // Answered: the request delivery is no longer needed, and its consumption, and the
        // release of replies that left the kept window, travel in the same write as the reply.
        drop(delivery);
        drop(self.table().take_evicted());
        let routed = routed.await;
        self.confirm(&answer, request_id, scope).await?;
        Ok(routed?)
    }

    /// Waits for the router to confirm the seals the reply's artifacts queued (a frame is sealed
    /// in the same write as the reply, ahead of it). A refused seal made the router refuse the
    /// reply as well; the cached reply then becomes a `BACKEND_FAILURE` (mutation applied), so a
    /// retry learns what happened instead of meeting the same refusal until its budget ends.
    async fn confirm(
        &self,
        answer: &Answer,
        request_id: DomainRequestId,
        scope: Option<Scope>,
    ) -> Result<(), RpcError> {
        let Answer::Cached(cached) = answer else {
            return Ok(());
        };
        for (name, artifact) in &cached.artifacts {
            if let Err(e) = artifact.confirm().await {
                let failure = self.failure(
                    request_id,
                    scope,
                    DomainError {
                        code: DomainErrorCode::BackendFailure,
                        message: format!("artifact `{name}` could not be sealed: {e}"),
                        mutation: Mutation::Applied,
                    },
                );
                self.table().replace(
                    cached,
                    Cached {
                        outcome: failure,
                        artifacts: Vec::new(),
                    },
                );
                return Err(e.into());
            }
        }
        Ok(())
    }

    /// Answers one request of the local lane (contracts §3.11) exactly as [`RpcEndpoint::serve`]
    /// answers a bus request, from the already-validated request: the outcome object and the
    /// artifacts it attaches.
    ///
    /// # Errors
    ///
    /// Bus failures while keeping a reply's artifacts for replays.
    pub async fn serve_local<F, Fut>(
        &self,
        request: LocalRequest,
        execute: F,
    ) -> Result<(Outcome, Vec<(Id, Artifact)>), RpcError>
    where
        F: FnOnce(RpcRequest) -> Fut,
        Fut: Future<Output = Executed>,
    {
        let LocalRequest {
            caller,
            request_id,
            scope,
            params,
            attachments,
            ..
        } = request;
        // Built in this process, never decoded: the contract's rules are checked here, as a bus
        // request's are when decoded. The caller has refused bus identities; the body digest
        // is written only if dedup ever compares this body with another.
        if let Err(e) = params.validate() {
            let outcome = self.failure(
                request_id,
                scope,
                refusal(DomainErrorCode::InvalidArgument, &e.to_string()),
            );
            return Ok((outcome, Vec::new()));
        }
        let body = Body::Deferred {
            method: params.method(),
            scope: scope.clone(),
            params: Arc::clone(&params),
        };
        let answer = self
            .answer(
                caller,
                (request_id, scope.clone(), params),
                body,
                attachments,
                true,
                execute,
            )
            .await?;
        self.confirm(&answer, request_id, scope).await?;
        drop(self.table().take_evicted());
        Ok((answer.outcome().clone(), answer.artifacts()))
    }

    /// Admission, then a refusal, a replay, or `execute` and caching.
    async fn answer<F, Fut>(
        &self,
        caller: Peer,
        (request_id, scope, params): (DomainRequestId, Option<Scope>, Arc<Params>),
        body: Body,
        attachments: Vec<(Id, Artifact)>,
        local: bool,
        execute: F,
    ) -> Result<Answer, RpcError>
    where
        F: FnOnce(RpcRequest) -> Fut,
        Fut: Future<Output = Executed>,
    {
        let method = params.method();
        let admission =
            self.table()
                .admit_body(&caller.client_id, method, request_id, scope.as_ref(), body);
        let cached = match admission {
            Admission::Refuse(code, message) => {
                let outcome = self.failure(request_id, scope, refusal(code, &message));
                return Ok(Answer::Fresh(outcome));
            }
            Admission::Replay(cached) => cached,
            Admission::Execute(ticket) => {
                let executed = if let Params::WorkerAcknowledge(p) = &*params {
                    self.acknowledge(&caller.client_id, p)
                } else {
                    execute(RpcRequest {
                        method,
                        request_id,
                        scope: scope.clone(),
                        params,
                        attachments,
                        caller,
                        local,
                    })
                    .await
                };
                let (outcome, no_mutation) = match executed.result {
                    Ok(result) => (self.success(request_id, scope, result), false),
                    Err(error) => {
                        let none = error.mutation == Mutation::None;
                        (self.failure(request_id, scope, error), none)
                    }
                };
                if no_mutation {
                    // Refused before any mutation: nothing happened, nothing to replay.
                    self.table().abandon(ticket);
                    return Ok(Answer::Fresh(outcome));
                }
                let mut artifacts = Vec::with_capacity(executed.artifacts.len());
                for (name, artifact) in executed.artifacts {
                    // A cache entry owns explicit holds (or in-memory bytes), never a whole
                    // delivery.
                    let held = match artifact.owner_token() {
                        OwnerToken::Delivery(_) => artifact.retain().await?,
                        OwnerToken::Hold(_) => artifact,
                    };
                    artifacts.push((name, held));
                }
                self.table().complete(ticket, Cached { outcome, artifacts })
            }
        };
        Ok(Answer::Cached(cached))
    }

    fn acknowledge(&self, caller: &str, params: &AcknowledgeParams) -> Executed {
        let acknowledged = self.table().acknowledge(caller, &params.request_ids);
        Executed {
            result: Ok(AcknowledgeResult { acknowledged }.into()),
            artifacts: Vec::new(),
        }
    }

    /// The success around `result`.
    fn success(
        &self,
        request_id: DomainRequestId,
        scope: Option<Scope>,
        result: Results,
    ) -> Outcome {
        Outcome::Success(Success {
            request_id,
            worker_id: self.worker_id.clone(),
            incarnation_id: self.incarnation_id.clone(),
            scope,
            result: Arc::new(result),
        })
    }

    fn failure(
        &self,
        request_id: DomainRequestId,
        scope: Option<Scope>,
        error: DomainError,
    ) -> Outcome {
        Outcome::Failure(SessionRpcFailure {
            kind: FailureType::Error,
            request_id,
            worker_id: self.worker_id.clone(),
            incarnation_id: self.incarnation_id.clone(),
            scope,
            error: DomainError {
                message: clip(&error.message),
                ..error
            },
        })
    }
}

/// A refusal raised before any mutation.
fn refusal(code: DomainErrorCode, message: &str) -> DomainError {
    DomainError {
        code,
        message: clip(message),
        mutation: Mutation::None,
    }
}

/// Cuts a message to the contract's 512 code points.
fn clip(message: &str) -> String {
    message.chars().take(MAX_MESSAGE_CODE_POINTS).collect()
}
