//! The Flybus v1 wire vocabulary (contracts §3.2–§3.5, §3.10): the envelope, its strict reader,
//! attachments, bus error codes, dispatch certainty, and the `CONTRACT` text whose SHA-256 both
//! ends of a connection compare in the hello.

use std::fmt;

use flysim_types::digest::sha256;
use flysim_types::json::{
    Counter, Fields, Sink, parse_fields, write_compact, write_compact_map, write_compact_str,
};
use flysim_types::limits::{MAX_ATTACHMENTS, MAX_ENVELOPE_BYTES, MAX_METHOD_BYTES};
use flysim_types::payload::from_value;
use flysim_types::workers::ArtifactRef;
use flysim_types::{Digest, Id, OwnerToken, U64};
use serde_json::{Map, Value};

use crate::error::WireError;

/// The `protocol` field of every envelope.
pub const PROTOCOL: &str = "flybus";
/// The protocol major this crate speaks.
pub const MAJOR: u32 = 1;
/// The protocol minor this crate speaks.
pub const MINOR: u32 = 0;

/// The bus contract: every operation, delivery and notice with its body and reply fields.
///
/// Its SHA-256 is the `contractDigest` a router announces in the hello reply; a client built from
/// another text refuses the router. Any change to an operation's shape must change this text.
pub const CONTRACT: &str = "\
flybus 1.0
frame u32le length + utf-8 json object, 1..=65536 bytes
envelope protocol major minor id replyTo kind op body attachments
kind command reply delivery notice
attachment name ref ownerId
artifact-ref storeId artifactId generation byteLength contentType digest
reply ok value | ok error{code message dispatch}
dispatch not-dispatched dispatched unknown
command bus.hello clientId clientIncarnation supportedMajors -> routerId connectionId selectedMajor selectedMinor contractDigest limits
command service.register name maxQueued maxInFlight -> serviceIncarnation
command service.unregister name serviceIncarnation -> removed
command rpc.call callId target expectedIncarnation method payload [attachments] -> accepted serviceIncarnation
command rpc.reply callId requestDeliveryId outcome [attachments] -> routed
command rpc.cancel callId -> state(cancelled-before-dispatch execution-unknown completed call-gone)
command rpc.responder.release callId requestDeliveryId -> released
command topic.declare name retained(none latest) -> declared topicIncarnation
command topic.clear name -> cleared
command topic.delete name -> deleted
command subscribe topic mode(latest bounded) maxQueued maxInFlight replayLatest -> subscriptionId topicIncarnation
command unsubscribe subscriptionId -> removed
command publish topic payload [attachments] -> topicSequence subscribers replaced
command delivery.consumed deliveryIds -> released
command artifact.allocate byteLength contentType -> artifactId generation ownerId writeLocation{storeId relativePath}
command artifact.seal artifactId generation ownerId digest -> ref ownerId
command artifact.open ref ownerId -> readLocation{storeId relativePath}
command artifact.retain ref ownerId -> ownerId
command artifact.release ownerIds -> released
delivery rpc.request deliveryId callId caller{clientId clientIncarnation} target serviceIncarnation method payload
delivery rpc.result deliveryId callId responder{clientId clientIncarnation} serviceIncarnation outcome
delivery topic.message deliveryId subscriptionId topic topicIncarnation topicSequence replaced payload
notice call.failed callId code message dispatch
notice route.removed name serviceIncarnation reason
notice subscription.closed subscriptionId topic topicIncarnation reason
notice connection.closing code message
error INVALID_ENVELOPE VERSION_MISMATCH NOT_AUTHORIZED NO_SERVICE TARGET_CHANGED BACKPRESSURE CALL_GONE ARTIFACT_UNSEALED ARTIFACT_GONE OWNER_INVALID QUOTA_EXCEEDED STORE_FAILURE ROUTER_LOST CONFLICT NO_TOPIC ARTIFACT_MISMATCH
";

/// SHA-256 of [`CONTRACT`].
#[must_use]
pub fn contract_digest() -> Digest {
    sha256(CONTRACT.as_bytes())
}

