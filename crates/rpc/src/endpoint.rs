//! The worker side of session RPC: parse the request, check its identity in the [`DedupTable`],
//! then execute, replay or refuse, and answer with a `SessionRpcSuccess` or `SessionRpcFailure`.
//! `Worker.Acknowledge` is answered here, since it only releases retained replies.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};

use flysim_bus::client::Peer;
use flysim_bus::{Artifact, Request};
use flysim_types::limits::MAX_MESSAGE_CODE_POINTS;
use flysim_types::payload::{SessionRpcRequest, from_value};
use flysim_types::workers::{
    AcknowledgeParams, AcknowledgeResult, DomainError, DomainErrorCode, FailureType, Mutation,
    SessionRpcFailure,
};
use flysim_types::{DomainRequestId, Id, OwnerToken, Scope};
use serde_json::{Map, Value};

use crate::dedup::{Admission, Cached, DedupTable};
use crate::error::RpcError;
use crate::local::{LocalRequest, rewrite_refs};

/// One admitted request, handed to the method's implementation.
#[derive(Debug)]
pub struct RpcRequest {
    /// The method.
    pub method: String,
    /// The validated request.
    pub request: SessionRpcRequest,
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
    /// The result object, or the domain failure.
    pub result: Result<Map<String, Value>, DomainError>,
    /// Artifacts the reply attaches; the cache keeps them alive for replays.
    pub artifacts: Vec<(Id, Artifact)>,
}

/// What answering a request produced.
enum Answer {
    /// A refusal before any mutation: not cached, no artifacts.
    Fresh(Map<String, Value>),
    /// The reply as cached (new or replayed).
    Cached(Arc<Cached>),
}

impl Answer {
    /// The outcome object and the artifacts to attach.
    fn parts(&self) -> (Map<String, Value>, Vec<(Id, Artifact)>) {
        match self {
            Self::Fresh(outcome) => (outcome.clone(), Vec::new()),
            Self::Cached(c) => (c.outcome.clone(), c.artifacts.clone()),
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
                return Ok(responder.reply(outcome, &[]).await?);
            }
        };
        let (request_id, scope) = (req.request_id, req.scope.clone());
        let answer = self
            .answer(caller, method, req, attachments, false, execute)
            .await?;
        let (mut outcome, artifacts) = answer.parts();
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
                _ => Map::new(),
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
    ) -> Result<(Map<String, Value>, Vec<(Id, Artifact)>), RpcError>
    where
        F: FnOnce(RpcRequest) -> Fut,
        Fut: Future<Output = Executed>,
    {
        let LocalRequest {
            caller,
            method,
            request,
            attachments,
            ..
        } = request;
        let (request_id, scope) = (request.request_id, request.scope.clone());
        let answer = self
            .answer(caller, method, request, attachments, true, execute)
            .await?;
        self.confirm(&answer, request_id, scope).await?;
        drop(self.table().take_evicted());
        Ok(answer.parts())
    }

    /// Admission, then a refusal, a replay, or `execute` and caching.
    async fn answer<F, Fut>(
        &self,
        caller: Peer,
        method: String,
        req: SessionRpcRequest,
        attachments: Vec<(Id, Artifact)>,
        local: bool,
        execute: F,
    ) -> Result<Answer, RpcError>
    where
        F: FnOnce(RpcRequest) -> Fut,
        Fut: Future<Output = Executed>,
    {
        let admission = self
            .table()
            .admit(&caller.client_id, &method, &req)
            .unwrap_or_else(|e| Admission::Refuse(DomainErrorCode::InvalidArgument, e.to_string()));
        let cached = match admission {
            Admission::Refuse(code, message) => {
                let outcome =
                    self.failure(req.request_id, req.scope.clone(), refusal(code, &message));
                return Ok(Answer::Fresh(outcome));
            }
            Admission::Replay(cached) => cached,
            Admission::Execute(ticket) => {
                let (request_id, scope) = (req.request_id, req.scope.clone());
                let executed = if method == "Worker.Acknowledge" {
                    self.acknowledge(&caller.client_id, &req)
                } else {
                    execute(RpcRequest {
                        method,
                        request: req,
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

    fn acknowledge(&self, caller: &str, req: &SessionRpcRequest) -> Executed {
        let params: Result<AcknowledgeParams, _> = from_value(Value::Object(req.params.clone()));
        let result = match params {
            Ok(p) => {
                let acknowledged = self.table().acknowledge(caller, &p.request_ids);
                let value =
                    serde_json::to_value(AcknowledgeResult { acknowledged }).unwrap_or(Value::Null);
                Ok(value.as_object().cloned().unwrap_or_default())
            }
            Err(e) => Err(DomainError {
                code: DomainErrorCode::InvalidArgument,
                message: clip(&e.to_string()),
                mutation: Mutation::None,
            }),
        };
        Executed {
            result,
            artifacts: Vec::new(),
        }
    }

    /// The `SessionRpcSuccess` object, built directly around `result` (what serialising the
    /// typed value gives, without copying the result through a serialiser).
    fn success(
        &self,
        request_id: DomainRequestId,
        scope: Option<Scope>,
        result: Map<String, Value>,
    ) -> Map<String, Value> {
        let mut map = Map::new();
        map.insert("type".into(), Value::String("result".into()));
        map.insert("requestId".into(), Value::String(request_id.to_string()));
        map.insert("workerId".into(), Value::String(self.worker_id.to_string()));
        map.insert(
            "incarnationId".into(),
            Value::String(self.incarnation_id.to_string()),
        );
        map.insert(
            "scope".into(),
            scope.as_ref().map_or(Value::Null, Scope::to_value),
        );
        map.insert("result".into(), Value::Object(result));
        map
    }

    fn failure(
        &self,
        request_id: DomainRequestId,
        scope: Option<Scope>,
        error: DomainError,
    ) -> Map<String, Value> {
        to_map(&SessionRpcFailure {
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

fn to_map<T: serde::Serialize>(value: &T) -> Map<String, Value> {
    match serde_json::to_value(value) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    }
}
