//! Owner roots (contracts §3.8): every artifact counts the roots that stand on it (holds,
//! deliveries, queued and retained messages, admitted calls) and is collected when the last
//! goes. This file adds and drops roots, issues holds, checks that an attachment names a live
//! root of its connection and agrees with the artifact, reads batches of owner ids, and handles
//! `delivery.consumed`, which returns a subscriber's credit.
//!
//! It knows artifacts by number and owners by token; file work is left to the caller, which
//! unlinks the collected names outside the state lock.

use flysim_types::OwnerToken;
use serde_json::{Map, Value, json};

use super::command::{CommandRefusal, CommandResult, invalid, refuse};
use super::envelopes::{into_map, u64s};
use super::pubsub::pump_subscriber;
use super::state::{ConnId, DeliveryKind, Hold, RouterCore, RouterState};
use crate::limits::Limits;
use crate::wire::{Attachment, Body, ErrorCode, unspell};

/// `delivery.consumed`'s body: the deliveries to release.
pub(super) struct ConsumedBody {
    ids: Vec<u64>,
}

impl ConsumedBody {
    pub(super) fn parse(
        body: &Map<String, Value>,
        limits: &Limits,
    ) -> Result<Self, CommandRefusal> {
        let b = Body::exact(body, &["deliveryIds"]).map_err(invalid)?;
        Ok(Self {
            ids: batch_ids(limits, &b, "deliveryIds", "dlv")?,
        })
    }
}

/// Reads `field`, 1..=`max_batch` ids spelled `<prefix>-<U64>`.
pub(super) fn batch_ids(
    limits: &Limits,
    b: &Body<'_>,
    field: &str,
    prefix: &str,
) -> Result<Vec<u64>, CommandRefusal> {
    let items = b
        .value(field)
        .as_array()
        .filter(|a| !a.is_empty() && a.len() <= limits.max_batch)
        .ok_or_else(|| invalid(format!("`{field}` is 1..={} ids", limits.max_batch)))?;
    items
        .iter()
        .map(|v| v.as_str().and_then(|s| unspell(prefix, s)))
        .collect::<Option<Vec<u64>>>()
        .ok_or_else(|| invalid(format!("`{field}` holds {prefix}-<U64> ids")))
}

/// `delivery.consumed`: releases issued deliveries of this connection (unknown ones are
/// already released and not counted).
pub(super) fn consumed(
    core: &RouterCore,
    st: &mut RouterState,
    conn: ConnId,
    body: &ConsumedBody,
    garbage: &mut Vec<String>,
) -> CommandResult {
    let c = st
        .conns
        .get(&conn)
        .ok_or_else(|| invalid("connection gone"))?;
    if let Some(bad) = body.ids.iter().find(|n| **n > c.next_dlv) {
        return Err(refuse(
            ErrorCode::OwnerInvalid,
            format!("dlv-{bad} was never issued"),
        ));
    }
    let mut released = 0u64;
    for n in &body.ids {
        if consume(core, st, conn, *n, garbage) {
            released += 1;
        }
    }
    Ok(into_map(json!({"released": u64s(released)})))
}

/// Releases one delivery of `conn`; returns whether it was live.
fn consume(
    core: &RouterCore,
    st: &mut RouterState,
    conn: ConnId,
    dlv: u64,
    garbage: &mut Vec<String>,
) -> bool {
    let Some(d) = st
        .conns
        .get_mut(&conn)
        .and_then(|c| c.deliveries.remove(&dlv))
    else {
        return false;
    };
    drop_roots(st, &d.artifacts, garbage);
    if let DeliveryKind::Topic { sub } = d.kind
        && let Some(s) = st.subs.get_mut(&sub)
    {
        s.in_flight = s.in_flight.saturating_sub(1);
        pump_subscriber(core, st, sub);
    }
    true
}

/// One more root on each artifact.
pub(super) fn add_roots(st: &mut RouterState, arts: &[u64]) {
    for a in arts {
        if let Some(e) = st.artifacts.get_mut(a) {
            e.roots += 1;
        }
    }
}