/// The four envelope kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// Client to router.
    Command,
    /// Router to client, answering one command.
    Reply,
    /// Router to client: a request, a result or a topic message.
    Delivery,
    /// Router to client: a call failure, a route change, a closing connection.
    Notice,
}

impl Kind {
    /// The wire spelling.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Command => "command",
            Self::Reply => "reply",
            Self::Delivery => "delivery",
            Self::Notice => "notice",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "command" => Self::Command,
            "reply" => Self::Reply,
            "delivery" => Self::Delivery,
            "notice" => Self::Notice,
            _ => return None,
        })
    }
}

/// The closed set of bus error codes (contracts §3.10: 13 draft codes and 3 from the amendment).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ErrorCode {
    /// A malformed envelope or body.
    InvalidEnvelope,
    /// No common protocol major.
    VersionMismatch,
    /// The participant may not do this.
    NotAuthorized,
    /// No live registration under the target name.
    NoService,
    /// The pinned service incarnation is no longer the live one.
    TargetChanged,
    /// A queue, credit or quota is full; nothing was admitted.
    Backpressure,
    /// The call is retired, unknown or already answered.
    CallGone,
    /// The artifact is still being written.
    ArtifactUnsealed,
    /// The artifact (or its store incarnation) no longer exists.
    ArtifactGone,
    /// The owner token is not a live root of this connection.
    OwnerInvalid,
    /// A store or owner quota would be exceeded.
    QuotaExceeded,
    /// The artifact store failed.
    StoreFailure,
    /// The connection to the router is gone.
    RouterLost,
    /// A duplicate registration, a conflicting re-declare, or a delete with subscribers.
    Conflict,
    /// The topic is not declared.
    NoTopic,
    /// A seal's length or digest is wrong, or a ref disagrees with its artifact.
    ArtifactMismatch,
}

impl ErrorCode {
    /// Every code, in contract order.
    pub const ALL: [Self; 16] = [
        Self::InvalidEnvelope,
        Self::VersionMismatch,
        Self::NotAuthorized,
        Self::NoService,
        Self::TargetChanged,
        Self::Backpressure,
        Self::CallGone,
        Self::ArtifactUnsealed,
        Self::ArtifactGone,
        Self::OwnerInvalid,
        Self::QuotaExceeded,
        Self::StoreFailure,
        Self::RouterLost,
        Self::Conflict,
        Self::NoTopic,
        Self::ArtifactMismatch,
    ];

    /// The wire spelling, e.g. `NO_SERVICE`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidEnvelope => "INVALID_ENVELOPE",
            Self::VersionMismatch => "VERSION_MISMATCH",
            Self::NotAuthorized => "NOT_AUTHORIZED",
            Self::NoService => "NO_SERVICE",
            Self::TargetChanged => "TARGET_CHANGED",
            Self::Backpressure => "BACKPRESSURE",
            Self::CallGone => "CALL_GONE",
            Self::ArtifactUnsealed => "ARTIFACT_UNSEALED",
            Self::ArtifactGone => "ARTIFACT_GONE",
            Self::OwnerInvalid => "OWNER_INVALID",
            Self::QuotaExceeded => "QUOTA_EXCEEDED",
            Self::StoreFailure => "STORE_FAILURE",
            Self::RouterLost => "ROUTER_LOST",
            Self::Conflict => "CONFLICT",
            Self::NoTopic => "NO_TOPIC",
            Self::ArtifactMismatch => "ARTIFACT_MISMATCH",
        }
    }

    /// Reads the wire spelling.
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == text)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How certain it is that a failed call's handler did not run (contracts §3.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Dispatch {
    /// Refused before admission or cancelled before its frame was selected: it never ran.
    NotDispatched,
    /// The request reached (or was being written to) the handler.
    Dispatched,
    /// Nothing is known: the handler may or may not have run.
    Unknown,
}

impl Dispatch {
    /// The wire spelling.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotDispatched => "not-dispatched",
            Self::Dispatched => "dispatched",
            Self::Unknown => "unknown",
        }
    }

    /// Reads the wire spelling.
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "not-dispatched" => Self::NotDispatched,
            "dispatched" => Self::Dispatched,
            "unknown" => Self::Unknown,
            _ => return None,
        })
    }
}

