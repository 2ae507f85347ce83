//! `bus.hello`: the first command of every connection. It checks the spoken majors, the
//! launcher binding and the client id's incarnation, registers the client as live, and answers
//! the router's identity, contract digest and limits. A refused hello closes the connection.
//!
//! It knows clients and connections only; nothing of services, topics or artifacts.

use flysim_types::Id;
use serde_json::{Map, Value, json};

use super::command::{Closing, CommandRefusal, CommandResult, invalid, refuse, reply};
use super::envelopes::into_map;
use super::state::{ClientRecord, ConnId, RouterCore};
use crate::wire::{Body, ErrorCode, MAJOR, MINOR, spelled};

/// `bus.hello`'s body.
struct HelloBody {
    client_id: Id,
    incarnation: u64,
    /// Whether `supportedMajors` names this router's major.
    speaks_major: bool,
}

impl HelloBody {
    fn parse(body: &Map<String, Value>) -> Result<Self, CommandRefusal> {
        let b = Body::exact(body, &["clientId", "clientIncarnation", "supportedMajors"])
            .map_err(invalid)?;
        let client_id = b.id("clientId").map_err(invalid)?;
        let incarnation = b.u64("clientIncarnation").map_err(invalid)?;
        let majors = b
            .value("supportedMajors")
            .as_array()
            .filter(|m| !m.is_empty() && m.len() <= 8)
            .ok_or_else(|| invalid("`supportedMajors` is 1..=8 integers"))?;
        Ok(Self {
            client_id,
            incarnation,
            speaks_major: majors.iter().any(|m| m.as_u64() == Some(u64::from(MAJOR))),
        })
    }
}

/// Handles the hello `id`: its reply value, or (after queueing the refusal as its reply) the
/// reason the connection closes.
pub(super) fn hello(
    core: &RouterCore,
    conn: ConnId,
    id: &str,
    body: &Map<String, Value>,
) -> Result<Map<String, Value>, Closing> {
    match HelloBody::parse(body).and_then(|body| admit(core, conn, body)) {
        Ok(value) => Ok(value),
        Err(r) => {
            reply(core, conn, id, Err(refuse(r.code, r.message.clone())));
            Err(Closing {
                code: r.code,
                message: r.message,
            })
        }
    }
}

fn admit(core: &RouterCore, conn: ConnId, body: HelloBody) -> CommandResult {
    let HelloBody {
        client_id,
        incarnation,
        speaks_major,
    } = body;
    if !speaks_major {
        return Err(refuse(
            ErrorCode::VersionMismatch,
            "this router speaks major 1 only",
        ));
    }
    let mut st = core.lock();
    if let Some(bound) = st.conns.get(&conn).and_then(|c| c.bound.as_ref())
        && *bound != client_id
    {
        return Err(refuse(
            ErrorCode::NotAuthorized,
            format!("this endpoint is bound to {bound}, not {client_id}"),
        ));
    }
    let record = st.clients.get(client_id.as_str());
    if let Some(r) = record {
        if r.live.is_some() {
            return Err(refuse(
                ErrorCode::Conflict,
                format!("client {client_id} is already connected"),
            ));
        }
        if incarnation <= r.last_incarnation {
            return Err(refuse(
                ErrorCode::Conflict,
                format!(
                    "client {client_id} incarnation {incarnation} is not newer than {}",
                    r.last_incarnation
                ),
            ));
        }
    }
    st.clients.insert(
        client_id.as_str().to_owned(),
        ClientRecord {
            last_incarnation: incarnation,
            live: Some(conn),
        },
    );
    if let Some(c) = st.conns.get_mut(&conn) {
        c.client = Some((client_id, incarnation));
    }
    Ok(into_map(json!({
        "routerId": core.router_id.as_str(),
        "connectionId": spelled("conn", conn),
        "selectedMajor": MAJOR,
        "selectedMinor": MINOR,
        "contractDigest": core.digest.hex(),
        "limits": core.limits.to_wire(),
    })))
}
