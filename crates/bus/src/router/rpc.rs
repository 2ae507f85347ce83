//! RPC routing: `rpc.call` admission (call-id watermark, active-call quota, target and
//! incarnation, queue space, attachments, the request's size), dispatch of queued calls while
//! the registration has in-flight credit, `rpc.reply` and `rpc.responder.release` from the
//! responder, and `rpc.cancel` with the complete state enum of contracts §3.6.
//!
//! It moves calls between a registration's queue, the responder's connection and the caller's
//! result delivery; it never reads a payload or an outcome, and registering services is
//! `services`'.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use flysim_types::Id;
use serde_json::{Map, Value, json};

use super::command::{CommandRefusal, CommandResult, invalid, push_control, refuse};
use super::envelopes::{
    LONGEST_BUS_ID, delivery, delivery_fits_envelope, into_map, notice, peer, rebind, u64s,
};
use super::ownership::{add_roots, check_attachments, drop_roots};
use super::state::{
    CELL_CANCELLED, CELL_PENDING, Call, CallKey, CallState, ConnId, Delivery, DeliveryKind,
    OutgoingFrame, ResponderAnswer, RouterCore, RouterState,
};
use crate::outbox::Lane;
use crate::wire::{Attachment, Body, Envelope, ErrorCode, Kind, check_method, spelled, unspell};

/// `rpc.call`'s body. The call id is judged first and on its own: the caller's watermark moves
/// and its active-call quota is checked before the rest of the body, so a call refused for its
/// route still retires its id.
struct CallBody<'a> {
    serial: u64,
    route: Result<CallRoute<'a>, CommandRefusal>,
}

/// Where `rpc.call` goes and what it carries.
struct CallRoute<'a> {
    target: &'a str,
    expected: Option<&'a str>,
    method: &'a str,
    payload: &'a Map<String, Value>,
}

impl<'a> CallBody<'a> {
    fn parse(body: &'a Map<String, Value>) -> Result<Self, CommandRefusal> {
        let b = Body::exact(
            body,
            &[
                "callId",
                "target",
                "expectedIncarnation",
                "method",
                "payload",
            ],
        )
        .map_err(invalid)?;
        let serial = call_serial(&b)?;
        let route = CallRoute::fields(&b);
        Ok(Self { serial, route })
    }
}

impl<'a> CallRoute<'a> {
    fn fields(b: &Body<'a>) -> Result<Self, CommandRefusal> {
        let target = b.name("target").map_err(invalid)?;
        let expected = b.opt_str("expectedIncarnation").map_err(invalid)?;
        let method = b.str("method").map_err(invalid)?;
        check_method(method).map_err(invalid)?;
        let payload = b.object("payload").map_err(invalid)?;
        Ok(Self {
            target,
            expected,
            method,
            payload,
        })
    }
}

fn call_serial(b: &Body<'_>) -> Result<u64, CommandRefusal> {
    b.str("callId")
        .ok()
        .and_then(|s| unspell("call", s))
        .ok_or_else(|| invalid("`callId` is call-<U64>"))
}

/// A responder's `{callId, requestDeliveryId}` (`rpc.responder.release`, and inside
/// `rpc.reply`).
#[derive(Clone, Copy)]
pub(super) struct ResponderBody {
    serial: u64,
    dlv: u64,
}

impl ResponderBody {
    pub(super) fn parse(body: &Map<String, Value>) -> Result<Self, CommandRefusal> {
        let b = Body::exact(body, &["callId", "requestDeliveryId"]).map_err(invalid)?;
        Self::fields(&b)
    }

    fn fields(b: &Body<'_>) -> Result<Self, CommandRefusal> {
        let serial = call_serial(b)?;
        let dlv = b
            .str("requestDeliveryId")
            .ok()
            .and_then(|s| unspell("dlv", s))
            .ok_or_else(|| invalid("`requestDeliveryId` is dlv-<U64>"))?;
        Ok(Self { serial, dlv })
    }
}

