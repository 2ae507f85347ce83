//! Services: registering an exclusive name ([`Client::register`]), the [`Service`] handle
//! that yields requests in dispatch order, the [`Request`] itself, and its [`Responder`],
//! which answers once or, dropped unanswered, releases the call.
//!
//! It is the responder's side only; making calls is `calls`'.

use std::sync::Arc;

use flysim_types::{BusCallId, Id};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use super::artifacts::{attach, promote_on};
use super::connection::{Connection, OutgoingCommand, queue_command};
use super::{Artifact, Client, Delivered, Peer, into_map, str_field};
use crate::error::BusError;
use crate::outbox::Lane;
use crate::wire::{Dispatch, ErrorCode, spelled};

impl Client {
    /// Registers a service; the name is exclusive while this registration lives.
    ///
    /// # Errors
    ///
    /// `CONFLICT` if anyone (this client included) holds the name.
    pub async fn register(
        &self,
        name: &str,
        max_queued: u32,
        max_in_flight: u32,
    ) -> Result<Service, BusError> {
        let (tx, rx) = mpsc::unbounded_channel();
        {
            let mut st = self.connection.lock();
            if st.services.contains_key(name) {
                return Err(BusError::Refused {
                    op: "service.register".into(),
                    code: ErrorCode::Conflict,
                    message: format!("this client already serves {name}"),
                    dispatch: Dispatch::NotDispatched,
                });
            }
            st.services.insert(name.to_owned(), tx);
        }
        let body = json!({"name": name, "maxQueued": max_queued, "maxInFlight": max_in_flight});
        match self.command("service.register", into_map(body)).await {
            Ok(v) => Ok(Service {
                name: name.to_owned(),
                incarnation: str_field(&v, "serviceIncarnation"),
                rx,
                client: self.clone(),
            }),
            Err(e) => {
                self.connection.lock().services.remove(name);
                Err(e)
            }
        }
    }
}

/// A registered service: requests arrive in FIFO dispatch order.
pub struct Service {
    pub(super) name: String,
    pub(super) incarnation: String,
    pub(super) rx: mpsc::UnboundedReceiver<Request>,
    pub(super) client: Client,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("name", &self.name)
            .field("incarnation", &self.incarnation)
            .finish_non_exhaustive()
    }
}

impl Service {
    /// The registration's incarnation (callers pin it).
    #[must_use]
    pub fn incarnation(&self) -> &str {
        &self.incarnation
    }

    /// The next request; `None` once the registration or connection is gone.
    pub async fn next(&mut self) -> Option<Request> {
        self.rx.recv().await
    }

    /// Removes the registration; queued calls fail with `NO_SERVICE`.
    ///
    /// # Errors
    ///
    /// [`BusError::RouterLost`].
    pub async fn unregister(self) -> Result<bool, BusError> {
        self.client.connection.lock().services.remove(&self.name);
        let body = json!({"name": self.name, "serviceIncarnation": self.incarnation});
        let v = self
            .client
            .command("service.unregister", into_map(body))
            .await?;
        Ok(v.get("removed").and_then(Value::as_bool).unwrap_or(false))
    }
}

/// A request delivered to a service.
pub struct Request {
    /// The caller's call id.
    pub call_id: BusCallId,
    /// Who called.
    pub caller: Peer,
    /// The method.
    pub method: String,
    /// The payload object.
    pub payload: Map<String, Value>,
    /// Artifacts of the request, owned through this delivery.
    pub attachments: Vec<(Id, Artifact)>,
    /// The capability to answer; dropping it unanswered releases the call.
    pub responder: Responder,
    /// The delivery's guard (answering does not consume the request).
    pub delivery: Delivered,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("call_id", &self.call_id)
            .field("method", &self.method)
            .finish_non_exhaustive()
    }
}

/// The reply capability of one request.
pub struct Responder {
    pub(super) connection: Arc<Connection>,
    pub(super) call: u64,
    pub(super) dlv: u64,
    pub(super) done: bool,
}

impl std::fmt::Debug for Responder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Responder(call-{})", self.call)
    }
}

impl Responder {
    /// A sealed copy of an in-memory artifact on this responder's connection, so a reply can
    /// attach it (see [`Artifact::promote`]).
    ///
    /// # Errors
    ///
    /// As [`Artifact::promote`].
    pub async fn promote(&self, artifact: &Artifact) -> Result<Artifact, BusError> {
        promote_on(artifact, &self.connection).await
    }

    /// Answers the call; returns whether the result was routed (false if the caller went away).
    ///
    /// # Errors
    ///
    /// `CALL_GONE` for a second answer, an attachment refusal, or [`BusError::RouterLost`].
    pub async fn reply(
        self,
        outcome: Map<String, Value>,
        attachments: &[(&str, &Artifact)],
    ) -> Result<bool, BusError> {
        self.send(outcome, attachments)?.await
    }

    /// Queues the answer now and returns what [`Responder::reply`] waits for: whether the
    /// result was routed. Whatever the caller queues before awaiting it (say, consuming the
    /// request delivery) goes out in the same write.
    ///
    /// # Errors
    ///
    /// An attachment refusal or [`BusError::RouterLost`] at once; the returned future, as
    /// [`Responder::reply`].
    pub fn send(
        mut self,
        outcome: Map<String, Value>,
        attachments: &[(&str, &Artifact)],
    ) -> Result<impl std::future::Future<Output = Result<bool, BusError>> + Send + 'static, BusError>
    {
        let attachments = attach(attachments)?;
        self.done = true;
        let mut body = Map::new();
        body.insert("callId".into(), Value::String(spelled("call", self.call)));
        body.insert(
            "requestDeliveryId".into(),
            Value::String(spelled("dlv", self.dlv)),
        );
        body.insert("outcome".into(), Value::Object(outcome));
        let rx = queue_command(&self.connection, "rpc.reply", body, attachments)?;
        let connection = Arc::clone(&self.connection);
        Ok(async move {
            let v = rx.await.unwrap_or_else(|_| Err(connection.lost()))?;
            Ok(v.get("routed").and_then(Value::as_bool).unwrap_or(false))
        })
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        if !self.done {
            self.connection.outbox.push(
                Lane::Rpc,
                OutgoingCommand::Command {
                    op: "rpc.responder.release",
                    body: into_map(json!({"callId": spelled("call", self.call), "requestDeliveryId": spelled("dlv", self.dlv)})),
                    attachments: Vec::new(),
                    reply: None,
                },
            );
        }
    }
}
