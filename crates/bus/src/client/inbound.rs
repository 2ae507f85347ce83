//! The client's reader: checks that router envelope ids increase, hands each reply to the
//! command waiting for it, each delivery (request, result, topic message) to its handle with
//! a fresh delivery guard, and each notice to what it concerns; when the connection ends it
//! fails everything still waiting.
//!
//! It only routes what arrives; it never answers a request or sends a command of its own,
//! except releasing a hold granted to a caller that gave up.

use std::sync::Arc;

use flysim_types::{BusCallId, Id};
use serde_json::{Map, Value};

use super::artifacts::Artifact;
use super::connection::{Connection, OutgoingCommand};
use super::guards::{DeliveryGuard, Owner};
use super::{CallResult, Delivered, Message, Peer, Request, Responder};
use crate::error::BusError;
use crate::link::{Inbound, Source};
use crate::outbox::Lane;
use crate::wire::{Dispatch, Envelope, ErrorCode, Kind, unspell};

/// The client's reader: replies to pending commands, deliveries to their handles.
pub(super) async fn read_loop(mut source: impl Source, connection: Arc<Connection>) {
    let mut last_id = 0u64;
    let mut closing: Option<String> = None;
    // One wait for the kill, registered once rather than once a frame.
    let mut killed = std::pin::pin!(connection.outbox.killed());
    let reason = loop {
        let outcome = tokio::select! {
            biased;
            () = &mut killed => break "the client closed the connection".to_owned(),
            o = source.next() => o,
        };
        let env = match outcome {
            Inbound::Envelope(env, _) => env,
            Inbound::Closed => {
                break closing
                    .take()
                    .unwrap_or_else(|| "the router closed the connection".into());
            }
            Inbound::Broken(why) => break closing.take().unwrap_or(why),
            Inbound::Refused(why) => break why,
        };
        match unspell("bus", &env.id) {
            Some(n) if n > last_id => last_id = n,
            _ => {
                break format!(
                    "router envelope id {:?} is not an increasing bus-<n>",
                    env.id
                );
            }
        }
        match env.kind {
            Kind::Command => break "the router sent a command".into(),
            Kind::Reply => on_reply(&connection, env),
            Kind::Delivery => on_delivery(&connection, env),
            Kind::Notice => {
                if let Some(why) = on_notice(&connection, env) {
                    closing = Some(why);
                }
            }
        }
    };
    lose(&connection, reason);
}

/// Marks the connection lost and fails everything waiting on it.
fn lose(connection: &Arc<Connection>, reason: String) {
    connection.outbox.kill();
    let (pending, calls) = {
        let mut st = connection.lock();
        st.lost.get_or_insert(reason.clone());
        st.services.clear();
        st.subs.clear();
        st.early.clear();
        (
            std::mem::take(&mut st.pending),
            std::mem::take(&mut st.calls),
        )
    };
    for (_, (_, tx)) in pending {
        let _ = tx.send(Err(BusError::lost(reason.clone())));
    }
    for (_, tx) in calls {
        let _ = tx.send(Err(BusError::lost(reason.clone())));
    }
}