/// `rpc.reply`'s body.
struct ReplyBody<'a> {
    outcome: &'a Map<String, Value>,
    call: ResponderBody,
}

impl<'a> ReplyBody<'a> {
    fn parse(body: &'a Map<String, Value>) -> Result<Self, CommandRefusal> {
        let b = Body::exact(body, &["callId", "requestDeliveryId", "outcome"]).map_err(invalid)?;
        let outcome = b.object("outcome").map_err(invalid)?;
        Ok(Self {
            outcome,
            call: ResponderBody::fields(&b)?,
        })
    }
}

/// `rpc.cancel`'s body.
pub(super) struct CancelBody {
    serial: u64,
}

impl CancelBody {
    pub(super) fn parse(body: &Map<String, Value>) -> Result<Self, CommandRefusal> {
        let b = Body::exact(body, &["callId"]).map_err(invalid)?;
        Ok(Self {
            serial: call_serial(&b)?,
        })
    }
}

/// `rpc.call`: admits the call into the target's queue and dispatches what the registration's
/// credit allows.
pub(super) fn call(
    core: &RouterCore,
    st: &mut RouterState,
    conn: ConnId,
    env: &mut Envelope,
    frame_len: usize,
) -> CommandResult {
    let body = CallBody::parse(&env.body)?;
    let serial = body.serial;
    admit_serial(core, st, conn, serial)?;
    let route = body.route?;
    let incarnation = admit_route(core, st, &route)?;
    let arts = check_attachments(core, st, conn, &env.attachments)?;
    let caller = st
        .conns
        .get(&conn)
        .and_then(|c| c.client.clone())
        .ok_or_else(|| invalid("no hello"))?;
    let request_body = |dlv: u64| {
        json!({
            "deliveryId": spelled("dlv", dlv),
            "callId": spelled("call", serial),
            "caller": {"clientId": caller.0.as_str(), "clientIncarnation": u64s(caller.1)},
            "target": route.target,
            "serviceIncarnation": core.incarnation("svc", incarnation),
            "method": route.method,
            "payload": route.payload,
        })
    };
    if !delivery_fits_envelope(&core.limits, frame_len, || {
        delivery(
            "rpc.request",
            request_body(u64::MAX),
            rebind(&env.attachments, u64::MAX),
        )
    }) {
        return Err(invalid("the request delivery would exceed 64 KiB"));
    }
    add_roots(st, &arts);
    let key = (conn, serial);
    let (target, method) = (route.target.to_owned(), route.method.to_owned());
    // The payload moves from the command into the call (and from there into the delivery).
    let payload = match env.body.remove("payload") {
        Some(Value::Object(payload)) => payload,
        _ => Map::new(),
    };
    st.calls.insert(
        key,
        Call {
            caller,
            target: target.clone(),
            incarnation,
            method,
            payload,
            attachments: std::mem::take(&mut env.attachments),
            artifacts: arts,
            state: CallState::Queued,
            cell: Arc::new(AtomicU8::new(CELL_PENDING)),
        },
    );
    if let Some(c) = st.conns.get_mut(&conn) {
        c.active_calls.insert(serial);
    }
    if let Some(svc) = st.services.get_mut(&target) {
        svc.queue.push_back(key);
    }
    pump_service(core, st, &target);
    Ok(into_map(
        json!({"accepted": true, "serviceIncarnation": core.incarnation("svc", incarnation)}),
    ))
}

/// Moves the caller's call-id watermark to `serial` and checks its active-call quota.
fn admit_serial(
    core: &RouterCore,
    st: &mut RouterState,
    conn: ConnId,
    serial: u64,
) -> Result<(), CommandRefusal> {
    let c = st
        .conns
        .get_mut(&conn)
        .ok_or_else(|| invalid("connection gone"))?;
    if c.call_watermark.is_some_and(|w| serial <= w) {
        return Err(invalid(format!("call-{serial} is reused or retired")));
    }
    c.call_watermark = Some(serial);
    if c.active_calls.len() >= core.limits.max_active_calls_per_client {
        return Err(refuse(ErrorCode::Backpressure, "too many active calls"));
    }
    Ok(())
}