/// One artifact named by an envelope: a name unique in the envelope, the ref, and the owner token
/// that proves the sender holds it (replaced by the recipient's delivery id on deliveries).
#[derive(Debug, Clone, PartialEq)]
pub struct Attachment {
    /// The attachment's name.
    pub name: Id,
    /// The artifact.
    pub reference: ArtifactRef,
    /// The root that holds it on the sending (or receiving) connection.
    pub owner_id: OwnerToken,
}

impl Attachment {
    fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), Value::String(self.name.to_string()));
        let reference = match serde_json::to_value(&self.reference) {
            Ok(value) => value,
            Err(e) => unreachable!("an artifact ref is strings and integers: {e}"),
        };
        m.insert("ref".into(), reference);
        m.insert("ownerId".into(), Value::String(self.owner_id.to_string()));
        Value::Object(m)
    }
}

/// One framed message.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    /// `msg-<U64>` on commands, `bus-<n>` from the router.
    pub id: String,
    /// The command a reply answers; `None` otherwise.
    pub reply_to: Option<String>,
    /// The kind.
    pub kind: Kind,
    /// The operation, delivery or notice name.
    pub op: String,
    /// The body object.
    pub body: Map<String, Value>,
    /// Artifacts the body mentions.
    pub attachments: Vec<Attachment>,
}

/// The envelope fields, exactly.
const FIELDS: [&str; 9] = [
    "protocol",
    "major",
    "minor",
    "id",
    "replyTo",
    "kind",
    "op",
    "body",
    "attachments",
];

