//! The named contract types: what `flysim canon --type NAME` checks and `flysim schema NAME`
//! prints, and the JSON Schemas committed under `schemas/`.
//!
//! Schemas are generated with schemars from the Rust types themselves (JSON Schema 2020-12), so
//! they cannot drift from what the reader accepts; a test compares them with the committed files.

use serde_json::{Map, Value};

use crate::digest::sha256;
use crate::json::to_canonical;
use crate::payload::{PayloadKind, RationalDocument, SessionRpcRequest};
use crate::payload_kind;
use crate::scalar::Digest;
use crate::scalar::{SchemaRef, Scope, TypedValue};

/// Every named contract type, sorted by name.
#[must_use]
pub fn kinds() -> Vec<PayloadKind> {
    let mut all = vec![
        payload_kind!(crate::plan::LaunchPlan, "launch-plan"),
        payload_kind!(RationalDocument, "rational-ns"),
        payload_kind!(SchemaRef, "schema-ref"),
        payload_kind!(Scope, "scope"),
        payload_kind!(SessionRpcRequest, "session-rpc-request"),
        payload_kind!(TypedValue, "typed-value"),
        payload_kind!(crate::trace::TransitionTrace, "transition-trace"),
        payload_kind!(crate::trace::RunManifest, "run-manifest"),
        payload_kind!(crate::publish::SessionDescriptor, "session-descriptor"),
        payload_kind!(crate::publish::CommittedSnapshot, "committed-snapshot"),
        payload_kind!(crate::publish::SessionEvent, "session-event"),
    ];
    all.extend(crate::workers::kinds());
    all.sort_by_key(|k| k.name);
    all
}

/// Looks a kind up by name.
#[must_use]
pub fn kind(name: &str) -> Option<PayloadKind> {
    kinds().into_iter().find(|k| k.name == name)
}

/// The committed file name of a kind's schema.
#[must_use]
pub fn file_name(kind: &PayloadKind) -> String {
    format!("{}.schema.json", kind.name)
}

/// A kind's schema as the committed file holds it: pretty JSON (2-space indent, sorted keys) and
/// a final newline.
#[must_use]
pub fn render(kind: &PayloadKind) -> String {
    let schema = (kind.schema)();
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

/// The canonical schema set: one object mapping every kind's name to its JSON Schema.
///
/// Its RFC 8785 bytes are what [`contract_digest`] hashes, so the digest changes exactly when a
/// contract type's accepted shape changes, never with source formatting.
#[must_use]
pub fn schema_set() -> Value {
    let set: Map<String, Value> = kinds()
        .iter()
        .map(|k| {
            (
                k.name.to_owned(),
                serde_json::to_value((k.schema)()).unwrap_or(Value::Null),
            )
        })
        .collect();
    Value::Object(set)
}

/// The contract digest: SHA-256 of the canonical schema set. Launch plans, hellos and manifests
/// carry it so two builds that disagree on any contract type refuse each other.
#[must_use]
pub fn contract_digest() -> Digest {
    // A pure function of the compiled types, computed once: generating 40-odd schemas is the
    // most expensive step of resolving a composition or answering a hello.
    static DIGEST: std::sync::OnceLock<Digest> = std::sync::OnceLock::new();
    *DIGEST.get_or_init(|| {
        let text = to_canonical(&schema_set()).unwrap_or_else(|e| {
            unreachable!("the schemas hold no number canonical JSON refuses: {e}")
        });
        sha256(text.as_bytes())
    })
}
