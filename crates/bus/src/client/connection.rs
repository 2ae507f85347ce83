//! The connection every handle of one client shares: its command queue (the three-lane
//! outbox), what it waits for (pending replies, calls, services, subscriptions), why it was
//! lost, and the writer task that assigns `msg-<n>` ids in write order and batches
//! consumptions and releases into one command each.
//!
//! It sends commands and remembers who waits for their replies; reading what comes back is
//! `inbound`'s, and what any handle means is its own module's.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};

use super::local::LocalHandle;
use super::{CallResult, Message, Request};
use crate::error::BusError;
use crate::link::Sink;
use crate::outbox::{Lane, Outbox};
use crate::wire::{Attachment, Envelope, Kind, spelled};

/// Releases batched into one command.
const MAX_BATCH: usize = 64;

/// What a handle queues for the writer: a command, or a consumption or release it batches.
pub(super) enum OutgoingCommand {
    Command {
        op: &'static str,
        body: Map<String, Value>,
        attachments: Vec<Attachment>,
        reply: Option<oneshot::Sender<Result<Map<String, Value>, BusError>>>,
    },
    Consumed(u64),
    Release(u64),
}

/// Where a command's reply value (or refusal) goes.
pub(super) type ReplySender = oneshot::Sender<Result<Map<String, Value>, BusError>>;
/// Where a command's reply value (or refusal) arrives.
pub(super) type ReplyReceiver = oneshot::Receiver<Result<Map<String, Value>, BusError>>;

/// What the connection waits for, under one lock.
pub(super) struct ConnectionState {
    pub(super) next_call: u64,
    pub(super) pending: BTreeMap<u64, (&'static str, ReplySender)>,
    pub(super) calls: BTreeMap<u64, oneshot::Sender<Result<CallResult, BusError>>>,
    pub(super) services: BTreeMap<String, mpsc::UnboundedSender<Request>>,
    pub(super) subs: BTreeMap<u64, mpsc::UnboundedSender<Message>>,
    pub(super) max_sub: u64,
    pub(super) early: BTreeMap<u64, Vec<Message>>,
    pub(super) lost: Option<String>,
    pub(super) next_local: u64,
}

/// One connection to a router, shared by every handle on it.
pub(super) struct Connection {
    pub(super) outbox: Outbox<OutgoingCommand>,
    pub(super) state: Mutex<ConnectionState>,
    pub(super) store_root: PathBuf,
    /// Opaque in-process shortcuts to services, by exact service name (see
    /// [`Client::offer_local`](super::Client::offer_local)); the bus never calls them.
    pub(super) local: Mutex<BTreeMap<String, LocalHandle>>,
}

impl Connection {
    pub(super) fn lock(&self) -> MutexGuard<'_, ConnectionState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(super) fn lost(&self) -> BusError {
        BusError::lost(
            self.lock()
                .lost
                .clone()
                .unwrap_or_else(|| "the connection is closed".into()),
        )
    }
}

/// Ends the connection when the last user handle goes.
pub(super) struct CloseOnDrop(pub(super) Arc<Connection>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.outbox.kill();
    }
}

/// Queues a command and waits for its reply.
pub(super) async fn send_command(
    connection: &Arc<Connection>,
    op: &'static str,
    body: Map<String, Value>,
    attachments: Vec<Attachment>,
) -> Result<Map<String, Value>, BusError> {
    let rx = queue_command(connection, op, body, attachments)?;
    rx.await.unwrap_or_else(|_| Err(connection.lost()))
}

/// Queues a command; the receiver gets its reply.
pub(super) fn queue_command(
    connection: &Arc<Connection>,
    op: &'static str,
    body: Map<String, Value>,
    attachments: Vec<Attachment>,
) -> Result<ReplyReceiver, BusError> {
    let (tx, rx) = oneshot::channel();
    if connection.lock().lost.is_some() {
        return Err(connection.lost());
    }
    let queued = connection.outbox.push(
        Lane::Rpc,
        OutgoingCommand::Command {
            op,
            body,
            attachments,
            reply: Some(tx),
        },
    );
    if queued.is_none() {
        return Err(connection.lost());
    }
    Ok(rx)
}

/// The client's writer: assigns `msg-<n>` in write order and batches releases.
pub(super) async fn write_loop(mut sink: impl Sink, connection: Arc<Connection>) {
    let mut next_msg: u64 = 0;
    let mut batch = Vec::with_capacity(MAX_BATCH);
    let mut envs = Vec::with_capacity(MAX_BATCH);
    // One wait for the kill, registered once rather than once a batch.
    let mut killed = std::pin::pin!(connection.outbox.killed());
    loop {
        batch.clear();
        let more = connection
            .outbox
            .pop_batch(MAX_BATCH, &mut batch, true)
            .open;
        if batch.is_empty() {
            if !more {
                break;
            }
            tokio::select! {
                biased;
                () = &mut killed => break,
                () = connection.outbox.wait() => continue,
            }
        }
        let mut consumed = Vec::new();
        let mut released = Vec::new();
        for item in batch.drain(..) {
            let (op, body, attachments, reply) = match item {
                OutgoingCommand::Consumed(d) => {
                    consumed.push(Value::String(spelled("dlv", d)));
                    continue;
                }
                OutgoingCommand::Release(o) => {
                    released.push(Value::String(spelled("own", o)));
                    continue;
                }
                OutgoingCommand::Command {
                    op,
                    body,
                    attachments,
                    reply,
                } => (op, body, attachments, reply),
            };
            next_msg += 1;
            if let Some(tx) = reply {
                connection.lock().pending.insert(next_msg, (op, tx));
            }
            let env = Envelope {
                id: spelled("msg", next_msg),
                reply_to: None,
                kind: Kind::Command,
                op: op.into(),
                body,
                attachments,
            };
            envs.push(env);
        }
        for (op, field, ids) in [
            ("delivery.consumed", "deliveryIds", consumed),
            ("artifact.release", "ownerIds", released),
        ] {
            for chunk in ids.chunks(MAX_BATCH) {
                next_msg += 1;
                let mut body = Map::new();
                body.insert(field.into(), Value::Array(chunk.to_vec()));
                let env = Envelope {
                    id: spelled("msg", next_msg),
                    reply_to: None,
                    kind: Kind::Command,
                    op: op.into(),
                    body,
                    attachments: Vec::new(),
                };
                envs.push(env);
            }
        }
        let ok = tokio::select! {
            biased;
            () = &mut killed => false,
            r = sink.send(&mut envs) => r.is_ok(),
        };
        if !ok {
            break;
        }
    }
    sink.close().await;
    connection.outbox.kill();
}