/// Checks the target is registered, of the expected incarnation, with room for one more call;
/// returns the registration's incarnation.
fn admit_route(
    core: &RouterCore,
    st: &RouterState,
    route: &CallRoute<'_>,
) -> Result<u64, CommandRefusal> {
    let target = route.target;
    let Some(svc) = st.services.get(target) else {
        return Err(refuse(ErrorCode::NoService, format!("no service {target}")));
    };
    if let Some(expected) = route.expected
        && core.parse_incarnation("svc", expected) != Some(svc.incarnation)
    {
        return Err(refuse(
            ErrorCode::TargetChanged,
            format!(
                "{target} is now {}",
                core.incarnation("svc", svc.incarnation)
            ),
        ));
    }
    let dispatch_now = svc.in_flight < svc.max_in_flight;
    if !dispatch_now && svc.queue.len() >= svc.max_queued as usize {
        return Err(refuse(
            ErrorCode::Backpressure,
            format!("{target} has no queue space"),
        ));
    }
    Ok(svc.incarnation)
}

/// Moves queued calls to the service's connection while it has in-flight credit.
pub(super) fn pump_service(core: &RouterCore, st: &mut RouterState, name: &str) {
    loop {
        let Some(svc) = st.services.get_mut(name) else {
            return;
        };
        if svc.in_flight >= svc.max_in_flight {
            return;
        }
        let Some(key) = svc.queue.pop_front() else {
            return;
        };
        svc.in_flight += 1;
        let svc_conn = svc.conn;
        let Some(c) = st.conns.get_mut(&svc_conn) else {
            return;
        };
        c.next_dlv += 1;
        let dlv = c.next_dlv;
        let Some(call) = st.calls.get_mut(&key) else {
            continue;
        };
        call.state = CallState::InFlight {
            conn: svc_conn,
            dlv,
        };
        let env = request_delivery(core, call, key, dlv);
        let cell = Arc::clone(&call.cell);
        let arts = call.artifacts.clone();
        if let Some(c) = st.conns.get_mut(&svc_conn) {
            c.deliveries.insert(
                dlv,
                Delivery {
                    artifacts: arts,
                    kind: DeliveryKind::Request,
                },
            );
            c.outbox.push(Lane::Rpc, OutgoingFrame::Request(env, cell));
        }
    }
}

/// The `rpc.request` delivery `dlv` of a call; the call's payload moves into it.
fn request_delivery(core: &RouterCore, call: &mut Call, key: CallKey, dlv: u64) -> Envelope {
    let mut body = Map::new();
    body.insert("deliveryId".into(), Value::String(spelled("dlv", dlv)));
    body.insert("callId".into(), Value::String(spelled("call", key.1)));
    body.insert("caller".into(), peer(&call.caller));
    body.insert("target".into(), Value::String(call.target.clone()));
    body.insert(
        "serviceIncarnation".into(),
        Value::String(core.incarnation("svc", call.incarnation)),
    );
    body.insert("method".into(), Value::String(call.method.clone()));
    body.insert(
        "payload".into(),
        Value::Object(std::mem::take(&mut call.payload)),
    );
    Envelope {
        id: String::new(),
        reply_to: None,
        kind: Kind::Delivery,
        op: "rpc.request".into(),
        body,
        attachments: rebind(&call.attachments, dlv),
    }
}

/// Finds the call a responder's `{callId, requestDeliveryId}` names. `None` when it is already
/// answered or released (the correlation is retired).
fn responder_call(st: &RouterState, conn: ConnId, body: ResponderBody) -> Option<CallKey> {
    st.calls.iter().find_map(|(k, call)| match call.state {
        CallState::InFlight { conn: c, dlv: d } | CallState::Detached { conn: c, dlv: d }
            if c == conn && d == body.dlv && k.1 == body.serial =>
        {
            Some(*k)
        }
        _ => None,
    })
}

