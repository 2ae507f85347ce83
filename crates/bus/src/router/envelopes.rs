//! The envelopes the router builds: notices, deliveries and command replies, the spelled
//! fields they share (peers, `dlv-<n>` owners, decimal `U64` strings), and the size check that
//! keeps a delivery built from an inbound frame inside one envelope.
//!
//! It builds frames and queues none; it does not know which command or state produced them.

use flysim_types::{Id, OwnerToken};
use serde_json::{Map, Value, json};

use super::command::CommandRefusal;
use crate::limits::Limits;
use crate::wire::{Attachment, Dispatch, Envelope, Kind};

/// The longest router envelope id, used when sizing deliveries at admission.
pub(super) const LONGEST_BUS_ID: &str = "bus-18446744073709551615";
/// Margin for router-added delivery fields when an inbound frame is obviously small enough.
const DELIVERY_MARGIN: usize = 1024;

pub(super) fn notice(op: &str, body: Value) -> Envelope {
    Envelope {
        id: String::new(),
        reply_to: None,
        kind: Kind::Notice,
        op: op.into(),
        body: into_map(body),
        attachments: Vec::new(),
    }
}

pub(super) fn delivery(op: &str, body: Value, attachments: Vec<Attachment>) -> Envelope {
    Envelope {
        id: String::new(),
        reply_to: None,
        kind: Kind::Delivery,
        op: op.into(),
        body: into_map(body),
        attachments,
    }
}

pub(super) fn into_map(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn reply_body(result: Result<Map<String, Value>, CommandRefusal>) -> Map<String, Value> {
    into_map(match result {
        Ok(value) => json!({"ok": true, "value": value}),
        Err(r) => json!({"ok": false, "error": {
            "code": r.code.as_str(),
            "message": r.message,
            "dispatch": Dispatch::NotDispatched.as_str(),
        }}),
    })
}

/// The reply to the command `to`.
pub(super) fn reply_envelope(
    to: &str,
    result: Result<Map<String, Value>, CommandRefusal>,
) -> Envelope {
    Envelope {
        id: String::new(),
        reply_to: Some(to.to_owned()),
        kind: Kind::Reply,
        op: "reply".into(),
        body: reply_body(result),
        attachments: Vec::new(),
    }
}

/// The `{clientId, clientIncarnation}` object of a caller or responder.
pub(super) fn peer(client: &(Id, u64)) -> Value {
    let mut m = Map::new();
    m.insert(
        "clientId".into(),
        Value::String(client.0.as_str().to_owned()),
    );
    m.insert("clientIncarnation".into(), u64s(client.1));
    Value::Object(m)
}

/// A `U64` spelled as a decimal string.
pub(super) fn u64s(v: u64) -> Value {
    let mut text = String::with_capacity(20);
    flysim_types::U64(v).push_to(&mut text);
    Value::String(text)
}

fn dlv_token(n: u64) -> OwnerToken {
    OwnerToken::Delivery(flysim_types::DeliveryToken(n))
}

/// The recipient's copy of an attachment list: same refs, the recipient's delivery as owner.
pub(super) fn rebind(attachments: &[Attachment], dlv: u64) -> Vec<Attachment> {
    attachments
        .iter()
        .map(|a| Attachment {
            name: a.name.clone(),
            reference: a.reference.clone(),
            owner_id: dlv_token(dlv),
        })
        .collect()
}

/// Whether a delivery built from an inbound frame of `frame_len` bytes stays within the
/// envelope limit (`build` makes its largest form, called only when the frame is near it).
pub(super) fn delivery_fits_envelope(
    limits: &Limits,
    frame_len: usize,
    build: impl FnOnce() -> Envelope,
) -> bool {
    if frame_len + DELIVERY_MARGIN <= limits.max_envelope_bytes {
        return true;
    }
    let mut env = build();
    env.id = LONGEST_BUS_ID.into();
    env.to_bytes().len() <= limits.max_envelope_bytes
}