impl Envelope {
    /// The JSON bytes of this envelope (the frame body, without the length prefix).
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256);
        self.write_to(&mut out);
        out
    }

    /// Appends [`Envelope::to_bytes`] to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        self.write_text(out);
    }

    /// The envelope's compact JSON text: the fields in [`FIELDS`] order, each value as
    /// `serde_json` writes it (the wire's form since the first version; a test compares them).
    fn write_text<S: Sink>(&self, out: &mut S) {
        out.put("{\"protocol\":");
        write_compact_str(PROTOCOL, out);
        out.put(",\"major\":");
        write_compact(&Value::from(MAJOR), out);
        out.put(",\"minor\":");
        write_compact(&Value::from(MINOR), out);
        out.put(",\"id\":");
        write_compact_str(&self.id, out);
        out.put(",\"replyTo\":");
        match &self.reply_to {
            Some(to) => write_compact_str(to, out),
            None => out.put("null"),
        }
        out.put(",\"kind\":");
        write_compact_str(self.kind.as_str(), out);
        out.put(",\"op\":");
        write_compact_str(&self.op, out);
        out.put(",\"body\":");
        write_compact_map(&self.body, out);
        out.put(",\"attachments\":[");
        for (i, attachment) in self.attachments.iter().enumerate() {
            if i > 0 {
                out.put(",");
            }
            write_compact(&attachment.to_value(), out);
        }
        out.put("]}");
    }

    /// The length of [`Envelope::to_bytes`], counted without building the bytes.
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        let mut count = Counter::default();
        self.write_text(&mut count);
        count.0
    }

    /// Reads an envelope with the strict reader: any unknown, missing or mistyped envelope field,
    /// a protocol other than `flybus` 1.0, or a bad attachment is refused.
    ///
    /// # Errors
    ///
    /// [`WireError`] naming what is wrong.
    pub fn parse(bytes: &[u8]) -> Result<Self, WireError> {
        if bytes.is_empty() || bytes.len() > MAX_ENVELOPE_BYTES {
            return Err(WireError::invalid(format!(
                "an envelope is 1..={MAX_ENVELOPE_BYTES} bytes, found {}",
                bytes.len()
            )));
        }
        // Each field straight into its slot (an unknown one named as the least in key order);
        // then the checks, in `FIELDS` order.
        let Fields {
            values: slots,
            unknown,
        } = parse_fields(bytes, &FIELDS).map_err(WireError::Json)?;
        if let Some(key) = unknown {
            return Err(WireError::invalid(format!(
                "unknown envelope field `{key}`"
            )));
        }
        if let Some(i) = slots.iter().position(Option::is_none) {
            return Err(WireError::invalid(format!(
                "missing envelope field `{}`",
                FIELDS[i]
            )));
        }
        let [
            protocol,
            major,
            minor,
            id,
            reply_to,
            kind,
            op,
            body,
            attachments,
        ] = slots.map(Option::unwrap_or_default);
        if protocol.as_str() != Some(PROTOCOL) {
            return Err(WireError::invalid("`protocol` must be \"flybus\""));
        }
        if major.as_u64() != Some(u64::from(MAJOR)) || minor.as_u64() != Some(u64::from(MINOR)) {
            return Err(WireError::invalid("the envelope version must be 1.0"));
        }
        let id = string(id, "id")?;
        let reply_to = match reply_to {
            Value::Null => None,
            Value::String(s) => Some(s),
            _ => return Err(WireError::invalid("`replyTo` must be a string or null")),
        };
        let kind = string(kind, "kind")?;
        let kind = Kind::parse(&kind)
            .ok_or_else(|| WireError::invalid(format!("unknown envelope kind `{kind}`")))?;
        let op = string(op, "op")?;
        if op.is_empty() || op.len() > MAX_METHOD_BYTES {
            return Err(WireError::invalid("`op` must be 1..=128 bytes"));
        }
        let Value::Object(body) = body else {
            return Err(WireError::invalid("`body` must be an object"));
        };
        let Value::Array(items) = attachments else {
            return Err(WireError::invalid("`attachments` must be an array"));
        };
        if items.len() > MAX_ATTACHMENTS {
            return Err(WireError::invalid(format!(
                "at most {MAX_ATTACHMENTS} attachments, found {}",
                items.len()
            )));
        }
        let mut attachments: Vec<Attachment> = Vec::with_capacity(items.len());
        for item in items {
            let attachment = parse_attachment(item)?;
            if attachments.iter().any(|a| a.name == attachment.name) {
                return Err(WireError::invalid(format!(
                    "attachment name `{}` appears twice",
                    attachment.name
                )));
            }
            attachments.push(attachment);
        }
        Ok(Self {
            id,
            reply_to,
            kind,
            op,
            body,
            attachments,
        })
    }
}

fn take_string(map: &mut Map<String, Value>, field: &str) -> Result<String, WireError> {
    string(map.remove(field).unwrap_or_default(), field)
}

/// A field's value as a string, or the refusal naming the field.
fn string(value: Value, field: &str) -> Result<String, WireError> {
    match value {
        Value::String(s) => Ok(s),
        _ => Err(WireError::invalid(format!("`{field}` must be a string"))),
    }
}

fn parse_attachment(item: Value) -> Result<Attachment, WireError> {
    let Value::Object(mut m) = item else {
        return Err(WireError::invalid("an attachment must be an object"));
    };
    if m.len() != 3 {
        return Err(WireError::invalid(
            "an attachment has exactly `name`, `ref` and `ownerId`",
        ));
    }
    let name = take_string(&mut m, "name")?;
    let name = Id::parse(&name).map_err(|e| WireError::invalid(format!("attachment name: {e}")))?;
    let owner = take_string(&mut m, "ownerId")?;
    let owner_id = OwnerToken::parse(&owner)
        .map_err(|e| WireError::invalid(format!("attachment ownerId: {e}")))?;
    let reference = m.remove("ref").ok_or_else(|| {
        WireError::invalid("an attachment has exactly `name`, `ref` and `ownerId`")
    })?;
    let reference: ArtifactRef =
        from_value(reference).map_err(|e| WireError::invalid(format!("attachment ref: {e}")))?;
    Ok(Attachment {
        name,
        reference,
        owner_id,
    })
}

/// Reads body fields with typed refusals (`INVALID_ENVELOPE` with the field named).
pub(crate) struct Body<'a> {
    map: &'a Map<String, Value>,
}