/// Ends a dispatched call: delivers the result (or `CALL_GONE` when released without a reply) to
/// a still-waiting caller, returns the service's credit and pumps its queue. Returns whether a
/// result was routed.
fn finish_call(
    core: &RouterCore,
    st: &mut RouterState,
    key: CallKey,
    answer: Option<ResponderAnswer>,
) -> bool {
    let Some(call) = st.calls.remove(&key) else {
        return false;
    };
    if let Some(svc) = st.services.get_mut(&call.target)
        && svc.incarnation == call.incarnation
    {
        svc.in_flight = svc.in_flight.saturating_sub(1);
    }
    let waiting = matches!(call.state, CallState::InFlight { .. });
    let mut routed = false;
    if waiting && let Some(caller) = st.conns.get_mut(&key.0) {
        caller.active_calls.remove(&key.1);
        match answer {
            Some(answer) => {
                caller.next_dlv += 1;
                let dlv = caller.next_dlv;
                caller.deliveries.insert(
                    dlv,
                    Delivery {
                        artifacts: answer.artifacts.clone(),
                        kind: DeliveryKind::Result { call: key.1 },
                    },
                );
                let arts = answer.artifacts.clone();
                let env = result_delivery(core, &call, key, dlv, answer);
                caller.outbox.push(Lane::Rpc, OutgoingFrame::Frame(env));
                add_roots(st, &arts);
                routed = true;
            }
            None => {
                push_control(
                    &core.limits,
                    caller,
                    notice(
                        "call.failed",
                        json!({"callId": spelled("call", key.1), "code": "CALL_GONE",
                               "message": "the responder released the call without replying",
                               "dispatch": "dispatched"}),
                    ),
                );
            }
        }
    }
    let target = call.target.clone();
    pump_service(core, st, &target);
    routed
}

/// The `rpc.result` delivery `dlv` of a call; the answer's outcome moves into it.
fn result_delivery(
    core: &RouterCore,
    call: &Call,
    key: CallKey,
    dlv: u64,
    answer: ResponderAnswer,
) -> Envelope {
    let mut body = Map::new();
    body.insert("deliveryId".into(), Value::String(spelled("dlv", dlv)));
    body.insert("callId".into(), Value::String(spelled("call", key.1)));
    body.insert("responder".into(), peer(&answer.responder));
    body.insert(
        "serviceIncarnation".into(),
        Value::String(core.incarnation("svc", call.incarnation)),
    );
    body.insert("outcome".into(), Value::Object(answer.outcome));
    Envelope {
        id: String::new(),
        reply_to: None,
        kind: Kind::Delivery,
        op: "rpc.result".into(),
        body,
        attachments: rebind(&answer.attachments, dlv),
    }
}

/// `rpc.reply`: routes the responder's outcome to the caller, if it still waits.
pub(super) fn reply(
    core: &RouterCore,
    st: &mut RouterState,
    conn: ConnId,
    env: &mut Envelope,
    frame_len: usize,
) -> CommandResult {
    let body = ReplyBody::parse(&env.body)?;
    let Some(key) = responder_call(st, conn, body.call) else {
        return Err(refuse(
            ErrorCode::CallGone,
            format!("call-{} is answered or unknown", body.call.serial),
        ));
    };
    let arts = check_attachments(core, st, conn, &env.attachments)?;
    let responder = st
        .conns
        .get(&conn)
        .and_then(|c| c.client.clone())
        .ok_or_else(|| invalid("no hello"))?;
    if !result_fits(core, frame_len, body.outcome, &responder, &env.attachments) {
        return Err(invalid("the result delivery would exceed 64 KiB"));
    }
    // The outcome moves from the command into the result delivery.
    let outcome = match env.body.remove("outcome") {
        Some(Value::Object(outcome)) => outcome,
        _ => Map::new(),
    };
    let answer = ResponderAnswer {
        outcome,
        attachments: std::mem::take(&mut env.attachments),
        artifacts: arts,
        responder,
    };
    let routed = finish_call(core, st, key, Some(answer));
    Ok(into_map(json!({"routed": routed})))
}

