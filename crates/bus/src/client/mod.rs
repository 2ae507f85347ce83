//! The client SDK: one connection to a router, with typed handles for calls, services,
//! subscriptions and artifacts.
//!
//! Ownership follows contracts §3.8 on this side too: every delivered message owns a shared
//! [`Delivered`] guard, and every artifact extracted from it clones that guard, so the delivery
//! stays alive until the message and all its artifacts are dropped; the last drop queues
//! `delivery.consumed` on the control lane. An explicit hold ([`Artifact::retain`], a sealed
//! writer) is released the same way when its last clone goes. A responder dropped without
//! replying releases the call (`rpc.responder.release`); a pending call dropped before its result
//! sends a best-effort `rpc.cancel`.
//!
//! This file owns the [`Client`] handle, who it says it is and what the hello answered; the
//! concerns live in their own modules:
//!
//! - `connect`: connection setup over each transport, and the hello.
//! - `connection`: the connection every handle shares, its command queue and its writer.
//! - `inbound`: the reader: replies, deliveries and notices to their waiting handles.
//! - `calls`: calls, pending calls, cancellation and results.
//! - `services`: registrations, requests and responders.
//! - `subscriptions`: topics, subscriptions, publications and messages.
//! - `artifacts`: allocation, writers, sealing and artifact handles.
//! - `guards`: the delivery and hold guards whose last drop releases a root.
//! - `local`: in-process shortcuts and in-memory artifacts (contracts §3.11).

mod artifacts;
mod calls;
mod connect;
mod connection;
mod guards;
mod inbound;
mod local;
mod services;
mod subscriptions;

use std::path::PathBuf;
use std::sync::Arc;

use flysim_types::{BusCallId, Id};
use serde_json::{Map, Value};

pub use self::artifacts::{Artifact, ArtifactWriter};
pub use self::calls::{CallResult, CancelState, PendingCall};
use self::connection::{CloseOnDrop, Connection, send_command};
pub use self::guards::Delivered;
pub use self::local::LocalHandle;
pub use self::services::{Request, Responder, Service};
pub use self::subscriptions::{Message, Published, SubscribeMode, SubscribeOptions, Subscription};
use crate::error::BusError;

/// Who this client is.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// The client id (one live connection per id).
    pub client_id: Id,
    /// This connection's incarnation; must exceed every earlier one of the same id.
    pub incarnation: u64,
    /// The store root shared with the router, under which location grants resolve.
    pub store_root: PathBuf,
}

/// The identity of the other end of a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    /// Its client id (shared: a peer is copied onto every call).
    pub client_id: Arc<str>,
    /// Its incarnation.
    pub incarnation: u64,
}

/// What the router said in the hello, and who this client said it was.
#[derive(Debug, Clone)]
pub struct HelloInfo {
    /// `router-<tag>`.
    pub router_id: String,
    /// `conn-<n>`.
    pub connection_id: String,
    /// The router's limits object.
    pub limits: Map<String, Value>,
    /// This client's identity, as the router stamps it on its calls.
    pub identity: Peer,
}

/// A connection to a router. Cloning shares it; dropping every clone (and every service,
/// subscription and pending call) closes it.
#[derive(Clone)]
pub struct Client {
    connection: Arc<Connection>,
    /// Ends the connection when the last handle on it goes.
    _closer: Arc<CloseOnDrop>,
    hello: Arc<HelloInfo>,
    /// The store id of this connection's in-memory artifacts, spelled once
    /// ([`Client::local_artifact`]; `None`: the router's ids do not make a valid one).
    local_store: Arc<std::sync::OnceLock<Option<Id>>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("router_id", &self.hello.router_id)
            .field("connection_id", &self.hello.connection_id)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// What the router said in the hello.
    #[must_use]
    pub fn hello(&self) -> &HelloInfo {
        &self.hello
    }

    /// Whether the connection is gone (every call on it fails with `ROUTER_LOST`).
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.connection.lock().lost.is_some()
    }

    /// Resolves once the connection is gone.
    pub async fn closed(&self) {
        self.connection.outbox.killed().await;
    }

    /// The error a call on a closed connection fails with.
    #[must_use]
    pub fn lost_error(&self) -> BusError {
        self.connection.lost()
    }

    /// Takes the next bus call id of this connection without making a bus call (a call served
    /// in process, see [`Client::offer_local`]): ids stay unique per connection and increasing;
    /// the router accepts the gap.
    #[must_use]
    pub fn reserve_call_id(&self) -> BusCallId {
        let mut st = self.connection.lock();
        st.next_call += 1;
        BusCallId(st.next_call)
    }

    /// Sends any command and waits for its reply value (management ops take no attachments).
    ///
    /// # Errors
    ///
    /// [`BusError::Refused`] with the router's code, or [`BusError::RouterLost`].
    pub async fn command(
        &self,
        op: &'static str,
        body: Map<String, Value>,
    ) -> Result<Map<String, Value>, BusError> {
        send_command(&self.connection, op, body, Vec::new()).await
    }
}

/// The object inside `v`, or an empty one.
fn into_map(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// The string field `k` of a reply value, or an empty string.
fn str_field(v: &Map<String, Value>, k: &str) -> String {
    v.get(k)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}