impl<'a> Body<'a> {
    /// Refuses a body with fields outside `allowed` or missing one of them.
    pub(crate) fn exact(map: &'a Map<String, Value>, allowed: &[&str]) -> Result<Self, String> {
        for key in map.keys() {
            if !allowed.contains(&key.as_str()) {
                return Err(format!("unknown body field `{key}`"));
            }
        }
        for field in allowed {
            if !map.contains_key(*field) {
                return Err(format!("missing body field `{field}`"));
            }
        }
        Ok(Self { map })
    }

    pub(crate) fn value(&self, field: &str) -> &'a Value {
        self.map.get(field).unwrap_or(&Value::Null)
    }

    pub(crate) fn str(&self, field: &str) -> Result<&'a str, String> {
        self.value(field)
            .as_str()
            .ok_or_else(|| format!("`{field}` must be a string"))
    }

    pub(crate) fn opt_str(&self, field: &str) -> Result<Option<&'a str>, String> {
        match self.value(field) {
            Value::Null => Ok(None),
            Value::String(s) => Ok(Some(s)),
            _ => Err(format!("`{field}` must be a string or null")),
        }
    }

    pub(crate) fn id(&self, field: &str) -> Result<Id, String> {
        Id::parse(self.str(field)?).map_err(|e| format!("`{field}`: {e}"))
    }

    pub(crate) fn u64(&self, field: &str) -> Result<u64, String> {
        U64::parse(self.str(field)?)
            .map(U64::get)
            .map_err(|e| format!("`{field}`: {e}"))
    }

    pub(crate) fn count(&self, field: &str, max: u32) -> Result<u32, String> {
        self.value(field)
            .as_u64()
            .and_then(|v| u32::try_from(v).ok())
            .filter(|v| (1..=max).contains(v))
            .ok_or_else(|| format!("`{field}` must be an integer 1..={max}"))
    }

    pub(crate) fn bool(&self, field: &str) -> Result<bool, String> {
        self.value(field)
            .as_bool()
            .ok_or_else(|| format!("`{field}` must be a boolean"))
    }

    pub(crate) fn object(&self, field: &str) -> Result<&'a Map<String, Value>, String> {
        self.value(field)
            .as_object()
            .ok_or_else(|| format!("`{field}` must be an object"))
    }

    pub(crate) fn name(&self, field: &str) -> Result<&'a str, String> {
        let name = self.str(field)?;
        check_name(name).map_err(|e| format!("`{field}`: {e}"))?;
        Ok(name)
    }
}

/// Checks a service or topic name: 1..=192 characters of `[a-z0-9._-]`, no empty dot segment.
///
/// # Errors
///
/// The broken part of the rule.
pub fn check_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() || name.len() > 192 {
        return Err("a bus name is 1 to 192 characters");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
    {
        return Err("a bus name uses only a-z, 0-9, `.`, `_`, `-`");
    }
    if name.split('.').any(str::is_empty) {
        return Err("a bus name has no empty dot-separated segment");
    }
    Ok(())
}

/// Checks a method string: 1..=128 printable ASCII characters.
///
/// # Errors
///
/// The broken rule.
pub fn check_method(method: &str) -> Result<(), &'static str> {
    if method.is_empty()
        || method.len() > MAX_METHOD_BYTES
        || !method.bytes().all(|b| b.is_ascii_graphic())
    {
        return Err("a method is 1 to 128 printable ASCII characters");
    }
    Ok(())
}

/// The spelling `<prefix>-<n>`.
pub(crate) fn spelled(prefix: &str, n: u64) -> String {
    let mut text = String::with_capacity(prefix.len() + 21);
    text.push_str(prefix);
    text.push('-');
    U64(n).push_to(&mut text);
    text
}

/// Reads `<prefix>-<U64>`.
pub(crate) fn unspell(prefix: &str, text: &str) -> Option<u64> {
    text.strip_prefix(prefix)
        .and_then(|r| r.strip_prefix('-'))
        .and_then(|n| U64::parse(n).ok())
        .map(U64::get)
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