/// Whether the largest `rpc.result` delivery of this outcome stays within one envelope.
fn result_fits(
    core: &RouterCore,
    frame_len: usize,
    outcome: &Map<String, Value>,
    responder: &(Id, u64),
    attachments: &[Attachment],
) -> bool {
    delivery_fits_envelope(&core.limits, frame_len, || {
        delivery(
            "rpc.result",
            json!({"outcome": outcome, "responder": {"clientId": responder.0.as_str(), "clientIncarnation": u64s(u64::MAX)}, "deliveryId": spelled("dlv", u64::MAX), "callId": spelled("call", u64::MAX), "serviceIncarnation": LONGEST_BUS_ID}),
            rebind(attachments, u64::MAX),
        )
    })
}

/// `rpc.responder.release`: the responder gives the call up without a reply (`CALL_GONE` to
/// the caller).
pub(super) fn release(
    core: &RouterCore,
    st: &mut RouterState,
    conn: ConnId,
    body: &ResponderBody,
) -> CommandResult {
    let key = responder_call(st, conn, *body);
    let released = key.is_some_and(|key| {
        finish_call(core, st, key, None);
        true
    });
    Ok(into_map(json!({"released": released})))
}

/// `rpc.cancel` from the caller.
pub(super) fn cancel_command(
    core: &RouterCore,
    st: &mut RouterState,
    conn: ConnId,
    body: &CancelBody,
    garbage: &mut Vec<String>,
) -> CommandResult {
    Ok(into_map(
        json!({"state": cancel(core, st, conn, body.serial, garbage)}),
    ))
}

/// Cancels the caller's call `serial`: the complete state enum of contracts §3.6.
pub(super) fn cancel(
    core: &RouterCore,
    st: &mut RouterState,
    conn: ConnId,
    serial: u64,
    garbage: &mut Vec<String>,
) -> &'static str {
    let key = (conn, serial);
    let Some(call) = st.calls.get(&key) else {
        let completed = st.conns.get(&conn).is_some_and(|c| {
            c.deliveries
                .values()
                .any(|d| matches!(d.kind, DeliveryKind::Result { call } if call == serial))
        });
        return if completed { "completed" } else { "call-gone" };
    };
    if !matches!(call.state, CallState::Queued | CallState::InFlight { .. }) {
        return "call-gone";
    }
    let not_dispatched = match call.state {
        CallState::Queued => true,
        _ => call
            .cell
            .compare_exchange(
                CELL_PENDING,
                CELL_CANCELLED,
                Ordering::SeqCst,
                Ordering::SeqCst,
            )
            .is_ok(),
    };
    if let Some(c) = st.conns.get_mut(&conn) {
        c.active_calls.remove(&serial);
    }
    if not_dispatched {
        withdraw(core, st, key, garbage);
        "cancelled-before-dispatch"
    } else {
        if let Some(call) = st.calls.get_mut(&key)
            && let CallState::InFlight { conn, dlv } = call.state
        {
            call.state = CallState::Detached { conn, dlv };
        }
        "execution-unknown"
    }
}

/// Removes a call no responder has seen: out of the queue or the unselected delivery, with its
/// credit and roots returned.
fn withdraw(core: &RouterCore, st: &mut RouterState, key: CallKey, garbage: &mut Vec<String>) {
    let Some(call) = st.calls.remove(&key) else {
        return;
    };
    if let Some(svc) = st.services.get_mut(&call.target) {
        svc.queue.retain(|k| *k != key);
        if let CallState::InFlight { .. } = call.state {
            svc.in_flight = svc.in_flight.saturating_sub(1);
        }
    }
    if let CallState::InFlight { conn: sc, dlv } = call.state
        && let Some(c) = st.conns.get_mut(&sc)
    {
        c.deliveries.remove(&dlv);
    }
    drop_roots(st, &call.artifacts, garbage);
    pump_service(core, st, &call.target);
}