/// Hands a reply to the command waiting for it.
fn on_reply(connection: &Arc<Connection>, env: Envelope) {
    let Some(n) = env.reply_to.as_deref().and_then(|r| unspell("msg", r)) else {
        return;
    };
    let Some((op, tx)) = connection.lock().pending.remove(&n) else {
        return;
    };
    let mut body = env.body;
    let result = if body.get("ok").and_then(Value::as_bool) == Some(true) {
        match body.remove("value") {
            Some(Value::Object(v)) => Ok(v),
            _ => Ok(Map::new()),
        }
    } else {
        let error = body
            .get("error")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let text = |k: &str| {
            error
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        Err(BusError::Refused {
            op: op.into(),
            code: ErrorCode::parse(&text("code")).unwrap_or(ErrorCode::InvalidEnvelope),
            message: text("message"),
            dispatch: Dispatch::parse(&text("dispatch")).unwrap_or(Dispatch::NotDispatched),
        })
    };
    if let Err(Ok(value)) = tx.send(result) {
        // The caller gave up; a hold granted to it is still released (contracts §3.8).
        if let Some(own) = value
            .get("ownerId")
            .and_then(Value::as_str)
            .and_then(|s| unspell("own", s))
        {
            connection
                .outbox
                .push(Lane::Control, OutgoingCommand::Release(own));
        }
    }
}

/// Reads a `{clientId, clientIncarnation}` object.
fn parse_peer(v: Option<&Value>) -> Peer {
    let v = v.and_then(Value::as_object);
    Peer {
        client_id: v
            .and_then(|m| m.get("clientId"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .into(),
        incarnation: v
            .and_then(|m| m.get("clientIncarnation"))
            .and_then(Value::as_str)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0),
    }
}

/// Hands a delivery, with a fresh guard, to the handle it is for.
fn on_delivery(connection: &Arc<Connection>, env: Envelope) {
    let mut body = env.body;
    let Some(dlv) = body
        .get("deliveryId")
        .and_then(Value::as_str)
        .and_then(|s| unspell("dlv", s))
    else {
        return;
    };
    let guard = Arc::new(DeliveryGuard {
        dlv,
        connection: Arc::clone(connection),
    });
    let attachments: Vec<(Id, Artifact)> = env
        .attachments
        .into_iter()
        .map(|a| {
            (
                a.name,
                Artifact {
                    reference: a.reference,
                    owner: Owner::Delivery(Arc::clone(&guard)),
                    seal: None,
                },
            )
        })
        .collect();
    let delivered = Delivered(guard);
    let text = |k: &str| {
        body.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    // The payload or outcome object moves out of the body: it is the bulk of the frame.
    let take_object = |body: &mut Map<String, Value>, k: &str| match body.remove(k) {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let call = unspell("call", &text("callId")).unwrap_or(0);
    match env.op.as_str() {
        "rpc.request" => {
            let target = text("target");
            let request = Request {
                call_id: BusCallId(call),
                caller: parse_peer(body.get("caller")),
                method: text("method"),
                payload: take_object(&mut body, "payload"),
                attachments,
                responder: Responder {
                    connection: Arc::clone(connection),
                    call,
                    dlv,
                    done: false,
                },
                delivery: delivered,
            };
            let tx = connection.lock().services.get(&target).cloned();
            if let Some(tx) = tx {
                let _ = tx.send(request);
            }
        }
        "rpc.result" => {
            let result = CallResult {
                call_id: BusCallId(call),
                responder: parse_peer(body.get("responder")),
                service_incarnation: text("serviceIncarnation"),
                outcome: take_object(&mut body, "outcome"),
                attachments,
                delivery: delivered,
            };
            let tx = connection.lock().calls.remove(&call);
            if let Some(tx) = tx {
                let _ = tx.send(Ok(result));
            }
        }
        "topic.message" => {
            let sub = unspell("sub", &text("subscriptionId")).unwrap_or(0);
            let num = |k: &str| text(k).parse().unwrap_or(0);
            let (topic_sequence, replaced) = (num("topicSequence"), num("replaced"));
            let message = Message {
                subscription_id: sub,
                topic_sequence,
                replaced,
                payload: take_object(&mut body, "payload"),
                attachments,
                delivery: delivered,
            };
            let mut st = connection.lock();
            if let Some(tx) = st.subs.get(&sub) {
                let _ = tx.send(message);
            } else if sub > st.max_sub {
                // The subscribe reply is still on its way: keep the message for the handle.
                st.early.entry(sub).or_default().push(message);
            }
        }
        _ => {}
    }
}

/// Handles a notice; returns the closing reason for `connection.closing`.
fn on_notice(connection: &Arc<Connection>, env: Envelope) -> Option<String> {
    let text = |k: &str| {
        env.body
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    match env.op.as_str() {
        "call.failed" => {
            let call = unspell("call", &text("callId")).unwrap_or(0);
            let tx = connection.lock().calls.remove(&call);
            if let Some(tx) = tx {
                let _ = tx.send(Err(BusError::Refused {
                    op: "rpc.call".into(),
                    code: ErrorCode::parse(&text("code")).unwrap_or(ErrorCode::CallGone),
                    message: text("message"),
                    dispatch: Dispatch::parse(&text("dispatch")).unwrap_or(Dispatch::Unknown),
                }));
            }
            None
        }
        "subscription.closed" => {
            let sub = unspell("sub", &text("subscriptionId")).unwrap_or(0);
            connection.lock().subs.remove(&sub);
            None
        }
        "connection.closing" => Some(format!("{}: {}", text("code"), text("message"))),
        _ => None,
    }
}