/// One root fewer on each artifact; an artifact left without roots leaves the registry and its
/// file name goes to `garbage`.
pub(super) fn drop_roots(st: &mut RouterState, arts: &[u64], garbage: &mut Vec<String>) {
    for a in arts {
        let gone = st.artifacts.get_mut(a).is_some_and(|e| {
            e.roots = e.roots.saturating_sub(1);
            e.roots == 0
        });
        if gone && let Some(e) = st.artifacts.remove(a) {
            st.store_bytes -= e.reserved;
            garbage.push(format!("a-{a}{}", if e.sealed { "" } else { ".staging" }));
        }
    }
}

/// Issues a hold (`own-<n>`) of `conn` on `artifact`, within the connection's owner quota.
pub(super) fn new_hold(
    core: &RouterCore,
    st: &mut RouterState,
    conn: ConnId,
    artifact: u64,
    writer: bool,
) -> Result<u64, CommandRefusal> {
    let limit = core.limits.max_owners_per_client - core.limits.reserved_owners_per_client;
    let c = st
        .conns
        .get_mut(&conn)
        .ok_or_else(|| invalid("connection gone"))?;
    if c.owners() >= limit {
        return Err(refuse(
            ErrorCode::QuotaExceeded,
            "too many owner roots on this connection",
        ));
    }
    c.next_own += 1;
    let own = c.next_own;
    c.holds.insert(own, Hold { artifact, writer });
    add_roots(st, &[artifact]);
    Ok(own)
}

/// Checks that `attachment`'s owner is a live root of `conn` on the artifact its ref names, and
/// that the ref agrees with the artifact. Returns the artifact number.
pub(super) fn check_owned(
    core: &RouterCore,
    st: &RouterState,
    conn: ConnId,
    a: &Attachment,
) -> Result<u64, CommandRefusal> {
    let r = &a.reference;
    if r.store_id != core.store_id {
        return Err(refuse(
            ErrorCode::ArtifactGone,
            format!("store {} is not this router's store", r.store_id),
        ));
    }
    let n = unspell("a", r.artifact_id.as_str()).ok_or_else(|| {
        refuse(
            ErrorCode::ArtifactGone,
            format!("no artifact {}", r.artifact_id),
        )
    })?;
    let c = st
        .conns
        .get(&conn)
        .ok_or_else(|| invalid("connection gone"))?;
    let holds = match a.owner_id {
        OwnerToken::Hold(h) => c.holds.get(&h.0).is_some_and(|h| h.artifact == n),
        OwnerToken::Delivery(d) => c
            .deliveries
            .get(&d.0)
            .is_some_and(|d| d.artifacts.contains(&n)),
    };
    if !holds {
        return Err(refuse(
            ErrorCode::OwnerInvalid,
            format!(
                "{} is not a live root of {} on this connection",
                a.owner_id, r.artifact_id
            ),
        ));
    }
    let e = st.artifacts.get(&n).ok_or_else(|| {
        refuse(
            ErrorCode::ArtifactGone,
            format!("{} is gone", r.artifact_id),
        )
    })?;
    if !e.sealed {
        return Err(refuse(
            ErrorCode::ArtifactUnsealed,
            format!("{} is not sealed", r.artifact_id),
        ));
    }
    if r.byte_length.get() != e.byte_length
        || *r.content_type != *e.content_type
        || r.digest != e.digest
    {
        return Err(refuse(
            ErrorCode::ArtifactMismatch,
            format!("the ref disagrees with {}", r.artifact_id),
        ));
    }
    Ok(n)
}

/// Validates every attachment; returns the unique artifact numbers (one root each).
pub(super) fn check_attachments(
    core: &RouterCore,
    st: &RouterState,
    conn: ConnId,
    attachments: &[Attachment],
) -> Result<Vec<u64>, CommandRefusal> {
    let mut arts = Vec::new();
    for a in attachments {
        let n = check_owned(core, st, conn, a)?;
        if !arts.contains(&n) {
            arts.push(n);
        }
    }
    Ok(arts)
}
