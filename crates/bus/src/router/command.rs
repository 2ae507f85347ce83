//! One command from a connection: the envelope-level checks (kind, `replyTo`, increasing
//! `msg-<n>` ids, hello first and once, attachments only where allowed), which close the
//! connection, and the dispatch of each operation to its own handler, whose body-level
//! refusals answer `ok: false` and leave the connection up. Then the reply is queued, deferred
//! when it only confirms what the sender already assumes.
//!
//! This file knows the operation names and where each is handled; it does not know what any
//! handler does with the state.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::artifacts::{self, AllocateBody, OwnedRefBody, ReleaseBody, SealBody};
use super::envelopes::reply_envelope;
use super::hello;
use super::ownership::{self, ConsumedBody};
use super::pubsub::{self, DeclareBody, SubscribeBody, TopicNameBody, UnsubscribeBody};
use super::rpc::{self, CancelBody, ResponderBody};
use super::services::{self, RegisterBody, UnregisterBody};
use super::state::{Conn, ConnId, OutgoingFrame, RouterCore, RouterState};
use crate::limits::Limits;
use crate::outbox::Lane;
use crate::wire::{Envelope, ErrorCode, Kind, unspell};

/// A refusal answered to one command; the connection stays up.
#[derive(Debug)]
pub(super) struct CommandRefusal {
    pub(super) code: ErrorCode,
    pub(super) message: String,
}

/// What a command handler answers: the reply's `value`, or its refusal.
pub(super) type CommandResult = Result<Map<String, Value>, CommandRefusal>;

pub(super) fn refuse(code: ErrorCode, message: impl Into<String>) -> CommandRefusal {
    CommandRefusal {
        code,
        message: message.into(),
    }
}

/// An `INVALID_ENVELOPE` refusal (a malformed body).
pub(super) fn invalid(message: impl Into<String>) -> CommandRefusal {
    refuse(ErrorCode::InvalidEnvelope, message)
}

/// Why a connection is being closed by the router.
pub(super) struct Closing {
    pub(super) code: ErrorCode,
    pub(super) message: String,
}

/// Handles one command envelope: envelope-level checks close the connection, body-level
/// refusals answer `ok: false`.
pub(super) async fn handle(
    core: &Arc<RouterCore>,
    conn: ConnId,
    mut env: Envelope,
    frame_len: usize,
    hello_done: &mut bool,
) -> Result<(), Closing> {
    check_envelope(core, conn, &env, *hello_done)?;
    let allows_attachments = matches!(env.op.as_str(), "rpc.call" | "rpc.reply" | "publish");
    let result = if !allows_attachments && !env.attachments.is_empty() {
        Err(invalid(format!("{} carries no attachments", env.op)))
    } else {
        match env.op.as_str() {
            "bus.hello" => {
                let value = hello::hello(core, conn, &env.id, &env.body)?;
                *hello_done = true;
                Ok(value)
            }
            "artifact.allocate" => match AllocateBody::parse(&env.body) {
                Ok(body) => artifacts::allocate(core, conn, &body).await,
                Err(r) => Err(r),
            },
            "artifact.seal" => match SealBody::parse(&env.body) {
                Ok(body) => artifacts::seal(core, conn, body).await,
                Err(r) => Err(r),
            },
            _ => {
                let mut garbage = Vec::new();
                let r = {
                    let mut st = core.lock();
                    dispatch(core, &mut st, conn, &mut env, frame_len, &mut garbage)
                };
                core.unlink_all(garbage);
                r
            }
        }
    };
    // Success of these only confirms what the sender already assumes: it may wait (ACK_DELAY).
    let deferred = result.is_ok()
        && matches!(
            env.op.as_str(),
            "rpc.reply" | "artifact.seal" | "delivery.consumed" | "artifact.release"
        );
    if deferred {
        reply_deferred(core, conn, &env.id, result);
    } else {
        reply(core, conn, &env.id, result);
    }
    Ok(())
}

