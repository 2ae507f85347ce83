//! Service registrations: `service.register` and `service.unregister`, and the removal of a
//! registration (on unregister or disconnect), which fails its queued and dispatched calls with
//! `NO_SERVICE` and the dispatch certainty each one has.
//!
//! It owns the name → registration table; routing calls to a registration is `rpc`'s.

use std::collections::{BTreeSet, VecDeque};
use std::sync::atomic::Ordering;

use serde_json::{Map, Value, json};

use super::command::{CommandRefusal, CommandResult, invalid, push_control, refuse};
use super::envelopes::{into_map, notice};
use super::ownership::drop_roots;
use super::state::{
    CELL_CANCELLED, CELL_PENDING, CallKey, CallState, ConnId, Registration, RouterCore, RouterState,
};
use crate::limits::Limits;
use crate::wire::{Body, Dispatch, ErrorCode, spelled};

/// `service.register`'s body.
pub(super) struct RegisterBody<'a> {
    name: &'a str,
    max_queued: u32,
    max_in_flight: u32,
}

impl<'a> RegisterBody<'a> {
    pub(super) fn parse(
        body: &'a Map<String, Value>,
        limits: &Limits,
    ) -> Result<Self, CommandRefusal> {
        let b = Body::exact(body, &["name", "maxQueued", "maxInFlight"]).map_err(invalid)?;
        Ok(Self {
            name: b.name("name").map_err(invalid)?,
            max_queued: b
                .count("maxQueued", limits.max_service_queued)
                .map_err(invalid)?,
            max_in_flight: b
                .count("maxInFlight", limits.max_service_in_flight)
                .map_err(invalid)?,
        })
    }
}

/// `service.unregister`'s body.
pub(super) struct UnregisterBody<'a> {
    name: &'a str,
    incarnation: &'a str,
}

impl<'a> UnregisterBody<'a> {
    pub(super) fn parse(body: &'a Map<String, Value>) -> Result<Self, CommandRefusal> {
        let b = Body::exact(body, &["name", "serviceIncarnation"]).map_err(invalid)?;
        Ok(Self {
            name: b.name("name").map_err(invalid)?,
            incarnation: b.str("serviceIncarnation").map_err(invalid)?,
        })
    }
}

/// `service.register`: the name is exclusive while the registration lives.
pub(super) fn register(
    core: &RouterCore,
    st: &mut RouterState,
    conn: ConnId,
    body: &RegisterBody<'_>,
) -> CommandResult {
    let name = body.name;
    if st.services.contains_key(name) {
        return Err(refuse(
            ErrorCode::Conflict,
            format!("service {name} is registered"),
        ));
    }
    if st.services.len() >= core.limits.max_services {
        return Err(refuse(ErrorCode::QuotaExceeded, "too many services"));
    }
    st.next_service += 1;
    let incarnation = st.next_service;
    st.services.insert(
        name.to_owned(),
        Registration {
            incarnation,
            conn,
            max_queued: body.max_queued,
            max_in_flight: body.max_in_flight,
            queue: VecDeque::new(),
            in_flight: 0,
        },
    );
    if let Some(c) = st.conns.get_mut(&conn) {
        c.services.insert(name.to_owned());
    }
    Ok(into_map(
        json!({"serviceIncarnation": core.incarnation("svc", incarnation)}),
    ))
}

/// `service.unregister`: removes this connection's registration of that incarnation, if live.
pub(super) fn unregister(
    core: &RouterCore,
    st: &mut RouterState,
    conn: ConnId,
    body: &UnregisterBody<'_>,
    garbage: &mut Vec<String>,
) -> CommandResult {
    let ours = st.services.get(body.name).is_some_and(|s| {
        s.conn == conn && core.parse_incarnation("svc", body.incarnation) == Some(s.incarnation)
    });
    if ours {
        remove_service(core, st, body.name, "unregistered", garbage);
    }
    Ok(into_map(json!({"removed": ours})))
}

/// Removes a registration: queued calls fail `NO_SERVICE`/not-dispatched, dispatched calls fail
/// `NO_SERVICE`/dispatched (or not-dispatched if their frame was never selected).
pub(super) fn remove_service(
    core: &RouterCore,
    st: &mut RouterState,
    name: &str,
    reason: &str,
    garbage: &mut Vec<String>,
) {
    let Some(svc) = st.services.remove(name) else {
        return;
    };
    if let Some(c) = st.conns.get_mut(&svc.conn) {
        c.services.remove(name);
    }
    let keys: Vec<CallKey> = st
        .calls
        .iter()
        .filter(|(_, c)| c.target == name && c.incarnation == svc.incarnation)
        .map(|(k, _)| *k)
        .collect();
    let mut notified = BTreeSet::new();
    for key in keys {
        let Some(call) = st.calls.get(&key) else {
            continue;
        };
        let dispatch = match call.state {
            CallState::Queued => Dispatch::NotDispatched,
            CallState::InFlight { .. } | CallState::Detached { .. } => {
                if call
                    .cell
                    .compare_exchange(
                        CELL_PENDING,
                        CELL_CANCELLED,
                        Ordering::SeqCst,
                        Ordering::SeqCst,
                    )
                    .is_ok()
                {
                    Dispatch::NotDispatched
                } else {
                    Dispatch::Dispatched
                }
            }
        };
        // A dispatched call on a still-connected service may still be answered after unregister.
        let service_alive = st.conns.contains_key(&svc.conn) && reason == "unregistered";
        if dispatch == Dispatch::Dispatched && service_alive {
            continue;
        }
        let Some(call) = st.calls.remove(&key) else {
            continue;
        };
        if let CallState::InFlight { conn: sc, dlv } | CallState::Detached { conn: sc, dlv } =
            call.state
            && dispatch == Dispatch::NotDispatched
            && let Some(c) = st.conns.get_mut(&sc)
        {
            c.deliveries.remove(&dlv);
        }
        if matches!(call.state, CallState::Queued) || dispatch == Dispatch::NotDispatched {
            drop_roots(st, &call.artifacts, garbage);
        }
        let waiting = !matches!(call.state, CallState::Detached { .. });
        if waiting && let Some(caller) = st.conns.get_mut(&key.0) {
            caller.active_calls.remove(&key.1);
            if notified.insert(key.0) {
                push_control(
                    &core.limits,
                    caller,
                    notice(
                        "route.removed",
                        json!({"name": name, "serviceIncarnation": core.incarnation("svc", svc.incarnation), "reason": reason}),
                    ),
                );
            }
            push_control(
                &core.limits,
                caller,
                notice(
                    "call.failed",
                    json!({"callId": spelled("call", key.1), "code": "NO_SERVICE",
                    "message": format!("service {name} went away ({reason})"), "dispatch": dispatch.as_str()}),
                ),
            );
        }
    }
}
