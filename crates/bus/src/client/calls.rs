//! Calls: admission ([`Client::start_call`]), the caller-owned deadline and its dispatch
//! certainty ([`PendingCall::result`]), cancellation with the states of contracts §3.6, the
//! best-effort cancel of a pending call dropped unfinished, and the terminal [`CallResult`].
//!
//! It is the caller's side only; serving calls is `services`'.

use flysim_types::{BusCallId, Id};
use serde_json::{Map, Value, json};
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::artifacts::attach;
use super::connection::{OutgoingCommand, send_command};
use super::{Artifact, Client, Delivered, Peer, into_map, str_field};
use crate::error::BusError;
use crate::outbox::Lane;
use crate::wire::{Dispatch, spelled};

impl Client {
    /// Admits a call and returns its pending handle (admission only: accepted is not executed).
    ///
    /// # Errors
    ///
    /// The admission refusal (`NO_SERVICE`, `TARGET_CHANGED`, `BACKPRESSURE`, ...), always
    /// `not-dispatched`.
    pub async fn start_call(
        &self,
        target: &str,
        method: &str,
        payload: Map<String, Value>,
        attachments: &[(&str, &Artifact)],
        expected_incarnation: Option<&str>,
    ) -> Result<PendingCall, BusError> {
        let attachments = attach(attachments)?;
        let (tx, rx) = oneshot::channel();
        let call = {
            let mut st = self.connection.lock();
            if let Some(why) = &st.lost {
                return Err(BusError::lost(why.clone()));
            }
            st.next_call += 1;
            let call = st.next_call;
            st.calls.insert(call, tx);
            call
        };
        let mut pending = PendingCall {
            client: self.clone(),
            call,
            rx: Some(rx),
            service_incarnation: String::new(),
        };
        let mut body = Map::new();
        body.insert("callId".into(), Value::String(spelled("call", call)));
        body.insert("target".into(), Value::String(target.to_owned()));
        body.insert(
            "expectedIncarnation".into(),
            expected_incarnation.map_or(Value::Null, |e| Value::String(e.to_owned())),
        );
        body.insert("method".into(), Value::String(method.to_owned()));
        body.insert("payload".into(), Value::Object(payload));
        match send_command(&self.connection, "rpc.call", body, attachments).await {
            Ok(v) => {
                pending.service_incarnation = str_field(&v, "serviceIncarnation");
                Ok(pending)
            }
            Err(e) => {
                self.connection.lock().calls.remove(&call);
                pending.rx = None;
                Err(e)
            }
        }
    }

    /// Calls and waits for the terminal result, or until `deadline` (caller-owned).
    ///
    /// # Errors
    ///
    /// The admission refusal, `call.failed` (with its dispatch certainty),
    /// [`BusError::DeadlineElapsed`] or [`BusError::RouterLost`].
    pub async fn call(
        &self,
        target: &str,
        method: &str,
        payload: Map<String, Value>,
        attachments: &[(&str, &Artifact)],
        expected_incarnation: Option<&str>,
        deadline: Option<Instant>,
    ) -> Result<CallResult, BusError> {
        self.start_call(target, method, payload, attachments, expected_incarnation)
            .await?
            .result(deadline)
            .await
    }
}

/// An admitted call awaiting its result. Dropping it unfinished sends a best-effort cancel.
pub struct PendingCall {
    pub(super) client: Client,
    pub(super) call: u64,
    pub(super) rx: Option<oneshot::Receiver<Result<CallResult, BusError>>>,
    pub(super) service_incarnation: String,
}

impl std::fmt::Debug for PendingCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PendingCall(call-{})", self.call)
    }
}

/// `rpc.cancel` states (contracts §3.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelState {
    /// Never dispatched; nothing ran.
    CancelledBeforeDispatch,
    /// Dispatched; the handler may run to completion.
    ExecutionUnknown,
    /// A terminal result was already admitted.
    Completed,
    /// Unknown or retired call.
    CallGone,
}

impl PendingCall {
    /// The bus call id.
    #[must_use]
    pub fn call_id(&self) -> BusCallId {
        BusCallId(self.call)
    }

    /// The incarnation that admitted the call.
    #[must_use]
    pub fn service_incarnation(&self) -> &str {
        &self.service_incarnation
    }

    /// Waits for the terminal result or the deadline. At the deadline the call is cancelled and
    /// the error says whether the handler may have run.
    ///
    /// # Errors
    ///
    /// As [`Client::call`].
    pub async fn result(mut self, deadline: Option<Instant>) -> Result<CallResult, BusError> {
        let Some(mut rx) = self.rx.take() else {
            return Err(self.client.connection.lost());
        };
        let outcome = match deadline {
            None => (&mut rx).await,
            Some(at) => match tokio::time::timeout_at(at, &mut rx).await {
                Ok(r) => r,
                Err(_) => {
                    let state = self.send_cancel().await?;
                    return match state {
                        CancelState::Completed => rx
                            .await
                            .unwrap_or_else(|_| Err(self.client.connection.lost())),
                        CancelState::CancelledBeforeDispatch => Err(BusError::DeadlineElapsed {
                            dispatch: Dispatch::NotDispatched,
                        }),
                        CancelState::ExecutionUnknown | CancelState::CallGone => {
                            match rx.try_recv() {
                                Ok(r) => r,
                                Err(_) => Err(BusError::DeadlineElapsed {
                                    dispatch: Dispatch::Unknown,
                                }),
                            }
                        }
                    };
                }
            },
        };
        outcome.unwrap_or_else(|_| Err(self.client.connection.lost()))
    }

    /// Cancels the call.
    ///
    /// # Errors
    ///
    /// [`BusError::RouterLost`].
    pub async fn cancel(mut self) -> Result<CancelState, BusError> {
        self.rx = None;
        self.send_cancel().await
    }

    async fn send_cancel(&mut self) -> Result<CancelState, BusError> {
        self.client.connection.lock().calls.remove(&self.call);
        let v = self
            .client
            .command(
                "rpc.cancel",
                into_map(json!({"callId": spelled("call", self.call)})),
            )
            .await?;
        Ok(match v.get("state").and_then(Value::as_str) {
            Some("cancelled-before-dispatch") => CancelState::CancelledBeforeDispatch,
            Some("execution-unknown") => CancelState::ExecutionUnknown,
            Some("completed") => CancelState::Completed,
            _ => CancelState::CallGone,
        })
    }
}

impl Drop for PendingCall {
    fn drop(&mut self) {
        if self.rx.take().is_some() {
            let removed = self
                .client
                .connection
                .lock()
                .calls
                .remove(&self.call)
                .is_some();
            if removed {
                self.client.connection.outbox.push(
                    Lane::Rpc,
                    OutgoingCommand::Command {
                        op: "rpc.cancel",
                        body: into_map(json!({"callId": spelled("call", self.call)})),
                        attachments: Vec::new(),
                        reply: None,
                    },
                );
            }
        }
    }
}

/// A terminal call result.
#[derive(Debug)]
pub struct CallResult {
    /// The call.
    pub call_id: BusCallId,
    /// Who answered.
    pub responder: Peer,
    /// The incarnation that answered.
    pub service_incarnation: String,
    /// The responder's outcome object.
    pub outcome: Map<String, Value>,
    /// Artifacts of the result, owned through this delivery.
    pub attachments: Vec<(Id, Artifact)>,
    /// The delivery's guard.
    pub delivery: Delivered,
}