/// The envelope-level rules of a command; breaking one closes the connection.
fn check_envelope(
    core: &RouterCore,
    conn: ConnId,
    env: &Envelope,
    hello_done: bool,
) -> Result<(), Closing> {
    let close = |message: String| Closing {
        code: ErrorCode::InvalidEnvelope,
        message,
    };
    if env.kind != Kind::Command {
        return Err(close(format!(
            "a client sends commands, not {}",
            env.kind.as_str()
        )));
    }
    if env.reply_to.is_some() {
        return Err(close("a command has replyTo null".into()));
    }
    let Some(serial) = unspell("msg", &env.id) else {
        return Err(close(format!("command id {:?} is not msg-<U64>", env.id)));
    };
    {
        let mut st = core.lock();
        let c = st
            .conns
            .get_mut(&conn)
            .ok_or_else(|| close("connection gone".into()))?;
        if c.last_msg.is_some_and(|last| serial <= last) {
            return Err(close(format!("command id {} does not increase", env.id)));
        }
        c.last_msg = Some(serial);
    }
    let is_hello = env.op == "bus.hello";
    if is_hello == hello_done {
        return Err(close(if is_hello {
            "a second bus.hello".into()
        } else {
            format!("{} before bus.hello", env.op)
        }));
    }
    Ok(())
}

/// The synchronous commands, each parsed into its typed body and handled under the state lock.
/// The three that carry attachments (`rpc.call`, `rpc.reply`, `publish`) take the envelope, as
/// they move its payload and attachments on.
fn dispatch(
    core: &RouterCore,
    st: &mut RouterState,
    conn: ConnId,
    env: &mut Envelope,
    frame_len: usize,
    garbage: &mut Vec<String>,
) -> CommandResult {
    let body = &env.body;
    let limits = &core.limits;
    match env.op.as_str() {
        "service.register" => {
            services::register(core, st, conn, &RegisterBody::parse(body, limits)?)
        }
        "service.unregister" => {
            services::unregister(core, st, conn, &UnregisterBody::parse(body)?, garbage)
        }
        "rpc.call" => rpc::call(core, st, conn, env, frame_len),
        "rpc.reply" => rpc::reply(core, st, conn, env, frame_len),
        "rpc.responder.release" => rpc::release(core, st, conn, &ResponderBody::parse(body)?),
        "rpc.cancel" => rpc::cancel_command(core, st, conn, &CancelBody::parse(body)?, garbage),
        "topic.declare" => pubsub::declare(core, st, &DeclareBody::parse(body)?),
        "topic.clear" => pubsub::clear(st, &TopicNameBody::parse(body)?, garbage),
        "topic.delete" => pubsub::delete(st, &TopicNameBody::parse(body)?, garbage),
        "subscribe" => pubsub::subscribe(core, st, conn, &SubscribeBody::parse(body, limits)?),
        "unsubscribe" => pubsub::unsubscribe(st, conn, &UnsubscribeBody::parse(body)?, garbage),
        "publish" => pubsub::publish(core, st, conn, env, frame_len, garbage),
        "delivery.consumed" => {
            ownership::consumed(core, st, conn, &ConsumedBody::parse(body, limits)?, garbage)
        }
        "artifact.open" => artifacts::open(core, st, conn, &OwnedRefBody::parse(body)?),
        "artifact.retain" => artifacts::retain(core, st, conn, &OwnedRefBody::parse(body)?),
        "artifact.release" => {
            artifacts::release(st, conn, &ReleaseBody::parse(body, limits)?, garbage)
        }
        other => Err(invalid(format!("unknown operation {other}"))),
    }
}

/// Queues a command's successful reply to go with the connection's next frame (or after
/// [`ACK_DELAY`](super::connection::ACK_DELAY)).
fn reply_deferred(core: &RouterCore, conn: ConnId, to: &str, result: CommandResult) {
    let env = reply_envelope(to, result);
    let st = core.lock();
    if let Some(c) = st.conns.get(&conn) {
        match c
            .outbox
            .push_deferred(Lane::Control, OutgoingFrame::Frame(env))
        {
            Some(len) if len > core.limits.max_control_frames => c.outbox.kill(),
            _ => {}
        }
    }
}

/// Queues the reply to the command `to` on the control lane.
pub(super) fn reply(core: &RouterCore, conn: ConnId, to: &str, result: CommandResult) {
    let env = reply_envelope(to, result);
    let st = core.lock();
    if let Some(c) = st.conns.get(&conn) {
        push_control(&core.limits, c, env);
    }
}

/// Queues a control frame; an overfull control lane closes the connection rather than dropping.
pub(super) fn push_control(limits: &Limits, c: &Conn, env: Envelope) {
    match c.outbox.push(Lane::Control, OutgoingFrame::Frame(env)) {
        Some(len) if len > limits.max_control_frames => c.outbox.kill(),
        _ => {}
    }
}
